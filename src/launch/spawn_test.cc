// The real spawner against real processes: the tiny programs in tests/helpers, found
// through BERTH_HELPERS_DIR (set by ctest) or ../../helpers from this binary.
#include "launch/spawn.h"
#include "launch/status.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "launch/testing.h"

namespace berth::launch {
namespace {

using ::testing::HasSubstr;

using testing::count_open_fds;
using testing::helper;
using testing::helpers_dir;

// A fresh temporary directory, removed (with the files the test made) at the end.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/berth_spawn_test.XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() {
    for (const std::string& f : files_) unlink(f.c_str());
    for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) rmdir(it->c_str());
    rmdir(path_.c_str());
  }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name, const std::string& content, mode_t mode) {
    std::string p = path_ + "/" + name;
    std::ofstream(p) << content;
    chmod(p.c_str(), mode);
    files_.push_back(p);
    return p;
  }
  std::string dir(const std::string& name) {
    std::string p = path_ + "/" + name;
    mkdir(p.c_str(), 0755);
    dirs_.push_back(p);
    return p;
  }

 private:
  std::string path_;
  std::vector<std::string> files_;
  std::vector<std::string> dirs_;
};

class SpawnTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(access(helper("exit_n").c_str(), X_OK), 0)
        << "helpers not built at " << helpers_dir() << " (target berth_helpers)";
    ctx_.rank = 2;
    ctx_.node = "node1";
  }

  SpawnRequest request(std::vector<std::string> argv) {
    SpawnRequest r;
    r.argv = std::move(argv);
    r.envp = {"PATH=/usr/bin:/bin"};
    return r;
  }

  Result<Spawned> spawn(const SpawnRequest& r) {
    recorded_ = -1;
    ctx_.executable = r.argv.empty() ? "" : r.argv[0];
    return Spawner::real().spawn(r, ctx_, [this](pid_t pid) { recorded_ = pid; });
  }

  // Waits for the child; returns its exit code, or 128 + signal.
  static int wait_for(const Spawned& s) {
    int status = 0;
    EXPECT_EQ(waitpid(s.pid, &status, 0), s.pid);
    if (s.pidfd >= 0) close(s.pidfd);
    return decode_wait_status(status).exit_code();
  }

  // Runs `r` with stdout on a pipe; returns what it printed, and its exit code in *code.
  std::string run(SpawnRequest r, int* code = nullptr) {
    int p[2];
    EXPECT_EQ(pipe2(p, O_CLOEXEC), 0);
    r.stdout_fd = p[1];
    auto s = spawn(r);
    close(p[1]);
    if (!s.ok()) {
      close(p[0]);
      ADD_FAILURE() << s.error().message();
      return "";
    }
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = read(p[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    close(p[0]);
    int c = wait_for(*s);
    if (code != nullptr) *code = c;
    return out;
  }

  // Spawns `r`, which must fail; returns the error, after checking the child is reaped.
  Error spawn_error(const SpawnRequest& r) {
    auto s = spawn(r);
    EXPECT_FALSE(s.ok()) << "started pid " << (s.ok() ? s->pid : 0);
    if (s.ok()) {
      kill(s->pid, SIGKILL);
      wait_for(*s);
      return Error(Errc::kInternal, "");
    }
    if (recorded_ > 0) {
      errno = 0;
      EXPECT_EQ(waitpid(recorded_, nullptr, WNOHANG), -1) << "pid " << recorded_ << " not reaped";
      EXPECT_EQ(errno, ECHILD);
    }
    return s.error();
  }

  FailureContext ctx_;
  pid_t recorded_ = -1;
};

TEST_F(SpawnTest, ExitCodePassesThrough) {
  auto s = spawn(request({helper("exit_n"), "3"}));
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(wait_for(*s), 3);
}

TEST_F(SpawnTest, OnPidRecordsTheChildBeforeSpawnReturns) {
  auto s = spawn(request({helper("exit_n")}));
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_GT(s->pid, 0);
  EXPECT_EQ(recorded_, s->pid);
  wait_for(*s);
}

TEST_F(SpawnTest, StdoutIsWired) {
  SpawnRequest r = request({helper("print_env"), "GREETING"});
  r.envp.push_back("GREETING=hello");
  EXPECT_EQ(run(r), "hello\n");
}

TEST_F(SpawnTest, StdioDefaultsToDevNullAndStderrIsWired) {
  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
  SpawnRequest r = request({helper("sleep_s"), "10"});
  r.stdout_fd = p[1];
  r.stderr_fd = p[1];
  auto s = spawn(r);
  ASSERT_TRUE(s.ok()) << s.error().message();
  auto link = [](const std::string& path) {
    char buf[256];
    ssize_t n = readlink(path.c_str(), buf, sizeof buf);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  };
  std::string fd = "/proc/" + std::to_string(s->pid) + "/fd/";
  EXPECT_EQ(link(fd + "0"), "/dev/null");
  EXPECT_EQ(link(fd + "1"), link("/proc/self/fd/" + std::to_string(p[1])));
  EXPECT_EQ(link(fd + "2"), link("/proc/self/fd/" + std::to_string(p[1])));
  kill(s->pid, SIGKILL);
  wait_for(*s);
  close(p[0]);
  close(p[1]);
}

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

TEST_F(SpawnTest, StdioSourcesAmongZeroToTwoAreNotClobbered) {
  // stdout_fd = 2 and stderr_fd = 1: dup2 in a naive order would copy the child's new
  // stdout over its stderr. Our 1 and 2 are pipes for the moment so that we can see.
  int out[2], err[2];
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(err, O_CLOEXEC), 0);
  fflush(stdout);
  fflush(stderr);
  int saved1 = dup(1), saved2 = dup(2);
  dup2(out[1], 1);
  dup2(err[1], 2);
  SpawnRequest r = request({helper("count_fds"), "-v"});  // count to 1, the fds to 2
  r.stdout_fd = 2;
  r.stderr_fd = 1;
  auto s = spawn(r);
  dup2(saved1, 1);
  dup2(saved2, 2);
  close(saved1);
  close(saved2);
  close(out[1]);
  close(err[1]);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(read_all(err[0]), "3\n");        // the child's stdout went to our 2
  EXPECT_EQ(read_all(out[0]), "0\n1\n2\n");  // and its stderr to our 1
  close(out[0]);
  close(err[0]);
  EXPECT_EQ(wait_for(*s), 0);
}

