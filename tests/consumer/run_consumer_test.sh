#!/usr/bin/env bash
# Packaging test (ctest: packaging.out_of_tree_consumer).
#
# Installs a librma build tree into a temporary prefix and builds the consumer
# program in project/ against the installed copy only, four ways:
#   1. find_package(rma CONFIG) + rma::rma        (shared)
#   2. find_package(rma CONFIG) + rma::rma_static (static)
#   3. g++ $(pkg-config --cflags --libs rma)      (shared)
#   4. g++ ... $(pkg-config --static --libs rma)  (static)
# runs each and checks it prints "consumer ok". Also checks the installed
# files, the shared library's SONAME and the version file's compatibility rule.
# The temporary prefix is removed on every exit path.
#
# Arguments are passed in by tests/consumer/CMakeLists.txt:
#   --build-dir DIR --project-dir DIR --cmake CMAKE --generator GEN --cxx CXX
#   --cxx-flags FLAGS --libdir DIR --includedir DIR --version X.Y.Z --soversion N
set -euo pipefail

build_dir="" project_dir="" cmake_cmd="cmake" generator="" cxx="c++" cxx_flags=""
libdir="lib" includedir="include" version="" soversion=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir="$2"; shift 2 ;;
    --project-dir) project_dir="$2"; shift 2 ;;
    --cmake) cmake_cmd="$2"; shift 2 ;;
    --generator) generator="$2"; shift 2 ;;
    --cxx) cxx="$2"; shift 2 ;;
    --cxx-flags) cxx_flags="$2"; shift 2 ;;
    --libdir) libdir="$2"; shift 2 ;;
    --includedir) includedir="$2"; shift 2 ;;
    --version) version="$2"; shift 2 ;;
    --soversion) soversion="$2"; shift 2 ;;
    *) echo "run_consumer_test.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
for v in build_dir project_dir version soversion; do
  if [[ -z "${!v}" ]]; then
    echo "run_consumer_test.sh: --${v//_/-} is required" >&2
    exit 2
  fi
done

fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }
need_tool() { command -v "$1" >/dev/null 2>&1 || fail "'$1' not found (install $2; scripts/lib/deps.sh does)"; }
need_tool pkg-config pkgconf
need_tool readelf binutils
need_tool objdump binutils

tmp="$(mktemp -d "${TMPDIR:-/tmp}/rma-consumer.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"
read -r -a flags <<<"$cxx_flags"   # sanitizer flags, possibly none

# Runs one consumer binary with a timeout and checks for "consumer ok".
run_consumer() {
  local name="$1" bin="$2" out rc=0
  shift 2
  out="$(env "$@" timeout 120 "$bin" 2>&1)" || rc=$?
  printf '%s\n' "$out" | sed "s/^/   [$name] /"
  [[ $rc -eq 0 ]] || fail "$name exited with status $rc"
  grep -qx 'consumer ok' <<<"$out" || fail "$name did not print 'consumer ok'"
  echo "   $name: ok"
}

needed_libs() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
# Succeeds when the binary $1 has a NEEDED entry for librma.so.<anything>.
links_librma_so() {
  local libs
  libs="$(needed_libs "$1")"
  grep -q '^librma\.so' <<<"$libs"
}
links_soname() {  # <binary> <soname>
  local libs
  libs="$(needed_libs "$1")"
  grep -qx "$2" <<<"$libs"
}

step "install $build_dir -> $prefix"
"$cmake_cmd" --install "$build_dir" --prefix "$prefix" >"$tmp/install.log" 2>&1 \
  || { cat "$tmp/install.log" >&2; fail "cmake --install failed"; }

step "installed files"
real_so="$prefix/$libdir/librma.so.$version"
for f in "$real_so" "$prefix/$libdir/librma.so.$soversion" "$prefix/$libdir/librma.so" \
         "$prefix/$libdir/librma.a" \
         "$prefix/$includedir/rma/sdk/provider.hpp" "$prefix/$includedir/rma/sdk/registry.hpp" \
         "$prefix/$includedir/rma/sdk/status.hpp" \
         "$prefix/$libdir/cmake/rma/rmaConfig.cmake" \
         "$prefix/$libdir/cmake/rma/rmaConfigVersion.cmake" \
         "$prefix/$libdir/cmake/rma/rmaTargets.cmake" \
         "$prefix/$libdir/pkgconfig/rma.pc"; do
  [[ -e "$f" ]] || fail "not installed: ${f#"$prefix"/}"
done
[[ -L "$prefix/$libdir/librma.so.$soversion" ]] || fail "librma.so.$soversion is not a symlink"
[[ -L "$prefix/$libdir/librma.so" ]] || fail "librma.so is not a symlink"
echo "   ok"

