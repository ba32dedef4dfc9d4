#!/usr/bin/env bash
# quickstart.sh - build berth (release) and run its main job on the embedded default:
# the quickstart pipeline, on this machine's allocation (the local host), placed on
# its cores, with a file store beside the pipeline (examples/quickstart/.berth).
# Run it twice: the second run finds every result in the store.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
"$ROOT/scripts/install-deps.sh"
cd "$ROOT"
cmake --preset release >/dev/null
cmake --build --preset release --target berth
./build/release/berth run examples/quickstart/pipeline.toml "$@"
echo "results: $ROOT/examples/quickstart/results"
