// The embedded PMIx server (pmix_server.h, spec 07 §2).
//
// libpmix runs the protocol on its own progress thread and calls the "host" — berth —
// through a table of upcalls. Every upcall here is short and never blocks: it delivers
// a RankEvent to the job's sink (under the job table's lock, which is what makes
// remove_job's promise hold) and completes the operation. Registration runs the other
// way: berth's calls are asynchronous, completed on libpmix's thread; add_job issues
// the namespace and every client at once and waits once for all of them (bounded, so a
// stuck library is an error, never a hang).
#include "wireup/pmix_server.h"

#include <dirent.h>
#include <fmt/format.h>
#include <pmix.h>
#include <pmix_server.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "wireup/libpmix.h"
#include "util/signals.h"

namespace berth::wireup {
namespace {

// What Open MPI 4.1 reads as its local daemon's contact ("jobid.vpid;uri"): it must
// parse, and is never dialled by a rank that finds a PMIx server (spec 07 §2.3).
constexpr const char* kOmpiDaemonUri = "0.0;tcp://127.0.0.1:1";

// libpmix's MCA parameter that chooses its datastore components (spec 07 §2.1).
constexpr const char* kDatastoreVariable = "PMIX_MCA_gds";

// How long a registration may take before berth calls the library stuck.
constexpr auto kRegistrationTimeout = std::chrono::seconds(10);

// Completion of several asynchronous libpmix operations at once. Each operation holds
// its own reference (a heap shared_ptr as its cbdata), so a callback that comes after
// a timed-out wait still finds its Completion alive.
class Completion {
 public:
  static void done(pmix_status_t status, void* cbdata) {
    auto* ref = static_cast<std::shared_ptr<Completion>*>(cbdata);
    Completion& c = **ref;
    {
      std::lock_guard<std::mutex> lock(c.mu_);
      if (status != PMIX_SUCCESS && c.status_ == PMIX_SUCCESS) c.status_ = status;
      --c.pending_;
    }
    c.cv_.notify_all();
    delete ref;
  }
  // PMIX_SUCCESS, the first failure, or PMIX_ERR_TIMEOUT.
  pmix_status_t wait() {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, kRegistrationTimeout, [&] { return pending_ == 0; })) {
      return PMIX_ERR_TIMEOUT;
    }
    return status_;
  }

 private:
  friend void* expect(const std::shared_ptr<Completion>& c);
  std::mutex mu_;
  std::condition_variable cv_;
  int pending_ = 0;
  pmix_status_t status_ = PMIX_SUCCESS;
};

// One more operation for `c`: the cbdata to give libpmix. An operation refused at once
// (its callback never comes) is completed by calling Completion::done with its status.
void* expect(const std::shared_ptr<Completion>& c) {
  std::lock_guard<std::mutex> lock(c->mu_);
  ++c->pending_;
  return new std::shared_ptr<Completion>(c);
}

std::string join_ints(const std::vector<int>& v, char sep) {
  std::string s;
  for (int x : v) {
    if (!s.empty()) s += sep;
    s += std::to_string(x);
  }
  return s;
}

// A libpmix-allocated string, freed with free().
std::string take(char* s) {
  std::string out = s != nullptr ? s : "";
  std::free(s);
  return out;
}

// Removes `dir` and everything under it (the server's own files only; no symlink is
// followed: entries are unlinked, directories recursed by name).
void remove_tree(const std::string& dir) {
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      std::string path = dir + "/" + name;
      struct stat st;
      if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
        remove_tree(path);
      } else {
        ::unlink(path.c_str());
      }
    }
    ::closedir(d);
  }
  ::rmdir(dir.c_str());
}

constexpr std::string_view kDirPrefix = "berth-pmix.";

// Directories of berth processes that no longer exist (SIGKILLed ones leave theirs).
void sweep_dead(const std::string& root) {
  DIR* d = ::opendir(root.c_str());
  if (d == nullptr) return;
  std::vector<std::string> dead;
  while (dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (name.substr(0, kDirPrefix.size()) != kDirPrefix) continue;
    std::string_view rest = name.substr(kDirPrefix.size());
    char* end = nullptr;
    std::string digits(rest);
    long pid = std::strtol(digits.c_str(), &end, 10);
    if (digits.empty() || *end != '\0' || pid <= 0) continue;
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      dead.push_back(root + "/" + std::string(name));
    }
  }
  ::closedir(d);
  for (const auto& dir : dead) remove_tree(dir);
}

