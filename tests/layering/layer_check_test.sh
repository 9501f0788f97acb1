#!/usr/bin/env bash
# ctest: layering.arrows. The build's layer check (cmake/check_layers.cmake)
# accepts the tree as it is and refuses each kind of wrong arrow, naming the
# file and the rule: a provider reaching into the API, the API reaching into
# an engine internal or a provider, DPDK outside dpdk/port, the engine
# including a provider.
# Arguments: CMAKE SOURCE_DIR
set -euo pipefail
cmake_cmd="$1" src="$2"
tmp=$(mktemp -d /tmp/rma-layers.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failures=0

if ! "$cmake_cmd" -DSOURCE_DIR="$src" -P "$src/cmake/check_layers.cmake" >"$tmp/tree.log" 2>&1; then
  cat "$tmp/tree.log"
  echo "FAIL: the source tree breaks its own layering"
  failures=$((failures + 1))
fi

# name | file | line
cases=(
  "provider into the API|dpdk/rc/bad.cpp|#include \"window/window.hpp\""
  "API into an engine internal|rmaapi/window/bad.cpp|#include \"rcache/interval_map.hpp\""
  "API into a provider|rmaapi/shmem/bad.cpp|#include \"rc/qp.hpp\""
  "DPDK outside dpdk/port|dpdk/wire/bad.hpp|#include <rte_mbuf.h>"
  "engine into a provider|engine/endpoint/bad.cpp|#include \"verbs/verbs_provider.hpp\""
  "wire into the Link|dpdk/wire/bad2.cpp|  #  include \"link/link.hpp\""
  "SDK into an internal|include/rma/sdk/bad.hpp|#include \"swkit/id_index.hpp\""
)
for c in "${cases[@]}"; do
  IFS='|' read -r name file line <<<"$c"
  fixture="$tmp/fixture"
  rm -rf "$fixture"
  mkdir -p "$fixture/$(dirname "$file")"
  printf '%s\n#include "rma/sdk/status.hpp"\n' "$line" >"$fixture/$file"
  if "$cmake_cmd" -DSOURCE_DIR="$fixture" -P "$src/cmake/check_layers.cmake" >"$tmp/case.log" 2>&1; then
    echo "FAIL: $name ($file) was accepted"
    failures=$((failures + 1))
  elif ! grep -qF "$file: includes" "$tmp/case.log"; then
    cat "$tmp/case.log"
    echo "FAIL: $name: the message does not name $file"
    failures=$((failures + 1))
  else
    echo "ok: $name refused: $(grep -F "$file: includes" "$tmp/case.log" | sed 's/^ *//')"
  fi
done

[[ "$failures" -eq 0 ]] || { echo "layering.arrows: $failures failure(s)"; exit 1; }
echo "layering.arrows: ok"
