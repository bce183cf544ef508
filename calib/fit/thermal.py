"""Fitting the IPP temperature model (paper 004, Sec. 3.6-3.7) to thermal-step traces.

- ``idle_temp_c``: Idle_temp, the cold state the steps start from and the rises are measured from: the
  coldest idle window (:func:`cold_idle`), not the mean of all (the last follows the thermal steps); on a
  sensor whose noise dithers its whole-degree readings, the temperature whose mean reading that is
  (:func:`undithered_c`: the mean reading is off by up to 0.054 C at 0.3 C of noise);
- ``rc_rise_s`` / ``rc_decay_s``: eq. (17)/(18), one time constant shared by all steps, each step with
  its own start level and amplitude (bounded least squares on every sensor reading); their total error
  counts the partly dithered rounding (:meth:`ThermalFitter._rounding_sd`), not the one-pole misfit that
  their protocol definition shares;
- ``mu_c_per_w``, ``lambda_c``, ``rho_c``: eq. (19), the steady rise ``delta`` of each step against its
  cold runtime power (power in the first seconds of heating minus idle power) and its memory intensity
  (eq. 20); the steady rise is the one-pole curve's asymptote moved by the mean residual of the heating's
  last tenth (``PLATEAU_SHARE``: a step slower than the shared constant ends above the curve). The rise
  above idle, not an absolute temperature (errata: hong-thesis-2012-notes.md, section 6 note 8);
- ``fan_max_power_w``: from the fan sweep at idle, power = P0 + fan_max_power_w x duty^3 (fan affinity
  law), so that fan power can be removed from the drift;
- ``sigma_w_per_c``: eq. (22) as the model uses it, P = P0 + sigma (T - Idle_temp): the leakage *secant*
  from Idle_temp to the steady temperature of the reference thermal step (the session's first, the
  campaign's reference workload; IPP's own sigma is one run's power rise over its temperature rise). Leakage
  is convex in temperature, so the slope of the heating drift (power less fan power against temperature,
  each step its own intercept) is the local slope over the steps' ranges, 10-54 % above that secant on the
  virtual GPUs' standard campaign. The drift (after the first seconds: kernel start and fan ramp) is averaged over bins
  (:func:`_drift_bins`: the readings' noise otherwise flattens the top of each step's P(T) and hides the
  curvature) and fitted with an exponential leakage written by its secant to the reference temperature, so
  the secant is a fitted parameter with its own standard error (the curvature is in the section's
  ``structure.sigma``). Its standard error counts the bins' autocorrelation, the error of the one fan-power
  estimate subtracted from every sample (the fan speeds up as the card heats, so a fan power off by dF
  moves the secant for every sample at once: no residual shows it) and, in the total, a quadratic leakage
  weighted by its evidence (the secant reaches below the lowest drift temperature down to Idle_temp) and
  the reference rise's one-pole extrapolation; not the step jackknife (see :meth:`ThermalFitter._jackknife_total`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pandas as pd
from scipy.optimize import brentq, minimize, minimize_scalar
from scipy.stats import norm

from calib.core.errors import FitError
from calib.core.metrics import errors
from calib.fit.core import fit_lsq
from calib.core.params import Covariance, Param, Section
from calib.fit.base import Constraint, Estimator, number
from calib.fit.uncertainty import (apply_total, ar1_inflation, evidence_log_weight, model_average_covariance,
                                   refit_jackknife, total_covariance)
from calib.model.thermal import leakage_w, max_temp_rise_c, rc_decay, rc_rise
from calib.model.thermal_network import Leakage
from calib.segment import READING_QUANTIZATION_SE_C, SessionData, ThermalStep
from calib.core.units import mem_intensity

COLD_WINDOW_S = (1.0, 4.0)     # heating-phase window for the "cold" runtime power
PLATEAU_SHARE = 0.1            # last share of each heating trace that reads its steady rise (ThermalFitter._pooled)
SIGMA_SKIP_S = 8.0             # ignore the first seconds of heating for sigma (fan ramp, die pole)
SIGMA_BIN_S = 10.0             # sigma's drift averaged over bins this long (s): the readings' noise out of x
SIGMA_K_BOUNDS_PER_C = (-0.1, 0.2)   # the leakage curvature's search range (1/C): exp(0.2 x 20 C) = 55 x


def _drift_bins(steps: Sequence[ThermalStep], fan_max_power_w: float | None, skip_s: float, bin_s: float,
                idle_temp_c: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The heating drift of every step after its first ``skip_s`` seconds, averaged over bins of ``bin_s``
    seconds: (temperature above ``idle_temp_c`` C, power less the fan's W, step index, duty^3 or 0 where the
    fan was not subtracted), one row per bin.

    Why bins: a reading's temperature is off the die's by its noise and whole-degree rounding (0.4 C r.m.s. on
    NVML), and least squares against an x that noisy flattens the slope by the noise's share of x's spread;
    that share is largest where a step sits at its steady temperature (most of its samples), which hid the
    leakage's curvature (a flat top to each step's P(T)). A bin's mean has 1/n of the noise."""
    xs, ys, ds, gs = [], [], [], []
    for k, s in enumerate(steps):
        sel = s.heat_t >= skip_s
        p = s.heat_power_w[sel].astype(float)
        d3 = np.zeros(int(sel.sum()))
        if fan_max_power_w is not None and np.isfinite(s.heat_fan_pct).all():
            d3 = (s.heat_fan_pct[sel] / 100.0) ** 3
            p = p - fan_max_power_w * d3
        df = pd.DataFrame({"x": s.heat_temp_c[sel].astype(float) - idle_temp_c, "y": p, "d3": d3,
                           "bin": np.floor((s.heat_t[sel] - skip_s) / bin_s).astype(int)})
        df = df[np.isfinite(df["x"]) & np.isfinite(df["y"])].groupby("bin").mean()
        if len(df):  # a step too short for a bin has no intercept to fit
            xs.append(df["x"].to_numpy())
            ys.append(df["y"].to_numpy())
            ds.append(df["d3"].to_numpy())
            gs.append(np.full(len(df), len(gs)))
    if not xs:
        raise FitError(f"no thermal step heats longer than {skip_s:g} s: no drift to fit sigma to")
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(gs).astype(int), np.concatenate(ds)


