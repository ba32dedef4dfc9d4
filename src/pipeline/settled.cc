// The settled record (spec 04 §7.1): encoding, decoding and the check by stat().
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

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <limits>
#include <cstdint>
#include <cstring>
#include <thread>
#include <unordered_map>

#include "util/memory.h"
#include "util/sha256.h"

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

// Directories opened (O_PATH) to stat the files under them by a short relative path:
// a stat's cost is mostly its path walk, one component at a time, and a record's files
// lie under a few directories. A file's parent is opened once a second file under it
// is seen (inputs/ holds many; results/<step>/ one or two), else its grandparent
// (results/ holds every step's). One per thread. At most kMaxOpen are held: a process
// holding hundreds grows its descriptor table, and a table shared by threads grows only
// after an RCU grace period each time it doubles (milliseconds each, on the first
// check's critical path); past that, a path is walked whole.
class DirCache {
 public:
  DirCache() = default;
  DirCache(const DirCache&) = delete;
  DirCache& operator=(const DirCache&) = delete;
  ~DirCache() {
    for (auto* m : {&parents_, &grandparents_}) {
      for (auto& [dir, fd] : *m) {
        if (fd >= 0) ::close(fd);
      }
    }
  }
  Result<FileStamp> stamp(const std::string& path) {
    size_t last = path.rfind('/');
    if (last == std::string::npos || last == 0 || last + 1 == path.size()) {
      return FileStamp::of(path);
    }
    std::string_view parent(path.data(), last);
    auto p = parents_.find(parent);
    if (p == parents_.end()) {
      if (parents_.size() < kMaxDirs) parents_.emplace(std::string(parent), kSeenOnce);
    } else {
      if (p->second == kSeenOnce) p->second = open_dir(parent);
      if (p->second >= 0) return FileStamp::at(p->second, path.c_str() + last + 1);
    }
    size_t cut = path.rfind('/', last - 1);
    // A short path walks little anyway; an empty component is left to stat.
    if (cut == std::string::npos || cut == 0 || cut + 1 == last) return FileStamp::of(path);
    std::string_view grand(path.data(), cut);
    auto g = grandparents_.find(grand);
    if (g == grandparents_.end()) {
      if (grandparents_.size() >= kMaxDirs) return FileStamp::of(path);
      g = grandparents_.emplace(std::string(grand), open_dir(grand)).first;
    }
    if (g->second < 0) return FileStamp::of(path);
    return FileStamp::at(g->second, path.c_str() + cut + 1);
  }

 private:
  static constexpr size_t kMaxDirs = 1024;
  static constexpr int kMaxOpen = 16;
  static constexpr int kSeenOnce = -2;
  int open_dir(std::string_view dir) {
    if (open_ >= kMaxOpen) return -1;
    int fd = ::open(std::string(dir).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) ++open_;
    return fd;
  }
  int open_ = 0;
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using Dirs = std::unordered_map<std::string, int, Hash, std::equal_to<>>;
  Dirs parents_;       // kSeenOnce, an open directory, or -1 (could not be opened)
  Dirs grandparents_;  // an open directory, or -1
};

