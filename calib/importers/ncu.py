"""nvprof and Nsight Compute (ncu) metric CSV exports -> samples table (activities only).

Neither profiler measures power: the table gets ``workload`` (the kernel name) and ``act_<unit>``
columns. ``calib import`` can join power and clocks from another CSV (``--power``) or set the clocks
(``--core-mhz``/``--mem-mhz``). Launches of the same kernel are averaged into one row.

**nvprof** (``nvprof --csv --metrics m1,m2,... app``): lines starting with ``==`` are skipped; the
table has ``Kernel``, ``Metric Name`` and ``Avg`` columns (``Min``/``Max`` ignored). Utilization
metrics are printed as levels ``"Idle (0)"`` .. ``"Max (10)"`` and become level / 10; values with
``%`` become value / 100. Mapping (metric -> unit): :data:`NVPROF_METRICS`.

nvprof has no integer-unit utilization metric (``inst_integer`` is a count), so there is no ``int``
unit from nvprof; gpmTOOL's INT column came from its own CUPTI event arithmetic.

**ncu** (``ncu --csv --metrics ...``: one row per kernel launch and metric with ``Kernel Name``,
``Metric Name``, ``Metric Unit``, ``Metric Value``; or ``ncu --csv --page raw``: one row per launch,
one column per metric, units in the second row). Only percentages are accepted (``%`` unit, the
``.avg.pct_of_peak_sustained_active``/``_elapsed`` rollups), value / 100. Mapping by metric base name
(the part before the first ``.``); when several metrics map to one unit, the earlier one in this list
wins and the others are reported: :data:`NCU_METRICS` (``gpu__dram_throughput`` is ncu's "DRAM
Throughput" label).

Unmapped metrics are ignored and listed in one warning.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from calib.core.errors import BadInputError
from calib.importers import ncu_kernel as NK
from calib.importers import units as U
from calib.importers._common import OVERSHOOT_PCT, cut_hint, read_text, to_float
from calib.core.samples import check_samples

DESCRIPTION = "nvprof --csv / ncu --csv metric exports (utilizations; power joined separately)"

NVPROF_METRICS: dict[str, str] = {
    "single_precision_fu_utilization": "fp",
    "double_precision_fu_utilization": "dp",
    "half_precision_fu_utilization": "hp",
    "special_fu_utilization": "sfu",
    "tensor_precision_fu_utilization": "tensor",
    "tensor_int_fu_utilization": "tensor_int",
    "cf_fu_utilization": "cf",
    "ldst_fu_utilization": "ldst",
    "tex_fu_utilization": "tex",
    "l2_utilization": "l2",
    "shared_utilization": "shared",
    "dram_utilization": "dram",
    "issue_slot_utilization": "issue",
}
NCU_METRICS: dict[str, str] = {
    "sm__pipe_fma_cycles_active": "fp",
    "sm__inst_executed_pipe_fma": "fp",
    "sm__pipe_fp64_cycles_active": "dp",
    "sm__inst_executed_pipe_fp64": "dp",
    "sm__pipe_fp16_cycles_active": "hp",
    "sm__inst_executed_pipe_fp16": "hp",
    "sm__pipe_alu_cycles_active": "int",
    "sm__inst_executed_pipe_alu": "int",
    "sm__pipe_xu_cycles_active": "sfu",
    "sm__inst_executed_pipe_xu": "sfu",
    "sm__pipe_tensor_cycles_active": "tensor",
    "sm__pipe_tensor_op_hmma_cycles_active": "tensor",
    "sm__inst_executed_pipe_cbu": "cf",
    "sm__inst_executed_pipe_lsu": "ldst",
    "sm__inst_executed_pipe_tex": "tex",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared": "shared",
    "l1tex__throughput": "l1",
    "lts__t_sectors": "l2",
    "lts__throughput": "l2",
    "dram__throughput": "dram",
    "gpu__dram_throughput": "dram",
    "sm__cycles_active": "sm",
    "sm__warps_active": "occupancy",
}


def _pct_value(text: str, where: str, clipped: list[str] | None = None) -> float:
    """A percentage field -> fraction in [0, 1] (refused outside [0, 100 + OVERSHOOT_PCT] %)."""
    v = to_float(text, where, thousands=True, percent=True, finite=True)
    if v < 0.0 or v > 100.0 + OVERSHOOT_PCT:
        raise BadInputError(f"{where}: {v:g} % outside [0, 100] % (a utilization; up to "
                            f"{100 + OVERSHOOT_PCT:g} % is taken as profiler overshoot)")
    if v > 100.0:
        if clipped is not None:
            clipped.append(f"{where}: {v:g} %")
        v = 100.0
    return v / 100.0


def _nvprof_value(text: str, where: str, clipped: list[str] | None = None) -> float:
    """An nvprof utilization: a level ``Mid (5)`` -> 0.5, or a percentage ``12.500000%`` -> 0.125
    (:func:`calib.importers.units.nvprof_value` reads both; anything else refused naming ``where``)."""
    v, dim = U.nvprof_value(text, "", where)
    if dim == "level":
        return v / 10.0
    if dim == "%":
        return _pct_value(f"{v!r}", where, clipped)
    raise BadInputError(f"{where}: {text.strip()!r} is neither a utilization level like 'Mid (5)' nor a percentage")


def _finish(records: dict[str, dict[str, list[float]]], source: str, ignored: set[str], shadowed: dict[str, str],
            clipped: list[str]) -> pd.DataFrame:
    """The samples table of ``records`` (kernel -> unit -> values, kernels in file order) and the warnings."""
    if clipped:
        warnings.warn(f"{source}: {len(clipped)} value(s) above 100 % (at most {100 + OVERSHOOT_PCT:g} %) clipped to "
                      f"100 % (profiler overshoot; first: {clipped[0].removeprefix(source + ': ')})", stacklevel=3)
    if ignored:
        warnings.warn(f"{source}: {len(ignored)} metric(s) with no unit mapping ignored: "
                      + ", ".join(sorted(ignored)[:8]) + (" ..." if len(ignored) > 8 else ""), stacklevel=3)
    for metric, kept in sorted(shadowed.items()):
        warnings.warn(f"{source}: metric {metric} ignored: {kept} already gives the same unit", stacklevel=3)
    if not records:
        raise BadInputError(f"{source}: no mapped utilization metric found (see `calib import --help` or "
                            "calib/importers/ncu.py for the metric names; ncu metrics are read as percentages, "
                            "their .avg.pct_of_peak_sustained_active or _elapsed rollups)")
    units = sorted({u for r in records.values() for u in r})
    rows = []
    for k in records:
        row: dict[str, object] = {"workload": k}
        for u in units:
            vals = records[k].get(u)
            row[f"act_{u}"] = float(np.mean(vals)) if vals else np.nan
        rows.append(row)
    df = pd.DataFrame(rows)
    miss = df.isna().any(axis=1)
    if miss.any():
        k = df.loc[miss, "workload"].iloc[0]
        col = df.columns[df.loc[miss].iloc[0].isna()][0]
        raise BadInputError(f"{source}: kernel {k!r} has no value for {col} (every kernel needs the same metrics)")
    act = [c for c in df.columns if c.startswith("act_")]
    df[act] = df[act].clip(lower=0.0, upper=1.0)
    return check_samples(df, source, require_power=False)


def read(path: str | os.PathLike, flavour: str = "ncu") -> pd.DataFrame:
    """Read an nvprof (``flavour="nvprof"``) or ncu export into a samples table without power."""
    p = Path(path)
    lines, ends_nl = read_text(p)
    last_line = max((k for k, x in enumerate(lines, start=1) if x.strip()), default=0)
    clipped: list[str] = []

    def fields(ln: int, r: list[str]) -> list[str]:
        return NK._fields(p, header, ln, r, cut_hint(ln == last_line and len(r) < len(header), ends_nl))

    header, rows = NK._table(lines, str(p))
    col = {h: i for i, h in enumerate(header)}
    records: dict[str, dict[str, list[float]]] = {}   # kernel -> unit -> values, kernels in file order
    ignored: set[str] = set()
    shadowed: dict[str, str] = {}
    chosen: dict[str, str] = {}  # unit -> metric that supplies it

    def take(kernel: str, metric: str, unit: str, value: float, priority: list[str]) -> None:
        prev = chosen.get(unit)
        if prev is not None and prev != metric:
            if priority.index(metric.split(".")[0]) < priority.index(prev.split(".")[0]):  # better metric: replace
                shadowed[prev] = metric
                for r in records.values():
                    r.pop(unit, None)
                chosen[unit] = metric
            else:
                shadowed[metric] = prev
                return
        chosen[unit] = metric
        records.setdefault(kernel, {}).setdefault(unit, []).append(value)

    if flavour == "nvprof":
        need = ("Kernel", "Metric Name", "Avg")
        if not all(h in col for h in need):
            raise BadInputError(f"{p}: not an nvprof metrics export (columns {', '.join(need)} expected, "
                                f"found {', '.join(header[:8])})")
        prio = list(NVPROF_METRICS)
        for ln, r in rows:
            r = fields(ln, r)
            metric = r[col["Metric Name"]].strip()
            unit = NVPROF_METRICS.get(metric)
            if unit is None:
                ignored.add(metric)
                continue
            v = _nvprof_value(r[col["Avg"]], f"{p}: line {ln}, metric {metric}", clipped)
            take(r[col["Kernel"]].strip(), metric, unit, v, prio)
        return _finish(records, str(p), ignored, shadowed, clipped)
    if flavour != "ncu":
        raise BadInputError(f"unknown profiler export flavour {flavour!r}")
    prio = list(NCU_METRICS)
    kcol = "Kernel Name" if "Kernel Name" in col else ("Function Name" if "Function Name" in col else None)
    if kcol is None:
        raise BadInputError(f"{p}: not an ncu CSV export (no 'Kernel Name' column; found {', '.join(header[:8])})")
    if {"Metric Name", "Metric Value"} <= set(col):
        counts: dict[str, tuple[int, str, str]] = {}
        pct_bases: set[str] = set()
        for ln, r in rows:
            r = fields(ln, r)   # a metric row ended after its value (no rule fields) is padded
            label = r[col["Metric Name"]].strip()
            if not label:
                continue  # a rule's row (Rule Name, Rule Type, Rule Description), no metric
            section = r[col["Section Name"]].strip() if "Section Name" in col else ""
            metric = NK.NCU_SECTION_LABELS.get((section, label), label)
            unit = NCU_METRICS.get(metric.split(".")[0])
            munit = r[col["Metric Unit"]].strip() if "Metric Unit" in col else ""
            if unit is None:
                ignored.add(metric)
                continue
            if munit != "%" and "pct" not in metric:
                counts.setdefault(metric.split(".")[0], (ln, metric, munit))  # refused below unless a % comes too
                continue
            pct_bases.add(metric.split(".")[0])
            take(r[col[kcol]].strip(), metric, unit, _pct_value(r[col["Metric Value"]], f"{p}: line {ln}, metric {metric}", clipped), prio)
        for base, (ln, metric, munit) in counts.items():
            if base not in pct_bases:
                raise BadInputError(f"{p}: line {ln}: metric {metric} is in {munit or 'no unit'!r}, not a percentage; "
                                    "export its .avg.pct_of_peak_sustained_active (or _elapsed) rollup")
            ignored.add(metric)  # a count/rate rollup beside the percentage
        return _finish(records, str(p), ignored, shadowed, clipped)
    # --page raw: metrics are columns, the first data row holds the units
    if not rows:
        raise BadInputError(f"{p}: no data rows")
    # ncu writes a units row right after the header: its ID field is empty
    first = rows[0][1]
    has_units = len(first) == len(header) and not first[col.get("ID", 0)].strip()
    units_of = dict(zip(header, first)) if has_units else {}
    data_rows = rows[1:] if has_units else rows
    def pct_rollup(h: str) -> bool:
        return units_of.get(h, "%").strip() == "%" or "pct" in h

    mapped = [(h, NCU_METRICS[h.split(".")[0]]) for h in header if h.split(".")[0] in NCU_METRICS and pct_rollup(h)]
    # unmapped metrics, and count or rate rollups of mapped ones (a raw page has every rollup)
    ignored = {h for h in header if "__" in h and (h.split(".")[0] not in NCU_METRICS or not pct_rollup(h))}
    for ln, r in data_rows:
        r = fields(ln, r)
        for h, unit in mapped:
            take(r[col[kcol]].strip(), h, unit, _pct_value(r[col[h]], f"{p}: line {ln}, metric {h}", clipped), prio)
    return _finish(records, str(p), ignored, shadowed, clipped)

