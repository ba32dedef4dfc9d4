#include "store/file_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

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

// Opens a stored file for reading without touching its access time where the kernel
// lets us (O_NOATIME: the file's owner): a collector takes an entry's atime for its
// last use (spec 05 §10), and a read — the collector's own among them — is not one.
int open_stored_at(int at, const std::string& name) {
  int fd = ::openat(at, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOATIME);
  if (fd < 0 && errno == EPERM) fd = ::openat(at, name.c_str(), O_RDONLY | O_CLOEXEC);
  return fd;
}
int open_stored(const std::string& path) { return open_stored_at(AT_FDCWD, path); }

// Reads a whole small file, `name` relative to the directory `at` (AT_FDCWD: a path);
// `dir` is that directory's path, for messages only ("" for AT_FDCWD). nullopt when
// it does not exist (ENOENT, or ENOTDIR: a parent component is a row, so nothing can
// be under it).
Result<std::optional<std::string>> read_small_at(int at, std::string_view dir,
                                                 const std::string& name, size_t max_bytes) {
  Fd f(open_stored_at(at, name));
  auto path = [&] { return dir.empty() ? name : fmt::format("{}/{}", dir, name); };
  if (!f.valid()) {
    int err = errno;
    if (err == ENOENT || err == ENOTDIR) return std::optional<std::string>();
    return files::os_error(path(), "open", err);
  }
  struct stat st {};
  if (::fstat(f.get(), &st) != 0) {
    int err = errno;
    return files::os_error(path(), "stat", err);
  }
  if (S_ISDIR(st.st_mode)) {
    return fail(Errc::kInvalidInput,
                fmt::format("{}: is a directory: the address is a prefix of other rows", path()));
  }
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(f.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      return files::os_error(path(), "read", err);
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > max_bytes) {
      return fail(Errc::kIo, fmt::format("{}: larger than {} bytes", path(), max_bytes));
    }
    out.append(buf, static_cast<size_t>(n));
  }
  return std::optional<std::string>(std::move(out));
}

Result<std::optional<std::string>> read_small(const std::string& path, size_t max_bytes) {
  return read_small_at(AT_FDCWD, "", path, max_bytes);
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

// An entry's time for a collector: the later of its mtime and its atime (a refresh
// sets the atime only), in ms since the epoch.
int64_t entry_time_ms(const struct stat& st) {
  auto ms = [](const timespec& t) { return int64_t{t.tv_sec} * 1000 + t.tv_nsec / 1'000'000; };
  return std::max(ms(st.st_mtim), ms(st.st_atim));
}

// Every file under `dir` with its size and time, named "<rel>/<name>"; hidden names
// are skipped unless `hidden`, then only hidden files are kept (debris).
Result<void> walk_entries(const std::string& dir, const std::string& rel, bool hidden,
                          std::vector<StoreEntry>* out) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    if (errno == ENOENT) return Ok{};
    return files::os_error(dir, "list", errno);
  }
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(std::move(n));
  }
  ::closedir(d);
  for (const std::string& n : names) {
    std::string p = dir + "/" + n;
    std::string r = rel.empty() ? n : rel + "/" + n;
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) continue;  // gone meanwhile
    if (S_ISDIR(st.st_mode)) {
      if (n[0] == '.') continue;  // .gc/ is the collector's own
      BERTH_CHECK(walk_entries(p, r, hidden, out));
      continue;
    }
    if ((n[0] == '.') != hidden) continue;
    out->push_back({r, static_cast<uint64_t>(st.st_size), entry_time_ms(st)});
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
  root_fd_ = ::open(dir_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
}