class Server;
Server* g_server = nullptr;  // the upcalls' way back; set once, for the process's life

class Server final : public PmixServer {
 public:
  explicit Server(std::string tmpdir) : tmpdir_(std::move(tmpdir)) {}
  ~Server() override = default;

  Result<void> start();
  Result<PmixJob> add_job(const JobMap& map, EventSink sink) override;
  void remove_job(const std::string& id) override;
  const std::string& tmpdir() const override { return tmpdir_; }

  // Gives `ev` to the sink of job `nspace`, if it is still served.
  void deliver(const char* nspace, const RankEvent& ev) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(nspace);
    if (it != jobs_.end() && it->second.sink) it->second.sink(ev);
  }

 private:
  struct Job {
    EventSink sink;
    int size = 0;
  };
  void deregister(const std::string& id, int size);

  std::string tmpdir_;
  std::mutex mu_;
  std::map<std::string, Job, std::less<>> jobs_;
};

// ---- upcalls (libpmix's thread) ------------------------------------------------------

RankEvent event(RankEvent::Kind kind, const pmix_proc_t* proc, int code = 0,
                std::string message = {}) {
  RankEvent ev;
  ev.kind = kind;
  ev.rank = proc != nullptr ? static_cast<int>(proc->rank) : -1;
  ev.code = code;
  ev.message = std::move(message);
  return ev;
}

pmix_status_t on_connected(const pmix_proc_t* proc, void*, pmix_op_cbfunc_t cbfunc, void* cbdata) {
  g_server->deliver(proc->nspace, event(RankEvent::Kind::kInit, proc));
  if (cbfunc != nullptr) cbfunc(PMIX_SUCCESS, cbdata);
  return PMIX_SUCCESS;
}

pmix_status_t on_finalized(const pmix_proc_t* proc, void*, pmix_op_cbfunc_t cbfunc, void* cbdata) {
  // Delivered before the client is released: the job sees the finalize before it can
  // see the rank exit.
  g_server->deliver(proc->nspace, event(RankEvent::Kind::kFinalize, proc));
  if (cbfunc != nullptr) cbfunc(PMIX_SUCCESS, cbdata);
  return PMIX_SUCCESS;
}

pmix_status_t on_abort(const pmix_proc_t* proc, void*, int status, const char msg[], pmix_proc_t[],
                       size_t, pmix_op_cbfunc_t cbfunc, void* cbdata) {
  // Whatever subset the rank names, the whole job ends: berth's jobs are one unit
  // (spec 03 §5), as mpirun's are.
  // Open MPI sends "N/A" when MPI_Abort has nothing to say.
  std::string text = msg != nullptr && std::string_view(msg) != "N/A" ? msg : "";
  g_server->deliver(proc->nspace, event(RankEvent::Kind::kAbort, proc, status, std::move(text)));
  if (cbfunc != nullptr) cbfunc(PMIX_SUCCESS, cbdata);
  return PMIX_SUCCESS;
}

pmix_status_t on_fence(const pmix_proc_t[], size_t, const pmix_info_t[], size_t, char* data,
                       size_t ndata, pmix_modex_cbfunc_t cbfunc, void* cbdata) {
  // Every participant is on this node, so what the local ranks contributed is the
  // whole exchange: hand it straight back.
  if (cbfunc != nullptr) cbfunc(PMIX_SUCCESS, data, ndata, cbdata, nullptr, nullptr);
  return PMIX_SUCCESS;
}

pmix_status_t on_direct_modex(const pmix_proc_t*, const pmix_info_t[], size_t, pmix_modex_cbfunc_t,
                              void*) {
  // libpmix answers requests for local ranks itself; a request reaching berth is for
  // a rank on no node berth serves.
  return PMIX_ERR_NOT_FOUND;
}

pmix_status_t refuse(const pmix_proc_t* proc, const char* what) {
  if (proc != nullptr) {
    g_server->deliver(proc->nspace,
                      event(RankEvent::Kind::kRefused, proc, 0,
                            fmt::format("rank {} asked to {}; berth does not serve it, and "
                                        "told the rank so",
                                        proc->rank, what)));
  }
  return PMIX_ERR_NOT_SUPPORTED;
}

pmix_status_t on_spawn(const pmix_proc_t* proc, const pmix_info_t[], size_t, const pmix_app_t[],
                       size_t, pmix_spawn_cbfunc_t, void*) {
  return refuse(proc, "spawn processes (MPI_Comm_spawn)");
}

