#!/usr/bin/env bash
# Runs the OSU-style OpenSHMEM benchmark (shmem_osu.c) with librma and with
# Open MPI's oshmem on this machine, round after round (librma, then oshmem,
# ROUNDS times), and prints one table: each test and size, the medians of
# librma's and oshmem's values and their ratio (latency: librma / oshmem,
# lower is better for librma; bandwidth and rates: librma / oshmem, higher
# is better), then the load average. Also prints SHMEM's put + quiet at 8 B
# beside the engine's own post + poll of the same 8-byte WRITE.
#   bench/shmem/run_vs_oshmem.sh [build-dir (default build/release)] [iterations (default 2000)] [rounds (default 3)]
# Needs: the build dir's shmem_osu and rmarun (cmake --build --preset release
# --target shmem_osu rmarun), Open MPI's oshcc/oshrun (openmpi-bin,
# libopenmpi-dev). librma runs with nothing set, as a user would on one
# machine: both PEs on this host, so heap transfers and AMOs take the direct
# path (RMA_SHMEM_BENCH_PROVIDER=softroce forces one provider instead);
# oshmem runs over its default UCX transport (shared memory on one machine).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-build/release}"
iters="${2:-2000}"
rounds="${3:-3}"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/shmem-osu.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
for tool in oshcc oshrun; do
  command -v "/usr/bin/$tool" >/dev/null || { echo "run_vs_oshmem.sh: /usr/bin/$tool missing (apt-get install openmpi-bin libopenmpi-dev)" >&2; exit 2; }
done
[[ -x "$build/bench/shmem/shmem_osu" ]] || { echo "run_vs_oshmem.sh: $build/bench/shmem/shmem_osu not built" >&2; exit 2; }
rma_env=(env -u RMA_SOFTROCE_PORT -u RMA_PROVIDER)
label="direct path (nothing set)"
if [[ -n "${RMA_SHMEM_BENCH_PROVIDER:-}" ]]; then
  rma_env=(env -u RMA_SOFTROCE_PORT RMA_PROVIDER="$RMA_SHMEM_BENCH_PROVIDER")
  label="RMA_PROVIDER=$RMA_SHMEM_BENCH_PROVIDER"
fi
/usr/bin/oshcc -O2 -std=gnu11 "$here/shmem_osu.c" -o "$tmp/shmem_osu_oshmem"
echo "load average before: $(cat /proc/loadavg)"
for r in $(seq "$rounds"); do
  echo "== round $r: librma ($build, $label, rmarun -n 2), then Open MPI oshmem (oshrun -np 2)"
  "${rma_env[@]}" "$build/tools/rmarun/rmarun" -n 2 --timeout 900 "$build/bench/shmem/shmem_osu" "$iters" \
    2>/dev/null | grep -E '^[a-z_]+ [0-9]+ ' >"$tmp/librma.$r"
  # oshmem 4.1.4 crashes in shmem_finalize on this machine after the results
  # are printed; the exit status is ignored, the numbers are kept.
  /usr/bin/oshrun --allow-run-as-root --oversubscribe -np 2 "$tmp/shmem_osu_oshmem" "$iters" 2>/dev/null |
    grep -E '^[a-z_]+ [0-9]+ ' >"$tmp/oshmem.$r" || true
done
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }
printf '\n| test | size (B) / PEs | librma | oshmem | librma / oshmem |\n| --- | --- | --- | --- | --- |\n'
awk '$1 !~ /^(engine|shmem)_put_lat$/ { print $1, $2, $4 }' "$tmp/librma.1" | while read -r test size unit; do
  a="$(cat "$tmp"/librma.* | awk -v t="$test" -v s="$size" '$1 == t && $2 == s { print $3 }' | median)"
  b="$(cat "$tmp"/oshmem.* | awk -v t="$test" -v s="$size" '$1 == t && $2 == s { print $3 }' | median)"
  ratio="$(awk -v a="$a" -v b="${b:-0}" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')"
  echo "| $test | $size | $a $unit | ${b:--} ${b:+$unit} | $ratio |"
done
# The engine baseline and SHMEM's put+quiet at 8 B, measured interleaved
# (three pairs per round): medians over every round.
eng="$(cat "$tmp"/librma.* | awk '$1 == "engine_put_lat" { print $3 }' | median)"
put="$(cat "$tmp"/librma.* | awk '$1 == "shmem_put_lat" { print $3 }' | median)"
if [[ -n "$eng" && -n "$put" ]]; then
  awk -v e="$eng" -v p="$put" 'BEGIN { printf "\nSHMEM putmem+quiet at 8 B: %.3f us; the engine'"'"'s post+poll of an 8-byte WRITE on the same connection: %.3f us (SHMEM / engine %.2f)\n", p, e, p / e }'
fi
echo "load average after: $(cat /proc/loadavg)"
