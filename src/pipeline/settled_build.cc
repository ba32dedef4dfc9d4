// Building a run's settled record (settled_build.h).
#include "pipeline/settled_build.h"

#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>

namespace berth::pipeline {

SettledRequest settled_request(const Step& s) {
  // A share of a GPU needs a device to fit, as one whole GPU does.
  return {s.tasks, std::max(1, s.cores / std::max(1, s.tasks)), s.gpu_share > 0 ? 1 : s.gpus,
          s.nodes.value_or(-1)};
}

namespace {

// The record as it is built. One stamp per path: a file two steps read is checked
// once. The same path seen at two stamps changed during the run; no record then. A
// reused step's facts are the old record's, every one of which held (check_settled()):
// they are mapped by index, each once, and only the few facts of steps keyed in this
// run are looked up by path or name.
class Builder {
 public:
  explicit Builder(const SettledRun& run) : run_(run), g_(*run.graph) {
    rec_.entries.resize(g_.steps.size());
  }

  // Each step keyed in this run, from the facts its outcome was verified at; false
  // when a path was seen at two stamps.
  bool add_keyed_steps() {
    for (size_t i = 0; i < g_.steps.size(); ++i) {
      if ((*run_.reused_from)[i] >= 0) continue;
      SettledStep& e = name_step(i);
      for (const SettledFile& f : (*run_.facts)[i].files) {
        auto [it, fresh] = file_at_.try_emplace(f.path, static_cast<uint32_t>(rec_.files.size()));
        if (fresh) {
          rec_.files.push_back(f);
        } else if (!merge(rec_.files[it->second], f)) {
          return false;
        }
        e.files.push_back(it->second);
      }
      for (const std::string& o : (*run_.facts)[i].objects) {
        auto [it, fresh] = object_at_.try_emplace(o, static_cast<uint32_t>(objects_.size()));
        if (fresh) objects_.push_back(o);
        e.objects.push_back(it->second);
      }
      e.fingerprint = !(*run_.fingerprints)[i].empty()
                          ? std::move((*run_.fingerprints)[i])
                          : step_fingerprint(g_.steps[i], g_, *run_.tools);
    }
    return true;
  }

  // Each step reused from the old record, its facts mapped from that record's; false
  // when a path was seen at two stamps.
  bool add_reused_steps() {
    const Settled* old = run_.old;
    if (old == nullptr) return true;
    file_to_.assign(old->files.size(), -1);
    object_to_.assign(old->objects.size(), -1);
    rec_.files.reserve(rec_.files.size() + old->files.size());
    objects_.reserve(objects_.size() + old->objects.size());
    for (size_t i = 0; i < g_.steps.size(); ++i) {
      if ((*run_.reused_from)[i] < 0) continue;
      const SettledStep& was = old->entries[(*run_.reused_from)[i]];
      SettledStep& e = name_step(i);
      e.files.reserve(was.files.size());
      for (uint32_t f : was.files) {
        if (file_to_[f] < 0 && !map_old_file(f)) return false;
        e.files.push_back(static_cast<uint32_t>(file_to_[f]));
      }
      e.objects.reserve(was.objects.size());
      for (uint32_t o : was.objects) e.objects.push_back(map_old_object(o));
      e.fingerprint =
          !(*run_.fingerprints)[i].empty() ? std::move((*run_.fingerprints)[i]) : was.fingerprint;
    }
    return true;
  }

  // Each distinct placement request the steps make, ascending.
  void add_requests() {
    std::set<std::tuple<int, int, int, int>> shapes;
    bool from_record = false;
    for (const Step& s : g_.steps) {
      if (s.from_record) {
        from_record = true;
      } else {
        SettledRequest q = settled_request(s);
        shapes.insert({q.tasks, q.cpus_per_task, q.gpus, q.nodes});
      }
    }
    // A step known only by its entry asks for what it asked for before: among the old
    // record's requests (which may also hold a shape no step asks for any more: then a
    // pool too small for it sends a later run down the ordinary path, no further).
    if (const Settled* old = run_.old; old && from_record) {
      for (const auto& q : old->requests)
        shapes.insert({q.tasks, q.cpus_per_task, q.gpus, q.nodes});
    }
    for (const auto& [tasks, cpus, gpus, nodes] : shapes) {
      rec_.requests.push_back({tasks, cpus, gpus, nodes});
    }
  }

  // Each tool's version command and answer; false when one was not read.
  bool add_tools() {
    for (const auto& [name, tool] : g_.tools) {
      auto v = run_.tools->find(name);
      if (v == run_.tools->end()) return false;
      rec_.tools.push_back({tool.version, v->second});
    }
    return true;
  }

  Settled take() {
    rec_.objects.assign(objects_.begin(), objects_.end());
    rec_.pipeline = g_.name;
    rec_.steps = g_.steps.size();
    return std::move(rec_);
  }

 private:
  // Step i's entry, with what the graph says of it.
  SettledStep& name_step(size_t i) {
    SettledStep& e = rec_.entries[i];
    e.name = g_.steps[i].name;
    e.table = static_cast<uint32_t>(g_.steps[i].spec);
    e.combination = g_.steps[i].combination;
    e.deps.assign(g_.steps[i].deps.begin(), g_.steps[i].deps.end());
    return e;
  }

  // `f`, a path seen before at `seen`: the same stamp, and the racy hash if either
  // has one; false when they differ.
  static bool merge(SettledFile& seen, const SettledFile& f) {
    if (seen.stamp != f.stamp || seen.with_ctime != f.with_ctime) return false;
    if (seen.racy_hash.empty()) {
      seen.racy_hash = f.racy_hash;
    } else if (!f.racy_hash.empty() && f.racy_hash != seen.racy_hash) {
      return false;
    }
    return true;
  }

  // The old record's file `f` in the new record: added, or merged with the same path
  // a keyed step saw.
  bool map_old_file(uint32_t f) {
    const SettledFile& of = run_.old->files[f];
    auto it = file_at_.empty() ? file_at_.end() : file_at_.find(of.path);
    if (it == file_at_.end()) {
      file_to_[f] = static_cast<int64_t>(rec_.files.size());
      rec_.files.push_back(of);
    } else if (merge(rec_.files[it->second], of)) {
      file_to_[f] = it->second;
    } else {
      return false;
    }
    return true;
  }

  // The old record's object `o`'s index in the new record, added once.
  uint32_t map_old_object(uint32_t o) {
    if (object_to_[o] < 0) {
      const std::string& name = run_.old->objects[o];
      auto it = object_at_.empty() ? object_at_.end() : object_at_.find(name);
      if (it == object_at_.end()) {
        object_to_[o] = static_cast<int64_t>(objects_.size());
        objects_.push_back(name);
      } else {
        object_to_[o] = it->second;
      }
    }
    return static_cast<uint32_t>(object_to_[o]);
  }

  const SettledRun& run_;
  const Graph& g_;
  Settled rec_;
  // Views of the paths and names in the run's facts and the old record, which outlive
  // the builder.
  std::unordered_map<std::string_view, uint32_t> file_at_;
  std::unordered_map<std::string_view, uint32_t> object_at_;
  std::vector<std::string_view> objects_;
  // The old record's files and objects in the new one, by their old index (-1: not yet).
  std::vector<int64_t> file_to_;
  std::vector<int64_t> object_to_;
};

}  // namespace

std::optional<Settled> build_settled(const SettledRun& run) {
  Builder b(run);
  if (!b.add_keyed_steps() || !b.add_reused_steps()) return std::nullopt;
  b.add_requests();
  if (!b.add_tools()) return std::nullopt;
  return b.take();
}

}  // namespace berth::pipeline
