#!/usr/bin/env bash
# Two hosts on one machine (issue 15): two network namespaces joined by a
# veth pair, and across it, interleaved round by round,
#   ours       rma_write_bw / rma_read_bw / rma_write_lat, softroce over
#              DPDK net_af_packet on each veth end, and over net_af_xdp on a
#              second veth pair (XDP needs an MTU that fits a page, and its
#              program takes every frame, so our OOB exchange stays on the
#              first pair)
#   UCX tcp    ucx_perftest ucp_put_bw / ucp_get / ucp_put_lat, UCX_TLS=tcp
#   libfabric  fi_rma_loop (bench/peers/) write_bw / read_bw / write_lat over
#              libfabric's tcp provider (FI_EP_MSG)
#   the link   rma_frame_pump (bench/port/) over the same two ports, with no
#              NIC: frames of our path MTU's payload as fast as the link
#              takes them, and an 8 B frame ping-pong, alone and behind an
#              ACK-sized frame each way (what any RoCE NIC on these ports
#              could reach at best: a hop of perftest's WRITE ping-pong
#              carries the answer and the ACK of the WRITE it answers)
# Bandwidth at every size of SIZES, WRITE latency at 8 B; servers in
# namespace A, clients in namespace B. Prints and writes the medians.
#
#   bench/twohost/run-twohost.sh [-b BUILD_DIR] [-o OUT_DIR] [-r ROUNDS] [-s "SIZES"]
#
# BUILD_DIR (default build/release) must hold bench/perftest/rma_{write_bw,
# read_bw,write_lat}, bench/peers/fi_rma_loop and bench/port/rma_frame_pump. OUT_DIR (default
# bench/twohost/results) receives results.csv (every round), load.csv (the
# load average before each pair) and TABLE.md (medians and ratios). ROUNDS
# defaults to 3. Needs root (namespaces, AF_PACKET); installs ucx-utils,
# libfabric-bin and libfabric-dev when missing. Exits non-zero, naming what
# failed, when any measurement fails; the namespaces are removed on any exit.
#
# Environment: TWOHOST_AFPACKET="framesz=8192,blocksz=65536,framecnt=256"
# (the af_packet ring options of our port), TWOHOST_TIMEOUT (s per process, 120),
# TWOHOST_OURS_READ_ARGS (more arguments for both sides of our rma_read_bw,
# e.g. "-o 32"; named in the table's setup line).
set -uo pipefail
invocation="bench/twohost/run-twohost.sh${*:+ $*}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="$root/build/release"
out="$here/results"
rounds=3
sizes="8 64 512 4096 32768 262144 1048576"
usage() { sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"; }
fail() { echo "run-twohost: $*" >&2; exit 1; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    -b) [[ $# -ge 2 && -d "$2" ]] || { echo "run-twohost: -b needs a build directory ('${2:-}' is not one)" >&2; exit 2; }
        build="$(cd "$2" && pwd)"; shift 2 ;;
    -o) [[ $# -ge 2 ]] || fail "-o needs a directory"; out="$2"; shift 2 ;;
    -r) [[ $# -ge 2 ]] || fail "-r needs a number"; rounds="$2"; shift 2 ;;
    -s) [[ $# -ge 2 ]] || fail "-s needs a list of sizes"; sizes="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run-twohost: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "run-twohost: -r '$rounds' is not a positive number" >&2; exit 2; }
for s in $sizes; do
  if ! [[ "$s" =~ ^[1-9][0-9]*$ ]] || (( s < 8 || s > 1073741824 )); then
    echo "run-twohost: size '$s' is not a number in 8 .. 2^30" >&2; exit 2
  fi
done
[[ $(id -u) -eq 0 ]] || fail "needs root (network namespaces, veth, AF_PACKET)"

# shellcheck source-path=SCRIPTDIR source=../../scripts/lib/deps.sh
source "$root/scripts/lib/deps.sh"
# shellcheck source-path=SCRIPTDIR source=../lib/pair_args.sh
source "$here/../lib/pair_args.sh"
# Before looking for the tools: fi_rma_loop exists only in a build
# configured while libfabric-dev was installed.
rma_install_deps ucx-utils libfabric-bin libfabric-dev >&2 || fail "installing ucx-utils/libfabric failed"
command -v ucx_perftest >/dev/null || fail "ucx_perftest not found after installing ucx-utils"

tools="$build/bench/perftest"
fi_loop="$build/bench/peers/fi_rma_loop"
pump="$build/bench/port/rma_frame_pump"
build_cmd="cmake --build $build --target rma_write_bw rma_read_bw rma_write_lat fi_rma_loop rma_frame_pump"
for t in "$tools/rma_write_bw" "$tools/rma_read_bw" "$tools/rma_write_lat" "$pump"; do
  [[ -x "$t" ]] || fail "$t is not built ($build_cmd)"
done
if [[ ! -x "$fi_loop" ]]; then
  # pkg_check_modules (bench/peers/CMakeLists.txt) caches what it found.
  grep -qs '^LIBFABRIC_FOUND:INTERNAL=1$' "$build/CMakeCache.txt" && fail "$fi_loop is not built ($build_cmd)"
  fail "$fi_loop is not built, and $build was configured without libfabric (now installed): reconfigure it (cmake -S $root -B $build), then $build_cmd"
fi

afp="${TWOHOST_AFPACKET:-framesz=8192,blocksz=65536,framecnt=256}"
read -r -a ours_read_args <<<"${TWOHOST_OURS_READ_ARGS:-}"
tmo="${TWOHOST_TIMEOUT:-120}"
framesz=$(sed -n 's/.*framesz=\([0-9]*\).*/\1/p' <<<"$afp")
framesz=${framesz:-8192}
# The largest frame our af_packet port passes is framesz - 80 (the kernel's
# TPACKET_V2 header and alignment in each slot), at most 9216 (our mbufs):
# the veth MTU is that less the Ethernet header, the same for every tool.
maxframe=$(( framesz - 80 < 9216 ? framesz - 80 : 9216 ))
mtu=$(( maxframe - 14 ))

# Names unique to this run; 198.18.0.0/15 is reserved for benchmarking
# (RFC 2544) and lives only inside the two namespaces.
ns_a="rma-2h-$$-a"; ns_b="rma-2h-$$-b"
if_a="rma2hA$$"; if_b="rma2hB$$"
xdp_a="rma2hXA$$"; xdp_b="rma2hXB$$"  # the af_xdp pair: no kernel addresses
xdp_mtu=3498  # veth refuses a (non-multi-buffer) XDP program above about 3.5 KiB
sub="198.18.$(( $$ % 250 + 1 ))"
ip_a="$sub.1"; ip_b="$sub.2"      # the kernels' addresses: TCP of every tool, our OOB exchange
nic_a="$sub.11"; nic_b="$sub.12"  # our NICs' own addresses: the kernel never answers their frames
xnic_a="$sub.21"; xnic_b="$sub.22"  # our NICs on the af_xdp pair
mac_a="02:52:4d:32:68:0a"; mac_b="02:52:4d:32:68:0b"

work="$(mktemp -d "${TMPDIR:-/tmp}/rma-twohost.XXXXXX")"
spid=""
cleanup() {
  # A server still running (its client failed) would keep its namespace busy.
  if [[ -n "$spid" ]]; then kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null; fi
  ip netns del "$ns_a" 2>/dev/null
  ip netns del "$ns_b" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
trap 'echo "run-twohost: interrupted" >&2; exit 130' INT TERM HUP

ip netns add "$ns_a" || fail "cannot create network namespace $ns_a"
ip netns add "$ns_b" || fail "cannot create network namespace $ns_b"
ip link add "$if_a" netns "$ns_a" type veth peer name "$if_b" netns "$ns_b" ||
  fail "cannot create the veth pair $if_a/$if_b"
ip link add "$xdp_a" netns "$ns_a" type veth peer name "$xdp_b" netns "$ns_b" ||
  fail "cannot create the veth pair $xdp_a/$xdp_b"
for side in "$ns_a $xdp_a" "$ns_b $xdp_b"; do
  read -r ns ifc <<<"$side"
  ip -n "$ns" link set "$ifc" mtu "$xdp_mtu" up || fail "cannot configure $ifc in $ns (mtu $xdp_mtu)"
  ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$ifc.disable_ipv6=1" 2>/dev/null
done
for side in "$ns_a $if_a $ip_a" "$ns_b $if_b $ip_b"; do
  read -r ns ifc addr <<<"$side"
  if ! { ip -n "$ns" link set lo up && ip -n "$ns" link set "$ifc" mtu "$mtu" up &&
         ip -n "$ns" addr add "$addr/24" dev "$ifc"; }; then
    fail "cannot configure $ifc in $ns (mtu $mtu, $addr/24)"
  fi
  # IPv6 would put router solicitations and DAD frames on the link.
  ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$ifc.disable_ipv6=1" 2>/dev/null
done

mkdir -p "$out" || fail "cannot create $out"
csv="$out/results.csv"
loadcsv="$out/load.csv"
echo "round,metric,impl,size,value,unit" >"$csv"
echo "time,load1,load5,load15,command" >"$loadcsv"
failures=()
port=19000

iters_bw() { local s=$1; if (( s <= 4096 )); then echo 20000; elif (( s <= 65536 )); then echo 5000; else echo 500; fi; }
# 20,000 round trips: the first thousands are slow on this kind of VM
# (rma_frame_pump over af_packet with 4096 ring slots: 13-15 us a hop over
# 5,000 round trips, 2.7 us over 50,000), so runs of 5,000 measured mostly
# the warm-up.
iters_lat=20000

# Waits until something listens on TCP port $1 in namespace A (every
# server's first step; our tools start DPDK before listening).
wait_listen() {
  local i
  for (( i = 0; i < 300; i++ )); do
    ip netns exec "$ns_a" ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
    kill -0 "$spid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# pair NAME PORT SERVER_CMD... -- CLIENT_CMD...: server in A, client in B,
# both under timeout; the client's output in $work/client.log.
pair() {
  local name=$1 p=$2; shift 2
  split_pair "$@"
  local server=("${pair_server[@]}") client=("${pair_client[@]}")
  log_load "$loadcsv" "$name: ${client[*]}"
  echo "run-twohost: load $pair_load before $name" >&2
  timeout "$tmo" ip netns exec "$ns_a" "${server[@]}" >"$work/server.log" 2>&1 &
  spid=$!
  local rc=0
  if wait_listen "$p"; then
    timeout "$tmo" ip netns exec "$ns_b" "${client[@]}" >"$work/client.log" 2>&1 || rc=$?
  else
    echo "server did not listen on port $p" >"$work/client.log"; rc=97
  fi
  # The server ends on its own after its client; give it a moment, then stop it.
  local i=0
  while kill -0 "$spid" 2>/dev/null && (( i < 50 )); do sleep 0.1; i=$((i + 1)); done
  kill "$spid" 2>/dev/null
  local src=0
  wait "$spid" 2>/dev/null || src=$?
  spid=""
  if [[ $rc -ne 0 || ( $src -ne 0 && $i -lt 50 ) ]]; then
    {
      echo "run-twohost: $name failed (client exit $rc, server exit $src)"
      echo "--- client: ${client[*]}"; tail -n 15 "$work/client.log"
      echo "--- server: ${server[*]}"; tail -n 15 "$work/server.log"
    } >&2
    return 1
  fi
}

record() { echo "$1,$2,$3,$4,$5,$6" >>"$csv"; }
failed() { failures+=("$1"); }

# perftest table row: bytes iters ... -> column N of the last data row
perftest_col() { awk -v c="$1" '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 5 {v=$c} END {if (v != "") print v}' "$work/client.log"; }
# ucx_perftest -f: iters typical_lat avg_lat overall_lat avg_bw overall_bw ...
ucx_col() { awk -v c="$1" '$1 ~ /^[0-9]+$/ && NF >= 8 {v=$c} END {if (v != "") print v}' "$work/client.log"; }
fi_col() { awk -v c="$1" '$1 == "RESULT" {v=$c} END {if (v != "") print v}' "$work/client.log"; }

ours() {  # ours KIND ROUND TOOL METRIC SIZE ITERS COLUMN UNIT   (KIND af_packet or af_xdp)
  local kind=$1 r=$2 tool=$3 metric=$4 s=$5 n=$6 col=$7 unit=$8 v p=$((port += 1)) sa sb impl extra=()
  [[ $tool == rma_read_bw ]] && extra=("${ours_read_args[@]}")
  if [[ $kind == af_packet ]]; then
    sa="af_packet:$if_a,$afp,ip=$nic_a,mac=$mac_a"; sb="af_packet:$if_b,$afp,ip=$nic_b,mac=$mac_b"; impl=ours
  else
    sa="af_xdp:$xdp_a,ip=$xnic_a,mac=$mac_a"; sb="af_xdp:$xdp_b,ip=$xnic_b,mac=$mac_b"; impl=ours-afxdp
  fi
  if pair "ours $kind $tool -s $s" "$p" \
      "$tools/$tool" --transport=softroce --port_type="$sa" --bind="$ip_a" -p "$p" -F -s "$s" -n "$n" "${extra[@]}" -- \
      "$tools/$tool" --transport=softroce --port_type="$sb" -p "$p" -F -s "$s" -n "$n" "${extra[@]}" "$ip_a" &&
     v=$(perftest_col "$col") && [[ -n "$v" ]]; then
    record "$r" "$metric" "$impl" "$s" "$v" "$unit"
  else failed "round $r: $tool over $kind -s $s"; fi
}

ucx() {  # ucx ROUND TEST METRIC SIZE ITERS COLUMN UNIT [EXTRA_ARGS...]
  local r=$1 test=$2 metric=$3 s=$4 n=$5 col=$6 unit=$7 v p=$((port += 1))
  shift 7
  if pair "ucx $test -s $s" "$p" \
      env UCX_TLS=tcp UCX_NET_DEVICES="$if_a" ucx_perftest -p "$p" -- \
      env UCX_TLS=tcp UCX_NET_DEVICES="$if_b" ucx_perftest "$ip_a" -p "$p" -t "$test" -s "$s" -n "$n" -w 100 -f "$@" &&
     v=$(ucx_col "$col") && [[ -n "$v" ]]; then
    record "$r" "$metric" ucx-tcp "$s" "$v" "$unit"
  else failed "round $r: ucx_perftest $test -s $s"; fi
}

libfabric() {  # libfabric ROUND TEST METRIC SIZE ITERS COLUMN UNIT
  local r=$1 test=$2 metric=$3 s=$4 n=$5 col=$6 unit=$7 v p=$((port += 1))
  # A window of 128 outstanding operations: perftest's default tx depth.
  if pair "libfabric $test -s $s" "$p" \
      "$fi_loop" -P tcp -p "$p" -b "$ip_a" -- \
      "$fi_loop" -P tcp -p "$p" -t "$test" -s "$s" -n "$n" -w 128 "$ip_a" &&
     v=$(fi_col "$col") && [[ -n "$v" ]]; then
    record "$r" "$metric" libfabric-tcp "$s" "$v" "$unit"
  else failed "round $r: fi_rma_loop $test -s $s"; fi
}

# link KIND ROUND: rma_frame_pump between the two ends of KIND's veth pair
# (sender in A, receiver in B): payload MiB/s of frames that carry our path
# MTU, and the half round trip of an 8 B frame ping-pong, alone and with an
# ACK-sized frame before each ping and echo.
link() {
  local kind=$1 r=$2 pa pb payload impl v
  if [[ $kind == af_packet ]]; then
    pa="af_packet:$if_a,$afp"; pb="af_packet:$if_b,$afp"; payload=4096; impl=link-afpacket
  else
    pa="af_xdp:$xdp_a"; pb="af_xdp:$xdp_b"; payload=2048; impl=link-afxdp
  fi
  log_load "$loadcsv" "link $kind"
  if timeout "$tmo" ip netns exec "$ns_a" "$pump" --port "$pa" --peer-port "$pb" --peer-netns "$ns_b" \
       --size "$payload" --count 200000 >"$work/client.log" 2>&1 &&
     v=$(sed -n 's/.*Mframes\/s, payload \([0-9.]*\) GB\/s.*/\1/p' "$work/client.log") && [[ -n "$v" ]]; then
    record "$r" link_bw "$impl" "$payload" "$(awk -v g="$v" 'BEGIN {printf "%.1f", g * 1e9 / 1048576}')" MiB/s
  else
    { echo "run-twohost: link $kind frames failed"; tail -n 15 "$work/client.log"; } >&2
    failed "round $r: rma_frame_pump over $kind"
  fi
  # The ping-pong twice: one frame a hop, and (--with-ack) the two frames a
  # hop of an RDMA WRITE ping-pong carries, the answer and the ACK of the
  # WRITE it answers: on a kernel interface every frame costs.
  local ack metric
  for ack in "" --with-ack; do
    metric=link_lat; [[ -n "$ack" ]] && metric=link_lat_ack
    if timeout "$tmo" ip netns exec "$ns_a" "$pump" --port "$pa" --peer-port "$pb" --peer-netns "$ns_b" \
         --pingpong ${ack:+"$ack"} --size 8 --count "$iters_lat" >"$work/client.log" 2>&1 &&
       v=$(sed -n 's/.*half round trip typical \([0-9.]*\) us.*/\1/p' "$work/client.log") && [[ -n "$v" ]]; then
      record "$r" "$metric" "$impl" 8 "$v" us
    else
      { echo "run-twohost: link $kind ping-pong${ack:+ $ack} failed"; tail -n 15 "$work/client.log"; } >&2
      failed "round $r: rma_frame_pump --pingpong${ack:+ $ack} over $kind"
    fi
  done
}

echo "run-twohost: $ns_a/$if_a ($ip_a, our NIC $nic_a) <-> $ns_b/$if_b ($ip_b, our NIC $nic_b), mtu $mtu," \
  "af_packet $afp; af_xdp $xdp_a <-> $xdp_b (our NICs $xnic_a, $xnic_b), mtu $xdp_mtu;" \
  "sizes $sizes; $rounds round(s); load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for (( r = 1; r <= rounds; r++ )); do
  echo "run-twohost: round $r of $rounds" >&2
  for s in $sizes; do
    n=$(iters_bw "$s")
    # Who goes first rotates by round, so no implementation always runs
    # right after the same neighbour.
    for (( k = 0; k < 4; k++ )); do
      case $(( (r + k) % 4 )) in
        0) ours af_packet "$r" rma_write_bw write_bw "$s" "$n" 4 MiB/s
           ours af_packet "$r" rma_read_bw read_bw "$s" "$n" 4 MiB/s ;;
        3) ours af_xdp "$r" rma_write_bw write_bw "$s" "$n" 4 MiB/s
           ours af_xdp "$r" rma_read_bw read_bw "$s" "$n" 4 MiB/s ;;
        # ucp_get keeps one get in flight unless told otherwise (-O): 128, as
        # our tx depth and fi_rma_loop's window. ucp_put_bw keeps UCX's own
        # default: -O 128 made its large puts 5-10x slower here.
        1) ucx "$r" ucp_put_bw write_bw "$s" "$n" 5 MiB/s; ucx "$r" ucp_get read_bw "$s" "$n" 5 MiB/s -O 128 ;;
        2) libfabric "$r" write_bw write_bw "$s" "$n" 5 MiB/s; libfabric "$r" read_bw read_bw "$s" "$n" 5 MiB/s ;;
      esac
    done
  done
  for (( k = 0; k < 4; k++ )); do
    case $(( (r + k) % 4 )) in
      0) ours af_packet "$r" rma_write_lat write_lat 8 "$iters_lat" 5 us ;;  # t_typical (median), half round trip
      3) ours af_xdp "$r" rma_write_lat write_lat 8 "$iters_lat" 5 us ;;
      1) ucx "$r" ucp_put_lat write_lat 8 "$iters_lat" 2 us ;;          # typical latency
      2) libfabric "$r" write_lat write_lat 8 "$iters_lat" 5 us ;;      # median, half round trip
    esac
  done
  link af_packet "$r"
  link af_xdp "$r"
done

python3 "$here/make_table.py" --csv "$csv" --load-csv "$loadcsv" --out "$out/TABLE.md" \
  --command "$invocation" \
  --setup "veth MTU $mtu, our port af_packet:<veth>,$afp (path MTU 4096); second veth pair MTU $xdp_mtu, our port af_xdp:<veth> (path MTU 2048)${ours_read_args[*]:+; our rma_read_bw with ${ours_read_args[*]}}" \
  --failures "${#failures[@]}" || fail "make_table.py failed"
cat "$out/TABLE.md"
if [[ ${#failures[@]} -gt 0 ]]; then
  echo "run-twohost: ${#failures[@]} measurement(s) failed:" >&2
  printf '  %s\n' "${failures[@]}" >&2
  exit 1
fi
echo "run-twohost: wrote $out/TABLE.md, $csv, $loadcsv" >&2
