"""The campaign's plan: what it runs, declared once for the virtual GPU and real GPUs.

A :class:`~microbench.spec.Benchmark` (built from keyword arguments) names a kernel of
:mod:`microbench.kernels.catalog`, its parameters, its launch shape (warps per SM, blocks per SM, active
SMs), its role in the campaign and the unit it stresses.
:meth:`Benchmark.workload` turns it into a :class:`~microbench.devices.base.Workload` for a device: the
per-warp dynamic instruction counts come from the kernel's count model (IPP Table 1 classes), with
memory accesses placed at the cache level the device has.

Roles: ``idle_kernel`` (launch-only, kernel activation power), ``unit`` (one unit at several
intensities), ``sm_sweep`` (one block per SM, constant total work), ``thermal`` (heat/cool step),
``heldout`` (application-like mixes never used in the fit), ``dvfs`` (clock sweep), ``timing``
(:mod:`microbench.timing_plan`). Each also has a ``kind`` (what it measures, :mod:`microbench.spec`),
written into the manifest's plan. Campaign sizes: :data:`CAMPAIGNS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from calib.core.units import INSTRUCTION_CLASSES
from microbench.devices.base import DeviceInfo
from microbench.kernels import catalog
from microbench.kernels.sweeps import sm_points
from microbench.spec import MEMORY_UNITS, ROLES, Benchmark, CampaignSpec, place_memory
from microbench.timing_plan import timing_benchmarks

__all__ = ["CAMPAIGNS", "DESIGN_ILP", "HELDOUT_MIXES", "MEMORY_UNITS", "ROLES", "THERMAL_WORKLOADS", "TRAINING_MIXES",
           "UNIT_KERNELS", "Benchmark", "CampaignSpec", "design_benchmark", "dvfs_benchmarks", "dvfs_grid",
           "place_memory", "plan", "thermal_benchmarks", "training_mixes"]

#: kernel used to stress each power unit (first = main), and extra variants run once
UNIT_KERNELS: dict[str, tuple[str, ...]] = {
    "fp": ("fp32_fma", "fp32_addmul"), "dp": ("fp64_fma",), "int": ("int_mad",), "sfu": ("sfu",),
    "alu": ("alu_logic",), "reg": ("reg_mov",), "fds": ("ctrl",), "shared": ("shared",), "const": ("const",),
    "tex": ("tex",), "l1": ("l1",), "l2": ("l2",), "global": ("dram",), "local": ("local",),
    "tensor": ("tensor",),
}


def _unit_kernels(units: list[str], unit_classes: Mapping[str, Any] | None) -> list[tuple[str, str, tuple[str, ...]]]:
    """(unit, stressed class, kernels: main first) to run for each power unit. IPP's units are
    instruction classes (or reg/fds) with their own kernels; a GPU family whose units count several
    classes (``device.unit_classes``, calib.core.arch) runs the kernels of each class it counts, labelled
    by that class (what the timing fit reads from ``stresses``)."""
    out = []
    done: set[str] = set()
    for unit in units:
        classes = list(unit_classes.get(unit, ())) if unit_classes else []
        if not classes:
            if UNIT_KERNELS.get(unit):
                out.append((unit, unit, UNIT_KERNELS[unit]))
            continue
        if set(classes) >= set(INSTRUCTION_CLASSES):
            continue  # a unit busy with every instruction (AMD's issue): every kernel stresses it already
        for c in classes:
            if c in done:
                continue
            done.add(c)
            fds_kernel = c == "ctrl"  # branches have their own kernel, which IPP runs for fetch/decode/schedule
            kernels = UNIT_KERNELS.get("fds" if fds_kernel else c)
            if kernels:
                out.append((unit, c, kernels))
    return out


#: application-like mixes used as held-out workloads (per body step counts; names say what they imitate)
HELDOUT_MIXES: dict[str, dict[str, Any]] = {
    "app_sgemm": {"fp": 16, "shared": 8, "int": 2, "alu": 2, "l1": 0, "global": 0.25, "ilp": 4},
    "app_stencil": {"fp": 6, "int": 3, "alu": 2, "shared": 4, "global": 1, "l2": 1, "ilp": 2},
    "app_spmv": {"fp": 2, "int": 4, "alu": 3, "global": 2, "l1": 1, "ilp": 1, "coalesced": True},
    "app_blackscholes": {"fp": 12, "sfu": 4, "alu": 3, "int": 1, "global": 1, "ilp": 2},
    "app_reduction": {"fp": 2, "int": 2, "alu": 2, "shared": 3, "global": 1, "ctrl": 0, "ilp": 2},
    "app_nbody": {"fp": 20, "sfu": 1, "shared": 2, "int": 1, "alu": 1, "ilp": 4},
    "app_histogram": {"int": 6, "alu": 6, "shared": 2, "global": 0.5, "const": 1, "ilp": 2},
    "app_conv": {"fp": 9, "const": 9, "int": 3, "alu": 2, "tex": 2, "global": 0.5, "ilp": 3},
}


from calib.core.units import DESIGN_CLASSES, DESIGN_ILP  # noqa: E402 - one home (calib.fit.design reads them too)


def design_benchmark(entry: Mapping[str, Any], max_warps: int = 64) -> Benchmark:
    """A design kernel (``calib run --design``, :mod:`calib.fit.design`) from its manifest entry
    ``{"name", "mix": {class: per-step count}, "warps_per_sm"}``: the ``mix`` kernel with those counts,
    a training workload (role ``unit``) that stresses several units (``mixed``)."""
    w = min(int(entry["warps_per_sm"]), max_warps)
    params = {"ilp": int(entry.get("ilp", DESIGN_ILP)), **{c: float(v) for c, v in dict(entry["mix"]).items()}}
    return Benchmark(name=str(entry["name"]), kernel="mix", role="unit", stresses="mixed", kind="app_mix",
                     params=params, warps_per_sm=w, blocks_per_sm=max(1, w // 8))


#: Multi-unit training mixes (role ``unit``; per-step counts of the ``mix`` kernel, run at
#: ``CampaignSpec.training_mix_warps``). The single-unit sweeps never run two pipes at high access rate
#: together, so nothing in them tells how units draw power *together* (the shared-activation term of
#: calib.model.ipp, fitted on sweeps alone, is off by BIC or extrapolates wrongly to many-pipe mixes).
#: These run pairs of pipes whose power saturates with activity (FP, INT, the constant cache, texture,
#: DP, L1), and every pipe the GPU has at once. None is near a held-out mix (those stay held out:
#: tests/test_campaign_plan.py checks the cosine of their count vectors). Each compiles to the counts
#: its model says (tests/test_verify.py), as every mix does since mix.cu keeps its loop invariants
#: opaque to the compiler; the ALU of train_int_const and the INT beside texture and L1 date from
#: before (the compiler then recomputed address arithmetic inside the loop without them) and stay,
#: so the campaign and the reference fits do not change.
TRAINING_MIXES: dict[str, dict[str, float]] = {
    "train_fp_int": {"fp": 1, "int": 1},
    "train_int_const": {"int": 1, "const": 2, "alu": 1},
    "train_int_tex": {"int": 1, "tex": 1},
    "train_fp_dp": {"fp": 1, "dp": 1},
    "train_int_l1": {"int": 1, "l1": 1},
    # every design class the GPU has a unit for, one of each per step (calib.core.units.DESIGN_CLASSES)
    "train_pipes": {},
}


def training_mixes(info: DeviceInfo) -> dict[str, dict[str, float]]:
    """The :data:`TRAINING_MIXES` a device can run: each mix whose classes all have a unit that counts
    them (no DP or L1 mix on a GPU without those units), ``train_pipes`` with every pipe class it has.
    None on a GPU whose units count several classes (``unit_classes``, AMD's CUs): there the mixes
    moved the issue unit's MaxPower (which counts every instruction) by -53 % on sim:mi250x, beyond 4
    of its total standard errors; not studied further (issue 29)."""
    if info.extra.get("unit_classes"):
        return {}
    have = set(info.extra.get("units", ()))  # IPP's units are the instruction classes themselves
    out = {}
    for name, mix in TRAINING_MIXES.items():
        m = dict(mix) if mix else {c: 1.0 for c in DESIGN_CLASSES if c in have}
        if len(m) >= 2 and set(m) <= have:
            out[name] = {c: float(v) for c, v in m.items()}
    return out


def _mix_params(mix: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in mix.items() if k != "ctrl"}


#: The thermal steps' lengths are set by the slowest pole a card's cooler can have, not by any preset:
#: a board cooler's heatsink is 0.3-1 kg of aluminium and copper (about 150-900 J/C) behind a sink-to-air
#: resistance of 0.1-0.25 C/W at a low fan duty, so its time constant is up to about
#: :data:`THERMAL_TAU_MAX_S` (1 kg of aluminium at 0.22 C/W); IPP's GTX 280 levelled off after ~600 s
#: (hong-thesis-2012-notes.md, sec. 2.4), the same order. Identifying a pole takes a step of 4-5 of its
#: time constants (hassan-thesis-2015-notes.md, sec. 6.4.1: "at least 5 tau_max"): the standard campaign
#: heats 4.5 tau_max (1.1 % of the slowest pole's rise left) and cools 3 tau_max (the settle-to-idle wait
#: before the next step finishes the cooling); the full campaign 6 and 4.5 tau_max. The quick campaign's
#: 200 s steps identify poles up to about 50 s only.
THERMAL_TAU_MAX_S = 200.0

CAMPAIGNS: dict[str, CampaignSpec] = {
    "quick": CampaignSpec(name="quick", warps_levels=(1, 4, 16, 64), fma_k=(0, 4, 32, 256), sm_points=5, repeats=1,
                          warmup_s=1.5, window_s=4.0, cooldown_band_c=3.0, cooldown_max_s=40.0, idle_s=30.0,
                          thermal_steps=4, heat_s=200.0, cool_s=260.0, fan_levels=(0.4, 0.7, 1.0), fan_step_s=4.0,
                          dvfs_points=0),
    "standard": CampaignSpec(name="standard", warps_levels=(1, 2, 4, 8, 16, 32, 64),
                             fma_k=(0, 1, 2, 4, 8, 16, 32, 64, 256), sm_points=10, repeats=2, warmup_s=2.0,
                             window_s=6.0, cooldown_band_c=2.0, cooldown_max_s=90.0, idle_s=60.0, thermal_steps=6,
                             heat_s=4.5 * THERMAL_TAU_MAX_S, cool_s=3.0 * THERMAL_TAU_MAX_S,
                             fan_levels=(0.3, 0.45, 0.6, 0.8, 1.0), fan_step_s=5.0,
                             dvfs_points=5, training_mix_warps=(2, 8, 32)),
    "full": CampaignSpec(name="full", warps_levels=(1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64),
                         fma_k=(0, 1, 2, 4, 8, 16, 32, 64, 128, 256), sm_points=16, repeats=3, warmup_s=3.0,
                         window_s=10.0, cooldown_band_c=1.5, cooldown_max_s=150.0, idle_s=120.0, thermal_steps=7,
                         heat_s=6.0 * THERMAL_TAU_MAX_S, cool_s=4.5 * THERMAL_TAU_MAX_S,
                         fan_levels=(0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
                         fan_step_s=6.0, dvfs_points=8, training_mix_warps=(2, 4, 8, 16, 32, 64)),
}

#: workloads of the thermal steps, in order (the first is the reference step); a name ending in
#: :data:`ONE_SM_SUFFIX` runs its kernel on one SM (CU)
THERMAL_WORKLOADS = ("fp32_fma", "dram", "app_blackscholes", "sfu", "app_stencil", "sfu_1sm", "int_mad")
#: the one-SM step (standard and full campaigns): the host that launches kernels warms the card's intake air
#: while any kernel runs (a CPU core spinning on launches, tens of W), so that rise switches on and off with
#: every step, and its case-air dynamics are those of the card's slowest pole. With every step on the full
#: chip the steps' card power spans only about 2x, and the host's rise and the slow pole's resistance trade
#: along one line (sim:gtx280, standard campaign: their correlation -0.998, the 65 s pole's R -31 to -55 % on
#: ten seeds, -2.7 % with the host's heat switched off). A step whose card heat is a few W measures the host's
#: share nearly by itself, and pins the intercept of IPP's Max_temp plane (lambda) at zero runtime power. It is
#: added, not swapped for the full-chip sfu step: that one is the coolest full-chip step, and the leakage
#: curvature behind sigma leans on it (sim:mi250x: sigma +0.5 % with it, +15 % without). The quick campaign's
#: 200 s steps do not resolve the slow pole, so it has none.
ONE_SM_SUFFIX = "_1sm"


def plan(info: DeviceInfo, campaign: str = "standard") -> tuple[CampaignSpec, list[Benchmark]]:
    """The campaign's benchmarks for a device, in run order (thermal steps are listed separately)."""
    if campaign not in CAMPAIGNS:
        raise KeyError(f"unknown campaign {campaign!r}; campaigns: {', '.join(CAMPAIGNS)}")
    spec = CAMPAIGNS[campaign]
    units = list(info.extra.get("units", ()))
    max_w = int(info.extra.get("max_warps_per_sm", 32))
    # 32-thread warps a launch may have: whole hardware warps (an AMD wave64 is two; calib.core.arch)
    lanes = int(info.extra.get("warp_size", 32)) // 32
    out: list[Benchmark] = [Benchmark(name="idle_kernel", kernel="idle", role="idle_kernel", stresses="fds",
                                      kind="launch_only", warps_per_sm=1)]
    for unit, cls, kernels in _unit_kernels(units, info.extra.get("unit_classes")):
        main, *variants = kernels
        # one dependent chain per thread (ilp 1) for compute units, so that the warps per SM set the
        # access rate from latency-bound (few warps) to issue-bound (many warps)
        sweep_params = {"ilp": 1} if cls not in MEMORY_UNITS else {}
        for w in spec.warps_levels:
            if w > max_w or w % lanes:
                continue
            bps = max(1, w // 8)
            out.append(Benchmark(name=f"{main}/w{w}", kernel=main, role="unit", stresses=cls, kind="unit",
                                 params=sweep_params, warps_per_sm=w, blocks_per_sm=bps))
        for v in variants:
            out.append(Benchmark(name=f"{v}/w8", kernel=v, role="unit", stresses=cls, kind="unit", warps_per_sm=8))
        if cls == "shared":
            out.append(Benchmark(name="shared_conflict4/w8", kernel="shared", role="unit", stresses=cls, kind="unit",
                                 params={"conflict_ways": 4}, warps_per_sm=8))
        if cls == "global":
            for k in spec.fma_k:
                out.append(Benchmark(name=f"fma_intensity/k{k}", kernel="fma_intensity", role="unit",
                                     stresses="global", kind="fma_intensity", params={"k": k},
                                     warps_per_sm=min(max_w, 32), blocks_per_sm=max(1, min(max_w, 32) // 8)))
    # occupancies above the GPU's limit run at the limit, once (the full campaign's 64 on a 32-warp SM)
    mix_warps = sorted({min(w, max_w) for w in spec.training_mix_warps if min(w, max_w) % lanes == 0})
    for name, mix in training_mixes(info).items() if mix_warps else ():
        for w in mix_warps:
            out.append(Benchmark(name=f"{name}/w{w}", kernel="mix", role="unit", stresses="mixed", kind="app_mix",
                                 params={"ilp": DESIGN_ILP, **mix}, warps_per_sm=w, blocks_per_sm=max(1, w // 8)))
    for n in sm_points(info.sm_count, spec.sm_points):
        scale = info.sm_count / n  # constant total work: fewer SMs, more iterations each
        for kern, unit in (("fp32_fma", "fp"), ("dram", "global")):
            base = catalog.get(kern).defaults["iters"]
            out.append(Benchmark(name=f"{kern}/sm{n}", kernel=kern, role="sm_sweep", stresses=unit, kind="sm_sweep",
                                 params={"iters": int(base * scale)}, warps_per_sm=8, blocks_per_sm=1, active_sms=n))
    for name, mix in HELDOUT_MIXES.items():
        out.append(Benchmark(name=name, kernel="mix", role="heldout", stresses="mixed", kind="app_mix",
                             params=_mix_params(mix), warps_per_sm=min(16, max_w), blocks_per_sm=2))
    out += dvfs_benchmarks(info, spec)
    out += timing_benchmarks(info, spec)
    return spec, out


#: kernels run at every point of the DVFS grid (training); the held-out mixes run there too
DVFS_KERNELS = (("idle_kernel", "idle", "fds", 1), ("fp32_fma", "fp32_fma", "fp", 16), ("int_mad", "int_mad", "int", 16),
                ("sfu", "sfu", "sfu", 16), ("shared", "shared", "shared", 16), ("l2", "l2", "l2", 16),
                ("dram", "dram", "global", 16), ("fma_intensity_k8", "fma_intensity", "global", 32))
#: what each DVFS kernel measures (its kind at the default clocks)
_DVFS_KINDS = {"idle": "launch_only", "fma_intensity": "fma_intensity"}


def dvfs_grid(info: DeviceInfo, points: int) -> list[tuple[float, float]]:
    """(core, mem) clock pairs of the DVFS sweep: ``points`` core clocks spread over the supported range
    (always including the lowest and highest) x every supported memory clock, default pair excluded."""
    import numpy as np

    core = sorted(info.supported_clocks.get("core_mhz", []))
    mem = sorted(info.supported_clocks.get("mem_mhz", []))
    if points <= 0 or (len(core) < 2 and len(mem) < 2):
        return []
    idx = sorted({int(round(i)) for i in np.linspace(0, len(core) - 1, min(points, len(core)))})
    pairs = [(core[i], m) for i in idx for m in mem]
    return [p for p in pairs if p != (info.default_core_mhz, info.default_mem_mhz)]


def dvfs_benchmarks(info: DeviceInfo, spec: CampaignSpec) -> list[Benchmark]:
    """Training kernels (role ``dvfs``) and held-out mixes (role ``heldout``) at every DVFS grid point."""
    max_w = int(info.extra.get("max_warps_per_sm", 32))
    out = []
    for core, mem in dvfs_grid(info, spec.dvfs_points):
        tag = f"@{core:g}/{mem:g}"
        for name, kern, unit, w in DVFS_KERNELS:
            params = {"k": 8} if kern == "fma_intensity" else {}
            w = min(w, max_w)
            out.append(Benchmark(name=f"{name}{tag}", kernel=kern, role="dvfs", stresses=unit,
                                 kind=_DVFS_KINDS.get(kern, "unit"), params=params, warps_per_sm=w,
                                 blocks_per_sm=max(1, w // 8), clocks=(core, mem), repeats=1))
        for name, mix in HELDOUT_MIXES.items():
            out.append(Benchmark(name=f"{name}{tag}", kernel="mix", role="heldout", stresses="mixed", kind="app_mix",
                                 params=_mix_params(mix), warps_per_sm=min(16, max_w), blocks_per_sm=2,
                                 clocks=(core, mem), repeats=1))
    return out


def thermal_benchmarks(info: DeviceInfo, campaign: str = "standard") -> list[Benchmark]:
    """Workloads of the thermal steps (heat to steady state, then cool)."""
    spec = CAMPAIGNS[campaign]
    max_w = int(info.extra.get("max_warps_per_sm", 32))
    w = min(32, max_w)
    mixes = HELDOUT_MIXES
    out = []
    for step in THERMAL_WORKLOADS[: spec.thermal_steps]:
        name = step.removesuffix(ONE_SM_SUFFIX)
        out.append(Benchmark(name=f"thermal/{step}", kernel="mix" if name in mixes else name, role="thermal",
                             stresses="mixed" if name in mixes else catalog.get(name).stresses, kind="thermal_step",
                             params=_mix_params(mixes[name]) if name in mixes else {}, warps_per_sm=w,
                             blocks_per_sm=max(1, w // 8), active_sms=1 if step != name else None))
    return out
