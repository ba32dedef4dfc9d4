#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "alloc/source.h"
#include "util/files.h"

namespace berth::alloc {
namespace {

// "name/slots" + '!' when given, "@user"; space-separated.
std::string render(const std::vector<NodeSpec>& nodes) {
  std::string out;
  for (const NodeSpec& n : nodes) {
    if (!out.empty()) out += ' ';
    out += n.name + "/" + std::to_string(n.slots);
    if (n.slots_given) out += '!';
    if (!n.user.empty()) out += "@" + n.user;
  }
  return out;
}

class HostsSource : public testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "berth-hosts-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    local_.hostname = "login1.cluster.org";
    local_.usable_cores = 8;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, std::string_view text) {
    std::string path = (dir_ / name).string();
    EXPECT_TRUE(files::write_file_atomic(path, text).ok());
    return path;
  }

  SourceResult discover() { return discover_hosts(Input{env_, opts_, local_}); }

  // The nodes, asserting that discovery answered.
  std::string nodes() {
    auto r = discover();
    if (!r.ok()) return "error: " + r.error().message();
    if (!r->has_value()) return "nullopt";
    return render((*r)->nodes());
  }

  std::filesystem::path dir_;
  Env env_;
  Options opts_;
  LocalHost local_;
};

TEST_F(HostsSource, FallsBackToTheLocalHostSizedByItsCores) {
  EXPECT_EQ(nodes(), "login1.cluster.org/8");  // slots not given: a guess
}

TEST_F(HostsSource, FallbackHasAtLeastOneSlotAndAName) {
  local_.usable_cores = 0;
  local_.hostname.clear();
  EXPECT_EQ(nodes(), "localhost/1");
}

TEST_F(HostsSource, BuildsNodesFromHostLists) {
  opts_.hosts = {"a:2,b"};
  EXPECT_EQ(nodes(), "a/2! b/1");
}

TEST_F(HostsSource, MergesRepeatedNamesAcrossHostLists) {
  opts_.hosts = {"a,b", "a:3"};
  EXPECT_EQ(nodes(), "a/4! b/1");
}

TEST_F(HostsSource, StarTakesTheLocalCoreCountNotGiven) {
  opts_.hosts = {"a:*,b:*"};
  EXPECT_EQ(nodes(), "a/8 b/8");
}

TEST_F(HostsSource, RefusesStarAddedToAcrossHostLists) {
  opts_.hosts = {"a:*", "a"};
  auto r = discover();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message().rfind("--host (2 of 2): ", 0), 0u) << r.error().message();
}

TEST_F(HostsSource, RefusesRelativeSyntaxWithoutAnAllocation) {
  for (std::string value : {"+n1", "a,+e", "+e:2"}) {
    opts_.hosts = {value};
    auto r = discover();
    ASSERT_FALSE(r.ok()) << value;
    EXPECT_EQ(r.error().code(), Errc::kRefused);
    EXPECT_NE(r.error().message().find("relative node syntax"), std::string::npos);
    EXPECT_NE(r.error().message().find("allocation"), std::string::npos);
  }
}

TEST_F(HostsSource, ReportsABadHostList) {
  opts_.hosts = {"a,,b"};
  auto r = discover();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message().rfind("--host: position 3: ", 0), 0u) << r.error().message();
  opts_.hosts = {""};
  EXPECT_EQ(nodes().rfind("error: --host: position 1: ", 0), 0u) << nodes();
}

TEST_F(HostsSource, ReadsTheHostfileAndAppliesItsExclusions) {
  opts_.hostfile = write("hf", "a slots=2\nalice@b\nc\n^c\n");
  EXPECT_EQ(nodes(), "a/2! b/1@alice");
}

TEST_F(HostsSource, ExclusionMatchesTheShortName) {
  opts_.hostfile = write("hf", "a.cluster.org\nb\nc\n^a\n^b.cluster.org\n");
  EXPECT_EQ(nodes(), "c/1");
}

