// SharedLibrary: a library loaded when it is first needed rather than linked, so that a
// process that never uses it does not pay for loading it at start-up. libcurl (only an
// s3:// store needs it) and libcrypto (only hashing does: `berth alloc` and a settled
// no-op run hash nothing) are loaded so.
//
// Opened with dlopen(RTLD_LAZY | RTLD_LOCAL), as a linked library is bound (each function
// when first called: libcrypto has thousands), and never closed. A library that cannot
// be opened, or lacks a function bound here, is not usable: error() says why, naming the
// library and the package that provides it.
#pragma once

#include <string>
#include <string_view>

namespace berth {

class SharedLibrary {
 public:
  // `soname`: "libcurl.so.4"; `package`: the Debian package that installs it.
  SharedLibrary(const char* soname, std::string_view package);

  // Points `fn` at the library's function `symbol`; a missing one makes the library
  // unusable (error()). `Fn` is the function's pointer type (decltype(&curl_easy_init)).
  template <class Fn>
  void bind(Fn& fn, const char* symbol) {
    fn = reinterpret_cast<Fn>(find(symbol));
  }

  // Empty when the library and every function bound so far were found.
  const std::string& error() const { return error_; }

  // Whether `soname` (or a path) is loaded in this process already, by anyone: asked
  // of the loader without loading it (dlopen RTLD_NOLOAD).
  static bool loaded(const char* soname);

 private:
  void* find(const char* symbol);

  std::string soname_;
  void* handle_ = nullptr;
  std::string error_;
};

}  // namespace berth