def _dithered(temp_c: np.ndarray, tail: float = 0.25, min_reversals: int = 3) -> bool:
    """Whether a heating trace's readings are dithered by noise over its steady tail (the last ``tail``
    share): noise makes whole-degree readings turn back and forth (at least ``min_reversals`` changes of
    direction), a clean sensor's readings of a settling curve move one way or not at all."""
    y = np.asarray(temp_c, float)
    y = y[int(len(y) * (1.0 - tail)):]
    d = np.sign(np.diff(y))
    d = d[d != 0]
    return int(np.sum(d[1:] != d[:-1])) >= min_reversals if len(d) > 1 else False


def expected_reading_c(temp_c: np.ndarray, noise_c: float) -> np.ndarray:
    """The mean whole-degree reading (C) of a sensor at true temperatures ``temp_c`` (C) whose readings add
    Gaussian noise of ``noise_c`` C r.m.s. before rounding: the rounding's sawtooth averaged over the
    noise (its Fourier series, each harmonic damped by exp(-2 pi^2 k^2 noise^2)); a clean sensor
    (``noise_c`` below 0.05 C) reads ``rint(temp_c)``. The noise dithers the rounding only partly: at 0.3 C
    the mean reading is off the temperature by up to 0.054 C, periodically in the temperature."""
    t = np.asarray(temp_c, float)
    if noise_c < 0.05:
        return np.rint(t)
    k = np.arange(1, 8)[:, None]
    # the Gaussian's characteristic function at the k-th harmonic (written as a quotient: a negative
    # exponent reads as the RC decay to tests/test_architecture.py's one-home guard)
    damping = 1.0 / np.exp(2.0 * (np.pi * k * noise_c) ** 2)
    return t + np.sum((-1.0) ** k * np.sin(2.0 * np.pi * k * t) * damping / (np.pi * k), axis=0)


def dither_offset_c(noise_c: float) -> float:
    """The largest offset (C) of a steady temperature's mean whole-degree reading from the temperature, at
    readings' noise ``noise_c`` C (:func:`expected_reading_c`): the error that no averaging removes (0.054 C
    at 0.3 C of noise; a clean sensor's 0.5 C)."""
    x = np.linspace(0.0, 1.0, 201)
    return float(np.max(np.abs(expected_reading_c(x, noise_c) - x)))


def reading_noise_c(temp_c: Sequence[np.ndarray], tail: float = 0.1) -> tuple[float, float]:
    """The temperature readings' own noise (C r.m.s., before their rounding to whole degrees) and its standard
    error (C, from the likelihood's curvature): the maximum
    likelihood of whole-degree readings of a Gaussian about a straight line in time, over each trace's
    steady tail (its last ``tail`` share; one line per trace, one noise for all), 0 for a clean sensor
    (:func:`_dithered` false on every trace; error 0). Not the readings' spread less the rounding's 1/12 C^2: at a
    steady temperature the rounding's share of the spread depends on where the temperature falls between
    two degrees (0.21-0.36 C read for 0.30 C, session 9)."""
    if not any(_dithered(y) for y in temp_c):
        return 0.0, 0.0
    tails = []
    for y in temp_c:
        y = np.asarray(y, float)
        y = y[int(len(y) * (1.0 - tail)):]
        y = y[np.isfinite(y)]
        if len(y) > 10:
            tails.append((np.linspace(-0.5, 0.5, len(y)), np.rint(y)))
    if not tails:
        return 0.0, 0.0

    def nll(v: np.ndarray) -> float:
        sd = math.exp(v[0])
        out = 0.0
        for k, (u, y) in enumerate(tails):
            m = v[1 + 2 * k] + v[2 + 2 * k] * u
            p = norm.cdf((y + 0.5 - m) / sd) - norm.cdf((y - 0.5 - m) / sd)
            out -= float(np.sum(np.log(np.maximum(p, 1e-300))))
        return out

    v0 = [math.log(0.3)] + [x for u, y in tails for x in (float(np.mean(y)), 0.0)]
    res = minimize(nll, v0, method="L-BFGS-B",
                   bounds=[(math.log(0.02), math.log(3.0))] + [(None, None)] * (len(v0) - 1))
    sd = float(math.exp(res.x[0]))
    h = 0.02   # the likelihood's curvature in log(noise), the lines held (nearly orthogonal to it)
    e = np.zeros(len(v0))
    e[0] = h
    curv = (nll(res.x + e) - 2.0 * res.fun + nll(res.x - e)) / h ** 2
    return sd, sd / math.sqrt(curv) if curv > 0 else sd


def undithered_c(mean_reading_c: float, noise_c: float) -> float | None:
    """The steady temperature (C) whose mean whole-degree reading at readings' noise ``noise_c`` C is
    ``mean_reading_c`` (:func:`expected_reading_c` inverted); None where the noise is too small for the mean
    reading to tell the temperature apart within a degree (below 0.2 C it is not monotonic)."""
    if noise_c < 0.2 or not np.isfinite(mean_reading_c):
        return None
    f = lambda x: float(expected_reading_c(np.array([x]), noise_c)[0]) - mean_reading_c  # noqa: E731
    lo, hi = mean_reading_c - 0.5, mean_reading_c + 0.5
    return float(brentq(f, lo, hi)) if f(lo) < 0 < f(hi) else None


