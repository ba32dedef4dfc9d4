// Flux: the job's hosts from its resource set R (Flux RFC 20, version 1), read from
// the file --flux-r or BERTH_FLUX_R names.
//
// PRRTE asks the Flux broker for R through the KVS. berth links no Flux library, so
// the user (or a job script: `flux job info $FLUX_JOB_ID R > r.json`) hands the
// document over as a file, and the parser below is all that needs to be right.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "alloc/hostlist.h"
#include "alloc/rm_input.h"
#include "alloc/source.h"
#include "util/idset.h"
#include "util/strings.h"

namespace berth::alloc {
namespace {

using nlohmann::json;

// The most execution targets (nodes) one R may describe. The largest Flux systems
// have about 10^4 nodes; 10^6 leaves a wide margin while keeping a hostile document
// of a few bytes ("rank":"0-2147483646") from costing gigabytes.
constexpr int64_t kMaxFluxNodes = 1'000'000;

Failure bad(std::string_view origin, std::string_view path, std::string_view what) {
  return fail(Errc::kInvalidInput, fmt::format("{}: {}: {}", origin, path, what));
}

// The member `key` of `obj`, or nullptr. find() neither throws nor asserts, unlike
// operator[] on a const object.
const json* member(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

// The member `key` of `obj` when it is present and of the wanted kind, else an error
// naming the JSON path.
template <typename IsKind>
Result<const json*> require(const json& obj, std::string_view origin, const std::string& path,
                            const char* key, const char* kind, IsKind is_kind) {
  std::string where = path.empty() ? key : path + "." + key;
  const json* v = member(obj, key);
  if (!v) return bad(origin, where, "missing");
  if (!is_kind(*v))
    return bad(origin, where, fmt::format("expected {}, found {}", kind, v->type_name()));
  return v;
}

// Records where nlohmann's parser stopped. It is only run on a document that has
// already failed to parse, to say where and why; parse_error() returning false stops
// the parse without an exception.
class SyntaxErrorFinder : public nlohmann::json_sax<json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    position_ = position;
    message_ = ex.what();
    return false;
  }

  size_t position() const { return position_; }
  // nlohmann's text without its "[json.exception.parse_error.101] parse error at
  // line 1, column 2: " preamble; the caller gives the line itself.
  std::string_view reason() const {
    std::string_view m = message_;
    if (size_t p = m.find("] "); p != std::string_view::npos) m.remove_prefix(p + 2);
    if (m.substr(0, 11) == "parse error") {
      if (size_t p = m.find(": "); p != std::string_view::npos) m.remove_prefix(p + 2);
    }
    return m;
  }

 private:
  size_t position_ = 0;
  std::string message_ = "syntax error";
};

Failure syntax_error(std::string_view text, std::string_view origin) {
  SyntaxErrorFinder finder;
  json::sax_parse(text.begin(), text.end(), &finder);
  size_t end = std::min(finder.position() > 0 ? finder.position() - 1 : 0, text.size());
  size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + end, '\n'));
  return fail(Errc::kInvalidInput, fmt::format("{}:{}: not valid JSON: {}", origin, line,
                                               str::printable(finder.reason(), 200)));
}

// One R_lite entry: the ranks it covers and how many cores each of them has.
struct RankEntry {
  idset::Range ranks;
  int64_t cores = 0;
  size_t entry = 0;  // index in R_lite, for messages
};

// Parses the idset string at `v` (already known to be a string).
Result<std::vector<idset::Range>> read_idset(const json& v, std::string_view origin,
                                             const std::string& path) {
  auto ids = idset::parse(v.get_ref<const std::string&>());
  if (!ids.ok()) return bad(origin, path, ids.error().message());
  return std::move(ids).value();
}

