// launch_test's jobs start this process's PMIx server, as berth's jobs start berth's:
// the process makes the datastore choice main makes for berth (cli/main.cc, spec 07
// §2.1), before any test starts a thread, so that its jobs are served as berth serves
// them.
#include <gtest/gtest.h>

#include "launch/job.h"
#include "util/env.h"
#include "wireup/pmix_server.h"

namespace berth::launch {
namespace {

class PmixDatastore : public ::testing::Environment {
 public:
  void SetUp() override {
    if (auto v = wireup::PmixServer::datastore_choice(Env::from_process())) {
      Env::set_for_berth_only(v->first, v->second);
    }
  }
};
const ::testing::Environment* const kPmixDatastore =
    ::testing::AddGlobalTestEnvironment(new PmixDatastore);

// A job's ranks are told the datastore chosen, and only it.
TEST(Job, RanksAreToldTheChosenPmixDatastore) {
  if (Env::from_process().has("PMIX_MCA_gds")) {
    GTEST_SKIP() << "PMIX_MCA_gds is the user's own choice here";
  }
  JobSpec s;
  AppSpec a;
  a.argv = {"/bin/sh", "-c", "echo \"$PMIX_GDS_MODULE\""};
  a.ranks = 2;
  s.apps.push_back(a);
  s.bind = BindTo::kNone;
  s.node = "testnode";
  s.stdin_mode = StdinMode::kNone;
  s.mpi = wireup::Mode::kPmix;
  std::string out;
  OutputSinks sinks{[&](std::string_view t) { out.append(t); }, [](std::string_view) {}};
  Env env;
  env.set("PATH", "/usr/bin:/bin");
  auto r = run_job(s, env, Spawner::real(), sinks);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(out, "hash\nhash\n");
}

}  // namespace
}  // namespace berth::launch
