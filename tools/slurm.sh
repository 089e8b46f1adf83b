#!/usr/bin/env bash
# A small Slurm cluster on emulated hosts (tools/hosts.sh), for running
# jobs the way an HPC centre does and for the tests: munged and slurmctld
# on host 1, a slurmd on every host (each in its own network namespace,
# under its own host name), Debian's slurm-wlm with a slurm.conf written
# for these hosts. Everything lives in FLUID_SLURM_DIR; nothing touches
# the machine's own Slurm or munge configuration.
#
#   tools/slurm.sh up N [--cpus C]
#       N hosts fluids1..fluidsN (FLUID_HOSTS_PREFIX, default fluids) at
#       10.77.0.1..N, C CPUs each (default 2; Slurm is told so whatever
#       this machine has), one partition "fluid" holding them all. Waits
#       until every node is idle. Replaces a cluster already up.
#   tools/slurm.sh run -- COMMAND...
#       runs COMMAND on host 1 (the submit host) with SLURM_CONF and the
#       Open MPI settings of the emulated network exported, e.g.
#         run -- sbatch -N 2 --ntasks-per-node 2 job.sh
#         run -- srun --mpi=pmix -N 2 --ntasks-per-node 1 build/bin/trainer
#         run -- squeue;   run -- scontrol requeue JOBID
#   tools/slurm.sh env           prints the exports `run` sets (to source)
#   tools/slurm.sh down          stops every daemon and removes every file
#   tools/slurm.sh status        sinfo's view of the nodes
#
# The emulated hosts share one file system, so each slurmd gets its own
# spool, pid, log and TmpFS directories under FLUID_SLURM_DIR/node/NAME;
# the namespaces have no cgroup mounts of their own, so the cluster tracks
# processes by their parents (proctrack/linuxproc) and binds nothing
# (task/none), with a cgroup.conf that asks for no cgroup. Needs root and
# slurm-wlm, munge; without them it says so in one line and exits 77.
set -Eeuo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
DIR="${FLUID_SLURM_DIR:-/tmp/fluid-slurm}"
export FLUID_HOSTS_PREFIX="${FLUID_HOSTS_PREFIX:-fluids}"
export FLUID_HOSTS_DIR="$DIR/hosts"
PREFIX="$FLUID_HOSTS_PREFIX"
SUBNET="${FLUID_HOSTS_SUBNET:-10.77.0}"
HOSTS="$HERE/hosts.sh"

say() { echo "slurm.sh: $*" >&2; }

