#include "pipeline/settled.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "store/memory_store.h"
#include "store/testing.h"
#include "util/sha256.h"

namespace berth::pipeline {
namespace {

namespace fs = std::filesystem;

Settled sample() {
  Settled s;
  s.context = settled_context("berth 1", "/p", "/p/pipeline.toml", "[pipeline]\nname = \"x\"\n",
                              "file:///p/.berth/store", "/p/results");
  s.pipeline = "x";
  s.steps_object = "sha256:" + std::string(64, 'a');
  s.requests = {{1, 1, 0, -1}, {4, 2, 1, 2}};
  s.tools = {{{"cc", "--version"}, "cc 12\n"}, {{"sh", "-c", "echo a b\nc"}, ""}};
  s.base = settled_base("berth 1", "/p", "/p/pipeline.toml", "file:///p/.berth/store",
                        "/p/results");
  s.files = {{"in/a b.txt", {1, 2, 3, 4, 5}, true, {}},
             {"odd\npath:7:", {UINT64_MAX, 9, 0, -4, 0}, true, {}},
             {"results/s/o", {1, 3, 8, 1700000000123456789, 0}, false, {}},
             {"in/racy", {1, 4, 2, 1700000000123456789, 1700000000123456789}, true,
              "sha256:" + std::string(64, 'd')}};
  s.objects = {"sha256:" + std::string(64, 'b')};
  s.tables = 3;
  s.globbed = {0, 2};
  s.entries = {{"s", std::string(64, 'e'), 1, 600, 0, 0, {}, {0, 2}, {0}},
               {"t u", "", 602, 631, 2, 5, {0}, {1, 3, 0}, {}}};
  s.steps = 2;
  s.steps_bytes = 1234;
  s.object_bytes = 1234;
  return s;
}

TEST(Settled, EncodeDecodeRoundTripsAnyBytes) {
  Settled s = sample();
  std::string bytes = encode_settled(s);
  auto back = decode_settled(bytes);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(*back, s);
  EXPECT_EQ(encode_settled(*back), bytes);

  Settled empty;
  auto e = decode_settled(encode_settled(empty));
  ASSERT_TRUE(e.ok()) << e.error().message();
  EXPECT_EQ(*e, empty);
}

// The pipeline's bytes are found again in a context (an edited file is compared with
// them table by table); anything that is not a context has none.
TEST(Settled, AContextGivesBackThePipelinesBytes) {
  std::string bytes = "[[step]]\nname = \"a:b\"\n12:x";
  std::string context =
      settled_context("berth 1", "/p:q", "/p/pipeline.toml", bytes, "file:///s", "/r");
  EXPECT_EQ(settled_context_pipeline(context), std::string_view(bytes));
  EXPECT_EQ(settled_context_pipeline(settled_context("", "", "", "", "", "")), "");
  EXPECT_EQ(settled_context_pipeline(""), std::nullopt);
  EXPECT_EQ(settled_context_pipeline("1:4"), std::nullopt);
  EXPECT_EQ(settled_context_pipeline(context.substr(0, context.find(bytes) + 3)), std::nullopt);
  EXPECT_EQ(settled_context_pipeline("1:41:x1:y1:z99999999999999999999999:w"), std::nullopt);
}

TEST(Settled, OverridesRoundTripAndMustAddUp) {
  Settled s = sample();
  // Two entries of the object replaced: 600 bytes at 1 by 3, 10 at 900 by "{\n}".
  s.overrides = {{1, 600, "{a}"}, {900, 10, "{\n}"}};
  s.steps_bytes = 1234 - 600 + 3 - 10 + 3;
  s.entries[0].length = 3;
  s.entries[1].offset = 5;
  s.entries[1].length = 600;
  auto back = decode_settled(encode_settled(s));
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(*back, s);
  size_t at = 0;
  auto lazy = decode_settled(encode_settled(s), false, &at);
  ASSERT_TRUE(lazy.ok()) << lazy.error().message();
  EXPECT_EQ(lazy->overrides, s.overrides);  // a settled run needs them, not the entries

  auto refused = [](const Settled& r, std::string_view what) {
    auto d = decode_settled(encode_settled(r));
    ASSERT_FALSE(d.ok()) << what;
    EXPECT_NE(d.error().message().find("settled record: at byte "), std::string::npos)
        << d.error().message();
  };
  Settled wrong = s;
  wrong.steps_bytes += 1;
  refused(wrong, "not adding up to the steps' length");
  wrong = s;
  std::swap(wrong.overrides[0], wrong.overrides[1]);
  refused(wrong, "out of order");
  wrong = s;
  wrong.overrides[1].offset = 550;  // overlaps the first
  refused(wrong, "overlapping");
  wrong = s;
  wrong.overrides[1].offset = 1230;  // 10 bytes from 1230 pass the object's end
  refused(wrong, "outside the object");
}

// "[e0,e1,...]" and where each entry lies in it.
std::pair<std::string, EntrySpans> array_of(const std::vector<std::string>& entries) {
  std::string text = "[";
  EntrySpans spans;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) text += ',';
    spans.emplace_back(text.size(), entries[i].size());
    text += entries[i];
  }
  text += ']';
  return {text, spans};
}

