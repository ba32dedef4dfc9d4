#include "topo/topology_xml.h"

#include <gtest/gtest.h>

namespace berth::topo {
namespace {

TEST(TopologyXml, IsThisNodesWholeTopologyReadOnce) {
  auto a = topology_xml();
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_NE(a->find("<topology"), std::string::npos);
  EXPECT_NE(a->find("type=\"PU\""), std::string::npos);
  EXPECT_NE(a->find("type=\"Core\""), std::string::npos);
  EXPECT_EQ(a->back(), '\n') << "no NUL counted into the text";
  auto b = topology_xml();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*a, *b);
}

}  // namespace
}  // namespace berth::topo
