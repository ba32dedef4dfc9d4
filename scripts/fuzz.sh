#!/usr/bin/env bash
# fuzz.sh - a long fuzzing campaign that keeps what it learns: every fuzz target (or
# those named) runs for N seconds on a scratch copy of its corpus, and the inputs it
# found that reach new code are merged back into tests/fuzz/corpus/<target>/,
# minimised, so that CTest's short runs (label "fuzz") start where this one stopped.
#
#   scripts/fuzz.sh --seconds N [--jobs J] [TARGET...]
#
#   --seconds N   how long each target fuzzes (required)
#   --jobs J      how many targets fuzz at once (default 1); each is one process
#   TARGET        a parser name, as in tests/fuzz/fuzz_<TARGET>.cc (default: all)
#
# The fuzzers are built in build/fuzz: clang, ASan and UBSan, libFuzzer, assertions
# on, like the dev preset, but optimised (-O2): at -O0 the parsers that go through
# toml++ or nlohmann-json ran 400 to 1,000 inputs a second, too few for 10^7 in an
# hour. build/dev is left alone. BERTH_FUZZ_BUILD=DIR names another build directory
# configured with fuzzers on (build/dev, say) to use instead. A corpus keeps its
# hand-written seeds
# (any file not named by a SHA-1) as they are and holds, besides them, the fewest
# generated inputs (SHA-1 names, libFuzzer's) that cover what the seeds do not.
#
# Prints, per target: executions, executions per second, corpus files and bytes
# before and after, and any crash, leak, timeout or out-of-memory input found. Any
# such input fails the script; its reproducer stays under build/fuzz/campaign/.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

usage() {
  sed -n '7,11p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

seconds=""
jobs=1
targets=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --seconds) seconds=${2:-}; shift 2 ;;
    --seconds=*) seconds=${1#*=}; shift ;;
    --jobs) jobs=${2:-}; shift 2 ;;
    --jobs=*) jobs=${1#*=}; shift ;;
    -h|--help) usage ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; usage ;;
    *) targets+=("$1"); shift ;;
  esac
