#include "topo/catalog.h"

#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>

#include "topo/builtin.h"
#include "topo/tree.h"
#include "util/files.h"
#include "util/strings.h"

namespace berth::topo {
namespace {

constexpr size_t kMaxFiles = 1000;

bool glob(const std::string& pattern, const std::string& value) {
  return ::fnmatch(pattern.c_str(), value.c_str(), 0) == 0;
}

}  // namespace

Result<Catalog> Catalog::from_files(const std::vector<MachineFile>& files, std::string origin) {
  Catalog c;
  c.origin_ = std::move(origin);
  for (const MachineFile& f : files) {
    BERTH_TRY(MachineDescription m, parse_machine(f.text, f.path));
    if (const MachineDescription* other = c.find(m.name)) {
      return fail(Errc::kInvalidInput, fmt::format("{}: name: '{}' is also described by {}", f.path,
                                                   m.name, other->source));
    }
    c.machines_.push_back(std::move(m));
  }
  std::sort(c.machines_.begin(), c.machines_.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  if (!c.find("generic")) {
    return fail(Errc::kInvalidInput,
                fmt::format("{}: no description of 'generic', the fallback for a machine "
                            "berth does not recognise",
                            c.origin_));
  }
  return c;
}

Result<Catalog> Catalog::load_dir(const std::string& dir) {
  BERTH_TRY(auto names, tree::list_dir(dir));
  if (!names) return fail(Errc::kNotFound, fmt::format("{}: no such directory", dir));
  std::vector<MachineFile> files;
  for (const std::string& n : *names) {
    if (n.size() <= 5 || n.compare(n.size() - 5, 5, ".toml") != 0) continue;
    if (files.size() >= kMaxFiles) {
      return fail(Errc::kInvalidInput,
                  fmt::format("{}: more than {} descriptions", dir, kMaxFiles));
    }
    std::string path = dir + "/" + n;
    BERTH_TRY(std::string text, files::read_file(path, kMaxMachineFileBytes));
    files.push_back({path, std::move(text)});
  }
  return from_files(files, dir);
}

std::vector<MachineFile> Catalog::built_in_files() {
  std::vector<MachineFile> files;
  for (size_t i = 0; i < builtin::kFileCount; ++i) {
    const builtin::File& f = builtin::kFiles[i];
    files.push_back({fmt::format("built-in {}", f.path),
                     std::string(reinterpret_cast<const char*>(f.data), f.size)});
  }
  return files;
}

Result<Catalog> Catalog::built_in() { return from_files(built_in_files(), "built in"); }

const MachineDescription* Catalog::find(std::string_view name) const {
  for (const MachineDescription& m : machines_) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

std::vector<std::string> Catalog::names() const {
  std::vector<std::string> out;
  for (const MachineDescription& m : machines_) out.push_back(m.name);
  return out;
}

bool rule_matches(const DetectRule& rule, const DetectInputs& inputs, std::string* why) {
  std::vector<std::string> said;
  for (const auto& [name, pattern] : rule.env) {
    auto v = inputs.env ? inputs.env->get(name) : std::nullopt;
    if (!v || !glob(pattern, *v)) return false;
    said.push_back(fmt::format("env {}={}", name, str::printable(*v)));
  }
  if (!rule.hostname.empty()) {
    // Site patterns are written for either form; try the full name and the short one.
    std::string short_name = inputs.hostname.substr(0, inputs.hostname.find('.'));
    if (inputs.hostname.empty() ||
        !(glob(rule.hostname, inputs.hostname) || glob(rule.hostname, short_name))) {
      return false;
    }
    said.push_back(
        fmt::format("host {} matches '{}'", str::printable(inputs.hostname), rule.hostname));
  }
  if (rule.gpus_present) {
    if (!inputs.gpus_seen) return false;
    bool present = *inputs.gpus_seen > 0;
    if (present != *rule.gpus_present) return false;
    said.push_back(present ? "GPUs present" : "no GPUs");
  }
  if (why) *why = str::join(said, ", ");
  return true;
}

Result<MachineChoice> choose_machine(const Catalog& catalog, std::string_view requested,
                                     const DetectInputs& inputs) {
  if (!requested.empty()) {
    const MachineDescription* m = catalog.find(requested);
    if (!m) {
      return fail(Errc::kNotFound,
                  fmt::format("--machine {}: no such machine (known: {})",
                              str::printable(requested), str::join(catalog.names(), ", ")));
    }
    return MachineChoice{m, fmt::format("--machine {}", m->name)};
  }
  const MachineDescription* chosen = nullptr;
  std::string why;
  std::vector<std::string> also;
  for (const MachineDescription& m : catalog.machines()) {
    for (const DetectRule& r : m.detect) {
      std::string w;
      if (!rule_matches(r, inputs, &w)) continue;
      if (!chosen) {
        chosen = &m;
        why = std::move(w);
      } else if (chosen != &m) {
        also.push_back(m.name);
      }
      break;
    }
  }
  if (!chosen) {
    return MachineChoice{catalog.find("generic"),
                         "no machine recognised (use --machine NAME): generic"};
  }
  std::string reason = fmt::format("detected (heuristic; --machine NAME overrides): {}", why);
  if (!also.empty()) reason += fmt::format("; also matched: {}", str::join(also, ", "));
  return MachineChoice{chosen, std::move(reason)};
}

}  // namespace berth::topo