TEST(Settled, OverridesMakeTheStepsFromTheObjectAndBack) {
  auto [object, object_spans] = array_of({R"({"name":"a"})", R"({"name":"b"})", "{}"});
  auto [steps, spans] = array_of({R"({"name":"a"})", R"({"name":"b","state":"x"})", "{}"});
  auto o = settled_overrides(object, object_spans, steps, spans, 1024);
  ASSERT_TRUE(o.has_value());
  ASSERT_EQ(o->size(), 1u);
  EXPECT_EQ((*o)[0], (SettledOverride{object_spans[1].first, object_spans[1].second,
                                      R"({"name":"b","state":"x"})"}));
  // A record of those steps: its entries where they lie in the steps.
  Settled s;
  s.object_bytes = object.size();
  s.steps_bytes = steps.size();
  s.overrides = *o;
  for (const auto& [offset, length] : spans) s.entries.push_back({"", "", offset, length, 0, 0, {}, {}, {}});
  auto made = settled_steps_text(s, object);
  ASSERT_TRUE(made.ok()) << made.error().message();
  EXPECT_EQ(*made, steps);
  EXPECT_EQ(settled_object_spans(s), std::optional<EntrySpans>(object_spans));
  // Made again against the same object, the same overrides; against itself, none.
  EXPECT_EQ(settled_overrides(object, *settled_object_spans(s), *made, spans, 1024), o);
  EXPECT_EQ(settled_overrides(steps, spans, steps, spans, 0),
            std::optional<std::vector<SettledOverride>>(std::vector<SettledOverride>{}));
  EXPECT_FALSE(settled_steps_text(s, object + " ").ok());  // not the object's length
  // Entry by entry, never made whole: each entry's text, the object's own bytes where
  // no override replaces it.
  auto shared = files::share_string(object);
  auto recorded = recorded_entries(s, shared);
  ASSERT_NE(recorded, nullptr);
  ASSERT_EQ(recorded->text.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(recorded->text[i], steps.substr(spans[i].first, spans[i].second)) << i;
  }
  EXPECT_EQ(recorded->text[0].data(), shared->data() + object_spans[0].first);
  EXPECT_EQ(recorded->text[2].data(), shared->data() + object_spans[2].first);
  EXPECT_NE(recorded->text[1].data(), shared->data() + object_spans[1].first);
  EXPECT_EQ(recorded_entries(s, files::share_string(object + " ")), nullptr);
  EXPECT_EQ(recorded_entries(s, nullptr), nullptr);

  // Not the same array but for some entries: none.
  auto [fewer, fewer_spans] = array_of({R"({"name":"a"})", "{}"});
  EXPECT_FALSE(settled_overrides(object, object_spans, fewer, fewer_spans, 1024));
  std::string spaced = steps;
  spaced.insert(spans[1].first, " ");
  EntrySpans moved = spans;
  moved[1].first += 1;
  moved[2].first += 1;
  EXPECT_FALSE(settled_overrides(object, object_spans, spaced, moved, 1024));
  // More differences than allowed: none.
  EXPECT_FALSE(settled_overrides(object, object_spans, steps, spans, 10));
  // Entries and overrides that do not line up: no places.
  Settled off = s;
  off.entries[1].offset += 1;
  EXPECT_FALSE(settled_object_spans(off).has_value());
  off = s;
  off.entries.pop_back();
  off.entries.erase(off.entries.begin() + 1);
  EXPECT_FALSE(settled_object_spans(off).has_value());  // an override of no entry
}