TEST_F(HostsSource, HostfileWinsOverHostListsWhichFilterIt) {
  opts_.hostfile = write("hf", "a\nb\n");
  opts_.hosts = {"b,+n0"};  // the lead's filter applies these to the hostfile's nodes
  EXPECT_EQ(nodes(), "a/1 b/1");
}

TEST_F(HostsSource, EmptyHostfileIsAnError) {
  opts_.hostfile = write("hf", "# nothing here\n");
  auto r = discover();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "--hostfile " + *opts_.hostfile + ": names no host");
}

TEST_F(HostsSource, HostfileOfOnlyExcludedHostsIsAnError) {
  opts_.hostfile = write("hf", "a\n^a\n");
  auto r = discover();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("names no host once its 1 exclusion(s) are applied"),
            std::string::npos)
      << r.error().message();
}

TEST_F(HostsSource, EmptyHostfileBesideHostListsLeavesThemTheAllocation) {
  opts_.hostfile = write("hf", "^b\n");
  opts_.hosts = {"a,b,c"};
  EXPECT_EQ(nodes(), "a/1 c/1");
}

TEST_F(HostsSource, HostListEntirelyExcludedIsAnError) {
  opts_.hostfile = write("hf", "^a\n");
  opts_.hosts = {"a"};
  auto r = discover();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("excluded"), std::string::npos) << r.error().message();
}

TEST_F(HostsSource, MissingHostfileNamesThePathOnce) {
  opts_.hostfile = (dir_ / "absent").string();
  auto r = discover();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Errc::kNotFound);
  EXPECT_EQ(r.error().message().rfind("--hostfile " + *opts_.hostfile + ": cannot open: ", 0), 0u)
      << r.error().message();
}

TEST_F(HostsSource, DirectoryAsHostfileIsAnIoError) {
  opts_.hostfile = dir_.string();
  auto r = discover();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Errc::kIo);
  EXPECT_EQ(r.error().message(), "--hostfile " + dir_.string() + ": is a directory");
}

TEST_F(HostsSource, BadHostfileLineNamesFileAndLine) {
  opts_.hostfile = write("hf", "a\nb slots=0\n");
  auto r = discover();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message().rfind("--hostfile " + *opts_.hostfile + ":2: ", 0), 0u)
      << r.error().message();
}

TEST_F(HostsSource, UsesTheDefaultHostfileWhenNothingElseIsGiven) {
  opts_.default_hostfile = write("default", "d1 slots=4\nd2\n");
  EXPECT_EQ(nodes(), "d1/4! d2/1");
}

TEST_F(HostsSource, MissingOrEmptyDefaultHostfileFallsBackToTheLocalHost) {
  opts_.default_hostfile = (dir_ / "absent").string();
  EXPECT_EQ(nodes(), "login1.cluster.org/8");
  opts_.default_hostfile = write("default", "# Open MPI's default hostfile is all comments\n");
  EXPECT_EQ(nodes(), "login1.cluster.org/8");
}

TEST_F(HostsSource, BadDefaultHostfileIsAnError) {
  opts_.default_hostfile = write("default", "a b\n");
  auto r = discover();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message().rfind("default hostfile " + *opts_.default_hostfile + ":1: ", 0),
            0u)
      << r.error().message();
}

TEST_F(HostsSource, HostfileAndHostListsOutrankTheDefaultHostfile) {
  opts_.default_hostfile = write("default", "d1\n");
  opts_.hosts = {"a"};
  EXPECT_EQ(nodes(), "a/1");
  opts_.hosts.clear();
  opts_.hostfile = write("hf", "h1\n");
  EXPECT_EQ(nodes(), "h1/1");
}

TEST_F(HostsSource, NeverAnswersNotMine) {
  EXPECT_NE(nodes(), "nullopt");
  env_.set("SLURM_JOB_ID", "42");  // another source's environment changes nothing here
  EXPECT_EQ(nodes(), "login1.cluster.org/8");
}

}  // namespace
}  // namespace berth::alloc
