"""A stand-in profiler: nvprof and Nsight Compute CSV exports of kernels run on the virtual GPU.

What a user brings to ``calib import nvprof|ncu FILE --kernels``: application kernels profiled at one
or several (core, memory) clock pairs. The files have the shapes the real tools write -- header lines,
quoting, units rows, units inside values, binary byte multiples in nvprof, decimal ones in ncu -- taken
from transcripts of nvprof 11.8 and ncu 2022.3 themselves (``tests/data/profilers/README.md``), not from
the importers: nvprof's ``--print-gpu-trace`` (durations, no metrics), its metrics trace and summary
(metrics, no durations: nvprof replays kernels to count), ncu's details page and raw page (both). The counts are those
the kernel executes (per-warp counts x warps, as the profiler's counters sum them over the grid), the
time is the virtual GPU's measured kernel time (its event-timer noise included) and the clocks are what
the card ran at: the virtual GPU has no clock droop, so this double applies one -- requested core clocks
run up to ``droop`` lower at the top of the range (boost tables under load), with a small jitter -- and
the time is computed at the clocks actually run.

Nothing here is read by a fitter; it only writes files in the profilers' layouts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from microbench.devices.base import Launch, Workload
from microbench.devices.sim.presets import Preset, get_preset
from microbench.devices.sim.timing import kernel_time_s

#: classes an application kernel mixes (per warp); const/ctrl/tex are left out: nvprof has no
#: instruction metric that isolates them (the importer's mapping table says where they would go)
#: kernel shapes of :func:`app_kernels`, in turn
SHAPES = ("compute", "memory", "cache", "mixed", "uncoal")
SECTORS_PER_REQUEST_COAL, SECTORS_PER_REQUEST_UNCOAL = 4.0, 32.0


@dataclass(frozen=True)
class AppKernel:
    """An application kernel: per-warp counts, launch, and traits only the virtual GPU knows (ILP,
    coalescing, share of the DRAM requests that are stores)."""

    name: str
    per_warp: Mapping[str, float]
    blocks: int
    threads_per_block: int
    ilp: float = 1.0
    coalesced: bool = True
    store_share: float = 0.25
    traits: Mapping[str, Any] = field(default_factory=dict)

    def workload(self, sm_count: int) -> Workload:
        return Workload(self.name, dict(self.per_warp), Launch(self.blocks, self.threads_per_block,
                                                               min(sm_count, self.blocks)),
                        traits={"ilp": self.ilp, "coalesced": self.coalesced, **self.traits})


def app_kernels(n: int, seed: int, sm_count: int, *, kind: str = "mixed", prefix: str = "app") -> list[AppKernel]:
    """``n`` application-like kernels drawn from a fixed random design (``seed``): FMA-heavy,
    memory-streaming (coalesced or not), cache-bound and mixed kernels with 1-4 independent chains and 2-16 warps per
    block. ``kind``: ``"mixed"`` (all shapes), ``"memory"`` (streaming kernels with little
    computation per load) or ``"compute"`` (no DRAM traffic beyond one load per 64 instructions)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        shape = kind if kind != "mixed" else SHAPES[i % len(SHAPES)]
        pw: dict[str, float] = {}
        if shape == "compute":
            pw["fp"] = float(rng.uniform(60, 400))
            pw["int"] = float(rng.uniform(5, 40))
            pw["alu"] = float(rng.uniform(2, 20))
            if rng.random() < 0.4:
                pw["sfu"] = float(rng.uniform(2, 20))
            if rng.random() < 0.2:
                pw["dp"] = float(rng.uniform(1, 6))
            pw["global"] = float(rng.uniform(0.5, 3.0))
        elif shape in ("memory", "uncoal"):
            pw["global"] = float(rng.uniform(8, 40))
            pw["fp"] = pw["global"] * float(rng.uniform(0.5, 3.0))
            pw["int"] = pw["global"] * float(rng.uniform(1.0, 3.0))
            pw["alu"] = float(rng.uniform(2, 10))
        elif shape == "cache":
            pw["l2"] = float(rng.uniform(10, 40))
            pw["l1"] = float(rng.uniform(0, 20))
            pw["global"] = float(rng.uniform(2, 10))
            pw["shared"] = float(rng.uniform(0, 20))
            pw["fp"] = float(rng.uniform(10, 80))
            pw["int"] = float(rng.uniform(10, 40))
        else:
            pw["fp"] = float(rng.uniform(20, 200))
            pw["int"] = float(rng.uniform(10, 60))
            pw["alu"] = float(rng.uniform(5, 30))
            pw["shared"] = float(rng.uniform(0, 30))
            pw["global"] = float(rng.uniform(2, 20))
            pw["l2"] = float(rng.uniform(0, 10))
            if rng.random() < 0.5:
                pw["sfu"] = float(rng.uniform(1, 10))
        # round counts to what a warp can execute (loops of whole instructions); the profiler's sums are integers
        pw = {c: float(max(1.0, round(v))) for c, v in pw.items() if v >= 0.5}
        tpb = int(rng.choice([64, 128, 256, 512]))
        blocks = int(sm_count * int(rng.choice([4, 8, 16, 32, 64])))
        ilp = float(rng.choice([1.0, 2.0, 4.0]))
        # uncoalesced requests only in streaming kernels: the virtual GPU replays uncoalesced DRAM
        # requests but serves L1/L2 hits as whole lines, so a cache kernel's sectors would not match it
        coalesced = shape != "uncoal"
        out.append(AppKernel(f"{prefix}_{shape}_{i:02d}", pw, blocks, tpb, ilp, coalesced,
                             float(rng.uniform(0.0, 0.4))))
    return out