TEST(Settled, EntriesAreReadWhenNeeded) {
  Settled s = sample();
  std::string bytes = encode_settled(s);
  size_t at = 0;
  auto lazy = decode_settled(bytes, false, &at);
  ASSERT_TRUE(lazy.ok()) << lazy.error().message();
  EXPECT_TRUE(lazy->entries.empty());
  EXPECT_GT(at, 0u);
  ASSERT_TRUE(decode_settled_entries(bytes, at, *lazy).ok());
  EXPECT_EQ(*lazy, s);
  // Checked all the same: an entry outside the steps is refused without being kept.
  s.entries[1].length = s.steps_bytes;
  EXPECT_FALSE(decode_settled(encode_settled(s), false, &at).ok());
  // A record without steps has none to read.
  Settled empty;
  auto none = decode_settled(encode_settled(empty), false, &at);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(at, 0u);
  EXPECT_TRUE(decode_settled_entries(encode_settled(empty), at, *none).ok());
}

TEST(Settled, StepsPathIsNamedByTheObject) {
  std::string hex(64, 'c');
  EXPECT_EQ(settled_steps_path("/c", "sha256:" + hex), "/c/settled/" + hex + ".json");
  EXPECT_EQ(settled_steps_path("/c", ""), "");
  EXPECT_EQ(settled_steps_path("/c", "sha256:../../etc/passwd"), "");
}

TEST(Settled, TheIndexNamesTheRecordsFile) {
  std::string hex(64, 'c');
  EXPECT_EQ(settled_record_path("/c", "sha256:" + hex), "/c/settled/" + hex + ".record");
  EXPECT_EQ(settled_record_path("/c", "sha256:../x"), "");
  std::string row = settled_pointer("/c/settled/a b\n.record", 1234);
  auto back = read_settled_pointer(row);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->first, "/c/settled/a b\n.record");
  EXPECT_EQ(back->second, 1234u);
  // An old index's row (the record itself), a torn row, trailing bytes: no record.
  EXPECT_EQ(read_settled_pointer(encode_settled(sample())), std::nullopt);
  EXPECT_EQ(read_settled_pointer(row.substr(0, row.size() - 1)), std::nullopt);
  EXPECT_EQ(read_settled_pointer(row + "x"), std::nullopt);
  EXPECT_EQ(read_settled_pointer(settled_pointer("", 5)), std::nullopt);
}

TEST(Settled, BaseLeavesOutOnlyThePipelinesBytes) {
  std::string b = settled_base("e", "/c", "/p", "url", "/r");
  EXPECT_EQ(b, settled_base("e", "/c", "/p", "url", "/r"));
  EXPECT_NE(b, settled_base("f", "/c", "/p", "url", "/r"));
  EXPECT_NE(b, settled_base("e", "/d", "/p", "url", "/r"));
  EXPECT_NE(b, settled_base("e", "/c", "/q", "url", "/r"));
  EXPECT_NE(b, settled_base("e", "/c", "/p", "url2", "/r"));
  EXPECT_NE(b, settled_base("e", "/c", "/p", "url", "/r2"));
  EXPECT_NE(b, settled_context("e", "/c", "/p", "", "url", "/r")) << "never a context";
}

