// The Python module `berth`: the library's placement, pools and pipelines, called
// in-process (docs/python.md).
//
// Two layers in one extension. This file is the native one — every name it defines
// starts with an underscore — and holds nothing but calls into the library: the
// Context the CLI builds (place/context.h) from the same options, the Pool, the
// renderers, the run Session (pipeline/session.h). The public API (berth.Pool,
// berth.parallel_command, berth.run, the exceptions, the result objects) is Python,
// python/berth.py, compiled into this extension (embed.cmake) and run in the module's
// namespace when it is imported; it calls the natives below.
//
// Errors: the library's Error becomes the Python exception berth.py defines for its
// code (BadInput, PlacementRefused, berth.Error), carrying berth's message.
//
// The GIL: released while berth waits — building a context (which may run `srun
// --version`), a pool grant waiting for a release, and a whole pipeline run, which runs
// on a thread of its own while the calling thread waits for it, Ctrl-C-able — and held
// while it only decides (a grant that does not wait, a rendering: quick).
#include <fcntl.h>
#include <pthread.h>
#include <pybind11/eval.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "alloc/display.h"
#include "berth_py.h"  // kBerthPy: python/berth.py, embedded (embed.cmake)
#include "cli/last_run.h"
#include "cli/read_back.h"
#include "cli/store_url.h"
#include "cli/version.h"
#include "launched.h"
#include "pipeline/live_status.h"
#include "pipeline/probe.h"
#include "pipeline/session.h"
#include "pipeline/store_verify.h"
#include "place/context.h"
#include "place/pool.h"
#include "place/render.h"
#include "util/env.h"
#include "util/libcrypto.h"
#include "util/files.h"
#include "util/idset.h"
#include "util/result.h"
#include "wireup/pmix_server.h"

namespace py = pybind11;