TEST_F(SpawnTest, CwdIsApplied) {
  TempDir t;
  SpawnRequest r = request({helper("print_cwd")});
  r.cwd = t.path();
  EXPECT_EQ(run(r), t.path() + "\n");
}

TEST_F(SpawnTest, MissingCwdNamesTheDirectory) {
  SpawnRequest r = request({helper("exit_n")});
  r.cwd = "/nonexistent/berth-gone";
  Error e = spawn_error(r);
  EXPECT_EQ(e.code(), Errc::kNotFound);
  EXPECT_THAT(e.message(), HasSubstr("/nonexistent/berth-gone"));
  EXPECT_THAT(e.message(), HasSubstr("rank 2 on node1"));
}

TEST_F(SpawnTest, NotFoundNamesTheExecutableAndTheChildsPath) {
  SpawnRequest r = request({"berth-no-such-program"});
  r.envp = {"PATH=/child/only:/usr/bin"};
  Error e = spawn_error(r);
  EXPECT_EQ(e.code(), Errc::kNotFound);
  EXPECT_THAT(e.message(), HasSubstr("berth-no-such-program"));
  EXPECT_THAT(e.message(), HasSubstr("/child/only:/usr/bin"));
  EXPECT_EQ(recorded_, -1) << "no child is started for a name found nowhere";
}

TEST_F(SpawnTest, SearchesTheChildsPathNotBerths) {
  SpawnRequest r = request({"berth_helper_exit_n", "7"});
  r.envp = {"PATH=/nonexistent:" + helpers_dir()};
  auto s = spawn(r);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(wait_for(*s), 7);
}

TEST_F(SpawnTest, MissingAbsolutePathIsNotFound) {
  Error e = spawn_error(request({"/nonexistent/berth-prog"}));
  EXPECT_EQ(e.code(), Errc::kNotFound);
  EXPECT_THAT(e.message(), HasSubstr("/nonexistent/berth-prog"));
}

