// TieredStore: a local object cache in front of a shared store (spec 05 §7).
//
// Objects may be cached anywhere, because a name fixes its contents: reads go to the
// local tier first and then to the shared one (a shared hit is copied into the local
// tier), writes go to both — shared first, so a put that succeeded is visible to
// other workers. A corrupt local copy is replaced from the shared tier and reported
// in ObjectRead::problem.
//
// Rows are facts about other machines, not about a key's contents, so every row
// operation goes to the shared tier only, always. A lease or a steps-row read-back
// served from a local tier would see only this worker's own writes — every key looks
// free, every race looks won — and the run would stay correct while distribution and
// divergence detection were silently absent, which only a test would catch. Code
// that must talk to the other workers (leases, read-backs) should use shared()
// explicitly, so that the rule is visible at the call.
#pragma once

#include <memory>

#include "store/object_store.h"

namespace berth::store {

class TieredStore : public ObjectStore {
 public:
  // Both tiers must be non-null.
  TieredStore(std::unique_ptr<ObjectStore> local, std::unique_ptr<ObjectStore> shared)
      : local_(std::move(local)), shared_(std::move(shared)) {}

  // The store every worker sees: for leases and read-backs.
  ObjectStore& shared() { return *shared_; }
  ObjectStore& local() { return *local_; }

  // "tiered(local=<local>, shared=<shared>)".
  std::string describe() const override;
  std::vector<std::string> notices() const override { return shared_->notices(); }
  Result<std::string> put_object(std::string_view bytes) override;
  Result<std::string> put_object_file(const std::string& path) override;
  // Copied to the shared tier, adopted by the local one.
  Result<std::string> adopt_object_file(const std::string& path) override;
  Result<ObjectRead> get_object(std::string_view name) override;
  Result<ObjectRead> get_object_to_file(std::string_view name,
                                        const std::string& dest_path) override;
  // From the local tier (a hard link where it can), after fetching into it on a miss.
  Result<ObjectRead> materialize(std::string_view name, const std::string& dest_path) override;
  // Present in the shared tier (refreshed there, spec 05 §10); an object only the local
  // tier still holds is copied up first.
  Result<bool> has_object(std::string_view name) override;
  // The shared tier's batch; what it lacks is asked again one by one, as above.
  void has_objects(std::span<const std::string> names, std::span<char> present) override;
  Result<bool> touch_row(std::string_view address) override;
  Result<RowPut> put_row(std::string_view address, std::string_view bytes) override;
  Result<std::optional<std::string>> get_row(std::string_view address) override;
  Result<std::vector<std::string>> list_rows(std::string_view prefix) override;

 private:
  std::unique_ptr<ObjectStore> local_;
  std::unique_ptr<ObjectStore> shared_;
};

}  // namespace berth::store
