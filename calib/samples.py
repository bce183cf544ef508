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
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from calib.errors import BadInputError
from calib.units import INSTRUCTION_CLASSES

CONTRACT_NUMERIC = ("power_w", "core_mhz", "mem_mhz", "temp_c", "active_sms", "time_s", "energy_j", "repeat")
#: Optional columns this toolkit writes beyond the contract (numeric unless listed in TEXT_COLUMNS).
EXTRA_COLUMNS = (
    "power_std_w",      # standard deviation of the power readings in the window, W
    "n_power",          # number of power readings averaged
    "wall_power_w",     # mean wall (AC) power from a power analyzer, W
    "energy_counter_j",  # energy from the NVML counter over the window, J
    "temp_start_c",     # temperature at the start of the window, degC
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
)
TEXT_COLUMNS = ("workload", "role", "stresses")
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
    if col in ("workload",) or col in CONTRACT_NUMERIC or col in EXTRA_COLUMNS:
        return True
    if col.startswith(ACT_PREFIX) and len(col) > len(ACT_PREFIX):
        return True
    if col.startswith(CNT_PREFIX) and col[len(CNT_PREFIX):] in INSTRUCTION_CLASSES:
        return True
    return False


def check_samples(df: pd.DataFrame, source: str = "<table>", require_power: bool = True,
                  needed: tuple[str, ...] = (), require_act: bool = True) -> pd.DataFrame:
    """Validate a samples table and return it with numeric columns converted.

    Refuses (``BadInputError``, naming the column and, for values, the row) unknown or duplicate
    columns, text in numeric columns, activities outside [0, 1], negative power. Rows with missing
    values in a needed column (``workload``, ``power_w`` when ``require_power``, every ``act_`` column,
    and ``needed``) are dropped with one warning that counts them. Row numbers in messages are 1-based
    data rows, with the file line (header = line 1) in parentheses.
    """
    if df.shape[1] == 0:
        raise BadInputError(f"{source}: no columns (empty file?)")
    dup = [c for c in df.columns if list(df.columns).count(c) > 1]
    if dup:
        raise BadInputError(f"{source}: column '{dup[0]}' appears more than once")
    for col in df.columns:
        if not isinstance(col, str) or not col.strip():
            raise BadInputError(f"{source}: a column has an empty name")
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
                raise BadInputError(
                    f"{source}: row {i + 1} (line {i + 2}), column '{col}': {raw.iloc[i]!r} is not a number")
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
    incomplete = out[needed_cols].isna().any(axis=1)
    if incomplete.any():
        n = int(incomplete.sum())
        warnings.warn(f"{source}: dropped {n} of {len(out)} rows with missing values in a needed column")
        out = out[~incomplete].reset_index(drop=True)
    if len(out) == 0:
        raise BadInputError(f"{source}: no usable rows (every row misses a needed value)")
    for u in units:
        col = ACT_PREFIX + u
        v = out[col].to_numpy()
        bad = (v < -1e-9) | (v > 1 + 1e-9) | ~np.isfinite(v)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise BadInputError(
                f"{source}: row {i + 1}, column '{col}': activity {float(v[i]):g} outside [0, 1] "
                "(activities are access rates or utilizations)")
    names = out["workload"].astype(str).str.strip()
    if (names == "").any():
        i = int(np.flatnonzero((names == "").to_numpy())[0])
        raise BadInputError(f"{source}: row {i + 1}, column 'workload': empty name")
    for col in out.columns:
        if col in TEXT_COLUMNS:
            continue
        v = out[col].to_numpy(dtype=float)
        if np.isinf(v).any():
            i = int(np.flatnonzero(np.isinf(v))[0])
            raise BadInputError(f"{source}: row {i + 1}, column '{col}': {v[i]} is not a finite number")
    # physically meaningful ranges (a GPU system draws well under 100 kW)
    for col, lo, hi, strict in (("power_w", 0.0, 1e5, False), ("core_mhz", 0.0, 1e5, True),
                                ("mem_mhz", 0.0, 1e5, True), ("time_s", 0.0, np.inf, True),
                                ("active_sms", 0.0, 1e5, True), ("energy_j", 0.0, np.inf, False),
                                ("temp_c", -100.0, 250.0, False)):
        if col in out.columns:
            v = out[col].to_numpy()
            bad = ((v <= lo) if strict else (v < lo)) | (v > hi)
            bad &= ~np.isnan(v)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise BadInputError(f"{source}: row {i + 1}, column '{col}': {float(v[i]):g} is not a valid value")
    return out


def read_samples(path: str | os.PathLike, require_power: bool = True,
                 needed: tuple[str, ...] = (), require_act: bool = True) -> pd.DataFrame:
    """Read and validate a samples table CSV (see :func:`check_samples`)."""
    path = Path(path)
    if not path.exists():
        raise BadInputError(f"{path}: file not found")
    if path.is_dir():
        raise BadInputError(f"{path}: is a directory, expected a samples table (CSV)")
    import csv

    try:
        with open(path, encoding="utf-8", newline="") as fh:
            header = next(csv.reader([fh.readline()]), [])
    except UnicodeDecodeError as e:
        raise BadInputError(f"{path}: not a text CSV file") from e
    dup = sorted({c.strip() for c in header if [h.strip() for h in header].count(c.strip()) > 1})
    if dup:
        raise BadInputError(f"{path}: column '{dup[0]}' appears more than once")
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
    except pd.errors.EmptyDataError as e:
        raise BadInputError(f"{path}: empty file") from e
    except (pd.errors.ParserError, UnicodeDecodeError) as e:
        raise BadInputError(f"{path}: not a readable CSV table ({str(e).splitlines()[0]})") from e
    return check_samples(df, str(path), require_power=require_power, needed=needed, require_act=require_act)


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
    from calib.atomic import atomic_write_text

    atomic_write_text(path, df.to_csv(index=False, lineterminator="\n"))
