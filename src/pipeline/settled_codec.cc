// The settled record's codec (settled.h, spec 04 §7.1): encoding and decoding, of the
// record and of the pointer a row holds to it.
//
// The encoding is text, one fact per line, every string length-prefixed ("5:in/a"), so
// a path may hold any byte. Format kSettledFormat (6), the lines in this order:
//
//   berth-settled 6
//   context <len>:<settled_context()>
//   base <len>:<settled_base()>
//   pipeline <len>:<name>
//   steps-object <len>:<object name, or empty>
//   tables <n> <g> <globbed table>...                             (n = 0: read whole)
//   request <tasks> <cpus per task> <gpus> <nodes, -1: any>      (any number)
//   tool <argc> <len>:<arg>... <len>:<output>                     (any number)
//   input <dev> <ino> <size> <mtime ns> <ctime ns> <len>:<path>   (any number; input,
//   racy-input <dev> <ino> <size> <mtime ns> <ctime ns> <len>:<hash> <len>:<path>
//   result <dev> <ino> <size> <mtime ns> <len>:<path>              racy-input and result
//                                                                  lines interleave)
//   object <len>:<name>                                           (any number)
//   step <offset> <length> <table> <combination> <d> <dep>... <n> <file>... <m> <object>...
//        <len>:<fingerprint> <len>:<name>                         (any number)
//   override <offset> <length> <len>:<entry>                      (any number, in order)
//   steps <count> <bytes> <object bytes>
//   end
//
// A step's files and objects are indices into the input/result and object lines, in
// the order written, its deps indices of the step lines before it; its offset and
// length lie within the steps file. An override replaces the steps object's bytes at
// <offset> (<length> of them) with <entry> in what a rerun reports. Spec 04 §7.1 pins
// the same grammar.
//
// Each line kind has one parser (read_*_line()), written on SettledReader
// (settled_reader.h): it reads a well-formed line fast and, on the first thing it did
// not expect, stops with a note of what and where; only then is a message made.
#include "pipeline/settled.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>

#include "pipeline/settled_reader.h"
#include "util/memory.h"