namespace berth::python {
namespace {

// A library Error on its way to Python: translated to the class berth.py defines for
// its code.
struct Raised : std::exception {
  explicit Raised(Error e) : error(std::move(e)) {}
  const char* what() const noexcept override { return error.message().c_str(); }
  Error error;
};

[[noreturn]] void raise(const Error& e) { throw Raised(e); }

template <typename T>
T take(Result<T> r) {
  if (!r.ok()) raise(r.error());
  return std::move(r).value();
}
void take(const Result<void>& r) {
  if (!r.ok()) raise(r.error());
}

// The exception class for an error code, by its name in berth.py.
const char* exception_name(Errc code) {
  switch (code) {
    case Errc::kInvalidInput:
    case Errc::kNotFound:
      return "BadInput";
    case Errc::kRefused:
    case Errc::kUnsupported:
      return "PlacementRefused";
    case Errc::kIo:
    case Errc::kUnavailable:
    case Errc::kInternal:
      return "Error";
  }
  return "Error";
}

// JSON text as Python values, by Python's own json module: objects keep their order.
py::object from_json(const std::string& text) {
  return py::module_::import("json").attr("loads")(text);
}
py::object from_json(const nlohmann::ordered_json& j) {
  return from_json(j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
}

// berth's own environment: what version commands (srun --version, a tool's) run
// with, read from the process once, as the CLI's is — when the module is imported, with
// the GIL held, so that no Python thread changes the environment while it is read.
place::VersionProbe& version_probe() {
  static const Env env = Env::from_process();
  static pipeline::CaptureProbe probe(env);
  return probe;
}

// The keyword arguments berth.py gathers (its _seams()) as the library's options. `env`
// is always there: os.environ's copy unless the caller gave a mapping.
struct Seams {
  Env env;
  place::AllocationOptions alloc;
  place::MachineOptions machine;
};

std::string text_of(const py::dict& d, const char* key) {
  if (!d.contains(key) || d[key].is_none()) return "";
  return py::str(d[key]).cast<std::string>();
}

Seams seams_of(const py::dict& d) {
  Seams s;
  if (d.contains("env") && !d["env"].is_none()) {
    for (auto item : d["env"].cast<py::dict>()) {
      std::string name = py::str(item.first).cast<std::string>();
      std::string value = py::str(item.second).cast<std::string>();
      s.env.set(std::move(name), std::move(value));
    }
  }
  if (d.contains("hosts") && !d["hosts"].is_none()) {
    s.alloc.hosts = d["hosts"].cast<std::vector<std::string>>();
  }
  s.alloc.hostfile = text_of(d, "hostfile");
  s.alloc.simulate = text_of(d, "simulate");
  s.machine.machine = text_of(d, "machine");
  s.machine.sysfs_root = text_of(d, "sysfs_root");
  s.machine.affinity = text_of(d, "affinity");
  s.machine.slurm_version = text_of(d, "slurm_version");
  std::string launcher = text_of(d, "launcher");
  s.machine.launcher = launcher.empty() ? "auto" : launcher;
  return s;
}

// The Context for `s`. The GIL is released meanwhile: the launcher's version may be
// asked by running it (once per process and kind), and nothing here touches Python.
std::shared_ptr<place::Context> context_of(Seams s) {
  std::optional<Result<place::Context>> built;
  {
    py::gil_scoped_release unlocked;
    built.emplace(place::build_context(std::move(s.env), s.alloc, s.machine, version_probe()));
  }
  return std::make_shared<place::Context>(take(std::move(*built)));
}

// What berth.py hands over for a placement: nodes (possibly empty: this node), cores
// (absent: every usable core; one set; or one per node), gpus, gpu_ids.
struct PlacementArg {
  std::vector<std::string> nodes;
  std::vector<std::vector<int>> cores;
  int gpus = 0;
  std::vector<std::string> gpu_ids;
};

PlacementArg placement_of(const py::dict& d) {
  PlacementArg p;
  if (d.contains("nodes") && !d["nodes"].is_none()) {
    p.nodes = d["nodes"].cast<std::vector<std::string>>();
  }
  if (d.contains("cores") && !d["cores"].is_none()) {
    p.cores = d["cores"].cast<std::vector<std::vector<int>>>();
  }
  if (d.contains("gpus") && !d["gpus"].is_none()) p.gpus = d["gpus"].cast<int>();
  if (d.contains("gpu_ids") && !d["gpu_ids"].is_none()) {
    p.gpu_ids = d["gpu_ids"].cast<std::vector<std::string>>();
  }
  return p;
}

// The word that stands for the command when a caller asks for the launcher's part
// alone (berth.parallel_command without command=): every renderer puts the command
// last, so it comes off the end again.
constexpr const char* kCommandStandIn =
    "\x01"
    "berth-command"
    "\x01";

// The context one call works from: the allocation, the machine, this node, the
// launcher (place::Context). Shared by a Pool and the placements it grants.
class ContextHandle {
 public:
  explicit ContextHandle(const py::dict& seams) : c_(context_of(seams_of(seams))) {}

  py::object machine() const { return from_json(place::machine_json(*c_)); }
  py::object allocation() const { return from_json(alloc::to_json(c_->allocation)); }
  std::string here() const { return c_->here(); }

  // The pool's nodes, as berth.Pool() takes them; every one must be reachable from
  // here, as `berth place --auto` requires.
  py::list pool_nodes(bool check_reachable) const {
    std::vector<place::PoolNode> nodes = c_->pool_nodes();
    if (check_reachable) {
      std::vector<std::string> names;
      for (const auto& n : nodes) names.push_back(n.name);
      take(c_->check_reachable(names));
    }
    py::list out;
    for (const auto& n : nodes) {
      py::dict d;
      d["name"] = n.name;
      d["cores"] = n.cores;
      d["gpu_ids"] = n.gpu_ids;
      d["memory_mb"] = n.memory_mb ? py::object(py::int_(*n.memory_mb)) : py::object(py::none());
      out.append(d);
    }
    return out;
  }

  // One launch rendered for this context's launcher, as `berth place --format json`
  // prints it, and its shell line. The order of checks is the CLI's: the placement
  // against the allocation, the rendering, then whether the launcher reaches its nodes.
  py::tuple render(int tasks, int cpus_per_task, const std::optional<py::dict>& placement,
                   std::optional<int64_t> memory_cap,
                   const std::optional<std::vector<std::string>>& command) const {
    std::optional<place::Placement> p;
    if (placement) {
      PlacementArg a = placement_of(*placement);
      place::Placement named = take(c_->named_placement(a.nodes, a.cores));
      named.gpus = a.gpus;
      named.gpu_ids = a.gpu_ids;
      p = std::move(named);
    }
    std::vector<std::string> words = command ? *command : std::vector<std::string>{kCommandStandIn};
    place::LaunchSpec spec = c_->launch_spec(tasks, cpus_per_task, memory_cap, words);
    place::Rendered r = take(place::render(*c_->machine, c_->launcher, p, spec));
    if (p) take(c_->check_reachable(p->nodes));
    if (!command) {
      if (!r.argv.empty() && r.argv.back() == kCommandStandIn) r.argv.pop_back();
      spec.command.clear();
    }
    return py::make_tuple(from_json(place::rendering_json(r, p, spec, c_->launcher)),
                          place::shell_line(r));
  }

  const std::shared_ptr<place::Context>& context() const { return c_; }

 private:
  std::shared_ptr<place::Context> c_;
};

// place::Pool, with a grant that may wait for a release with the GIL released.
class PoolHandle {
 public:
  explicit PoolHandle(const py::list& nodes) {
    std::vector<place::PoolNode> v;
    for (auto item : nodes) {
      py::dict d = item.cast<py::dict>();
      place::PoolNode n;
      n.name = d["name"].cast<std::string>();
      n.cores = d["cores"].cast<std::vector<int>>();
      if (d.contains("gpu_ids") && !d["gpu_ids"].is_none()) {
        n.gpu_ids = d["gpu_ids"].cast<std::vector<std::string>>();
      }
      if (d.contains("memory_mb") && !d["memory_mb"].is_none()) {
        n.memory_mb = d["memory_mb"].cast<int64_t>();
      }
      v.push_back(std::move(n));
    }
    pool_ = std::make_unique<place::Pool>(std::move(v));
  }

  // ("granted", id, placement, memory_mb), ("not-now",) or ("never", why). With `wait`,
  // "not now" is waited out (until `timeout` seconds, when given): the GIL is released
  // while nothing is given back, and a signal (Ctrl-C) ends the wait with its exception.
  py::tuple grant(int tasks, int cpus_per_task, int gpus, std::optional<int> nodes,
                  std::optional<int64_t> memory_mb, bool wait, std::optional<double> timeout) {
    place::Request req;
    req.tasks = tasks;
    req.cpus_per_task = cpus_per_task;
    req.gpus = gpus;
    req.nodes = nodes;
    req.memory_mb = memory_mb;
    using clock = std::chrono::steady_clock;
    std::optional<clock::time_point> until;
    if (timeout) {
      until = clock::now() + std::chrono::duration_cast<clock::duration>(
                                 std::chrono::duration<double>(std::max(0.0, *timeout)));
    }
    for (;;) {
      uint64_t seen = pool_->releases();
      auto g = pool_->grant(req);
      if (!g.ok()) {
        if (g.error().code() == Errc::kRefused) return py::make_tuple("never", g.error().message());
        raise(g.error());
      }
      if (g->has_value()) {
        const place::Grant& granted = **g;
        py::dict p;
        p["nodes"] = granted.placement.nodes;
        p["cores"] = granted.placement.cores;
        p["gpus"] = granted.placement.gpus;
        p["gpu_ids"] = granted.placement.gpu_ids;
        return py::make_tuple(
            "granted", granted.id, p,
            granted.memory_mb ? py::object(py::int_(*granted.memory_mb)) : py::object(py::none()));
      }
      if (!wait) return py::make_tuple("not-now");
      auto slice = std::chrono::milliseconds(100);
      if (until) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*until - clock::now());
        if (left.count() <= 0) return py::make_tuple("not-now");
        slice = std::min(slice, left);
      }
      {
        py::gil_scoped_release unlocked;
        pool_->wait_for_release(seen, slice);
      }
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    }
  }

