# common.sh - shared helpers for berth's end-to-end tests. Each test is a short bash
# script: source this, drive the real berth binary, assert, and exit 0 only if every
# assertion held. CTest passes BERTH (the binary) and BERTH_SOURCE_DIR.
set -euo pipefail

: "${BERTH:?BERTH must name the berth binary (run under ctest)}"
: "${BERTH_SOURCE_DIR:?BERTH_SOURCE_DIR must name the source tree}"
E2E=$BERTH_SOURCE_DIR/tests/e2e
GOLDEN=$E2E/golden
T=$(mktemp -d /tmp/berth-e2e.XXXXXX)
trap 'rm -rf "$T"' EXIT
FAILS=0

# fail MESSAGE: counts the failure; the last berth command's stderr (run) goes with it,
# so a failure in CI says why berth did what it did.
fail() {
  echo "FAIL: $*" >&2
  if [[ -n ${ERR:-} ]]; then printf '  (stderr of the last berth run: %s)\n' "${ERR:0:2000}" >&2; fi
  FAILS=$((FAILS + 1))
}
ok() { echo "ok   $*"; }

# run ARGS...: runs berth, leaving $OUT, $ERR and $RC.
run() {
  set +e
  "$BERTH" "$@" >"$T/out" 2>"$T/err"
  RC=$?
  set -e
  OUT=$(cat "$T/out")
  ERR=$(cat "$T/err")
}

# expect_eq NAME GOT WANT
expect_eq() {
  if [[ "$2" == "$3" ]]; then ok "$1"; else fail "$1: got [$2] want [$3]"; fi
}

# expect_contains NAME HAYSTACK NEEDLE
expect_contains() {
  if [[ "$2" == *"$3"* ]]; then ok "$1"; else fail "$1: [$2] does not contain [$3]"; fi
}

# expect_golden NAME FILE: $OUT must equal golden/FILE (BERTH_UPDATE_GOLDEN=1 rewrites).
expect_golden() {
  if [[ -n ${BERTH_UPDATE_GOLDEN:-} ]]; then
    printf '%s\n' "$OUT" >"$GOLDEN/$2"
  fi
  if diff -u "$GOLDEN/$2" <(printf '%s\n' "$OUT") >"$T/diff"; then
    ok "$1"
  else
    fail "$1: output differs from golden/$2:"; cat "$T/diff" >&2
  fi
}

# expect_bad_input NAME NEEDLE ARGS...: berth must exit 2 with exactly one stderr line
# containing NEEDLE, and print nothing on stdout.
expect_bad_input() {
  local name=$1 needle=$2
  shift 2
  run "$@"
  local lines
  lines=$(printf '%s' "$ERR" | grep -c '' || true)
  if [[ $RC != 2 ]]; then fail "$name: exit $RC, want 2 (stderr: $ERR)"; return; fi
  if [[ $lines != 1 ]]; then fail "$name: $lines stderr lines, want 1: $ERR"; return; fi
  if [[ -n $OUT ]]; then fail "$name: printed on stdout: $OUT"; return; fi
  expect_contains "$name" "$ERR" "$needle"
}

# copy_quickstart DEST: the quickstart pipeline, without the state and results that
# ./scripts/quickstart.sh leaves beside it in the source tree.
copy_quickstart() {
  cp -r "$BERTH_SOURCE_DIR/examples/quickstart" "$1"
  rm -rf "$1/.berth" "$1/results"
}

# need_slurm: the local Slurm (scripts/services.sh) must answer, or the test fails
# here saying how to start it. Exports SLURM_CONF.
need_slurm() {
  export SLURM_CONF=${SLURM_CONF:-/tmp/berth-services/slurm/slurm.conf}
  if ! timeout 10 scontrol ping >/dev/null 2>&1; then
    echo "FAIL: no Slurm answers (SLURM_CONF=$SLURM_CONF); start it with scripts/services.sh start" >&2
    exit 1
  fi
}

# need_sge: the local Grid Engine (scripts/services.sh) must answer, or the test fails
# here saying how to start it. Sources its environment when SGE_ROOT is not set.
need_sge() {
  if [[ -z ${SGE_ROOT:-} && -f /tmp/berth-services/sge/env.sh ]]; then
    # shellcheck disable=SC1091
    . /tmp/berth-services/sge/env.sh
  fi
  if ! command -v qsub >/dev/null || ! timeout 10 qstat >/dev/null 2>&1; then
    echo "FAIL: no Grid Engine answers; start it with scripts/services.sh start" >&2
    exit 1
  fi
}

# gone PID: the process no longer exists or is a zombie (killed, waiting for init to
# reap it), within 2 s of berth's exit — SIGKILL is delivered asynchronously.
gone() {
  for _ in $(seq 40); do
    local st
    st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null || true)
    [[ -z $st || $st == Z ]] && return 0
    sleep 0.05
  done
  return 1
}

# json EXPR: evaluates a Python expression over the JSON in $OUT (bound to j).
json() { python3 -c "import json,sys; j=json.load(sys.stdin); print($1)" <<<"$OUT"; }

# dom HTML: the page's DOM after its scripts ran in headless Chromium, in $DOM.
# Chromium builds differ in which headless mode they have: the new one first, then the
# old.
dom() {
  local mode
  for mode in --headless=new --headless; do
    if DOM=$(timeout -k 5 60 chromium "$mode" --no-sandbox --disable-gpu --disable-dev-shm-usage \
        --disable-background-networking --no-first-run --user-data-dir="$T/chromium" \
        --dump-dom "file://$1" 2>"$T/chromium.err") && [[ $DOM == *"</html>"* ]]; then
      return 0
    fi
  done
  fail "chromium --dump-dom $1 failed: $(tail -3 "$T/chromium.err")"
  DOM=""
}

finish() {
  if ((FAILS)); then echo "$FAILS assertion(s) failed" >&2; exit 1; fi
  echo "all assertions held"
}
