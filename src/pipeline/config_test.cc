#include "pipeline/config.h"

#include <gtest/gtest.h>

namespace berth::pipeline {
namespace {

std::map<std::string, Param> declared() {
  return {{"steps", {Param::Type::kInteger, "100"}},
          {"rate", {Param::Type::kFloat, "0.5"}},
          {"verbose", {Param::Type::kBoolean, "false"}},
          {"model", {Param::Type::kString, "ocean"}}};
}

TEST(Config, OverridesAreReadAsTheDeclaredTypeLaterWinning) {
  auto c = declared();
  ConfigOverrides o;
  o.assignments = {"steps=200", "rate=0.10", "verbose=true", "model=a=b c", "steps=300"};
  ASSERT_TRUE(apply_config_overrides(c, o, "p.toml").ok());
  EXPECT_EQ(c.at("steps"), (Param{Param::Type::kInteger, "300"}));
  EXPECT_EQ(c.at("rate"), (Param{Param::Type::kFloat, "0.1"}));  // one text per value
  EXPECT_EQ(c.at("verbose").text, "true");
  EXPECT_EQ(c.at("model").text, "a=b c");  // split at the first '=', verbatim
}

TEST(Config, AFileAppliesBeforeAssignments) {
  auto c = declared();
  ASSERT_TRUE(apply_config_text(c, "steps = 7\nrate = 2\n", "f.toml", "p.toml").ok());
  EXPECT_EQ(c.at("steps").text, "7");
  EXPECT_EQ(c.at("rate"), (Param{Param::Type::kFloat, "2"}));  // an integer is a float too
}

TEST(Config, RejectsWhatIsNotDeclaredOrNotOfItsType) {
  struct Case {
    std::string assignment;
    const char* want;
  } cases[] = {
      {"step=5", "--config: 'step' is not declared in p.toml's [config] (did you mean 'steps'?)"},
      {"zzz=5", "--config: 'zzz' is not declared in p.toml's [config]"},
      {"steps", "--config: 'steps' is not NAME=VALUE"},
      {"=5", "is not NAME=VALUE"},
      {"steps=5x", "--config: steps: '5x' must be an integer, as [config] declares it"},
      {"steps=", "must be an integer"},
      {"rate=fast", "--config: rate: 'fast' must be a number"},
      {"rate= 1", "must be a number"},
      {"verbose=yes", "--config: verbose: 'yes' must be true or false"},
  };
  for (const Case& c : cases) {
    auto cfg = declared();
    ConfigOverrides o;
    o.assignments = {c.assignment};
    auto r = apply_config_overrides(cfg, o, "p.toml");
    ASSERT_FALSE(r.ok()) << c.assignment;
    EXPECT_NE(r.error().message().find(c.want), std::string::npos)
        << "want: " << c.want << "\ngot:  " << r.error().message();
    EXPECT_EQ(cfg, declared()) << "a refused override changes nothing";
  }
  auto cfg = declared();
  auto r = apply_config_text(cfg, "steps = \"many\"\n", "f.toml", "p.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(),
            "f.toml:1:9: steps: must be an integer, as [config] declares it, not string");
  r = apply_config_text(cfg, "modle = \"x\"\n", "f.toml", "p.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("f.toml:1:9: modle: 'modle' is not declared in p.toml's "
                                     "[config] (did you mean 'model'?)"),
            std::string::npos)
      << r.error().message();
  std::map<std::string, Param> none;
  ConfigOverrides o;
  o.files = {"/nonexistent/berth-config.toml"};
  r = apply_config_overrides(none, o, "p.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("--configfile"), std::string::npos) << r.error().message();
}

}  // namespace
}  // namespace berth::pipeline
