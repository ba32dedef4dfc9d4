#include "launch/failure.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

namespace berth::launch {
namespace {

// A scratch directory with one file for each way an exec can fail.
class FailureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/berth-failure-XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
    ASSERT_EQ(mkdir((dir_ + "/adir").c_str(), 0755), 0);
    write(dir_ + "/plain", "just text\n", 0644);
    write(dir_ + "/badinterp", "#!/nonexistent/interp -x\necho hi\n", 0755);
    write(dir_ + "/spaced", "#!   /nonexistent/spaced\n", 0755);
    write(dir_ + "/interp_noexec", "#!" + dir_ + "/plain\n", 0755);
    write(dir_ + "/garbage",
          std::string("\x7f"
                      "ELX not really\n"),
          0755);
  }
  void TearDown() override {
    for (const char* f : {"plain", "badinterp", "spaced", "interp_noexec", "garbage"}) {
      unlink((dir_ + "/" + f).c_str());
    }
    rmdir((dir_ + "/adir").c_str());
    rmdir(dir_.c_str());
  }

  static void write(const std::string& path, const std::string& text, mode_t mode) {
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    ASSERT_GE(fd, 0) << path;
    ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ASSERT_EQ(fchmod(fd, mode), 0);  // past the umask
    close(fd);
  }

  // The errno execve really gives for `path`, from a child: the messages below are
  // keyed on errno, so the test checks that the kernel says what they assume.
  static int exec_errno(const std::string& path) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
      char* argv[] = {const_cast<char*>(path.c_str()), nullptr};
      char* envp[] = {nullptr};
      execve(path.c_str(), argv, envp);
      int err = errno;
      (void)!::write(fds[1], &err, sizeof err);
      _exit(127);
    }
    close(fds[1]);
    int err = 0;
    ssize_t n = read(fds[0], &err, sizeof err);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return n == sizeof err ? err : 0;  // 0: exec succeeded
  }

  FailureContext ctx(const std::string& exe, const std::string& resolved = "") const {
    FailureContext c;
    c.rank = 2;
    c.node = "node1";
    c.executable = exe;
    c.resolved = resolved;
    return c;
  }

  std::string dir_;
};

TEST_F(FailureTest, ExecErrnosAreWhatTheMessagesAssume) {
  EXPECT_EQ(exec_errno(dir_ + "/adir"), EACCES);
  EXPECT_EQ(exec_errno(dir_ + "/plain"), EACCES);
  EXPECT_EQ(exec_errno(dir_ + "/badinterp"), ENOENT);
  EXPECT_EQ(exec_errno(dir_ + "/missing"), ENOENT);
  EXPECT_EQ(exec_errno(dir_ + "/garbage"), ENOEXEC);
  EXPECT_EQ(exec_errno(dir_ + "/interp_noexec"), EACCES);
}

TEST_F(FailureTest, RendersExecFailures) {
  const std::string d = dir_;
  struct Case {
    const char* what;
    FailureContext c;
    int err;  // 0: the errno execve really gives for c.resolved (or c.executable)
    std::string path_env;
    std::string want;
  };
  std::vector<Case> cases = {
      {"not on PATH", ctx("nosuchprog"), ENOENT, "/usr/bin:/bin",
       "rank 2 on node1: executable 'nosuchprog' not found on the child's PATH "
       "(/usr/bin:/bin)"},
      {"not on an empty PATH", ctx("nosuchprog"), ENOENT, "",
       "rank 2 on node1: executable 'nosuchprog' not found on the child's PATH "
       "(PATH is empty)"},
      {"absolute, missing", ctx(d + "/missing", d + "/missing"), 0, "/bin",
       "rank 2 on node1: executable '" + d + "/missing' does not exist"},
      {"absolute, missing, not resolved", ctx(d + "/missing"), ENOENT, "/bin",
       "rank 2 on node1: executable '" + d + "/missing' does not exist"},
      {"directory", ctx(d + "/adir", d + "/adir"), 0, "/bin",
       "rank 2 on node1: executable '" + d + "/adir' is a directory"},
      {"directory found on PATH", ctx("adir", d + "/adir"), EACCES, d,
       "rank 2 on node1: executable 'adir' (" + d + "/adir) is a directory"},
      {"not executable", ctx(d + "/plain", d + "/plain"), 0, "/bin",
       "rank 2 on node1: executable '" + d + "/plain' is not executable: Permission denied"},
      {"bad interpreter", ctx(d + "/badinterp", d + "/badinterp"), 0, "/bin",
       "rank 2 on node1: executable '" + d +
           "/badinterp' has a bad interpreter "
           "('#!/nonexistent/interp' in " +
           d + "/badinterp)"},
      {"bad interpreter after blanks", ctx(d + "/spaced", d + "/spaced"), ENOENT, "/bin",
       "rank 2 on node1: executable '" + d +
           "/spaced' has a bad interpreter "
           "('#!/nonexistent/spaced' in " +
           d + "/spaced)"},
      {"interpreter not executable", ctx(d + "/interp_noexec", d + "/interp_noexec"), 0, "/bin",
       "rank 2 on node1: executable '" + d + "/interp_noexec' has a bad interpreter ('#!" + d +
           "/plain' in " + d + "/interp_noexec is not executable)"},
      {"not an executable format", ctx(d + "/garbage", d + "/garbage"), 0, "/bin",
       "rank 2 on node1: executable '" + d + "/garbage' is not an executable format"},
      {"exists, ENOENT, no shebang", ctx(d + "/garbage", d + "/garbage"), ENOENT, "/bin",
       "rank 2 on node1: executable '" + d +
           "/garbage' could not be run: No such file or "
           "directory (is its dynamic loader missing?)"},
      {"other errno", ctx("big", "/usr/bin/big"), E2BIG, "/bin",
       "rank 2 on node1: executable 'big' (/usr/bin/big): execve: Argument list too long"},
      {"newline in the name stays on one line", ctx("a\nb"), ENOENT, "/bin",
       "rank 2 on node1: executable 'a\\x0ab' not found on the child's PATH (/bin)"},
  };
  for (Case& c : cases) {
    SCOPED_TRACE(c.what);
    int err = c.err;
    if (err == 0) err = exec_errno(c.c.resolved.empty() ? c.c.executable : c.c.resolved);
    EXPECT_EQ(render_failure({SpawnStage::kExec, err}, c.c, c.path_env), c.want);
  }
}

