// The graph of a pipeline file made from its settled record (spec 04 §7.1): after an
// edit of a few [[step]] tables, only those tables are parsed; every other step is
// taken from its entry in the record, whose facts the run then checks and reuses. So a
// one-line edit of a 10^5-step pipeline parses one table, not the file.
//
// Pure functions of (the file's bytes, the record, the record's check), with the
// filesystem behind the two seams expansion already has (DiscoveryFs, FileExists). Each
// answers nullopt (or false) where the record cannot stand in for reading the file —
// the caller then reads it whole, which is always right, only slower.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/discover.h"
#include "pipeline/graph.h"
#include "pipeline/pipeline_file.h"
#include "pipeline/settled.h"

namespace berth::pipeline {

// By table of the file now (split as `now`, after a head of `head` bytes), 1 where its
// bytes are not the record's, or it is past the record's last. `same`: `text` is the
// record's own bytes (nothing changed). nullopt when the two versions do not split
// alike (another head, a record whose own file does not split as it says).
std::optional<std::vector<char>> changed_tables(std::string_view text, bool same,
                                                const Settled& record, size_t head,
                                                const std::vector<TableSpan>& now);

// By table of `file` (parsed from `text`), 1 where its steps are the record's: its bytes
// are, and it does not find foreach values among the files present (the same bytes
// may expand to other steps). Empty when the file or the record was not read table by
// table.
std::vector<char> tables_as_recorded(std::string_view text, bool same, const Settled& record,
                                     const PipelineFile& file);

// What graph_from_record() reads.
struct RecordGraphInput {
  std::string_view text;             // the pipeline file's bytes now
  std::string path;                  // and its name, as given
  const Settled* record = nullptr;   // with its entries decoded
  // Each entry's text, asked for only once the file turns out to split as the record
  // does (decoding 10^5 entries is not free); null when they cannot be had.
  std::function<const RecordedEntries*()> recorded;
  bool same = false;                 // `text` is the record's own bytes
  // With `same`: the entries made afresh (entries_made_afresh()), from their tables.
  const std::vector<char>* fresh = nullptr;
};

struct RecordGraph {
  Graph graph;  // every step in the record's order; those not parsed are from_record
  size_t tables = 0;       // how many [[step]] tables the file is
  size_t tables_read = 0;  // how many of them were parsed
  std::vector<uint32_t> globbed;    // the parsed tables that find values among files
  Discovered discovered;            // the directories those read
  std::vector<char> same_tables;    // by table: 1 where it was not parsed
  std::shared_ptr<const void> document;  // the parsed tables' TOML
};

// At most this many tables are parsed alone; an edit of more is read whole.
inline constexpr size_t kMostTablesReadAgain = 256;

// The graph of `in.text` from the record and the tables that changed (every table that
// finds values among files, and with `fresh`, those holding a step made afresh): each
// parsed step takes its entry's place (same name, table, combination and deps), every
// other step is its entry. nullopt when that cannot be: the file splits otherwise, too
// many tables changed, a parsed table expands to other steps, or a step taken from the
// record reads one made afresh.
std::optional<RecordGraph> graph_from_record(const RecordGraphInput& in, const DiscoveryFs& fs,
                                             const FileExists& exists);

// By entry: 1 where its facts no longer hold (`check`), or it reads from such a step.
std::vector<char> entries_made_afresh(const Settled& record, const SettledCheck& check);

// Whether every step of `g` taken from the record still rests on facts that hold.
bool record_steps_hold(const Graph& g, const Settled& record, const SettledCheck& check);

}  // namespace berth::pipeline
