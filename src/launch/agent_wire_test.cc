// The agents' wire (agent_wire.h): framing, base64, jobs and outcomes as JSON.
#include "launch/agent_wire.h"

#include <gtest/gtest.h>

#include <random>

namespace berth::launch::agent {
namespace {

TEST(AgentWire, EveryFramedLineFitsAndTheMessageComesBackWhole) {
  std::string message(5000, 'x');
  for (size_t k = 0; k < message.size(); ++k) message[k] = static_cast<char>('a' + k % 26);
  auto lines = frame("n12", message);
  ASSERT_GT(lines.size(), 5u);
  Unframer u;
  std::string got;
  for (size_t k = 0; k < lines.size(); ++k) {
    EXPECT_LE(lines[k].size(), kMaxLine);
    ASSERT_EQ(lines[k].back(), '\n');
    auto fed = u.feed(std::string_view(lines[k]).substr(0, lines[k].size() - 1));
    EXPECT_TRUE(fed.foreign.empty());
    EXPECT_TRUE(fed.problem.empty());
    if (k + 1 < lines.size()) {
      EXPECT_FALSE(fed.message);
    } else {
      ASSERT_TRUE(fed.message);
      EXPECT_EQ(fed.message->node, "n12");
      got = fed.message->text;
    }
  }
  EXPECT_EQ(got, message);
}

TEST(AgentWire, TwoNodesPartsInterleavedJoinPerNode) {
  auto a = frame("a", std::string(3000, 'A'));
  auto b = frame("b", std::string(2000, 'B'));
  Unframer u;
  std::map<std::string, std::string> got;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    for (auto* lines : {&a, &b}) {
      size_t& k = lines == &a ? i : j;
      if (k >= lines->size()) continue;
      std::string line = (*lines)[k++];
      line.pop_back();
      if (auto fed = u.feed(line); fed.message) got[fed.message->node] = fed.message->text;
    }
  }
  EXPECT_EQ(got["a"], std::string(3000, 'A'));
  EXPECT_EQ(got["b"], std::string(2000, 'B'));
}

TEST(AgentWire, ForeignAndBrokenLines) {
  Unframer u;
  auto f = u.feed("srun: warning: something");
  EXPECT_EQ(f.foreign, "srun: warning: something");
  EXPECT_FALSE(f.message);
  for (const char* bad : {"@berth1 ", "@berth1 n1", "@berth1 n1 * x", "@berth1 n1 +x", "@berth1  . x"}) {
    auto fed = u.feed(bad);
    EXPECT_FALSE(fed.problem.empty()) << bad;
    EXPECT_FALSE(fed.message) << bad;
  }
  auto empty = u.feed("@berth1 n1 . ");
  ASSERT_TRUE(empty.message);
  EXPECT_EQ(empty.message->text, "");
}

TEST(AgentWire, Base64RoundTripsAnyBytes) {
  std::mt19937 rng(7);
  for (size_t n : {0, 1, 2, 3, 4, 5, 100, 1001}) {
    std::string bytes(n, '\0');
    for (auto& c : bytes) c = static_cast<char>(rng());
    auto back = from_base64(to_base64(bytes));
    ASSERT_TRUE(back.ok()) << n;
    EXPECT_EQ(*back, bytes) << n;
  }
  EXPECT_EQ(to_base64("hi\n"), "aGkK");
  EXPECT_FALSE(from_base64("abc").ok());
  EXPECT_FALSE(from_base64("ab!d").ok());
}

TEST(AgentWire, AJobRoundTrips) {
  JobSpec job;
  AppSpec app;
  app.argv = {"sh", "-c", "echo 'a b'"};
  app.ranks = 2;
  app.env = {{EnvDirective::kSet, "X", "1", "", false},
             {EnvDirective::kPrepend, "PATH", "/opt/bin", ":", false},
             {EnvDirective::kUnset, "SLURM_", "", "", true}};
  app.cpu_set = std::vector<int>{2, 3};
  app.cwd = "/tmp/stage";
  app.read_only = {"/tmp/stage/in/a"};
  app.cpus_per_rank = 1;
  job.apps = {app};
  job.bind = BindTo::kCore;
  job.timeout = std::chrono::milliseconds(1500);
  job.grace = std::chrono::milliseconds(200);
  job.mpi = wireup::Mode::kPmix;
  job.node = "n3";
  job.gpus = {1, "CUDA_VISIBLE_DEVICES", {"0", "1"}, {{0, 1}, {2, 3}}};
  auto back = job_from_json(nlohmann::json::parse(job_to_json(job).dump()));
  ASSERT_TRUE(back.ok()) << back.error().message();
  ASSERT_EQ(back->apps.size(), 1u);
  const AppSpec& b = back->apps[0];
  EXPECT_EQ(b.argv, app.argv);
  EXPECT_EQ(b.ranks, 2);
  ASSERT_EQ(b.env.size(), 3u);
  EXPECT_EQ(b.env[1].kind, EnvDirective::kPrepend);
  EXPECT_EQ(b.env[1].separator, ":");
  EXPECT_TRUE(b.env[2].prefix);
  EXPECT_EQ(b.cpu_set, app.cpu_set);
  EXPECT_EQ(b.cwd, app.cwd);
  EXPECT_EQ(b.read_only, app.read_only);
  EXPECT_EQ(back->bind, BindTo::kCore);
  EXPECT_EQ(back->timeout, job.timeout);
  EXPECT_EQ(back->grace, job.grace);
  EXPECT_EQ(back->mpi, wireup::Mode::kPmix);
  EXPECT_EQ(back->node, "n3");
  EXPECT_EQ(back->gpus.per_rank, 1);
  EXPECT_EQ(back->gpus.ids, job.gpus.ids);
  EXPECT_EQ(back->gpus.local_cores, job.gpus.local_cores);
  // No timeout and no CPU set stay absent.
  job.timeout.reset();
  job.apps[0].cpu_set.reset();
  back = job_from_json(job_to_json(job));
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->timeout);
  EXPECT_FALSE(back->apps[0].cpu_set);
}

