#!/bin/sh
# Open MPI's rsh agent for a job whose "hosts" are network namespaces of
# this machine (plm_rsh_agent): called as `netns_agent.sh [options] HOST
# COMMAND...`, as ssh would be, it runs COMMAND (one shell command line, the
# words joined as ssh joins them) in the namespace that MULTIHOST_NETNS maps
# HOST to ("hostA=ns1 hostB=ns2"), in a UTS namespace of its own whose
# hostname is HOST: both namespaces share the machine's hostname otherwise,
# and Open MPI names its session directories and tells its nodes apart by
# hostname. Options before HOST (ssh's -x and the like) are ignored.
while [ $# -gt 0 ]; do
  case "$1" in
    -*) shift ;;
    *) break ;;
  esac
done
host=${1:?netns_agent.sh: no host given}
shift
ns=""
for pair in ${MULTIHOST_NETNS:-}; do
  case "$pair" in
    "$host="*) ns=${pair#*=} ;;
  esac
done
if [ -z "$ns" ]; then
  echo "netns_agent.sh: host '$host' is not one of MULTIHOST_NETNS='${MULTIHOST_NETNS:-}'" >&2
  exit 255
fi
exec ip netns exec "$ns" unshare --uts sh -c 'hostname "$1" && exec sh -c "$2"' netns_agent "$host" "$*"
