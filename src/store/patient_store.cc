#include "store/patient_store.h"

#include <fmt/format.h>

#include <thread>

namespace berth::store {

namespace {

std::string seconds_text(std::chrono::milliseconds d) {
  return fmt::format("{:.1f} s", static_cast<double>(d.count()) / 1000.0);
}

}  // namespace

PatientStore::PatientStore(std::unique_ptr<ObjectStore> inner, Patience patience,
                           const Clock& clock)
    : inner_(std::move(inner)), p_(std::move(patience)), clock_(clock) {
  if (!p_.sleep) p_.sleep = [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); };
  if (p_.first_delay.count() < 1) p_.first_delay = std::chrono::milliseconds(1);
  if (p_.max_delay < p_.first_delay) p_.max_delay = p_.first_delay;
}

void PatientStore::failed(const Error& e) {
  bool opened = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.last_error = e.message();
    if (!outage_since_) {
      outage_since_ = clock_.steady();
      opened = true;
      in_outage_.store(true, std::memory_order_relaxed);
    }
  }
  if (opened && p_.on_wait) p_.on_wait(inner_->describe(), e);
}

void PatientStore::answered() {
  if (!in_outage_.load(std::memory_order_relaxed)) return;
  std::chrono::milliseconds away{0};
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!outage_since_) return;
    away = std::chrono::duration_cast<std::chrono::milliseconds>(clock_.steady() - *outage_since_);
    outage_since_.reset();
    in_outage_.store(false, std::memory_order_relaxed);
    stats_.outages += 1;
    stats_.waited += away;
  }
  if (p_.on_back) p_.on_back(inner_->describe(), away);
}

template <typename T, typename F>
Result<T> PatientStore::patiently(F&& op, bool* retried) {
  std::optional<std::chrono::steady_clock::time_point> since;
  std::chrono::milliseconds delay = p_.first_delay;
  for (;;) {
    Result<T> r = op();
    if (r.ok()) {
      answered();
      return r;
    }
    if (r.error().code() != Errc::kUnavailable) return r;
    auto now = clock_.steady();
    if (!since) since = now;
    failed(r.error());
    auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - *since);
    if (waited >= p_.patience) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        stats_.gave_up += 1;
      }
      return fail(Errc::kUnavailable,
                  fmt::format("the store {} did not answer for {} (--store-patience {}): {}",
                              inner_->describe(), seconds_text(waited), seconds_text(p_.patience),
                              r.error().message()));
    }
    if (retried != nullptr) *retried = true;
    // Jittered, and never past the patience.
    std::chrono::milliseconds pause = std::min(jittered(delay), p_.patience - waited);
    p_.sleep(std::max(pause, std::chrono::milliseconds(1)));
    delay = std::min(delay * 2, p_.max_delay);
  }
}

Result<std::string> PatientStore::put_object(std::string_view bytes) {
  return patiently<std::string>([&] { return inner_->put_object(bytes); });
}

Result<std::string> PatientStore::put_object_file(const std::string& path) {
  return patiently<std::string>([&] { return inner_->put_object_file(path); });
}

Result<std::string> PatientStore::adopt_object_file(const std::string& path) {
  return patiently<std::string>([&] { return inner_->adopt_object_file(path); });
}

Result<ObjectRead> PatientStore::get_object(std::string_view name) {
  return patiently<ObjectRead>([&] { return inner_->get_object(name); });
}

Result<ObjectRead> PatientStore::get_object_to_file(std::string_view name,
                                                    const std::string& dest_path) {
  return patiently<ObjectRead>([&] { return inner_->get_object_to_file(name, dest_path); });
}

Result<ObjectRead> PatientStore::materialize(std::string_view name, const std::string& dest_path) {
  return patiently<ObjectRead>([&] { return inner_->materialize(name, dest_path); });
}

Result<bool> PatientStore::has_object(std::string_view name) {
  return patiently<bool>([&] { return inner_->has_object(name); });
}

void PatientStore::has_objects(std::span<const std::string> names, std::span<char> present) {
  // A 0 in the batch may be a question that failed: those are asked again one by one,
  // patiently. Present ones need no patience.
  inner_->has_objects(names, present);
  ask_absent_again(names, present);
}

Result<RowPut> PatientStore::put_row(std::string_view address, std::string_view bytes) {
  bool retried = false;
  auto r = patiently<RowPut>([&] { return inner_->put_row(address, bytes); }, &retried);
  // An earlier attempt may have written the row and lost the answer (see the header).
  if (r.ok() && retried && !r->created && r->existing == bytes) {
    r->created = true;
    r->existing.clear();
  }
  return r;
}

Result<std::optional<std::string>> PatientStore::get_row(std::string_view address) {
  return patiently<std::optional<std::string>>([&] { return inner_->get_row(address); });
}

Result<std::vector<std::string>> PatientStore::list_rows(std::string_view prefix) {
  return patiently<std::vector<std::string>>([&] { return inner_->list_rows(prefix); });
}

Result<bool> PatientStore::touch_row(std::string_view address) {
  return patiently<bool>([&] { return inner_->touch_row(address); });
}

Result<std::vector<StoreEntry>> PatientStore::list_objects() {
  return patiently<std::vector<StoreEntry>>([&] { return inner_->list_objects(); });
}

Result<std::vector<StoreEntry>> PatientStore::list_row_entries(std::string_view prefix) {
  return patiently<std::vector<StoreEntry>>([&] { return inner_->list_row_entries(prefix); });
}

Result<std::vector<StoreEntry>> PatientStore::list_debris() {
  return patiently<std::vector<StoreEntry>>([&] { return inner_->list_debris(); });
}

Result<std::vector<std::string>> PatientStore::collect(
    EntryKind kind, const std::vector<std::string>& names, int64_t cutoff_ms,
    const std::function<Result<std::set<std::string>>()>& spare) {
  return inner_->collect(kind, names, cutoff_ms, spare);
}

StoreWaits PatientStore::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

std::string PatientStore::waiting() const {
  if (!in_outage_.load(std::memory_order_relaxed)) return "";
  std::lock_guard<std::mutex> lock(mu_);
  if (!outage_since_) return "";
  auto away = std::chrono::duration_cast<std::chrono::seconds>(clock_.steady() - *outage_since_);
  return fmt::format("waiting {} s for {}", away.count(), inner_->describe());
}

}  // namespace berth::store
