"""The campaign's vocabulary: a campaign's sizes and timings (:class:`CampaignSpec`) and one benchmark
(:class:`Benchmark`), both built from keyword arguments.

The plan modules stand on this one (:mod:`microbench.timing_plan` declares the timing microbenchmarks,
:mod:`microbench.benchmarks` the power ones and the whole plan); nothing here imports them.

A benchmark's ``kind`` says what it measures and is written into the session manifest's plan with its
parameters (``describe``), so that no reader recovers it from the benchmark's name:

==================  ====================================================================================
kind                what it measures (its parameters in the manifest entry)
==================  ====================================================================================
``launch_only``     the launch-only kernel: kernel activation power, launch overhead
``unit``            one unit at one occupancy (the access rate sweep of IPP)
``fma_intensity``   FMAs per DRAM load (kernel parameter ``k``): the memory/compute mix
``sm_sweep``        constant total work on fewer SMs (the launch's ``active_sms``): active-SM scaling
``app_mix``         an application-like mix (held-out workloads, DVFS mixes)
``thermal_step``    heat to steady state, then cool (RC constants, Max_temp)
``pchase``          pointer chase at a memory ``level`` (dram, l2, l1, shared) over ``passes`` chains
``departure``       burst of ``reqs`` loads per warp, ``access`` coal|uncoal, ``where`` sm1|all SMs
``bw_stream``       streaming bandwidth with 512-byte warp requests
``rounds``          a short streaming kernel over ``rounds`` rounds of resident blocks per SM (1 or many):
                    whether a round's memory fill is paid every round or once (Wang & Chu's rounds)
``issue_mix``       issue-bound mix at full occupancy: cycles per warp instruction
``inst_latency``    one warp, one chain of dependent FP32 FMAs: dependent-issue latency
==================  ====================================================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from microbench.devices.base import DeviceInfo, Launch, Workload
from microbench.kernels import catalog

ROLES = ("idle_kernel", "unit", "sm_sweep", "thermal", "heldout", "dvfs", "timing")

#: benchmark kinds and the parameters each one declares (module docstring)
KINDS: dict[str, tuple[str, ...]] = {
    "launch_only": (), "unit": (), "fma_intensity": (), "sm_sweep": (), "app_mix": (),
    "thermal_step": (), "pchase": ("level", "passes"), "departure": ("access", "where", "reqs"),
    "bw_stream": (), "issue_mix": (), "inst_latency": (), "rounds": ("rounds",),
}
#: the timing microbenchmarks' kinds (role ``timing``)
TIMING_KINDS = ("pchase", "departure", "bw_stream", "issue_mix", "inst_latency", "rounds")
#: plan-entry keys a kind's parameters must not shadow
_ENTRY_KEYS = ("name", "kernel", "role", "stresses", "kind", "params", "launch", "per_warp", "clocks")

MEMORY_UNITS = frozenset({"tex", "l1", "l2", "global", "local"})


def place_memory(per_warp: Mapping[str, float], units: set[str]) -> dict[str, float]:
    """Move accesses to cache levels the device lacks down to the next level (l1 -> l2 -> global)."""
    out = dict(per_warp)
    for level, below in (("l1", "l2"), ("l2", "global"), ("tex", "global")):
        if level not in units and out.get(level):
            out[below] = out.get(below, 0.0) + out.pop(level)
    return {k: v for k, v in out.items() if v}


@dataclass(frozen=True, kw_only=True)
class CampaignSpec:
    """Sizes and timings of a campaign (times in s, temperatures in °C).

    Sweeps: ``warps_levels`` (occupancies of each unit kernel), ``training_mix_warps`` (occupancies
    of the multi-unit training mixes, none = not run), ``fma_k`` (FMAs per DRAM load),
    ``sm_points`` (active-SM counts), ``dvfs_points`` (core clocks of the DVFS grid, 0 = none),
    ``thermal_steps``, ``fan_levels`` (duty, 0..1). Per benchmark: ``repeats``, ``warmup_s``,
    ``window_s``, then a cooldown into ``cooldown_band_c`` above the idle temperature, polled every
    ``cooldown_poll_s`` for at most ``cooldown_max_s``. ``idle_s``: idle baseline windows;
    ``fan_step_s``: settle and measure time of each fan level. Thermal steps: settle to the idle
    temperature (stable for ``settle_stable_s``, polled every ``settle_poll_s``, at most
    ``settle_max_s``), heat ``heat_s`` then cool ``cool_s``, in chunks of ``thermal_chunk_s`` (the
    sensors are drained between chunks).
    """

    name: str
    warps_levels: tuple[int, ...]
    fma_k: tuple[int, ...]
    sm_points: int
    repeats: int
    warmup_s: float
    window_s: float
    cooldown_band_c: float
    cooldown_max_s: float
    idle_s: float
    thermal_steps: int
    heat_s: float
    cool_s: float
    fan_levels: tuple[float, ...]
    fan_step_s: float
    dvfs_points: int
    #: run :data:`microbench.benchmarks.TRAINING_MIXES` (multi-unit training kernels) at these occupancies
    training_mix_warps: tuple[int, ...] = ()
    cooldown_poll_s: float = 2.0
    thermal_chunk_s: float = 10.0
    settle_stable_s: float = 20.0
    settle_max_s: float = 600.0
    settle_poll_s: float = 2.0

    def __post_init__(self) -> None:
        for f in ("warmup_s", "window_s", "cooldown_band_c", "cooldown_max_s", "idle_s", "heat_s", "cool_s",
                  "fan_step_s", "cooldown_poll_s", "thermal_chunk_s", "settle_stable_s", "settle_max_s",
                  "settle_poll_s"):
            v = getattr(self, f)
            if not v >= 0 or (f.endswith("poll_s") or f in ("window_s", "thermal_chunk_s")) and not v > 0:
                raise ValueError(f"campaign {self.name!r}: {f} = {v!r} is not a valid time/temperature")
        if self.repeats < 1 or self.sm_points < 1 or self.thermal_steps < 0 or self.dvfs_points < 0:
            raise ValueError(f"campaign {self.name!r}: repeats and sm_points must be >= 1, thermal_steps and "
                             "dvfs_points >= 0")


@dataclass(frozen=True, kw_only=True)
class Benchmark:
    """One workload of the campaign: a kernel of :mod:`microbench.kernels.catalog` with its parameters,
    its launch shape (warps and blocks per SM, active SMs; ``None`` = all), its ``role`` in the
    campaign, the unit it ``stresses``, what it measures (``kind`` and that kind's parameters
    ``kind_params``, see the module docstring), clocks to run it at (``None`` = default) and its
    repeats (``None`` = the campaign's)."""

    name: str
    kernel: str
    role: str
    stresses: str
    kind: str
    kind_params: Mapping[str, Any] = field(default_factory=dict)
    params: Mapping[str, Any] = field(default_factory=dict)
    warps_per_sm: int = 8
    blocks_per_sm: int = 1
    active_sms: int | None = None
    clocks: tuple[float, float] | None = None
    repeats: int | None = None

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"{self.name}: unknown role {self.role!r}")
        if self.kind not in KINDS:
            raise ValueError(f"{self.name}: unknown kind {self.kind!r} (kinds: {', '.join(KINDS)})")
        need, have = set(KINDS[self.kind]), set(self.kind_params)
        if need != have or have & set(_ENTRY_KEYS):
            raise ValueError(f"{self.name}: kind {self.kind!r} takes the parameters "
                             f"{sorted(need) or 'none'}, got {sorted(have) or 'none'}")
        if (self.role == "timing") != (self.kind in TIMING_KINDS):
            raise ValueError(f"{self.name}: kind {self.kind!r} does not go with role {self.role!r}")
        catalog.get(self.kernel)

    def launch(self, info: DeviceInfo) -> Launch:
        active = info.sm_count if self.active_sms is None else self.active_sms
        tpb = 32 * max(1, self.warps_per_sm // self.blocks_per_sm)
        return Launch(blocks=active * self.blocks_per_sm, threads_per_block=tpb, active_sms=active)

    def workload(self, info: DeviceInfo) -> Workload:
        spec = catalog.get(self.kernel)
        params = spec.params(**self.params)
        units = set(info.extra.get("units", ()))
        classes = info.extra.get("unit_classes")  # a family whose units count several classes: what it counts
        if classes:
            units = {c for cs in classes.values() for c in cs}
        per_warp = place_memory(spec.per_warp(params), units) if units else spec.per_warp(params)
        return Workload(self.name, per_warp, self.launch(info), self.kernel, params, spec.kernel_traits(params))

    def describe(self, info: DeviceInfo) -> dict[str, Any]:
        """Manifest entry: what it measures (kind and its parameters) and everything the samples layer
        needs to compute access rates."""
        w = self.workload(info)
        return {"name": self.name, "kernel": self.kernel, "role": self.role, "stresses": self.stresses,
                "kind": self.kind, **dict(self.kind_params),
                "params": {k: v for k, v in w.params.items()}, "launch": w.launch.to_dict(),
                "per_warp": dict(w.per_warp), "clocks": list(self.clocks) if self.clocks else None}
