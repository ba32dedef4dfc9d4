// berth alloc: print the allocation (spec 01).
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "alloc/display.h"
#include "cli/commands.h"
#include "cli/context.h"
#include "cli/exit.h"
#include "util/files.h"

namespace berth::cli {
namespace {

struct Flags {
  AllocFlags alloc;
  std::string format = "text";
};

int run_alloc(const Flags& f) {
  auto env = read_env(f.alloc.env_file);
  if (!env.ok()) return report(env.error());
  auto a = place::discover_allocation(*env, f.alloc);
  if (!a.ok()) return report(a.error());
  if (f.format == "json") {
    // Written as it is made: 10^5 nodes are 20 MB of JSON, straight to the descriptor
    // (through stdio each piece was copied, and written in two).
    Result<void> written = Ok{};
    alloc::write_json(*a, [&written](std::string_view piece) {
      if (written.ok())
        written = files::write_all(STDOUT_FILENO, piece.data(), piece.size(), "stdout");
    });
    if (!written.ok()) return report(written.error());
  } else {
    std::string out = f.format == "xml" ? alloc::to_xml(*a) : alloc::to_text(*a);
    std::fwrite(out.data(), 1, out.size(), stdout);
  }
  return std::fflush(stdout) == 0 ? kExitOk : kExitFailure;
}

}  // namespace

std::function<int()> setup_alloc(CLI::App& app) {
  auto f = std::make_shared<Flags>();
  app.add_option("--format", f->format, "Output format")
      ->check(CLI::IsMember({"text", "xml", "json"}))
      ->capture_default_str();
  add_alloc_flags(app, f->alloc);
  return [f] { return run_alloc(*f); };
}

}  // namespace berth::cli
