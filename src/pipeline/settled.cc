// The settled record (spec 04 §7.1): encoding, decoding and the check by stat().
//
// The encoding is text, one fact per line, every string length-prefixed ("5:in/a"), so
// a path may hold any byte:
//
//   berth-settled 1
//   context <len>:<settled_context()>
//   pipeline <len>:<name>
//   steps-object <len>:<object name, or empty>
//   request <tasks> <cpus per task> <gpus> <nodes, -1: any>      (any number)
//   tool <argc> <len>:<arg>... <len>:<output>                     (any number)
//   input <dev> <ino> <size> <mtime ns> <ctime ns> <len>:<path>   (any number)
//   result <dev> <ino> <size> <mtime ns> <len>:<path>             (any number)
//   object <len>:<name>                                           (any number)
//   steps <count> <bytes>
//   end
#include "pipeline/settled.h"

#include <fmt/format.h>

#include <atomic>
#include <charconv>
#include <cstdint>
#include <thread>

namespace berth::pipeline {
namespace {

constexpr std::string_view kMagic = "berth-settled";

void put_str(std::string& out, std::string_view s) {
  out += std::to_string(s.size());
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
    if (b_.substr(pos_, s.size()) != s) return error(fmt::format("'{}'", s));
    pos_ += s.size();
    return Ok{};
  }
  Result<void> space() { return literal(" "); }
  Result<void> newline() { return literal("\n"); }

  template <typename T>
  Result<T> number(std::string_view what) {
    T v{};
    const char* first = b_.data() + pos_;
    const char* last = b_.data() + b_.size();
    // Only what encode_settled() writes: digits, '-' for a negative value, no '+'.
    if (first == last || !(*first == '-' || (*first >= '0' && *first <= '9'))) {
      return error(what);
    }
    auto [p, ec] = std::from_chars(first, last, v);
    if (ec != std::errc() || p == first) return error(what);
    pos_ += static_cast<size_t>(p - first);
    return v;
  }

  Result<std::string> str(std::string_view what) {
    BERTH_TRY(size_t n, number<size_t>(fmt::format("the length of {}", what)));
    BERTH_CHECK(literal(":"));
    if (n > b_.size() - pos_) return error(fmt::format("{} bytes of {}", n, what));
    std::string s(b_.substr(pos_, n));
    pos_ += n;
    return s;
  }

