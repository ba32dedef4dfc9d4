// Agents (agents.h) against real launcher processes: small shell scripts that play an
// agent's part on the wire, so that every way an agent is lost is seen as the run sees
// it. The real agent, through real srun and qrsh, is tests/e2e/run_agents_*_test.sh.
#include "launch/agents.h"

#include <gtest/gtest.h>

#include <chrono>

namespace berth::launch {
namespace {

using std::chrono::milliseconds;

constexpr const char* kHello = R"(printf '@berth1 n1 . {"t":"hello","offer":{}}\n'; )";

AgentsOptions one(const std::string& script, milliseconds hello = milliseconds(5000),
                  milliseconds silence = milliseconds(5000)) {
  AgentsOptions o;
  o.channels.push_back({{"sh", "-c", script}, {"n1"}, nullptr});
  o.env.set("PATH", "/usr/bin:/bin");
  o.hello_within = hello;
  o.silence = silence;
  return o;
}

JobSpec a_job() {
  JobSpec job;
  AppSpec app;
  app.argv = {"true"};
  job.apps = {app};
  return job;
}

TEST(Agents, ARunJobComesBackWithItsOutputAndOutcome) {
  // The agent reads the run's environment, then the job; prints, exits 3.
  std::string script = std::string(kHello) +
                       R"(read env; read job; )"
                       R"(printf '@berth1 n1 . {"t":"out","id":1,"b64":"aGkK"}\n'; )"
                       R"(printf '@berth1 n1 . {"t":"exit","id":1,"outcome":{"exit_code":3}}\n'; )"
                       R"(cat >/dev/null)";
  auto agents = Agents::start(one(script));
  agents->wait_started();
  ASSERT_TRUE(agents->serves("n1"));
  EXPECT_EQ(agents->ready().count("n1"), 1u);
  std::string out;
  OutputSinks sinks;
  sinks.out = [&out](std::string_view t) { out.append(t); };
  auto r = agents->run("n1", a_job(), sinks);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(out, "hi\n");
}

TEST(Agents, ALauncherThatEndsLosesItsNodes) {
  auto agents = Agents::start(one("echo 'no such node' >&2; exit 3"));
  agents->wait_started();
  EXPECT_FALSE(agents->serves("n1"));
  auto lost = agents->lost();
  ASSERT_EQ(lost.count("n1"), 1u);
  EXPECT_NE(lost["n1"].find("its launcher ended"), std::string::npos) << lost["n1"];
  EXPECT_NE(lost["n1"].find("no such node"), std::string::npos) << lost["n1"];
  auto r = agents->run("n1", a_job(), OutputSinks{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Errc::kUnavailable);
}

TEST(Agents, AnAgentThatNeverSaysHelloIsLostAtItsDeadline) {
  auto t0 = std::chrono::steady_clock::now();
  auto agents = Agents::start(one("cat >/dev/null", milliseconds(300)));
  agents->wait_started();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  auto lost = agents->lost();
  ASSERT_EQ(lost.count("n1"), 1u);
  EXPECT_NE(lost["n1"].find("did not start within"), std::string::npos) << lost["n1"];
}

TEST(Agents, AJobOnAnAgentThatDiesFailsAsLost) {
  std::vector<std::string> said;
  auto o = one(std::string(kHello) + "read env; read job; exit 0");
  o.say = [&said](std::string_view m) { said.emplace_back(m); };
  auto agents = Agents::start(std::move(o));
  agents->wait_started();
  auto r = agents->run("n1", a_job(), OutputSinks{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Errc::kUnavailable);
  EXPECT_NE(r.error().message().find("the agent on 'n1' was lost"), std::string::npos)
      << r.error().message();
  ASSERT_EQ(said.size(), 1u);  // said once, when it happened
}

TEST(Agents, AnAgentGoneSilentIsLost) {
  auto agents =
      Agents::start(one(std::string(kHello) + "cat >/dev/null", milliseconds(5000), milliseconds(400)));
  agents->wait_started();
  auto r = agents->run("n1", a_job(), OutputSinks{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Errc::kUnavailable);
  EXPECT_NE(r.error().message().find("nothing heard from it"), std::string::npos)
      << r.error().message();
}

TEST(Agents, ALauncherLineSayingATaskEndedLosesThatNodeAtOnce) {
  AgentsOptions o;
  o.channels.push_back({{"sh", "-c",
                         std::string(kHello) +
                             R"(printf '@berth1 n2 . {"t":"hello","offer":{}}\n'; read a; read b; )"
                             R"(echo 'srun: error: n2: task 1: Killed' >&2; cat >/dev/null)"},
                        {"n1", "n2"},
                        [](std::string_view line) {
                          return std::string(line.find("n2: task") != std::string_view::npos ? "n2" : "");
                        }});
  o.env.set("PATH", "/usr/bin:/bin");
  auto agents = Agents::start(std::move(o));
  agents->wait_started();
  for (int k = 0; k < 100 && agents->serves("n2"); ++k) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_FALSE(agents->serves("n2"));
  EXPECT_TRUE(agents->serves("n1"));
}

}  // namespace
}  // namespace berth::launch
