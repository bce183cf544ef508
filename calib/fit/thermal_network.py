"""Fitting the thermal network (:mod:`calib.model.thermal_network`) to the campaign's heat/cool steps.

Data: each thermal step (heating to near steady state, then cooling) is binned on a uniform grid of
``bin_s`` seconds (mean board power per bin, held over it; mean sensor temperature per bin, compared with
the model at the bin's middle). The input is the *measured* board power above idle, so the leakage that
grows during heating is part of the input and the network is the passive path from power to sensor.

Fit: for 1, 2 and 3 poles, bounded least squares (:func:`calib.fit.core.fit_lsq`) of the pole
resistances and time constants, a direct term (poles faster than a bin) and, per step, the power the
card was in equilibrium with before the step (the campaign's settle-to-idle leaves a little heat in the
slow parts), started from a non-negative least-squares time-constant spectrum. The number of poles is
chosen by leave-one-step-out cross-validation (each held-out step predicted from its pre-step
temperature, no fit to it): the fewest poles whose held-out RMSE is within ``cv_tolerance`` of the best;
or by BIC (``selection="bic"``, and always when there are fewer than 3 steps).

Observations: for an integer sensor (every reading a whole degree, as NVML's), the times at which the
reading changes (the temperature crossed a half degree between two readings); a stuck reading says only
which degree the temperature is in, and fitting plateaus would bias the time constants. Otherwise the bin
means. A shared offset corrects the idle temperature (integer readings of a steady sensor do not average
to it). Poles that fit at the grid's lower bound (two bins) are the die's own fast dynamics, which the
direct term stands for: a pole count that needs one is not a candidate.

Uncertainties: ``stderr`` from the fit's covariance, scaled for the residuals' lag-1 autocorrelation
(sensor quantization and model error are not white noise); ``stderr_total`` adds, in quadrature, the
jackknife over thermal steps of the chosen network (the leave-one-step-out fits: how much the values
depend on which operating points the campaign ran) and the spread across model forms (the change of each
pole in the fit with one more pole).

Leakage: static power above idle against the rise above idle, from the heating phases (each step with its
own runtime power) and the cooling phases (kernel off: the power above idle is leakage, plus the fan),
linear (IPP's sigma) and exponential; the exponential form is selected when its BIC is lower by more than
``leak_bic_margin``.

Fan: when the fan duty at the end of heating differs between steps by at least 10 points, the steps'
total resistance is regressed as a conductance linear in the duty (structure ``fan``).
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from calib.core import names
from calib.core.errors import FitError
from calib.core.metrics import errors
from calib.core.params import Covariance, Param, Section
from calib.fit.base import Estimator, number, optional, options
from calib.fit.core import fit_lsq
from calib.fit.thermal import fan_power
from calib.fit.uncertainty import ar1_inflation, total_stderr
from calib.model.thermal_network import (DEFAULT_SLOWDOWN_C, MAX_POLES, MODEL_NAME, FosterNetwork, Leakage,
                                         cauer_of, runaway_power_w, steady_state)
from calib.model.thermal import rc_decay
from calib.segment import SessionData, ThermalStep

log = logging.getLogger(__name__)

TAU_MAX_S = 20000.0
R_MAX = 10.0


@dataclass
class _StepData:
    """One thermal step on the fit grid."""

    workload: str
    edges_s: np.ndarray       # bin starts (s after heat start)
    du_w: np.ndarray          # board power above idle per bin, W
    theta_c: np.ndarray       # mean rise above idle per bin (NaN where no reading)
    pre_theta_c: float        # rise above idle before the step
    heat_s: float
    fan_end_pct: float        # mean fan duty over the last 30 s of heating
    heat_theta: np.ndarray    # heating-phase readings for the leakage fit
    heat_dp: np.ndarray
    cool_theta: np.ndarray
    cool_dp: np.ndarray
    heat_fan: np.ndarray
    cool_fan: np.ndarray
    heat_t: np.ndarray
    cool_t: np.ndarray
    obs_t: np.ndarray = None        # times (s after heat start) the model is compared at
    obs_theta: np.ndarray = None    # observed rise above idle there (C)


def _bin(t: np.ndarray, y: np.ndarray, n: int, width: float) -> np.ndarray:
    idx = np.clip(np.floor(t / width - 1e-9).astype(int), 0, n - 1)
    ok = np.isfinite(y)
    s = np.bincount(idx[ok], weights=y[ok], minlength=n)
    c = np.bincount(idx[ok], minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(c > 0, s / np.maximum(c, 1), np.nan)


def _prepare(s: ThermalStep, idle_temp_c: float, idle_power_w: float, width: float,
             quantized: bool = False) -> _StepData:
    if s.cool_power_w is None or s.heat_s is None:
        raise FitError(f"thermal step {s.workload}: no power trace while cooling (a session of an older toolkit?)")
    t = np.concatenate([s.heat_t, s.cool_t + s.heat_s])
    temp = np.concatenate([s.heat_temp_c, s.cool_temp_c]).astype(float)
    pw = np.concatenate([s.heat_power_w, s.cool_power_w]).astype(float)
    n = int(math.ceil(t.max() / width))
    p_bin = _bin(t, pw, n, width)
    # a bin without a power reading holds the previous bin's power
    p_bin = pd.Series(p_bin).ffill().bfill().to_numpy()
    th = _bin(t, temp, n, width) - idle_temp_c
    hf = s.heat_fan_pct if s.heat_fan_pct is not None else np.full(len(s.heat_t), np.nan)
    cf = s.cool_fan_pct if s.cool_fan_pct is not None else np.full(len(s.cool_t), np.nan)
    last = s.heat_t >= s.heat_t.max() - 30.0
    fan_end = float(np.nanmean(hf[last])) if np.isfinite(hf[last]).any() else math.nan
    ok = np.isfinite(temp)
    if quantized:
        # an integer sensor: a reading that changes from k to k+1 says the temperature crossed k + 1/2 between
        # the two readings; its plateaus say only which degree it is in (a stuck reading is no measurement
        # of the approach to steady state), so the crossings are the observations
        tt, yy = t[ok], temp[ok]
        ch = np.flatnonzero(np.diff(yy) != 0) + 1
        obs_t = 0.5 * (tt[ch] + tt[ch - 1])
        obs_y = 0.5 * (yy[ch] + yy[ch - 1]) - idle_temp_c
    else:
        mid = (np.arange(n) + 0.5) * width
        keep = np.isfinite(th)
        obs_t, obs_y = mid[keep], th[keep]
    return _StepData(s.workload, np.arange(n) * width, p_bin - idle_power_w, th, s.start_temp_c - idle_temp_c,
                     float(s.heat_s), fan_end, s.heat_temp_c - idle_temp_c, s.heat_power_w - idle_power_w,
                     s.cool_temp_c - idle_temp_c, s.cool_power_w - idle_power_w, hf, cf, s.heat_t, s.cool_t,
                     obs_t, obs_y)


def _unit_at(d: _StepData, tau: float, p0: float, width: float, t_eval: np.ndarray) -> np.ndarray:
    """State (C) of one pole of unit resistance at times ``t_eval`` of a step, starting in equilibrium with
    ``p0`` W: the exact zero-order-hold update on the uniform grid (one :func:`scipy.signal.lfilter` call)
    and the exact partial update within a bin."""
    from scipy.signal import lfilter

    a = float(rc_decay(width, tau))
    u = d.du_w
    x = np.empty(len(u))
    x[0] = p0
    if len(u) > 1:
        x[1:], _ = lfilter([1.0 - a], [1.0, -a], u[:-1], zi=[a * p0])
    j = np.clip(np.floor(t_eval / width).astype(int), 0, len(u) - 1)
    e = rc_decay(t_eval - j * width, tau)
    return e * x[j] + (1.0 - e) * u[j]


def _direct(d: _StepData, width: float, t_eval: np.ndarray) -> np.ndarray:
    return d.du_w[np.clip(np.floor(t_eval / width).astype(int), 0, len(d.du_w) - 1)]


def _predict_step(d: _StepData, r: np.ndarray, tau: np.ndarray, rd: float, p0: float, width: float,
                  t_eval: np.ndarray | None = None) -> np.ndarray:
    """Model rise (C) at the step's observation times (or at ``t_eval``)."""
    t_eval = d.obs_t if t_eval is None else t_eval
    out = rd * _direct(d, width, t_eval)
    for ri, ti in zip(r, tau):
        out = out + ri * _unit_at(d, float(ti), p0, width, t_eval)
    return out