@dataclass(frozen=True)
class Launched:
    """One profiled launch: the kernel, the requested and the actual clocks, the measured time (s)."""

    kernel: AppKernel
    requested: tuple[float, float]
    core_mhz: float
    mem_mhz: float
    time_s: float
    sm_count: int
    max_warps_per_sm: int
    max_blocks_per_sm: int


def actual_core_mhz(requested: float, lo: float, hi: float, droop: float, rng: np.random.Generator) -> float:
    """The core clock a card holds under load when ``requested`` is asked for: up to ``droop`` lower at
    the top of the range [lo, hi] (linear in between), with a 0.1 % jitter."""
    frac = 0.0 if hi <= lo else (requested - lo) / (hi - lo)
    return float(requested * (1.0 - droop * frac) * (1.0 + rng.normal(0.0, 0.001)))


def profile(kernels: Sequence[AppKernel], preset: str | Preset, pairs: Iterable[tuple[float, float]], *,
            seed: int = 0, droop: float = 0.05, noise: float | None = None) -> list[Launched]:
    """Run every kernel at every (core, memory) pair on the virtual GPU ``preset``: the measured time
    (relative noise ``noise``, default the preset's event-timer noise) at the clocks actually run."""
    p = preset if isinstance(preset, Preset) else get_preset(preset)
    rng = np.random.default_rng(seed)
    sup = p.supported_clocks()
    lo, hi = min(sup["core_mhz"]), max(sup["core_mhz"])
    sd = p.sensors.kernel_time_noise if noise is None else noise
    out = []
    for fc_req, fm in pairs:
        for k in kernels:
            fc = actual_core_mhz(fc_req, lo, hi, droop, rng)
            w = k.workload(p.sm_count)
            t = kernel_time_s(p.timing, w.per_warp, w.launch, w.traits, fc, fm, p.default_core_mhz, p.default_mem_mhz)
            out.append(Launched(k, (fc_req, fm), fc, float(fm), float(t * (1.0 + rng.normal(0.0, sd))), p.sm_count,
                                p.timing.max_warps_per_sm, p.timing.max_blocks_per_sm))
    return out


