// The PMI "simple" wire format: framing, decoding and encoding of the messages a rank
// and its process manager exchange over the PMI socket (spec 07 §3.1).
//
// Two framings share one socket, told apart by a message's first byte:
//   PMI-1  a line of space-separated key=value words: `cmd=put kvsname=k key=a value=b\n`.
//          A value runs to the next space or newline (so it holds neither), and may
//          hold '='. The one multi-line form, `mcmd=spawn\n` … `endcmd\n`, carries one
//          key=value per line, the value running to the end of its line.
//   PMI-2  a six-character decimal length (digits padded with spaces on either side)
//          and that many bytes of `key=value;` pairs, the first being `cmd=…`; a ';'
//          inside a value is doubled.
// Every PMI-2 client first sends a PMI-1 `cmd=init pmi_version=2 …` line, so a
// connection may carry both.
//
// The decoder takes any bytes: it never reads past its input, allocates in proportion
// to it, and fails with kInvalidInput and a message that starts with
// "position N: " (N 1-based, counted from the message's first byte, length field
// included). Encoding is total for the values the decoder produces.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace berth::wireup::pmi {

enum class Wire { kPmi1, kPmi2 };

// The longest PMI-1 line (MPICH's clients write at most 1024 bytes) and the longest
// mcmd block or PMI-2 message body (MPICH's PMI-2 client's own limit).
inline constexpr size_t kMaxPmi1Line = 8 * 1024;
inline constexpr size_t kMaxBlock = 64 * 1024;

struct Pair {
  std::string key;
  std::string value;
  bool operator==(const Pair&) const = default;
};

// One decoded message: its command and its other pairs in order (a key may repeat).
struct Message {
  std::string cmd;          // "init", "put", "kvs-fence", "spawn" …
  std::vector<Pair> args;   // every pair after the command
  bool multi_line = false;  // PMI-1 only: the `mcmd=` … `endcmd` form (spawn)

  // The value of the first pair named `key`, or nullopt.
  std::optional<std::string_view> find(std::string_view key) const;
  bool operator==(const Message&) const = default;
};

// Where the first message in `buf` ends.
struct Frame {
  Wire wire = Wire::kPmi1;
  size_t size = 0;  // bytes of `buf` the message takes, length field and newline included
};

// The first complete message at the start of `buf`: nullopt when `buf` holds only the
// beginning of one (read more), an error when it cannot be the start of a message or
// is longer than the limits above (the connection cannot be resynchronised after one).
Result<std::optional<Frame>> next_frame(std::string_view buf);

// Decodes one framed message (`framed` = the first Frame::size bytes). Errors name the
// position and what was expected there.
Result<Message> decode(Wire wire, std::string_view framed);

// Encodes `m` for `wire`: the line(s) with their newline, or the length field and body.
// PMI-1 values must not hold a space or newline (the decoder never produces one);
// PMI-2 values may hold anything, ';' is doubled.
std::string encode(Wire wire, const Message& m);

}  // namespace berth::wireup::pmi
