#include "util/toml_fields.h"

#include <gtest/gtest.h>

#include <string>

namespace berth {
namespace {

const std::string kFile = "f.toml";

// Reads the document's keys the way a small file format would: name (a required
// string), [limits] n (an integer 1..9), tags (strings, not empty), on (a boolean).
Result<void> read(const toml::table& root, TomlLimits limits = {}) {
  TomlFields f(root, kFile, limits, "ctx");
  BERTH_TRY(std::string name, f.required_string("name"));
  (void)name;
  BERTH_TRY(const toml::table* t, f.table("limits"));
  if (t) {
    TomlFields g = f.sub(*t, "limits");
    BERTH_TRY(auto n, g.integer("n", 1, 9));
    (void)n;
    BERTH_TRY(auto tags, g.strings("tags", /*allow_empty=*/false));
    (void)tags;
    BERTH_TRY(auto on, g.boolean("on"));
    (void)on;
    BERTH_CHECK(g.finish());
  }
  return f.finish();
}

// The outcome of reading `text` as one string: "ok" or the error's message.
std::string outcome(const std::string& text, TomlLimits limits = {}) {
  auto root = parse_toml(text, kFile);
  if (!root.ok()) return root.error().message();
  auto r = read(*root, limits);
  if (!r.ok()) {
    EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
    return r.error().message();
  }
  return "ok";
}

TEST(TomlFields, ErrorsNameFileLineColumnContextAndKey) {
  struct Case {
    const char* text;
    const char* want;
  };
  const Case cases[] = {
      {"name = 'a'\n", "ok"},
      {"name = 'a'\n[limits]\nn = 3\ntags = ['x']\non = true\n", "ok"},
      // A key nobody reads, at the document and in a table, by its dotted name.
      {"name = 'a'\ncolour = 1\n", "f.toml:2:10: ctx: colour: unknown key"},
      {"name = 'a'\n[limits]\nm = 1\n", "f.toml:3:5: ctx: limits.m: unknown key"},
      // Missing: placed at the table that lacks the key (the document starts at 1:1).
      {"", "f.toml:1:1: ctx: name: missing"},
      {"name = '  '\n", "f.toml:1:8: ctx: name: must not be empty"},
      // Wrong types, placed at the value.
      {"name = 1\n", "f.toml:1:8: ctx: name: must be a string, not an integer"},
      {"name = 'a'\nlimits = 2\n", "f.toml:2:10: ctx: limits: must be a table, not an integer"},
      {"name = 'a'\n[limits]\nn = '3'\n",
       "f.toml:3:5: ctx: limits.n: must be an integer, not a string"},
      {"name = 'a'\n[limits]\non = 1\n",
       "f.toml:3:6: ctx: limits.on: must be a boolean, not an integer"},
      {"name = 'a'\n[limits]\ntags = 'x'\n",
       "f.toml:3:8: ctx: limits.tags: must be an array of strings, not a string"},
      {"name = 'a'\n[limits]\ntags = ['x', 2.5]\n",
       "f.toml:3:14: ctx: limits.tags: items must be strings, not a float"},
      {"name = 'a'\n[limits]\ntags = []\n", "f.toml:3:8: ctx: limits.tags: must not be empty"},
      {"name = 'a'\n[limits]\nn = 10\n", "f.toml:3:5: ctx: limits.n: 10 is out of range [1, 9]"},
      {"name = 1979-05-27\n", "f.toml:1:8: ctx: name: must be a string, not a date or time"},
      // Syntax: toml++'s own words, placed where it stopped.
      {"name = = 1\n", "f.toml:1:8: Error while parsing value: could not determine value type"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(outcome(c.text), c.want);
  }
}

TEST(TomlFields, LimitsAreTheCallers) {
  TomlLimits small{4, 2};
  EXPECT_EQ(outcome("name = 'abcd'\n", small), "ok");
  EXPECT_EQ(outcome("name = 'abcde'\n", small), "f.toml:1:8: ctx: name: longer than 4 bytes");
  EXPECT_EQ(outcome("name = 'a'\n[limits]\ntags = ['a', 'b', 'c']\n", small),
            "f.toml:3:8: ctx: limits.tags: more than 2 items");
  EXPECT_EQ(outcome("name = 'a'\n[limits]\ntags = ['a', 'bcdef']\n", small),
            "f.toml:3:14: ctx: limits.tags: longer than 4 bytes");
}

TEST(TomlFields, ErrorAtAKeyPointsAtItsValueOrTheTable) {
  auto root = parse_toml("a = 1\n[t]\nb = 2\n", kFile);
  ASSERT_TRUE(root.ok());
  TomlFields f(*root, kFile, {});
  EXPECT_EQ(f.error("a", "bad").error.message(), "f.toml:1:5: a: bad");
  EXPECT_EQ(f.error("t.b", "bad").error.message(), "f.toml:1:1: t.b: bad");
  TomlFields g = f.sub(*root->get("t")->as_table(), "t");
  EXPECT_EQ(g.error("b", "bad").error.message(), "f.toml:3:5: t.b: bad");
  EXPECT_EQ(g.error("c", "missing").error.message(), "f.toml:2:1: t.c: missing");
  EXPECT_EQ(g.error(nullptr, "", "says nothing").error.message(), "f.toml:2:1: t: says nothing");
}

TEST(TomlFields, ParseNeverThrows) {
  for (const std::string& text :
       {std::string("\xff\xfe"), std::string(300, '['),
        std::string("a = [") + std::string(2000, '['), std::string("x = \"\\uD800\"")}) {
    auto r = parse_toml(text, kFile);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
    EXPECT_EQ(r.error().message().rfind("f.toml", 0), 0u) << r.error().message();
  }
}

}  // namespace
}  // namespace berth
