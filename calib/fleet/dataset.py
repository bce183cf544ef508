"""``calib fleet collect``: finished sessions -> one partitioned Parquet dataset (pyarrow).

Layout (Hive-style partitions, readable by pandas, pyarrow, DuckDB, Spark)::

    FLEET/chip=<chip>/driver=<driver>/campaign=<campaign>/gpu-<uuid>.parquet
    FLEET/_status.json        every session seen by the last collect, with its state
    FLEET/_collect.jsonl      append-only log: one line per collect (added, skipped, incomplete, failed)

Partition values are slugs (lower-case letters, digits, ``-``, ``.``), so no engine has to decode them;
the exact names are columns (``gpu_name``, ``driver_version``). One row per GPU and parameter, the columns of
:data:`SCHEMA` (``serial``: of virtual units; ``form``: the model form the value belongs to,
:func:`calib.fleet.paramrows.param_rows`; ``stderr`` statistical, ``stderr_total`` with model discrepancy;
the parameter file's provenance and the task record). Section ``reference`` holds the model's prediction
for the reference workload (:data:`REFERENCE_KERNEL`: ``power_w_pred``, ``time_s_pred``, ``energy_j_pred``,
``temp_c_pred``), computed from the GPU's parameter file at collect time.

Guarantees:

- **Atomic per GPU**: a GPU's file is written to a hidden temporary file (ignored by every reader: leading
  ``.``), flushed, fsynced and renamed into place; a killed collect leaves no half-written GPU.
- **Appendable**: GPUs already in the dataset (same uuid and driver, same parameter-file hash) are
  skipped, so collect runs again as more tasks finish.
- **Re-calibrations kept**: one GPU (uuid) calibrated again under another driver (before and after a
  driver update) is a second file, in its own ``driver=`` partition; the analysis takes each GPU's latest
  calibration (:func:`calib.fleet.analysis.analyze`) and names the others.
- **Nothing dropped silently**: sessions without a usable parameter file are listed with their state
  (``incomplete``, ``unfitted``, ``failed``, ``not started``) on the console and in ``_status.json``.
- **Refused whole, nothing written** (BadInputError, exit 2): a corrupt Parquet file in the dataset, two
  sessions (or a session and the dataset) claiming the same GPU uuid under the same driver, GPUs of
  different chips without ``allow_mixed``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from calib.core.atomic import atomic_write_bytes, atomic_write_json
from calib.core.errors import BadInputError, CalibError
from calib.core.session import file_sha256
from calib.fleet.layout import dirs
from calib.fleet.submit import read_task_record

log = logging.getLogger(__name__)

#: key of the per-file Parquet metadata that identifies the GPU in it (read without reading the rows)
META_KEY = b"calib.fleet"

SCHEMA = pa.schema([
    ("gpu_uuid", pa.string()), ("gpu_name", pa.string()), ("serial", pa.int64()), ("preset", pa.string()),
    ("node", pa.string()), ("gpu_slot", pa.string()), ("session", pa.string()),
    ("section", pa.string()), ("name", pa.string()), ("form", pa.string()), ("value", pa.float64()), ("stderr", pa.float64()),
    ("stderr_total", pa.float64()),
    ("min", pa.float64()), ("max", pa.float64()), ("unit", pa.string()), ("vary", pa.bool_()),
    ("driver_version", pa.string()), ("campaign_name", pa.string()),
    ("param_file", pa.string()), ("param_sha256", pa.string()), ("toolkit_version", pa.string()),
    ("toolkit_commit", pa.string()), ("created_utc", pa.string()), ("job_id", pa.string()),
    ("restart_count", pa.int64()),
])


REFERENCE_KERNEL = "reference_kernel.json"


def reference_kernel_path() -> Path:
    """The reference workload (a kernel description) every GPU's model is asked to predict."""
    return Path(str(resources.files("calib.fleet").joinpath(REFERENCE_KERNEL)))


def slug(text: str) -> str:
    """A partition value every engine reads as is: lower case, ``[a-z0-9.-]``, runs of others -> ``-``."""
    s = re.sub(r"[^a-z0-9.]+", "-", str(text).lower()).strip("-")
    return s or "unknown"


