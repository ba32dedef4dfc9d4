#include "store/tiered_store.h"

#include <fmt/format.h>

namespace berth::store {
namespace {

// Joins problems found in two tiers into one report line.
std::string join_problems(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + "; " + b;
}

}  // namespace

std::string TieredStore::describe() const {
  return fmt::format("tiered(local={}, shared={})", local_->describe(), shared_->describe());
}

Result<std::string> TieredStore::put_object(std::string_view bytes) {
  BERTH_TRY(std::string name, shared_->put_object(bytes));
  BERTH_TRY(std::string local_name, local_->put_object(bytes));
  (void)local_name;
  return name;
}

Result<std::string> TieredStore::put_object_file(const std::string& path) {
  BERTH_TRY(std::string name, shared_->put_object_file(path));
  BERTH_TRY(std::string local_name, local_->put_object_file(path));
  if (local_name != name) {
    // The file changed between the two reads; the shared tier holds what it read, so
    // keep the name of that and report nothing wrong with either store.
    return fail(Errc::kIo, fmt::format("{}: changed while it was being stored", path));
  }
  return name;
}

Result<std::string> TieredStore::adopt_object_file(const std::string& path) {
  BERTH_TRY(std::string name, shared_->put_object_file(path));
  BERTH_TRY(std::string local_name, local_->adopt_object_file(path));
  if (local_name != name) {
    return fail(Errc::kIo, fmt::format("{}: changed while it was being stored", path));
  }
  return name;
}

Result<ObjectRead> TieredStore::get_object(std::string_view name) {
  BERTH_TRY(ObjectRead r, local_->get_object(name));
  if (r.present()) return r;
  BERTH_TRY(ObjectRead s, shared_->get_object(name));
  if (s.present()) {
    // Cache it locally; a failure to cache costs only a later remote read.
    auto cached = local_->put_object(s.bytes);
    (void)cached;
  }
  s.problem = join_problems(r.problem, s.problem);
  return s;
}

Result<ObjectRead> TieredStore::get_object_to_file(std::string_view name,
                                                   const std::string& dest_path) {
  BERTH_TRY(ObjectRead r, local_->get_object_to_file(name, dest_path));
  if (r.present()) return r;
  BERTH_TRY(ObjectRead s, shared_->get_object_to_file(name, dest_path));
  if (s.present()) {
    auto cached = local_->put_object_file(dest_path);
    (void)cached;
  }
  s.problem = join_problems(r.problem, s.problem);
  return s;
}

Result<ObjectRead> TieredStore::materialize(std::string_view name, const std::string& dest_path) {
  BERTH_TRY(ObjectRead r, local_->materialize(name, dest_path));
  if (r.present()) return r;
  // Fetch into dest_path from the shared tier, cache it locally, then link from the
  // local copy so that the result shares the cached inode.
  BERTH_TRY(ObjectRead s, shared_->get_object_to_file(name, dest_path));
  s.problem = join_problems(r.problem, s.problem);
  if (!s.present()) return s;
  auto cached = local_->put_object_file(dest_path);
  if (cached.ok()) {
    auto linked = local_->materialize(name, dest_path);
    if (linked.ok() && linked->present()) s.linked = linked->linked;
  }
  return s;
}

Result<bool> TieredStore::has_object(std::string_view name) {
  // The shared tier is asked even when the local one has a copy: a row built on this
  // answer names an object every worker must find, and the question refreshes its time
  // there so that a collector spares it (spec 05 §10). Gone from the shared tier but
  // here, it is put back from here.
  BERTH_TRY(bool there, shared_->has_object(name));
  if (there) return true;
  BERTH_TRY(bool here, local_->has_object(name));
  if (!here) return false;
  BERTH_TRY(ObjectRead local, local_->get_object(name));
  if (!local.present()) return false;
  BERTH_TRY(std::string put, shared_->put_object(local.bytes));
  return put == name;
}

void TieredStore::has_objects(std::span<const std::string> names, std::span<char> present) {
  // The shared tier answers the batch; only what it lacks is asked one by one, so that
  // an object only this tier still holds is put back (as has_object does).
  shared_->has_objects(names, present);
  ask_absent_again(names, present);
}

Result<bool> TieredStore::touch_row(std::string_view address) {
  return shared_->touch_row(address);
}

Result<RowPut> TieredStore::put_row(std::string_view address, std::string_view bytes) {
  return shared_->put_row(address, bytes);
}

Result<std::optional<std::string>> TieredStore::get_row(std::string_view address) {
  return shared_->get_row(address);
}

Result<std::vector<std::string>> TieredStore::list_rows(std::string_view prefix) {
  return shared_->list_rows(prefix);
}

}  // namespace berth::store
