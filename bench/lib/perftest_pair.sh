# Sourced by the bench scripts: runs one perftest-style tool as server and
# client over softroce on a memif pair on this machine.
#
#   perftest_pair_init            makes $pair_tmp and an EXIT trap that kills
#                                 a server left running and removes $pair_tmp
#   perftest_pair BINDIR TOOL ARGS...
#                                 runs BINDIR/TOOL ARGS as server (bound to
#                                 127.0.0.1, a free port) and as client; on
#                                 success prints the client's output, else
#                                 both outputs on stderr and returns 1
# Each side gets 300 s.

perftest_pair_init() {
  pair_tmp="$(mktemp -d "${TMPDIR:-/tmp}/rma-perftest-pair.XXXXXX")"
  pair_server_pid=""
  trap perftest_pair_cleanup EXIT
}

perftest_pair_cleanup() {
  if [[ -n "${pair_server_pid:-}" ]] && kill -0 "$pair_server_pid" 2>/dev/null; then
    kill "$pair_server_pid" 2>/dev/null || true
  fi
  [[ -n "${pair_tmp:-}" ]] && rm -rf "$pair_tmp"
}

perftest_pair_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

perftest_pair() {
  local bindir="$1" tool="$2"; shift 2
  local port; port="$(perftest_pair_free_port)"
  # PERFTEST_PAIR_SERVER_CPU / _CLIENT_CPU: pin each side to that CPU.
  local spin=() cpin=()
  [[ -n "${PERFTEST_PAIR_SERVER_CPU:-}" ]] && spin=(taskset -c "$PERFTEST_PAIR_SERVER_CPU")
  [[ -n "${PERFTEST_PAIR_CLIENT_CPU:-}" ]] && cpin=(taskset -c "$PERFTEST_PAIR_CLIENT_CPU")
  "${spin[@]}" timeout 300 "$bindir/$tool" --transport=softroce --port_type=memif --bind=127.0.0.1 -p "$port" -F "$@" \
    >"$pair_tmp/server.log" 2>&1 &
  pair_server_pid=$!
  local rc=0
  "${cpin[@]}" timeout 300 "$bindir/$tool" --transport=softroce --port_type=memif -p "$port" -F "$@" 127.0.0.1 \
    >"$pair_tmp/client.log" 2>&1 || rc=$?
  wait "$pair_server_pid" || rc=$?
  pair_server_pid=""
  if [[ $rc -ne 0 ]]; then
    echo "$tool $* failed (client, then server):" >&2
    cat "$pair_tmp/client.log" "$pair_tmp/server.log" >&2
    return 1
  fi
  cat "$pair_tmp/client.log"
}
