#include "topo/gpus.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>

#include "topo/tree.h"
#include "util/strings.h"

namespace berth::topo {
namespace {

constexpr size_t kMaxIds = 4096;
constexpr size_t kMaxIdBytes = 256;
// No node has more GPUs, or more tiles per GPU, than this; a tree that says so is
// not describing a node.
constexpr size_t kMaxNodeGpus = 4096;

// What the node shows for one vendor.
struct NodeGpus {
  GpuVendor vendor = GpuVendor::kNone;
  std::vector<std::string> ids;
  std::string provenance;
  std::vector<std::string> notes;
};

std::vector<std::string> numbered(size_t n) {
  std::vector<std::string> ids;
  for (size_t i = 0; i < n; ++i) ids.push_back(std::to_string(i));
  return ids;
}

// The number after `prefix` in `name` ("renderD128" -> 128), if that is all it is.
std::optional<uint64_t> suffix_number(std::string_view name, std::string_view prefix) {
  if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) return {};
  auto n = str::parse_uint(name.substr(prefix.size()), UINT32_MAX);
  if (!n.ok()) return {};
  return *n;
}

// Entries of `abs_dir` named prefix<N>, sorted by N.
Result<std::vector<uint64_t>> numbered_entries(const std::string& root, std::string_view abs_dir,
                                               std::string_view prefix) {
  BERTH_TRY(auto names, tree::list_dir(tree::under(root, abs_dir)));
  std::vector<uint64_t> out;
  if (!names) return out;
  for (const std::string& n : *names) {
    if (auto k = suffix_number(n, prefix)) out.push_back(*k);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Failure too_many(const std::string& root, std::string_view where) {
  return fail(Errc::kInvalidInput,
              fmt::format("{}: more than {} GPUs", tree::shown(root, where), kMaxNodeGpus));
}

// A sysfs `vendor` attribute ("0x10de\n"); nullopt when absent.
Result<std::optional<std::string>> read_vendor(const std::string& root,
                                               const std::string& abs_path) {
  BERTH_TRY(auto text, tree::read_optional(tree::under(root, abs_path), 4096));
  if (!text) return std::optional<std::string>();
  return std::optional<std::string>(str::to_lower(str::trim(*text)));
}

Result<NodeGpus> nvidia(const std::string& root) {
  NodeGpus g;
  g.vendor = GpuVendor::kNvidia;
  constexpr std::string_view kProc = "/proc/driver/nvidia/gpus";
  BERTH_TRY(auto entries, tree::list_dir(tree::under(root, kProc)));
  if (entries && !entries->empty()) {
    if (entries->size() > kMaxNodeGpus) return too_many(root, kProc);
    // One directory per GPU, named by PCI address; CUDA's default order is its own,
    // so only the count is taken, as indices.
    g.ids = numbered(entries->size());
    g.provenance = tree::shown(root, kProc);
    return g;
  }
  BERTH_TRY(auto devs, numbered_entries(root, "/dev", "nvidia"));
  if (devs.size() > kMaxNodeGpus) return too_many(root, "/dev");
  g.ids = numbered(devs.size());
  g.provenance = tree::shown(root, "/dev/nvidia[0-9]*");
  return g;
}

}  // namespace

Result<std::vector<KfdGpu>> kfd_gpus(const std::string& root) {
  BERTH_TRY(auto names, tree::list_dir(tree::under(root, kKfdNodes)));
  std::vector<uint64_t> nodes;
  for (const std::string& n : names.value_or(std::vector<std::string>())) {
    if (auto k = str::parse_uint(n, UINT32_MAX); k.ok()) nodes.push_back(*k);
  }
  std::sort(nodes.begin(), nodes.end());
  std::vector<KfdGpu> out;
  for (uint64_t node : nodes) {
    std::string path = fmt::format("{}/{}/properties", kKfdNodes, node);
    BERTH_TRY(auto text, tree::read_optional(tree::under(root, path)));
    if (!text) continue;
    auto simd = parse_kfd_simd_count(*text);
    if (!simd.ok()) return simd.error().with_context(tree::shown(root, path));
    // CPU nodes are kfd nodes too; only a node with SIMD units is a GPU (one GCD on
    // Frontier's MI250X, so a node shows 8).
    if (*simd > 0) out.push_back({std::move(path), std::move(*text)});
  }
  return out;
}

Result<std::vector<IntelCard>> intel_cards(const std::string& root) {
  BERTH_TRY(auto cards, numbered_entries(root, "/sys/class/drm", "card"));
  std::vector<IntelCard> out;
  for (uint64_t c : cards) {
    std::string dir = fmt::format("/sys/class/drm/card{}", c);
    BERTH_TRY(auto vendor, read_vendor(root, dir + "/device/vendor"));
    if (!vendor || *vendor != "0x8086") continue;
    BERTH_TRY(auto gts, numbered_entries(root, dir + "/gt", "gt"));
    BERTH_TRY(auto xe_tiles, numbered_entries(root, dir + "/device", "tile"));
    size_t n = std::max<size_t>({1, gts.size(), xe_tiles.size()});
    if (n > kMaxNodeGpus) return too_many(root, dir);
    out.push_back({std::move(dir), n});
  }
  return out;
}

namespace {

Result<NodeGpus> amd(const std::string& root) {
  NodeGpus g;
  g.vendor = GpuVendor::kAmd;
  constexpr std::string_view kNodes = kKfdNodes;
  BERTH_TRY(std::vector<KfdGpu> kfd, kfd_gpus(root));
  size_t count = kfd.size();
  if (count > kMaxNodeGpus) return too_many(root, kNodes);
  if (count > 0) {
    g.ids = numbered(count);
    g.provenance = tree::shown(root, kNodes);
    return g;
  }
  BERTH_TRY(auto renders, numbered_entries(root, "/dev/dri", "renderD"));
  bool unknown = false;
  for (uint64_t r : renders) {
    BERTH_TRY(auto vendor,
              read_vendor(root, fmt::format("/sys/class/drm/renderD{}/device/vendor", r)));
    // Render nodes belong to every DRM driver (Intel, virtio, NVIDIA's); one whose
    // vendor cannot be read is counted, as the only evidence there is.
    if (!vendor) unknown = true;
    if (!vendor || *vendor == "0x1002") ++count;
  }
  if (count > kMaxNodeGpus) return too_many(root, "/dev/dri");
  g.ids = numbered(count);
  g.provenance = tree::shown(root, "/dev/dri/renderD*");
  if (count > 0 && unknown) {
    g.notes.push_back(
        fmt::format("{}: counted render nodes whose vendor is unknown as AMD GPUs", g.provenance));
  }
  return g;
}

Result<NodeGpus> intel(const std::string& root) {
  NodeGpus g;
  g.vendor = GpuVendor::kIntel;
  BERTH_TRY(std::vector<IntelCard> cards, intel_cards(root));
  if (cards.size() > kMaxNodeGpus) return too_many(root, "/sys/class/drm");
  for (size_t d = 0; d < cards.size(); ++d) {
    if (cards[d].tiles == 1) {
      g.ids.push_back(std::to_string(d));
    } else {
      for (size_t t = 0; t < cards[d].tiles; ++t) g.ids.push_back(fmt::format("{}.{}", d, t));
    }
    if (g.ids.size() > kMaxNodeGpus) return too_many(root, "/sys/class/drm");
  }
  g.provenance = tree::shown(root, "/sys/class/drm/card*") + " (Intel, one GPU per tile)";
  return g;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), str::is_digit);
}

bool id_char(char c) {
  return str::is_alnum(c) || c == '-' || c == '_' || c == '.' || c == ':' || c == '/';
}

// Whether Level Zero reads ZE_AFFINITY_MASK in its flat hierarchy (each tile a device,
// numbered across the node) rather than the composite one (a number is a card, "c.t"
// its tile): ZE_FLAT_DEVICE_HIERARCHY says, FLAT (its default) when unset.
Result<bool> flat_hierarchy(const Env& env, std::vector<std::string>* notes) {
  BERTH_TRY(auto v, env.get_bounded(kZeHierarchy));
  if (!v) return true;
  std::string h = str::to_lower(str::trim(*v));
  if (h == "composite") return false;
  if (h != "flat" && h != "combined") {
    notes->push_back(fmt::format("{}='{}' is not a hierarchy Level Zero knows; read as FLAT, "
                                 "its default",
                                 kZeHierarchy, str::printable(*v, 40)));
  }
  return true;
}

// Applies the environment's visibility variables to `out`, whose ids start as what
// the node shows (`node`).
Result<void> apply_env(const Env& env, const NodeGpus& node, Gpus& out) {
  auto get = [&](std::string_view name) { return env.get_bounded(name); };
  switch (out.vendor) {
    case GpuVendor::kNone:
      return Ok{};
    case GpuVendor::kNvidia: {
      BERTH_TRY(auto v, get("CUDA_VISIBLE_DEVICES"));
      if (!v) return Ok{};
      BERTH_TRY(out.ids, parse_visible_devices(*v, "CUDA_VISIBLE_DEVICES", &out.diagnostics));
      out.provenance = "env CUDA_VISIBLE_DEVICES";
      break;
    }
    case GpuVendor::kAmd: {
      // HIP_VISIBLE_DEVICES indexes into what ROCR_VISIBLE_DEVICES left visible, so
      // ROCR is applied first.
      BERTH_TRY(auto rocr, get("ROCR_VISIBLE_DEVICES"));
      BERTH_TRY(auto hip, get("HIP_VISIBLE_DEVICES"));
      std::vector<std::string> names;
      if (rocr) {
        BERTH_TRY(out.ids, parse_visible_devices(*rocr, "ROCR_VISIBLE_DEVICES", &out.diagnostics));
        names.push_back("ROCR_VISIBLE_DEVICES");
      }
      if (hip) {
        BERTH_TRY(auto picks, parse_visible_devices(*hip, "HIP_VISIBLE_DEVICES", &out.diagnostics));
        std::vector<std::string> chosen;
        for (const std::string& p : picks) {
          // A UUID names itself; so does an index when there is nothing to index into
          // (no driver files and no ROCR_VISIBLE_DEVICES).
          if (!all_digits(p) || (!rocr && node.ids.empty())) {
            chosen.push_back(p);
            continue;
          }
          auto i = str::parse_uint(p, kMaxIds);
          if (i.ok() && *i < out.ids.size()) {
            chosen.push_back(out.ids[*i]);
          } else {
            out.diagnostics.push_back(fmt::format(
                "HIP_VISIBLE_DEVICES names device {}, but only {} are visible; left out", p,
                out.ids.size()));
          }
        }
        out.ids = std::move(chosen);
        names.push_back("HIP_VISIBLE_DEVICES");
      }
      if (names.empty()) return Ok{};
      out.provenance = "env " + str::join(names, ", ");
      break;
    }
    case GpuVendor::kIntel: {
      BERTH_TRY(auto v, get("ZE_AFFINITY_MASK"));
      if (!v) return Ok{};
      if (str::trim(*v).empty()) {
        // Still open: whether Level Zero reads an empty mask as "no devices" or as "no
        // mask" (every tile) is unmeasured. Neither is assumed.
        out.diagnostics.push_back(
            "ZE_AFFINITY_MASK is set but empty; whether Level Zero reads that as no devices "
            "or as every device has not been measured, so it is ignored here");
        return Ok{};
      }
      BERTH_TRY(auto mask, parse_visible_devices(*v, "ZE_AFFINITY_MASK", &out.diagnostics));
      BERTH_TRY(bool flat, flat_hierarchy(env, &out.diagnostics));
      out.ids.clear();
      for (const std::string& m : mask) {
        // In the flat hierarchy (Level Zero's default) a number is the m-th tile of
        // the node; in the composite one it is a whole card, every tile of it.
        auto flat_index = str::parse_uint(m, kMaxIds);
        if (flat && flat_index.ok()) {
          if (*flat_index < node.ids.size()) {
            out.ids.push_back(node.ids[*flat_index]);
          } else {
            out.diagnostics.push_back(fmt::format(
                "ZE_AFFINITY_MASK names flat device {}, but the node shows {}; left out", m,
                node.ids.size()));
          }
          continue;
        }
        std::vector<std::string> tiles;
        for (const std::string& id : node.ids) {
          if (id.size() > m.size() && id.compare(0, m.size(), m) == 0 && id[m.size()] == '.') {
            tiles.push_back(id);
          }
        }
        if (tiles.empty()) {
          out.ids.push_back(m);
        } else {
          out.ids.insert(out.ids.end(), tiles.begin(), tiles.end());
        }
      }
      out.provenance = "env ZE_AFFINITY_MASK";
      break;
    }
  }
  // A variable that names a device the node does not show is kept (the variable is
  // the scheduler's word) but reported: one of the two is wrong.
  if (!node.ids.empty()) {
    for (const std::string& id : out.ids) {
      if (all_digits(id) && std::find(node.ids.begin(), node.ids.end(), id) == node.ids.end()) {
        out.diagnostics.push_back(fmt::format("{} names GPU {}, which {} does not show",
                                              out.provenance, id, node.provenance));
      }
    }
  }
  return Ok{};
}

}  // namespace