def _spectrum_init(data: Sequence[_StepData], n_poles: int, width: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Initial poles from a non-negative least-squares spectrum over a log-spaced grid of time constants."""
    from scipy.optimize import nnls

    dur = max(float(d.edges_s[-1]) for d in data)
    grid = np.geomspace(2.0 * width, 2.0 * dur, 40)
    cols, ys = [], []
    for d in data:
        colsd = [_direct(d, width, d.obs_t)] + [_unit_at(d, float(g), 0.0, width, d.obs_t) for g in grid]
        cols.append(np.column_stack(colsd))
        ys.append(d.obs_theta)
    a, y = np.vstack(cols), np.concatenate(ys)
    w, _ = nnls(a, y)
    rd, spec = float(w[0]), w[1:]
    if spec.sum() <= 0:
        return np.full(n_poles, 0.05), np.geomspace(10.0, 200.0, n_poles), rd
    cum = np.cumsum(spec) / spec.sum()
    r, tau = [], []
    bounds = np.linspace(0.0, 1.0, n_poles + 1)
    for i in range(n_poles):
        sel = (cum > bounds[i] - 1e-12) & (cum <= bounds[i + 1] + 1e-12) & (spec > 0)
        if not sel.any():
            sel = np.zeros(len(grid), bool)
            sel[min(len(grid) - 1, int(bounds[i + 1] * (len(grid) - 1)))] = True
        ri = float(spec[sel].sum())
        ti = float(np.exp(np.sum(spec[sel] * np.log(grid[sel])) / ri)) if ri > 0 else float(grid[sel][0])
        r.append(max(ri, 1e-4))
        tau.append(ti)
    order = np.argsort(tau)
    return np.array(r)[order], np.array(tau)[order], rd


@dataclass
class PoleFit:
    """A fitted network of one pole count."""

    n: int
    r: np.ndarray
    tau: np.ndarray
    rd: float
    p0: np.ndarray
    params: list[Param]
    cov: np.ndarray | None     # of (r_1..r_n, tau_1..tau_n, r_direct), autocorrelation-scaled
    rmse_c: float
    bic: float
    n_points: int
    warnings: list[str]
    resid: list[np.ndarray]
    offset: float = 0.0        # fitted correction of the idle temperature, C


def _fit_poles(data: Sequence[_StepData], n: int, width: float, start: tuple | None = None) -> PoleFit:
    """Fit an n-pole network to steps ``data`` (module docstring)."""
    if start is None:
        r0, t0, rd0 = _spectrum_init(data, n, width)
    else:
        r0, t0, rd0 = start
    rt0 = float(r0.sum() + rd0) or 0.1
    ps = [Param(names.foster_r(i + 1), float(np.clip(r0[i], 1e-5, R_MAX * 0.99)), "C/W", 0.0, R_MAX)
          for i in range(n)]
    ps += [Param(names.foster_tau(i + 1), float(np.clip(t0[i], 2.2 * width, TAU_MAX_S * 0.99)), "s", 2.0 * width,
                 TAU_MAX_S) for i in range(n)]
    ps.append(Param(names.R_DIRECT, float(np.clip(rd0, 1e-5, R_MAX * 0.99)), "C/W", 0.0, R_MAX))
    # the idle temperature from integer readings of a steady sensor is off by up to half a degree (the
    # rounding does not average out): a shared offset, else a slow pole would mimic it
    ps.append(Param("offset_c", 0.0, "C", -3.0, 3.0))
    ps += [Param(f"p0_{k}", float(np.clip(d.pre_theta_c / rt0, -900, 900)) if math.isfinite(d.pre_theta_c) else 0.0,
                 "W", -1000.0, 1000.0) for k, d in enumerate(data)]
    y = np.concatenate([d.obs_theta for d in data])
    sizes = [len(d.obs_t) for d in data]

    def model(v: dict[str, float]) -> np.ndarray:
        r = np.array([v[names.foster_r(i + 1)] for i in range(n)])
        tau = np.array([v[names.foster_tau(i + 1)] for i in range(n)])
        return np.concatenate([_predict_step(d, r, tau, v[names.R_DIRECT], v[f"p0_{k}"], width)
                               for k, d in enumerate(data)]) + v["offset_c"]

    def jac(v: dict[str, float]) -> dict[str, np.ndarray]:
        # linear in r, r_direct, the offset and the initial powers; a one-pole finite difference for each tau
        out: dict[str, list[np.ndarray]] = {p.name: [] for p in ps}
        for k, d in enumerate(data):
            p0 = v[f"p0_{k}"]
            m = len(d.obs_t)
            dp0 = np.zeros(m)
            for i in range(n):
                ri, ti = v[names.foster_r(i + 1)], v[names.foster_tau(i + 1)]
                psi = _unit_at(d, ti, p0, width, d.obs_t)
                h = 1e-5 * ti
                dpsi = (_unit_at(d, ti + h, p0, width, d.obs_t) - psi) / h
                out[names.foster_r(i + 1)].append(psi)
                out[names.foster_tau(i + 1)].append(ri * dpsi)
                dp0 = dp0 + ri * rc_decay(d.obs_t, ti)
            out[names.R_DIRECT].append(_direct(d, width, d.obs_t))
            out["offset_c"].append(np.ones(m))
            for j in range(len(data)):
                out[f"p0_{j}"].append(dp0 if j == k else np.zeros(m))
        return {nm: np.concatenate(a) for nm, a in out.items()}

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fit_lsq(model, ps, y, jac=jac)
    byn = res.by_name()
    r = np.array([byn[names.foster_r(i + 1)].value for i in range(n)])
    tau = np.array([byn[names.foster_tau(i + 1)].value for i in range(n)])
    rd = byn[names.R_DIRECT].value
    p0 = np.array([byn[f"p0_{k}"].value for k in range(len(data))])
    resid_all = res.yhat - res.y
    parts, off = [], 0
    for m_ in sizes:
        parts.append(resid_all[off:off + m_])
        off += m_
    # residuals are not white (quantized sensor, model error): scale the covariance for their lag-1
    # autocorrelation (effective number of independent points)
    infl = ar1_inflation(parts)
    order = np.argsort(tau)
    net_names = [names.foster_r(i + 1) for i in range(n)] + [names.foster_tau(i + 1) for i in range(n)] + [names.R_DIRECT]
    cov = None
    if res.covar is not None:
        full = res.covariance()
        idx_old = [full.index(names.foster_r(i + 1)) for i in order] + [full.index(names.foster_tau(i + 1)) for i in order] \
            + [full.index(names.R_DIRECT)]
        cov = full.matrix[np.ix_(idx_old, idx_old)] * infl
    r, tau = r[order], tau[order]
    params = []
    for j, nm in enumerate(net_names):
        val = r[j] if j < n else (tau[j - n] if j < 2 * n else rd)
        se = math.sqrt(cov[j, j]) if cov is not None and np.isfinite(cov[j, j]) and cov[j, j] >= 0 else None
        src = byn[nm]
        params.append(Param(nm, float(val), src.unit, src.min, src.max, True, None, se))
    m = errors(res.y, res.yhat)
    return PoleFit(n, r, tau, rd, p0, params, cov, m.rmse, res.bic, len(y), list(res.warnings), parts,
                   byn["offset_c"].value)


def _predict_heldout(d: _StepData, f: PoleFit, width: float) -> np.ndarray:
    rt = float(f.r.sum() + f.rd)
    p0 = (d.pre_theta_c - f.offset) / rt if math.isfinite(d.pre_theta_c) and rt > 0 else 0.0
    return f.offset + _predict_step(d, f.r, f.tau, f.rd, p0, width)


def _leak_fit(data: Sequence[_StepData], skip_s: float, fan_max_w: float | None,
              fan_max_se_w: float | None = None) -> dict[str, Any]:
    """Linear and exponential leakage fits (module docstring). ``fan_max_se_w``: the standard error of the
    fan power subtracted from every sample; the leakage parameters' standard errors count it (below)."""
    xs, ys, ds, grp = [], [], [], []
    for k, d in enumerate(data):
        sel = d.heat_t >= skip_s
        hp = d.heat_dp[sel].astype(float)
        cp = d.cool_dp.astype(float)
        hd, cd = np.zeros(len(hp)), np.zeros(len(cp))
        if fan_max_w is not None:
            if np.isfinite(d.heat_fan).all():
                hd = (d.heat_fan[sel] / 100.0) ** 3
            if np.isfinite(d.cool_fan).all():
                cd = (d.cool_fan / 100.0) ** 3
            hp, cp = hp - fan_max_w * hd, cp - fan_max_w * cd
        # cooling: skip the first seconds (the kernel's end, the power sensor's averaging)
        csel = d.cool_t >= 3.0
        xs += [d.heat_theta[sel], d.cool_theta[csel]]
        ys += [hp, cp[csel]]
        ds += [hd, cd[csel]]
        grp += [np.full(int(sel.sum()), k), np.full(int(csel.sum()), -1)]
    x, y, g = np.concatenate(xs).astype(float), np.concatenate(ys), np.concatenate(grp)
    duty3 = np.concatenate(ds)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y, g, duty3 = x[ok], y[ok], g[ok], duty3[ok]
    ng = len(data)
    heat = g >= 0
    gi = np.where(heat, g, 0)
    # idle-power offset of the cooling rows: the fan at its idle duty and sensor offsets; one shared constant
    out: dict[str, Any] = {}
    ind = {f"c{k}": (heat & (gi == k)).astype(float) for k in range(ng)}
    ind["c_idle"] = (~heat).astype(float)

    def icpt(v: dict[str, float]) -> np.ndarray:
        c = np.array([v[f"c{k}"] for k in range(ng)])
        return np.where(heat, c[gi], v["c_idle"])

    def lin_jac(v: dict[str, float]) -> dict[str, np.ndarray]:
        return {names.LEAK_SIGMA: x, **ind}

    def exp_jac(v: dict[str, float]) -> dict[str, np.ndarray]:
        k = v[names.LEAK_EXP_K]
        return {names.LEAK_EXP_AMP: np.expm1(k * x), names.LEAK_EXP_K: v[names.LEAK_EXP_AMP] * x * np.exp(k * x), **ind}

    def fits(yy: np.ndarray) -> tuple[Any, Any]:
        starts = [Param(f"c{k}", float(np.mean(yy[g == k])) if (g == k).any() else 0.0, "W") for k in range(ng)]
        starts.append(Param("c_idle", 0.0, "W"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lin = fit_lsq(lambda v: icpt(v) + v[names.LEAK_SIGMA] * x,
                          [Param(names.LEAK_SIGMA, 0.3, "W/C", 0.0, 100.0)] + starts, yy, jac=lin_jac)
            sig = max(lin.by_name()[names.LEAK_SIGMA].value, 1e-3)
            expo = fit_lsq(lambda v: icpt(v) + v[names.LEAK_EXP_AMP] * np.expm1(v[names.LEAK_EXP_K] * x),
                           [Param(names.LEAK_EXP_AMP, sig / 0.02, "W", 0.0, 5000.0),
                            Param(names.LEAK_EXP_K, 0.02, "1/C", 1e-4, 0.5)] + starts, yy, jac=exp_jac)
        return lin, expo

    lin, expo = fits(y)
    # the samples are time series (one per second per step): scale the standard errors for their lag-1
    # autocorrelation, as for the poles (ar1_inflation)
    for fit in (lin, expo):
        resid = fit.yhat - fit.y
        f = math.sqrt(ar1_inflation([resid[g == k] for k in range(-1, ng)]))
        for p in fit.params:
            if p.stderr:
                p.stderr *= f
    if fan_max_w is not None and fan_max_se_w and np.any(duty3 > 0):
        # one fan-power estimate is subtracted from every sample, and the fan speeds up with temperature:
        # its error tilts the whole drift at once, which no residual shows (on 20 noise seeds of
        # sim:gtx580 the leakage rate moved 1.5x more than its standard error without this term). The
        # refit with the fan power one standard error higher gives each parameter's shift.
        for fit, alt in zip((lin, expo), fits(y - fan_max_se_w * duty3)):
            shift = alt.by_name()
            for p in fit.params:
                if p.stderr is not None and p.name in shift:
                    p.stderr = math.hypot(p.stderr, shift[p.name].value - p.value)
    out["linear"] = lin
    out["exponential"] = expo
    out["n"] = int(len(y))
    out["span_c"] = float(np.ptp(x)) if len(x) else 0.0
    return out


class ThermalNetworkFitter(Estimator):
    """Fits the ``thermal_network`` section (module docstring); an estimator (:mod:`calib.fit.base`).
    Fitted state: ``fits_`` (pole count -> :class:`PoleFit`), ``cv_`` (pole count -> held-out RMSE, C),
    ``poles_``, ``network_``, ``warnings_``, ``section_``.

    Settings: ``max_poles`` (1-3), ``poles`` (force a pole count; None: select), ``selection`` ("cv" or
    "bic"), ``cv_tolerance`` (relative held-out RMSE within which fewer poles are preferred), ``bin_s``
    (fit grid, s), ``leakage`` ("auto", "linear", "exponential", "none"), ``leak_skip_s`` (seconds of
    heating left out of the leakage fit), ``leak_bic_margin``, ``slowdown_temp_c`` (None: the device's, else
    95 C).
    """

    constraints = {
        "max_poles": number(1, MAX_POLES, integer=True),
        "poles": optional(number(1, MAX_POLES, integer=True)),
        "selection": options("cv", "bic"),
        "cv_tolerance": number(0.0, 1.0),
        "bin_s": number(0.1, 60.0),
        "leakage": options("auto", "linear", "exponential", "none"),
        "leak_skip_s": number(0.0),
        "leak_bic_margin": number(0.0),
        "slowdown_temp_c": optional(number(0.0, 150.0, lo_open=True)),
    }

    def __init__(self, *, max_poles: int = MAX_POLES, poles: int | None = None, selection: str = "cv",
                 cv_tolerance: float = 0.05, bin_s: float = 1.0, leakage: str = "auto", leak_skip_s: float = 8.0,
                 leak_bic_margin: float = 10.0, slowdown_temp_c: float | None = None):
        self.max_poles = max_poles
        self.poles = poles
        self.selection = selection
        self.cv_tolerance = cv_tolerance
        self.bin_s = bin_s
        self.leakage = leakage
        self.leak_skip_s = leak_skip_s
        self.leak_bic_margin = leak_bic_margin
        self.slowdown_temp_c = slowdown_temp_c

    def fit(self, data: SessionData) -> "ThermalNetworkFitter":
        """Fit to a session's thermal steps, idle baseline, fan sweep, device slowdown temperature and
        measured ambient (:class:`calib.segment.SessionData`)."""
        if data.idle is None:
            raise FitError("no idle window; cannot fit the thermal network")
        return self._fit(data.thermal_steps, data.idle.temp_c, data.idle.power_w, idle_temp_se=data.idle.temp_se_c,
                         idle_power_se=data.idle.power_se_w, fan=data.fan, ambient_temp_c=data.ambient_temp_c,
                         device_slowdown_c=None if data.device is None else data.device.raw.get("slowdown_temp_c"))

    def _fit(self, steps: Sequence[ThermalStep], idle_temp_c: float, idle_power_w: float, *,
             idle_temp_se: float | None = None, idle_power_se: float | None = None, fan: pd.DataFrame | None = None,
             device_slowdown_c: float | None = None, ambient_temp_c: float | None = None) -> "ThermalNetworkFitter":
        """Fit to thermal steps, the idle temperature (C; its standard error) and idle power (W; its standard
        error: the value is measured, not fitted here, and ``calib diff`` tests it with that), the idle
        fan sweep (for the fan's power), the device's slowdown temperature and a measured ambient (C)."""
        self._validate_settings()
        if not steps:
            raise FitError("no complete thermal step in the session; cannot fit the thermal network")
        w = float(self.bin_s)
        temps = np.concatenate([np.concatenate([s.heat_temp_c, s.cool_temp_c]) for s in steps])
        temps = temps[np.isfinite(temps)]
        quantized = bool(len(temps)) and bool(np.all(temps == np.round(temps)))
        data = [_prepare(s, idle_temp_c, idle_power_w, w, quantized) for s in steps]
        warns: list[str] = []
        n_max = int(self.max_poles if self.poles is None else self.poles)
        counts = [int(self.poles)] if self.poles is not None else list(range(1, n_max + 1))
        fits: dict[int, PoleFit] = {}
        for n in counts:
            fits[n] = _fit_poles(data, n, w)
            log.info("thermal network: %d pole(s): RMSE %.3f C, BIC %.1f", n, fits[n].rmse_c, fits[n].bic)
        # leave-one-step-out fits: cross-validation of the pole count and jackknife of the chosen network
        loo: dict[int, list[PoleFit]] = {}
        cv: dict[int, float] = {}
        if len(data) >= 3:
            for n in counts:
                errs, reps = [], []
                for k in range(len(data)):
                    rest = [d for j, d in enumerate(data) if j != k]
                    f = _fit_poles(rest, n, w, start=(fits[n].r, fits[n].tau, fits[n].rd))
                    reps.append(f)
                    pred = _predict_heldout(data[k], f, w)
                    errs.append(pred - data[k].obs_theta)
                loo[n] = reps
                cv[n] = float(np.sqrt(np.mean(np.concatenate(errs) ** 2)))
                log.info("thermal network: %d pole(s): held-out RMSE %.3f C", n, cv[n])
        # a pole at the grid's lower bound is the data asking for a pole faster than the grid resolves (the
        # die itself), which the direct term stands for: such a count is not a candidate
        lo = 2.0 * w * 1.01
        ok_counts = [n for n in counts if n == 1 or fits[n].tau.min() > lo] or counts
        if self.poles is not None:
            chosen, how = int(self.poles), "given"
        elif self.selection == "cv" and cv:
            best = min(cv[n] for n in ok_counts)
            chosen = min(n for n in ok_counts if cv[n] <= best * (1.0 + self.cv_tolerance))
            how = "cross-validation over thermal steps"
        else:
            bics = {n: fits[n].bic for n in ok_counts}
            chosen, how = min(bics, key=bics.get), "BIC"
            if self.selection == "cv":
                warns.append(f"only {len(data)} thermal steps: pole count chosen by BIC, not cross-validation")
        f = fits[chosen]
        warns += [f"{chosen}-pole fit: {m}" for m in f.warnings if not m.startswith("p0_")]
        params = list(f.params)
        # stderr_total by the one rule (calib.fit.uncertainty.total_stderr): the larger of the statistical
        # standard error and the jackknife over steps, plus the spread across model forms -- the same poles
        # in the fit with one more pole (which may take up the fast die dynamics the direct term stands for)
        se_jack: list[float | None] = [None] * len(params)
        if chosen in loo:
            reps = loo[chosen]
            m = len(reps)
            for j in range(len(params)):
                vals = np.array([(rp.r.tolist() + rp.tau.tolist() + [rp.rd])[j] for rp in reps])
                se_jack[j] = math.sqrt((m - 1) / m * float(np.sum((vals - vals.mean()) ** 2)))
        else:
            warns.append("fewer than 3 thermal steps: no jackknife over steps, stderr_total not given")
        shift: list[float] = [0.0] * len(params)
        alt = fits.get(chosen + 1)
        if alt is not None:
            for i in range(chosen):
                j = int(np.argmin(np.abs(np.log(alt.tau / f.tau[i]))))
                shift[i], shift[chosen + i] = alt.r[j] - f.r[i], alt.tau[j] - f.tau[i]
            shift[2 * chosen] = alt.rd - f.rd
        if chosen in loo or alt is not None:
            for j, p in enumerate(params):
                p.stderr_total = total_stderr(p.stderr, se_jack[j], [shift[j]])
        for p in params:
            p.description = {"r": "Foster pole resistance", "t": "Foster pole time constant"}.get(p.name[0], "")
            if p.name == names.R_DIRECT:
                p.description = "resistance of the poles faster than the fit grid (the die itself), direct term"
        cov_names = [p.name for p in params]
        cov = Covariance(tuple(cov_names), f.cov) if f.cov is not None else None
        params.insert(0, Param("idle_temp_c", float(idle_temp_c), "C", 0.0, 125.0, True, stderr=idle_temp_se,
                               stderr_total=idle_temp_se, description="idle temperature the rises are measured from"))
        params.insert(1, Param("idle_power_w", float(idle_power_w), "W", 0.0, 10000.0, False, stderr=idle_power_se,
                               stderr_total=idle_power_se,
                               description="idle board power the network's input is measured from (measured mean, "
                                           "not fitted: its standard error is the mean's)"))
        # leakage
        fan_w = fan_power(fan, idle_temp_c)
        lk = _leak_fit(data, self.leak_skip_s, None if fan_w is None else fan_w.value,
                       None if fan_w is None else fan_w.stderr)
        form = self.leakage
        lin, expo = lk["linear"], lk["exponential"]
        if form == "auto":
            form = "exponential" if expo.bic < lin.bic - self.leak_bic_margin else "linear"
        leak_struct: dict[str, Any] = {"form": form, "n_samples": lk["n"], "temperature_span_c": lk["span_c"],
                                       "compared": {"linear": {"rmse_w": lin.rmse, "bic": lin.bic},
                                                    "exponential": {"rmse_w": expo.rmse, "bic": expo.bic}},
                                       "selection": "BIC" if self.leakage == "auto" else "given"}
        leak = Leakage("none")
        if form == "linear":
            p = lin.by_name()[names.LEAK_SIGMA]
            p.description = "static power rise per degree above idle (linear leakage, IPP's sigma)"
            p.stderr_total = p.stderr
            params.append(p)
            leak = Leakage("linear", sigma_w_per_c=p.value)
        elif form == "exponential":
            a, k = expo.by_name()[names.LEAK_EXP_AMP], expo.by_name()[names.LEAK_EXP_K]
            a.description = "leakage amplitude: L(dT) = leak_exp_w (exp(leak_k_per_c dT) - 1)"
            k.description = "leakage exponential rate per degree above idle"
            a.stderr_total, k.stderr_total = a.stderr, k.stderr
            params += [a, k]
            leak = Leakage("exponential", amp_w=a.value, k_per_c=k.value)
        if lk["span_c"] < 3:
            warns.append(f"temperature moved only {lk['span_c']:.0f} C in the thermal steps: leakage poorly determined")
        slow = self.slowdown_temp_c or device_slowdown_c or DEFAULT_SLOWDOWN_C
        net = FosterNetwork(tuple(f.r), tuple(f.tau), f.rd, float(idle_temp_c), float(idle_power_w), leak, float(slow))
        # loop gain and runaway at each step's cold runtime power (mean power of seconds 1-4 of heating)
        loops = []
        for s in steps:
            sel = (s.heat_t >= 1.0) & (s.heat_t <= 4.0)
            run = float(np.mean(s.heat_power_w[sel])) - idle_power_w if sel.any() else math.nan
            if not math.isfinite(run):
                continue
            ss = steady_state(net, run)
            loops.append({"workload": s.workload, "run_power_w": run, "steady_temp_c": ss.temp_c,
                          "steady_power_w": ss.power_w, "loop_gain": ss.loop_gain, "runaway": ss.runaway})
        rp = runaway_power_w(net)
        runaway_any = any(x["runaway"] for x in loops)
        if runaway_any:
            names_ = ", ".join(x["workload"] for x in loops if x["runaway"])
            warns.append(f"thermal runaway: no steady state below the slowdown temperature {slow:g} C for {names_} "
                         "(leakage feedback)")
        gains = [x["loop_gain"] for x in loops if x["loop_gain"] is not None]
        # ambient: the sensor's when the log has one, else what the network implies for the idle state
        amb_src = "sensor" if ambient_temp_c is not None else "inferred (idle temperature - R_total x idle power)"
        amb = ambient_temp_c if ambient_temp_c is not None else idle_temp_c - net.r_total_c_per_w * idle_power_w
        fan_struct = self._fan_resistance(data, f, w)
        structure = {
            "poles": int(chosen),
            "equations": "theta = r_direct dP + sum_i x_i, tau_i dx_i/dt = r_i dP - x_i (rises above idle_temp_c "
                         "for board power above idle_power_w); calib/model/thermal_network.py",
            "selection": {"method": how, "cv_rmse_c": {str(n): v for n, v in cv.items()},
                          "candidates": [int(n) for n in ok_counts],
                          "rmse_c": {str(n): fits[n].rmse_c for n in counts},
                          "bic": {str(n): fits[n].bic for n in counts}, "cv_tolerance": self.cv_tolerance},
            "cauer": cauer_of(net),
            "leakage": leak_struct,
            "slowdown_temp_c": float(slow),
            "loop": {"max_loop_gain": max(gains) if gains else None, "runaway": runaway_any,
                     "runaway_run_power_w": rp, "steps": loops},
            "ambient_temp_c": float(amb), "ambient_source": amb_src,
            "fan": fan_struct,
            "bin_s": w,
            "observations": "crossings of half-degree levels (integer sensor)" if quantized else "bin means",
            "steps": [{"workload": d.workload, "pre_step_power_w": float(p0), "fan_end_pct": _num(d.fan_end_pct)}
                      for d, p0 in zip(data, f.p0)],
        }
        stats = {"n_samples": int(f.n_points), "rmse_c": f.rmse_c, "mape_pct": None, "r2": None,
                 "n_steps": len(data), "cv_rmse_c": cv.get(chosen)}
        if warns:
            stats["warnings"] = warns
        self.fits_, self.cv_, self.loo_, self.poles_, self.network_ = fits, cv, loo, chosen, net
        self.data_ = data
        self.warnings_ = warns
        for m in warns:
            warnings.warn(m)
        full_cov = None
        if cov is not None:
            full_cov = Covariance.from_blocks(params, [cov])
        self.section_ = Section(MODEL_NAME, params, structure, stats, full_cov, self.settings())
        return self

    @staticmethod
    def _fan_resistance(data: Sequence[_StepData], f: PoleFit, width: float) -> dict[str, Any]:
        """Total resistance per step (the chosen network scaled to the step) against the fan duty at the
        end of heating; a conductance linear in duty when the duty varied."""
        duty = np.array([d.fan_end_pct for d in data])
        rts = []
        for d, p0 in zip(data, f.p0):
            m = _predict_step(d, f.r, f.tau, f.rd, p0, width)
            scale = float(np.dot(m, d.obs_theta - f.offset) / max(np.dot(m, m), 1e-12))
            rts.append(scale * float(f.r.sum() + f.rd))
        out: dict[str, Any] = {"duty_pct": [_num(x) for x in duty], "r_total_c_per_w": rts}
        ok = np.isfinite(duty)
        if ok.sum() >= 2 and np.ptp(duty[ok]) >= 10.0:
            g = 1.0 / np.array(rts)[ok]
            a = np.column_stack([np.ones(ok.sum()), duty[ok] / 100.0])
            coef, *_ = np.linalg.lstsq(a, g, rcond=None)
            out.update({"g0_w_per_c": float(coef[0]), "g_fan_w_per_c": float(coef[1]),
                        "model": "1 / R_total = g0_w_per_c + g_fan_w_per_c x duty (0..1)"})
        else:
            out["model"] = "fan duty did not vary between thermal steps: R(fan) not identified"
        return out


def _num(x: float) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None