TEST(AgentWire, AMalformedJobIsRefusedNamingTheField) {
  for (const char* bad : {R"({})", R"({"apps": []})", R"({"apps": [{"argv": []}]})",
                          R"({"apps": [{"argv": ["a"], "ranks": 0}]})",
                          R"({"apps": [{"argv": ["a"], "cpu_set": [-1]}]})",
                          R"({"apps": [{"argv": ["a"], "env": [[9, "X", "", "", false]]}]})",
                          R"({"apps": [{"argv": ["a"]}], "bind": "socket"})",
                          R"({"apps": [{"argv": ["a"]}], "mpi": "pmi9"})",
                          R"({"apps": [{"argv": ["a"]}], "timeout_ms": "1"})"}) {
    auto r = job_from_json(nlohmann::json::parse(bad));
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) EXPECT_EQ(r.error().code(), Errc::kInvalidInput) << bad;
  }
}

TEST(AgentWire, AnOutcomeRoundTrips) {
  JobOutcome o;
  o.exit_code = 137;
  o.timed_out = true;
  o.messages = {"rank 0 killed by signal 9 (SIGKILL)"};
  RankOutcome r;
  r.rank = 0;
  r.pid = 42;
  r.started = true;
  ExitStatus st;
  st.kind = ExitStatus::kSignaled;
  st.signal = 9;
  r.status = st;
  o.ranks = {r};
  auto back = outcome_from_json(outcome_to_json(o));
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->exit_code, 137);
  EXPECT_TRUE(back->timed_out);
  EXPECT_EQ(back->messages, o.messages);
  ASSERT_EQ(back->ranks.size(), 1u);
  EXPECT_EQ(back->ranks[0].pid, 42);
  ASSERT_TRUE(back->ranks[0].status);
  EXPECT_EQ(back->ranks[0].status->exit_code(), 137);
  EXPECT_FALSE(outcome_from_json(nlohmann::json::parse(R"({"exit_code": 256})")).ok());
  EXPECT_FALSE(outcome_from_json(nlohmann::json::parse(R"({"ranks": [{"status": [1]}]})")).ok());
}

TEST(AgentWire, ParseMessageNamesWhere) {
  auto r = parse_message("{\"t\": ", "a request");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("a request: not JSON at byte"), std::string::npos)
      << r.error().message();
  EXPECT_FALSE(parse_message("[1]", "x").ok());
  EXPECT_TRUE(parse_message("{}", "x").ok());
}

}  // namespace
}  // namespace berth::launch::agent