@dataclass
class SessionStatus:
    """One session of the fleet directory and what collect made of it."""

    session: str
    state: str                 # collected | already | incomplete | unfitted | failed | not started
    detail: str = ""
    gpu_uuid: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"session": self.session, "state": self.state, "detail": self.detail, "gpu_uuid": self.gpu_uuid}


@dataclass
class CollectResult:
    """What :func:`collect` did."""

    added: int = 0
    already: int = 0
    statuses: list[SessionStatus] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)

    def listed(self, *states: str) -> list[SessionStatus]:
        return [s for s in self.statuses if s.state in states]


# -- reading the fleet directory ------------------------------------------------------------------

def _serial(preset: Any) -> int | None:
    if isinstance(preset, str) and "@" in preset:
        tail = preset.rsplit("@", 1)[1]
        return int(tail) if tail.isdigit() else None
    return None


def _read_gpu(param_file: str, task_file: str | None) -> dict[str, Any]:
    """One GPU's rows (runs in a worker process): parameter rows + reference-workload predictions."""
    from calib.fleet.paramrows import param_rows

    path = Path(param_file)
    try:
        pf = param_rows(path, reference_kernel_path())
        ref = pf.reference
    except CalibError as e:
        return {"error": str(e)}
    dev, prov = pf.device, pf.provenance
    task = read_task_record(Path(task_file)) if task_file else None
    task = task or {}
    camp = prov.get("campaign") if isinstance(prov.get("campaign"), dict) else {}
    gpu = {
        "gpu_uuid": str(dev.get("uuid") or ""), "gpu_name": str(dev.get("name") or "unknown"),
        "serial": _serial(dev.get("preset")), "preset": dev.get("preset"),
        "node": task.get("node"), "gpu_slot": None if task.get("gpu_slot") is None else str(task.get("gpu_slot")),
        "session": str(prov.get("session") or path.stem),
        "driver_version": str(dev.get("driver_version") or "unknown"),
        "campaign_name": str(camp.get("name") or "unknown"),
        "param_file": str(path), "param_sha256": file_sha256(path),
        "toolkit_version": prov.get("toolkit_version"), "toolkit_commit": prov.get("toolkit_commit"),
        "created_utc": prov.get("created_utc"), "job_id": task.get("job_id"),
        "restart_count": task.get("restart_count"),
    }
    units = {"power_w_pred": "W", "time_s_pred": "s", "energy_j_pred": "J", "temp_c_pred": "C"}
    rows = list(pf.rows) + [{"section": "reference", "name": k, "form": "predicted", "value": v, "stderr": None,
                             "min": None, "max": None, "unit": units.get(k, "1"), "vary": False} for k, v in ref.items()]
    return {"gpu": gpu, "rows": rows}


def _collect_one(fleet: str, param_file: str, task_file: str | None) -> tuple[str | None, str | None, str | None]:
    """Read one GPU and write its file (runs in a worker): (path, uuid, error)."""
    got = _read_gpu(param_file, task_file)
    if "error" in got:
        return None, None, got["error"]
    return str(_write_gpu(Path(fleet), got["gpu"], got["rows"])), got["gpu"]["gpu_uuid"], None


def _session_state(session_dir: Path, task: dict | None) -> tuple[str, str]:
    """State of a session without a parameter file: incomplete, unfitted or failed (with why)."""
    from calib.core.session import read_session

    why = f"task exited with status {task.get('exit_status')}" if task and task.get("state") == "failed" else ""
    try:
        complete = read_session(session_dir).is_complete()
    except CalibError as e:
        return "failed", f"session unreadable: {e}" + (f"; {why}" if why else "")
    if not complete:
        state = "failed" if why else "incomplete"
        rc = (task or {}).get("restart_count")
        return state, (why or "campaign not finished") + (f" (restarts: {rc})" if rc else "")
    return ("failed", why) if why else ("unfitted", "campaign complete, no parameter file (fit not run or killed)")


def dataset_files(fleet: Path) -> list[Path]:
    """The dataset's GPU files, sorted: every ``.parquet`` file except hidden ones (temporary files of an
    interrupted collect) and metadata (``_``-prefixed)."""
    if not fleet.exists():
        return []
    return sorted(p for p in fleet.rglob("*.parquet")
                  if not any(part.startswith((".", "_")) for part in p.relative_to(fleet).parts))


