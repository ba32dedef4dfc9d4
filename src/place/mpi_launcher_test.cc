// Finding an MPI launcher (spec 02 §8): what each --version says, which is chosen for
// which allocation, why one cannot place, and the Context's choice — all through a fake
// probe, with the real outputs of this workplace's Open MPI 4.1.4 and MPICH 4.0.2.
#include "place/mpi_launcher.h"

#include <gtest/gtest.h>

#include <map>

#include "place/context.h"
#include "topo/fake_tree_for_test.h"
#include "util/strings.h"

namespace berth::place {
namespace {

using topo::LauncherKind;

constexpr const char* kOpenMpi =
    "mpirun (Open MPI) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/help/\n";
constexpr const char* kOpenRte =
    "mpiexec (OpenRTE) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/help/\n";
constexpr const char* kOpenMpi5 =
    "mpirun (Open MPI) 5.0.3\n\nReport bugs to https://www.open-mpi.org/community/help/\n";
constexpr const char* kHydra =
    "HYDRA build details:\n"
    "    Version:                                 4.0.2\n"
    "    Release Date:                            Thu Apr  7 12:34:45 CDT 2022\n"
    "    CC:                              gcc -g -O2\n"
    "    Process Manager:                         pmi\n"
    "    Launchers available:                     ssh rsh fork slurm ll lsf sge manual persist\n"
    "    Topology libraries available:            hwloc\n"
    "    Resource management kernels available:   user slurm ll lsf sge pbs cobalt\n"
    "    Demux engines available:                 poll select\n";
constexpr const char* kHydraNoLsf =
    "HYDRA build details:\n"
    "    Version:                                 3.3\n"
    "    Launchers available:                     ssh rsh fork slurm\n";
constexpr const char* kIntel =
    "Intel(R) MPI Library for Linux* OS, Version 2021.6 Build 20220227\n";
constexpr const char* kOmpiInfo =
    "mca:plm:isolated:version:\"mca:2.1.0\"\n"
    "mca:plm:isolated:version:\"component:4.1.4\"\n"
    "mca:plm:slurm:version:\"component:4.1.4\"\n"
    "mca:plm:rsh:version:\"component:4.1.4\"\n";
constexpr const char* kOmpiInfoLsf =
    "mca:plm:rsh:version:\"component:4.1.4\"\nmca:plm:lsf:version:\"component:4.1.4\"\n";

// Answers each command line it knows; any other is not on PATH. Says what it was asked.
class FakeProbe : public VersionProbe {
 public:
  std::map<std::string, std::string> answers;
  std::vector<std::string> asked;
  Result<std::string> run(const std::vector<std::string>& argv) override {
    std::string line = str::join(argv, " ");
    asked.push_back(line);
    auto it = answers.find(line);
    if (it == answers.end()) return fail(Errc::kNotFound, argv[0] + ": not found on PATH");
    return it->second;
  }
};

TEST(MpiLauncher, VersionsSayWhichImplementation) {
  MpiVersion o = parse_mpi_version(kOpenMpi);
  EXPECT_EQ(o.kind, LauncherKind::kMpirun);
  EXPECT_EQ(o.text, "mpirun (Open MPI) 4.1.4");
  ASSERT_TRUE(o.version);
  EXPECT_EQ(o.version->major, 4);
  EXPECT_EQ(o.version->minor, 1);
  EXPECT_EQ(parse_mpi_version(kOpenRte).kind, LauncherKind::kMpirun);

  MpiVersion h = parse_mpi_version(kHydra);
  EXPECT_EQ(h.kind, LauncherKind::kHydra);
  EXPECT_EQ(h.text, "hydra 4.0.2");
  ASSERT_TRUE(h.launchers);
  EXPECT_EQ(str::join(*h.launchers, " "), "ssh rsh fork slurm ll lsf sge manual persist");

  // Intel MPI's hydra, PALS, nothing: neither, never guessed.
  EXPECT_EQ(parse_mpi_version(kIntel).kind, LauncherKind::kLocal);
  EXPECT_EQ(parse_mpi_version("").kind, LauncherKind::kLocal);
  EXPECT_EQ(parse_mpi_version("mpiexec version 1.2.3 (PALS)").kind, LauncherKind::kLocal);

  EXPECT_EQ(str::join(parse_ompi_plm(kOmpiInfo), ","), "isolated,slurm,rsh");
  EXPECT_TRUE(parse_ompi_plm("garbage\n").empty());
}

TEST(MpiLauncher, EachAllocationIsReachedItsOwnWay) {
  EXPECT_EQ(openmpi_plm("gridengine"), "rsh");
  EXPECT_EQ(openmpi_plm("hosts"), "rsh");
  EXPECT_EQ(openmpi_plm("lsf"), "lsf");
  EXPECT_EQ(openmpi_plm("slurm"), std::nullopt);
  EXPECT_EQ(hydra_launcher("gridengine"), "sge");
  EXPECT_EQ(hydra_launcher("lsf"), "lsf");
  EXPECT_EQ(hydra_launcher("hosts"), "ssh");
  EXPECT_EQ(hydra_launcher("pbs"), std::nullopt);
}

TEST(MpiLauncher, DetectionFindsWhatIsPresent) {
  struct Case {
    const char* what;
    std::optional<LauncherKind> want;
    const char* allocation;
    std::map<std::string, std::string> answers;
    LauncherKind kind;
    const char* program;
    const char* refusal;  // a piece of it; "" when it can place
  };
  const std::vector<Case> cases = {
      {"auto: mpirun is Open MPI's", std::nullopt, "gridengine",
       {{"mpirun --version", kOpenMpi}, {"mpiexec.hydra --version", kHydra}},
       LauncherKind::kMpirun, "mpirun", ""},
      {"auto: mpirun is MPICH's (the alternatives point there)", std::nullopt, "hosts",
       {{"mpirun --version", kHydra}}, LauncherKind::kHydra, "mpirun", ""},
      {"auto: hydra alone", std::nullopt, "gridengine", {{"mpiexec.hydra --version", kHydra}},
       LauncherKind::kHydra, "mpiexec.hydra", ""},
      {"auto: mpiexec alone, Open MPI's", std::nullopt, "hosts", {{"mpiexec --version", kOpenRte}},
       LauncherKind::kMpirun, "mpiexec", ""},
      {"auto: nothing", std::nullopt, "gridengine", {{"mpiexec --version", kIntel}},
       LauncherKind::kLocal, "", ""},
      {"mpirun named, mpirun is hydra: mpirun.openmpi", LauncherKind::kMpirun, "gridengine",
       {{"mpirun --version", kHydra}, {"mpirun.openmpi --version", kOpenMpi}},
       LauncherKind::kMpirun, "mpirun.openmpi", ""},
      {"hydra named, found as mpiexec.hydra", LauncherKind::kHydra, "lsf",
       {{"mpirun --version", kOpenMpi}, {"mpiexec.hydra --version", kHydra}}, LauncherKind::kHydra,
       "mpiexec.hydra", ""},
      {"mpirun named, absent", LauncherKind::kMpirun, "gridengine", {}, LauncherKind::kMpirun,
       "mpirun", "Open MPI's mpirun was not found (mpirun: not found on PATH"},
      {"hydra named, only Open MPI", LauncherKind::kHydra, "hosts",
       {{"mpirun --version", kOpenMpi}, {"mpiexec --version", kOpenRte}}, LauncherKind::kHydra,
       "mpiexec.hydra", "is not MPICH's hydra"},
      {"Open MPI 5", std::nullopt, "gridengine", {{"mpirun --version", kOpenMpi5}},
       LauncherKind::kMpirun, "mpirun", "Open MPI 5's mpirun (PRRTE) takes other options"},
      {"Open MPI under Slurm", LauncherKind::kMpirun, "slurm", {{"mpirun --version", kOpenMpi}},
       LauncherKind::kMpirun, "mpirun", "this one is slurm's"},
      {"Open MPI under LSF, built without it", std::nullopt, "lsf",
       {{"mpirun --version", kOpenMpi},
        {"ompi_info --parsable --param plm all --level 1", kOmpiInfo}},
       LauncherKind::kMpirun, "mpirun",
       "built without LSF's launch (ompi_info lists plm: isolated, slurm, rsh)"},
      {"Open MPI under LSF, built with it", std::nullopt, "lsf",
       {{"mpirun --version", kOpenMpi},
        {"ompi_info --parsable --param plm all --level 1", kOmpiInfoLsf}},
       LauncherKind::kMpirun, "mpirun", ""},
      {"Open MPI under LSF, ompi_info missing", std::nullopt, "lsf",
       {{"mpirun --version", kOpenMpi}}, LauncherKind::kMpirun, "mpirun",
       "whether this Open MPI has LSF's launch is unknown"},
      {"hydra under LSF without its launcher", std::nullopt, "lsf",
       {{"mpiexec.hydra --version", kHydraNoLsf}}, LauncherKind::kHydra, "mpiexec.hydra",
       "this hydra has no 'lsf' launcher (Launchers available: ssh rsh fork slurm)"},
  };
  for (const auto& c : cases) {
    FakeProbe probe;
    probe.answers = c.answers;
    Launcher l = detect_mpi_launcher(c.want, c.allocation, "vm", probe);
    EXPECT_EQ(l.kind, c.kind) << c.what;
    EXPECT_EQ(l.program, c.program) << c.what;
    EXPECT_EQ(l.allocation, c.allocation) << c.what;
    EXPECT_EQ(l.here, "vm") << c.what;
    if (std::string(c.refusal).empty()) {
      EXPECT_EQ(l.mpi_refusal, "") << c.what;
      EXPECT_EQ(placement_refusal(l), "") << c.what;
    } else {
      EXPECT_NE(l.mpi_refusal.find(c.refusal), std::string::npos)
          << c.what << ": " << l.mpi_refusal;
      EXPECT_EQ(placement_refusal(l), l.mpi_refusal) << c.what;
      EXPECT_EQ(placement_support(l), Mechanism::kNone) << c.what;
    }
    // ompi_info is asked under LSF only: it costs a quarter of a second.
    bool asked_ompi_info = false;
    for (const auto& a : probe.asked) asked_ompi_info |= a.rfind("ompi_info", 0) == 0;
    EXPECT_EQ(asked_ompi_info,
              std::string(c.allocation) == "lsf" && l.kind == LauncherKind::kMpirun)
        << c.what;
  }
  // Nothing found under auto: the local launcher, saying what was asked and seen.
  FakeProbe none;
  Launcher l = detect_mpi_launcher(std::nullopt, "gridengine", "vm", none);
  EXPECT_EQ(l.kind, LauncherKind::kLocal);
  EXPECT_EQ(l.detected_by, "mpirun --version, mpiexec.hydra --version, mpiexec --version");
  EXPECT_EQ(l.version_text,
            "no MPI launcher found (mpirun: not found on PATH; mpiexec.hydra: not found on "
            "PATH; mpiexec: not found on PATH)");
}

TEST(MpiLauncher, ItReachesTheAllocationsNodesWhenItCanPlace) {
  FakeProbe probe;
  probe.answers = {{"mpirun --version", kOpenMpi}};
  Launcher l = detect_mpi_launcher(std::nullopt, "gridengine", "vm", probe);
  EXPECT_EQ(unreachable(l, "vm", "vm"), "");
  EXPECT_EQ(unreachable(l, "node2", "vm"), "");
  EXPECT_EQ(placement_support(l), Mechanism::kCpuBinding);
  EXPECT_EQ(memory_cap_support(l), CapSupport::kNone);

  l.mpi_refusal = "it is Open MPI 5";
  std::string why = unreachable(l, "node2", "vm");
  EXPECT_NE(why.find("'node2'"), std::string::npos) << why;
  EXPECT_NE(why.find("mpirun cannot place here (it is Open MPI 5)"), std::string::npos) << why;

  // The local launcher that looked for one says what it found.
  FakeProbe none;
  Launcher local = detect_mpi_launcher(std::nullopt, "lsf", "h1", none);
  why = unreachable(local, "h2", "h1");
  EXPECT_NE(why.find("no srun, no PALS mpiexec; no MPI launcher found (mpirun: not found"),
            std::string::npos)
      << why;
}

// --- The Context's choice -------------------------------------------------------------

struct Node4 {
  topo::testing::FakeTree tree;
  Node4() {
    tree.cpus(topo::testing::range(0, 3), [](int c) { return std::vector<int>{c}; });
  }
};

Result<Context> build(const Env& env, MachineOptions m, const std::string& root,
                      VersionProbe& probe, AllocationOptions a = {}) {
  m.sysfs_root = root;
  if (m.machine.empty()) m.machine = "generic";
  return build_context(env, a, m, probe);
}

TEST(MpiLauncherContext, GridEngineGetsTheMpiLauncherPresent) {
  Node4 n;
  n.tree.write("/pe_hostfile", "ge1 2 all.q@ge1 UNDEFINED\nge2 2 all.q@ge2 UNDEFINED\n");
  Env env;
  env.set("JOB_ID", "31");
  env.set("PE_HOSTFILE", n.tree.root() + "/pe_hostfile");
  env.set("TMPDIR", "/scratch/job31");
  FakeProbe probe;
  probe.answers = {{"mpirun --version", kOpenMpi}};
  auto c = build(env, MachineOptions(), n.tree.root(), probe);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->allocation.owner, "gridengine");
  EXPECT_EQ(c->launcher.kind, LauncherKind::kMpirun);
  EXPECT_EQ(c->launcher.allocation, "gridengine");
  EXPECT_EQ(c->launcher.tmpdir, "/scratch/job31");  // where its rankfiles go
  EXPECT_EQ(c->launcher_reason, "the allocation is Grid Engine's and mpirun is present");
  EXPECT_TRUE(c->check_reachable({"ge1", "ge2"}).ok());
  auto j = machine_json(*c);
  EXPECT_EQ(j["launcher"]["kind"], "mpirun");
  EXPECT_EQ(j["launcher"]["version_text"], "mpirun (Open MPI) 4.1.4");
  EXPECT_EQ(j["placement_support"], "cpu-binding");
  EXPECT_EQ(j["mpi_wireup"]["by"], "mpirun (Open MPI)");