FileStore::~FileStore() {
  if (objects_fd_ >= 0) ::close(objects_fd_);
  if (root_fd_ >= 0) ::close(root_fd_);
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
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (::link(path.c_str(), final.c_str()) == 0) {
      if (options_.fsync_objects) BERTH_CHECK(files::fsync_dir(shard));
      // The inode's times are the step's: old ones must not make a collector take
      // the object before the row that names it is written (spec 05 §10).
      timespec times[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
      ::utimensat(AT_FDCWD, final.c_str(), times, 0);
      return name;
    }
    if (errno != EEXIST) break;
    // Write-once: the name fixes the contents. Refreshed, unless a collector took it
    // just now: then link again.
    BERTH_TRY(bool there, refresh(final));
    if (there) return name;
  }
  int err = errno;
  if (err == EEXIST) return name;
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
  Fd f(open_stored(path));
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
  Fd in(open_stored(path));
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
  // Where the filesystem shares extents the copy costs nothing, and the stored bytes
  // it shares are read once to verify them; elsewhere they are copied while hashed.
  // One pass over the bytes either way.
  const bool cloned = posix::clone_file(in.get(), out.get());
  BERTH_TRY(uint64_t copied, posix::copy_hashing(in.get(), path, cloned ? -1 : out.get(),
                                                 cloned ? "" : tmp, hash));
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
  Fd f(open_stored(tmp));
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

int64_t FileStore::now_ms() const {
  const Clock& c = options_.clock != nullptr ? *options_.clock : Clock::real();
  return std::chrono::duration_cast<std::chrono::milliseconds>(c.wall().time_since_epoch())
      .count();
}

Result<bool> FileStore::refresh(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return false;
    return files::os_error(path, "stat", errno);
  }
  if (now_ms() - entry_time_ms(st) <= kRefreshAfter.count()) return true;
  // The atime alone: the mtime is part of a result's stamp (spec 04 §7), and a result
  // is a hard link to its object.
  timespec times[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
  if (::utimensat(AT_FDCWD, path.c_str(), times, 0) != 0) {
    // Gone since the stat: a collector took it, and the caller must write it again.
    if (errno == ENOENT) return false;
    // Another user's file in a shared store cannot be refreshed by us (spec 05 §10).
    if (errno != EPERM && errno != EACCES && errno != EROFS) {
      return files::os_error(path, "refresh the time of", errno);
    }
  }
  return true;
}

Result<bool> FileStore::has_object(std::string_view name) {
  BERTH_CHECK(check_object_name(name));
  return refresh(object_path(name));
}

Result<bool> FileStore::touch_row(std::string_view address) {
  BERTH_CHECK(check_row_address(address));
  return refresh(row_path(address));
}

void FileStore::has_objects(std::span<const std::string> names, std::span<char> present) {
  if (objects_fd_ < 0) return ObjectStore::has_objects(names, present);
  // Each object by its path under objects/ ("ab/cdef…"): no descriptor per shard. A
  // process holding hundreds grows its descriptor table, and a table shared by threads
  // grows only after an RCU grace period each time it doubles (milliseconds each).
  for (size_t i = 0; i < names.size() && i < present.size(); ++i) {
    const std::string& name = names[i];
    if (!check_object_name(name).ok()) {
      present[i] = 0;
      continue;
    }
    std::string_view hex = std::string_view(name).substr(name.size() - 64);
    char rel[66];
    rel[0] = hex[0];
    rel[1] = hex[1];
    rel[2] = '/';
    hex.substr(2).copy(rel + 3, 62);
    rel[65] = '\0';
    struct stat st {};
    if (::fstatat(objects_fd_, rel, &st, 0) != 0) {
      present[i] = 0;
    } else if (now_ms() - entry_time_ms(st) <= kRefreshAfter.count()) {
      present[i] = 1;
    } else {
      // Old enough to be collected: refreshed like has_object() does (spec 05 §10).
      auto has = has_object(name);
      present[i] = has.ok() && *has;
    }
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
  // A row found in place is in use: refreshed so that a collector spares it, or, taken
  // by one meanwhile, written again (spec 05 §10).
  if (existing) {
    BERTH_TRY(bool there, refresh(path));
    if (!there) existing.reset();
  }
  if (!existing) {
    std::string parent = files::parent_dir(path);
    BERTH_CHECK(posix::make_dirs(parent));
    auto made = files::write_temp(parent, bytes, kStoredMode, false);
    if (!made.ok()) {
      // A collector removed the (empty) directory between the two calls.
      BERTH_CHECK(posix::make_dirs(parent));
      made = files::write_temp(parent, bytes, kStoredMode, false);
    }
    BERTH_TRY(std::string tmp, std::move(made));
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
  if (root_fd_ < 0) return read_small(row_path(address), kMaxRowBytes);
  return read_small_at(root_fd_, dir_, std::string(address), kMaxRowBytes);
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

// ---- Collection (spec 05 §10) ----

Result<std::vector<StoreEntry>> FileStore::list_objects() {
  std::vector<StoreEntry> found;
  BERTH_CHECK(walk_entries(dir_ + "/objects", "", false, &found));
  std::vector<StoreEntry> out;
  for (auto& e : found) {
    // "ab/cdef…" is object sha256:abcdef…; anything else there is not an object.
    if (e.name.size() != 65 || e.name[2] != '/') continue;
    std::string name = std::string(kObjectNamePrefix) + e.name.substr(0, 2) + e.name.substr(3);
    if (!check_object_name(name).ok()) continue;
    e.name = std::move(name);
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.name < b.name; });
  return out;
}

Result<std::vector<StoreEntry>> FileStore::list_row_entries(std::string_view prefix) {
  BERTH_CHECK(check_row_prefix(prefix));
  std::string p(prefix);
  if (p.back() == '/') p.pop_back();
  std::vector<StoreEntry> out;
  BERTH_CHECK(walk_entries(row_path(p), p, false, &out));
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.name < b.name; });
  return out;
}

Result<std::vector<StoreEntry>> FileStore::list_debris() {
  std::vector<StoreEntry> out;
  // Copies a read moved aside (visible, in corrupt/), and temporary files of writes
  // that never finished (hidden, anywhere under objects/ and rows/).
  BERTH_CHECK(walk_entries(dir_ + "/corrupt", "corrupt", false, &out));
  BERTH_CHECK(walk_entries(dir_ + "/objects", "objects", true, &out));
  BERTH_CHECK(walk_entries(dir_ + "/rows", "rows", true, &out));
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.name < b.name; });
  return out;
}

