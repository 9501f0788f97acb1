#!/bin/sh
# Runs a rank of an rmarun job as if the job spanned hosts: ranks
# 0..P-1 get host identity "host0", P..2P-1 "host1", ... (P =
# RMA_TEST_RANKS_PER_HOST, default 2), so the endpoint manager uses shm
# between ranks of one "host" and the network provider between the others,
# all on this machine. Usage: host_per_rank.sh PROGRAM [ARGS...]
per_host=${RMA_TEST_RANKS_PER_HOST:-2}
case "$per_host" in
  ''|*[!0-9]*|0) echo "host_per_rank.sh: RMA_TEST_RANKS_PER_HOST='$per_host' is not a positive number" >&2; exit 2 ;;
esac
if [ -z "${RMA_RANK:-}" ]; then
  echo "host_per_rank.sh: RMA_RANK is not set (run it under rmarun)" >&2
  exit 2
fi
RMA_HOST_ID="host$((RMA_RANK / per_host))"
export RMA_HOST_ID
exec "$@"
