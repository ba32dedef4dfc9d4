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

std::optional<Settled> build_settled(const SettledRun& run) {
  const Graph& g = *run.graph;
  const size_t n = g.steps.size();
  // One stamp per path: a file two steps read is checked once. The same path seen
  // at two stamps changed during the run; no record then. A reused step's facts are
  // the old record's, every one of which held (check_settled()): they are mapped by
  // index, each once, and only the few facts of steps keyed in this run are looked up
  // by path or name.
  Settled rec;
  rec.entries.resize(n);
  // Views of the paths and names in facts_ and the old record, which outlive them.
  std::unordered_map<std::string_view, uint32_t> file_at;
  std::unordered_map<std::string_view, uint32_t> object_at;
  std::vector<std::string_view> objects;
  auto merge = [](SettledFile& seen, const SettledFile& f) {
    if (seen.stamp != f.stamp || seen.with_ctime != f.with_ctime) return false;
    if (seen.racy_hash.empty()) {
      seen.racy_hash = f.racy_hash;
    } else if (!f.racy_hash.empty() && f.racy_hash != seen.racy_hash) {
      return false;
    }
    return true;
  };
  for (size_t i = 0; i < n; ++i) {
    if ((*run.reused_from)[i] >= 0) continue;
    SettledStep& e = rec.entries[i];
    e.name = g.steps[i].name;
    e.table = static_cast<uint32_t>(g.steps[i].spec);
    e.combination = g.steps[i].combination;
    e.deps.assign(g.steps[i].deps.begin(), g.steps[i].deps.end());
    for (const SettledFile& f : (*run.facts)[i].files) {
      auto [it, fresh] = file_at.try_emplace(f.path, static_cast<uint32_t>(rec.files.size()));
      if (fresh) {
        rec.files.push_back(f);
      } else if (!merge(rec.files[it->second], f)) {
        return std::nullopt;
      }
      e.files.push_back(it->second);
    }
    for (const std::string& o : (*run.facts)[i].objects) {
      auto [it, fresh] = object_at.try_emplace(o, static_cast<uint32_t>(objects.size()));
      if (fresh) objects.push_back(o);
      e.objects.push_back(it->second);
    }
    e.fingerprint = !(*run.fingerprints)[i].empty() ? std::move((*run.fingerprints)[i])
                                                    : step_fingerprint(g.steps[i], g, *run.tools);
  }
  if (const Settled* old = run.old) {
    std::vector<int64_t> file_to(old->files.size(), -1);
    std::vector<int64_t> object_to(old->objects.size(), -1);
    rec.files.reserve(rec.files.size() + old->files.size());
    objects.reserve(objects.size() + old->objects.size());
    for (size_t i = 0; i < n; ++i) {
      if ((*run.reused_from)[i] < 0) continue;
      const SettledStep& was = old->entries[(*run.reused_from)[i]];
      SettledStep& e = rec.entries[i];
      e.name = g.steps[i].name;
      e.table = static_cast<uint32_t>(g.steps[i].spec);
      e.combination = g.steps[i].combination;
      e.deps.assign(g.steps[i].deps.begin(), g.steps[i].deps.end());
      e.files.reserve(was.files.size());
      for (uint32_t f : was.files) {
        if (file_to[f] < 0) {
          const SettledFile& of = old->files[f];
          auto it = file_at.empty() ? file_at.end() : file_at.find(of.path);
          if (it == file_at.end()) {
            file_to[f] = static_cast<int64_t>(rec.files.size());
            rec.files.push_back(of);
          } else if (merge(rec.files[it->second], of)) {
            file_to[f] = it->second;
          } else {
            return std::nullopt;
          }
        }
        e.files.push_back(static_cast<uint32_t>(file_to[f]));
      }
      e.objects.reserve(was.objects.size());
      for (uint32_t o : was.objects) {
        if (object_to[o] < 0) {
          const std::string& name = old->objects[o];
          auto it = object_at.empty() ? object_at.end() : object_at.find(name);
          if (it == object_at.end()) {
            object_to[o] = static_cast<int64_t>(objects.size());
            objects.push_back(name);
          } else {
            object_to[o] = it->second;
          }
        }
        e.objects.push_back(static_cast<uint32_t>(object_to[o]));
      }
      e.fingerprint =
          !(*run.fingerprints)[i].empty() ? std::move((*run.fingerprints)[i]) : was.fingerprint;
    }
  }
  rec.objects.assign(objects.begin(), objects.end());
  std::set<std::tuple<int, int, int, int>> shapes;
  bool from_record = false;
  for (const Step& s : g.steps) {
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
  if (const Settled* old = run.old; old && from_record) {
    for (const auto& q : old->requests) shapes.insert({q.tasks, q.cpus_per_task, q.gpus, q.nodes});
  }
  for (const auto& [tasks, cpus, gpus, nodes] : shapes) {
    rec.requests.push_back({tasks, cpus, gpus, nodes});
  }
  for (const auto& [name, tool] : g.tools) {
    auto v = run.tools->find(name);
    if (v == run.tools->end()) return std::nullopt;
    rec.tools.push_back({tool.version, v->second});
  }
  rec.pipeline = g.name;
  rec.steps = n;
  return rec;
}

}  // namespace berth::pipeline
