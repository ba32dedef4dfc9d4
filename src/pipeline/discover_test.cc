// Discovery: foreach values from a fake file system's listings.
#include "pipeline/discover.h"

#include <gtest/gtest.h>

#include "pipeline/graph.h"

#include <map>
#include <set>

namespace berth::pipeline {
namespace {

// A tree of paths (files and directories), relative to the pipeline's directory "d".
struct FakeFs {
  std::set<std::string> paths;
  std::vector<std::string> listed;
  int changes = 0;  // bumps the stamp of every directory listed after it is set
  DiscoveryFs fs() {
    DiscoveryFs f;
    f.list = [this](const std::string& dir) -> Result<std::vector<std::string>> {
      listed.push_back(dir);
      if (!paths.count(dir)) return fail(Errc::kNotFound, dir + ": no such directory");
      std::vector<std::string> out;
      for (const auto& p : paths) {
        if (p.size() > dir.size() + 1 && p.compare(0, dir.size() + 1, dir + "/") == 0 &&
            p.find('/', dir.size() + 1) == std::string::npos) {
          out.push_back(p.substr(dir.size() + 1));
        }
      }
      return out;
    };
    f.exists = [this](const std::string& p) { return paths.count(p) > 0; };
    f.stamp = [this](const std::string& dir) -> std::optional<FileStamp> {
      if (!paths.count(dir)) return std::nullopt;
      FileStamp st;
      st.size = static_cast<int64_t>(dir.size());
      st.mtime_ns = changes++ > 0 && unstable ? changes : 1;
      return st;
    };
    return f;
  }
  bool unstable = false;
};

PipelineFile file_with(const std::string& pattern, const std::string& other_foreach = "") {
  std::string toml = "[[step]]\nname = 'align-{s}" + std::string(other_foreach.empty() ? "" : "-{k}") +
                     "'\nforeach = { s = { glob = '" + pattern + "' }" +
                     (other_foreach.empty() ? "" : ", " + other_foreach) + " }\nrun = 'x'\n";
  auto f = parse_pipeline(toml, "d/p.toml");
  EXPECT_TRUE(f.ok()) << f.error().message();
  return std::move(*f);
}

std::vector<std::string> values(const std::string& pattern, FakeFs& fake) {
  PipelineFile f = file_with(pattern);
  auto d = discover_foreach(f, fake.fs());
  EXPECT_TRUE(d.ok()) << d.error().message();
  return f.steps[0].foreach["s"];
}

TEST(Discover, ThePlaceholdersMatchesSortedAndDistinct) {
  FakeFs fake;
  fake.paths = {"d",           "d/data",        "d/data/b.fastq",  "d/data/a.fastq",
                "d/data/c.fq", "d/data/.h.fastq", "d/data/a.b.fastq", "d/data/.fastq",
                "d/runs",      "d/runs/r1",     "d/runs/r1/reads.fq", "d/runs/r2",
                "d/runs/r3",   "d/runs/r3/reads.fq", "d/pairs", "d/pairs/x_1_x.txt",
                "d/pairs/y_1_z.txt"};
  EXPECT_EQ(values("data/{s}.fastq", fake),
            (std::vector<std::string>{"a", "a.b", "b"}));  // not c.fq, not hidden ones
  EXPECT_EQ(values("data/.{s}.fastq", fake), (std::vector<std::string>{"h"}));
  // A directory per value; the file in it must exist.
  EXPECT_EQ(values("runs/{s}/reads.fq", fake), (std::vector<std::string>{"r1", "r3"}));
  // The placeholder twice: one value for both.
  EXPECT_EQ(values("pairs/{s}_1_{s}.txt", fake), (std::vector<std::string>{"x"}));
  // '*' is literal, not a wildcard.
  fake.paths.insert("d/data/*.fastq");
  EXPECT_EQ(values("data/*.{s}", fake), (std::vector<std::string>{"fastq"}));
}

TEST(Discover, ValuesExpandWithOtherForeachKeys) {
  FakeFs fake;
  fake.paths = {"d", "d/in", "d/in/x.txt", "d/in/y.txt"};
  PipelineFile f = file_with("in/{s}.txt", "k = [1, 2]");
  ASSERT_TRUE(discover_foreach(f, fake.fs()).ok());
  auto g = expand(f, [](const std::string&) { return true; });
  ASSERT_TRUE(g.ok()) << g.error().message();
  std::vector<std::string> names;
  for (const auto& s : g->steps) names.push_back(s.name);
  // Keys sorted, the first varying slowest (spec 04 §3.1): k, then s.
  EXPECT_EQ(names, (std::vector<std::string>{"align-x-1", "align-y-1", "align-x-2", "align-y-2"}));
}

TEST(Discover, AbsolutePatternsStartAtTheRoot) {
  FakeFs fake;
  fake.paths = {"/", "/srv", "/srv/q.dat"};
  EXPECT_EQ(values("/srv/{s}.dat", fake), (std::vector<std::string>{"q"}));
}

TEST(Discover, BadOrEmptyPatternsAreErrorsNamingThem) {
  struct Case {
    std::string pattern, want;
  };
  const Case cases[] = {
      {"data/{s}.fastq",
       "step 'align-{s}': foreach.s.glob: \"data/{s}.fastq\": matches no file (looked from d)"},
      {"data/x.fastq", "foreach.s.glob: \"data/x.fastq\": does not hold {s}, the key it gives"},
      {"data/{t}/{s}", "\"data/{t}/{s}\": holds {t}: a glob may hold only its own key, {s}"},
      {"data/{s", "\"data/{s\": "},
  };
  for (const Case& c : cases) {
    FakeFs fake;
    fake.paths = {"d", "d/data", "d/data/other.txt"};
    PipelineFile f = file_with(c.pattern);
    auto d = discover_foreach(f, fake.fs());
    ASSERT_FALSE(d.ok()) << c.pattern;
    EXPECT_EQ(d.error().code(), Errc::kInvalidInput);
    EXPECT_NE(d.error().message().find(c.want), std::string::npos) << d.error().message();
    EXPECT_EQ(d.error().message().rfind("d/p.toml:3:", 0), 0u) << d.error().message();
  }
}

TEST(Discover, SaysWhichDirectoriesItReadAndWhetherTheyHeldStill) {
  FakeFs fake;
  fake.paths = {"d", "d/runs", "d/runs/r1", "d/runs/r1/reads.fq"};
  PipelineFile f = file_with("runs/{s}/reads.fq");
  auto d = discover_foreach(f, fake.fs());
  ASSERT_TRUE(d.ok());
  std::vector<std::string> dirs;
  for (const auto& [dir, st] : d->dirs) dirs.push_back(dir);
  EXPECT_EQ(dirs, (std::vector<std::string>{"d/runs", "d/runs/r1"}));
  EXPECT_TRUE(d->stable);
  fake.unstable = true;
  PipelineFile g = file_with("runs/{s}/reads.fq");
  d = discover_foreach(g, fake.fs());
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->stable);
}

TEST(Discover, AFileWithoutGlobsIsLeftAlone) {
  auto f = parse_pipeline("[[step]]\nname = 'a-{x}'\nforeach = { x = [1] }\nrun = 'x'\n", "p.toml");
  ASSERT_TRUE(f.ok());
  FakeFs fake;
  auto d = discover_foreach(*f, fake.fs());
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->dirs.empty());
  EXPECT_TRUE(fake.listed.empty());
  EXPECT_EQ(f->steps[0].foreach["x"], (std::vector<std::string>{"1"}));
}

}  // namespace
}  // namespace berth::pipeline
