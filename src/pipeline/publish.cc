// Publishing a run (publish.h).
#include "pipeline/publish.h"
#include "pipeline/run_history.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "util/files.h"

namespace berth::pipeline {
namespace {

namespace fs = std::filesystem;

// Stores a run's report with the run: a row whose steps are an object, so that runs
// reporting the same steps (every settled run) store them once, and a report of any
// size fits a row. The steps are `steps_object` when it is already stored — with
// `steps_changed`, the run's entries that differ from that object's entry of the same
// name — else `steps()` is stored. Returns the steps' object name.
Result<std::string> store_report(const RunReport& r, std::string steps_object,
                                 const std::function<Result<std::string_view>()>& steps,
                                 std::optional<size_t> settled_steps, store::ObjectStore& shared,
                                 std::vector<std::string_view> steps_changed = {}) {
  bool present = false;
  if (!steps_object.empty()) {
    auto has = shared.has_object(steps_object);
    present = has.ok() && *has;
  }
  if (!present) {
    BERTH_TRY(std::string_view bytes, steps());
    BERTH_TRY(steps_object, shared.put_object(bytes));
    steps_changed.clear();
  }
  auto addr = store::row_address("runs", r.run);
  BERTH_CHECK(
      shared.put_row(addr, report_json(r, steps_object, true, settled_steps, steps_changed)));
  return steps_object;
}

// How many bytes of executed steps' entries a run's row carries in place of its own
// steps object (store_report()); past this, the steps are stored whole.
constexpr size_t kMaxStepsChangedBytes = 256 * 1024;
// How many bytes of entries a settled record carries as overrides of its steps object
// (and at most half the object's) before the next run that records keeps the steps as
// an object of their own.
constexpr size_t kMaxOverrideBytes = 64 * 1024;

// One publishing of an ordinary run: the previous record and the place, under the names
// the steps below use.
class Publisher {
 public:
  Publisher(const PreviousRecord& p, const PublishPlace& w)
      : settled(p.settled),
        previous_object(p.object),
        previous_steps(p.steps),
        previous_record(p.record),
        shared(w.shared),
        index(w.index),
        cache(w.cache),
        report_path(w.report_path),
        settled_name(w.settled_name),
        tables(w.tables),
        globbed(w.globbed),
        check(w.check),
        check_ns(w.check_ns),
        place_(w) {}

  ReportText publish(RunReport& rep, bool record_settled);

 private:
  void say(const std::string& m) const {
    if (place_.say) place_.say(m);
  }
  std::string context() const { return place_.context(); }
  std::string base() const { return place_.base(); }
  // Stores `steps` and keeps them in the cache as the file a settled record names
  // (settled_steps_path()), written once: the store is handed that very file, which a
  // file store on this filesystem (or a worker's local tier) links as its copy, so
  // that megabytes are not written and made durable twice. Returns the object's name
  // and the file.
  Result<std::pair<std::string, std::string>> keep_settled_steps(std::string_view steps);
  // The overrides that make the steps object of the record found into `steps` (entries
  // at `at`, for the steps of `rec`), with where the object's entries lie in
  // `object_spans`; nullopt when the object is not this run's to keep: no record read,
  // other steps, or more differences than kMaxOverrideBytes or half the object.
  std::optional<std::vector<SettledOverride>> overrides_for(const Settled& rec,
                                                            std::string_view steps,
                                                            const EntrySpans& at,
                                                            EntrySpans& object_spans) const;
  // An edit's rerun set against the last record's object, entry by entry (publish()).
  struct Spliced {
    std::vector<SettledOverride> report;  // the report's entries that differ from the object
    std::vector<SettledOverride> rerun;   // those of the steps a rerun reports
    EntrySpans at;                        // each entry in the steps a rerun reports
    size_t rerun_bytes = 0;               // how long those steps are
  };
  // nullopt when `rep` is not the last record's steps in its order, when the steps a
  // rerun reports would differ from its object by more than kMaxOverrideBytes (or half
  // the object), or when the object is not laid out as berth writes steps.
  std::optional<Spliced> splice_on_object(const RunReport& rep) const;
  // The report and record of an edit's rerun spliced so (`out` holding its head).
  ReportText publish_spliced(RunReport& rep, Spliced sp, ReportText out);
  // The record of `rep`: its entries at `at` in the steps a rerun reports (`steps_bytes`
  // long), the object `kept_steps` names (its file) `object_bytes` long with
  // `overrides`; written and remembered by the index, unless no steps were kept. The
  // previous record and its steps file go unless they are it.
  void keep_record(RunReport& rep, std::optional<std::pair<std::string, std::string>> kept_steps,
                   const EntrySpans& at, size_t steps_bytes, size_t object_bytes,
                   std::vector<SettledOverride> overrides);

