// StepCache (step_cache.h).
#include "pipeline/step_cache.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "pipeline/dir_output.h"
#include "pipeline/step_row.h"

namespace berth::pipeline {

// A result's stamp, without its ctime: a result is a hard link to its stored object,
// and every other link made to that object (the same bytes materialised for another
// step, or linked into a staging directory) changes the ctime of all of them. A
// write to the result still changes its mtime or size; what this gives up is only
// noticing an in-place edit that also restored the mtime.
Result<FileStamp> result_stamp(const std::string& path) {
  BERTH_TRY(FileStamp st, FileStamp::of(path));
  st.ctime_ns = 0;
  return st;
}

std::optional<StepRecord> StepCache::lookup(const Step& s, const std::string& key,
                                            bool materialize_them,
                                            std::vector<std::string>& problems, Seen* seen) {
  // The index remembers rows this machine has read or written; the store is the
  // authority, and every object is still checked there.
  std::optional<std::string> text;
  if (index_) text = index_->step_row(key);
  bool from_index = text.has_value();
  if (!text) {
    auto row = rows_.get_row(store::row_address(kStepsRow, key));
    if (!row.ok()) {
      problems.push_back(fmt::format("step '{}': {}", s.name, row.error().message()));
      return std::nullopt;
    }
    if (!row->has_value()) return std::nullopt;
    text = std::move(**row);
  }
  auto j = read_step_row(*text);
  if (!j) {
    problems.push_back(
        fmt::format("step '{}': the row for key {} does not parse; recomputing", s.name, key));
    return std::nullopt;
  }
  StepRecord r;
  r.name = s.name;
  r.key = key;
  for (const std::string& out : s.outputs) {
    auto it = j->outputs.find(out);
    if (it == j->outputs.end() || j->malformed.count(out)) return std::nullopt;
    const auto& o = it->second;
    auto field = [&](const char* k, const char* def) {
      auto f = o.find(k);
      return f != o.end() ? f->second : std::string(def);
    };
    StepRecord::Output rec{field("object", ""), field("form", "bytes"), field("canonical", "")};
    if (!store::check_object_name(rec.object).ok()) return std::nullopt;
    auto has = objects_.has_object(rec.object);
    if (!has.ok() || !*has) return std::nullopt;
    // A tree is there when every file it names is (and each is refreshed).
    if (is_tree(rec) && !tree_whole(objects_, rec.object, seen ? &seen->objects : nullptr,
                                    problems)) {
      return std::nullopt;
    }
    if (seen) seen->objects.push_back(rec.object);
    r.outputs[out] = rec;
  }
  // The row is in use: refreshed, so that a collector spares it until this run's
  // report names it; taken by one since it was read, it is a miss (spec 05 §10).
  auto touched = rows_.touch_row(store::row_address(kStepsRow, key));
  if (!touched.ok() || !*touched) return std::nullopt;
  if (index_ && !from_index) index_->remember_step(key, *text);
  // A cache hit adopts the record of the run that computed it.
  r.computed_by = !j->worker.empty() ? j->worker : j->host;
  if (!j->host.empty()) r.node = j->host;
  if (!j->cores.empty()) r.cores = j->cores;
  if (store::check_object_name(j->log).ok()) r.log = j->log;
  if (materialize_them) {
    std::vector<std::string> found;
    auto m = materialize(r, &found, seen ? &seen->results : nullptr);
    if (!m.ok()) found.push_back(m.error().message());
    if (!found.empty()) {
      for (auto& p : found) problems.push_back(std::move(p));
      return std::nullopt;  // a corrupt or missing object is recomputed
    }
  }
  r.state = StepState::kCached;
  r.reason = std::string(kCachedReason);
  return r;
}

Result<void> StepCache::materialize(const StepRecord& r, std::vector<std::string>* problems,
                                    ResultStamps* seen) {
  std::string dir = fmt::format("{}/{}", results_dir_, r.name);
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) {
    return fail(Errc::kIo, fmt::format("cannot create {}: {}", dir, std::strerror(errno)));
  }
  for (const auto& [out, rec] : r.outputs) {
    std::string dest = dir + "/" + out;
    if (is_tree(rec)) {
      BERTH_CHECK(materialize_tree_result(objects_, index_, r.name, rec, dest, problems,
                                          seen));
      continue;
    }
    // A result already in place, unchanged since it was verified, is not touched:
    // a no-op rerun stats instead of rehashing.
    if (index_) {
      if (auto st = result_stamp(dest); st.ok()) {
        if (index_->file_hash(dest, *st) == rec.object) {
          if (seen) seen->files.push_back({dest, *st, false, {}});
          continue;
        }
      }
    }
    // get_object_to_file() replaces `dest` atomically, never writing into it; a directory
    // there (the output was a directory before) goes first.
    if (struct stat there {}; ::lstat(dest.c_str(), &there) == 0 && S_ISDIR(there.st_mode)) {
      std::error_code ec;
      std::filesystem::remove_all(dest, ec);
    }
    // A copy of its own, never a link to the stored copy: a user who makes a result
    // writable and edits it changes the result, not the object (spec 04 §7.5). It is
    // read-only all the same, as berth's to replace, and a reflink where it can be.
    auto got = objects_.get_object_to_file(rec.object, dest);
    if (!got.ok()) return got.error();
    if (got->present() && ::chmod(dest.c_str(), 0444) != 0) {
      return fail(Errc::kIo, fmt::format("cannot chmod {}: {}", dest, std::strerror(errno)));
    }
    if (!got->present()) {
      problems->push_back(got->problem.empty()
                              ? fmt::format("step '{}': object {} of output '{}' is missing",
                                            r.name, rec.object, out)
                              : fmt::format("step '{}': {}", r.name, got->problem));
      continue;
    }
    if (index_) {
      if (auto st = result_stamp(dest); st.ok()) {
        index_->remember_file(dest, *st, rec.object);
        if (seen) seen->files.push_back({dest, *st, false, {}});
      } else if (seen) {
        seen->whole = false;
      }
    }
  }
  return Ok{};
}

}  // namespace berth::pipeline
