#include "store/memory_store.h"

#include <fmt/format.h>

#include "util/files.h"
#include "util/sha256.h"

namespace berth::store {

void MemoryStore::plant_corrupt_object_for_test(std::string_view name, std::string bytes) {
  std::lock_guard lock(mu_);
  objects_[std::string(name)] = std::move(bytes);
}

size_t MemoryStore::row_count() const {
  std::lock_guard lock(mu_);
  return rows_.size();
}

void MemoryStore::set_clock(const Clock* clock) {
  std::lock_guard lock(mu_);
  clock_ = clock;
}

void MemoryStore::set_time_for_test(std::string_view name, int64_t time_ms) {
  std::lock_guard lock(mu_);
  times_[std::string(name)] = time_ms;
}

int64_t MemoryStore::now_ms() const {
  const Clock& c = clock_ != nullptr ? *clock_ : Clock::real();
  return std::chrono::duration_cast<std::chrono::milliseconds>(c.wall().time_since_epoch())
      .count();
}

void MemoryStore::refresh(const std::string& name) {
  int64_t now = now_ms();
  auto [it, fresh] = times_.try_emplace(name, now);
  if (!fresh && now - it->second > kRefreshAfter.count()) it->second = now;
}

Result<std::string> MemoryStore::put_object(std::string_view bytes) {
  std::string name = object_name_of(bytes);
  std::lock_guard lock(mu_);
  objects_.try_emplace(name, bytes);  // write-once: an existing copy is kept
  refresh(name);
  return name;
}

Result<std::string> MemoryStore::put_object_file(const std::string& path) {
  // Memory holds the whole object anyway; the bound only stops a test from
  // accidentally putting something enormous.
  BERTH_TRY(std::string bytes, files::read_file(path, size_t{1} << 32));
  return put_object(bytes);
}

Result<ObjectRead> MemoryStore::get_object(std::string_view name) {
  BERTH_CHECK(check_object_name(name));
  ObjectRead r;
  std::lock_guard lock(mu_);
  auto it = objects_.find(name);
  if (it == objects_.end()) return r;
  std::string actual = object_name_of(it->second);
  if (actual != name) {
    r.found = Found::kCorrupt;
    r.problem = fmt::format(
        "{}: stored copy in {} holds bytes whose SHA-256 is {}; "
        "treated as absent",
        name, describe(), actual);
    objects_.erase(it);  // as FileStore moves it aside: a later put can replace it
    return r;
  }
  r.found = Found::kPresent;
  r.bytes = it->second;
  return r;
}

Result<ObjectRead> MemoryStore::get_object_to_file(std::string_view name,
                                                   const std::string& dest_path) {
  BERTH_TRY(ObjectRead r, get_object(name));
  if (r.present()) {
    BERTH_CHECK(files::write_file_atomic(dest_path, r.bytes));
    r.bytes.clear();
  }
  return r;
}

Result<bool> MemoryStore::has_object(std::string_view name) {
  BERTH_CHECK(check_object_name(name));
  std::lock_guard lock(mu_);
  if (objects_.count(name) == 0) return false;
  refresh(std::string(name));
  return true;
}

Result<bool> MemoryStore::touch_row(std::string_view address) {
  BERTH_CHECK(check_row_address(address));
  std::lock_guard lock(mu_);
  if (rows_.count(address) == 0) return false;
  refresh(std::string(address));
  return true;
}

Result<std::vector<StoreEntry>> MemoryStore::list_objects() {
  std::lock_guard lock(mu_);
  std::vector<StoreEntry> out;
  for (const auto& [name, bytes] : objects_) {
    auto t = times_.find(name);
    out.push_back({name, bytes.size(), t == times_.end() ? 0 : t->second});
  }
  return out;
}

Result<std::vector<StoreEntry>> MemoryStore::list_row_entries(std::string_view prefix) {
  BERTH_TRY(std::vector<std::string> addresses, list_rows(prefix));
  std::lock_guard lock(mu_);
  std::vector<StoreEntry> out;
  for (auto& a : addresses) {
    auto r = rows_.find(a);
    if (r == rows_.end()) continue;
    auto t = times_.find(a);
    out.push_back({a, r->second.size(), t == times_.end() ? 0 : t->second});
  }
  return out;
}

Result<std::vector<std::string>> MemoryStore::collect(
    EntryKind kind, const std::vector<std::string>& names, int64_t cutoff_ms,
    const std::function<Result<std::set<std::string>>()>& spare) {
  std::vector<std::string> old;
  {
    std::lock_guard lock(mu_);
    for (const auto& n : names) {
      auto t = times_.find(n);
      if (t != times_.end() && t->second >= cutoff_ms) continue;
      old.push_back(n);
    }
  }
  BERTH_TRY(std::set<std::string> keep, spare());
  std::lock_guard lock(mu_);
  std::vector<std::string> deleted;
  for (const auto& n : old) {
    if (keep.count(n)) continue;
    auto t = times_.find(n);
    if (t != times_.end() && t->second >= cutoff_ms) continue;  // refreshed meanwhile
    size_t erased = kind == EntryKind::kObject ? objects_.erase(n)
                    : kind == EntryKind::kRow  ? rows_.erase(n)
                                               : 0;
    if (erased == 0) continue;
    times_.erase(n);
    deleted.push_back(n);
  }
  return deleted;
}

Result<RowPut> MemoryStore::put_row(std::string_view address, std::string_view bytes) {
  BERTH_CHECK(check_row_address(address));
  if (bytes.size() > kMaxRowBytes) {
    return fail(Errc::kInvalidInput, fmt::format("row {}: {} bytes is over the limit of {}",
                                                 address, bytes.size(), kMaxRowBytes));
  }
  std::lock_guard lock(mu_);
  auto [it, created] = rows_.try_emplace(std::string(address), bytes);
  refresh(std::string(address));
  RowPut r;
  r.created = created;
  if (!created) r.existing = it->second;
  return r;
}

Result<std::optional<std::string>> MemoryStore::get_row(std::string_view address) {
  BERTH_CHECK(check_row_address(address));
  std::lock_guard lock(mu_);
  auto it = rows_.find(address);
  if (it == rows_.end()) return std::optional<std::string>();
  return std::optional<std::string>(it->second);
}

Result<std::vector<std::string>> MemoryStore::list_rows(std::string_view prefix) {
  BERTH_CHECK(check_row_prefix(prefix));
  std::string p(prefix);
  if (p.back() == '/') p.pop_back();
  std::string under = p + "/";
  std::vector<std::string> out;
  std::lock_guard lock(mu_);
  if (rows_.count(p) > 0) out.push_back(p);
  for (auto it = rows_.lower_bound(under);
       it != rows_.end() && it->first.compare(0, under.size(), under) == 0; ++it) {
    out.push_back(it->first);
  }
  return out;
}

}  // namespace berth::store