  void release(uint64_t id) { pool_->release(id); }
  size_t held() const { return pool_->held(); }
  std::vector<int> free_cores(size_t node) const { return pool_->free_cores(node); }

 private:
  std::unique_ptr<place::Pool> pool_;
};

// Writes `text` to standard error (fd 2, as the CLI does), whole lines at once.
void to_stderr(std::string_view text) {
  auto w = files::write_all(2, text.data(), text.size(), "stderr");
  (void)w;
}

// One berth.run: the session opened and run on a thread of its own, so that the
// calling thread can wait for it without the GIL and hear Ctrl-C.
struct RunJob {
  pipeline::SessionOptions options;
  Env steps_env;
  std::shared_ptr<place::Context> context;
  std::optional<py::function> on_output;  // touched only with the GIL held
  int cancel[2] = {-1, -1};

  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::optional<Error> error;
  int exit_code = 0;
  std::string worker;
  std::string report;  // the run report's JSON
  bool settled = false;

  ~RunJob() {
    for (int fd : cancel) {
      if (fd >= 0) ::close(fd);
    }
  }

  void finish() {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
    cv.notify_all();
  }

  // On the run's thread: berth's own signals stay with Python's main thread.
  void body() {
    sigset_t mask;
    sigemptyset(&mask);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&mask, s);
    pthread_sigmask(SIG_BLOCK, &mask, nullptr);
    pipeline::SessionPlace place;
    place.nodes = context->pool_nodes();
    place.host = context->here();
    place.machine = context->machine;
    place.launcher = &context->launcher;
    place.probe = &version_probe();
    pipeline::SessionSinks sinks;
    sinks.say = [](std::string_view m) { to_stderr("berth: " + std::string(m) + "\n"); };
    sinks.step_output = [this](const std::string& step, std::string_view text) {
      if (on_output) {
        py::gil_scoped_acquire locked;
        try {
          (*on_output)(step,
                       py::bytes(text.data(), text.size()).attr("decode")("utf-8", "replace"));
        } catch (py::error_already_set& e) {
          e.discard_as_unraisable("berth.run on_output");
        }
        return;
      }
      std::string prefixed;
      size_t at = 0;
      while (at < text.size()) {
        size_t nl = text.find('\n', at);
        std::string_view line = text.substr(at, nl == std::string_view::npos ? nl : nl - at);
        if (!line.empty()) prefixed += "[" + step + "] " + std::string(line) + "\n";
        if (nl == std::string_view::npos) break;
        at = nl + 1;
      }
      to_stderr(prefixed);
    };
    auto session = pipeline::Session::open(options, std::move(place), steps_env, sinks);
    if (!session.ok()) {
      error = session.error();
      return finish();
    }
    auto outcome = (*session)->run(cancel[0]);
    if (!outcome.ok()) {
      error = outcome.error();
      return finish();
    }
    exit_code = outcome->exit_code;
    worker = outcome->worker;
    settled = outcome->settled;
    // A settled run's report is the record's steps file with its overrides: read now.
    auto text = outcome->report_json_text();
    if (!text.ok()) {
      error = text.error();
      return finish();
    }
    report = std::move(*text);
    finish();
  }
};