done
[[ $seconds =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: --seconds N is required" >&2; usage; }
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: --jobs takes a positive number" >&2; usage; }

all=()
for src in tests/fuzz/fuzz_*.cc; do
  name=$(basename "$src" .cc)
  all+=("${name#fuzz_}")
done
if [[ ${#targets[@]} -eq 0 ]]; then
  targets=("${all[@]}")
fi
for t in "${targets[@]}"; do
  [[ -f tests/fuzz/fuzz_$t.cc ]] || { echo "fuzz.sh: no target $t (${all[*]})" >&2; exit 2; }
done

# The flags CTest's bounded runs use (tests/fuzz/CMakeLists.txt): inputs found here
# must be ones those runs can load.
FUZZ_FLAGS=(-max_len=4096 -timeout=10 -rss_limit_mb=2048)
BUILD=${BERTH_FUZZ_BUILD:-$ROOT/build/fuzz}
[[ $BUILD == /* ]] || BUILD=$ROOT/$BUILD
CAMPAIGN=$BUILD/campaign

# Build: the dev preset's cache variables, optimised, in a build directory of our own.
# Debug keeps assertions (no NDEBUG); the -O2 goes after Debug's own flags.
if [[ ! -f $BUILD/CMakeCache.txt ]]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_C_FLAGS_DEBUG="-g -O2" -DCMAKE_CXX_FLAGS_DEBUG="-g -O2" \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DBERTH_WERROR=ON \
    -DBERTH_SANITIZE=address,undefined -DBERTH_TESTS=ON -DBERTH_FUZZ=ON \
    -DBERTH_BENCH=OFF >/dev/null
fi
cmake --build "$BUILD" --target "${targets[@]/#/fuzz_}"

SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/berth-fuzz.XXXXXX")
trap 'rm -rf "$SCRATCH"' EXIT
rm -rf "$CAMPAIGN"
mkdir -p "$CAMPAIGN"

# A generated input is named by the SHA-1 of its bytes; anything else is a seed.
is_generated() { [[ $(basename "$1") =~ ^[0-9a-f]{40}$ ]]; }

# "<files> <bytes>" of a corpus directory.
corpus_size() {
  local files=0 bytes=0 f
  for f in "$1"/*; do
    [[ -f $f ]] || continue
    files=$((files + 1))
    bytes=$((bytes + $(stat -c %s "$f")))
  done
  echo "$files $bytes"
}

# fuzz_one TARGET: fuzzes, merges, and writes one result line to $CAMPAIGN/TARGET.result:
# target, executions, exec/s, files and bytes before, after, and the problem found.
fuzz_one() {
  local t=$1
  local bin=$BUILD/tests/fuzz/fuzz_$t corpus=$ROOT/tests/fuzz/corpus/$t
  local work=$SCRATCH/$t art=$CAMPAIGN/$t log=$CAMPAIGN/$t.log
  mkdir -p "$corpus" "$work/corpus" "$work/merged" "$art"
  local before
  before=$(corpus_size "$corpus")
  find "$corpus" -maxdepth 1 -type f -exec cp -p -t "$work/corpus/" {} +

  # 1. Fuzz the scratch copy; libFuzzer adds what it finds there.
  local rc=0
  ASAN_OPTIONS=detect_leaks=1 "$bin" -max_total_time="$seconds" "${FUZZ_FLAGS[@]}" \
    -print_final_stats=1 -artifact_prefix="$art/" "$work/corpus" >"$log" 2>&1 || rc=$?
  local execs rate
  execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log")
  rate=$(awk '/stat::average_exec_per_sec/ {print $2}' "$log")
  local problem="-"
  if [[ $rc -ne 0 ]]; then
    problem=$(find "$art" -maxdepth 1 -type f \
      \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | head -n 1)
    [[ -n $problem ]] || problem="exit $rc, no reproducer: see $log"
  fi

  # 2. Minimise: the seeds first, as they are, then from everything the copy holds now
  # only the inputs that add coverage to them. libFuzzer's merge survives inputs that
  # crash, so a crash above does not lose what was found before it.
  local f
  for f in "$corpus"/*; do
    [[ -f $f ]] && ! is_generated "$f" && cp -p "$f" "$work/merged/"
  done
  if ! "$bin" -merge=1 "${FUZZ_FLAGS[@]}" "$work/merged" "$work/corpus" >>"$log" 2>&1; then
    [[ $problem != "-" ]] || problem="merge failed: see $log"
  else
    # 3. Replace the generated inputs in the repository with the merged ones.
    for f in "$corpus"/*; do
      [[ -f $f ]] && is_generated "$f" && rm -f "$f"
    done
    for f in "$work/merged"/*; do
      [[ -f $f ]] && is_generated "$f" && cp "$f" "$corpus/"
    done
  fi
  echo "$t ${execs:-0} ${rate:-0} $before $(corpus_size "$corpus") $problem" >"$CAMPAIGN/$t.result"
  rm -rf "$work"
}

echo "fuzz.sh: ${#targets[@]} targets, ${seconds}s each, $jobs at a time; logs in $CAMPAIGN"
running=0
for t in "${targets[@]}"; do
  if [[ $running -ge $jobs ]]; then
    wait -n || true
    running=$((running - 1))
  fi
  fuzz_one "$t" &
  running=$((running + 1))
done
wait

# The report, one row per target.
failed=0
total_files=0
total_bytes=0
printf '%-16s %12s %8s %18s %18s  %s\n' target executions exec/s "corpus before" \
  "corpus after" problem
for t in "${targets[@]}"; do
  if [[ ! -f $CAMPAIGN/$t.result ]]; then
    printf '%-16s %s\n' "$t" "no result: see $CAMPAIGN/$t.log"
    failed=1
    continue
  fi
  read -r name execs rate bf bb af ab problem <"$CAMPAIGN/$t.result"
  printf '%-16s %12s %8s %18s %18s  %s\n' "$name" "$execs" "$rate" "$bf files $bb B" \
    "$af files $ab B" "$problem"
  total_files=$((total_files + af))
  total_bytes=$((total_bytes + ab))
  [[ $problem == "-" ]] || failed=1
done
echo "corpora of these targets: $total_files files, $total_bytes bytes"
if [[ $failed -ne 0 ]]; then
  echo "fuzz.sh: a target failed; reproduce with: build/fuzz/tests/fuzz/fuzz_<target> <reproducer>" >&2
  exit 1
fi