  const Settled* settled;
  const files::SharedBytes& previous_object;
  const std::string& previous_steps;
  const std::string& previous_record;
  store::ObjectStore* shared;
  Index* index;
  const std::string& cache;
  const std::string& report_path;
  const std::string& settled_name;
  size_t tables;
  const std::vector<uint32_t>& globbed;
  const SettledCheck* check;
  int64_t check_ns;
  const PublishPlace& place_;
};

}  // namespace

Result<std::pair<std::string, std::string>> Publisher::keep_settled_steps(
    std::string_view steps) {
  std::string dir = cache + "/settled";
  std::error_code mk;
  fs::create_directories(dir, mk);
  if (mk) return files::os_error(dir, "mkdir", mk.value());
  std::string tmp;
  BERTH_TRY(files::Fd fd, files::create_temp(dir, 0644, &tmp));
  files::TempGuard guard{tmp};
  BERTH_CHECK(files::write_all(fd.get(), steps.data(), steps.size(), tmp));
  BERTH_TRY(std::string name, shared->adopt_object_file(tmp));
  // Linked as the store's copy, this file is made durable as the store makes its
  // objects (publish() stores the run's row after it). The store took a copy instead
  // (another filesystem, a remote store, the object there already): this one is made
  // durable on its own, as a record's steps must be whole when the record is.
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || st.st_nlink < 2) BERTH_CHECK(files::fsync_fd(fd.get(), tmp));
  fd.reset();
  std::string path = settled_steps_path(cache, name);
  if (path.empty()) return fail(Errc::kIo, "the store named the settled steps " + name);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return files::os_error(path, "rename onto", errno);
  guard.disarm();
  return std::make_pair(std::move(name), std::move(path));
}

std::optional<std::vector<SettledOverride>> Publisher::overrides_for(
    const Settled& rec, std::string_view steps, const EntrySpans& at,
    EntrySpans& object_spans) const {
  if (!settled || !previous_object || previous_steps.empty()) return std::nullopt;
  const Settled& last = *settled;
  if (last.entries.size() != rec.entries.size()) return std::nullopt;
  for (size_t i = 0; i < rec.entries.size(); ++i) {
    if (last.entries[i].name != rec.entries[i].name) return std::nullopt;
  }
  auto spans = settled_object_spans(last);
  if (!spans) return std::nullopt;
  // Overrides are worth keeping while they are a small part of the steps.
  size_t most = std::min(kMaxOverrideBytes, previous_object->size() / 2);
  auto made = settled_overrides(*previous_object, *spans, steps, at, most);
  if (made) object_spans = std::move(*spans);
  return made;
}

std::optional<Publisher::Spliced> Publisher::splice_on_object(
    const RunReport& rep) const {
  if (!settled || !previous_object || previous_steps.empty() || !rep.settled) return std::nullopt;
  const Settled& last = *settled;
  std::string_view object = *previous_object;
  const size_t n = rep.steps.size();
  if (n == 0 || last.entries.size() != n || rep.settled->entries.size() != n) return std::nullopt;
  auto spans = settled_object_spans(last);
  if (!spans) return std::nullopt;
  // The object is "[" entry ("," entry)* "]", as every steps text berth writes: the
  // steps made from it by overrides keep that layout, and entry i lies where it did.
  size_t expect = 1;
  for (size_t i = 0; i < n; ++i) {
    const auto& [oo, ol] = (*spans)[i];
    if (oo != expect || object[oo - 1] != (i == 0 ? '[' : ',')) return std::nullopt;
    expect = oo + ol + 1;
  }
  if (expect != object.size() || object.back() != ']') return std::nullopt;
  const size_t most = std::min(kMaxOverrideBytes, object.size() / 2);
  Spliced sp;
  sp.at.reserve(n);
  size_t pos = 1, rerun_overrides = 0;
  for (size_t i = 0; i < n; ++i) {
    const StepRecord& r = rep.steps[i];
    if (r.name != last.entries[i].name || rep.settled->entries[i].name != r.name) {
      return std::nullopt;
    }
    const auto& [oo, ol] = (*spans)[i];
    std::string_view theirs(object.data() + oo, ol);
    std::string fresh_report, fresh_rerun;
    std::string_view report_entry, rerun_entry;
    bool report_same = false, rerun_same = false;
    if (!r.recorded.empty()) {
      // Reused: the same text in the report and for a rerun. An entry that is the
      // object's own bytes (recorded_entries()) is the object's without a comparison.
      report_entry = rerun_entry = r.recorded;
      report_same = r.recorded.data() == theirs.data() && r.recorded.size() == theirs.size();
      if (!report_same) report_same = r.recorded == theirs;
      rerun_same = report_same;
    } else {
      fresh_report = step_entry_json(r, false);
      fresh_rerun = step_entry_json(r, true);
      report_entry = fresh_report;
      rerun_entry = fresh_rerun;
      report_same = report_entry == theirs;
      rerun_same = rerun_entry == theirs;
    }
    if (!rerun_same) {
      rerun_overrides += rerun_entry.size();
      if (rerun_overrides > most) return std::nullopt;
      sp.rerun.push_back({oo, ol, std::string(rerun_entry)});
    }
    if (!report_same) sp.report.push_back({oo, ol, std::string(report_entry)});
    sp.at.emplace_back(pos, rerun_entry.size());
    pos += rerun_entry.size() + 1;
  }
  sp.rerun_bytes = pos;
  return sp;
}

