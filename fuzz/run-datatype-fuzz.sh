#!/bin/sh
# Builds the libFuzzer target for the datatype engine and its C API's
# argument checks (fuzz/datatype_fuzz.cpp) with clang++ and runs it on the
# committed seed corpus for a bounded number of inputs (default 200000; at
# most RMA_FUZZ_MAX_TIME s, default 60). Longer by hand:
#   fuzz/run-datatype-fuzz.sh 100000000
# Environment: CLANGXX (default clang++), RMA_FUZZ_BUILD_DIR (binary and
# working corpus; default $TMPDIR/rma-datatype-fuzz-$UID), RMA_FUZZ_MAX_TIME.
# Exit 77 (ctest: skipped) when clang++ or its libFuzzer runtime is missing.
set -eu

runs=${1:-200000}
max_time=${RMA_FUZZ_MAX_TIME:-60}
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cxx=${CLANGXX:-clang++}
out=${RMA_FUZZ_BUILD_DIR:-${TMPDIR:-/tmp}/rma-datatype-fuzz-$(id -u)}

if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "run-datatype-fuzz: $cxx not found; skipped (apt-get install clang libclang-rt-14-dev)"
  exit 77
fi
mkdir -p "$out/corpus"

probe="$out/probe.cpp"
printf '%s\n' '#include <cstdint>' '#include <cstddef>' \
  'extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }' > "$probe"
if ! "$cxx" -fsanitize=fuzzer "$probe" -o "$out/probe" >/dev/null 2>&1; then
  echo "run-datatype-fuzz: $cxx cannot link -fsanitize=fuzzer (libclang-rt-dev missing?); skipped"
  exit 77
fi

echo "run-datatype-fuzz: building $out/datatype_fuzz"
dt="$root/rmaapi/datatype"
"$cxx" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  -fno-omit-frame-pointer -I"$root/rmaapi" -I"$root/include" -I"$root/engine" \
  "$here/datatype_fuzz.cpp" "$dt/errors.cpp" "$dt/constructors.cpp" "$dt/predefined.cpp" \
  "$dt/block_cursor.cpp" "$dt/pack.cpp" "$dt/c_api.cpp" "$root/engine/status.cpp" \
  -o "$out/datatype_fuzz"

echo "run-datatype-fuzz: running $runs inputs (max ${max_time}s) from the seeds in fuzz/corpus/datatype"
exec "$out/datatype_fuzz" -runs="$runs" -max_total_time="$max_time" -max_len=512 -print_final_stats=1 \
  -artifact_prefix="$out/" "$out/corpus" "$here/corpus/datatype"
