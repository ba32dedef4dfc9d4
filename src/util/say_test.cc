// Saying what cannot be returned (say.h): to the program's sink, or nowhere.
#include "util/say.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace berth {
namespace {

std::vector<std::string> g_heard;

TEST(Say, GoesToTheProgramsSinkAndNowhereWithoutOne) {
  set_say(nullptr);
  say(SayLevel::kWarning, "unheard");
  set_say([](SayLevel level, const char* text) {
    g_heard.push_back((level == SayLevel::kWarning ? "warning: " : "fatal: ") + std::string(text));
  });
  say(SayLevel::kWarning, "the guard could not start");
  say(SayLevel::kFatal, "no libcrypto");
  set_say(nullptr);
  say(SayLevel::kWarning, "unheard again");
  EXPECT_EQ(g_heard,
            (std::vector<std::string>{"warning: the guard could not start", "fatal: no libcrypto"}));
}

}  // namespace
}  // namespace berth
