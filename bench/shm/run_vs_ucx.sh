#!/usr/bin/env bash
# librma's perftest tools over the shm provider against ucx_perftest with
# UCX's shared-memory transport (UCX_TLS=posix), side by side in one run.
#
#   bench/shm/run_vs_ucx.sh [-b BUILD_DIR] [-r ROUNDS] [-s "SIZES"] [-t "TESTS"] [-P]
#
# For each round, test and size it runs our pair (server + client, two
# processes on this host) and then UCX's pair, so both see the same load;
# it prints one table of medians over the rounds with the ratio, where a
# ratio >= 1 means librma is at least as fast (bandwidth and message rate:
# librma / UCX; latency: UCX / librma). Pairs:
#   rma_write_bw   ~ ucp_put_bw   (bandwidth MiB/s, message rate M/s)
#   rma_read_bw    ~ ucp_get      (bandwidth MiB/s, message rate M/s)
#   rma_atomic_bw  ~ ucp_fadd     (message rate M/s; 8 B)
#   rma_write_lat  ~ ucp_put_lat  (half round trip, median us)
#   rma_read_lat   ~ ucp_get -O 1 (median us: one READ at a time against UCX's
#                                   median time per get with one in flight)
#   rma_atomic_lat ~ ucp_fadd -O 1 (median us, likewise)
# Latency tests have a second row, the averages: ours is perftest's t_avg,
# UCX's the inverse of its overall message rate. Our t_typical and t_avg
# carry four decimals below 1 us (perftest's two would round a 24 ns median
# to 0.02).
# -P pins every server to CPU 0 and every client to CPU 1 (both tools).
# Unpinned, ucx_perftest's server, which spins, and its client share the
# CPUs as the scheduler decides: its 8 B get then took 22 ns where pinned
# it took 18 (ours 18 either way; our server sleeps in the kernel).
# Needs ucx_perftest (Debian ucx-utils). It asks CMake for the six tools
# (cmake --build BUILD --target ...) and builds nothing else. Every process
# runs under `timeout`; the load average is printed before and after.
set -euo pipefail

build=build/release
rounds=3
sizes="8 64 512 4096 65536 1048576"
tests="write_bw read_bw atomic_bw write_lat read_lat atomic_lat"
pin=0
while getopts "b:r:s:t:Ph" opt; do
  case "$opt" in
    b) build="$OPTARG" ;;
    r) rounds="$OPTARG" ;;
    s) sizes="$OPTARG" ;;
    t) tests="$OPTARG" ;;
    P) pin=1 ;;
    h) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
    *) echo "run_vs_ucx.sh: see -h" >&2; exit 2 ;;
  esac
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "run_vs_ucx.sh: -r '$rounds' is not a positive count" >&2; exit 2; }
command -v ucx_perftest >/dev/null || { echo "run_vs_ucx.sh: ucx_perftest not found (apt-get install ucx-utils)" >&2; exit 2; }
[[ -d "$build" ]] || { echo "run_vs_ucx.sh: -b '$build' is not a build directory (cmake --preset release)" >&2; exit 2; }
cmake --build "$build" -j2 --target rma_write_bw rma_read_bw rma_atomic_bw rma_write_lat rma_read_lat rma_atomic_lat >/dev/null
bin="$build/bench/perftest"

tmp=$(mktemp -d /tmp/rma-vs-ucx.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
port=$((20000 + $$ % 20000))

iters() {  # test size -> iterations
  local t="$1" s="$2"
  case "$t" in
    # Every run lasts about 20 ms or more on a fast host (2 ms runs, e.g.
    # 200000 8 B WRITEs at 90 M/s, measured warm-up and scheduler ticks
    # more than the transport: a row moved by 10 % between rounds).
    *_bw) if ((s >= 1048576)); then echo 10000; elif ((s >= 65536)); then echo 200000; else echo 5000000; fi ;;
    *) if ((s >= 1048576)); then echo 5000; elif ((s >= 65536)); then echo 100000; else echo 1000000; fi ;;
  esac
}

# Runs "server; client" with a fresh port; prints the client's output.
pair() {  # kind size iters [extra ucx_perftest arguments]
  local kind="$1" size="$2" n="$3" out="$tmp/out"
  local ucx_extra=("${@:4}")
  port=$((port + 1))
  local srv=() cli=()
  case "$kind" in
    rma_*)
      local extra=()
      [[ "$kind" == *_bw ]] && extra=(-N)  # no per-post timestamps (ucx_perftest keeps none per post either)
      srv=("$bin/$kind" --transport=shm --bind=127.0.0.1 -p "$port" -F -s "$size" -n "$n" "${extra[@]}")
      cli=("$bin/$kind" --transport=shm -p "$port" -F -s "$size" -n "$n" "${extra[@]}" 127.0.0.1) ;;
    ucp_*)
      srv=(env UCX_TLS=posix ucx_perftest -p "$port")
      cli=(env UCX_TLS=posix ucx_perftest 127.0.0.1 -p "$port" -t "$kind" -s "$size" -n "$n" -w 1000 -f "${ucx_extra[@]}") ;;
  esac
  if ((pin)); then srv=(taskset -c 0 "${srv[@]}"); cli=(taskset -c 1 "${cli[@]}"); fi
  timeout 120 "${srv[@]}" >"$tmp/srv" 2>&1 &
  local spid=$!
  sleep 0.3
  if ! timeout 120 "${cli[@]}" >"$out" 2>&1; then
    echo "run_vs_ucx.sh: failed: ${cli[*]}" >&2
    sed 's/^/  /' "$out" "$tmp/srv" >&2
  fi
  wait "$spid" 2>/dev/null || true
  cat "$out"
}