TEST(Settled, ContextChangesWithEveryField) {
  std::string base = settled_context("e", "/c", "/p", "bytes", "url", "/r");
  EXPECT_EQ(base, settled_context("e", "/c", "/p", "bytes", "url", "/r"));
  EXPECT_NE(base, settled_context("f", "/c", "/p", "bytes", "url", "/r"));
  EXPECT_NE(base, settled_context("e", "/d", "/p", "bytes", "url", "/r"));
  EXPECT_NE(base, settled_context("e", "/c", "/q", "bytes", "url", "/r"));
  EXPECT_NE(base, settled_context("e", "/c", "/p", "bytes ", "url", "/r"));
  EXPECT_NE(base, settled_context("e", "/c", "/p", "bytes", "url2", "/r"));
  EXPECT_NE(base, settled_context("e", "/c", "/p", "bytes", "url", "/r2"));
  // Length-prefixed: moving bytes from one field to the next is another context.
  EXPECT_NE(settled_context("ab", "c", "", "", "", ""), settled_context("a", "bc", "", "", "", ""));
}

TEST(Settled, DecodeNamesTheOffsetOfWhatIsWrong) {
  std::string good = encode_settled(sample());
  struct Case {
    std::string bytes;
    std::string want;
  };
  std::vector<Case> cases = {
      {"", "at byte 0: expected 'berth-settled'"},
      {"berth-settled 5\n", "format 5, expected 6"},
      {"berth-settled x\n", "at byte 14: expected the format version"},
      {good.substr(0, good.size() - 1), "expected 'end\n'"},
      {good + "x", "expected the end of the record"},
      {"berth-settled 6\ncontext 99:abc\n", "at byte 27: expected 99 bytes of the context"},
      {"berth-settled 6\ncontext +3:abc\n", "at byte 24: expected the length of the context"},
      {"berth-settled 6\ncontext 0:\npipeline 0:\n", "at byte 27: expected 'base '"},
      {"berth-settled 6\ncontext 0:\nbase 0:\npipeline 0:\nsteps-object 0:\ntables 0 0\ninput 1 2 3 4 x 0:\n",
       "expected a ctime"},
      {"berth-settled 6\ncontext 0:\nbase 0:\npipeline 0:\nsteps-object 0:\ntables 0 0\nrequest 1 1 0\n",
       "expected ' '"},
      {"berth-settled 6\ncontext 0:\nbase 0:\npipeline 0:\nsteps-object 0:\ntables 0 0\nbogus 1\n",
       "expected 'steps '"},
      {"berth-settled 6\ncontext 0:\nbase 0:\npipeline 0:\nsteps-object 0:\nrequest 1 1 0 1\n",
       "expected 'tables '"},
      {"berth-settled 6\ncontext 0:\nbase 0:\npipeline 0:\nsteps-object 0:\ntables 0 0\n"
       "step 0 2 x 0 0 0 0: 1:s\n",
       "expected a table's index"},
      {"berth-settled 6\ncontext 0:\nbase 0:\npipeline 0:\nsteps-object 0:\ntables 0 0\n"
       "step 0 2 0 -1 0 0 0: 1:s\n",
       "expected a foreach combination"},
      {"berth-settled 6\ncontext 0:\nbase 0:\npipeline 0:\nsteps-object 0:\ntables 3 2 2 1\n",
       "expected a table's index, ascending, within the file's"},
      {"berth-settled 6\ncontext 0:\nbase 0:\npipeline 0:\nsteps-object 0:\ntables 3 1 3\n",
       "expected a table's index, ascending, within the file's"},
      // A step reads from steps named before it.
      {"berth-settled 6\ncontext 0:\nbase 0:\npipeline 0:\nsteps-object 0:\ntables 0 0\n"
       "step 0 2 0 0 1 0 0 0 0: 1:s\n",
       "expected at most as many steps read from as come before"},
      {"berth-settled 6\ncontext 0:\nbase 0:\npipeline 0:\nsteps-object 0:\ntables 0 0\n"
       "step 0 2 0 0 0 0 0 0: 1:s\nstep 2 2 0 0 1 1 0 0 0: 1:t\n",
       "expected the index of a step named before"},
      {"berth-settled 6\ncontext 0:\nbase 0:\npipeline 0:\nsteps-object 0:\ntables 0 0\n"
       "tool 99999999999999999999 \n",
       "expected an argument count"},
      // A racy input's hash is never empty: it would be written back as a plain input.
      {"berth-settled 6\ncontext 0:\nbase 0:\npipeline 0:\nsteps-object 0:\ntables 0 0\n"
       "racy-input 1 2 3 4 5 0: 1:a\n",
       "expected a racy input's hash"},
      // A step names files and objects named before it, by index.
      {"berth-settled 6\ncontext 0:\nbase 0:\npipeline 0:\nsteps-object 0:\ntables 0 0\n"
       "input 1 2 3 4 5 1:a\nstep 0 2 0 0 0 1 1 0 0: 1:s\n",
       "expected the index of a file named before"},
      {"berth-settled 6\ncontext 0:\nbase 0:\npipeline 0:\nsteps-object 0:\ntables 0 0\n"
       "step 0 2 0 0 0 0 1 0 0: 1:s\n",
       "expected at most as many objects as the record names"},
      // Its entry lies within the steps.
      {"berth-settled 6\ncontext 0:\nbase 0:\npipeline 0:\nsteps-object 0:\ntables 0 0\n"
       "step 5 6 0 0 0 0 0 0: 1:s\nsteps 1 10 10\nend\n",
       "step 's' lies outside the 10 bytes of the steps"},
      // An override lies within the object, and the object's length is given.
      {"berth-settled 6\ncontext 0:\nbase 0:\npipeline 0:\nsteps-object 0:\ntables 0 0\n"
       "override 8 4 1:x\nsteps 0 7 10\nend\n",
       "an override of 4 bytes at 8 does not lie in order within the 10 bytes"},
      {"berth-settled 6\ncontext 0:\nbase 0:\npipeline 0:\nsteps-object 0:\ntables 0 0\nsteps 0 10\nend\n",
       "expected ' '"},
  };
  for (const auto& c : cases) {
    auto r = decode_settled(c.bytes);
    ASSERT_FALSE(r.ok()) << c.bytes;
    EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
    EXPECT_NE(r.error().message().find(c.want), std::string::npos)
        << "got: " << r.error().message() << "\nwant: " << c.want;
  }
  // Every truncation of a good record fails; none crashes.
  for (size_t n = 0; n < good.size(); ++n) EXPECT_FALSE(decode_settled(good.substr(0, n)).ok());
}