step "SONAME"
soname_readelf="$(readelf -d "$real_so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
soname_objdump="$(objdump -p "$real_so" | awk '$1 == "SONAME" { print $2 }')"
[[ "$soname_readelf" == "librma.so.$soversion" ]] \
  || fail "readelf: SONAME is '$soname_readelf', expected librma.so.$soversion"
[[ "$soname_objdump" == "librma.so.$soversion" ]] \
  || fail "objdump: SONAME is '$soname_objdump', expected librma.so.$soversion"
echo "   librma.so.$version: SONAME $soname_readelf"

cmake_gen=()
[[ -n "$generator" ]] && cmake_gen=(-G "$generator")
configure_consumer() {  # <binary dir> [extra cmake args...]
  local bdir="$1"
  shift
  "$cmake_cmd" -S "$project_dir" -B "$bdir" "${cmake_gen[@]}" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
    -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_CXX_FLAGS="$cxx_flags" \
    -DCMAKE_EXE_LINKER_FLAGS="$cxx_flags" \
    "$@"
}

step "find_package(rma CONFIG): configure and build $project_dir"
cbuild="$tmp/cmake-build"
configure_consumer "$cbuild" -DRMA_WANTED_VERSION="$version" >"$tmp/configure.log" 2>&1 \
  || { cat "$tmp/configure.log" >&2; fail "configuring the consumer project failed"; }
found_dir="$(sed -n 's/^rma_DIR:[A-Z]*=//p' "$cbuild/CMakeCache.txt")"
[[ "$found_dir" == "$prefix/$libdir/cmake/rma" ]] \
  || fail "find_package(rma) found '$found_dir', not the temporary prefix"
"$cmake_cmd" --build "$cbuild" >"$tmp/build.log" 2>&1 \
  || { cat "$tmp/build.log" >&2; fail "building the consumer project failed"; }
links_soname "$cbuild/consumer_shared" "librma.so.$soversion" \
  || fail "consumer_shared does not link librma.so.$soversion"
! links_librma_so "$cbuild/consumer_static" \
  || fail "consumer_static links librma.so; expected librma.a"
run_consumer "cmake rma::rma" "$cbuild/consumer_shared" LD_LIBRARY_PATH="$prefix/$libdir"
run_consumer "cmake rma::rma_static" "$cbuild/consumer_static"

step "rmaConfigVersion.cmake: SameMajorVersion"
next_major="$(( ${version%%.*} + 1 )).0"
if configure_consumer "$tmp/cmake-incompatible" -DRMA_WANTED_VERSION="$next_major" \
     >"$tmp/incompatible.log" 2>&1; then
  fail "find_package(rma $next_major) accepted version $version"
fi
grep -q "considered but not accepted" "$tmp/incompatible.log" \
  || { cat "$tmp/incompatible.log" >&2; fail "find_package(rma $next_major) failed for another reason"; }
echo "   $version satisfies $version, rejects $next_major"

step "pkg-config"
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
pc_version="$(pkg-config --modversion rma)" || fail "pkg-config cannot find rma in $PKG_CONFIG_PATH"
[[ "$pc_version" == "$version" ]] || fail "pkg-config says version '$pc_version', expected $version"
read -r -a pc_cflags <<<"$(pkg-config --cflags rma)"
read -r -a pc_libs <<<"$(pkg-config --libs rma)"
read -r -a pc_static_libs <<<"$(pkg-config --static --libs rma)"
echo "   cflags: ${pc_cflags[*]}"
echo "   libs: ${pc_libs[*]}"
echo "   libs --static: ${pc_static_libs[*]}"
# The headers need C++20; pkg-config cannot say so (Cflags also serve C).
"$cxx" -std=c++20 "${flags[@]}" "$project_dir/consumer.cpp" -o "$tmp/consumer_pc" \
  "${pc_cflags[@]}" "${pc_libs[@]}" || fail "g++ \$(pkg-config --cflags --libs rma) failed"
links_soname "$tmp/consumer_pc" "librma.so.$soversion" \
  || fail "consumer_pc does not link librma.so.$soversion"
run_consumer "pkg-config shared" "$tmp/consumer_pc" LD_LIBRARY_PATH="$prefix/$libdir"

# Static: the same flags, with -lrma pinned to the archive (a plain -lrma
# would pick librma.so when both are installed).
static_libs=()
for arg in "${pc_static_libs[@]}"; do
  if [[ "$arg" == "-lrma" ]]; then static_libs+=("-l:librma.a"); else static_libs+=("$arg"); fi
done
"$cxx" -std=c++20 "${flags[@]}" "$project_dir/consumer.cpp" -o "$tmp/consumer_pc_static" \
  "${pc_cflags[@]}" "${static_libs[@]}" \
  || fail "g++ \$(pkg-config --static --cflags --libs rma) failed"
! links_librma_so "$tmp/consumer_pc_static" \
  || fail "consumer_pc_static links librma.so; expected librma.a"
run_consumer "pkg-config static" "$tmp/consumer_pc_static"

echo "packaging: all consumers ok"
