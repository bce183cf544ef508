"""nvprof / Nsight Compute metric exports -> kernel descriptions for the timing model.

``read_profile(path)`` returns one kernel description (the JSON objects of
:func:`calib.model.predict.kernel_description_table`) per kernel in the export: per-warp dynamic
instruction counts by class, the launch shape, occupancy, coalescing, L1/L2 hit rates and, when the
export has them, the measured time and clocks. Launches of the same kernel are averaged.
``python -m calib.importers.ncu_kernel PROFILE.csv -o KERNELS.json`` writes them; ``calib optimize``
accepts the CSV directly.

Accepted layouts (:func:`read_exported`; as the profilers write them, ``tests/data/profilers/README.md``):
``nvprof --csv --metrics ...`` summaries (``Kernel``, ``Metric Name``, ``Avg``; lines starting with ``==``
skipped), nvprof ``--print-gpu-trace`` exports with or without metrics, ``ncu --csv`` details pages
(section metrics by label: :data:`NCU_SECTION_LABELS`) and ``ncu --csv --page raw`` (one column per
metric, a units row under the header). Values and units through :mod:`calib.importers.units`; numbers may
carry thousands separators.

Mapping. Per-warp count of a class = warp-level instructions of the class / warps launched, with
warps = blocks x ceil(threads per block / 32) (``launch__grid_size``, ``launch__block_size``, or the
``blocks`` and ``threads_per_block`` arguments when the export has no launch metrics).

Which metric gives what (nvprof and ncu): ``calib/importers/README.md``.

Coalescing: a warp request of 4-byte words that is coalesced touches one 128-byte line = 4 sectors
of 32 bytes; fully uncoalesced it touches 32 sectors. With ``s`` sectors per request the model's
bytes per request ``(1 - u) 128 + u x 32 x 32`` match for ``u = (s - 4) / 28`` (clipped to [0, 1]):
``memory.uncoalesced_fraction``. Stores are placed like loads. Any metric not listed is ignored
(one warning lists them); a kernel without a total instruction count or a launch shape is refused.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import re
import sys
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from calib.core.atomic import atomic_write_text
from calib.core.errors import BadInputError
from calib.importers import units as U
from calib.importers._common import OVERSHOOT_PCT, read_lines, to_float

NVPROF_USED = ("inst_executed", "inst_executed_global_loads", "inst_executed_global_stores",
               "inst_executed_local_loads", "inst_executed_local_stores", "inst_executed_shared_loads",
               "inst_executed_shared_stores", "inst_executed_tex_ops", "inst_fp_32", "inst_fp_64", "inst_integer",
               "inst_bit_convert", "inst_control", "inst_misc", "inst_inter_thread_communication",
               "inst_compute_ld_st", "flop_count_sp_special", "global_hit_rate", "l2_tex_read_hit_rate",
               "l2_l1_read_hit_rate", "gld_transactions_per_request", "achieved_occupancy",
               # transaction metrics of the default metric sets: requests = transactions / per request
               "gld_transactions", "gst_transactions", "gst_transactions_per_request", "local_load_transactions",
               "local_store_transactions", "local_load_transactions_per_request",
               "local_store_transactions_per_request", "shared_load_transactions", "shared_store_transactions",
               "shared_load_transactions_per_request", "shared_store_transactions_per_request",
               "dram_read_transactions", "dram_write_transactions", "l2_read_transactions", "l2_write_transactions",
               "l2_tex_read_transactions")
#: thread-level instruction metrics of nvprof and the class each goes to
NVPROF_THREAD_CLASSES = {"inst_fp_32": "fp", "inst_fp_64": "dp", "inst_integer": "int", "inst_bit_convert": "alu",
                         "inst_control": "ctrl", "inst_misc": "alu", "inst_inter_thread_communication": "alu"}
NCU_PIPES = {"smsp__inst_executed_pipe_fma": "fp", "smsp__inst_executed_pipe_fp16": "fp",
             "smsp__inst_executed_pipe_fp64": "dp", "smsp__inst_executed_pipe_alu": "int",
             "smsp__inst_executed_pipe_xu": "sfu", "smsp__inst_executed_pipe_tensor": "tensor",
             "smsp__inst_executed_pipe_cbu": "ctrl", "smsp__inst_executed_pipe_adu": "ctrl",
             "smsp__inst_executed_pipe_uniform": "alu", "smsp__inst_executed_pipe_tex": "tex"}
NCU_OPS = {"smsp__inst_executed_op_global_ld": "gmem", "smsp__inst_executed_op_global_st": "gmem",
           "smsp__inst_executed_op_local_ld": "local", "smsp__inst_executed_op_local_st": "local",
           "smsp__inst_executed_op_shared_ld": "shared", "smsp__inst_executed_op_shared_st": "shared"}
SECTORS_COALESCED, SECTORS_UNCOALESCED = 4.0, 32.0

#: ncu 2022.3 details-page labels -> metric names, keyed by (Section Name, label): the default ``ncu --csv``
#: page names a section's metrics by their label (the Label/Name pairs of the section files shipped with
#: ncu 2022.3: SpeedOfLight, LaunchStatistics, InstructionStatistics, MemoryWorkloadAnalysis, Occupancy)
NCU_SECTION_LABELS: dict[tuple[str, str], str] = {
    ("GPU Speed Of Light Throughput", "Duration"): "gpu__time_duration.sum",
    ("GPU Speed Of Light Throughput", "SM Frequency"): "gpc__cycles_elapsed.avg.per_second",
    ("GPU Speed Of Light Throughput", "DRAM Frequency"): "dram__cycles_elapsed.avg.per_second",
    ("GPU Speed Of Light Throughput", "DRAM Throughput"): "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    ("GPU Speed Of Light Throughput", "L1/TEX Cache Throughput"): "l1tex__throughput.avg.pct_of_peak_sustained_active",
    ("GPU Speed Of Light Throughput", "L2 Cache Throughput"): "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    ("Launch Statistics", "Block Size"): "launch__block_size",
    ("Launch Statistics", "Grid Size"): "launch__grid_size",
    ("Instruction Statistics", "Executed Instructions"): "smsp__inst_executed.sum",
    ("Memory Workload Analysis", "L1/TEX Hit Rate"): "l1tex__t_sector_hit_rate.pct",
    ("Memory Workload Analysis", "L2 Hit Rate"): "lts__t_sector_hit_rate.pct",
    ("Occupancy", "Achieved Active Warps Per SM"): "sm__warps_active.avg.per_cycle_active",
    ("Occupancy", "Achieved Occupancy"): "sm__warps_active.avg.pct_of_peak_sustained_active",
}
#: metrics that describe the device rather than the kernel (ncu raw page, or --metrics)
NCU_DEVICE_NAME, NCU_SM_COUNT = "device__attribute_display_name", "device__attribute_multiprocessor_count"
#: metrics (base names) that are percentages
PERCENT_METRICS = frozenset({"global_hit_rate", "l2_tex_read_hit_rate", "l2_l1_read_hit_rate",
                             "l1tex__t_sector_hit_rate", "lts__t_sector_hit_rate"})
_COUNT = ("", "inst")


def ncu_dims(metric: str) -> tuple[str, ...] | None:
    """The dimensions (:func:`calib.importers.units.ncu_value`) a metric this mapping reads may have, or
    None for every other metric and rollup (an ncu export has hundreds; they are left unread)."""
    b, _, roll = metric.partition(".")
    if metric in ("launch__grid_size", "launch__block_size"):
        return ("", "block", "thread")
    if roll == "sum" and (b in NCU_PIPES or b in NCU_OPS or b.startswith("smsp__inst_executed_pipe_tensor")
                          or b in ("smsp__inst_executed", "sm__inst_executed", "smsp__inst_executed_pipe_fmaheavy",
                                   "smsp__inst_executed_pipe_fmalite")):
        return _COUNT
    return {"l1tex__t_sector_hit_rate.pct": ("%",), "lts__t_sector_hit_rate.pct": ("%",),
            "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": ("", "sector"),
            "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": ("", "request"),
            "sm__warps_active.avg.per_cycle_active": ("", "warp"),
            "sm__warps_active.avg.pct_of_peak_sustained_active": ("%",),
            "gpu__time_duration.sum": ("s",), "sm__cycles_elapsed.avg.per_second": ("Hz",),
            "gpc__cycles_elapsed.avg.per_second": ("Hz",),
            "dram__cycles_elapsed.avg.per_second": ("Hz",)}.get(metric)


def nvprof_dims(metric: str) -> tuple[str, ...] | None:
    """The dimensions an nvprof metric this mapping reads may have (``%`` for hit rates, a plain number
    for counts, ratios and occupancy), or None for every other metric."""
    if metric not in NVPROF_USED:
        return None
    return ("%",) if metric in PERCENT_METRICS else ("",)


def read_metric(flavour: str, metric: str, raw: str, unit: str, where: str) -> tuple[float, str] | None:
    """``(value in SI, dimension)`` of one exported metric value this mapping reads, None for a metric it
    does not read (those may hold anything, e.g. ``High (7)``). BadInputError naming ``where`` (file, line,
    metric) and the value for a unit the profiler does not print (:mod:`calib.importers.units`), a unit
    of the wrong kind (a duration in ``inst``), a negative value, or a percentage beyond the overshoot."""
    dims = ncu_dims(metric) if flavour == "ncu" else nvprof_dims(metric)
    if dims is None:
        return None
    value, dim = (U.ncu_value if flavour == "ncu" else U.nvprof_value)(raw, unit, where)
    if dim not in dims:
        said = f"{raw.strip()} {unit.strip()}".strip()
        raise BadInputError(f"{where}: {said!r} is in {unit.strip() or dim or 'no unit'!r}, not a "
                            + " or ".join(_DIM_NAMES.get(d, d) for d in dims))
    if value < 0:
        raise BadInputError(f"{where}: {value:g} is negative")
    if dim == "%" and value > 100.0 + OVERSHOOT_PCT:
        raise BadInputError(f"{where}: {value:g} % outside [0, 100] % (up to {100 + OVERSHOOT_PCT:g} % is taken as "
                            "profiler overshoot)")
    return value, dim


_DIM_NAMES = {"": "plain number", "%": "percentage", "s": "time", "Hz": "frequency", "B": "byte count",
              "B/s": "throughput", "level": "utilization level", "inst": "count of instructions",
              "warp": "count of warps", "sector": "count of sectors", "request": "count of requests",
              "block": "count of blocks", "thread": "count of threads"}


class Launch:
    """One profiled launch (or, for an nvprof summary, one kernel's averages): metrics as ``(SI value,
    dimension)``, launch shape, time (s), clocks (MHz), device name and SM count where the export has them."""

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
        self.sm_count: int | None = None
        self.ignored: set[str] = set()  # exported metrics the mapping does not read

    def add(self, flavour: str, metric: str, raw: str, unit: str, where: str) -> None:
        if metric == NCU_DEVICE_NAME:
            self.device = raw.strip()
        elif metric == NCU_SM_COUNT:
            self.sm_count = int(U.ncu_value(raw, unit, where)[0])
        elif (got := read_metric(flavour, metric, raw, unit, where)) is not None:
            self.metrics[metric] = got
        else:
            self.ignored.add(metric)


def _table(lines: list[str], where: str) -> tuple[list[str], list[tuple[int, list[str]]]]:
    body = [(i + 1, ln) for i, ln in enumerate(lines) if ln.strip() and not ln.lstrip().startswith("==")]
    if not body:
        raise BadInputError(f"{where}: no CSV table found")
    try:
        parsed = list(csv.reader(io.StringIO("\n".join(ln for _, ln in body))))
    except csv.Error as e:
        raise BadInputError(f"{where}: not a readable CSV export ({e})") from None
    return [h.strip() for h in parsed[0]], [(body[i][0], r) for i, r in enumerate(parsed[1:], start=1)]


def _base(metric: str) -> str:
    return metric.split(".")[0]


def _fields(p: Path, header: list[str], ln: int, r: list[str], hint: str = "") -> list[str]:
    """A row's fields, checked against the header (``hint`` ends the message of a wrong count). ncu's
    details page ends a metric row after its value (``...,"Metric Value",`` -- the Rule Name/Type/Description
    columns left out): such rows are padded."""
    n = len(header)
    if len(r) < n and "Rule Name" in header and len(r) > header.index("Metric Value"):
        return r + [""] * (n - len(r))
    if len(r) != n:
        raise BadInputError(f"{p}: line {ln}: {len(r)} fields, expected {n}{hint}")
    return r


def _shape(text: str) -> int | None:
    """Product of an ncu ``(256, 1, 1)`` shape (or a plain ``256``), or None when empty."""
    nums = re.findall(r"\d+", (text or "").replace(",", ""))
    return int(math.prod(int(n) for n in nums)) if nums else None


def _device(text: str) -> str:
    return re.sub(r"\s*\(\d+\)\s*$", "", text.strip())


def _units_row(rows: list[tuple[int, list[str]]], first_col: int) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """(units, data rows): nvprof and ncu write a row of units under the header (its first field empty)."""
    if rows and rows[0][1] and not rows[0][1][first_col].strip():
        return rows[0][1], rows[1:]
    return [], rows


def _nvprof_summary(p: Path, header: list[str], rows: list[tuple[int, list[str]]]) -> list[Launch]:
    col = {h: i for i, h in enumerate(header)}
    by_name: dict[str, Launch] = {}
    for ln, r in rows:
        r = _fields(p, header, ln, r)
        name = r[col["Kernel"]].strip()
        la = by_name.setdefault(name, Launch(name, f"{p}: line {ln}"))
        if "Device" in col:
            la.device = _device(r[col["Device"]])
        metric = r[col["Metric Name"]].strip()
        la.add("nvprof", metric, r[col["Avg"]], "", f"{p}: line {ln}, metric {metric}")
    return list(by_name.values())


#: columns of nvprof's traces that are not metrics
_NVPROF_TRACE_COLUMNS = frozenset({"Start", "Duration", "Grid X", "Grid Y", "Grid Z", "Block X", "Block Y", "Block Z",
                                   "Registers Per Thread", "Static SMem", "Dynamic SMem", "Size", "Throughput",
                                   "SrcMemType", "DstMemType", "Device", "Context", "Stream", "Name", "Kernel",
                                   "Correlation_ID", "SM Clock", "Memory Clock", "Src Dev", "Src Ctx", "Dst Dev",
                                   "Dst Ctx"})


def _nvprof_trace(p: Path, header: list[str], rows: list[tuple[int, list[str]]]) -> list[Launch]:
    """``--print-gpu-trace`` exports: with metrics (Device, Context, Stream, Kernel, Correlation_ID,
    metric columns) or without (Start, Duration, Grid X/Y/Z, Block X/Y/Z, ..., Name); a units row under
    the header either way; memcpy/memset rows skipped."""
    col = {h: i for i, h in enumerate(header)}
    name_col = "Name" if "Name" in col else "Kernel"
    units, data = [], rows
    cid = col.get("Correlation_ID")
    if rows and (not rows[0][1][cid].strip() if cid is not None and cid < len(rows[0][1])
                 else all(f.strip() in U.NVPROF_UNITS for f in rows[0][1])):
        units, data = rows[0][1], rows[1:]  # "ms,ms,,,,,,,,B,B,,,,," or ",,,,,%,GB/s": Correlation_ID blank
    unit_of = {h: (units[i].strip() if i < len(units) else "") for h, i in col.items()}
    out = []
    for ln, r in data:
        r = _fields(p, header, ln, r)
        name = r[col[name_col]].strip()
        if name.startswith("[") and name.endswith("]"):
            continue  # [CUDA memcpy HtoD], [CUDA memset] and the like
        la = Launch(name, f"{p}: line {ln}")
        if "Grid X" in col and "Block X" in col:
            g = [r[col[f"Grid {a}"]] if f"Grid {a}" in col else "1" for a in "XYZ"]
            b = [r[col[f"Block {a}"]] if f"Block {a}" in col else "1" for a in "XYZ"]
            if all(x.strip() for x in g + b):
                la.blocks = int(math.prod(to_float(x, f"{p}: line {ln}, column Grid/Block", finite=True) for x in g))
                la.tpb = int(math.prod(to_float(x, f"{p}: line {ln}, column Grid/Block", finite=True) for x in b))
        if "Duration" in col:
            where = f"{p}: line {ln}, column Duration"
            if not unit_of["Duration"]:
                raise BadInputError(f"{where}: no unit (nvprof writes a row of units under the header; export "
                                    "with --csv)")
            t, dim = U.nvprof_value(r[col["Duration"]], unit_of["Duration"], where)
            if dim != "s" or not t > 0:
                raise BadInputError(f"{where}: {r[col['Duration']].strip()!r} {unit_of['Duration']} is not a "
                                    "positive duration")
            la.time_s = t
        for key, attr in (("SM Clock", "core_mhz"), ("Memory Clock", "mem_mhz")):
            if key in col and r[col[key]].strip():
                where = f"{p}: line {ln}, column {key}"
                f, dim = U.nvprof_value(r[col[key]], unit_of[key] or "MHz", where)
                if dim != "Hz" or not 0 < f < 1e11:
                    raise BadInputError(f"{where}: {r[col[key]].strip()!r} is not a plausible clock")
                setattr(la, attr, f / 1e6)
        if "Device" in col:
            la.device = _device(r[col["Device"]])
        for h, i in col.items():
            raw = r[i].strip()
            if h in _NVPROF_TRACE_COLUMNS or raw in ("", "n/a"):
                continue
            la.add("nvprof", h, raw, unit_of[h], f"{p}: line {ln}, metric {h}")
        out.append(la)
    return out


def _ncu(p: Path, header: list[str], rows: list[tuple[int, list[str]]]) -> list[Launch]:
    """ncu ``--csv`` details page (one row per launch ID and metric; section metrics named by label) or
    ``--page raw`` (one row per launch, one column per metric, a units row under the header)."""
    col = {h: i for i, h in enumerate(header)}
    kcol = "Kernel Name" if "Kernel Name" in col else "Function Name"
    by_id: dict[str, Launch] = {}

    def launch(r: list[str], ln: int) -> Launch:
        key = r[col["ID"]].strip() if "ID" in col else f"line{ln}"
        if key not in by_id:
            la = by_id[key] = Launch(r[col[kcol]].strip(), f"{p}: line {ln}")
            if "Block Size" in col:  # later ncu versions add launch and device columns to the details page
                la.tpb = _shape(r[col["Block Size"]])
            if "Grid Size" in col:
                la.blocks = _shape(r[col["Grid Size"]])
            if "Device" in col:
                la.device = _device(r[col["Device"]])
            if "CC" in col:
                la.cc = r[col["CC"]].strip()
        return by_id[key]

    if {"Metric Name", "Metric Value"} <= set(col):
        for ln, r in rows:
            r = _fields(p, header, ln, r)
            label = r[col["Metric Name"]].strip()
            if not label:
                continue  # a rule's row: Rule Name/Type/Description, no metric
            section = r[col["Section Name"]].strip() if "Section Name" in col else ""
            metric = NCU_SECTION_LABELS.get((section, label), label)
            unit = r[col["Metric Unit"]] if "Metric Unit" in col else ""
            launch(r, ln).add("ncu", metric, r[col["Metric Value"]], unit,
                              f"{p}: line {ln}, metric {metric}" + (f" ({label!r})" if metric != label else ""))
    else:
        units, data = _units_row(rows, col.get("ID", 0))
        if not data:
            raise BadInputError(f"{p}: the raw export has no data rows")
        metric_cols = [(i, h) for i, h in enumerate(header) if "__" in h]
        if not metric_cols:
            raise BadInputError(f"{p}: the raw export has no metric columns (names like smsp__inst_executed.sum)")
        for ln, r in data:
            r = _fields(p, header, ln, r)
            la = launch(r, ln)
            for i, h in metric_cols:
                if r[i].strip() in ("", "n/a"):
                    continue
                la.add("ncu", h, r[i], units[i] if i < len(units) else "", f"{p}: line {ln}, column {h}")
    out = list(by_id.values())
    for la in out:
        m = la.metrics
        if "launch__grid_size" in m:
            la.blocks = int(round(m["launch__grid_size"][0]))
        if "launch__block_size" in m:
            la.tpb = int(round(m["launch__block_size"][0]))
        if "gpu__time_duration.sum" in m:
            if not m["gpu__time_duration.sum"][0] > 0:
                raise BadInputError(f"{la.where}, metric gpu__time_duration.sum: the duration is not positive")
            la.time_s = m["gpu__time_duration.sum"][0]
        for metric, attr in (("sm__cycles_elapsed.avg.per_second", "core_mhz"),
                             ("gpc__cycles_elapsed.avg.per_second", "core_mhz"),
                             ("dram__cycles_elapsed.avg.per_second", "mem_mhz")):
            if metric in m and getattr(la, attr) is None:
                f = m[metric][0] / 1e6
                if not 0 < f < 1e5:
                    raise BadInputError(f"{la.where}, metric {metric}: {f:g} MHz is not a plausible clock")
                setattr(la, attr, f)
    return out


def read_exported(path: str | os.PathLike) -> tuple[str, str, list[Launch]]:
    """``(flavour, layout, launches)`` of an nvprof or ncu CSV export. Layouts: ``nvprof-summary``
    (``--csv --metrics``: one Launch per kernel, its Avg values), ``nvprof-metrics-trace``
    (``--print-gpu-trace --csv --metrics``), ``nvprof-gpu-trace`` (``--print-gpu-trace --csv``: time and
    launch shape, no metrics), ``ncu-details``, ``ncu-raw``."""
    p = Path(path)
    header, rows = _table(read_lines(p), str(p))
    cols = set(header)
    if {"Kernel", "Metric Name", "Avg"} <= cols:
        return "nvprof", "nvprof-summary", _nvprof_summary(p, header, rows)
    if "Duration" in cols and ("Name" in cols or "Kernel" in cols):
        return "nvprof", "nvprof-gpu-trace", _nvprof_trace(p, header, rows)
    if "Kernel" in cols and "Correlation_ID" in cols:
        return "nvprof", "nvprof-metrics-trace", _nvprof_trace(p, header, rows)
    if "Kernel Name" in cols or "Function Name" in cols:
        layout = "ncu-details" if {"Metric Name", "Metric Value"} <= cols else "ncu-raw"
        return "ncu", layout, _ncu(p, header, rows)
    raise BadInputError(f"{p}: neither an nvprof export (summary: Kernel, Metric Name, Avg; trace: Duration, Grid X, "
                        f"Name or Kernel, Correlation_ID, ...) nor an ncu CSV export (Kernel Name, ...); found columns "
                        f"{', '.join(header[:8])}")


def _parse(path: str | os.PathLike) -> tuple[str, dict[str, dict[str, tuple[float, str]]], set[str]]:
    flavour, _, launches = read_exported(path)
    acc: dict[str, dict[str, list[tuple[float, str]]]] = {}
    for la in launches:
        ms = dict(la.metrics)
        if la.blocks and "launch__grid_size" not in ms:
            ms["launch__grid_size"] = (float(la.blocks), "")
        if la.tpb and "launch__block_size" not in ms:
            ms["launch__block_size"] = (float(la.tpb), "")
        for metric, val in ms.items():
            acc.setdefault(la.name, {}).setdefault(metric, []).append(val)
    if not any(acc.values()):
        raise BadInputError(f"{path}: the export has no metric rows")
    kernels = {k: {m: (sum(x for x, _ in v) / len(v), v[0][1]) for m, v in ms.items()} for k, ms in acc.items()}
    return flavour, kernels, set().union(*(la.ignored for la in launches))


def _pct(v: tuple[float, str] | None) -> float | None:
    return None if v is None else min(1.0, max(0.0, v[0] / 100.0))


def _uncoal_frac(sectors_per_request: float | None) -> float | None:
    if sectors_per_request is None or not math.isfinite(sectors_per_request):
        return None
    return min(1.0, max(0.0, (sectors_per_request - SECTORS_COALESCED) / (SECTORS_UNCOALESCED - SECTORS_COALESCED)))


def _split_global(counts: dict[str, float], gmem: float, l1_hr: float | None, l2_hr: float | None) -> None:
    """Global memory instructions into l1 (L1 hits), l2 (L2 hits) and global (DRAM)."""
    l1 = gmem * (l1_hr or 0.0)
    rest = gmem - l1
    l2 = rest * (l2_hr or 0.0)
    for c, v in (("l1", l1), ("l2", l2), ("global", rest - l2)):
        if v > 0:
            counts[c] = counts.get(c, 0.0) + v


def _requests(m: Mapping[str, tuple[float, str]], name: str, inst: str, trans: str, per_request: str) -> float:
    """Warp-level instructions of a memory class: ``inst`` when the export has it, else ``trans /
    per_request`` (0 when neither is there)."""
    if inst in m:
        return m[inst][0]
    if trans not in m or not m[trans][0]:
        return 0.0
    if per_request not in m or m[per_request][0] <= 0:
        raise BadInputError(f"kernel {name!r}: {trans} without {per_request} (or {inst}): cannot count the "
                            "warp-level memory instructions; profile both metrics")
    return m[trans][0] / m[per_request][0]


def _ratio_hit(dram_r: float | None, dram_w: float | None, l2_r: float | None, l2_w: float | None) -> float | None:
    """L2 hit rate from sector counts: 1 - DRAM sectors / L2 sectors (reads and writes), or None."""
    if dram_r is None or l2_r is None:
        return None
    den = l2_r + (l2_w or 0.0)
    if den <= 0:
        return None
    return min(1.0, max(0.0, 1.0 - (dram_r + (dram_w or 0.0)) / den))


def _describe_nvprof(name: str, m: Mapping[str, tuple[float, str]], warps: float) -> tuple[dict[str, float], dict[str, Any]]:
    def v(metric: str) -> float | None:
        return m[metric][0] if metric in m else None

    total = v("inst_executed")
    if total is None:
        raise BadInputError(f"kernel {name!r}: the export has no inst_executed (warp instructions); cannot build "
                            "per-warp counts")
    counts: dict[str, float] = {}
    # warp-level memory instructions: the inst_executed_* metrics, else requests from the transaction
    # metrics that default metric sets carry (transactions / transactions per request)
    ld = _requests(m, name, "inst_executed_global_loads", "gld_transactions", "gld_transactions_per_request")
    st = _requests(m, name, "inst_executed_global_stores", "gst_transactions", "gst_transactions_per_request")
    gmem = ld + st
    for cls in ("local", "shared"):   # e.g. inst_executed_local_loads, else local_load_transactions / per request
        x = sum(_requests(m, name, f"inst_executed_{cls}_{op}s", f"{cls}_{op}_transactions",
                          f"{cls}_{op}_transactions_per_request") for op in ("load", "store"))
        if x:
            counts[cls] = counts.get(cls, 0.0) + x
    if v("inst_executed_tex_ops"):
        counts["tex"] = counts.get("tex", 0.0) + v("inst_executed_tex_ops")
    mem_warp = gmem + sum(counts.values())
    thread = {cls: 0.0 for cls in set(NVPROF_THREAD_CLASSES.values())}
    for metric, cls in NVPROF_THREAD_CLASSES.items():
        thread[cls] += v(metric) or 0.0
    sfu_thread = v("flop_count_sp_special") or 0.0
    thread["fp"] = max(0.0, thread["fp"] - sfu_thread)
    thread["sfu"] = sfu_thread
    comp_warp = max(0.0, total - mem_warp)
    tsum = sum(thread.values())
    if tsum > 0:
        for cls, t in thread.items():
            if t > 0:
                counts[cls] = counts.get(cls, 0.0) + comp_warp * t / tsum
    elif comp_warp > 0:
        counts["int"] = counts.get("int", 0.0) + comp_warp  # no mix metrics: unknown non-memory work
        warnings.warn(f"kernel {name!r}: no instruction-mix metrics (inst_fp_32, ...): non-memory instructions counted as int")
    hr = _pct(m.get("l2_tex_read_hit_rate") or m.get("l2_l1_read_hit_rate"))
    if hr is None:
        hr = _ratio_hit(v("dram_read_transactions"), v("dram_write_transactions"), v("l2_read_transactions")
                        if v("l2_read_transactions") is not None else v("l2_tex_read_transactions"),
                        v("l2_write_transactions"))
    l1_hr = _pct(m.get("global_hit_rate"))
    if l1_hr is None and ld > 0 and v("gld_transactions") and v("l2_tex_read_transactions") is not None:
        # loads that did not go on to L2 were served by L1/tex: 1 - sectors read from L2 / sectors requested
        l1_hr = min(1.0, max(0.0, 1.0 - v("l2_tex_read_transactions") / v("gld_transactions")))
    if l1_hr:
        # the L1 serves loads only: as a share of all global memory instructions
        l1_hr = l1_hr * ld / gmem if gmem else 0.0
    _split_global(counts, gmem, l1_hr, hr)
    extra: dict[str, Any] = {}
    tpr = v("gld_transactions_per_request") if (v("gld_transactions_per_request") or 0) > 0 else v("gst_transactions_per_request")
    if (u := _uncoal_frac(tpr)) is not None and gmem > 0:
        extra.setdefault("memory", {})["uncoalesced_fraction"] = round(u, 6)
    if v("achieved_occupancy") is not None:
        extra["_occupancy"] = v("achieved_occupancy")
    return {c: x / warps for c, x in counts.items() if x > 0}, extra


def _describe_ncu(name: str, m: Mapping[str, tuple[float, str]], warps: float) -> tuple[dict[str, float], dict[str, Any]]:
    by_base: dict[str, tuple[float, str]] = {}
    for metric, val in m.items():
        b = _base(metric)
        # one rollup per base (ncu_dims reads only these); warps per cycle before the occupancy percentage,
        # the SM clock before the GPC clock
        if b not in by_base or metric in ("sm__warps_active.avg.per_cycle_active", "sm__cycles_elapsed.avg.per_second"):
            by_base[b] = val
    if "gpc__cycles_elapsed" in by_base:
        by_base.setdefault("sm__cycles_elapsed", by_base["gpc__cycles_elapsed"])

    def v(base: str) -> float | None:
        return by_base[base][0] if base in by_base else None

    total = v("smsp__inst_executed") if v("smsp__inst_executed") is not None else v("sm__inst_executed")
    if total is None:
        raise BadInputError(f"kernel {name!r}: the export has no smsp__inst_executed.sum (warp instructions); "
                            "cannot build per-warp counts")
    counts: dict[str, float] = {}
    pipes = dict(NCU_PIPES)
    if v("smsp__inst_executed_pipe_fma") is None:
        pipes.update({"smsp__inst_executed_pipe_fmaheavy": "fp", "smsp__inst_executed_pipe_fmalite": "fp"})
    for base, cls in pipes.items():
        if v(base):
            counts[cls] = counts.get(cls, 0.0) + v(base)
    for b in by_base:
        if b.startswith("smsp__inst_executed_pipe_tensor") and b != "smsp__inst_executed_pipe_tensor" and "tensor" not in counts:
            counts["tensor"] = counts.get("tensor", 0.0) + (v(b) or 0.0)
    gmem = 0.0
    for base, cls in NCU_OPS.items():
        x = v(base) or 0.0
        if cls == "gmem":
            gmem += x
        elif x:
            counts[cls] = counts.get(cls, 0.0) + x
    known = sum(counts.values()) + gmem
    if known < total * 0.999:
        counts["alu"] = counts.get("alu", 0.0) + (total - known)  # instructions no listed pipe claims
    _split_global(counts, gmem, _pct(by_base.get("l1tex__t_sector_hit_rate")), _pct(by_base.get("lts__t_sector_hit_rate")))
    extra: dict[str, Any] = {}
    sec, req = v("l1tex__t_sectors_pipe_lsu_mem_global_op_ld"), v("l1tex__t_requests_pipe_lsu_mem_global_op_ld")
    if sec is not None and req:
        u = _uncoal_frac(sec / req)
        if u is not None:
            extra.setdefault("memory", {})["uncoalesced_fraction"] = round(u, 6)
    if v("sm__warps_active") is not None:
        pct = by_base["sm__warps_active"][1] == "%"
        extra["_occupancy" if pct else "_active_warps"] = v("sm__warps_active") / (100.0 if pct else 1.0)
    if v("gpu__time_duration") is not None:
        extra["time_s"] = v("gpu__time_duration")  # s (read_metric converts)
    for base, key in (("sm__cycles_elapsed", "core_mhz"), ("dram__cycles_elapsed", "mem_mhz")):
        if v(base) is not None:
            extra[key] = v(base) / 1e6  # Hz -> MHz
    return {c: x / warps for c, x in counts.items() if x > 0}, extra


def active_blocks_per_sm(extra: Mapping[str, Any], threads_per_block: float, max_warps_per_sm: float) -> float | None:
    """Blocks resident per SM from a description's achieved occupancy (``_active_warps``, or ``_occupancy``
    x ``max_warps_per_sm``), at least 1e-6; None without either (or with none active)."""
    act = extra.get("_active_warps")
    if act is None and extra.get("_occupancy") is not None:
        act = extra["_occupancy"] * max_warps_per_sm
    return max(act / math.ceil(threads_per_block / 32), 1e-6) if act else None


def read_profile(path: str | os.PathLike, *, blocks: int | None = None, threads_per_block: int | None = None,
                 active_sms: int | None = None, max_warps_per_sm: float = 64.0, core_mhz: float | None = None,
                 mem_mhz: float | None = None) -> list[dict[str, Any]]:
    """Kernel descriptions (JSON-ready dicts) of every kernel in an nvprof or ncu export (module docstring).

    ``blocks``/``threads_per_block`` give the launch when the export has no ``launch__*`` metrics
    (nvprof never has); ``max_warps_per_sm`` turns nvprof's achieved occupancy into active warps;
    ``core_mhz``/``mem_mhz`` are the clocks of the profile when it does not record them.
    """
    flavour, kernels, ignored_names = _parse(path)
    ignored = sorted({_base(m) for m in ignored_names})
    if ignored:
        warnings.warn(f"{path}: {len(ignored)} metric(s) not used for kernel descriptions: " + ", ".join(ignored[:8])
                      + (" ..." if len(ignored) > 8 else ""))
    out = []
    for name, m in kernels.items():
        gs = m.get("launch__grid_size", (None, ""))[0]
        bs = m.get("launch__block_size", (None, ""))[0]
        nb = blocks or (round(gs) if gs else None)
        tpb = threads_per_block or (round(bs) if bs else None)
        if not nb or not tpb:
            raise BadInputError(f"{path}: kernel {name!r}: no launch shape in the export; give blocks and "
                                "threads per block (--blocks, --threads-per-block)")
        warps = nb * math.ceil(tpb / 32)
        per_warp, extra = (_describe_nvprof if flavour == "nvprof" else _describe_ncu)(name, m, warps)
        desc: dict[str, Any] = {"name": name, "per_warp": {c: round(x, 6) for c, x in sorted(per_warp.items())},
                                "launch": {"blocks": nb, "threads_per_block": tpb}}
        if active_sms:
            desc["launch"]["active_sms"] = active_sms
        resident = active_blocks_per_sm(extra, tpb, max_warps_per_sm)
        if resident is not None:
            desc["launch"]["active_blocks_per_sm"] = round(resident, 6)
        if "memory" in extra:
            desc["memory"] = extra["memory"]
        for key, given in (("time_s", None), ("core_mhz", core_mhz), ("mem_mhz", mem_mhz)):
            if key in extra or given:
                desc[key] = extra.get(key, float(given or 0.0))
        out.append(desc)
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m calib.importers.ncu_kernel PROFILE.csv -o KERNELS.json``"""
    ap = argparse.ArgumentParser(prog="python -m calib.importers.ncu_kernel",
                                 description="nvprof/ncu metric export -> kernel descriptions (JSON)")
    ap.add_argument("profile")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--blocks", type=int)
    ap.add_argument("--threads-per-block", type=int)
    ap.add_argument("--active-sms", type=int)
    ap.add_argument("--max-warps-per-sm", type=float, default=64.0)
    ap.add_argument("--core-mhz", type=float)
    ap.add_argument("--mem-mhz", type=float)
    a = ap.parse_args(argv)
    try:
        descs = read_profile(a.profile, blocks=a.blocks, threads_per_block=a.threads_per_block, active_sms=a.active_sms,
                             max_warps_per_sm=a.max_warps_per_sm, core_mhz=a.core_mhz, mem_mhz=a.mem_mhz)
    except BadInputError as e:
        sys.stderr.write(f"ERROR: {e}\n")
        return 2
    atomic_write_text(a.output, json.dumps(descs, indent=2) + "\n")
    print(f"{a.output}: {len(descs)} kernel description(s)")
    return 0


def is_profile_csv(path: str | os.PathLike) -> bool:
    """Whether a CSV looks like an nvprof/ncu metrics export (rather than a samples table)."""
    try:
        head = "\n".join(read_lines(path)[:12])
    except BadInputError:
        return False
    return bool(re.search(r"Metric Name|Kernel Name|launch__|smsp__", head))


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
