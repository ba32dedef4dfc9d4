#include "store/tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <map>
#include <set>

#include "util/files.h"
#include "util/strings.h"

namespace berth::store {
namespace {

constexpr std::string_view kHeader = "berth-tree 1";  // spec 05 §1.1
// Paths in messages: long enough for a deep one, bounded for a hostile one.
constexpr size_t kShownPath = 256;

std::string shown(std::string_view path) { return str::printable(path, kShownPath); }

bool is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }

// Why `path` may not be a tree path, or empty when it may.
std::string path_problem(std::string_view path) {
  if (path.empty()) return "the path is empty";
  for (unsigned char c : path) {
    if (is_control(c)) return fmt::format("path `{}` holds a control character", shown(path));
  }
  if (path.front() == '/') return fmt::format("path `{}` is absolute", shown(path));
  size_t at = 0;
  while (true) {
    size_t slash = path.find('/', at);
    std::string_view part = path.substr(at, slash == std::string_view::npos ? slash : slash - at);
    if (part.empty()) return fmt::format("path `{}` has an empty component", shown(path));
    if (part == "." || part == "..") {
      return fmt::format("path `{}` has a `{}` component", shown(path), part);
    }
    if (slash == std::string_view::npos) return "";
    at = slash + 1;
  }
}

std::string_view kind_word(TreeEntry::Kind kind) {
  switch (kind) {
    case TreeEntry::Kind::kFile:
      return "file";
    case TreeEntry::Kind::kExec:
      return "exec";
    case TreeEntry::Kind::kDir:
      return "dir";
  }
  return "file";
}

// put_tree's walk: appends the entries under `dir` (whose path relative to the tree's
// root is `rel`, empty for the root) in name order. Every entry is lstat()ed: a symlink
// is never followed, so nothing outside the directory can be stored through one.
Result<void> walk(ObjectStore& store, const std::string& dir, const std::string& rel,
                  std::vector<TreeEntry>* out) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return files::os_error(dir, "open directory", errno);
  std::vector<std::string> names;
  errno = 0;
  while (dirent* e = ::readdir(d)) {
    std::string_view n = e->d_name;
    if (n != "." && n != "..") names.emplace_back(n);
    errno = 0;
  }
  int read_err = errno;
  ::closedir(d);
  if (read_err != 0) return files::os_error(dir, "read directory", read_err);
  // Sorted for a deterministic walk; encode_tree sorts the paths themselves.
  std::sort(names.begin(), names.end());
  if (names.empty() && !rel.empty()) {
    out->push_back({TreeEntry::Kind::kDir, rel, ""});
    return Ok{};
  }
  for (const std::string& name : names) {
    std::string child_rel = rel.empty() ? name : rel + "/" + name;
    if (std::any_of(name.begin(), name.end(),
                    [](char c) { return is_control(static_cast<unsigned char>(c)); })) {
      return fail(Errc::kInvalidInput,
                  fmt::format("{} has a control character in its name; a directory output's "
                              "names are text",
                              shown(child_rel)));
    }
    std::string path = dir + "/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return files::os_error(path, "stat", errno);
    const char* what = nullptr;
    if (S_ISDIR(st.st_mode)) {
      BERTH_CHECK(walk(store, path, child_rel, out));
      continue;
    } else if (S_ISREG(st.st_mode)) {
      // The execute bit first: adopting may make the file read-only (0444).
      bool exec = (st.st_mode & S_IXUSR) != 0;
      BERTH_TRY(std::string object, store.adopt_object_file(path));
      out->push_back(
          {exec ? TreeEntry::Kind::kExec : TreeEntry::Kind::kFile, child_rel, std::move(object)});
      continue;
    } else if (S_ISLNK(st.st_mode)) {
      what = "a symlink";
    } else if (S_ISFIFO(st.st_mode)) {
      what = "a fifo";
    } else if (S_ISSOCK(st.st_mode)) {
      what = "a socket";
    } else {
      what = "a device";
    }
    return fail(Errc::kInvalidInput,
                fmt::format("{} is {}; a directory output holds files and directories only",
                            shown(child_rel), what));
  }
  return Ok{};
}

