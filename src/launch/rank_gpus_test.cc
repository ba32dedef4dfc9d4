// Per-rank GPUs (rank_gpus.h) and the variables that give them.
#include "launch/rank_gpus.h"

#include <gtest/gtest.h>

namespace berth::launch {
namespace {

using Lists = std::vector<std::vector<std::string>>;

TEST(RankGpus, EachRankItsOwnInOrder) {
  RankGpus g{2, "CUDA_VISIBLE_DEVICES", {"0", "1", "2", "3"}, {}};
  auto got = assign_rank_gpus(g, {{0}, {1}});
  ASSERT_TRUE(got.ok()) << got.error().message();
  EXPECT_EQ(*got, (Lists{{"0", "1"}, {"2", "3"}}));
}

TEST(RankGpus, NextToItsCoreFirstForEveryRank) {
  // GPUs 2 and 3 next to CPU 0; 0 and 1 next to CPU 8. Rank 0 on CPU 8 and rank 1 on
  // CPU 0 each get the pair next to them; rank 0 filling up first must not take rank
  // 1's.
  RankGpus g{2, "ROCR_VISIBLE_DEVICES", {"0", "1", "2", "3"}, {{8}, {8}, {0}, {0}}};
  auto got = assign_rank_gpus(g, {{8, 9}, {0, 1}});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, (Lists{{"0", "1"}, {"2", "3"}}));
  auto swapped = assign_rank_gpus(g, {{0}, {8}});
  ASSERT_TRUE(swapped.ok());
  EXPECT_EQ(*swapped, (Lists{{"2", "3"}, {"0", "1"}}));
  // One near device each, the rest filled lowest-first.
  RankGpus one_near{2, "CUDA_VISIBLE_DEVICES", {"0", "1", "2", "3"}, {{1}, {0}}};
  auto mixed = assign_rank_gpus(one_near, {{0}, {1}});
  ASSERT_TRUE(mixed.ok());
  EXPECT_EQ(*mixed, (Lists{{"1", "2"}, {"0", "3"}}));
}

TEST(RankGpus, TooManyIsRefusedAndNoneIsNothing) {
  RankGpus g{3, "CUDA_VISIBLE_DEVICES", {"0", "1", "2", "3"}, {}};
  auto refused = assign_rank_gpus(g, {{0}, {1}});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), Errc::kRefused);
  EXPECT_NE(refused.error().message().find("need 6 GPUs, but 4 are usable"), std::string::npos);
  auto none = assign_rank_gpus(RankGpus{}, {{0}, {1}});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, (Lists{{}, {}}));
  auto novar = assign_rank_gpus(RankGpus{1, "", {"0"}, {}}, {{0}});
  EXPECT_FALSE(novar.ok());
}

TEST(RankGpus, TheVariablesThatGiveDevices) {
  Env empty;
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(gpu_env("CUDA_VISIBLE_DEVICES", {"1", "3"}, empty),
            (Pairs{{"CUDA_VISIBLE_DEVICES", "1,3"}, {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}}));
  // None is the variable set empty, not left unset.
  EXPECT_EQ(gpu_env("ROCR_VISIBLE_DEVICES", {}, empty), (Pairs{{"ROCR_VISIBLE_DEVICES", ""}}));
  // A scheduler's numbering around berth is kept: no order added.
  Env slurm;
  slurm.set("CUDA_VISIBLE_DEVICES", "2,3");
  EXPECT_EQ(gpu_env("CUDA_VISIBLE_DEVICES", {"3"}, slurm),
            (Pairs{{"CUDA_VISIBLE_DEVICES", "3"}}));
  EXPECT_TRUE(gpu_env("", {"0"}, empty).empty());
  // Intel tile ids are composite syntax, and say so: Level Zero's default (flat)
  // hierarchy would read "1.0" otherwise. Whole cards need no statement.
  EXPECT_EQ(gpu_env("ZE_AFFINITY_MASK", {"0.1", "1.0"}, empty),
            (Pairs{{"ZE_AFFINITY_MASK", "0.1,1.0"}, {"ZE_FLAT_DEVICE_HIERARCHY", "COMPOSITE"}}));
  EXPECT_EQ(gpu_env("ZE_AFFINITY_MASK", {"2"}, empty), (Pairs{{"ZE_AFFINITY_MASK", "2"}}));
}

}  // namespace
}  // namespace berth::launch
