#!/usr/bin/env bash
# services.sh start|stop|status - the real services berth's tests use, all local, all
# started by the scripts in scripts/services (see its README.md):
#   slurm  a Slurm cluster of 4 emulated nodes n1..n4, 2 CPUs each
#          (SLURM_CONF=/tmp/berth-services/slurm/slurm.conf)
#   sge    a Grid Engine with the parallel environment "mpi"
#          (. /tmp/berth-services/sge/env.sh)
#   swift  OpenStack Swift's S3 API on 127.0.0.1:8080, which checks SigV4 and refuses
#          conditional PUTs
#   s3     s3rver on 127.0.0.1:4568, which ignores If-None-Match
# Their packages come from scripts/install-deps.sh; these scripts install nothing.
#
#   start   (re)starts all four; fails at the first that does not come up
#   stop    stops all four (each by its own pid files); never fails
#   status  says which are up; exit 0 only when all are
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
S=$ROOT/scripts/services

case "${1:-}" in
  start)
    T0=$(date +%s)
    SLURM_NODES=4 SLURM_NODE_CPUS=2 "$S/slurm.sh" start
    "$S/sge.sh" start
    "$S/swift.sh" start
    "$S/s3.sh" start
    echo "[services] all up in $(($(date +%s) - T0))s"
    ;;
  stop)
    for s in slurm sge swift s3; do "$S/$s.sh" stop || true; done
    ;;
  status)
    rc=0
    for s in slurm sge swift s3; do "$S/$s.sh" status || rc=1; done
    exit $rc
    ;;
  *) echo "usage: services.sh start|stop|status" >&2; exit 2 ;;
esac
