#include "pipeline/lease.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/random.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "util/sha256.h"
#include "util/strings.h"

namespace berth::pipeline {
namespace {

using ordered_json = nlohmann::ordered_json;

// A lease is a handful of short fields; anything this large is not one of ours, and
// refusing it before parsing bounds the work a hostile row can cause.
constexpr size_t kMaxLeaseBytes = 64 * 1024;

// An int64 field, or nullopt: a float, a string or an unsigned past INT64_MAX is not.
std::optional<int64_t> int64_field(const nlohmann::json& v) {
  if (v.is_number_unsigned()) {
    auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  return std::nullopt;
}

int64_t saturating_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) {
    return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  }
  return r;
}

// What a record says about its key at `now` (lease.h): a live claim, or free.
bool live(const LeaseRecord& r, int64_t now_ms) { return !r.released && r.deadline_ms > now_ms; }

// Fills `out` from the kernel's random source. False only when neither getrandom nor
// /dev/urandom answers, which a working Linux system never does.
bool kernel_random(uint8_t* out, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::getrandom(out + got, n - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    got += static_cast<size_t>(r);
  }
  if (got == n) return true;
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  got = 0;
  while (got < n) {
    ssize_t r = ::read(fd, out + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  ::close(fd);
  return got == n;
}

}  // namespace

std::string lease_address(std::string_view step_key, unsigned generation) {
  return store::row_address(kLeasesRow, fmt::format("{}/{}", step_key, generation));
}

// spec 06 §1: the field order is part of the format, so that equal records are equal
// bytes (acquire compares a read-back with what it wrote).
std::string encode_lease(const LeaseRecord& r) {
  ordered_json j;
  j["version"] = kLeaseFormatVersion;
  j["worker"] = r.worker;
  j["token"] = r.token;
  j["start_ms"] = r.start_ms;
  j["deadline_ms"] = r.deadline_ms;
  j["released"] = r.released;
  // `replace` rather than the default `strict`, which throws on a name that is not
  // UTF-8. Names reaching here went through check_worker_name and are ASCII.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<LeaseRecord> decode_lease(std::string_view text) {
  // A lease is one flat object: any nesting makes it not one of ours, refused before
  // nlohmann's recursion sees it.
  if (text.size() > kMaxLeaseBytes || str::json_deeper_than(text, 1)) return std::nullopt;
  // nlohmann keeps the last of two equal keys; a record naming two tokens is not a
  // record, so the callback notices repeats at the top level instead.
  std::set<std::string, std::less<>> keys;
  bool repeated = false;
  nlohmann::json::parser_callback_t cb = [&](int depth, nlohmann::json::parse_event_t event,
                                             nlohmann::json& parsed) {
    if (event == nlohmann::json::parse_event_t::key && depth == 1 && parsed.is_string()) {
      if (!keys.insert(parsed.get<std::string>()).second) repeated = true;
    }
    return true;
  };
  nlohmann::json j =
      nlohmann::json::parse(text.begin(), text.end(), cb, /*allow_exceptions=*/false);
  if (repeated || !j.is_object() || j.size() != 6) return std::nullopt;

  auto field = [&](const char* name) -> const nlohmann::json* {
    auto it = j.find(name);
    return it == j.end() ? nullptr : &*it;
  };
  const nlohmann::json* version = field("version");
  const nlohmann::json* worker = field("worker");
  const nlohmann::json* token = field("token");
  const nlohmann::json* start = field("start_ms");
  const nlohmann::json* deadline = field("deadline_ms");
  const nlohmann::json* released = field("released");
  if (!version || !worker || !token || !start || !deadline || !released) return std::nullopt;

  // A version other than ours is a newer (or older) format: unparsable to this build,
  // which probe() treats as occupying its generation (spec 06 §2).
  std::optional<int64_t> v = int64_field(*version);
  if (!v || *v != kLeaseFormatVersion) return std::nullopt;
  if (!worker->is_string() || !token->is_string() || !released->is_boolean()) {
    return std::nullopt;
  }
  std::optional<int64_t> s = int64_field(*start);
  std::optional<int64_t> d = int64_field(*deadline);
  if (!s || !d) return std::nullopt;

  LeaseRecord r;
  r.worker = worker->get<std::string>();
  r.token = token->get<std::string>();
  // The token is the record's identity; an empty one could be nobody's, so such a
  // record is not a lease.
  if (r.token.empty()) return std::nullopt;
  r.start_ms = *s;
  r.deadline_ms = *d;
  r.released = released->get<bool>();
  return r;
}

Leases::Leases(store::ObjectStore& shared, std::string worker, std::string token,
               const Clock& clock, std::chrono::milliseconds duration)
    : shared_(shared),
      worker_(std::move(worker)),
      token_(std::move(token)),
      clock_(clock),
      duration_(duration) {}

int64_t Leases::now_ms() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_.wall().time_since_epoch())
      .count();
}

