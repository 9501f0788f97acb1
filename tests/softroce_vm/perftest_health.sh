#!/bin/bash
# Runs in the soft-RoCE guest: Debian's perftest against rxe0, server and
# client in the guest, as a health check of the guest's RDMA stack. Every
# run is bounded (a perftest server whose client failed waits forever) and
# judged by both exit codes; perftest's own figures under TCG can be 0.00
# when its clock calibration fails, so they are printed, not checked.
set -u
self=$(ip -4 -o addr show dev eth0 | awk '{print $4}' | cut -d/ -f1)
failed=0
run_pair() {
  local name=$1; shift
  timeout 60 "$@" -d rxe0 -F >"/tmp/$name.server" 2>&1 &
  local server=$!
  sleep 1
  timeout 60 "$@" -d rxe0 -F "$self" >"/tmp/$name.client" 2>&1
  local crc=$?
  # The server finishes with the client; if the client failed it would not.
  local i=0
  while kill -0 "$server" 2>/dev/null && [[ $i -lt 50 ]]; do sleep 0.1; i=$((i + 1)); done
  kill "$server" 2>/dev/null
  wait "$server"
  local src=$?
  if [[ $crc -eq 0 && $src -eq 0 ]]; then
    echo "PASS $name: $(grep -E '^ *[0-9]+ +[0-9]+ ' "/tmp/$name.client" | tail -n1 | tr -s ' ')"
  else
    echo "FAIL $name: client exit $crc, server exit $src"
    sed 's/^/  client| /' "/tmp/$name.client"
    sed 's/^/  server| /' "/tmp/$name.server"
    failed=$((failed + 1))
  fi
}
run_pair ib_write_bw ib_write_bw -n 200 -s 65536
run_pair ib_read_bw ib_read_bw -n 200 -s 65536
run_pair ib_atomic_bw ib_atomic_bw -n 200
run_pair ib_atomic_bw_cas ib_atomic_bw -n 200 -A CMP_AND_SWAP
echo "perftest health: $failed failed"
exit $((failed > 0))
