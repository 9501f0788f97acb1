#!/usr/bin/env bash
# Runs a command with no RMA_* variable in its environment, as a user who
# set nothing would: run_unconfigured.sh COMMAND ARGS...
set -euo pipefail
unset_args=()
while IFS='=' read -r name _; do
  [[ "$name" == RMA_* ]] && unset_args+=(-u "$name")
done < <(env)
exec env "${unset_args[@]}" "$@"