// Removes `path` whatever it holds. A directory someone made read-only (0555) cannot be
// emptied, so on failure every directory below is given its owner's rwx and it is tried
// once more.
void give_owner_rwx(const std::filesystem::path& p) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return;
  ::chmod(p.c_str(), (st.st_mode & 07777) | S_IRWXU);
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(p, ec)) give_owner_rwx(e.path());
}

Result<void> remove_tree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (!ec) return Ok{};
  give_owner_rwx(path);
  ec.clear();
  std::filesystem::remove_all(path, ec);
  if (ec) return files::os_error(path, "remove", ec.value());
  return Ok{};
}

// A directory built under a temporary name, removed unless disarmed.
struct TempTree {
  std::string path;
  ~TempTree() {
    if (!path.empty()) (void)remove_tree(path);
  }
};

Result<void> make_dir(const std::string& path) {
  // 0755 (less the umask): the owner can remove the tree later.
  if (::mkdir(path.c_str(), 0755) != 0) return files::os_error(path, "create directory", errno);
  return Ok{};
}

// A child's read, named for the run report: the path as it would have been under `dest`,
// and its object.
std::string child_problem(const TreeEntry& e, const std::string& dest, const ObjectRead& r) {
  std::string where =
      fmt::format("{} {}/{} (object {})", kind_word(e.kind), dest, shown(e.path), e.object);
  if (r.found == Found::kAbsent) return where + " is missing from the store";
  return where + ": " + r.problem;
}

}  // namespace

std::string encode_tree(std::vector<TreeEntry> entries) {
  std::sort(entries.begin(), entries.end(),
            [](const TreeEntry& a, const TreeEntry& b) { return a.path < b.path; });
  std::string out(kHeader);
  out += '\n';
  for (const TreeEntry& e : entries) {
    out += kind_word(e.kind);
    out += ' ';
    if (e.kind != TreeEntry::Kind::kDir) {
      out += e.object;
      out += ' ';
    }
    out += e.path;
    out += '\n';
  }
  return out;
}

