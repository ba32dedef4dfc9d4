// A command started for Launch.popen (launched.h).
//
// berth.py's Popen subclass asks for the start here instead of forking itself, so the
// command is started the one way berth starts anything (spec 03 §1): in a process group
// of its own, bound to its CPUs in the child (the calling thread's affinity is never
// touched), every other descriptor closed, and known to the guard, so that it dies with
// the Python process however that ends (spec 03 §9). It is reaped by its pid, its
// group sent SIGKILL as it is reaped (spec 03 §6), and its status given back the way
// subprocess gives it: the exit code, or minus the signal that killed it.
#include "launched.h"

#include <poll.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "launch/spawn.h"
#include "launch/supervised.h"
#include "util/clock.h"

namespace py = pybind11;

namespace berth::python {
namespace {

// Without a pidfd (kernels before 5.3) the child's end is looked for this often.
constexpr int kSweepMs = 20;

// The exception subprocess would raise for a start that failed: FileNotFoundError for
// a program or directory that is not there, PermissionError for one berth may not run,
// OSError otherwise; the message is berth's, naming what was wrong.
[[noreturn]] void raise_start_failure(const Error& e) {
  const char* cls = "OSError";
  int err = EIO;
  if (e.code() == Errc::kNotFound) {
    cls = "FileNotFoundError";
    err = ENOENT;
  } else if (e.code() == Errc::kRefused) {
    cls = "PermissionError";
    err = EACCES;
  }
  py::object exc = py::module_::import("builtins").attr(cls)(err, e.message());
  PyErr_SetObject(exc.get_type().ptr(), exc.ptr());
  throw py::error_already_set();
}

class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::vector<std::string>& envp,
        const std::string& cwd, const std::vector<int>& cpus, int stdin_fd, int stdout_fd,
        int stderr_fd) {
    launch::SpawnRequest req;
    req.argv = argv;
    req.envp = envp;
    req.cwd = cwd;
    req.cpus = cpus;
    req.stdin_fd = stdin_fd;
    req.stdout_fd = stdout_fd;
    req.stderr_fd = stderr_fd;
    launch::FailureContext ctx;
    ctx.rank = -1;  // not a rank: the message names the command
    if (!argv.empty()) ctx.executable = argv[0];
    ctx.cwd = cwd;
    auto started = child_.start(launch::Spawner::real(), req, ctx);
    if (!started.ok()) raise_start_failure(started.error());
  }

  pid_t pid() const { return child_.pid(); }

  // The return code once the child has ended (it is reaped then), else None.
  std::optional<int> poll() {
    if (!child_.try_reap(launch::Supervised::Group::kKill)) return std::nullopt;
    return returncode();
  }

  // Waits up to `timeout` seconds (None: for as long as it runs) for the child to end;
  // its return code, or None when the time ran out. Python's signal handlers run while
  // it waits (Ctrl-C raises KeyboardInterrupt here, as in subprocess).
  std::optional<int> wait(std::optional<double> timeout) {
    const Clock& clock = Clock::real();
    std::optional<std::chrono::steady_clock::time_point> until;
    if (timeout) {
      auto ns = std::chrono::nanoseconds(static_cast<int64_t>(std::max(0.0, *timeout) * 1e9));
      until = clock.steady() + ns;
    }
    for (;;) {
      if (auto code = poll()) return code;
      auto now = clock.steady();
      if (until && now >= *until) return std::nullopt;
      int ms = launch::poll_timeout_ms(until, now);
      int rc;
      {
        py::gil_scoped_release unlocked;
        if (child_.pidfd() >= 0) {
          pollfd fd{child_.pidfd(), POLLIN, 0};
          rc = ::poll(&fd, 1, ms);
        } else {
          rc = ::poll(nullptr, 0, ms < 0 || ms > kSweepMs ? kSweepMs : ms);
        }
      }
      if (rc < 0 && errno == EINTR && PyErr_CheckSignals() != 0) throw py::error_already_set();
    }
  }

 private:
  // subprocess's convention: the exit code, or -S for death by signal S; 0 for a child
  // someone else reaped, whose status is unknown (as subprocess says then too).
  int returncode() const {
    const auto& s = child_.status();
    if (!s) return 0;
    return s->kind == launch::ExitStatus::kSignaled ? -s->signal : s->code;
  }

  launch::Supervised child_;
};

}  // namespace

void bind_launched(py::module_& m) {
  py::class_<Child>(m, "_Child")
      .def_property_readonly("pid", &Child::pid)
      .def("poll", &Child::poll)
      .def("wait", &Child::wait, py::arg("timeout"));
  m.def(
      "_spawn",
      [](const std::vector<std::string>& argv, const std::vector<std::string>& envp,
         const std::string& cwd, const std::vector<int>& cpus, int stdin_fd, int stdout_fd,
         int stderr_fd) {
        return std::make_unique<Child>(argv, envp, cwd, cpus, stdin_fd, stdout_fd, stderr_fd);
      },
      py::arg("argv"), py::arg("envp"), py::arg("cwd"), py::arg("cpus"), py::arg("stdin_fd"),
      py::arg("stdout_fd"), py::arg("stderr_fd"));
}

}  // namespace berth::python
