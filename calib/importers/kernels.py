"""Profiler exports -> a kernel table: one row per kernel and clock pair (``calib import nvprof|ncu FILE --kernels``).

The table is a samples table (:mod:`calib.core.samples`) without power: ``workload`` (kernel name),
``blocks``, ``threads_per_block``, ``cnt_<class>`` (per-warp counts per instruction class),
``uncoal_frac``, ``active_blocks_per_sm`` (achieved occupancy), ``time_s`` (mean measured duration),
``core_mhz``/``mem_mhz`` (the clocks the card ran at, where the export records them; ``--core-mhz``/
``--mem-mhz`` only fill rows without), ``active_sms`` (with ``--sm-count``), ``n_launches``, and the
text columns ``device`` (the board the export names) and ``arch`` (its chip, e.g. ``GP102``, from the
board name or ``--chip``, else the export's compute capability): the timing fit reads the SM issue width
and warp slots from :mod:`calib.core.arch` by it.

How each metric maps to a class is one table, in :mod:`calib.importers.ncu_kernel` (nvprof and ncu
names; with nvprof's default metric sets the memory instructions come from the transaction metrics:
requests = ``*_transactions / *_transactions_per_request``, the L2 hit rate = 1 - DRAM sectors / L2
sectors, the L1 hit rate = 1 - ``l2_tex_read_transactions`` / ``gld_transactions``).

Accepted layouts, one launch per row or ID:

- ``nvprof --print-gpu-trace --csv --metrics ...`` (optionally ``--system-profiling on``): banner lines
  (``==PID==``), a header (``Duration``, ``Grid X/Y/Z``, ``Block X/Y/Z``, ``Name`` or ``Kernel``, metric
  and event columns; ``SM Clock``/``Memory Clock`` with system profiling), then a row of units
  (``us``, ``MHz``, ...), then one row per launch; memcpy/memset rows (no grid) are skipped;
- ``ncu --csv`` details page (``ID``, ``Kernel Name``, ``Block Size``, ``Grid Size``, ``CC``, ``Metric
  Name``, ``Metric Unit``, ``Metric Value``) and ``ncu --csv --page raw`` (one column per metric);
  time from ``gpu__time_duration``, clocks from ``sm__cycles_elapsed.avg.per_second`` and
  ``dram__cycles_elapsed.avg.per_second``;
- ``nvprof --csv --metrics ...`` summaries (``Kernel``, ``Metric Name``, ``Avg``): one row per kernel,
  no time or clocks (the export has none), launch shape from ``--blocks``/``--threads-per-block``.

Launches of one kernel at one clock pair (clocks within 1 %) become one row: counts and time averaged.
Refused, with file, line and column or metric named: an export without kernel rows, a kernel without a
launch shape, a duration or clock in a unit not listed here, a used count or percentage metric in a unit
:func:`calib.importers.ncu_kernel.unit_factor` does not know (scaled counts such as ``Kinst`` are converted), a
duration <= 0.
"""

from __future__ import annotations

import logging
import math
import os
import re
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from calib.core import arch
from calib.core.errors import BadInputError
from calib.core.samples import CNT_PREFIX, check_samples
from calib.core.units import SAME_CLOCK_REL
from calib.importers import ncu_kernel as NK
from calib.importers._common import read_lines, to_float

log = logging.getLogger(__name__)

#: time units of nvprof's units row and ncu's Metric Unit, -> s; clock units -> MHz (one home: ncu_kernel)
TIME_UNITS = NK.TIME_UNITS
CLOCK_UNITS = NK.RATE_UNITS
_NVPROF_USED = set(NK.NVPROF_USED)
_NCU_USED = set(NK.NCU_PIPES) | set(NK.NCU_OPS) | set(NK.NCU_OTHER)


