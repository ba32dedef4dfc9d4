#!/bin/sh
# Runs bench_store from an existing build; builds nothing.
#
#   bench/store/run.sh [BUILD_DIR] [SIZE_MIB] [DIR] [ROUNDS]
#
# BUILD_DIR defaults to build/release (cmake --preset release && cmake --build
# --preset release). The SIZE_MIB (default 1024) file is made in DIR (default /tmp)
# and deleted afterwards; ROUNDS (default 5) interleaved rounds, best of each line.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build/release}
bin=$build/bench/store/bench_store
if [ ! -x "$bin" ]; then
  echo "run.sh: $bin not found; build it first (cmake --build $build --target bench_store)" >&2
  exit 2
fi
exec "$bin" "${2:-1024}" "${3:-/tmp}" "${4:-5}"
