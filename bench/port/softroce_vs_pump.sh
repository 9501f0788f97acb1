#!/usr/bin/env bash
# The software RoCE NIC against its own link, side by side in one run: for
# every message size, RDMA WRITE and RDMA READ bandwidth and message rate
# (rma_write_bw / rma_read_bw, two processes over net_memif through the
# softroce provider, path MTU 4096), then the raw frame throughput of the
# same kind of memif link (rma_frame_pump) with frames of the size the RDMA
# run puts on the wire (min(size, 4096) payload + 58 B of RoCE headers), and
# 8 B RDMA WRITE latency. Prints a Markdown table with the ratio
#   RDMA WRITE payload throughput / raw link payload throughput
# per size and RDMA WRITE message rate / raw link frame rate; then 8 B RDMA
# WRITE latency against the raw link's half round trip (rma_frame_pump
# --pingpong with 8 B frames of payload, the same memif link).
#
#   bench/port/softroce_vs_pump.sh [-b BUILD_DIR] [-s "SIZES"] [-D SECONDS | -n ITERS] [-c PUMP_FRAMES]
#                                  [-r REPEATS] [-q QPS] [-l POST_LIST] [-P]
#
# BUILD_DIR defaults to build/release (build rma_write_bw rma_read_bw
# rma_write_lat rma_frame_pump there first). The bw tools run for SECONDS
# each (perftest's -D, default 2: a fixed count of 8 B messages was over in
# 40 ms, and single runs swung by a third); -n gives them a message count
# instead. Each measurement is repeated
# REPEATS times (default 3) and the median is reported: runs on a shared
# 2-vCPU machine vary a lot. -q and -l go to rma_write_bw / rma_read_bw as
# perftest's -q (QPs) and -l (post list; CQ moderation becomes its size).
# -P pins every pair to two CPUs (server / receiver on CPU 0, client / sender
# on CPU 1), the raw link's as the RDMA tools': on a shared machine two
# busy-polling processes that land on one core measure the scheduler.
set -euo pipefail

build=build/release
sizes="8 64 512 4096 65536 1048576"
iters=""
secs=2
pump_frames=""
repeats=3
qps=1
post_list=1
pin=0
while getopts "b:s:D:n:c:r:q:l:Ph" opt; do
  case "$opt" in
    b) build="$OPTARG" ;;
    s) sizes="$OPTARG" ;;
    D) secs="$OPTARG" ;;
    n) iters="$OPTARG" ;;
    c) pump_frames="$OPTARG" ;;
    r) repeats="$OPTARG" ;;
    q) qps="$OPTARG" ;;
    l) post_list="$OPTARG" ;;
    P) pin=1 ;;
    *) sed -n '2,27p' "$0"; exit 2 ;;
  esac
done
bw_opts=(-q "$qps" -l "$post_list")
pump_pin=()
if (( pin )); then
  export PERFTEST_PAIR_SERVER_CPU=0 PERFTEST_PAIR_CLIENT_CPU=1
  pump_pin=(--cpus 1,0)
fi

bin="$build/bench/perftest"
pump="$build/bench/port/rma_frame_pump"
for t in "$bin/rma_write_bw" "$bin/rma_read_bw" "$bin/rma_write_lat" "$pump"; do
  if [[ ! -x "$t" ]]; then
    echo "softroce_vs_pump: $t not built (cmake --build $build --target rma_write_bw rma_read_bw rma_write_lat rma_frame_pump)" >&2
    exit 1
  fi
done

# shellcheck source=../lib/perftest_pair.sh
source "$(dirname "$0")/../lib/perftest_pair.sh"
perftest_pair_init
tmp="$pair_tmp"

median() { sort -g | awk '{v[NR]=$1} END {if (NR == 0) print "nan"; else print v[int((NR + 1) / 2)]}'; }

# Runs a perftest-style tool as server and client; prints the client's output.
perftest() { perftest_pair "$bin" "$@"; }

# "MiB/s Mpps" of a bandwidth run's result line.
bw_of() { awk -v s="$1" '$1 == s && NF >= 5 {print $4, $5}' ; }


