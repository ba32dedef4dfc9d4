#include "util/shared_library.h"

#include <dlfcn.h>
#include <fmt/format.h>

namespace berth {

SharedLibrary::SharedLibrary(const char* soname, std::string_view package) : soname_(soname) {
  handle_ = ::dlopen(soname, RTLD_LAZY | RTLD_LOCAL);
  if (handle_ == nullptr) {
    const char* why = ::dlerror();
    error_ = fmt::format("cannot load {} (Debian: apt-get install {}): {}", soname, package,
                         why ? why : "unknown error");
  }
}

bool SharedLibrary::loaded(const char* soname) {
  void* handle = ::dlopen(soname, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
  if (handle == nullptr) return false;
  ::dlclose(handle);  // the reference this call took
  return true;
}

void* SharedLibrary::find(const char* symbol) {
  if (handle_ == nullptr) return nullptr;
  void* at = ::dlsym(handle_, symbol);
  if (at == nullptr && error_.empty()) error_ = fmt::format("{} has no {}", soname_, symbol);
  return at;
}

}  // namespace berth
