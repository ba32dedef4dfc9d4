#include "place/launcher.h"

#include <map>
#include <mutex>

#include <fmt/format.h>

#include "util/strings.h"

namespace berth::place {

const char* mechanism_name(Mechanism m) {
  switch (m) {
    case Mechanism::kSchedulerEnforced: return "scheduler-enforced";
    case Mechanism::kCpuBinding: return "cpu-binding";
    case Mechanism::kNone: return "none";
  }
  return "none";
}

const char* cap_support_name(CapSupport c) { return c == CapSupport::kEnforced ? "enforced" : "none"; }

std::string placement_refusal(const Launcher& l) {
  switch (l.kind) {
    case topo::LauncherKind::kLocal: return "";
    case topo::LauncherKind::kSrun:
      if (l.version) return "";
      return fmt::format("the Slurm version is unknown ({}), and placement on Slurm depends on "
                         "it (20.11 changed what a step may ask for); give --slurm-version",
                         l.version_text);
    case topo::LauncherKind::kPalsMpiexec:
      if (l.is_pals) return "";
      return fmt::format("mpiexec is not PALS's ({}); berth places only with PALS mpiexec",
                         l.version_text);
    case topo::LauncherKind::kMpirun:
    case topo::LauncherKind::kHydra:
      return l.mpi_refusal;  // decided when it was found (place/mpi_launcher.h)
  }
  return "unknown launcher";
}

Mechanism placement_support(const Launcher& l) {
  if (!placement_refusal(l).empty()) return Mechanism::kNone;
  switch (l.kind) {
    case topo::LauncherKind::kSrun:
      return l.version->at_least(kSlurmStepIsolation.major, kSlurmStepIsolation.minor)
                 ? Mechanism::kSchedulerEnforced
                 : Mechanism::kCpuBinding;
    case topo::LauncherKind::kPalsMpiexec:
    case topo::LauncherKind::kLocal:
    case topo::LauncherKind::kMpirun:
    case topo::LauncherKind::kHydra:
      return Mechanism::kCpuBinding;
  }
  return Mechanism::kNone;
}

CapSupport memory_cap_support(const Launcher& l) {
  if (l.kind == topo::LauncherKind::kSrun && l.version &&
      l.version->at_least(kSlurmMemoryEnforced.major, kSlurmMemoryEnforced.minor)) {
    return CapSupport::kEnforced;
  }
  // PALS has no memory option; older Slurm accepts --mem and does not act on it; the
  // local launcher sets no limit. Two ways of being useless are one answer.
  return CapSupport::kNone;
}

std::string unreachable(const Launcher& l, std::string_view node, std::string_view here) {
  if (node == here) return "";
  const bool mpi = l.kind == topo::LauncherKind::kMpirun || l.kind == topo::LauncherKind::kHydra;
  if (l.kind == topo::LauncherKind::kSrun ||
      (l.kind == topo::LauncherKind::kPalsMpiexec && l.is_pals) || (mpi && l.mpi_refusal.empty())) {
    return "";
  }
  std::string what;
  if (mpi) {
    what = fmt::format("{} cannot place here ({})", l.program, l.mpi_refusal);
  } else if (l.kind != topo::LauncherKind::kLocal) {
    what = "mpiexec here is not PALS's";
  } else if (!l.version_text.empty()) {
    // Looked for an MPI launcher (Grid Engine, LSF, a hostfile) and found none usable.
    what = fmt::format("the launcher here is local (no srun, no PALS mpiexec; {})", l.version_text);
  } else {
    what = "the launcher here is local (no srun, no PALS mpiexec)";
  }
  return fmt::format(
      "node '{}' is not this node ('{}') and nothing here reaches it: {}. "
      "Run berth on that node (a --worker there shares the work), or inside "
      "an allocation whose launcher reaches it, or name only this node",
      str::printable(node), str::printable(here), what);
}

namespace {

// "22.05.8" -> {22, 5}; nullopt unless it starts with N.N.
std::optional<Version> leading_version(std::string_view s) {
  auto parts = str::split(s, '.');
  if (parts.size() < 2) return std::nullopt;
  auto maj = str::parse_uint(parts[0], 1000);
  std::string_view minor_text = parts[1];
  size_t digits = 0;
  while (digits < minor_text.size() && str::is_digit(minor_text[digits])) ++digits;
  auto min = str::parse_uint(minor_text.substr(0, digits), 1000);
  if (!maj.ok() || !min.ok()) return std::nullopt;
  return Version{static_cast<int>(*maj), static_cast<int>(*min)};
}

}  // namespace

std::optional<Version> parse_slurm_version(std::string_view text) {
  std::string_view line = str::trim(text.substr(0, text.find('\n')));
  auto words = str::split_ws(line);
  if (words.size() < 2) return std::nullopt;
  if (words[0] != "slurm" && words[0] != "slurm-wlm") return std::nullopt;
  return leading_version(words[1]);
}

Result<Version> parse_version_flag(std::string_view text) {
  auto v = leading_version(str::trim(text));
  if (!v) {
    return fail(Errc::kInvalidInput,
                fmt::format("--slurm-version: '{}' is not a version like 20.11",
                            str::printable(text)));
  }
  return *v;
}

std::optional<std::vector<std::string>> parse_mpi_plugins(std::string_view text) {
  std::vector<std::string> names;
  bool listed = false;
  for (std::string_view line : str::split(text, '\n')) {
    line = str::trim(line);
    if (line.empty()) continue;
    if (str::to_lower(line).find("mpi plugin types are") != std::string::npos) {
      listed = true;
      continue;
    }
    size_t colon = line.find("versions available:");
    if (colon != std::string_view::npos) {
      // "specific pmix plugin versions available: pmix_v3,pmix_v4"
      for (auto w : str::split_ws(line.substr(colon + 19))) {
        for (auto v : str::split(w, ',')) {
          if (!v.empty()) names.emplace_back(v);
        }
      }
      continue;
    }
    if (!listed) continue;
    bool word = !line.empty();
    for (char c : line) word = word && (str::is_alnum(c) || c == '_' || c == '-');
    if (word) names.emplace_back(line);
  }
  if (!listed) return std::nullopt;
  return names;
}

bool looks_like_pals(std::string_view text) {
  std::string lower = str::to_lower(text);
  return lower.find("pals") != std::string::npos;
}

Launcher detect_launcher(topo::LauncherKind kind, VersionProbe& probe) {
  Launcher l;
  l.kind = kind;
  switch (kind) {
    case topo::LauncherKind::kLocal:
      l.detected_by = "local (no launcher)";
      return l;
    case topo::LauncherKind::kSrun: {
      l.program = "srun";
      l.detected_by = "srun --version";
      auto out = probe.run({"srun", "--version"});
      if (!out.ok()) {
        l.version_text = out.error().message();
        return l;
      }
      l.version_text = std::string(str::trim(out->substr(0, out->find('\n'))));
      l.version = parse_slurm_version(*out);
      if (!l.version) l.version_text = "unreadable: '" + str::printable(l.version_text) + "'";
      // Which MPI plugins this Slurm has: asked, never assumed (spec 07 §4).
      auto list = probe.run({"srun", "--mpi=list"});
      if (!list.ok()) {
        l.mpi_text = list.error().message();
      } else if (!(l.mpi_plugins = parse_mpi_plugins(*list))) {
        l.mpi_text = "srun --mpi=list: unreadable: '" +
                     str::printable(str::trim(list->substr(0, list->find('\n')))) + "'";
      } else {
        l.mpi_text = "srun --mpi=list";
      }
      return l;
    }
    case topo::LauncherKind::kMpirun:
    case topo::LauncherKind::kHydra:
      // Found for an allocation, by place::detect_mpi_launcher (mpi_launcher.h).
      l.detected_by = "not asked: see place/mpi_launcher.h";
      l.mpi_refusal = "the MPI launcher was not looked for";
      return l;
    case topo::LauncherKind::kPalsMpiexec: {
      l.program = "mpiexec";
      l.detected_by = "mpiexec --version";
      auto out = probe.run({"mpiexec", "--version"});
      if (!out.ok()) {
        l.version_text = out.error().message();
        return l;
      }
      l.version_text = str::printable(str::trim(out->substr(0, out->find('\n'))), 120);
      l.is_pals = looks_like_pals(*out);
      return l;
    }
  }
  return l;
}

const Launcher& detect_launcher_cached(topo::LauncherKind kind, VersionProbe& probe) {
  static std::mutex mu;
  static std::map<topo::LauncherKind, Launcher> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(kind);
  if (it == cache.end()) it = cache.emplace(kind, detect_launcher(kind, probe)).first;
  return it->second;
}

}  // namespace berth::place
