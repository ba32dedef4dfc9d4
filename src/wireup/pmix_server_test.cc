// The embedded PMIx server: when libpmix is loaded, and the datastore its ranks are
// given (spec 07 §2.1). libpmix allows one server per process, so each case that starts
// one runs in a process of its own (gtest's "threadsafe" death test runs this binary
// again).
#include "wireup/pmix_server.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "util/shared_library.h"

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define BERTH_TEST_TSAN 1
#endif
#endif

namespace berth::wireup {
namespace {

// A private directory for one server's files, removed when the case ends.
class TempDir {
 public:
  TempDir() : path_((std::filesystem::temp_directory_path() / "berth-pmix-XXXXXX").string()) {
    made_ = ::mkdtemp(path_.data()) != nullptr;
  }
  ~TempDir() {
    std::error_code ignored;
    if (made_) std::filesystem::remove_all(path_, ignored);
  }
  bool made() const { return made_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool made_ = false;
};

// libpmix is not loaded when a process starts (nothing links it) and is when the
// first server starts.
TEST(PmixServerDeathTest, LibpmixIsLoadedWhenTheServerStarts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        bool before = SharedLibrary::loaded("libpmix.so.2");
        TempDir dir;
        auto server = dir.made() ? PmixServer::instance(dir.path()) : Result<PmixServer*>(nullptr);
        bool started = dir.made() && server.ok() && *server != nullptr;
        bool after = SharedLibrary::loaded("libpmix.so.2");
        std::exit(!before && started && after ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(PmixServer, DatastoreChoiceAsksForTheHashStore) {
  auto v = PmixServer::datastore_choice(Env());
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->first, "PMIX_MCA_gds");
  EXPECT_EQ(v->second, "hash");
}

TEST(PmixServer, DatastoreChoiceLeavesTheUsersOwnStanding) {
  for (const char* users : {"ds21", "hash", ""}) {
    Env env;
    env.set("PMIX_MCA_gds", users);
    EXPECT_FALSE(PmixServer::datastore_choice(env).has_value()) << "'" << users << "'";
  }
}

// The datastore libpmix tells rank 0 of a two-rank job to use ("" = none said), in a
// server started after `set_choice` ran: what add_job hands the rank.
std::string datastore_told(bool set_choice) {
  ::unsetenv("PMIX_MCA_gds");
  if (set_choice) {
    auto v = PmixServer::datastore_choice(Env::from_process());
    if (!v) return "no choice";
    Env::set_for_berth_only(v->first, v->second);
  }
  TempDir dir;
  if (!dir.made()) return "no directory";
  auto server = PmixServer::instance(dir.path());
  if (!server.ok()) return server.error().message();
  auto job = (*server)->add_job(JobMap::local("berth.test.1", "n", {2}), [](const RankEvent&) {});
  if (!job.ok()) return job.error().message();
  std::string told;
  for (const auto& [name, value] : job->env.at(0)) {
    if (name == "PMIX_GDS_MODULE") told = value;
  }
  (*server)->remove_job("berth.test.1");
  return told;
}

// Chosen as main chooses it, the server offers its ranks the hash store alone, and the
// variable is not in the environment berth hands on.
TEST(PmixServerDeathTest, RanksAreToldTheChosenDatastoreOnly) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        std::string told = datastore_told(true);
        bool handed_on = Env::from_process().has("PMIX_MCA_gds");
        std::exit(told == "hash" && !handed_on ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// Without the choice libpmix offers its shared-memory stores too (what the case above
// proves left out).
TEST(PmixServerDeathTest, WithoutTheChoiceRanksAreOfferedSharedMemoryStores) {
#if defined(__SANITIZE_THREAD__) || defined(BERTH_TEST_TSAN)
  // Those stores, which berth never uses, race inside libpmix (its own threads on its
  // own strings, between registering a namespace and its listener): ThreadSanitizer
  // stops the child before it can say what it was offered.
  GTEST_SKIP() << "libpmix's shared-memory stores race inside libpmix under ThreadSanitizer";
#endif
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        std::string told = datastore_told(false);
        std::exit(told.find("ds21") != std::string::npos ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace berth::wireup
