#include "wireup/pmix_server.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "util/shared_library.h"

namespace berth::wireup {
namespace {

// libpmix is not loaded when a process starts (nothing links it) and is when the
// first server starts: in a process of its own (gtest's "threadsafe" death test runs
// this binary again), as libpmix allows one server per process.
TEST(PmixServerDeathTest, LibpmixIsLoadedWhenTheServerStarts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        bool before = SharedLibrary::loaded("libpmix.so.2");
        std::string dir = (std::filesystem::temp_directory_path() / "berth-pmix-XXXXXX").string();
        bool made = ::mkdtemp(dir.data()) != nullptr;
        auto server = made ? PmixServer::instance(dir) : Result<PmixServer*>(nullptr);
        bool started = made && server.ok() && *server != nullptr;
        bool after = SharedLibrary::loaded("libpmix.so.2");
        std::error_code ignored;
        if (made) std::filesystem::remove_all(dir, ignored);
        std::exit(!before && started && after ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace berth::wireup
