// Every shipped machine description: that it loads, that the compiled-in copies are
// the source tree's, that each figure and its provenance is there, and that the
// figures are the ones established for each machine.
#include "topo/catalog.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "topo/fake_tree_for_test.h"
#include "util/files.h"
#include "util/strings.h"

namespace berth::topo {
namespace {

using testing::FakeTree;

// Each machine's established figures and memory provenance, verbatim: a change to a
// shipped description must change this table too.
struct Expected {
  const char* name;
  SchedulerKind scheduler;
  LauncherKind launcher;
  const char* args;  // joined by spaces
  int64_t cores;
  int64_t tasks;
  int64_t gpus;
  int64_t memory_mb;
  MemoryStanding standing;
  const char* memory_provenance;
};

const Expected kExpected[] = {
    {"chrysalis", SchedulerKind::kSlurm, LauncherKind::kSrun, "--mpi=pmi2 -l", 64, 64, 0, 253000,
     MemoryStanding::kSurveyed, "surveyed: every node in the partition (`sinfo -o %m`)"},
    {"pm-cpu", SchedulerKind::kSlurm, LauncherKind::kSrun, "--label", 128, 128, 0, 515100,
     MemoryStanding::kSurveyed,
     "surveyed: every `cpu` node group (select by constraint, not partition)"},
    {"pm-gpu", SchedulerKind::kSlurm, LauncherKind::kSrun, "--label", 64, 4, 4, 257200,
     MemoryStanding::kSurveyed, "surveyed: every `gpu` node group (select by constraint)"},
    {"frontier", SchedulerKind::kSlurm, LauncherKind::kSrun, "-l -K --threads-per-core=1", 56, 56,
     8, 512000, MemoryStanding::kSurveyed, "surveyed: every node in `batch` and `extended`"},
    {"aurora", SchedulerKind::kPbs, LauncherKind::kPalsMpiexec, "--label", 102, 102, 12, 960000,
     MemoryStanding::kEstimate,
     "estimate from site documentation, never measured; MemTotal (1161578) is *not* the "
     "answer"},
    {"polaris", SchedulerKind::kPbs, LauncherKind::kPalsMpiexec, "--label", 32, 32, 4, 500000,
     MemoryStanding::kPublished, "first published value, not resurveyed"},
    {"compy", SchedulerKind::kSlurm, LauncherKind::kSrun, "--mpi=pmi2 --kill-on-bad-exit", 40, 40,
     0, 187000, MemoryStanding::kPublished, "first published value"},
    {"dane", SchedulerKind::kSlurm, LauncherKind::kSrun, "--mpi=pmi2 --export=ALL", 112, 112, 0,
     251000, MemoryStanding::kPublished, "first published value"},
    {"chicoma-cpu", SchedulerKind::kSlurm, LauncherKind::kSrun, "--label", 128, 128, 0, 500000,
     MemoryStanding::kPublished, "first published value"},
};

Catalog built_in() {
  auto c = Catalog::built_in();
  EXPECT_TRUE(c.ok()) << c.error().message();
  return c.ok() ? std::move(c).value() : Catalog();
}

TEST(Catalog, BuiltInIsTheSourceTreesFiles) {
  auto disk = Catalog::load_dir(BERTH_MACHINES_DIR);
  ASSERT_TRUE(disk.ok()) << disk.error().message();
  std::map<std::string, std::string> on_disk;
  for (const MachineDescription& m : disk->machines()) {
    on_disk[m.name] = files::read_file(m.source).value();
  }
  std::map<std::string, std::string> compiled;
  for (const MachineFile& f : Catalog::built_in_files()) {
    auto m = parse_machine(f.text, f.path);
    ASSERT_TRUE(m.ok()) << m.error().message();
    compiled[m->name] = f.text;
  }
  EXPECT_EQ(compiled, on_disk) << "rebuild: the embedded copies are stale";
}

TEST(Catalog, ShipsEveryKnownMachineAndGeneric) {
  Catalog c = built_in();
  std::vector<std::string> want = {"generic"};
  for (const Expected& e : kExpected) want.push_back(e.name);
  std::sort(want.begin(), want.end());
  EXPECT_EQ(c.names(), want);
}

TEST(Catalog, EveryFigureIsTheEstablishedOneWithItsProvenance) {
  Catalog c = built_in();
  for (const Expected& e : kExpected) {
    const MachineDescription* m = c.find(e.name);
    ASSERT_NE(m, nullptr) << e.name;
    EXPECT_EQ(m->scheduler, e.scheduler) << e.name;
    EXPECT_EQ(m->launcher, e.launcher) << e.name;
    EXPECT_EQ(str::join(m->launcher_args, " "), e.args) << e.name;
    EXPECT_EQ(m->cores_per_node.value, e.cores) << e.name;
    EXPECT_EQ(m->max_tasks_per_node.value, e.tasks) << e.name;
    EXPECT_EQ(m->gpus_per_node.value, e.gpus) << e.name;
    EXPECT_EQ(m->memory_per_node.value, e.memory_mb) << e.name;
    EXPECT_EQ(m->memory_standing, e.standing) << e.name;
    EXPECT_EQ(m->memory_per_node.provenance, e.memory_provenance) << e.name;
  }
}

TEST(Catalog, NoShippedFigureLacksItsProvenance) {
  // parse_machine() already refuses a figure without one; this states the rule for
  // every shipped file, so that a description added without it fails here, in CI,
  // rather than on the machine, where a figure nobody can trace cannot be corrected.
  Catalog c = built_in();
  for (const MachineDescription& m : c.machines()) {
    for (const Figure* f :
         {&m.cores_per_node, &m.max_tasks_per_node, &m.gpus_per_node, &m.memory_per_node}) {
      EXPECT_FALSE(str::trim(f->provenance).empty()) << m.name;
      // Only the generic node may leave a figure to run time.
      EXPECT_EQ(f->detected(), m.name == "generic") << m.name;
    }
    EXPECT_FALSE(m.scheduler_provenance.empty()) << m.name;
    EXPECT_FALSE(m.launcher_provenance.empty()) << m.name;
    if (!m.binding.empty()) {
      EXPECT_FALSE(m.binding.provenance.empty()) << m.name;
    }
    if (m.gpus_per_node.value.value_or(0) > 0 && m.launcher == LauncherKind::kPalsMpiexec) {
      // Nothing assigns GPUs on PALS: the description must say how they are named.
      EXPECT_FALSE(m.gpu_visibility_variable.empty()) << m.name;
    }
    if (m.name != "generic") {
      EXPECT_FALSE(m.detect.empty()) << m.name << " has no detection heuristic";
    }
  }
}

TEST(Catalog, MachineSpecifics) {
  Catalog c = built_in();
  const MachineDescription& aurora = *c.find("aurora");
  EXPECT_EQ(aurora.cpus_per_task_flag, "--depth");
  EXPECT_EQ(aurora.gpu_visibility_variable, "ZE_AFFINITY_MASK");
  EXPECT_EQ(str::join(aurora.gpu_devices, " "), "0.0 0.1 1.0 1.1 2.0 2.1 3.0 3.1 4.0 4.1 5.0 5.1");
  ASSERT_TRUE(aurora.gpu_build);
  EXPECT_EQ(aurora.gpu_build->cores_per_node->value, 96);
  EXPECT_EQ(aurora.gpu_build->max_tasks_per_node->value, 12);
  EXPECT_EQ(aurora.gpu_build->binding.cpu_bind,
            "list:1-8:9-16:17-24:25-32:33-40:41-48:53-60:61-68:69-76:77-84:85-92:93-100");
  EXPECT_EQ(aurora.gpu_build->binding.mem_bind, "list:0:0:0:0:0:0:1:1:1:1:1:1");

  const MachineDescription& polaris = *c.find("polaris");
  EXPECT_EQ(polaris.cpus_per_task_flag, "--depth");
  EXPECT_EQ(polaris.gpu_visibility_variable, "CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(polaris.gpu_build->max_tasks_per_node->value, 4);

  const MachineDescription& frontier = *c.find("frontier");
  EXPECT_EQ(frontier.binding.cpu_bind, "threads");
  EXPECT_EQ(frontier.binding.distribution, "block:cyclic");
  EXPECT_EQ(frontier.gpu_build->binding.gpu_bind, "closest");
  EXPECT_EQ(frontier.gpu_build->max_tasks_per_node->value, 8);

  EXPECT_EQ(c.find("pm-gpu")->binding.gpu_bind, "none");
  for (const char* n : {"chrysalis", "compy", "dane", "chicoma-cpu", "pm-cpu", "pm-gpu"}) {
    EXPECT_EQ(c.find(n)->binding.cpu_bind, "cores") << n;
    EXPECT_EQ(c.find(n)->binding.distribution, "plane") << n;
  }
  EXPECT_EQ(c.find("chrysalis")->scheduler_version_seen, "20.02");

  const MachineDescription& generic = *c.find("generic");
  EXPECT_EQ(generic.launcher, LauncherKind::kLocal);
  EXPECT_EQ(generic.scheduler, SchedulerKind::kNone);
  EXPECT_FALSE(generic.configured_cores());
  EXPECT_EQ(generic.memory_standing, MemoryStanding::kDetected);
}

struct DetectCase {
  const char* what;
  std::vector<std::pair<const char*, const char*>> env;
  const char* hostname;
  std::optional<int> gpus;
  const char* want;
};

TEST(Catalog, ChoosesByHeuristicsElseGeneric) {
  Catalog c = built_in();
  const DetectCase cases[] = {
      {"pm-gpu", {{"NERSC_HOST", "perlmutter"}}, "nid001234", 4, "pm-gpu"},
      {"pm-cpu", {{"NERSC_HOST", "perlmutter"}}, "nid004394", 0, "pm-cpu"},
      {"perlmutter without a GPU reading",
       {{"NERSC_HOST", "perlmutter"}},
       "nid1",
       std::nullopt,
       "generic"},
      {"frontier by lmod", {{"LMOD_SYSTEM_NAME", "frontier"}}, "frontier01793", 8, "frontier"},
      {"frontier login", {}, "login03.frontier.olcf.ornl.gov", 0, "frontier"},
      {"aurora login", {}, "aurora-uan-0010.hostmgmt2000.cm.aurora.alcf.anl.gov", 12, "aurora"},
      {"aurora job", {{"PBS_O_HOST", "aurora-uan-0012.hostmgmt"}}, "x4000c0s0b0n0", 12, "aurora"},
      {"polaris login", {}, "polaris-login-02", 0, "polaris"},
      {"chrysalis compute", {}, "chr-0496", 0, "chrysalis"},
      {"chrysalis login", {}, "chrlogin1.lcrc.anl.gov", 0, "chrysalis"},
      {"dane", {}, "dane17", 0, "dane"},
      {"compy", {}, "compy01", 0, "compy"},
      {"chicoma", {}, "ch-fe1", 0, "chicoma-cpu"},
      {"laptop", {{"HOME", "/home/me"}}, "mylaptop", 0, "generic"},
      {"no hostname", {}, "", std::nullopt, "generic"},
  };
  for (const DetectCase& d : cases) {
    Env env;
    for (auto [k, v] : d.env) env.set(k, v);
    auto choice = choose_machine(c, "", DetectInputs{&env, d.hostname, d.gpus});
    ASSERT_TRUE(choice.ok()) << d.what;
    EXPECT_EQ(choice->machine->name, d.want) << d.what << ": " << choice->reason;
    if (std::string(d.want) != "generic") {
      EXPECT_NE(choice->reason.find("heuristic"), std::string::npos) << choice->reason;
    }
  }
}

TEST(Catalog, ANamedMachineWinsAndAnUnknownOneListsTheKnown) {
  Catalog c = built_in();
  Env env;
  env.set("NERSC_HOST", "perlmutter");
  auto named = choose_machine(c, "aurora", DetectInputs{&env, "nid1", 4});
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->machine->name, "aurora");
  EXPECT_EQ(named->reason, "--machine aurora");
  auto unknown = choose_machine(c, "summit", DetectInputs{&env, "", std::nullopt});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code(), Errc::kNotFound);
  EXPECT_NE(unknown.error().message().find("--machine summit: no such machine (known: aurora, "),
            std::string::npos)
      << unknown.error().message();
}

const char* kGeneric = R"(name = "generic"
[scheduler]
kind = "none"
provenance = "p"
[launcher]
kind = "local"
args = []
provenance = "p"
[cores_per_node]
detect = true
provenance = "p"
[max_tasks_per_node]
detect = true
provenance = "p"
[gpus_per_node]
detect = true
provenance = "p"
[memory_per_node]
detect = true
standing = "detected"
provenance = "p"
)";

TEST(Catalog, LoadDirNamesTheFileThatFails) {
  FakeTree t;
  t.write("/generic.toml", kGeneric);
  t.write("/notes.txt", "ignored");
  auto ok = Catalog::load_dir(t.root());
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_EQ(ok->names(), std::vector<std::string>{"generic"});
  EXPECT_EQ(ok->origin(), t.root());

  t.write("/broken.toml", "name = \"broken\"\n");
  auto bad = Catalog::load_dir(t.root());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find(t.root() + "/broken.toml:1:1: scheduler: missing"),
            std::string::npos)
      << bad.error().message();
}

TEST(Catalog, RefusesACatalogWithoutGenericOrWithTwoOfOneName) {
  auto none = Catalog::from_files({}, "x");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message().find("'generic'"), std::string::npos);
  auto twice =
      Catalog::from_files({{"a/generic.toml", kGeneric}, {"b/generic.toml", kGeneric}}, "x");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().message().find("b/generic.toml: name: 'generic' is also described by "
                                         "a/generic.toml"),
            std::string::npos)
      << twice.error().message();
  auto missing = Catalog::load_dir("/nonexistent/machines");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), Errc::kNotFound);
}

}  // namespace
}  // namespace berth::topo
