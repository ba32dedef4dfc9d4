// Fuzzes topo::parse_nvidia_information and topo::parse_kfd_identity
// (src/topo/gpu_identity.h): driver files under a root anyone may have laid out.
//
// Properties checked, abort() on any violation:
//   - parsing never crashes, throws or runs away, whatever the bytes;
//   - a failure is kInvalidInput and names the line;
//   - what is taken holds no control character (it goes into reports and JSON);
//   - a kfd bus address is "dddd:bb:dd.f" and a UUID "GPU-" and 16 hex digits.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "topo/gpu_identity.h"

namespace {

bool clean(const std::string& s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  }
  return true;
}

void check_failure(const berth::Error& e) {
  if (e.code() != berth::Errc::kInvalidInput) abort();
  if (e.message().find("line ") != 0) abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto info = berth::topo::parse_nvidia_information(text);
  if (!info.ok()) {
    check_failure(info.error());
  } else if (!clean(info->model) || !clean(info->uuid) || !clean(info->bus)) {
    abort();
  }
  std::string version = berth::topo::parse_nvidia_version(text);
  if (version.size() > 64 || !clean(version)) abort();
  auto kfd = berth::topo::parse_kfd_identity(text);
  if (!kfd.ok()) {
    check_failure(kfd.error());
    return 0;
  }
  if (!kfd->bus.empty() && (kfd->bus.size() != 12 || kfd->bus[4] != ':' || kfd->bus[7] != ':' ||
                            kfd->bus[10] != '.')) {
    abort();
  }
  if (!kfd->uuid.empty() && (kfd->uuid.size() != 20 || kfd->uuid.rfind("GPU-", 0) != 0)) abort();
  return 0;
}
