#!/usr/bin/env bash
# install-deps.sh - install everything berth builds, tests and benchmarks with, from
# Debian 12's packages (and s3rver from the npm registry, which the S3 tests serve
# through scripts/services). Idempotent: skips apt entirely when every package is
# already installed. Needs root or sudo for apt.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)

PKGS=(
  # toolchain; llvm for llvm-symbolizer: sanitizer reports name their functions, and
  # the ThreadSanitizer pass's one suppression (a race inside libpmix) matches by name
  cmake ninja-build g++ clang libclang-rt-14-dev llvm pkg-config git
  # libraries berth links
  libcli11-dev libtomlplusplus-dev nlohmann-json3-dev libfmt-dev libhwloc-dev
  libssl-dev libsqlite3-dev libcurl4-openssl-dev libpmix-dev
  # the Python module and its tests
  python3 python3-dev pybind11-dev python3-pytest
  # tests and benchmarks: GoogleTest, Google Benchmark, the tools e2e tests drive
  libgtest-dev libgmock-dev libbenchmark-dev libxml2-utils hwloc procps man-db
  ca-certificates curl chromium ninja-build make parallel
  # MPI programs compiled and run at test time, and the launchers berth is compared with
  openmpi-bin libopenmpi-dev mpich libmpich-dev
  # the services the tests use (scripts/services): Slurm, Grid Engine, Swift's S3 API
  munge slurmctld slurmd slurm-client
  gridengine-master gridengine-exec gridengine-client
  swift-proxy swift-account swift-container swift-object
)

missing=()
for p in "${PKGS[@]}"; do
  if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]]; then
    missing+=("$p")
  fi
done
# s3rver runs on Node.js with npm: Debian's packages only when no node/npm is on PATH
# (a machine with another Node.js distribution has npm without Debian's package, and
# Debian's npm would conflict with it).
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  missing+=(nodejs npm)
fi

SUDO=
if [[ $(id -u) != 0 ]]; then SUDO=sudo; fi
host=$(hostname -s 2>/dev/null || cat /proc/sys/kernel/hostname)
# Grid Engine resolves this host's name (its set-up fails the install when it cannot:
# "sge_gethostbyname failed") and the loopback address its clients connect from
# ("can't resolve client IP address"). A machine whose /etc/hosts lacks either line
# (a fresh debootstrap root, some containers) gets the one Debian's installer writes.
if ! getent hosts localhost >/dev/null 2>&1 || ! getent hosts 127.0.0.1 >/dev/null 2>&1; then
  echo "[install-deps] 127.0.0.1 does not resolve: adding '127.0.0.1 localhost' to /etc/hosts"
  echo "127.0.0.1 localhost" | $SUDO tee -a /etc/hosts >/dev/null
fi
if ! getent hosts "$host" >/dev/null 2>&1; then
  echo "[install-deps] $host does not resolve: adding '127.0.1.1 $host' to /etc/hosts"
  echo "127.0.1.1 $host" | $SUDO tee -a /etc/hosts >/dev/null
fi
if ((${#missing[@]})); then
  echo "[install-deps] installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # Grid Engine's packages ask for a cell and a master host: answer before they ask.
  for p in gridengine-common gridengine-master gridengine-exec gridengine-client; do
    printf '%s shared/gridengineconfig boolean true\n%s shared/gridenginecell string default\n%s shared/gridenginemaster string %s\n' \
      "$p" "$p" "$p" "$host"
  done | $SUDO debconf-set-selections
  # apt's output goes to a log, shown when it fails: a failing package says why there.
  log=$(mktemp /tmp/berth-install-deps.XXXXXX)
  if ! { $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq &&
         $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
           "${missing[@]}"; } >"$log" 2>&1; then
    echo "[install-deps] apt-get failed; the end of its output ($log):" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
  rm -f "$log"
fi

# s3rver, pinned, into the folder scripts/services/s3.sh serves it from.
"$ROOT/scripts/services/s3.sh" install
