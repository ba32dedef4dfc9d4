// Result<T> and Error: how every berth library reports failure.
//
// Libraries return values, never throw and never print. An Error carries a code (what
// kind of failure, for the CLI's exit status) and a message that names the input that
// was wrong and where ("SLURM_TASKS_PER_NODE: position 3: expected a digit"). Only the
// CLI turns an Error into text and an exit code.
//
// Result<T> is shaped like C++23's std::expected<T, Error>, so it can be replaced by
// it without touching callers.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace berth {

enum class Errc {
  kInvalidInput,  // the input (file, variable, flag) does not parse or is out of range
  kNotFound,      // a named thing (file, node, step) does not exist
  kIo,            // the operating system refused (open, read, write)
  kUnavailable,   // a store or filesystem that may answer later (refused connection,
                  // timeout, 5xx, ENOSPC, EACCES, ESTALE): the same request may succeed
  kRefused,       // valid input that berth will not honour (e.g. a node outside the allocation)
  kUnsupported,   // the request needs something this machine or launcher lacks
  kInternal,      // a broken invariant: a bug in berth
};

// A short lower-case name for the code ("invalid-input"), for JSON and logs.
const char* errc_name(Errc code);

class Error {
 public:
  Error(Errc code, std::string message) : code_(code), message_(std::move(message)) {}

  Errc code() const { return code_; }
  const std::string& message() const { return message_; }

  // The same error with `context` in front: "context: message". Used to add the
  // input's name ("PBS_NODEFILE /x/y: line 3: ...") as an error travels up.
  Error with_context(const std::string& context) const& {
    return Error(code_, context + ": " + message_);
  }

 private:
  Errc code_;
  std::string message_;
};

// Tag type so that `return fail(Errc::kIo, "...")` converts to any Result<T>.
struct Failure {
  Error error;
};
inline Failure fail(Errc code, std::string message) {
  return Failure{Error(code, std::move(message))};
}
inline Failure fail(Error error) { return Failure{std::move(error)}; }

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit
  Result(Failure f) : v_(std::in_place_index<1>, std::move(f.error)) {}  // NOLINT: implicit
  Result(Error e) : v_(std::in_place_index<1>, std::move(e)) {}  // NOLINT: implicit

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const& {
    assert(!ok());
    return std::get<1>(v_);
  }
  Error&& error() && {
    assert(!ok());
    return std::get<1>(std::move(v_));
  }

 private:
  std::variant<T, Error> v_;
};

// Result<void>: success carries nothing.
struct Ok {};
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Ok) {}                                          // NOLINT: implicit
  Result(Failure f) : error_(std::move(f.error)), failed_(true) {}  // NOLINT: implicit
  Result(Error e) : error_(std::move(e)), failed_(true) {}          // NOLINT: implicit

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const Error& error() const& {
    assert(failed_);
    return error_;
  }

 private:
  Error error_{Errc::kInternal, ""};
  bool failed_ = false;
};

}  // namespace berth

// BERTH_TRY(var, expr): evaluate a Result; on failure return its Error from the
// enclosing function, else bind the value to `var`.
#define BERTH_CONCAT_INNER(a, b) a##b
#define BERTH_CONCAT(a, b) BERTH_CONCAT_INNER(a, b)
#define BERTH_TRY(var, expr) BERTH_TRY_IMPL(BERTH_CONCAT(berth_try_, __LINE__), var, expr)
#define BERTH_TRY_IMPL(tmp, var, expr)   \
  auto tmp = (expr);                     \
  if (!tmp.ok()) return std::move(tmp).error(); \
  var = std::move(tmp).value()
// BERTH_CHECK(expr): evaluate a Result<void>; on failure return its Error.
#define BERTH_CHECK(expr)                       \
  do {                                          \
    auto berth_check_ = (expr);                 \
    if (!berth_check_.ok()) return berth_check_.error(); \
  } while (0)
