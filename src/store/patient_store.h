// PatientStore: a store that waits out an outage (spec 05 §9).
//
// An HPC site's object store or parallel filesystem pausing for seconds to minutes is
// ordinary. PatientStore wraps any ObjectStore and retries an operation that failed
// with Errc::kUnavailable — connection refused or reset, a timeout, 5xx or SlowDown
// after the backend's own quick retries, ENOSPC, EACCES, EROFS, ESTALE — with backoff
// (first_delay doubling to max_delay, jittered), for at most `patience` per operation.
// Only past that does the operation fail, naming the store, how long it waited and the
// last error. Any other failure (bad input, a refusal, corruption) returns at once.
//
// Every operation of the interface is safe to repeat: objects are named by their bytes,
// reads change nothing, and put_row is write-once — except that a put_row whose first
// attempt reached the server but whose answer was lost comes back as "a row was already
// there" with our own bytes. PatientStore reports that case as created: the bytes are
// ours, or indistinguishable from ours, which is all a caller can act on.
//
// An outage is told once, not per operation: the first failure while none is open
// calls on_wait; the first success after it calls on_back with how long the store was
// away. stats() sums what was waited for, for the run report.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "store/object_store.h"
#include "util/clock.h"

namespace berth::store {

struct Patience {
  std::chrono::milliseconds patience{std::chrono::minutes(3)};
  std::chrono::milliseconds first_delay{200};
  std::chrono::milliseconds max_delay{std::chrono::seconds(5)};
  // Called for every pause; the real one sleeps. Tests move a FakeClock instead.
  std::function<void(std::chrono::milliseconds)> sleep;
  // The first failure of an outage: the store's name and the error.
  std::function<void(const std::string& store, const Error& error)> on_wait;
  // The first success after an outage, and how long it lasted.
  std::function<void(const std::string& store, std::chrono::milliseconds away)> on_back;
};

struct StoreWaits {
  size_t outages = 0;                    // outages that ended (the store answered again)
  std::chrono::milliseconds waited{0};   // their length, summed
  size_t gave_up = 0;                    // operations that failed past the patience
  std::string last_error;                // the last transient error seen
};

class PatientStore : public ObjectStore {
 public:
  PatientStore(std::unique_ptr<ObjectStore> inner, Patience patience, const Clock& clock);

  // The wrapped store: a PatientStore is invisible in names, notices and messages.
  std::string describe() const override { return inner_->describe(); }
  std::vector<std::string> notices() const override { return inner_->notices(); }

  Result<std::string> put_object(std::string_view bytes) override;
  Result<std::string> put_object_file(const std::string& path) override;
  Result<std::string> adopt_object_file(const std::string& path) override;
  Result<ObjectRead> get_object(std::string_view name) override;
  Result<ObjectRead> get_object_to_file(std::string_view name,
                                        const std::string& dest_path) override;
  Result<ObjectRead> materialize(std::string_view name, const std::string& dest_path) override;
  Result<bool> has_object(std::string_view name) override;
  // The wrapped store's batch; what it calls absent is asked again one by one,
  // patiently, since a failed question reads as absent there.
  void has_objects(std::span<const std::string> names, std::span<char> present) override;
  Result<RowPut> put_row(std::string_view address, std::string_view bytes) override;
  Result<std::optional<std::string>> get_row(std::string_view address) override;
  Result<std::vector<std::string>> list_rows(std::string_view prefix) override;
  Result<bool> touch_row(std::string_view address) override;
  // A collector's listings and collect() are the wrapped store's, patiently; collect()
  // itself is not repeated (it holds entries between its steps), only its failure
  // told.
  Result<std::vector<StoreEntry>> list_objects() override;
  Result<std::vector<StoreEntry>> list_row_entries(std::string_view prefix) override;
  Result<std::vector<StoreEntry>> list_debris() override;
  Result<std::vector<std::string>> collect(
      EntryKind kind, const std::vector<std::string>& names, int64_t cutoff_ms,
      const std::function<Result<std::set<std::string>>()>& spare) override;

  ObjectStore& inner() { return *inner_; }
  StoreWaits stats() const;
  // "" when the store answers; else what it is being waited for, for a progress line:
  // "waiting 12 s for <store>".
  std::string waiting() const;

 private:
  template <typename T, typename F>
  Result<T> patiently(F&& op, bool* retried = nullptr);
  void failed(const Error& e);
  void answered();

  std::unique_ptr<ObjectStore> inner_;
  Patience p_;
  const Clock& clock_;
  mutable std::mutex mu_;
  std::optional<std::chrono::steady_clock::time_point> outage_since_;
  StoreWaits stats_;
  std::atomic<bool> in_outage_{false};
};

}  // namespace berth::store