namespace berth::pipeline {
namespace {

constexpr std::string_view kMagic = "berth-settled";

// Appends a number in decimal, without a temporary string: a record holds tens of
// thousands of them.
template <typename T>
void put_num(std::string& out, T v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, end);
}

void put_str(std::string& out, std::string_view s) {
  put_num(out, s.size());
  out += ':';
  out.append(s);
}

// A line of one string: `word`, then the string.
bool read_string_line(SettledReader& r, std::string_view word, std::string& out, std::string_view what) {
  return r.lit(word) && r.str(out, what) && r.end_line();
}

// "tables <n> <g> <globbed table>...", up to its newline.
bool read_tables_line(SettledReader& r, Settled& s) {
  size_t globbed = 0;
  if (!(r.lit("tables ") && r.num(s.tables, "a count of tables") && r.space() &&
        r.num(globbed, "a count of tables") &&
        r.check(globbed <= s.tables, "at most as many tables as the file has"))) {
    return false;
  }
  for (size_t k = 0; k < globbed; ++k) {
    uint32_t t = 0;
    if (!(r.space() && r.num(t, "a table's index") &&
          r.check(t < s.tables && (s.globbed.empty() || t > s.globbed.back()),
                  "a table's index, ascending, within the file's"))) {
      return false;
    }
    s.globbed.push_back(t);
  }
  return true;
}

// The lines every record opens with, after its magic's.
bool read_head(SettledReader& r, Settled& s) {
  return read_string_line(r, "context ", s.context, "the context") &&
         read_string_line(r, "base ", s.base, "the base context") &&
         read_string_line(r, "pipeline ", s.pipeline, "the pipeline's name") &&
         read_string_line(r, "steps-object ", s.steps_object, "the steps' object name") &&
         read_tables_line(r, s) && r.end_line();
}

// Each parser below reads one line of its kind, from its word up to its newline.

bool read_request_line(SettledReader& r, SettledRequest& q) {
  return r.lit("request ") && r.num(q.tasks, "a task count") && r.space() &&
         r.num(q.cpus_per_task, "cpus per task") && r.space() && r.num(q.gpus, "a GPU count") &&
         r.space() && r.num(q.nodes, "a node count");
}

bool read_tool_line(SettledReader& r, SettledTool& t) {
  size_t argc = 0;
  if (!(r.lit("tool ") && r.num(argc, "an argument count"))) return false;
  for (size_t k = 0; k < argc; ++k) {
    if (!(r.space() && r.str(t.argv.emplace_back(), "an argument"))) return false;
  }
  return r.space() && r.str(t.output, "a tool's output");
}

// An input, racy input or result line: `word` is which.
bool read_file_line(SettledReader& r, std::string_view word, SettledFile& f) {
  bool input = word != "result";
  f.with_ctime = input;
  FileStamp& st = f.stamp;
  if (!(r.lit(word) && r.space() && r.num(st.dev, "a device number") && r.space() &&
        r.num(st.ino, "an inode number") && r.space() && r.num(st.size, "a size") && r.space() &&
        r.num(st.mtime_ns, "an mtime") && r.space() &&
        (!input || (r.num(st.ctime_ns, "a ctime") && r.space())))) {
    return false;
  }
  // A racy input's hash is never empty: it would be written back as a plain input,
  // not what was read.
  if (word == "racy-input" &&
      !(r.str(f.racy_hash, "a hash") && r.check(!f.racy_hash.empty(), "a racy input's hash") &&
        r.space())) {
    return false;
  }
  return r.str(f.path, "a path");
}

bool read_object_line(SettledReader& r, std::string& name) {
  return r.lit("object ") && r.str(name, "an object name");
}

// What a step line's list of indices is called in a failure: its count, a count past
// what there is, one index, and one past what there is.
struct IndexNames {
  std::string_view count, too_many, index, unknown;
};
constexpr IndexNames kDepNames{"a count of steps read from",
                               "at most as many steps read from as come before", "a step's index",
                               "the index of a step named before"};
constexpr IndexNames kFileNames{"a file count", "at most as many files as the record names",
                                "a file's index", "the index of a file named before"};
constexpr IndexNames kObjectNames{"an object count", "at most as many objects as the record names",
                                  "an object's index", "the index of an object named before"};

// "<n> <index>...", each of the `n` indices below `bound` (so `n` is at most it).
bool read_indices(SettledReader& r, std::vector<uint32_t>& out, size_t bound, const IndexNames& names) {
  size_t n = 0;
  if (!(r.num(n, names.count) && r.check(n <= bound, names.too_many))) return false;
  // Bounded by what the record named before the line: never a huge allocation.
  out.resize(n);
  for (uint32_t& v : out) {
    if (!(r.space() && r.num(v, names.index) && r.check(v < bound, names.unknown))) return false;
  }
  return true;
}

// A step line, into `e` (its buffers reused): `index` steps come before it, and its
// files and objects are of those `s` names so far.
bool read_step_line(SettledReader& r, const Settled& s, size_t index, SettledStep& e) {
  return r.lit("step ") && r.num(e.offset, "an offset") && r.space() &&
         r.num(e.length, "a length") && r.space() && r.num(e.table, "a table's index") &&
         r.space() && r.num(e.combination, "a foreach combination") && r.space() &&
         read_indices(r, e.deps, index, kDepNames) && r.space() &&
         read_indices(r, e.files, s.files.size(), kFileNames) && r.space() &&
         read_indices(r, e.objects, s.objects.size(), kObjectNames) && r.space() &&
         r.str(e.fingerprint, "a fingerprint") && r.space() && r.str(e.name, "a step's name");
}

bool read_override_line(SettledReader& r, SettledOverride& v) {
  return r.lit("override ") && r.num(v.offset, "an offset") && r.space() &&
         r.num(v.length, "a length") && r.space() && r.str(v.entry, "an entry");
}

// Where the step lines go as they are read: into the record, or (a settled run needs
// none of them) only their spans kept, to be checked against the steps' length.
struct StepLines {
  bool keep = true;
  size_t* entries_at = nullptr;                  // where the first begins, when asked
  SettledStep scratch;                           // a line read but not kept
  std::vector<std::pair<size_t, size_t>> spans;  // of those not kept
  size_t read = 0;
};

bool read_step(SettledReader& r, Settled& s, StepLines& lines) {
  if (lines.entries_at && lines.read == 0) *lines.entries_at = r.pos();
  size_t index = lines.read++;
  if (lines.keep) return read_step_line(r, s, index, s.entries.emplace_back());
  if (!read_step_line(r, s, index, lines.scratch)) return false;
  lines.spans.emplace_back(lines.scratch.offset, lines.scratch.length);
  return true;
}

// The lines of which a record holds any number, up to the first of another kind.
bool read_body(SettledReader& r, Settled& s, StepLines& lines) {
  for (;;) {
    std::string_view word = r.peek_word();
    bool ok = false;
    if (word == "step") {
      ok = read_step(r, s, lines);
    } else if (word == "input" || word == "racy-input" || word == "result") {
      ok = read_file_line(r, word, s.files.emplace_back());
    } else if (word == "object") {
      ok = read_object_line(r, s.objects.emplace_back());
    } else if (word == "request") {
      ok = read_request_line(r, s.requests.emplace_back());
    } else if (word == "tool") {
      ok = read_tool_line(r, s.tools.emplace_back());
    } else if (word == "override") {
      ok = read_override_line(r, s.overrides.emplace_back());
    } else {
      return true;
    }
    if (!ok || !r.end_line()) return false;
  }
}

bool read_tail(SettledReader& r, Settled& s) {
  return r.lit("steps ") && r.num(s.steps, "a step count") && r.space() &&
         r.num(s.steps_bytes, "the steps' length") && r.space() &&
         r.num(s.object_bytes, "the steps object's length") && r.end_line();
}

// What no single line shows: the overrides replace bytes of the object, in its order,
// none overlapping, and make it the steps' length; every step's entry lies within the
// steps. `at` and `line`: where the record's "end" is, which its failure names.
Result<void> check_spans(const Settled& s, const std::vector<std::pair<size_t, size_t>>& unkept,
                         size_t at, size_t line) {
  size_t end = 0;
  size_t made = s.object_bytes;
  for (const auto& v : s.overrides) {
    if (v.offset < end || v.offset > s.object_bytes || v.length > s.object_bytes - v.offset) {
      return settled_record_error(at, line,
                          fmt::format("an override of {} bytes at {} does not lie in order "
                                      "within the {} bytes of the steps object",
                                      v.length, v.offset, s.object_bytes));
    }
    end = v.offset + v.length;
    made = made - v.length + v.entry.size();
  }
  if (made != s.steps_bytes) {
    return settled_record_error(at, line,
                        fmt::format("the steps object ({} bytes) with its overrides is {} "
                                    "bytes, not {}",
                                    s.object_bytes, made, s.steps_bytes));
  }
  auto outside = [&](size_t offset, size_t length) {
    return offset > s.steps_bytes || length > s.steps_bytes - offset;
  };
  for (const auto& e : s.entries) {
    if (outside(e.offset, e.length)) {
      return settled_record_error(
          at, line,
          fmt::format("step '{}' lies outside the {} bytes of the steps", e.name, s.steps_bytes));
    }
  }
  for (const auto& [offset, length] : unkept) {
    if (outside(offset, length)) {
      return settled_record_error(
          at, line, fmt::format("a step lies outside the {} bytes of the steps", s.steps_bytes));
    }
  }
  return Ok{};
}

}  // namespace

