"""Thermal network of a card: a Foster network of 1-3 poles, its Cauer ladder, temperature under any power
trace, and the leakage-temperature feedback loop.

Section ``thermal_network`` (model ``foster``) of a parameter file. Temperatures are rises above the
idle temperature ``idle_temp_c`` driven by the board power above ``idle_power_w`` (both measured by the
campaign), so a fan at constant speed, the board's constant power and the idle leakage cancel:

    theta(t) = T(t) - idle_temp_c = r_direct x dP(t) + sum_i x_i(t)
    tau_i dx_i/dt = r_i dP(t) - x_i          (Foster network: pole i, resistance r_i C/W, time constant tau_i s)
    dP(t) = P(t) - idle_power_w              (board power, W)

``r_direct`` stands for the poles faster than the sensor resolves (the die itself, ~0.2-0.5 s on air-cooled
cards): at the fitted sampling interval they answer at once. For power held constant over [t, t + dt] the
exact discrete update is ``x_i <- a_i x_i + r_i (1 - a_i) dP`` with ``a_i = exp(-dt / tau_i)``: any step
length, no stability limit, so a long trace costs one multiply-add per sample and pole
(:func:`simulate`).

Leakage feedback: static power grows with temperature, ``L(theta)`` above its idle value, linear
(``leak_sigma_w_per_c`` x theta, IPP's sigma) or exponential (``leak_exp_w`` x (exp(``leak_k_per_c`` x
theta) - 1)). A kernel whose power at the idle temperature ("cold") is ``idle_power_w + run_w`` settles
where ``theta = R_total (run_w + L(theta))`` (:func:`steady_state`); the loop gain is
``R_total x dL/dtheta`` there. Without a solution below the card's slowdown temperature the card runs away
(it throttles or trips): :func:`steady_state` says so, :func:`runaway_power_w` gives the cold runtime
power at which that starts.

Cauer ladder (:func:`foster_to_cauer`): the same impedance as a chain junction -r_direct- node 1 (C_1)
-R_1- node 2 (C_2) - ... -R_n- ambient, whose nodes can be read as die/sink/case (the Foster nodes have
no physical meaning).
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from calib.core import names
from calib.core.errors import BadInputError, SchemaError
from calib.core.params import Section
from calib.core.samples import read_text_file
from calib.model.thermal import leakage_w
from calib.model.validation import check_names

MODEL_NAME = "foster"
SECTION = "thermal_network"
MAX_POLES = 3
LEAK_FORMS = ("none", "linear", "exponential")
#: slowdown temperature used when neither the device nor the user gives one (typical NVIDIA slowdown
#: thresholds are 90-100 C)
DEFAULT_SLOWDOWN_C = 95.0
#: ``structure.form`` of a network fitted in node form (the ladder with the fan, host heat and hot spot)
NODE_FORM = "ladder"
#: node-form parameters: effective ambient (C), the fan link's conductance per unit duty (W/C), host heat
#: into the outermost node while a kernel runs (W), the sensor's memory hot spot (C): its rise at 100 %
#: memory utilization where the file has ``hot_spot_util_exp`` (files fitted on logs with ``util_mem_pct``),
#: else its rise while a kernel with memory traffic runs (older files)
NODE_AMBIENT, NODE_FAN_G, NODE_BUSY_HEAT, NODE_HOT_SPOT = "ambient_temp_c", "fan_g_w_per_c", "busy_heat_w", "hot_spot_c"
#: exponent of the memory utilization in the hot spot: rise = hot_spot_c x (util_mem_pct / 100) ^ this
NODE_HOT_EXP = "hot_spot_util_exp"
#: steady sensor rise (C) of ``busy_heat_w``: busy_heat_w x the outer link's resistance. Informational (the
#: model uses busy_heat_w): the campaign determines this rise, not the heat in watts (files since issue 30's
#: follow-up)
NODE_BUSY_RISE = "busy_rise_c"
#: the fan controller's parameters (duties in % as the NVML log has them)
CONTROLLER_PARAMS = ("fan_min_pct", "fan_max_pct", "fan_t0_c", "fan_gain_pct_per_c", "fan_slew_pct_per_s")


@dataclass(frozen=True)
class Leakage:
    """Static power above its idle value as a function of the rise above idle (W, theta in C)."""

    form: str = "none"
    sigma_w_per_c: float = 0.0
    amp_w: float = 0.0
    k_per_c: float = 0.0

    def power_w(self, theta_c: np.ndarray | float) -> np.ndarray:
        th = np.asarray(theta_c, dtype=float)
        if self.form == "linear":  # IPP's eq. (22) on the rise above idle: its one home
            return np.asarray(leakage_w(self.sigma_w_per_c, th, 0.0), dtype=float)
        if self.form == "exponential":
            return self.amp_w * np.expm1(np.clip(self.k_per_c * th, -50.0, 50.0))
        return np.zeros_like(th)

    def slope_w_per_c(self, theta_c: np.ndarray | float) -> np.ndarray:
        th = np.asarray(theta_c, dtype=float)
        if self.form == "linear":
            return np.full_like(th, self.sigma_w_per_c)
        if self.form == "exponential":
            return self.amp_w * self.k_per_c * np.exp(np.clip(self.k_per_c * th, -50.0, 50.0))
        return np.zeros_like(th)


@dataclass(frozen=True)
class FanCooling:
    """The fan in the network: the conductance of ladder link ``link`` (1..n of the Cauer ladder of the
    poles, junction first; :func:`ladder_matrices`) is its value at duty ``duty_ref`` plus
    ``g_w_per_c`` x (duty - ``duty_ref``) (duties 0..1), so the Foster poles (r_i, tau_i) are those at
    ``duty_ref``; ``idle_duty`` is the duty of the idle state a trace starts from. The fan's own power
    (``fan_power_w`` at 100 %, cube law) is board power that does not heat the die."""

    link: int
    g_w_per_c: float
    duty_ref: float
    idle_duty: float
    fan_power_w: float = 0.0

    def fan_w(self, duty: np.ndarray | float) -> np.ndarray | float:
        """The fan's power (W) at ``duty`` (0..1): fan affinity (cube law)."""
        return self.fan_power_w * np.asarray(duty, dtype=float) ** 3


