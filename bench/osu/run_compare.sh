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
# OSU_TESTS="put_latency fop_latency" runs only those. OSU_ITERS (default
# 20000) iterations per size up to 8 KiB, a tenth above: the loops' own
# default of 2000 is 40 us of clock at 20 ns an operation, where one timer
# tick can move a mean by half. OSU_PIN=1 (default) pins rank R of either
# library to CPU R with taskset (Open MPI's own binding off, so both jobs
# are placed alike; rmarun does not bind); OSU_PIN=0 leaves placement to
# each launcher. Needs openmpi-bin / libopenmpi-dev (mpicc.openmpi,
# mpirun.openmpi).
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
iters=${OSU_ITERS:-20000}
case "$iters" in ''|*[!0-9]*) echo "run_compare.sh: OSU_ITERS must be a number ('$iters')" >&2; exit 2 ;; esac
# Rank R on CPU R: each launcher's local rank variable names R.
rma_pin=() mpi_pin=() mpi_bind=()
case "${OSU_PIN:-1}" in 0|1) ;; *) echo "run_compare.sh: OSU_PIN must be 0 or 1 ('$OSU_PIN')" >&2; exit 2 ;; esac
if [ "${OSU_PIN:-1}" = 1 ]; then
  rma_pin=(sh -c 'exec taskset -c "$RMA_LOCAL_RANK" "$0" "$@"')
  mpi_pin=(sh -c 'exec taskset -c "$OMPI_COMM_WORLD_LOCAL_RANK" "$0" "$@"')
  mpi_bind=(--bind-to none)
fi
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }
echo "load average before: $(cat /proc/loadavg); $iters iterations per size up to 8 KiB; pinned: ${OSU_PIN:-1}"
for t in ${OSU_TESTS:-put_latency get_latency put_bw put_rate acc_latency fop_latency cas_latency}; do
  for r in $(seq "$ROUNDS"); do
    "${rma_env[@]}" "$RMARUN" -n 2 "${rma_pin[@]}" "$OSU" "$t" "$MAX" "$iters" | grep -v '^#' > "$TMP/rma.$r"
    mpirun.openmpi --allow-run-as-root --oversubscribe "${mpi_bind[@]}" --mca osc "$osc" -np 2 \
      "${mpi_pin[@]}" "$TMP/osu_mpi" "$t" "$MAX" "$iters" 2>/dev/null | grep -v '^#' > "$TMP/mpi.$r" || true
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