TEST_F(FailureTest, InspectsRelativePathsFromTheChildsWorkingDirectory) {
  // The child chdirs before it execs: "./badinterp" is the one in its cwd, not in
  // berth's.
  FailureContext c = ctx("./badinterp", "./badinterp");
  c.cwd = dir_;
  EXPECT_EQ(render_failure({SpawnStage::kExec, ENOENT}, c, "/bin"),
            "rank 2 on node1: executable './badinterp' has a bad interpreter "
            "('#!/nonexistent/interp' in " +
                dir_ + "/./badinterp)");
  c = ctx("adir", "adir");
  c.cwd = dir_;
  EXPECT_EQ(render_failure({SpawnStage::kExec, EACCES}, c, "/bin"),
            "rank 2 on node1: executable 'adir' is a directory");
}

TEST_F(FailureTest, RendersWorkingDirectoryFailures) {
  struct Case {
    std::string cwd;
    int err;
    std::string want;
  };
  const Case cases[] = {
      {"/gone", ENOENT, "rank 2 on node1: working directory '/gone' does not exist"},
      {dir_ + "/plain", ENOTDIR,
       "rank 2 on node1: working directory '" + dir_ + "/plain' is not a directory"},
      {"/root/secret", EACCES,
       "rank 2 on node1: working directory '/root/secret': Permission denied"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.cwd);
    FailureContext fc = ctx("prog");
    fc.cwd = c.cwd;
    EXPECT_EQ(render_failure({SpawnStage::kChdir, c.err}, fc, "/bin"), c.want);
  }
}

TEST_F(FailureTest, RendersEveryOtherStage) {
  FailureContext c = ctx("prog", "/usr/bin/prog");
  c.cpus = "8-9";
  struct Case {
    SpawnStage stage;
    int err;
    const char* want;
  };
  const Case cases[] = {
      {SpawnStage::kAffinity, EINVAL,
       "rank 2 on node1: executable 'prog' (/usr/bin/prog): binding to cores 8-9 refused: "
       "Invalid argument"},
      {SpawnStage::kGate, EPIPE,
       "rank 2 on node1: executable 'prog' (/usr/bin/prog): fork gate: Broken pipe"},
      {SpawnStage::kSetsid, EPERM,
       "rank 2 on node1: executable 'prog' (/usr/bin/prog): setpgid: Operation not permitted"},
      {SpawnStage::kStdio, EBADF,
       "rank 2 on node1: executable 'prog' (/usr/bin/prog): dup2 of stdio: Bad file descriptor"},
      {SpawnStage::kSignals, EINVAL,
       "rank 2 on node1: executable 'prog' (/usr/bin/prog): signal reset: Invalid argument"},
      {SpawnStage::kMemPolicy, EPERM,
       "rank 2 on node1: executable 'prog' (/usr/bin/prog): set_mempolicy: Operation not "
       "permitted"},
      {SpawnStage::kLimits, EPERM,
       "rank 2 on node1: executable 'prog' (/usr/bin/prog): setrlimit: Operation not permitted"},
      {SpawnStage::kNone, 0, "rank 2 on node1: executable 'prog' (/usr/bin/prog): launch: Success"},
      {static_cast<SpawnStage>(42), EIO,
       "rank 2 on node1: executable 'prog' (/usr/bin/prog): stage 42: Input/output error"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(static_cast<int>(k.stage));
    EXPECT_EQ(render_failure({k.stage, k.err}, c, "/bin"), k.want);
  }
}

TEST_F(FailureTest, EveryMessageNamesRankNodeAndTarget) {
  const SpawnStage stages[] = {SpawnStage::kNone,      SpawnStage::kGate,    SpawnStage::kSetsid,
                               SpawnStage::kStdio,     SpawnStage::kSignals, SpawnStage::kAffinity,
                               SpawnStage::kMemPolicy, SpawnStage::kLimits,  SpawnStage::kChdir,
                               SpawnStage::kExec,      SpawnStage::kReadOnly};
  const int errs[] = {0, ENOENT, EACCES, ENOEXEC, ENOTDIR, EPERM, EINVAL, 9999};
  FailureContext c = ctx("myprog");
  c.rank = 17;
  c.node = "n042";
  c.cwd = "/work/dir";
  c.cpus = "0-3";
  for (SpawnStage s : stages) {
    for (int err : errs) {
      std::string m = render_failure({s, err}, c, "/usr/bin");
      SCOPED_TRACE(m);
      EXPECT_EQ(m.rfind("rank 17 on n042: ", 0), 0u);
      EXPECT_NE(m.find(s == SpawnStage::kChdir ? "'/work/dir'" : "'myprog'"), std::string::npos);
      EXPECT_EQ(m.find('\n'), std::string::npos);
    }
  }
}

TEST_F(FailureTest, AnUnnamedNodeIsSaidSo) {
  FailureContext c = ctx("p");
  c.node = "";
  EXPECT_EQ(render_failure({SpawnStage::kExec, ENOENT}, c, "/bin"),
            "rank 2 on (unknown node): executable 'p' not found on the child's PATH (/bin)");
}

}  // namespace
}  // namespace berth::launch
