#include "place/pool.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <functional>
#include <iterator>
#include <set>

#include "util/idset.h"
#include "util/strings.h"

namespace berth::place {
namespace {

// What one share could give a request: its free resources now, or all of them when
// the question is whether the request fits the scope at all.
struct Offer {
  std::vector<size_t> cores;           // core indices, ascending
  std::vector<size_t> gpus;            // GPU indices, ascending
  std::optional<int64_t> memory_free;  // absent = not limited
};

// One chosen node: which offer, and how many tasks and GPUs land there.
struct Pick {
  size_t offer = 0;
  int64_t tasks = 0;
  int64_t gpus = 0;
};

// Past this many cells the exact node choice below costs more memory and time than a
// grant under the pool's one lock should; the first nodes in order that fit are taken
// instead. Only launches of many GPUs over hundreds of nodes get there.
constexpr size_t kMaxChoiceCells = size_t{1} << 20;

Result<void> check_request(const Request& r) {
  if (r.tasks < 1) {
    return fail(Errc::kInvalidInput, fmt::format("tasks: must be at least 1, not {}", r.tasks));
  }
  if (r.cpus_per_task < 1) {
    return fail(Errc::kInvalidInput,
                fmt::format("cpus per task: must be at least 1, not {}", r.cpus_per_task));
  }
  if (r.gpus < 0) {
    return fail(Errc::kInvalidInput, fmt::format("gpus: must not be negative, not {}", r.gpus));
  }
  if (r.gpu_share < 0 || r.gpu_share >= kWholeGpu) {
    return fail(Errc::kInvalidInput,
                fmt::format("gpu share: must be between 1 and {} thousandths of one device, not {}",
                            kWholeGpu - 1, r.gpu_share));
  }
  if (r.gpu_share > 0 && r.gpus > 0) {
    return fail(Errc::kInvalidInput,
                fmt::format("asks for {} whole GPUs and a share of one: one or the other", r.gpus));
  }
  if (r.gpu_share > 0 && r.nodes && *r.nodes > 1) {
    return fail(Errc::kInvalidInput,
                fmt::format("a share of one GPU is on one node, not {}", *r.nodes));
  }
  if (r.nodes && *r.nodes < 1) {
    return fail(Errc::kInvalidInput, fmt::format("nodes: must be at least 1, not {}", *r.nodes));
  }
  if (r.memory_mb && *r.memory_mb <= 0) {
    return fail(Errc::kInvalidInput,
                fmt::format("memory: must be a positive number of MB, not {}", *r.memory_mb));
  }
  return Ok{};
}

// Whether a node with `memory_free` can take `r`'s memory. A node without a figure
// cannot say no, so it is not limited.
bool memory_fits(const std::optional<int64_t>& memory_free, const Request& r) {
  return !r.memory_mb || !memory_free || *memory_free >= *r.memory_mb;
}

// The fewest of `values` whose sum reaches `need` (0 when nothing is needed).
std::optional<size_t> fewest_reaching(std::vector<int64_t> values, int64_t need) {
  if (need <= 0) return 0;
  std::sort(values.begin(), values.end(), std::greater<>());
  int64_t sum = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    sum += values[i];
    if (sum >= need) return i + 1;
  }
  return std::nullopt;
}

// The sum of the `m` largest of `values`.
int64_t sum_of_largest(std::vector<int64_t> values, size_t m) {
  std::sort(values.begin(), values.end(), std::greater<>());
  int64_t sum = 0;
  for (size_t i = 0; i < values.size() && i < m; ++i) sum += values[i];
  return sum;
}

// A node that can be chosen for a request, with what it holds capped at what is asked
// (more is no better).
struct Candidate {
  size_t offer;
  int64_t tasks;
  int64_t gpus;
};

// The tasks and GPUs of a request over the chosen candidates (indices, ascending): tasks
// fill each node in turn, each node keeping back one task for every node after it so
// that none is left empty (only GPUs or an exact node count can need that). nullopt
// when they do not add up, which choose() never lets happen.
std::optional<std::vector<Pick>> spread(const std::vector<Candidate>& cand,
                                        const std::vector<size_t>& chosen, int64_t want_tasks,
                                        int64_t want_gpus) {
  std::vector<Pick> picks;
  int64_t tasks_left = want_tasks;
  int64_t gpus_left = want_gpus;
  for (size_t j = 0; j < chosen.size(); ++j) {
    const Candidate& c = cand[chosen[j]];
    const auto after = static_cast<int64_t>(chosen.size() - j - 1);
    Pick p{c.offer, std::min(c.tasks, tasks_left - after), std::min(c.gpus, gpus_left)};
    tasks_left -= p.tasks;
    gpus_left -= p.gpus;
    picks.push_back(p);
  }
  if (tasks_left != 0 || gpus_left != 0) return std::nullopt;
  return picks;
}

// Where `r` goes among `offers`, or nullopt when it does not fit them.
//
// A node can be chosen when it holds at least one task and the memory. Every chosen
// node runs at least one task (a node that runs none is reserved for nothing, and
// fill_nodes_in_turn refuses it), so at most `tasks` nodes are chosen. Among the sets
// of the fewest nodes (or of exactly r.nodes) whose tasks and GPUs suffice, the
// lexicographically lowest by node index is taken. Tasks and GPUs are two quantities,
// so "fewest" is not one sort; a table over (node suffix, nodes used, GPUs reached)
// holding the most tasks reachable answers it exactly, and walking it from the front
// picks the lowest nodes.
std::optional<std::vector<Pick>> choose(const std::vector<Offer>& offers, const Request& r) {
  const int64_t want_tasks = r.tasks;
  const int64_t want_gpus = r.gpus;
  const size_t per_task = static_cast<size_t>(r.cpus_per_task);

  // Candidates, with what each holds capped at what is asked (more is no better).
  std::vector<Candidate> cand;
  for (size_t i = 0; i < offers.size(); ++i) {
    const Offer& o = offers[i];
    auto tasks = std::min(static_cast<int64_t>(o.cores.size() / per_task), want_tasks);
    if (tasks < 1 || !memory_fits(o.memory_free, r)) continue;
    cand.push_back({i, tasks, std::min(static_cast<int64_t>(o.gpus.size()), want_gpus)});
  }
  const size_t most_nodes = std::min(cand.size(), static_cast<size_t>(want_tasks));
  int64_t all_tasks = 0;
  int64_t all_gpus = 0;
  for (const auto& c : cand) {
    all_tasks += c.tasks;
    all_gpus += c.gpus;
  }
  // Also keeps the table below no larger than the GPUs there are.
  if (all_tasks < want_tasks || all_gpus < want_gpus) return std::nullopt;

  size_t kmin = 0;
  size_t kmax = 0;
  if (r.nodes) {
    kmin = kmax = static_cast<size_t>(*r.nodes);
    if (kmin > most_nodes) return std::nullopt;
  } else {
    // At least as many nodes as either quantity alone needs; the union of those two
    // sets always suffices, so never more than both together.
    std::vector<int64_t> tasks;
    std::vector<int64_t> gpus;
    for (const auto& c : cand) {
      tasks.push_back(c.tasks);
      gpus.push_back(c.gpus);
    }
    auto by_tasks = fewest_reaching(tasks, want_tasks);
    auto by_gpus = fewest_reaching(gpus, want_gpus);
    if (!by_tasks || !by_gpus) return std::nullopt;
    kmin = std::max(*by_tasks, *by_gpus);
    kmax = std::min(*by_tasks + *by_gpus, most_nodes);
    if (kmin > kmax) return std::nullopt;
  }

  std::vector<size_t> chosen;  // indices into cand, ascending
  const size_t n = cand.size();
  const size_t g_dim = static_cast<size_t>(want_gpus) + 1;
  const size_t k_dim = kmax + 1;
  if ((n + 1) * k_dim * g_dim <= kMaxChoiceCells) {
    // best[i][k][g]: the most tasks (capped at want_tasks) that exactly k of the
    // candidates i.. hold while holding at least g GPUs between them; -1 = cannot.
    std::vector<int> best((n + 1) * k_dim * g_dim, -1);
    auto at = [&](size_t i, size_t k, size_t g) -> int& {
      return best[(i * k_dim + k) * g_dim + g];
    };
    at(n, 0, 0) = 0;
    for (size_t i = n; i-- > 0;) {
      const int64_t t = cand[i].tasks;
      const auto gi = static_cast<size_t>(cand[i].gpus);
      for (size_t k = 0; k < k_dim; ++k) {
        for (size_t g = 0; g < g_dim; ++g) {
          int v = at(i + 1, k, g);
          if (k > 0) {
            int rest = at(i + 1, k - 1, g > gi ? g - gi : 0);
            if (rest >= 0) v = std::max(v, static_cast<int>(std::min(rest + t, want_tasks)));
          }
          at(i, k, g) = v;
        }
      }
    }
    size_t k = kmin;
    while (k <= kmax && at(0, k, g_dim - 1) < r.tasks) ++k;
    if (k > kmax) return std::nullopt;
    // Walk from the front, taking each candidate the rest can still complete.
    int64_t tasks_left = want_tasks;
    size_t gpus_left = g_dim - 1;
    for (size_t i = 0; i < n && k > 0; ++i) {
      const auto gi = static_cast<size_t>(cand[i].gpus);
      int rest = at(i + 1, k - 1, gpus_left > gi ? gpus_left - gi : 0);
      if (rest < 0 || rest + cand[i].tasks < tasks_left) continue;
      chosen.push_back(i);
      tasks_left = std::max<int64_t>(0, tasks_left - cand[i].tasks);
      gpus_left = gpus_left > gi ? gpus_left - gi : 0;
      --k;
    }
  } else {
    // Too large to choose exactly: the first candidates in order until both suffice
    // (exactly r.nodes of them), which may be more nodes than the fewest.
    const size_t limit = r.nodes ? kmax : most_nodes;
    int64_t tasks = 0;
    int64_t gpus = 0;
    for (size_t i = 0; i < n && chosen.size() < limit; ++i) {
      if (!r.nodes && tasks >= want_tasks && gpus >= want_gpus) break;
      chosen.push_back(i);
      tasks += cand[i].tasks;
      gpus += cand[i].gpus;
    }
    if (chosen.size() < kmin || tasks < want_tasks || gpus < want_gpus) return std::nullopt;
  }

  return spread(cand, chosen, want_tasks, want_gpus);
}

// "1 node", "3 nodes".
std::string count(size_t n, const char* noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

// Why `r` can never fit `all` (every resource of the scope, none held), naming the
// short resource. `where` names the scope ("the pool", "reservation 'x'"), `in_where`
// qualifies a node of it ("", " in reservation 'x'").
std::string why_never(const std::vector<Offer>& all, const Request& r, const std::string& where,
                      const std::string& in_where) {
  const auto per_task = static_cast<size_t>(r.cpus_per_task);
  if (r.nodes && *r.nodes > r.tasks) {
    return fmt::format("asks for {} nodes for {} task(s); every node needs at least one task",
                       *r.nodes, r.tasks);
  }
  if (all.empty()) return fmt::format("{} has no nodes", where);
  if (r.nodes && static_cast<size_t>(*r.nodes) > all.size()) {
    return fmt::format("asks for {} nodes; {} has {}", *r.nodes, where, all.size());
  }
  size_t most_cores = 0;
  for (const auto& o : all) most_cores = std::max(most_cores, o.cores.size());
  if (most_cores < per_task) {
    return fmt::format("asks for {} cpus per task; the largest node{} has {} cores",
                       r.cpus_per_task, in_where, most_cores);
  }
  // The nodes that can hold one task and the memory.
  std::vector<int64_t> tasks;
  std::vector<int64_t> gpus;
  int64_t most_memory = 0;
  for (const auto& o : all) {
    if (o.cores.size() < per_task) continue;
    if (!memory_fits(o.memory_free, r)) {
      most_memory = std::max(most_memory, *o.memory_free);
      continue;
    }
    tasks.push_back(static_cast<int64_t>(o.cores.size() / per_task));
    gpus.push_back(static_cast<int64_t>(o.gpus.size()));
  }
  if (tasks.empty()) {
    return fmt::format("asks for {} MB per node; the largest node{} has {} MB", *r.memory_mb,
                       in_where, most_memory);
  }
  const std::string fit_what =
      r.memory_mb ? fmt::format("a task of {} cpus and {} MB", r.cpus_per_task, *r.memory_mb)
                  : fmt::format("a task of {} cpus", r.cpus_per_task);
  if (r.nodes && static_cast<size_t>(*r.nodes) > tasks.size()) {
    return fmt::format("asks for {} nodes that each hold {}; {} has {}", *r.nodes, fit_what, where,
                       tasks.size());
  }
  const size_t m = r.nodes ? static_cast<size_t>(*r.nodes)
                           : std::min(tasks.size(), static_cast<size_t>(r.tasks));
  const int64_t task_room = sum_of_largest(tasks, m);
  if (task_room < r.tasks) {
    if (r.nodes) {
      return fmt::format("asks for {} tasks of {} cpus on {}; {}{} {} {}", r.tasks, r.cpus_per_task,
                         count(m, "node"),
                         m == 1 ? "the largest node" : fmt::format("the {} largest", m), in_where,
                         m == 1 ? "holds" : "hold", task_room);
    }
    return fmt::format("asks for {} tasks of {} cpus; {} holds {}", r.tasks, r.cpus_per_task, where,
                       task_room);
  }
  const int64_t gpu_room = sum_of_largest(gpus, m);
  if (gpu_room < r.gpus) {
    if (m == 1) {
      return fmt::format("asks for {} GPUs {}; the largest node{} has {}", r.gpus,
                         r.nodes ? "on 1 node" : "for 1 task", in_where, gpu_room);
    }
    if (r.nodes || m < tasks.size()) {
      // A launch spans at most one node per task, so only the m best nodes count.
      return fmt::format("asks for {} GPUs on {} {}; the {} with the most{} have {}", r.gpus,
                         r.nodes ? "exactly" : "at most", count(m, "node"), m, in_where, gpu_room);
    }
    if (tasks.size() < all.size()) {
      return fmt::format("asks for {} GPUs; the nodes{} that hold {} have {}", r.gpus, in_where,
                         fit_what, gpu_room);
    }
    return fmt::format("asks for {} GPUs; {} has {}", r.gpus, where, gpu_room);
  }
  return fmt::format("asks for {} tasks of {} cpus and {} GPUs on {} {}; no such set{} has both",
                     r.tasks, r.cpus_per_task, r.gpus, r.nodes ? "exactly" : "at most",
                     count(m, "node"), in_where);
}

// Inserts `extra` into the ascending `v`, keeping it ascending.
void merge_into(std::vector<size_t>& v, const std::vector<size_t>& extra) {
  v.insert(v.end(), extra.begin(), extra.end());
  std::sort(v.begin(), v.end());
}

// `v` without the members of `gone` (both ascending).
void remove_from(std::vector<size_t>& v, const std::vector<size_t>& gone) {
  std::vector<size_t> kept;
  std::set_difference(v.begin(), v.end(), gone.begin(), gone.end(), std::back_inserter(kept));
  v = std::move(kept);
}

}  // namespace

std::string gpu_share_text(int thousandths) {
  std::string s = fmt::format("{}.{:03d}", thousandths / kWholeGpu, thousandths % kWholeGpu);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

Pool::Pool(std::vector<PoolNode> nodes) : nodes_(std::move(nodes)) {
  // The constructor cannot fail, so it makes the node lists what the contract says
  // they are: a core id or GPU id listed twice would otherwise be granted twice.
  for (auto& node : nodes_) {
    std::sort(node.cores.begin(), node.cores.end());
    node.cores.erase(std::unique(node.cores.begin(), node.cores.end()), node.cores.end());
    std::vector<std::string> gpus;
    std::vector<topo::GpuIdentity> devices;
    for (size_t g = 0; g < node.gpu_ids.size(); ++g) {
      if (std::find(gpus.begin(), gpus.end(), node.gpu_ids[g]) != gpus.end()) continue;
      gpus.push_back(node.gpu_ids[g]);
      devices.push_back(g < node.gpu_devices.size() ? node.gpu_devices[g] : topo::GpuIdentity{});
    }
    node.gpu_ids = std::move(gpus);
    node.gpu_devices = std::move(devices);
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const PoolNode& node = nodes_[i];
    core_holder_.emplace_back(node.cores.size(), 0);
    gpu_holder_.emplace_back(node.gpu_ids.size(), 0);
    gpu_shared_.emplace_back(node.gpu_ids.size(), 0);
    gpu_sharers_.emplace_back(node.gpu_ids.size(), 0);
    Share share;
    share.node = i;
    for (size_t c = 0; c < node.cores.size(); ++c) share.cores.push_back(c);
    for (size_t g = 0; g < node.gpu_ids.size(); ++g) share.gpus.push_back(g);
    share.memory_mb = node.memory_mb;
    pool_.push_back(std::move(share));
  }
  withdrawn_.assign(nodes_.size(), 0);
}

Pool::Share& Pool::memory_account(std::vector<Share>& shares, size_t share) {
  Share& s = shares[share];
  return s.memory_from_pool ? pool_[s.node] : s;
}

const Pool::Share& Pool::memory_account(const std::vector<Share>& shares, size_t share) const {
  const Share& s = shares[share];
  return s.memory_from_pool ? pool_[s.node] : s;
}

// Takes `n` of the free cores `free` (ascending indices into node.cores) for `t`,
// whose GPUs are chosen: the free cores next to those GPUs first (spec 02 §4), then
// the lowest others; only the lowest when the GPUs' local cores are not known. Cores
// taken away from the GPUs while some next to them are held by other grants are said
// in t.notes.
void Pool::take_cores(const PoolNode& node, const std::vector<size_t>& free, size_t n,
                      Taken& t) {
  std::set<int> local;
  for (size_t g : t.gpus) {
    if (g < node.gpu_devices.size()) {
      local.insert(node.gpu_devices[g].local_cores.begin(), node.gpu_devices[g].local_cores.end());
    }
  }
  if (local.empty()) {
    t.cores.assign(free.begin(), free.begin() + static_cast<std::ptrdiff_t>(n));
    return;
  }
  std::vector<size_t> near, far;
  for (size_t c : free) (local.count(node.cores[c]) ? near : far).push_back(c);
  for (size_t i = 0; i < near.size() && t.cores.size() < n; ++i) t.cores.push_back(near[i]);
  size_t away = n - t.cores.size();
  for (size_t i = 0; i < far.size() && t.cores.size() < n; ++i) t.cores.push_back(far[i]);
  std::sort(t.cores.begin(), t.cores.end());
  if (away > 0) {
    std::vector<int> ids(local.begin(), local.end());
    t.notes.push_back(fmt::format(
        "{} of its {} core(s) on {} are not next to its GPU(s) (whose cores are {}): "
        "the free cores next to them were too few",
        away, n, node.name, idset::encode_ids(ids)));
  }
}

Result<std::optional<std::vector<Pool::Taken>>> Pool::choose_locked(
    const std::vector<Share>& shares, const std::string& reservation, const Request& r) const {
  // Offers are aligned with shares, so a pick's offer index is its share index.
  std::vector<Offer> now;
  for (size_t i = 0; i < shares.size(); ++i) {
    const Share& s = shares[i];
    Offer o;
    if (withdrawn_[s.node]) {
      now.push_back(std::move(o));
      continue;
    }
    for (size_t c : s.cores) {
      if (core_holder_[s.node][c] == 0) o.cores.push_back(c);
    }
    const std::vector<int>& shared = gpu_shared_[s.node];
    for (size_t g : s.gpus) {
      if (gpu_holder_[s.node][g] != 0) continue;
      if (r.gpu_share == 0 ? shared[g] == 0 : shared[g] + r.gpu_share <= kWholeGpu) {
        o.gpus.push_back(g);
      }
    }
    // A share goes where most is given out already, so that shares fill one device
    // before they take another a whole-GPU grant could have had.
    std::stable_sort(o.gpus.begin(), o.gpus.end(),
                     [&](size_t a, size_t b) { return shared[a] > shared[b]; });
    const Share& account = memory_account(shares, i);
    if (account.memory_mb) o.memory_free = *account.memory_mb - account.memory_used;
    now.push_back(std::move(o));
  }

  // A share is placed as one whole GPU on one node would be, among the devices that
  // have room for it.
  Request whole = r;
  if (r.gpu_share > 0) {
    whole.gpus = 1;
    whole.nodes = 1;
  }
  auto picks = choose(now, whole);
  if (!picks) {
    // Not now, or never: judged against the same scope with nothing held in it.
    std::vector<Offer> all;
    for (size_t i = 0; i < shares.size(); ++i) {
      if (withdrawn_[shares[i].node]) all.push_back({});
      else all.push_back({shares[i].cores, shares[i].gpus, memory_account(shares, i).memory_mb});
    }
    if (choose(all, whole)) return std::optional<std::vector<Taken>>();
    std::string where = reservation.empty()
                            ? (reservations_.empty() ? "the pool" : "the unreserved pool")
                            : fmt::format("reservation '{}'", str::printable(reservation));
    std::string in_where = reservation.empty() ? "" : " in " + where;
    std::string why = why_never(all, whole, where, in_where);
    if (r.gpu_share > 0) why = fmt::format("a share of one GPU: {}", why);
    return fail(Errc::kRefused, why + withdrawn_text_locked());
  }

  std::vector<Taken> taken;
  const auto per_task = static_cast<size_t>(r.cpus_per_task);
  for (const Pick& p : *picks) {
    const Offer& o = now[p.offer];
    Taken t;
    t.share = p.offer;
    t.gpu_share = r.gpu_share;
    t.gpus.assign(o.gpus.begin(), o.gpus.begin() + static_cast<std::ptrdiff_t>(p.gpus));
    take_cores(nodes_[shares[p.offer].node], o.cores,
               static_cast<size_t>(p.tasks) * per_task, t);
    if (r.memory_mb && o.memory_free) t.memory_mb = *r.memory_mb;
    taken.push_back(std::move(t));
  }
  return std::optional<std::vector<Taken>>(std::move(taken));
}

Placement Pool::placement_of(const std::vector<Share>& shares, const std::vector<Taken>& taken,
                             const Request& r) const {
  Placement p;
  p.gpus = r.gpu_share > 0 ? 1 : r.gpus;
  for (const Taken& t : taken) {
    const PoolNode& node = nodes_[shares[t.share].node];
    p.nodes.push_back(node.name);
    std::vector<int> cores;
    for (size_t c : t.cores) cores.push_back(node.cores[c]);
    p.cores.push_back(std::move(cores));
    // GPU ids are node-local; several nodes' ids are listed in node order.
    for (size_t g : t.gpus) {
      p.gpu_ids.push_back(node.gpu_ids[g]);
      p.gpu_devices.push_back(g < node.gpu_devices.size() ? node.gpu_devices[g]
                                                          : topo::GpuIdentity{});
    }
    if (p.gpu_variable.empty()) p.gpu_variable = node.gpu_variable;
    p.notes.insert(p.notes.end(), t.notes.begin(), t.notes.end());
  }
  return p;
}

Result<std::optional<Grant>> Pool::grant(const Request& r) {
  BERTH_CHECK(check_request(r));
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Share>* shares = &pool_;
  Reservation* from = nullptr;
  if (!r.reservation.empty()) {
    auto it = reservations_.find(r.reservation);
    if (it == reservations_.end()) {
      return fail(Errc::kInvalidInput, fmt::format("reservation '{}': no such reservation",
                                                   str::printable(r.reservation)));
    }
    from = &it->second;
    shares = &from->shares;
  }
  BERTH_TRY(auto chosen, choose_locked(*shares, r.reservation, r));
  if (!chosen) return std::optional<Grant>();

  // Nothing has changed so far; from here on the grant cannot fail.
  const uint64_t id = next_id_++;
  for (Taken& t : *chosen) {
    const size_t node = (*shares)[t.share].node;
    for (size_t c : t.cores) core_holder_[node][c] = id;
    for (size_t g : t.gpus) {
      if (t.gpu_share == 0) {
        gpu_holder_[node][g] = id;
        continue;
      }
      const int others = gpu_sharers_[node][g];
      t.notes.push_back(fmt::format(
          "shares GPU {} on {}: it was given {} of it{}", nodes_[node].gpu_ids[g],
          nodes_[node].name, gpu_share_text(t.gpu_share),
          others == 0 ? ", the first share of it"
                      : fmt::format(", beside {} other share(s) holding {}", others,
                                    gpu_share_text(gpu_shared_[node][g]))));
      gpu_shared_[node][g] += t.gpu_share;
      ++gpu_sharers_[node][g];
    }
    memory_account(*shares, t.share).memory_used += t.memory_mb;
  }
  if (from) ++from->grants;
  Grant g;
  g.id = id;
  g.placement = placement_of(*shares, *chosen, r);
  g.memory_mb = r.memory_mb;
  held_.emplace(id, Held{r.reservation, std::move(*chosen)});
  return std::optional<Grant>(std::move(g));
}

void Pool::release(uint64_t grant_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = held_.find(grant_id);
  if (it == held_.end()) return;  // never granted, or already released
  const Held& held = it->second;
  // A reservation cannot go while it has a grant held, so it is still here.
  Reservation* from = nullptr;
  if (!held.reservation.empty()) {
    auto res = reservations_.find(held.reservation);
    assert(res != reservations_.end());
    from = &res->second;
  }
  std::vector<Share>& shares = from ? from->shares : pool_;
  for (const Taken& t : held.taken) {
    const size_t node = shares[t.share].node;
    for (size_t c : t.cores) core_holder_[node][c] = 0;
    for (size_t g : t.gpus) {
      if (t.gpu_share == 0) {
        gpu_holder_[node][g] = 0;
      } else {
        gpu_shared_[node][g] -= t.gpu_share;
        --gpu_sharers_[node][g];
      }
    }
    memory_account(shares, t.share).memory_used -= t.memory_mb;
  }
  if (from) --from->grants;
  held_.erase(it);
  ++releases_;
  released_.notify_all();
}

uint64_t Pool::releases() const {
  std::lock_guard<std::mutex> lock(mu_);
  return releases_;
}

bool Pool::wait_for_release(uint64_t seen, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return released_.wait_for(lock, timeout, [&] { return releases_ != seen; });
}

Result<Grant> Pool::reserve(const std::string& name, const Request& r) {
  if (name.empty()) {
    return fail(Errc::kInvalidInput, "reservation name: must not be empty");
  }
  if (!r.reservation.empty()) {
    return fail(Errc::kInvalidInput,
                fmt::format("reservation '{}': is drawn from the unreserved pool, not from "
                            "reservation '{}'",
                            str::printable(name), str::printable(r.reservation)));
  }
  BERTH_CHECK(check_request(r));
  if (r.gpu_share > 0) {
    return fail(Errc::kInvalidInput,
                fmt::format("reservation '{}': reserves whole GPUs, not a share of one",
                            str::printable(name)));
  }
  std::lock_guard<std::mutex> lock(mu_);
  const std::string label = fmt::format("reservation '{}'", str::printable(name));
  if (reservations_.count(name) != 0) {
    return fail(Errc::kRefused, label + ": the name is taken");
  }
  auto chosen = choose_locked(pool_, "", r);
  if (!chosen.ok()) return chosen.error().with_context(label);
  if (!*chosen) {
    return fail(Errc::kRefused,
                fmt::format("{}: does not fit in what is free now ({} grant(s) held)", label,
                            held_.size()));
  }

  // Move the chosen resources out of the unreserved pool into the reservation's own
  // shares; general grants then cannot see them, and never-fits is judged without them.
  Reservation res;
  for (const Taken& t : **chosen) {
    const size_t node = pool_[t.share].node;
    Share s;
    s.node = node;
    s.cores = t.cores;
    s.gpus = t.gpus;
    if (t.memory_mb > 0) {
      s.memory_mb = t.memory_mb;
      *pool_[node].memory_mb -= t.memory_mb;
    } else {
      s.memory_from_pool = nodes_[node].memory_mb.has_value();
    }
    remove_from(pool_[node].cores, t.cores);
    remove_from(pool_[node].gpus, t.gpus);
    res.shares.push_back(std::move(s));
  }
  Grant g;
  g.id = 0;  // a reservation is not a grant: unreserve() it by name, release() ignores it
  g.placement = placement_of(pool_, **chosen, r);
  g.memory_mb = r.memory_mb;
  reservations_.emplace(name, std::move(res));
  return g;
}

Result<void> Pool::unreserve(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = reservations_.find(name);
  if (it == reservations_.end()) return Ok{};
  if (it->second.grants > 0) {
    return fail(Errc::kRefused,
                fmt::format("reservation '{}': {} grant(s) from it still held; release them first",
                            str::printable(name), it->second.grants));
  }
  for (const Share& s : it->second.shares) {
    Share& back = pool_[s.node];
    merge_into(back.cores, s.cores);
    merge_into(back.gpus, s.gpus);
    if (s.memory_mb) *back.memory_mb += *s.memory_mb;
  }
  reservations_.erase(it);
  ++releases_;
  released_.notify_all();
  return Ok{};
}

std::vector<int> Pool::free_cores(size_t node) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int> out;
  if (node >= pool_.size()) return out;
  for (size_t c : pool_[node].cores) {
    if (core_holder_[node][c] == 0) out.push_back(nodes_[node].cores[c]);
  }
  return out;
}

size_t Pool::held() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_.size();
}

}  // namespace berth::place
