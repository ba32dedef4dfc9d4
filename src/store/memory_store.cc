#include "store/memory_store.h"

#include <fmt/format.h>

#include "util/files.h"
#include "util/sha256.h"

namespace berth::store {

void MemoryStore::plant_corrupt_object_for_test(std::string_view name, std::string bytes) {
  std::lock_guard lock(mu_);
  objects_[std::string(name)] = std::move(bytes);
}

size_t MemoryStore::object_count() const {
  std::lock_guard lock(mu_);
  return objects_.size();
}

size_t MemoryStore::row_count() const {
  std::lock_guard lock(mu_);
  return rows_.size();
}

Result<std::string> MemoryStore::put_object(std::string_view bytes) {
  std::string name = object_name_of(bytes);
  std::lock_guard lock(mu_);
  objects_.try_emplace(name, bytes);  // write-once: an existing copy is kept
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
  return objects_.count(name) > 0;
}

Result<RowPut> MemoryStore::put_row(std::string_view address, std::string_view bytes) {
  BERTH_CHECK(check_row_address(address));
  if (bytes.size() > kMaxRowBytes) {
    return fail(Errc::kInvalidInput, fmt::format("row {}: {} bytes is over the limit of {}",
                                                 address, bytes.size(), kMaxRowBytes));
  }
  std::lock_guard lock(mu_);
  auto [it, created] = rows_.try_emplace(std::string(address), bytes);
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
