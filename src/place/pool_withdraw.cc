// Pool::withdraw (pool.h): a node taken out of the pool for good, when its agent was
// lost (spec 08 §5). Grants skip it from then on (Pool::choose_locked), and a request
// only it could hold is refused, naming it.
#include <fmt/format.h>

#include "place/pool.h"
#include "util/strings.h"

namespace berth::place {

bool Pool::withdraw(const std::string& node) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t n = 0; n < nodes_.size(); ++n) {
    if (nodes_[n].name != node || withdrawn_[n]) continue;
    withdrawn_[n] = 1;
    // Waiting callers look again: what waited for this node may now never fit.
    ++releases_;
    released_.notify_all();
    return true;
  }
  return false;
}

std::string Pool::withdrawn_text_locked() const {
  std::vector<std::string> gone;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    if (withdrawn_[n]) gone.push_back(nodes_[n].name);
  }
  return gone.empty() ? "" : fmt::format(" (left out of the pool: {})", str::join(gone, ", "));
}

}  // namespace berth::place
