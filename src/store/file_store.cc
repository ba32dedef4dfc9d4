#include "store/file_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "store/posix_io.h"
#include "util/files.h"
#include "util/sha256.h"
#include "util/strings.h"

namespace berth::store {
namespace {

using files::Fd;
using files::TempGuard;

constexpr std::string_view kFormat = "berth-store 1\n";  // spec 05 §2

// Every stored file is read-only: objects and rows are write-once (spec 05 §4).
constexpr unsigned kStoredMode = 0444;

std::string hex_of(std::string_view name) {
  return std::string(name.substr(kObjectNamePrefix.size()));
}

// Reads a whole small file. nullopt when it does not exist (ENOENT, or ENOTDIR: a
// parent component is a row, so nothing can be under it).
Result<std::optional<std::string>> read_small(const std::string& path, size_t max_bytes) {
  Fd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!f.valid()) {
    if (errno == ENOENT || errno == ENOTDIR) return std::optional<std::string>();
    return files::os_error(path, "open", errno);
  }
  struct stat st {};
  if (::fstat(f.get(), &st) != 0) return files::os_error(path, "stat", errno);
  if (S_ISDIR(st.st_mode)) {
    return fail(Errc::kInvalidInput,
                fmt::format("{}: is a directory: the address is a prefix of other rows", path));
  }
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(f.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return files::os_error(path, "read", errno);
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > max_bytes) {
      return fail(Errc::kIo, fmt::format("{}: larger than {} bytes", path, max_bytes));
    }
    out.append(buf, static_cast<size_t>(n));
  }
  return std::optional<std::string>(std::move(out));
}

// Appends every file under `dir` (as "<rel>/<name>") to `out`, skipping hidden names
// (temporary files, spec 05 §4).
Result<void> walk(const std::string& dir, const std::string& rel, std::vector<std::string>* out) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    if (errno == ENOENT) return Ok{};
    return files::os_error(dir, "list", errno);
  }
  std::vector<std::pair<std::string, bool>> entries;  // name, is a directory
  errno = 0;
  while (struct dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    bool is_dir = e->d_type == DT_DIR;
    if (e->d_type == DT_UNKNOWN) {
      struct stat st {};
      std::string p = dir + "/" + e->d_name;
      is_dir = ::lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    }
    entries.emplace_back(e->d_name, is_dir);
  }
  int err = errno;
  ::closedir(d);
  if (err != 0) return files::os_error(dir, "list", err);
  for (const auto& [name, is_dir] : entries) {
    if (is_dir) {
      BERTH_CHECK(walk(dir + "/" + name, rel + "/" + name, out));
    } else {
      out->push_back(rel + "/" + name);
    }
  }
  return Ok{};
}

bool is_dir_empty_of_visible(const std::string& dir, std::string* first) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return true;
  bool empty = true;
  while (struct dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    empty = false;
    *first = e->d_name;
    break;
  }
  ::closedir(d);
  return empty;
}

}  // namespace