Result<std::vector<TreeEntry>> decode_tree(std::string_view manifest) {
  size_t line_no = 0;
  auto bad = [&](const std::string& why) {
    return fail(Errc::kInvalidInput, fmt::format("tree manifest line {}: {}", line_no, why));
  };
  std::vector<TreeEntry> out;
  // Every path so far. In a canonical manifest each is a leaf (a file, or a directory
  // with nothing in it), and sorting puts `a` before `a/b`: a path is checked against
  // its ancestors here.
  std::map<std::string, TreeEntry::Kind, std::less<>> seen;
  size_t pos = 0;
  while (line_no == 0 || pos < manifest.size()) {
    ++line_no;
    size_t nl = manifest.find('\n', pos);
    if (nl == std::string_view::npos) {
      if (line_no == 1 && manifest.empty()) return bad("empty; expected \"berth-tree 1\"");
      return bad("does not end in a newline");
    }
    std::string_view line = manifest.substr(pos, nl - pos);
    pos = nl + 1;
    if (line_no == 1) {
      if (line != kHeader) {
        return bad(fmt::format("expected \"berth-tree 1\", found \"{}\"", shown(line)));
      }
      continue;
    }
    TreeEntry e;
    size_t sp = line.find(' ');
    std::string_view kind = line.substr(0, sp);
    if (kind == "file") {
      e.kind = TreeEntry::Kind::kFile;
    } else if (kind == "exec") {
      e.kind = TreeEntry::Kind::kExec;
    } else if (kind == "dir") {
      e.kind = TreeEntry::Kind::kDir;
    } else {
      return bad(fmt::format("unknown kind `{}` (file, exec or dir)", shown(kind)));
    }
    if (sp == std::string_view::npos) return bad(fmt::format("no path after `{}`", kind));
    std::string_view rest = line.substr(sp + 1);
    if (e.kind != TreeEntry::Kind::kDir) {
      size_t sp2 = rest.find(' ');
      std::string_view object = rest.substr(0, sp2);
      if (!check_object_name(object).ok()) {
        return bad(fmt::format("bad object name `{}`", shown(object)));
      }
      if (sp2 == std::string_view::npos) return bad("no path after the object name");
      e.object = std::string(object);
      rest = rest.substr(sp2 + 1);
    }
    if (std::string why = path_problem(rest); !why.empty()) return bad(why);
    e.path = std::string(rest);
    if (!out.empty() && !(out.back().path < e.path)) {
      if (out.back().path == e.path) return bad(fmt::format("`{}` is listed twice", shown(rest)));
      return bad(fmt::format("`{}` is out of order: it sorts before `{}`", shown(rest),
                             shown(out.back().path)));
    }
    for (size_t slash = rest.find('/'); slash != std::string_view::npos;
         slash = rest.find('/', slash + 1)) {
      std::string_view above = rest.substr(0, slash);
      auto it = seen.find(above);
      if (it != seen.end()) {
        return bad(
            fmt::format("`{}` lies below `{}`, which is {}", shown(rest), shown(above),
                        it->second == TreeEntry::Kind::kDir ? "an empty directory" : "a file"));
      }
    }
    seen.emplace(e.path, e.kind);
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<std::string> tree_objects(const std::vector<TreeEntry>& entries) {
  std::vector<std::string> out;
  for (const TreeEntry& e : entries) {
    if (e.kind != TreeEntry::Kind::kDir) out.push_back(e.object);
  }
  return out;
}

Result<std::string> put_tree(ObjectStore& store, const std::string& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return files::os_error(dir, "stat", errno);
  if (!S_ISDIR(st.st_mode)) {
    return fail(Errc::kInvalidInput, fmt::format("{}: not a directory", dir));
  }
  std::vector<TreeEntry> entries;
  BERTH_CHECK(walk(store, dir, "", &entries));
  // Last: a manifest in the store never names a file that was not stored first.
  return store.put_object(encode_tree(std::move(entries)));
}

Result<ObjectRead> get_tree(ObjectStore& store, std::string_view name,
                            std::vector<TreeEntry>* entries) {
  BERTH_TRY(ObjectRead r, store.get_object(name));
  if (!r.present()) return r;
  auto decoded = decode_tree(r.bytes);
  if (!decoded.ok()) {
    // Verified bytes that are not a manifest: someone named a file where a tree belongs.
    ObjectRead bad;
    bad.found = Found::kCorrupt;
    bad.problem = fmt::format("tree {}: {}", name, decoded.error().message());
    return bad;
  }
  if (entries != nullptr) *entries = std::move(*decoded);
  return r;
}

Result<ObjectRead> materialize_tree(ObjectStore& store, std::string_view name,
                                    const std::string& dest_in, bool copies) {
  // "out/plots/" names "out/plots": the temporary tree goes beside it, not into it.
  std::string dest = dest_in;
  while (dest.size() > 1 && dest.back() == '/') dest.pop_back();
  std::vector<TreeEntry> entries;
  BERTH_TRY(ObjectRead r, get_tree(store, name, &entries));
  if (r.found == Found::kAbsent) {
    r.problem = fmt::format("tree {} is missing from the store", name);
    return r;
  }
  if (!r.present()) return r;
  r.bytes.clear();

  // Beside `dest`, so that the final rename stays on one filesystem.
  TempTree tmp{files::temp_path(files::parent_dir(dest))};
  if (::mkdir(tmp.path.c_str(), 0755) != 0) {
    int err = errno;
    std::string path = std::move(tmp.path);
    tmp.path.clear();  // not ours: never remove what mkdir did not create
    return files::os_error(path, "create directory", err);
  }
  std::set<std::string, std::less<>> made;  // directories under tmp created so far
  auto make_parents = [&](std::string_view path) -> Result<void> {
    for (size_t slash = path.find('/'); slash != std::string_view::npos;
         slash = path.find('/', slash + 1)) {
      std::string_view dir = path.substr(0, slash);
      if (made.count(dir) != 0) continue;
      BERTH_CHECK(make_dir(tmp.path + "/" + std::string(dir)));
      made.emplace(dir);
    }
    return Ok{};
  };
  std::vector<std::string> repaired;  // corrupt copies a backend replaced on the way
  for (const TreeEntry& e : entries) {
    BERTH_CHECK(make_parents(e.path));
    std::string path = tmp.path + "/" + e.path;
    if (e.kind == TreeEntry::Kind::kDir) {
      BERTH_CHECK(make_dir(path));
      made.insert(e.path);
      continue;
    }
    // An exec file is a copy of its own: chmod on a link would change the stored copy,
    // which every other user of the object shares.
    const bool exec = e.kind == TreeEntry::Kind::kExec;
    BERTH_TRY(ObjectRead got, exec || copies ? store.get_object_to_file(e.object, path)
                                             : store.materialize(e.object, path));
    if (!got.present()) {
      ObjectRead out;
      out.found = got.found;
      out.problem = child_problem(e, dest, got);
      return out;  // tmp removed; dest as it was
    }
    if (!got.problem.empty()) repaired.push_back(child_problem(e, dest, got));
    if ((exec || copies) && ::chmod(path.c_str(), exec ? 0555 : 0444) != 0) {
      return files::os_error(path, "chmod", errno);
    }
  }
  BERTH_CHECK(replace_path(tmp.path, dest));
  tmp.path.clear();
  for (const std::string& p : repaired) {
    if (!r.problem.empty()) r.problem += "; ";
    r.problem += p;
  }
  return r;
}

Result<void> replace_path(const std::string& from, const std::string& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_EXCHANGE) == 0) {
    // `from` now holds what `to` was. `to` is already the new one: a failure here
    // leaves only a hidden leftover, which the error names.
    Result<void> removed = remove_tree(from);
    if (!removed.ok()) {
      return fail(removed.error().code(),
                  fmt::format("{} was replaced, but the old one, moved to {}, was not removed: {}",
                              to, from, removed.error().message()));
    }
    return Ok{};
  }
  int err = errno;
  if (err == ENOENT) {
    // Nothing at `to` (or nothing at `from`, which rename reports).
    if (::rename(from.c_str(), to.c_str()) != 0)
      return files::os_error(to, "rename into place", errno);
    return Ok{};
  }
  if (err != EINVAL && err != ENOSYS && err != ENOTSUP) {
    return files::os_error(to, "exchange into place", err);
  }
  // A filesystem without RENAME_EXCHANGE: the old one is moved aside first, so for a
  // moment there is nothing at `to`, never a mixture.
  std::string aside = files::temp_path(files::parent_dir(to));
  bool moved = ::rename(to.c_str(), aside.c_str()) == 0;
  if (!moved && errno != ENOENT) return files::os_error(to, "move aside", errno);
  if (::rename(from.c_str(), to.c_str()) != 0) {
    int rerr = errno;
    if (moved) (void)::rename(aside.c_str(), to.c_str());  // put the old one back
    return files::os_error(to, "rename into place", rerr);
  }
  if (moved) {
    Result<void> removed = remove_tree(aside);
    if (!removed.ok()) {
      return fail(removed.error().code(),
                  fmt::format("{} was replaced, but the old one, moved to {}, was not removed: {}",
                              to, aside, removed.error().message()));
    }
  }
  return Ok{};
}

}  // namespace berth::store
