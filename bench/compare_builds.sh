#!/usr/bin/env bash
# Side by side: the same benchmarks from two release builds (a baseline
# commit and the current tree), interleaved round by round (A B, B A, ...)
# so machine noise falls on both alike. Prints medians and the ratio
# current / baseline for each metric (time: lower is better; rate and
# bandwidth: higher is better).
#
#   bench/compare_builds.sh -a BASE_BUILD -b CUR_BUILD [-r ROUNDS]
#
# What runs (each build must have these targets built):
#   rma_engine_bench   registration cache, self-provider put latency
#   rma_api_bench      put/get/fetch_and_op/accumulate through the API, on
#                      self and on softroce (in-process memif pair)
#   rma_write_bw / rma_write_lat / rma_read_bw / rma_atomic_lat
#                      perftest-style, two processes over softroce on memif
# Build a baseline (here the commit before a refactor) with:
#   git worktree add /tmp/base <commit>
#   cmake -S /tmp/base -B /tmp/base/build -DCMAKE_BUILD_TYPE=Release -DRMA_BUILD_TESTS=OFF
#   cmake --build /tmp/base/build -j2 --target rma_engine_bench rma_api_bench \
#     rma_write_bw rma_write_lat rma_read_bw rma_atomic_lat
set -euo pipefail

base="" cur="build/release" rounds=3
while getopts "a:b:r:h" opt; do
  case "$opt" in
    a) base="$OPTARG" ;;
    b) cur="$OPTARG" ;;
    r) rounds="$OPTARG" ;;
    *) sed -n '2,21p' "$0"; exit 2 ;;
  esac
done
[[ -n "$base" ]] || { echo "compare_builds: -a BASE_BUILD is required" >&2; exit 2; }
for b in "$base" "$cur"; do
  for t in bench/rma_engine_bench bench/api/rma_api_bench bench/perftest/rma_write_bw \
           bench/perftest/rma_write_lat bench/perftest/rma_read_bw bench/perftest/rma_atomic_lat; do
    [[ -x "$b/$t" ]] || { echo "compare_builds: $b/$t is not built" >&2; exit 1; }
  done
done

# shellcheck source=lib/perftest_pair.sh
source "$(dirname "$0")/lib/perftest_pair.sh"
perftest_pair_init
tmp="$pair_tmp"

# Appends "metric value" lines to $tmp/<label>.
record() { cat >>"$tmp/$1"; }

gbench() {  # label build binary filter env...
  local label="$1" build="$2" bin="$3" filter="$4"; shift 4
  env "$@" "$build/$bin" --benchmark_filter="$filter" --benchmark_format=json \
      --benchmark_min_time=0.2 2>/dev/null >"$tmp/gb.json"
  python3 - "$tmp/gb.json" "$*" <<'EOF' | record "$label"
import json, sys
env = sys.argv[2].replace("RMA_API_BENCH_PROVIDER=", "") or "engine"
text = open(sys.argv[1]).read()
for b in json.loads(text[text.index("{"):])["benchmarks"]:  # after the tool's banner line
    unit = b.get("time_unit", "ns")
    scale = {"ns": 1, "us": 1e3, "ms": 1e6}[unit]
    print(f"{b['name']}[{env}] ns {b['real_time'] * scale:.1f}")
EOF
}

perftest() {  # label build tool args...
  local label="$1" build="$2" tool="$3"; shift 3
  perftest_pair "$build/bench/perftest" "$tool" "$@" >"$tmp/out.log" || exit 1
  local s="$2"
  case "$tool" in
    *_bw) awk -v s="$s" -v t="$tool" '$1 == s && NF >= 5 {print t "[" s "B] MiB/s " $4; print t "[" s "B] Mmsg/s " $5}' \
            "$tmp/out.log" | record "$label" ;;
    *_lat) awk -v s="$s" -v t="$tool" '$1 == s && NF >= 9 {print t "[" s "B] us(typical) " $5; print t "[" s "B] us(avg) " $6}' \
            "$tmp/out.log" | record "$label" ;;
  esac
}

run_all() {  # label build
  gbench "$1" "$2" bench/rma_engine_bench 'BM_Rcache|BM_SelfPut'
  gbench "$1" "$2" bench/api/rma_api_bench 'BM_(Engine_Write|Api_Put|Api_Get|Api_FetchAndOp|Api_AccumulateDoubleSum)/' RMA_API_BENCH_PROVIDER=self
  gbench "$1" "$2" bench/api/rma_api_bench 'BM_(Engine_Write|Api_Put|Api_Get|Api_FetchAndOp)/' RMA_API_BENCH_PROVIDER=softroce
  perftest "$1" "$2" rma_write_bw -s 8 -n 50000 -m 4096
  perftest "$1" "$2" rma_write_bw -s 65536 -n 5000 -m 4096
  perftest "$1" "$2" rma_read_bw -s 65536 -n 5000 -m 4096
  perftest "$1" "$2" rma_write_lat -s 8 -n 20000 -m 4096
  perftest "$1" "$2" rma_atomic_lat -s 8 -n 20000 -m 4096
}

for ((k = 0; k < rounds; ++k)); do
  if (( k % 2 == 0 )); then run_all base "$base"; run_all cur "$cur"
  else run_all cur "$cur"; run_all base "$base"; fi
done

echo "side by side: baseline $base vs current $cur, medians of $rounds interleaved rounds" \
     "($(date -u +%F), load average $(cut -d' ' -f1-3 /proc/loadavg))"
echo
python3 - "$tmp/base" "$tmp/cur" <<'EOF'
import statistics, sys
def load(p):
    d = {}
    for line in open(p):
        name, unit, v = line.rsplit(None, 2)
        d.setdefault((name, unit), []).append(float(v))
    return d
a, b = load(sys.argv[1]), load(sys.argv[2])
print("| benchmark | unit | baseline | current | current / baseline |")
print("| --- | --- | ---: | ---: | ---: |")
for key in a:
    if key not in b:
        continue
    ma, mb = statistics.median(a[key]), statistics.median(b[key])
    better = "lower" if key[1].startswith(("ns", "us")) else "higher"
    print(f"| {key[0]} | {key[1]} ({better} is better) | {ma:.4g} | {mb:.4g} | {mb / ma if ma else float('nan'):.3f} |")
EOF