class _Launch:
    """One profiled launch: metrics (value, unit), shape, time, clocks, where it came from."""

    def __init__(self, name: str, where: str):
        self.name = name
        self.where = where
        self.metrics: dict[str, tuple[float, str]] = {}
        self.blocks: int | None = None
        self.tpb: int | None = None
        self.time_s: float | None = None
        self.core_mhz: float | None = None
        self.mem_mhz: float | None = None
        self.device = ""
        self.cc = ""


def _number(raw: str, where: str) -> float:
    return to_float(raw, where, thousands=True, finite=True)


def _time(value: float, unit: str, where: str) -> float:
    u = unit.strip().lower()
    if u not in TIME_UNITS:
        raise BadInputError(f"{where}: time unit {unit.strip()!r} unknown (known: {', '.join(TIME_UNITS)})")
    t = value * TIME_UNITS[u]
    if not t > 0:
        raise BadInputError(f"{where}: duration {value:g} {unit.strip()} is not positive")
    return t


def _clock(value: float, unit: str, where: str) -> float:
    u = unit.strip().lower()
    if u not in CLOCK_UNITS:
        raise BadInputError(f"{where}: clock unit {unit.strip()!r} unknown (known: {', '.join(CLOCK_UNITS)})")
    f = value * CLOCK_UNITS[u]
    if not 0 < f < 1e5:
        raise BadInputError(f"{where}: clock {value:g} {unit.strip()} is not a plausible clock")
    return f


def _add_metric(la: _Launch, metric: str, raw: str, unit: str, where: str, used: set[str]) -> None:
    b = NK._base(metric)
    if b not in used and not b.startswith("smsp__inst_executed_pipe_tensor"):
        return  # metrics the mapping does not use may hold text ("High (7)")
    v = _number(raw, where)
    if v < 0:
        raise BadInputError(f"{where}: {v:g} is negative")
    v *= NK.unit_factor(metric, unit, where)
    if unit.strip() == "%" and v > 100.0 + NK.OVERSHOOT_PCT:
        raise BadInputError(f"{where}: {v:g} % outside [0, 100] %")
    la.metrics[metric] = (v, unit.strip())


def _shape(text: str) -> int | None:
    """Product of an ncu ``(256, 1, 1)`` shape, or None when empty."""
    nums = re.findall(r"\d+", text or "")
    return int(np.prod([int(n) for n in nums])) if nums else None


def _nvprof_trace(p: Path, header: list[str], rows: list[tuple[int, list[str]]]) -> list[_Launch]:
    col = {h: i for i, h in enumerate(header)}
    name_col = "Name" if "Name" in col else "Kernel"
    units: dict[str, str] = {}
    data = rows
    if rows and rows[0][1] and col.get("Duration") is not None and len(rows[0][1]) > col["Duration"]:
        first = rows[0][1][col["Duration"]].strip()
        if first and not re.match(r"^[-+\d.,eE]+$", first):  # the units row
            units = {h: (rows[0][1][i].strip() if i < len(rows[0][1]) else "") for h, i in col.items()}
            data = rows[1:]
    metric_cols = [h for h in header if NK._base(h) in _NVPROF_USED]
    out = []
    for ln, r in data:
        if len(r) != len(header):
            raise BadInputError(f"{p}: line {ln}: {len(r)} fields, expected {len(header)}")
        name = r[col[name_col]].strip()
        gx = r[col["Grid X"]].strip() if "Grid X" in col else ""
        if not gx and name.startswith("["):
            continue  # [CUDA memcpy HtoD] and the like
        la = _Launch(name, f"{p}: line {ln}")
        if "Grid X" in col and "Block X" in col:
            try:
                g = [_number(r[col[f"Grid {a}"]], f"{p}: line {ln}, column Grid {a}") if f"Grid {a}" in col else 1.0
                     for a in "XYZ"]
                b = [_number(r[col[f"Block {a}"]], f"{p}: line {ln}, column Block {a}") if f"Block {a}" in col else 1.0
                     for a in "XYZ"]
            except BadInputError:
                if gx == "" or r[col["Block X"]].strip() == "":
                    g = b = None  # reported below as a missing launch shape
                else:
                    raise
            if g is not None and b is not None:
                la.blocks, la.tpb = int(np.prod(g)), int(np.prod(b))
        if "Duration" in col:
            unit = units.get("Duration", "")
            if not unit:
                raise BadInputError(f"{p}: line {ln}, column Duration: no unit (nvprof writes a row of units "
                                    "under the header; export with --csv)")
            la.time_s = _time(_number(r[col["Duration"]], f"{p}: line {ln}, column Duration"), unit,
                              f"{p}: line {ln}, column Duration")
        for key, attr in (("SM Clock", "core_mhz"), ("Memory Clock", "mem_mhz")):
            if key in col and r[col[key]].strip():
                where = f"{p}: line {ln}, column {key}"
                setattr(la, attr, _clock(_number(r[col[key]], where), units.get(key) or "MHz", where))
        if "Device" in col:
            la.device = re.sub(r"\s*\(\d+\)\s*$", "", r[col["Device"]].strip())
        for h in metric_cols:
            raw = r[col[h]].strip()
            if raw in ("", "n/a", "<OVERFLOW>"):
                continue
            _add_metric(la, h, raw, units.get(h, "%" if raw.endswith("%") else ""), f"{p}: line {ln}, metric {h}",
                        _NVPROF_USED)
        out.append(la)
    return out