def grid_pairs(preset: str | Preset, n_core: int = 5, n_mem: int = 4) -> list[tuple[float, float]]:
    """``n_core`` core clocks spread over the supported range (ends included) x ``n_mem`` memory clocks."""
    p = preset if isinstance(preset, Preset) else get_preset(preset)
    sup = p.supported_clocks()
    core = sorted(sup["core_mhz"])
    mem = sorted(sup["mem_mhz"])
    ci = sorted({int(round(i)) for i in np.linspace(0, len(core) - 1, min(n_core, len(core)))})
    mi = sorted({int(round(i)) for i in np.linspace(0, len(mem) - 1, min(n_mem, len(mem)))})
    return [(core[i], mem[j]) for i in ci for j in mi]


def _counters(launch: Launched) -> dict[str, float]:
    """nvprof metric values of one launch (totals over the grid; thread-level counts x 32)."""
    k = launch.kernel
    pw = k.per_warp
    warps = k.blocks * math.ceil(k.threads_per_block / 32)
    tot = sum(pw.values())
    spr = SECTORS_PER_REQUEST_COAL if k.coalesced else SECTORS_PER_REQUEST_UNCOAL
    glob, l2, l1 = pw.get("global", 0.0), pw.get("l2", 0.0), pw.get("l1", 0.0)
    st = glob * k.store_share             # DRAM-bound stores: every store goes to L2 and on to DRAM
    ld = glob - st + l2 + l1
    st, ld = round(st * warps) / warps, round(ld * warps) / warps  # whole requests over the grid
    m: dict[str, float] = {
        "inst_executed": tot * warps,
        "inst_fp_32": (pw.get("fp", 0.0) + pw.get("sfu", 0.0)) * 32 * warps,
        "flop_count_sp_special": pw.get("sfu", 0.0) * 32 * warps,
        "inst_fp_64": pw.get("dp", 0.0) * 32 * warps,
        "inst_integer": pw.get("int", 0.0) * 32 * warps,
        "inst_bit_convert": 0.0,
        "inst_misc": pw.get("alu", 0.0) * 32 * warps,
        "inst_control": 0.0,
        "gld_transactions": ld * spr * warps,
        "gst_transactions": st * spr * warps,
        "gld_transactions_per_request": spr if ld else 0.0,
        "gst_transactions_per_request": spr if st else 0.0,
        "shared_load_transactions": pw.get("shared", 0.0) * warps,
        "shared_store_transactions": 0.0,
        "shared_load_transactions_per_request": 1.0 if pw.get("shared") else 0.0,
        "shared_store_transactions_per_request": 0.0,
        "l2_tex_read_transactions": (ld - l1) * spr * warps,
        "l2_read_transactions": (ld - l1) * spr * warps,
        "l2_write_transactions": st * spr * warps,
        "dram_read_transactions": (glob - st) * spr * warps,
        "dram_write_transactions": st * spr * warps,
        "tex_cache_transactions": ld * spr * warps,
    }
    wpb = math.ceil(k.threads_per_block / 32)
    per_sm = k.blocks / min(launch.sm_count, k.blocks)
    resident = max(1, min(launch.max_blocks_per_sm, launch.max_warps_per_sm // wpb))
    m["achieved_occupancy"] = min(per_sm, resident) * wpb / launch.max_warps_per_sm
    cycles = launch.time_s * launch.core_mhz * 1e6
    m["ipc"] = tot * warps / min(launch.sm_count, k.blocks) / cycles
    m["sm_efficiency"] = 100.0 * min(launch.sm_count, k.blocks) / launch.sm_count
    m["global_hit_rate"] = 100.0 * l1 / ld if ld else 0.0
    m["gld_throughput"] = ld * spr * 32.0 * warps / launch.time_s  # B/s: 32-byte sectors
    dram_b = (glob * spr * 32.0 * warps) / launch.time_s
    m["dram_utilization"] = float(min(10, round(10 * dram_b / 336.5e9)))  # a level 0..10 of the board's 336.5 GB/s
    return m


#: metrics of the nvprof exports, with nvprof's value kind (CUPTI 11.8 CUpti_MetricValueKind: "u" uint64,
#: "d" double, "p" percent, "t" throughput in B/s, "l" utilization level) and its Metric Description
#: (cuptiMetricGetAttribute(SHORT_DESCRIPTION), libcupti 11.8, compute capability 5.x-7.x)
NVPROF_METRICS: dict[str, tuple[str, str]] = {
    "inst_executed": ("u", "Instructions Executed"), "inst_fp_32": ("u", "FP Instructions(Single)"),
    "inst_fp_64": ("u", "FP Instructions(Double)"), "inst_integer": ("u", "Integer Instructions"),
    "inst_bit_convert": ("u", "Bit-Convert Instructions"), "inst_misc": ("u", "Misc Instructions"),
    "inst_control": ("u", "Control-Flow Instructions"), "flop_count_sp_special": ("u", "Floating Point Operations(Single Precision Special)"),
    "gld_transactions": ("u", "Global Load Transactions"), "gst_transactions": ("u", "Global Store Transactions"),
    "gld_transactions_per_request": ("d", "Global Load Transactions Per Request"),
    "gst_transactions_per_request": ("d", "Global Store Transactions Per Request"),
    "shared_load_transactions": ("u", "Shared Load Transactions"), "shared_store_transactions": ("u", "Shared Store Transactions"),
    "shared_load_transactions_per_request": ("d", "Shared Memory Load Transactions Per Request"),
    "shared_store_transactions_per_request": ("d", "Shared Memory Store Transactions Per Request"),
    "dram_read_transactions": ("u", "Device Memory Read Transactions"),
    "dram_write_transactions": ("u", "Device Memory Write Transactions"),
    "l2_read_transactions": ("u", "L2 Read Transactions"), "l2_write_transactions": ("u", "L2 Write Transactions"),
    "l2_tex_read_transactions": ("u", "L2 Transactions (Texture Reads)"),
    "tex_cache_transactions": ("u", "Unified Cache Transactions"), "achieved_occupancy": ("d", "Achieved Occupancy"),
    "ipc": ("d", "Executed IPC"), "sm_efficiency": ("p", "Multiprocessor Activity"),
    "global_hit_rate": ("p", "Global Hit Rate in unified l1/tex"), "gld_throughput": ("t", "Global Load Throughput"),
    "dram_utilization": ("l", "Device Memory Utilization"),
}
#: nvprof 11.8's unit tables (strings of the binary): binary byte multiples, time from ns to s
_NVPROF_THROUGHPUT = (("GB/s", 2.0**30), ("MB/s", 2.0**20), ("KB/s", 2.0**10), ("B/s", 1.0))
_NVPROF_TIME = (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9))
#: ncu 2022.3's: decimal byte multiples
_NCU_TIME = (("second", 1.0), ("msecond", 1e-3), ("usecond", 1e-6), ("nsecond", 1e-9))
_NCU_THROUGHPUT = (("Tbyte/second", 1e12), ("Gbyte/second", 1e9), ("Mbyte/second", 1e6), ("Kbyte/second", 1e3),
                   ("byte/second", 1.0))
_LEVELS = ("Idle", "Low", "Low", "Low", "Mid", "Mid", "Mid", "High", "High", "High", "Max")


def _scale(value: float, table: tuple[tuple[str, float], ...]) -> tuple[str, float]:
    """The largest unit of ``table`` in which ``value`` is at least 1 (the smallest for 0)."""
    for unit, f in table:
        if abs(value) >= f:
            return unit, f
    return table[-1]


def _nvprof_field(kind: str, v: float, unit_factor: float | None = None, unit: str = "") -> str:
    """One nvprof value as it prints it: uint64 plain, doubles with 6 decimals, a level ``"High (8)"``;
    a percentage or throughput with its unit inside (summary) or bare in its column's unit (trace)."""
    if kind == "u":
        return str(int(round(v)))
    if kind == "l":
        return f'"{_LEVELS[int(v)]} ({int(v)})"'
    if kind == "t":
        if unit_factor is None:  # summary: each value in its own unit
            unit, unit_factor = _scale(v, _NVPROF_THROUGHPUT)
            return f"{v / unit_factor:.6f}{unit}"
        return f"{v / unit_factor:.6f}"
    if kind == "p" and unit_factor is None:
        return f"{v:.6f}%"
    return f"{v:.6f}"


def _banner(pid: int) -> str:
    return (f"=={pid}== NVPROF is profiling process {pid}, command: ./app\n"
            f"=={pid}== Profiling application: ./app\n=={pid}== Profiling result:\n")


def _q(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def nvprof_gpu_trace_csv(launches: Sequence[Launched], device_name: str, pid: int = 4711) -> str:
    """``nvprof --print-gpu-trace --csv ./app`` (no metrics), as nvprof 11.8 writes it
    (tests/data/profilers/nvprof_11.8_gpu_trace.csv): banner, quoted header, an unquoted units row (one
    time unit per column), numbers unquoted, text quoted, one row per launch in launch order."""
    head = ["Start", "Duration", "Grid X", "Grid Y", "Grid Z", "Block X", "Block Y", "Block Z", "Registers Per Thread",
            "Static SMem", "Dynamic SMem", "Device", "Context", "Stream", "Name", "Correlation_ID"]
    starts, t = [], 0.0
    for la in launches:
        starts.append(t)
        t += la.time_s + 5e-6
    tunit, tf = _scale(max([la.time_s for la in launches] + [starts[-1] if starts else 0.0]), _NVPROF_TIME)
    lines = [_banner(pid) + ",".join(_q(h) for h in head), f"{tunit},{tunit},,,,,,,,B,B,,,,,"]
    for i, (la, t0) in enumerate(zip(launches, starts), start=1):
        k = la.kernel
        lines.append(f"{t0 / tf:.6f},{la.time_s / tf:.6f},{k.blocks},1,1,{k.threads_per_block},1,1,32,0,0,"
                     f"{_q(device_name + ' (0)')},\"1\",\"7\",{_q(k.name + '(float*, int)')},{i}")
    return "\n".join(lines) + "\n"


def nvprof_metrics_trace_csv(launches: Sequence[Launched], device_name: str, pid: int = 4711) -> str:
    """``nvprof --print-gpu-trace --csv --metrics ...`` as nvprof 11.8 writes it
    (tests/data/profilers/nvprof_11.8_metrics_trace.csv): no Start/Duration/Grid columns (the kernels are
    replayed for the counters), a units row (``%``, ``GB/s``: one unit per column), values bare."""
    names = list(NVPROF_METRICS)
    vals = [_counters(la) for la in launches]
    units, factors = [], []
    for m in names:
        kind = NVPROF_METRICS[m][0]
        if kind == "t":
            u, f = _scale(max(v[m] for v in vals), _NVPROF_THROUGHPUT)
        else:
            u, f = ("%" if kind == "p" else ""), 1.0
        units.append(u)
        factors.append(f)
    lines = [_banner(pid) + ",".join(_q(h) for h in ["Device", "Context", "Stream", "Kernel", "Correlation_ID", *names]),
             ",,,,," + ",".join(units)]
    for i, (la, v) in enumerate(zip(launches, vals), start=1):
        fields = [_nvprof_field(NVPROF_METRICS[m][0], v[m], f) for m, f in zip(names, factors)]
        lines.append(f"{_q(device_name + ' (0)')},\"1\",\"7\",{_q(la.kernel.name + '(float*, int)')},{i}," + ",".join(fields))
    return "\n".join(lines) + "\n"


def nvprof_metrics_summary_csv(launches: Sequence[Launched], device_name: str, pid: int = 4711) -> str:
    """``nvprof --csv --metrics ...`` (summary) as nvprof 11.8 writes it
    (tests/data/profilers/nvprof_11.8_metrics_summary.csv): one row per kernel and metric, Min/Max/Avg over
    the kernel's invocations with the unit inside each value (``50.000000%``, ``715.780258MB/s``,
    ``148.250824GB/s``: throughputs in binary multiples, chosen value by value)."""
    by_kernel: dict[str, list[dict[str, float]]] = {}
    for la in launches:
        by_kernel.setdefault(la.kernel.name + "(float*, int)", []).append(_counters(la))
    lines = [f"=={pid}== NVPROF is profiling process {pid}, command: ./app",
             f"=={pid}== Profiling application: ./app", f"=={pid}== Profiling result:", f"=={pid}== Metric result:",
             '"Device","Kernel","Invocations","Metric Name","Metric Description","Min","Max","Avg"']
    for name, runs in by_kernel.items():
        for m, (kind, desc) in NVPROF_METRICS.items():
            xs = [r[m] for r in runs]
            if kind == "l":
                stats = (min(xs), max(xs), float(int(sum(xs) / len(xs))))  # nvprof's Avg level is whole
            else:
                stats = (min(xs), max(xs), sum(xs) / len(xs))
            lines.append(f"{_q(device_name + ' (0)')},{_q(name)},{len(xs)},{_q(m)},{_q(desc)},"
                         + ",".join(_nvprof_field(kind, x) for x in stats))
    return "\n".join(lines) + "\n"


def _ncu_values(la: Launched) -> dict[str, float]:
    k = la.kernel
    pw = k.per_warp
    warps = k.blocks * math.ceil(k.threads_per_block / 32)
    m = _counters(la)
    glob, l2, l1 = pw.get("global", 0.0), pw.get("l2", 0.0), pw.get("l1", 0.0)
    gmem = glob + l2 + l1
    spr = SECTORS_PER_REQUEST_COAL if k.coalesced else SECTORS_PER_REQUEST_UNCOAL
    st = glob * k.store_share
    ld = gmem - st
    st, ld = round(st * warps) / warps, round(ld * warps) / warps  # whole requests over the grid, as _counters
    return {
        "launch__grid_size": k.blocks, "launch__block_size": k.threads_per_block,
        "smsp__inst_executed.sum": m["inst_executed"],
        "smsp__inst_executed_pipe_fma.sum": pw.get("fp", 0.0) * warps,
        "smsp__inst_executed_pipe_alu.sum": (pw.get("int", 0.0) + pw.get("alu", 0.0)) * warps,
        "smsp__inst_executed_pipe_xu.sum": pw.get("sfu", 0.0) * warps,
        "smsp__inst_executed_pipe_fp64.sum": pw.get("dp", 0.0) * warps,
        "smsp__inst_executed_op_global_ld.sum": ld * warps,
        "smsp__inst_executed_op_global_st.sum": st * warps,
        "smsp__inst_executed_op_shared_ld.sum": pw.get("shared", 0.0) * warps,
        "l1tex__t_sector_hit_rate.pct": 100.0 * l1 / gmem if gmem else 0.0,
        "lts__t_sector_hit_rate.pct": 100.0 * l2 / (glob + l2) if glob + l2 else 0.0,
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": ld * spr * warps,
        "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": ld * warps,
        "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum.pct_of_peak_sustained_elapsed": 2.5,
        "sm__warps_active.avg.pct_of_peak_sustained_active": 100.0 * m["achieved_occupancy"],
        "sm__warps_active.avg.per_cycle_active": m["achieved_occupancy"] * la.max_warps_per_sm,
        "gpu__time_duration.sum": la.time_s,
        "sm__cycles_elapsed.avg.per_second": la.core_mhz * 1e6,
        "gpc__cycles_elapsed.avg.per_second": la.core_mhz * 1e6,
        "dram__cycles_elapsed.avg.per_second": la.mem_mhz * 1e6,
        "dram__bytes.sum.per_second": m["gld_throughput"],
    }


#: ncu's unit of each metric of the stand-in (as ncu 2022.3 prints them, tests/data/profilers/ncu_2022.3_*)
_NCU_UNITS = {"launch__grid_size": "", "launch__block_size": "", "l1tex__t_sector_hit_rate.pct": "%",
              "lts__t_sector_hit_rate.pct": "%", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "sector",
              "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": "request",
              "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum.pct_of_peak_sustained_elapsed": "%",
              "sm__warps_active.avg.pct_of_peak_sustained_active": "%", "sm__warps_active.avg.per_cycle_active": "warp"}


def _ncu_scaled(metric: str, v: float) -> tuple[str, float]:
    """(unit, value) as ncu prints the metric: times and clocks scaled (``usecond``, ``cycle/nsecond``),
    throughputs in decimal byte multiples, counts in ``inst``."""
    table = {"gpu__time_duration.sum": _NCU_TIME, "dram__bytes.sum.per_second": _NCU_THROUGHPUT}.get(metric)
    if table:
        unit, f = _scale(v, table)
        return unit, v / f
    if metric.endswith("cycles_elapsed.avg.per_second"):
        return ("cycle/nsecond", v / 1e9) if v >= 1e9 else ("cycle/usecond", v / 1e6)
    return _NCU_UNITS.get(metric, "inst"), v


_NCU_HEAD = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Kernel Time", "Context", "Stream"]


def _ncu_launch_fields(i: int, la: Launched) -> list[str]:
    return [str(i), "812", "app", "127.0.0.1", la.kernel.name + "(float *, int)", "2022-May-10 20:02:12", "1", "7"]


def ncu_details_csv(launches: Sequence[Launched]) -> str:
    """``ncu --csv --metrics ...`` (details page) as ncu 2022.3 writes it: columns of
    tests/data/profilers/ncu_2022.3_details_*.csv, every field quoted, the metrics in section "Command line
    profiler metrics" (a string of the ncu 2022.3 binary) with their names; a metric row ends after its
    value (``...,"Metric Value",``: the three Rule columns left out); values with 2 decimals, counts whole."""
    out = [",".join(_q(h) for h in _NCU_HEAD + ["Section Name", "Metric Name", "Metric Unit", "Metric Value",
                                                   "Rule Name", "Rule Type", "Rule Description"])]
    for i, la in enumerate(launches):
        for metric, v in _ncu_values(la).items():
            if metric in ("gpc__cycles_elapsed.avg.per_second", "dram__bytes.sum.per_second",
                          "sm__warps_active.avg.pct_of_peak_sustained_active",
                          "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum.pct_of_peak_sustained_elapsed"):
                continue  # not asked for with --metrics
            unit, x = _ncu_scaled(metric, v)
            value = str(int(x)) if float(x).is_integer() else f"{x:.2f}"
            out.append(",".join(_q(f) for f in _ncu_launch_fields(i, la) + ["Command line profiler metrics", metric,
                                                                            unit, value]) + ",")
    return "\n".join(out) + "\n"


def ncu_raw_csv(launches: Sequence[Launched], device_name: str) -> str:
    """``ncu --csv --page raw`` as ncu 2022.3 writes it (tests/data/profilers/ncu_2022.3_raw_*.csv): one row
    per launch, metric columns in name order, a units row of quoted fields under the header (one unit per
    column, scaled to the column's largest value), values with 6 decimals (launch sizes whole), the board's
    name and SM count among the metrics."""
    vals = [_ncu_values(la) for la in launches]
    device = {"device__attribute_display_name": [device_name] * len(launches),
              "device__attribute_multiprocessor_count": [str(la.sm_count) for la in launches]}
    metrics = sorted(set(vals[0]) | set(device))
    units, cols = [], []
    for m in metrics:
        if m in device or m.startswith("launch__"):
            units.append("")
            cols.append(device[m] if m in device else [str(int(v[m])) for v in vals])
        else:
            top = max(v[m] for v in vals)
            unit, x = _ncu_scaled(m, top)
            f = top / x if x else 1.0
            units.append(unit)
            cols.append([f"{v[m] / f:.6f}" for v in vals])
    lines = [",".join(_q(h) for h in _NCU_HEAD + metrics), ",".join(_q(u) for u in [""] * len(_NCU_HEAD) + units)]
    for i, la in enumerate(launches):
        lines.append(",".join(_q(x) for x in _ncu_launch_fields(i, la) + [c[i] for c in cols]))
    return "\n".join(lines) + "\n"
