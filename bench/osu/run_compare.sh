#!/bin/sh
# Runs our port of the OSU one-sided loops (bench/osu/osu_one_sided.c) with
# librma under rmarun (software RoCE NIC between 2 processes) and the same
# source built with Open MPI's mpicc under mpirun, and prints one table per
# test: bytes, librma, Open MPI.
#   bench/osu/run_compare.sh [build_dir (default build/release)] [max_bytes (default 1048576)]
# OSU_TESTS="put_latency fop_latency" runs only those. Needs openmpi-bin / libopenmpi-dev (mpicc.openmpi, mpirun.openmpi).
set -eu
BUILD=${1:-build/release}
MAX=${2:-1048576}
RMARUN=$(find "$BUILD" -name rmarun -type f -perm -u+x | head -n1)
OSU="$BUILD/bench/osu/osu_one_sided"
if [ -z "$RMARUN" ] || [ ! -x "$OSU" ]; then
  echo "run_compare.sh: build rmarun and osu_one_sided in $BUILD first" >&2
  exit 2
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM
mpicc.openmpi -O2 -std=c99 -DOSU_WITH_MPI -o "$TMP/osu_mpi" "$(dirname "$0")/osu_one_sided.c"
for t in ${OSU_TESTS:-put_latency get_latency put_bw acc_latency fop_latency cas_latency}; do
  env -u RMA_SOFTROCE_PORT RMA_PROVIDER=softroce "$RMARUN" -n 2 "$OSU" "$t" "$MAX" | grep -v '^#' > "$TMP/rma"
  mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 "$TMP/osu_mpi" "$t" "$MAX" | grep -v '^#' > "$TMP/mpi"
  unit="latency us"
  [ "$t" = put_bw ] && unit="MB/s"
  echo "## $t ($unit)"
  echo "| bytes | librma (softroce) | Open MPI |"
  echo "|---|---|---|"
  join "$TMP/rma" "$TMP/mpi" | awk '{ printf "| %s | %s | %s |\n", $1, $2, $3 }'
  echo
done
