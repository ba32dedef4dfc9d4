// Read-only paths (read_only.h) through the real spawner, against real files: a write
// through a read-only path fails in the child and the file is unchanged; the same write
// without it lands, so each test can fail.
#include "launch/read_only.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "launch/spawn.h"
#include "launch/status.h"

namespace berth::launch {
namespace {

namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class ReadOnlyTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    // A kernel that refuses this mode here (user namespaces in a chroot) has its
    // refusal tested by ThisNodeAllowsItOrSaysWhy.
    if (const auto& here = read_only_support(GetParam()); !here.ok()) {
      GTEST_SKIP() << here.error().message();
    }
    char tmpl[] = "/tmp/berth_read_only_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ + "/data.csv") << "a,b\n";
    fs::create_directory(dir_ + "/stage");
    fs::create_symlink(dir_ + "/data.csv", dir_ + "/stage/data.csv");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs `sh -c script` in stage/ with `read_only` made read-only (in the mode of the
  // test's parameter); its exit code, its stdout in *out.
  int run(const std::string& script, const std::vector<std::string>& read_only,
          std::string* out = nullptr) {
    ReadOnlyPaths plan;
    if (!read_only.empty()) {
      auto p = plan_read_only(read_only, GetParam());
      EXPECT_TRUE(p.ok()) << p.error().message();
      if (!p.ok()) return -1;
      plan = std::move(*p);
    }
    int pipefd[2];
    EXPECT_EQ(pipe2(pipefd, O_CLOEXEC), 0);
    SpawnRequest req;
    req.argv = {"sh", "-c", script};
    req.envp = {"PATH=/usr/bin:/bin"};
    req.cwd = dir_ + "/stage";
    req.stdout_fd = pipefd[1];
    req.read_only = &plan;
    FailureContext ctx;
    ctx.rank = -1;
    auto s = Spawner::real().spawn(req, ctx, nullptr);
    close(pipefd[1]);
    std::string text;
    char buf[4096];
    ssize_t n;
    while (s.ok() && (n = read(pipefd[0], buf, sizeof buf)) > 0) {
      text.append(buf, static_cast<size_t>(n));
    }
    close(pipefd[0]);
    if (!s.ok()) {
      ADD_FAILURE() << s.error().message();
      return -1;
    }
    int status = 0;
    EXPECT_EQ(waitpid(s->pid, &status, 0), s->pid);
    if (s->pidfd >= 0) close(s->pidfd);
    if (out != nullptr) *out = text;
    return decode_wait_status(status).exit_code();
  }

  std::string dir_;
};

TEST_P(ReadOnlyTest, AWriteThroughTheLinkFailsAndTheOriginalIsUnchanged) {
  const std::string link = dir_ + "/stage/data.csv";
  EXPECT_NE(run("echo more >> data.csv", {link}), 0);
  EXPECT_EQ(slurp(dir_ + "/data.csv"), "a,b\n");
  // Truncating, and writing through the file's other name, fail the same way.
  EXPECT_NE(run(": > data.csv", {link}), 0);
  EXPECT_NE(run("echo more >> ../data.csv", {link}), 0);
  EXPECT_EQ(slurp(dir_ + "/data.csv"), "a,b\n");
  // Without it the same write lands: what the test above would catch.
  EXPECT_EQ(run("echo more >> data.csv", {}), 0);
  EXPECT_EQ(slurp(dir_ + "/data.csv"), "a,b\nmore\n");
}

TEST_P(ReadOnlyTest, ReadsWritesElsewhereAndIdsAreAsBefore) {
  const std::string link = dir_ + "/stage/data.csv";
  std::string out;
  EXPECT_EQ(run("cat data.csv && echo x > out.txt && id -u && id -g", {link}, &out), 0);
  EXPECT_EQ(out, "a,b\n" + std::to_string(geteuid()) + "\n" + std::to_string(getegid()) + "\n");
  EXPECT_EQ(slurp(dir_ + "/stage/out.txt"), "x\n");
}

TEST_P(ReadOnlyTest, NothingReachesBerthsNamespace) {
  const std::string link = dir_ + "/stage/data.csv";
  ASSERT_NE(run("true", {link}), -1);
  // The mount was the child's: here the file is as writable as ever, and not a mount.
  std::ofstream(link, std::ios::app) << "here\n";
  EXPECT_EQ(slurp(dir_ + "/data.csv"), "a,b\nhere\n");
  EXPECT_EQ(slurp("/proc/self/mountinfo").find(dir_), std::string::npos);
}

TEST_P(ReadOnlyTest, ManyPathsAreAllReadOnly) {
  std::vector<std::string> paths;
  std::string script;
  for (int i = 0; i < 200; ++i) {
    std::string p = dir_ + "/stage/f" + std::to_string(i);
    std::ofstream(p) << i;
    paths.push_back(p);
    script += "! (echo x >> f" + std::to_string(i) + ") 2>/dev/null || exit 1; ";
  }
  EXPECT_EQ(run(script + "exit 0", paths), 0);
  EXPECT_EQ(slurp(dir_ + "/stage/f199"), "199");
}

INSTANTIATE_TEST_SUITE_P(Modes, ReadOnlyTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "UserNs" : "MountNs"; });

TEST(ReadOnly, TheFlagsOfTheMountAreKept) {
  // In a user namespace a mount's nosuid, nodev, noexec and atime mode are locked: a
  // read-only remount that dropped one would be refused. They come from the mount the
  // file is on, as statvfs says.
  auto p = plan_read_only({"/proc/version", "/"}, true);
  ASSERT_TRUE(p.ok()) << p.error().message();
  ASSERT_EQ(p->keep_flags.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    struct statvfs st {};
    ASSERT_EQ(statvfs(p->paths[i].c_str(), &st), 0);
    // Each as the mount has it (ST_RELATIME is not MS_RELATIME's value: mapped).
    const std::pair<unsigned long, unsigned long> pairs[] = {
        {ST_NOSUID, MS_NOSUID},       {ST_NODEV, MS_NODEV},   {ST_NOEXEC, MS_NOEXEC},
        {ST_NOATIME, MS_NOATIME}, {ST_NODIRATIME, MS_NODIRATIME}, {ST_RELATIME, MS_RELATIME}};
    for (auto [st_flag, ms_flag] : pairs) {
      EXPECT_EQ((p->keep_flags[i] & ms_flag) != 0, (st.f_flag & st_flag) != 0)
          << p->paths[i] << " flag " << ms_flag;
    }
  }
  EXPECT_EQ(p->uid_map, std::to_string(geteuid()) + " " + std::to_string(geteuid()) + " 1\n");
  EXPECT_EQ(p->gid_map, std::to_string(getegid()) + " " + std::to_string(getegid()) + " 1\n");
}

TEST(ReadOnly, AMissingPathIsNamed) {
  auto p = plan_read_only({"/nonexistent/berth/input"}, false);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("/nonexistent/berth/input"), std::string::npos);
}

TEST(ReadOnly, NoPathsIsNoNamespace) {
  auto p = plan_read_only({});
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->empty());
}

TEST(ReadOnly, ThisNodeAllowsItOrSaysWhy) {
  // The machines berth is tested on allow a mount namespace (root) or a user namespace.
  // In a chroot (the fresh-install check) the root is not a mount, and berth says so
  // rather than mount what could reach the host's namespace.
  struct statx st {};
  ASSERT_EQ(statx(AT_FDCWD, "/", AT_STATX_DONT_SYNC, STATX_TYPE, &st), 0);
  bool chroot = (st.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
                !(st.stx_attributes & STATX_ATTR_MOUNT_ROOT);
  const auto& support = read_only_support();
  if (!chroot) {
    EXPECT_TRUE(support.ok()) << support.error().message();
  } else {
    ASSERT_FALSE(support.ok());
    EXPECT_NE(support.error().message().find("a chroot"), std::string::npos)
        << support.error().message();
  }
}

}  // namespace
}  // namespace berth::launch