TEST_F(SpawnTest, DirectoryIsReported) {
  TempDir t;
  Error e = spawn_error(request({t.path()}));
  EXPECT_EQ(e.code(), Errc::kIo);
  EXPECT_THAT(e.message(), HasSubstr(t.path()));
  EXPECT_THAT(e.message(), HasSubstr("is a directory"));
}

TEST_F(SpawnTest, NonExecutableIsReported) {
  TempDir t;
  std::string f = t.file("data", "not a program\n", 0644);
  Error e = spawn_error(request({f}));
  EXPECT_EQ(e.code(), Errc::kIo);
  EXPECT_THAT(e.message(), HasSubstr(f));
  EXPECT_THAT(e.message(), HasSubstr("not executable"));
}

TEST_F(SpawnTest, BadInterpreterIsReported) {
  TempDir t;
  std::string f = t.file("script", "#!/nonexistent/interp\necho hi\n", 0755);
  Error e = spawn_error(request({f}));
  EXPECT_THAT(e.message(), HasSubstr(f));
  EXPECT_THAT(e.message(), HasSubstr("bad interpreter"));
}

TEST_F(SpawnTest, EmptyArgvIsRefusedWithoutAChild) {
  Error e = spawn_error(request({}));
  EXPECT_EQ(e.code(), Errc::kInvalidInput);
  EXPECT_EQ(recorded_, -1);
}

int first_allowed_cpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof set, &set);
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) return c;
  }
  return 0;
}

TEST_F(SpawnTest, AffinityIsApplied) {
  int cpu = first_allowed_cpu();
  SpawnRequest r = request({helper("print_affinity")});
  r.cpus = {cpu};
  EXPECT_EQ(run(r), std::to_string(cpu) + "\n");
}

TEST_F(SpawnTest, NoCpusInheritsBerthsAffinity) {
  std::string mine = run(request({helper("print_affinity")}));
  EXPECT_FALSE(mine.empty());
  SpawnRequest r = request({helper("print_affinity")});
  EXPECT_EQ(run(r), mine);
}

TEST_F(SpawnTest, BindingBeyondTheMachineIsRefused) {
  SpawnRequest r = request({helper("exit_n")});
  r.cpus = {4000};
  Error e = spawn_error(r);
  EXPECT_EQ(e.code(), Errc::kRefused);
  EXPECT_THAT(e.message(), HasSubstr("4000"));
  EXPECT_THAT(e.message(), HasSubstr("rank 2 on node1"));
}

TEST_F(SpawnTest, NegativeCpuIsInvalid) {
  SpawnRequest r = request({helper("exit_n")});
  r.cpus = {-1};
  EXPECT_EQ(spawn_error(r).code(), Errc::kInvalidInput);
}

TEST_F(SpawnTest, ChildLeadsItsOwnProcessGroup) {
  auto s = spawn(request({helper("sleep_s"), "10"}));
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(getpgid(s->pid), s->pid);
  EXPECT_NE(getpgid(s->pid), getpgrp());
  kill(-s->pid, SIGKILL);
  EXPECT_EQ(wait_for(*s), 128 + SIGKILL);
}

