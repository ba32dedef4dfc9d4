// Directory outputs (dir_output.h).
#include "pipeline/dir_output.h"

#include <fmt/format.h>

#include <set>

#include "pipeline/step_cache.h"
#include "store/tree.h"

namespace berth::pipeline {

namespace {

// What the index remembers for a tree's directories: never a file's hash.
std::string dir_hash(std::string_view manifest) { return "tree:" + std::string(manifest); }

// Every directory of the tree, relative ("" the root), parents before children.
std::vector<std::string> dirs_of(const std::vector<store::TreeEntry>& entries) {
  std::set<std::string> dirs{""};
  for (const auto& e : entries) {
    if (e.kind == store::TreeEntry::Kind::kDir) dirs.insert(e.path);
    for (size_t slash = e.path.find('/'); slash != std::string::npos;
         slash = e.path.find('/', slash + 1)) {
      dirs.insert(e.path.substr(0, slash));
    }
  }
  return {dirs.begin(), dirs.end()};
}

}  // namespace

bool tree_whole(store::ObjectStore& objects, const std::string& manifest,
                std::vector<std::string>* children, std::vector<std::string>& problems) {
  std::vector<store::TreeEntry> entries;
  auto got = store::get_tree(objects, manifest, &entries);
  if (!got.ok()) {
    problems.push_back(got.error().message());
    return false;
  }
  if (!got->present()) {
    if (!got->problem.empty()) problems.push_back(got->problem);
    return false;
  }
  std::vector<std::string> names = store::tree_objects(entries);
  std::vector<char> present(names.size(), 0);
  objects.has_objects(names, present);
  for (char p : present) {
    if (!p) return false;
  }
  if (children) children->insert(children->end(), names.begin(), names.end());
  return true;
}

Result<void> restore_tree(store::ObjectStore& objects, const std::string& manifest,
                          const std::string& dir) {
  std::vector<store::TreeEntry> entries;
  BERTH_TRY(store::ObjectRead got, store::get_tree(objects, manifest, &entries));
  if (!got.present()) {
    return fail(Errc::kIo, fmt::format("tree {} was collected as it was published; it is "
                                       "recomputed next time",
                                       manifest));
  }
  // Asked all at once: a backend may answer many faster than one by one (s3://).
  std::vector<std::string> names;
  std::vector<const store::TreeEntry*> files;
  for (const auto& e : entries) {
    if (e.kind == store::TreeEntry::Kind::kDir) continue;
    names.push_back(e.object);
    files.push_back(&e);
  }
  std::vector<char> present(names.size(), 0);
  objects.has_objects(names, present);
  for (size_t i = 0; i < files.size(); ++i) {
    if (present[i]) continue;
    auto put = objects.put_object_file(dir + "/" + files[i]->path);
    if (!put.ok()) return put.error();
  }
  return Ok{};
}

Result<void> materialize_tree_result(store::ObjectStore& objects, Index* index,
                                     std::string_view step, const StepRecord::Output& rec,
                                     const std::string& dest, std::vector<std::string>* problems,
                                     ResultStamps* seen) {
  std::vector<store::TreeEntry> entries;
  BERTH_TRY(store::ObjectRead manifest, store::get_tree(objects, rec.object, &entries));
  if (!manifest.present()) {
    problems->push_back(manifest.problem.empty()
                            ? fmt::format("step '{}': tree {} is missing", step, rec.object)
                            : fmt::format("step '{}': {}", step, manifest.problem));
    return Ok{};
  }
  // Every directory and file of the result, with what the index is to hold for it.
  std::vector<std::pair<std::string, std::string>> paths;
  for (const std::string& d : dirs_of(entries)) {
    paths.emplace_back(d.empty() ? dest : dest + "/" + d, dir_hash(rec.object));
  }
  for (const auto& e : entries) {
    if (e.kind != store::TreeEntry::Kind::kDir) paths.emplace_back(dest + "/" + e.path, e.object);
  }
  // In place and unchanged since it was put there: left alone, as a file result is.
  if (index) {
    std::vector<SettledFile> found;
    bool holds = true;
    for (const auto& [path, hash] : paths) {
      auto st = result_stamp(path);
      if (!st.ok() || index->file_hash(path, *st) != hash) {
        holds = false;
        break;
      }
      found.push_back({path, *st, false, {}});
    }
    if (holds) {
      if (seen) seen->files.insert(seen->files.end(), found.begin(), found.end());
      return Ok{};
    }
  }
  BERTH_TRY(store::ObjectRead put, store::materialize_tree(objects, rec.object, dest, true));
  if (!put.present()) {
    problems->push_back(fmt::format("step '{}': {}", step,
                                    put.problem.empty() ? "tree " + rec.object + " is missing"
                                                        : put.problem));
    return Ok{};
  }
  if (!index) return Ok{};
  for (const auto& [path, hash] : paths) {
    auto st = result_stamp(path);
    if (!st.ok()) {
      if (seen) seen->whole = false;
      continue;
    }
    index->remember_file(path, *st, hash);
    if (seen) seen->files.push_back({path, *st, false, {}});
  }
  return Ok{};
}

}  // namespace berth::pipeline