Result<LeaseProbe> Leases::probe(std::string_view step_key) {
  LeaseProbe p;
  // lo: the highest generation known occupied (-1: none); hi: the lowest known empty
  // (kMaxGenerations: none). Gallop up from 0, then halve the gap: a key that extension
  // took through 1000 generations costs about 20 reads, a free key one.
  int64_t lo = -1;
  int64_t hi = kMaxGenerations;
  std::optional<std::string> top_bytes;
  auto occupied = [&](int64_t g) -> Result<bool> {
    BERTH_TRY(std::optional<std::string> row,
              shared_.get_row(lease_address(step_key, static_cast<unsigned>(g))));
    if (!row) return false;
    top_bytes = std::move(row);
    return true;
  };
  for (int64_t g = 0;;) {
    BERTH_TRY(bool hit, occupied(g));
    if (!hit) {
      hi = g;
      break;
    }
    lo = g;
    if (g == kMaxGenerations - 1) break;
    g = std::min<int64_t>(2 * g + 1, kMaxGenerations - 1);
  }
  std::optional<std::string> lo_bytes = top_bytes;
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    BERTH_TRY(bool hit, occupied(mid));
    if (hit) {
      lo = mid;
      lo_bytes = top_bytes;
    } else {
      hi = mid;
    }
  }
  top_bytes = lo >= 0 ? std::move(lo_bytes) : std::nullopt;
  p.next = static_cast<unsigned>(hi);
  if (top_bytes) {
    // An unparsable row still occupies its generation: probing went on past it above,
    // because stopping would read a newer format as an empty key (spec 06 §2).
    p.top = decode_lease(*top_bytes);
    p.top_unparsable = !p.top.has_value();
  }
  return p;
}

Result<Leases::Claim> Leases::acquire(std::string_view step_key) {
  return claim(step_key, false);
}

Result<Leases::Claim> Leases::extend(std::string_view step_key) {
  return claim(step_key, true);
}

Result<Leases::Claim> Leases::claim(std::string_view step_key, bool renew) {
  BERTH_TRY(LeaseProbe p, probe(step_key));
  int64_t now = now_ms();
  Claim claim;
  if (p.top && live(*p.top, now) && !(renew && p.top->token == token_)) {
    // The highest generation holds the key. Ours (a second acquire by this process,
    // e.g. after a deferral) needs no write; anyone else's is waited for. An extension
    // of ours goes on to write a later deadline.
    if (p.top->token == token_) {
      claim.outcome = Outcome::kAcquired;
      claim.generation = p.next - 1;
    } else {
      claim.outcome = Outcome::kHeld;
      claim.holder = p.top->worker;
    }
    claim.deadline_ms = p.top->deadline_ms;
    return claim;
  }

  // Free: absent, unparsable, released or expired. Claim the next generation, and on
  // anything short of a clear answer move one generation up, until none is left.
  for (unsigned g = p.next; g < kMaxGenerations && g < p.next + kMaxClaimWrites; ++g) {
    LeaseRecord mine{worker_, token_, now, saturating_add(now, duration_.count()), false};
    std::string bytes = encode_lease(mine);
    std::string address = lease_address(step_key, g);
    BERTH_TRY(store::RowPut put, shared_.put_row(address, bytes));
    (void)put;  // deliberately unused: a server ignoring If-None-Match says "created"
                // to every writer, so only the read-back can tell who won (spec 06 §3)
    BERTH_TRY(std::optional<std::string> back, shared_.get_row(address));
    if (!back) continue;  // not read-after-write consistent: try a fresh slot
    if (*back == bytes) {
      claim.outcome = Outcome::kAcquired;
      claim.generation = g;
      claim.deadline_ms = mine.deadline_ms;
      return claim;
    }
    std::optional<LeaseRecord> winner = decode_lease(*back);
    if (!winner || !live(*winner, now)) {
      // Lost the slot to something that holds nothing — a release that landed first,
      // a record already expired, a format we cannot read — so the key is still free.
      continue;
    }
    // Tokens, not names, decide: two processes a user gave one name are two holders.
    if (winner->token == token_) {
      claim.outcome = Outcome::kAcquired;
      claim.generation = g;
    } else {
      claim.outcome = Outcome::kHeld;
      claim.holder = winner->worker;
    }
    claim.deadline_ms = winner->deadline_ms;
    return claim;
  }
  // Every generation is used (or the store never showed one of our writes back): the
  // key degrades to lock-free, which costs duplicated work at worst, never a stall
  // (spec 06 §4).
  claim.outcome = Outcome::kLockFree;
  return claim;
}

Result<void> Leases::release(std::string_view step_key, unsigned generation) {
  if (generation >= kMaxGenerations - 1) return Ok{};  // lock-free from here on anyway
  int64_t now = now_ms();
  LeaseRecord r{worker_, token_, now, now, true};
  BERTH_TRY(store::RowPut put,
            shared_.put_row(lease_address(step_key, generation + 1), encode_lease(r)));
  // Losing the slot means another worker has claimed the key since (our lease had
  // expired): it is theirs now, which is all a release was for.
  (void)put;
  return Ok{};
}

std::string Leases::new_token() {
  std::array<uint8_t, 16> raw{};
  if (!kernel_random(raw.data(), raw.size())) {
    // No random source at all: still distinct per process and call, which is what a
    // token is for; unguessability was never part of the contract.
    static std::atomic<uint64_t> counter{0};
    std::string seed = fmt::format("{}-{}-{}", ::getpid(),
                                   Clock::real().steady().time_since_epoch().count(),
                                   counter.fetch_add(1));
    return sha256_hex(seed).substr(0, 32);
  }
  return to_hex(raw.data(), raw.size());
}

const char* lease_outcome_name(Leases::Outcome o) {
  switch (o) {
    case Leases::Outcome::kAcquired:
      return "acquired";
    case Leases::Outcome::kHeld:
      return "held";
    case Leases::Outcome::kLockFree:
      return "lock-free";
  }
  return "unknown";
}

}  // namespace berth::pipeline
