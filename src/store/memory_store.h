// MemoryStore: an ObjectStore held in this process's memory, for unit tests of
// everything built on the store (the pipeline, leases) without a filesystem.
//
// Same contract as every backend (object_store.h), thread-safe behind one mutex, and
// just as strict: objects are verified on every read and rows are write-once. Tests of
// verification can plant a corrupt copy with plant_corrupt_object_for_test().
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "store/object_store.h"
#include "util/clock.h"

namespace berth::store {

class MemoryStore : public ObjectStore {
 public:
  MemoryStore() = default;

  // Replaces the stored copy of `name` with `bytes`, bypassing the hash, as a disk
  // or a bug might. The next read reports it corrupt and drops it.
  void plant_corrupt_object_for_test(std::string_view name, std::string bytes);
  // How many rows reached this store, for tests that count writes.
  size_t row_count() const;
  // Entries' times (spec 05 §10) come from `clock` (null: the real one); set_time_for_test
  // ages an object or a row as `touch -d` would a file.
  void set_clock(const Clock* clock);
  void set_time_for_test(std::string_view name_or_address, int64_t time_ms);

  std::string describe() const override { return "memory:"; }
  Result<std::string> put_object(std::string_view bytes) override;
  Result<std::string> put_object_file(const std::string& path) override;
  Result<ObjectRead> get_object(std::string_view name) override;
  Result<ObjectRead> get_object_to_file(std::string_view name,
                                        const std::string& dest_path) override;
  Result<bool> has_object(std::string_view name) override;
  Result<RowPut> put_row(std::string_view address, std::string_view bytes) override;
  Result<std::optional<std::string>> get_row(std::string_view address) override;
  Result<std::vector<std::string>> list_rows(std::string_view prefix) override;
  Result<bool> touch_row(std::string_view address) override;
  Result<std::vector<StoreEntry>> list_objects() override;
  Result<std::vector<StoreEntry>> list_row_entries(std::string_view prefix) override;
  Result<std::vector<StoreEntry>> list_debris() override { return std::vector<StoreEntry>{}; }
  // Times are checked, then `spare` is called, then the rest are erased: no entry is
  // out of sight in between (there is no rename in memory).
  Result<std::vector<std::string>> collect(
      EntryKind kind, const std::vector<std::string>& names, int64_t cutoff_ms,
      const std::function<Result<std::set<std::string>>()>& spare) override;

 private:
  int64_t now_ms() const;
  // Under mu_: the entry's time refreshed as has_object() refreshes a file's.
  void refresh(const std::string& name);

  mutable std::mutex mu_;
  const Clock* clock_ = nullptr;
  std::map<std::string, int64_t, std::less<>> times_;  // object name or row address
  std::map<std::string, std::string, std::less<>> objects_;
  std::map<std::string, std::string, std::less<>> rows_;
};

}  // namespace berth::store