// R_lite: for each entry, its ranks and the core count each rank gets.
Result<std::vector<RankEntry>> read_r_lite(const json& r_lite, std::string_view origin) {
  auto is_string = [](const json& v) { return v.is_string(); };
  auto is_object = [](const json& v) { return v.is_object(); };
  std::vector<RankEntry> out;
  for (size_t i = 0; i < r_lite.size(); ++i) {
    const json& e = r_lite[i];
    std::string path = fmt::format("execution.R_lite[{}]", i);
    if (!e.is_object())
      return bad(origin, path, fmt::format("expected an object, found {}", e.type_name()));
    BERTH_TRY(const json* rank, require(e, origin, path, "rank", "a string", is_string));
    BERTH_TRY(auto ranks, read_idset(*rank, origin, path + ".rank"));
    if (ranks.empty()) return bad(origin, path + ".rank", "no ranks");
    BERTH_TRY(const json* children, require(e, origin, path, "children", "an object", is_object));
    // A rank's slots are its cores. GPUs and other children do not add slots: they
    // are resources a slot may use, not places to run.
    BERTH_TRY(const json* core,
              require(*children, origin, path + ".children", "core", "a string", is_string));
    BERTH_TRY(auto cores, read_idset(*core, origin, path + ".children.core"));
    int64_t n = idset::count(cores);
    if (n == 0) return bad(origin, path + ".children.core", "no cores");
    for (const idset::Range& r : ranks) out.push_back({r, n, i});
  }
  return out;
}

// The nodelist: hostlist expressions whose concatenation names each rank in turn.
// Expansion stops as soon as there are more names than `ranks`, so that a nodelist
// far longer than R_lite costs no more than one extra expression.
Result<std::vector<std::string>> read_nodelist(const json& nodelist, std::string_view origin,
                                               int64_t ranks) {
  std::vector<std::string> names;
  for (size_t i = 0; i < nodelist.size(); ++i) {
    const json& e = nodelist[i];
    std::string path = fmt::format("execution.nodelist[{}]", i);
    if (!e.is_string())
      return bad(origin, path, fmt::format("expected a string, found {}", e.type_name()));
    auto expanded =
        hostlist::expand(e.get_ref<const std::string&>(), static_cast<size_t>(kMaxFluxNodes));
    if (!expanded.ok()) return bad(origin, path, expanded.error().message());
    for (std::string& name : *expanded) {
      if (auto problem = host_name_problem(name)) return bad(origin, path, *problem);
      names.push_back(std::move(name));
    }
    if (static_cast<int64_t>(names.size()) > ranks) break;
  }
  return names;
}

