// Which GPU is which (gpu_identity.h).
#include "topo/gpu_identity.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "topo/tree.h"
#include "util/idset.h"
#include "util/strings.h"

namespace berth::topo {
namespace {

bool printable(std::string_view v) {
  return std::none_of(v.begin(), v.end(),
                      [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

// Where a PCI device sits: its NUMA node and the cores next to it, from sysfs.
Result<void> read_locality(const std::string& root, GpuIdentity& g) {
  if (g.bus.empty()) return Ok{};
  const std::string dir = "/sys/bus/pci/devices/" + g.bus;
  BERTH_TRY(auto numa, tree::read_optional(tree::under(root, dir + "/numa_node"), 64));
  if (numa) {
    std::string_view v = str::trim(*numa);
    // -1: the kernel's "no NUMA information" (one node, or a VM).
    if (v != "-1") {
      auto n = str::parse_uint(v, 1 << 16);
      if (!n.ok()) return n.error().with_context(tree::shown(root, dir + "/numa_node"));
      g.numa_node = static_cast<int>(*n);
    }
  }
  BERTH_TRY(auto cpus, tree::read_optional(tree::under(root, dir + "/local_cpulist"), 65536));
  if (cpus) {
    auto ids = idset::parse_ids(str::trim(*cpus));
    if (!ids.ok()) return ids.error().with_context(tree::shown(root, dir + "/local_cpulist"));
    g.local_cores = std::move(*ids);
  }
  return Ok{};
}

Result<std::vector<GpuIdentity>> nvidia(const std::string& root) {
  constexpr std::string_view kProc = "/proc/driver/nvidia/gpus";
  BERTH_TRY(auto entries, tree::list_dir(tree::under(root, kProc)));
  std::vector<GpuIdentity> out;
  std::string driver;
  if (entries && !entries->empty()) {
    BERTH_TRY(auto version, tree::read_optional(tree::under(root, "/proc/driver/nvidia/version"),
                                                65536));
    if (version) driver = parse_nvidia_version(*version);
  }
  for (const std::string& bus : entries.value_or(std::vector<std::string>())) {
    GpuIdentity g;
    g.driver = driver;
    g.id = std::to_string(out.size());
    g.bus = bus;
    const std::string path = fmt::format("{}/{}/information", kProc, bus);
    BERTH_TRY(auto text, tree::read_optional(tree::under(root, path)));
    if (text) {
      auto info = parse_nvidia_information(*text);
      if (!info.ok()) return info.error().with_context(tree::shown(root, path));
      g.model = info->model;
      g.uuid = info->uuid;
      if (!info->bus.empty()) g.bus = str::to_lower(info->bus);
    }
    BERTH_CHECK(read_locality(root, g));
    out.push_back(std::move(g));
  }
  return out;
}

Result<std::vector<GpuIdentity>> amd(const std::string& root) {
  BERTH_TRY(std::vector<KfdGpu> kfd, kfd_gpus(root));
  std::vector<GpuIdentity> out;
  for (const KfdGpu& node : kfd) {
    auto id = parse_kfd_identity(node.properties);
    if (!id.ok()) return id.error().with_context(tree::shown(root, node.path));
    GpuIdentity g;
    g.id = std::to_string(out.size());
    g.bus = id->bus;
    g.uuid = id->uuid;
    BERTH_CHECK(read_locality(root, g));
    out.push_back(std::move(g));
  }
  return out;
}

// An Intel card's PCI address: the name its sysfs `device` link points at
// ("../../../0000:8a:00.0"), else PCI_SLOT_NAME in the device's uevent.
Result<std::string> intel_bus(const std::string& root, const std::string& card_dir) {
  std::error_code ec;
  auto target = std::filesystem::read_symlink(tree::under(root, card_dir + "/device"), ec);
  if (!ec && !target.filename().empty()) return str::to_lower(target.filename().string());
  BERTH_TRY(auto uevent, tree::read_optional(tree::under(root, card_dir + "/device/uevent"), 65536));
  const std::string text = uevent.value_or("");
  for (std::string_view line : str::split(text, '\n')) {
    constexpr std::string_view kSlot = "PCI_SLOT_NAME=";
    if (line.substr(0, kSlot.size()) == kSlot) {
      return str::to_lower(str::trim(line.substr(kSlot.size())));
    }
  }
  return std::string();
}

Result<std::vector<GpuIdentity>> intel(const std::string& root) {
  BERTH_TRY(std::vector<IntelCard> cards, intel_cards(root));
  std::vector<GpuIdentity> out;
  for (size_t d = 0; d < cards.size(); ++d) {
    GpuIdentity card;
    BERTH_TRY(card.bus, intel_bus(root, cards[d].dir));
    // sysfs names no model: the PCI device id stands for it.
    BERTH_TRY(auto device, tree::read_optional(tree::under(root, cards[d].dir + "/device/device"), 64));
    if (device && printable(str::trim(*device)) && !str::trim(*device).empty()) {
      card.model = fmt::format("Intel GPU {}", str::to_lower(str::trim(*device)));
    }
    BERTH_CHECK(read_locality(root, card));
    for (size_t t = 0; t < cards[d].tiles; ++t) {
      GpuIdentity g = card;
      g.id = cards[d].tiles == 1 ? std::to_string(d) : fmt::format("{}.{}", d, t);
      out.push_back(std::move(g));
    }
  }
  return out;
}

}  // namespace

Result<NvidiaInformation> parse_nvidia_information(std::string_view text) {
  NvidiaInformation out;
  size_t line_no = 0;
  for (std::string_view line : str::split(text, '\n')) {
    ++line_no;
    if (str::trim(line).empty()) continue;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      return fail(Errc::kInvalidInput, fmt::format("line {}: expected 'Key: value', found '{}'",
                                                   line_no, str::printable(line, 80)));
    }
    std::string_view key = str::trim(line.substr(0, colon));
    std::string_view value = str::trim(line.substr(colon + 1));
    std::string* field = key == "Model"          ? &out.model
                         : key == "GPU UUID"     ? &out.uuid
                         : key == "Bus Location" ? &out.bus
                                                 : nullptr;
    if (!field) continue;
    if (!printable(value) || value.size() > 256) {
      return fail(Errc::kInvalidInput,
                  fmt::format("line {}: {}: not a value the driver writes: '{}'", line_no, key,
                              str::printable(value, 80)));
    }
    *field = std::string(value);
  }
  return out;
}

std::string parse_nvidia_version(std::string_view text) {
  constexpr std::string_view kAfter = "Kernel Module";
  size_t at = text.find(kAfter);
  if (at == std::string_view::npos) return "";
  std::string_view rest = text.substr(at + kAfter.size());
  rest = rest.substr(0, rest.find('\n'));
  // The first word made of digits and dots: the open module's line puts "for x86_64"
  // before it.
  for (std::string_view w : str::split_ws(rest)) {
    bool version = w.size() <= 64 && w.find('.') != std::string_view::npos &&
                   std::all_of(w.begin(), w.end(), [](char c) { return str::is_digit(c) || c == '.'; });
    if (version) return std::string(w);
  }
  return "";
}

Result<KfdIdentity> parse_kfd_identity(std::string_view text) {
  KfdIdentity out;
  std::optional<uint64_t> domain, location, unique;
  size_t line_no = 0;
  for (std::string_view line : str::split(text, '\n')) {
    ++line_no;
    auto fields = str::split_ws(line);
    if (fields.size() != 2) continue;
    std::optional<uint64_t>* slot = fields[0] == "domain"        ? &domain
                                    : fields[0] == "location_id" ? &location
                                    : fields[0] == "unique_id"   ? &unique
                                                                 : nullptr;
    if (!slot) continue;
    auto n = str::parse_uint(fields[1], UINT64_MAX);
    if (!n.ok()) {
      return n.error().with_context(fmt::format("line {}: {}", line_no, fields[0]));
    }
    *slot = *n;
  }
  // location_id is the PCI bus, device and function as the kernel packs them:
  // bus << 8 | device << 3 | function.
  if (location && *location != 0 && *location <= 0xffff && (!domain || *domain <= 0xffff)) {
    out.bus = fmt::format("{:04x}:{:02x}:{:02x}.{:x}", domain.value_or(0), *location >> 8,
                          (*location >> 3) & 0x1f, *location & 0x7);
  }
  if (unique && *unique != 0) out.uuid = fmt::format("GPU-{:016x}", *unique);
  return out;
}

std::vector<GpuIdentity> identities_of(const std::vector<std::string>& ids,
                                       const std::vector<GpuIdentity>& devices) {
  std::vector<GpuIdentity> out;
  for (const std::string& id : ids) {
    auto d = std::find_if(devices.begin(), devices.end(), [&](const GpuIdentity& g) {
      return g.id == id || (!g.uuid.empty() && g.uuid == id);
    });
    out.push_back(d == devices.end() ? GpuIdentity{} : *d);
  }
  return out;
}

Result<std::vector<GpuIdentity>> read_gpu_identities(const std::string& root, GpuVendor vendor) {
  switch (vendor) {
    case GpuVendor::kNvidia:
      return nvidia(root);
    case GpuVendor::kAmd:
      return amd(root);
    case GpuVendor::kIntel:
      return intel(root);
    case GpuVendor::kNone:
      break;
  }
  return std::vector<GpuIdentity>{};
}

}  // namespace berth::topo