Result<std::unique_ptr<FileStore>> FileStore::open(const std::string& dir_in, Options options) {
  std::string dir = dir_in;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (dir.empty()) return fail(Errc::kInvalidInput, "file store: empty directory name");
  BERTH_CHECK(posix::make_dirs(dir));

  // The FORMAT file is published first, write-once like everything else, so that N
  // workers opening a new store at once agree on it (spec 05 §2).
  std::string format_path = dir + "/FORMAT";
  BERTH_TRY(auto format, read_small(format_path, 4096));
  if (!format) {
    // FORMAT is published before anything visible is created, so list the entries
    // first and read FORMAT again after: another process may have created the store
    // since our first read (found by the four-process test). Only entries seen while
    // FORMAT was still absent prove the directory is someone else's.
    std::string first;
    bool empty = is_dir_empty_of_visible(dir, &first);
    BERTH_TRY(format, read_small(format_path, 4096));
    if (!format && !empty) {
      return fail(Errc::kRefused,
                  fmt::format("{}: not a berth store (it holds \"{}\" but no FORMAT file); "
                              "choose an empty or new directory",
                              dir, first));
    }
  }
  if (!format) {
    BERTH_TRY(std::string tmp, files::write_temp(dir, kFormat, kStoredMode, true));
    BERTH_TRY(auto published, posix::publish(tmp, format_path, options.use_hard_links));
    (void)published;
    BERTH_TRY(format, read_small(format_path, 4096));
  }
  if (!format || *format != kFormat) {
    return fail(Errc::kRefused,
                fmt::format("{}: FORMAT is \"{}\", this berth reads \"{}\"", format_path,
                            format ? str::printable(*format) : std::string("(gone)"),
                            str::printable(kFormat)));
  }
  BERTH_CHECK(posix::make_dirs(dir + "/objects"));
  BERTH_CHECK(posix::make_dirs(dir + "/rows"));
  BERTH_TRY(auto barrier, posix::SyncBarrier::open(dir));
  return std::unique_ptr<FileStore>(new FileStore(std::move(dir), options, std::move(barrier)));
}