pmix_status_t on_connect(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t[], size_t,
                         pmix_op_cbfunc_t, void*) {
  return refuse(nprocs > 0 ? &procs[0] : nullptr, "connect to another job (MPI_Comm_connect)");
}

pmix_status_t on_disconnect(const pmix_proc_t[], size_t, const pmix_info_t[], size_t,
                            pmix_op_cbfunc_t, void*) {
  return PMIX_ERR_NOT_SUPPORTED;
}

pmix_status_t on_publish(const pmix_proc_t* proc, const pmix_info_t[], size_t, pmix_op_cbfunc_t,
                         void*) {
  return refuse(proc, "publish a name (MPI_Publish_name)");
}

pmix_status_t on_lookup(const pmix_proc_t* proc, char**, const pmix_info_t[], size_t,
                        pmix_lookup_cbfunc_t, void*) {
  return refuse(proc, "look up a name (MPI_Lookup_name)");
}

pmix_status_t on_unpublish(const pmix_proc_t*, char**, const pmix_info_t[], size_t,
                           pmix_op_cbfunc_t, void*) {
  return PMIX_ERR_NOT_SUPPORTED;
}

pmix_status_t on_register_events(pmix_status_t*, size_t, const pmix_info_t[], size_t,
                                 pmix_op_cbfunc_t, void*) {
  // Environmental events: berth raises none, so there is nothing to register for.
  return PMIX_OPERATION_SUCCEEDED;
}

pmix_status_t on_deregister_events(pmix_status_t*, size_t, pmix_op_cbfunc_t, void*) {
  return PMIX_OPERATION_SUCCEEDED;
}

pmix_server_module_t make_module() {
  pmix_server_module_t m;
  std::memset(&m, 0, sizeof m);
  m.client_connected = on_connected;
  m.client_finalized = on_finalized;
  m.abort = on_abort;
  m.fence_nb = on_fence;
  m.direct_modex = on_direct_modex;
  m.publish = on_publish;
  m.lookup = on_lookup;
  m.unpublish = on_unpublish;
  m.spawn = on_spawn;
  m.connect = on_connect;
  m.disconnect = on_disconnect;
  m.register_events = on_register_events;
  m.deregister_events = on_deregister_events;
  return m;
}

pmix_server_module_t g_module = make_module();

// ---- the server ----------------------------------------------------------------------

Result<void> Server::start() {
  if (!libpmix().error.empty()) {
    return fail(Errc::kUnsupported,
                fmt::format("the PMIx server did not start: {}", libpmix().error));
  }
  InfoList info;
  info.str(PMIX_SERVER_TMPDIR, tmpdir_);
  info.str(PMIX_SYSTEM_TMPDIR, tmpdir_);
  info.flag(PMIX_SERVER_TOOL_SUPPORT, false);
  info.flag(PMIX_SERVER_SYSTEM_SUPPORT, false);
  info.str(PMIX_SERVER_NSPACE, fmt::format("berth.{}", ::getpid()));
  info.rank(PMIX_SERVER_RANK, 0);
  pmix_data_array_t arr = info.convert();
  // libpmix chooses its datastore here, from the process's environment: main has set
  // the choice there (PmixServer::datastore_choice).
  pmix_status_t rc;
  {
    SignalsBlocked blocked;  // libpmix's progress thread takes none of berth's signals
    rc = libpmix().PMIx_server_init(&g_module, static_cast<pmix_info_t*>(arr.array), arr.size);
  }
  libpmix().PMIx_Data_array_destruct(&arr);
  if (rc != PMIX_SUCCESS) {
    return fail(Errc::kUnsupported,
                fmt::format("the PMIx server did not start: {}", status_text(rc)));
  }
  return Ok{};
}

