#!/bin/sh
# Peer death (issue 12): rmarun --grace runs rma_mp_hardening peerdeath, in
# which rank 2 kills itself (SIGKILL) mid-epoch. Passes when rmarun names
# the dead rank and how it died, and both survivors report an error naming
# it (they exit 0 on their own within the grace period, no hang).
#   run_peerdeath.sh RMARUN PROGRAM
set -u
out=$("$1" -n 3 --grace 60 --timeout 200 "$2" peerdeath 2>&1)
status=$?
printf '%s\n' "$out"
fail() { echo "run_peerdeath: $1"; exit 1; }
[ "$status" -eq 137 ] || fail "rmarun exited $status, not 137 (128 + SIGKILL of a rank)"
printf '%s\n' "$out" | grep -q "rmarun: rank 2 (pid [0-9]*) killed by signal 9" || fail "rmarun did not name the dead rank"
for r in 0 1; do
  printf '%s\n' "$out" | grep -q "peerdeath: rank $r saw after [0-9]* ms: .*rank 2" || fail "rank $r did not report rank 2"
  printf '%s\n' "$out" | grep -q "rmarun: rank $r (pid [0-9]*) exited with status 0" || fail "rank $r did not end on its own"
done
echo "run_peerdeath: passed"
