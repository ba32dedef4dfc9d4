// The results directory's manifest (results_manifest.h).
#include "pipeline/results_manifest.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <unordered_set>

#include "util/files.h"
#include "util/strings.h"

namespace berth::pipeline {

namespace fs = std::filesystem;

namespace {

std::string manifest_path(const std::string& results_dir) {
  return results_dir + "/" + std::string(kResultsManifest);
}

// "<step>/<output>" whose parts are names, never "." or "..": a hand-edited manifest
// cannot make a removal reach outside the results directory.
bool safe_entry(std::string_view entry) {
  size_t slash = entry.find('/');
  if (slash == 0 || slash == std::string_view::npos || slash + 1 == entry.size()) return false;
  for (auto part : str::split(entry, '/')) {
    if (part.empty() || part == "." || part == "..") return false;
  }
  return true;
}

std::string_view step_of(std::string_view entry) { return entry.substr(0, entry.find('/')); }

// The manifest, or an empty one when there is none.
Result<ResultsManifest> read_manifest(const std::string& results_dir) {
  auto text = files::read_file(manifest_path(results_dir));
  if (!text.ok()) {
    if (text.error().code() == Errc::kNotFound) return ResultsManifest{};
    return text.error();
  }
  return parse_results_manifest(*text);
}

}  // namespace

ResultsManifest parse_results_manifest(std::string_view text) {
  ResultsManifest m;
  for (auto line : str::split(text, '\n')) {
    if (line.rfind("pipeline ", 0) == 0) {
      m.pipeline = std::string(line.substr(9));
    } else if (line.rfind("result ", 0) == 0 && safe_entry(line.substr(7))) {
      m.results.emplace_back(line.substr(7));
    }
  }
  return m;
}

std::string results_manifest_text(const ResultsManifest& m) {
  std::string out =
      "# berth: the results berth materialised in this directory, and the pipeline file\n"
      "# it belongs to (spec 04 §7.5). Files not named here are never touched.\n";
  out += "pipeline " + m.pipeline + "\n";
  for (const std::string& r : m.results) out += "result " + r + "\n";
  return out;
}

Result<void> claim_results_dir(const std::string& results_dir, const std::string& pipeline,
                               bool claim) {
  BERTH_TRY(ResultsManifest m, read_manifest(results_dir));
  if (!m.pipeline.empty() && m.pipeline != pipeline) {
    return fail(Errc::kInvalidInput,
                fmt::format("the results directory {} belongs to the pipeline {} (its {} says "
                            "so), not to {}: give this run a results directory of its own "
                            "with --results DIR",
                            results_dir, m.pipeline, kResultsManifest, pipeline));
  }
  if (!claim || !m.pipeline.empty()) return Ok{};
  if (::mkdir(results_dir.c_str(), 0777) != 0 && errno != EEXIST) {
    return fail(Errc::kIo, fmt::format("cannot create {}: {}", results_dir, std::strerror(errno)));
  }
  m.pipeline = pipeline;
  return files::write_file_atomic(manifest_path(results_dir), results_manifest_text(m), false);
}

void tidy_results_dir(const std::string& results_dir, const std::string& pipeline, RunReport& rep,
                      bool whole, const std::function<void(std::string_view)>& say) {
  auto old = read_manifest(results_dir);
  if (!old.ok()) {
    rep.problems.push_back(old.error().message());
    return;
  }
  std::unordered_set<std::string_view> steps;
  std::set<std::string> now;  // the manifest's entries after this run, sorted
  for (const StepRecord& r : rep.steps) {
    steps.insert(r.name);
    if (r.state != StepState::kExecuted && r.state != StepState::kCached) continue;
    for (const auto& [out, rec] : r.outputs) {
      std::string entry = r.name + "/" + out;
      if (safe_entry(entry) && files::exists(results_dir + "/" + entry)) now.insert(entry);
    }
  }
  std::set<std::string> gone;  // the directories of steps no longer in the pipeline
  for (const std::string& entry : old->results) {
    if (!whole || steps.count(step_of(entry))) {
      now.insert(entry);
      continue;
    }
    std::error_code ec;
    fs::remove_all(results_dir + "/" + entry, ec);
    if (ec) {
      rep.problems.push_back(
          fmt::format("cannot remove {}/{}: {}", results_dir, entry, ec.message()));
      now.insert(entry);
      continue;
    }
    std::string dir = results_dir + "/" + std::string(step_of(entry));
    gone.insert(dir + "/");
    // Emptied by us, it goes; holding a file of the user's, it stays with that file.
    if (::rmdir(dir.c_str()) != 0 && errno != ENOTEMPTY && errno != EEXIST && errno != ENOENT) {
      rep.problems.push_back(fmt::format("cannot remove {}: {}", dir, std::strerror(errno)));
    }
  }
  ResultsManifest m{pipeline, {now.begin(), now.end()}};
  std::string text = results_manifest_text(m);
  auto same = files::read_file(manifest_path(results_dir));
  if (!same.ok() || *same != text) {
    auto w = files::write_file_atomic(manifest_path(results_dir), text, false);
    if (!w.ok()) rep.problems.push_back(w.error().message());
  }
  if (gone.empty()) return;
  std::string notice = fmt::format(
      "removed the results of {} step(s) no longer in the pipeline (their objects stay in "
      "the store): {}",
      gone.size(), str::join({gone.begin(), gone.end()}, ", "));
  if (say) say(notice);
  rep.notices.push_back(std::move(notice));
}

}  // namespace berth::pipeline