// One parser per line kind stops at the first thing it did not expect; the message
// names the byte and the record's line (counted by the lines read, not by the newlines
// a path may hold) and what was expected there.
TEST(Settled, DecodeNamesTheLineOfABadLineOfEachKind) {
  // Six lines, 74 bytes: the next line is line 7, from byte 74.
  const std::string head =
      "berth-settled 6\ncontext 0:\nbase 0:\npipeline 0:\nsteps-object 0:\ntables 0 0\n";
  ASSERT_EQ(head.size(), 74u);
  struct Case {
    std::string bytes;
    std::string want;  // the whole message
  };
  const std::string p = "settled record: at byte ";
  std::vector<Case> cases = {
      {"berth-settled x\n", p + "14: expected the format version (line 1)"},
      {"berth-settled 6\ncontext 0:\nbase 0:\npipeline x\n",
       p + "44: expected the length of the pipeline's name (line 4)"},
      {"berth-settled 6\ncontext 0:\nbase 0:\npipeline 0:\nsteps-object 0:\ntables 2 1 5\n",
       p + "75: expected a table's index, ascending, within the file's (line 6)"},
      {head + "request 1 1 x 1\n", p + "86: expected a GPU count (line 7)"},
      {head + "tool 1 9:ab\n", p + "83: expected 9 bytes of an argument (line 7)"},
      {head + "input 1 2 3 4 x 0:\n", p + "88: expected a ctime (line 7)"},
      {head + "racy-input 1 2 3 4 5 0: 1:a\n", p + "97: expected a racy input's hash (line 7)"},
      {head + "result 1 2 3 4 5 1:a\n", p + "90: expected ':' (line 7)"},
      {head + "object x\n", p + "81: expected the length of an object name (line 7)"},
      {head + "step 0 2 0 0 0 0 1 0 0: 1:s\n",
       p + "92: expected at most as many objects as the record names (line 7)"},
      {head + "override 1 x 1:a\n", p + "85: expected a length (line 7)"},
      {head + "steps 0 0\nend\n", p + "83: expected ' ' (line 7)"},
      {head + "steps 0 0 0\nen\n", p + "86: expected 'end\n' (line 8)"},
      {head + "steps 0 0 0\nend\nx", p + "90: expected the end of the record (line 9)"},
      // A path holding a newline is still one line.
      {head + "input 1 2 3 4 5 3:a\nb\nobject x\n",
       p + "103: expected the length of an object name (line 8)"},
      // What no one line shows names the record's last line.
      {head + "override 8 4 1:x\nsteps 0 7 10\nend\n",
       p + "104: an override of 4 bytes at 8 does not lie in order within the 10 bytes of the "
           "steps object (line 9)"},
  };
  for (const auto& c : cases) {
    auto r = decode_settled(c.bytes);
    ASSERT_FALSE(r.ok()) << c.bytes;
    EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
    EXPECT_EQ(r.error().message(), c.want) << c.bytes;
    // Read without keeping its steps, the same bytes fail the same way.
    auto lazy = decode_settled(c.bytes, false);
    ASSERT_FALSE(lazy.ok()) << c.bytes;
    EXPECT_EQ(lazy.error().message(), c.want) << c.bytes;
  }
}