std::string settled_context(std::string_view engine_version, std::string_view cwd,
                            std::string_view pipeline_path, std::string_view pipeline_bytes,
                            std::string_view store_url, std::string_view results_dir) {
  std::string pre;
  put_str(pre, std::to_string(kSettledFormat));
  put_str(pre, engine_version);
  put_str(pre, cwd);
  put_str(pre, pipeline_path);
  put_str(pre, pipeline_bytes);
  put_str(pre, store_url);
  put_str(pre, results_dir);
  return pre;
}

std::optional<std::string_view> settled_context_pipeline(std::string_view context) {
  // The fields settled_context() writes, each <len>:<bytes>; the pipeline's is the fifth.
  std::string_view field;
  for (int k = 0; k < 5; ++k) {
    size_t colon = context.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    size_t len = 0;
    auto [end, ec] = std::from_chars(context.data(), context.data() + colon, len);
    if (ec != std::errc() || end != context.data() + colon || len > context.size() - colon - 1) {
      return std::nullopt;
    }
    field = context.substr(colon + 1, len);
    context.remove_prefix(colon + 1 + len);
  }
  return field;
}

std::string settled_base(std::string_view engine_version, std::string_view cwd,
                         std::string_view pipeline_path, std::string_view store_url,
                         std::string_view results_dir) {
  std::string pre = "base ";
  put_str(pre, std::to_string(kSettledFormat));
  put_str(pre, engine_version);
  put_str(pre, cwd);
  put_str(pre, pipeline_path);
  put_str(pre, store_url);
  put_str(pre, results_dir);
  return pre;
}

