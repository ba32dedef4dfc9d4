// Pool: grants concurrent launches disjoint resources inside one allocation, and
// takes them back (spec 02 §4).
//
// The pool starts from the allocation's usable nodes and, for each, the core ids,
// GPU ids and memory a launch may use there. grant() finds a placement for a Request
// that shares no core and no GPU with any placement still held, and no node's memory
// beyond what it has; release() gives it back. A request that does not fit now is
// answered "not now" (the caller waits and retries after a release); one that could
// never fit, even in an empty pool, is refused with the reason — nothing is ever
// oversubscribed silently. A failed grant leaves the pool exactly as it was, and
// releasing a grant twice (or one the pool never made) is harmless.
//
// A request may ask for a share of one GPU instead of whole ones: it goes to the first
// node (in the usual order) with a device that has room for it, and there to the
// device with the most given out already, so that shares fill one device before they
// take another; every grant of a share says so in its notes, with how many others held
// shares of it then.
//
// Named reservations (spec 02 §4): reserve() withholds a placement from general
// requests under a name; grants that name the reservation draw only from it, and
// every other grant only from what is not reserved. unreserve() gives it back once
// no grant from it is held.
//
// Thread-safe: every method takes one mutex, so executor threads may share a pool. A
// caller answered "not now" may block until something is given back
// (wait_for_release), as the Python module's Pool.grant(wait=True) does.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "place/placement.h"
#include "util/result.h"

namespace berth::place {

// What the pool hands out on one node.
struct PoolNode {
  std::string name;
  std::vector<int> cores;            // usable core ids, ascending
  std::vector<std::string> gpu_ids;  // GPU ids in the visibility variable's syntax
  std::optional<int64_t> memory_mb;  // usable memory; absent = not accounted
  std::string gpu_variable;          // gpu_ids' variable (CUDA_VISIBLE_DEVICES…); "" = none
  // Per GPU id (aligned with gpu_ids; may be shorter), which GPU it is (model, UUID,
  // driver) and the CPU ids next to it: a grant with GPUs takes its cores from those
  // first, and names what it was given. Empty: not known, lowest ids first.
  std::vector<topo::GpuIdentity> gpu_devices;
};

// One whole device, in the thousandths a share of one (Request::gpu_share) is counted in.
inline constexpr int kWholeGpu = 1000;
// A share as a number: "0.5" for 500 thousandths, "0.125", "1" for a whole one.
std::string gpu_share_text(int thousandths);

struct Request {
  int tasks = 1;
  int cpus_per_task = 1;
  int gpus = 0;                          // total for the launch
  // A share of one device, in thousandths (1..999), that other shares may be given
  // too: one device, on one node, never one a whole-GPU grant holds. gpus must be 0.
  // 0: no share.
  int gpu_share = 0;
  std::optional<int> nodes;              // exactly this many nodes; absent = fewest that fit
  std::optional<int64_t> memory_mb;      // per node; accounted against PoolNode::memory_mb
  std::string reservation;               // draw from this named reservation ("" = general)
};

struct Grant {
  uint64_t id = 0;        // 0 never names a grant
  Placement placement;
  std::optional<int64_t> memory_mb;  // per node, as requested
};

class Pool {
 public:
  explicit Pool(std::vector<PoolNode> nodes);

  // A placement disjoint from every one held, or nullopt when the request does not
  // fit now but would fit in an empty pool. Fails (kRefused) when it can never fit,
  // with a message saying which resource is short ("asks for 3 GPUs; the largest
  // node has 2"), and (kInvalidInput) on a malformed request (tasks < 1, ...).
  //
  // Choice: the fewest nodes that fit (or exactly `nodes`), the lowest-indexed nodes
  // first; on each node the lowest free core ids; tasks fill each node in turn;
  // GPUs come from the chosen nodes, lowest free ids first.
  Result<std::optional<Grant>> grant(const Request& r);

  // Returns a grant's resources. Unknown or already-released ids are ignored.
  void release(uint64_t grant_id);

  // Withholds a placement for `r` under `name` from general requests. Fails when the
  // name is taken or the request does not fit now.
  Result<Grant> reserve(const std::string& name, const Request& r);
  // Gives a reservation back. Fails (kRefused) while a grant from it is held;
  // an unknown name is harmless.
  Result<void> unreserve(const std::string& name);

