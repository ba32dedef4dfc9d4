#include "util/flat_index.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace berth {
namespace {

struct TextAt {
  const std::vector<std::string>* texts;
  std::string_view operator()(size_t i) const { return (*texts)[i]; }
};

TEST(FlatIndex, FindsWhatWasInsertedAndNothingElse) {
  std::vector<std::string> texts = {"a", "b", "", "n000001", "n000002"};
  FlatIndex<TextAt> index{TextAt{&texts}};
  EXPECT_EQ(index.find("a"), std::nullopt);  // empty
  for (size_t i = 0; i < texts.size(); ++i) index.insert(i);
  EXPECT_EQ(index.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) EXPECT_EQ(index.find(texts[i]), i) << texts[i];
  EXPECT_EQ(index.find("c"), std::nullopt);
  EXPECT_EQ(index.find("n00000"), std::nullopt);
}

TEST(FlatIndex, GrowsPastItsReservation) {
  std::vector<std::string> texts;
  for (int i = 0; i < 10000; ++i) texts.push_back("s-" + std::to_string(i));
  FlatIndex<TextAt> index{TextAt{&texts}};
  index.reserve(3);
  for (size_t i = 0; i < texts.size(); ++i) index.insert(i);
  for (size_t i = 0; i < texts.size(); ++i) ASSERT_EQ(index.find(texts[i]), i);
}

// Random inserts and erases agree with a std::map, whatever the probe sequences look
// like after an erase has shifted entries back.
TEST(FlatIndex, EraseKeepsEveryOtherEntryFindable) {
  std::vector<std::string> texts;
  for (int i = 0; i < 3000; ++i) texts.push_back(std::to_string(i * 7919 % 10007));
  FlatIndex<TextAt> index{TextAt{&texts}};
  std::map<std::string, size_t> want;
  uint32_t x = 1;
  auto next = [&x] {
    x = x * 1103515245u + 12345u;
    return (x >> 16) % 3000;
  };
  for (int round = 0; round < 20000; ++round) {
    size_t i = next();
    if (want.count(texts[i])) {
      index.erase(i);
      want.erase(texts[i]);
    } else {
      index.insert(i);
      want[texts[i]] = i;
    }
    if (round % 1000 == 0) {
      for (size_t k = 0; k < texts.size(); ++k) {
        auto it = want.find(texts[k]);
        ASSERT_EQ(index.find(texts[k]),
                  it == want.end() ? std::nullopt : std::optional<size_t>(it->second));
      }
    }
  }
  EXPECT_EQ(index.size(), want.size());
}

TEST(FlatIndex, ErasingWhatIsAbsentChangesNothing) {
  std::vector<std::string> texts = {"a", "b"};
  FlatIndex<TextAt> index{TextAt{&texts}};
  index.erase(0);  // empty
  index.insert(0);
  index.erase(1);
  EXPECT_EQ(index.size(), 1u);
  EXPECT_EQ(index.find("a"), 0u);
}

}  // namespace
}  // namespace berth