ReportText Publisher::publish_spliced(RunReport& rep, Spliced sp, ReportText out) {
  out.mapped = previous_object;
  out.overrides = std::move(sp.report);
  // The run's row first: its barrier (a syncfs, in a file:// store) then has only
  // what came before to flush, not the megabytes of the report being written.
  Result<void> report_written = Ok{};
  {
    std::vector<std::string_view> changed;
    size_t bytes = 0;
    for (const auto& v : out.overrides) {
      changed.push_back(v.entry);
      bytes += v.entry.size();
    }
    bool fits = bytes <= kMaxStepsChangedBytes;
    if (!fits) changed.clear();
    std::string whole;  // the report's steps, made only if they are stored whole
    auto stored = store_report(
        rep, fits ? settled->steps_object : "",
        [&]() -> Result<std::string_view> {
          BERTH_TRY(whole, splice_overrides(*previous_object, out.overrides));
          return std::string_view(whole);
        },
        std::nullopt, *shared, std::move(changed));
    if (!stored.ok()) say("the run's report was not stored: " + stored.error().message());
    // The report: the object's file sent by the kernel around the entries that
    // differ (replaced atomically, not fsynced), on a thread of its own while the
    // record is kept. The file is opened here: keep_record() removes it when no
    // record is kept.
    files::Fd steps_fd(::open(previous_steps.c_str(), O_RDONLY | O_CLOEXEC));
    int open_errno = errno;
    std::jthread report_writer([&] {
      report_written = steps_fd.valid()
                           ? write_report_file(report_path, out.head, steps_fd.get(),
                                               previous_object->size(), out.overrides)
                           : files::os_error(previous_steps, "open", open_errno);
    });
    keep_record(rep, stored.ok() ? std::make_optional(std::make_pair(settled->steps_object,
                                                                     previous_steps))
                                 : std::nullopt,
                sp.at, sp.rerun_bytes, previous_object->size(), std::move(sp.rerun));
    report_writer.join();
    if (!report_written.ok()) say(report_written.error().message());
  }
  return out;
}