py::dict run_pipeline(const std::string& pipeline_path, const py::dict& opts, const py::dict& seams,
                      const py::dict& steps_env, const std::optional<py::function>& on_output) {
  auto job = std::make_shared<RunJob>();
  job->context = context_of(seams_of(seams));
  for (auto item : steps_env) {
    job->steps_env.set(py::str(item.first).cast<std::string>(),
                       py::str(item.second).cast<std::string>());
  }
  pipeline::SessionOptions& o = job->options;
  o.pipeline = pipeline_path;
  o.store = text_of(opts, "store");
  o.results = text_of(opts, "results");
  o.cache = text_of(opts, "cache");
  o.dry_run = opts["dry_run"].cast<bool>();
  o.fail_fast = opts["fail_fast"].cast<bool>();
  o.keep_failed = opts.contains("keep_failed") && opts["keep_failed"].cast<bool>();
  o.jobs = opts.contains("jobs") && !opts["jobs"].is_none() ? opts["jobs"].cast<int>() : 0;
  if (!opts["worker"].is_none()) o.worker = opts["worker"].cast<std::string>();
  o.lease = text_of(opts, "lease");
  if (o.lease.empty()) o.lease = "10m";
  if (!opts["targets"].is_none()) o.targets = opts["targets"].cast<std::vector<std::string>>();
  o.config.assignments = opts["config"].cast<std::vector<std::string>>();
  o.config.files = opts["configfile"].cast<std::vector<std::string>>();
  o.engine_version = std::string("berth ") + BERTH_VERSION + " (" + BERTH_GIT_COMMIT + ")";
  job->on_output = on_output;
  if (::pipe2(job->cancel, O_CLOEXEC) != 0) {
    raise(Error(Errc::kIo, std::string("pipe2: ") + std::strerror(errno)));
  }

  std::thread runner([job] { job->body(); });
  for (;;) {
    bool finished = false;
    {
      py::gil_scoped_release unlocked;
      std::unique_lock<std::mutex> lock(job->mu);
      finished = job->cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return job->done; });
    }
    if (finished) break;
    if (PyErr_CheckSignals() != 0) {
      // Ctrl-C (or a handler's exception): end the running steps cleanly, as the CLI
      // does, wait for the run to say so, and raise what the signal raised.
      char c = 1;
      [[maybe_unused]] ssize_t w = ::write(job->cancel[1], &c, 1);
      py::error_already_set pending;
      {
        py::gil_scoped_release unlocked;
        runner.join();
      }
      throw pending;
    }
  }
  {
    py::gil_scoped_release unlocked;
    runner.join();
  }
  if (job->error) raise(*job->error);
  py::dict out;
  out["exit_code"] = job->exit_code;
  out["worker"] = job->worker;
  out["settled"] = job->settled;
  out["report"] = from_json(job->report);
  return out;
}

}  // namespace
}  // namespace berth::python

