#!/usr/bin/env bash
# quickstart.sh - build berth (release) and run its main job on the embedded default:
# the allocation of this machine, as berth discovers it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
"$ROOT/scripts/install-deps.sh"
cd "$ROOT"
cmake --preset release >/dev/null
cmake --build --preset release --target berth
./build/release/berth alloc "$@"