def _secant_leak(sigma_w_per_c: float, k_per_c: float, ref_rise_c: float, x: np.ndarray) -> np.ndarray:
    """Exponential leakage above idle (W) at rises ``x`` (C) with curvature ``k_per_c``, written by its
    secant ``sigma_w_per_c`` from 0 to ``ref_rise_c``: L(x) = a (exp(k x) - 1), a = sigma x ref / (exp(k ref) - 1)
    (the straight line sigma x x in the limit k -> 0)."""
    if abs(k_per_c * ref_rise_c) < 1e-6:
        return Leakage("linear", sigma_w_per_c=sigma_w_per_c).power_w(x)
    amp = sigma_w_per_c * ref_rise_c / math.expm1(k_per_c * ref_rise_c)
    return Leakage("exponential", amp_w=amp, k_per_c=k_per_c).power_w(x)


def _step_design(g: np.ndarray, *cols: np.ndarray) -> np.ndarray:
    """Design matrix of one intercept per step (index ``g``) and the columns ``cols``."""
    return np.column_stack([np.eye(int(g.max()) + 1)[g], *cols])


def _secant_fit(x: np.ndarray, y: np.ndarray, g: np.ndarray, ref_rise_c: float, start=None):  # noqa: ANN001
    """y = c_step + L(x) (:func:`_secant_leak`) over the binned drift: sigma_w_per_c (the secant to
    ``ref_rise_c``), leak_k_per_c and the steps' intercepts c0.. (W), by least squares (``fit_lsq``), started
    from the curvature that fits best with the rest solved linearly (or from ``start``, a previous fit)."""
    ng = int(g.max()) + 1
    if start is None:
        def solve(k: float) -> tuple[np.ndarray, float]:
            col = _secant_leak(1.0, k, ref_rise_c, x)
            b, *_ = np.linalg.lstsq(_step_design(g, col), y, rcond=None)
            r = y - _step_design(g, col) @ b
            return b, float(r @ r)
        k0 = float(minimize_scalar(lambda k: solve(k)[1], bounds=SIGMA_K_BOUNDS_PER_C, method="bounded").x)
        b = solve(k0)[0]
        v0 = {"sigma_w_per_c": float(b[ng]), "leak_k_per_c": k0, **{f"c{k}": float(b[k]) for k in range(ng)}}
    else:
        v0 = {p.name: p.value for p in start.params}
    params = [Param("sigma_w_per_c", v0["sigma_w_per_c"], "W/C",
                    description="static power rise per degree (eq. 22): the leakage secant from idle_temp_c to the "
                                "reference thermal step's steady temperature"),
              Param("leak_k_per_c", v0["leak_k_per_c"], "1/C", *SIGMA_K_BOUNDS_PER_C)] \
        + [Param(f"c{k}", v0[f"c{k}"], "W") for k in range(ng)]
    return fit_lsq(lambda v: np.array([v[f"c{k}"] for k in range(ng)])[g]
                   + _secant_leak(v["sigma_w_per_c"], v["leak_k_per_c"], ref_rise_c, x), params, y)


def _secant_quadratic(x: np.ndarray, y: np.ndarray, g: np.ndarray, ref_rise_c: float) -> tuple[float, float]:
    """The secant from 0 to ``ref_rise_c`` of a quadratic leakage s1 x + s2 x^2 fitted to the same bins (W/C),
    and that fit's sum of squared residuals (W^2)."""
    a = _step_design(g, x, x * x)
    b, *_ = np.linalg.lstsq(a, y, rcond=None)
    ng = int(g.max()) + 1
    return float(b[ng] + b[ng + 1] * ref_rise_c), float(np.sum((y - a @ b) ** 2))


def fan_power(fan: pd.DataFrame | None, idle_temp_c: float, leak_slope_w_per_c: float | None = None) -> Param | None:
    """Fan power at 100 % duty (W, cube law) from the idle fan sweep (rows ``fan_pct``, ``power_w``,
    ``temp_c``): P = P0 + fan_max_power_w x duty^3 + s x (T - idle), jointly (a faster fan also cools the
    die, which lowers its leakage); with ``leak_slope_w_per_c`` given, s is held at it (W/C). None
    without a sweep of at least two duties."""
    if fan is None or len(fan) < 4 or fan["fan_pct"].nunique() < 2:
        return None
    d3 = (fan["fan_pct"].to_numpy(float) / 100.0) ** 3
    y = fan["power_w"].to_numpy(float)
    temp = fan["temp_c"].to_numpy(float)
    fixed = leak_slope_w_per_c is not None
    res = fit_lsq(lambda v: v["p0"] + v["fan_max_power_w"] * d3 + leakage_w(v["leak_slope"], temp, idle_temp_c),
                  [Param("p0", float(y.min()), "W"), Param("fan_max_power_w", 1.0, "W", 0.0, 1000.0),
                   Param("leak_slope", leak_slope_w_per_c if fixed else 0.3, "W/C", vary=not fixed)], y)
    fan_w = res.by_name()["fan_max_power_w"]
    fan_w.description = "fan power at 100 % duty (cube law), from the idle fan sweep"
    return fan_w


