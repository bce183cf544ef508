"""``calib fleet submit``: an ``sbatch`` job array that runs the normal campaign on every GPU.

One array task per GPU. On real GPUs each task asks Slurm for one (``--gres=gpu:1`` by default; sites name
their GPUs differently, e.g. ``--gres gpu:a100:1``); a virtual fleet asks for none (a site's CPU partition
has no GRES, and sbatch refuses a job that asks for one there). Each task

1. picks its device from its environment: on real GPUs ``cuda:0``, i.e. the GPU Slurm allocated (Slurm's
   GRES sets ``CUDA_VISIBLE_DEVICES`` to it; :class:`microbench.devices.cuda.CudaDevice` maps the CUDA
   index to NVML by PCI bus id); on a virtual fleet ``sim:<preset>@<serial>`` with
   ``serial = first_serial + SLURM_ARRAY_TASK_ID``;
2. writes its task record ``DIR/tasks/<session>.json`` (job, task, node, GPU slot, restart count, state)
   atomically (temporary file + ``mv``) at the start and at the end, with the exit status;
3. runs ``calib run --name <fleet>-<task:05d>`` into ``DIR/logs`` and ``DIR/fitted``. The name is stable
   per task, so when Slurm requeues the task (``--requeue``: node failure, preemption, ``scontrol
   requeue``) the same command resumes the session instead of starting over. It runs without ``-q``:
   what it did (a new campaign or a resumed one) and where its outputs went belong in the task's Slurm
   log (a batch job has no terminal, so no progress bar is drawn there).

No scheduler of our own: Slurm schedules, retries and records; ``--dry-run`` prints the script.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from calib.core.atomic import atomic_write_json, atomic_write_text
from calib.core.errors import BadInputError, CalibError
from calib.fleet.layout import dirs


#: what a task on real GPUs asks Slurm for by default: one GPU (CUDA device 0 of the task)
DEFAULT_GRES = "gpu:1"
#: Slurm's --gres syntax: comma-separated name[:type][:count] (e.g. gpu:1, gpu:a100:1, gpu:a100:1,nvme:1)
GRES_RE = r"[A-Za-z][A-Za-z0-9_]*(:[A-Za-z0-9_.-]+)?(:[0-9]+)?(,[A-Za-z][A-Za-z0-9_]*(:[A-Za-z0-9_.-]+)?(:[0-9]+)?)*"


class SubmitError(CalibError):
    """sbatch is missing or refused the job (exit 1: the environment, not the input)."""

    exit_code = 1


@dataclass(frozen=True)
class FleetJob:
    """What to submit: ``count`` tasks of ``campaign``, on real GPUs (``preset`` None) or on units
    ``first_serial .. first_serial + count - 1`` of virtual preset ``preset``."""

    root: Path
    fleet: str
    count: int
    campaign: str = "standard"
    preset: str | None = None
    first_serial: int = 0
    first_task: int = 0
    max_running: int | None = None
    partition: str | None = None
    time_limit: str | None = None
    python: str = sys.executable
    extra_sbatch: tuple[str, ...] = ()
    #: Slurm's generic resources per task: None = the default (``gpu:1`` on real GPUs, none on a virtual
    #: fleet), "" = no ``--gres`` line, else e.g. ``gpu:a100:1``
    gres: str | None = None

    def gres_line(self) -> str | None:
        """The ``#SBATCH --gres=...`` line, or None when the job asks for no generic resource."""
        spec = ("" if self.preset else DEFAULT_GRES) if self.gres is None else self.gres
        return f"#SBATCH --gres={spec}" if spec else None

    def array_spec(self) -> str:
        spec = f"{self.first_task}-{self.first_task + self.count - 1}"
        return f"{spec}%{self.max_running}" if self.max_running else spec


