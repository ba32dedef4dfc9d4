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
#include "pipeline/settled.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <limits>

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

// A cursor over the record; every failure names the offset it stopped at.
class Reader {
 public:
  explicit Reader(std::string_view b) : b_(b) {}

  size_t pos() const { return pos_; }
  bool at_end() const { return pos_ == b_.size(); }

  Error error(std::string_view what) const {
    return Error(Errc::kInvalidInput,
                 fmt::format("settled record: at byte {}: expected {}", pos_, what));
  }

  // The next word up to a space or newline (not consumed).
  std::string_view peek_word() const {
    size_t end = pos_;
    while (end < b_.size() && b_[end] != ' ' && b_[end] != '\n') ++end;
    return b_.substr(pos_, end - pos_);
  }

  Result<void> literal(std::string_view s) {
    if (b_.substr(pos_, s.size()) != s) return error(std::string("'").append(s).append("'"));
    pos_ += s.size();
    return Ok{};
  }
  Result<void> space() { return literal(" "); }
  Result<void> newline() { return literal("\n"); }

  template <typename T>
  Result<T> number(std::string_view what) {
    auto v = parse_number<T>();
    if (!v) return error(what);
    return *v;
  }

  Result<std::string> str(std::string_view what) {
    // Messages are formatted only for a failure: a record holds tens of thousands of
    // strings.
    auto n = parse_number<size_t>();
    if (!n) return error(fmt::format("the length of {}", what));
    if (pos_ >= b_.size() || b_[pos_] != ':') return error("':'");
    ++pos_;
    if (*n > b_.size() - pos_) return error(fmt::format("{} bytes of {}", *n, what));
    std::string s(b_.substr(pos_, *n));
    pos_ += *n;
    return s;
  }

