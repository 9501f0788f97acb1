#!/usr/bin/env bash
# Two builds of librma under the same perftest-style tool, alternated pair
# by pair (A B, A B, ...) so the machine's drift falls on both alike: the
# tool from BUILD, its library from LIB_A or LIB_B (directories holding a
# copy of librma.so*, put first with LD_LIBRARY_PATH). Two processes over
# softroce on memif, the server pinned to CPU 0 and the client to CPU 1,
# each run -D SECS seconds with -m 4096 -l 32. Prints each library's MiB/s
# sorted, then the medians and their ratio B / A.
#
#   bench/port/alternate_libs.sh -a LIB_A -b LIB_B [-B BUILD] [-t TOOL] [-s SIZE] [-n PAIRS] [-D SECS]
#
# A copy of the current build's library, for example:
#   mkdir -p /tmp/lib_new && cp -a build/release/librma.so* /tmp/lib_new/
set -euo pipefail

lib_a="" lib_b="" build=build/release tool=rma_write_bw size=65536 pairs=6 secs=3
while getopts "a:b:B:t:s:n:D:h" opt; do
  case "$opt" in
    a) lib_a="$OPTARG" ;;
    b) lib_b="$OPTARG" ;;
    B) build="$OPTARG" ;;
    t) tool="$OPTARG" ;;
    s) size="$OPTARG" ;;
    n) pairs="$OPTARG" ;;
    D) secs="$OPTARG" ;;
    *) sed -n '2,13p' "$0"; exit 2 ;;
  esac
done
for d in "$lib_a" "$lib_b"; do
  if [[ -z "$d" || ! -e "$d/librma.so.0" ]]; then
    echo "alternate_libs: -a and -b must name directories with librma.so.0 (got '${d}')" >&2
    exit 2
  fi
done
bin="$build/bench/perftest"
[[ -x "$bin/$tool" ]] || { echo "alternate_libs: $bin/$tool not built" >&2; exit 1; }

# shellcheck source=../lib/perftest_pair.sh
source "$(dirname "$0")/../lib/perftest_pair.sh"
perftest_pair_init
export PERFTEST_PAIR_SERVER_CPU=0 PERFTEST_PAIR_CLIENT_CPU=1

median() { sort -g | awk '{v[NR]=$1} END {if (NR == 0) print "nan"; else print v[int((NR + 1) / 2)]}'; }
: >"$pair_tmp/a"; : >"$pair_tmp/b"
for ((i = 0; i < pairs; ++i)); do
  for side in a b; do
    lib="$lib_a"; [[ $side == b ]] && lib="$lib_b"
    LD_LIBRARY_PATH="$lib" perftest_pair "$bin" "$tool" -s "$size" -D "$secs" -m 4096 -l 32 |
      awk -v s="$size" '$1 == s && NF >= 5 {print $4}' >>"$pair_tmp/$side"
  done
done
ma="$(median <"$pair_tmp/a")"; mb="$(median <"$pair_tmp/b")"
echo "$tool -s $size, $pairs pairs, $(date -u '+%F %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "A ($lib_a) MiB/s: $(sort -g "$pair_tmp/a" | tr '\n' ' ')"
echo "B ($lib_b) MiB/s: $(sort -g "$pair_tmp/b" | tr '\n' ' ')"
awk -v a="$ma" -v b="$mb" 'BEGIN {printf "medians A %s B %s, B / A %.3f\n", a, b, (a > 0 ? b / a : 0)}'