def _ncu(p: Path, header: list[str], rows: list[tuple[int, list[str]]]) -> list[_Launch]:
    col = {h: i for i, h in enumerate(header)}
    kcol = "Kernel Name" if "Kernel Name" in col else "Function Name"
    by_id: dict[str, _Launch] = {}
    order: list[str] = []

    def launch(r: list[str], ln: int) -> _Launch:
        key = r[col["ID"]].strip() if "ID" in col else f"line{ln}"
        if key not in by_id:
            la = _Launch(r[col[kcol]].strip(), f"{p}: line {ln}")
            if "Block Size" in col:
                la.tpb = _shape(r[col["Block Size"]])
            if "Grid Size" in col:
                la.blocks = _shape(r[col["Grid Size"]])
            if "Device" in col:
                la.device = r[col["Device"]].strip()
            if "CC" in col:
                la.cc = r[col["CC"]].strip()
            by_id[key] = la
            order.append(key)
        return by_id[key]

    if {"Metric Name", "Metric Value"} <= set(col):
        for ln, r in rows:
            if len(r) != len(header):
                raise BadInputError(f"{p}: line {ln}: {len(r)} fields, expected {len(header)}")
            metric = r[col["Metric Name"]].strip()
            unit = r[col["Metric Unit"]].strip() if "Metric Unit" in col else ""
            _add_metric(launch(r, ln), metric, r[col["Metric Value"]], unit, f"{p}: line {ln}, metric {metric}",
                        _NCU_USED)
    else:
        if not rows:
            raise BadInputError(f"{p}: the raw export has no data rows")
        unit_row = rows[0][1]
        metric_cols = [(i, h) for i, h in enumerate(header) if "__" in h]
        for ln, r in rows[1:]:
            if len(r) != len(header):
                raise BadInputError(f"{p}: line {ln}: {len(r)} fields, expected {len(header)}")
            la = launch(r, ln)
            for i, h in metric_cols:
                if r[i].strip() in ("", "n/a"):
                    continue
                _add_metric(la, h, r[i], unit_row[i].strip() if i < len(unit_row) else "", f"{p}: line {ln}, column {h}",
                            _NCU_USED)
    out = []
    for key in order:
        la = by_id[key]
        for metric, (v, unit) in la.metrics.items():
            b = NK._base(metric)
            where = f"{la.where}, metric {metric}"
            if b == "launch__grid_size":
                la.blocks = int(round(v))
            elif b == "launch__block_size":
                la.tpb = int(round(v))
            elif b == "gpu__time_duration":
                la.time_s = _time(v, unit, where)
            elif b == "sm__cycles_elapsed" and metric.endswith("per_second"):
                la.core_mhz = _clock(v, unit, where)
            elif b == "dram__cycles_elapsed" and metric.endswith("per_second"):
                la.mem_mhz = _clock(v, unit, where)
        out.append(la)
    return out


