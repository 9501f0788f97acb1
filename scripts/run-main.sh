#!/usr/bin/env bash
# The main job: install what the build needs, build rma_demo with the release
# preset and run it with this script's arguments.
#   scripts/run-main.sh [rma_demo arguments...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# shellcheck source=SCRIPTDIR/lib/deps.sh
source scripts/lib/deps.sh
# shellcheck disable=SC2119  # no extra packages
rma_install_deps

# Build quietly; show the output only when something fails.
log="$(mktemp "${TMPDIR:-/tmp}/rma-main.XXXXXX")"
trap 'rm -f "$log"' EXIT
jobs="$(nproc 2>/dev/null || echo 2)"
if ! { cmake --preset release && cmake --build --preset release --target rma_demo -j "$jobs"; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "run-main: building rma_demo (preset release) failed" >&2
  exit 1
fi
rm -f "$log"
trap - EXIT
exec build/release/tools/rma_demo "$@"
