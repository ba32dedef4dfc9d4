// Saying what cannot be returned (say.h).
#include "util/say.h"

#include <atomic>

namespace berth {
namespace {

std::atomic<SayFn> g_say{nullptr};

}  // namespace

void set_say(SayFn fn) { g_say.store(fn, std::memory_order_release); }

void say(SayLevel level, const std::string& text) {
  SayFn fn = g_say.load(std::memory_order_acquire);
  if (fn != nullptr) fn(level, text.c_str());
}

}  // namespace berth
