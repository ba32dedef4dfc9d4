// Commands started side by side (process_set.h): each reaped as it ends with its own
// status, what a command left running ended with it, a command that cannot start named,
// and ending the set ends everything.
#include "launch/process_set.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <set>
#include <string>

#include "launch/spawn.h"

namespace berth::launch {
namespace {

SpawnRequest sh(const std::string& script) {
  SpawnRequest r;
  r.argv = {"/bin/sh", "-c", script};
  r.envp = {"PATH=/usr/bin:/bin"};
  return r;
}

bool alive(pid_t pid) { return ::kill(pid, 0) == 0; }

TEST(ProcessSet, EachCommandEndsWithItsOwnStatusAsItEnds) {
  ProcessSet set;
  ASSERT_TRUE(set.start(sh("sleep 0.3; exit 3"), 7).ok());
  ASSERT_TRUE(set.start(sh("exit 5"), 9).ok());
  auto first = set.wait_one();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->tag, 9u);
  EXPECT_EQ(first->status.exit_code(), 5);
  auto second = set.wait_one();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->tag, 7u);
  EXPECT_EQ(second->status.exit_code(), 3);
  EXPECT_TRUE(set.empty());
  EXPECT_FALSE(set.wait_one());
  EXPECT_EQ(set.signalled(), 0);
}

TEST(ProcessSet, WhatACommandLeftRunningEndsWithIt) {
  char dir[] = "/tmp/berth-process-set.XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string pidfile = std::string(dir) + "/pid";
  ProcessSet set;
  // The command starts a sleeper in its own group and exits at once.
  ASSERT_TRUE(set.start(sh("sleep 30 & echo $! > " + pidfile + "; exit 0"), 1).ok());
  auto ended = set.wait_one();
  ASSERT_TRUE(ended);
  EXPECT_TRUE(ended->status.ok());
  pid_t sleeper = 0;
  std::ifstream(pidfile) >> sleeper;
  ASSERT_GT(sleeper, 0);
  // Sent SIGKILL with its group; it is a child of the shell's, reaped by init.
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (alive(sleeper) && std::chrono::steady_clock::now() < until) ::usleep(10000);
  EXPECT_FALSE(alive(sleeper));
  std::remove(pidfile.c_str());
  ::rmdir(dir);
}

TEST(ProcessSet, ACommandThatCannotStartIsNamed) {
  ProcessSet set;
  SpawnRequest r;
  r.argv = {"/nonexistent/berth-no-such-program", "x"};
  auto started = set.start(r, 1);
  ASSERT_FALSE(started.ok());
  EXPECT_NE(started.error().message().find("cannot start '/nonexistent/berth-no-such-program x'"),
            std::string::npos)
      << started.error().message();
  EXPECT_TRUE(set.empty());
}

TEST(ProcessSet, EndingTheSetEndsEveryCommand) {
  char dir[] = "/tmp/berth-process-set.XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string d(dir);
  ProcessSet set;
  ASSERT_TRUE(set.start(sh("echo $$ > " + d + "/a; exec sleep 30"), 1).ok());
  // This one ignores SIGTERM: only the escalation's SIGKILL ends it.
  ASSERT_TRUE(set.start(sh("trap '' TERM; echo $$ > " + d + "/b; sleep 30"), 2).ok());
  pid_t a = 0, b = 0;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((a == 0 || b == 0) && std::chrono::steady_clock::now() < until) {
    std::ifstream(d + "/a") >> a;
    std::ifstream(d + "/b") >> b;
    ::usleep(10000);
  }
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  set.end_all();
  EXPECT_TRUE(set.empty());
  EXPECT_FALSE(alive(a));  // reaped: no such process
  EXPECT_FALSE(alive(b));
  std::remove((d + "/a").c_str());
  std::remove((d + "/b").c_str());
  ::rmdir(dir);
}

}  // namespace
}  // namespace berth::launch