def _corrupt(path: Path, e: Exception) -> BadInputError:
    return BadInputError(f"{path}: corrupt Parquet file ({e}); the dataset is left as it is: restore or "
                         f"remove this file and collect again")


def open_gpu_file(path: Path) -> tuple[pq.ParquetFile, dict[str, Any]]:
    """Open one GPU's file of the dataset: the reader and the GPU's identification metadata (read from the
    footer, without the rows). BadInputError naming the file when it is not a readable Parquet file of a
    calib fleet dataset."""
    try:
        pf = pq.ParquetFile(path)
        meta = pf.schema_arrow.metadata or {}
    except (pa.ArrowException, OSError) as e:
        raise _corrupt(path, e) from None
    try:
        ident = json.loads(meta[META_KEY])
    except (KeyError, ValueError):
        pf.close()
        raise BadInputError(f"{path}: not a file of a calib fleet dataset (no {META_KEY.decode()} metadata); "
                            "the dataset is left as it is") from None
    ident["path"] = str(path)
    return pf, ident


def read_gpu_rows(pf: pq.ParquetFile, path: Path, columns: list[str]) -> pa.Table:
    """The rows of one GPU's file (opened by :func:`open_gpu_file`), the given columns, without the file's
    metadata; BadInputError naming the file when its data is unreadable."""
    try:
        return pf.read(columns=columns).replace_schema_metadata(None)
    except (pa.ArrowException, OSError) as e:
        raise _corrupt(path, e) from None


def duplicate_error(uuid: str, first: str, second: Path) -> BadInputError:
    """The refusal of a dataset in which two files claim one GPU."""
    return BadInputError(f"duplicate GPU uuid {uuid} in the dataset: {first} and {second}; the dataset is left as it is")


def calibration_key(ident: dict[str, Any]) -> tuple[str, str]:
    """What identifies one calibration in the dataset: the GPU (uuid) and the driver it ran under (a GPU
    calibrated again after a driver update is a second calibration, not a duplicate)."""
    return str(ident["gpu_uuid"]), str(ident.get("driver_version") or "unknown")


def scan_dataset(fleet: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Calibrations already in the dataset: (uuid, driver) -> the file's identification metadata (and its
    path). Every ``.parquet`` file's footer is read; an unreadable one is refused (BadInputError naming it),
    and so are two files of one GPU under one driver."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for path in dataset_files(fleet):
        pf, ident = open_gpu_file(path)
        pf.close()
        key = calibration_key(ident)
        if key in out:
            raise duplicate_error(ident["gpu_uuid"], out[key]["path"], path)
        out[key] = ident
    return out


def _write_gpu(fleet: Path, gpu: dict[str, Any], rows: list[dict[str, Any]]) -> Path:
    """Write one GPU's file atomically (hidden temporary file, fsync, rename)."""
    part = fleet / f"chip={slug(gpu['gpu_name'])}" / f"driver={slug(gpu['driver_version'])}" / \
        f"campaign={slug(gpu['campaign_name'])}"
    part.mkdir(parents=True, exist_ok=True)
    cols = {f.name: [r[f.name] if f.name in r else gpu.get(f.name) for r in rows] for f in SCHEMA}
    ident = {k: gpu[k] for k in ("gpu_uuid", "gpu_name", "session", "param_sha256", "driver_version", "campaign_name")}
    table = pa.table(cols, schema=SCHEMA.with_metadata({META_KEY: json.dumps(ident).encode()}))
    # slug for readability + hash of the exact uuid, so two uuids with the same slug never share a file
    final = part / f"gpu-{slug(gpu['gpu_uuid'])}-{hashlib.sha1(gpu['gpu_uuid'].encode()).hexdigest()[:8]}.parquet"
    buf = pa.BufferOutputStream()   # one GPU's rows: a few kB, serialised in memory
    pq.write_table(table, buf, compression="zstd")
    # hidden temporary file (skipped by every reader), fsync, rename: calib.core.atomic
    atomic_write_bytes(final, buf.getvalue().to_pybytes())
    dfd = os.open(part, os.O_RDONLY)   # and the rename itself made durable
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    return final


