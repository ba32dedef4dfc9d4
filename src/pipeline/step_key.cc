// A step's key and basis (step_key.h).
#include "pipeline/step_key.h"

#include <fmt/format.h>

#include "pipeline/basis.h"
#include "pipeline/input_hash.h"

namespace berth::pipeline {

Result<StepKey> step_key(size_t i, const KeyInputs& in) {
  const Graph& g = *in.graph;
  const Step& s = g.steps[i];
  StepKey out;
  InputHashes hashes;
  InputHashes shape;  // the same inputs with no hashes: for the recipe
  BasisInputs jin;
  for (const auto& [name, input] : s.inputs) {
    auto& list = hashes[name];
    jin.input(name);
    for (const InputItem& item : input.items) {
      shape[name].push_back({"bytes", ""});
      if (item.kind == InputItem::Kind::kFile) {
        BERTH_TRY(HashedInput h, hash_input(item.path, in.index, *in.clock));
        out.stamps.push_back(h.stamp.value_or(FileStamp{}));
        if (in.for_record) {
          if (h.stamped) {
            // A racy stamp is recorded with the hash, which a later check reads again.
            out.files.push_back({item.path, *h.stamp, true, h.racy ? h.hash : std::string()});
          } else {
            out.all_stamped = false;
          }
        }
        list.push_back({"bytes", std::move(h.hash)});
      } else {
        const auto& up = (*in.records)[item.step].outputs;
        auto it = up.find(item.output);
        if (it == up.end()) {
          return fail(Errc::kInternal, fmt::format("step '{}': input '{}' from '{}' is not "
                                                   "known yet",
                                                   s.name, name, g.steps[item.step].name));
        }
        list.push_back({it->second.form, it->second.canonical});
      }
      jin.item(item.text, list.back().tagged());
    }
  }
  const StepText text(s);
  BERTH_TRY(out.key, key_of(s, text, hashes, *in.tools));
  if (in.with_basis) {
    ToolVersions no_versions;
    for (const auto& t : s.tools) no_versions[t] = "";
    BERTH_TRY(std::string recipe, key_of(s, text, shape, no_versions));
    out.basis = step_basis(s, text, recipe, jin.finish(), basis_tools(s.tools, *in.tools));
  }
  return out;
}

}  // namespace berth::pipeline