case "$DIR" in
  /*) ;;
  *) say "FLUID_SLURM_DIR must be an absolute path, got '$DIR'"; exit 2 ;;
esac

require_tools() {
  [ "$(id -u)" -eq 0 ] || { say "needs root to create network namespaces"; exit 77; }
  local tool
  for tool in slurmctld slurmd srun munged munge; do
    command -v "$tool" >/dev/null ||
      { say "'$tool' not found (apt-get install slurm-wlm munge libpmix-dev)"; exit 77; }
  done
}

# Runs "$@" inside host $1's namespaces under its host name.
on_host() {
  local k="$1"; shift
  ip netns exec "${PREFIX}$k" unshare --uts /bin/sh -c \
    "hostname ${PREFIX}$k; exec \"\$0\" \"\$@\"" "$@"
}

# The exports every command on the cluster runs with: Slurm's config, and
# the settings tools/hosts.sh's `run` gives mpirun (TCP on the emulated
# network only, ranks that yield when idle, no binding: the hosts share
# this machine's cores), as OMPI_MCA_ variables so that an mpirun inside
# an allocation, and its daemons started by srun, see them.
cluster_env() {
  cat <<ENV
export SLURM_CONF='$DIR/etc/slurm.conf'
export OMPI_MCA_btl_tcp_if_include='${SUBNET}.0/24'
export OMPI_MCA_oob_tcp_if_include='${SUBNET}.0/24'
export OMPI_MCA_mpi_yield_when_idle=1
export OMPI_MCA_btl_tcp_links=4
export OMPI_MCA_hwloc_base_binding_policy=none
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ENV
}

write_conf() {
  local n="$1" cpus="$2" k
  mkdir -p "$DIR/etc" "$DIR/ctld"
  cat >"$DIR/etc/slurm.conf" <<CONF
# Written by tools/slurm.sh for ${n} emulated host(s).
ClusterName=fluid
SlurmctldHost=${PREFIX}1(${SUBNET}.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$DIR/run/munge.sock,cred_expire=5
CredType=cred/munge
StateSaveLocation=$DIR/ctld
SlurmctldPidFile=$DIR/ctld/slurmctld.pid
SlurmctldLogFile=$DIR/ctld/slurmctld.log
SlurmdSpoolDir=$DIR/node/%n/spool
SlurmdPidFile=$DIR/node/%n/slurmd.pid
SlurmdLogFile=$DIR/node/%n/slurmd.log
TmpFS=$DIR/node/%n/tmp
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
JobRequeue=1
KillOnBadExit=1
EnforcePartLimits=ALL
SlurmctldTimeout=30
SlurmdTimeout=30
MessageTimeout=10
InactiveLimit=0
KillWait=5
MinJobAge=600
MailProg=/bin/true
SlurmctldDebug=info
SlurmdDebug=info
CONF
  for k in $(seq 1 "$n"); do
    echo "NodeName=${PREFIX}$k NodeAddr=${SUBNET}.$k CPUs=$cpus RealMemory=1000 State=UNKNOWN" \
      >>"$DIR/etc/slurm.conf"
  done
  echo "PartitionName=fluid Nodes=${PREFIX}[1-$n] Default=YES MaxTime=INFINITE State=UP" \
    >>"$DIR/etc/slurm.conf"
  # No cgroup is asked for: the namespaces have no cgroup mounts of their own.
  cat >"$DIR/etc/cgroup.conf" <<CONF
CgroupPlugin=cgroup/v1
CgroupAutomount=no
IgnoreSystemd=yes
ConstrainCores=no
ConstrainRAMSpace=no
ConstrainDevices=no
CONF
  cluster_env >"$DIR/env"
}

start_munge() {
  mkdir -p "$DIR/munge" "$DIR/run"
  chmod 700 "$DIR/munge"
  chmod 755 "$DIR" "$DIR/run"
  dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 2>/dev/null
  chmod 600 "$DIR/munge/munge.key"
  on_host 1 munged --socket="$DIR/run/munge.sock" \
    --key-file="$DIR/munge/munge.key" --pid-file="$DIR/run/munged.pid" \
    --log-file="$DIR/munge/munged.log" --seed-file="$DIR/munge/seed" --origin="${SUBNET}.1"
}

# Waits up to $1 seconds for every node to be idle; false if they are not.
wait_idle() {
  local limit="$1" n="$2" i idle
  for i in $(seq 1 $((limit * 2))); do
    idle="$(on_host 1 env SLURM_CONF="$DIR/etc/slurm.conf" \
      sinfo -h -N -t idle -o '%N' 2>/dev/null | sort -u | wc -l)"
    [ "$idle" -ge "$n" ] && return 0
    sleep 0.5
  done
  return 1
}

down() {
  "$HOSTS" down >/dev/null 2>&1 || true
  rm -rf "$DIR"
}

up() {
  local n="${1:-}"; shift || true
  local cpus=2
  while [ $# -gt 0 ]; do
    case "$1" in
      --cpus) cpus="${2:-}"; shift 2 ;;
      *) say "unknown option $1"; exit 2 ;;
    esac
  done
  case "$n" in
    ''|*[!0-9]*) say "up: N must be a number of hosts, got '$n'"; exit 2 ;;
  esac
  case "$cpus" in
    ''|*[!0-9]*|0) say "up: --cpus must be a positive number, got '$cpus'"; exit 2 ;;
  esac
  [ "$n" -ge 1 ] && [ "$n" -le 64 ] || { say "up: N must be 1..64"; exit 2; }
  require_tools
  down
  trap 'say "interrupted: stopping the cluster"; down; exit 130' INT TERM
  trap 'say "failed: stopping the cluster"; down' ERR
  local rc=0
  "$HOSTS" up "$n" --slots "$cpus" >/dev/null || rc=$?
  [ "$rc" -eq 0 ] || { rm -rf "$DIR"; exit "$rc"; }
  write_conf "$n" "$cpus"
  start_munge
  local k
  for k in $(seq 1 "$n"); do mkdir -p "$DIR/node/${PREFIX}$k/spool" "$DIR/node/${PREFIX}$k/tmp"; done
  on_host 1 env SLURM_CONF="$DIR/etc/slurm.conf" slurmctld -i
  for k in $(seq 1 "$n"); do
    on_host "$k" env SLURM_CONF="$DIR/etc/slurm.conf" slurmd -N "${PREFIX}$k"
  done
  if ! wait_idle 30 "$n"; then
    say "the nodes did not come up within 30 s; slurmctld's log ends:"
    tail -5 "$DIR/ctld/slurmctld.log" >&2 || true
    down; exit 1
  fi
  trap - INT TERM ERR
  echo "slurm.sh: $n node(s) up (${PREFIX}1-$n, $cpus CPUs each, partition fluid); SLURM_CONF=$DIR/etc/slurm.conf"
}

run() {
  [ "${1:-}" = "--" ] && shift
  [ -f "$DIR/env" ] || { say "no cluster: run 'tools/slurm.sh up N' first"; exit 2; }
  [ $# -gt 0 ] || { say "run: no command"; exit 2; }
  # shellcheck disable=SC1091
  . "$DIR/env"
  exec ip netns exec "${PREFIX}1" unshare --uts /bin/sh -c \
    "hostname ${PREFIX}1; exec \"\$0\" \"\$@\"" "$@"
}

case "${1:-}" in
  up) shift; up "$@" ;;
  run) shift; run "$@" ;;
  env) [ -f "$DIR/env" ] || { say "no cluster"; exit 2; }; cat "$DIR/env" ;;
  down) [ "$(id -u)" -eq 0 ] || { say "needs root"; exit 77; }; down ;;
  status) run -- sinfo -N -l ;;
  *) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
