#include "launch/failure.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>
#include <system_error>

#include "util/strings.h"

namespace berth::launch {
namespace {

// Paths, names and PATH values come from the user and may hold any byte; printable()
// keeps the message on one line. The bound is generous: a cut path is a useless path.
std::string shown(std::string_view s) { return str::printable(s, 512); }

// strerror() is neither thread-safe nor locale-stable on every libc; the generic
// category gives the same text without either problem.
std::string errno_text(int err) { return std::generic_category().message(err); }

// What the parent can see of the file the child tried to exec. The child can only
// report an errno, and one errno covers several different mistakes (ENOENT: no such
// file, or a missing interpreter; EACCES: a directory, or no x bit), so the parent
// looks at the file to tell the user which one it was: "is a directory", "is not
// executable" and "bad interpreter" are told apart only this way (spec 03 §4).
struct FileFacts {
  bool exists = false;
  bool directory = false;
  bool regular = false;
  std::string interpreter;  // from a "#!" first line; empty when there is none
};

// Linux reads at most this much of a script when looking for "#!" (BINPRM_BUF_SIZE).
constexpr size_t kShebangBytes = 256;

FileFacts inspect(const std::string& path) {
  FileFacts f;
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return f;
  f.exists = true;
  f.directory = S_ISDIR(st.st_mode);
  f.regular = S_ISREG(st.st_mode);
  // Only a regular file is opened: opening a FIFO could block the parent forever.
  if (!f.regular) return f;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return f;
  char buf[kShebangBytes];
  ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  if (n < 2 || buf[0] != '#' || buf[1] != '!') return f;
  // As the kernel does: skip blanks after "#!", the interpreter runs to the next
  // blank or newline.
  std::string_view line(buf + 2, static_cast<size_t>(n) - 2);
  line = line.substr(0, line.find('\n'));
  size_t b = line.find_first_not_of(" \t");
  if (b == std::string_view::npos) return f;
  line.remove_prefix(b);
  f.interpreter = std::string(line.substr(0, line.find_first_of(" \t")));
  return f;
}

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

// A relative path is relative to the CHILD's working directory: the child chdirs
// before it execs, so inspecting "./a.out" from berth's own directory would look at
// the wrong file.
std::string as_child_sees(const std::string& path, const std::string& cwd) {
  if (path.empty() || path[0] == '/' || cwd.empty()) return path;
  return cwd + "/" + path;
}

// "'foo' (/usr/bin/foo)" when the search found something else than what was given.
std::string exe_name(const FailureContext& c) {
  if (c.resolved.empty() || c.resolved == c.executable)
    return fmt::format("'{}'", shown(c.executable));
  return fmt::format("'{}' ({})", shown(c.executable), shown(c.resolved));
}

std::string render_exec(int err, const FailureContext& c, const std::string& path_env) {
  const std::string exe = exe_name(c);
  // What the child handed to execve: the search result, or the name itself when it
  // has a '/' (execvp never searches such a name).
  std::string target = c.resolved;
  if (target.empty() && c.executable.find('/') != std::string::npos) target = c.executable;

  if (err == ENOENT) {
    if (target.empty()) {
      // Spec 03 §1: the search is on the child's PATH, which is the one to show.
      return fmt::format("executable {} not found on the child's PATH ({})", exe,
                         path_env.empty() ? "PATH is empty" : shown(path_env));
    }
    const std::string at = as_child_sees(target, c.cwd);
    FileFacts f = inspect(at);
    if (!f.exists) return fmt::format("executable {} does not exist", exe);
    if (!f.interpreter.empty() && !inspect(as_child_sees(f.interpreter, c.cwd)).exists) {
      return fmt::format("executable {} has a bad interpreter ('#!{}' in {})", exe,
                         shown(f.interpreter), shown(at));
    }
    // The file is there and any interpreter too: what is missing is the ELF
    // interpreter (the dynamic loader), which execve also reports as ENOENT.
    return fmt::format("executable {} could not be run: {} (is its dynamic loader missing?)", exe,
                       errno_text(err));
  }
  if (err == EACCES) {
    const std::string at = as_child_sees(target.empty() ? c.executable : target, c.cwd);
    FileFacts f = inspect(at);
    if (f.directory) return fmt::format("executable {} is a directory", exe);
    // execve says EACCES, not ENOENT, when a script's interpreter exists but cannot
    // be executed; blaming the script would send the user to the wrong file.
    if (f.regular && !f.interpreter.empty() && access(at.c_str(), X_OK) == 0 &&
        !is_executable_file(as_child_sees(f.interpreter, c.cwd))) {
      return fmt::format("executable {} has a bad interpreter ('#!{}' in {} is not executable)",
                         exe, shown(f.interpreter), shown(at));
    }
    return fmt::format("executable {} is not executable: {}", exe, errno_text(err));
  }
  if (err == ENOEXEC) return fmt::format("executable {} is not an executable format", exe);
  return fmt::format("executable {}: execve: {}", exe, errno_text(err));
}

const char* stage_name(SpawnStage s) {
  switch (s) {
    case SpawnStage::kNone:
      return "launch";
    case SpawnStage::kGate:
      return "fork gate";
    case SpawnStage::kSetsid:
      return "setpgid";
    case SpawnStage::kStdio:
      return "dup2 of stdio";
    case SpawnStage::kSignals:
      return "signal reset";
    case SpawnStage::kAffinity:
      return "sched_setaffinity";
    case SpawnStage::kMemPolicy:
      return "set_mempolicy";
    case SpawnStage::kLimits:
      return "setrlimit";
    case SpawnStage::kChdir:
      return "chdir";
    case SpawnStage::kExec:
      return "execve";
    case SpawnStage::kReadOnly:
      return "making its inputs read-only (a mount namespace of its own)";
  }
  return nullptr;
}

}  // namespace

std::string render_failure(const SpawnFailure& f, const FailureContext& c,
                           const std::string& path_env) {
  std::string where = c.rank < 0 ? std::string()
                                 : fmt::format("rank {} on {}: ", c.rank,
                                               c.node.empty() ? "(unknown node)" : shown(c.node));
  switch (f.stage) {
    case SpawnStage::kExec:
      return where + render_exec(f.err, c, path_env);
    case SpawnStage::kChdir:
      if (f.err == ENOENT) {
        return where + fmt::format("working directory '{}' does not exist", shown(c.cwd));
      }
      if (f.err == ENOTDIR) {
        return where + fmt::format("working directory '{}' is not a directory", shown(c.cwd));
      }
      return where + fmt::format("working directory '{}': {}", shown(c.cwd), errno_text(f.err));
    case SpawnStage::kAffinity:
      return where + fmt::format("executable {}: binding to cores {} refused: {}", exe_name(c),
                                 c.cpus.empty() ? "(none given)" : shown(c.cpus),
                                 errno_text(f.err));
    default:
      break;
  }
  // The record came through a pipe: a stage number no build of berth writes is shown
  // as a number rather than trusted.
  const char* stage = stage_name(f.stage);
  std::string stage_text =
      stage ? std::string(stage) : fmt::format("stage {}", static_cast<int32_t>(f.stage));
  return where + fmt::format("executable {}: {}: {}", exe_name(c), stage_text, errno_text(f.err));
}

}  // namespace berth::launch