  // Takes `node` out of the pool for good (its agent was lost, spec 08 §5): nothing
  // more is granted there, and a request only it could hold is refused, naming it.
  // Grants held there are released as usual. False when no such node is in the pool,
  // or it is out already.
  bool withdraw(const std::string& node);

  // How many times resources have come back (a release of a held grant, a
  // reservation given back) so far. Read it before a grant answered "not now", then
  // wait_for_release(count, ...): a release in between is not missed.
  uint64_t releases() const;
  // Waits until releases() differs from `seen` or `timeout` has passed; true when it
  // differs.
  bool wait_for_release(uint64_t seen, std::chrono::milliseconds timeout) const;

  // Free cores on node `i` (for reports and tests): those a general grant could take
  // now, so neither held by a grant nor withheld by a reservation.
  std::vector<int> free_cores(size_t node) const;
  size_t held() const;  // grants currently held
  const std::vector<PoolNode>& nodes() const { return nodes_; }

 private:
  // One node's part of a scope (the unreserved pool, or one reservation): the node's
  // cores and GPUs the scope may hand out, as indices into nodes_[node], and the memory
  // it accounts there. Scopes never share an index, so grants from different scopes
  // are disjoint by construction; within a scope the holder tables below decide.
  struct Share {
    size_t node = 0;
    std::vector<size_t> cores;         // indices into nodes_[node].cores, ascending
    std::vector<size_t> gpus;          // indices into nodes_[node].gpu_ids, ascending
    std::optional<int64_t> memory_mb;  // this scope's memory there; absent = not limited
    int64_t memory_used = 0;
    // A reservation that set no memory aside on a node with a figure: its grants draw
    // on the unreserved share's memory, so the node is never oversubscribed.
    bool memory_from_pool = false;
  };
  struct Reservation {
    std::vector<Share> shares;  // ascending node index
    size_t grants = 0;          // grants from it still held
  };
  // What one grant took on one node, so that release() gives back exactly that.
  struct Taken {
    size_t share = 0;  // index into its scope's shares
    std::vector<size_t> cores;
    std::vector<size_t> gpus;
    int64_t memory_mb = 0;  // charged to the share's memory account; 0 = none
    int gpu_share = 0;      // thousandths of its one GPU; 0: its GPUs are whole
    // Cores taken away from its GPUs, a shared GPU: said (Placement::notes).
    std::vector<std::string> notes;
  };
  struct Held {
    std::string reservation;  // "" = the unreserved pool
    std::vector<Taken> taken;
  };

  // The resources `r` would take from `shares` now: nullopt when they are not free
  // now, kRefused when even all of them would not do. Changes nothing. mu_ held.
  Result<std::optional<std::vector<Taken>>> choose_locked(const std::vector<Share>& shares,
                                                          const std::string& reservation,
                                                          const Request& r) const;
  // The memory account a share charges: its own, or the unreserved share's.
  Share& memory_account(std::vector<Share>& shares, size_t share);
  const Share& memory_account(const std::vector<Share>& shares, size_t share) const;
  // Takes the cores of `t` (whose GPUs are chosen) from `free`: pool.cc.
  static void take_cores(const PoolNode& node, const std::vector<size_t>& free, size_t n,
                         Taken& t);
  // " (left out of the pool: a, b)" for the withdrawn nodes, "" when none; mu_ held
  // (pool_withdraw.cc).
  std::string withdrawn_text_locked() const;
  Placement placement_of(const std::vector<Share>& shares, const std::vector<Taken>& taken,
                         const Request& r) const;

  std::vector<PoolNode> nodes_;  // as given, cores sorted; never changed after construction
  mutable std::mutex mu_;
  // Per node, per core (GPU) index: the grant holding it; 0 = not held.
  std::vector<std::vector<uint64_t>> core_holder_;
  std::vector<std::vector<uint64_t>> gpu_holder_;
  // Per node, per GPU index: the thousandths given out as shares, and to how many
  // grants. A device with either nonzero is not free for a whole-GPU grant.
  std::vector<std::vector<int>> gpu_shared_;
  std::vector<std::vector<int>> gpu_sharers_;
  std::vector<char> withdrawn_;  // per node: taken out (withdraw)
  std::vector<Share> pool_;  // the unreserved resources: one share per node, node i at i
  std::map<std::string, Reservation> reservations_;
  std::map<uint64_t, Held> held_;
  uint64_t next_id_ = 1;
  uint64_t releases_ = 0;
  mutable std::condition_variable released_;
};

}  // namespace berth::place