FileStore::FileStore(std::string dir, Options options, std::unique_ptr<posix::SyncBarrier> barrier)
    : dir_(std::move(dir)), options_(options), barrier_(std::move(barrier)) {
  objects_fd_ = ::open((dir_ + "/objects").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
}

FileStore::~FileStore() {
  if (objects_fd_ >= 0) ::close(objects_fd_);
}

std::string FileStore::object_path(std::string_view name) const {
  std::string hex = hex_of(name);
  return fmt::format("{}/objects/{}/{}", dir_, hex.substr(0, 2), hex.substr(2));
}

std::string FileStore::row_path(std::string_view address) const {
  return fmt::format("{}/{}", dir_, address);
}

std::string FileStore::describe() const {
  return "file://" + dir_;  // an absolute dir_ gives file:///abs (spec 05 §6)
}

Result<void> FileStore::publish_object(const std::string& tmp, std::string_view name) {
  TempGuard guard{tmp};
  std::string final = object_path(name);
  std::string shard = files::parent_dir(final);
  BERTH_CHECK(posix::make_dirs(shard));
  guard.disarm();  // publish() removes tmp whatever happens
  BERTH_TRY(auto published, posix::publish(tmp, final, options_.use_hard_links));
  if (published == posix::Published::kCreated && options_.fsync_objects) {
    BERTH_CHECK(files::fsync_dir(shard));
  }
  return Ok{};
}

Result<std::string> FileStore::put_object(std::string_view bytes) {
  std::string name = object_name_of(bytes);
  BERTH_TRY(bool present, has_object(name));
  if (present) return name;  // write-once: the name fixes the contents
  std::string shard = files::parent_dir(object_path(name));
  BERTH_CHECK(posix::make_dirs(shard));
  BERTH_TRY(std::string tmp, files::write_temp(shard, bytes, kStoredMode, options_.fsync_objects));
  BERTH_CHECK(publish_object(tmp, name));
  return name;
}

Result<std::string> FileStore::put_object_file(const std::string& path) {
  Fd in(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.valid()) return files::os_error(path, "open", errno);
  struct stat st {};
  if (::fstat(in.get(), &st) != 0) return files::os_error(path, "stat", errno);
  if (S_ISDIR(st.st_mode)) return fail(Errc::kIo, fmt::format("{}: is a directory", path));

  // The name is known only after the last byte, so the copy goes to a temporary file
  // in objects/ (same filesystem as every shard) and is linked into its shard after.
  std::string tmp;
  BERTH_TRY(Fd out, files::create_temp(dir_ + "/objects", kStoredMode, &tmp));
  TempGuard guard{tmp};
  Sha256 hash;
  BERTH_TRY(uint64_t copied, posix::copy_hashing(in.get(), path, out.get(), tmp, hash));
  (void)copied;
  if (options_.fsync_objects) BERTH_CHECK(files::fsync_fd(out.get(), tmp));
  out.reset();
  std::string name = std::string(kObjectNamePrefix) + hash.finish_hex();
  BERTH_TRY(bool present, has_object(name));
  if (present) return name;  // the guard removes our copy
  guard.disarm();
  BERTH_CHECK(publish_object(tmp, name));
  return name;
}

Result<std::string> FileStore::adopt_object_file(const std::string& path) {
  if (!options_.use_hard_links) return put_object_file(path);
  // O_NOFOLLOW: a symlink is never linked into the store (link() would link the
  // symlink itself); it is copied, following it, like any other odd file.
  Fd in(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!in.valid()) {
    if (errno == ELOOP) return put_object_file(path);
    return files::os_error(path, "open", errno);
  }
  struct stat before {};
  if (::fstat(in.get(), &before) != 0) return files::os_error(path, "stat", errno);
  // Another link means someone else can reach the inode (a step that hard-linked an
  // input, the user's own file, to its output): linking it in would let their edits
  // change a stored object. Those are copied.
  if (!S_ISREG(before.st_mode) || before.st_nlink != 1) {
    in.reset();
    return put_object_file(path);
  }
  // Read-only first, so that the stamp below is the one the stored copy keeps.
  if (::fchmod(in.get(), kStoredMode) != 0 || ::fstat(in.get(), &before) != 0) {
    in.reset();
    return put_object_file(path);
  }
  Sha256 hash;
  BERTH_TRY(uint64_t n, posix::copy_hashing(in.get(), path, -1, "", hash));
  (void)n;
  struct stat after {};
  if (::fstat(in.get(), &after) != 0) return files::os_error(path, "stat", errno);
  if (after.st_size != before.st_size || after.st_mtim.tv_sec != before.st_mtim.tv_sec ||
      after.st_mtim.tv_nsec != before.st_mtim.tv_nsec || after.st_nlink != 1) {
    return fail(Errc::kIo, fmt::format("{}: changed while it was being stored", path));
  }
  if (options_.fsync_objects) BERTH_CHECK(files::fsync_fd(in.get(), path));
  in.reset();
  std::string name = std::string(kObjectNamePrefix) + hash.finish_hex();
  std::string final = object_path(name);
  std::string shard = files::parent_dir(final);
  BERTH_CHECK(posix::make_dirs(shard));
  if (::link(path.c_str(), final.c_str()) == 0) {
    if (options_.fsync_objects) BERTH_CHECK(files::fsync_dir(shard));
    return name;
  }
  int err = errno;
  if (err == EEXIST) return name;  // write-once: the name fixes the contents
  if (posix::links_unsupported(err)) return put_object_file(path);  // a copy
  return files::os_error(final, "link into place", err);
}

std::string FileStore::quarantine(std::string_view name, const std::string& path, uint64_t dev,
                                  uint64_t ino, const std::string& actual_hex) {
  std::string where = path;
  struct stat st {};
  // Only move the inode we read: if another reader already moved it and a writer
  // republished a good copy, that copy must stay.
  if (::stat(path.c_str(), &st) == 0 && st.st_dev == dev && st.st_ino == ino &&
      posix::make_dirs(dir_ + "/corrupt").ok()) {
    std::string dest = fmt::format("{}/corrupt/{}.{}", dir_, hex_of(name), files::unique_suffix());
    if (::rename(path.c_str(), dest.c_str()) == 0) where = path + " (moved to " + dest + ")";
  }
  return fmt::format("{}: stored copy {} holds bytes whose SHA-256 is {}; treated as absent", name,
                     where, actual_hex);
}

Result<ObjectRead> FileStore::get_object(std::string_view name) {
  BERTH_CHECK(check_object_name(name));
  std::string path = object_path(name);
  ObjectRead r;
  Fd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!f.valid()) {
    if (errno == ENOENT) return r;
    return files::os_error(path, "open", errno);
  }
  struct stat st {};
  if (::fstat(f.get(), &st) != 0) return files::os_error(path, "stat", errno);
  Sha256 hash;
  BERTH_CHECK(posix::read_hashing(f.get(), path, static_cast<size_t>(st.st_size), &r.bytes, hash));
  std::string actual = hash.finish_hex();
  if (actual != hex_of(name)) {
    r.bytes.clear();
    r.found = Found::kCorrupt;
    r.problem = quarantine(name, path, st.st_dev, st.st_ino, "sha256:" + actual);
    return r;
  }
  r.found = Found::kPresent;
  return r;
}

