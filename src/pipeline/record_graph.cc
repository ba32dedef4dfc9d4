// The graph from the settled record (record_graph.h).
#include "pipeline/record_graph.h"

#include <set>
#include <unordered_map>
#include <nlohmann/json.hpp>

namespace berth::pipeline {

std::optional<std::vector<char>> changed_tables(std::string_view text, bool same,
                                                const Settled& record, size_t head,
                                                const std::vector<TableSpan>& now) {
  const Settled* settled = &record;
  // Both versions split alike: the same head, the record's as many tables as it says.
  auto old_text = same ? std::optional<std::string_view>(text)
                       : settled_context_pipeline(settled->context);
  auto old = old_text ? split_step_tables(*old_text) : std::nullopt;
  if (!old || old->tables.size() != settled->tables ||
      old_text->substr(0, old->head) != std::string_view(text).substr(0, head)) {
    return std::nullopt;
  }
  // A table past the record's last is new: changed.
  std::vector<char> changed(now.size(), 1);
  for (size_t k = 0; k < now.size() && k < old->tables.size(); ++k) {
    const TableSpan& was = old->tables[k];
    changed[k] = !same && old_text->substr(was.offset, was.length) !=
                              std::string_view(text).substr(now[k].offset, now[k].length);
  }
  return changed;
}

std::vector<char> tables_as_recorded(std::string_view text, bool same, const Settled& record,
                                     const PipelineFile& file) {
  const Settled* settled = &record;
  // Both versions of the file read table by table, and the same head: table k's steps
  // are what they were when its bytes are. Not a table whose foreach values are found
  // among the files present: the same bytes may expand to other steps.
  if (settled->tables == 0 || file.tables.empty()) return {};
  auto changed = changed_tables(text, same, record, file.tables[0].offset, file.tables);
  if (!changed) return {};
  std::vector<char> as_recorded(file.tables.size(), 0);
  for (size_t k = 0; k < as_recorded.size(); ++k) {
    as_recorded[k] = file.steps[k].foreach_globs.empty() && !(*changed)[k];
  }
  return as_recorded;
}

namespace {

// Into `steps`, the graph's steps in the record's order: each step of a table read
// again (`expanded`) takes its own entry's place — the same name, table and foreach
// combination, reading from the same steps, so that the graph is the one reading the
// whole file gives, in the same order — and each other step is its entry, reading
// nothing made afresh (`made`). False where that cannot be.
bool in_record_order(std::vector<Step>& expanded, const std::vector<SettledStep>& entries,
                     const std::unordered_map<std::string_view, size_t>& at,
                     const std::vector<char>& made, std::vector<Step>& steps) {
  std::vector<Step*> placed(entries.size(), nullptr);
  for (Step& st : expanded) {
    auto it = at.find(st.name);
    if (it == at.end() || placed[it->second] != nullptr) return false;
    const SettledStep& e = entries[it->second];
    if (e.table != st.spec || e.combination != st.combination ||
        !std::equal(st.deps.begin(), st.deps.end(), e.deps.begin(), e.deps.end())) {
      return false;
    }
    placed[it->second] = &st;
  }
  steps.reserve(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    if (placed[i] != nullptr) {
      steps.push_back(std::move(*placed[i]));
      continue;
    }
    const SettledStep& e = entries[i];
    for (uint32_t d : e.deps) {
      if (made[d]) return false;
    }
    Step& st = steps.emplace_back();
    st.name = e.name;
    st.spec = e.table;
    st.combination = e.combination;
    st.deps.assign(e.deps.begin(), e.deps.end());
    st.from_record = true;
  }
  return true;
}

}  // namespace

std::optional<RecordGraph> graph_from_record(const RecordGraphInput& in, const DiscoveryFs& fs,
                                             const FileExists& exists) {
  const Settled* settled = in.record;
  const std::vector<char>* fresh = in.fresh;
  std::string_view text = in.text;
  if (settled == nullptr || in.same != (fresh != nullptr) || settled->tables == 0) {
    return std::nullopt;
  }
  // Which tables changed (none, with the record's own bytes).
  auto now = split_step_tables(text);
  auto changed = now ? changed_tables(text, in.same, *settled, now->head, now->tables) : std::nullopt;
  if (!changed || now->tables.size() != settled->tables) return std::nullopt;
  const size_t n = now->tables.size();
  std::vector<char> again = std::move(*changed);  // read alone again, every step of it
  std::vector<char> read(n, 0);  // read alone again, for some of its steps or all
  std::vector<size_t> which;
  // A table that finds its values among the files may expand otherwise from the same
  // bytes: it is always read again.
  for (uint32_t k : settled->globbed) again[k] = 1;
  const RecordedEntries* recorded = in.recorded ? in.recorded() : nullptr;
  const auto& entries = settled->entries;
  if (!recorded || recorded->text.size() != entries.size()) return std::nullopt;
  if (fresh && fresh->size() != entries.size()) return std::nullopt;
  // The steps made afresh: every step of a table read again whole, and those asked for.
  std::vector<char> made(entries.size(), 0);
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].table >= n) return std::nullopt;
    made[i] = again[entries[i].table] || (fresh && (*fresh)[i]);
    if (made[i]) read[entries[i].table] = 1;
  }
  for (size_t k = 0; k < n; ++k) {
    if (read[k]) which.push_back(k);
  }
  if (which.empty() || which.size() > kMostTablesReadAgain) return std::nullopt;
  // The record's steps by name; which of them the tables read again expand to.
  std::unordered_map<std::string_view, size_t> at;
  at.reserve(entries.size());
  size_t expected = 0;
  std::set<std::pair<size_t, uint32_t>> wanted;  // a table's combinations made afresh
  for (size_t i = 0; i < entries.size(); ++i) {
    at.emplace(entries[i].name, i);
    if (!made[i]) continue;
    ++expected;
    if (!again[entries[i].table]) wanted.emplace(entries[i].table, entries[i].combination);
  }
  std::shared_ptr<const void> kept;
  auto part = read_step_tables(text, in.path, *now, which, kept);
  if (!part) return std::nullopt;
  auto found = discover_foreach(*part, fs);
  if (!found.ok()) return std::nullopt;
  Graph g;
  g.path = part->path;
  g.dir = part->dir;
  g.name = part->name;
  g.tools = part->tools;
  std::vector<uint32_t> globs;
  for (const StepSpec& spec : part->steps) {
    if (spec.finds_values_in_files()) globs.push_back(static_cast<uint32_t>(spec.index));
  }
  GraphPlaces places;
  places.index_of = [&at](std::string_view name) -> std::optional<size_t> {
    auto it = at.find(name);
    if (it == at.end()) return std::nullopt;
    return it->second;
  };
  // A step not read again is reused; its outputs are what its entry says.
  const RecordedEntries& texts = *recorded;
  places.outputs_of = [&texts](size_t i) {
    std::vector<std::string> names;
    auto j = nlohmann::json::parse(texts.text[i], nullptr, false);
    if (j.is_object() && j.contains("outputs") && j["outputs"].is_object()) {
      for (const auto& item : j["outputs"].items()) names.push_back(item.key());
    }
    return names;
  };
  // Of a table read for some of its steps, only theirs.
  std::function<bool(size_t, uint32_t)> only = [&again, &wanted](size_t table, uint32_t c) {
    return again[table] || wanted.count({table, c}) > 0;
  };
  auto expanded = expand_tables(std::move(*part), exists, places, &only);
  if (!expanded.ok() || expanded->size() != expected) return std::nullopt;
  if (!in_record_order(*expanded, entries, at, made, g.steps)) return std::nullopt;
  RecordGraph out;
  out.graph = std::move(g);
  out.tables_read = which.size();
  out.tables = n;
  out.globbed = std::move(globs);
  out.discovered = std::move(*found);
  out.same_tables.assign(n, 0);
  for (size_t k = 0; k < n; ++k) out.same_tables[k] = !again[k];
  out.document = std::move(kept);
  return out;
}


std::vector<char> entries_made_afresh(const Settled& record, const SettledCheck& check) {
  const auto& entries = record.entries;
  std::vector<char> fresh(entries.size(), 0);
  for (size_t i = 0; i < entries.size(); ++i) {
    const SettledStep& e = entries[i];
    fresh[i] = !check.holds(e);
    // What reads a step made afresh is keyed again: made afresh too (deps come first).
    for (uint32_t d : e.deps) fresh[i] |= fresh[d];
  }
  return fresh;
}

bool record_steps_hold(const Graph& g, const Settled& record, const SettledCheck& check) {
  for (const Step& st : g.steps) {
    if (!st.from_record) continue;
    if (!check.holds(record.entries[&st - g.steps.data()])) return false;
  }
  return true;
}

}  // namespace berth::pipeline