const char* gpu_vendor_name(GpuVendor vendor) {
  switch (vendor) {
    case GpuVendor::kNone:
      return "none";
    case GpuVendor::kNvidia:
      return "nvidia";
    case GpuVendor::kAmd:
      return "amd";
    case GpuVendor::kIntel:
      return "intel";
  }
  return "none";
}

const char* gpu_visibility_variable(GpuVendor vendor) {
  switch (vendor) {
    case GpuVendor::kNone:
      return "";
    case GpuVendor::kNvidia:
      return "CUDA_VISIBLE_DEVICES";
    case GpuVendor::kAmd:
      return "ROCR_VISIBLE_DEVICES";
    case GpuVendor::kIntel:
      return "ZE_AFFINITY_MASK";
  }
  return "";
}

std::optional<std::pair<std::string, std::string>> gpu_hierarchy_env(
    std::string_view variable, const std::vector<std::string>& ids) {
  if (variable != gpu_visibility_variable(GpuVendor::kIntel)) return std::nullopt;
  bool tiles = std::any_of(ids.begin(), ids.end(),
                           [](const std::string& id) { return id.find('.') != std::string::npos; });
  if (!tiles) return std::nullopt;
  return std::make_pair(std::string(kZeHierarchy), std::string("COMPOSITE"));
}

