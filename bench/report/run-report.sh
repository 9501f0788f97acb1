#!/usr/bin/env bash
# The performance report: librma's perftest-style tools side by side, in the
# same run, with the tools a user would otherwise pick on this machine, and a
# Markdown table of ratios computed pair by pair plus SVG plots.
#
#   bench/report/run-report.sh [-b BUILD_DIR] [-o OUT_DIR] [-s "SIZES"] [--vm] [--no-twohost] [-r ROUNDS]
#
# Pairs (ours / peer, both directions of the comparison on the same machine):
#   RDMA WRITE bandwidth  rma_write_bw (softroce over memif)  vs ucx_perftest ucp_put_bw (UCX_TLS=posix,cma,self)
#   RDMA WRITE bandwidth  rma_write_bw (softroce over memif)  vs ucx_perftest ucp_put_bw (UCX_TLS=tcp, loopback)
#   RDMA READ bandwidth   rma_read_bw  (softroce over memif)  vs ucx_perftest ucp_get    (shm and tcp)
#   WRITE latency         rma_write_lat (softroce over memif) vs ucx_perftest ucp_put_lat (shm and tcp)
#   with --vm, inside one soft-RoCE QEMU guest (scripts/softroce-vm):
#   RDMA WRITE bandwidth  rma_write_bw (softroce over memif)  vs Debian's ib_write_bw on the kernel's rxe
#   WRITE latency         rma_write_lat (softroce over memif) vs ib_write_lat on rxe
#   two hosts (two network namespaces joined by a veth pair; bench/twohost/run-twohost.sh,
#   ROUNDS rounds, default 3; needs root, skipped with --no-twohost):
#   WRITE / READ bandwidth, 8 B WRITE latency: ours over af_packet and af_xdp vs
#   ucx_perftest (UCX_TLS=tcp) and libfabric's tcp provider (fi_rma_loop)
#
# BUILD_DIR (default build/release) must hold bench/perftest/rma_*; OUT_DIR
# (default bench/report/results) receives REPORT.md, results.csv, load.csv
# (the load average just before each pair, with the pair's client command)
# and the SVG plots; the two-host pairs write OUT_DIR/twohost/ (results.csv,
# load.csv, TABLE.md), which the report includes with its own plots. Every
# process runs under `timeout`; servers are killed on exit.
# Installs ucx-utils and gnuplot-nox (Debian) when they are missing.
set -uo pipefail
invocation="bench/report/run-report.sh${*:+ $*}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="$root/build/release"
out="$here/results"
sizes="8 64 512 4096 32768 262144 1048576"
vm=0
twohost=1
twohost_rounds=3
usage() { sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    -b) build="$(cd "$2" && pwd)" || exit 2; shift 2 ;;
    -o) out="$2"; shift 2 ;;
    -s) sizes="$2"; shift 2 ;;
    --vm) vm=1; shift ;;
    --no-twohost) twohost=0; shift ;;
    -r) [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || { echo "run-report: -r needs a positive number of rounds, not '${2:-}'" >&2; exit 2; }
        twohost_rounds=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run-report: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
tools="$build/bench/perftest"
for t in rma_write_bw rma_read_bw rma_write_lat; do
  [[ -x "$tools/$t" ]] || { echo "run-report: $tools/$t is not built (cmake --build --preset release)" >&2; exit 2; }
done
for s in $sizes; do
  [[ "$s" =~ ^[1-9][0-9]*$ ]] || { echo "run-report: size '$s' is not a positive number" >&2; exit 2; }
done
# shellcheck source=../../scripts/lib/deps.sh
source "$root/scripts/lib/deps.sh"
# shellcheck source-path=SCRIPTDIR source=../lib/pair_args.sh
source "$here/../lib/pair_args.sh"
rma_install_deps ucx-utils gnuplot-nox >&2 || { echo "run-report: installing ucx-utils/gnuplot-nox failed" >&2; exit 1; }

mkdir -p "$out"
work="$(mktemp -d "${TMPDIR:-/tmp}/rma-report.XXXXXX")"
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

csv="$out/results.csv"
echo "transport,metric,tool,size,value" >"$csv"
loadcsv="$out/load.csv"
echo "time,load1,load5,load15,command" >"$loadcsv"
port=18700
failures=0

# iterations per size: enough to measure, bounded so the report takes minutes
iters_bw() { local s=$1; if (( s <= 4096 )); then echo 20000; elif (( s <= 65536 )); then echo 5000; else echo 500; fi; }
iters_lat() { echo 2000; }

record() { echo "$1,$2,$3,$4,$5" >>"$csv"; }

# Runs one server/client pair on loopback; prints the client's output.
pair() {  # pair SERVER_CMD... -- CLIENT_CMD...
  split_pair "$@"
  local server=("${pair_server[@]}") client=("${pair_client[@]}")
  log_load "$loadcsv" "${client[*]}"
  echo "run-report: load $pair_load before: ${client[*]}" >&2
  timeout 120 "${server[@]}" >"$work/server.log" 2>&1 &
  local spid=$!
  pids+=("$spid")
  sleep 0.5
  timeout 120 "${client[@]}" >"$work/client.log" 2>&1
  local rc=$?
  local i=0
  while kill -0 "$spid" 2>/dev/null && (( i < 50 )); do sleep 0.1; i=$((i + 1)); done
  kill "$spid" 2>/dev/null
  wait "$spid" 2>/dev/null
  cat "$work/client.log"
  return $rc
}

# perftest-style row: bytes iters peak avg rate -> column N
perftest_col() { awk -v c="$1" '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 5 {v=$c} END {if (v != "") print v}'; }
# ucx_perftest -f final line: iters p50 avg overall bw_avg bw_overall rate_avg rate_overall
ucx_col() { awk -v c="$1" '$1 ~ /^[0-9]+$/ && NF >= 8 {v=$c} END {if (v != "") print v}'; }

run_ours() {  # run_ours TOOL METRIC SIZE ITERS COLUMN
  local tool=$1 metric=$2 size=$3 n=$4 col=$5 v
  port=$((port + 1))
  v=$(pair "$tools/$tool" -s "$size" -n "$n" -p "$port" -- "$tools/$tool" -s "$size" -n "$n" -p "$port" 127.0.0.1 |
      perftest_col "$col")
  if [[ -n "$v" ]]; then record softroce-memif "$metric" "$tool" "$size" "$v"; else
    echo "run-report: $tool -s $size failed:" >&2; tail -n 5 "$work/client.log" >&2; failures=$((failures + 1)); fi
}

run_ucx() {  # run_ucx TLS_NAME TLS TEST METRIC SIZE ITERS COLUMN
  local name=$1 tls=$2 test=$3 metric=$4 size=$5 n=$6 col=$7 v
  port=$((port + 1))
  v=$(pair env UCX_TLS="$tls" ucx_perftest -p "$port" -- \
        env UCX_TLS="$tls" ucx_perftest 127.0.0.1 -p "$port" -t "$test" -s "$size" -n "$n" -w 100 -f |
      ucx_col "$col")
  if [[ -n "$v" ]]; then record "ucx-$name" "$metric" "ucx_perftest $test" "$size" "$v"; else
    echo "run-report: ucx_perftest $test ($tls) -s $size failed:" >&2; tail -n 5 "$work/client.log" >&2
    failures=$((failures + 1)); fi
}

echo "run-report: sizes $sizes; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for s in $sizes; do
  echo "run-report: size $s" >&2
  run_ours rma_write_bw write_bw "$s" "$(iters_bw "$s")" 4
  run_ours rma_read_bw read_bw "$s" "$(iters_bw "$s")" 4
  run_ours rma_write_lat write_lat "$s" "$(iters_lat)" 5
  for t in "shm posix,cma,self" "tcp tcp"; do
    set -- $t
    # ucx_perftest reports MB/s as 2^20 bytes per second, like our MiB/s.
    run_ucx "$1" "$2" ucp_put_bw write_bw "$s" "$(iters_bw "$s")" 5
    run_ucx "$1" "$2" ucp_get read_bw "$s" "$(iters_bw "$s")" 5
    run_ucx "$1" "$2" ucp_put_lat write_lat "$s" "$(iters_lat)" 2
  done
done

if [[ $vm -eq 1 ]]; then
  # Both sides in the same guest: our NIC between two processes over memif,
  # and the kernel's rxe with Debian's perftest.
  cat >"$work/in-guest.sh" <<'GUEST'
set -u
self=$(ip -4 -o addr show dev eth0 | awk '{print $4}' | cut -d/ -f1)
run() { timeout 120 "$@" >/tmp/srv.log 2>&1 & local p=$!; sleep 1; timeout 120 "$@" "$self" 2>&1; kill $p 2>/dev/null; wait $p 2>/dev/null; }
row() { awk -v c="$1" '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 5 {v=$c} END {print v}'; }
for s in $GUEST_SIZES; do
  echo "VMROW rxe,write_bw,ib_write_bw,$s,$(run ib_write_bw -d rxe0 -F -n 300 -s $s | row 4)"
  echo "VMROW rxe,write_lat,ib_write_lat,$s,$(run ib_write_lat -d rxe0 -F -n 300 -s $s | row 5)"
  echo "VMROW softroce-memif,write_bw,rma_write_bw,$s,$(run rma_write_bw -n 300 -s $s | row 4)"
  echo "VMROW softroce-memif,write_lat,rma_write_lat,$s,$(run rma_write_lat -n 300 -s $s | row 5)"
done
GUEST
  "$root/scripts/softroce-vm" --timeout 900 --add "$tools/rma_write_bw" --add "$tools/rma_write_lat" \
    --add "$work/in-guest.sh" --env "GUEST_SIZES=8 4096 65536" -- bash in-guest.sh >"$work/vm.log" 2>&1
  grep '^VMROW ' "$work/vm.log" | sed 's/^VMROW //' | while IFS=, read -r tr m tool s v; do
    [[ -n "$v" ]] && echo "vm-$tr,$m,$tool,$s,$v" >>"$csv"
  done
  grep -q '^VMROW ' "$work/vm.log" || { echo "run-report: the guest produced no results:" >&2; tail -n 20 "$work/vm.log" >&2; failures=$((failures + 1)); }
fi

twohost_note=""
if [[ $twohost -eq 1 ]]; then
  if [[ $(id -u) -ne 0 ]]; then
    twohost_note="skipped: the two-host pairs need root (network namespaces, AF_PACKET)"
    echo "run-report: two hosts $twohost_note" >&2
  else
    echo "run-report: two hosts over a veth pair ($twohost_rounds round(s)); load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    # run-twohost.sh logs the load before each of its pairs in twohost/load.csv.
    if ! "$root/bench/twohost/run-twohost.sh" -b "$build" -o "$out/twohost" -r "$twohost_rounds" -s "$sizes" >"$work/twohost.log" 2>&1; then
      echo "run-report: bench/twohost/run-twohost.sh failed:" >&2; tail -n 20 "$work/twohost.log" >&2
      failures=$((failures + 1))
    fi
  fi
else
  twohost_note="skipped (--no-twohost)"
fi

python3 "$here/make_report.py" --csv "$csv" --out "$out" --loadavg "$(cut -d' ' -f1-3 /proc/loadavg)" \
  --load-csv "$loadcsv" --twohost-dir "$out/twohost" --twohost-note "$twohost_note" \
  --command "$invocation" --failures "$failures" || exit 1
echo "run-report: wrote $out/REPORT.md ($failures measurement(s) failed)" >&2
exit $((failures > 0))