TEST_F(SpawnTest, PidfdRefersToTheChild) {
  auto s = spawn(request({helper("exit_n"), "5"}));
  ASSERT_TRUE(s.ok()) << s.error().message();
  ASSERT_GE(s->pidfd, 0) << "kernel 5.2+ gives a pidfd";
  EXPECT_EQ(fcntl(s->pidfd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  pollfd p{s->pidfd, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 5000), 1);  // readable once the child has exited
  EXPECT_EQ(wait_for(*s), 5);
}

TEST_F(SpawnTest, NoDescriptorLeaksIntoTheChild) {
  // Descriptors without close-on-exec, as a careless library in berth would leave them.
  int extra[3] = {open("/dev/null", O_RDONLY), open("/dev/null", O_RDONLY), dup(1)};
  int p[2];
  ASSERT_EQ(pipe(p), 0);  // not O_CLOEXEC either: the child's copy of p[0] must go
  SpawnRequest r = request({helper("count_fds")});
  r.stdout_fd = p[1];
  auto s = spawn(r);
  close(p[1]);
  ASSERT_TRUE(s.ok()) << s.error().message();
  char buf[32] = {};
  ASSERT_GT(read(p[0], buf, sizeof buf - 1), 0);
  EXPECT_STREQ(buf, "3\n");
  close(p[0]);
  for (int fd : extra) close(fd);
  wait_for(*s);
}

TEST_F(SpawnTest, PassedDescriptorsArriveAtThreeAndFourAndNothingElse) {
  // Two sockets passed; a stray descriptor without close-on-exec must still not leak.
  int stray = open("/dev/null", O_RDONLY);
  int a[2], b[2], err[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a), 0);
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, b), 0);
  ASSERT_EQ(pipe2(err, O_CLOEXEC), 0);
  SpawnRequest r = request({helper("count_fds"), "-v"});
  r.stderr_fd = err[1];
  r.pass_fds = {b[1], a[1]};  // in this order: b's end becomes 3, a's 4
  auto s = spawn(r);
  close(err[1]);
  ASSERT_TRUE(s.ok()) << s.error().message();
  std::string listed;
  char buf[64];
  ssize_t n;
  while ((n = read(err[0], buf, sizeof buf)) > 0) listed.append(buf, static_cast<size_t>(n));
  close(err[0]);
  EXPECT_EQ(listed, "0\n1\n2\n3\n4\n");
  EXPECT_EQ(wait_for(*s), 0);
  // The child held b[1] as its fd 3: after it exits the peer sees EOF, so the copies
  // were the passed ones and the child's are gone.
  close(a[1]);
  close(b[1]);
  EXPECT_EQ(read(b[0], buf, 1), 0);
  EXPECT_EQ(read(a[0], buf, 1), 0);
  for (int fd : {a[0], b[0], stray}) close(fd);
}

TEST_F(SpawnTest, TooManyPassedDescriptorsAreRefused) {
  SpawnRequest r = request({helper("exit_n")});
  r.pass_fds.assign(kMaxPassFds + 1, 1);
  auto s = spawn(r);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("descriptors to pass"), std::string::npos);
}

TEST_F(SpawnTest, NoDescriptorLeaksInTheParentAfter1000Spawns) {
  wait_for(*spawn(request({helper("exit_n")})));  // first use maps this thread's stack
  int before = count_open_fds();
  TempDir t;
  for (int i = 0; i < 1000; ++i) {
    SpawnRequest r = request({helper("exit_n")});
    if (i % 100 == 99) r.cwd = "/nonexistent";  // failures must not leak either
    auto s = spawn(r);
    if (s.ok()) {
      ASSERT_EQ(wait_for(*s), 0);
    }
  }
  EXPECT_EQ(count_open_fds(), before);
}

TEST_F(SpawnTest, NoZombiesAfterFailures) {
  SpawnRequest bad_cwd = request({helper("exit_n")});
  bad_cwd.cwd = "/nonexistent";
  SpawnRequest bad_cpu = request({helper("exit_n")});
  bad_cpu.cpus = {4000};
  for (const SpawnRequest& r : {bad_cwd, bad_cpu, request({"/nonexistent/x"})}) {
    EXPECT_FALSE(spawn(r).ok());
  }
  EXPECT_TRUE(testing::children_left().empty()) << "a failed child was left unreaped";
}

TEST_F(SpawnTest, EnvironmentIsPassedExactly) {
  SpawnRequest r = request({helper("print_env")});
  r.envp = {"B=2", "A=one two", "EMPTY=", "PATHEXT=.x"};
  EXPECT_EQ(run(r), "B=2\nA=one two\nEMPTY=\nPATHEXT=.x\n");
}

TEST_F(SpawnTest, ArgvIsPassedExactly) {
  SpawnRequest r = request({helper("print_env"), "V"});
  r.envp = {"V=x y"};
  EXPECT_EQ(run(r), "x y\n");
  int code = -1;
  run(request({helper("exit_n"), "42", "ignored"}), &code);
  EXPECT_EQ(code, 42);
}