Result<std::vector<NodeSpec>> parse_document(const json& doc, std::string_view origin) {
  auto is_object = [](const json& v) { return v.is_object(); };
  auto is_array = [](const json& v) { return v.is_array(); };
  auto is_integer = [](const json& v) { return v.is_number_integer(); };
  if (!doc.is_object()) {
    return fail(Errc::kInvalidInput,
                fmt::format("{}: expected a JSON object, found {}", origin, doc.type_name()));
  }
  BERTH_TRY(const json* version, require(doc, origin, "", "version", "an integer", is_integer));
  if (*version != 1) {
    return bad(origin, "version",
               fmt::format("is {}; only version 1 is understood", version->dump()));
  }
  BERTH_TRY(const json* exec, require(doc, origin, "", "execution", "an object", is_object));
  BERTH_TRY(const json* r_lite,
            require(*exec, origin, "execution", "R_lite", "an array", is_array));
  // Flux allows R without a nodelist (ranks only); berth needs host names to reach
  // the nodes, so here it is required.
  BERTH_TRY(const json* nodelist,
            require(*exec, origin, "execution", "nodelist", "an array", is_array));

  BERTH_TRY(auto entries, read_r_lite(*r_lite, origin));
  if (entries.empty()) return bad(origin, "execution.R_lite", "no ranks");
  // Ranks are mapped to names in ascending rank order, whatever order R_lite lists
  // them in: the i-th name belongs to the i-th smallest rank, as in Flux's rlist.
  std::sort(entries.begin(), entries.end(),
            [](const RankEntry& a, const RankEntry& b) { return a.ranks.first < b.ranks.first; });
  int64_t total_ranks = 0;
  for (size_t k = 0; k < entries.size(); ++k) {
    if (k > 0 && entries[k].ranks.first <= entries[k - 1].ranks.last) {
      // Flux merges a rank listed twice; Flux never writes one twice, so here it is an
      // error rather than a guess at which entry's cores were meant.
      const RankEntry& a = entries[k - 1];
      const RankEntry& b = entries[k];
      return bad(origin, fmt::format("execution.R_lite[{}].rank", std::max(a.entry, b.entry)),
                 fmt::format("rank {} is also in execution.R_lite[{}]", b.ranks.first,
                             std::min(a.entry, b.entry)));
    }
    total_ranks += entries[k].ranks.last - entries[k].ranks.first + 1;
    if (total_ranks > kMaxFluxNodes) {
      return bad(origin, "execution.R_lite", fmt::format("more than {} ranks", kMaxFluxNodes));
    }
  }

  BERTH_TRY(auto names, read_nodelist(*nodelist, origin, total_ranks));
  if (static_cast<int64_t>(names.size()) != total_ranks) {
    return bad(origin, "execution.nodelist",
               fmt::format("names {}{} host(s) but execution.R_lite has {} rank(s)",
                           names.size() > static_cast<size_t>(total_ranks) ? "at least " : "",
                           names.size(), total_ranks));
  }

  // Two ranks on one host (several brokers per node, as in a test instance) are one
  // node whose slots sum, like a host repeated in a PBS nodefile.
  SlotTally tally;
  size_t next = 0;
  for (const RankEntry& e : entries) {
    for (int64_t r = e.ranks.first; r <= e.ranks.last; ++r) {
      auto added = tally.add(names[next++], e.cores);
      if (!added.ok()) {
        return bad(origin, fmt::format("execution.R_lite[{}]", e.entry), added.error().message());
      }
    }
  }
  return std::move(tally).take();
}

}  // namespace

Result<std::vector<NodeSpec>> parse_flux_r(std::string_view text, std::string_view origin) {
  // allow_exceptions = false: a malformed document comes back discarded, not thrown.
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return syntax_error(text, origin);
  // Every access below checks the type first, so nothing should throw. The catch is
  // a backstop: an exception escaping a parser would take the whole program down for
  // what is at worst a bug in a message.
  try {
    return parse_document(doc, origin);
  } catch (const json::exception& e) {
    return fail(Errc::kInternal, fmt::format("{}: unexpected JSON error: {}", origin,
                                             str::printable(e.what(), 200)));
  }
}

SourceResult discover_flux(const Input& in) {
  // --flux-r wins over BERTH_FLUX_R: a flag is the more deliberate of the two. Neither
  // given means "not mine", even inside a Flux job (FLUX_JOB_ID set): without R there
  // is nothing to read, and the next source answers.
  std::string what;
  std::string path;
  if (in.options.flux_r) {
    what = "--flux-r";
    path = *in.options.flux_r;
    if (path.empty()) return fail(Errc::kInvalidInput, "--flux-r: empty path");
  } else {
    BERTH_TRY(auto from_env, get_required_value(in.env, "BERTH_FLUX_R"));
    if (!from_env) return std::optional<Found>();
    what = "BERTH_FLUX_R";
    path = std::move(*from_env);
  }
  BERTH_TRY(std::string job_id, get_job_id(in.env, "FLUX_JOB_ID"));
  BERTH_TRY(std::string text, read_named_file(what, path));
  BERTH_TRY(auto nodes, parse_flux_r(text, file_origin(what, path)));
  return std::optional<Found>(Found::listed(std::move(nodes), std::move(job_id)));
}

}  // namespace berth::alloc
