#!/usr/bin/env bash
# The mixed soak: N ranks (rmarun) run every RMA API operation against every
# rank over the software RoCE NIC (memif mesh) with injected loss, each
# result checked, for a given time; every interval the script records each
# rank's RSS and the NIC's counters (rma_info --counters), and at the end it
# says whether memory and the error counters stayed flat.
#
#   bench/soak/run-soak.sh [-b BUILD_DIR] [-m MINUTES] [-l LOSS] [-n RANKS] [-i INTERVAL_S]
#
# Defaults: build/release, 30 minutes, loss 0.01 (1 %), 2 ranks, 60 s.
# Prints a Markdown table (one row per interval and rank) and a verdict:
# RSS flat (the last sample within 2 MiB or 5 % of the first sample past
# warm-up: the first third of the run, at least one interval, in which
# pools, caches and malloc arenas reach their working size; the growth
# during warm-up is printed too), no malformed frames, ICRC errors or error
# completions, every counter reconciled by the ranks. Exit 0 when all hold.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$root/build/release" minutes=30 loss=0.01 ranks=2 interval=60
while getopts "b:m:l:n:i:h" o; do
  case "$o" in
    b) build="$OPTARG" ;; m) minutes="$OPTARG" ;; l) loss="$OPTARG" ;;
    n) ranks="$OPTARG" ;; i) interval="$OPTARG" ;;
    h) sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) exit 2 ;;
  esac
done
build="$(cd "$build" 2>/dev/null && pwd)" || { echo "run-soak: no build directory $build" >&2; exit 2; }
for t in tools/rmarun/rmarun tools/rma_info bench/soak/rma_soak; do
  [[ -x "$build/$t" ]] || { echo "run-soak: $build/$t is missing: build it first (cmake --build $build --target rma_soak rmarun rma_info)" >&2; exit 2; }
done
out="$(mktemp -d "${TMPDIR:-/tmp}/rma-soak.XXXXXX")"
stats_dir="$out/stats"
mkdir -p "$stats_dir"
seconds=$((minutes * 60))
echo "soak: $ranks ranks, $minutes min, loss $loss, samples every ${interval}s; logs in $out"

RMA_PROVIDER=softroce RMA_SOFTROCE_LOSS="$loss" RMA_STATS=shm RMA_STATS_DIR="$stats_dir" \
  "$build/tools/rmarun/rmarun" -n "$ranks" --timeout $((seconds + 600)) \
  "$build/bench/soak/rma_soak" "$seconds" "$interval" >"$out/job.log" 2>&1 &
job=$!
trap 'kill $job 2>/dev/null; wait $job 2>/dev/null' EXIT

counter() {  # counter NAME FILE: the sum of NAME over every device and QP section
  awk -v n="$1" '$1 == n { s += $2 } END { print s + 0 }' "$2"
}
echo
echo "| t (s) | rank pid | RSS (KiB) | retransmitted | retry timeouts | loss injected | NAKs received | malformed | ICRC errors |"
echo "|---|---|---|---|---|---|---|---|---|"
declare -A start_rss first_rss last_rss
warm_up=$(( seconds / 3 > interval ? seconds / 3 : interval ))
sample=0
while kill -0 "$job" 2>/dev/null; do
  sleep "$interval"
  kill -0 "$job" 2>/dev/null || break
  sample=$((sample + 1))
  # The ranks: processes whose command line starts with the soak program
  # (rmarun's own names it only as an argument).
  for pid in $(pgrep -f "^$build/bench/soak/rma_soak " | sort -u); do
    rss="$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null)"
    [[ -n "$rss" ]] || continue
    RMA_STATS_DIR="$stats_dir" "$build/tools/rma_info" --counters --pid "$pid" >"$out/c.$pid" 2>/dev/null || continue
    grep -q retransmitted_packets "$out/c.$pid" || continue   # the rank is finishing: no counters to read
    naks=$(grep -E '^ *naks_received_' "$out/c.$pid" | awk '{ s += $2 } END { print s + 0 }')
    echo "| $((sample * interval)) | $pid | $rss | $(counter retransmitted_packets "$out/c.$pid") | $(counter retry_timeouts "$out/c.$pid") | $(counter link_tx_loss_injected "$out/c.$pid") | $naks | $(counter malformed_frames_dropped "$out/c.$pid") | $(counter rx_icrc_errors "$out/c.$pid") |"
    [[ -n "${start_rss[$pid]:-}" ]] || start_rss[$pid]=$rss
    if (( sample * interval >= warm_up )) && [[ -z "${first_rss[$pid]:-}" ]]; then first_rss[$pid]=$rss; fi
    last_rss[$pid]=$rss
    cp "$out/c.$pid" "$out/last.$pid"
  done
done
wait "$job"; rc=$?
trap - EXIT
echo
grep -E '^soak rank [0-9]+: done' "$out/job.log" || true
verdict=0
if [[ $rc -ne 0 ]]; then
  echo "soak: the job failed (exit $rc):"; tail -n 20 "$out/job.log"; verdict=1
fi
for pid in "${!first_rss[@]}"; do
  a=${first_rss[$pid]} b=${last_rss[$pid]}
  growth=$((b - a))
  if (( growth > 2048 && growth * 20 > a )); then
    echo "soak: rank pid $pid grew from $a KiB (past warm-up, ${warm_up}s) to $b KiB (not flat)"; verdict=1
  else
    echo "soak: rank pid $pid RSS ${start_rss[$pid]} KiB at the first sample, $a KiB past warm-up (${warm_up}s), $b KiB at the end (flat)"
  fi
  for c in malformed_frames_dropped rx_icrc_errors; do
    v=$(counter "$c" "$out/last.$pid")
    (( v == 0 )) || { echo "soak: rank pid $pid counted $v $c"; verdict=1; }
  done
done
(( sample > 0 )) || { echo "soak: no sample was taken (the run was shorter than one interval)"; verdict=1; }
echo "soak: $([[ $verdict -eq 0 ]] && echo PASSED || echo FAILED)"
exit "$verdict"