// Whether one file still has its stamp; a racy input, and still its bytes (read again,
// then stamped again: a write while it was read is a difference).
bool file_holds(const SettledFile& f, DirCache& dirs, std::atomic<size_t>& racy_verified) {
  auto st = dirs.stamp(f.path);
  if (!st.ok()) return false;
  if (!f.with_ctime) st->ctime_ns = 0;
  if (*st != f.stamp) return false;
  if (f.racy_hash.empty()) return true;
  auto h = sha256_file(f.path);
  if (!h.ok() || *h != f.racy_hash) return false;
  auto after = FileStamp::of(f.path);
  if (!after.ok() || *after != f.stamp) return false;
  racy_verified.fetch_add(1, std::memory_order_relaxed);
  return true;
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

std::string settled_steps_path(std::string_view cache_dir, std::string_view steps_object) {
  if (!store::check_object_name(steps_object).ok()) return "";
  return fmt::format("{}/settled/{}.json", cache_dir, steps_object.substr(7));
}

std::string settled_record_path(std::string_view cache_dir, std::string_view steps_object) {
  if (!store::check_object_name(steps_object).ok()) return "";
  return fmt::format("{}/settled/{}.record", cache_dir, steps_object.substr(7));
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

bool SettledCheck::holds(const SettledStep& e) const {
  for (uint32_t f : e.files) {
    if (f >= file_ok.size() || !file_ok[f]) return false;
  }
  for (uint32_t o : e.objects) {
    if (o >= object_ok.size() || !object_ok[o]) return false;
  }
  return true;
}

SettledCheck check_settled(const Settled& s, const std::vector<place::PoolNode>& nodes,
                           store::ObjectStore& store, place::VersionProbe& probe,
                           bool stop_at_first) {
  SettledCheck c;
  for (const auto& q : s.requests) {
    place::Pool empty(nodes);
    place::Request req;
    req.tasks = q.tasks;
    req.cpus_per_task = q.cpus_per_task;
    req.gpus = q.gpus;
    if (q.nodes >= 0) req.nodes = q.nodes;
    auto g = empty.grant(req);
    if (!g.ok() || !g->has_value()) {
      c.requests_fit = false;
      c.difference = "a step no longer fits the pool";
      if (stop_at_first) return c;
      break;
    }
  }
  for (const auto& t : s.tools) {
    auto out = probe.run(t.argv);
    if (!out.ok() || *out != t.output) {
      c.tools_same = false;
      if (!c.difference) {
        c.difference =
            fmt::format("tool '{}' answers differently", t.argv.empty() ? "" : t.argv[0]);
      }
      if (stop_at_first) return c;
      break;
    }
  }
  // Files, then objects, as one list split in two halves: one checked here, one on a
  // second thread. With stop_at_first the first difference stops both.
  size_t nf = s.files.size();
  size_t n = nf + s.objects.size();
  c.file_ok.assign(nf, 0);
  c.object_ok.assign(s.objects.size(), 0);
  std::atomic<bool> differs{false};
  std::atomic<size_t> first{SIZE_MAX};
  std::atomic<size_t> racy{0};
  auto note = [&](size_t i) {
    differs = true;
    size_t seen = first.load();
    while (i < seen && !first.compare_exchange_weak(seen, i)) {
    }
  };
  auto check = [&](size_t from, size_t to) {
    DirCache dirs;
    for (size_t i = from; i < std::min(to, nf); ++i) {
      if (stop_at_first && differs.load(std::memory_order_relaxed)) return;
      c.file_ok[i] = file_holds(s.files[i], dirs, racy);
      if (!c.file_ok[i]) note(i);
    }
    if (to <= nf) return;
    size_t a = std::max(from, nf) - nf, b = to - nf;
    if (stop_at_first) {
      for (size_t k = a; k < b && !differs.load(std::memory_order_relaxed); ++k) {
        auto has = store.has_object(s.objects[k]);
        c.object_ok[k] = has.ok() && *has;
        if (!c.object_ok[k]) note(nf + k);
      }
      return;
    }
    // Every one, as one question to the store.
    store.has_objects(std::span<const std::string>(s.objects).subspan(a, b - a),
                      std::span<char>(c.object_ok).subspan(a, b - a));
    for (size_t k = a; k < b; ++k) {
      if (!c.object_ok[k]) note(nf + k);
    }
  };
  size_t half = n / 2;
  std::thread other;
  if (n >= 64) other = std::thread(check, size_t{0}, half);
  check(other.joinable() ? half : 0, n);
  if (other.joinable()) other.join();
  c.racy_verified = racy.load();
  if (!differs || c.difference) return c;
  size_t i = first.load();
  if (i < nf) {
    c.difference = fmt::format("{} changed", s.files[i].path);
  } else {
    c.difference = fmt::format("object {} is no longer in the store", s.objects[i - nf]);
  }
  return c;
}

std::optional<std::string> settled_difference(const Settled& s,
                                              const std::vector<place::PoolNode>& nodes,
                                              store::ObjectStore& store,
                                              place::VersionProbe& probe) {
  return check_settled(s, nodes, store, probe, true).difference;
}

bool settle_racy_inputs(Settled& s, int64_t now_ns) {
  bool turned = false;
  for (auto& f : s.files) {
    if (f.racy_hash.empty() || stamp_is_racy(f.stamp, now_ns)) continue;
    f.racy_hash.clear();
    turned = true;
  }
  return turned;
}

Result<std::string> settled_steps_text(const Settled& s, std::string_view object) {
  if (object.size() != s.object_bytes) {
    return fail(Errc::kInvalidInput,
                fmt::format("settled record: the steps object is {} bytes, the record says {}",
                            object.size(), s.object_bytes));
  }
  return splice_overrides(object, s.overrides);
}

Result<std::string> splice_overrides(std::string_view object,
                                     const std::vector<SettledOverride>& overrides) {
  size_t bytes = object.size(), pos = 0;
  for (const auto& v : overrides) {
    if (v.offset < pos || v.offset > object.size() || v.length > object.size() - v.offset) {
      return fail(Errc::kInvalidInput, "settled record: an override lies outside its object");
    }
    bytes = bytes - v.length + v.entry.size();
    pos = v.offset + v.length;
  }
  std::string out;
  memory::reserve_populated(out, bytes);
  pos = 0;
  for (const auto& v : overrides) {
    out.append(object.substr(pos, v.offset - pos)).append(v.entry);
    pos = v.offset + v.length;
  }
  out.append(object.substr(pos));
  return out;
}

std::optional<EntrySpans> settled_object_spans(const Settled& s) {
  EntrySpans out;
  out.reserve(s.entries.size());
  // How far the steps a rerun reports have moved from the object, up to here.
  int64_t shift = 0;
  size_t k = 0;  // the next override
  const auto& ov = s.overrides;
  for (const auto& e : s.entries) {
    int64_t at = static_cast<int64_t>(e.offset) - shift;
    if (at < 0) return std::nullopt;
    auto offset = static_cast<size_t>(at);
    if (k < ov.size() && ov[k].offset == offset) {
      if (e.length != ov[k].entry.size()) return std::nullopt;
      out.emplace_back(ov[k].offset, ov[k].length);
      shift += static_cast<int64_t>(ov[k].entry.size()) - static_cast<int64_t>(ov[k].length);
      ++k;
      continue;
    }
    if (offset > s.object_bytes || e.length > s.object_bytes - offset) return std::nullopt;
    if (k < ov.size() && offset + e.length > ov[k].offset) return std::nullopt;
    out.emplace_back(offset, e.length);
  }
  if (k != ov.size()) return std::nullopt;  // an override of no entry
  return out;
}

std::shared_ptr<const RecordedEntries> recorded_entries(const Settled& s,
                                                        files::SharedBytes object) {
  if (!object || object->size() != s.object_bytes) return nullptr;
  auto spans = settled_object_spans(s);
  if (!spans) return nullptr;
  auto r = std::make_shared<RecordedEntries>();
  r->overridden.reserve(s.overrides.size());
  for (const auto& v : s.overrides) r->overridden.push_back(v.entry);
  r->text.reserve(spans->size());
  size_t k = 0;  // the next override
  for (const auto& [offset, length] : *spans) {
    if (k < s.overrides.size() && s.overrides[k].offset == offset) {
      r->text.emplace_back(r->overridden[k++]);
    } else {
      r->text.emplace_back(object->data() + offset, length);
    }
  }
  r->object = std::move(object);
  return r;
}

std::optional<std::vector<SettledOverride>> settled_overrides(std::string_view object,
                                                              const EntrySpans& object_spans,
                                                              std::string_view steps,
                                                              const EntrySpans& spans,
                                                              size_t max_bytes) {
  if (object_spans.size() != spans.size()) return std::nullopt;
  std::vector<SettledOverride> out;
  size_t op = 0, sp = 0, bytes = 0;  // where the last entries ended; the overrides' size
  for (size_t i = 0; i < spans.size(); ++i) {
    auto [oo, ol] = object_spans[i];
    auto [so, sl] = spans[i];
    if (oo < op || oo > object.size() || ol > object.size() - oo || so < sp || so > steps.size() ||
        sl > steps.size() - so) {
      return std::nullopt;
    }
    if (object.substr(op, oo - op) != steps.substr(sp, so - sp)) return std::nullopt;
    std::string_view theirs = object.substr(oo, ol), ours = steps.substr(so, sl);
    if (theirs != ours) {
      bytes += ours.size();
      if (bytes > max_bytes) return std::nullopt;
      out.push_back({oo, ol, std::string(ours)});
    }
    op = oo + ol;
    sp = so + sl;
  }
  if (object.substr(op) != steps.substr(sp)) return std::nullopt;
  return out;
}

}  // namespace berth::pipeline
