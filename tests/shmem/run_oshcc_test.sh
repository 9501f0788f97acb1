#!/usr/bin/env bash
# Packaging test of the OpenSHMEM tools (ctest: shmem.packaging.oshcc):
# installs the build tree into a temporary prefix, checks that <shmem.h>,
# oshcc, oshc++ and oshrun are there, builds oshcc_hello.c with oshcc (C) and
# oshc++ (C++), checks --showme, and runs both with oshrun -np 2 over the
# software RoCE NIC. The prefix is removed on every exit path.
#   run_oshcc_test.sh <build-dir> <source-file> <cmake>
set -euo pipefail
build_dir="$1" source="$2" cmake_cmd="${3:-cmake}"
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp="$(mktemp -d "${TMPDIR:-/tmp}/rma-oshcc.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"
"$cmake_cmd" --install "$build_dir" --prefix "$prefix" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "install"; }
for f in include/shmem.h include/pshmem.h include/rma/shmem.h include/rma/shmem_generic.h bin/oshcc bin/oshc++ bin/oshrun bin/rmarun; do
  [[ -e "$prefix/$f" ]] || fail "$f was not installed"
done
showme="$("$prefix/bin/oshcc" --showme hello.c -o hello)"
echo "oshcc --showme: $showme"
[[ "$showme" == *"-I$prefix/include"* && "$showme" == *"-lrma"* && "$showme" == *"hello.c -o hello"* ]] ||
  fail "oshcc --showme does not name the include dir, hello.c and -lrma: $showme"
[[ "$("$prefix/bin/oshcc" --showme -c hello.c)" != *"-lrma"* ]] || fail "oshcc --showme -c links"
# Open MPI's spelling works too, and the prefix is found from the script's place.
"$prefix/bin/oshcc" -std=c11 -O1 "$source" -o "$tmp/hello_c"
cp "$source" "$tmp/hello.cpp"
"$prefix/bin/oshc++" -std=c++17 -O1 "$tmp/hello.cpp" -o "$tmp/hello_cxx"
for prog in hello_c hello_cxx; do
  out="$(cd "$tmp" && env -u RMA_SOFTROCE_PORT RMA_PROVIDER=softroce ASAN_OPTIONS=detect_leaks=0 \
         timeout 120 "$prefix/bin/oshrun" -np 2 "./$prog" 2>&1)" || { echo "$out"; fail "$prog under oshrun"; }
  for pe in 0 1; do
    grep -q "PE $pe of 2: hello ok" <<<"$out" || { echo "$out"; fail "$prog: PE $pe did not say hello ok"; }
  done
  echo "$prog: ok"
done
echo "oshcc packaging ok"