// The job-level information (spec 07 §2.2), this node's part last.
void describe_job(const JobMap& map, InfoList& job) {
  const auto size = static_cast<uint32_t>(map.size());
  job.str(PMIX_JOBID, map.id);
  job.u32(PMIX_UNIV_SIZE, size);
  job.u32(PMIX_JOB_SIZE, size);
  job.u32(PMIX_MAX_PROCS, size);
  job.u32(PMIX_JOB_NUM_APPS, static_cast<uint32_t>(map.apps()));
  job.u32(PMIX_NUM_NODES, static_cast<uint32_t>(map.nodes.size()));
  job.flag(PMIX_SPAWNED, false);
  // The node's topology: an Open MPI 4.1 rank loads it from here ("pmix.ltopo", the
  // key its hwloc layer asks for) instead of discovering it (spec 07 §2.2).
  if (!map.topology_xml.empty()) job.str("pmix.ltopo", map.topology_xml);
  if (!map.tmpdir.empty()) {
    job.str(PMIX_TMPDIR, map.tmpdir);
    job.str(PMIX_NSDIR, map.tmpdir);
  }
  std::string nodes, ppn;
  for (size_t n = 0; n < map.nodes.size(); ++n) {
    if (n > 0) {
      nodes += ',';
      ppn += ';';
    }
    nodes += map.nodes[n];
    ppn += join_ints(map.ranks_on(static_cast<int>(n)), ',');
  }
  char* regex = nullptr;
  char* procs = nullptr;
  if (libpmix().PMIx_generate_regex(nodes.c_str(), &regex) == PMIX_SUCCESS && regex != nullptr) {
    job.str(PMIX_NODE_MAP, take(regex));
  }
  if (libpmix().PMIx_generate_ppn(ppn.c_str(), &procs) == PMIX_SUCCESS && procs != nullptr) {
    job.str(PMIX_PROC_MAP, take(procs));
  }
  // This node's part: the server serves only this node, the job's first.
  std::vector<int> local = map.ranks_on(0);
  job.u32(PMIX_LOCAL_SIZE, static_cast<uint32_t>(local.size()));
  job.str(PMIX_LOCAL_PEERS, join_ints(local, ','));
  if (!local.empty()) job.rank(PMIX_LOCALLDR, static_cast<pmix_rank_t>(local.front()));
}

// One PMIX_APP_INFO array per app.
void describe_apps(const JobMap& map, InfoList& job) {
  for (int a = 0; a < map.apps(); ++a) {
    InfoList app;
    app.u32(PMIX_APPNUM, static_cast<uint32_t>(a));
    app.u32(PMIX_APP_SIZE, static_cast<uint32_t>(map.app_size(a)));
    app.rank(PMIX_APPLDR, static_cast<pmix_rank_t>(map.app_first_rank(a)));
    job.array(PMIX_APP_INFO, app);
  }
}

// One PMIX_NODE_INFO array per node.
void describe_nodes(const JobMap& map, InfoList& job) {
  for (size_t n = 0; n < map.nodes.size(); ++n) {
    std::vector<int> on = map.ranks_on(static_cast<int>(n));
    InfoList node;
    node.str(PMIX_HOSTNAME, map.nodes[n]);
    node.u32(PMIX_NODEID, static_cast<uint32_t>(n));
    node.u32(PMIX_LOCAL_SIZE, static_cast<uint32_t>(on.size()));
    node.u32(PMIX_NODE_SIZE, static_cast<uint32_t>(on.size()));
    node.str(PMIX_LOCAL_PEERS, join_ints(on, ','));
    if (!on.empty()) node.rank(PMIX_LOCALLDR, static_cast<pmix_rank_t>(on.front()));
    job.array(PMIX_NODE_INFO, node);
  }
}

// One PMIX_PROC_DATA array per rank.
void describe_procs(const JobMap& map, InfoList& job) {
  for (int r = 0; r < map.size(); ++r) {
    const JobMap::Proc& p = map.procs[static_cast<size_t>(r)];
    InfoList proc;
    proc.rank(PMIX_RANK, static_cast<pmix_rank_t>(r));  // first, as libpmix requires
    proc.u32(PMIX_APPNUM, static_cast<uint32_t>(p.app));
    proc.rank(PMIX_APP_RANK, static_cast<pmix_rank_t>(r - map.app_first_rank(p.app)));
    proc.rank(PMIX_GLOBAL_RANK, static_cast<pmix_rank_t>(r));
    proc.u16(PMIX_LOCAL_RANK, static_cast<uint16_t>(p.local_rank));
    proc.u16(PMIX_NODE_RANK, static_cast<uint16_t>(p.node_rank));
    proc.u32(PMIX_NODEID, static_cast<uint32_t>(p.node));
    proc.str(PMIX_HOSTNAME, map.nodes[static_cast<size_t>(p.node)]);
    job.array(PMIX_PROC_DATA, proc);
  }
}