def _fit_one(session_dir: str, out: str) -> str | None:
    """Fit one complete session into parameter file ``out`` (runs in a worker); the error text or None."""
    from calib.fit.pipeline import fit_session

    try:
        fit_session(Path(session_dir)).params.save(out)
    except CalibError as e:
        return str(e)
    return None


def _mapped(fn, args: tuple[list, ...], workers: int, progress: Callable[[int, int], None],
            chunksize: int = 1) -> list:  # noqa: ANN001
    """``fn`` over the argument lists, in a process pool when ``workers`` > 1, in order;
    ``progress(done, total)`` after each result."""
    total = len(args[0])
    progress(0, total)
    out = []
    if workers > 1 and total > 1:
        with ProcessPoolExecutor(workers) as ex:
            for r in ex.map(fn, *args, chunksize=chunksize):
                out.append(r)
                progress(len(out), total)
    else:
        for a in zip(*args):
            out.append(fn(*a))
            progress(len(out), total)
    return out


def fit_unfitted(root: Path, names: list[str], workers: int = 1,
                 progress: Callable[[int, int], None] | None = None) -> dict[str, str | None]:
    """Fit the complete sessions ``names`` of fleet directory ``root`` that have no parameter file, in a
    local process pool (the per-GPU fits the job array did not finish); name -> error or None.
    ``progress(done, total)`` is called as the fits finish."""
    d = dirs(root)
    jobs = ([str(d["logs"] / n) for n in names], [str(d["fitted"] / f"{n}.json") for n in names])
    errs = _mapped(_fit_one, jobs, workers, progress or (lambda done, total: None))
    return dict(zip(names, errs))