Result<ObjectRead> FileStore::get_object_to_file(std::string_view name,
                                                 const std::string& dest_path) {
  BERTH_CHECK(check_object_name(name));
  std::string path = object_path(name);
  ObjectRead r;
  Fd in(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.valid()) {
    if (errno == ENOENT) return r;
    return files::os_error(path, "open", errno);
  }
  struct stat st {};
  if (::fstat(in.get(), &st) != 0) return files::os_error(path, "stat", errno);
  std::string tmp;
  BERTH_TRY(Fd out, files::create_temp(files::parent_dir(dest_path), 0644, &tmp));
  TempGuard guard{tmp};
  Sha256 hash;
  BERTH_TRY(uint64_t copied, posix::copy_hashing(in.get(), path, out.get(), tmp, hash));
  (void)copied;
  out.reset();
  std::string actual = hash.finish_hex();
  if (actual != hex_of(name)) {
    r.found = Found::kCorrupt;
    r.problem = quarantine(name, path, st.st_dev, st.st_ino, "sha256:" + actual);
    return r;
  }
  if (::rename(tmp.c_str(), dest_path.c_str()) != 0) {
    return files::os_error(dest_path, "rename into place", errno);
  }
  guard.disarm();
  r.found = Found::kPresent;
  return r;
}

Result<ObjectRead> FileStore::materialize(std::string_view name, const std::string& dest_path) {
  BERTH_CHECK(check_object_name(name));
  std::string path = object_path(name);
  ObjectRead r;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return r;
    return files::os_error(path, "stat", errno);
  }
  std::string tmp = files::temp_path(files::parent_dir(dest_path));
  if (::link(path.c_str(), tmp.c_str()) != 0) {
    int err = errno;
    if (posix::links_unsupported(err)) {
      return get_object_to_file(name, dest_path);  // no link possible: a verified copy
    }
    if (err == ENOENT && ::stat(path.c_str(), &st) != 0) return r;  // removed under us
    return files::os_error(tmp, "hard-link the stored copy to", err);
  }
  TempGuard guard{tmp};
  // The link shares the stored inode, so verifying it verifies the copy the consumer
  // will read (spec 05 §5: every read verifies, a link included).
  Fd f(::open(tmp.c_str(), O_RDONLY | O_CLOEXEC));
  if (!f.valid()) return files::os_error(tmp, "open", errno);
  Sha256 hash;
  BERTH_TRY(uint64_t n, posix::copy_hashing(f.get(), tmp, -1, "", hash));
  (void)n;
  std::string actual = hash.finish_hex();
  if (actual != hex_of(name)) {
    r.found = Found::kCorrupt;
    r.problem = quarantine(name, path, st.st_dev, st.st_ino, "sha256:" + actual);
    return r;
  }
  if (::rename(tmp.c_str(), dest_path.c_str()) != 0) {
    return files::os_error(dest_path, "rename into place", errno);
  }
  // rename() of two links to one inode succeeds and does nothing (a result
  // materialised again), leaving tmp behind: the guard removes it either way.
  r.found = Found::kPresent;
  r.linked = true;
  return r;
}

