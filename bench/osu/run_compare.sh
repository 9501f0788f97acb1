#!/usr/bin/env bash
# Runs our port of the OSU one-sided loops (bench/osu/osu_one_sided.c) with
# librma under rmarun and the same source built with Open MPI's mpicc under
# mpirun, round after round (librma, then Open MPI, ROUNDS times), and
# prints one table per test: bytes, the medians of the rounds and their
# ratio, then the machine's load average.
#   bench/osu/run_compare.sh [build_dir (default build/release)] [max_bytes (default 1048576)] [rounds (default 3)]
# librma runs with nothing set, as a user would on one machine: every peer
# is on this host, so the window is in shared memory and every operation
# takes the direct (load/store) path; RMA_OSU_PROVIDER=softroce (or shm)
# forces one provider instead (the endpoints' path). Open MPI runs its
# shared-memory one-sided component (OSU_MPI_OSC, default sm: --mca osc sm).
# OSU_TESTS="put_latency fop_latency" runs only those. Needs openmpi-bin /
# libopenmpi-dev (mpicc.openmpi, mpirun.openmpi).
set -euo pipefail
BUILD=${1:-build/release}
MAX=${2:-1048576}
ROUNDS=${3:-3}
RMARUN=$(find "$BUILD" -name rmarun -type f -perm -u+x | head -n1)
OSU="$BUILD/bench/osu/osu_one_sided"
if [ -z "$RMARUN" ] || [ ! -x "$OSU" ]; then
  echo "run_compare.sh: build rmarun and osu_one_sided in $BUILD first" >&2
  exit 2
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM
mpicc.openmpi -O2 -std=c99 -DOSU_WITH_MPI -o "$TMP/osu_mpi" "$(dirname "$0")/osu_one_sided.c"
rma_env=(env -u RMA_SOFTROCE_PORT -u RMA_PROVIDER)
label="librma (direct path)"
if [ -n "${RMA_OSU_PROVIDER:-}" ]; then
  rma_env=(env -u RMA_SOFTROCE_PORT RMA_PROVIDER="$RMA_OSU_PROVIDER")
  label="librma ($RMA_OSU_PROVIDER)"
fi
osc=${OSU_MPI_OSC:-sm}
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }
echo "load average before: $(cat /proc/loadavg)"
for t in ${OSU_TESTS:-put_latency get_latency put_bw put_rate acc_latency fop_latency cas_latency}; do
  for r in $(seq "$ROUNDS"); do
    "${rma_env[@]}" "$RMARUN" -n 2 "$OSU" "$t" "$MAX" | grep -v '^#' > "$TMP/rma.$r"
    mpirun.openmpi --allow-run-as-root --oversubscribe --mca osc "$osc" -np 2 "$TMP/osu_mpi" "$t" "$MAX" \
      2>/dev/null | grep -v '^#' > "$TMP/mpi.$r" || true
  done
  unit="latency us, lower is better"
  [ "$t" = put_bw ] && unit="MB/s, higher is better"
  [ "$t" = put_rate ] && unit="M puts/s at 8 B, higher is better"
  echo "## $t ($unit; medians of $ROUNDS rounds)"
  echo "| bytes | $label | Open MPI (osc $osc) | librma / Open MPI |"
  echo "|---|---|---|---|"
  for size in $(awk '{ print $1 }' "$TMP/rma.1"); do
    a=$(cat "$TMP"/rma.* | awk -v s="$size" '$1 == s { print $2 }' | median)
    b=$(cat "$TMP"/mpi.* | awk -v s="$size" '$1 == s { print $2 }' | median)
    ratio=$(awk -v a="$a" -v b="${b:-0}" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')
    echo "| $size | $a | ${b:--} | $ratio |"
  done
  echo
done
echo "load average after: $(cat /proc/loadavg)"