PYBIND11_MODULE(berth, m) {
  using namespace berth;
  using namespace berth::python;
  // The environment the version probe keeps is read first; then libpmix's datastore,
  // which libpmix takes only from the process's environment (PmixServer::
  // datastore_choice), is set there for berth alone, as main sets it for the CLI, before
  // a run can start this process's PMIx server.
  version_probe();
  // Without libcrypto no object can be named: refused here, as an ImportError that
  // says what is missing, rather than the process stopped at the first digest.
  if (auto crypto = load_libcrypto(); !crypto.ok()) {
    throw py::import_error("berth: " + crypto.error().message());
  }
  if (auto v = wireup::PmixServer::datastore_choice(Env::from_process())) {
    Env::set_for_berth_only(v->first, v->second);
  }
  m.attr("__version__") = BERTH_VERSION;
  m.attr("engine_version") =
      std::string("berth ") + BERTH_VERSION + " (commit " + BERTH_GIT_COMMIT + ")";

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Raised& e) {
      py::object cls = py::module_::import("berth").attr(exception_name(e.error.code()));
      py::object exc = cls(e.error.message(), errc_name(e.error.code()));
      PyErr_SetObject(cls.ptr(), exc.ptr());
    }
  });

  py::class_<ContextHandle>(m, "_Context")
      .def(py::init<const py::dict&>())
      .def("machine", &ContextHandle::machine)
      .def("allocation", &ContextHandle::allocation)
      .def("here", &ContextHandle::here)
      .def("pool_nodes", &ContextHandle::pool_nodes, py::arg("check_reachable"))
      .def("render", &ContextHandle::render, py::arg("tasks"), py::arg("cpus_per_task"),
           py::arg("placement"), py::arg("memory_cap"), py::arg("command"));

  py::class_<PoolHandle>(m, "_Pool")
      .def(py::init<const py::list&>())
      .def("grant", &PoolHandle::grant, py::arg("tasks"), py::arg("cpus_per_task"), py::arg("gpus"),
           py::arg("nodes"), py::arg("memory_mb"), py::arg("wait"), py::arg("timeout"))
      .def("release", &PoolHandle::release)
      .def("held", &PoolHandle::held)
      .def("free_cores", &PoolHandle::free_cores);

  m.def("_allocation", [](const py::dict& seams) {
    Seams s = seams_of(seams);
    return from_json(alloc::to_json(take(place::discover_allocation(s.env, s.alloc))));
  });
  m.def("_run", &run_pipeline, py::arg("pipeline"), py::arg("options"), py::arg("seams"),
        py::arg("steps_env"), py::arg("on_output"));
  m.def("_report", [](const std::string& pipeline_path) {
    return from_json(take(pipeline::last_run_report(pipeline_path)).dump());
  });
  // --- A pipeline's history: berth runs (run_history.h).
  m.def("_runs", [](const std::string& pipeline_path, const std::string& url) {
    std::optional<Result<cli::History>> got;
    {
      py::gil_scoped_release unlocked;
      got.emplace(cli::open_history(url, pipeline_path));
    }
    cli::History h = take(std::move(*got));
    nlohmann::json out = nlohmann::json::array();
    for (auto& r : h.runs) {
      r.head["id"] = r.id;
      r.head.erase("steps_object");
      r.head.erase("steps_changed");
      out.push_back(std::move(r.head));
    }
    return from_json(out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  });
  // What a run left, read back as the CLI prints it (cli/read_back.h), and a store's
  // objects verified (pipeline/store_verify.h): berth.log, berth.methods,
  // berth.store_verify. The GIL is released while the store is read.
  m.def("_log", [](const std::string& pipeline_path, const std::string& step,
                   const std::string& store, const std::string& cache) {
    std::optional<Result<std::string>> got;
    {
      py::gil_scoped_release unlocked;
      got.emplace(cli::step_log(pipeline_path, step, store, cache));
    }
    std::string bytes = take(std::move(*got));
    return py::bytes(bytes);
  });
  m.def("_methods", [](const std::string& pipeline_path, const std::string& store,
                       const std::string& run) {
    std::optional<Result<std::string>> got;
    {
      py::gil_scoped_release unlocked;
      got.emplace(cli::methods_text(pipeline_path, store, run));
    }
    return take(std::move(*got));
  });
  m.def("_pipeline_store", &cli::pipeline_store_url);
  m.def("_store_verify", [](const std::string& url, const std::vector<std::string>& names) {
    std::optional<Result<pipeline::StoreCheck>> got;
    {
      py::gil_scoped_release unlocked;
      auto store = cli::open_store_url(url);
      if (!store.ok()) {
        got.emplace(store.error());
      } else {
        got.emplace(pipeline::verify_store(**store, names));
      }
    }
    pipeline::StoreCheck check = take(std::move(*got));
    py::list out;
    for (const auto& o : check.objects) out.append(py::make_tuple(o.name, o.ok));
    return out;
  });
  // berth status --format json (spec 04 §7.6): what runs now, from the live board.
  m.def("_status", [](const std::string& pipeline_path, const std::string& cache) {
    auto read = take(pipeline::read_pipeline_board(pipeline_path, cache));
    auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::system_clock::now().time_since_epoch());
    return from_json(pipeline::live_status_json(pipeline_path, read, now.count()));
  });
  m.def("_parse_ids", [](const std::string& text, const std::string& origin) {
    return take(place::parse_ids(text, origin));
  });
  m.def("_encode_ids", [](const std::vector<int>& ids) { return idset::encode_ids(ids); });
  bind_launched(m);  // Launch.popen's start, through berth's spawner

  // The public API, in Python, in this module's namespace.
  py::exec(py::str(reinterpret_cast<const char*>(kBerthPy), sizeof kBerthPy - 1),
           m.attr("__dict__"));
}
