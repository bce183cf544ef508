"""The samples table: one row per steady-state measurement of a workload at one clock configuration.

Columns (contract, ../shared/design/contracts.md): ``workload``, ``power_w``, ``core_mhz``, ``mem_mhz``,
``act_<UNIT>`` in [0, 1], and optionally ``temp_c``, ``active_sms``, ``time_s``, ``energy_j``,
``repeat``. This toolkit adds optional columns of its own (:data:`EXTRA_COLUMNS`) and per-warp kernel
counts ``cnt_<class>``. Anything else is refused with the column named.

This module reads and checks tables; :mod:`calib.segment` builds them from session directories.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from calib.core.atomic import atomic_write_text
from calib.core.errors import BadInputError
from calib.core.units import INSTRUCTION_CLASSES

CONTRACT_NUMERIC = ("power_w", "core_mhz", "mem_mhz", "temp_c", "active_sms", "time_s", "energy_j", "repeat")
#: Optional columns this toolkit writes beyond the contract (numeric unless listed in TEXT_COLUMNS).
EXTRA_COLUMNS = (
    "power_std_w",      # standard deviation of the power readings in the window, W
    "n_power",          # number of power readings averaged
    "wall_power_w",     # mean wall (AC) power from a power analyzer, W
    "host_power_w",     # mean host CPU package + DRAM power from RAPL, W
    "energy_counter_j",  # energy from the NVML counter over the window, J
    "energy_window_j",   # the window's energy under the measured power sampling (calib.windows), J
    "energy_window_stderr_j",  # its standard error, J
    "temp_start_c",     # temperature at the start of the window, degC
    "temp_se_c",        # standard error of the window's mean temperature from its readings' spread, degC
    "fan_pct",          # fan duty, %
    "mem_intensity",    # IPP eq. (20)
    "warps_per_sm",     # IPP eq. (12)
    "blocks", "threads_per_block",
    "window_s",         # measurement window length, s
    "role", "stresses", "segment",
    "ref_core_mhz",     # core clock at which the act_ columns were measured, when not the row's (gpmTOOL tables)
    "ref_mem_mhz",      # memory clock at which the act_ columns were measured, likewise
    # timing inputs of a kernel description (MWP/CWP, Wang & Chu)
    "ilp", "uncoal_frac", "trans_per_uncoal", "ind_mem_insts", "sync_insts", "l2_hit_rate", "active_blocks_per_sm",
    "mstr",             # independent memory loads before the first consumer (thesis Ch. V MSTR)
    # host-device copies of a kernel description (calib.model.transfer): bytes per launch, and 1 when
    # the host buffers are pinned (page-locked), 0 when pageable
    "bytes_h2d", "bytes_d2h", "host_pinned",
    # kernel tables from profiler exports (calib.importers.kernels)
    "n_launches",       # profiled launches averaged into the row
    "device",           # board name the export gives (text)
    "arch",             # its chip (e.g. GP102) or compute capability (e.g. 6.1): calib.core.arch (text)
    # kernel sequences (thermal network): when a kernel starts (s from the sequence start) and how long it
    # runs (s; default its time_s), so calib predict gives each its temperature from the sequence
    "start_s", "duration_s",
)
TEXT_COLUMNS = ("workload", "role", "stresses", "device", "arch")
ACT_PREFIX = "act_"
CNT_PREFIX = "cnt_"


@dataclass(frozen=True)
class TableInfo:
    """What a samples table contains: its units and clock configurations."""

    units: tuple[str, ...]
    n_rows: int
    clock_configs: tuple[tuple[float, float], ...]

    @property
    def multi_clock(self) -> bool:
        return len(self.clock_configs) > 1


def act_units(df: pd.DataFrame) -> list[str]:
    """Unit names of the ``act_<UNIT>`` columns, in column order."""
    return [c[len(ACT_PREFIX):] for c in df.columns if c.startswith(ACT_PREFIX)]


def _is_known(col: str) -> bool:
    return (col == "workload" or col in CONTRACT_NUMERIC or col in EXTRA_COLUMNS
            or (col.startswith(ACT_PREFIX) and len(col) > len(ACT_PREFIX))
            or (col.startswith(CNT_PREFIX) and col[len(CNT_PREFIX):] in INSTRUCTION_CLASSES))


def check_samples(df: pd.DataFrame, source: str = "<table>", require_power: bool = True,
                  needed: tuple[str, ...] = (), require_act: bool = True,
                  locations: Sequence[tuple[int, int]] | None = None) -> pd.DataFrame:
    """Validate a samples table and return it with numeric columns converted.

    Refuses (``BadInputError``, naming the column and, for values, the row) unknown or duplicate
    columns, text in numeric columns, activities outside [0, 1], infinite values, non-positive power
    and clocks (``power_w``, ``core_mhz``, ``mem_mhz``, ``ref_core_mhz``, ``ref_mem_mhz``, all > 0) and
    other out-of-range values. Rows with missing values in a needed column (``workload``, ``power_w``
    when ``require_power``, every ``act_`` column, and ``needed``) are dropped with one warning that
    counts them.

    ``locations`` gives, per row of ``df``, its (data row, file line) in the file it was read from
    (:func:`read_samples` passes them): messages then say ``row R (line L)`` with R and L counted in
    the file, before any row is dropped. Without it (tables built in memory) messages say ``row R``,
    the 1-based position in ``df``.
    """
    if df.shape[1] == 0:
        raise BadInputError(f"{source}: no columns (empty file?)")
    if locations is not None and len(locations) != len(df):
        raise ValueError(f"check_samples: {len(locations)} locations for {len(df)} rows")
    for j, col in enumerate(df.columns):
        if not isinstance(col, str) or not col.strip():
            raise BadInputError(f"{source}: column {j + 1} has no name (empty header field)")
    dup = [c for c in df.columns if list(df.columns).count(c) > 1]
    if dup:
        raise BadInputError(f"{source}: column '{dup[0]}' appears more than once")
    loc = list(locations) if locations is not None else [(i + 1, 0) for i in range(len(df))]

    def at(i: int) -> str:
        """'row R (line L)' of the i-th remaining row."""
        row, line = loc[i]
        return f"row {row} (line {line})" if line else f"row {row}"

    for col in df.columns:
        if not _is_known(col):
            raise BadInputError(
                f"{source}: unknown column '{col}' (expected workload, power_w, core_mhz, mem_mhz, act_<unit>, "
                f"temp_c, active_sms, time_s, energy_j, repeat, or one of: {', '.join(EXTRA_COLUMNS)})"
            )
    if "workload" not in df.columns:
        raise BadInputError(f"{source}: required column 'workload' missing")
    if require_power and "power_w" not in df.columns:
        raise BadInputError(f"{source}: required column 'power_w' missing (needed to fit)")
    units = act_units(df)
    if not units and require_act:
        raise BadInputError(f"{source}: no activity columns (act_<unit>)")
    out = df.copy()
    for col in out.columns:
        if col in TEXT_COLUMNS:
            continue
        raw = out[col]
        if raw.dtype == object or pd.api.types.is_string_dtype(raw):
            stripped = raw.astype("string").str.strip()
            conv = pd.to_numeric(stripped.where(stripped != "", None), errors="coerce")
            bad = conv.isna() & stripped.notna() & (stripped != "") & (stripped.str.lower() != "nan")
            if bad.any():
                i = int(np.flatnonzero(bad.to_numpy())[0])
                raise BadInputError(f"{source}: {at(i)}, column '{col}': {raw.iloc[i]!r} is not a number")
            out[col] = conv.astype(float)
        elif not pd.api.types.is_numeric_dtype(raw):
            raise BadInputError(f"{source}: column '{col}' is not numeric")
        else:
            out[col] = raw.astype(float)
    out["workload"] = out["workload"].astype("string")
    needed_cols = ["workload"] + [ACT_PREFIX + u for u in units] + list(needed)
    if require_power:
        needed_cols.append("power_w")
    missing_cols = [c for c in needed if c not in out.columns]
    if missing_cols:
        raise BadInputError(f"{source}: required column '{missing_cols[0]}' missing")
    if len(out) == 0:
        raise BadInputError(f"{source}: no data rows (only a header)")
    incomplete = out[needed_cols].isna().any(axis=1)
    if incomplete.any():
        n = int(incomplete.sum())
        i = int(np.flatnonzero(incomplete.to_numpy())[0])
        first_col = next(c for c in needed_cols if pd.isna(out[c].iloc[i]))
        warnings.warn(f"{source}: dropped {n} of {len(out)} rows with missing values in a needed column "
                      f"(first: {at(i)}, column '{first_col}')")
        keep = ~incomplete.to_numpy()
        out = out[keep].reset_index(drop=True)
        loc = [x for x, k in zip(loc, keep) if k]
    if len(out) == 0:
        raise BadInputError(f"{source}: no usable rows (every row misses a needed value)")
    for u in units:
        col = ACT_PREFIX + u
        v = out[col].to_numpy()
        bad = (v < -1e-9) | (v > 1 + 1e-9) | ~np.isfinite(v)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise BadInputError(
                f"{source}: {at(i)}, column '{col}': activity {float(v[i]):g} outside [0, 1] "
                "(activities are access rates or utilizations)")
    names = out["workload"].astype(str).str.strip()
    if (names == "").any():
        i = int(np.flatnonzero((names == "").to_numpy())[0])
        raise BadInputError(f"{source}: {at(i)}, column 'workload': empty name")
    for col in out.columns:
        if col in TEXT_COLUMNS:
            continue
        v = out[col].to_numpy(dtype=float)
        if np.isinf(v).any():
            i = int(np.flatnonzero(np.isinf(v))[0])
            raise BadInputError(f"{source}: {at(i)}, column '{col}': {v[i]} is not a finite number")
    # Physically meaningful ranges (a GPU system draws well under 100 kW). power_w is the measured mean
    # board power (contract): a powered board never draws 0 W, and the models divide by it and fit
    # its logarithm, so 0 or negative is a broken measurement. Clocks (also the reference clocks the
    # activities were measured at) divide the DVFS model's terms: 0 gives inf/NaN in the fit.
    for col, lo, hi, strict, rule in (
            ("power_w", 0.0, 1e5, True, "power_w must be > 0 and at most 1e5 W"),
            *((c, 0.0, 1e5, True, "a clock must be > 0 and at most 1e5 MHz")
              for c in ("core_mhz", "mem_mhz", "ref_core_mhz", "ref_mem_mhz")),
            ("time_s", 0.0, np.inf, True, "time_s must be > 0"),
            ("active_sms", 0.0, 1e5, True, "active_sms must be > 0"),
            ("energy_j", 0.0, np.inf, False, "energy_j must be >= 0"),
            ("temp_c", -100.0, 250.0, False, "temp_c must be in [-100, 250]"),
            # what the samples layer writes about each window: a length, counts, a spread, a duty
            ("window_s", 0.0, np.inf, True, "a measurement window's length must be > 0 s"),
            ("n_power", 0.0, np.inf, False, "a count of readings must be >= 0"),
            ("power_std_w", 0.0, 1e5, False, "a standard deviation must be >= 0"),
            ("energy_counter_j", 0.0, np.inf, False, "energy_counter_j must be >= 0"),
            ("wall_power_w", 0.0, 1e5, True, "wall_power_w must be > 0 and at most 1e5 W"),
            ("fan_pct", 0.0, 100.0, False, "fan_pct must be in [0, 100] %")):
        if col in out.columns:
            v = out[col].to_numpy()
            bad = ((v <= lo) if strict else (v < lo)) | (v > hi)
            bad &= ~np.isnan(v)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise BadInputError(f"{source}: {at(i)}, column '{col}': {float(v[i]):g} is not a valid value ({rule})")
    return out


def read_text_file(path: str | os.PathLike, expected: str = "a file", kind: str = "text file") -> tuple[bytes, str]:
    """(bytes, UTF-8 text) of a file read once (a pipe cannot be read twice; the bytes are for hashing).

    BadInputError when the file is missing, a directory (``expected`` says what was wanted), unreadable,
    not UTF-8 (``kind`` names what it is not) or empty."""
    p = Path(path)
    if not p.exists():
        if os.path.lexists(p):   # the name exists: a link to nothing (dangling, or a loop of links)
            raise BadInputError(f"{p}: a symbolic link that leads to no file (dangling, or a loop of links)")
        raise BadInputError(f"{p}: file not found")
    if p.is_dir():
        raise BadInputError(f"{p}: is a directory, expected {expected}")
    try:
        data = p.read_bytes()
    except OSError as e:
        raise BadInputError(f"{p}: cannot read ({e.strerror or e})") from e
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise BadInputError(f"{p}: not a {kind} ({e.reason} at byte {e.start})") from e
    if not text.strip():
        raise BadInputError(f"{p}: empty file")
    return data, text


def read_samples(path: str | os.PathLike, require_power: bool = True,
                 needed: tuple[str, ...] = (), require_act: bool = True) -> pd.DataFrame:
    """Read and validate a samples table CSV (see :func:`check_samples`).

    The file is read once, as bytes (so a pipe such as ``/dev/stdin`` works), and parsed with the
    :mod:`csv` module so that every row keeps its file line. Refused, naming the line: a row whose
    field count differs from the header's (a truncated file ends with one), an unnamed column. Blank
    lines are skipped but still count as rows, so row numbers match the file. The sha256 of the bytes
    read is in ``df.attrs["sha256"]`` (hashing the path again would read an exhausted pipe).
    """
    import csv
    import hashlib
    import io

    path = Path(path)
    data, text = read_text_file(path, "a samples table (CSV)", "text CSV file")
    reader = csv.reader(io.StringIO(text, newline=""), skipinitialspace=True)
    parsed: list[tuple[int, list[str]]] = []  # (first file line of the record, fields)
    try:
        start = 1
        for rec in reader:
            parsed.append((start, rec))  # a record with a quoted newline spans lines: report its first
            start = reader.line_num + 1
    except csv.Error as e:
        raise BadInputError(f"{path}: line {reader.line_num}: not a readable CSV table ({e})") from e
    header: list[str] | None = None
    header_line = 0
    records: list[list[str]] = []
    locations: list[tuple[int, int]] = []
    row = 0
    for k, (line, rec) in enumerate(parsed):
        blank = not rec or (len(rec) == 1 and not rec[0].strip())
        if header is None:
            if not blank:
                header, header_line = [h.strip() for h in rec], line
            continue  # blank lines before the header
        row += 1
        if blank and len(header) > 1:
            continue  # a blank line: skipped, but it counts as a row so that row numbers match the file
        if len(rec) != len(header):
            cut = k == len(parsed) - 1 and not text.endswith(("\n", "\r")) and len(rec) < len(header)
            raise BadInputError(
                f"{path}: row {row} (line {line}): {len(rec)} fields, expected {len(header)} as in the header "
                f"(line {header_line})" + ("; the file ends mid-line (truncated?)" if cut else "")
                + ("; a quoted field spans lines (unbalanced \" quote?)" if any("\n" in f or "\r" in f for f in rec) else ""))
        records.append(rec)
        locations.append((row, line))
    if header is None:
        raise BadInputError(f"{path}: empty file")
    for j, h in enumerate(header):
        if not h:
            raise BadInputError(f"{path}: line {header_line}: column {j + 1} has no name (empty header field)")
    dup = sorted({c for c in header if header.count(c) > 1})
    if dup:
        raise BadInputError(f"{path}: column '{dup[0]}' appears more than once")
    out = check_samples(pd.DataFrame(records, columns=header, dtype=object), str(path), require_power=require_power,
                        needed=needed, require_act=require_act, locations=locations)
    out.attrs["sha256"] = hashlib.sha256(data).hexdigest()
    return out


def table_info(df: pd.DataFrame) -> TableInfo:
    """Units and distinct (core_mhz, mem_mhz) configurations of a checked table."""
    if "core_mhz" in df.columns or "mem_mhz" in df.columns:
        core = df["core_mhz"] if "core_mhz" in df.columns else pd.Series(np.nan, index=df.index)
        mem = df["mem_mhz"] if "mem_mhz" in df.columns else pd.Series(np.nan, index=df.index)
        pairs = sorted({(float(c), float(m)) for c, m in zip(core, mem)},
                       key=lambda p: (math.inf if math.isnan(p[0]) else p[0], math.inf if math.isnan(p[1]) else p[1]))
    else:
        pairs = [(math.nan, math.nan)]
    return TableInfo(tuple(act_units(df)), len(df), tuple(pairs))


def write_samples(df: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write a samples table atomically (CSV, full float precision)."""
    atomic_write_text(path, df.to_csv(index=False, lineterminator="\n"))
