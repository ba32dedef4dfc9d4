#include "pipeline/canonicaliser.h"

#include <gtest/gtest.h>

#include "pipeline/canonical.h"
#include "pipeline/testdata.h"

namespace berth::pipeline {
namespace {

using testdata::command_env;

TEST(Canonicaliser, PassesStdinAndReturnsStdout) {
  auto r = run_canonicaliser({"sort"}, "b\na\n", command_env());
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(*r, "a\nb\n");
}

TEST(Canonicaliser, LargeInputDoesNotDeadlock) {
  // More than a pipe buffer in both directions at once.
  std::string big(4 << 20, 'x');
  auto r = run_canonicaliser({"cat"}, big, command_env());
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->size(), big.size());
}

TEST(Canonicaliser, EarlyExitWithoutReadingIsFine) {
  std::string big(1 << 20, 'y');
  auto r = run_canonicaliser({"true"}, big, command_env());
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(*r, "");
}

TEST(Canonicaliser, NonZeroExitNamesCommandStatusAndStderr) {
  auto r = run_canonicaliser({"sh", "-c", "echo bad thing >&2; exit 3"}, "", command_env());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("exited with status 3"), std::string::npos);
  EXPECT_NE(r.error().message().find("bad thing"), std::string::npos);
  EXPECT_NE(r.error().message().find("canonicaliser 'sh -c"), std::string::npos);
}

TEST(Canonicaliser, MissingCommandIsNotFound) {
  auto r = run_canonicaliser({"berth-no-such-canonicaliser"}, "x", command_env());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Errc::kNotFound);
  EXPECT_NE(r.error().message().find("berth-no-such-canonicaliser"), std::string::npos);
}

TEST(Canonicaliser, RunsWithTheEnvironmentAndDirectoryGiven) {
  Env env = command_env();
  env.set("CANON_MARK", "from-env");
  auto r = run_canonicaliser(
      {"sh", "-c", "printf '%s %s %s' \"$CANON_MARK\" \"$(pwd)\" \"${HOME-unset}\""}, "", env,
      "/tmp");
  ASSERT_TRUE(r.ok()) << r.error().message();
  // Nothing of berth's own environment (HOME) reaches it.
  EXPECT_EQ(*r, "from-env /tmp unset");
}

TEST(Canonicaliser, KilledBySignalSaysWhich) {
  auto r = run_canonicaliser({"sh", "-c", "kill -TERM $$"}, "", command_env());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Errc::kRefused);
  EXPECT_NE(r.error().message().find("killed by signal 15 (SIGTERM)"), std::string::npos)
      << r.error().message();
}

TEST(Canonicaliser, HookGivesCommandFormItsHash) {
  Env env = command_env();
  CommandHook hook = [&env](const std::vector<std::string>& argv, std::string_view bytes) {
    return run_canonicaliser(argv, bytes, env);
  };
  auto form = parse_canonical_form(R"(command:["grep","-v","^#"])");
  ASSERT_TRUE(form.ok()) << form.error().message();
  auto a = canonical_hash(*form, "# run 1\nresult\n", hook);
  auto b = canonical_hash(*form, "# run 2\nresult\n", hook);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->hash, b->hash);  // the comment is not part of the meaning
  auto c = canonical_hash(*form, "# run 1\nother\n", hook);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(a->hash, c->hash);
}

}  // namespace
}  // namespace berth::pipeline