# Metric extraction: our perftest rows and ucx_perftest's final line.
ours_bw() { awk -v s="$1" '$1 == s && NF >= 5 {print $4, $5}' ; }          # MiB/s, Mpps
ours_lat() { awk -v s="$1" '$1 == s && NF >= 9 {print $5, $6}' ; }        # t_typical, t_avg us
ucx_line() { awk 'NF == 8 && $1 ~ /^[0-9]+$/ {print $2, $6, $8}' | tail -1; }  # 50%ile us, MiB/s, msg/s

declare -A val
record() { val["$1"]+="$2 "; }
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {if (NR==0) print "nan"; else print a[int((NR+1)/2)]}'; }

pinned=""
((pin)) && pinned=" (pinned: servers on CPU 0, clients on CPU 1)"
echo "load before: $(cat /proc/loadavg)$pinned"
for ((r = 1; r <= rounds; r++)); do
  for t in $tests; do
    for s in $sizes; do
      [[ "$t" == atomic_* && "$s" != 8 ]] && continue
      n=$(iters "$t" "$s")
      case "$t" in
        write_bw) ucx=ucp_put_bw ;; read_bw) ucx=ucp_get ;; atomic_bw) ucx=ucp_fadd ;;
        write_lat) ucx=ucp_put_lat ;; read_lat) ucx=ucp_get ;; atomic_lat) ucx=ucp_fadd ;;
      esac
      ours=$(pair "rma_$t" "$s" "$n")
      # The latency rows: UCX's stream test with one operation in flight,
      # its time per operation being a round trip as ours is.
      extra=()
      [[ "$t" == read_lat || "$t" == atomic_lat ]] && extra=(-O 1)
      theirs=$(pair "$ucx" "$s" "$n" "${extra[@]}" | ucx_line)
      if [[ "$t" == *_bw ]]; then
        read -r bw rate <<<"$(ours_bw "$s" <<<"$ours")"
        record "$t $s bw ours" "${bw:-nan}"; record "$t $s rate ours" "${rate:-nan}"
        read -r _ ubw urate <<<"$theirs"
        record "$t $s bw ucx" "${ubw:-nan}"
        record "$t $s rate ucx" "$(awk -v m="${urate:-nan}" 'BEGIN {printf "%.6f", m / 1e6}')"
      else
        read -r lat avg <<<"$(ours_lat "$s" <<<"$ours")"
        read -r ulat _ urate <<<"$theirs"
        record "$t $s lat ours" "${lat:-nan}"; record "$t $s lat ucx" "${ulat:-nan}"
        # UCX's average to the nanosecond: its time per operation is the
        # inverse of its overall message rate (its average column has three
        # decimals).
        record "$t $s avg ours" "${avg:-nan}"
        record "$t $s avg ucx" "$(awk -v m="${urate:-0}" 'BEGIN {if (m > 0) printf "%.6f", 1e6 / m; else print "nan"}')"
      fi
    done
  done
  echo "round $r done: $(cat /proc/loadavg)"
done
echo "load after: $(cat /proc/loadavg)"

printf '\n| test | size (B) | metric | librma shm | UCX posix | ratio (>= 1: librma at least as fast) |\n'
printf '| --- | ---: | --- | ---: | ---: | ---: |\n'
for t in $tests; do
  for s in $sizes; do
    [[ "$t" == atomic_* && "$s" != 8 ]] && continue
    if [[ "$t" == *_bw ]]; then metrics="bw rate"; else metrics="lat avg"; fi
    for m in $metrics; do
      o=$(median <<<"${val["$t $s $m ours"]:-}")
      u=$(median <<<"${val["$t $s $m ucx"]:-}")
      case "$m" in
        bw) unit="MiB/s"; ratio=$(awk -v o="$o" -v u="$u" 'BEGIN {if (u > 0) printf "%.2f", o / u; else print "n/a"}') ;;
        rate) unit="M msg/s"; ratio=$(awk -v o="$o" -v u="$u" 'BEGIN {if (u > 0) printf "%.2f", o / u; else print "n/a"}') ;;
        lat) unit="us (median)"; ratio=$(awk -v o="$o" -v u="$u" 'BEGIN {if (o > 0) printf "%.2f", u / o; else print "n/a"}') ;;
        avg) unit="us (average)"; ratio=$(awk -v o="$o" -v u="$u" 'BEGIN {if (o > 0) printf "%.3f", u / o; else print "n/a"}') ;;
      esac
      printf '| rma_%s | %s | %s | %s | %s | %s |\n' "$t" "$s" "$unit" "$o" "$u" "$ratio"
    done
  done
done
