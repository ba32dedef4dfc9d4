#include "alloc/display.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace berth::alloc {
namespace {

// The JSON as nlohmann builds and dumps it (spec 01 §3.1): what to_json() must write,
// byte for byte.
std::string reference(const Allocation& a) {
  nlohmann::ordered_json j;
  j["version"] = 1;
  j["owner"] = a.owner;
  j["scheduler_owned"] = a.scheduler_owned;
  j["job_id"] = a.job_id;
  j["total_slots"] = a.total_slots;
  j["nodes"] = nlohmann::ordered_json::array();
  for (const Node& n : a.nodes) {
    nlohmann::ordered_json jn;
    jn["index"] = n.index;
    jn["name"] = n.name;
    jn["rawname"] = n.rawname;
    jn["aliases"] = n.aliases;
    jn["slots"] = n.slots;
    jn["slots_max"] = n.slots_max;
    jn["slots_given"] = n.slots_given;
    jn["state"] = node_state_name(n.state);
    jn["local"] = n.local;
    if (!n.user.empty()) jn["user"] = n.user;
    j["nodes"].push_back(std::move(jn));
  }
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

Node node(size_t index, std::string name) {
  Node n;
  n.index = index;
  n.rawname = name;
  n.name = std::move(name);
  n.slots = 4;
  return n;
}

TEST(Display, JsonIsWhatNlohmannWrites) {
  Allocation a;
  a.owner = "slurm";
  a.scheduler_owned = true;
  a.job_id = "4242";
  EXPECT_EQ(to_json(a), reference(a));  // no nodes at all

  a.nodes.push_back(node(0, "n1"));
  Node fqdn = node(1, "node1");
  fqdn.rawname = "node1.cluster.org";
  fqdn.aliases = {"node1.cluster.org"};
  fqdn.slots_given = true;
  fqdn.local = true;
  a.nodes.push_back(fqdn);
  Node two = node(2, "n2");
  two.aliases = {"a", "b"};
  two.user = "me";
  two.state = NodeState::kNotIncluded;
  two.slots_max = 8;
  a.nodes.push_back(two);
  Node odd = node(3, "q\"uote\\ \x01\n\t \xc3\xa9 \xff\xfe bad UTF-8 \x7f");
  odd.aliases = {"\xe2\x9c\x93", ""};
  odd.user = "\xc3";
  odd.slots = INT64_MAX;
  a.nodes.push_back(odd);
  // A plain node at its longest: every number of twenty characters, the longest state
  // and both booleans false.
  Node widest = node(SIZE_MAX, "w");
  widest.slots = INT64_MIN;
  widest.slots_max = INT64_MIN;
  widest.state = NodeState::kNotIncluded;
  a.nodes.push_back(widest);
  // A plain name beside a raw name of its length that is not: each is looked at.
  Node same_size = node(4, "ab");
  same_size.rawname = "a\"";
  same_size.slots_given = true;
  a.nodes.push_back(same_size);
  a.total_slots = 12;
  EXPECT_EQ(to_json(a), reference(a));
  EXPECT_FALSE(nlohmann::json::parse(to_json(a), nullptr, false).is_discarded());
}

TEST(Display, LargeJsonIsHandedOnInPieces) {
  Allocation a;
  a.owner = "slurm";
  a.scheduler_owned = true;
  a.job_id = "1";
  for (size_t i = 0; i < 5000; ++i) a.nodes.push_back(node(i, "n" + std::to_string(i)));
  a.total_slots = 20000;
  std::string joined;
  int pieces = 0;
  write_json(a, [&](std::string_view piece) {
    EXPECT_FALSE(piece.empty());
    joined.append(piece);
    ++pieces;
  });
  EXPECT_GT(pieces, 1);
  EXPECT_EQ(joined, reference(a));
}

}  // namespace
}  // namespace berth::alloc
