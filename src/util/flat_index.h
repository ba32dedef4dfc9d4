// FlatIndex: a hash index of positions in the caller's own vector, found by the text
// each position names (a step's name, a step's key, a node's name).
//
// Open addressing with linear probing over one array of 64-bit slots, each a position
// and 32 bits of its text's hash: 16 bytes per entry at most, one allocation, no node
// per entry. A std::unordered_map<std::string, size_t> of 10^6 names is a node and a
// copy of the name per entry, 100 MB, and its look-ups chase pointers; here a probe
// reads the caller's text only when the hash bits match, so a miss costs one read of
// the array. The text is not copied: `text_of(i)` gives position i's text whenever it
// is needed, so it must not change while i is in the index.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "util/memory.h"

namespace berth {

template <class TextOf>
class FlatIndex {
 public:
  explicit FlatIndex(TextOf text_of) : text_of_(std::move(text_of)) {}

  // Room for `n` entries without growing.
  void reserve(size_t n) {
    size_t want = 16;
    while (want < 2 * n) want *= 2;
    if (want > slots_.size()) rehash(want);
  }

  size_t size() const { return count_; }

  // Asks for the slot where a look-up of `text` begins, ahead of the look-up: a caller
  // about to look up many texts one after another asks for each a few look-ups early,
  // so that the cache misses (the slots are spread over the whole array) overlap.
  void prefetch(std::string_view text) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[hash(text) & mask()]);
  }

  // The position whose text is `text`, if any.
  std::optional<size_t> find(std::string_view text) const {
    if (count_ == 0) return std::nullopt;
    uint32_t h = hash(text);
    for (size_t at = h & mask();; at = next(at)) {
      uint64_t s = slots_[at];
      if (s == kEmpty) return std::nullopt;
      if (hash_of(s) == h && text_of_(position(s)) == text) return position(s);
    }
  }

  // Adds position `i` (< 2^32 - 1), whose text no position in the index has.
  void insert(size_t i) {
    if (2 * (count_ + 1) > slots_.size()) rehash(slots_.empty() ? 16 : 2 * slots_.size());
    uint32_t h = hash(text_of_(i));
    size_t at = h & mask();
    while (slots_[at] != kEmpty) at = next(at);
    slots_[at] = slot(i, h);
    ++count_;
    ++generation_;
  }

  // One look for `text` that can also be where it is added: when it is absent, its
  // position may be inserted with insert(i, probe) — one probe sequence instead of two —
  // for as long as nothing else was inserted or erased.
  struct Probe {
    std::optional<size_t> found;
    size_t at = 0;      // the empty slot it would take
    uint32_t hash = 0;  // of the text
    size_t generation = 0;
  };
  Probe probe(std::string_view text) const {
    Probe p;
    p.hash = hash(text);
    p.generation = generation_;
    if (slots_.empty()) return p;
    for (size_t at = p.hash & mask();; at = next(at)) {
      uint64_t s = slots_[at];
      if (s == kEmpty) {
        p.at = at;
        return p;
      }
      if (hash_of(s) == p.hash && text_of_(position(s)) == text) {
        p.found = position(s);
        return p;
      }
    }
  }
  // Adds position `i`, whose text is the one `p` looked for and did not find.
  void insert(size_t i, const Probe& p) {
    if (p.generation != generation_ || 2 * (count_ + 1) > slots_.size()) return insert(i);
    slots_[p.at] = slot(i, p.hash);
    ++count_;
    ++generation_;
  }

  // Removes position `i`, if it is in the index.
  void erase(size_t i) {
    if (count_ == 0) return;
    size_t at = hash(text_of_(i)) & mask();
    while (slots_[at] == kEmpty || position(slots_[at]) != i) {
      if (slots_[at] == kEmpty) return;
      at = next(at);
    }
    // Backward shift: every entry after the hole that may move into it does, so that
    // no probe sequence is cut short (no tombstones).
    size_t hole = at;
    for (size_t j = next(hole); slots_[j] != kEmpty; j = next(j)) {
      size_t home = hash_of(slots_[j]) & mask();
      // j may fill the hole unless its home lies cyclically in (hole, j].
      bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
      if (!stays) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = kEmpty;
    --count_;
    ++generation_;
  }

 private:
  // A slot: the hash's 32 bits above, position + 1 below; 0 is empty.
  static constexpr uint64_t kEmpty = 0;
  static uint64_t slot(size_t i, uint32_t h) { return (uint64_t{h} << 32) | (i + 1); }
  static size_t position(uint64_t s) { return static_cast<size_t>((s & 0xffffffffu) - 1); }
  static uint32_t hash_of(uint64_t s) { return static_cast<uint32_t>(s >> 32); }
  static uint32_t hash(std::string_view text) {
    return static_cast<uint32_t>(std::hash<std::string_view>{}(text));
  }
  size_t mask() const { return slots_.size() - 1; }
  size_t next(size_t at) const { return (at + 1) & mask(); }

  void rehash(size_t n) {
    ++generation_;
    std::vector<uint64_t> old = std::move(slots_);
    slots_.reserve(n);
    memory::populate_for_writing(slots_.data(), n * sizeof(uint64_t));
    slots_.assign(n, kEmpty);
    for (uint64_t s : old) {
      if (s == kEmpty) continue;
      size_t at = hash_of(s) & mask();
      while (slots_[at] != kEmpty) at = next(at);
      slots_[at] = s;
    }
  }

  TextOf text_of_;
  std::vector<uint64_t> slots_;  // a power of two long (at most 2^32), at most half full
  size_t count_ = 0;
  size_t generation_ = 0;  // changed by every insert and erase: a Probe's validity
};

}  // namespace berth