def collect(root: str | Path, fleet: str | Path, *, allow_mixed: bool = False, workers: int = 1,
            only: set[str] | None = None, fit: bool = False,
            progress: Callable[[str, int, int], None] | None = None) -> CollectResult:
    """Collect the sessions of fleet directory ``root`` (:mod:`calib.fleet.layout`) into dataset
    ``fleet`` (see module docstring). ``workers``: processes reading parameter files (1: in this
    process). ``fit``: first fit complete sessions that have no parameter file, in ``workers``
    processes (:func:`fit_unfitted`). ``only``: restrict to these session names (benchmarks).
    ``progress(stage, done, total)`` is called as sessions are fitted (stage ``fit``) and GPUs written
    (``collect``)."""
    report = progress or (lambda stage, done, total: None)
    root, fleet = Path(root), Path(fleet)
    d = dirs(root)
    if not d["logs"].is_dir() and not d["fitted"].is_dir():
        raise BadInputError(f"{root}: not a fleet directory (no logs/ or fitted/ in it; see `calib fleet submit`)")
    if fleet.exists() and not fleet.is_dir():
        raise BadInputError(f"{fleet}: exists and is not a directory")
    existing = scan_dataset(fleet)   # first: a corrupt dataset is refused before any work
    names: set[str] = set()
    for sub, pattern in (("logs", "*"), ("fitted", "*.json"), ("tasks", "*.json")):
        for p in d[sub].glob(pattern):   # (nothing when the directory does not exist)
            n = p.name if sub == "logs" else p.stem
            if not n.startswith(".") and not (sub == "fitted" and n.endswith((".recovery", ".samples"))):
                names.add(n)
    if only is not None:
        names &= only
    result = CollectResult()
    if fit:
        unfitted = [n for n in sorted(names) if not (d["fitted"] / f"{n}.json").exists() and (d["logs"] / n).is_dir()
                    and _session_state(d["logs"] / n, None)[0] == "unfitted"]
        fitted = fit_unfitted(root, unfitted, workers, lambda done, total: report("fit", done, total))
        for n, err in fitted.items():
            if err:
                log.warning("%s: fit failed: %s", n, err)
    todo: list[tuple[str, str, str | None]] = []
    for name in sorted(names):
        pfile = d["fitted"] / f"{name}.json"
        tfile = d["tasks"] / f"{name}.json"
        task = read_task_record(tfile) if tfile.exists() else None
        if pfile.exists():
            todo.append((name, str(pfile), str(tfile) if tfile.exists() else None))
        elif (d["logs"] / name).is_dir():
            state, why = _session_state(d["logs"] / name, task)
            result.statuses.append(SessionStatus(name, state, why))
        else:
            state = (task or {}).get("state")
            why = (f"task record says {state!r}" + (f", exit status {task.get('exit_status')}"
                                                     if task.get("exit_status") is not None else "")) if task else ""
            result.statuses.append(SessionStatus(name, "failed" if state == "failed" else "not started",
                                                 why or "no session directory"))
    # pass 1 (cheap, this process): who each parameter file claims to be, for the whole-fleet checks that
    # must pass before anything is written
    from calib.fleet.paramrows import param_identity

    new: list[tuple[str, str, str | None]] = []
    seen: dict[tuple[str, str], str] = {}
    chips: dict[str, str] = {}
    for ident in existing.values():
        chips.setdefault(ident["gpu_name"], f"dataset file {ident['path']}")
    for name, pfile, tfile in todo:
        try:
            ident = param_identity(pfile)
        except CalibError as e:
            result.statuses.append(SessionStatus(name, "failed", f"parameter file refused: {e}"))
            continue
        uuid = ident["gpu_uuid"]
        if not uuid:
            result.statuses.append(SessionStatus(name, "failed", f"{pfile}: device has no uuid"))
            continue
        key = calibration_key(ident)
        if key in seen:
            raise BadInputError(f"duplicate GPU uuid {uuid}: sessions {seen[key]} and {name} both claim it under "
                                f"driver {key[1]}; nothing written (remove or rename one of them)")
        seen[key] = name
        old = existing.get(key)
        if old is not None:
            if old.get("param_sha256") == file_sha256(pfile):
                result.already += 1
                result.statuses.append(SessionStatus(name, "already", "", uuid))
                continue
            raise BadInputError(f"duplicate GPU uuid {uuid}: session {name} ({pfile}) and the dataset's "
                                f"{old['path']} (session {old.get('session')}) differ; nothing written")
        chips.setdefault(ident["gpu_name"], f"session {name}")
        new.append((name, pfile, tfile))
    if len(chips) > 1 and not allow_mixed:
        listing = "; ".join(f"{c!r} (e.g. {w})" for c, w in chips.items())
        raise BadInputError(f"GPUs of {len(chips)} different chips in one fleet: {listing}; nothing written "
                            "(collect each chip into its own dataset, or pass --allow-mixed)")
    # pass 2 (the work, in the pool): check, predict the reference workload and write each GPU's file;
    # one GPU at a time per worker, so memory does not grow with the fleet
    fleet.mkdir(parents=True, exist_ok=True)
    args = ([str(fleet)] * len(new), [t[1] for t in new], [t[2] for t in new])
    done = _mapped(_collect_one, args, workers, lambda n, total: report("collect", n, total), chunksize=8)
    for (name, _, _), (path, uuid, err) in zip(new, done):
        if err:
            result.statuses.append(SessionStatus(name, "failed", f"parameter file refused: {err}"))
            continue
        result.files.append(Path(path))
        result.added += 1
        result.statuses.append(SessionStatus(name, "collected", "", uuid))
    result.statuses.sort(key=lambda s: s.session)
    _write_status(fleet, root, result)
    return result


def _write_status(fleet: Path, root: Path, result: CollectResult) -> None:
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    atomic_write_json(fleet / "_status.json", {"source": str(root), "collected_utc": when,
                                               "sessions": [s.as_dict() for s in result.statuses]})
    line = {"utc": when, "source": str(root), "added": result.added, "already": result.already,
            **{st: [s.session for s in result.listed(st)] for st in ("incomplete", "unfitted", "failed", "not started")}}
    with open(fleet / "_collect.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps(line) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def require_gpu_files(fleet: str | Path) -> list[Path]:
    """The GPU files of dataset ``fleet`` (:func:`dataset_files`); BadInputError when there is no dataset
    or it holds no GPU (the analysis checks this before it writes any output)."""
    fleet = Path(fleet)
    if not fleet.is_dir():
        raise BadInputError(f"{fleet}: no such fleet dataset (run `calib fleet collect` first)")
    files = dataset_files(fleet)
    if not files:
        raise BadInputError(f"{fleet}: the dataset holds no GPU yet")
    return files