def write_task_record(path: Path, **fields: Any) -> None:
    """Write (atomically) a task record; the task script writes the same keys from the shell."""
    fields.setdefault("updated_utc", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    atomic_write_json(path, fields)


def sbatch_script(job: FleetJob) -> str:
    """The job-array script for ``job`` (see module docstring)."""
    d = {k: str(v.resolve()) for k, v in dirs(job.root).items()}
    q = shlex.quote
    lines = [
        "#!/bin/bash",
        f"#SBATCH --job-name=calib-fleet-{job.fleet}",
        f"#SBATCH --array={job.array_spec()}",
        *([job.gres_line()] if job.gres_line() else []),
        "#SBATCH --ntasks=1",
        "#SBATCH --cpus-per-task=1",
        "#SBATCH --requeue",
        "#SBATCH --open-mode=append",
        f"#SBATCH --output={d['slurm']}/%x-%A_%a.out",
    ]
    lines += [f"#SBATCH --{k}={v}" for k, v in (("partition", job.partition), ("time", job.time_limit)) if v]
    lines += [f"#SBATCH {x}" for x in job.extra_sbatch]
    if job.preset:
        device = (f'SERIAL=$(( {job.first_serial - job.first_task} + TASK ))\n'
                  f'DEVICE="sim:{job.preset}@$SERIAL"   # one unit of the virtual fleet per task')
    else:
        device = ('export CUDA_DEVICE_ORDER=PCI_BUS_ID\n'
                  '# Slurm restricts CUDA_VISIBLE_DEVICES to the allocated GPU: it is CUDA device 0 of this task\n'
                  'DEVICE="cuda:0"')
    lines += [
        ("# generated by `calib fleet submit`; one GPU per array task, resumed on requeue" if not job.preset else
         "# generated by `calib fleet submit`; one virtual GPU per array task, resumed on requeue"),
        "set -uo pipefail",
        'TASK="${SLURM_ARRAY_TASK_ID:?not a Slurm array task}"',
        device,
        f'NAME="{job.fleet}-$(printf %05d "$TASK")"',
        f"ROOT={q(str(Path(job.root).resolve()))}",
        f"TASKS={q(d['tasks'])}",
        'mkdir -p "$TASKS"',
        "record() {  # task record, written atomically: temporary file, then rename",
        '  local tmp="$TASKS/.$NAME.json.$$"',
        '  printf \'{"task": %d, "session": "%s", "device": "%s", "campaign": "%s", "node": "%s", '
        '"gpu_slot": "%s", "job_id": "%s", "restart_count": %d, "state": "%s", "exit_status": %s, '
        '"updated_utc": "%s"}\\n\' \\',
        '    "$TASK" "$NAME" "$DEVICE" ' + q(job.campaign) + ' "${SLURMD_NODENAME:-$(hostname -s)}" '
        '"${CUDA_VISIBLE_DEVICES:-}" "${SLURM_ARRAY_JOB_ID:-}_${TASK}" "${SLURM_RESTART_COUNT:-0}" "$1" "$2" '
        '"$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$tmp" && mv -f "$tmp" "$TASKS/$NAME.json"',
        "}",
        'echo "task $TASK session $NAME device $DEVICE node ${SLURMD_NODENAME:-?} '
        'restart ${SLURM_RESTART_COUNT:-0} CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-}"',
        "record running null",
        f"{q(job.python)} -m calib run --device \"$DEVICE\" --campaign {q(job.campaign)} "
        f"--logs-dir {q(d['logs'])} --fitted-dir {q(d['fitted'])} --name \"$NAME\" --seed \"$TASK\"",
        "rc=$?",
        'if [ "$rc" -eq 0 ]; then record done 0; else record failed "$rc"; fi',
        'exit "$rc"',
    ]
    return "\n".join(lines) + "\n"


def submit(job: FleetJob, dry_run: bool = False) -> tuple[str, str | None]:
    """Write ``DIR/slurm/<fleet>.<first>-<last task>.sbatch`` and submit it with ``sbatch --parsable`` (unless ``dry_run``).
    Returns (script text, Slurm job id or None)."""
    if job.count < 1:
        raise BadInputError(f"--count {job.count}: need at least one GPU")
    text = sbatch_script(job)
    if dry_run:
        return text, None
    sbatch = shutil.which("sbatch")
    if sbatch is None:
        raise SubmitError("sbatch not found: this machine is not a Slurm submit host (use --dry-run to see the script)")
    d = dirs(job.root)
    for p in d.values():
        p.mkdir(parents=True, exist_ok=True)
    last = job.first_task + job.count - 1
    script = d["slurm"] / f"{job.fleet}.{job.first_task}-{last}.sbatch"   # several arrays may share a fleet
    atomic_write_text(script, text)   # a link is written through; a device node or /proc path refused
    os.chmod(script, 0o755)
    out = subprocess.run([sbatch, "--parsable", str(script)], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        msg = (out.stderr or out.stdout).strip().splitlines()
        raise SubmitError(f"sbatch refused {script}: {msg[-1] if msg else f'exit {out.returncode}'}")
    job_id = out.stdout.strip().split(";")[0]
    atomic_write_json(d["slurm"] / f"{job.fleet}.{job_id}.submitted.json",
                      {"job_id": job_id, "script": str(script), "fleet": job.fleet, "count": job.count,
                       "campaign": job.campaign, "preset": job.preset, "first_serial": job.first_serial,
                       "first_task": job.first_task})
    return text, job_id


def read_task_record(path: Path) -> dict[str, Any] | None:
    """A task record, or None when it is missing or unreadable (a task killed before its first write)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
