"""Hidden power and thermal physics of the virtual GPU.

Richer than the model the toolkit fits, on purpose:

- dynamic power of each unit = per-access energy x access rate plus, for "pipeline" units, a saturating
  activation term (a unit leaving idle costs a lot, further accesses less), scaled by V^2 f per domain;
  the activation terms of pipes active at the same time partly overlap (not additive, unlike IPP);
- leakage exponential in die temperature and a power of the core voltage (not a straight line);
- a three-node thermal network (die, heatsink, case air) with a temperature-controlled fan whose speed is
  slew-limited: at least two time constants, and faster heating than cooling because the fan spins up.
  The cooler is a blower: most GPU heat leaves the case, so the case air (the cooler's intake) is heated
  mainly by the host, which works harder while it launches kernels;
- fan power following the cube law of fan affinity;
- host power (CPU busy while kernels are launched) heating the case air and showing on the wall meter;
- a hot spot near the temperature sensor heated by the memory interface (it leaks like the rest of the die).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class UnitPhysics:
    """One unit: MaxPower at AR = 1 (W, per SM or per chip) and the shape of its power curve.

    power(AR) = max_power_w * ((1 - w) * AR + w * h(AR)), h the saturating curve ``curve`` (1 at AR = 1):
    ``w`` is the weight of the saturating activation part (0 for units whose power is proportional to
    accesses).
    """

    max_power_w: float
    w: float = 0.0
    slope: float = 0.1365
    domain: str = "core"
    chip: bool = False
    #: shape of the saturating part: "log" (1 + slope ln AR, clamped at 0), "softlog" (ln(1 + AR/k) /
    #: ln(1 + 1/k): a log at rates well above k, linear below, with no clamp), "pow" (the power law
    #: AR^k: near AR = 1 like the log with slope k, flatter at low rates), "exp"
    #: (exponential approach, (1 - e^(-AR/k)) / (1 - e^(-1/k)) with k = ``k``) or "mm" (Michaelis-Menten,
    #: AR (1 + k) / (AR + k)); all are 1 at AR = 1, so ``max_power_w`` stays the power at AR = 1
    curve: str = "log"
    k: float = 0.1

    def parts(self, ar: float) -> tuple[float, float]:
        """(per-access part, saturating activation part) of the power at access rate ``ar``, W."""
        if ar <= 0:
            return 0.0, 0.0
        if not self.w:
            h = 0.0
        elif self.curve == "exp":
            h = (1.0 - math.exp(-ar / self.k)) / (1.0 - math.exp(-1.0 / self.k))
        elif self.curve == "softlog":
            h = math.log1p(ar / self.k) / math.log1p(1.0 / self.k)
        elif self.curve == "pow":
            h = ar ** self.k
        elif self.curve == "mm":
            h = ar * (1.0 + self.k) / (ar + self.k)
        else:
            h = max(0.0, 1.0 + self.slope * math.log(ar))
        return self.max_power_w * (1.0 - self.w) * ar, self.max_power_w * self.w * h

    def power(self, ar: float) -> float:
        a, b = self.parts(ar)
        return a + b


@dataclass(frozen=True)
class PowerPhysics:
    """Hidden power parameters (W unless stated)."""

    units: Mapping[str, UnitPhysics]
    p_const_w: float                 # board constant (VRMs, misc), unscaled
    idle_core_w: float               # idle clock-tree power of the core domain at default clocks/voltage
    idle_mem_w: float                # idle memory-interface power at default clocks/voltage
    leak_ref_w: float                # leakage at leak_ref_c and default core voltage
    leak_ref_c: float
    leak_k_per_c: float              # leakage grows as exp(k * (T - T_ref))
    leak_v_exp: float                # ... and as (V/V0)^leak_v_exp
    const_sm_w: float                # per active SM while a kernel runs (I-cache, clocks of the SM)
    activation_w: float              # chip-wide step when any kernel runs
    sm_scaling: str                  # "log" (IPP eq. 14, no power gating) or "linear"
    sm_beta: float                   # for "log"
    fan_max_w: float                 # fan power at 100 % duty (cube law)
    host_idle_w: float               # the rest of the system, seen only by the wall meter
    host_busy_w: float               # extra host power while kernels are being launched
    overlap: float = 0.0             # share of the activation power of concurrently active SM pipes
                                     # that they have in common (operand collectors, clock trees)
    issue_w: float = 0.0             # per SM: a shared issue/dispatch stage whose power follows the SM
    issue_exp: float = 1.0           # pipes' summed access rate (capped at 1) to this power: with an
                                     # exponent below 1 a mix of pipes costs less than their parts
    idle_sm_fraction: float = 0.0    # "gated" SM scaling: an SM without work still draws this share of
                                     # its constant power (partial clock gating)


@dataclass(frozen=True)
class ThermalPhysics:
    """Hidden thermal network: die -> heatsink -> case air -> room."""

    t_room_c: float
    c_die_j_per_c: float
    c_sink_j_per_c: float
    c_case_j_per_c: float
    g_die_sink_w_per_c: float
    g_sink_case0_w_per_c: float      # heatsink -> case air at 0 % fan
    g_sink_case_fan_w_per_c: float   # ... added at 100 % fan
    g_case_room_w_per_c: float
    fan_min: float                   # fan duty 0..1
    fan_t0_c: float                  # fan starts ramping above this die temperature
    fan_gain_per_c: float
    fan_slew_per_s: float
    r_io_c_per_w: float              # sensor hot spot per W of memory-interface power
    mem_heat_to_sink: float          # fraction of DRAM power dissipated by the memory chips into the heatsink
    recirculation: float = 0.1       # fraction of the GPU's exhaust heat that stays in the case


@dataclass(frozen=True)
class DvfsPhysics:
    """Voltage as a function of clock per domain (piecewise linear tables) and default clocks."""

    core_mhz: tuple[float, ...]
    core_v: tuple[float, ...]
    mem_mhz: tuple[float, ...]
    mem_v: tuple[float, ...]

    def v_core(self, mhz: float) -> float:
        return float(np.interp(mhz, self.core_mhz, self.core_v))

    def v_mem(self, mhz: float) -> float:
        return float(np.interp(mhz, self.mem_mhz, self.mem_v))


@dataclass
class Load:
    """Power components of what the GPU is doing, at the current clocks (W)."""

    running: bool = False
    dyn_core_w: float = 0.0          # everything but memory units, V^2 f scaled
    dyn_mem_w: float = 0.0           # memory units (DRAM interface), V^2 f scaled
    detail: dict = field(default_factory=dict)
    dram_busy: float = 0.0           # share of the time the DRAM is reading or writing (0..1)


#: SM execution pipes whose activation power partly overlaps (register file and fetch/decode/schedule are
#: busy with every instruction and stay additive); the AMD names are the CU's (calib.core.arch.AMD_UNITS)
PIPES = frozenset({"fp", "dp", "int", "sfu", "tensor", "alu", "shared", "const", "tex", "l1",
                   "valu_fp32", "valu_fp64", "valu_int", "valu_trans", "matrix", "salu", "lds"})


def sm_scale(form: str, beta: float, active: int, total: int) -> float:
    """Fraction of full-chip runtime power drawn with ``active`` of ``total`` SMs busy ("gated": the
    busy SMs' share; the idle SMs' partial draw is added by :func:`load_for`)."""
    if form == "log":
        alpha = (10.0 - beta) / total
        return math.log10(alpha * active + beta)
    return active / total


def load_for(pp: PowerPhysics, ar: Mapping[str, float], active_sms: int, sm_count: int,
             s_core: float, s_mem: float) -> Load:
    """Runtime power components (W, see :class:`Load`) of a kernel with per-SM access rates ``ar``
    (dimensionless) on ``active_sms`` of ``sm_count`` SMs; ``s_core``, ``s_mem``: the domains' V^2 f
    scale factors relative to the default clocks."""
    per_sm = pp.const_sm_w
    chip_core = 0.0
    chip_mem = 0.0
    detail: dict[str, float] = {"const_sm": pp.const_sm_w * sm_count}
    # activation (saturating) parts of the SM execution pipes are not additive: pipes active at the same
    # time share part of it, so a mix costs less than the sum of its units (the IPP model adds them)
    sat = {n: u.parts(ar.get(n, 0.0))[1] for n, u in pp.units.items() if not u.chip and n in PIPES}
    tot = sum(sat.values())
    shared_discount = pp.overlap * (tot - max(sat.values(), default=0.0))
    for name, u in pp.units.items():
        p = u.power(ar.get(name, 0.0))
        if name in sat and tot > 0:
            p -= shared_discount * sat[name] / tot
        if u.chip:
            if u.domain == "mem":
                chip_mem += p
            else:
                chip_core += p
            detail[name] = p
        else:
            per_sm += p
            detail[name] = p * sm_count
    if pp.issue_w:
        issue = pp.issue_w * min(1.0, sum(ar.get(n, 0.0) for n in PIPES)) ** pp.issue_exp
        per_sm += issue
        detail["issue_stage"] = issue * sm_count
    scale = sm_scale(pp.sm_scaling, pp.sm_beta, active_sms, sm_count)
    core = pp.activation_w + scale * (sm_count * per_sm + chip_core)
    if pp.sm_scaling == "gated":  # idle SMs: partly clock-gated, they keep a share of their constant power
        core += pp.idle_sm_fraction * pp.const_sm_w * (sm_count - active_sms)
    mem = scale * chip_mem
    detail = {k: v * scale for k, v in detail.items()}
    detail["activation"] = pp.activation_w
    return Load(True, core * s_core, mem * s_mem, detail)
