#include "place/render.h"

#include <gtest/gtest.h>

#include "topo/catalog.h"
#include "util/strings.h"

namespace berth::place {
namespace {

const topo::MachineDescription& machine(const std::string& name) {
  static auto catalog = topo::Catalog::built_in();
  EXPECT_TRUE(catalog.ok()) << catalog.error().message();
  const auto* m = catalog->find(name);
  EXPECT_NE(m, nullptr) << name;
  return *m;
}

Launcher srun(int major, int minor) {
  Launcher l;
  l.kind = topo::LauncherKind::kSrun;
  l.program = "srun";
  l.version = Version{major, minor};
  return l;
}

Launcher pals() {
  Launcher l;
  l.kind = topo::LauncherKind::kPalsMpiexec;
  l.program = "mpiexec";
  l.is_pals = true;
  return l;
}

Launcher local() { return Launcher{}; }

Placement place(std::vector<std::string> nodes, std::vector<std::vector<int>> cores, int gpus = 0,
                std::vector<std::string> ids = {}) {
  Placement p;
  p.nodes = std::move(nodes);
  p.cores = std::move(cores);
  p.gpus = gpus;
  p.gpu_ids = std::move(ids);
  return p;
}

LaunchSpec spec(int tasks, int cpt = 1, MemoryCap cap = std::nullopt) {
  LaunchSpec s;
  s.tasks = tasks;
  s.cpus_per_task = cpt;
  s.memory_cap = cap;
  s.command = {"./a.out", "x"};
  return s;
}

std::string argv_of(const Result<Rendered>& r) {
  if (!r.ok()) return "ERROR: " + r.error().message();
  std::vector<std::string> w = r->argv;
  return str::join(w, " ");
}

struct Case {
  const char* name;
  const char* machine;
  Launcher launcher;
  std::optional<Placement> placement;
  LaunchSpec spec;
  const char* want;  // argv joined by spaces, or "ERROR: <substring>"
};

TEST(Render, Table) {
  const Case cases[] = {
      // --- Slurm >= 20.11: scheduler-enforced.
      {"new slurm, one node", "pm-cpu", srun(25, 11), place({"nid1"}, {{0, 1, 2, 3}}), spec(4),
       "srun --label --cpu-bind=cores --distribution=plane --nodes=1 --nodelist=nid1 --ntasks=4 "
       "--cpus-per-task=1 --exact --gpus=0 ./a.out x"},
      {"new slurm, two nodes same cores", "pm-cpu", srun(25, 11),
       place({"a", "b"}, {{0, 1}, {0, 1}}), spec(4),
       "srun --label --cpu-bind=cores --distribution=plane --nodes=2 --nodelist=a,b --ntasks=4 "
       "--cpus-per-task=1 --exact --gpus=0 ./a.out x"},
      {"new slurm, GPU total and dropped gpu_bind none", "pm-gpu", srun(25, 11),
       place({"g1"}, {{0, 1, 2, 3, 4, 5, 6, 7}}, 2), spec(2, 4),
       "srun --label --cpu-bind=cores --distribution=plane --nodes=1 --nodelist=g1 --ntasks=2 "
       "--cpus-per-task=4 --exact --gpus=2 ./a.out x"},
      {"new slurm, memory cap", "frontier", srun(25, 11), place({"f"}, {{1, 2}}), spec(2, 1, 1024),
       "srun -l -K --threads-per-core=1 --cpu-bind=threads --distribution=block:cyclic --nodes=1 "
       "--nodelist=f --ntasks=2 --cpus-per-task=1 --exact --gpus=0 --mem=1024M ./a.out x"},
      {"new slurm, no placement is the plain command", "pm-cpu", srun(25, 11), std::nullopt,
       spec(8, 2),
       "srun --label --cpu-bind=cores --distribution=plane --ntasks=8 --cpus-per-task=2 ./a.out x"},
      {"new slurm, no placement keeps gpu_bind none", "pm-gpu", srun(25, 11), std::nullopt,
       spec(1),
       "srun --label --cpu-bind=cores --distribution=plane --gpu-bind=none --ntasks=1 "
       "--cpus-per-task=1 ./a.out x"},
      {"new slurm, too many tasks", "pm-cpu", srun(25, 11), place({"a"}, {{0, 1}}), spec(3),
       "ERROR: do not fit"},
      {"new slurm, unused node refused", "pm-cpu", srun(25, 11), place({"a", "b"}, {{0, 1}, {0}}),
       spec(2), "ERROR: node 'b' would run no task"},
      // --- Slurm < 20.11: one CPU mask per task, fill each node in turn.
      {"old slurm, masks of non-contiguous cores", "chrysalis", srun(20, 2),
       place({"c1"}, {{1, 2, 5, 6}}), spec(2, 2),
       "srun --mpi=pmi2 -l --nodes=1 --nodelist=c1 --ntasks=2 --cpus-per-task=2 "
       "--cpu-bind=mask_cpu:0x6,0x60 ./a.out x"},
      {"old slurm, two nodes one node's masks", "chrysalis", srun(20, 2),
       place({"c1", "c2"}, {{0, 1}, {0, 1}}), spec(4),
       "srun --mpi=pmi2 -l --nodes=2 --nodelist=c1,c2 --ntasks=4 --cpus-per-task=1 "
       "--cpu-bind=mask_cpu:0x1,0x2 ./a.out x"},
      {"old slurm, different cores per node refused", "chrysalis", srun(20, 2),
       place({"c1", "c2"}, {{0, 1}, {2, 3}}), spec(4), "ERROR: one node's core list"},
      {"old slurm, GPUs refused", "chrysalis", srun(20, 2), place({"c1"}, {{0}}, 1), spec(1),
       "ERROR: cannot confine GPUs"},
      {"old slurm, cap never rendered", "chrysalis", srun(20, 2), place({"c1"}, {{0}}),
       spec(1, 1, 500),
       "srun --mpi=pmi2 -l --nodes=1 --nodelist=c1 --ntasks=1 --cpus-per-task=1 "
       "--cpu-bind=mask_cpu:0x1 ./a.out x"},
      {"old slurm, no placement", "chrysalis", srun(20, 2), std::nullopt, spec(64),
       "srun --mpi=pmi2 -l --cpu-bind=cores --distribution=plane --ntasks=64 --cpus-per-task=1 "
       "./a.out x"},
      // --- PBS/PALS.
      {"pals, one host, explicit none", "polaris", pals(), place({"x1"}, {{1, 2, 3, 4}}),
       spec(2, 2),
       "mpiexec --label -n 2 --ppn 2 --hosts x1 --depth 2 --cpu-bind list:1,2:3,4 --env "
       "CUDA_VISIBLE_DEVICES= ./a.out x"},
      {"pals, two hosts spread, tiles", "aurora", pals(),
       place({"h1", "h2"}, {{1, 2, 3, 4}, {1, 2, 3, 4}}, 2, {"0.0", "0.1"}), spec(4, 2),
       "mpiexec --label -n 4 --ppn 2 --hosts h1,h2 --depth 2 --cpu-bind list:1,2:3,4 --env "
       "ZE_AFFINITY_MASK=0.0,0.1 --env ZE_FLAT_DEVICE_HIERARCHY=COMPOSITE ./a.out x"},
      {"pals, different cores refused", "aurora", pals(),
       place({"h1", "h2"}, {{1, 2}, {3, 4}}), spec(2), "ERROR: one node's core list"},
      {"pals, GPUs without ids refused", "aurora", pals(), place({"h1"}, {{1}}, 1), spec(1),
       "ERROR: must name their device ids"},
      {"pals, no placement packs hosts", "aurora", pals(), std::nullopt, spec(204, 1),
       "mpiexec --label -n 204 --ppn 102 --depth 1 ./a.out x"},
      {"pals, cap never rendered", "polaris", pals(), std::nullopt, spec(4, 1, 100),
       "mpiexec --label -n 4 --ppn 4 --depth 1 ./a.out x"},
      // --- local.
      {"local, no placement", "generic", local(), std::nullopt, spec(1), "./a.out x"},
      {"local, placement", "generic", local(), place({"me"}, {{2, 3}}), spec(1, 2), "./a.out x"},
      {"local, two nodes refused", "generic", local(), place({"a", "b"}, {{0}, {0}}), spec(1),
       "ERROR: this node only"},
  };
  for (const auto& c : cases) {
    auto r = render(machine(c.machine), c.launcher, c.placement, c.spec);
    std::string got = argv_of(r);
    std::string want = c.want;
    if (want.rfind("ERROR: ", 0) == 0) {
      EXPECT_FALSE(r.ok()) << c.name << ": " << got;
      if (!r.ok()) {
        EXPECT_NE(got.find(want.substr(7)), std::string::npos) << c.name << ": " << got;
      }
    } else {
      EXPECT_EQ(got, want) << c.name;
    }
  }
}

TEST(Render, ReportsMechanismAndCapState) {
  struct Case {
    Launcher l;
    const char* machine;
    std::optional<Placement> p;
    MemoryCap cap;
    Mechanism mech;
    CapState state;
  } cases[] = {
      {srun(22, 5), "pm-cpu", place({"a"}, {{0}}), 100, Mechanism::kSchedulerEnforced,
       CapState::kEnforced},
      {srun(20, 2), "chrysalis", place({"a"}, {{0}}), 100, Mechanism::kCpuBinding,
       CapState::kNotEnforced},
      {pals(), "aurora", place({"a"}, {{1}}), 100, Mechanism::kCpuBinding, CapState::kNotEnforced},
      {local(), "generic", place({"a"}, {{0}}), std::nullopt, Mechanism::kCpuBinding,
       CapState::kAbsent},
      {srun(22, 5), "pm-cpu", std::nullopt, std::nullopt, Mechanism::kNone, CapState::kAbsent},
  };
  for (const auto& c : cases) {
    auto r = render(machine(c.machine), c.l, c.p, spec(1, 1, c.cap));
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->mechanism, c.mech) << c.machine;
    EXPECT_EQ(r->memory_cap, c.state) << c.machine;
  }
}

TEST(Render, DroppedOptionsAreNoted) {
  auto r = render(machine("pm-gpu"), srun(25, 11), place({"g"}, {{0}}), spec(1));
  ASSERT_TRUE(r.ok());
  bool noted = false;
  for (const auto& n : r->notes) noted |= n.find("gpu_bind=none") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(Render, LocalBindsAndSetsVisibilityExplicitly) {
  auto r = render(machine("generic"), local(), place({"me"}, {{4, 6}}), spec(1));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->bind_cpus, (std::vector<int>{4, 6}));
  ASSERT_EQ(r->env.size(), 1u);
  EXPECT_EQ(r->env[0].first, "CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(r->env[0].second, "");
  EXPECT_EQ(shell_line(*r), "CUDA_VISIBLE_DEVICES='' taskset --cpu-list 4,6 ./a.out x");
  auto g = render(machine("generic"), local(), place({"me"}, {{0}}, 2, {"0", "1"}), spec(1));
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->env[0].second, "0,1");
}

TEST(Render, UnknownVersionRefusesPlacementButNotPlainCommand) {
  Launcher l;
  l.kind = topo::LauncherKind::kSrun;
  l.version_text = "srun: not found";
  auto r = render(machine("pm-cpu"), l, place({"a"}, {{0}}), spec(1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Errc::kRefused);
  EXPECT_NE(r.error().message().find("version is unknown"), std::string::npos);
  EXPECT_TRUE(render(machine("pm-cpu"), l, std::nullopt, spec(1)).ok());
}

TEST(Render, EveryShippedMachineRendersPlacedAndUnplaced) {
  auto catalog = topo::Catalog::built_in();
  ASSERT_TRUE(catalog.ok());
  for (const auto& m : catalog->machines()) {
    Launcher l = m.launcher == topo::LauncherKind::kSrun          ? srun(25, 11)
                 : m.launcher == topo::LauncherKind::kPalsMpiexec ? pals()
                                                                  : local();
    auto plain = render(m, l, std::nullopt, spec(1));
    EXPECT_TRUE(plain.ok()) << m.name << ": " << plain.error().message();
    auto placed = render(m, l, place({"n1"}, {{1, 2}}), spec(1, 2));
    EXPECT_TRUE(placed.ok()) << m.name << ": " << placed.error().message();
    if (placed.ok()) EXPECT_NE(placed->mechanism, Mechanism::kNone) << m.name;
  }
}

TEST(Launcher, ParsesSlurmVersions) {
  EXPECT_EQ(parse_slurm_version("slurm 22.05.8\n")->minor, 5);
  EXPECT_EQ(parse_slurm_version("slurm-wlm 20.02.7")->major, 20);
  EXPECT_FALSE(parse_slurm_version("srun: command not found").has_value());
  EXPECT_FALSE(parse_slurm_version("").has_value());
  EXPECT_TRUE(parse_version_flag("20.11").ok());
  EXPECT_FALSE(parse_version_flag("twenty").ok());
}

class FakeProbe : public VersionProbe {
 public:
  explicit FakeProbe(Result<std::string> out) : out_(std::move(out)) {}
  Result<std::string> run(const std::vector<std::string>& argv) override {
    seen.push_back(str::join(argv, " "));
    return out_;
  }
  std::vector<std::string> seen;

 private:
  Result<std::string> out_;
};

TEST(Launcher, DetectsFromWhatTheLauncherPrints) {
  FakeProbe old_slurm(std::string("slurm 20.02.7\n"));
  Launcher l = detect_launcher(topo::LauncherKind::kSrun, old_slurm);
  // The version and the MPI plugins, both asked of srun itself.
  EXPECT_EQ(old_slurm.seen, (std::vector<std::string>{"srun --version", "srun --mpi=list"}));
  EXPECT_FALSE(l.mpi_plugins.has_value());  // what it printed lists no plugin
  EXPECT_NE(l.mpi_text.find("unreadable"), std::string::npos) << l.mpi_text;
  EXPECT_EQ(placement_support(l), Mechanism::kCpuBinding);
  EXPECT_EQ(memory_cap_support(l), CapSupport::kNone);

  FakeProbe new_slurm(std::string("slurm 22.05.8\n"));
  l = detect_launcher(topo::LauncherKind::kSrun, new_slurm);
  EXPECT_EQ(placement_support(l), Mechanism::kSchedulerEnforced);
  EXPECT_EQ(memory_cap_support(l), CapSupport::kEnforced);

  FakeProbe missing(fail(Errc::kNotFound, "srun: No such file or directory"));
  l = detect_launcher(topo::LauncherKind::kSrun, missing);
  EXPECT_EQ(placement_support(l), Mechanism::kNone);
  EXPECT_NE(placement_refusal(l).find("No such file"), std::string::npos);

  FakeProbe openmpi(std::string("mpiexec (OpenRTE) 4.1.4\n"));
  l = detect_launcher(topo::LauncherKind::kPalsMpiexec, openmpi);
  EXPECT_EQ(placement_support(l), Mechanism::kNone);
  FakeProbe pals_out(std::string("mpiexec version 1.2.12 (PALS)\n"));
  l = detect_launcher(topo::LauncherKind::kPalsMpiexec, pals_out);
  EXPECT_EQ(placement_support(l), Mechanism::kCpuBinding);
}

TEST(Placement, ValidateNamesTheProblem) {
  EXPECT_FALSE(place({}, {}).validate().ok());
  EXPECT_FALSE(place({"a"}, {{1, 0}}).validate().ok());
  EXPECT_FALSE(place({"a", "a"}, {{0}, {0}}).validate().ok());
  EXPECT_FALSE(place({"a"}, {{}}).validate().ok());
  EXPECT_FALSE(place({"a"}, {{0}}, 2, {"0"}).validate().ok());
  EXPECT_TRUE(place({"a", "b"}, {{0, 1}, {0, 1}}, 2, {"0", "1"}).validate().ok());
  EXPECT_FALSE(place({"a"}, {{0}}, 2, {"0", "0"}).validate().ok());
  // Node-local ids repeat across nodes (a pool grant of GPUs on two nodes).
  EXPECT_TRUE(place({"a", "b"}, {{0}, {0}}, 4, {"0", "1", "0", "1"}).validate().ok());
}

TEST(Placement, CoreSetsFromFlagsAreNamedAndNeverEmpty) {
  // The grammar is util/idset.h's (idset_test.cc); this is what place adds to it.
  auto ids = parse_ids("1-3,7", "--cores");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int>{1, 2, 3, 7}));
  const std::pair<const char*, const char*> refused[] = {
      {"", "--cores: an empty id list"},
      {"[]", "--cores: an empty id list"},
      {"3-1", "--cores: position 1: reversed range 3-1"},
      {"x", "--cores: position 1: expected a digit, found 'x'"},
      {"0,0", "--cores: position 3: id 0 is given twice"},
      {"99999999", "--cores: position 1: id is larger than 65535"},
  };
  for (const auto& [text, want] : refused) {
    auto r = parse_ids(text, "--cores");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().code(), Errc::kInvalidInput) << text;
    EXPECT_EQ(r.error().message(), want);
  }
}

