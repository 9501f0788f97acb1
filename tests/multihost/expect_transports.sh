#!/bin/sh
# Run as every rank of a job across hosts: rma_info --transports, and on the
# rank that prints the job's table (rank 0), a check of it: the ranks sit on
# exactly HOSTS hosts, each rank reaches the ranks of its own host through
# shm and every other rank through softroce (the software NIC).
#   expect_transports.sh RMA_INFO HOSTS
set -u
[ $# -eq 2 ] || { echo "usage: expect_transports.sh RMA_INFO HOSTS" >&2; exit 2; }
out=$(mktemp "${TMPDIR:-/tmp}/rma-transports.XXXXXX") || exit 1
trap 'rm -f "$out"' EXIT
"$1" --transports >"$out"
rc=$?
cat "$out"
[ $rc -eq 0 ] || exit $rc
grep -q '^# Transports of a' "$out" || exit 0  # not the printing rank
awk -v want_hosts="$2" '
  NR == FNR { if ($1 == "rank" && $3 == "on" && $4 == "host") { h = $5; sub(/:$/, "", h); host[$2] = h; hosts[h] = 1 } next }
  $1 == "rank" && $3 == "on" { r = $2; next }
  $1 == "to" && $2 == "rank" {
    p = $3; want = (host[r] == host[p]) ? "shm" : "softroce"
    if ($4 != want) { printf "expect_transports: rank %s reaches rank %s through %s, not %s\n", r, p, $4, want; bad = 1 }
    checked++
  }
  END {
    n = 0; for (h in hosts) n++
    if (n != want_hosts) { printf "expect_transports: the ranks sit on %d hosts, not %d\n", n, want_hosts; bad = 1 }
    if (checked == 0) { print "expect_transports: no \"to rank\" line to check"; bad = 1 }
    if (!bad) printf "expect_transports: %d rank pairs checked: shm within a host, softroce across\n", checked
    exit bad
  }' "$out" "$out"
