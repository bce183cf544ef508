"""The fleet directory: where a job array's tasks write and where ``calib fleet collect`` reads.

::

    DIR/
      logs/<session>/            one session directory per GPU task (``calib run --logs-dir``)
      fitted/<session>.json      its parameter file (``calib run --fitted-dir``), samples, recovery
      tasks/<session>.json       the task record: Slurm job/task, node, GPU slot, device spec, restarts,
                                 exit status (written atomically by the task script, start and end)
      slurm/                     the submitted script and Slurm's output files

The session name is stable per array task (``<fleet>-<task:05d>``), so a requeued task resumes its
session with ``calib run --name``.
"""

from __future__ import annotations

from pathlib import Path

LOGS, FITTED, TASKS, SLURM = "logs", "fitted", "tasks", "slurm"


def session_name(fleet: str, task: int) -> str:
    """The session name of array task ``task`` of fleet ``fleet`` (stable across requeues)."""
    return f"{fleet}-{int(task):05d}"


def dirs(root: str | Path) -> dict[str, Path]:
    """The fleet directory's parts (see module docstring)."""
    root = Path(root)
    return {k: root / k for k in (LOGS, FITTED, TASKS, SLURM)}
