#include "topo/machine.h"

#include <gtest/gtest.h>

#include <regex>

namespace berth::topo {
namespace {

constexpr const char* kPath = "data/machines/test.toml";

// A complete description; the error cases below each break one thing in it.
const std::string kGood = R"(name = "test"
description = "a test machine"

[scheduler]
kind = "slurm"
version_seen = "20.02"
provenance = "sched source"

[launcher]
kind = "srun"
args = ["--label"]
cpus_per_task_flag = "--cpus-per-task"
provenance = "launcher source"

[cores_per_node]
value = 64
provenance = "cores source"

[max_tasks_per_node]
value = 64
provenance = "tasks source"

[gpus_per_node]
value = 2
provenance = "gpus source"

[memory_per_node]
value = 253000
standing = "surveyed"
provenance = "surveyed: every node"

[gpu]
devices = ["0.0", "0.1"]
visibility_variable = "ZE_AFFINITY_MASK"
provenance = "gpu source"

[binding]
cpu_bind = "cores"
distribution = "plane"
gpu_bind = "none"
provenance = "binding source"

[gpu_build.max_tasks_per_node]
value = 2
provenance = "gpu build source"

[[detect]]
env = { SITE = "test*" }
gpus = "present"

[[detect]]
hostname = "login*"
)";

std::string replace(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

TEST(Machine, ParsesACompleteDescription) {
  auto r = parse_machine(kGood, kPath);
  ASSERT_TRUE(r.ok()) << r.error().message();
  const MachineDescription& m = *r;
  EXPECT_EQ(m.name, "test");
  EXPECT_EQ(m.source, kPath);
  EXPECT_EQ(m.scheduler, SchedulerKind::kSlurm);
  EXPECT_EQ(m.scheduler_version_seen, "20.02");
  EXPECT_EQ(m.launcher, LauncherKind::kSrun);
  EXPECT_EQ(m.launcher_args, (std::vector<std::string>{"--label"}));
  EXPECT_EQ(m.cpus_per_task_flag, "--cpus-per-task");
  EXPECT_EQ(m.cores_per_node.value, 64);
  EXPECT_EQ(m.cores_per_node.provenance, "cores source");
  EXPECT_EQ(m.configured_cores(), 64);
  EXPECT_EQ(m.max_tasks_per_node.value, 64);
  EXPECT_EQ(m.gpus_per_node.value, 2);
  EXPECT_EQ(m.memory_per_node.value, 253000);
  EXPECT_EQ(m.memory_standing, MemoryStanding::kSurveyed);
  EXPECT_EQ(m.gpu_devices, (std::vector<std::string>{"0.0", "0.1"}));
  EXPECT_EQ(m.gpu_visibility_variable, "ZE_AFFINITY_MASK");
  EXPECT_EQ(m.binding.cpu_bind, "cores");
  EXPECT_EQ(m.binding.gpu_bind, "none");
  ASSERT_TRUE(m.gpu_build);
  EXPECT_FALSE(m.gpu_build->cores_per_node);
  EXPECT_EQ(m.gpu_build->max_tasks_per_node->value, 2);
  ASSERT_EQ(m.detect.size(), 2u);
  EXPECT_EQ(m.detect[0].env, (std::vector<std::pair<std::string, std::string>>{{"SITE", "test*"}}));
  EXPECT_EQ(m.detect[0].gpus_present, true);
  EXPECT_EQ(m.detect[1].hostname, "login*");
}

TEST(Machine, DetectedFigures) {
  std::string text = replace(kGood, "value = 64\nprovenance = \"cores source\"",
                             "detect = true\nprovenance = \"at run time\"");
  text = replace(text, "value = 253000\nstanding = \"surveyed\"",
                 "detect = true\nstanding = \"detected\"");
  auto r = parse_machine(text, kPath);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(r->cores_per_node.detected());
  EXPECT_FALSE(r->configured_cores());
  EXPECT_TRUE(r->memory_per_node.detected());
}

struct Broken {
  const char* what;
  std::string from;
  std::string to;
  const char* message;  // the whole message must contain this
};

TEST(Machine, EveryMissingOrWrongFigureIsNamed) {
  const Broken cases[] = {
      {"no name", "name = \"test\"\n", "", "data/machines/test.toml:1:1: name: missing"},
      {"name differs from file", "name = \"test\"", "name = \"other\"",
       "name: 'other' does not match the file name 'test'"},
      {"no cores provenance", "provenance = \"cores source\"\n", "",
       "data/machines/test.toml:15:1: cores_per_node.provenance: missing"},
      {"empty provenance", "provenance = \"tasks source\"", "provenance = \" \"",
       "max_tasks_per_node.provenance: must not be empty"},
      {"no memory value", "value = 253000\n", "", "memory_per_node.value: missing"},
      {"no memory provenance", "provenance = \"surveyed: every node\"\n", "",
       "memory_per_node.provenance: missing"},
      {"no standing", "standing = \"surveyed\"\n", "", "memory_per_node.standing: missing"},
      {"bad standing", "standing = \"surveyed\"", "standing = \"guessed\"",
       "memory_per_node.standing: 'guessed' is not one of surveyed, published, estimate, "
       "detected"},
      {"standing detected with a value", "standing = \"surveyed\"", "standing = \"detected\"",
       "memory_per_node.standing: must be 'detected' exactly when"},
      {"no gpus figure", "[gpus_per_node]\nvalue = 2\nprovenance = \"gpus source\"\n", "",
       "gpus_per_node: missing"},
      {"value and detect", "value = 64\n", "value = 64\ndetect = true\n",
       "cores_per_node.detect: given with a value"},
      {"string value", "value = 64\nprovenance = \"cores", "value = \"64\"\nprovenance = \"cores",
       "cores_per_node.value: must be an integer, not a string"},
      {"zero cores", "value = 64\nprovenance = \"cores", "value = 0\nprovenance = \"cores",
       "cores_per_node.value: 0 is out of range [1, 65536]"},
      {"no scheduler",
       "[scheduler]\nkind = \"slurm\"\nversion_seen = \"20.02\"\nprovenance = "
       "\"sched source\"\n",
       "", "scheduler: missing"},
      {"unknown scheduler", "kind = \"slurm\"", "kind = \"lsf\"", "scheduler.kind: 'lsf'"},
      {"launcher for another scheduler", "kind = \"srun\"", "kind = \"pals-mpiexec\"",
       "launcher.kind: launcher pals-mpiexec does not go with scheduler slurm"},
      {"no launcher args", "args = [\"--label\"]\n", "", "launcher.args: missing"},
      {"args not strings", "args = [\"--label\"]", "args = [1]",
       "launcher.args: items must be strings, not an integer"},
      {"no cpus-per-task flag", "cpus_per_task_flag = \"--cpus-per-task\"\n", "",
       "launcher.cpus_per_task_flag: missing"},
      {"unknown key", "[binding]\n", "[binding]\ncpubind = \"x\"\n",
       "data/machines/test.toml:38:11: binding.cpubind: unknown key"},
      {"unknown top-level key",
       "description =", "colour = \"red\"\ndescription =", "colour: unknown key"},
      {"binding without provenance", "provenance = \"binding source\"\n", "",
       "binding.provenance: missing"},
      {"gpu devices miscounted", "devices = [\"0.0\", \"0.1\"]", "devices = [\"0.0\"]",
       "gpu.devices: names 1 devices, but gpus_per_node is 2"},
      {"bad visibility variable", "visibility_variable = \"ZE_AFFINITY_MASK\"",
       "visibility_variable = \"ZE MASK\"", "gpu.visibility_variable: not a variable name"},
      {"gpu build figure without provenance", "provenance = \"gpu build source\"\n", "",
       "gpu_build.max_tasks_per_node.provenance: missing"},
      {"gpu build detected", "value = 2\nprovenance = \"gpu build",
       "detect = true\nprovenance = \"gpu build",
       "gpu_build.max_tasks_per_node.detect: this figure cannot be detected"},
      {"detect rule of GPUs alone", "env = { SITE = \"test*\" }\n", "",
       "detect[1].hostname: a rule needs a hostname or env condition"},
      {"detect gpus word", "gpus = \"present\"", "gpus = \"many\"",
       "detect[1].gpus: 'many' is not present or absent"},
      {"detect not tables",
       "[[detect]]\nenv = { SITE = \"test*\" }\ngpus = \"present\"\n\n[[detect]]\nhostname = "
       "\"login*\"\n",
       "[detect]\nhostname = \"x\"\n", "detect: expected [[detect]] tables"},
      {"toml syntax", "value = 64", "value = = 64", "data/machines/test.toml:16:"},
      {"duplicate key", "value = 64", "value = 64\nvalue = 65", "data/machines/test.toml:17:"},
  };
  for (const Broken& c : cases) {
    auto r = parse_machine(replace(kGood, c.from, c.to), kPath);
    ASSERT_FALSE(r.ok()) << c.what;
    EXPECT_EQ(r.error().code(), Errc::kInvalidInput) << c.what;
    EXPECT_NE(r.error().message().find(c.message), std::string::npos)
        << c.what << ": " << r.error().message();
    // Every message names the file, the line and the column (util/toml_fields.h).
    EXPECT_TRUE(std::regex_search(r.error().message(),
                                  std::regex("^data/machines/test\\.toml:[0-9]+:[0-9]+: ")))
        << c.what << ": " << r.error().message();
  }
}

TEST(Machine, NeverThrowsOnBytes) {
  const std::string inputs[] = {
      "",
      std::string("\0\0\0", 3),
      "\xff\xfe name = 1",
      std::string(300, '['),
      std::string(100000, 'a'),
      "name = \"" + std::string(5000, 'x') + "\"",
      "a = [" + std::string(2000, '[') + std::string(2000, ']') + "]",
      "x = 1979-05-27T07:32:00Z",
  };
  for (const std::string& in : inputs) {
    auto r = parse_machine(in, kPath);
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find(kPath), std::string::npos) << r.error().message();
  }
  auto big = parse_machine(std::string(kMaxMachineFileBytes + 1, ' '), kPath);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message().find("larger than"), std::string::npos);
}

}  // namespace
}  // namespace berth::topo
