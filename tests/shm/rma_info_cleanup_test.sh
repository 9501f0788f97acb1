#!/usr/bin/env bash
# rma_info --cleanup removes a stale librma segment and the published
# counter file of a dead process and prints their names; it leaves a live
# process's segment and counter file and names of another shape alone.  Usage: rma_info_cleanup_test.sh RMA_INFO
set -uo pipefail
info="$1"
# Every librma process removes dead owners' segments when it first
# allocates one, so a test running beside this one could remove the stale
# segment before rma_info does. As root, run in a mount namespace of our
# own with a private /dev/shm; elsewhere share the real one.
if [[ -z "${RMA_CLEANUP_TEST_ISOLATED:-}" && $(id -u) -eq 0 ]] && command -v unshare >/dev/null &&
   unshare -m --propagation private true 2>/dev/null; then
  export RMA_CLEANUP_TEST_ISOLATED=1
  exec unshare -m --propagation private bash -c 'mount -t tmpfs -o mode=1777 rma-test-shm /dev/shm && exec bash "$0" "$@"' "$0" "$@"
fi
uid=$(id -u)
sleep 0 & dead=$!
wait "$dead"  # reaped: its pid names no process now
if kill -0 "$dead" 2>/dev/null; then echo "SKIP: pid $dead was reused at once"; exit 0; fi
stale="rma.$uid.$dead.test.00000000deadbeef"
live="rma.$uid.$$.test.00000000cafef00d"
foreign="rma-other.$uid.$dead.test.00000000deadbeef"
stats_dir=$(mktemp -d "${TMPDIR:-/tmp}/rma-cleanup-stats.XXXXXX")
export RMA_STATS_DIR="$stats_dir"
dead_counters="$stats_dir/librma-stats.$dead"
live_counters="$stats_dir/librma-stats.$$"
for n in "$stale" "$live" "$foreign"; do : >"/dev/shm/$n"; done
: >"$dead_counters"; : >"$live_counters"
trap 'rm -f "/dev/shm/$stale" "/dev/shm/$live" "/dev/shm/$foreign"; rm -rf "$stats_dir"' EXIT
out=$("$info" --cleanup 2>&1)
rc=$?
fail() { echo "FAIL: $*"; echo "$out" | sed 's/^/  | /'; exit 1; }
[[ $rc -eq 0 ]] || fail "exit status $rc"
[[ ! -e "/dev/shm/$stale" ]] || fail "the dead pid's segment $stale is still there"
grep -qx "removed /dev/shm/$stale" <<<"$out" || fail "did not print the removed name"
[[ -e "/dev/shm/$live" ]] || fail "removed a live process's segment"
[[ -e "/dev/shm/$foreign" ]] || fail "removed a name of another shape"
grep -q "stale segments\? removed" <<<"$out" || fail "no summary line"
[[ ! -e "$dead_counters" ]] || fail "the dead pid's counter file $dead_counters is still there"
grep -qx "removed $dead_counters" <<<"$out" || fail "did not print the removed counter file"
[[ -e "$live_counters" ]] || fail "removed a live process's counter file"
out=$("$info" --cleanup --devices 2>&1)
[[ $? -eq 2 ]] || fail "--cleanup with another option was accepted"
echo "PASS: rma_info --cleanup removed the dead pid's segment and counter file only"
