// Leases (spec 06): advisory claims on step keys, so that N workers sharing one store
// divide a pipeline instead of each computing all of it.
//
// Correctness needs no lock: keys, write-once objects and write-once rows make two
// computations of one key agree (the first row published wins and every other worker
// adopts it: spec 06 §6). A lease only saves CPU, and the engine is correct with
// leases racing, mis-tuned or absent. So every failure mode here degrades to
// duplicated work, never to a stall or a wrong answer.
//
// A lease is a row at lease_address(<step key>, <generation>) — rows are write-once
// and can never be deleted or rewritten, so successive claims on one key take
// successive generations 0, 1, 2, ... The highest occupied generation is the key's
// state:
//   - absent (no generation occupied)       free
//   - a record this build cannot parse      free (an unreadable lease has no deadline
//                                           to wait for), but it still occupies its
//                                           generation: probing goes on past it
//   - released == true                      free (a release is a lease nobody holds)
//   - deadline_ms <= now                    free (expired: its worker is presumed dead)
//   - otherwise                             held by that record's token
// Exhausting kMaxGenerations leaves the key free to everyone, lock-free.
//
// Every lease read and write goes to the store every worker sees: pass
// TieredStore::shared(), never a tiered or local store (spec 05 §7: a lease served
// from a local tier sees only this worker's own claims).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "store/object_store.h"
#include "util/clock.h"
#include "util/result.h"

namespace berth::pipeline {

// The row kind of leases: rows/v1/leases/<step key>/<generation>.
inline constexpr std::string_view kLeasesRow = "leases";
// Generations a key may take: enough for a step that extends its lease every half
// lease for days (extend()). Probing reads about 2·log2(generations in use) rows.
inline constexpr unsigned kMaxGenerations = 4096;
// Writes one acquire() makes before it calls the key lock-free: a store that never
// reads back what was written is not tried 4096 times.
inline constexpr unsigned kMaxClaimWrites = 16;
// The lease record format written today (the "version" field).
inline constexpr int kLeaseFormatVersion = 1;

// "rows/v1/leases/<step key>/<generation>" (store::row_address).
std::string lease_address(std::string_view step_key, unsigned generation);

struct LeaseRecord {
  std::string worker;        // the claiming worker's name (for messages only)
  std::string token;         // the claiming process's instance token: identity
  int64_t start_ms = 0;      // wall clock, ms since the Unix epoch, when written
  int64_t deadline_ms = 0;   // wall clock; at or after it the claim is void
  bool released = false;     // true: a release, a lease nobody holds

  bool operator==(const LeaseRecord&) const = default;
};

// One JSON object, keys in this order:
//   {"version":1,"worker":"…","token":"…","start_ms":N,"deadline_ms":N,"released":false}
std::string encode_lease(const LeaseRecord& r);
// nullopt for anything that is not exactly such an object with version == 1 and every
// field of the right type (a newer format is "unparsable" to this build). Never throws.
std::optional<LeaseRecord> decode_lease(std::string_view text);

struct LeaseProbe {
  // The first generation with no row (kMaxGenerations when every one is occupied).
  unsigned next = 0;
  // The highest occupied generation's record; nullopt when none is occupied or when
  // that row did not parse (then top_unparsable is true).
  std::optional<LeaseRecord> top;
  bool top_unparsable = false;
};

class Leases {
 public:
  // `shared`: the store every worker sees. `worker`: this worker's name. `token`: this
  // process's instance token (new_token()). `duration`: how long a claim holds.
  Leases(store::ObjectStore& shared, std::string worker, std::string token, const Clock& clock,
         std::chrono::milliseconds duration);

  enum class Outcome {
    kAcquired,  // this process holds the key until `deadline_ms`
    kHeld,      // another live claim holds it: `holder`, until `deadline_ms`
    kLockFree,  // every generation is used: run it without a lease (may duplicate)
  };
  struct Claim {
    Outcome outcome = Outcome::kLockFree;
    unsigned generation = 0;  // kAcquired: the generation this process wrote
    std::string holder;       // kHeld: the holder's worker name
    int64_t deadline_ms = 0;  // kAcquired: ours; kHeld: theirs
  };

  // Finds the first empty generation: reads 0, 1, 3, 7, ... until a miss, then halves
  // the gap (generations are occupied from 0 without a gap: each is written only where
  // a probe found the first empty one, or just above an occupied one).
  Result<LeaseProbe> probe(std::string_view step_key);

  // Probes; when the key is free, publishes a record at the next generation and then
  // reads it back from the store and compares instance tokens — the read-back, not
  // the write's result, decides (a server that ignores If-None-Match overwrites, and
  // put_row cannot tell). Lost → kHeld naming the winner. A key already held by this
  // token (not released, not expired) is kAcquired at its generation without a write.
  // A read-back that finds nothing or an unparsable row retries at the next
  // generation. Fails only when the store fails.
  Result<Claim> acquire(std::string_view step_key);

  // Extends the claim of a step this process is still running (spec 06 §4): while the
  // key's top record is this process's and live, a new one — a later deadline — is
  // written at the next generation and read back, as acquire() writes. Found expired
  // and free, the key is claimed again; found held by another (ours expired and was
  // taken), kHeld, and the step runs on without a lease. Fails only when the store
  // fails.
  Result<Claim> extend(std::string_view step_key);

  // Hands the key back (a failed step): publishes a released record at generation + 1.
  // Losing that write (someone took the key since) or having no generation left is
  // not an error.
  Result<void> release(std::string_view step_key, unsigned generation);

  const std::string& worker() const { return worker_; }
  const std::string& token() const { return token_; }
  std::chrono::milliseconds duration() const { return duration_; }

  // 32 lower-case hex digits from the kernel's random source (getrandom).
  static std::string new_token();

 private:
  int64_t now_ms() const;
  // acquire(), and with `renew` extend().
  Result<Claim> claim(std::string_view step_key, bool renew);

  store::ObjectStore& shared_;
  std::string worker_;
  std::string token_;
  const Clock& clock_;
  std::chrono::milliseconds duration_;
};

const char* lease_outcome_name(Leases::Outcome o);  // "acquired", "held", "lock-free"

}  // namespace berth::pipeline
