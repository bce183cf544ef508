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

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from calib.core import names
from calib.core.errors import BadInputError, SchemaError
from calib.core.params import Section

MODEL_NAME = "foster"
SECTION = "thermal_network"
MAX_POLES = 3
LEAK_FORMS = ("none", "linear", "exponential")
#: slowdown temperature used when neither the device nor the user gives one (typical NVIDIA slowdown
#: thresholds are 90-100 C)
DEFAULT_SLOWDOWN_C = 95.0


@dataclass(frozen=True)
class Leakage:
    """Static power above its idle value as a function of the rise above idle (W, theta in C)."""

    form: str = "none"
    sigma_w_per_c: float = 0.0
    amp_w: float = 0.0
    k_per_c: float = 0.0

    def power_w(self, theta_c: np.ndarray | float) -> np.ndarray:
        th = np.asarray(theta_c, dtype=float)
        if self.form == "linear":
            return self.sigma_w_per_c * th
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
        return cls(tuple(sec.value(names.foster_r(i)) for i in range(1, n + 1)),
                   tuple(sec.value(names.foster_tau(i)) for i in range(1, n + 1)),
                   sec.value(names.R_DIRECT, 0.0), sec.value("idle_temp_c"), sec.value("idle_power_w"), leak,
                   float(sec.structure.get("slowdown_temp_c", DEFAULT_SLOWDOWN_C)))

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
        t, p = _check_trace(time_s, power_w)
        x = simulate_states(np.asarray(self.r_c_per_w), np.asarray(self.tau_s), t, p - self.idle_power_w, x0)
        return self.idle_temp_c + self.r_direct_c_per_w * (p - self.idle_power_w) + x.sum(axis=1)

    def simulate_cold(self, time_s: np.ndarray, cold_power_w: np.ndarray,
                      x0: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Temperature (C) and board power (W) at each time for a trace of *cold* power (the power each
        interval would draw at the idle temperature), stepping the leakage feedback: the leakage of an
        interval follows the temperature at its start. Returns (temperature, power)."""
        t, pc = _check_trace(time_s, cold_power_w)
        r, tau = np.asarray(self.r_c_per_w), np.asarray(self.tau_s)
        x = np.zeros(len(r)) if x0 is None else np.asarray(x0, dtype=float).copy()
        temp = np.empty(len(t))
        power = np.empty(len(t))
        dts = np.diff(t, append=t[-1])
        rd = self.r_direct_c_per_w
        for k in range(len(t)):
            dp0 = pc[k] - self.idle_power_w
            # the direct term answers at once: solve theta = rd (dp0 + L(theta)) + sum x by a few iterations
            theta = rd * dp0 + x.sum()
            for _ in range(20):
                new = rd * (dp0 + float(self.leakage.power_w(theta))) + x.sum()
                if abs(new - theta) < 1e-9:
                    break
                theta = new
            dp = dp0 + float(self.leakage.power_w(theta))
            temp[k], power[k] = self.idle_temp_c + theta, self.idle_power_w + dp
            a = np.exp(-dts[k] / tau)
            x = a * x + r * (1.0 - a) * dp
        return temp, power


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
    bad = np.flatnonzero(~np.isfinite(t))
    if len(bad):
        raise BadInputError(f"{where}: row {bad[0] + 1}: time {t[bad[0]]} is not a finite number")
    bad = np.flatnonzero(~np.isfinite(p))
    if len(bad):
        raise BadInputError(f"{where}: row {bad[0] + 1}: power {p[bad[0]]} is not a finite number")
    bad = np.flatnonzero(t < 0)
    if len(bad):
        raise BadInputError(f"{where}: row {bad[0] + 1}: time {t[bad[0]]:g} s is negative")
    bad = np.flatnonzero(np.diff(t) <= 0)
    if len(bad):
        k = bad[0] + 1
        raise BadInputError(f"{where}: row {k + 1}: time {t[k]:g} s does not come after the previous row's "
                            f"{t[k - 1]:g} s (times must increase)")
    bad = np.flatnonzero(p < 0)
    if len(bad):
        raise BadInputError(f"{where}: row {bad[0] + 1}: power {p[bad[0]]:g} W is negative")
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


# -- leakage fixed point ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class SteadyState:
    """Where a kernel settles with the leakage feedback (:func:`steady_state`)."""

    run_w: float                 # cold runtime power above idle, W
    temp_c: float | None         # settled temperature, C (None: no fixed point below slowdown)
    power_w: float | None        # settled board power, W
    loop_gain: float | None      # R_total x dL/dtheta at the fixed point (>= 1 means no stable point)
    runaway: bool


def steady_state(net: FosterNetwork, run_w: float) -> SteadyState:
    """Steady temperature and power of a kernel whose board power at the idle temperature is
    ``idle_power_w + run_w`` (W), with the leakage feedback (module docstring): the first fixed point of
    theta = R_total (run_w + L(theta)) below the slowdown temperature, else runaway."""
    from scipy.optimize import brentq

    rt = net.r_total_c_per_w
    th_max = net.slowdown_temp_c - net.idle_temp_c

    def f(th: np.ndarray | float) -> np.ndarray:
        return rt * (run_w + net.leakage.power_w(th)) - np.asarray(th, dtype=float)

    if th_max <= 0:
        return SteadyState(run_w, None, None, None, True)
    grid = np.linspace(min(0.0, rt * run_w), th_max, 2001)
    vals = f(grid)
    sign = np.flatnonzero(np.sign(vals[:-1]) * np.sign(vals[1:]) <= 0)
    if vals[0] < 0:  # a negative run power: the fixed point is below idle, start from it
        sign = np.flatnonzero(np.sign(vals[:-1]) * np.sign(vals[1:]) <= 0)
    if not len(sign):
        return SteadyState(run_w, None, None, None, True)
    j = int(sign[0])
    th = grid[j] if vals[j] == 0 else float(brentq(f, grid[j], grid[j + 1], xtol=1e-10))
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
    from calib.model.validation import check_names

    check_names(sec, where, ("idle_temp_c", "idle_power_w", names.R_DIRECT, names.LEAK_SIGMA, names.LEAK_EXP_AMP,
                             names.LEAK_EXP_K) + tuple(nm for i in range(1, n + 1)
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


def read_power_trace(path: Any) -> "pd.DataFrame":
    """A power trace CSV: ``time_s`` (s, increasing, >= 0) and ``power_w`` (W, board power held until the
    next row), optionally ``ambient_c`` (C). BadInputError naming the file and the row or column."""
    import io

    import pandas as pd

    from calib.core.samples import read_text_file

    _, text = read_text_file(path, "a power trace (CSV with time_s, power_w)", "text (CSV) file")
    try:
        df = pd.read_csv(io.StringIO(text))
    except (pd.errors.ParserError, ValueError) as e:
        raise BadInputError(f"{path}: not a CSV table ({e})") from e
    for col in (TRACE_TIME, TRACE_POWER):
        if col not in df.columns:
            raise BadInputError(f"{path}: column '{col}' missing (a power trace has time_s and power_w)")
    for col in [c for c in (TRACE_TIME, TRACE_POWER, TRACE_AMBIENT) if c in df.columns]:
        v = pd.to_numeric(df[col], errors="coerce")
        bad = np.flatnonzero(v.isna().to_numpy())
        if len(bad):
            raise BadInputError(f"{path}: row {bad[0] + 1}: column '{col}': {df[col].iloc[bad[0]]!r} is not a number")
        df[col] = v.astype(float)
    _check_trace(df[TRACE_TIME].to_numpy(), df[TRACE_POWER].to_numpy(), str(path))
    return df


def predict_trace(net: FosterNetwork, df: "pd.DataFrame", source: str = "trace",
                  ambient_ref_c: float | None = None) -> np.ndarray:
    """Temperature (C) at each row of a measured power trace (``time_s``, ``power_w``): the network's
    exact update from idle equilibrium; a row's ``ambient_c`` shifts it by its difference from the
    ambient the network was fitted at (``ambient_ref_c``)."""
    t, p = _check_trace(df[TRACE_TIME].to_numpy(), df[TRACE_POWER].to_numpy(), source)
    temp = net.simulate(t, p)
    if TRACE_AMBIENT in df.columns and ambient_ref_c is not None:
        temp = temp + (df[TRACE_AMBIENT].to_numpy(dtype=float) - ambient_ref_c)
    return temp


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
