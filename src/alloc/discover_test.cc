#include "alloc/discover.h"

#include <gtest/gtest.h>

#include "alloc/display.h"

namespace berth::alloc {
namespace {

LocalHost here() {
  LocalHost h;
  h.hostname = "login1.example.org";
  h.aliases = {"localhost", "127.0.0.1"};
  h.usable_cores = 6;
  return h;
}

Env slurm_env(const char* nodelist = "n[1-4]", const char* tasks = "4(x4)") {
  Env e;
  e.set("SLURM_JOB_ID", "77");
  e.set("SLURM_JOB_NODELIST", nodelist);
  e.set("SLURM_TASKS_PER_NODE", tasks);
  e.set("SLURM_JOB_CPUS_PER_NODE", "8(x4)");
  return e;
}

Result<Allocation> run(const Env& env, const Options& o = {}) {
  LocalHost h = here();
  return discover(Input{env, o, h});
}

TEST(Discover, SourcesAreAskedInPriorityOrder) {
  std::vector<std::string> names;
  int last = 1 << 30;
  for (const auto& s : sources()) {
    names.push_back(s.name);
    EXPECT_LE(s.priority, last) << s.name;
    last = s.priority;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"simulator", "pbs", "gridengine", "flux", "lsf",
                                             "slurm", "hosts"}));
}

TEST(Discover, NothingPresentFallsBackToLocalHostWithCoresNotGiven) {
  auto a = run(Env{});
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_EQ(a->owner, "hosts");
  EXPECT_FALSE(a->scheduler_owned);
  ASSERT_EQ(a->nodes.size(), 1u);
  EXPECT_EQ(a->nodes[0].name, "login1");
  EXPECT_EQ(a->nodes[0].rawname, "login1.example.org");
  EXPECT_TRUE(a->nodes[0].local);
  EXPECT_EQ(a->nodes[0].slots, 6);
  EXPECT_FALSE(a->nodes[0].slots_given);
}

TEST(Discover, SlurmOwnsItsJobWithSlotsGiven) {
  auto a = run(slurm_env("n[1-3]", "2(x2),1"));
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_EQ(a->owner, "slurm");
  EXPECT_TRUE(a->scheduler_owned);
  EXPECT_EQ(a->job_id, "77");
  EXPECT_EQ(a->total_slots, 5);
  EXPECT_TRUE(a->nodes[2].slots_given);
}

TEST(Discover, SlurmCpusPerNodeIsSelectable) {
  Options o;
  o.slurm_slots = SlurmSlots::kCpus;
  auto a = run(slurm_env(), o);
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_EQ(a->total_slots, 32);
}

// Inside a job step over part of the job (salloc -N4 -n8, then srun -N2 -n2), as the
// real Slurm sets it: the step's nodes and counts, never the job's list with the step's
// counts.
Env step_env() {
  Env e = slurm_env("n[1-4]", "1(x2)");
  e.set("SLURM_NODELIST", "n[1-4]");
  e.set("SLURM_STEP_ID", "0");
  e.set("SLURM_STEP_NODELIST", "n[1-2]");
  e.set("SLURM_STEP_TASKS_PER_NODE", "1(x2)");
  return e;
}

TEST(Discover, SlurmInsideAStepIsTheStepsAllocation) {
  auto a = run(step_env());
  ASSERT_TRUE(a.ok()) << a.error().message();
  ASSERT_EQ(a->nodes.size(), 2u);
  EXPECT_EQ(a->nodes[0].name, "n1");
  EXPECT_EQ(a->nodes[1].name, "n2");
  EXPECT_EQ(a->total_slots, 2);
  // And says so: berth alloc inside the step names it, and what its slots are.
  EXPECT_EQ(a->job_step, "0");
  EXPECT_NE(to_text(*a).find("job 77 step 0, 2 node(s), 2 slot(s) (the step's nodes"),
            std::string::npos)
      << to_text(*a);
  EXPECT_NE(to_json(*a).find("\"job_step\": \"0\""), std::string::npos);
  // Outside a step nothing is said of one.
  auto job = run(slurm_env());
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->job_step, "");
  EXPECT_EQ(to_json(*job).find("job_step"), std::string::npos);
}

TEST(Discover, SlurmStepSlotsAreTheCpusItGave) {
  Env e = step_env();
  e.set("SLURM_STEP_TASKS_PER_NODE", "2,1");
  e.set("SLURM_CPUS_PER_TASK", "2");
  Options o;
  o.slurm_slots = SlurmSlots::kCpus;
  auto a = run(e, o);
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_EQ(a->nodes[0].slots, 4);
  EXPECT_EQ(a->nodes[1].slots, 2);
  // Without the option too: a worker in a step runs on the CPUs srun gave its task.
  auto t = run(e);
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->total_slots, 6);
}

