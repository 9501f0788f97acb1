#!/bin/sh
# Builds a libFuzzer target with clang++ and runs it for a bounded number of
# inputs (at most RMA_FUZZ_MAX_TIME seconds, default 60).
#   fuzz/run-fuzz.sh [parse|rc_state] [runs]
#     parse     the RoCE v2 parser and the ARP parser with the neighbour
#               table's reply checks (dpdk/wire, dpdk/rc/neighbour_table);
#               default 200000 inputs
#     rc_state  the RC engine, stateful: a requester and a responder QP over
#               an in-memory link, frames and control-path events
#               (fuzz/rc_state_fuzz.cpp); default 3000 inputs
# By hand, longer: RMA_FUZZ_MAX_TIME=3600 fuzz/run-fuzz.sh rc_state 100000000
# Environment: CLANGXX (default clang++), RMA_FUZZ_BUILD_DIR (where the
# binary and corpus go; default $TMPDIR/rma-fuzz-$UID), RMA_FUZZ_MAX_TIME.
# Exit 77 (ctest: skipped) when clang++ or its libFuzzer runtime is missing.
set -eu

target=parse
case "${1:-}" in
  parse|rc_state) target=$1; shift ;;
esac
if [ "$target" = parse ]; then runs=${1:-200000}; else runs=${1:-3000}; fi
max_time=${RMA_FUZZ_MAX_TIME:-60}
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cxx=${CLANGXX:-clang++}
out=${RMA_FUZZ_BUILD_DIR:-${TMPDIR:-/tmp}/rma-fuzz-$(id -u)}

if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "run-fuzz: $cxx not found; skipped (apt-get install clang libclang-rt-14-dev)"
  exit 77
fi
mkdir -p "$out/corpus-$target"

probe="$out/probe.cpp"
printf '%s\n' '#include <cstdint>' '#include <cstddef>' \
  'extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }' > "$probe"
if ! "$cxx" -fsanitize=fuzzer "$probe" -o "$out/probe" >/dev/null 2>&1; then
  echo "run-fuzz: $cxx cannot link -fsanitize=fuzzer (libclang-rt-dev missing?); skipped"
  exit 77
fi

flags="-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
wire="$root/dpdk/wire/opcodes.cpp $root/dpdk/wire/addressing.cpp $root/dpdk/wire/icrc.cpp
      $root/dpdk/wire/build.cpp $root/dpdk/wire/packet_template.cpp $root/dpdk/wire/parse.cpp $root/dpdk/wire/arp.cpp
      $root/dpdk/wire/copy_crc.cpp $root/dpdk/wire/frame.cpp"

echo "run-fuzz: building $out/${target}_fuzz"
if [ "$target" = parse ]; then
  # shellcheck disable=SC2086
  "$cxx" $flags -I"$root/dpdk" -I"$root/include" "$here/parse_fuzz.cpp" $wire "$root/dpdk/rc/neighbour_table.cpp" \
    -lisal -o "$out/parse_fuzz"
  # Seeds: valid RoCE v2 frames built by scapy (see tests/dpdk/wire/icrc_test.cpp).
  seed() { printf '%s' "$2" | xxd -r -p > "$out/corpus-parse/seed-$1" 2>/dev/null || \
    python3 -c "import sys; open(sys.argv[1],'wb').write(bytes.fromhex(sys.argv[2]))" "$out/corpus-parse/seed-$1" "$2"; }
  seed write_only 02000000000202000000000108004502004412344000401114710a0000010a000002c12312b7003000000a30ffff8000012380abcdef00007f0012345678abcd12340000000568656c6c6f0000007391f66d
  seed ack 02000000000202000000000108004500003000014000ff1167b90a0000010a000002c00012b7001c00001100ffff00ffffff000000011f0000077c955ca3
  seed cmp_swap 020000000002020000000001080045b80048beef40000311a3fb0a0000010a000002ffff12b70034000013c080014000004200ffffff000000000000100055aa55aa01020304050607081112131415161718699146ba
  # ARP: a request for 169.254.1.2 and its reply (tests/dpdk/wire/arp_test.cpp).
  seed arp_request ffffffffffff06123456000108060001080006040001061234560001a9fe0101000000000000a9fe0102000000000000000000000000000000000000
  seed arp_reply 06123456000106123456000208060001080006040002061234560002a9fe0102061234560001a9fe0101000000000000000000000000000000000000
  max_len=4200
else
  # The RC engine with what it needs of the engine core (Status, the post
  # checks) and of swkit (CSPRNG, key table, completion ring, SGLs, work
  # queues); no DPDK, no memory monitor.
  # shellcheck disable=SC2086
  "$cxx" $flags -I"$root/dpdk" -I"$root/include" -I"$root/engine" "$here/rc_state_fuzz.cpp" $wire \
    "$root/dpdk/wire/pcap_writer.cpp" "$root/dpdk/rc/types.cpp" "$root/dpdk/rc/engine.cpp" \
    "$root/dpdk/rc/neighbour_table.cpp" \
    "$root/dpdk/rc/qp.cpp" "$root/dpdk/rc/requester.cpp" "$root/dpdk/rc/completer.cpp" \
    "$root/dpdk/rc/responder.cpp" "$root/engine/status.cpp" \
    "$root/engine/provider_checks.cpp" "$root/engine/contract.cpp" "$root/engine/swkit/secure_random.cpp" \
    "$root/engine/swkit/key_table.cpp" "$root/engine/swkit/completion_ring.cpp" "$root/engine/swkit/sgl.cpp" \
    "$root/engine/swkit/work_queue.cpp" \
    -lisal -o "$out/rc_state_fuzz"
  # Seeds: committed programs (fuzz/corpus/rc_state: register, post, deliver, inject ...).
  cp "$here"/corpus/rc_state/* "$out/corpus-rc_state/" 2>/dev/null || true
  max_len=4096
fi

echo "run-fuzz: running $runs inputs (max ${max_time}s)"
exec "$out/${target}_fuzz" -runs="$runs" -max_total_time="$max_time" -max_len="$max_len" -print_final_stats=1 \
  -artifact_prefix="$out/${target}-" "$out/corpus-$target"