 private:
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

// Whether one file still has its stamp.
bool file_holds(const SettledFile& f) {
  auto st = FileStamp::of(f.path);
  if (!st.ok()) return false;
  if (!f.with_ctime) st->ctime_ns = 0;
  return *st == f.stamp;
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

std::string settled_steps_path(std::string_view cache_dir, std::string_view steps_object) {
  if (!store::check_object_name(steps_object).ok()) return "";
  return fmt::format("{}/settled/{}.json", cache_dir, steps_object.substr(7));
}

std::string encode_settled(const Settled& s) {
  std::string out;
  out.reserve(s.context.size() + s.files.size() * 96 + s.objects.size() * 80 + 256);
  out += fmt::format("{} {}\ncontext ", kMagic, kSettledFormat);
  put_str(out, s.context);
  out += "\npipeline ";
  put_str(out, s.pipeline);
  out += "\nsteps-object ";
  put_str(out, s.steps_object);
  out += '\n';
  for (const auto& q : s.requests) {
    out += fmt::format("request {} {} {} {}\n", q.tasks, q.cpus_per_task, q.gpus, q.nodes);
  }
  for (const auto& t : s.tools) {
    out += fmt::format("tool {}", t.argv.size());
    for (const auto& a : t.argv) {
      out += ' ';
      put_str(out, a);
    }
    out += ' ';
    put_str(out, t.output);
    out += '\n';
  }
  for (const auto& f : s.files) {
    if (f.with_ctime) {
      out += fmt::format("input {} {} {} {} {} ", f.stamp.dev, f.stamp.ino, f.stamp.size,
                         f.stamp.mtime_ns, f.stamp.ctime_ns);
    } else {
      out += fmt::format("result {} {} {} {} ", f.stamp.dev, f.stamp.ino, f.stamp.size,
                         f.stamp.mtime_ns);
    }
    put_str(out, f.path);
    out += '\n';
  }
  for (const auto& o : s.objects) {
    out += "object ";
    put_str(out, o);
    out += '\n';
  }
  out += fmt::format("steps {} {}\nend\n", s.steps, s.steps_bytes);
  return out;
}

Result<Settled> decode_settled(std::string_view bytes) {
  Reader r(bytes);
  Settled s;
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
  BERTH_CHECK(r.literal("pipeline "));
  BERTH_TRY(s.pipeline, r.str("the pipeline's name"));
  BERTH_CHECK(r.newline());
  BERTH_CHECK(r.literal("steps-object "));
  BERTH_TRY(s.steps_object, r.str("the steps' object name"));
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
    } else if (word == "input" || word == "result") {
      bool input = word == "input";
      BERTH_CHECK(r.literal(input ? "input " : "result "));
      SettledFile f;
      f.with_ctime = input;
      BERTH_TRY(f.stamp, read_stamp(r, input));
      BERTH_TRY(f.path, r.str("a path"));
      s.files.push_back(std::move(f));
    } else if (word == "object") {
      BERTH_CHECK(r.literal("object "));
      BERTH_TRY(std::string o, r.str("an object name"));
      s.objects.push_back(std::move(o));
    } else {
      break;
    }
    BERTH_CHECK(r.newline());
  }
  BERTH_CHECK(r.literal("steps "));
  BERTH_TRY(s.steps, r.number<size_t>("a step count"));
  BERTH_CHECK(r.space());
  BERTH_TRY(s.steps_bytes, r.number<size_t>("the steps' length"));
  BERTH_CHECK(r.newline());
  BERTH_CHECK(r.literal("end\n"));
  if (!r.at_end()) return r.error("the end of the record");
  return s;
}

std::optional<std::string> settled_difference(const Settled& s,
                                              const std::vector<place::PoolNode>& nodes,
                                              store::ObjectStore& store,
                                              place::VersionProbe& probe) {
  for (const auto& q : s.requests) {
    place::Pool empty(nodes);
    place::Request req;
    req.tasks = q.tasks;
    req.cpus_per_task = q.cpus_per_task;
    req.gpus = q.gpus;
    if (q.nodes >= 0) req.nodes = q.nodes;
    auto g = empty.grant(req);
    if (!g.ok() || !g->has_value()) return "a step no longer fits the pool";
  }
  for (const auto& t : s.tools) {
    auto out = probe.run(t.argv);
    if (!out.ok() || *out != t.output) {
      return fmt::format("tool '{}' answers differently", t.argv.empty() ? "" : t.argv[0]);
    }
  }
  // Files, then objects, as one list split in two halves: one checked here, one on a
  // second thread. The first difference stops both.
  size_t nf = s.files.size();
  size_t n = nf + s.objects.size();
  std::atomic<bool> differs{false};
  std::atomic<size_t> first{SIZE_MAX};
  auto check = [&](size_t from, size_t to) {
    for (size_t i = from; i < to && !differs.load(std::memory_order_relaxed); ++i) {
      bool ok;
      if (i < nf) {
        ok = file_holds(s.files[i]);
      } else {
        auto has = store.has_object(s.objects[i - nf]);
        ok = has.ok() && *has;
      }
      if (!ok) {
        differs = true;
        size_t seen = first.load();
        while (i < seen && !first.compare_exchange_weak(seen, i)) {
        }
      }
    }
  };
  size_t half = n / 2;
  std::thread other;
  if (n >= 64) other = std::thread(check, size_t{0}, half);
  check(other.joinable() ? half : 0, n);
  if (other.joinable()) other.join();
  if (!differs) return std::nullopt;
  size_t i = first.load();
  if (i < nf) return fmt::format("{} changed", s.files[i].path);
  return fmt::format("object {} is no longer in the store", s.objects[i - nf]);
}

}  // namespace berth::pipeline
