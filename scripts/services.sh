#!/usr/bin/env bash
# services.sh start|stop - the real services berth's tests use: a Slurm cluster of 4
# emulated nodes, a Grid Engine with a parallel environment, and two S3 servers for the
# s3:// store (OpenStack Swift's S3 API on 127.0.0.1:8080, which checks SigV4 and
# refuses conditional PUTs; s3rver on 127.0.0.1:4568, which ignores If-None-Match), all
# local. The scripts that start them live in shared/services (beside the repository,
# or where BERTH_SHARED says).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${BERTH_SHARED:-$ROOT/../shared}
S=$SHARED/services
[[ -x $S/start-slurm.sh || -f $S/start-slurm.sh ]] || { echo "services.sh: no $S/start-slurm.sh" >&2; exit 1; }

case "${1:-}" in
  start)
    SLURM_NODES=4 SLURM_NODE_CPUS=2 bash "$S/start-slurm.sh"
    bash "$S/start-sge.sh"
    bash "$S/start-swift-s3.sh"
    bash "$S/start-s3.sh"
    ;;
  stop)
    bash "$S/stop-slurm.sh" --quiet || true
    bash "$S/stop-sge.sh" --quiet || true
    bash "$S/stop-swift-s3.sh" --quiet || true
    bash "$S/stop-s3.sh" --quiet || true
    ;;
  *) echo "usage: services.sh start|stop" >&2; exit 2 ;;
esac
