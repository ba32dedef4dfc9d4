// Staging (staging.h).
#include "pipeline/staging.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "pipeline/beside.h"
#include "util/strings.h"

namespace berth::pipeline {

namespace fs = std::filesystem;

Staging::~Staging() {
  std::error_code ec;
  for (const std::string& dir : free_) fs::remove_all(dir, ec);
}

Result<std::string> Staging::acquire() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      std::string dir = std::move(free_.back());
      free_.pop_back();
      return dir;
    }
  }
  std::string dir = fmt::format("{}/{}.{}", root_, ::getpid(), seq_++);
  // A directory of this name is left by an earlier process with this pid: stale.
  std::error_code ec;
  fs::remove_all(dir, ec);
  for (const std::string& d : {dir, dir + "/in", dir + "/out"}) {
    if (::mkdir(d.c_str(), 0777) != 0) {
      return fail(Errc::kIo,
                  fmt::format("cannot create staging directory {}: {}", d, std::strerror(errno)));
    }
  }
  return dir;
}

void Staging::release(std::string dir, std::vector<std::string>* left) {
  // Everything the step left goes; in/ and out/ stay, empty. Whatever cannot be
  // removed (a step that made a directory unwritable) costs the directory, not the run.
  std::error_code ec;
  bool clean = true;
  // `name`, with '/' after a directory's, for `left`.
  auto note = [left](std::string name, const fs::directory_entry& e) {
    if (!left) return;
    std::error_code dir_ec;
    if (e.is_directory(dir_ec) && !e.is_symlink(dir_ec)) name += '/';
    left->push_back(std::move(name));
  };
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    bool keep = (name == "in" || name == "out") && entry.is_directory(ec) && !entry.is_symlink(ec);
    if (!keep) {
      note(name, entry);
      clean = fs::remove_all(entry.path(), ec) != static_cast<std::uintmax_t>(-1) && !ec && clean;
      continue;
    }
    for (const auto& inner : fs::directory_iterator(entry.path(), ec)) {
      if (name == "out") note("out/" + inner.path().filename().string(), inner);
      clean = fs::remove_all(inner.path(), ec) != static_cast<std::uintmax_t>(-1) && !ec && clean;
    }
    if (ec) clean = false;
  }
  if (ec) clean = false;
  if (clean) {
    for (const char* sub : {"/in", "/out"}) {
      struct stat st {};
      if (::lstat((dir + sub).c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) clean = false;
    }
  }
  if (!clean) {
    fs::remove_all(dir, ec);
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(std::move(dir));
}

void Staging::sweep_stale() {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root_, ec)) {
    // <pid>.<n>: made by a process of this cache; removed when that process is gone.
    std::string name = entry.path().filename().string();
    size_t dot = name.find('.');
    if (dot == 0 || dot == std::string::npos) continue;
    auto pid = str::parse_uint(std::string_view(name).substr(0, dot), INT32_MAX);
    auto seq = str::parse_uint(std::string_view(name).substr(dot + 1));
    if (!pid.ok() || !seq.ok() || *pid == 0) continue;
    if (::kill(static_cast<pid_t>(*pid), 0) == 0 || errno != ESRCH) continue;
    std::error_code rm;
    fs::remove_all(entry.path(), rm);
  }
}

// Puts the user's file `src` in a staging directory as `dst`: a symlink to its
// absolute path. Neither a hard link nor a copy: a link changes the file's ctime, which
// its stamp holds (index.h), so every run would make the next one rehash its inputs,
// and a copy costs the bytes, across filesystems too. What a symlink gives up — the
// file replaced while the step runs — the runner catches by stamping it again after.
// A filesystem without symlinks gets a hard link (true: its ctime changed), else a copy.
Result<bool> stage_input(const std::string& src, const std::string& dst) {
  std::error_code ec;
  fs::path target = fs::absolute(src, ec);
  if (!ec && ::symlink(target.c_str(), dst.c_str()) == 0) return false;
  if (::link(src.c_str(), dst.c_str()) == 0) return true;
  fs::copy_file(src, dst, fs::copy_options::overwrite_existing, ec);
  if (ec) return fail(Errc::kIo, fmt::format("cannot copy {} to {}: {}", src, dst, ec.message()));
  return false;
}

std::string staged_path(const std::string& stage, const std::string& relative) {
  std::string dest = stage + "/" + relative;
  // in/ is there already; anything deeper (in/parts.2/, scripts/) is made.
  size_t slash = relative.rfind('/');
  if (slash != std::string::npos && std::string_view(relative).substr(0, slash) != "in") {
    std::error_code ec;
    fs::create_directories(fs::path(dest).parent_path(), ec);
  }
  return dest;
}

std::map<std::string, std::vector<std::string>> staged_layout(
    const std::map<std::string, Input>& inputs) {
  // How many items of the step have each name: a name given twice cannot be one file.
  // (A file beside the pipeline is staged at its own path, not under in/: beside.h.)
  std::map<std::string, int> uses;
  for (const auto& [name, input] : inputs) {
    if (!beside_path_of(name).empty()) continue;
    for (const InputItem& item : input.items) ++uses[item.staged_name()];
  }
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [name, input] : inputs) {
    if (!beside_path_of(name).empty()) continue;
    auto& paths = out[name];
    paths.reserve(input.items.size());
    for (size_t k = 0; k < input.items.size(); ++k) {
      std::string file = input.items[k].staged_name();
      paths.push_back(uses[file] == 1 ? "in/" + file
                                      : "in/" + name + "." + std::to_string(k) + "/" + file);
    }
  }
  return out;
}

}  // namespace berth::pipeline
