// Hints for a refused command line (flag_hint.h).
#include "cli/flag_hint.h"

#include <fmt/format.h>

#include <string_view>
#include <vector>

#include "util/strings.h"
#include "util/suggest.h"

namespace berth::cli {
namespace {

// Every flag `sub` takes, as written on a command line ("--dry-run", "-H").
std::vector<std::string> flags_of(const CLI::App& sub) {
  std::vector<std::string> out;
  for (const CLI::Option* o : sub.get_options()) {
    for (const std::string& l : o->get_lnames()) out.push_back("--" + l);
    for (const std::string& s : o->get_snames()) out.push_back("-" + s);
  }
  return out;
}

}  // namespace

std::string flag_hint(const CLI::App& app, const CLI::ParseError& /*e*/) {
  // Whatever CLI11 stopped at (extra words, or a subcommand required and none given),
  // the words nobody took: the subcommand's, or the top level's (an unknown subcommand).
  const CLI::App* where = &app;
  for (const CLI::App* sub : app.get_subcommands()) where = sub;
  for (const std::string& word : where->remaining()) {
    std::vector<std::string> names;
    std::string what;
    if (where == &app) {
      for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
      what = "a subcommand";
    } else if (word.starts_with("-")) {
      // A flag's value given with '=' is not part of its name.
      names = flags_of(*where);
      what = "a flag";
    } else {
      continue;
    }
    std::string_view bare = std::string_view(word).substr(0, word.find('='));
    std::vector<std::string_view> candidates(names.begin(), names.end());
    std::string hint = str::did_you_mean(bare, candidates);
    if (hint.empty()) continue;
    std::string prefix = where == &app ? "berth" : "berth " + where->get_name();
    return fmt::format("{}: '{}' is not {}{}", prefix, str::printable(bare), what, hint);
  }
  return "";
}

}  // namespace berth::cli
