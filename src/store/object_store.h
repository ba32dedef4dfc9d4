// ObjectStore: the content-addressed, write-once store that every cached result in
// berth lives in (spec 05), and the names and addresses it is keyed by.
//
// A store holds two kinds of thing:
//
//   - Objects: byte strings named by the SHA-256 of their bytes, "sha256:<64 hex>"
//     (spec 05 §1). A name fixes the contents, so an object is written once and any
//     copy is as good as any other. Every read verifies the bytes against the name; a
//     copy that does not match is treated as absent *and reported* (Found::kCorrupt),
//     so the caller recomputes and says so rather than using it (spec 05 §5).
//   - Rows: small records at an address that names the question they answer, e.g. a
//     step key, "rows/v1/steps/<key>" (spec 05 §3). The address carries the row format
//     version, so a new format never competes with an old one for the same slot (an
//     unversioned address makes a key permanently unpublishable after the first
//     format bump). Rows are write-once with exactly one winner among any number
//     of concurrent writers; a losing writer is handed the winner's bytes, which is
//     how leases and divergence detection (spec 06) learn who won without a second
//     read (spec 05 §4).
//
// Backends: FileStore (file://, safe for N processes), MemoryStore (unit tests), and
// S3Store (s3://). TieredStore puts a local object cache in front of a shared store.
//
// Contract for every implementation:
//   - Every method may be called from several threads at once.
//   - Absence is not an error: get_object says kAbsent, get_row says nullopt. A Result
//     fails only for bad input (kInvalidInput: a malformed name or address) or when the
//     backend itself fails (kIo, naming the path or URL).
//   - Nothing is ever overwritten or deleted, except that a corrupt object copy is moved
//     out of the way when a read detects it, so that a later put can replace it, and
//     that a collector (collect(), spec 05 §10) deletes what nothing kept reaches and
//     nobody used for a grace period. Every use that a row will be built on refreshes
//     the entry's time (has_object(), touch_row()), which is what makes that safe.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace berth::store {

// ---- Object names (spec 05 §1) ----

inline constexpr std::string_view kObjectNamePrefix = "sha256:";

// "sha256:" + the SHA-256 of `bytes` in lower-case hex.
std::string object_name_of(std::string_view bytes);

// OK when `name` is "sha256:" followed by exactly 64 lower-case hex digits; otherwise
// kInvalidInput naming it.
Result<void> check_object_name(std::string_view name);

// ---- Row addresses (spec 05 §3) ----

// The row format version berth writes today, for row_address().
inline constexpr unsigned kRowFormatVersion = 1;
// Bounds on an address: a component fits in a file name; the whole fits in a URL path.
inline constexpr size_t kMaxAddressComponent = 200;
inline constexpr size_t kMaxAddressBytes = 1024;
// Rows are records, not data: anything larger belongs in an object the row names.
inline constexpr size_t kMaxRowBytes = 16u << 20;

// "rows/v<version>/<kind>/<key>". `key` may itself hold '/'-separated components
// (leases: "<step key>/<generation>"). The result is not checked; pass it to
// check_row_address() if kind or key come from outside.
std::string row_address(std::string_view kind, std::string_view key,
                        unsigned version = kRowFormatVersion);

// OK when `address` is "rows/v<N>/<kind>/<key>[/<more>...]": N a decimal >= 1 without
// leading zeros, every component 1..kMaxAddressComponent characters of
// [A-Za-z0-9._:+=-] not starting with '.', the whole at most kMaxAddressBytes.
// Otherwise kInvalidInput naming the address and the component at fault.
Result<void> check_row_address(std::string_view address);

// OK when `prefix` is a prefix of addresses for list_rows(): "rows", "rows/v1",
// "rows/v1/steps", ... (components as above, a trailing '/' allowed).
Result<void> check_row_prefix(std::string_view prefix);

// ---- What reads and writes return ----

enum class Found {
  kPresent,  // the bytes are here and match their name
  kAbsent,   // no copy exists
  kCorrupt,  // a copy existed but did not match its name: treat as absent, and report
};

struct ObjectRead {
  Found found = Found::kAbsent;
  // The verified bytes: get_object() with kPresent only (empty for reads to a file).
  std::string bytes;
  // Non-empty when a corrupt copy was found: what was wrong and where it lay. With
  // kCorrupt it describes the only copy; with kPresent (TieredStore) a corrupt copy in
  // one tier was replaced from another. Meant for the run report, as is.
  std::string problem;
  // materialize() only: true when the destination is a hard link to the stored copy.
  bool linked = false;

  bool present() const { return found == Found::kPresent; }
};

struct RowPut {
  // True when this call published the row; false when a row was already there.
  bool created = false;
  // When !created: the bytes of the row that won (compare them with what you wrote:
  // equal is the ordinary case, different is a divergence or a lost lease).
  std::string existing;
};

// ---- Collection (spec 05 §10) ----

// An entry of the store as a collector lists it.
struct StoreEntry {
  std::string name;     // an object's name, a row's address, or debris's path in the store
  uint64_t bytes = 0;
  int64_t time_ms = 0;  // when it was last written or refreshed, ms since the epoch
};

enum class EntryKind {
  kObject,
  kRow,
  kDebris,  // a corrupt copy moved aside, a temporary file a crashed writer left
};

// How old an entry's time may be before a use refreshes it (has_object, touch_row):
// a use within this of the last refresh costs no write. A collector must therefore
// take a grace period longer than this (spec 05 §10).
inline constexpr std::chrono::milliseconds kRefreshAfter = std::chrono::hours(1);

