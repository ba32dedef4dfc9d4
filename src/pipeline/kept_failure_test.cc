// Kept failures (kept_failure.h): paths rebased, the rerun script, a directory kept.
#include "pipeline/kept_failure.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>

#include "util/files.h"

namespace berth::pipeline {
namespace {

namespace fs = std::filesystem;

TEST(KeptFailure, RebasePathsRewritesOnlyPathsBelowTheStage) {
  struct Case {
    const char* text;
    const char* to;
    const char* want;
  } cases[] = {
      {"declared output 'x' was not written (/s/1.2/out/x)", "", "declared output 'x' was not "
                                                                 "written (out/x)"},
      {"cat /s/1.2/in/a /s/1.2/in/b", "/k/step", "cat /k/step/in/a /k/step/in/b"},
      {"cat /s/1.2/in/a", ".", "cat ./in/a"},
      // Another step's directory, whose name begins with this one's: untouched.
      {"/s/1.20/out/x and /s/1.2", "", "/s/1.20/out/x and /s/1.2"},
      {"no paths", "/k", "no paths"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(rebase_paths(c.text, "/s/1.2", c.to), c.want) << c.text;
  }
}

TEST(KeptFailure, RerunScriptQuotesEveryWordAndKeepsTheStatus) {
  FailedStep f;
  f.name = "check";
  f.argv = {"sh", "-c", "cat ./in/a; exit 3"};
  f.exit_code = 3;
  std::string script = rerun_script(f);
  EXPECT_NE(script.find("exited with status 3"), std::string::npos) << script;
  EXPECT_NE(script.find("command.sh sh -c 'cat ./in/a; exit 3'\n"), std::string::npos) << script;
  EXPECT_NE(script.find("cd \"$(dirname \"$0\")\""), std::string::npos) << script;
}

TEST(KeptFailure, KeepsTheDirectoryReplacingAnEarlierOneAndRerunsIt) {
  char tmpl[] = "/tmp/berth-kept-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  const std::string stage = root + "/staging/9.1";
  fs::create_directories(stage + "/in");
  fs::create_directories(stage + "/out");
  std::ofstream(stage + "/in/a") << "input bytes\n";
  // An earlier failure of the same step: replaced, nothing of it left.
  fs::create_directories(root + "/failed/check/old");

  FailedStep f;
  f.name = "check";
  f.stage = stage;
  f.argv = {"/bin/sh", "-c", "cat " + stage + "/in/a; echo \"v=$V\" > " + stage +
                                 "/out/o; exit 4"};
  f.env.set("V", "it's set");
  f.env.set("PATH", "/usr/bin:/bin");
  f.exit_code = 4;
  f.output = "what it printed\n";
  auto kept = keep_failed_step(f, root + "/failed");
  ASSERT_TRUE(kept.ok()) << kept.error().message();
  EXPECT_EQ(*kept, root + "/failed/check");
  EXPECT_FALSE(fs::exists(stage));
  EXPECT_FALSE(fs::exists(*kept + "/old"));
  EXPECT_EQ(*files::read_file(*kept + "/exit-status"), "4\n");
  EXPECT_EQ(*files::read_file(*kept + "/output"), "what it printed\n");
  EXPECT_EQ(*files::read_file(*kept + "/env"),
            "export PATH=/usr/bin:/bin\nexport V='it'\\''s set'\n");

  // Run from elsewhere, it fails the same way, on the kept inputs, in the kept env.
  std::string cmd = "cd / && env -i " + *kept + "/command.sh >" + root + "/rerun.txt";
  int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 4);
  EXPECT_EQ(*files::read_file(root + "/rerun.txt"), "input bytes\n");
  EXPECT_EQ(*files::read_file(*kept + "/out/o"), "v=it's set\n");
  fs::remove_all(root);
}

}  // namespace
}  // namespace berth::pipeline
