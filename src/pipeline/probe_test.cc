#include "pipeline/probe.h"

#include <gtest/gtest.h>

#include "pipeline/testdata.h"

namespace berth::pipeline {
namespace {

using testdata::command_env;

TEST(CaptureProbe, ReadsStdoutAndStderrTogetherInOrder) {
  CaptureProbe probe(command_env());
  auto out = probe.run({"sh", "-c", "echo slurm 23.02.7; echo plugins >&2; echo end"});
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_EQ(*out, "slurm 23.02.7\nplugins\nend\n");
}

TEST(CaptureProbe, ExitStatusIsNotLookedAt) {
  // Some launchers print their version and exit 1 for --version.
  CaptureProbe probe(command_env());
  auto out = probe.run({"sh", "-c", "echo mpiexec version 1.2; exit 1"});
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_EQ(*out, "mpiexec version 1.2\n");
}

TEST(CaptureProbe, RunsWithTheEnvironmentGivenAndOnItsPath) {
  Env env = command_env();
  env.set("PROBE_MARK", "given");
  CaptureProbe probe(env);
  auto out = probe.run({"sh", "-c", "printf '%s %s' \"$PROBE_MARK\" \"${HOME-unset}\""});
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_EQ(*out, "given unset");
}

TEST(CaptureProbe, MissingProgramIsNotFoundAndNamed) {
  CaptureProbe probe(command_env());
  auto out = probe.run({"berth-no-such-srun", "--version"});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code(), Errc::kNotFound);
  EXPECT_NE(out.error().message().find("'berth-no-such-srun --version'"), std::string::npos)
      << out.error().message();
}

}  // namespace
}  // namespace berth::pipeline
