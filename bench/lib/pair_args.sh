# shellcheck shell=bash
# Sourced by the side-by-side bench scripts (report/run-report.sh,
# twohost/run-twohost.sh): the pieces of a "server/client pair" they share.
#
#   split_pair SERVER_CMD... -- CLIENT_CMD...
#       sets the arrays pair_server and pair_client
#   log_load CSV LABEL
#       appends "time,load1,load5,load15,\"LABEL\"" to CSV (2 shared vCPUs:
#       a load above ~1 before a pair means it competed for them)

split_pair() {
  pair_server=()
  pair_client=()
  local seen=0 a
  for a in "$@"; do
    if [[ $seen -eq 0 && "$a" == "--" ]]; then seen=1; continue; fi
    if [[ $seen -eq 0 ]]; then pair_server+=("$a"); else pair_client+=("$a"); fi
  done
}

log_load() {
  local csv="$1" label="$2" load
  read -r -a load </proc/loadavg
  echo "$(date -u +%H:%M:%S),${load[0]},${load[1]},${load[2]},\"${label//\"/}\"" >>"$csv"
  # shellcheck disable=SC2034  # read by the sourcing script
  pair_load="${load[0]}"
}