ReportText Publisher::publish(RunReport& rep, bool record_settled) {
  ReportText out;
  out.head = report_json_head(rep);
  // A record is kept of a run whose every step is in it; with it, beside the index, the
  // steps a rerun reports: this run's own when none executed, else the same with the
  // executed ones reported cached.
  bool record =
      record_settled && rep.settled && rep.settled->entries.size() == rep.steps.size();
  bool executed = rep.count(StepState::kExecuted) > 0;
  // An edit's rerun: the steps of the last record, a few executed again. Its report and
  // the steps a rerun reports are that record's object with a few entries in place,
  // each entry taken as it is or written afresh, set against the object's entry of the
  // same step: no steps text is made whole.
  if (record && executed) {
    if (auto sp = splice_on_object(rep)) return publish_spliced(rep, std::move(*sp), std::move(out));
  }
  // The steps are written once, a reused step's entry copied as it was recorded; where
  // each entry lies is kept, so the steps a rerun reports are spliced from these.
  EntrySpans spans;
  out.steps = report_steps_json(rep, &spans);
  const std::string& steps_json = out.steps;
  // Beside the pipeline (replaced atomically, not fsynced: the runs row is the durable
  // record, and in a file:// store on the same filesystem the row's own barrier makes
  // the file durable with it), on a thread of its own while the steps a rerun reports
  // are made and kept below (megabytes more when they become an object of their own).
  Result<void> report_written = Ok{};
  std::jthread report_writer([&] {
    report_written = write_pieces_file(report_path, out.head, steps_json);
  });
  std::string rerun_steps;
  EntrySpans rerun_spans;
  if (record && executed) rerun_steps = settled_steps_json(rep, steps_json, spans, &rerun_spans);
  const std::string& steps = executed ? rerun_steps : steps_json;
  const EntrySpans& at = executed ? rerun_spans : spans;
  // The steps a rerun reports are kept as the last record's object with overrides when
  // they differ from it in a few entries; else as an object of their own, written once
  // and kept before the report is stored: when they are the report's own steps,
  // storing the report finds them stored; and the run's row, written after, makes them
  // durable with everything else the store holds (spec 05 §4).
  std::optional<std::pair<std::string, std::string>> kept_steps;  // object, file
  std::vector<SettledOverride> overrides;
  std::string_view object = steps;  // the kept object's bytes, its entries at object_at
  EntrySpans previous_spans;
  const EntrySpans* object_at = &at;
  if (record) {
    if (auto made = overrides_for(*rep.settled, steps, at, previous_spans)) {
      overrides = std::move(*made);
      kept_steps.emplace(settled->steps_object, previous_steps);
      object = *previous_object;
      object_at = &previous_spans;
    } else if (auto k = keep_settled_steps(steps); k.ok()) {
      kept_steps = std::move(*k);
    }
  }
  report_writer.join();
  if (!report_written.ok()) say(report_written.error().message());
  bool stored_ok = false;
  {
    // The row names the kept object and carries this run's entries that differ from
    // it (the executed steps', the overridden ones'): not another copy of megabytes
    // that differ in a few entries. Past kMaxStepsChangedBytes of them, the run's steps
    // are stored whole.
    std::vector<std::string_view> changed;
    bool fits = kept_steps.has_value();
    if (kept_steps) {
      size_t bytes = 0;
      for (size_t i = 0; i < spans.size() && fits; ++i) {
        std::string_view ours =
            std::string_view(steps_json).substr(spans[i].first, spans[i].second);
        const auto& [oo, ol] = (*object_at)[i];
        if (ours == object.substr(oo, ol)) continue;
        changed.push_back(ours);
        bytes += ours.size();
        fits = bytes <= kMaxStepsChangedBytes;
      }
      if (!fits) changed.clear();
    }
    auto stored = store_report(
        rep, fits ? kept_steps->first : "",
        [&]() -> Result<std::string_view> { return std::string_view(steps_json); }, std::nullopt,
        *shared, std::move(changed));
    if (stored.ok()) {
      stored_ok = true;
    } else {
      say("the run's report was not stored: " + stored.error().message());
    }
  }
  if (!record_settled) return out;
  keep_record(rep, stored_ok ? kept_steps : std::nullopt, at, steps.size(), object.size(),
              std::move(overrides));
  // A steps file kept for a record that was not: gone with it (keep_record() removed
  // the previous one's).
  if (kept_steps && !stored_ok) ::unlink(kept_steps->second.c_str());
  return out;
}

void Publisher::keep_record(RunReport& rep,
                                 std::optional<std::pair<std::string, std::string>> kept_steps,
                                 const EntrySpans& at, size_t steps_bytes, size_t object_bytes,
                                 std::vector<SettledOverride> overrides) {
  bool kept = false;
  std::string steps_path, record_path;
  if (kept_steps && rep.settled) {  // steps are kept only for a record
    const std::string& steps_object = kept_steps->first;
    steps_path = kept_steps->second;
    record_path = settled_record_path(cache, steps_object);
    Settled& rec = *rep.settled;
    for (size_t i = 0; i < at.size() && i < rec.entries.size(); ++i) {
      rec.entries[i].offset = at[i].first;
      rec.entries[i].length = at[i].second;
    }
    rec.steps_object = steps_object;
    rec.steps_bytes = steps_bytes;
    rec.object_bytes = object_bytes;
    rec.overrides = std::move(overrides);
    rec.context = context();
    rec.base = base();
    rec.tables = tables;
    rec.globbed = globbed;
    // Inputs reused from the old record were read again by its check if racy.
    if (check) settle_racy_inputs(rec, check_ns);
    // Not fsynced: a record torn by a crash does not decode, and costs one ordinary
    // run; the steps it names were.
    std::string bytes = encode_settled(rec);
    if (files::write_file_atomic(record_path, bytes, false).ok()) {
      index->remember_settled(settled_name, settled_pointer(record_path, bytes.size()));
      kept = true;
    }
  }
  // A steps file kept for a record that was not: gone with it.
  if (kept_steps && !kept) ::unlink(kept_steps->second.c_str());
  if (!kept) index->forget_settled(settled_name);
  if (!previous_steps.empty() && (!kept || previous_steps != steps_path)) {
    ::unlink(previous_steps.c_str());
  }
  if (!previous_record.empty() && (!kept || previous_record != record_path)) {
    ::unlink(previous_record.c_str());
  }
}