def _nvprof_summary(p: Path, header: list[str], rows: list[tuple[int, list[str]]]) -> list[_Launch]:
    col = {h: i for i, h in enumerate(header)}
    by_name: dict[str, _Launch] = {}
    for ln, r in rows:
        if len(r) != len(header):
            raise BadInputError(f"{p}: line {ln}: {len(r)} fields, expected {len(header)}")
        name = r[col["Kernel"]].strip()
        la = by_name.setdefault(name, _Launch(name, f"{p}: line {ln}"))
        if "Device" in col:
            la.device = re.sub(r"\s*\(\d+\)\s*$", "", r[col["Device"]].strip())
        metric = r[col["Metric Name"]].strip()
        raw = r[col["Avg"]].strip()
        _add_metric(la, metric, raw, "%" if raw.endswith("%") else "", f"{p}: line {ln}, metric {metric}", _NVPROF_USED)
    return list(by_name.values())


def read_launches(path: str | os.PathLike) -> tuple[str, list[_Launch]]:
    """(flavour, launches) of an nvprof or ncu CSV export (module docstring)."""
    p = Path(path)
    header, rows = NK._table(read_lines(p), str(p))
    cols = set(header)
    if {"Kernel", "Metric Name", "Avg"} <= cols:
        flavour, launches = "nvprof", _nvprof_summary(p, header, rows)
    elif "Duration" in cols and ("Name" in cols or "Kernel" in cols):
        flavour, launches = "nvprof", _nvprof_trace(p, header, rows)
    elif "Kernel Name" in cols or "Function Name" in cols:
        flavour, launches = "ncu", _ncu(p, header, rows)
    else:
        raise BadInputError(f"{p}: neither an nvprof export (trace: Duration, Grid X, Name, ...; summary: Kernel, "
                            f"Metric Name, Avg) nor an ncu CSV export (Kernel Name, ...); found columns "
                            f"{', '.join(header[:8])}")
    if not launches:
        raise BadInputError(f"{p}: the export has no kernel rows (only a header, or memcpy/API rows)")
    return flavour, launches


