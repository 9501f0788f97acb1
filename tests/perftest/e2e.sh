#!/usr/bin/env bash
# End-to-end tests of the perftest-compatible tools (rma_*_bw, rma_*_lat).
#   e2e.sh <bin-dir> <helper> <rma_info> <case> [tool args...]
# Cases that need no transport: unknown_flag, bad_size, unreachable, port_in_use, self_transport.
# run <tool> [args]: a server and a client on 127.0.0.1 over the provider E2E_TRANSPORT
# (default softroce: memif, socket rma-perftest-<port>; shm: the shared-memory provider);
# exits 77 (SKIP) when that provider is not registered. On softroce both sides must end
# with the transport summary (retransmissions and NAKs from the device counters).
set -u
BIN=$1 HELPER=$2 RMA_INFO=$3 CASE=$4
shift 4
WORK=$(mktemp -d /tmp/rma-perftest-e2e.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT

fail() { echo "FAIL: $*"; for f in "$WORK"/*.out; do [ -f "$f" ] && { echo "--- $f"; cat "$f"; }; done; exit 1; }

# expect_fail <expected rc> <text in stderr> <command...>
expect_fail() {
  local want_rc=$1 text=$2
  shift 2
  local start=$SECONDS
  "$@" >"$WORK/cmd.out" 2>"$WORK/cmd.err"
  local rc=$?
  echo "command: $* -> rc $rc in $((SECONDS - start)) s"
  echo "stderr: $(cat "$WORK/cmd.err")"
  [ "$rc" = "$want_rc" ] || fail "exit code $rc, expected $want_rc"
  grep -qF -- "$text" "$WORK/cmd.err" || fail "stderr lacks '$text'"
}

port=$("$HELPER" free-port) || fail "no free port"

case "$CASE" in
  unknown_flag)
    expect_fail 1 "rma_write_bw: unknown option '--bogus' (see --help)" timeout 20 "$BIN/rma_write_bw" --bogus
    expect_fail 1 "rma_read_lat: unknown option '-Z' (see --help)" timeout 20 "$BIN/rma_read_lat" -Z 127.0.0.1
    ;;
  bad_size)
    expect_fail 1 "message size should be between 1 and 2147483647 (got 0)" timeout 20 "$BIN/rma_read_bw" -s 0
    expect_fail 1 "message size cannot be changed for atomic tests" timeout 20 "$BIN/rma_atomic_bw" -s 64
    expect_fail 1 "-D/--duration and -n/--iters cannot be used together" timeout 20 "$BIN/rma_write_lat" -D 2 -n 100
    ;;
  unreachable)
    expect_fail 1 "cannot reach server 127.0.0.1:$port: Connection refused" timeout 30 "$BIN/rma_write_bw" -p "$port" 127.0.0.1
    ;;
  port_in_use)
    "$HELPER" listen "$port" 30 >"$WORK/helper.out" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 50); do grep -q listening "$WORK/helper.out" && break; sleep 0.1; done
    expect_fail 1 "cannot listen on 127.0.0.1:$port: port already in use" timeout 30 "$BIN/rma_write_bw" -p "$port" --bind=127.0.0.1
    ;;
  self_transport)
    expect_fail 1 "the 'self' provider is in-process only: it cannot connect two processes" \
      timeout 30 "$BIN/rma_write_bw" --transport=self -p "$port" --bind=127.0.0.1
    ;;
  run)
    tool=$1
    shift
    transport=${E2E_TRANSPORT:-softroce}
    if ! "$RMA_INFO" -d 2>/dev/null | grep -q "^provider $transport"; then
      echo "SKIP: the $transport provider is not registered in this build"
      exit 77
    fi
    common=(--transport="$transport" -p "$port" "$@")
    timeout 60 "$BIN/$tool" "${common[@]}" --bind=127.0.0.1 >"$WORK/server.out" 2>&1 &
    spid=$!
    PIDS+=($spid)
    sleep 0.3
    timeout 60 "$BIN/$tool" "${common[@]}" 127.0.0.1 >"$WORK/client.out" 2>&1
    crc=$?
    wait "$spid"
    src=$?
    echo "=== server (rc $src)"; cat "$WORK/server.out"
    echo "=== client (rc $crc)"; cat "$WORK/client.out"
    [ "$crc" = 0 ] || fail "client exited $crc"
    [ "$src" = 0 ] || fail "server exited $src"
    for side in server client; do
      grep -q ' #bytes' "$WORK/$side.out" || fail "$side printed no results table"
      grep -q 'local address: LID 0000 QPN' "$WORK/$side.out" || fail "$side printed no address line"
      # a data row: the size then the iteration count
      grep -Eq '^ [0-9]+ +[0-9]+ +[0-9.]+' "$WORK/$side.out" || fail "$side printed no result row"
      # Why a run was slow is on screen: what the NIC retransmitted and NAKed.
      if [ "$transport" = softroce ]; then
        grep -Eq '^ Transport +: ' "$WORK/$side.out" || fail "$side printed no retransmission/NAK summary"
      fi
    done
    # A sweep (-a) covers 2 B .. 8 MiB: every size has its row.
    if printf '%s\n' "$@" | grep -qx -- '-a'; then
      rows=$(grep -Ec '^ [0-9]+ +[0-9]+ +[0-9.]+' "$WORK/client.out")
      [ "$rows" = 23 ] || fail "the -a sweep printed $rows result rows, not the 23 sizes 2 B .. 8 MiB"
    fi
    # The addresses are the QPs' real ones: what one side prints as its own
    # QPN, PSN and RKey the other prints as the remote's, and on softroce the
    # PSNs are the random ones the NIC starts from (not all zero).
    fields() {  # side file...: "QPN q PSN p [RKey r]" per address line, sorted
      awk -v side="$1" '$0 ~ side " address:" {
        out = ""
        for (i = 1; i < NF; i++) if ($i == "QPN" || $i == "PSN" || $i == "RKey") out = out $i " " $(i + 1) " "
        print out
      }' "${@:2}" | sort
    }
    for pair in "server client" "client server"; do
      set -- $pair
      [ -n "$(fields local "$WORK/$1.out")" ] || fail "$1 printed no QPN/PSN"
      [ "$(fields local "$WORK/$1.out")" = "$(fields remote "$WORK/$2.out")" ] ||
        fail "$1's local QPN/PSN/RKey differ from what $2 prints as remote"
    done
    # (shm has no wire and no packet sequence: its QPs start at PSN 0.)
    if [ "$transport" = softroce ]; then
      fields local "$WORK/server.out" "$WORK/client.out" | grep -Eqv 'PSN (0x)?0+ ' ||
        fail "every PSN printed is 0"
    fi
    ;;
  *)
    echo "unknown case $CASE"
    exit 2
    ;;
esac
echo PASS
