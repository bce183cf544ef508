"""Session directories: the crash-safe logs between the measurement layer and the samples layer.

Layout of ``logs/<session>/`` (contract: ../shared/design/contracts.md):

``manifest.json``
    device identity, clocks, toolkit version, campaign plan, sensor list. Written atomically.
``markers.csv``
    benchmark phase markers (``measure_start``/``measure_stop`` etc.).
``<sensor>.csv``
    one append-only stream per sensor.
``session.lock``
    present while a process writes the session (``calib run``, ``calib log``): an exclusive
    ``fcntl.flock`` lock holding the writer's pid (:class:`SessionLock`). A second writer is refused
    ("session <dir> in use by pid N"); the lock dies with its process, and a lock file left by a
    killed writer is named and taken over.

Every stream row starts with ``t_mono_s`` (seconds on the session's monotonic clock), ``t_wall_s``
(Unix time, s) and ``segment`` (0 for the first run, +1 for every resume or appended logging run).
Rows are written whole and flushed at once, and ``os.fsync`` runs at least once per second, so a killed
writer loses at most the line it was writing; :func:`repair_partial_lines` drops that line before a
resume, and the reader ignores it.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import math
import mmap
import os
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from calib.core.atomic import atomic_write_json
from calib.core.errors import BadInputError

MANIFEST_NAME = "manifest.json"
LOCK_NAME = "session.lock"
MARKERS_STREAM = "markers"
TIME_COLUMNS = ("t_mono_s", "t_wall_s", "segment")
MARKER_COLUMNS = ("event", "workload", "repeat", "info")
SESSION_FORMAT = 1

#: Marker events with a meaning for the samples layer.
EVENTS = (
    "segment_start", "idle_start", "idle_stop", "warmup_start", "measure_start", "measure_stop",
    "cooldown_start", "thermal_heat_start", "thermal_cool_start", "thermal_stop",
    "workload_done", "campaign_done", "abort", "align_start", "align_stop",
    # host-device copy windows and the idle reference window just before each (calib.fit.transfer)
    "copy_ref_start", "copy_ref_stop", "copy_start", "copy_stop",
)


def _fmt(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, float) or (hasattr(value, "dtype") and getattr(value.dtype, "kind", "") == "f"):
        v = float(value)
        return "" if math.isnan(v) else repr(v)
    if hasattr(value, "dtype") and getattr(value.dtype, "kind", "") in "iu":
        return str(int(value))
    return str(value)


class StreamWriter:
    """Append-only CSV stream of one sensor (or of the markers).

    Parameters
    ----------
    path:
        CSV file; created with a header if missing, appended to otherwise.
    columns:
        data columns after the time columns. An existing file must have exactly this header.
    segment:
        segment number stamped on every row.
    fsync_interval_s:
        ``os.fsync`` at most this often (rows are flushed to the OS on every write regardless).
    """

    def __init__(self, path: Path, columns: Iterable[str], segment: int, fsync_interval_s: float = 1.0):
        self.path = Path(path)
        self.columns = tuple(columns)
        self.segment = int(segment)
        self.fsync_interval_s = fsync_interval_s
        exists = check_stream_header(self.path, self.columns)
        self._fh = open(self.path, "a", encoding="utf-8", newline="")
        if not exists:
            self._fh.write(",".join(TIME_COLUMNS + self.columns) + "\n")
            self._fh.flush()
        self._last_sync = time.monotonic()

    def append(self, t_mono_s: float, t_wall_s: float, values: Mapping[str, Any] | None = None) -> None:
        """Append one row; missing columns are written empty."""
        values = values or {}
        unknown = set(values) - set(self.columns)
        if unknown:
            raise ValueError(f"{self.path.name}: unknown columns {sorted(unknown)}")
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow(
            [_fmt(float(t_mono_s)), _fmt(float(t_wall_s)), self.segment]
            + [_fmt(values.get(c)) for c in self.columns]
        )
        self._write(buf.getvalue())  # one write per row: a kill leaves at most one partial line

    def append_block(self, t_mono_s: Any, t_wall_s: Any, columns: Mapping[str, Any]) -> None:
        """Append many rows at once (arrays of equal length), in one write and one flush.

        Used for high-rate streams; a kill can still only cut the last line.
        """
        import numpy as np

        unknown = set(columns) - set(self.columns)
        if unknown:
            raise ValueError(f"{self.path.name}: unknown columns {sorted(unknown)}")
        t_mono = np.asarray(t_mono_s, dtype=float)
        n = len(t_mono)
        if n == 0:
            return
        cols = [[repr(float(x)) for x in t_mono], [repr(float(x)) for x in np.asarray(t_wall_s, dtype=float)],
                [str(self.segment)] * n]
        for c in self.columns:
            v = columns.get(c)
            if v is None:
                cols.append([""] * n)
                continue
            a = np.asarray(v)
            if a.dtype.kind in "iub":
                cols.append([str(int(x)) for x in a])
            elif a.dtype.kind == "f":
                cols.append(["" if x != x else repr(x) for x in a.tolist()])
            else:
                cols.append([_csv_field(x) for x in a.tolist()])
        self._write("".join(",".join(r) + "\n" for r in zip(*cols)))

    def _write(self, text: str) -> None:
        """Write and flush ``text``; ``os.fsync`` when the last one is ``fsync_interval_s`` old."""
        self._fh.write(text)
        self._fh.flush()
        now = time.monotonic()
        if now - self._last_sync >= self.fsync_interval_s:
            os.fsync(self._fh.fileno())
            self._last_sync = now

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()


def check_stream_header(path: Path, columns: Iterable[str], hint: str = "") -> bool:
    """Whether stream ``path`` exists with content; BadInputError (``hint`` ending the message) when its
    header is not the time columns and ``columns``: rows of another layout are never appended."""
    if not (path.exists() and path.stat().st_size > 0):
        return False
    header = ",".join(TIME_COLUMNS + tuple(columns))
    with open(path, encoding="utf-8") as fh:
        first = fh.readline().rstrip("\r\n")
    if first != header:
        raise BadInputError(f"{path}: stream header {first!r} differs from the sensor's columns {header!r}; "
                            f"refusing to append rows with a different layout{hint}")
    return True


def _csv_field(x: Any) -> str:
    s = _fmt(x)
    if any(ch in s for ch in ',"\n\r'):
        return '"' + s.replace('"', '""') + '"'
    return s


def repair_partial_lines(path: Path) -> int:
    """Cut a trailing partial line (no newline) left by a killed writer. Returns bytes removed."""
    path = Path(path)
    if not path.exists():
        return 0
    size = path.stat().st_size
    if size == 0:
        return 0
    with open(path, "rb+") as fh:
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:  # the end is read, not the whole file
            if m[-1:] == b"\n":
                return 0
            cut = m.rfind(b"\n") + 1
        fh.truncate(cut)
    return size - cut


class SessionInUseError(BadInputError):
    """Another process writes this session (exit status 2): its data are left as they are."""


class SessionLock:
    """An exclusive lock on a session directory: ``fcntl.flock`` on ``<session>/session.lock``, which
    holds the pid of the process that has it.

    The kernel releases the lock when its process ends, however it ends (SIGKILL included), so a
    lock is never stale in effect; a lock *file* left by a killed writer is detected (a pid in the file,
    nobody holding the lock), named in a warning and taken over. Acquiring is re-entrant within a
    process (``calib run`` holds the lock for the whole run, and the session writer it opens takes it
    again); :meth:`release` removes the lock file when the last holder lets go, and with ``cleanup`` the
    session directory too when the lock made it and nothing else was written (a run that failed at
    once, e.g. on a full disk, leaves no empty session directory).
    """

    _held: dict[Path, "SessionLock"] = {}

    def __init__(self, path: Path, fd: int, made_dir: bool):
        self.path = path
        self._fd = fd
        self._count = 1
        self.made_dir = made_dir

    @classmethod
    def acquire(cls, path: str | os.PathLike) -> "SessionLock":
        """Lock session directory ``path`` (created if missing); SessionInUseError naming the pid of the
        process that holds it."""
        import fcntl

        path = Path(path)
        key = path.resolve()
        held = cls._held.get(key)
        if held is not None:
            held._count += 1
            return held
        made_dir = not path.exists()
        path.mkdir(parents=True, exist_ok=True)
        lock_path = path / LOCK_NAME
        for _ in range(50):  # retried only when the file was replaced between open and lock
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise SessionInUseError(f"session {path} in use by {_holder(lock_path)}; wait for it to finish "
                                        "(or stop it), or choose another session") from None
            except OSError:
                os.close(fd)
                raise
            # the previous holder removes the file when it lets go: make sure ours is still the one on disk
            try:
                same = os.fstat(fd).st_ino == os.stat(lock_path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        else:  # pragma: no cover - 50 replacements in a row
            raise SessionInUseError(f"session {path}: its lock file keeps changing; another process is using it")
        old = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
        if old and old != str(os.getpid()):
            state = "which is no longer running (killed?)" if not _running(old) else "which no longer holds it"
            warnings.warn(f"{lock_path}: stale lock of pid {old}, {state}; taking it over")
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        os.fsync(fd)
        lock = cls(path, fd, made_dir)
        cls._held[key] = lock
        return lock

    def release(self, cleanup: bool = True) -> None:
        """Let go (the last holder in this process removes the lock file; module and class docstrings)."""
        self._count -= 1
        if self._count > 0 or self._fd < 0:
            return
        self._held.pop(self.path.resolve(), None)
        (self.path / LOCK_NAME).unlink(missing_ok=True)  # before unlocking: a waiting process then sees a fresh file
        os.close(self._fd)  # closes the lock
        self._fd = -1
        if cleanup and self.made_dir:
            with contextlib.suppress(OSError):
                self.path.rmdir()  # only if empty: a session with any data stays

    def __enter__(self) -> "SessionLock":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


def _running(pid: str) -> bool:
    """Whether process ``pid`` exists."""
    try:
        os.kill(int(pid), 0)
    except (ValueError, OverflowError, ProcessLookupError):
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _holder(lock_path: Path) -> str:
    """'pid N' of the process holding a lock (read from the lock file; it may still be writing it)."""
    for _ in range(20):
        try:
            text = lock_path.read_text(encoding="ascii", errors="replace").strip()
        except OSError:
            text = ""
        if text.isdigit():
            return f"pid {text}"
        time.sleep(0.01)
    return "another process"


def lock_session(path: str | os.PathLike) -> SessionLock:
    """:meth:`SessionLock.acquire`: use as ``with lock_session(dir): ...``."""
    return SessionLock.acquire(path)


class SessionWriter:
    """Writes one session directory; also used to append a new segment to an existing session.

    Use :meth:`create` for a new session and :meth:`resume` to append a segment to an existing one.
    """

    def __init__(self, path: Path, manifest: dict, segment: int, clock: Callable[[], tuple[float, float]] | None,
                 lock: SessionLock | None = None):
        self.path = Path(path)
        self.manifest = manifest
        self.segment = segment
        self._clock = clock or (lambda: (time.monotonic(), time.time()))
        self._streams: dict[str, StreamWriter] = {}
        self._lock = lock
        try:
            self.markers = self._open(MARKERS_STREAM, MARKER_COLUMNS)
        except BaseException:
            self._release()
            raise

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def create(cls, path: str | os.PathLike, manifest: Mapping[str, Any],
               clock: Callable[[], tuple[float, float]] | None = None) -> "SessionWriter":
        """Create a new session directory with ``manifest`` (refuses to overwrite one)."""
        path = Path(path)
        if (path / MANIFEST_NAME).exists():
            raise BadInputError(f"{path}: a session already exists here; resume it or choose another name")
        lock = SessionLock.acquire(path)  # held until close(); refuses a session another process writes
        try:
            if (path / MANIFEST_NAME).exists():  # made by the process that had the lock before us
                raise BadInputError(f"{path}: a session already exists here; resume it or choose another name")
            man = dict(manifest)
            man.setdefault("session_format", SESSION_FORMAT)
            man.setdefault("created_utc", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
            man.setdefault("segments", [])
            man["segments"] = list(man["segments"]) + [{"segment": 0, "started_utc": man["created_utc"]}]
            atomic_write_json(path / MANIFEST_NAME, man)
        except BaseException:
            lock.release()  # and the directory, when it made it and it is still empty
            raise
        return cls(path, man, 0, clock, lock)

    @classmethod
    def resume(cls, path: str | os.PathLike, clock: Callable[[], tuple[float, float]] | None = None,
               note: str = "resume") -> "SessionWriter":
        """Open an existing session for appending a new segment (repairs partial last lines first)."""
        path = Path(path)
        read_manifest(path)  # a session, before a lock file is put into the directory
        lock = SessionLock.acquire(path)  # before anything is repaired or appended
        try:
            man = read_manifest(path)
            for csv_path in sorted(path.glob("*.csv")):
                removed = repair_partial_lines(csv_path)
                if removed:
                    warnings.warn(f"{csv_path}: dropped a partial last line ({removed} bytes) left by a killed writer")
            segment = 1 + max((s.get("segment", 0) for s in man.get("segments", [])), default=-1)
            man.setdefault("segments", []).append(
                {"segment": segment, "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "note": note})
            atomic_write_json(path / MANIFEST_NAME, man)
        except BaseException:
            lock.release()
            raise
        return cls(path, man, segment, clock, lock)

    # -- writing --------------------------------------------------------------------------------
    def _open(self, name: str, columns: Iterable[str]) -> StreamWriter:
        w = StreamWriter(self.path / f"{name}.csv", columns, self.segment)
        self._streams[name] = w
        return w

    def stream(self, name: str, columns: Iterable[str]) -> StreamWriter:
        """The writer of stream ``name`` (created on first use)."""
        if name == MARKERS_STREAM:
            raise ValueError("'markers' is reserved")
        if name in self._streams:
            return self._streams[name]
        return self._open(name, columns)

    def mark(self, event: str, workload: str = "", repeat: int | None = None,
             t: tuple[float, float] | None = None, **info: Any) -> None:
        """Append a phase marker. ``t`` = (t_mono_s, t_wall_s); default: the session clock now."""
        if event not in EVENTS:
            raise ValueError(f"unknown marker event {event!r}")
        t_mono, t_wall = t if t is not None else self._clock()
        self.markers.append(t_mono, t_wall, {
            "event": event, "workload": workload, "repeat": "" if repeat is None else int(repeat),
            "info": json.dumps(info, sort_keys=True, separators=(",", ":")) if info else "",
        })

    def update_manifest(self, **fields: Any) -> None:
        """Merge top-level fields into the manifest (atomically rewritten)."""
        self.manifest.update(fields)
        atomic_write_json(self.path / MANIFEST_NAME, self.manifest)

    def close(self) -> None:
        try:
            for w in self._streams.values():
                w.close()
        finally:
            self._release()

    def _release(self) -> None:
        if self._lock is not None:
            lock, self._lock = self._lock, None
            lock.release()

    def __enter__(self) -> "SessionWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# ------------------------------------------------------------------------------------------------
# Reading
# ------------------------------------------------------------------------------------------------

def read_manifest(path: str | os.PathLike) -> dict:
    """Read and check ``manifest.json`` of a session directory."""
    path = Path(path)
    if not path.is_dir():
        raise BadInputError(f"{path}: not a session directory")
    mpath = path / MANIFEST_NAME
    if not mpath.exists():
        raise BadInputError(f"{mpath}: manifest missing; not a session directory or the session was never started")
    try:
        with open(mpath, encoding="utf-8") as fh:
            man = json.load(fh)
    except json.JSONDecodeError as e:
        raise BadInputError(f"{mpath}: not valid JSON ({e.msg}: line {e.lineno}, column {e.colno})") from e
    except (OSError, UnicodeDecodeError) as e:
        raise BadInputError(f"{mpath}: cannot be read ({e.__class__.__name__}: {e})") from e
    if not isinstance(man, dict):
        raise BadInputError(f"{mpath}: expected a JSON object")
    fmt = man.get("session_format")
    if fmt != SESSION_FORMAT:
        raise BadInputError(f"{mpath}: session_format {fmt!r} is not supported (expected {SESSION_FORMAT})")
    for key in ("device", "sensors"):
        if key not in man:
            raise BadInputError(f"{mpath}: required field '{key}' missing")
    if not isinstance(man["device"], dict):
        raise BadInputError(f"{mpath}: field 'device' must be an object")
    sensors = man["sensors"]
    if not isinstance(sensors, list) or not all(isinstance(x, dict) and isinstance(x.get("name"), str) for x in sensors):
        raise BadInputError(f"{mpath}: field 'sensors' must be a list of objects with a 'name'")
    _check_manifest_fields(man, mpath)
    return man


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _names(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _check_manifest_fields(man: dict, mpath: Path) -> None:
    """Types of the manifest fields the samples layer and the fit read (each optional unless said),
    so that a hand-edited manifest is refused here, naming the manifest and the field, rather than
    failing later inside a fit or being blamed on an output file."""

    def check(field: str, value: Any, ok: Any, what: str) -> None:
        if not ok:
            raise BadInputError(f"{mpath}: field {field}: {value!r} is not {what}")

    def positive(v: Any, or_null: bool = False) -> bool:
        return (or_null and v is None) or (_is_number(v) and v > 0)

    dev = man["device"]
    check("device.name", dev.get("name"), isinstance(dev.get("name"), str) and dev["name"], "a non-empty string")
    for key in ("uuid", "driver_version", "cuda_version"):
        check(f"device.{key}", dev.get(key), dev.get(key) is None or isinstance(dev[key], str), "a string or null")
    if "sm_count" in dev:
        v = dev["sm_count"]
        check("device.sm_count", v, isinstance(v, int) and not isinstance(v, bool) and v >= 1, "a positive integer")
    for key in ("max_warps_per_sm", "max_blocks_per_sm"):
        if key in dev:
            check(f"device.{key}", dev[key], positive(dev[key]), "a positive number")
    v = dev.get("warp_issue_per_cycle")
    check("device.warp_issue_per_cycle", v, positive(v, or_null=True), "a positive number or null")
    if "clocks" in dev:
        clocks = dev["clocks"]
        check("device.clocks", clocks, isinstance(clocks, dict), "an object (core_mhz, mem_mhz)")
        for key in ("core_mhz", "mem_mhz"):
            check(f"device.clocks.{key}", clocks.get(key), positive(clocks.get(key), or_null=True),
                  "a positive number or null")
        if "supported" in clocks:
            check("device.clocks.supported", clocks["supported"], isinstance(clocks["supported"], dict), "an object")
    for key in ("units", "chip_units", "mem_domain_units"):
        if key in dev:
            check(f"device.{key}", dev[key], _names(dev[key]), "a list of unit names")
    for i, s in enumerate(man["sensors"]):
        if "columns" in s:
            check(f"sensors[{i}].columns", s["columns"], _names(s["columns"]), "a list of column names")
        if "kind" in s:
            check(f"sensors[{i}].kind", s["kind"], isinstance(s["kind"], str), "a string")
    camp = man.get("campaign")
    check("campaign", camp, camp is None or isinstance(camp, dict), "an object or null")
    design = man.get("design")  # rounds of `calib run --design adaptive`
    if design is not None:
        check("design", design, isinstance(design, list), "a list of design rounds")
        for i, r in enumerate(design):
            check(f"design[{i}]", r, isinstance(r, dict) and isinstance(r.get("round"), int)
                  and not isinstance(r.get("round"), bool), "an object with an integer 'round'")
            kernels = r.get("kernels", [])
            check(f"design[{i}].kernels", kernels, isinstance(kernels, list) and all(
                isinstance(k, dict) and isinstance(k.get("name"), str) and isinstance(k.get("mix"), dict)
                and _is_number(k.get("warps_per_sm")) for k in kernels), "a list of {name, mix, warps_per_sm} objects")


def read_stream_csv(path: Path) -> tuple[pd.DataFrame, int]:
    """Read one stream CSV, tolerating a truncated last line.

    Returns the table and the number of dropped lines. A malformed line elsewhere than the end is bad
    input: the error names the file and the line. The C parser reads well-formed files; the exact
    line-by-line check runs only to name what is wrong with a file it rejects.
    """
    path = Path(path)
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as e:
        raise BadInputError(f"{path}: cannot be read as a UTF-8 CSV stream ({e.__class__.__name__})") from e
    if not text:
        raise BadInputError(f"{path}: empty stream (no header)")
    dropped = 0
    if not text.endswith("\n"):
        cut = text.rfind("\n")
        if cut >= 0:  # partial last line of a killed writer
            text = text[: cut + 1]
            dropped = 1
    header = next(csv.reader([text.split("\n", 1)[0]]))
    dup = sorted({c for c in header if header.count(c) > 1})
    if dup:
        raise BadInputError(f"{path}: line 1: column '{dup[0]}' appears more than once")
    for col in TIME_COLUMNS:
        if col not in header:
            raise BadInputError(f"{path}: line 1: header lacks column '{col}'")
    text_cols = [c for c in header if c in ("event", "workload", "info") or c.endswith("_str")]
    if text_cols or '"' in text:  # quoted fields (markers): the exact reader
        return _read_stream_strict(path, text, header, text_cols), dropped
    # pandas pads short rows with NaN: check the field count of every line first
    n_sep = len(header) - 1
    if any(line.count(",") != n_sep for line in text.split("\n")[1:] if line):
        return _read_stream_strict(path, text, header, text_cols), dropped
    try:
        with warnings.catch_warnings():
            # a malformed field ('nan', text) makes a column mixed; the exact reader below names the line,
            # so pandas' own DtypeWarning about it is noise
            warnings.simplefilter("ignore", pd.errors.DtypeWarning)
            df = pd.read_csv(io.StringIO(text), dtype={c: str for c in text_cols}, keep_default_na=False,
                             na_values={c: [""] for c in header if c not in text_cols})
        ok = len(df.columns) == len(header) and all(
            pd.api.types.is_numeric_dtype(df[c]) for c in header if c not in text_cols)
    except (pd.errors.ParserError, ValueError):
        ok = False
    if ok and any(np.isinf(df[c].to_numpy(dtype=float)).any() for c in header if c not in text_cols):
        ok = False  # 'inf' parses as a number: the exact reader refuses it, naming the line
    if ok:
        for c in text_cols:
            df[c] = df[c].fillna("")
        return df, dropped
    return _read_stream_strict(path, text, header, text_cols), dropped


def _read_stream_strict(path: Path, text: str, header: list[str], text_cols: list[str]) -> pd.DataFrame:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines = lines[:-1]
    rows = []
    for i, line in enumerate(lines[1:], start=2):
        rec = next(csv.reader([line])) if line else []
        if len(rec) != len(header):
            raise BadInputError(f"{path}: line {i}: {len(rec)} fields, header has {len(header)}")
        rows.append(rec)
    df = pd.DataFrame(rows, columns=header)
    for col in header:
        if col in text_cols:
            continue
        conv = pd.to_numeric(df[col].replace("", float("nan")), errors="coerce")
        # a reading is a finite number or empty (missing); 'nan' and 'inf' are refused alike
        bad = (conv.isna() & (df[col] != "")) | np.isinf(conv.to_numpy(dtype=float))
        if bad.any():
            i = int(bad.to_numpy().nonzero()[0][0])
            text_v = df[col].iloc[i]
            what = "a number" if pd.isna(pd.to_numeric(text_v, errors="coerce")) and text_v.strip().lower() not in (
                "nan", "+nan", "-nan") else "a finite number (leave the field empty for a missing reading)"
            raise BadInputError(f"{path}: line {i + 2}, column '{col}': {text_v!r} is not {what}")
        df[col] = conv
    return df


@dataclass
class Session:
    """A session directory opened for reading."""

    path: Path
    manifest: dict
    dropped_lines: dict[str, int] = field(default_factory=dict)
    #: stream name -> readings excluded as implausible by :meth:`readings`
    implausible: dict[str, Any] = field(default_factory=dict)
    _cache: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)
    _screened: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return self.path.name

    def stream(self, name: str) -> pd.DataFrame:
        """Rows of stream ``name`` (empty table with no rows when the sensor logged nothing)."""
        if name not in self._cache:
            p = self.path / f"{name}.csv"
            if not p.exists():
                raise BadInputError(f"{self.path}: stream '{name}' missing ({p.name} not found)")
            df, dropped = read_stream_csv(p)
            if dropped:
                self.dropped_lines[name] = dropped
            self._cache[name] = df
        return self._cache[name]

    def readings(self, name: str) -> pd.DataFrame:
        """Rows of sensor stream ``name`` for measurement windows: power, temperature and clock readings
        outside what the device can produce (:mod:`calib.core.plausibility`, limits from the manifest)
        set to missing, with one warning per stream naming the file, the count and the first offending
        line. :meth:`stream` gives the raw rows; the file is never changed."""
        if name not in self._screened:
            from calib.core.plausibility import limits_for, screen

            sensor = next((s for s in self.manifest.get("sensors", []) if s.get("name") == name), {})
            device = self.manifest.get("device") or {}
            df, rep = screen(self.stream(name), limits_for(device, sensor))
            if rep.total:
                self.implausible[name] = rep
                warnings.warn(rep.message(self.path / f"{name}.csv"))
            self._screened[name] = df
        return self._screened[name]

    def markers(self) -> pd.DataFrame:
        df = self.stream(MARKERS_STREAM)
        for col in MARKER_COLUMNS:
            if col not in df.columns:
                raise BadInputError(f"{self.path}/markers.csv: line 1: header lacks column '{col}'")
        df = df.copy()
        infos = []
        for i, s in enumerate(df["info"]):
            try:
                v = json.loads(s) if isinstance(s, str) and s else {}
            except json.JSONDecodeError as e:
                raise BadInputError(f"{self.path}/markers.csv: line {i + 2}, column 'info': not valid JSON ({e.msg})") from e
            if not isinstance(v, dict):
                raise BadInputError(f"{self.path}/markers.csv: line {i + 2}, column 'info': expected a JSON object")
            infos.append(v)
        df["info"] = infos
        return df

    def is_complete(self) -> bool:
        m = self.stream(MARKERS_STREAM)
        return bool((m["event"] == "campaign_done").any())


def read_session(path: str | os.PathLike) -> Session:
    """Open a session directory for reading (checks the manifest and that the markers exist)."""
    s = Session(Path(path), read_manifest(path))
    s.stream(MARKERS_STREAM)
    return s


def file_sha256(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's content."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
