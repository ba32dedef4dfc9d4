// A user's canonicaliser: argv with the output's bytes on stdin, its stdout back.
#include "pipeline/canonicaliser.h"

#include <fmt/format.h>

#include "launch/capture.h"
#include "util/strings.h"

namespace berth::pipeline {

Result<std::string> run_canonicaliser(const std::vector<std::string>& argv, std::string_view bytes,
                                      const Env& env, const std::string& cwd) {
  if (argv.empty()) return fail(Errc::kInvalidInput, "canonicaliser: no command");
  launch::CaptureRequest req;
  req.argv = argv;
  req.envp = launch::envp_of(env);
  req.cwd = cwd;
  req.input = bytes;
  req.max_output = kMaxCanonicalBytes;
  req.timeout = std::nullopt;
  auto got = launch::capture(req);
  if (!got.ok()) {
    Errc code = got.error().code() == Errc::kNotFound ? Errc::kNotFound : Errc::kRefused;
    return fail(code, "canonicaliser: " + got.error().message());
  }
  if (got->status.ok()) return std::move(got->out);
  // The end of its stderr is where a failing command says why.
  std::string tail(str::trim(got->err));
  if (tail.size() > 400) tail = "…" + tail.substr(tail.size() - 400);
  return fail(Errc::kRefused,
              fmt::format("canonicaliser {} {}{}{}", launch::command_text(argv),
                          launch::describe(got->status), tail.empty() ? "" : ": ", tail));
}


}  // namespace berth::pipeline
