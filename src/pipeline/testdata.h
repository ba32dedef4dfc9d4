// Pipeline files shared by this library's tests, and the environment the commands they
// run are given. Test-only.
#pragma once

#include "util/env.h"

namespace berth::pipeline::testdata {

// What a command a test runs (a canonicaliser, a version probe) is given: a PATH and
// nothing else, never the test's own environment.
inline Env command_env() {
  Env env;
  env.set("PATH", "/usr/bin:/bin");
  return env;
}

// The example pipeline of spec 04 §1, with a comment on every key: it must always parse
// and expand.
inline constexpr const char* kSpecExample = R"toml([pipeline]
name = "example"

[tools.sort]                      # a tool whose version enters the key of every step using it
version = ["sort", "--version"]

[[step]]
name = "count-{sample}"          # unique after expansion
foreach = { sample = ["a", "b", "c"] }   # cartesian product over every key given
run = "sort {in.text} | uniq -c > {out.counts}"   # a shell string, or
# cmd = ["wc", "-l", "{in.text}"]                 # an argv list (no shell)
inputs = { text = "data/{sample}.txt" }           # files, relative to this file
outputs = ["counts"]
params = { min = 2 }               # enters the key; usable as {param.min}
tools = ["sort"]
cores = 1                          # also: gpus (default none), memory_cap_mb, tasks, nodes
canonical = { counts = "lines-sorted" }   # per-output canonical form; default: bytes

[[step]]
name = "total"
inputs = { parts = ["@count-a/counts", "@count-b/counts", "@count-c/counts"] }  # @step/output
run = "cat {in.parts} > {out.sum}"
outputs = ["sum"]
)toml";

}  // namespace berth::pipeline::testdata
