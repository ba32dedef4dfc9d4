// The launcher commands that start a run's agents, and what they say back (spec 08 §2).
#include "place/agent_launch.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "place/node_offer.h"

namespace berth::place {
namespace {

bool has(const std::vector<std::string>& v, const std::string& w) {
  return std::find(v.begin(), v.end(), w) != v.end();
}

TEST(AgentLaunch, SlurmIsOneStepForEveryNode) {
  Launcher l;
  l.kind = topo::LauncherKind::kSrun;
  l.version = Version{22, 5};
  auto a = agent_launches("slurm", l, {"n1", "n2", "n3"}, {"/opt/berth", "agent"});
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->size(), 1u);
  const auto& argv = (*a)[0].argv;
  EXPECT_EQ(argv[0], "srun");
  for (const char* w : {"--overlap", "--nodes=3", "--ntasks=3", "--ntasks-per-node=1",
                        "--nodelist=n1,n2,n3", "--mpi=none", "--cpu-bind=none", "--input=all",
                        "--kill-on-bad-exit=0", "--whole", "/opt/berth", "agent", "--node-from",
                        "SLURMD_NODENAME"}) {
    EXPECT_TRUE(has(argv, w)) << w;
  }
  EXPECT_FALSE(has(argv, "--external-launcher"));  // 23.11 and later only
  EXPECT_EQ((*a)[0].nodes, (std::vector<std::string>{"n1", "n2", "n3"}));
  ASSERT_TRUE((*a)[0].ended);
  EXPECT_EQ((*a)[0].ended("srun: error: n2: task 1: Killed"), "n2");

  l.version = Version{23, 11};
  a = agent_launches("slurm", l, {"n1"}, {"berth", "agent"});
  EXPECT_TRUE(has((*a)[0].argv, "--external-launcher"));
  l.version = Version{20, 11};
  a = agent_launches("slurm", l, {"n1"}, {"berth", "agent"});
  EXPECT_FALSE(has((*a)[0].argv, "--whole"));
}

TEST(AgentLaunch, OtherSchedulersStartOnePerNode) {
  Launcher l;
  struct Case {
    const char* owner;
    std::vector<std::string> prefix;
  };
  for (const Case& c : {Case{"gridengine", {"qrsh", "-inherit", "-V", "h2"}},
                        Case{"lsf", {"blaunch", "h2"}}, Case{"pbs", {"pbs_tmrsh", "h2"}},
                        Case{"hosts", {"ssh", "-T", "-o", "BatchMode=yes", "h2"}}}) {
    auto a = agent_launches(c.owner, l, {"h1", "h2"}, {"/opt/my berth", "agent"});
    ASSERT_TRUE(a.ok()) << c.owner;
    ASSERT_EQ(a->size(), 2u);
    const auto& argv = (*a)[1].argv;
    EXPECT_EQ(std::vector<std::string>(argv.begin(), argv.begin() + c.prefix.size()), c.prefix)
        << c.owner;
    EXPECT_EQ((*a)[1].nodes, std::vector<std::string>{"h2"});
    EXPECT_EQ(argv.back(), "h2");
    EXPECT_EQ(argv[argv.size() - 2], "--node");
    // ssh hands its words to a shell there: a path with a space is quoted for it.
    std::string path = argv[c.prefix.size()];
    EXPECT_EQ(path, std::string(c.owner) == "hosts" ? "'/opt/my berth'" : "/opt/my berth");
  }
}

TEST(AgentLaunch, RefusedWhereBerthCannotStartOne) {
  auto a = agent_launches("flux", Launcher{}, {"a"}, {"berth", "agent"});
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().code(), Errc::kUnsupported);
  EXPECT_TRUE(agent_launches("simulator", Launcher{}, {}, {"berth"})->empty());
}

TEST(AgentLaunch, SrunTaskLines) {
  EXPECT_EQ(srun_task_ended("srun: error: n3: task 2: Killed"), "n3");
  EXPECT_EQ(srun_task_ended("srun: error: node-1.x: task 10: Exited with exit code 1"), "node-1.x");
  EXPECT_EQ(srun_task_ended("srun: error: n3: task x: Killed"), "");
  EXPECT_EQ(srun_task_ended("srun: error: Unable to create step"), "");
  EXPECT_EQ(srun_task_ended("srun: Warning: n3: task 2: Killed"), "");
  EXPECT_EQ(srun_task_ended(""), "");
}

TEST(AgentsMode, Parses) {
  EXPECT_EQ(*parse_agents_mode("auto"), AgentsMode::kAuto);
  EXPECT_EQ(*parse_agents_mode("off"), AgentsMode::kOff);
  EXPECT_EQ(*parse_agents_mode("all"), AgentsMode::kAll);
  auto bad = parse_agents_mode("some");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("--agents: 'some'"), std::string::npos);
}

TEST(NodeOffer, RoundTripsAndRefusesWhatIsWrong) {
  NodeOffer o;
  o.cores = {0, 2, 4, 5, 6};
  o.gpu_ids = {"0", "1"};
  o.gpu_variable = "CUDA_VISIBLE_DEVICES";
  topo::GpuIdentity g;
  g.id = "1";
  g.uuid = "GPU-abc";
  g.model = "NVIDIA H100 80GB HBM3";
  g.numa_node = 1;
  g.local_cores = {4, 5, 6};
  o.gpu_devices = {topo::GpuIdentity{}, g};
  o.memory_mb = 1024;
  auto back = offer_from_json(offer_to_json(o));
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->cores, o.cores);
  EXPECT_EQ(back->gpu_ids, o.gpu_ids);
  EXPECT_EQ(back->gpu_variable, o.gpu_variable);
  ASSERT_EQ(back->gpu_devices.size(), 2u);
  EXPECT_EQ(back->gpu_devices[1].uuid, "GPU-abc");
  EXPECT_EQ(back->gpu_devices[1].local_cores, g.local_cores);
  EXPECT_EQ(back->gpu_devices[1].numa_node, 1);
  EXPECT_EQ(back->memory_mb, 1024);

  for (const char* bad : {R"({"cores": 3})", R"({"cores": "0-x"})", R"({"gpu_ids": [1]})",
                          R"({"memory_mb": -1})", R"({"gpu_devices": [{"numa_node": "a"}]})",
                          R"([])"}) {
    auto r = offer_from_json(nlohmann::json::parse(bad));
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
  }
}

}  // namespace
}  // namespace berth::place