namespace {

// A string written through a raw pointer, grown by doubling: a 10,000-step record is
// 50,000 lines, and std::string::append's checks per field were most of writing it.
class Out {
 public:
  explicit Out(size_t hint) {
    memory::reserve_populated(buf_, hint);
    buf_.resize(hint);
  }
  void put(std::string_view v) { std::memcpy(room(v.size()), v.data(), v.size()), n_ += v.size(); }
  void put(char c) { *room(1) = c, ++n_; }
  template <typename T>
  void num(T v) {
    char* p = room(24);
    n_ += static_cast<size_t>(std::to_chars(p, p + 24, v).ptr - p);
  }
  void str(std::string_view v) {
    num(v.size());
    put(':');
    put(v);
  }
  void stamp(const FileStamp& st, bool with_ctime) {
    num(st.dev), put(' '), num(st.ino), put(' '), num(st.size), put(' '), num(st.mtime_ns);
    put(' ');
    if (with_ctime) num(st.ctime_ns), put(' ');
  }
  std::string take() {
    buf_.resize(n_);
    return std::move(buf_);
  }

 private:
  char* room(size_t k) {
    if (buf_.size() - n_ < k) buf_.resize(std::max(buf_.size() * 2, n_ + k));
    return buf_.data() + n_;
  }
  std::string buf_;
  size_t n_ = 0;
};

void put_head(Out& out, const Settled& s) {
  out.put(fmt::format("{} {}\ncontext ", kMagic, kSettledFormat));
  out.str(s.context);
  out.put("\nbase ");
  out.str(s.base);
  out.put("\npipeline ");
  out.str(s.pipeline);
  out.put("\nsteps-object ");
  out.str(s.steps_object);
  out.put("\ntables ");
  out.num(s.tables);
  out.put(' ');
  out.num(s.globbed.size());
  for (uint32_t k : s.globbed) out.put(' '), out.num(k);
  out.put('\n');
}

void put_tool(Out& out, const SettledTool& t) {
  out.put("tool ");
  out.num(t.argv.size());
  for (const auto& a : t.argv) {
    out.put(' ');
    out.str(a);
  }
  out.put(' ');
  out.str(t.output);
  out.put('\n');
}

void put_file(Out& out, const SettledFile& f) {
  if (!f.with_ctime) {
    out.put("result ");
    out.stamp(f.stamp, false);
  } else if (!f.racy_hash.empty()) {
    out.put("racy-input ");
    out.stamp(f.stamp, true);
    out.str(f.racy_hash);
    out.put(' ');
  } else {
    out.put("input ");
    out.stamp(f.stamp, true);
  }
  out.str(f.path);
  out.put('\n');
}

// " <n> <index>...".
void put_indices(Out& out, const std::vector<uint32_t>& v) {
  out.put(' ');
  out.num(v.size());
  for (uint32_t k : v) out.put(' '), out.num(k);
}

void put_step(Out& out, const SettledStep& e) {
  out.put("step ");
  out.num(e.offset);
  out.put(' ');
  out.num(e.length);
  out.put(' ');
  out.num(e.table);
  out.put(' ');
  out.num(e.combination);
  put_indices(out, e.deps);
  put_indices(out, e.files);
  put_indices(out, e.objects);
  out.put(' ');
  out.str(e.fingerprint);
  out.put(' ');
  out.str(e.name);
  out.put('\n');
}

void put_override(Out& out, const SettledOverride& v) {
  out.put("override ");
  out.num(v.offset);
  out.put(' ');
  out.num(v.length);
  out.put(' ');
  out.str(v.entry);
  out.put('\n');
}

}  // namespace

