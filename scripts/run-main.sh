#!/usr/bin/env bash
# The main job: a perftest-style RDMA WRITE bandwidth run on the built-in
# default transport, with no configuration and no RDMA hardware. It installs
# what the build needs, builds rma_write_bw with the release preset, starts a
# server and a client on this machine (TCP on 127.0.0.1 for the out-of-band
# exchange; the data moves through librma's software RoCE v2 NIC over a DPDK
# memif link between the two processes) and prints the client's table.
#
#   scripts/run-main.sh [rma_write_bw flags...]     e.g. -a, -s 4096, --report_gbits
#
# The flags go to both sides, as they would with perftest's ib_write_bw.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# shellcheck source=SCRIPTDIR/lib/deps.sh
source scripts/lib/deps.sh
# shellcheck disable=SC2119  # no extra packages
rma_install_deps

# Build quietly; show the output only when something fails.
log="$(mktemp "${TMPDIR:-/tmp}/rma-main.XXXXXX")"
server_log="$(mktemp "${TMPDIR:-/tmp}/rma-main-server.XXXXXX")"
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then kill "$server_pid" 2>/dev/null || true; fi
  rm -f "$log" "$server_log"
}
trap cleanup EXIT
jobs="$(nproc 2>/dev/null || echo 2)"
if ! { cmake --preset release && cmake --build --preset release --target rma_write_bw -j "$jobs"; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "run-main: building rma_write_bw (preset release) failed" >&2
  exit 1
fi

tool=build/release/bench/perftest/rma_write_bw
# A free TCP port on 127.0.0.1 for the exchange (perftest's 18515 may be taken).
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"

timeout 300 "$tool" --bind=127.0.0.1 -p "$port" "$@" >"$server_log" 2>&1 &
server_pid=$!
rc=0
timeout 300 "$tool" -p "$port" "$@" 127.0.0.1 || rc=$?
if ! wait "$server_pid"; then
  [[ $rc -ne 0 ]] || rc=1
  echo "run-main: the server side failed:" >&2
  cat "$server_log" >&2
fi
server_pid=""
exit "$rc"