// ---- The backend interface ----

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  // How this store is named in messages and reports ("file:///x/store", "memory:").
  virtual std::string describe() const = 0;

  // What a user must be told about this store, found when it was opened — e.g. a
  // server that ignores conditional writes, so that leases may race (spec 06). Empty
  // for most backends. A run prints these and puts them on its report.
  virtual std::vector<std::string> notices() const { return {}; }

  // Stores `bytes` and returns their name. If the object is already present nothing is
  // written (write-once). Fails only when the backend fails.
  virtual Result<std::string> put_object(std::string_view bytes) = 0;

  // Stores the contents of the file at `path`, streamed: the file is hashed while it is
  // copied and never held in memory whole. Fails with kNotFound / kIo naming `path`
  // when it cannot be read, kIo when the backend fails.
  virtual Result<std::string> put_object_file(const std::string& path) = 0;

  // put_object_file for a file the caller hands over (a step's output in its staging
  // directory): nothing will write it again, so a backend may make it the stored copy
  // itself instead of copying it — a file store hard-links it into place when it is on
  // the store's filesystem, a regular file and has no other link. The file stays at
  // `path`, possibly made read-only, until the caller removes it. Default: a copy.
  virtual Result<std::string> adopt_object_file(const std::string& path) {
    return put_object_file(path);
  }

  // The object's bytes, verified against `name` on this read (spec 05 §5).
  virtual Result<ObjectRead> get_object(std::string_view name) = 0;

  // Writes the verified object to `dest_path` (streamed; the parent directory must
  // exist). `dest_path` is replaced atomically and only when the bytes verified: on
  // kAbsent or kCorrupt it is left as it was.
  virtual Result<ObjectRead> get_object_to_file(std::string_view name,
                                                const std::string& dest_path) = 0;

  // Makes `dest_path` hold the verified object, by a hard link to the stored copy when
  // the backend and filesystem allow (ObjectRead::linked), else by get_object_to_file.
  // A linked file shares the stored copy's inode: stored copies are read-only (0444),
  // so a consumer must replace a materialised file rather than write into it. The
  // default implementation copies.
  virtual Result<ObjectRead> materialize(std::string_view name, const std::string& dest_path) {
    return get_object_to_file(name, dest_path);
  }

  // True when a copy exists. Cheap, and does NOT verify: only get_* do. A copy whose
  // time is older than kRefreshAfter has it refreshed (spec 05 §10), so that a collector
  // spares an object a caller is about to name in a row.
  virtual Result<bool> has_object(std::string_view name) = 0;
  // has_object() of each of `names`, into `present` (as long): 1 when it exists, 0 when
  // it does not or the question failed. A backend may answer many at once faster than
  // one by one; thread-safe as far as has_object() is.
  virtual void has_objects(std::span<const std::string> names, std::span<char> present) {
    std::fill(present.begin(), present.end(), 0);
    ask_absent_again(names, present);
  }

  // Publishes `bytes` at `address` unless a row is already there: of any number of
  // concurrent writers (threads or processes) exactly one gets created == true, and
  // every other is handed the winner's bytes. A row is never changed once published.
  // Fails with kInvalidInput for a bad address or a row over kMaxRowBytes.
  virtual Result<RowPut> put_row(std::string_view address, std::string_view bytes) = 0;

  // The row at `address`, or nullopt when none was published.
  virtual Result<std::optional<std::string>> get_row(std::string_view address) = 0;

  // Every row address under `prefix` (see check_row_prefix), sorted bytewise. For
  // reports and inspection: a backend may make this expensive, so the run never
  // depends on it.
  virtual Result<std::vector<std::string>> list_rows(std::string_view prefix) = 0;

  // Whether the row at `address` exists, refreshing its time when it is older than
  // kRefreshAfter: a cache hit on a row says so, so that a collector spares it (spec 05
  // §9). Default: get_row, no refresh.
  virtual Result<bool> touch_row(std::string_view address) {
    BERTH_TRY(std::optional<std::string> row, get_row(address));
    return row.has_value();
  }

  // For a collector (spec 05 §10); a backend that cannot be collected says so
  // (kUnsupported). Every object / every row under `prefix` / every piece of debris,
  // with its size and time.
  virtual Result<std::vector<StoreEntry>> list_objects();
  virtual Result<std::vector<StoreEntry>> list_row_entries(std::string_view prefix);
  virtual Result<std::vector<StoreEntry>> list_debris();

  // Deletes the entries of `kind` named in `names` whose time is still before
  // `cutoff_ms`, in a way that cannot lose one a writer is using: each is first taken
  // out of sight where the backend can (file://: renamed away, atomically), its time
  // read again, then `spare` is called once — after every entry was taken away — and
  // the entries it names, and every one found refreshed since the cutoff, are put
  // back; the rest are deleted. Returns the names deleted. An entry already gone is
  // skipped.
  virtual Result<std::vector<std::string>> collect(
      EntryKind kind, const std::vector<std::string>& names, int64_t cutoff_ms,
      const std::function<Result<std::set<std::string>>()>& spare);

 protected:
  // has_object() of every one of `names` that `present` holds 0 for: a wrapper's
  // has_objects() after its inner store's batch, where 0 may be a question that failed.
  void ask_absent_again(std::span<const std::string> names, std::span<char> present) {
    for (size_t i = 0; i < names.size() && i < present.size(); ++i) {
      if (present[i]) continue;
      auto has = has_object(names[i]);
      present[i] = has.ok() && *has;
    }
  }
};

}  // namespace berth::store
