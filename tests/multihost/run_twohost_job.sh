#!/usr/bin/env bash
# One job across two "hosts" on this machine (issues 14 and 15): two network
# namespaces joined by a veth pair, which this script creates and removes on
# any exit, and Open MPI's mpirun started in the first with ranks in both:
# its rsh agent (netns_agent.sh) starts the daemon of the second "host" in
# the second namespace, Open MPI's out-of-band TCP runs over the veth pair,
# and the ranks bootstrap through PMIx. No RMA_* variable reaches the ranks:
# the software NIC must find its port from the job itself (af_packet on the
# veth with ARP, memif between the ranks of one namespace; README, the
# softroce provider).
#
#   run_twohost_job.sh [--unreachable] [--per-host N] [--timeout S] PROGRAM ARGS...
#
# Runs PROGRAM ARGS... as a job of 2N ranks, N per namespace (default 2),
# and exits with its status. --unreachable: the second namespace also gets
# an interface that leads nowhere, with its default route, so that its
# ranks choose it: every connect between the namespaces must then fail
# within the ARP timeout (RMA_SOFTROCE_ARP_TIMEOUT_MS, 3000 ms by default)
# with a message naming the port, the peer and the timeout, and the job
# must exit non-zero; the script exits 0 when it does exactly that.
# --timeout: seconds the whole job may take (default 150). Exits 77 (ctest:
# skipped) when this machine cannot create network namespaces, and 2 on
# bad arguments.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
usage() { sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"; }
fail() { echo "run_twohost_job: $*" >&2; exit 1; }
skip() { echo "run_twohost_job: skipped: $*"; exit 77; }

unreachable=0
per_host=2
timeout_s=150
while [[ $# -gt 0 ]]; do
  case "$1" in
    --unreachable) unreachable=1; shift ;;
    --per-host)
      [[ $# -ge 2 && "$2" =~ ^[1-8]$ ]] || { echo "run_twohost_job: --per-host needs 1..8, not '${2:-}'" >&2; exit 2; }
      per_host=$2; shift 2 ;;
    --timeout)
      [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || { echo "run_twohost_job: --timeout needs seconds, not '${2:-}'" >&2; exit 2; }
      timeout_s=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "run_twohost_job: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
[[ $# -ge 1 ]] || { echo "run_twohost_job: no program given (see --help)" >&2; exit 2; }
[[ -x "$1" ]] || { echo "run_twohost_job: '$1' is not an executable program" >&2; exit 2; }

[[ $(id -u) -eq 0 ]] || skip "needs root (network namespaces)"
for tool in ip unshare timeout; do command -v "$tool" >/dev/null || skip "'$tool' not found"; done
mpirun=$(command -v mpirun.openmpi || true)
[[ -n "$mpirun" ]] || skip "Open MPI's mpirun.openmpi not found (apt-get install openmpi-bin)"

# Names unique to this run. 198.18.0.0/15 is the benchmarking range (RFC
# 2544); the addresses exist only inside the two namespaces.
id=$$
ns_a="rma-mh-$id-a"; ns_b="rma-mh-$id-b"
if_a="rmamhA$id"; if_b="rmamhB$id"
iso_a="rmamhX$id"; iso_b="rmamhY$id"   # --unreachable: both ends in B
host_a="mh-a-$id"; host_b="mh-b-$id"
net="198.18.$(( id % 250 + 1 ))"
ip_a="$net.1"; ip_b="$net.2"
work="$(mktemp -d "${TMPDIR:-/tmp}/rma-multihost.XXXXXX")"
job_pid=""
cleanup() {
  if [[ -n "$job_pid" ]] && kill -0 "$job_pid" 2>/dev/null; then
    kill -TERM "$job_pid" 2>/dev/null; sleep 1; kill -KILL "$job_pid" 2>/dev/null
  fi
  # Whatever still runs in a namespace (a daemon the agent started) goes with it.
  for ns in "$ns_a" "$ns_b"; do
    pids=$(ip netns pids "$ns" 2>/dev/null)
    [[ -n "$pids" ]] && kill -KILL $pids 2>/dev/null
    ip netns del "$ns" 2>/dev/null
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'echo "run_twohost_job: interrupted" >&2; exit 130' INT TERM HUP

ip netns add "$ns_a" 2>/dev/null || skip "cannot create network namespace $ns_a (no CAP_SYS_ADMIN?)"
ip netns add "$ns_b" || fail "cannot create network namespace $ns_b"
ip link add "$if_a" netns "$ns_a" type veth peer name "$if_b" netns "$ns_b" ||
  fail "cannot create the veth pair $if_a/$if_b"
for side in "$ns_a $if_a $ip_a" "$ns_b $if_b $ip_b"; do
  read -r ns ifc addr <<<"$side"
  # IPv6 would put router solicitations and DAD frames on the link.
  ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$ifc.disable_ipv6=1" 2>/dev/null
  { ip -n "$ns" link set lo up && ip -n "$ns" link set "$ifc" up && ip -n "$ns" addr add "$addr/24" dev "$ifc"; } ||
    fail "cannot configure $ifc in $ns ($addr/24)"
done
if [[ $unreachable -eq 1 ]]; then
  # An island in B (both ends of a second pair), with an address and the
  # default route: B's ranks take it, and nothing there answers ARP.
  ip -n "$ns_b" link add "$iso_a" type veth peer name "$iso_b" || fail "cannot create the veth pair $iso_a/$iso_b"
  ip netns exec "$ns_b" sysctl -qw "net.ipv6.conf.$iso_a.disable_ipv6=1" "net.ipv6.conf.$iso_b.disable_ipv6=1" 2>/dev/null
  { ip -n "$ns_b" link set "$iso_a" up && ip -n "$ns_b" link set "$iso_b" up &&
    ip -n "$ns_b" addr add "198.18.255.1/24" dev "$iso_a" && ip -n "$ns_b" route add default dev "$iso_a"; } ||
    fail "cannot configure the island $iso_a in $ns_b"
fi

# What the hosts' own IP stacks and interfaces look like before the job:
# afterwards they must have answered none of the NICs' frames (no UDP to a
# closed port, no ICMP unreachable: the frames are for the NICs' own MACs)
# and kept their MACs, with nothing left in promiscuous mode.
snmp() {  # snmp NS PROTO FIELD: a counter of /proc/net/snmp in NS
  ip netns exec "$1" awk -v p="$2:" -v f="$3" '$1 == p && !h { for (i = 2; i <= NF; i++) n[i] = $i; h = 1; next }
    $1 == p && h { for (i = 2; i <= NF; i++) if (n[i] == f) print $i }' /proc/net/snmp
}
link_state() {  # link_state NS IF: "MAC promiscuity N"
  ip -d -n "$1" link show "$2" | awk '/link\/ether/ { mac = $2 } { for (i = 1; i < NF; i++) if ($i == "promiscuity") p = $(i + 1) }
    END { print mac, "promiscuity", p }'
}
before_a=$(link_state "$ns_a" "$if_a"); before_b=$(link_state "$ns_b" "$if_b")

# Nothing of librma's configuration reaches the job.
while IFS='=' read -r name _; do
  [[ "$name" == RMA_* ]] && unset "$name"
done < <(env)
export MULTIHOST_NETNS="$host_a=$ns_a $host_b=$ns_b"
np=$(( 2 * per_host ))
# Root needs --allow-run-as-root; two cores hold 2N ranks with
# --oversubscribe. The out-of-band channel is pinned to the veth's subnet
# (the same on both sides); the daemon of host B is started by the agent,
# not through a tree.
cmd=("$mpirun" --allow-run-as-root --oversubscribe
     --mca plm_rsh_agent "$here/netns_agent.sh" --mca plm_rsh_no_tree_spawn 1
     --mca oob_tcp_if_include "$net.0/24" --mca btl self
     -H "$host_a:$per_host,$host_b:$per_host" -np "$np" "$@")
echo "run_twohost_job: $ns_a ($host_a, $if_a $ip_a) <-> $ns_b ($host_b, $if_b $ip_b)$([[ $unreachable -eq 1 ]] && echo ", island $iso_a with B's default route"); $np ranks: ${*}"
start=$(date +%s%N)
# mpirun runs in A under A's hostname, so that it knows host A as itself.
ip netns exec "$ns_a" unshare --uts sh -c 'hostname "$1" && shift && exec "$@"' run "$host_a" \
  timeout --kill-after=10 "$timeout_s" "${cmd[@]}" >"$work/out" 2>&1 &
job_pid=$!
wait "$job_pid"
rc=$?
job_pid=""
took_ms=$(( ($(date +%s%N) - start) / 1000000 ))
cat "$work/out"
echo "run_twohost_job: the job exited $rc after $took_ms ms"
if [[ $unreachable -eq 0 ]]; then
  [[ $rc -eq 124 || $rc -eq 137 ]] && fail "the job did not finish within $timeout_s s"
  [[ $rc -eq 0 ]] || exit "$rc"
  for side in "$ns_a $if_a $before_a" "$ns_b $if_b $before_b"; do
    read -r ns ifc before <<<"$side"
    before=${side#"$ns $ifc "}
    for counter in "Udp NoPorts" "Icmp OutDestUnreachs"; do
      read -r proto field <<<"$counter"
      n=$(snmp "$ns" "$proto" "$field")
      [[ "$n" == 0 ]] || fail "$ns's IP stack counted $proto $field = ${n:-?}: it took RoCE frames for its own"
    done
    after=$(link_state "$ns" "$ifc")
    [[ "$after" == "$before" ]] || fail "$ifc in $ns was '$before' before the job and is '$after' after it"
  done
  echo "run_twohost_job: the namespaces' IP stacks saw none of the NICs' frames; $if_a and $if_b kept their MACs and flags"
  exit 0
fi

# --unreachable: a clear error, a non-zero exit, and no waiting beyond the ARP timeout.
[[ $rc -ne 0 ]] || fail "the job exited 0 although the second namespace's ranks cannot be reached"
[[ $rc -ne 124 && $rc -ne 137 ]] || fail "the job hung until the $timeout_s s timeout instead of failing"
line=$(grep -m1 "no ARP reply from peer" "$work/out")
[[ -n "$line" ]] || fail "no rank said which peer did not answer ARP"
for part in "port af_packet:" "no ARP reply from peer 169.254." "within 3000 ms" "RMA_SOFTROCE_ARP_TIMEOUT_MS"; do
  [[ "$line" == *"$part"* ]] || fail "the error does not name '$part': $line"
done
# Start-up of 2N ranks under a sanitizer takes seconds; the ARP wait itself is 3 s.
(( took_ms < 60000 )) || fail "the job took $took_ms ms to fail, more than a minute"
echo "run_twohost_job: refused as expected: $line"
exit 0
