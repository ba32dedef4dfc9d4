// Catalog: the machine descriptions berth knows, and choosing the one it is on.
//
// A catalog is read either from a directory of <name>.toml files — the CLI passes
// `<exe dir>/../share/berth/machines` when installed, or the source tree's
// data/machines — or from the copies compiled into the binary at build time
// (built_in()), so that `berth machine` works from a build tree with no paths at
// all. Every catalog must describe `generic`, the fallback.
//
// Choosing: `--machine NAME` names one; otherwise the descriptions' [[detect]] rules
// are tried in name order and the first that matches wins. Those rules are
// heuristics (NERSC_HOST, LMOD_SYSTEM_NAME, login-node host names), written in the
// data files beside the machine they recognise; nothing matching means `generic`.
// The choice always says why it was made, so a wrong guess is visible.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "topo/machine.h"
#include "util/env.h"
#include "util/result.h"

namespace berth::topo {

// A description file's name and content.
struct MachineFile {
  std::string path;
  std::string text;
};

class Catalog {
 public:
  // Parses every file; fails on the first that does not parse (naming it), on two
  // descriptions with one name, and when `generic` is missing.
  static Result<Catalog> from_files(const std::vector<MachineFile>& files, std::string origin);
  // Every *.toml in `dir` (not recursive). Fails (kNotFound) when `dir` does not exist.
  static Result<Catalog> load_dir(const std::string& dir);
  // The descriptions compiled into berth from data/machines at build time.
  static Result<Catalog> built_in();
  // The files compiled in, for tests that compare them with the source tree.
  static std::vector<MachineFile> built_in_files();

  // Sorted by name.
  const std::vector<MachineDescription>& machines() const { return machines_; }
  const MachineDescription* find(std::string_view name) const;
  std::vector<std::string> names() const;
  // "built in" or the directory read.
  const std::string& origin() const { return origin_; }

 private:
  std::vector<MachineDescription> machines_;
  std::string origin_;
};

// What detection may look at.
struct DetectInputs {
  const Env* env = nullptr;      // required
  std::string hostname;          // gethostname(); "" when unknown
  std::optional<int> gpus_seen;  // from read_gpus(), for rules that ask
};

struct MachineChoice {
  const MachineDescription* machine = nullptr;  // points into the catalog
  // Why: "--machine aurora", "detected (heuristic): env NERSC_HOST=perlmutter ...",
  // "no machine recognised: generic".
  std::string reason;
};

// `requested` non-empty: that machine, or an error (kNotFound) listing the known
// names. Empty: detection as described above.
Result<MachineChoice> choose_machine(const Catalog& catalog, std::string_view requested,
                                     const DetectInputs& inputs);

// True when `rule` holds for `inputs`; `why` (if given) receives the conditions that
// matched, for MachineChoice::reason.
bool rule_matches(const DetectRule& rule, const DetectInputs& inputs, std::string* why);

}  // namespace berth::topo
