// Fuzzes store::decode_tree (src/store/tree.h): a tree manifest is an object anyone with
// write access to the store may have written, and materialising it creates files.
//
// Properties checked, abort() on any violation:
//   - decoding never crashes, throws or runs away, whatever the bytes;
//   - a failure is kInvalidInput, names the line ("tree manifest line N: "), and is one
//     line of text whatever bytes the manifest held;
//   - what decodes re-encodes to exactly the same bytes (the manifest is canonical, so
//     one tree has one name);
//   - what decodes is safe to materialise: every path relative, with no empty, "." or
//     ".." component and no control byte; paths strictly increasing; no path below
//     another's; a file's object name valid, a directory's empty.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "store/tree.h"

namespace {

bool safe_path(std::string_view p) {
  if (p.empty() || p.front() == '/' || p.back() == '/') return false;
  for (unsigned char c : p) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  size_t at = 0;
  while (true) {
    size_t slash = p.find('/', at);
    std::string_view part = p.substr(at, slash == std::string_view::npos ? slash : slash - at);
    if (part.empty() || part == "." || part == "..") return false;
    if (slash == std::string_view::npos) return true;
    at = slash + 1;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using berth::store::TreeEntry;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto t = berth::store::decode_tree(bytes);
  if (!t.ok()) {
    if (t.error().code() != berth::Errc::kInvalidInput) abort();
    const std::string& m = t.error().message();
    if (m.rfind("tree manifest line ", 0) != 0) abort();
    for (char c : m) {
      if (c == '\n' || c == '\r' || c == '\0') abort();
    }
    return 0;
  }
  if (berth::store::encode_tree(*t) != bytes) abort();
  size_t files = 0;
  for (size_t i = 0; i < t->size(); ++i) {
    const TreeEntry& e = (*t)[i];
    if (!safe_path(e.path)) abort();
    if (i > 0 && !((*t)[i - 1].path < e.path)) abort();
    if (e.kind == TreeEntry::Kind::kDir) {
      if (!e.object.empty()) abort();
    } else {
      ++files;
      if (!berth::store::check_object_name(e.object).ok()) abort();
    }
    // No earlier entry is an ancestor: every entry is a leaf.
    for (size_t j = 0; j < i; ++j) {
      const std::string& a = (*t)[j].path;
      if (e.path.size() > a.size() && e.path.compare(0, a.size(), a) == 0 &&
          e.path[a.size()] == '/') {
        abort();
      }
    }
  }
  if (berth::store::tree_objects(*t).size() != files) abort();
  return 0;
}
