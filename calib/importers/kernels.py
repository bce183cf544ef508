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
names; what each metric gives, the transaction metrics of nvprof's default sets included:
calib/importers/README.md).

Accepted layouts (as nvprof 11.8 and ncu 2022.3 write them: ``tests/data/profilers/README.md``):

- ``nvprof --print-gpu-trace --csv --metrics ...`` (Device, Context, Stream, Kernel, Correlation_ID, one
  column per metric, a units row under the header) or ``nvprof --csv --metrics ...`` summaries (Kernel,
  Metric Name, Avg; units inside the values, ``50.000000%``); nvprof prints no duration or launch shape
  with metrics (it replays the kernels), so ``trace`` (``--trace``) joins the ``--print-gpu-trace --csv``
  export of a run without metrics (Start, Duration, Grid X/Y/Z, Block X/Y/Z, ..., Name): the k-th launch of
  a kernel to its k-th launch; memcpy/memset rows skipped. Clocks: ``--core-mhz``/``--mem-mhz`` (one run
  per locked clock pair), or ``SM Clock``/``Memory Clock`` columns where a trace has them;
- ``ncu --csv`` details page (section metrics by label, or "Command line profiler metrics" by name;
  rows that end after the value and rule rows as ncu writes them) and ``ncu --csv --page raw`` (one
  column per metric); time from ``gpu__time_duration.sum``, clocks from
  ``sm__cycles_elapsed.avg.per_second`` (or ``gpc__``) and ``dram__cycles_elapsed.avg.per_second``, the SM
  count from ``device__attribute_multiprocessor_count``.

Units as the profilers print them (:mod:`calib.importers.units`). The SM count (``active_sms``): from
``--sm-count``, else the export, else the board name (:mod:`calib.importers.boards`).