pmix_proc_t proc_of(const std::string& nspace, int rank) {
  pmix_proc_t proc;
  PMIX_LOAD_PROCID(&proc, nspace.c_str(), static_cast<pmix_rank_t>(rank));
  return proc;
}

// Asks libpmix for namespace `id`, described by `info`, and for each of the `local`
// ranks as a client: every operation completes `done`, none is waited for here.
void register_job(const std::string& id, const std::vector<int>& local,
                  const pmix_data_array_t& info, const std::shared_ptr<Completion>& done) {
  pmix_nspace_t ns;
  PMIX_LOAD_NSPACE(ns, id.c_str());
  void* cb = expect(done);
  pmix_status_t rc = libpmix().PMIx_server_register_nspace(ns, static_cast<int>(local.size()),
                                                           static_cast<pmix_info_t*>(info.array),
                                                           info.size, Completion::done, cb);
  if (rc != PMIX_SUCCESS) Completion::done(rc, cb);
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  for (int r : local) {
    pmix_proc_t proc = proc_of(id, r);
    void* ccb = expect(done);
    pmix_status_t crc =
        libpmix().PMIx_server_register_client(&proc, uid, gid, nullptr, Completion::done, ccb);
    if (crc != PMIX_SUCCESS) Completion::done(crc, ccb);
  }
}

// Rank `rank`'s environment: libpmix's, then what tells Open MPI 4.1 that a runtime
// started it — it decides from its environment alone whether to ask the server at
// all, and without this variable runs every rank as a singleton (spec 07 §2.3).
// setup_fork's status when libpmix gives none.
pmix_status_t rank_env(const JobMap& map, int rank, EnvList& e) {
  pmix_proc_t proc = proc_of(map.id, rank);
  char** env = nullptr;
  pmix_status_t rc = libpmix().PMIx_server_setup_fork(&proc, &env);
  if (rc != PMIX_SUCCESS) return rc;
  for (char** p = env; p != nullptr && *p != nullptr; ++p) {
    std::string_view kv = *p;
    size_t eq = kv.find('=');
    if (eq != std::string_view::npos && eq > 0) {
      e.emplace_back(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
    }
    std::free(*p);
  }
  std::free(env);
  e.emplace_back("OMPI_MCA_orte_local_daemon_uri", kOmpiDaemonUri);
  // Told so, an oversubscribed Open MPI rank yields while it waits instead of spinning
  // on a core another rank needs (mpirun says the same; 16 ranks on 2 cores measured
  // 1.0 s without it, 0.68 s with it).
  if (map.oversubscribed) e.emplace_back("OMPI_MCA_mpi_oversubscribe", "1");
  return PMIX_SUCCESS;
}

Result<PmixJob> Server::add_job(const JobMap& map, EventSink sink) {
  if (map.id.size() >= PMIX_MAX_NSLEN) {
    return fail(Errc::kInternal, fmt::format("job id '{}' is too long for PMIx", map.id));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!jobs_.emplace(map.id, Job{std::move(sink), map.size()}).second) {
      return fail(Errc::kInternal, fmt::format("job id '{}' is already served", map.id));
    }
  }
  // What the ranks will ask for (spec 07 §2.2).
  InfoList job;
  describe_job(map, job);
  describe_apps(map, job);
  describe_nodes(map, job);
  describe_procs(map, job);
  pmix_data_array_t info = job.convert();

  // The namespace and every client at once; one wait for all of them.
  const std::vector<int> local = map.ranks_on(0);
  auto done = std::make_shared<Completion>();
  register_job(map.id, local, info, done);
  // Made while libpmix's thread registers the job: setup_fork needs nothing of it.
  PmixJob out;
  out.env.resize(static_cast<size_t>(map.size()));
  pmix_status_t fork_rc = PMIX_SUCCESS;
  int fork_rank = -1;
  for (int r : local) {
    fork_rc = rank_env(map, r, out.env[static_cast<size_t>(r)]);
    if (fork_rc != PMIX_SUCCESS) {
      fork_rank = r;
      break;
    }
  }

  // The registration is complete before any rank can start: a client must find its
  // namespace when it connects. libpmix reads `info` until then.
  pmix_status_t rc = done->wait();
  libpmix().PMIx_Data_array_destruct(&info);
  if (rc != PMIX_SUCCESS) {
    remove_job(map.id);
    return fail(Errc::kUnsupported,
                fmt::format("the PMIx server refused job {}: {}", map.id, status_text(rc)));
  }
  if (fork_rc != PMIX_SUCCESS) {
    remove_job(map.id);
    return fail(Errc::kUnsupported, fmt::format("the PMIx server could not set up rank {} "
                                                "of job {}: {}",
                                                fork_rank, map.id, status_text(fork_rc)));
  }
  return out;
}