namespace {
// What a report says of where it came from (run_history.h): its id, the pipeline's
// path, the host, the targets.
void name_the_run(RunReport& rep, const PublishPlace& place) {
  // Runs of one process (Python's berth.run) within one second: each its own id, so that
  // none of their write-once rows is lost to another.
  static std::atomic<unsigned> runs_here{0};
  unsigned n = runs_here.fetch_add(1);
  std::string process = std::to_string(getpid());
  if (n > 0) process += "." + std::to_string(n);
  rep.run = run_id(rep.started, rep.worker, process);
  rep.pipeline_path = place.settled_name;
  rep.host = place.host;
  rep.targets = place.targets;
}
}  // namespace

ReportText publish_run(RunReport& rep, bool record_settled, const PreviousRecord& previous,
                       const PublishPlace& place) {
  name_the_run(rep, place);
  return Publisher(previous, place).publish(rep, record_settled);
}

std::optional<RunOutcome> publish_settled(PreviousRecord& previous, const PublishPlace& place,
                                          const Clock& clock) {
  auto t0 = clock.steady();
  std::string started = utc_text(clock.wall());
  Settled* settled = previous.settled;
  const std::string& steps_path = previous.steps;
  if (settled == nullptr || steps_path.empty() || place.check == nullptr) return std::nullopt;
  files::Fd steps(::open(steps_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!steps.valid()) return std::nullopt;
  const int steps_fd = steps.get();
  struct stat sb {};
  if (::fstat(steps_fd, &sb) != 0 || static_cast<size_t>(sb.st_size) != settled->object_bytes) {
    return std::nullopt;
  }
  auto say = [&place](const std::string& m) {
    if (place.say) place.say(m);
  };
  store::ObjectStore& shared = *place.shared;
  RunReport header;
  header.pipeline = settled->pipeline;
  header.store = place.store->describe();
  header.started = started;
  header.notices = place.store->notices();
  name_the_run(header, place);
  // A steps file whose bytes are not the object's is not used: checked when the object
  // must be stored again, before anything is written.
  std::string steps_object = settled->steps_object;
  if (auto has = shared.has_object(steps_object); !has.ok() || !*has) {
    auto bytes = files::read_file(steps_path, settled->object_bytes + 1);
    auto name = bytes.ok() ? shared.put_object(*bytes) : Result<std::string>(bytes.error());
    if (name.ok() && *name != steps_object) return std::nullopt;
    if (!name.ok()) steps_object.clear();
  }
  // Racy inputs whose bytes the check read again, and which are no longer racy: from
  // now on their stamps are proof, and the record says so.
  if (place.check->racy_verified > 0 && settle_racy_inputs(*settled, place.check_ns) &&
      decode_settled_entries(*previous.bytes, previous.entries_at, *settled).ok()) {
    std::string bytes = encode_settled(*settled);
    if (files::write_file_atomic(previous.record, bytes, false).ok()) {
      place.index->remember_settled(place.settled_name,
                                    settled_pointer(previous.record, bytes.size()));
    }
  }
  header.elapsed_s = std::chrono::duration<double>(clock.steady() - t0).count();
  RunOutcome out;
  out.settled = true;
  out.text.head = report_json_head(header, settled->steps);
  out.text.file = steps_path;
  out.text.file_bytes = settled->object_bytes;
  out.text.overrides = settled->overrides;
  out.steps = settled->steps;
  out.elapsed_s = header.elapsed_s;
  if (auto w = write_report_file(place.report_path, out.text.head, steps_fd, out.text.file_bytes,
                                 out.text.overrides);
      !w.ok()) {
    say(w.error().message());
  }
  // The row names the object and carries the entries that differ from it.
  std::vector<std::string_view> changed;
  for (const auto& v : settled->overrides) changed.push_back(v.entry);
  auto stored = store_report(
      header, steps_object,
      [&]() -> Result<std::string_view> { return fail(Errc::kIo, "the steps' object is missing"); },
      settled->steps, shared, std::move(changed));
  if (!stored.ok()) say("the run's report was not stored: " + stored.error().message());
  return out;
}

}  // namespace berth::pipeline
