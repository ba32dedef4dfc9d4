// The PMI wire codec, from tables of inputs and outputs.
#include "wireup/pmi_wire.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace berth::wireup::pmi {
namespace {

using namespace std::string_literals;

// "pmi1 <size>", "pmi2 <size>", "more" or "error: <message>".
std::string frame_of(std::string_view buf) {
  auto f = next_frame(buf);
  if (!f.ok()) return "error: " + f.error().message();
  if (!f->has_value()) return "more";
  return ((*f)->wire == Wire::kPmi1 ? "pmi1 " : "pmi2 ") + std::to_string((*f)->size);
}

TEST(PmiWire, FramesFromTable) {
  const std::string long_line(kMaxPmi1Line, 'x');
  struct Case {
    std::string buf;
    std::string want;
  } cases[] = {
      {"", "more"},
      {"cmd=init pmi_version=1 pmi_subversion=1\n", "pmi1 40"},
      {"cmd=init pmi_version=1", "more"},
      {"cmd=a\ncmd=b\n", "pmi1 6"},
      {"\n", "pmi1 1"},  // framed; the decoder refuses it
      {"m", "more"},
      {"mcmd", "more"},
      {"mcmd=spawn\nnprocs=1\n", "more"},
      {"mcmd=spawn\nnprocs=1\nendcmd\ncmd=x\n", "pmi1 27"},
      {"mcmd=spawn\narg1=endcmd\nendcmd\n", "pmi1 30"},  // only a line that is "endcmd" ends
      {"mcmx=1\n", "pmi1 7"},
      {"12", "more"},
      {"13    cmd=finalize;", "pmi2 19"},
      {"    13cmd=finalize;", "pmi2 19"},
      {"000013cmd=finalize;more", "pmi2 19"},
      {"13    cmd=final", "more"},
      {"1x    cmd",
       "error: position 2: expected a digit or space in the message length, found 'x'"},
      {"1 3   cmd",
       "error: position 3: expected a digit or space in the message length, found '3'"},
      {"      cmd", "error: position 7: expected the message length (six characters)"},
      {"999999", "error: position 1: message length 999999 exceeds 65536"},
      {long_line, "error: position 1: line longer than 8192 bytes"},
      {long_line.substr(1), "more"},
      {"mcmd=spawn\n" + std::string(kMaxBlock, 'y'),
       "error: position 1: mcmd block longer than 65536 bytes"},
  };
  for (const Case& c : cases) EXPECT_EQ(frame_of(c.buf), c.want) << c.buf.substr(0, 40);
}

// A decoded message as one line: "put [kvsname=k] [key=a]", "(multi) spawn [...]" or
// "error: <message>".
std::string decoded(Wire w, std::string_view framed) {
  auto m = decode(w, framed);
  if (!m.ok()) return "error: " + m.error().message();
  std::string out = (m->multi_line ? "(multi) " : "") + m->cmd;
  for (const Pair& p : m->args) out += " [" + p.key + "=" + p.value + "]";
  return out;
}

TEST(PmiWire, DecodesPmi1FromTable) {
  struct Case {
    std::string in;
    std::string want;
  } cases[] = {
      {"cmd=put kvsname=k key=a value=b\n", "put [kvsname=k] [key=a] [value=b]"},
      {"cmd=get_maxes\n", "get_maxes"},
      {"cmd=barrier_in \n", "barrier_in"},
      {"cmd=put  kvsname=k   key=a value=\n", "put [kvsname=k] [key=a] [value=]"},
      {"cmd=put key=a value=x=y\n", "put [key=a] [value=x=y]"},
      {"cmd=abort exitcode=-1\n", "abort [exitcode=-1]"},
      {"cmd=put key=-bcast-1-0 value=2F64\n", "put [key=-bcast-1-0] [value=2F64]"},
      {"cmd=put value=tab\there\r\n", "put [value=tab\there\r]"},
      {"mcmd=spawn\nnprocs=2\nexecname=./a b\narg1=x=1 y\nendcmd\n",
       "(multi) spawn [nprocs=2] [execname=./a b] [arg1=x=1 y]"},
      {"mcmd=spawn\nendcmd\n", "(multi) spawn"},
      // Errors name the 1-based position.
      {"put key=a\n", "error: position 1: expected 'cmd=', found 'put key='"},
      {"\n", "error: position 1: expected 'cmd=', found ''"},
      {"cmd=\n", "error: position 5: expected a command after 'cmd='"},
      {"cmd=put key\n", "error: position 9: expected key=value, found 'key'"},
      {"cmd=put =v\n", "error: position 9: expected a key before '='"},
      {"cmd=put k=v\0\n"s, "error: position 12: NUL byte"},
      {"cmd=put", "error: position 8: expected a newline at the end of the message"},
      {"", "error: position 1: expected a newline at the end of the message"},
      {"cmd=a\nb\n", "error: position 6: newline inside the line"},
      {"mcmd=spawn\nnprocs\nendcmd\n", "error: position 12: expected key=value, found 'nprocs'"},
      {"mcmd=spawn\nnprocs=1\n", "error: position 21: expected 'endcmd'"},
      {"mcmd=spawn\nendcmd\nx=1\n", "error: position 19: expected nothing after 'endcmd'"},
      {"mcmd=\nendcmd\n", "error: position 6: expected a command after 'mcmd='"},
  };
  for (const Case& c : cases) EXPECT_EQ(decoded(Wire::kPmi1, c.in), c.want) << c.in;
}

TEST(PmiWire, DecodesPmi2FromTable) {
  struct Case {
    std::string in;
    std::string want;
  } cases[] = {
      {"13    cmd=finalize;", "finalize"},
      {"    13cmd=finalize;", "finalize"},
      {"29    cmd=kvs-put;key=a;value=x;;y;", "kvs-put [key=a] [value=x;y]"},
      {"28    cmd=kvs-put;key=a;value=x;;;", "kvs-put [key=a] [value=x;]"},
      {"25    cmd=kvs-put;key=a;value=;", "kvs-put [key=a] [value=]"},
      {"19    cmd=a;msg=x = y, z;", "a [msg=x = y, z]"},
      {"38    cmd=fullinit;pmirank=1;threaded=FALSE;", "fullinit [pmirank=1] [threaded=FALSE]"},
      // MPICH's PMI-2 client before 4.1: the length counts its own six bytes, and six
      // undefined bytes follow the message.
      {"44    cmd=fullinit;pmirank=1;threaded=FALSE;\x7f\x01=;;x",
       "fullinit [pmirank=1] [threaded=FALSE]"},
      {"19    cmd=finalize;garbag", "finalize"},
      // Errors.
      {"12    cmd=finalize", "error: position 19: value of 'cmd' is not ended by ';'"},
      {"4     a=b;", "error: position 7: expected 'cmd=' first"},
      {"5     =abc;", "error: position 7: expected a key before '='"},
      {"3     abc", "error: position 7: expected key=value;"},
      {"0     ", "error: position 7: expected 'cmd=', found the end of the message"},
      {"7     ab;c=d;", "error: position 9: expected '=' before ';'"},
      {"6     cmd=;;", "error: position 13: value of 'cmd' is not ended by ';'"},
      {"5     cmd=;", "error: position 11: expected a command"},
      {"10    cmd=a;", "error: position 13: expected 10 bytes after the length, found 6"},
      {"1", "error: position 2: expected a six-character message length"},
      {"5     cmd=\0;"s, "error: position 11: NUL byte"},
      {"x     cmd=a;", "error: position 1: expected the message length (six characters)"},
  };
  for (const Case& c : cases) EXPECT_EQ(decoded(Wire::kPmi2, c.in), c.want) << c.in;
}

TEST(PmiWire, EncodesFromTable) {
  EXPECT_EQ(encode(Wire::kPmi1,
                   Message{"maxes",
                           {{"kvsname_max", "256"}, {"keylen_max", "64"}, {"vallen_max", "1024"}},
                           false}),
            "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n");
  EXPECT_EQ(encode(Wire::kPmi1, Message{"barrier_out", {}, false}), "cmd=barrier_out\n");
  EXPECT_EQ(encode(Wire::kPmi1, Message{"spawn", {{"nprocs", "1"}, {"arg1", "a b"}}, true}),
            "mcmd=spawn\nnprocs=1\narg1=a b\nendcmd\n");
  EXPECT_EQ(encode(Wire::kPmi2, Message{"kvs-get-response",
                                        {{"found", "TRUE"}, {"value", "a;b"}, {"rc", "0"}},
                                        false}),
            "    48cmd=kvs-get-response;found=TRUE;value=a;;b;rc=0;");
  EXPECT_EQ(encode(Wire::kPmi2, Message{"x", {}, false}), "     6cmd=x;");
}

TEST(PmiWire, EncodedMessagesDecodeToThemselves) {
  const Message messages[] = {
      {"put", {{"kvsname", "k"}, {"key", "a"}, {"value", ""}}, false},
      {"spawn", {{"arg1", "x y=z"}, {"arg1", "dup"}}, true},
      {"kvs-put", {{"key", "k;"}, {"value", ";;;a;"}}, false},
  };
  for (const Message& m : messages) {
    for (Wire w : {Wire::kPmi1, Wire::kPmi2}) {
      if (w == Wire::kPmi1 && m.cmd == "kvs-put") continue;  // ';' is not PMI-1's concern
      Message want = m;
      if (w == Wire::kPmi2) want.multi_line = false;
      std::string bytes = encode(w, m);
      ASSERT_EQ(frame_of(bytes),
                (w == Wire::kPmi1 ? "pmi1 " : "pmi2 ") + std::to_string(bytes.size()));
      auto back = decode(w, bytes);
      ASSERT_TRUE(back.ok()) << back.error().message();
      EXPECT_EQ(*back, want) << bytes;
    }
  }
}

TEST(PmiWire, FindGivesTheFirstValue) {
  Message m{"spawn", {{"arg", "1"}, {"arg", "2"}}, false};
  EXPECT_EQ(m.find("arg"), "1");
  EXPECT_EQ(m.find("nope"), std::nullopt);
}

}  // namespace
}  // namespace berth::wireup::pmi