std::string encode_settled(const Settled& s) {
  Out out(s.context.size() + s.base.size() + s.files.size() * 100 + s.objects.size() * 84 +
          s.entries.size() * 128 + 256);
  put_head(out, s);
  for (const auto& q : s.requests) {
    out.put(fmt::format("request {} {} {} {}\n", q.tasks, q.cpus_per_task, q.gpus, q.nodes));
  }
  for (const auto& t : s.tools) put_tool(out, t);
  for (const auto& f : s.files) put_file(out, f);
  for (const auto& o : s.objects) {
    out.put("object ");
    out.str(o);
    out.put('\n');
  }
  for (const auto& e : s.entries) put_step(out, e);
  for (const auto& v : s.overrides) put_override(out, v);
  out.put(fmt::format("steps {} {} {}\nend\n", s.steps, s.steps_bytes, s.object_bytes));
  return out.take();
}

Result<Settled> decode_settled(std::string_view bytes) { return decode_settled(bytes, true); }

Result<Settled> decode_settled(std::string_view bytes, bool with_entries, size_t* entries_at) {
  SettledReader r(bytes);
  Settled s;
  int format = 0;
  if (!(r.lit(kMagic) && r.space() && r.num(format, "the format version"))) return r.error();
  if (format != kSettledFormat) {
    return Error(Errc::kInvalidInput,
                 fmt::format("settled record: format {}, expected {}", format, kSettledFormat));
  }
  StepLines steps;
  steps.keep = with_entries;
  steps.entries_at = entries_at;
  if (entries_at) *entries_at = 0;
  if (!(r.end_line() && read_head(r, s) && read_body(r, s, steps) && read_tail(r, s))) {
    return r.error();
  }
  size_t at = r.pos();
  size_t line = r.line();
  if (!(r.end_line("end\n") && r.check(r.at_end(), "the end of the record"))) return r.error();
  BERTH_CHECK(check_spans(s, steps.spans, at, line));
  return s;
}

Result<void> decode_settled_entries(std::string_view bytes, size_t entries_at, Settled& s) {
  if (entries_at == 0) return Ok{};  // a record without steps
  if (entries_at > bytes.size()) return fail(Errc::kInvalidInput, "settled record: no steps there");
  // The line it starts at is not known here: failures name the byte alone.
  SettledReader r(bytes, entries_at, 0);
  s.entries.clear();
  // As many as the record says (each line is more than 16 bytes, whatever it says).
  s.entries.reserve(std::min(s.steps, (bytes.size() - entries_at) / 16));
  while (r.peek_word() == "step") {
    if (!(read_step_line(r, s, s.entries.size(), s.entries.emplace_back()) && r.end_line())) {
      s.entries.pop_back();  // only the lines read whole are left
      return r.error();
    }
  }
  return Ok{};
}

namespace {
constexpr std::string_view kPointerMagic = "berth-settled-file 1 ";
}  // namespace

std::string settled_pointer(std::string_view path, size_t bytes) {
  std::string out(kPointerMagic);
  out += std::to_string(bytes);
  out += ' ';
  put_str(out, path);
  return out;
}

std::optional<std::pair<std::string, size_t>> read_settled_pointer(std::string_view row) {
  SettledReader r(row);
  size_t bytes = 0;
  std::string path;
  if (!(r.lit(kPointerMagic) && r.num(bytes, "a length") && r.space() && r.str(path, "a path")) ||
      path.empty() || !r.at_end()) {
    return std::nullopt;
  }
  return std::make_pair(std::move(path), bytes);
}

}  // namespace berth::pipeline
