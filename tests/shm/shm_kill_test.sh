#!/usr/bin/env bash
# A job of 3 ranks under rmarun over the shm provider: the last rank kills
# itself with SIGKILL in the middle of traffic (shm_rank.cpp). The survivors
# must report its death cleanly and end normally (rmarun --grace gives them
# the time), rmarun must name the killed rank, and nothing of any rank may
# stay in /dev/shm, nor any rank's published counters (RMA_STATS=shm, in a
# directory of this test's own).
# Usage: shm_kill_test.sh RMARUN RMA_SHM_RANK
set -uo pipefail
rmarun="$1" rank="$2"
out=$(mktemp /tmp/rma-shm-kill.XXXXXX)
stats=$(mktemp -d /tmp/rma-shm-kill-stats.XXXXXX)
trap 'rm -rf "$out" "$stats"' EXIT
fail() { echo "FAIL: $*"; sed 's/^/  | /' "$out"; exit 1; }

RMA_STATS=shm RMA_STATS_DIR="$stats" timeout 60 "$rmarun" -n 3 --grace 30 --timeout 50 "$rank" >"$out" 2>&1
rc=$?
[[ $rc -ne 0 ]] || fail "rmarun exited 0 although rank 2 was killed"
grep -q "rank 2 (pid [0-9]*) .*signal" "$out" || grep -q "rank 2 (pid [0-9]*) .*SIGKILL\|rank 2 (pid [0-9]*) .*killed" "$out" ||
  fail "rmarun did not name the killed rank 2"
for r in 0 1; do
  grep -q "^rank $r: peer 2 died: " "$out" || fail "rank $r did not report the death of rank 2"
  grep -q "^rank $r: done, ops to live peers [1-9]" "$out" || fail "rank $r did not go on with its live peer and end"
done
pids=$(sed -n 's/^rank [0-9] pid \([0-9]*\)$/\1/p' "$out")
[[ $(wc -w <<<"$pids") -eq 3 ]] || fail "expected 3 'rank R pid P' lines"
for p in $pids; do
  left=$(ls /dev/shm | grep "^rma\.$(id -u)\.$p\." || true)
  [[ -z "$left" ]] || fail "left in /dev/shm by pid $p: $left"
  [[ ! -e "$stats/librma-stats.$p" ]] || fail "counters of pid $p left in RMA_STATS_DIR"
done
grep -q "rmarun: removed $stats/librma-stats\.[0-9]* left by pid" "$out" ||
  fail "rmarun did not say it removed the killed rank's counters (did the ranks publish any?)"
echo "PASS: rank 2 killed mid-traffic, ranks 0 and 1 reported it and ended, nothing left in /dev/shm or RMA_STATS_DIR"