// Steps read later, from the middle of the record, name the byte (the line is not
// known there) and keep only the lines read whole.
TEST(Settled, EntriesReadLaterNameTheByteOfABadLine) {
  const std::string head =
      "berth-settled 6\ncontext 0:\nbase 0:\npipeline 0:\nsteps-object 0:\ntables 0 0\n";
  size_t at = 0;
  auto s = decode_settled(head + "step 0 2 0 0 0 0 0 0: 1:s\nsteps 1 10 10\nend\n", false, &at);
  ASSERT_TRUE(s.ok()) << s.error().message();
  ASSERT_EQ(at, head.size());
  std::string bad = head + "step 0 2 0 0 0 0 0 0: 1:s\nstep 0 2 x 0 0 0 0 0: 1:t\n";
  auto r = decode_settled_entries(bad, at, *s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
  EXPECT_EQ(r.error().message(), "settled record: at byte 109: expected a table's index");
  ASSERT_EQ(s->entries.size(), 1u);
  EXPECT_EQ(s->entries[0].name, "s");
}

class Probe : public place::VersionProbe {
 public:
  std::map<std::vector<std::string>, std::string> answers;
  int runs = 0;
  Result<std::string> run(const std::vector<std::string>& argv) override {
    ++runs;
    auto it = answers.find(argv);
    if (it == answers.end()) return fail(Errc::kNotFound, argv.at(0) + ": not found");
    return it->second;
  }
};

class SettledCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "berth-settled-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    nodes_ = {{"n0", {0, 1, 2, 3}, {"0"}, std::nullopt, "", {}}};
    // A hundred inputs and results: enough that the check splits over two threads.
    for (int i = 0; i < 100; ++i) {
      s_.files.push_back({write("in" + std::to_string(i), "i"),
                          stamp(dir_ + "/in" + std::to_string(i)), true, {}});
      std::string r = write("out" + std::to_string(i), "o");
      FileStamp st = stamp(r);
      st.ctime_ns = 0;
      s_.files.push_back({r, st, false, {}});
      auto name = store_.put_object("object " + std::to_string(i));
      ASSERT_TRUE(name.ok());
      s_.objects.push_back(*name);
    }
    s_.requests = {{2, 2, 1, 1}};
    s_.tools = {{{"cc", "--version"}, "cc 12\n"}};
    probe_.answers[{"cc", "--version"}] = "cc 12\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& bytes) {
    std::string p = dir_ + "/" + name;
    std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
    return p;
  }
  static FileStamp stamp(const std::string& p) {
    auto st = FileStamp::of(p);
    EXPECT_TRUE(st.ok());
    return st.ok() ? *st : FileStamp{};
  }
  std::optional<std::string> difference() { return check_settled(s_, nodes_, store_, probe_, true).difference; }

  std::string dir_;
  std::vector<place::PoolNode> nodes_;
  store::MemoryStore store_;
  Probe probe_;
  Settled s_;
};