Result<bool> FileStore::has_object(std::string_view name) {
  BERTH_CHECK(check_object_name(name));
  struct stat st {};
  if (objects_fd_ >= 0) {
    // "ab/cdef…\0": the 64 hex digits of a checked name, split after two.
    std::string_view hex = name.substr(name.size() - 64);
    char rel[67];
    rel[0] = hex[0];
    rel[1] = hex[1];
    rel[2] = '/';
    hex.substr(2).copy(rel + 3, 62);
    rel[65] = '\0';
    if (::fstatat(objects_fd_, rel, &st, 0) == 0) return true;
    if (errno == ENOENT) return false;
    return files::os_error(object_path(name), "stat", errno);
  }
  std::string path = object_path(name);
  if (::stat(path.c_str(), &st) == 0) return true;
  if (errno == ENOENT) return false;
  return files::os_error(path, "stat", errno);
}

void FileStore::has_objects(std::span<const std::string> names, std::span<char> present) {
  if (objects_fd_ < 0) return ObjectStore::has_objects(names, present);
  int shards[256];
  std::fill(std::begin(shards), std::end(shards), -2);  // -2: not opened yet
  auto digit = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (size_t i = 0; i < names.size() && i < present.size(); ++i) {
    const std::string& name = names[i];
    if (!check_object_name(name).ok()) {
      present[i] = 0;
      continue;
    }
    std::string_view hex = std::string_view(name).substr(name.size() - 64);
    int& shard = shards[digit(hex[0]) * 16 + digit(hex[1])];
    if (shard == -2) {
      char dir[3] = {hex[0], hex[1], '\0'};
      shard = ::openat(objects_fd_, dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    }
    if (shard < 0) {
      auto has = has_object(name);
      present[i] = has.ok() && *has;
      continue;
    }
    char rest[63];
    hex.substr(2).copy(rest, 62);
    rest[62] = '\0';
    struct stat st {};
    present[i] = ::fstatat(shard, rest, &st, 0) == 0;
  }
  for (int fd : shards) {
    if (fd >= 0) ::close(fd);
  }
}

Result<RowPut> FileStore::put_row(std::string_view address, std::string_view bytes) {
  BERTH_CHECK(check_row_address(address));
  if (bytes.size() > kMaxRowBytes) {
    return fail(Errc::kInvalidInput, fmt::format("row {}: {} bytes is over the limit of {}",
                                                 address, bytes.size(), kMaxRowBytes));
  }
  std::string path = row_path(address);
  RowPut r;
  BERTH_TRY(auto existing, read_small(path, kMaxRowBytes));
  if (!existing) {
    std::string parent = files::parent_dir(path);
    BERTH_CHECK(posix::make_dirs(parent));
    BERTH_TRY(std::string tmp, files::write_temp(parent, bytes, kStoredMode, false));
    // The row's bytes, and every object written before it, reach the disk before the
    // row can be seen (spec 05 §4): one syncfs for all the rows being put at once.
    auto durable = barrier_->wait();
    if (!durable.ok()) {
      ::unlink(tmp.c_str());
      return durable.error();
    }
    BERTH_TRY(auto published, posix::publish(tmp, path, options_.use_hard_links));
    if (published == posix::Published::kCreated) {
      r.created = true;
      return r;
    }
    // Lost the race: the winner's row is complete (it was published whole).
    BERTH_TRY(existing, read_small(path, kMaxRowBytes));
    if (!existing) {
      return fail(Errc::kIo, fmt::format("{}: row vanished after it was published", path));
    }
  }
  r.existing = std::move(*existing);
  return r;
}

Result<std::optional<std::string>> FileStore::get_row(std::string_view address) {
  BERTH_CHECK(check_row_address(address));
  return read_small(row_path(address), kMaxRowBytes);
}

Result<std::vector<std::string>> FileStore::list_rows(std::string_view prefix) {
  BERTH_CHECK(check_row_prefix(prefix));
  std::string p(prefix);
  if (p.back() == '/') p.pop_back();
  std::string root = row_path(p);
  std::vector<std::string> out;
  struct stat st {};
  if (::stat(root.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
    out.push_back(p);  // the prefix is itself a row
    return out;
  }
  BERTH_CHECK(walk(root, p, &out));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace berth::store