void Server::deregister(const std::string& id, int size) {
  auto done = std::make_shared<Completion>();
  pmix_nspace_t ns;
  PMIX_LOAD_NSPACE(ns, id.c_str());
  for (int r = 0; r < size; ++r) {
    pmix_proc_t proc;
    PMIX_LOAD_PROCID(&proc, ns, static_cast<pmix_rank_t>(r));
    libpmix().PMIx_server_deregister_client(&proc, Completion::done, expect(done));
  }
  // Not waited for: the job is already out of the table, so no upcall reaches its sink
  // whatever libpmix still does, and its id is never used again. Waiting cost every job
  // two hand-offs to libpmix's thread and back (bench/launch, "wire-up").
  libpmix().PMIx_server_deregister_nspace(ns, Completion::done, expect(done));
}

void Server::remove_job(const std::string& id) {
  int size = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return;
    size = it->second.size;
    jobs_.erase(it);
  }
  deregister(id, size);
}

}  // namespace

std::optional<std::pair<std::string, std::string>> PmixServer::datastore_choice(const Env& env) {
  if (env.has(kDatastoreVariable)) return std::nullopt;
  return std::make_pair(std::string(kDatastoreVariable), std::string("hash"));
}

Result<PmixServer*> PmixServer::instance(const std::string& tmp_root) {
  static std::mutex mu;
  static std::optional<Error> failed;
  std::lock_guard<std::mutex> lock(mu);
  if (g_server != nullptr) return static_cast<PmixServer*>(g_server);
  if (failed) return *failed;
  std::string root = tmp_root.empty() ? "/tmp" : tmp_root;
  sweep_dead(root);
  std::string dir = fmt::format("{}/{}{}", root, kDirPrefix, ::getpid());
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    failed = Error(Errc::kIo,
                   fmt::format("the PMIx server's directory {}: {}", dir, std::strerror(errno)));
    return *failed;
  }
  // Never destroyed: libpmix's thread may call up into it until the process ends.
  auto* s = new Server(dir);
  g_server = s;
  auto started = s->start();
  if (!started.ok()) {
    g_server = nullptr;
    delete s;
    remove_tree(dir);
    failed = started.error();
    return *failed;
  }
  // At exit libpmix's thread is stopped and the files removed — bounded: a thread
  // stuck in libpmix (a rank killed holding one of its locks) must not keep berth from
  // exiting, so the finalize gets two seconds and is then left to the process's end.
  std::atexit([] {
    auto state = std::make_shared<std::pair<std::mutex, std::condition_variable>>();
    auto finished = std::make_shared<bool>(false);
    std::thread t([state, finished] {
      libpmix().PMIx_server_finalize();
      std::lock_guard<std::mutex> l(state->first);
      *finished = true;
      state->second.notify_all();
    });
    std::unique_lock<std::mutex> l(state->first);
    if (state->second.wait_for(l, std::chrono::seconds(2), [&] { return *finished; })) {
      l.unlock();
      t.join();
    } else {
      l.unlock();
      t.detach();
    }
    remove_tree(g_server->tmpdir());
  });
  return static_cast<PmixServer*>(s);
}

}  // namespace berth::wireup

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BERTH_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define BERTH_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(BERTH_TSAN)
// libpmix's own shutdown, inside the library: stopping its listener writes to a pipe
// that the listener thread closes as it leaves. Named by that one function, so that
// ThreadSanitizer still sees every lock libpmix takes and checks all of berth's side
// of the hand-offs (a whole-library `called_from_lib` would hide those locks and
// report berth's completions as races instead).
extern "C" const char* __tsan_default_suppressions() {
  return "race:pmix_ptl_base_stop_listening\n";
}
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(BERTH_ASAN)
// libpmix keeps allocations for the process's life (its log and datastore buffers)
// and frees some only in paths berth never takes; they are not berth's leaks.
extern "C" const char* __lsan_default_suppressions() { return "leak:libpmix.so\n"; }
// ... and say nothing about having suppressed them: berth's stderr is tested.
extern "C" const char* __lsan_default_options() { return "print_suppressions=0"; }
#endif
