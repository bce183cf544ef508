"""Hidden timing physics of the virtual GPU: how long one launch of a workload takes.

This is deliberately *not* the MWP/CWP model the toolkit fits: every SM round is bounded by issue
throughput, per-pipe throughput, the dependency chains of one warp (latency / ILP), DRAM and L2
bandwidth (shared by the active SMs), and a memory-level-parallelism limit (outstanding requests per SM),
and the bounds are combined with a soft maximum (p-norm) so regime changes are smooth, as on hardware.
DRAM latency in core cycles follows ``a * f_core / f_mem + b`` (the form Wang & Chu measured, paper
001) with hidden a, b; bandwidth scales with the memory clock.

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

    def dram_latency_cycles(self, core_mhz: float, mem_mhz: float, default_ratio: float) -> float:
        """DRAM round-trip latency in core cycles at (core_mhz, mem_mhz)."""
        return self.dram_lat_a * (core_mhz / mem_mhz) / default_ratio + self.dram_lat_b


def _softmax(vals: list[float], p: float) -> float:
    m = max(vals)
    if m <= 0:
        return 0.0
    return m * sum((v / m) ** p for v in vals if v > 0) ** (1.0 / p)


def kernel_time_s(tp: TimingPhysics, per_warp: Mapping[str, float], launch: Launch, traits: Mapping[str, Any],
                  core_mhz: float, mem_mhz: float, default_core_mhz: float, default_mem_mhz: float) -> float:
    """True execution time of one launch, s.

    ``per_warp``: per-warp dynamic instruction counts by class; ``launch``: grid shape and active SMs;
    ``traits``: ``ilp`` (independent chains per thread), ``coalesced``, ``dependent_loads``.
    """
    total = sum(per_warp.values())
    if total <= 0:
        return tp.launch_overhead_s
    warps_per_block = -(-launch.threads_per_block // 32)
    blocks_per_sm = launch.blocks / launch.active_sms
    resident_blocks = max(1, min(tp.max_blocks_per_sm, tp.max_warps_per_sm // warps_per_block))
    rounds = math.ceil(blocks_per_sm / resident_blocks - 1e-9)
    n_res = min(blocks_per_sm, resident_blocks) * warps_per_block  # warps resident per SM in a round
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
        tx = 1.0 if coalesced else tp.uncoalesced_transactions
        bytes_round = n_res * dram_acc * 128.0 * (1.0 if coalesced else tx * 32.0 / 128.0)
        bw_core_cycle = tp.dram_bytes_per_mem_cycle * tp.dram_efficiency * (mem_mhz / core_mhz)
        bounds.append(bytes_round * launch.active_sms / bw_core_cycle)
        # memory-level parallelism: at most max_outstanding requests in flight per SM
        reqs = n_res * dram_acc * tx
        bounds.append(reqs * dram_lat / tp.max_outstanding_per_sm)
    l2_acc = per_warp.get("l2", 0.0)
    if l2_acc and tp.l2_bytes_per_cycle > 0:
        bounds.append(n_res * l2_acc * 128.0 * launch.active_sms / tp.l2_bytes_per_cycle)
    cycles = rounds * _softmax(bounds, tp.softmax_p)
    return cycles / (core_mhz * 1e6) + tp.launch_overhead_s
