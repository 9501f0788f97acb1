#!/usr/bin/env bash
# Runs one job under Slurm's srun with the PMIx plugin, on a private
# one-node Slurm cluster that this script starts and removes:
#
#   run_srun_job.sh NTASKS COMMAND ARGS...
#
# munged, slurmctld and slurmd run as root with their configuration, state,
# sockets and logs in a temporary directory, on free TCP ports of 127.0.0.1
# only; `srun --mpi=pmix --overcommit -n NTASKS COMMAND ARGS...` runs with no
# RMA_* variable in its environment but those RMA_SRUN_ENV gives. Everything
# is stopped and removed on any exit, also on failure and on a signal (the
# daemons' logs are printed when the job failed). Exits 77 (ctest: skipped)
# when this is not root, or Slurm (slurmctld, slurmd, srun, the mpi_pmix
# plugin) or munged is not installed.
#   RMA_SRUN_ENV="RMA_PROVIDER=softroce ..."  variables the job gets (the
#                                              rest of RMA_* is unset)
#   RMA_SRUN_KEEP=1                           keep the directory (debugging)
set -uo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: run_srun_job.sh NTASKS COMMAND ARGS..." >&2
  exit 2
fi
ntasks="$1"
shift
if ! [[ "$ntasks" =~ ^[1-9][0-9]*$ ]]; then
  echo "run_srun_job: NTASKS must be a positive number of tasks, not '$ntasks'" >&2
  exit 2
fi

skip() { echo "run_srun_job: $*; skipped"; exit 77; }
[[ "$(id -u)" == 0 ]] || skip "needs root (the Slurm daemons of the private cluster run as root)"
for b in munged slurmctld slurmd srun sinfo scancel; do
  command -v "$b" >/dev/null 2>&1 || [[ -x "/usr/sbin/$b" ]] || skip "$b is not installed (Debian: slurmd slurmctld slurm-client munge)"
done
PATH="$PATH:/usr/sbin"
plugin_dir=""
for d in /usr/lib/x86_64-linux-gnu/slurm-wlm /usr/lib64/slurm /usr/lib/slurm; do
  [[ -e "$d/mpi_pmix.so" ]] && { plugin_dir="$d"; break; }
done
[[ -n "$plugin_dir" ]] || skip "Slurm's mpi_pmix plugin is not installed"

dir="$(mktemp -d /tmp/rma-slurm.XXXXXX)" || exit 1
chmod 755 "$dir"  # munged wants its socket directory searchable by all (the key stays 0400)
pids=()
# Every process of this cluster (daemons, step daemons, tasks) inherits
# SLURM_CONF from here: kills those that are left, but not this shell.
kill_leftovers() {
  local e p
  for e in /proc/[0-9]*/environ; do
    p="${e#/proc/}"
    p="${p%/environ}"
    [[ "$p" == "$$" ]] && continue
    if { tr '\0' '\n' <"$e"; } 2>/dev/null | grep -qxF "SLURM_CONF=$dir/slurm.conf"; then
      kill -9 "$p" 2>/dev/null
    fi
  done
}
cleanup() {
  local rc=$? p i
  if [[ -f "$dir/slurm.conf" ]]; then
    # Cancel the job and let slurmd end its steps while munged still runs.
    scancel --quiet --full -u root >/dev/null 2>&1 || true
    for _ in $(seq 50); do
      [[ -z "$(squeue -h -o %i 2>/dev/null)" ]] && break
      sleep 0.1
    done
  fi
  # slurmd, then slurmctld, then munged (they authenticate through it).
  for ((i = ${#pids[@]} - 1; i >= 0; --i)); do
    p="${pids[$i]}"
    kill "$p" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null
  done
  [[ -n "${SLURM_CONF:-}" ]] && kill_leftovers
  if (( rc != 0 )); then
    for f in "$dir"/*.log; do
      [[ -f "$f" ]] || continue
      echo "--- $(basename "$f") (last lines)"
      tail -n 15 "$f"
    done
  fi
  [[ -n "${RMA_SRUN_KEEP:-}" ]] && echo "kept $dir" || rm -rf "$dir"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# Two free ports on 127.0.0.1 (ss lists the listening ones).
free_port() {
  local p
  for _ in $(seq 100); do
    p=$(( 20000 + RANDOM % 20000 ))
    [[ " $* " == *" $p "* ]] && continue
    ss -Hltn "sport = :$p" 2>/dev/null | grep -q . || { echo "$p"; return 0; }
  done
  return 1
}
ctld_port="$(free_port)" || { echo "run_srun_job: no free port" >&2; exit 1; }
slurmd_port="$(free_port "$ctld_port")" || { echo "run_srun_job: no free port" >&2; exit 1; }
node="$(hostname -s)"

dd if=/dev/urandom of="$dir/munge.key" bs=1024 count=1 status=none
chmod 400 "$dir/munge.key"
mkdir -p "$dir/state" "$dir/spool" "$dir/tmp"
munged --force --socket="$dir/munge.sock" --key-file="$dir/munge.key" --pid-file="$dir/munged.pid" \
  --log-file="$dir/munged.log" --seed-file="$dir/munged.seed" || { echo "run_srun_job: munged did not start" >&2; exit 1; }
pids+=("$(cat "$dir/munged.pid")")

cat >"$dir/slurm.conf" <<CONF
ClusterName=rmatest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
AuthInfo=socket=$dir/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
TmpFS=$dir/tmp
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
PluginDir=$plugin_dir
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
MailProg=/bin/true
KillWait=5
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=rma Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:16
CONF
# The PMIx plugin's per-step directories (by default /tmp/spmix_appdir_<uid>_<job>.<step>,
# which a later cluster, counting jobs from 1 again, would find and fail on).
echo "PMIxCliTmpDirBase=$dir/tmp" >"$dir/mpi.conf"
export SLURM_CONF="$dir/slurm.conf"

slurmctld -D -i -f "$SLURM_CONF" >"$dir/slurmctld.out.log" 2>&1 &
pids+=("$!")
slurmd -D -N "$node" -f "$SLURM_CONF" >"$dir/slurmd.out.log" 2>&1 &
pids+=("$!")
ready=0
for _ in $(seq 300); do
  if [[ "$(sinfo -h -n "$node" -o %T 2>/dev/null)" == idle* ]]; then ready=1; break; fi
  sleep 0.1
done
(( ready )) || { echo "run_srun_job: the private Slurm cluster did not come up within 30 s" >&2; exit 1; }

# The job's environment: no RMA_* but those asked for.
read -r -a keep <<<"${RMA_SRUN_ENV:-}"
"$(dirname "$0")/run_unconfigured.sh" env "${keep[@]}" \
  srun --mpi=pmix --overcommit --kill-on-bad-exit=1 -n "$ntasks" "$@"
