#include "pipeline/foreach_table.h"

#include <gtest/gtest.h>

namespace berth::pipeline {
namespace {

TEST(TableFile, ReadsRowsAsColumnsVerbatim) {
  auto t = parse_table_file(
      "\xEF\xBB\xBFmodel,rate,note\r\n"
      "decay,0.10,\"a, b\"\r\n"
      "\r\n"
      "growth,1e-3,\"say \"\"hi\"\"\nthere\"\n"
      "x, 2 ,",
      "s.csv", 10);
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->keys, (std::vector<std::string>{"model", "rate", "note"}));
  ASSERT_EQ(t->rows(), 3u);
  EXPECT_EQ(t->columns[0], (std::vector<std::string>{"decay", "growth", "x"}));
  // Text, as written: not trimmed, not read as numbers.
  EXPECT_EQ(t->columns[1], (std::vector<std::string>{"0.10", "1e-3", " 2 "}));
  EXPECT_EQ(t->columns[2], (std::vector<std::string>{"a, b", "say \"hi\"\nthere", ""}));
}

TEST(TableFile, RejectsBadTablesNamingLineAndColumn) {
  struct Case {
    const char* text;
    const char* want;
  } cases[] = {
      {"", "s.csv: no header row"},
      {"a,b\n", "s.csv: a header (a,b) and no row"},
      {"a,b\n1,2\n3\n", "s.csv:3:1: a row of 1 field(s); the header has 2 (a,b)"},
      {"a,b\n1,2,3\n", "s.csv:2:1: a row of 3 field(s)"},
      {"a,a\n1,2\n", "s.csv:1:1: header: 'a' is given twice"},
      {"a-b\n1\n", "s.csv:1:1: header: 'a-b' has a character outside"},
      {"cores\n1\n", "s.csv:1:1: header: 'cores' is reserved"},
      {"a\n\"open\n", "s.csv:2:1: a quoted field is never closed"},
      {"a\n\"x\"y\n", "s.csv:2:4: a quoted field must end at its closing quote"},
      {"a\nx\"y\n", "s.csv:2:2: a quote inside an unquoted field"},
      {"a\n1\n2\n3\n", "s.csv:4:1: more than 2 rows"},
  };
  for (const Case& c : cases) {
    auto t = parse_table_file(c.text, "s.csv", 2);
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_NE(t.error().message().find(c.want), std::string::npos)
        << "text: " << c.text << "\nwant: " << c.want << "\ngot:  " << t.error().message();
  }
}

}  // namespace
}  // namespace berth::pipeline
