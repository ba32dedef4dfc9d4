// PMI_process_mapping (pmi_mapping.h, spec 07 §3.3).
#include "wireup/pmi_mapping.h"

#include <fmt/format.h>

#include <map>
#include <vector>

namespace berth::wireup::pmi {
namespace {

struct Block {
  int start = 0;
  int count = 0;
  int size = 0;
};

// Blocks for the node sequence `seq` (a node id per rank): runs of equal ids, each run
// extending the previous block when it is on the next node with as many ranks.
std::vector<Block> blocks_of(const std::vector<int>& seq) {
  std::vector<Block> out;
  size_t i = 0;
  while (i < seq.size()) {
    size_t j = i;
    while (j < seq.size() && seq[j] == seq[i]) ++j;
    int node = seq[i];
    int run = static_cast<int>(j - i);
    if (!out.empty() && out.back().start + out.back().count == node && out.back().size == run) {
      ++out.back().count;
    } else {
      out.push_back(Block{node, 1, run});
    }
    i = j;
  }
  return out;
}

// The shortest period p of `seq`: seq[r] == seq[r % p] for every r (the last period
// may be cut short). Knuth-Morris-Pratt's failure function gives it in one pass.
size_t period_of(const std::vector<int>& seq) {
  std::vector<size_t> fail(seq.size(), 0);
  for (size_t i = 1; i < seq.size(); ++i) {
    size_t k = fail[i - 1];
    while (k > 0 && seq[i] != seq[k]) k = fail[k - 1];
    if (seq[i] == seq[k]) ++k;
    fail[i] = k;
  }
  return seq.empty() ? 0 : seq.size() - fail.back();
}

std::string render(const std::vector<Block>& blocks) {
  std::string out = "(vector";
  for (const Block& b : blocks) out += fmt::format(",({},{},{})", b.start, b.count, b.size);
  out += ')';
  return out;
}

}  // namespace

std::string process_mapping(const JobMap& map) {
  // Dense ids by first appearance: rank 0's node is 0.
  std::map<int, int> id_of;
  std::vector<int> seq;
  seq.reserve(map.procs.size());
  for (const JobMap::Proc& p : map.procs) {
    auto it = id_of.try_emplace(p.node, static_cast<int>(id_of.size())).first;
    seq.push_back(it->second);
  }
  std::vector<Block> plain = blocks_of(seq);
  auto period_end = seq.begin() + static_cast<std::ptrdiff_t>(period_of(seq));
  std::vector<Block> cyclic = blocks_of(std::vector<int>(seq.begin(), period_end));
  return render(cyclic.size() < plain.size() ? cyclic : plain);
}

}  // namespace berth::wireup::pmi