@dataclass(frozen=True)
class FanController:
    """The card's fan controller: the duty (0..1) it aims at for a sensor temperature (C) rises linearly
    from ``min_duty`` above ``t0_c`` at ``gain_per_c`` up to ``max_duty``; the duty moves towards it at
    most ``slew_per_s`` per second."""

    min_duty: float
    t0_c: float
    gain_per_c: float
    max_duty: float = 1.0
    slew_per_s: float = math.inf
    #: the temperature it follows is the sensor's without the memory hot spot (the die next to it)
    without_hot_spot: bool = False

    def target(self, temp_c: np.ndarray | float) -> np.ndarray | float:
        """Duty (0..1) the controller aims at for sensor temperature ``temp_c`` (C)."""
        return np.clip(self.min_duty + self.gain_per_c * (np.asarray(temp_c, dtype=float) - self.t0_c),
                       self.min_duty, self.max_duty)

    def step(self, duty: float, temp_c: float, dt_s: float) -> float:
        """The duty ``dt_s`` seconds later for a sensor at ``temp_c`` (slew-limited)."""
        want = float(self.target(temp_c))
        lim = self.slew_per_s * dt_s
        return duty + min(max(want - duty, -lim), lim)


@dataclass(frozen=True)
class FosterNetwork:
    """Foster network (module docstring): resistances (C/W) and time constants (s) of the poles, fastest
    first, plus the direct term; rises above ``idle_temp_c`` for board power above ``idle_power_w``."""

    r_c_per_w: tuple[float, ...]
    tau_s: tuple[float, ...]
    r_direct_c_per_w: float = 0.0
    idle_temp_c: float = 0.0
    idle_power_w: float = 0.0
    leakage: Leakage = field(default_factory=Leakage)
    slowdown_temp_c: float = DEFAULT_SLOWDOWN_C
    #: the network in node form (a fitted ladder, issue 30): the sensor reads ``ambient_c`` + the die
    #: node's rise + r_direct x die power + the memory hot spot (``hot_spot_c`` x its weight); the
    #: fan (None: a fan that does not move, or no duty logged), its controller, and host heat
    #: ``busy_heat_w`` put into the outermost node while a kernel runs (a row of a power trace counts as
    #: running above ``busy_threshold_w`` over idle power). None: the Foster form of older files.
    ambient_c: float | None = None
    fan: FanCooling | None = None
    controller: FanController | None = None
    busy_heat_w: float = 0.0
    hot_spot_c: float = 0.0
    busy_threshold_w: float = 0.0
    #: None: ``hot_spot_c`` is an on/off term (older files); else the hot spot is ``hot_spot_c`` x
    #: (memory utilization 0..1) ^ ``hot_spot_util_exp`` (:func:`hot_spot_weight`)
    hot_spot_util_exp: float | None = None
    #: the hot spot's weight while a kernel runs when a trace has no memory utilization: the mean weight over
    #: the running bins of the thermal steps the network was fitted on (0.5 in older files)
    hot_spot_busy_weight: float = 0.5

    @property
    def node_form(self) -> bool:
        """Whether temperatures come from the ladder in node form (files fitted with the fan model)."""
        return self.ambient_c is not None

    @property
    def poles(self) -> int:
        return len(self.tau_s)

    @property
    def r_total_c_per_w(self) -> float:
        """Steady rise per W: r_direct + sum of the pole resistances (C/W)."""
        return float(self.r_direct_c_per_w + sum(self.r_c_per_w))

    @classmethod
    def from_section(cls, sec: Section, where: str = SECTION) -> "FosterNetwork":
        validate(sec, where)
        n = int(sec.structure["poles"])
        lk = sec.structure.get("leakage", {}).get("form", "none")
        leak = Leakage(lk, sec.value(names.LEAK_SIGMA, 0.0), sec.value(names.LEAK_EXP_AMP, 0.0),
                       sec.value(names.LEAK_EXP_K, 0.0))
        node: dict[str, Any] = {}
        st = sec.structure
        if st.get("form") == NODE_FORM:
            fan = st.get("fan", {})
            if NODE_FAN_G in sec and fan.get("link"):
                node["fan"] = FanCooling(int(fan["link"]), sec.value(NODE_FAN_G), float(fan["duty_ref_pct"]) / 100.0,
                                         float(fan["idle_duty_pct"]) / 100.0, float(fan.get("fan_power_w", 0.0)))
            if all(nm in sec for nm in CONTROLLER_PARAMS):
                node["controller"] = FanController(
                    sec.value("fan_min_pct") / 100.0, sec.value("fan_t0_c"), sec.value("fan_gain_pct_per_c") / 100.0,
                    sec.value("fan_max_pct") / 100.0, sec.value("fan_slew_pct_per_s") / 100.0,
                    bool(fan.get("controller", {}).get("without_hot_spot", False)))
            node.update(ambient_c=sec.value(NODE_AMBIENT), busy_heat_w=sec.value(NODE_BUSY_HEAT, 0.0),
                        hot_spot_c=sec.value(NODE_HOT_SPOT, 0.0),
                        busy_threshold_w=float(st.get("busy_threshold_w", 0.0)),
                        hot_spot_util_exp=sec.value(NODE_HOT_EXP) if NODE_HOT_EXP in sec else None,
                        hot_spot_busy_weight=float(st.get("hot_spot", {}).get("busy_weight", 0.5)))
        return cls(tuple(sec.value(names.foster_r(i)) for i in range(1, n + 1)),
                   tuple(sec.value(names.foster_tau(i)) for i in range(1, n + 1)),
                   sec.value(names.R_DIRECT, 0.0), sec.value("idle_temp_c"), sec.value("idle_power_w"), leak,
                   float(sec.structure.get("slowdown_temp_c", DEFAULT_SLOWDOWN_C)), **node)

    def hot_spot_weights(self, util_mem_pct: Any = None, busy: Any = None) -> np.ndarray:
        """The memory hot spot's weight (0..1) per row: from the memory utilization (%, NVML's
        ``util_mem_pct``) where given -- (util / 100) ^ ``hot_spot_util_exp``, or 1 where util > 0 for an
        older on/off hot spot -- else ``hot_spot_busy_weight`` while a kernel runs (``busy`` 0/1)."""
        if util_mem_pct is not None:
            return hot_spot_weight(np.asarray(util_mem_pct, dtype=float) / 100.0, self.hot_spot_util_exp)
        return self.hot_spot_busy_weight * np.asarray(busy, dtype=float)

    # -- responses -------------------------------------------------------------------------------
    def step_rise_c(self, t_s: np.ndarray, dp_w: float) -> np.ndarray:
        """Rise above idle (C) at times ``t_s`` (s) after a power step of ``dp_w`` (W) from idle."""
        t = np.asarray(t_s, dtype=float)[..., None]
        r, tau = np.asarray(self.r_c_per_w), np.asarray(self.tau_s)
        return dp_w * (self.r_direct_c_per_w * (t[..., 0] >= 0) + np.sum(r * -np.expm1(-t / tau), axis=-1))

    def simulate(self, time_s: np.ndarray, power_w: np.ndarray, x0: np.ndarray | None = None) -> np.ndarray:
        """Temperature (C) at each time of a power trace (module docstring).

        ``power_w[k]`` is the board power (W) from ``time_s[k]`` to ``time_s[k+1]`` (held constant; the
        last value applies at the last instant only). The temperature at ``time_s[k]`` includes the
        direct term of ``power_w[k]``. ``x0``: pole states (C) at the first time; default 0 (the card
        at idle equilibrium). No leakage feedback: measured power already contains the leakage."""
        if self.node_form:
            return simulate_nodes(self, time_s, power_w)[0]
        t, p = _check_trace(time_s, power_w)
        x = simulate_states(np.asarray(self.r_c_per_w), np.asarray(self.tau_s), t, p - self.idle_power_w, x0)
        return self.idle_temp_c + self.r_direct_c_per_w * (p - self.idle_power_w) + x.sum(axis=1)

    def simulate_cold(self, time_s: np.ndarray, cold_power_w: np.ndarray,
                      x0: np.ndarray | None = None, mem: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Temperature (C) and board power (W) at each time for a trace of *cold* power (the power each
        interval would draw at the idle temperature), stepping the leakage feedback: the leakage of an
        interval follows the temperature at its start. Returns (temperature, power). In node form
        (:func:`simulate_nodes`) the fan follows its controller and ``mem`` weighs the hot spot per row."""
        if self.node_form:
            busy = (np.asarray(cold_power_w, dtype=float) - self.idle_power_w > self.busy_threshold_w).astype(float)
            temp, power, _ = simulate_nodes(self, time_s, cold_power_w, busy=busy, mem=mem, cold=True)
            return temp, power
        t, pc = _check_trace(time_s, cold_power_w)
        r, tau = np.asarray(self.r_c_per_w), np.asarray(self.tau_s)
        x = np.zeros(len(r)) if x0 is None else np.asarray(x0, dtype=float).copy()
        temp = np.empty(len(t))
        power = np.empty(len(t))
        dts = np.diff(t, append=t[-1])
        rd = self.r_direct_c_per_w
        for k in range(len(t)):
            dp0, xs = pc[k] - self.idle_power_w, x.sum()
            theta, leak_w = _with_leakage(self.leakage, lambda lw: rd * (dp0 + lw) + xs, 20)
            dp = dp0 + leak_w
            temp[k], power[k] = self.idle_temp_c + theta, self.idle_power_w + dp
            a = np.exp(-dts[k] / tau)
            x = a * x + r * (1.0 - a) * dp
        return temp, power


def _with_leakage(leak: Leakage, rise_c: Any, iterations: int) -> tuple[float, float]:
    """The rise theta (C) that the leakage it causes gives, ``theta = rise_c(L(theta))`` (the direct term answers
    at once: a contraction, iterated from ``rise_c(0)``), and that leakage L(theta) (W)."""
    theta = rise_c(0.0)
    for _ in range(iterations):
        new = rise_c(float(leak.power_w(theta)))
        if abs(new - theta) < 1e-9:
            break
        theta = new
    return theta, float(leak.power_w(theta))


class _Ladder:
    """The node form of a network (module docstring of :class:`FosterNetwork`'s node fields): its ladder,
    the fan link, and cached exact updates per (duty, step length)."""

    def __init__(self, net: FosterNetwork):
        self.net = net
        self.c, self.g, rl = ladder_matrices(net.r_c_per_w, net.tau_s)
        self.n = len(self.c)
        fan = net.fan
        self.link = fan.link if fan is not None and fan.link <= self.n else 1
        self.e = link_vector(self.n, self.link)
        self.g_link = 1.0 / rl[self.link - 1]
        self._cache: dict[tuple[int, float], tuple[np.ndarray, np.ndarray]] = {}

    def dg(self, duty: float) -> float:
        fan = self.net.fan
        return 0.0 if fan is None else max(fan.g_w_per_c * (duty - fan.duty_ref), MIN_LINK_G - self.g_link)

    def g_at(self, duty: float) -> np.ndarray:
        return self.g + self.dg(duty) * np.outer(self.e, self.e)

    def update(self, duty: float, h_s: float) -> tuple[np.ndarray, np.ndarray]:
        key = (int(round(duty * DUTY_STEPS)) if self.net.fan is not None else 0, round(float(h_s), 9))
        if key not in self._cache:
            self._cache[key] = zoh_tables(self.c, self.g, self.e, self.g_link,
                                          np.array(self.dg(key[0] / DUTY_STEPS)), key[1])
        return self._cache[key]

    def heat(self, die_w: float, busy: float) -> np.ndarray:
        q = np.zeros(self.n)
        q[0] = die_w
        q[-1] += self.net.busy_heat_w * busy
        return q

    def steady(self, duty: float, die_w: float, busy: float) -> np.ndarray:
        return np.linalg.solve(self.g_at(duty), self.heat(die_w, busy))


#: duty resolution of the node form's cached updates (1/2000: 0.05 %)
DUTY_STEPS = 2000


def simulate_nodes(net: FosterNetwork, time_s: Any, power_w: Any, *, duty: Any = None, busy: Any = None,
                   mem: Any = None, cold: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Temperature (C), board power (W) and fan duty (0..1) at each time of a power trace, in node form.

    ``power_w[k]`` (board power, or with ``cold`` the power each interval would draw at the idle
    temperature: the leakage feedback ``L(theta)`` and the fan's change of power are added, the leakage
    following the temperature at the interval's start) is held from ``time_s[k]`` to ``time_s[k+1]``.
    ``duty``: the logged fan duty (0..1) per row; None: the fitted controller turns the predicted sensor
    temperature into the duty. ``busy``: 1 where a kernel runs (None: the rows more than
    ``busy_threshold_w`` above idle power). ``mem``: the weight (0..1) of the memory hot spot per row
    (:meth:`FosterNetwork.hot_spot_weights`); None: ``hot_spot_busy_weight`` x ``busy`` (a trace of power
    alone does not say how much memory its kernels move). Starts from the idle state (idle power at the idle
    duty, in equilibrium)."""
    t, p = _check_trace(time_s, power_w)
    lad = _Ladder(net)
    fan, ctl = net.fan, net.controller
    n_rows = len(t)
    bz = (p - net.idle_power_w > net.busy_threshold_w).astype(float) if busy is None else np.asarray(busy, dtype=float)
    mw = net.hot_spot_weights(None, bz) if mem is None else np.asarray(mem, dtype=float)
    logged = None if duty is None or fan is None else np.clip(np.asarray(duty, dtype=float), 0.0, 1.0)
    d = float(logged[0]) if logged is not None else fan.idle_duty if fan is not None else 0.0
    fan_idle_w = 0.0 if fan is None else float(fan.fan_w(fan.idle_duty))
    x = lad.steady(fan.idle_duty if fan is not None else 0.0, net.idle_power_w - fan_idle_w, 0.0)
    dts = np.diff(t, append=t[-1])
    amb, rd, hot, t_idle = float(net.ambient_c), net.r_direct_c_per_w, net.hot_spot_c, net.idle_temp_c
    temp, board, duty_out = np.empty(n_rows), np.empty(n_rows), np.empty(n_rows)
    for k in range(n_rows):
        if logged is not None:
            d = float(logged[k])
        fan_w = 0.0 if fan is None else float(fan.fan_w(d))
        base = amb + hot * mw[k] + x[0]
        if cold:
            extra = p[k] + fan_w - fan_idle_w
            _, leak_w = _with_leakage(net.leakage, lambda lw: base + rd * (extra + lw - fan_w) - t_idle, 30)
            pb = extra + leak_w
        else:
            pb = p[k]
        die_w = pb - fan_w
        temp[k] = base + rd * die_w
        board[k], duty_out[k] = pb, d
        if k + 1 < n_rows:
            phi, gam = lad.update(d, dts[k])
            x = phi @ x + gam @ lad.heat(die_w, bz[k])
            if logged is None and fan is not None and ctl is not None:
                d = ctl.step(d, temp[k] - (hot * mw[k] if ctl.without_hot_spot else 0.0), dts[k])
    return temp, board, duty_out


def hot_spot_weight(util: Any, exponent: float | None) -> np.ndarray:
    """Weight (0..1) of the memory hot spot at memory utilization ``util`` (0..1, the share of the time the
    DRAM is read or written): ``util ** exponent`` (the sensor sits beside the memory interface, whose heat
    grows with the traffic; the fitted exponent carries how), 0 without traffic; ``exponent`` None: the
    on/off hot spot of older files (1 with any traffic)."""
    u = np.clip(np.asarray(util, dtype=float), 0.0, 1.0)
    return (u > 0).astype(float) if exponent is None else np.where(u > 0, np.power(np.maximum(u, 1e-12), exponent), 0.0)


def network_ambient_c(sec: Section, net: FosterNetwork | None = None) -> float:
    """The ambient temperature (C) of a fitted network: ``structure.ambient_temp_c`` (logged by a sensor, or
    inferred by the fit as idle temperature - R_total x idle power); files without it: the idle temperature."""
    net = net if net is not None else FosterNetwork.from_section(sec)
    return float(sec.structure.get("ambient_temp_c", net.idle_temp_c))


def _check_trace(time_s: Any, power_w: Any, where: str = "trace") -> tuple[np.ndarray, np.ndarray]:
    t = np.asarray(time_s, dtype=float)
    p = np.asarray(power_w, dtype=float)
    if t.ndim != 1 or p.shape != t.shape or len(t) == 0:
        raise BadInputError(f"{where}: time and power must be two columns of the same non-zero length")
    for bad, what in ((~np.isfinite(t), lambda k: f"time {t[k]} is not a finite number"),
                      (~np.isfinite(p), lambda k: f"power {p[k]} is not a finite number"),
                      (t < 0, lambda k: f"time {t[k]:g} s is negative"),
                      (np.r_[False, np.diff(t) <= 0], lambda k: f"time {t[k]:g} s does not come after the previous "
                                                                f"row's {t[k - 1]:g} s (times must increase)"),
                      (p < 0, lambda k: f"power {p[k]:g} W is negative")):
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise BadInputError(f"{where}: row {k + 1}: {what(k)}")
    return t, p


def simulate_states(r: np.ndarray, tau: np.ndarray, time_s: np.ndarray, dp_w: np.ndarray,
                    x0: np.ndarray | None = None) -> np.ndarray:
    """Pole states (C, one column per pole) at each time for power ``dp_w[k]`` (W above the reference)
    held from ``time_s[k]`` to ``time_s[k+1]``: the exact zero-order-hold update. Runs of equal time steps
    go through :func:`scipy.signal.lfilter` (a measured log at a fixed rate is one run), so a long trace
    is fast."""
    from scipy.signal import lfilter

    t = np.asarray(time_s, dtype=float)
    u = np.asarray(dp_w, dtype=float)
    n, m = len(t), len(r)
    x = np.zeros(m) if x0 is None else np.asarray(x0, dtype=float).copy()
    out = np.empty((n, m))
    out[0] = x
    if n == 1:
        return out
    dt = np.diff(t)
    # split into runs of (nearly) equal steps
    brk = np.flatnonzero(~np.isclose(dt[1:], dt[:-1], rtol=1e-9, atol=1e-12)) + 1
    starts = np.concatenate([[0], brk])
    ends = np.concatenate([brk, [len(dt)]])
    for s, e in zip(starts, ends):
        h = float(dt[s:e].mean())
        a = np.exp(-h / tau)
        for i in range(m):
            # x[k+1] = a x[k] + r (1 - a) u[k]  ->  y = lfilter([b], [1, -a], u, zi)
            b = r[i] * (1.0 - a[i])
            y, _ = lfilter([b], [1.0, -a[i]], u[s:e], zi=[a[i] * x[i]])
            out[s + 1:e + 1, i] = y
            x[i] = y[-1]
    return out


# -- the network in node form, with the fan ---------------------------------------------------------------------

def ladder_matrices(r_c_per_w: Any, tau_s: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(C, G, R) of the Cauer ladder with the impedance of the Foster poles (:func:`foster_to_cauer`): node
    heat capacities (J/C, junction first), the conductance matrix (W/C, :func:`ladder_conductance`) and the
    link resistances (C/W)."""
    rs, cs = foster_to_cauer(r_c_per_w, tau_s)
    return np.asarray(cs, dtype=float), ladder_conductance(rs), np.asarray(rs, dtype=float)


def ladder_conductance(r_link_c_per_w: Any) -> np.ndarray:
    """Conductance matrix (W/C, n x n, or ... x n x n for stacked ladders) of ladders with link
    resistances ``r_link_c_per_w`` (C/W, shape ... x n): link i joins node i to node i + 1, the last link
    the last node to ambient."""
    r = np.asarray(r_link_c_per_w, dtype=float)
    n = r.shape[-1]
    gl = 1.0 / r
    g = np.zeros(r.shape + (n,))
    for i in range(n):
        g[..., i, i] += gl[..., i]
        if i + 1 < n:
            g[..., i, i + 1] -= gl[..., i]
            g[..., i + 1, i] -= gl[..., i]
            g[..., i + 1, i + 1] += gl[..., i]
    return g


def ladder_foster(r_link_c_per_w: Any, c_j_per_c: Any) -> tuple[np.ndarray, np.ndarray]:
    """Foster poles (time constants s, resistances C/W, fastest first) of a Cauer ladder: the die node's
    response to heat put into it (the inverse of :func:`foster_to_cauer`, always well defined)."""
    c = np.asarray(c_j_per_c, dtype=float)
    s = 1.0 / np.sqrt(c)
    g = ladder_conductance(r_link_c_per_w)
    lam, u = np.linalg.eigh(s[:, None] * g * s[None, :])
    r = (s[0] * u[0]) ** 2 / lam
    order = np.argsort(1.0 / lam)
    return (1.0 / lam)[order], r[order]


def link_vector(n: int, link: int) -> np.ndarray:
    """Incidence vector of ladder link ``link`` (1..n): a conductance change dg of that link changes G by
    dg e e^T."""
    e = np.zeros(n)
    e[link - 1] = 1.0
    if link < n:
        e[link] = -1.0
    return e


#: smallest conductance a fan-dependent link may reach (W/C): a duty far below the fitted range must not
#: cut the card off from ambient
MIN_LINK_G = 1e-3


def zoh_tables(c: np.ndarray, g_ref: np.ndarray, e: np.ndarray, g_link_ref: float, dg: np.ndarray, h_s: float
               ) -> tuple[np.ndarray, np.ndarray]:
    """Exact zero-order-hold update of the node network dT/dt = C^-1 (q - G T) over ``h_s`` seconds, for
    each change ``dg`` (W/C, any shape S) of the conductance of the link with incidence vector ``e``
    (conductance ``g_link_ref`` in ``g_ref``; it stays at least :data:`MIN_LINK_G`): (Phi, Gam) of shape
    S + (n, n) with T(t + h) = Phi T(t) + Gam q (q: heat into each node, W, held over the step). G is
    symmetric and C diagonal, so the symmetric form C^-1/2 G C^-1/2 is diagonalised (real, positive
    eigenvalues)."""
    dg = np.maximum(np.asarray(dg, dtype=float), MIN_LINK_G - g_link_ref)
    g = g_ref + dg[..., None, None] * np.outer(e, e)
    s = 1.0 / np.sqrt(c)
    sym = s[:, None] * g * s[None, :]
    lam, u = np.linalg.eigh(sym)
    lam = np.maximum(lam, 1e-12)
    decay = np.exp(-lam * h_s)
    phi = np.einsum("...ik,...k,...jk->...ij", u, decay, u) * (s[:, None] / s[None, :])
    gam = np.einsum("...ik,...k,...jk->...ij", u, -np.expm1(-lam * h_s) / lam, u) * (s[:, None] * s[None, :])
    return phi, gam


# -- leakage fixed point ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class SteadyState:
    """Where a kernel settles with the leakage feedback (:func:`steady_state`)."""

    run_w: float                 # cold runtime power above idle, W
    temp_c: float | None         # settled temperature, C (None: no fixed point below slowdown)
    power_w: float | None        # settled board power, W
    loop_gain: float | None      # R_total x dL/dtheta at the fixed point (>= 1 means no stable point)
    runaway: bool


def steady_state(net: FosterNetwork, run_w: float, mem: float = 0.0) -> SteadyState:
    """Steady temperature and power of a kernel whose board power at the idle temperature is
    ``idle_power_w + run_w`` (W), with the leakage feedback (module docstring): the first fixed point of
    theta = R_total (run_w + L(theta)) below the slowdown temperature, else runaway. In node form the
    fan's controller sets the duty (and so the ladder and the fan's power) at each temperature, the host
    heats the outer node (a kernel runs) and ``mem`` (0..1) weighs the memory hot spot."""
    from scipy.optimize import brentq

    rt = net.r_total_c_per_w
    th_max = net.slowdown_temp_c - net.idle_temp_c
    if net.node_form:
        lad = _Ladder(net)
        fan, ctl = net.fan, net.controller
        fan_idle_w = 0.0 if fan is None else float(fan.fan_w(fan.idle_duty))

        def rise(th: float) -> tuple[float, float]:
            sensed = net.idle_temp_c + th - (net.hot_spot_c * mem if ctl is not None and ctl.without_hot_spot else 0.0)
            d = 0.0 if fan is None else (float(ctl.target(sensed)) if ctl is not None else fan.duty_ref)
            fan_w = 0.0 if fan is None else float(fan.fan_w(d))
            pb = net.idle_power_w + run_w + float(net.leakage.power_w(th)) + fan_w - fan_idle_w
            x = lad.steady(d, pb - fan_w, 1.0)
            return (float(net.ambient_c) + net.r_direct_c_per_w * (pb - fan_w) + net.hot_spot_c * mem + x[0]
                    - net.idle_temp_c), pb

        def f(th: np.ndarray | float) -> np.ndarray:
            return np.vectorize(lambda v: rise(float(v))[0] - float(v))(th)
    else:
        def f(th: np.ndarray | float) -> np.ndarray:
            return rt * (run_w + net.leakage.power_w(th)) - np.asarray(th, dtype=float)

    if th_max <= 0:
        return SteadyState(run_w, None, None, None, True)
    grid = np.linspace(min(0.0, rt * run_w), th_max, 2001)
    vals = f(grid)
    sign = np.flatnonzero(np.sign(vals[:-1]) * np.sign(vals[1:]) <= 0)
    if not len(sign):
        return SteadyState(run_w, None, None, None, True)
    j = int(sign[0])
    th = grid[j] if vals[j] == 0 else float(brentq(f, grid[j], grid[j + 1], xtol=1e-10))
    if net.node_form:
        h = 1e-4
        gain = float((f(th + h) - f(th - h)) / (2 * h)) + 1.0  # d rise / d theta: the loop gain
        return SteadyState(run_w, net.idle_temp_c + th, rise(th)[1], gain, False)
    gain = float(rt * net.leakage.slope_w_per_c(th))
    return SteadyState(run_w, net.idle_temp_c + th, net.idle_power_w + run_w + float(net.leakage.power_w(th)),
                       gain, False)


def runaway_power_w(net: FosterNetwork, max_run_w: float = 5000.0) -> float | None:
    """Smallest cold runtime power above idle (W) at which no fixed point exists below the slowdown
    temperature, or None when even ``max_run_w`` settles below it."""
    if not steady_state(net, max_run_w).runaway:
        return None
    lo, hi = 0.0, max_run_w
    if steady_state(net, lo).runaway:
        return 0.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if steady_state(net, mid).runaway:
            hi = mid
        else:
            lo = mid
        if hi - lo < 1e-3:
            break
    return hi


# -- Cauer ladder --------------------------------------------------------------------------------------------

def foster_to_cauer(r_c_per_w: Any, tau_s: Any) -> tuple[list[float], list[float]]:
    """Cauer ladder (resistances C/W, capacitances J/C, from the junction to ambient) with the same
    impedance as the Foster network sum_i r_i / (1 + s tau_i), by continued-fraction expansion of the
    admittance. Well conditioned for the 1-3 poles used here."""
    r = np.asarray(r_c_per_w, dtype=float)
    tau = np.asarray(tau_s, dtype=float)
    # Z(s) = N(s) / D(s), coefficients highest power first
    den = np.array([1.0])
    for t in tau:
        den = np.polymul(den, [t, 1.0])
    num = np.zeros(1)
    for i in range(len(r)):
        term = np.array([r[i]])
        for j, t in enumerate(tau):
            if j != i:
                term = np.polymul(term, [t, 1.0])
        num = np.polyadd(num, term)
    rs, cs = [], []
    # admittance Y = D/N: take s C off, then invert and take R off, alternately
    a, b = den, num  # Y = a / b
    for _ in range(len(r)):
        a, b = _trim(a), _trim(b)
        c = a[0] / b[0]
        cs.append(float(c))
        rem = _trim(np.polysub(a, np.polymul([c, 0.0], b)))  # Y - sC = rem / b
        # Z' = b / rem
        rr = b[0] / rem[0] if len(b) == len(rem) else 0.0
        rs.append(float(rr))
        rem2 = _trim(np.polysub(b, rr * rem))  # Z' - R = rem2 / rem
        a, b = rem, rem2
        if len(b) == 0 or np.allclose(b, 0.0):
            break
    return rs, cs


def _trim(p: np.ndarray, rtol: float = 1e-12) -> np.ndarray:
    p = np.atleast_1d(np.asarray(p, dtype=float))
    scale = np.max(np.abs(p)) if len(p) else 0.0
    k = 0
    while k < len(p) - 1 and abs(p[k]) <= rtol * scale:
        k += 1
    return p[k:]


def cauer_of(net: FosterNetwork) -> dict[str, Any]:
    """The Cauer ladder of a network as the parameter file records it (junction first)."""
    rs, cs = foster_to_cauer(net.r_c_per_w, net.tau_s)
    return {"r_direct_c_per_w": net.r_direct_c_per_w, "r_c_per_w": rs, "c_j_per_c": cs,
            "nodes": ["die"] + (["sink"] if len(rs) > 1 else []) + (["case"] if len(rs) > 2 else []),
            "note": "junction -r_direct- node 1 (C1) -R1- node 2 (C2) ... -Rn- ambient"}


# -- section checks -------------------------------------------------------------------------------------------

def validate(sec: Section, where: str = SECTION) -> None:
    """SchemaError (naming the field) when the section cannot drive the network model."""
    st = sec.structure
    n = st.get("poles")
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_POLES:
        raise SchemaError(f"{where}.poles: {n!r} is not an integer from 1 to {MAX_POLES}")
    for nm in ("idle_temp_c", "idle_power_w"):
        if nm not in sec:
            raise SchemaError(f"{where}.parameters: {nm} missing")
    prev = 0.0
    for i in range(1, n + 1):
        for nm in (names.foster_r(i), names.foster_tau(i)):
            if nm not in sec:
                raise SchemaError(f"{where}.parameters: {nm} missing ({n} poles)")
        tau = sec.value(names.foster_tau(i))
        if not tau > 0:
            raise SchemaError(f"{where}.parameters.{names.foster_tau(i)}: must be > 0")
        if tau < prev:
            raise SchemaError(f"{where}.parameters.{names.foster_tau(i)}: poles must be ordered fastest first "
                              f"({tau:g} s after {prev:g} s)")
        prev = tau
        if sec.value(names.foster_r(i)) < 0:
            raise SchemaError(f"{where}.parameters.{names.foster_r(i)}: must be >= 0")
    if sec.value(names.R_DIRECT, 0.0) < 0:
        raise SchemaError(f"{where}.parameters.{names.R_DIRECT}: must be >= 0")
    leak = st.get("leakage", {"form": "none"})
    if not isinstance(leak, Mapping) or leak.get("form") not in LEAK_FORMS:
        raise SchemaError(f"{where}.leakage.form: {leak.get('form') if isinstance(leak, Mapping) else leak!r} "
                          f"is not one of {', '.join(LEAK_FORMS)}")
    need = {"linear": (names.LEAK_SIGMA,), "exponential": (names.LEAK_EXP_AMP, names.LEAK_EXP_K)}.get(leak["form"], ())
    for nm in need:
        if nm not in sec:
            raise SchemaError(f"{where}.parameters: {nm} missing (leakage form {leak['form']})")
    sd = st.get("slowdown_temp_c", DEFAULT_SLOWDOWN_C)
    if isinstance(sd, bool) or not isinstance(sd, (int, float)) or not 0 < sd <= 150:
        raise SchemaError(f"{where}.slowdown_temp_c: {sd!r} is not a temperature in (0, 150] C")
    if st.get("form", NODE_FORM) != NODE_FORM:
        raise SchemaError(f"{where}.form: {st.get('form')!r} is not {NODE_FORM!r} (or absent: the Foster form)")
    if st.get("form") == NODE_FORM:
        if NODE_AMBIENT not in sec:
            raise SchemaError(f"{where}.parameters: {NODE_AMBIENT} missing (form {NODE_FORM!r})")
        fan = st.get("fan", {})
        if NODE_FAN_G in sec:
            link = fan.get("link") if isinstance(fan, Mapping) else None
            if isinstance(link, bool) or not isinstance(link, int) or not 1 <= link <= n:
                raise SchemaError(f"{where}.fan.link: {link!r} is not a ladder link from 1 to {n}")
            for key in ("duty_ref_pct", "idle_duty_pct"):
                v = fan.get(key)
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 100:
                    raise SchemaError(f"{where}.fan.{key}: {v!r} is not a duty in [0, 100] %")
        if NODE_HOT_EXP in sec and not sec.value(NODE_HOT_EXP) > 0:
            raise SchemaError(f"{where}.parameters.{NODE_HOT_EXP}: must be > 0")
        bw = st.get("hot_spot", {}).get("busy_weight", 0.5) if isinstance(st.get("hot_spot", {}), Mapping) else None
        if isinstance(bw, bool) or not isinstance(bw, (int, float)) or not 0 <= bw <= 1:
            raise SchemaError(f"{where}.hot_spot.busy_weight: {bw!r} is not a weight in [0, 1]")
    check_names(sec, where, ("idle_temp_c", "idle_power_w", names.R_DIRECT, names.LEAK_SIGMA, names.LEAK_EXP_AMP,
                             names.LEAK_EXP_K, NODE_AMBIENT, NODE_FAN_G, NODE_BUSY_HEAT, NODE_HOT_SPOT, NODE_HOT_EXP,
                             NODE_BUSY_RISE)
                + CONTROLLER_PARAMS + tuple(nm for i in range(1, n + 1)
                                            for nm in (names.foster_r(i), names.foster_tau(i))))


def dry_run(sec: Section) -> np.ndarray:
    """A tiny prediction for the parameter-file checks: a step and a steady state."""
    net = FosterNetwork.from_section(sec)
    t = np.array([0.0, 1.0, 10.0, 100.0])
    temp = net.simulate(t, net.idle_power_w + np.array([50.0, 50.0, 0.0, 0.0]))
    ss = steady_state(net, 10.0)
    return np.append(temp, ss.temp_c if ss.temp_c is not None else 0.0)


# -- traces and kernel sequences (calib predict) -----------------------------------------------------------------

#: the columns of a power trace: time (s) and board power (W); optional ambient (intake air) temperature (C)
TRACE_TIME, TRACE_POWER, TRACE_AMBIENT = "time_s", "power_w", "ambient_c"
#: a trace's logged fan duty (%, NVML nvmlDeviceGetFanSpeed), used instead of the fitted controller
TRACE_FAN = "fan_pct"
#: a trace's logged memory utilization (%, NVML nvmlDeviceGetUtilizationRates().memory), weighs the hot spot
TRACE_UTIL_MEM = "util_mem_pct"


def read_power_trace(path: Any) -> pd.DataFrame:
    """A power trace CSV: ``time_s`` (s, increasing, >= 0) and ``power_w`` (W, board power held until the
    next row), optionally ``ambient_c`` (C), ``fan_pct`` and ``util_mem_pct`` (%, 0-100). BadInputError
    naming the file and the row or column."""
    _, text = read_text_file(path, "a power trace (CSV with time_s, power_w)", "text (CSV) file")
    try:
        df = pd.read_csv(io.StringIO(text))
    except (pd.errors.ParserError, ValueError) as e:
        raise BadInputError(f"{path}: not a CSV table ({e})") from e
    for col in (TRACE_TIME, TRACE_POWER):
        if col not in df.columns:
            raise BadInputError(f"{path}: column '{col}' missing (a power trace has time_s and power_w)")
    for col in [c for c in (TRACE_TIME, TRACE_POWER, TRACE_AMBIENT, TRACE_FAN, TRACE_UTIL_MEM) if c in df.columns]:
        v = pd.to_numeric(df[col], errors="coerce")
        bad = np.flatnonzero(v.isna().to_numpy())
        if len(bad):
            raise BadInputError(f"{path}: row {bad[0] + 1}: column '{col}': {df[col].iloc[bad[0]]!r} is not a number")
        df[col] = v.astype(float)
    for col, what in ((TRACE_FAN, "a fan duty"), (TRACE_UTIL_MEM, "a memory utilization")):
        if col in df.columns:
            bad = np.flatnonzero(~df[col].between(0.0, 100.0).to_numpy())
            if len(bad):
                raise BadInputError(f"{path}: row {bad[0] + 1}: column '{col}': {float(df[col].iloc[bad[0]])!r} is "
                                    f"not {what} in [0, 100] %")
    _check_trace(df[TRACE_TIME].to_numpy(), df[TRACE_POWER].to_numpy(), str(path))
    return df


def predict_trace(net: FosterNetwork, df: pd.DataFrame, source: str = "trace",
                  ambient_ref_c: float | None = None) -> np.ndarray:
    """Temperature (C) at each row of a measured power trace (``time_s``, ``power_w``): the network's
    exact update from idle equilibrium; a row's ``ambient_c`` shifts it by its difference from the
    ambient the network was fitted at (``ambient_ref_c``). A network in node form with a fan follows the
    trace's ``fan_pct`` (%) where the trace has it, else its fitted controller, and weighs the memory hot
    spot by the trace's ``util_mem_pct`` (%) where it has it, else by the running rows (:meth:`FosterNetwork.
    hot_spot_weights`). A measured board power
    already carries the leakage of the temperature it was drawn at, so nothing is fed back; for a trace
    of cold power see :func:`trace_prediction`."""
    return trace_prediction(net, df, source, ambient_ref_c)[0]


def trace_prediction(net: FosterNetwork, df: pd.DataFrame, source: str = "trace",
                     ambient_ref_c: float | None = None, *, cold: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Temperature (C) and board power (W) at each row of a power trace (:func:`predict_trace`).

    ``cold``: the trace's ``power_w`` is what each interval draws at the idle temperature (a power
    model's prediction for the kernel, or its first seconds from idle), not a measured board power: the
    leakage feedback is stepped row by row (the leakage of an interval follows the temperature at its
    start, :meth:`FosterNetwork.simulate_cold`) and the returned power includes it. An ``ambient_c``
    column shifts the temperature after that (its own leakage is not fed back)."""
    t, p = _check_trace(df[TRACE_TIME].to_numpy(), df[TRACE_POWER].to_numpy(), source)
    if net.node_form:
        duty = df[TRACE_FAN].to_numpy(dtype=float) / 100.0 if TRACE_FAN in df.columns else None
        mem = net.hot_spot_weights(df[TRACE_UTIL_MEM].to_numpy(dtype=float)) if TRACE_UTIL_MEM in df.columns else None
        temp, power, _ = simulate_nodes(net, t, p, duty=duty, mem=mem, cold=cold)
    elif cold:
        temp, power = net.simulate_cold(t, p)
    else:
        temp, power = net.simulate(t, p), p
    if TRACE_AMBIENT in df.columns and ambient_ref_c is not None:
        temp = temp + (df[TRACE_AMBIENT].to_numpy(dtype=float) - ambient_ref_c)
    return temp, power


def sequence_temperatures(net: FosterNetwork, start_s: np.ndarray, duration_s: np.ndarray, cold_power_w: np.ndarray,
                          step_s: float = 0.5, source: str = "table") -> tuple[np.ndarray, np.ndarray]:
    """Temperature (C) at the end of each kernel of a sequence and its mean board power (W): kernel k
    draws ``cold_power_w[k]`` (its power at the idle temperature) from ``start_s[k]`` for ``duration_s[k]``,
    the card idles in the gaps, the leakage feedback is stepped every ``step_s`` seconds at most
    (:meth:`FosterNetwork.simulate_cold`). Kernels must not overlap (BadInputError naming the row)."""
    s = np.asarray(start_s, dtype=float)
    d = np.asarray(duration_s, dtype=float)
    for k in range(len(s)):
        if not (np.isfinite(s[k]) and s[k] >= 0):
            raise BadInputError(f"{source}: row {k + 1}: start_s {s[k]!r} is not a time >= 0 s")
        if not (np.isfinite(d[k]) and d[k] > 0):
            raise BadInputError(f"{source}: row {k + 1}: duration {d[k]!r} s is not a positive time "
                                "(give duration_s, or time_s)")
        if k and s[k] < s[k - 1] + d[k - 1] - 1e-9:
            raise BadInputError(f"{source}: row {k + 1}: starts at {s[k]:g} s, before row {k}'s kernel ends "
                                f"({s[k - 1] + d[k - 1]:g} s); kernels must be in start order and not overlap")
    # a time grid: every kernel edge, and at most step_s apart
    edges = np.unique(np.concatenate([[0.0], s, s + d]))
    grid = [edges[:1]]
    for a, b in zip(edges[:-1], edges[1:]):
        m = max(1, int(math.ceil((b - a) / step_s)))
        grid.append(np.linspace(a, b, m + 1)[1:])
    t = np.concatenate(grid)
    cold = np.full(len(t), net.idle_power_w)
    for k in range(len(s)):
        cold[(t >= s[k] - 1e-12) & (t < s[k] + d[k] - 1e-12)] = cold_power_w[k]
    temp, power = net.simulate_cold(t, cold)
    end_temp = np.empty(len(s))
    mean_p = np.empty(len(s))
    for k in range(len(s)):
        j = int(np.searchsorted(t, s[k] + d[k] - 1e-12))
        # the temperature when the kernel ends: the state at its end time, before the idle power applies
        end_temp[k] = temp[j] - net.r_direct_c_per_w * (power[j] - power[j - 1]) if j > 0 else temp[j]
        sel = (t >= s[k] - 1e-12) & (t < s[k] + d[k] - 1e-12)
        mean_p[k] = float(power[sel].mean())
    return end_temp, mean_p
