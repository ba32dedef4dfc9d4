// Fuzzes the S3 response extractor: store::parse_s3_error, store::parse_list_page and
// store::xml_unescape (spec 05 §8). Every byte a server sends reaches these.
//
// Properties checked, abort() on any violation:
//   - nothing crashes, on any input, as an error body or a listing;
//   - decoding never lengthens: each field is at most as long as the input, and text
//     without '&' decodes to itself;
//   - a failed listing is kIo; a truncated one carries a continuation token;
//   - the input, escaped as a server would and sent as a listed key, comes back
//     exactly (one key, the same bytes).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "store/s3_store.h"

namespace store = berth::store;

namespace {

std::string escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '&') {
      out += "&amp;";
    } else if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);

  store::S3ErrorBody e = store::parse_s3_error(text);
  if (e.code.size() > size || e.message.size() > size) abort();

  std::string plain = store::xml_unescape(text);
  if (plain.size() > size) abort();
  if (text.find('&') == std::string_view::npos && plain != text) abort();

  auto page = store::parse_list_page(text);
  if (!page.ok()) {
    if (page.error().code() != berth::Errc::kIo) abort();
  } else {
    if (page->truncated && page->next_token.empty()) abort();
    for (const auto& k : page->keys) {
      if (k.size() > size) abort();
    }
  }

  std::string listing = "<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>" +
                        escape(text) + "</Key><Size>1</Size></Contents></ListBucketResult>";
  auto back = store::parse_list_page(listing);
  if (!back.ok() || back->keys.size() != 1 || back->keys[0] != text) abort();
  return 0;
}