TEST(Discover, SlurmStepErrorsNameTheStepVariable) {
  Env e = step_env();
  e.set("SLURM_STEP_TASKS_PER_NODE", "1(x3)");
  auto a = run(e);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message().find("SLURM_STEP_TASKS_PER_NODE"), std::string::npos)
      << a.error().message();
  Env c = step_env();
  c.set("SLURM_CPUS_PER_TASK", "two");
  auto b = run(c);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message().find("SLURM_CPUS_PER_TASK"), std::string::npos);
  Env d = step_env();
  d.set("SLURM_STEP_ID", "0;rm");
  auto id = run(d);
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.error().message().find("SLURM_STEP_ID: '0;rm' is not a Slurm step id"),
            std::string::npos);
}

TEST(Discover, SlurmFallsBackToOldNodelistName) {
  Env e;
  e.set("SLURM_JOBID", "5");
  e.set("SLURM_NODELIST", "a,b");
  e.set("SLURM_TASKS_PER_NODE", "1(x2)");
  auto a = run(e);
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_EQ(a->nodes.size(), 2u);
}

TEST(Discover, SlurmNodelistWithoutJobIdIsNotSlurms) {
  Env e;
  e.set("SLURM_NODELIST", "a,b");
  auto a = run(e);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->owner, "hosts");
}

TEST(Discover, SlurmErrorsNameTheVariable) {
  struct Case {
    const char* list;
    const char* tasks;
    const char* needle;
  } cases[] = {
      {"", "1", "SLURM_JOB_NODELIST"},
      {"n[1-", "1", "SLURM_JOB_NODELIST"},
      {"n[1-2]", "2(x", "SLURM_TASKS_PER_NODE"},
      {"n[1-3]", "1(x2)", "SLURM_TASKS_PER_NODE"},
      {"n[1-2]", "1(x3)", "SLURM_TASKS_PER_NODE"},
  };
  for (const auto& c : cases) {
    auto a = run(slurm_env(c.list, c.tasks));
    ASSERT_FALSE(a.ok()) << c.list << " " << c.tasks;
    EXPECT_EQ(a.error().code(), Errc::kInvalidInput);
    EXPECT_NE(a.error().message().find(c.needle), std::string::npos) << a.error().message();
  }
}

TEST(Discover, SlurmJobIdIsValidated) {
  Env e = slurm_env();
  e.set("SLURM_JOB_ID", "12a");
  auto a = run(e);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message().find("SLURM_JOB_ID"), std::string::npos);
}

TEST(Discover, SimulatorPreemptsEverything) {
  Options o;
  o.simulate = "2x3";
  auto a = run(slurm_env(), o);
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_EQ(a->owner, "simulator");
  EXPECT_EQ(a->total_slots, 6);
}

TEST(Discover, MultiplierCopiesEveryNodeUnderDistinctNames) {
  Options o;
  o.multiplier = 3;
  auto a = run(slurm_env("n[1-2]", "2(x2)"), o);
  ASSERT_TRUE(a.ok()) << a.error().message();
  ASSERT_EQ(a->nodes.size(), 6u);
  EXPECT_EQ(a->nodes[1].name, "n1-x1");
  EXPECT_EQ(a->total_slots, 12);
  o.multiplier = 0;
  EXPECT_FALSE(run(slurm_env(), o).ok());
}

// An allocation multiplied past 10^7 nodes is refused, naming the figures, before any
// node is made: a multiplier of 10^14 used to ask for room for 2 x 10^14 nodes at once
// (the process aborted), and 2 x 10^7 took a minute and 12 GB.
TEST(Discover, MultiplierPastTenMillionNodesIsRefused) {
  Options o;
  o.multiplier = 100'000'000'000'000;
  auto a = run(slurm_env("n[1-2]", "2(x2)"), o);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().code(), Errc::kInvalidInput);
  EXPECT_NE(a.error().message().find("--multiplier: 100000000000000 copies of the slurm "
                                     "allocation's 2 node(s) are more than 10000000 nodes"),
            std::string::npos)
      << a.error().message();
  o.multiplier = 5'000'001;
  EXPECT_FALSE(run(slurm_env("n[1-2]", "2(x2)"), o).ok());
  o.multiplier = 5;
  EXPECT_TRUE(run(slurm_env("n[1-2]", "2(x2)"), o).ok());
}

