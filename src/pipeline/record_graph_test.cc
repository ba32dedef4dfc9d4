// The graph from the settled record (record_graph.h), as a table: one recorded pipeline
// of three [[step]] tables (b reads a), then each edit, and what graph_from_record()
// makes of it — which tables it parses, which steps it takes from the record — or that
// it declines, for the file to be read whole.
#include "pipeline/record_graph.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace berth::pipeline {
namespace {

constexpr const char* kHead = "[pipeline]\nname = \"t\"\n\n";
constexpr const char* kA = "[[step]]\nname = \"a\"\nrun = \"echo a > {out.o}\"\noutputs = [\"o\"]\n\n";
constexpr const char* kB =
    "[[step]]\nname = \"b\"\ninputs = { i = \"@a/o\" }\nrun = \"cat {in.i} > {out.o}\"\n"
    "outputs = [\"o\"]\n\n";
constexpr const char* kC = "[[step]]\nname = \"c\"\nrun = \"echo c > {out.o}\"\noutputs = [\"o\"]\n";

std::string file(std::string head, std::string a, std::string b, std::string c) {
  return head + a + b + c;
}

// The record a run of the unedited file left: a, b (reading a), c, one per table.
struct Recorded {
  Settled record;
  RecordedEntries entries;
  Recorded() {
    const std::string text = file(kHead, kA, kB, kC);
    record.context = settled_context("v", "/w", "/w/p.toml", text, "file:///s", "/w/results");
    record.tables = 3;
    uint32_t table = 0;
    for (const char* name : {"a", "b", "c"}) {
      SettledStep e;
      e.name = name;
      e.table = table++;
      record.entries.push_back(e);
    }
    record.entries[1].deps = {0};
    for (const char* name : {"a", "b", "c"}) {
      entries.overridden.push_back(std::string(R"({"name":")") + name +
                                   R"(","outputs":{"o":{"object":"sha256:00"}}})");
    }
    for (const auto& t : entries.overridden) entries.text.push_back(t);
  }
};

struct Case {
  const char* what;
  std::string text;
  bool same = false;                 // the record's own bytes, with `fresh` marks
  std::vector<char> fresh;
  std::optional<size_t> tables_read;  // nullopt: declined, read whole
  std::string from_record;            // the steps taken from their entries, in order
};

TEST(RecordGraph, EachEditIsReadFromItsTablesOrDeclined) {
  const std::vector<Case> cases = {
      {"c edited: c parsed, a and b from the record",
       file(kHead, kA, kB, "[[step]]\nname = \"c\"\nrun = \"echo C > {out.o}\"\noutputs = [\"o\"]\n"),
       false, {}, 1, "a b "},
      {"b edited: it reads a, which is its entry",
       file(kHead, kA, "[[step]]\nname = \"b\"\ninputs = { i = \"@a/o\" }\nrun = \"cat {in.i}; "
                       "echo > {out.o}\"\noutputs = [\"o\"]\n\n", kC),
       false, {}, 1, "a c "},
      {"a edited: b, not parsed, reads a step made afresh",
       file(kHead, "[[step]]\nname = \"a\"\nrun = \"echo A > {out.o}\"\noutputs = [\"o\"]\n\n", kB, kC),
       false, {}, std::nullopt, ""},
      {"the head edited", file("[pipeline]\nname = \"u\"\n\n", kA, kB, kC), false, {}, std::nullopt,
       ""},
      {"a table added", file(kHead, kA, kB, kC) + "\n" + kC, false, {}, std::nullopt, ""},
      {"c renamed: no entry takes its place",
       file(kHead, kA, kB, "[[step]]\nname = \"d\"\nrun = \"echo c > {out.o}\"\noutputs = [\"o\"]\n"),
       false, {}, std::nullopt, ""},
      {"the same bytes, c's facts changed", file(kHead, kA, kB, kC), true, {0, 0, 1}, 1, "a b "},
      {"the same bytes, a's facts changed: b with it",
       file(kHead, kA, kB, kC), true, {1, 1, 0}, 2, "c "},
      {"the same bytes, nothing to make afresh", file(kHead, kA, kB, kC), true, {0, 0, 0},
       std::nullopt, ""},
  };
  for (const Case& c : cases) {
    Recorded rec;
    RecordGraphInput in;
    in.text = c.text;
    in.path = "/w/p.toml";
    in.record = &rec.record;
    in.recorded = [&rec]() -> const RecordedEntries* { return &rec.entries; };
    in.same = c.same;
    in.fresh = c.same ? &c.fresh : nullptr;
    auto g = graph_from_record(in, DiscoveryFs::real(), [](const std::string&) { return false; });
    ASSERT_EQ(g.has_value(), c.tables_read.has_value()) << c.what;
    if (!g) continue;
    EXPECT_EQ(g->tables_read, *c.tables_read) << c.what;
    EXPECT_EQ(g->tables, 3u) << c.what;
    std::string names, from_record;
    for (const Step& st : g->graph.steps) {
      names += st.name + " ";
      if (st.from_record) from_record += st.name + " ";
    }
    EXPECT_EQ(names, "a b c ") << c.what << ": the record's order";
    EXPECT_EQ(from_record, c.from_record) << c.what;
    EXPECT_EQ(g->graph.steps[1].deps, std::vector<size_t>{0}) << c.what << ": b reads a";
  }
}

TEST(RecordGraph, ChangedTablesAreThoseWhoseBytesDiffer) {
  Recorded rec;
  const std::string edited = file(kHead, kA, kB, "[[step]]\nname = \"c\"\nrun = \"x\"\n");
  auto split = split_step_tables(edited);
  ASSERT_TRUE(split.has_value());
  auto changed = changed_tables(edited, false, rec.record, split->head, split->tables);
  ASSERT_TRUE(changed.has_value());
  EXPECT_EQ(*changed, (std::vector<char>{0, 0, 1}));
  // The record's own bytes: nothing changed.
  const std::string same = file(kHead, kA, kB, kC);
  split = split_step_tables(same);
  changed = changed_tables(same, true, rec.record, split->head, split->tables);
  ASSERT_TRUE(changed.has_value());
  EXPECT_EQ(*changed, (std::vector<char>{0, 0, 0}));
}

TEST(RecordGraph, AFactNoLongerHoldingRemakesWhatReadsIt) {
  Recorded rec;
  SettledFile f;
  f.path = "/w/in";
  rec.record.files.push_back(f);
  rec.record.entries[0].files = {0};
  SettledCheck check;
  check.file_ok = {0};
  check.object_ok = {};
  EXPECT_EQ(entries_made_afresh(rec.record, check), (std::vector<char>{1, 1, 0}));
  check.file_ok = {1};
  EXPECT_EQ(entries_made_afresh(rec.record, check), (std::vector<char>{0, 0, 0}));
}

}  // namespace
}  // namespace berth::pipeline
