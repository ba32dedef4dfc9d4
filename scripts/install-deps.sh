#!/usr/bin/env bash
# install-deps.sh - install everything berth builds and tests with, from Debian 12's
# packages. Idempotent: skips apt entirely when every package is already installed.
set -euo pipefail

PKGS=(
  # toolchain
  cmake ninja-build g++ clang libclang-rt-14-dev pkg-config git
  # libraries berth links
  libcli11-dev libtomlplusplus-dev nlohmann-json3-dev libfmt-dev libhwloc-dev
  libssl-dev libsqlite3-dev libcurl4-openssl-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev python3 libxml2-utils hwloc slurm-client
  # the S3 servers the s3:// store is tested against (scripts/services.sh)
  swift-proxy swift-account swift-container swift-object curl
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
if ((${#missing[@]} == 0)); then
  exit 0
fi

SUDO=
if [[ $(id -u) != 0 ]]; then SUDO=sudo; fi
echo "[install-deps] installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