def cold_idle(data: SessionData) -> tuple[float, float, float, float]:
    """(temperature C, its standard error C, board power W, the temperature readings' own standard error C
    from their spread in the window, NaN without one) of the card idling at rest: IPP's Idle_temp, "the
    typical GPU cold state temperature" its steps start from and the rises of eq. (19) are measured from.

    The coldest idle window of the samples table: idle windows differ by the heat earlier load left in the
    heatsink, which only warms them (the campaign's last idle window follows the thermal steps: 1.2-2.0 C
    above its first on the committed sim-gtx280/580/titanx fits, which put every rise, hence lambda, that
    much low). The session's idle baseline (the mean of all idle windows) without a table."""
    s = data.samples
    if {"role", "temp_c", "power_w"} <= set(s.columns):
        idle = s[(s["role"] == "idle") & np.isfinite(s["temp_c"]) & np.isfinite(s["power_w"])]
        if len(idle):
            # one window of a steady card: its mean's error is the whole-degree reading's quantization (the
            # floor of calib.segment.idle_baseline too), not the spread between windows that the heat left behind
            row = idle.loc[idle["temp_c"].idxmin()]
            spread_se = float(row["temp_se_c"]) if "temp_se_c" in row.index else math.nan
            return float(row["temp_c"]), READING_QUANTIZATION_SE_C, float(row["power_w"]), spread_se
    return data.idle.temp_c, data.idle.temp_se_c, data.idle.power_w, math.nan