  // Named: hydra, though mpirun is there.
  FakeProbe both;
  both.answers = {{"mpirun --version", kOpenMpi}, {"mpiexec.hydra --version", kHydra}};
  MachineOptions m;
  m.launcher = "hydra";
  c = build(env, m, n.tree.root(), both);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->launcher.kind, LauncherKind::kHydra);
  EXPECT_EQ(c->launcher_reason, "--launcher hydra");
  EXPECT_EQ(machine_json(*c)["mpi_wireup"]["by"], "hydra");
}

TEST(MpiLauncherContext, WithoutOneTheLauncherStaysLocalAndSaysWhy) {
  Node4 n;
  Env env;
  env.set("LSB_JOBID", "556");
  env.set("LSB_MCPU_HOSTS", "hostA 2 hostB 2");
  FakeProbe probe;  // nothing on PATH
  auto c = build(env, MachineOptions(), n.tree.root(), probe);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->allocation.owner, "lsf");
  EXPECT_EQ(c->launcher.kind, LauncherKind::kLocal);
  EXPECT_NE(c->launcher_reason.find("no MPI launcher that can place"), std::string::npos);
  auto reach = c->check_reachable({"hostB"});
  ASSERT_FALSE(reach.ok());
  EXPECT_NE(reach.error().message().find("no MPI launcher found"), std::string::npos)
      << reach.error().message();

  // Found, but unable to place under LSF: the same, saying what was found.
  FakeProbe ompi;
  ompi.answers = {{"mpirun --version", kOpenMpi},
                  {"ompi_info --parsable --param plm all --level 1", kOmpiInfo}};
  // This node in the allocation: another key of the per-process cache.
  std::string me = local_host().hostname.substr(0, local_host().hostname.find('.'));
  env.set("LSB_MCPU_HOSTS", me + " 2 hostD 2");
  c = build(env, MachineOptions(), n.tree.root(), ompi);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->launcher.kind, LauncherKind::kLocal);
  EXPECT_NE(c->launcher.version_text.find("mpirun found ('mpirun (Open MPI) 4.1.4') cannot place "
                                          "here: this Open MPI was built without LSF's launch"),
            std::string::npos)
      << c->launcher.version_text;
}

