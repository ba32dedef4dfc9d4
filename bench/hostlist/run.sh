#!/bin/sh
# Runs bench_hostlist from an existing build; builds nothing.
#
#   bench/hostlist/run.sh [BUILD_DIR] [PATH_TO_BERTH]
#
# BUILD_DIR defaults to build/release (cmake --preset release && cmake --build
# --preset release). PATH_TO_BERTH, when given, adds the `berth alloc --env-file` timing;
# "auto" means BUILD_DIR/berth.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build/release}
bin=$build/bench/bench_hostlist
if [ ! -x "$bin" ]; then
  echo "run.sh: $bin not found; build it first (cmake --build $build --target bench_hostlist)" >&2
  exit 2
fi
berth=${2:-}
if [ "$berth" = auto ]; then
  berth=$build/berth
fi
if [ -n "$berth" ]; then
  exec "$bin" "$berth"
fi
exec "$bin"
