// PMI_process_mapping from tables of layouts, and read back as MPICH reads it.
#include "wireup/pmi_mapping.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace berth::wireup::pmi {
namespace {

JobMap layout(const std::vector<int>& node_of_rank, size_t nodes) {
  JobMap m;
  m.id = "j";
  for (size_t n = 0; n < nodes; ++n) m.nodes.push_back("n" + std::to_string(n));
  for (int n : node_of_rank) m.procs.push_back(JobMap::Proc{0, n, 0, 0});
  return m;
}

TEST(PmiMapping, FromTable) {
  struct Case {
    std::vector<int> nodes;
    std::string want;
  } cases[] = {
      {{0}, "(vector,(0,1,1))"},
      {{0, 0, 0, 0}, "(vector,(0,1,4))"},
      {{0, 0, 1, 1}, "(vector,(0,2,2))"},
      {{0, 1, 0, 1}, "(vector,(0,2,1))"},  // round robin: one period
      {{0, 1, 2, 3, 0, 1, 2, 3}, "(vector,(0,4,1))"},
      {{0, 0, 0, 1}, "(vector,(0,1,3),(1,1,1))"},
      {{1, 1, 0, 0}, "(vector,(0,2,2))"},          // ids by first appearance
      {{2, 2, 0}, "(vector,(0,1,2),(1,1,1))"},     // dense: node 1 holds no rank
      {{0, 0, 1, 1, 0}, "(vector,(0,2,2))"},       // a period cut short
      {{0, 1, 1, 0}, "(vector,(0,1,1),(1,1,2))"},  // rank 3: the blocks again from the start
      {{0, 0, 1, 2, 2}, "(vector,(0,1,2),(1,1,1),(2,1,2))"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(process_mapping(layout(c.nodes, 3)), c.want);
  }
  EXPECT_EQ(process_mapping(JobMap::local("j", "here", {2, 3})), "(vector,(0,1,5))");
}

// MPICH's reading of a mapping (its nodemap code, redone from its documented rules):
// blocks in order, starting again at the first block whose start is 0.
std::vector<int> mpich_reads(const std::string& mapping, size_t size) {
  std::vector<std::array<int, 3>> blocks;
  size_t i = mapping.find('(', 1);
  while (i != std::string::npos) {
    std::array<int, 3> b{};
    if (std::sscanf(mapping.c_str() + i, "(%d,%d,%d)", &b[0], &b[1], &b[2]) != 3) return {};
    blocks.push_back(b);
    i = mapping.find('(', i + 1);
  }
  std::vector<int> out;
  bool wrapped = false;
  while (out.size() < size) {
    size_t first = 0;
    if (wrapped) {
      while (first < blocks.size() && blocks[first][0] != 0) ++first;
    }
    if (first == blocks.size()) return {};
    for (size_t b = first; b < blocks.size() && out.size() < size; ++b) {
      if (blocks[b][0] == 0) wrapped = true;
      for (int n = 0; n < blocks[b][1]; ++n) {
        for (int k = 0; k < blocks[b][2] && out.size() < size; ++k) out.push_back(blocks[b][0] + n);
      }
    }
  }
  return out;
}

TEST(PmiMapping, MpichReadsBackEveryLayout) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    size_t nodes = 1 + rng() % 5;
    size_t size = 1 + rng() % 24;
    std::vector<int> node_of_rank;
    if (trial % 3 == 0) {  // cyclic layouts, the ones the repeating form exists for
      for (size_t r = 0; r < size; ++r) node_of_rank.push_back(static_cast<int>(r % nodes));
    } else {
      for (size_t r = 0; r < size; ++r) node_of_rank.push_back(static_cast<int>(rng() % nodes));
    }
    // What MPICH should read: dense ids by first appearance.
    std::vector<int> dense(nodes, -1), want;
    int next = 0;
    for (int n : node_of_rank) {
      if (dense[static_cast<size_t>(n)] < 0) dense[static_cast<size_t>(n)] = next++;
      want.push_back(dense[static_cast<size_t>(n)]);
    }
    std::string mapping = process_mapping(layout(node_of_rank, nodes));
    EXPECT_EQ(mpich_reads(mapping, size), want) << mapping;
  }
}

}  // namespace
}  // namespace berth::wireup::pmi