Launches of one kernel at one clock pair (clocks within 1 %) become one row: counts and time averaged.
Refused, with file, line and column or metric named: an export without kernel rows, a kernel without a
launch shape, a value in a unit the profiler does not print or of the wrong kind (a duration in ``inst``),
a duration <= 0, a gpu trace given as the metrics export, launch counts that differ between the two nvprof
runs.
"""

from __future__ import annotations

import logging
import math
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from calib.core import arch
from calib.core.errors import BadInputError
from calib.core.samples import CNT_PREFIX, check_samples
from calib.core.units import SAME_CLOCK_REL
from calib.importers import boards
from calib.importers import ncu_kernel as NK

log = logging.getLogger(__name__)

_Launch = NK.Launch


def join_trace(launches: list[NK.Launch], layout: str, trace: str | os.PathLike, where: str) -> None:
    """Durations, launch shapes and the device of an ``nvprof --print-gpu-trace --csv`` export ``trace``
    onto the launches of an nvprof metrics export of the same application (``where``). nvprof writes
    durations only in a trace without metrics (with ``--metrics`` it replays each kernel and the trace
    drops Start and Duration), so the two runs are joined: the k-th launch of a kernel in the metrics
    trace is the k-th launch of that kernel in the gpu trace; a summary's kernel gets the mean duration of
    its launches (they must share one launch shape)."""
    tflavour, tlayout, tl = NK.read_exported(trace)
    if tlayout != "nvprof-gpu-trace":
        raise BadInputError(f"{trace}: --trace takes an nvprof --print-gpu-trace --csv export without metrics "
                            f"(Start, Duration, Grid X, ...); this is {tflavour} layout {tlayout}")
    by_name: dict[str, list[NK.Launch]] = {}
    for t in tl:
        by_name.setdefault(t.name, []).append(t)
    seen: dict[str, int] = {}
    for la in launches:
        runs = by_name.get(la.name)
        if not runs:
            raise BadInputError(f"{la.where}: kernel {la.name!r} has no launch in the trace {trace}")
        if layout == "nvprof-summary":
            shapes = {(t.blocks, t.tpb) for t in runs}
            if len(shapes) > 1:
                raise BadInputError(f"{trace}: kernel {la.name!r} runs with {len(shapes)} launch shapes; a summary "
                                    "averages them: import the --print-gpu-trace metrics export instead")
            chosen = runs
        else:
            k = seen.get(la.name, 0)
            seen[la.name] = k + 1
            if k >= len(runs):
                raise BadInputError(f"{la.where}: launch {k + 1} of kernel {la.name!r}, but the trace {trace} has "
                                    f"{len(runs)}; profile both runs of the same application")
            chosen = [runs[k]]
        for t in chosen:
            if not t.blocks or not t.tpb:
                raise BadInputError(f"{t.where}: kernel {t.name!r}: no launch shape (the Grid X/Y/Z and Block X/Y/Z "
                                    "columns are empty)")
        la.blocks, la.tpb = la.blocks or chosen[0].blocks, la.tpb or chosen[0].tpb
        times = [t.time_s for t in chosen if t.time_s is not None]
        la.time_s = la.time_s if la.time_s is not None else (float(np.mean(times)) if times else None)
        la.device = la.device or chosen[0].device
        for attr in ("core_mhz", "mem_mhz"):
            vals = [getattr(t, attr) for t in chosen if getattr(t, attr) is not None]
            if getattr(la, attr) is None and vals:
                setattr(la, attr, float(np.mean(vals)))
    if layout != "nvprof-summary":
        short = {n: (seen.get(n, 0), len(r)) for n, r in by_name.items() if seen.get(n, 0) != len(r)}
        if short:
            n, (a, b) = next(iter(short.items()))
            raise BadInputError(f"{where}: kernel {n!r} has {a} launch(es) here and {b} in the trace {trace}; "
                                "profile both runs of the same application")


def read_kernels(path: str | os.PathLike, *, blocks: int | None = None, threads_per_block: int | None = None,
                 core_mhz: float | None = None, mem_mhz: float | None = None, sm_count: int | None = None,
                 chip: str | None = None, max_warps_per_sm: float | None = None,
                 trace: str | os.PathLike | None = None) -> pd.DataFrame:
    """The kernel table of a profiler export (module docstring); a checked samples table.

    ``blocks``/``threads_per_block``: launch shape for exports without one (nvprof summaries);
    ``core_mhz``/``mem_mhz`` (MHz): clocks of rows whose export records none; ``sm_count``: SMs of the
    GPU (writes ``active_sms``); ``chip``: the GPU chip when the board name does not tell it;
    ``max_warps_per_sm``: warp slots per SM for the achieved occupancy (default: the chip's);
    ``trace``: an ``nvprof --print-gpu-trace --csv`` export of the same application, for the durations
    and launch shapes an nvprof metrics export lacks (:func:`join_trace`)."""
    p = Path(path)
    flavour, layout, launches = NK.read_exported(p)
    if not launches:
        raise BadInputError(f"{p}: the export has no kernel rows (only a header, or memcpy/API rows)")
    if layout == "nvprof-gpu-trace":
        raise BadInputError(f"{p}: an nvprof --print-gpu-trace export without metrics has durations but no "
                            "instruction counts; import the metrics export (nvprof --csv --metrics ...) and give this "
                            "one with --trace")
    if trace is not None:
        if flavour != "nvprof":
            raise BadInputError(f"{p}: --trace joins nvprof exports; an ncu export has its own durations")
        join_trace(launches, layout, trace, str(p))
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
        row: dict[str, Any] = {"workload": la.name, "blocks": float(nb), "threads_per_block": float(tpb),
                               **{CNT_PREFIX + c: x for c, x in per_warp.items()}}
        if "memory" in extra and "uncoalesced_fraction" in extra["memory"]:
            row["uncoal_frac"] = extra["memory"]["uncoalesced_fraction"]
        resident = NK.active_blocks_per_sm(extra, tpb, mw)
        if resident is not None:
            row["active_blocks_per_sm"] = resident
        row["time_s"] = la.time_s if la.time_s is not None else extra.get("time_s", math.nan)
        row["core_mhz"] = la.core_mhz if la.core_mhz is not None else extra.get("core_mhz", core_mhz or math.nan)
        row["mem_mhz"] = la.mem_mhz if la.mem_mhz is not None else extra.get("mem_mhz", mem_mhz or math.nan)
        sms = sm_count or la.sm_count or boards.sm_count_of(la.device)
        if sms:
            row["active_sms"] = float(min(sms, nb))
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
    return arch.BY_CC.get(la.cc) if la.cc else None


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
