#!/bin/bash
# Runs in the soft-RoCE guest: librma's rma_write_bw / rma_read_bw (verbs
# transport, perftest's exchange) against Debian's ib_write_bw / ib_read_bw
# on rxe0, in both roles. Every run is bounded; a pair passes when both exit
# 0 and the side that measured printed a result row.
set -u
self=$(ip -4 -o addr show dev eth0 | awk '{print $4}' | cut -d/ -f1)
# The RoCE v2 GID of our IPv4 address (perftest needs -x on RoCE).
gidx=""
for g in /sys/class/infiniband/rxe0/ports/1/gids/*; do
  i=${g##*/}
  [[ "$(cat "$g" 2>/dev/null)" == "0000:0000:0000:0000:0000:ffff:"* ]] || continue
  [[ "$(cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/$i 2>/dev/null)" == "RoCE v2" ]] || continue
  gidx=$i
  break
done
[[ -n "$gidx" ]] || { echo "FAIL: rxe0 port 1 has no RoCE v2 IPv4 GID"; exit 1; }
echo "rxe0: RoCE v2 GID index $gidx for $self"
failed=0
row='^[[:space:]]*[0-9]+[[:space:]]+[0-9]+[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+'
pair() {  # pair NAME "server command" "client command"
  local name=$1 server=$2 client=$3
  timeout 90 $server >"/tmp/$name.server" 2>&1 &
  local spid=$!
  # The client connects once: wait until the server listens on the exchange
  # port (18515 = 0x4853, state 0A in /proc/net/tcp or tcp6), not a fixed second
  # (under a loaded host the emulated guest takes longer).
  local w=0
  until grep -qE '^ *[0-9]+: [0-9A-F]+:4853 [0-9A-F]+:0000 0A' /proc/net/tcp /proc/net/tcp6 2>/dev/null || [[ $w -ge 300 ]] ||
        ! kill -0 "$spid" 2>/dev/null; do
    sleep 0.1; w=$((w + 1))
  done
  timeout 90 $client "$self" >"/tmp/$name.client" 2>&1
  local crc=$?
  local i=0
  while kill -0 "$spid" 2>/dev/null && [[ $i -lt 100 ]]; do sleep 0.1; i=$((i + 1)); done
  kill "$spid" 2>/dev/null
  wait "$spid"
  local src=$?
  if [[ $crc -eq 0 && $src -eq 0 ]] && grep -Eq "$row" "/tmp/$name.client"; then
    echo "PASS $name: client $(grep -E "$row" "/tmp/$name.client" | tail -n1 | tr -s ' ')"
    echo "     server $(grep -E "$row" "/tmp/$name.server" | tail -n1 | tr -s ' ')"
  else
    echo "FAIL $name: client exit $crc, server exit $src"
    sed 's/^/  client| /' "/tmp/$name.client"
    sed 's/^/  server| /' "/tmp/$name.server"
    failed=$((failed + 1))
  fi
}
common="-d rxe0 -x $gidx -F -n 300"
ours="--transport=verbs"
for s in 65536 1024; do
  pair "ib_write_bw-server_rma_write_bw-client-$s" "ib_write_bw $common -s $s" "rma_write_bw $ours $common -s $s"
  pair "rma_write_bw-server_ib_write_bw-client-$s" "rma_write_bw $ours $common -s $s" "ib_write_bw $common -s $s"
  pair "ib_read_bw-server_rma_read_bw-client-$s" "ib_read_bw $common -s $s" "rma_read_bw $ours $common -s $s"
  pair "rma_read_bw-server_ib_read_bw-client-$s" "rma_read_bw $ours $common -s $s" "ib_read_bw $common -s $s"
done
echo "perftest interop: $failed failed"
exit $((failed > 0))
