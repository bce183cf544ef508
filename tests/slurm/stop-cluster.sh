#!/usr/bin/env bash
# Stop the test cluster started by start-cluster.sh (by the pid files in its state directory only).
set -uo pipefail
STATE="${1:-${CALIB_SLURM_DIR:-/tmp/calib-slurm}}"
for f in "$STATE/run/slurmd.pid" "$STATE/run/slurmctld.pid" "$STATE/munge/munged.pid"; do
  [[ -f "$f" ]] && kill "$(cat "$f")" 2>/dev/null && echo "stopped $(basename "$f" .pid)"
done
exit 0