// Slurm's node list is expanded into the table as it is read: a name the list repeats
// is still one node, with the first count, and order and indices are the list's.
TEST(Discover, SlurmNodeListRepeatsAreOneNode) {
  auto a = run(slurm_env("n[1-3],n2,m.x.org,m", "1,2,3,4,5,6"));
  ASSERT_TRUE(a.ok()) << a.error().message();
  ASSERT_EQ(a->nodes.size(), 4u);
  EXPECT_EQ(a->nodes[1].name, "n2");
  EXPECT_EQ(a->nodes[1].slots, 2);
  EXPECT_EQ(a->nodes[3].name, "m");
  EXPECT_EQ(a->nodes[3].rawname, "m.x.org");
  EXPECT_EQ(a->nodes[3].slots, 5);
  EXPECT_EQ(a->total_slots, 1 + 2 + 3 + 5);
}

TEST(Discover, FoundListedHandsOverItsNodesInOrderEachTime) {
  NodeSpec a;
  a.name = "a";
  a.slots = 2;
  NodeSpec b;
  b.name = "b";
  b.aliases = {"b.x"};
  Found f = Found::listed({a, b}, "9");
  EXPECT_EQ(f.job_id, "9");
  EXPECT_EQ(f.count, 2u);
  for (int round = 0; round < 2; ++round) {
    std::vector<NodeSpec> got = f.nodes();
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].name, "a");
    EXPECT_EQ(got[0].slots, 2);
    EXPECT_EQ(got[1].aliases, std::vector<std::string>{"b.x"});
  }
  EXPECT_TRUE(Found{}.nodes().empty());
}

TEST(Discover, HostFilterSelectsAndKeepsIndices) {
  Options o;
  o.hosts = {"n2,n4:1"};
  auto a = run(slurm_env(), o);
  ASSERT_TRUE(a.ok()) << a.error().message();
  ASSERT_EQ(a->nodes.size(), 4u);
  EXPECT_EQ(a->nodes[0].state, NodeState::kNotIncluded);
  EXPECT_EQ(a->nodes[1].state, NodeState::kUp);
  EXPECT_EQ(a->nodes[3].slots, 1);
  EXPECT_EQ(a->total_slots, 5);
  EXPECT_EQ(a->up_nodes().size(), 2u);
}

TEST(Discover, HostFilterNamingAnOutsideNodeIsRefusedNamingIt) {
  Options o;
  o.hosts = {"n1,ghost"};
  auto a = run(slurm_env(), o);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().code(), Errc::kRefused);
  EXPECT_NE(a.error().message().find("'ghost'"), std::string::npos) << a.error().message();
}

TEST(Discover, HostFilterCannotRaiseSlots) {
  Options o;
  o.hosts = {"n1:5"};
  auto a = run(slurm_env(), o);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message().find("asks for 5 slots"), std::string::npos);
}

TEST(Discover, RelativeHostSyntaxFiltersByIndex) {
  Options o;
  o.hosts = {"+n1,+n3"};
  auto a = run(slurm_env(), o);
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_EQ(a->up_nodes().size(), 2u);
  EXPECT_EQ(a->up_nodes()[0]->name, "n2");
  o.hosts = {"+e:2"};
  a = run(slurm_env(), o);
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_EQ(a->total_slots, 8);
  o.hosts = {"+n4"};
  EXPECT_FALSE(run(slurm_env(), o).ok());
}

TEST(Discover, LocalHostInAllocationIsMarkedLocal) {
  auto a = run(slurm_env("login1,n2", "1(x2)"));
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_TRUE(a->nodes[0].local);
  EXPECT_FALSE(a->nodes[1].local);
}

TEST(Display, JsonCarriesThePinnedFields) {
  auto a = run(slurm_env("n[1-2]", "3,1"));
  ASSERT_TRUE(a.ok());
  std::string j = to_json(*a);
  for (const char* key : {"\"owner\": \"slurm\"", "\"scheduler_owned\": true",
                          "\"total_slots\": 4", "\"index\": 1", "\"rawname\": \"n2\"",
                          "\"aliases\": []", "\"slots_max\": 0", "\"slots_given\": true",
                          "\"state\": \"up\""}) {
    EXPECT_NE(j.find(key), std::string::npos) << key << "\n" << j;
  }
}

TEST(Display, XmlEscapesAttributeValues) {
  Allocation a;
  a.owner = "hosts";
  Node n;
  n.name = "a<b>&\"c'";
  n.rawname = n.name;
  a.nodes.push_back(n);
  std::string x = to_xml(a);
  EXPECT_NE(x.find("name=\"a&lt;b&gt;&amp;&quot;c&apos;\""), std::string::npos) << x;
}

}  // namespace
}  // namespace berth::alloc