namespace {

// A held entry's file name under DIR/.gc/<token>/: its path in the store with '/'
// written '%', which no object name, row address or debris path holds.
std::string held_name(std::string_view rel) {
  std::string out(rel);
  std::replace(out.begin(), out.end(), '/', '%');
  return out;
}

std::string rel_of_held(std::string_view held) {
  std::string out(held);
  std::replace(out.begin(), out.end(), '%', '/');
  return out;
}

}  // namespace

void FileStore::recover_held() {
  // A collector holds entries for as long as one listing of the rows takes; a hold
  // older than the refresh interval belongs to one that died. Its entries go back: a
  // collector never loses what it could not finish deciding about.
  std::string root = dir_ + "/.gc";
  DIR* d = ::opendir(root.c_str());
  if (d == nullptr) return;
  std::vector<std::string> holds;
  while (struct dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') holds.push_back(e->d_name);
  }
  ::closedir(d);
  for (const std::string& h : holds) {
    std::string dir = root + "/" + h;
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0 || now_ms() - entry_time_ms(st) < kRefreshAfter.count()) {
      continue;
    }
    std::vector<StoreEntry> held;
    (void)walk_entries(dir, "", false, &held);
    for (const auto& e : held) {
      std::string rel = rel_of_held(e.name);
      std::string dest = dir_ + "/" + rel;
      if (posix::make_dirs(files::parent_dir(dest)).ok()) {
        (void)posix::publish(dir + "/" + e.name, dest, options_.use_hard_links);
      }
    }
    ::rmdir(dir.c_str());
  }
}

Result<std::vector<std::string>> FileStore::collect(
    EntryKind kind, const std::vector<std::string>& names, int64_t cutoff_ms,
    const std::function<Result<std::set<std::string>>()>& spare) {
  recover_held();
  auto rel_of = [&](const std::string& name) -> Result<std::string> {
    switch (kind) {
      case EntryKind::kObject:
        BERTH_CHECK(check_object_name(name));
        return object_path(name).substr(dir_.size() + 1);
      case EntryKind::kRow:
        BERTH_CHECK(check_row_address(name));
        return name;
      case EntryKind::kDebris:
        if (name.find("..") != std::string::npos || name.empty() || name[0] == '/') {
          return fail(Errc::kInvalidInput, "not a path in the store: " + name);
        }
        return name;
    }
    return fail(Errc::kInternal, "unknown entry kind");
  };
  // 1. Out of sight: each entry renamed into this collector's hold, atomically. A
  // writer's refresh happens before (the time read below is young) or fails (it
  // writes the entry again); a reader finds the entry absent and recomputes.
  std::string hold = dir_ + "/.gc/" + files::unique_suffix();
  BERTH_CHECK(posix::make_dirs(hold));
  struct Held {
    std::string name, path, held;
    bool young = false;
  };
  std::vector<Held> held;
  auto put_back = [&](const Held& h) {
    (void)posix::make_dirs(files::parent_dir(h.path));
    (void)posix::publish(h.held, h.path, options_.use_hard_links);
  };
  auto abandon = [&](const Error& e) -> Failure {
    for (const Held& h : held) put_back(h);
    ::rmdir(hold.c_str());
    return fail(e);
  };
  for (const std::string& name : names) {
    auto rel = rel_of(name);
    if (!rel.ok()) return abandon(rel.error());
    Held h{name, dir_ + "/" + *rel, hold + "/" + held_name(*rel)};
    if (::rename(h.path.c_str(), h.held.c_str()) != 0) {
      if (errno == ENOENT) continue;  // gone already
      return abandon(files::os_error(h.path, "move aside", errno).error);
    }
    held.push_back(std::move(h));
  }
  // 2. Its time read again, now that nobody can refresh it unseen.
  for (Held& h : held) {
    struct stat st {};
    h.young = ::lstat(h.held.c_str(), &st) != 0 || entry_time_ms(st) >= cutoff_ms;
  }
  // 3. What the caller must keep, learnt after every entry was out of sight: a row
  // published since naming one of them.
  auto keep = spare();
  if (!keep.ok()) return abandon(keep.error());
  // 4. Put back what is kept, delete the rest.
  std::vector<std::string> deleted;
  for (const Held& h : held) {
    if (h.young || keep->count(h.name)) {
      put_back(h);
      continue;
    }
    if (::unlink(h.held.c_str()) != 0 && errno != ENOENT) {
      put_back(h);
      continue;
    }
    deleted.push_back(h.name);
    // A lease key's directory left empty goes too (rows/v1/<kind>/<key>/<gen>); a
    // writer that finds it gone makes it again (put_row).
    if (kind == EntryKind::kRow && std::count(h.name.begin(), h.name.end(), '/') >= 4) {
      ::rmdir(files::parent_dir(h.path).c_str());
    }
  }
  ::rmdir(hold.c_str());
  return deleted;
}

}  // namespace berth::store