TEST(MpiLauncherContext, AHostfileOfThisNodeAloneAsksNothing) {
  Node4 n;
  class NoProbe : public VersionProbe {
   public:
    Result<std::string> run(const std::vector<std::string>& argv) override {
      ADD_FAILURE() << "probe asked: " << argv[0];
      return fail(Errc::kNotFound, "no probe");
    }
  } probe;
  AllocationOptions a;
  a.hosts = {"localhost:2"};
  auto c = build(Env(), MachineOptions(), n.tree.root(), probe, a);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->allocation.owner, "hosts");
  EXPECT_EQ(c->launcher.kind, LauncherKind::kLocal);
  EXPECT_EQ(c->launcher.version_text, "");

  // Other nodes: asked, and ssh reaches them.
  FakeProbe hydra;
  hydra.answers = {{"mpirun --version", kHydra}};
  a.hosts = {"farnode1:2,farnode2:2"};
  c = build(Env(), MachineOptions(), n.tree.root(), hydra, a);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->launcher.kind, LauncherKind::kHydra);
  EXPECT_EQ(c->launcher.here, "");
  EXPECT_TRUE(c->check_reachable({"farnode1", "farnode2"}).ok());

  // --launcher local keeps today's refusal.
  MachineOptions m;
  m.launcher = "local";
  c = build(Env(), m, n.tree.root(), probe, a);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->launcher.kind, LauncherKind::kLocal);
  EXPECT_FALSE(c->check_reachable({"farnode1"}).ok());
}

TEST(MpiLauncherContext, LauncherNamesAreChecked) {
  Node4 n;
  FakeProbe probe;
  MachineOptions m;
  m.launcher = "aprun";
  auto bad = build(Env(), m, n.tree.root(), probe);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(),
            "--launcher: 'aprun' is none of auto, srun, pals, local, mpirun and hydra");
  m.launcher = "mpirun";
  m.slurm_version = "22.05";
  bad = build(Env(), m, n.tree.root(), probe);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "--slurm-version: the launcher is not srun");
  EXPECT_TRUE(probe.asked.empty());
}

}  // namespace
}  // namespace berth::place