  // Fast primitives for the lines a record holds tens of thousands of: false, and no
  // message, on anything unexpected (the caller then reads the line again with the
  // primitives above, for the message).
  template <typename T>
  bool num(T& v) {
    auto got = parse_number<T>();
    if (!got) return false;
    v = *got;
    return true;
  }
  bool ch(char c) {
    if (pos_ >= b_.size() || b_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  bool lit(std::string_view s) {
    if (b_.substr(pos_, s.size()) != s) return false;
    pos_ += s.size();
    return true;
  }
  bool take(std::string& out) {
    auto n = parse_number<size_t>();
    if (!n || !ch(':') || *n > b_.size() - pos_) return false;
    out.assign(b_.data() + pos_, *n);
    pos_ += *n;
    return true;
  }
  void seek(size_t pos) { pos_ = pos; }

 private:
  // Only what encode_settled() writes: digits, '-' for a negative value, no '+';
  // from_chars' grammar, with a plain loop for the common case of a few digits.
  template <typename T>
  std::optional<T> parse_number() {
    const char* first = b_.data() + pos_;
    const char* last = b_.data() + b_.size();
    if (first == last) return std::nullopt;
    if (*first != '-') {
      // Up to 19 digits cannot overflow an unsigned 64-bit value; a longer number, or
      // a type it may not fit, goes to from_chars.
      uint64_t v = 0;
      const char* p = first;
      while (p < last && p - first < 19 && static_cast<unsigned char>(*p - '0') < 10) {
        v = v * 10 + static_cast<uint64_t>(*p - '0');
        ++p;
      }
      if (p == first) return std::nullopt;
      bool more = p < last && static_cast<unsigned char>(*p - '0') < 10;
      if (!more && v <= static_cast<uint64_t>(std::numeric_limits<T>::max())) {
        pos_ += static_cast<size_t>(p - first);
        return static_cast<T>(v);
      }
    }
    T v{};
    auto [p, ec] = std::from_chars(first, last, v);
    if (ec != std::errc() || p == first) return std::nullopt;
    pos_ += static_cast<size_t>(p - first);
    return v;
  }

  std::string_view b_;
  size_t pos_ = 0;
};

Result<FileStamp> read_stamp(Reader& r, bool with_ctime) {
  FileStamp st;
  BERTH_TRY(st.dev, r.number<uint64_t>("a device number"));
  BERTH_CHECK(r.space());
  BERTH_TRY(st.ino, r.number<uint64_t>("an inode number"));
  BERTH_CHECK(r.space());
  BERTH_TRY(st.size, r.number<int64_t>("a size"));
  BERTH_CHECK(r.space());
  BERTH_TRY(st.mtime_ns, r.number<int64_t>("an mtime"));
  BERTH_CHECK(r.space());
  if (with_ctime) {
    BERTH_TRY(st.ctime_ns, r.number<int64_t>("a ctime"));
    BERTH_CHECK(r.space());
  }
  return st;
}

bool fast_stamp(Reader& r, FileStamp& st, bool with_ctime) {
  return r.num(st.dev) && r.ch(' ') && r.num(st.ino) && r.ch(' ') && r.num(st.size) &&
         r.ch(' ') && r.num(st.mtime_ns) && r.ch(' ') &&
         (!with_ctime || (r.num(st.ctime_ns) && r.ch(' ')));
}

// An input, racy input or result line after its word, up to its newline.
Result<SettledFile> read_file_line(Reader& r, std::string_view word) {
  bool input = word != "result";
  bool racy = word == "racy-input";
  SettledFile f;
  f.with_ctime = input;
  size_t start = r.pos();
  if (r.lit(word) && r.ch(' ') && fast_stamp(r, f.stamp, input) &&
      (!racy || (r.take(f.racy_hash) && !f.racy_hash.empty() && r.ch(' '))) && r.take(f.path)) {
    return f;
  }
  r.seek(start);
  BERTH_CHECK(r.literal(word));
  BERTH_CHECK(r.space());
  BERTH_TRY(f.stamp, read_stamp(r, input));
  if (racy) {
    BERTH_TRY(f.racy_hash, r.str("a hash"));
    // Empty, it would be written back as a plain input: not what was read.
    if (f.racy_hash.empty()) return r.error("a racy input's hash");
    BERTH_CHECK(r.space());
  }
  BERTH_TRY(f.path, r.str("a path"));
  return f;
}

// A step line, up to its newline, into `e` (its buffers reused); its indices are of
// what `s` names so far.
Result<void> read_step_line(Reader& r, const Settled& s, size_t index, SettledStep& e) {
  e.deps.clear();
  e.files.clear();
  e.objects.clear();
  size_t start = r.pos();
  auto fast = [&] {
    size_t n = 0;
    if (!(r.lit("step ") && r.num(e.offset) && r.ch(' ') && r.num(e.length) && r.ch(' ') &&
          r.num(e.table) && r.ch(' ') && r.num(e.combination) && r.ch(' ') && r.num(n) &&
          n <= index)) {
      return false;
    }
    e.deps.resize(n);
    for (uint32_t& d : e.deps) {
      if (!(r.ch(' ') && r.num(d) && d < index)) return false;
    }
    if (!(r.ch(' ') && r.num(n) && n <= s.files.size())) return false;
    e.files.resize(n);
    for (uint32_t& f : e.files) {
      if (!(r.ch(' ') && r.num(f) && f < s.files.size())) return false;
    }
    if (!(r.ch(' ') && r.num(n) && n <= s.objects.size())) return false;
    e.objects.resize(n);
    for (uint32_t& o : e.objects) {
      if (!(r.ch(' ') && r.num(o) && o < s.objects.size())) return false;
    }
    return r.ch(' ') && r.take(e.fingerprint) && r.ch(' ') && r.take(e.name);
  };
  if (fast()) return Ok{};
  r.seek(start);
  e = SettledStep{};
  BERTH_CHECK(r.literal("step "));
  BERTH_TRY(e.offset, r.number<size_t>("an offset"));
  BERTH_CHECK(r.space());
  BERTH_TRY(e.length, r.number<size_t>("a length"));
  BERTH_CHECK(r.space());
  BERTH_TRY(e.table, r.number<uint32_t>("a table's index"));
  BERTH_CHECK(r.space());
  BERTH_TRY(e.combination, r.number<uint32_t>("a foreach combination"));
  BERTH_CHECK(r.space());
  BERTH_TRY(size_t nd, r.number<size_t>("a count of steps read from"));
  if (nd > index) return r.error("at most as many steps read from as come before");
  for (size_t k = 0; k < nd; ++k) {
    BERTH_CHECK(r.space());
    BERTH_TRY(uint32_t d, r.number<uint32_t>("a step's index"));
    if (d >= index) return r.error("the index of a step named before");
    e.deps.push_back(d);
  }
  BERTH_CHECK(r.space());
  BERTH_TRY(size_t nf, r.number<size_t>("a file count"));
  if (nf > s.files.size()) return r.error("at most as many files as the record names");
  for (size_t k = 0; k < nf; ++k) {
    BERTH_CHECK(r.space());
    BERTH_TRY(uint32_t f, r.number<uint32_t>("a file's index"));
    if (f >= s.files.size()) return r.error("the index of a file named before");
    e.files.push_back(f);
  }
  BERTH_CHECK(r.space());
  BERTH_TRY(size_t no, r.number<size_t>("an object count"));
  if (no > s.objects.size()) return r.error("at most as many objects as the record names");
  for (size_t k = 0; k < no; ++k) {
    BERTH_CHECK(r.space());
    BERTH_TRY(uint32_t o, r.number<uint32_t>("an object's index"));
    if (o >= s.objects.size()) return r.error("the index of an object named before");
    e.objects.push_back(o);
  }
  BERTH_CHECK(r.space());
  BERTH_TRY(e.fingerprint, r.str("a fingerprint"));
  BERTH_CHECK(r.space());
  BERTH_TRY(e.name, r.str("a step's name"));
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

}  // namespace

std::string encode_settled(const Settled& s) {
  Out out(s.context.size() + s.base.size() + s.files.size() * 100 + s.objects.size() * 84 +
          s.entries.size() * 128 + 256);
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
  for (const auto& q : s.requests) {
    out.put(fmt::format("request {} {} {} {}\n", q.tasks, q.cpus_per_task, q.gpus, q.nodes));
  }
  for (const auto& t : s.tools) {
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
  for (const auto& f : s.files) {
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
  for (const auto& o : s.objects) {
    out.put("object ");
    out.str(o);
    out.put('\n');
  }
  for (const auto& e : s.entries) {
    out.put("step ");
    out.num(e.offset);
    out.put(' ');
    out.num(e.length);
    out.put(' ');
    out.num(e.table);
    out.put(' ');
    out.num(e.combination);
    out.put(' ');
    out.num(e.deps.size());
    for (uint32_t d : e.deps) out.put(' '), out.num(d);
    out.put(' ');
    out.num(e.files.size());
    for (uint32_t f : e.files) out.put(' '), out.num(f);
    out.put(' ');
    out.num(e.objects.size());
    for (uint32_t o : e.objects) out.put(' '), out.num(o);
    out.put(' ');
    out.str(e.fingerprint);
    out.put(' ');
    out.str(e.name);
    out.put('\n');
  }
  for (const auto& v : s.overrides) {
    out.put("override ");
    out.num(v.offset);
    out.put(' ');
    out.num(v.length);
    out.put(' ');
    out.str(v.entry);
    out.put('\n');
  }
  out.put(fmt::format("steps {} {} {}\nend\n", s.steps, s.steps_bytes, s.object_bytes));
  return out.take();
}

Result<Settled> decode_settled(std::string_view bytes) { return decode_settled(bytes, true); }

Result<Settled> decode_settled(std::string_view bytes, bool with_entries, size_t* entries_at) {
  Reader r(bytes);
  Settled s;
  SettledStep scratch;  // a step line read but not kept
  std::vector<std::pair<size_t, size_t>> last_offsets;
  bool seen_step = false;
  if (entries_at) *entries_at = 0;
  BERTH_CHECK(r.literal(kMagic));
  BERTH_CHECK(r.space());
  BERTH_TRY(int format, r.number<int>("the format version"));
  if (format != kSettledFormat) {
    return Error(Errc::kInvalidInput,
                 fmt::format("settled record: format {}, expected {}", format, kSettledFormat));
  }
  BERTH_CHECK(r.newline());
  BERTH_CHECK(r.literal("context "));
  BERTH_TRY(s.context, r.str("the context"));
  BERTH_CHECK(r.newline());
  BERTH_CHECK(r.literal("base "));
  BERTH_TRY(s.base, r.str("the base context"));
  BERTH_CHECK(r.newline());
  BERTH_CHECK(r.literal("pipeline "));
  BERTH_TRY(s.pipeline, r.str("the pipeline's name"));
  BERTH_CHECK(r.newline());
  BERTH_CHECK(r.literal("steps-object "));
  BERTH_TRY(s.steps_object, r.str("the steps' object name"));
  BERTH_CHECK(r.newline());
  BERTH_CHECK(r.literal("tables "));
  BERTH_TRY(s.tables, r.number<size_t>("a count of tables"));
  BERTH_CHECK(r.space());
  BERTH_TRY(size_t globbed, r.number<size_t>("a count of tables"));
  if (globbed > s.tables) return r.error("at most as many tables as the file has");
  for (size_t k = 0; k < globbed; ++k) {
    BERTH_CHECK(r.space());
    BERTH_TRY(uint32_t t, r.number<uint32_t>("a table's index"));
    if (t >= s.tables || (!s.globbed.empty() && t <= s.globbed.back())) {
      return r.error("a table's index, ascending, within the file's");
    }
    s.globbed.push_back(t);
  }
  BERTH_CHECK(r.newline());
  for (;;) {
    std::string_view word = r.peek_word();
    if (word == "request") {
      BERTH_CHECK(r.literal("request "));
      SettledRequest q;
      BERTH_TRY(q.tasks, r.number<int>("a task count"));
      BERTH_CHECK(r.space());
      BERTH_TRY(q.cpus_per_task, r.number<int>("cpus per task"));
      BERTH_CHECK(r.space());
      BERTH_TRY(q.gpus, r.number<int>("a GPU count"));
      BERTH_CHECK(r.space());
      BERTH_TRY(q.nodes, r.number<int>("a node count"));
      s.requests.push_back(q);
    } else if (word == "tool") {
      BERTH_CHECK(r.literal("tool "));
      BERTH_TRY(size_t argc, r.number<size_t>("an argument count"));
      SettledTool t;
      for (size_t k = 0; k < argc; ++k) {
        BERTH_CHECK(r.space());
        BERTH_TRY(std::string a, r.str("an argument"));
        t.argv.push_back(std::move(a));
      }
      BERTH_CHECK(r.space());
      BERTH_TRY(t.output, r.str("a tool's output"));
      s.tools.push_back(std::move(t));
    } else if (word == "input" || word == "racy-input" || word == "result") {
      BERTH_TRY(SettledFile f, read_file_line(r, word));
      s.files.push_back(std::move(f));
    } else if (word == "object") {
      std::string o;
      size_t start = r.pos();
      if (!(r.lit("object ") && r.take(o))) {
        r.seek(start);
        BERTH_CHECK(r.literal("object "));
        BERTH_TRY(o, r.str("an object name"));
      }
      s.objects.push_back(std::move(o));
    } else if (word == "step") {
      if (entries_at && !seen_step) *entries_at = r.pos();
      seen_step = true;
      if (with_entries) {
        SettledStep e;
        BERTH_CHECK(read_step_line(r, s, s.entries.size(), e));
        s.entries.push_back(std::move(e));
      } else {
        BERTH_CHECK(read_step_line(r, s, last_offsets.size(), scratch));
        // Its entry must lie within the steps, checked below for kept ones.
        last_offsets.emplace_back(scratch.offset, scratch.length);
      }
    } else if (word == "override") {
      BERTH_CHECK(r.literal("override "));
      SettledOverride v;
      BERTH_TRY(v.offset, r.number<size_t>("an offset"));
      BERTH_CHECK(r.space());
      BERTH_TRY(v.length, r.number<size_t>("a length"));
      BERTH_CHECK(r.space());
      BERTH_TRY(v.entry, r.str("an entry"));
      s.overrides.push_back(std::move(v));
    } else {
      break;
    }
    if (!r.ch('\n')) BERTH_CHECK(r.newline());
  }
  BERTH_CHECK(r.literal("steps "));
  BERTH_TRY(s.steps, r.number<size_t>("a step count"));
  BERTH_CHECK(r.space());
  BERTH_TRY(s.steps_bytes, r.number<size_t>("the steps' length"));
  BERTH_CHECK(r.space());
  BERTH_TRY(s.object_bytes, r.number<size_t>("the steps object's length"));
  BERTH_CHECK(r.newline());
  size_t at = r.pos();
  BERTH_CHECK(r.literal("end\n"));
  if (!r.at_end()) return r.error("the end of the record");
  // The overrides replace bytes of the object, in its order, none overlapping, and
  // make it the steps' length.
  {
    size_t end = 0;
    size_t made = s.object_bytes;
    for (const auto& v : s.overrides) {
      if (v.offset < end || v.offset > s.object_bytes || v.length > s.object_bytes - v.offset) {
        return Error(Errc::kInvalidInput,
                     fmt::format("settled record: at byte {}: an override of {} bytes at {} "
                                 "does not lie in order within the {} bytes of the steps object",
                                 at, v.length, v.offset, s.object_bytes));
      }
      end = v.offset + v.length;
      made = made - v.length + v.entry.size();
    }
    if (made != s.steps_bytes) {
      return Error(Errc::kInvalidInput,
                   fmt::format("settled record: at byte {}: the steps object ({} bytes) with its "
                               "overrides is {} bytes, not {}",
                               at, s.object_bytes, made, s.steps_bytes));
    }
  }
  for (const auto& e : s.entries) {
    if (e.offset > s.steps_bytes || e.length > s.steps_bytes - e.offset) {
      return Error(Errc::kInvalidInput,
                   fmt::format("settled record: at byte {}: step '{}' lies outside the {} "
                               "bytes of the steps",
                               at, e.name, s.steps_bytes));
    }
  }
  for (const auto& [offset, length] : last_offsets) {
    if (offset > s.steps_bytes || length > s.steps_bytes - offset) {
      return Error(Errc::kInvalidInput,
                   fmt::format("settled record: at byte {}: a step lies outside the {} bytes "
                               "of the steps",
                               at, s.steps_bytes));
    }
  }
  return s;
}

Result<void> decode_settled_entries(std::string_view bytes, size_t entries_at, Settled& s) {
  if (entries_at == 0) return Ok{};  // a record without steps
  if (entries_at > bytes.size()) return fail(Errc::kInvalidInput, "settled record: no steps there");
  Reader r(bytes);
  r.seek(entries_at);
  s.entries.clear();
  // As many as the record says (each line is more than 16 bytes, whatever it says).
  s.entries.reserve(std::min(s.steps, (bytes.size() - entries_at) / 16));
  while (r.peek_word() == "step") {
    SettledStep e;
    BERTH_CHECK(read_step_line(r, s, s.entries.size(), e));
    BERTH_CHECK(r.newline());
    s.entries.push_back(std::move(e));
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
  Reader r(row);
  if (!r.literal(kPointerMagic).ok()) return std::nullopt;
  auto bytes = r.number<size_t>("a length");
  if (!bytes.ok() || !r.space().ok()) return std::nullopt;
  auto path = r.str("a path");
  if (!path.ok() || path->empty() || !r.at_end()) return std::nullopt;
  return std::make_pair(std::move(*path), *bytes);
}

}  // namespace berth::pipeline