TEST_F(SettledCheck, UnchangedHolds) {
  EXPECT_EQ(difference(), std::nullopt);
  EXPECT_EQ(probe_.runs, 1);
}

TEST_F(SettledCheck, AnInputRewrittenInPlaceIsADifference) {
  std::string p = s_.files[150].path;  // one the second half checks
  ASSERT_TRUE(s_.files[150].with_ctime);
  write(fs::path(p).filename().string(), "j");
  auto d = difference();
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(*d, p + " changed");
}

TEST_F(SettledCheck, AnInputWithRestoredMtimeIsStillADifference) {
  // Same size, mtime put back: only the ctime tells, and inputs are stamped with it.
  std::string p = s_.files[0].path;
  struct stat before {};
  ASSERT_EQ(::stat(p.c_str(), &before), 0);
  write(fs::path(p).filename().string(), "x");
  timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, p.c_str(), times, 0), 0);
  auto d = difference();
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(*d, p + " changed");
}

TEST_F(SettledCheck, ARacyInputIsReadAgain) {
  // Recorded with its hash, because its stamp was racy when it was hashed (index.h):
  // the same bytes hold, and are counted.
  s_.files[0].racy_hash = "sha256:" + sha256_hex("i");
  auto c = check_settled(s_, nodes_, store_, probe_);
  EXPECT_EQ(c.difference, std::nullopt);
  EXPECT_EQ(c.file_ok[0], 1);
  EXPECT_EQ(c.racy_verified, 1u);
  // The stale stamp: bytes rewritten within the timestamp tick they were hashed in
  // leave every field of the stamp as it was; only the bytes tell. (Made here by a
  // record whose hash is of other bytes than the file's, at the file's own stamp.)
  s_.files[0].racy_hash = "sha256:" + sha256_hex("j");
  c = check_settled(s_, nodes_, store_, probe_);
  EXPECT_EQ(c.difference, s_.files[0].path + " changed");
  EXPECT_EQ(c.file_ok[0], 0);
  EXPECT_EQ(c.file_ok[2], 1) << "the other files are still checked";
}

TEST_F(SettledCheck, EveryFactIsCheckedPastTheFirstDifference) {
  // What an ordinary run reuses from: which facts hold, each of them.
  write("in7", "changed");
  fs::remove(s_.files[9].path);  // out4
  store::MemoryStore half;
  for (size_t i = 0; i < s_.objects.size(); i += 2) {
    ASSERT_TRUE(half.put_object("object " + std::to_string(i)).ok());
  }
  auto c = check_settled(s_, nodes_, half, probe_);
  EXPECT_EQ(c.difference, s_.files[9].path + " changed");
  for (size_t i = 0; i < s_.files.size(); ++i) {
    EXPECT_EQ(c.file_ok[i], i != 9 && i != 14) << s_.files[i].path;
  }
  for (size_t i = 0; i < s_.objects.size(); ++i) EXPECT_EQ(c.object_ok[i], i % 2 == 0) << i;
  EXPECT_TRUE(c.requests_fit);
  EXPECT_TRUE(c.tools_same);
}