declare -A wbw wmr rbw rmr pgb pmf
for s in $sizes; do
  if [[ -n "$iters" ]]; then run=(-n "$iters"); else run=(-D "$secs"); fi
  frame_payload=$(( s < 4096 ? s : 4096 ))
  frames="${pump_frames:-$(( 2000000000 / (frame_payload + 2000) ))}"
  (( frames > 2000000 )) && frames=2000000
  : >"$tmp/w"; : >"$tmp/wm"; : >"$tmp/r"; : >"$tmp/rm"; : >"$tmp/p"; : >"$tmp/pm"
  for ((k = 0; k < repeats; ++k)); do
    perftest rma_write_bw -s "$s" "${run[@]}" -m 4096 "${bw_opts[@]}" | bw_of "$s" >"$tmp/line"
    read -r bw mr <"$tmp/line"; echo "$bw" >>"$tmp/w"; echo "$mr" >>"$tmp/wm"
    perftest rma_read_bw -s "$s" "${run[@]}" -m 4096 "${bw_opts[@]}" | bw_of "$s" >"$tmp/line"
    read -r bw mr <"$tmp/line"; echo "$bw" >>"$tmp/r"; echo "$mr" >>"$tmp/rm"
    "$pump" --size "$frame_payload" --count "$frames" "${pump_pin[@]}" >"$tmp/pump.log" 2>&1 || { cat "$tmp/pump.log" >&2; exit 1; }
    # "rx payload P B frame F B: a/b frames in T s: X Mframes/s, payload Y GB/s, ..."
    sed -n 's/.*: \([0-9.]*\) Mframes\/s, payload \([0-9.]*\) GB\/s.*/\1 \2/p' "$tmp/pump.log" >"$tmp/line"
    read -r mf gb <"$tmp/line"; echo "$gb" >>"$tmp/p"; echo "$mf" >>"$tmp/pm"
  done
  wbw[$s]="$(median <"$tmp/w")"; wmr[$s]="$(median <"$tmp/wm")"
  rbw[$s]="$(median <"$tmp/r")"; rmr[$s]="$(median <"$tmp/rm")"
  pgb[$s]="$(median <"$tmp/p")"; pmf[$s]="$(median <"$tmp/pm")"
done

: >"$tmp/lat"; : >"$tmp/plat"
for ((k = 0; k < repeats; ++k)); do
  perftest rma_write_lat -s 8 -n 20000 -m 4096 |
    awk '$1 == 8 && NF >= 9 {print $5, $6}' >>"$tmp/lat"
  "$pump" --pingpong --size 8 --count 20000 "${pump_pin[@]}" >"$tmp/pump.log" 2>&1 || { cat "$tmp/pump.log" >&2; exit 1; }
  # "pingpong ...: half round trip typical X us, average Y us"
  sed -n 's/.*half round trip typical \([0-9.]*\) us, average \([0-9.]*\) us.*/\1 \2/p' "$tmp/pump.log" >>"$tmp/plat"
done
lat_typ="$(awk '{print $1}' "$tmp/lat" | median)"
lat_avg="$(awk '{print $2}' "$tmp/lat" | median)"
plat_typ="$(awk '{print $1}' "$tmp/plat" | median)"
plat_avg="$(awk '{print $2}' "$tmp/plat" | median)"

echo "softroce over memif vs the raw memif link (medians of $repeats; $(date -u '+%F %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg); bw tools with -q $qps -l $post_list; pinned: $( ((pin)) && echo yes || echo no))"
echo
echo "| size | WRITE MiB/s | WRITE Mmsg/s | READ MiB/s | READ Mmsg/s | link frame payload | link Mframes/s | link payload MiB/s | WRITE / link payload | WRITE msg / link frames | READ / link payload |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for s in $sizes; do
  fp=$(( s < 4096 ? s : 4096 ))
  awk -v s="$s" -v fp="$fp" -v w="${wbw[$s]}" -v wm="${wmr[$s]}" -v r="${rbw[$s]}" -v rm="${rmr[$s]}" \
      -v g="${pgb[$s]}" -v m="${pmf[$s]}" 'BEGIN {
    link = g * 1e9 / 1048576;  # GB/s -> MiB/s
    ratio = link > 0 ? 100 * w / link : 0
    rratio = link > 0 ? 100 * r / link : 0
    mratio = m > 0 ? 100 * wm / m : 0
    printf "| %d | %.1f | %.4f | %.1f | %.4f | %d B | %.3f | %.1f | %.0f %% | %.0f %% | %.0f %% |\n", s, w, wm, r, rm, fp, m, link, ratio, mratio, rratio
  }'
done
echo
awk -v t="$lat_typ" -v a="$lat_avg" -v pt="$plat_typ" -v pa="$plat_avg" 'BEGIN {
  printf "8 B RDMA WRITE latency (half round trip): typical %s us, average %s us; raw link ping-pong (8 B payload, half round trip): typical %s us, average %s us; ratio typical %.2fx, average %.2fx\n", t, a, pt, pa, (pt > 0 ? t / pt : 0), (pa > 0 ? a / pa : 0)
}'