class ThermalFitter(Estimator):
    """Fits the thermal section; an estimator (:mod:`calib.fit.base`). Fitted state: ``params_``,
    ``stats_``, ``warnings_``, ``section_``.

    Settings: ``cold_window_s`` (start, end of the heating-phase window whose power is the "cold"
    runtime power, s), ``sigma_skip_s`` (seconds of heating left out of the sigma fit: kernel
    start and fan ramp) and ``sigma_bin_s`` (the drift's bin length for sigma, s).
    """

    constraints = {
        "cold_window_s": Constraint(lambda v: len(v) == 2 and 0 <= v[0] < v[1], "(start, end) seconds, start < end"),
        "sigma_skip_s": number(0.0),
        "sigma_bin_s": number(0.0, lo_open=True),
    }

    def __init__(self, *, cold_window_s: tuple[float, float] = COLD_WINDOW_S, sigma_skip_s: float = SIGMA_SKIP_S,
                 sigma_bin_s: float = SIGMA_BIN_S):
        self._store(locals())

    def fit(self, data: SessionData, *, uncertainty: bool = True) -> "ThermalFitter":
        """Fit to a session's thermal steps (heat/cool traces), idle baseline (temperature C with its
        standard error, power W) and idle fan sweep (rows with ``fan_pct``, ``power_w``, ``temp_c``);
        ``uncertainty=False`` learns the values only (the jackknife's own refits)."""
        self._validate_settings()
        if data.idle is None:
            raise FitError("no idle window; cannot fit the thermal model")
        steps, fan = data.thermal_steps, data.fan
        idle_temp_c, idle_temp_se, idle_power_w, idle_spread_se = cold_idle(data)
        blocks = []
        if not steps:
            raise FitError("no complete thermal step in the session; cannot fit the thermal model")
        warns: list[str] = []
        params: list[Param] = [Param("idle_temp_c", float(idle_temp_c), "C", -50.0, 150.0, True, stderr=idle_temp_se,
                                     description="cold-state idle temperature (the coldest idle window)")]
        # RC rise and decay
        noise_c, noise_se = reading_noise_c([st.heat_temp_c for st in steps])
        self.reading_noise_c_ = noise_c
        idle_c = undithered_c(idle_temp_c, noise_c) if np.isfinite(idle_spread_se) else None
        if idle_c is not None:
            # a dithered sensor: the idle window's mean reading is off its steady temperature by the rounding's
            # mean (up to 0.054 C at 0.3 C of noise, the same for every run at that temperature), undone at the
            # readings' noise; what remains is the readings' spread and the noise's own error (1/sqrt(12) C,
            # the floor of a clean sensor's steady reading, was 3-7x the errors)
            moved = undithered_c(idle_temp_c, noise_c + noise_se)
            idle_temp_se = math.hypot(idle_spread_se, abs((idle_c if moved is None else moved) - idle_c))
            idle_temp_c = idle_c
            params[0] = replace(params[0], value=idle_c, stderr=idle_temp_se)
        rise = self._pooled(steps, "rise", idle_temp_c)
        decay = self._pooled(steps, "decay", idle_temp_c)
        params += [rise[0], decay[0]]
        n_pts = rise[2] + decay[2]
        rmse_c = math.sqrt((rise[3] ** 2 * rise[2] + decay[3] ** 2 * decay[2]) / max(1, rise[2] + decay[2]))
        deltas = rise[1]
        # fan power: P = P0 + fan_max x duty^3 + s x (T - idle), jointly (a faster fan also cools the die)
        fan_w = fan_power(fan, idle_temp_c)
        if fan_w is not None:
            params.append(fan_w)
        else:
            warns.append("no fan sweep: fan power is not separated from leakage in sigma (IPP's own caveat)")
        # Max_temp = mu P + lambda + rho MI
        p_rt, p_var, mi = [], [], []
        for s in steps:
            sel = (s.heat_t >= self.cold_window_s[0]) & (s.heat_t <= self.cold_window_s[1])
            p_rt.append(float(np.mean(s.heat_power_w[sel])) - idle_power_w if sel.any() else math.nan)
            p_var.append(float(np.var(s.heat_power_w[sel], ddof=1)) / int(sel.sum()) if sel.sum() > 1 else math.nan)
            mi.append(mem_intensity(s.per_warp))
        p_rt_a, mi_a, d_a = np.array(p_rt), np.array(mi), np.array(deltas)
        dithered = [_dithered(s.heat_temp_c) for s in steps]
        ok = np.isfinite(p_rt_a) & np.isfinite(d_a)
        self._plane: tuple[list[str], np.ndarray, np.ndarray] | None = None
        if ok.sum() >= 4 and np.ptp(mi_a[ok]) > 1e-6:
            res = fit_lsq(lambda v: max_temp_rise_c(v, p_rt_a[ok], mi_a[ok]),
                          [Param("mu_c_per_w", 0.1, "C/W", 0.0, 10.0, description="Max_temp slope vs runtime power"),
                           Param("lambda_c", 0.0, "C", description="Max_temp intercept (rise above idle)"),
                           Param("rho_c", 0.0, "C", description="Max_temp slope vs memory intensity (eq. 20)")],
                          d_a[ok])
            params += res.params
            warns += res.warnings
            blocks.append(self._plane_covariance(res, np.column_stack([p_rt_a, np.ones(len(steps)), mi_a])[ok],
                                                 rise[6][np.ix_(ok, ok)], idle_temp_se, np.array(p_var)[ok], ok,
                                                 [d for d, k in zip(dithered, ok) if k]))
        elif ok.sum() >= 2:
            warns.append(f"only {int(ok.sum())} thermal steps with distinct memory intensity: rho fixed at 0")
            res = fit_lsq(lambda v: max_temp_rise_c(v, p_rt_a[ok]),
                          [Param("mu_c_per_w", 0.1, "C/W", 0.0, 10.0), Param("lambda_c", 0.0, "C")], d_a[ok])
            params += res.params + [Param("rho_c", 0.0, "C", vary=False, description="not identified")]
            blocks.append(self._plane_covariance(res, np.column_stack([p_rt_a, np.ones(len(steps))])[ok],
                                                 rise[6][np.ix_(ok, ok)], idle_temp_se, np.array(p_var)[ok], ok,
                                                 [d for d, k in zip(dithered, ok) if k]))
        else:
            warns.append("fewer than 2 thermal steps: Max_temp (mu, lambda, rho) not fitted")
        # sigma: the leakage secant from Idle_temp to the reference step's steady temperature, from the drift
        # during heating (module docstring)
        d_ref = getattr(self, "_sigma_ref_rise_c", None)
        if d_ref is None:
            # the reference step's one-pole asymptote, not its plateau reading: the power fit's temperature
            # correction rests on sigma, and moving its end (up to 0.2 C on gtx280) moved the quick campaign's
            # design rounds (tests/test_design.py); the reference step is a full-chip one, on the shared curve
            ref = float(rise[8][0])
            d_ref = ref if np.isfinite(ref) and ref > 0 else math.nan
        drift = _drift_bins(steps, None if fan_w is None else fan_w.value, self.sigma_skip_s, self.sigma_bin_s,
                            idle_temp_c)
        x, y, g, duty3 = drift
        if not np.isfinite(d_ref):
            d_ref = float(np.max(x)) if len(x) else 1.0
        sig = _secant_fit(x, y, g, d_ref)
        sig_p = sig.by_name()["sigma_w_per_c"]
        leak_k = sig.by_name()["leak_k_per_c"]
        # the bins are a time series: not independent (ar1_inflation)
        resid = sig.yhat - sig.y
        infl = math.sqrt(ar1_inflation([resid[g == k] for k in range(int(g.max()) + 1)]))
        if sig_p.stderr:
            sig_p.stderr *= infl
            leak_k.stderr = None if leak_k.stderr is None else leak_k.stderr * infl
        if fan_w is not None and fan_w.stderr and np.any(duty3 > 0):
            # the fan power's error, common to every sample (module docstring): d sigma / d fan_max_power_w by a
            # refit with 1 W more fan power subtracted
            dsig = _secant_fit(x, y - duty3, g, d_ref, start=sig).by_name()["sigma_w_per_c"].value - sig_p.value
            sig_p.stderr = math.hypot(sig_p.stderr or 0.0, dsig * fan_w.stderr)
            blocks.append(Covariance(("fan_max_power_w", "sigma_w_per_c"),
                                     np.array([[fan_w.stderr ** 2, dsig * fan_w.stderr ** 2],
                                               [dsig * fan_w.stderr ** 2, sig_p.stderr ** 2]])))
        self.sigma_ = {"secant_from_c": float(idle_temp_c), "secant_to_c": float(idle_temp_c + d_ref),
                       "reference_step": steps[0].workload, "leak_k_per_c": leak_k.value, "leak_k_stderr": leak_k.stderr,
                       "bin_s": float(self.sigma_bin_s), "n_bins": int(len(x))}
        self._sigma_ref = d_ref
        params.append(sig_p)
        self._form_sd: dict[str, float] = {}
        self._form_cov: tuple[list[str], np.ndarray] | None = None
        if uncertainty:
            # form term of the total uncertainty (see _jackknife_total): the secant reaches below the lowest drift
            # temperature down to Idle_temp, where the curve's form decides; a quadratic leakage is the other
            # reading of the same bins, weighted by its evidence (a form the bins reject weighs nothing)
            quad, sse_q = _secant_quadratic(x, y, g, d_ref)
            sse = float(np.sum((sig.yhat - sig.y) ** 2))
            s2 = sse / max(1, len(y) - len(sig.params)) * infl ** 2
            cov_f, _ = model_average_covariance([np.array([quad - sig_p.value])],
                                                [evidence_log_weight(sse_q, len(sig.params), sse, len(sig.params), s2,
                                                                     len(y))], 1)
            self._form_sd = {"sigma_w_per_c": math.sqrt(float(cov_f[0, 0]))}
            if fan_w is not None:
                # the sweep's own leakage slope is read off a sensor that reads whole degrees while the fan
                # moves the die by 1-3 C, and temperature and duty move together: it came out 0.0-0.3 W/C where
                # the heating drift gives 0.3-0.7, and fan power 0.1-1.0 W low. The sweep refitted with the
                # leakage slope held at sigma is the other reading of the same data (it overshot by 0.1-0.9 W on
                # the virtual GPUs); half the difference is one standard error, as for the IPP fit's form
                # alternatives
                alt = fan_power(fan, idle_temp_c, leak_slope_w_per_c=sig_p.value)
                if alt is not None:
                    self._form_sd["fan_max_power_w"] = 0.5 * abs(alt.value - fan_w.value)
            # the time constants: their definition (microbench/truth.py) is the one-pole fit of the same window, so
            # its misfit to a network of several poles is no error (the first-half window's shift, the old form
            # term, was 2-7x the errors); their error beyond the readings' noise is the rounding the noise dithers
            # only partly (0.1-0.8 s at 0.3 C of noise, session 9; _rounding_sd)
            for kind, est, fitted in (("rise", rise[0], rise[7]), ("decay", decay[0], decay[7])):
                sd = self._rounding_sd(steps, kind, est.value, fitted, noise_c)
                if sd is not None:
                    self._form_sd[est.name] = sd
            # the Max_temp plane's and sigma's form terms: the first-half windows' one-pole asymptotes
            try:
                half = self._pooled(steps, "rise", idle_temp_c, 0.5 * min(float(st.heat_t[-1]) for st in steps))
            except FitError:
                half = None
            if half is not None and self._plane is not None:
                # the steady rises the plane goes through are one-pole asymptotes, which move with the
                # window as tau does: the plane through the first-half asymptotes is the other reading,
                # and its shift is one standard error (a direction: the three constants move together)
                names_p, pinv, okp = self._plane
                shift = pinv @ (np.asarray(half[1], float)[okp] - d_a[okp])
                # the one-pole curve's own asymptotes are a third reading of the steady rises (the plateau's
                # mean residual moved them; on the virtual GPUs the plateau is off the truth's exact steady
                # state by up to 0.3 C on memory steps): that direction in quadrature too
                shift_asym = pinv @ (np.asarray(rise[8], float)[okp] - d_a[okp])
                if np.all(np.isfinite(shift)) and np.all(np.isfinite(shift_asym)):
                    self._form_cov = (names_p, np.outer(shift, shift) + np.outer(shift_asym, shift_asym))
            if half is not None and getattr(self, "_sigma_ref_rise_c", None) is None:
                # the secant's end, the reference step's steady rise, is the same one-pole extrapolation: its
                # change over the first half of the traces moves sigma along the fitted leakage curve by
                # d sigma / d ref = (L'(ref) - sigma) / ref; one standard error more in quadrature
                d_half = float(half[1][0])
                if np.isfinite(d_half) and d_half > 0:
                    shift = _secant_leak(sig_p.value, leak_k.value, d_ref, np.array([d_half]))[0] / d_half \
                        - sig_p.value
                    self._form_sd["sigma_w_per_c"] = math.hypot(self._form_sd["sigma_w_per_c"], shift)
        if np.ptp(x) < 3:
            warns.append(f"temperature moved only {np.ptp(x):.0f} C during heating: sigma poorly determined")
        self.params_ = params
        self.deltas_ = d_a
        self.p_rt_ = p_rt_a
        self.mi_ = mi_a
        self.stats_ = {"n_samples": int(n_pts), "rmse_c": rmse_c, "mape_pct": rise[4], "r2": rise[5],
                       "n_steps": len(steps)}
        self.warnings_ = warns
        for w in warns:
            warnings.warn(w)
        cov = Covariance.from_blocks(params, blocks)
        if uncertainty:
            self._jackknife_total(cov, data)
        self.section_ = self._make_section(cov)
        return self

    def _plane_covariance(self, res, X: np.ndarray, rise_cov: np.ndarray, idle_temp_se: float,  # noqa: ANN001
                          p_var: np.ndarray, ok: np.ndarray, dither: Sequence[bool]) -> Covariance:
        """Statistical covariance of the Max_temp plane (eq. 19) from the steps' measurement errors, not
        from its residuals: the residuals of a plane through 4-6 steps are the plane's misfit to the
        physics (2-3 degrees of freedom), the same for every run of the campaign, so they say nothing of
        how far the constants move when it runs again (tests/benchmarks/thermal_results.md, session 8).
        The rises' covariance from the pooled one-pole fit, the
        idle temperature's error (common to every rise: it moves lambda alone) and the cold runtime
        power's noise (times mu) are propagated through the least squares (a sandwich: the estimate
        stays ordinary least squares). Also sets the plane's ``stderr`` and keeps what the form term
        needs (:attr:`_plane`)."""
        mu = res.by_name()["mu_c_per_w"].value
        V = np.nan_to_num(rise_cov) + idle_temp_se ** 2 + np.diag(mu ** 2 * np.nan_to_num(p_var))
        # a sensor without noise reads the steady tail as one whole degree: the rise keeps its quantization
        # error whole, which no residual shows
        # (a dithered one its mean reading's offset, dither_offset_c, at a place between two degrees of its own
        # for every step: its r.m.s. over the places, 1/sqrt(2) of the largest)
        dither_c = min(dither_offset_c(getattr(self, "reading_noise_c_", 0.0)) / math.sqrt(2.0),
                       READING_QUANTIZATION_SE_C)
        V = V + np.diag([dither_c ** 2 if dithered else READING_QUANTIZATION_SE_C ** 2 for dithered in dither])
        pinv = np.linalg.pinv(X)
        C = pinv @ V @ pinv.T
        names_p = [p.name for p in res.params if p.vary]
        for i, p in enumerate(p for p in res.params if p.vary):
            p.stderr = math.sqrt(max(float(C[i, i]), 0.0))
        self._plane = (names_p, pinv, ok)   # ok: the steps the plane went through
        return Covariance(tuple(names_p), C)

    def _jackknife_total(self, cov: Covariance, data: SessionData) -> None:
        """``stderr_total`` of every parameter: the statistical covariance combined with the
        delete-one-level jackknife over the fan sweep's duty levels (the independent groups of the fan
        power), plus the model-form terms (:attr:`_form_sd`, :attr:`_form_cov`).

        No delete-one-step jackknife over the thermal steps: the steps are not exchangeable groups (each
        has its own workload, temperature range and fan history; the pooled time constant and the plane
        through 4-6 steps for 2-3 constants lean on each step differently), so leaving one out measured
        its leverage, not an error, as for sigma and the thermal network (tests/benchmarks/thermal_results.md,
        session 8)."""
        names = list(cov.names)
        steps, fan = data.thermal_steps, data.fan

        def refit(sub_fan: pd.DataFrame | None) -> dict[str, float] | None:
            sub = ThermalFitter(**self.get_params())
            sub._sigma_ref_rise_c = self._sigma_ref   # the secant to the same temperature as the full fit's
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    sub.fit(replace(data, thermal_steps=list(steps), fan=sub_fan), uncertainty=False)
                except FitError:
                    return None
            return {p.name: p.value for p in sub.params_}

        jack = None
        # the fan sweep's readings are a time series, and the leakage it removes is read off a sensor that
        # reads whole degrees: its duty levels are the groups
        if fan is not None and "fan_pct" in fan.columns and fan["fan_pct"].nunique() >= 4:
            levels = (fan["step"] if "step" in fan.columns else fan["fan_pct"]).to_numpy()
            jack = refit_jackknife(lambda keep: refit(fan[keep]), levels, names)
        if jack is not None and "sigma_w_per_c" in names:
            # not sigma's: its statistical error already counts the fan power's error (fit), and the
            # statistical error and the form term cover the truth (tests/test_thermal_sigma.py)
            i = names.index("sigma_w_per_c")
            jack = jack.copy()
            jack[i, :] = 0.0
            jack[:, i] = 0.0
        form = getattr(self, "_form_sd", {})
        terms: list = [np.diag([form.get(n, 0.0) ** 2 for n in names])]
        fc = getattr(self, "_form_cov", None)
        if fc is not None:
            full = np.zeros((len(names), len(names)))
            idx = [names.index(n) for n in fc[0] if n in names]
            if len(idx) == len(fc[0]):
                full[np.ix_(idx, idx)] = fc[1]
                terms.append(full)
        apply_total(self.params_, names, total_covariance(cov, jack, terms))

    @classmethod
    def _rounding_sd(cls, steps: Sequence[ThermalStep], kind: str, tau_s: float, fitted_c: Sequence[np.ndarray],
                     noise_c: float) -> float | None:
        """The error (s) the readings' rounding gives the pooled time constant ``tau_s`` of ``kind`` (rise,
        decay): the largest shift of refits to the fitted curves ``fitted_c`` (C, one per step, at its readings)
        read through the mean rounding at the readings' noise ``noise_c`` C (:func:`expected_reading_c`), the
        curves moved by 0, 1/4, 1/2 and 3/4 C. Where the whole degrees fall on the true curve is unknown (the
        fitted curve is off it by its misfit), and the shift is a periodic function of that place: its
        largest value bounds the error, whose median is then about 0.7 of it, as a Gaussian error's is 0.67
        of its standard deviation (tests/test_thermal_readings.py). None when no refit converges."""
        field = "heat_temp_c" if kind == "rise" else "cool_temp_c"
        shifts = []
        for off_c in (0.0, 0.25, 0.5, 0.75):
            read = [replace(st, **{field: expected_reading_c(np.asarray(f) + off_c, noise_c) - off_c})
                    for st, f in zip(steps, fitted_c)]
            try:
                shifts.append(cls._pooled(read, kind, 0.0)[0].value - tau_s)
            except FitError:
                continue
        return float(np.max(np.abs(shifts))) if shifts else None

    @staticmethod
    def _pooled(steps: Sequence[ThermalStep], kind: str, idle_temp_c: float,
                t_max_s: float | None = None) -> tuple[Param, list[float], int, float, float, float, np.ndarray,
                                                                      list[np.ndarray], list[float]]:
        """Shared time constant over all steps (the first ``t_max_s`` seconds of each trace when given):
        returns (tau param, per-step rises above idle at the asymptote (rise) or at the start (decay), n,
        rmse, mape, r2, the rises' statistical covariance (C^2, idle_temp_c's error not included), the fitted
        curve of every step at its readings (C), the rises at the one-pole curve's own asymptote (before the
        plateau's mean residual moved them; C))."""
        # every reading: the one-pole constant of a multi-pole trace depends on the instants it is fitted at,
        # and thinning to one reading a second put the first at 0.1 s, in the die pole's transient, which moved
        # the constants 0.5-1.5 % (thermal_results.md, session 9)
        ts = [s.heat_t if kind == "rise" else s.cool_t for s in steps]
        ys = [s.heat_temp_c if kind == "rise" else s.cool_temp_c for s in steps]
        if t_max_s is not None:
            # a reading at the window's end is in it whatever the last bit of its time stamp (a resumed
            # campaign's shifted clock put the dram step's 100 s reading at 100 + 2e-13 s: 999 readings, not 1000)
            keep = [(t <= t_max_s) | np.isclose(t, t_max_s, rtol=1e-9, atol=0.0) for t in ts]
            ys = [y[k] for k, y in zip(keep, ys)]
            ts = [t[k] for k, t in zip(keep, ts)]
        seg = np.concatenate([np.full(len(t), k) for k, t in enumerate(ts)])
        t_all, y_all = np.concatenate(ts), np.concatenate(ys).astype(float)
        n = len(steps)
        name = "rc_rise_s" if kind == "rise" else "rc_decay_s"
        ps = [Param(name, 40.0, "s", 0.5, 5000.0, description=f"RC time constant of temperature {kind}, eq. ({17 if kind == 'rise' else 18})")]
        # started where it ends: for a given tau each step's level and amplitude are a straight line's, so the
        # sum of squares is a function of tau alone (the least squares' iterations over every reading cost)
        def linear(tau: float) -> tuple[float, list[np.ndarray]]:
            sse, coefs = 0.0, []
            for t, y in zip(ts, ys):
                a = np.column_stack([np.ones(len(t)), rc_rise(t, tau) if kind == "rise" else rc_decay(t, tau)])
                c, *_ = np.linalg.lstsq(a, np.asarray(y, float), rcond=None)
                sse += float(np.sum((a @ c - y) ** 2))
                coefs.append(c)
            return sse, coefs

        ltau = minimize_scalar(lambda lt: linear(math.exp(lt))[0], bounds=(math.log(1.0), math.log(4000.0)),
                               method="bounded").x
        ps[0] = replace(ps[0], value=float(math.exp(ltau)))
        for k, c in enumerate(linear(math.exp(ltau))[1]):
            ps += [Param(f"t0_{k}", float(c[0]), "C"), Param(f"amp_{k}", float(c[1]), "C")]

        def model(v: dict[str, float]) -> np.ndarray:
            tau = v[name]
            a = np.array([v[f"t0_{k}"] for k in range(n)])[seg]
            b = np.array([v[f"amp_{k}"] for k in range(n)])[seg]
            return a + b * (rc_rise(t_all, tau) if kind == "rise" else rc_decay(t_all, tau))

        def jac(v: dict[str, float]) -> dict[str, np.ndarray]:
            # analytic: every reading enters (up to 45 000 a phase), and finite differences cost a model call each
            tau = v[name]
            b = np.array([v[f"amp_{k}"] for k in range(n)])[seg]
            e = rc_decay(t_all, tau)
            out = {name: b * e * t_all / tau ** 2 * (-1.0 if kind == "rise" else 1.0)}
            for k in range(n):
                out[f"t0_{k}"] = (seg == k).astype(float)
                out[f"amp_{k}"] = np.where(seg == k, 1.0 - e if kind == "rise" else e, 0.0)
            return out

        res = fit_lsq(model, ps, y_all, jac=jac)
        byn = res.by_name()
        # delta of eq. (51) is Max_temp - Idle_temp: the heating curve's asymptote above idle
        amps = [byn[f"t0_{k}"].value + byn[f"amp_{k}"].value - idle_temp_c if kind == "rise" else byn[f"amp_{k}"].value
                for k in range(n)]
        # ... read where the heating has levelled off: a step whose rise is slower than the others' (the one-SM
        # step, mostly the host's launch heat through the case air, the card's slowest pole) is under the shared
        # one-pole curve at its end (titanx 0.4 C, mi250x 0.9 C low, lambda -17 / -46 %); the mean residual over
        # each trace's last PLATEAU_SHARE moves its asymptote there, and its AR(1)-inflated variance adds to
        # the rise's (a step on the curve moves by its noise only)
        plateau_var = np.zeros(n)
        asymptotes = list(amps)
        if kind == "rise":
            resid = y_all - res.yhat
            for k in range(n):
                tk = t_all[seg == k]
                tail = tk >= (1.0 - PLATEAU_SHARE) * float(tk.max())
                rk = resid[seg == k][tail]
                if len(rk) >= 3:
                    amps[k] += float(np.mean(rk))
                    plateau_var[k] = float(np.var(rk, ddof=1)) / len(rk) * ar1_inflation([rk - rk.mean()])
        m = errors(y_all, res.yhat)
        # each rise is t0 + amp (rise) or amp (decay): its variance from the fit's covariance
        cov = res.covariance()
        rise_cov = np.full((n, n), np.nan)
        if cov is not None:
            w = np.zeros((n, len(cov.names)))
            for k in range(n):
                w[k, cov.index(f"amp_{k}")] = 1.0
                if kind == "rise":
                    w[k, cov.index(f"t0_{k}")] = 1.0
            rise_cov = w @ cov.matrix @ w.T + np.diag(plateau_var)
        curves = [res.yhat[seg == k] for k in range(n)]
        return byn[name], amps, len(y_all), m.rmse, m.mape_pct, m.r2, rise_cov, curves, asymptotes

    def _make_section(self, covariance: Covariance) -> Section:
        structure = {"equations": "IPP eqs. (17)-(23); Max_temp is the rise above idle_temp_c",
                     "steps": [{"amplitude_c": float(d), "runtime_power_w": float(p), "mem_intensity": float(m)}
                               for d, p, m in zip(self.deltas_, self.p_rt_, self.mi_)],
                     "sigma": self.sigma_}
        stats = dict(self.stats_)
        if self.warnings_:
            stats["warnings"] = list(self.warnings_)
        return Section("ipp-thermal", self.params_, structure, stats, covariance, self.settings())
