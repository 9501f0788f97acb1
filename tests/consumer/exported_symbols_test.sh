#!/usr/bin/env bash
# Packaging test (ctest: packaging.exported_symbols).
#
# librma is built with hidden visibility and exports its public interface
# only: the C API of <rma/rma.h> and <shmem.h>/<pshmem.h>, the C++ API of
# <rma/rma.hpp> and <rma/version.hpp>, the SDK of <rma/sdk/*.hpp>, and the
# memory hooks the registration cache interposes. This test reads the
# dynamic symbol table of librma.so and fails when
#   1. an exported C symbol is declared by no public header (checked by
#      compiling a file that takes the address of each one) and is not one
#      of the interposed memory hooks;
#   2. an exported C++ symbol belongs to a namespace that has no public
#      header (providers, the API layers' internals, anonymous namespaces),
#      or to rma::verbs without being declared in <rma/sdk/verbs.hpp>;
#   3. the number of exported C++ symbols is not small (about 170 today;
#      without hidden visibility it is over 10,000);
#   4. a symbol every program needs is missing.
#
# Arguments: --library PATH --include-dir DIR --cc CC [--cc-flags FLAGS]
set -euo pipefail

library="" include_dir="" cc="cc" cc_flags=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --library) library="$2"; shift 2 ;;
    --include-dir) include_dir="$2"; shift 2 ;;
    --cc) cc="$2"; shift 2 ;;
    --cc-flags) cc_flags="$2"; shift 2 ;;
    *) echo "exported_symbols_test.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ -f "$library" ]] || { echo "exported_symbols_test.sh: --library '$library' is not a file" >&2; exit 2; }
[[ -f "$include_dir/rma/rma.h" ]] || { echo "exported_symbols_test.sh: --include-dir '$include_dir' has no rma/rma.h" >&2; exit 2; }

tmp=$(mktemp -d /tmp/rma-symbols.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Defined dynamic symbols; the sanitizers' ODR indicators are not ours.
nm -D --defined-only "$library" | awk '{print $3}' | grep -v '^__odr_asan' | sort -u >"$tmp/all"
grep -v '^_Z' "$tmp/all" >"$tmp/c" || true
grep '^_Z' "$tmp/all" >"$tmp/cxx" || true
echo "== $library: $(wc -l <"$tmp/c") C symbols, $(wc -l <"$tmp/cxx") C++ symbols"

# 1. C symbols: declared by the public headers, or an interposed hook.
hooks=" mmap munmap mremap madvise brk sbrk shmdt "
{
  echo '#include <rma/rma.h>'
  echo '#include <shmem.h>'
  echo '#include <pshmem.h>'
  echo 'const void* const exported[] = {'
  while read -r s; do
    [[ "$hooks" == *" $s "* ]] && continue
    echo "  (const void*)&$s,"
  done <"$tmp/c"
  echo '};'
} >"$tmp/refs.c"
# shellcheck disable=SC2086
if ! LC_ALL=C "$cc" $cc_flags -std=gnu11 -c -I"$include_dir" -I"$include_dir/shmem_root" \
     "$tmp/refs.c" -o "$tmp/refs.o" 2>"$tmp/cc.log"; then
  grep -oE "'[A-Za-z_0-9]+' undeclared" "$tmp/cc.log" | sort -u | sed 's/^/exported but in no public header: /' >"$tmp/undeclared" || true
  if [[ -s "$tmp/undeclared" ]]; then
    while read -r line; do fail "$line"; done <"$tmp/undeclared"
  else
    cat "$tmp/cc.log"
    fail "the public headers do not compile as C ($cc)"
  fi
fi

# 2. C++ symbols: only the SDK's and the C++ API's namespaces.
c++filt <"$tmp/cxx" >"$tmp/cxx.demangled"
internal='rma::(api|shmem|roce|self|swkit|softroce|rcache|bootstrap|providers|datatype|comm|window)::|\(anonymous namespace\)'
grep -E "$internal" "$tmp/cxx.demangled" >"$tmp/leaked" || true
if [[ -s "$tmp/leaked" ]]; then
  sed -n '1,20s/^/  /p' "$tmp/leaked"
  fail "$(wc -l <"$tmp/leaked") internal C++ symbols exported (the first 20 above)"
fi
while read -r name; do
  grep -qw "$name" "$include_dir/rma/sdk/verbs.hpp" || fail "rma::verbs::$name exported but not declared in <rma/sdk/verbs.hpp>"
done < <(grep -oE 'rma::verbs::[A-Za-z_0-9]+' "$tmp/cxx.demangled" | sed 's/rma::verbs:://' | sort -u)

# 3. The whole mechanism: hidden visibility leaves a small C++ surface.
cxx_count=$(wc -l <"$tmp/cxx")
[[ "$cxx_count" -lt 1000 ]] || fail "$cxx_count C++ symbols exported (expected well under 1000: is the library built with hidden visibility?)"

# 4. What programs link against.
for s in rma_init rma_finalize rma_win_create rma_put rma_win_flush shmem_init shmem_putmem \
         pshmem_init shmem_malloc munmap; do
  grep -qx "$s" "$tmp/c" || fail "$s is not exported"
done
for s in 'rma::ProviderRegistry::' 'rma::version_string()' 'rma::endpoint::EndpointManager::create'; do
  grep -qF "$s" "$tmp/cxx.demangled" || fail "no exported symbol matches $s"
done

if [[ "$failures" -ne 0 ]]; then
  echo "exported_symbols: $failures failure(s)"
  exit 1
fi
echo "exported_symbols: ok"