TEST_F(SpawnTest, LimitsAreApplied) {
  SpawnRequest r = request({helper("print_rlimit"), "nofile"});
  r.limits = {{RLIMIT_NOFILE, rlimit{64, 64}}, {RLIMIT_CORE, rlimit{0, 0}}};
  EXPECT_EQ(run(r), "64 64\n");
  r.argv = {helper("print_rlimit"), "core"};
  EXPECT_EQ(run(r), "0 0\n");
}

TEST_F(SpawnTest, RefusedLimitIsReported) {
  // RLIMIT_NOFILE can never be unlimited (it is capped by fs.nr_open), root or not.
  SpawnRequest r = request({helper("exit_n")});
  r.limits = {{RLIMIT_NOFILE, rlimit{RLIM_INFINITY, RLIM_INFINITY}}};
  EXPECT_EQ(spawn_error(r).code(), Errc::kIo);
}

// "SigIgn:" and "SigBlk:" of a running process, from /proc.
std::string signal_lines(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line, out;
  while (std::getline(f, line)) {
    if (line.rfind("SigIgn:", 0) == 0 || line.rfind("SigBlk:", 0) == 0) out += line + "\n";
  }
  return out;
}

TEST_F(SpawnTest, SignalDispositionsAndMaskAreReset) {
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  struct sigaction old_pipe {};
  struct sigaction old_usr1 {};
  sigaction(SIGPIPE, &ign, &old_pipe);
  sigaction(SIGUSR1, &ign, &old_usr1);
  sigset_t block, old_mask;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR2);
  sigaddset(&block, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &block, &old_mask);

  auto s = spawn(request({helper("sleep_s"), "10"}));

  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  sigaction(SIGPIPE, &old_pipe, nullptr);
  sigaction(SIGUSR1, &old_usr1, nullptr);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(signal_lines(s->pid), "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
  kill(s->pid, SIGTERM);  // default action again: it dies of it
  EXPECT_EQ(wait_for(*s), 128 + SIGTERM);
}

TEST_F(SpawnTest, RefusedDefaultMemPolicyIsSilentAndAnAskedOneIsNot) {
  SpawnRequest r = request({helper("exit_n")});
  r.mempolicy = 12345;  // no such mode: every kernel refuses it
  r.mempolicy_default = true;
  auto s = spawn(r);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(wait_for(*s), 0);
  r.mempolicy_default = false;
  EXPECT_EQ(spawn_error(r).code(), Errc::kRefused);
}

TEST_F(SpawnTest, ConcurrentSpawnsFromSeveralThreadsAllSucceed) {
  constexpr int kThreads = 4, kEach = 50;
  std::vector<int> ok(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        SpawnRequest r;
        r.argv = {helper("exit_n"), std::to_string(t)};
        auto s = Spawner::real().spawn(r, ctx_, nullptr);
        if (!s.ok()) continue;
        int status = 0;
        waitpid(s->pid, &status, 0);
        close(s->pidfd);
        ExitStatus st = decode_wait_status(status);
        if (st.kind == ExitStatus::kExited && st.code == t) ++ok[static_cast<size_t>(t)];
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(ok[static_cast<size_t>(t)], kEach) << t;
}

// search_path, as a table.
TEST(SearchPath, ResolvesAsExecvpWouldOnTheGivenPath) {
  TempDir t;
  std::string a = t.dir("a"), b = t.dir("b");
  t.file("a/prog", "", 0644);  // not executable: skipped
  std::string exe = t.file("b/prog", "", 0755);
  t.dir("a/sub");
  t.file("b/other", "", 0755);
  struct Case {
    std::string name, path, want;
  } cases[] = {
      {"prog", a + ":" + b, exe},
      {"prog", b + ":" + a, exe},
      {"prog", a, ""},
      {"sub", a + ":" + b, ""},  // a directory is not an executable
      {"other", "/nonexistent::" + b, b + "/other"},
      {"/abs/anything", "", "/abs/anything"},  // a '/' means no search
      {"rel/x", a, "rel/x"},
      {"prog", "", ""},
      {"", a + ":" + b, ""},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(search_path(c.name, c.path), c.want) << c.name << " on " << c.path;
  }
}

}  // namespace
}  // namespace berth::launch
