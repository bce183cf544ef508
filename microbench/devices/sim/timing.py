"""Hidden timing physics of the virtual GPU: how long one launch of a workload takes.

This is deliberately *not* the MWP/CWP model the toolkit fits: every SM round is bounded by issue
throughput, per-pipe throughput, the dependency chains of one warp (latency / ILP), DRAM and L2
bandwidth (shared by the active SMs), and a memory-level-parallelism limit (outstanding requests per SM),
and the bounds are combined with a soft maximum (p-norm) so regime changes are smooth, as on hardware.
DRAM latency in core cycles follows ``a * f_core / f_mem + b`` (the form Wang & Chu measured, paper
001) with hidden a, b; bandwidth scales with the memory clock.

The latency, bandwidth and departure-delay microbenchmarks (workloads whose traits carry a
``timing_kind``, set by :mod:`microbench.timing_plan`) get their own, more detailed physics:

``pchase``
    one warp follows a pointer chain. Every load waits for the previous one, at the latency of the
    level that serves it: L1, L2, shared memory, or DRAM, whose latency is ``a * fc/fm + b`` for a
    random chain (each access opens a new DRAM row); a strided chain that stays within an open row
    saves part of the fixed latency, and a working set beyond the TLB reach adds a page walk. The
    warm-up pass misses to the next level for its first trip over the chain (cold lines); the shared
    chase first copies the chain into shared memory. Each trip of the loop adds a branch bubble the
    chase cannot hide, and every launch pays the launch overhead. The kernel time is all the fitter sees.
``departure``
    every resident warp issues ``reqs`` independent loads at once. The first returns after the DRAM
    latency, the rest drain at the slowest of: the SM's own departure delay (outstanding-request
    limit, plus the coalescer replay of uncoalesced requests), the SM's share of the chip's DRAM
    service time, and the issue rate (Wang & Chu eqs. 2-3), blended by the same soft maximum.
``bw_stream`` (trait ``tx_per_access``)
    the general model with several 128-byte transactions per warp request (16-byte vector loads).

Nothing here is visible to the fitter: the campaign only logs the measured (noisy) kernel times.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from microbench.devices.base import Launch


@dataclass(frozen=True)
class TimingPhysics:
    """Hidden timing parameters of a virtual GPU (cycles are core cycles unless stated)."""

    warp_issue_per_cycle: float            # warp instructions issued per cycle per SM
    max_warps_per_sm: int
    max_blocks_per_sm: int
    throughput: Mapping[str, float]        # warp instructions per cycle per SM, per instruction class
    latency: Mapping[str, float]           # dependent-issue latency per class, cycles
    dram_lat_a: float                      # DRAM latency = a * fc/fm + b  (cycles)
    dram_lat_b: float
    dram_bytes_per_mem_cycle: float        # peak DRAM bytes per memory-clock cycle (chip)
    l2_bytes_per_cycle: float              # peak L2 bytes per core cycle (chip); 0 = no L2
    l2_lat: float
    l1_lat: float
    shared_lat: float
    max_outstanding_per_sm: float          # memory requests in flight per SM (MLP limit)
    uncoalesced_transactions: float = 32.0
    launch_overhead_s: float = 4e-6
    softmax_p: float = 6.0
    dram_efficiency: float = 0.88          # achievable fraction of peak DRAM bandwidth
    extra: Mapping[str, Any] = field(default_factory=dict)
    # -- details only the latency/bandwidth/departure microbenchmarks exercise ------------------
    uncoal_issue_cycles: float | None = None   # coalescer replay per uncoalesced transaction, SM-local
                                               # (core cycles); None: 10 / warp_issue_per_cycle
    sector_bytes: float = 32.0                 # bytes one uncoalesced transaction moves
    dram_row_bytes: float = 2048.0             # DRAM row: a strided chain inside an open row hits it
    row_hit_saving: float = 0.3                # share of the fixed DRAM latency b a row hit saves
    tlb_reach_bytes: float = float(1 << 31)    # working sets beyond this miss the TLB
    tlb_miss_cycles: float = 260.0             # page walk, core cycles
    chase_trip_cycles: float = 2.0             # branch bubble per loop trip a dependent chase cannot hide
    kernel_fixed_cycles: float = 200.0         # prologue, clock reads, final store of a latency kernel
    #: threads the hardware schedules together (64: an AMD wave64); figures above are per 32-thread warp
    #: (calib.core.arch), and a block occupies whole hardware warps
    warp_size: int = 32

    def uncoal_issue(self) -> float:
        """Coalescer replay per uncoalesced transaction, core cycles."""
        return self.uncoal_issue_cycles if self.uncoal_issue_cycles is not None else 10.0 / self.warp_issue_per_cycle

    def dram_latency_cycles(self, core_mhz: float, mem_mhz: float, default_ratio: float) -> float:
        """DRAM round-trip latency in core cycles at (core_mhz, mem_mhz)."""
        return self.dram_lat_a * (core_mhz / mem_mhz) / default_ratio + self.dram_lat_b


def occupied_warps(threads_per_block: int, warp_size: int = 32) -> int:
    """32-thread warps a block occupies: whole hardware warps (a 32-thread block takes a wave64, i.e. two)."""
    return -(-int(threads_per_block) // warp_size) * (warp_size // 32)


def _residency(tp: TimingPhysics, launch: Launch) -> tuple[int, float]:
    """Rounds of resident blocks per SM, and the 32-thread warps resident per SM in a round."""
    warps_per_block = occupied_warps(launch.threads_per_block, tp.warp_size)
    blocks_per_sm = launch.blocks / launch.active_sms
    resident_blocks = max(1, min(tp.max_blocks_per_sm, tp.max_warps_per_sm // warps_per_block))
    return math.ceil(blocks_per_sm / resident_blocks - 1e-9), min(blocks_per_sm, resident_blocks) * warps_per_block


def _softmax(vals: list[float], p: float) -> float:
    m = max(vals)
    if m <= 0:
        return 0.0
    return m * sum((v / m) ** p for v in vals if v > 0) ** (1.0 / p)


def dram_transactions(tp: TimingPhysics, traits: Mapping[str, Any]) -> tuple[float, float]:
    """DRAM transactions per warp request and bytes per transaction: 1 line when coalesced, one sector per
    lane when not, or several lines for wide vector loads (trait ``tx_per_access``, bw_stream; a kernel's
    own trait ``bytes_per_access``: wide coalesced requests move several lines)."""
    coalesced = bool(traits.get("coalesced", True))
    wide = max(1.0, float(traits.get("bytes_per_access", 128.0)) / 128.0)
    tx = float(traits.get("tx_per_access", wide if coalesced else tp.uncoalesced_transactions))
    return tx, (128.0 if coalesced else tp.sector_bytes)


def dram_busy_share(tp: TimingPhysics, per_warp: Mapping[str, float], launch: Launch, traits: Mapping[str, Any],
                    time_s: float, mem_mhz: float) -> float:
    """Share of the time (0..1) the DRAM is busy reading or writing while one launch of ``time_s`` seconds
    runs: the bytes it moves (every warp's global and local accesses) against what the DRAM moves in that
    time at its sustainable rate (peak bytes per memory cycle x ``dram_efficiency``); what NVML's memory
    utilization reports."""
    dram_acc = per_warp.get("global", 0.0) + per_warp.get("local", 0.0)
    if dram_acc <= 0 or time_s <= 0:
        return 0.0
    tx, tx_bytes = dram_transactions(tp, traits)
    warps = occupied_warps(launch.threads_per_block, tp.warp_size) * launch.blocks
    moved = warps * dram_acc * tx * tx_bytes
    return min(1.0, moved / (time_s * tp.dram_bytes_per_mem_cycle * tp.dram_efficiency * mem_mhz * 1e6))


def kernel_time_s(tp: TimingPhysics, per_warp: Mapping[str, float], launch: Launch, traits: Mapping[str, Any],
                  core_mhz: float, mem_mhz: float, default_core_mhz: float, default_mem_mhz: float) -> float:
    """True execution time of one launch, s.

    ``per_warp``: per-warp dynamic instruction counts by class; ``launch``: grid shape and active SMs;
    ``traits``: ``ilp`` (independent chains per thread), ``coalesced``, ``dependent_loads``.
    """
    total = sum(per_warp.values())
    if total <= 0:
        return tp.launch_overhead_s
    kind = traits.get("timing_kind")
    if kind == "pchase":
        return _chase_cycles(tp, per_warp, traits, core_mhz, mem_mhz, default_core_mhz, default_mem_mhz) / (
            core_mhz * 1e6) + tp.launch_overhead_s
    if kind == "departure":
        return _departure_cycles(tp, per_warp, launch, traits, core_mhz, mem_mhz, default_core_mhz,
                                 default_mem_mhz) / (core_mhz * 1e6) + tp.launch_overhead_s
    rounds, n_res = _residency(tp, launch)
    ilp = max(1.0, float(traits.get("ilp", 1.0)))
    coalesced = bool(traits.get("coalesced", True))
    dependent = bool(traits.get("dependent_loads", False))

    dram_lat = tp.dram_latency_cycles(core_mhz, mem_mhz, default_core_mhz / default_mem_mhz)
    mem_lat = {"global": dram_lat, "local": dram_lat, "l2": tp.l2_lat, "l1": tp.l1_lat,
               "tex": tp.latency.get("tex", tp.l1_lat), "const": tp.latency.get("const", 8.0),
               "shared": tp.shared_lat}

    bounds: list[float] = []
    # issue bound of the SM for one round
    bounds.append(n_res * total / tp.warp_issue_per_cycle)
    # per-pipe throughput bounds
    for cls, n in per_warp.items():
        thr = tp.throughput.get(cls)
        if thr and n:
            bounds.append(n_res * n / thr)
    # dependency chain of one warp: compute classes chain at their latency / ILP; memory loads are
    # either dependent (pointer chase: full latency each) or overlapped up to the ILP
    chain = 0.0
    for cls, n in per_warp.items():
        lat = mem_lat.get(cls, tp.latency.get(cls, 4.0))
        chain += n * lat / (1.0 if (dependent and cls in mem_lat) else ilp)
    bounds.append(chain)
    # DRAM bandwidth shared by all active SMs, in core cycles for this SM's round
    dram_acc = per_warp.get("global", 0.0) + per_warp.get("local", 0.0)
    if dram_acc:
        tx, tx_bytes = dram_transactions(tp, traits)
        bytes_round = n_res * dram_acc * tx * tx_bytes
        bw_core_cycle = tp.dram_bytes_per_mem_cycle * tp.dram_efficiency * (mem_mhz / core_mhz)
        bounds.append(bytes_round * launch.active_sms / bw_core_cycle)
        # memory-level parallelism: at most max_outstanding requests in flight per SM
        reqs = n_res * dram_acc * tx
        bounds.append(reqs * dram_lat / tp.max_outstanding_per_sm)
        if not coalesced:  # the coalescer replays an uncoalesced request once per transaction
            bounds.append(reqs * tp.uncoal_issue())
    l2_acc = per_warp.get("l2", 0.0)
    if l2_acc and tp.l2_bytes_per_cycle > 0:
        bounds.append(n_res * l2_acc * 128.0 * launch.active_sms / tp.l2_bytes_per_cycle)
    cycles = rounds * _softmax(bounds, tp.softmax_p)
    return cycles / (core_mhz * 1e6) + tp.launch_overhead_s


# -- latency and departure-delay microbenchmarks ---------------------------------------------------

def dram_chase_latency_cycles(tp: TimingPhysics, core_mhz: float, mem_mhz: float, default_core_mhz: float,
                              default_mem_mhz: float, stride_bytes: float = 4096.0, pattern: str = "random",
                              footprint_bytes: float = float(1 << 28)) -> float:
    """Latency of one dependent DRAM access of a pointer chase, core cycles.

    A random chain opens a new row on every access (``a * fc/fm + b``); a strided chain whose stride
    is smaller than a row hits the open row for ``1 - stride/row`` of its accesses and saves
    ``row_hit_saving`` of the fixed latency on those; working sets beyond the TLB reach add a page
    walk for the share of pages that miss.
    """
    lat = tp.dram_latency_cycles(core_mhz, mem_mhz, default_core_mhz / default_mem_mhz)
    if pattern == "stride" and stride_bytes < tp.dram_row_bytes:
        lat -= (1.0 - stride_bytes / tp.dram_row_bytes) * tp.row_hit_saving * tp.dram_lat_b
    if footprint_bytes > tp.tlb_reach_bytes:
        lat += (1.0 - tp.tlb_reach_bytes / footprint_bytes) * tp.tlb_miss_cycles
    return lat


def _level_latency(tp: TimingPhysics, level: str, dram: float) -> float:
    if level in ("global", "local"):
        return dram
    if level == "l2":
        return tp.l2_lat if tp.l2_lat > 0 else dram
    if level == "l1":
        return tp.l1_lat if tp.l1_lat > 0 else _level_latency(tp, "l2", dram)
    if level == "shared":
        return tp.shared_lat
    raise ValueError(f"no latency for level {level!r}")


def _cold_level(tp: TimingPhysics, level: str) -> str:
    """Where a first (cold) touch of a line of ``level`` is served."""
    if level == "l1":
        return "l2" if tp.l2_lat > 0 else "global"
    return "global" if level == "l2" else level


def _chase_cycles(tp: TimingPhysics, per_warp: Mapping[str, float], traits: Mapping[str, Any], core_mhz: float,
                  mem_mhz: float, default_core_mhz: float, default_mem_mhz: float) -> float:
    """Cycles of one launch of a pointer-chase kernel (one warp; see module docstring)."""
    # the level is where the device serves the chain: the count model already placed the loads at a
    # level the device has (l1 -> l2 -> global on GPUs without caches)
    level = max(("shared", "l1", "l2", "global", "local"), key=lambda c: per_warp.get(c, 0.0))
    dram = dram_chase_latency_cycles(tp, core_mhz, mem_mhz, default_core_mhz, default_mem_mhz,
                                     float(traits.get("stride_bytes", 4096.0)), str(traits.get("pattern", "random")),
                                     float(traits.get("footprint_bytes", 1 << 28)))
    lat = _level_latency(tp, level, dram)
    elems = float(traits["elems"])
    loop_loads = float(traits["loop_loads"])      # dependent loads per loop (warm-up and timed pass)
    trips = float(traits["trips"])                # loop trips in total
    if level == "shared":
        # one thread copies the chain into shared memory first: independent read-only loads, so the
        # copy streams at one trip per few issue slots after the first load's latency
        copy_trips = float(traits.get("copy_trips", 0.0))
        per_trip = 9.0 / min(1.0, tp.warp_issue_per_cycle)
        warm = copy_trips * per_trip + tp.latency.get("tex", tp.l1_lat or 100.0)
        cycles = warm + loop_loads * lat
    else:
        cold = _level_latency(tp, _cold_level(tp, level), dram)
        first = min(elems, loop_loads)
        warm = first * cold + (loop_loads - first) * lat
        cycles = warm + loop_loads * lat
    return cycles + trips * tp.chase_trip_cycles + tp.kernel_fixed_cycles


def departure_delays(tp: TimingPhysics, core_mhz: float, mem_mhz: float, default_core_mhz: float,
                     default_mem_mhz: float, coalesced: bool, active_sms: int) -> tuple[float, float]:
    """(SM-local departure delay, SM's share of the chip's DRAM service time) per transaction, core cycles."""
    lat = tp.dram_latency_cycles(core_mhz, mem_mhz, default_core_mhz / default_mem_mhz)
    local = lat / tp.max_outstanding_per_sm
    if not coalesced:
        local = _softmax([local, tp.uncoal_issue()], tp.softmax_p)
    tx_bytes = 128.0 if coalesced else tp.sector_bytes
    chip = tx_bytes / (tp.dram_bytes_per_mem_cycle * tp.dram_efficiency) * (core_mhz / mem_mhz) * active_sms
    return local, chip


def _departure_cycles(tp: TimingPhysics, per_warp: Mapping[str, float], launch: Launch, traits: Mapping[str, Any],
                      core_mhz: float, mem_mhz: float, default_core_mhz: float, default_mem_mhz: float) -> float:
    """Cycles of one launch of the departure-delay kernel (Wang & Chu eqs. 2-3 with a soft switch)."""
    reqs = float(traits["reqs"])
    coalesced = int(traits.get("lane_stride", 1)) == 1
    iters = max(1.0, float(traits.get("iters", 1)))
    tx = 1.0 if coalesced else tp.uncoalesced_transactions
    rounds, n_res = _residency(tp, launch)
    lat = tp.dram_latency_cycles(core_mhz, mem_mhz, default_core_mhz / default_mem_mhz)
    local, chip = departure_delays(tp, core_mhz, mem_mhz, default_core_mhz, default_mem_mhz, coalesced,
                                   launch.active_sms)
    n = n_res * reqs * tx
    # inter-arrival of eq. (2): the SM issues every warp's trip (the prologue runs before the burst)
    trip_insts = float(traits.get("trip_insts", sum(per_warp.values()) / iters))
    issue = n_res * trip_insts / tp.warp_issue_per_cycle
    per_trip = lat + _softmax([(n - 1.0) * local, (n - 1.0) * chip, issue], tp.softmax_p)
    return rounds * iters * per_trip + tp.kernel_fixed_cycles