def read_kernels(path: str | os.PathLike, *, blocks: int | None = None, threads_per_block: int | None = None,
                 core_mhz: float | None = None, mem_mhz: float | None = None, sm_count: int | None = None,
                 chip: str | None = None, max_warps_per_sm: float | None = None) -> pd.DataFrame:
    """The kernel table of a profiler export (module docstring); a checked samples table.

    ``blocks``/``threads_per_block``: launch shape for exports without one (nvprof summaries);
    ``core_mhz``/``mem_mhz`` (MHz): clocks of rows whose export records none; ``sm_count``: SMs of the
    GPU (writes ``active_sms``); ``chip``: the GPU chip when the board name does not tell it;
    ``max_warps_per_sm``: warp slots per SM for the achieved occupancy (default: the chip's)."""
    p = Path(path)
    flavour, launches = read_launches(p)
    describe = NK._describe_nvprof if flavour == "nvprof" else NK._describe_ncu
    rows: list[dict[str, Any]] = []
    for la in launches:
        nb = la.blocks or blocks
        tpb = la.tpb or threads_per_block
        if not nb or not tpb:
            raise BadInputError(f"{la.where}: kernel {la.name!r}: no launch shape (nvprof trace: Grid X/Block X "
                                "columns; ncu: launch__grid_size/launch__block_size or Grid Size/Block Size); give "
                                "--blocks and --threads-per-block for a summary export")
        a = _arch_of(la, chip)
        mw = max_warps_per_sm or (a.max_warps_per_sm if a is not None else 64.0)
        warps = nb * math.ceil(tpb / 32)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                per_warp, extra = describe(la.name, la.metrics, warps)
        except BadInputError as e:
            raise BadInputError(f"{la.where}: {e}") from None
        row: dict[str, Any] = {"workload": la.name, "blocks": float(nb), "threads_per_block": float(tpb)}
        for c, x in per_warp.items():
            row[CNT_PREFIX + c] = x
        if "memory" in extra and "uncoalesced_fraction" in extra["memory"]:
            row["uncoal_frac"] = extra["memory"]["uncoalesced_fraction"]
        act = extra.get("_active_warps")
        if act is None and extra.get("_occupancy") is not None:
            act = extra["_occupancy"] * mw
        if act:
            row["active_blocks_per_sm"] = max(act / math.ceil(tpb / 32), 1e-6)
        row["time_s"] = la.time_s if la.time_s is not None else extra.get("time_s", math.nan)
        row["core_mhz"] = la.core_mhz if la.core_mhz is not None else extra.get("core_mhz", core_mhz or math.nan)
        row["mem_mhz"] = la.mem_mhz if la.mem_mhz is not None else extra.get("mem_mhz", mem_mhz or math.nan)
        if sm_count:
            row["active_sms"] = float(min(sm_count, nb))
        row["device"] = la.device or ""
        c = chip or _chip_of(la)
        row["arch"] = c.strip().upper() if c else (la.cc if a is not None else "")  # chip, else the CC
        rows.append(row)
    df = pd.DataFrame(rows)
    cnt = [c for c in df.columns if c.startswith(CNT_PREFIX)]
    df[cnt] = df[cnt].fillna(0.0)
    df = _merge_launches(df)
    n_missing = int(df["time_s"].isna().sum())
    if n_missing:
        log.info("%s: %d of %d kernel rows have no measured time", p, n_missing, len(df))
    return check_samples(df.drop(columns=[c for c in df.columns if df[c].isna().all() and c in
                                         ("time_s", "core_mhz", "mem_mhz")]), str(p), require_power=False,
                         require_act=False)


def _chip_of(la: _Launch) -> str | None:
    return arch.chip_of_device_name(la.device) if la.device else None


def _arch_of(la: _Launch, chip: str | None) -> arch.Arch | None:
    if chip:
        return arch.arch_of(chip=chip)
    c = _chip_of(la)
    if c:
        return arch.BY_CHIP[c]
    if la.cc:
        return arch.BY_CC.get(la.cc)
    return None


def _merge_launches(df: pd.DataFrame) -> pd.DataFrame:
    """Launches of one kernel at one clock pair (clocks within :data:`SAME_CLOCK_REL`) -> one row, mean values."""
    keys: list[int] = []
    groups: list[tuple[str, float, float]] = []
    for name, fc, fm in zip(df["workload"], df["core_mhz"], df["mem_mhz"]):
        for gi, (gn, gc, gm) in enumerate(groups):
            if gn == name and _close(fc, gc) and _close(fm, gm):
                keys.append(gi)
                break
        else:
            groups.append((name, fc, fm))
            keys.append(len(groups) - 1)
    df = df.assign(_g=keys)
    text = ["workload", "device", "arch"]
    num = [c for c in df.columns if c not in text and c != "_g"]
    agg = df.groupby("_g", sort=True).agg({**{c: "first" for c in text}, **{c: "mean" for c in num}})
    agg["n_launches"] = df.groupby("_g", sort=True).size().to_numpy(float)
    return agg.reset_index(drop=True)


def _close(a: float, b: float) -> bool:
    if isinstance(a, float) and math.isnan(a) or isinstance(b, float) and math.isnan(b):
        return (isinstance(a, float) and math.isnan(a)) and (isinstance(b, float) and math.isnan(b))
    return abs(a - b) <= SAME_CLOCK_REL * max(abs(a), abs(b))
