"""Timing microbenchmarks of a campaign (role ``timing``): latency, bandwidth, departure delay, issue rate.

They give :func:`calib.fit.timing.fit_timing` what it needs to fit the hardware parameters of the
MWP/CWP and Wang & Chu timing models from kernel times alone (the campaign logs one mean kernel time
per measurement window):

``lat_<level>/p<passes>[@<core>/<mem>]``
    pointer chase (``pchase_l1``, ``pchase_l2``, ``pchase_dram``, ``pchase_shared``), one warp. Two
    chain lengths (passes) per level: the time difference divided by the difference in loads is the
    latency, free of launch overhead, cold first pass and the shared-memory copy loop. The DRAM chase
    also runs at a few (core, memory) clock pairs with different ratios on DVFS devices, which gives
    ``dm_lat = a * fc/fm + b`` (Wang & Chu eq. 4).
``dep_<coal|uncoal>_r<reqs>/<sm1|all>/w<warps>``
    departure-delay burst (Wang & Chu eqs. 2-3): every warp issues ``reqs`` independent loads (one
    128-byte transaction each when coalesced, 32 sector transactions when not). On one
    SM the slope of time vs transactions per SM is the SM's departure delay (Hong's
    Departure_del_coal / _uncoal); on all SMs it is the SM's share of the DRAM service time.
``lat_inst/w1``
    one warp running one chain of dependent FP32 FMAs: the dependent-issue latency.
``bw_stream/w<warps>``
    streaming bandwidth with 512-byte warp requests: DRAM service time per 128-byte transaction.
``issue_mix/w<warps>``
    an issue-bound mix of FP32, integer and logic chains at full occupancy: cycles per warp instruction.
``rounds_dram/r<rounds>``
    the DRAM stream kernel cut short (8 coalesced loads per warp, SAXPY-like), 256-thread
    blocks filling every SM, over 1 and over ``ROUNDS`` rounds of resident blocks: every other kernel of
    the campaign runs one round per SM, so this is the one measurement of whether a memory-bound
    round's fill latency is paid every round or only once (Wang & Chu's eq. 6 vs a queue kept full).

The names are for people: what each benchmark measures is its ``kind`` with the kind's parameters
(:data:`microbench.spec.KINDS`), written into the manifest's plan, which is what the fitter reads (it
never imports this module). The per-warp counts in the
manifest come from the kernels' count models. Every benchmark runs once (no repeats): the event
timer's noise is small against the differences the fit uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from microbench.devices.base import DeviceInfo, Workload
from microbench.kernels import catalog
from microbench.spec import Benchmark, CampaignSpec

#: chain lengths (passes over the chain) of the two runs per latency level
CHASE_PASSES: dict[str, tuple[int, int]] = {"l1": (8, 32), "l2": (1, 4), "shared": (8, 32)}
#: DRAM chase: one pass over a 64 Mi-byte random chain (65536 loads per pass; the cold first pass is
#: served by DRAM like the rest, so one length per clock pair suffices)
DRAM_CHASE = {"footprint_bytes": 1 << 28, "stride_bytes": 4096, "pattern": "random", "passes": 1}
#: loads per warp of the departure bursts: enough that the queue, not the issue rate, sets the slope
DEPARTURE_REQS = {"coal": 64, "uncoal": 8}
#: bytes one bw_stream warp request moves (16-byte vector loads)
BW_STREAM_BYTES_PER_REQUEST = 512
#: rounds of resident blocks per SM of the long multi-round stream, and its kernel parameters (a few
#: loads per warp, as SAXPY: the fill of a round is then a large part of it)
ROUNDS = 16
ROUNDS_KERNEL_PARAMS = {"iters": 1, "unroll": 4, "ilp": 1}


@dataclass(frozen=True, kw_only=True)
class TimingBenchmark(Benchmark):
    """A timing benchmark: its workload also tells the virtual GPU which latency/queue physics applies
    (traits, from its ``kind``)."""

    def workload(self, info: DeviceInfo) -> Workload:
        w = super().workload(info)
        extra = _timing_traits(self.kind, self.kernel, w.params)
        return replace(w, traits={**dict(w.traits), **extra}) if extra else w


def _timing_traits(kind: str, kernel: str, p: Mapping[str, Any]) -> dict[str, Any]:
    if kind == "pchase":
        elems = max(1, int(p["footprint_bytes"]) // int(p["stride_bytes"]))
        loop_loads = float(p["iters"]) * float(p["unroll"])
        out: dict[str, Any] = {"timing_kind": "pchase", "elems": float(elems), "loop_loads": loop_loads,
                               "stride_bytes": float(p["stride_bytes"]), "pattern": p["pattern"],
                               "footprint_bytes": float(p["footprint_bytes"])}
        if kernel == "pchase_shared":
            out["copy_trips"] = float(int(p["footprint_bytes"]) // 4)
            out["trips"] = float(p["iters"])
        else:
            out["trips"] = 2.0 * float(p["iters"])
        return out
    if kind == "departure":
        trip = catalog.get(kernel).per_trip(p)
        return {"timing_kind": "departure", "reqs": float(p["reqs"]), "lane_stride": int(p["lane_stride"]),
                "iters": float(p["iters"]), "trip_insts": float(sum(trip.values()))}
    if kind == "bw_stream":
        return {"tx_per_access": BW_STREAM_BYTES_PER_REQUEST / catalog.LINE_BYTES}
    return {}


def _dvfs_latency_pairs(info: DeviceInfo) -> list[tuple[float, float]]:
    """Clock pairs for the DRAM chase besides the default: the widest spread of core/memory ratios."""
    core = sorted(info.supported_clocks.get("core_mhz", []))
    mem = sorted(info.supported_clocks.get("mem_mhz", []))
    if len(core) < 2 and len(mem) < 2:
        return []
    cands = {(c, m) for c in (core[0], core[-1]) for m in (mem[0], mem[-1])}
    cands.discard((info.default_core_mhz, info.default_mem_mhz))
    return sorted(cands, key=lambda cm: cm[0] / cm[1])


def timing_benchmarks(info: DeviceInfo, spec: CampaignSpec) -> list[Benchmark]:
    """The timing microbenchmarks for a device (role ``timing``), in run order (module docstring)."""
    units = set(info.extra.get("units", ()))
    max_w = int(info.extra.get("max_warps_per_sm", 32))
    out: list[Benchmark] = []

    def add(name: str, kernel: str, kind: str, params: dict[str, Any], stresses: str, warps: int = 1,
            bps: int = 1, active: int | None = None, clocks: tuple[float, float] | None = None,
            **kind_params: Any) -> None:
        out.append(TimingBenchmark(name=name, kernel=kernel, role="timing", stresses=stresses, kind=kind,
                                   kind_params=kind_params, params=params, warps_per_sm=warps, blocks_per_sm=bps,
                                   active_sms=active, clocks=clocks, repeats=1))

    # latency: one warp on one SM
    add("lat_dram/p1", "pchase_dram", "pchase", dict(DRAM_CHASE), "global", active=1, level="dram",
        passes=DRAM_CHASE["passes"])
    if spec.dvfs_points > 0:
        for core, mem in _dvfs_latency_pairs(info):
            add(f"lat_dram/p1@{core:g}/{mem:g}", "pchase_dram", "pchase", dict(DRAM_CHASE), "global", active=1,
                clocks=(core, mem), level="dram", passes=DRAM_CHASE["passes"])
    for level, kernel in (("l2", "pchase_l2"), ("l1", "pchase_l1"), ("shared", "pchase_shared")):
        if level != "shared" and level not in units:
            continue  # the device has no such cache: the chase would measure DRAM again
        for passes in CHASE_PASSES[level]:
            add(f"lat_{level}/p{passes}", kernel, "pchase", {"passes": passes}, level if level != "l1" else "l1",
                active=1, level=level, passes=passes)
    # dependent-issue latency: one warp, one FMA chain per thread
    add("lat_inst/w1", "fp32_fma", "inst_latency", {"ilp": 1, "iters": 256}, "fp", active=1)
    # departure delay: bursts of 4, 8 and 16 warps on one SM and on all SMs
    levels = [w for w in (4, 8, 16) if w <= max_w]
    for access, lane in (("coal", 1), ("uncoal", 32)):
        reqs = DEPARTURE_REQS[access]
        for where, active in (("sm1", 1), ("all", None)):
            if access == "uncoal" and where == "all":
                continue  # the chip's share comes from the coalesced bursts and the stream
            for w in levels:
                add(f"dep_{access}_r{reqs}/{where}/w{w}", "departure_delay", "departure",
                    {"reqs": reqs, "lane_stride": lane, "footprint_bytes": 1 << 30}, "global", warps=w,
                    bps=max(1, w // 8), active=active, access=access, where=where, reqs=reqs)
    # streaming bandwidth and issue rate at full occupancy
    w = min(32, max_w)
    add(f"bw_stream/w{w}", "bw_stream", "bw_stream", {"iters": 256}, "global", warps=w, bps=max(1, w // 8))
    # rounds: 8-warp blocks, as many resident per SM as fit, 1 and ROUNDS rounds of them
    resident = max(1, max_w // 8)
    for r in (1, ROUNDS):
        add(f"rounds_dram/r{r}", "dram", "rounds", dict(ROUNDS_KERNEL_PARAMS), "global", warps=8 * resident * r,
            bps=resident * r, rounds=r)
    w = max_w
    add(f"issue_mix/w{w}", "mix", "issue_mix", {"fp": 2, "int": 2, "alu": 2, "ilp": 4, "iters": 256}, "mixed",
        warps=w, bps=max(1, w // 8))
    return out


__all__ = [
    "BW_STREAM_BYTES_PER_REQUEST",
    "CHASE_PASSES",
    "DEPARTURE_REQS",
    "DRAM_CHASE",
    "ROUNDS",
    "TimingBenchmark",
    "measure_times",
    "timing_benchmarks",
]


def measure_times(device: Any, benchmarks: list[Benchmark], window_s: float = 0.5, repeats: int = 1) -> Any:
    """Kernel-time rows of ``benchmarks`` on ``device`` without a session (tests, benchmarks).

    One row per run with the samples-table columns the timing fit reads: ``workload``, ``role``,
    ``stresses``, ``repeat``, ``time_s`` (the device's event-timed mean), ``core_mhz``, ``mem_mhz``,
    ``active_sms``, ``blocks``, ``threads_per_block``, ``warps_per_sm``, ``cnt_<class>`` and, from the
    kernel parameters, ``ilp``. Clocks are set per benchmark and reset after it.
    """
    import pandas as pd

    rows = []
    info = device.info
    for b in benchmarks:
        w = b.workload(info)
        for r in range(repeats):
            if b.clocks:
                device.set_clocks(*b.clocks)
            res = device.run(w, window_s)
            core, mem = device.clocks()
            if b.clocks:
                device.set_clocks(None, None)
            la = w.launch
            row = {"workload": b.name, "role": b.role, "stresses": b.stresses, "repeat": r,
                   "time_s": res.kernel_time_s, "core_mhz": core, "mem_mhz": mem, "active_sms": la.active_sms,
                   "blocks": la.blocks, "threads_per_block": la.threads_per_block, "warps_per_sm": la.warps_per_sm}
            if "ilp" in w.params:
                row["ilp"] = float(w.params["ilp"])
            row.update({f"cnt_{c}": float(v) for c, v in w.per_warp.items()})
            rows.append(row)
    df = pd.DataFrame(rows)
    cnt = [c for c in df.columns if c.startswith("cnt_")]
    df[cnt] = df[cnt].fillna(0.0)
    return df
