#include "pipeline/canonical.h"

#include <gtest/gtest.h>

#include <string>

#include "util/sha256.h"

namespace berth::pipeline {
namespace {

struct Case {
  const char* form;
  std::string input;
  const char* canonical;  // nullptr: canonicalize fails
};

TEST(Canonical, FormsFromATable) {
  const Case cases[] = {
      {"bytes", "b\na", "b\na"},
      {"bytes", "", ""},
      {"lines-sorted", "b\na\n", "a\nb\n"},
      {"lines-sorted", "b\na", "a\nb\n"},  // missing final newline supplied
      {"lines-sorted", "", ""},
      {"lines-sorted", "\n", "\n"},                        // one empty line
      {"lines-sorted", "b\n\na\n", "\na\nb\n"},            // empty lines sort first
      {"lines-sorted", "x\nx\n", "x\nx\n"},                // duplicates kept
      {"lines-sorted", "\xc3\xa9\nz\n", "z\n\xc3\xa9\n"},  // bytewise: 0xc3 > 'z'
      {"lines-sorted", "b\r\na\r\n", "a\r\nb\r\n"},
      {"json", R"({"b": 1, "a": [true, null, "x"]})", R"({"a":[true,null,"x"],"b":1})"},
      {"json", " 42 ", "42"},
      {"json", "1.0", "1.0"},
      {"json", "1e2", "100.0"},
      {"json", "-0", "0"},
      {"json", R"({"a":1,"a":2})", R"({"a":2})"},
      {"json", R"("\u00e9\t")", "\"\xc3\xa9\\t\""},
      {"json", R"({"z":{"y":1,"x":2}})", R"({"z":{"x":2,"y":1}})"},
      {"json", "", nullptr},
      {"json", "{", nullptr},
      {"json", "[1,]", nullptr},
      {"json", "\"\xff\"", nullptr},  // not UTF-8
      {"json", std::string(600, '['), nullptr},
  };
  for (const auto& c : cases) {
    auto form = parse_canonical_form(c.form);
    ASSERT_TRUE(form.ok()) << c.form;
    auto r = canonicalize(*form, c.input);
    if (c.canonical == nullptr) {
      ASSERT_FALSE(r.ok()) << c.form << ": " << c.input.substr(0, 40);
      EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
      EXPECT_EQ(r.error().message().rfind("json: ", 0), 0u) << r.error().message();
    } else {
      ASSERT_TRUE(r.ok()) << c.form << ": " << c.input << ": " << r.error().message();
      EXPECT_EQ(*r, c.canonical) << c.form << ": " << c.input;
    }
  }
}

TEST(Canonical, EarlyCutoffSameMeaningSameHash) {
  auto json = *parse_canonical_form("json");
  auto a = canonical_hash(json, "{\n  \"n\": 3,\n  \"names\": [\"x\", \"y\"]\n}\n");
  auto b = canonical_hash(json, R"({"names":["x","y"],"n":3})");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  auto c = canonical_hash(json, R"({"names":["y","x"],"n":3})");  // arrays are ordered
  EXPECT_NE(a->hash, c->hash);

  auto lines = *parse_canonical_form("lines-sorted");
  EXPECT_EQ(canonical_hash(lines, "2 b\n1 a")->hash, canonical_hash(lines, "1 a\n2 b\n")->hash);
  auto bytes = *parse_canonical_form("bytes");
  EXPECT_NE(canonical_hash(bytes, "2 b\n1 a")->hash, canonical_hash(bytes, "1 a\n2 b\n")->hash);
}

TEST(Canonical, HashIsTaggedWithItsForm) {
  auto h = canonical_hash(*parse_canonical_form("bytes"), "abc");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->hash, "sha256:" + sha256_hex("abc"));  // the object's name
  EXPECT_EQ(h->tagged(), "bytes sha256:" + sha256_hex("abc"));
  // The same canonical bytes under two forms are two different tagged hashes.
  auto l = canonical_hash(*parse_canonical_form("lines-sorted"), "a\n");
  auto b = canonical_hash(*parse_canonical_form("bytes"), "a\n");
  EXPECT_EQ(l->hash, b->hash);
  EXPECT_NE(l->tagged(), b->tagged());
}

TEST(Canonical, ParsesFormNames) {
  EXPECT_EQ(parse_canonical_form("json")->name(), "json");
  EXPECT_EQ(parse_canonical_form("lines-sorted")->name(), "lines-sorted");
  auto words = parse_canonical_form("command: jq -S . ");
  ASSERT_TRUE(words.ok());
  EXPECT_EQ(words->argv, (std::vector<std::string>{"jq", "-S", "."}));
  EXPECT_EQ(words->name(), R"(command:["jq","-S","."])");
  auto array = parse_canonical_form(words->name());  // the name parses back
  ASSERT_TRUE(array.ok());
  EXPECT_EQ(*array, *words);
  for (const char* bad : {"", "JSON", "lines", "command:", "command:[1]", "command:[\"x\""}) {
    auto r = parse_canonical_form(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
  }
}

TEST(Canonical, CommandFormUsesTheHook) {
  auto form = *parse_canonical_form("command:tr a-z A-Z");
  auto none = canonicalize(form, "x");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code(), Errc::kUnsupported);
  CommandHook upper = [](const std::vector<std::string>& argv,
                         std::string_view bytes) -> Result<std::string> {
    if (argv.at(0) != "tr") return fail(Errc::kInternal, "unexpected argv");
    std::string out(bytes);
    for (char& c : out) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
    return out;
  };
  EXPECT_EQ(*canonicalize(form, "abc", upper), "ABC");
  EXPECT_EQ(canonical_hash(form, "abc", upper)->hash, canonical_hash(form, "ABC", upper)->hash);
}

}  // namespace
}  // namespace berth::pipeline
