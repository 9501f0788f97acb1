#!/usr/bin/env bash
# Interoperability of librma's software RoCE NIC with the kernel's rdma_rxe.
#
#   interop.sh PEER_BINARY [PCAP_DIR]
#
# Creates a network namespace with a tap; the QEMU guest's eth0 sits on the
# tap and runs interop_peer over rxe0 (verbs provider); on the host, in the
# namespace, interop_peer runs over the softroce provider on the same tap
# (DPDK af_packet), with its own MAC and IPv4 address. A TCP connection
# through the host kernel's address on the tap carries the test's control
# messages. Everything is torn down on exit, whatever happened.
#   host kernel (control)  192.168.77.1  on rma-ivtap
#   softroce NIC           192.168.77.3  02:00:00:77:00:03, af_packet on rma-ivtap
#   guest eth0 + rxe0      192.168.77.2  52:54:00:77:00:02
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
peer="${1:?usage: interop.sh PEER_BINARY [PCAP_DIR]}"
pcap_dir="${2:-}"
ns="rma-interop-$$"
tap="rma-ivtap"
nic_mac=02:00:00:77:00:03
guest_mac=52:54:00:77:00:02
vm_pid=""
work="$(mktemp -d "${TMPDIR:-/tmp}/rma-interop.XXXXXX")"

cleanup() {
  [[ -n "$vm_pid" ]] && kill "$vm_pid" 2>/dev/null && wait "$vm_pid" 2>/dev/null
  ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
  ip netns del "$ns" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[[ $(id -u) -eq 0 ]] || { echo "interop: needs root (network namespace, tap)"; exit 1; }
ip netns add "$ns" || exit 1
ip -n "$ns" link set lo up
ip -n "$ns" tuntap add dev "$tap" mode tap || exit 1
ip -n "$ns" addr add 192.168.77.1/24 dev "$tap"
ip -n "$ns" link set "$tap" up

# The guest: the verbs side of the test. rxe resolves our NIC's address
# with ARP, which the NIC answers (no static neighbour entry); the guest
# prints what it resolved, so a log shows it.
guest_cmd="interop_peer --provider verbs --connect 192.168.77.1:18515; rc=\$?;
           ip neigh show 192.168.77.3 | sed 's/^/neighbour: /'; exit \$rc"
ip netns exec "$ns" "$root/scripts/softroce-vm" --tap "$tap" --ip 192.168.77.2/24 --mac "$guest_mac" \
  --timeout 400 --add "$peer" -- bash -c "$guest_cmd" >"$work/guest.log" 2>&1 &
vm_pid=$!

# The host: the softroce NIC on the same tap.
pcap=""
[[ -n "$pcap_dir" ]] && pcap="$pcap_dir/interop-softroce.pcap"
ip netns exec "$ns" env \
  RMA_SOFTROCE_PORT="af_packet:$tap,ip=192.168.77.3,mac=$nic_mac" \
  RMA_SOFTROCE_PCAP="$pcap" \
  timeout -s KILL 380 "$peer" --provider softroce --listen 192.168.77.1:18515 2>&1 | sed 's/^/host | /'
host_rc=${PIPESTATUS[0]}

wait "$vm_pid"
guest_rc=$?
vm_pid=""
sed 's/^/guest| /' "$work/guest.log"
echo "interop: host side exit $host_rc, guest side exit $guest_rc"
[[ $host_rc -eq 0 && $guest_rc -eq 0 ]]