TEST(Launcher, ReadsTheMpiPluginList) {
  // What Slurm 22.05's srun --mpi=list prints.
  auto got = parse_mpi_plugins(
      "MPI plugin types are...\n\tnone\n\tcray_shasta\n\tpmi2\n\tpmix\n"
      "specific pmix plugin versions available: pmix_v4\n");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, (std::vector<std::string>{"none", "cray_shasta", "pmi2", "pmix", "pmix_v4"}));
  EXPECT_EQ(parse_mpi_plugins("MPI plugin types are...\n\tnone\n"),
            std::optional<std::vector<std::string>>(std::vector<std::string>{"none"}));
  EXPECT_FALSE(parse_mpi_plugins("srun: error: invalid option\n").has_value());
  EXPECT_FALSE(parse_mpi_plugins("").has_value());
}

// An srun step asks for the wire-up the launch needs, from the plugins Slurm has.
TEST(Render, SrunAsksForTheMpiPluginSlurmHas) {
  const topo::MachineDescription& m = machine("generic");
  Launcher l = srun(22, 5);
  l.mpi_plugins = std::vector<std::string>{"none", "pmi2", "pmix", "pmix_v4"};
  LaunchSpec s;
  s.tasks = 4;
  s.command = {"./a.out"};
  struct Case {
    wireup::Mode mode;
    int tasks;
    std::vector<std::string> plugins;
    std::string flag;  // "" = no --mpi; "refused" = render fails
  };
  const Case cases[] = {
      {wireup::Mode::kAuto, 4, {"none", "pmi2", "pmix"}, "--mpi=pmix"},
      {wireup::Mode::kAuto, 1, {"none", "pmi2", "pmix"}, ""},  // one task needs no peers
      {wireup::Mode::kAuto, 4, {"none", "pmi2"}, "--mpi=pmi2"},
      {wireup::Mode::kAuto, 4, {"none"}, ""},  // a note, not a refusal
      {wireup::Mode::kPmix, 1, {"none", "pmix"}, "--mpi=pmix"},
      {wireup::Mode::kPmix, 4, {"none", "pmi2"}, "refused"},
      {wireup::Mode::kPmi2, 4, {"pmi2", "pmix"}, "--mpi=pmi2"},
      {wireup::Mode::kPmi1, 4, {"pmi2"}, "--mpi=pmi2"},  // Slurm's pmi2 serves PMI-1
      {wireup::Mode::kNone, 4, {"pmix"}, "--mpi=none"},
  };
  for (const auto& c : cases) {
    l.mpi_plugins = c.plugins;
    s.mpi = c.mode;
    s.tasks = c.tasks;
    auto r = render(m, l, std::nullopt, s);
    std::string what = std::string(wireup::mode_name(c.mode)) + " x" + std::to_string(c.tasks);
    if (c.flag == "refused") {
      ASSERT_FALSE(r.ok()) << what;
      EXPECT_EQ(r.error().code(), Errc::kRefused);
      EXPECT_NE(r.error().message().find("srun --mpi=list"), std::string::npos);
      continue;
    }
    ASSERT_TRUE(r.ok()) << what << ": " << r.error().message();
    std::vector<std::string> flags;
    for (const auto& w : r->argv) {
      if (w.rfind("--mpi", 0) == 0) flags.push_back(w);
    }
    EXPECT_EQ(flags, c.flag.empty() ? std::vector<std::string>{} : std::vector<std::string>{c.flag})
        << what;
    if (c.flag.empty() && c.tasks > 1) {
      EXPECT_FALSE(r->notes.empty()) << what << ": no --mpi must be said";
    }
  }
  // Unknown plugins: auto says so, a named mode is refused.
  l.mpi_plugins.reset();
  l.mpi_text = "srun --mpi=list: did not finish in 10 s";
  s.mpi = wireup::Mode::kAuto;
  s.tasks = 4;
  auto r = render(m, l, std::nullopt, s);
  ASSERT_TRUE(r.ok());
  EXPECT_NE(str::join(r->notes, "|").find("did not finish"), std::string::npos);
  s.mpi = wireup::Mode::kPmix;
  EXPECT_FALSE(render(m, l, std::nullopt, s).ok());
}

TEST(Render, UnreachableNodesAreNamed) {
  EXPECT_EQ(unreachable(local(), "vm", "vm"), "");
  std::string why = unreachable(local(), "othernode", "vm");
  EXPECT_NE(why.find("'othernode'"), std::string::npos) << why;
  EXPECT_NE(why.find("local"), std::string::npos) << why;
  EXPECT_EQ(unreachable(srun(22, 5), "nid002", "nid001"), "");
  EXPECT_EQ(unreachable(pals(), "x1", "x0"), "");
  Launcher not_pals;
  not_pals.kind = topo::LauncherKind::kPalsMpiexec;
  EXPECT_NE(unreachable(not_pals, "x1", "x0"), "");
}

}  // namespace
}  // namespace berth::place