Result<std::vector<std::string>> parse_visible_devices(std::string_view value,
                                                       std::string_view name,
                                                       std::vector<std::string>* notes) {
  std::vector<std::string> ids;
  if (str::trim(value).empty()) return ids;
  std::set<std::string> seen;
  size_t k = 0;
  for (std::string_view raw : str::split(value, ',')) {
    ++k;
    std::string_view id = str::trim(raw);
    if (id.empty() || id[0] == '-') {
      // CUDA: "only the devices whose index precedes the invalid index are visible".
      if (notes) {
        notes->push_back(fmt::format("{}: entry {} ('{}') ends the list, as CUDA reads it", name, k,
                                     str::printable(id)));
      }
      break;
    }
    if (id.size() > kMaxIdBytes) {
      return fail(Errc::kInvalidInput,
                  fmt::format("{}: entry {} is longer than {} bytes", name, k, kMaxIdBytes));
    }
    auto bad = std::find_if_not(id.begin(), id.end(), id_char);
    if (bad != id.end()) {
      return fail(Errc::kInvalidInput,
                  fmt::format("{}: entry {} ('{}'): '{}' is not part of a device id", name, k,
                              str::printable(id), str::printable(std::string_view(&*bad, 1))));
    }
    if (ids.size() >= kMaxIds) {
      return fail(Errc::kInvalidInput, fmt::format("{}: more than {} devices", name, kMaxIds));
    }
    if (!seen.insert(std::string(id)).second) {
      if (notes) notes->push_back(fmt::format("{}: device {} is given twice", name, id));
      continue;
    }
    ids.emplace_back(id);
  }
  return ids;
}

