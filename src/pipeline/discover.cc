// Discovery (discover.h): foreach values from the files present.
#include "pipeline/discover.h"

#include <dirent.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <set>

#include "pipeline/foreach_table.h"
#include "pipeline/template.h"
#include "util/files.h"
#include "util/strings.h"

namespace berth::pipeline {
namespace {

// One path component of a pattern: literal text and the placeholder, in order.
using Component = std::vector<TemplatePiece>;

bool has_placeholder(const Component& c) {
  return std::any_of(c.begin(), c.end(), [](const TemplatePiece& p) { return p.placeholder; });
}

// Whether `name` matches `c` from piece k and position pos, the placeholder standing for
// `value` (bound here on its first use, to the shortest part that lets the rest match).
bool match(const Component& c, size_t k, std::string_view name, size_t pos,
           std::optional<std::string>& value) {
  if (k == c.size()) return pos == name.size();
  const TemplatePiece& p = c[k];
  if (!p.placeholder) {
    if (name.compare(pos, p.text.size(), p.text) != 0) return false;
    return match(c, k + 1, name, pos + p.text.size(), value);
  }
  if (value) {
    if (name.compare(pos, value->size(), *value) != 0) return false;
    return match(c, k + 1, name, pos + value->size(), value);
  }
  for (size_t len = 1; pos + len <= name.size(); ++len) {
    value = std::string(name.substr(pos, len));
    if (match(c, k + 1, name, pos + len, value)) return true;
  }
  value.reset();
  return false;
}

std::string join(const std::string& dir, const std::string& name) {
  if (dir.empty() || dir == ".") return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

class Walk {
 public:
  Walk(const DiscoveryFs& fs, Discovered& seen) : fs_(fs), seen_(seen) {}

  // Every value for which components[k..] match under `dir`.
  Result<void> run(const std::vector<Component>& components, size_t k, const std::string& dir,
                   std::optional<std::string> value, std::set<std::string>& out) {
    if (k == components.size()) {
      if (value) out.insert(*value);
      return Ok{};
    }
    const Component& c = components[k];
    bool last = k + 1 == components.size();
    if (!has_placeholder(c) || value) {
      // Everything in it is known (literal, or the value already bound): no listing,
      // and the last component must exist.
      std::string name;
      for (const auto& p : c) name += p.placeholder ? *value : p.text;
      std::string path = join(dir, name);
      if (last) {
        look_in(dir);
        if (!fs_.exists(path)) return Ok{};
      }
      return run(components, k + 1, path, value, out);
    }
    look_in(dir);
    auto names = fs_.list(dir.empty() ? "." : dir);
    if (!names.ok()) {
      if (names.error().code() == Errc::kNotFound) return Ok{};
      return names.error();
    }
    bool hidden = !c.empty() && !c[0].placeholder && !c[0].text.empty() && c[0].text[0] == '.';
    for (const std::string& name : *names) {
      if (name.empty() || (name[0] == '.' && !hidden)) continue;
      std::optional<std::string> v;
      if (!match(c, 0, name, 0, v)) continue;
      BERTH_CHECK(run(components, k + 1, join(dir, name), v, out));
    }
    return Ok{};
  }

 private:
  // A directory whose entries decided what matched, stamped once, before it is read.
  void look_in(const std::string& dir) {
    std::string d = dir.empty() ? "." : dir;
    if (!looked_.insert(d).second) return;
    auto st = fs_.stamp(d);
    if (st) {
      seen_.dirs.emplace_back(d, *st);
    } else if (fs_.exists(d)) {
      seen_.stable = false;
    }
  }

  const DiscoveryFs& fs_;
  Discovered& seen_;
  std::set<std::string> looked_;
};

// A table file as big as a pipeline file may be.
constexpr size_t kMaxTableFileBytes = kMaxPipelineFileBytes;

// foreach = "sweep.csv": the step's keys and values are the file's columns, its
// combinations the rows. The file's stamp goes with the directories', before and after.
Result<void> read_table(const PipelineFile& file, StepSpec& s, const DiscoveryFs& fs,
                        Discovered& seen) {
  const ForeachTableFile& t = *s.foreach_table;
  std::string at = t.pos.line ? fmt::format("{}:{}:{}", file.path, t.pos.line, t.pos.column)
                              : file.path;
  std::string path = t.path.front() == '/' || file.dir == "." ? t.path
                     : file.dir.back() == '/'                ? file.dir + t.path
                                                             : file.dir + "/" + t.path;
  auto where = [&](const Error& e) {
    return fail(e.code(), fmt::format("{}: step '{}': foreach: {}", at, str::printable(s.name),
                                      e.message()));
  };
  auto before = fs.stamp(path);
  auto text = fs.read(path);
  if (!text.ok()) return where(text.error());
  auto rows = parse_table_file(*text, path, kMaxExpandedSteps);
  if (!rows.ok()) return where(rows.error());
  if (before) {
    seen.dirs.emplace_back(path, *before);
  } else {
    seen.stable = false;
  }
  s.foreach.clear();
  for (size_t k = 0; k < rows->keys.size(); ++k) {
    s.foreach.emplace(rows->keys[k], std::move(rows->columns[k]));
  }
  return Ok{};
}

}  // namespace

DiscoveryFs DiscoveryFs::real() {
  DiscoveryFs fs;
  fs.list = [](const std::string& dir) -> Result<std::vector<std::string>> {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) {
      return fail(errno == ENOENT || errno == ENOTDIR ? Errc::kNotFound : Errc::kIo,
                  fmt::format("{}: cannot list: {}", dir, std::strerror(errno)));
    }
    std::vector<std::string> names;
    while (const dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(std::move(n));
    }
    ::closedir(d);
    return names;
  };
  fs.exists = [](const std::string& path) { return files::exists(path); };
  fs.stamp = [](const std::string& dir) -> std::optional<FileStamp> {
    auto st = FileStamp::of(dir);
    if (!st.ok()) return std::nullopt;
    return *st;
  };
  fs.read = [](const std::string& path) { return files::read_file(path, kMaxTableFileBytes); };
  return fs;
}

Result<Discovered> discover_foreach(PipelineFile& file, const DiscoveryFs& fs) {
  Discovered seen;
  for (StepSpec& s : file.steps) {
    if (s.foreach_table) BERTH_CHECK(read_table(file, s, fs, seen));
    for (const auto& [key, glob] : s.foreach_globs) {
      auto where = [&, &key = key, &glob = glob](std::string_view what) {
        std::string at = glob.pos.line ? fmt::format("{}:{}:{}", file.path, glob.pos.line,
                                                     glob.pos.column)
                                       : file.path;
        return fail(Errc::kInvalidInput,
                    fmt::format("{}: step '{}': foreach.{}.glob: \"{}\": {}", at,
                                str::printable(s.name), key, str::printable(glob.pattern), what));
      };
      auto pieces = parse_template(glob.pattern);
      if (!pieces.ok()) return where(pieces.error().message());
      // Split into path components; a placeholder never holds a '/'.
      std::vector<Component> components(1);
      bool own = false;
      for (const TemplatePiece& p : *pieces) {
        if (p.placeholder) {
          if (p.text != key) {
            return where(fmt::format("holds {{{}}}: a glob may hold only its own key, {{{}}}",
                                     p.text, key));
          }
          own = true;
          components.back().push_back(p);
          continue;
        }
        size_t from = 0;
        for (;;) {
          size_t slash = p.text.find('/', from);
          std::string part = p.text.substr(from, slash == std::string::npos ? std::string::npos
                                                                          : slash - from);
          if (!part.empty()) components.back().push_back({false, part});
          if (slash == std::string::npos) break;
          components.emplace_back();
          from = slash + 1;
        }
      }
      if (!own) return where(fmt::format("does not hold {{{}}}, the key it gives values to", key));
      // An absolute pattern starts at '/', a relative one at the file's directory.
      std::string base = glob.pattern.front() == '/' ? "/" : file.dir;
      std::erase_if(components, [](const Component& c) { return c.empty(); });
      std::set<std::string> values;
      Walk walk(fs, seen);
      BERTH_CHECK(walk.run(components, 0, base, std::nullopt, values));
      if (values.empty()) {
        return where(fmt::format("matches no file (looked from {})", base.empty() ? "." : base));
      }
      s.foreach[key] = std::vector<std::string>(values.begin(), values.end());
    }
  }
  // Stamped again after every listing: a directory that changed meanwhile may have been
  // read in either state, so the run it feeds is not settled.
  for (const auto& [dir, before] : seen.dirs) {
    auto after = fs.stamp(dir);
    if (!after || !(*after == before)) seen.stable = false;
  }
  return seen;
}

}  // namespace berth::pipeline
