#!/usr/bin/env bash
# A single-node Slurm cluster for the fleet tests: Debian's slurm-wlm 22.05 + munge, run as root without
# systemd, everything (config, keys, sockets, spool, logs) under one state directory so it touches no
# system-wide Slurm or munge setup and other users of the machine are not disturbed.
#
#   tests/slurm/start-cluster.sh [--install] [STATE_DIR]     (default STATE_DIR: /tmp/calib-slurm)
#
# Idempotent: a running cluster with the same state directory is reused (checked with `sinfo`).
# --install: apt-get install slurm-wlm munge first when they are missing (needs root and a package mirror).
# Prints `export SLURM_CONF=...` (the only variable the Slurm clients need) as its last line.
# Choices (from the issue, checked on this kind of machine): proctrack/linuxproc, task/none,
# accounting_storage/none, select/cons_tres, one node with the machine's CPUs, 8 fake GPUs (GRES backed by
# links to /dev/null, so Slurm sets CUDA_VISIBLE_DEVICES like on a real GPU node), ports 16817/16818 (not the
# default 6817/6818), requeue allowed.
set -euo pipefail

install=0
if [[ "${1:-}" == "--install" ]]; then install=1; shift; fi
STATE="${1:-${CALIB_SLURM_DIR:-/tmp/calib-slurm}}"
CTLD_PORT="${CALIB_SLURM_CTLD_PORT:-16817}"
SLURMD_PORT="${CALIB_SLURM_SLURMD_PORT:-16818}"
NGPU="${CALIB_SLURM_GPUS:-8}"

need() { command -v "$1" >/dev/null 2>&1 || [[ -x "/usr/sbin/$1" ]]; }
if ! need slurmctld || ! need slurmd || ! need munged || ! need sbatch; then
  if [[ $install == 1 ]]; then
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge
  else
    echo "ERROR: slurm-wlm and munge are not installed (run with --install, or apt-get install slurm-wlm munge)" >&2
    exit 2
  fi
fi
PATH="/usr/sbin:$PATH"

mkdir -p "$STATE"/{munge,spool/ctld,spool/d,log,gpus,run}
chmod 700 "$STATE/munge"
export SLURM_CONF="$STATE/slurm.conf"
NODE="$(hostname -s)"
CPUS="$(nproc)"

if [[ -f "$SLURM_CONF" ]] && timeout 10 sinfo -h -o '%T' 2>/dev/null | grep -Eq '^(idle|mixed|allocated)'; then
  echo "slurm cluster already running (state $STATE)" >&2
  echo "export SLURM_CONF=$SLURM_CONF"
  exit 0
fi

# munge: its own key and socket
[[ -s "$STATE/munge/munge.key" ]] || dd if=/dev/urandom of="$STATE/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$STATE/munge/munge.key"
SOCK="$STATE/munge/munge.socket"
if ! munge -n -S "$SOCK" 2>/dev/null | unmunge -S "$SOCK" >/dev/null 2>&1; then
  [[ -f "$STATE/munge/munged.pid" ]] && kill "$(cat "$STATE/munge/munged.pid")" 2>/dev/null || true
  munged --force --key-file="$STATE/munge/munge.key" --socket="$SOCK" \
         --pid-file="$STATE/munge/munged.pid" --log-file="$STATE/log/munged.log" --seed-file="$STATE/munge/seed"
  for _ in $(seq 50); do munge -n -S "$SOCK" 2>/dev/null | unmunge -S "$SOCK" >/dev/null 2>&1 && break; sleep 0.1; done
fi

# fake GPU device files: Slurm wants character devices; links to /dev/null are (no mknod needed)
for i in $(seq 0 $((NGPU - 1))); do ln -sfn /dev/null "$STATE/gpus/gpu$i"; done
cat > "$STATE/gres.conf" <<GRES
NodeName=$NODE Name=gpu File=$STATE/gpus/gpu[0-$((NGPU - 1))]
GRES
cat > "$SLURM_CONF" <<CONF
ClusterName=calibtest
SlurmctldHost=$NODE
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCK
StateSaveLocation=$STATE/spool/ctld
SlurmdSpoolDir=$STATE/spool/d
SlurmctldPidFile=$STATE/run/slurmctld.pid
SlurmdPidFile=$STATE/run/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
ReturnToService=2
JobRequeue=1
MaxArraySize=100001
MaxJobCount=100000
MinJobAge=600
KillWait=5
SlurmdTimeout=60
InactiveLimit=0
NodeName=$NODE CPUs=$CPUS Gres=gpu:$NGPU State=UNKNOWN
PartitionName=gpu Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF

pidf() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }
pidf "$STATE/run/slurmctld.pid" || slurmctld -f "$SLURM_CONF"
pidf "$STATE/run/slurmd.pid" || slurmd -f "$SLURM_CONF"
for _ in $(seq 100); do
  if timeout 5 sinfo -h -o '%T' 2>/dev/null | grep -Eq '^(idle|mixed|allocated)'; then
    echo "slurm cluster up (state $STATE, node $NODE, $CPUS CPUs, $NGPU GPUs)" >&2
    echo "export SLURM_CONF=$SLURM_CONF"
    exit 0
  fi
  sleep 0.2
done
echo "ERROR: slurm did not come up; see $STATE/log/slurmctld.log and $STATE/log/slurmd.log" >&2
tail -5 "$STATE/log/slurmctld.log" "$STATE/log/slurmd.log" >&2 || true
exit 1