Result<int64_t> parse_kfd_simd_count(std::string_view text) {
  size_t line_no = 0;
  for (std::string_view line : str::split(text, '\n')) {
    ++line_no;
    auto fields = str::split_ws(line);
    if (fields.empty() || fields[0] != "simd_count") continue;
    if (fields.size() != 2) {
      return fail(Errc::kInvalidInput, fmt::format("line {}: expected 'simd_count N', found '{}'",
                                                   line_no, str::printable(line)));
    }
    auto n = str::parse_uint(fields[1], INT64_MAX);
    if (!n.ok()) return n.error().with_context(fmt::format("line {}: simd_count", line_no));
    return static_cast<int64_t>(*n);
  }
  return 0;
}

Result<Gpus> read_gpus(const std::string& root, const Env& env) {
  // Vendors in a fixed order; a node showing two is unusual enough to report, and the
  // first is described.
  std::vector<NodeGpus> found;
  for (auto reader : {&nvidia, &amd, &intel}) {
    BERTH_TRY(NodeGpus g, reader(root));
    if (!g.ids.empty()) found.push_back(std::move(g));
  }
  Gpus out;
  NodeGpus node;
  if (!found.empty()) {
    node = found.front();
    for (size_t i = 1; i < found.size(); ++i) {
      out.diagnostics.push_back(fmt::format(
          "{} {} GPUs are also present ({}); only {} are described", found[i].ids.size(),
          gpu_vendor_name(found[i].vendor), found[i].provenance, gpu_vendor_name(node.vendor)));
    }
  } else {
    // No driver files: a visibility variable is still the scheduler's word, taken
    // with a note, the first one set in vendor order.
    for (GpuVendor v : {GpuVendor::kNvidia, GpuVendor::kAmd, GpuVendor::kIntel}) {
      bool set = env.has(gpu_visibility_variable(v)) ||
                 (v == GpuVendor::kAmd && env.has("HIP_VISIBLE_DEVICES"));
      if (set) {
        node.vendor = v;
        out.diagnostics.push_back(
            fmt::format("no {} GPU is visible in the driver files; the environment's visibility "
                        "variable is taken as given",
                        gpu_vendor_name(v)));
        break;
      }
    }
    node.provenance = "none found (" + tree::shown(root, "/proc/driver/nvidia/gpus") + ", " +
                      tree::shown(root, "/sys/class/kfd") + ", " +
                      tree::shown(root, "/sys/class/drm") + ")";
  }
  out.vendor = node.vendor;
  out.ids = node.ids;
  out.provenance = node.provenance;
  out.node_count = static_cast<int>(node.ids.size());
  out.node_provenance = node.provenance;
  out.diagnostics.insert(out.diagnostics.end(), node.notes.begin(), node.notes.end());
  BERTH_CHECK(apply_env(env, node, out));
  return out;
}

}  // namespace berth::topo
