#include "pipeline/canonicaliser.h"

#include <gtest/gtest.h>

#include "pipeline/canonical.h"

namespace berth::pipeline {
namespace {

TEST(Canonicaliser, PassesStdinAndReturnsStdout) {
  auto r = run_canonicaliser({"sort"}, "b\na\n");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(*r, "a\nb\n");
}

TEST(Canonicaliser, LargeInputDoesNotDeadlock) {
  // More than a pipe buffer in both directions at once.
  std::string big(4 << 20, 'x');
  auto r = run_canonicaliser({"cat"}, big);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->size(), big.size());
}

TEST(Canonicaliser, EarlyExitWithoutReadingIsFine) {
  std::string big(1 << 20, 'y');
  auto r = run_canonicaliser({"true"}, big);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(*r, "");
}

TEST(Canonicaliser, NonZeroExitNamesCommandStatusAndStderr) {
  auto r = run_canonicaliser({"sh", "-c", "echo bad thing >&2; exit 3"}, "");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("exited with status 3"), std::string::npos);
  EXPECT_NE(r.error().message().find("bad thing"), std::string::npos);
  EXPECT_NE(r.error().message().find("canonicaliser 'sh -c"), std::string::npos);
}

TEST(Canonicaliser, MissingCommandIsNotFound) {
  auto r = run_canonicaliser({"berth-no-such-canonicaliser"}, "x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Errc::kNotFound);
  EXPECT_NE(r.error().message().find("berth-no-such-canonicaliser"), std::string::npos);
}

TEST(Canonicaliser, HookGivesCommandFormItsHash) {
  CommandHook hook = [](const std::vector<std::string>& argv, std::string_view bytes) {
    return run_canonicaliser(argv, bytes);
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
