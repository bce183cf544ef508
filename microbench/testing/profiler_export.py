"""A stand-in profiler: nvprof and Nsight Compute CSV exports of kernels run on the virtual GPU.

What a user brings to ``calib import nvprof|ncu FILE --kernels``: application kernels profiled at one
or several (core, memory) clock pairs, one launch per row (nvprof ``--print-gpu-trace --csv`` with
``--metrics``/``--system-profiling on``) or per ID (ncu ``--csv`` details page). The counts are those
the kernel executes (per-warp counts x warps, as the profiler's counters sum them over the grid), the
time is the virtual GPU's measured kernel time (its event-timer noise included) and the clocks are what
the card ran at: the virtual GPU has no clock droop, so this double applies one -- requested core clocks
run up to ``droop`` lower at the top of the range (boost tables under load), with a small jitter -- and
the time is computed at the clocks actually run.

Nothing here is read by a fitter; it only writes files in the profilers' layouts.
"""

from __future__ import annotations

import csv
import io
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
APP_CLASSES = ("fp", "int", "alu", "sfu", "dp", "shared", "global", "l2", "l1")
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
    m["executed_ipc"] = tot * warps / min(launch.sm_count, k.blocks) / cycles
    m["sm_activity"] = 100.0 * min(launch.sm_count, k.blocks) / launch.sm_count
    return m


NVPROF_METRICS = ("inst_executed", "inst_fp_32", "inst_fp_64", "inst_integer", "inst_bit_convert", "inst_misc",
                  "inst_control", "flop_count_sp_special", "gld_transactions", "gst_transactions",
                  "gld_transactions_per_request", "gst_transactions_per_request", "shared_load_transactions",
                  "shared_store_transactions", "shared_load_transactions_per_request",
                  "shared_store_transactions_per_request", "dram_read_transactions", "dram_write_transactions",
                  "l2_read_transactions", "l2_write_transactions", "l2_tex_read_transactions",
                  "tex_cache_transactions", "achieved_occupancy", "executed_ipc", "sm_activity")


def _fmt(v: float) -> str:
    if float(v).is_integer() and abs(v) < 1e15:
        return str(int(v))
    return f"{v:.6g}"


def nvprof_trace_csv(launches: Sequence[Launched], device_name: str, pid: int = 4711) -> str:
    """``nvprof --print-gpu-trace --csv --system-profiling on --metrics ...`` output: banner lines,
    a header, a units row, one row per launch (duration in us, clocks in MHz)."""
    buf = io.StringIO()
    buf.write(f"==={pid}== NVPROF is profiling process {pid}, command: ./app\n")
    buf.write(f"==={pid}== Profiling application: ./app\n")
    buf.write(f"==={pid}== Profiling result:\n")
    head = ["Start", "Duration", "Grid X", "Grid Y", "Grid Z", "Block X", "Block Y", "Block Z",
            "Registers Per Thread", "SM Clock", "Memory Clock", "Device", "Context", "Stream", "Name",
            *NVPROF_METRICS]
    units = ["s", "us", "", "", "", "", "", "", "", "MHz", "MHz", "", "", "", "", *([""] * len(NVPROF_METRICS))]
    w = csv.writer(buf, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")
    w.writerow(head)
    w.writerow(units)
    t = 1.25
    for la in launches:
        k = la.kernel
        m = _counters(la)
        row = [f"{t:.6f}", f"{la.time_s * 1e6:.3f}", k.blocks, 1, 1, k.threads_per_block, 1, 1, 32,
               f"{la.core_mhz:.0f}", f"{la.mem_mhz:.0f}", f"{device_name} (0)", 1, 7, f"{k.name}(float*, int)",
               *[_fmt(m[x]) for x in NVPROF_METRICS]]
        w.writerow(row)
        t += la.time_s + 1e-5
    return buf.getvalue()


NCU_METRICS = (
    ("launch__grid_size", ""), ("launch__block_size", ""), ("smsp__inst_executed.sum", "inst"),
    ("smsp__inst_executed_pipe_fma.sum", "inst"), ("smsp__inst_executed_pipe_alu.sum", "inst"),
    ("smsp__inst_executed_pipe_xu.sum", "inst"), ("smsp__inst_executed_pipe_fp64.sum", "inst"),
    ("smsp__inst_executed_op_global_ld.sum", "inst"), ("smsp__inst_executed_op_global_st.sum", "inst"),
    ("smsp__inst_executed_op_shared_ld.sum", "inst"), ("l1tex__t_sector_hit_rate.pct", "%"),
    ("lts__t_sector_hit_rate.pct", "%"), ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "sector"),
    ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "request"),
    ("sm__warps_active.avg.per_cycle_active", "warp"), ("gpu__time_duration.sum", "usecond"),
    ("sm__cycles_elapsed.avg.per_second", "cycle/nsecond"), ("dram__cycles_elapsed.avg.per_second", "cycle/nsecond"),
)


def ncu_details_csv(launches: Sequence[Launched], device: str = "0", cc: str = "5.2") -> str:
    """``ncu --csv --metrics ...`` (details page): one line per (launch ID, metric)."""
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
    w.writerow(["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
                "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit", "Metric Value"])
    for i, la in enumerate(launches):
        k = la.kernel
        pw = k.per_warp
        warps = k.blocks * math.ceil(k.threads_per_block / 32)
        m = _counters(la)
        glob, l2, l1 = pw.get("global", 0.0), pw.get("l2", 0.0), pw.get("l1", 0.0)
        gmem = glob + l2 + l1
        spr = SECTORS_PER_REQUEST_COAL if k.coalesced else SECTORS_PER_REQUEST_UNCOAL
        st = glob * k.store_share
        ld = gmem - st
        vals = {
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
            "sm__warps_active.avg.per_cycle_active": m["achieved_occupancy"] * la.max_warps_per_sm,
            "gpu__time_duration.sum": la.time_s * 1e6,
            "sm__cycles_elapsed.avg.per_second": la.core_mhz / 1e3,
            "dram__cycles_elapsed.avg.per_second": la.mem_mhz / 1e3,
        }
        for metric, unit in NCU_METRICS:
            v = vals[metric]
            w.writerow([str(i), "812", "app", "127.0.0.1", k.name, "1", "7", f"({k.threads_per_block}, 1, 1)",
                        f"({k.blocks}, 1, 1)", device, cc, "Command line profiler metrics", metric, unit,
                        f"{v:,.4f}" if not float(v).is_integer() else f"{int(v):,}"])
    return buf.getvalue()