TEST(Settled, CheckingFilesInManyDirectoriesHoldsFewDescriptors) {
  // 600 directories of two files each: every parent is one worth opening, and were each
  // held, the descriptor table (shared by the check's two threads) would grow past the
  // 256 a process started from a shell often inherits.
  store::testing::TempDir d;
  Settled s;
  for (int i = 0; i < 600; ++i) {
    std::string dir = d / ("d" + std::to_string(i));
    fs::create_directory(dir);
    for (const char* f : {"/a", "/b"}) {
      std::ofstream(dir + f) << i;
      auto st = FileStamp::of(dir + f);
      ASSERT_TRUE(st.ok());
      s.files.push_back({dir + f, *st, true, {}});
    }
  }
  store::MemoryStore store;
  Probe probe;
  int before = store::testing::fd_table_size();
  ASSERT_GT(before, 0);
  auto c = check_settled(s, {}, store, probe);
  EXPECT_EQ(c.difference, std::nullopt);
  EXPECT_EQ(std::count(c.file_ok.begin(), c.file_ok.end(), 1), 1200);
  EXPECT_LE(store::testing::fd_table_size(), std::max(before, 64)) << before;
}

TEST(Settled, RacyInputsBecomePlainOnceTheWindowHasPassed) {
  Settled s = sample();
  const SettledFile racy = s.files[3];
  ASSERT_FALSE(racy.racy_hash.empty());
  EXPECT_FALSE(settle_racy_inputs(s, racy.stamp.mtime_ns + 1));
  EXPECT_EQ(s.files[3].racy_hash, racy.racy_hash);
  EXPECT_TRUE(settle_racy_inputs(s, racy.stamp.ctime_ns + kRacyWindowNs));
  EXPECT_EQ(s.files[3].racy_hash, "");
  EXPECT_EQ(s.files[0], sample().files[0]) << "a plain input is left alone";
}

TEST_F(SettledCheck, AResultIsStampedWithoutItsCtime) {
  // A new link to a result changes its ctime only: still settled.
  std::string r = s_.files[1].path;
  ASSERT_FALSE(s_.files[1].with_ctime);
  ASSERT_EQ(::link(r.c_str(), (r + ".link").c_str()), 0);
  EXPECT_EQ(difference(), std::nullopt);
  // A removed result is not.
  fs::remove(r);
  auto d = difference();
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(*d, r + " changed");
}

TEST_F(SettledCheck, AMissingObjectIsADifference) {
  store::MemoryStore fresh;  // the same facts against a store without the objects
  auto d = check_settled(s_, nodes_, fresh, probe_, true).difference;
  ASSERT_TRUE(d.has_value());
  EXPECT_NE(d->find("is no longer in the store"), std::string::npos) << *d;
}

TEST_F(SettledCheck, ARequestThatNoLongerFitsIsADifference) {
  nodes_[0].gpu_ids.clear();
  EXPECT_EQ(difference(), "a step no longer fits the pool");
  nodes_ = {{"n0", {0, 1, 2}, {"0"}, std::nullopt, "", {}}};  // 2 tasks x 2 cpus needs 4 cores
  EXPECT_EQ(difference(), "a step no longer fits the pool");
}

TEST_F(SettledCheck, AToolThatAnswersDifferentlyIsADifference) {
  probe_.answers[{"cc", "--version"}] = "cc 13\n";
  EXPECT_EQ(difference(), "tool 'cc' answers differently");
  probe_.answers.clear();  // gone from PATH
  EXPECT_EQ(difference(), "tool 'cc' answers differently");
}

}  // namespace
}  // namespace berth::pipeline
