"""Fitting the thermal network (:mod:`calib.model.thermal_network`) to the campaign's heat/cool steps.

Data: the thermal steps (heating, then cooling) on a uniform grid of ``bin_s`` seconds, chained into one
record where they ran back to back (the campaign's settle between steps is a few tens of seconds of idle,
its power and fan duty held from the previous bin): mean board power and fan duty per bin, held over it;
whether a kernel runs, and its memory utilization (the log's ``util_mem_pct`` per bin; logs without it:
whether the kernel moves memory at all, from its per-warp counts). The input is the *measured*
board power, so the leakage that grows during heating is part of it; the fan's own power (cube law, from
the idle fan sweep) is taken off: it does not heat the die.

Model (node form): a Cauer ladder of n = 1-3 nodes (die side first; link resistances R_i, capacities C_i)
to an effective ambient, one link's conductance moving with the fan duty (g_fan per unit duty around
the reference duty, the duty at the end of the reference step's heating), the die power into node 1, a
direct term r_direct x die power (poles faster than the grid: the die itself), host heat ``busy_w`` into
the outer node while a kernel runs (the host that launches it warms the intake air), and a sensor rise
``hot_c`` x u ^ ``hot_exp`` at memory utilization u (0..1; the memory interface next to the sensor heats
with its traffic; ``hot_c`` is the rise at 100 %; the exponent is fitted when the steps' kernels load the
memory to different degrees, else 1), or ``hot_c`` while a kernel with memory traffic runs where the log has
no utilization (older sessions). Each record
starts in equilibrium with a fitted power, plus a free offset of each outer node. Exact zero-order-hold
updates (:func:`_ladder_response`). The Foster poles at the reference duty (the eigen-decomposition of the
ladder) are the section's parameters; the model rebuilds the ladder from them (Cauer, unique).

Fit: bounded least squares (:func:`calib.fit.core.fit_lsq`) for every pole count and every fan link; per
pole count the link with the lowest BIC. Starts: the Cauer ladder of a non-negative least-squares
time-constant spectrum, and the fit with one node fewer plus a slow outer node. The number of poles is
chosen by BIC with AR(1) errors (``selection="bic_ar1"``, :func:`_ar1_bic`): the residuals of 1 s bins
are autocorrelated (the sensor's averaging, the model's misfit), and a likelihood that counts each bin as
independent takes a small systematic gain for another pole; the innovations e_t - rho e_(t-1) are the
independent part. Alternatives: leave-one-step-out cross-validation (``selection="cv"``, each step's
readings left out, its power still driving the record, and predicted; the fewest poles whose held-out
RMSE is within ``cv_tolerance`` of the best; BIC with fewer than 3 steps), which scores what only the
left-out step pins (the hot spot's utilization exponent, the host heat) more than the poles; plain BIC
(``selection="bic"``). A pole count is not a candidate when a pole is faster than two bins (the die,
which the direct term stands for), carries less than :data:`MIN_POLE_SHARE` of the resistance, or is
slower than ten times the record or than ``TAU_MAX_S``.

Observations: integer readings of a noisy sensor flicker between neighbouring degrees, and their bin means
are unbiased; a clean integer sensor (readings change only when the temperature crosses a half degree)
gives the crossing times instead, since its plateaus would bias the time constants. Otherwise bin means.

Uncertainties: ``stderr`` by the delta method from the ladder's covariance, scaled for the residuals'
lag-1 autocorrelation; ``stderr_total`` adds, in quadrature, the spread across model forms (each pole in
the fit with one more resolved pole; an extra pole faster than two bins counted in the direct term). The
spread of the leave-one-step-out fits (the steps are not exchangeable: each pins part of the network, so
leaving one out measures its leverage) replaces the form term only where there is no sound fit with one
more resolved pole (one more pole that is only the die is the same network).

Leakage: static power above idle against the rise above idle, from the heating phases (each step with its
own runtime power) and the cooling phases (kernel off: the power above idle is leakage, plus the fan),
linear (IPP's sigma) and exponential; the exponential form is selected when its BIC is lower by more than
``leak_bic_margin``.

Fan controller: the logged duty against the sensor temperature over the record, a line from the lowest
duty with a slew limit (:func:`_fit_controller`), so that a prediction without a fan log follows the fan.
A steep thermostat on an integer sensor gives a least-squares slope diluted towards 0 (errors in the
input): the file then names ``fan_gain_pct_per_c`` and ``fan_t0_c`` undetermined and states what the log
does fix; likewise the slew where it never limits the logged duty (:func:`_slew_binds`; on 1 s bins a
card's slew binds for a second or so after a power step, if at all): a slew fitted there is arbitrary
above the fastest logged duty change, and where the gain is undetermined a slow slew smooths the noise of
the steep ramp's input instead (sim:gtx280: 0.66 %/s fitted against 7.8 %/s logged).

Host heat: ``busy_w`` enters the outer node, whose only path to the ambient is the outer link R_n, so the
sensor sees ``busy_w`` x R_n (published as ``busy_rise_c`` with its standard errors); ``busy_w`` alone
trades against R_n along that product, and its watts are the ladder's (the card's power that would warm
the outer node as much: only a share of a blower card's heat stays at its intake, so the host's watts
are that share of them), so ``busy_heat_w`` is named undetermined (``stats["undetermined"]``).
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
from scipy.optimize import least_squares, nnls

from calib.core import names
from calib.core.atomic import finite_or_none
from calib.core.errors import FitError
from calib.core.metrics import ar1_rho
from calib.core.params import Covariance, Param, Section
from calib.core.units import mem_intensity
from calib.fit.base import Estimator, number, optional, options
from calib.fit.core import fit_lsq, stderr_of
from calib.fit.thermal import fan_power
from calib.fit.uncertainty import ar1_inflation, jackknife_sd, total_stderr
from calib.model.thermal_network import (DEFAULT_SLOWDOWN_C, MAX_POLES, MIN_LINK_G, MODEL_NAME, NODE_AMBIENT,
                                         NODE_BUSY_HEAT, NODE_BUSY_RISE, NODE_FAN_G, NODE_FORM, NODE_HOT_EXP,
                                         NODE_HOT_SPOT, FanController, FanCooling, FosterNetwork, Leakage, cauer_of,
                                         foster_to_cauer, hot_spot_weight, ladder_conductance, ladder_foster,
                                         link_vector, runaway_power_w, steady_state)
from calib.model.thermal import rc_decay
from calib.segment import SessionData, ThermalStep

log = logging.getLogger(__name__)

TAU_MAX_S = 20000.0
R_MAX = 10.0


@dataclass
class _StepData:
    """One thermal step on the fit grid."""

    workload: str
    dur_s: float              # start of the last bin (s after heat start)
    du_w: np.ndarray          # board power above idle per bin, W
    fan_end_pct: float        # mean fan duty over the last 30 s of heating
    obs_t: np.ndarray = None        # times (s after heat start) the model is compared at
    obs_theta: np.ndarray = None    # observed rise above idle there (C)


def _bin(t: np.ndarray, y: np.ndarray, n: int, width: float) -> np.ndarray:
    idx = np.clip(np.floor(t / width - 1e-9).astype(int), 0, n - 1)
    ok = np.isfinite(y)
    s = np.bincount(idx[ok], weights=y[ok], minlength=n)
    c = np.bincount(idx[ok], minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(c > 0, s / np.maximum(c, 1), np.nan)


def _held(x: np.ndarray) -> pd.Series:
    """Per-bin values with a bin without a reading holding the previous bin's (the first ones the next's)."""
    return pd.Series(x).ffill().bfill()


def _trace(s: ThermalStep, width: float) -> tuple[np.ndarray, ...]:
    """A step's heating and cooling as one trace: time (s after heat start), temperature (C), board power (W),
    the fan duty (%) of the heating and of the cooling readings (NaN where none is logged), and its number of
    bins of ``width`` s."""
    t = np.concatenate([s.heat_t, s.cool_t + s.heat_s])
    hf = s.heat_fan_pct if s.heat_fan_pct is not None else np.full(len(s.heat_t), np.nan)
    cf = s.cool_fan_pct if s.cool_fan_pct is not None else np.full(len(s.cool_t), np.nan)
    return (t, np.concatenate([s.heat_temp_c, s.cool_temp_c]).astype(float),
            np.concatenate([s.heat_power_w, s.cool_power_w]).astype(float), hf, cf, int(math.ceil(t.max() / width)))


def _crossings(t: np.ndarray, temp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A clean integer sensor's observations (module docstring): (time, level C) where its reading changes from
    k to k+1, the temperature crossing k + 1/2 between the two readings (a stuck reading measures no approach)."""
    ok = np.isfinite(temp)
    tt, yy = t[ok], temp[ok]
    ch = np.flatnonzero(np.diff(yy) != 0) + 1
    return 0.5 * (tt[ch] + tt[ch - 1]), 0.5 * (yy[ch] + yy[ch - 1])


def _prepare(s: ThermalStep, idle_temp_c: float, idle_power_w: float, width: float,
             quantized: bool = False) -> _StepData:
    if s.cool_power_w is None or s.heat_s is None:
        raise FitError(f"thermal step {s.workload}: no power trace while cooling (a session of an older toolkit?)")
    t, temp, pw, hf, cf, n = _trace(s, width)
    last = s.heat_t >= s.heat_t.max() - 30.0
    fan_end = float(np.nanmean(hf[last])) if np.isfinite(hf[last]).any() else math.nan
    if quantized:
        obs_t, obs_y = _crossings(t, temp)
        obs_y = obs_y - idle_temp_c
    else:
        th = _bin(t, temp, n, width) - idle_temp_c
        keep = np.isfinite(th)
        obs_t, obs_y = ((np.arange(n) + 0.5) * width)[keep], th[keep]
    return _StepData(s.workload, (n - 1) * width, _held(_bin(t, pw, n, width)).to_numpy() - idle_power_w, fan_end,
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


def _spectrum_init(data: Sequence[_StepData], n_poles: int, width: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Initial poles from a non-negative least-squares spectrum over a log-spaced grid of time constants."""
    dur = max(d.dur_s for d in data)
    grid = np.geomspace(2.0 * width, 2.0 * dur, 40)
    cols, ys = [], []
    for d in data:
        direct = d.du_w[np.clip(np.floor(d.obs_t / width).astype(int), 0, len(d.du_w) - 1)]
        colsd = [direct] + [_unit_at(d, float(g), 0.0, width, d.obs_t) for g in grid]
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


#: duty resolution of the fit's exact updates (1 %: NVML logs whole percent)
FIT_DUTY_STEPS = 100
#: longest gap (s) between two thermal steps of one segment that still chains them into one record (the
#: gap's power and duty are held from the previous step's last bin); a longer gap starts a new record
MAX_GAP_S = 300.0
#: the hot spot's utilization exponent is fitted when the steps' memory utilizations span at least this ratio
HOT_EXP_MIN_RATIO = 1.1
#: capacities of the slow outer node added to a fit of one pole fewer (times its last node's), one start each
OUTER_C_RATIOS = (20.0, 100.0)
#: a pole count whose fit has a pole with less than this share of the total resistance (or a time
#: constant beyond TAU_MAX_S) has a pole the data do not ask for: not a candidate
MIN_POLE_SHARE = 0.02


@dataclass
class _Record:
    """The thermal steps on one uniform grid of ``width`` s, chained where they ran back to back (module
    docstring): the slow nodes carry their heat from one step into the next instead of a free start per step."""

    width: float
    power_w: np.ndarray            # board power per bin, W (held over the bin)
    duty: np.ndarray               # fan duty per bin, 0..1 (0 where none is logged)
    busy: np.ndarray               # 1 while a kernel runs
    mem: np.ndarray                # memory utilization per bin (0..1, the log's util_mem_pct / 100) where
                                   # every step logs it (``util_logged``), else 1 while a kernel with memory
                                   # traffic runs
    starts: np.ndarray             # first bin of each chained record (each has a free initial state)
    steps: list[tuple[int, int, int]]   # per step: first bin, first cooling bin, end (exclusive)
    obs_bin: np.ndarray            # bin of each observation
    obs_frac: np.ndarray           # its position within the bin (0..1)
    obs_y: np.ndarray              # observed sensor temperature, C
    obs_step: np.ndarray           # step of each observation
    temp_bin: np.ndarray           # mean sensor reading per bin (NaN in gaps), C
    has_fan: bool
    observations: str
    obs_mean: bool                 # the observations are bin means (else instants within their bins)
    util_logged: bool = False      # ``mem`` is the logged memory utilization

    def hot_weight(self, exponent: Any) -> np.ndarray:
        """The memory hot spot's weight per bin (B x N for B exponents; :func:`calib.model.thermal_network.
        hot_spot_weight`): ``mem`` ^ exponent where the utilization is logged, else ``mem`` (on/off)."""
        e = np.atleast_1d(np.asarray(exponent, dtype=float))[:, None]
        return hot_spot_weight(self.mem[None, :], e) if self.util_logged else np.broadcast_to(self.mem, (len(e), len(self.mem)))

    def step_means(self, values: np.ndarray | None = None) -> np.ndarray:
        """Mean of a per-bin quantity (default ``mem``: the memory utilization, 0..1) over each step's
        heating bins (0 for a step without one)."""
        v = self.mem if values is None else values
        return np.array([float(np.mean(v[a:b])) if b > a else 0.0 for a, b, _ in self.steps])


def _dithered(series: Sequence[np.ndarray]) -> bool:
    """Whether integer readings flicker between neighbouring degrees (module docstring, observations)."""
    changes = blips = 0
    for y in series:
        y = np.asarray(y, dtype=float)
        y = y[np.isfinite(y)]
        if len(y) < 3:
            continue
        changes += int(np.sum(np.diff(y) != 0))
        blips += int(np.sum((y[1:-1] != y[:-2]) & (y[2:] == y[:-2])))
    return changes > 0 and blips > 0.1 * changes


def _record(steps: Sequence[ThermalStep], width: float, quantized: bool) -> _Record:
    """Bin the steps (module docstring) and chain those that ran back to back in one segment."""
    dith = quantized and _dithered([np.concatenate([s.heat_temp_c, s.cool_temp_c]) for s in steps])
    # the hot spot by the logged memory utilization where every step has it (else on/off from the counts)
    util = all(s.heat_util_mem_pct is not None and s.cool_util_mem_pct is not None
               and np.isfinite(s.heat_util_mem_pct).any() for s in steps)
    crossings = quantized and not dith
    chain = all(s.heat_t0_s is not None for s in steps)
    order = sorted(range(len(steps)), key=lambda k: steps[k].heat_t0_s) if chain else list(range(len(steps)))
    pw, du, bz, mm, tb, starts, spans = [], [], [], [], [], [], [None] * len(steps)
    ob, of, oy, os_ = [], [], [], []
    n_bins, prev_end_t, prev_seg = 0, None, None
    has_fan = False
    for k in order:
        s = steps[k]
        t, temp, p, hf, cf, n = _trace(s, width)
        p_bin = _held(_bin(t, p, n, width)).to_numpy()
        f_bin = _bin(t, np.concatenate([hf, cf]).astype(float) / 100.0, n, width)
        has_fan = has_fan or bool(np.isfinite(f_bin).any())
        f_bin = _held(f_bin).fillna(0.0).to_numpy()
        gap = s.heat_t0_s - prev_end_t if chain and prev_end_t is not None and s.segment == prev_seg else None
        if gap is not None and -width < gap <= MAX_GAP_S and n_bins:
            g = max(0, int(round(gap / width)))
            for per_bin, held in ((pw, pw[-1][-1]), (du, du[-1][-1]), (bz, 0.0), (mm, 0.0), (tb, np.nan)):
                per_bin.append(np.full(g, held))
            n_bins += g
        else:
            starts.append(n_bins)
        mid = (np.arange(n) + 0.5) * width
        busy = (mid < s.heat_s).astype(float)
        if util:  # mean utilization over each bin (the readings' own period), gaps held
            u = np.concatenate([s.heat_util_mem_pct, s.cool_util_mem_pct]).astype(float) / 100.0
            mem = np.clip(_held(_bin(t, u, n, width)).fillna(0.0).to_numpy(), 0.0, 1.0)
        else:
            mem = busy * float(mem_intensity(s.per_warp) > 0)
        th = _bin(t, temp, n, width)
        for per_bin, v in zip((pw, du, bz, mm, tb), (p_bin, f_bin, busy, mem, th)):
            per_bin.append(v)
        heat_bins = int(round(s.heat_s / width))
        spans[k] = (n_bins, n_bins + heat_bins, n_bins + n)
        if crossings:
            ot, oyv = _crossings(t, temp)
        else:
            keep = np.isfinite(th)
            ot, oyv = mid[keep], th[keep]
        pos = np.clip(ot / width, 0.0, n - 1e-9)
        ob.append(n_bins + np.floor(pos).astype(int))
        of.append(pos - np.floor(pos))
        oy.append(oyv)
        os_.append(np.full(len(ot), k))
        n_bins += n
        prev_end_t = (s.heat_t0_s + n * width) if chain else None
        prev_seg = s.segment
    how = ("crossings of half-degree levels (integer sensor)" if crossings else
           "bin means (integer sensor with noise: the readings flicker)" if dith else "bin means")
    return _Record(width, np.concatenate(pw), np.concatenate(du), np.concatenate(bz), np.concatenate(mm),
                   np.array(starts, dtype=int), spans, np.concatenate(ob), np.concatenate(of), np.concatenate(oy),
                   np.concatenate(os_), np.concatenate(tb), has_fan, how, not crossings, util)


#: the fan controller's gain is determined when its input spans at least this many sensor steps (P5-P95)
#: over the bins where the duty is on its ramp: a rounding error uniform over one step (variance step^2 / 12)
#: dilutes a least-squares slope over a uniform span S by S^2 / (S^2 + step^2), under 10 % from S = 3 steps
RAMP_SPAN_STEPS = 3.0


#: per-bin decay exponent (lambda x bin) above which a mode is treated as following its input within a bin
FAST_DECAY = 40.0


def _ladder_response(rec: _Record, r_link: np.ndarray, c_node: np.ndarray, g_fan: np.ndarray, link: int,
                     duty_ref: float, die_w: np.ndarray, busy_w: np.ndarray, init: Any,
                     max_exp: float = 200.0) -> tuple[np.ndarray, np.ndarray]:
    """Die-node temperature above ambient at every bin edge (B x (N + 1)) and its mean over every bin
    (B x N; the exact mean of the exponentials, not of the edges: the die's own pole settles within a
    bin) for B ladders at once (link
    resistances ``r_link`` and capacities ``c_node``, B x n; the fan link's conductance change per unit
    duty ``g_fan``, B) driven by ``die_w`` (N) into node 1 and ``busy_w`` (B) x busy into node n.
    ``init(j, g_start)`` gives the B x n state at the start of record j (g_start: B x n x n conductances).

    Exact zero-order hold: over a run of bins at one duty the ladder is time-invariant, so in its modes
    (the symmetric form C^-1/2 G C^-1/2 is diagonalised) each run is a geometric sum done with one
    cumulative sum, chunked so that no power of the decay overflows."""
    b_sz, n = r_link.shape
    q = np.round(rec.duty * FIT_DUTY_STEPS).astype(int)
    uniq, inv = np.unique(q, return_inverse=True)
    duty_u = uniq / FIT_DUTY_STEPS
    g = ladder_conductance(r_link)
    e = link_vector(n, link)
    g_link = 1.0 / r_link[:, link - 1]
    dg = np.maximum(g_fan[:, None] * (duty_u[None, :] - duty_ref), MIN_LINK_G - g_link[:, None])
    gd = g[:, None] + dg[..., None, None] * np.outer(e, e)
    d = 1.0 / np.sqrt(c_node)
    lam, u = np.linalg.eigh(d[:, None, :, None] * gd * d[:, None, None, :])
    lam = np.maximum(lam, 1e-12)
    a1 = u[..., 0, :] * d[:, None, 0:1]
    an = u[..., n - 1, :] * d[:, None, n - 1:n]
    big_n = len(inv)
    out = np.empty((b_sz, big_n + 1))
    means = np.empty((b_sz, big_n))
    brk = np.flatnonzero(np.diff(inv) != 0) + 1
    bounds = np.unique(np.concatenate([[0], brk, rec.starts, [big_n]])).astype(int)
    start_of = {int(s): j for j, s in enumerate(rec.starts)}
    h = rec.width
    x = np.zeros((b_sz, n))
    busy = rec.busy
    for a, b in zip(bounds[:-1], bounds[1:]):
        if a in start_of:
            x = init(start_of[a], gd[:, inv[a]])
        k = inv[a]
        lm, uk = lam[:, k], u[:, k]
        coef = (-np.expm1(-lm * h) / lm)[..., None]
        # bin mean of a mode from its edges: m = f z0 + (1 - f) z_inf, z_inf = (z1 - e z0) / (1 - e)
        e_h = rc_decay(h, 1.0 / lm)[..., None]
        f_h = (-np.expm1(-lm * h) / (lm * h))[..., None]
        # a mode that decays by more than e^-FAST_DECAY per bin (the die's own pole) follows its input within
        # a bin: z_{t+1} = w_t + e z_t, exact to e^2 < 1e-17 when written z_{t+1} = w_t + e w_{t-1}. Only the
        # slower modes go through the running quotient w / dec, whose chunks they alone limit (a fast mode
        # forced chunks of one bin: a Python loop over every bin of the record)
        fast = lm * h > FAST_DECAY
        lm_slow = np.where(fast, 0.0, lm)
        step = max(1, int(max_exp / (max(float(lm_slow.max()), 1e-300) * h)))
        for a0 in range(a, b, step):
            b0 = min(b, a0 + step)
            dec = rc_decay(h * np.arange(b0 - a0 + 1), 1.0 / np.maximum(lm_slow, 1e-300)[..., None])
            w = coef * (a1[:, k][..., None] * die_w[None, None, a0:b0]
                        + an[:, k][..., None] * (busy_w[:, None, None] * busy[None, None, a0:b0]))
            z0 = np.einsum("bkn,bk->bn", uk, x / d)
            z = dec * np.concatenate([z0[..., None], z0[..., None] + np.cumsum(w / dec[..., 1:], axis=-1)], axis=-1)
            if fast.any():
                prev_w = np.concatenate([z0[..., None], w[..., :-1]], axis=-1)
                z_fast = np.concatenate([z0[..., None], w + e_h * prev_w], axis=-1)
                z = np.where(fast[..., None], z_fast, z)
            out[:, a0:b0 + 1] = d[:, 0:1] * np.einsum("bk,bkl->bl", uk[:, 0, :], z)
            zm = f_h * z[..., :-1] + (1.0 - f_h) * (z[..., 1:] - e_h * z[..., :-1]) / (1.0 - e_h)
            means[:, a0:b0] = d[:, 0:1] * np.einsum("bk,bkl->bl", uk[:, 0, :], zm)
            x = d * np.einsum("bik,bk->bi", uk, z[..., -1])
    return out, means


@dataclass
class LadderFit:
    """A fitted ladder of one pole count and fan link (values of the internal parameters, the Foster
    poles at the reference duty, fit statistics)."""

    n: int
    link: int
    values: dict[str, float]
    result: Any                    # calib.fit.core.LsqResult
    tau: np.ndarray                # Foster time constants at the reference duty, fastest first, s
    r: np.ndarray                  # their resistances, C/W
    rmse_c: float
    bic: float
    warnings: list[str]
    resid: np.ndarray


class _LadderProblem:
    """The node-form model of the record (module docstring) for one pole count and fan link: parameters,
    their starts, and the sensor temperature at the observations for B parameter sets at once."""

    def __init__(self, rec: _Record, n: int, link: int, duty_ref: float, fan_w: float, use_fan: bool):
        self.rec, self.n, self.link, self.duty_ref, self.use_fan = rec, n, link, duty_ref, use_fan
        self.die_w = rec.power_w - fan_w * rec.duty ** 3
        self.n_rec = len(rec.starts)
        # the hot spot is fitted when some kernel runs without memory traffic; its utilization exponent when
        # also the steps' kernels load the memory to different degrees (at least two levels HOT_EXP_MIN_RATIO
        # apart), else the hot spot is linear in the utilization
        self.hot_free = bool(np.any(rec.mem > 0) and np.any((rec.busy > 0) & (rec.mem == 0)))
        su = rec.step_means()
        lv = np.sort(su[su > 0.02]) if rec.util_logged else np.array([])
        self.hot_exp_free = self.hot_free and bool(len(lv) >= 2 and lv[-1] >= HOT_EXP_MIN_RATIO * lv[0])

    def params(self, start: dict[str, float], frozen: Sequence[str] = ()) -> list[Param]:
        n = self.n
        ps = [Param(f"R{i}", float(np.clip(start[f"R{i}"], 2e-5, 0.99 * R_MAX)), "C/W", 1e-5, R_MAX)
              for i in range(1, n + 1)]
        ps += [Param(f"C{i}", float(np.clip(start[f"C{i}"], 0.1, 1e7)), "J/C", 1e-2, 1e8) for i in range(1, n + 1)]
        ps += [Param("r_direct", float(start.get("r_direct", 0.01)), "C/W", 0.0, R_MAX),
               Param("ambient", float(start["ambient"]), "C", -60.0, 150.0),
               Param("g_fan", float(start.get("g_fan", 5.0)) if self.use_fan else 0.0, "W/C", 0.0, 1000.0,
                     vary=self.use_fan),
               Param("busy_w", max(0.0, float(start.get("busy_w", 0.0))), "W", 0.0, 1e4),
               Param("hot_c", float(start.get("hot_c", 0.0)), "C", -30.0, 30.0, vary=self.hot_free),
               Param("hot_exp", float(start.get("hot_exp", 0.5)) if self.hot_exp_free else 1.0, "", 0.05, 2.0,
                     vary=self.hot_exp_free)]
        for j in range(self.n_rec):
            ps.append(Param(f"p0_{j}", float(start.get(f"p0_{j}", self.die_w[self.rec.starts[j]])), "W", -1e4, 1e4))
            ps += [Param(f"dev{j}_{i}", float(start.get(f"dev{j}_{i}", 0.0)), "C", -100.0, 100.0) for i in range(2, n + 1)]
        for p in ps:
            if p.name in frozen:
                p.vary = False
        return ps

    def initial_state_names(self, step: int) -> list[str]:
        """The initial-state parameters of the records that begin with thermal step ``step`` (held at their
        full-fit values when the step's readings are left out: nothing else determines them)."""
        first = self.rec.steps[step][0]
        out = []
        for j, b in enumerate(self.rec.starts):
            if b == first:
                out += [f"p0_{j}"] + [f"dev{j}_{i}" for i in range(2, self.n + 1)]
        return out

    def sensor(self, v: dict[str, Any], mask: np.ndarray | None = None) -> np.ndarray:
        """Sensor temperature (C) at the observations (``mask``: a subset), for parameter values that may
        be arrays of shape (B, 1): returns (B, M), or (M,) for scalars."""
        arr = {k: np.atleast_1d(np.asarray(x, dtype=float)).ravel() for k, x in v.items()}
        b_sz = max(len(a) for a in arr.values())

        def col(k: str) -> np.ndarray:
            return np.broadcast_to(arr[k], (b_sz,))

        n, rec = self.n, self.rec
        r = np.stack([col(f"R{i}") for i in range(1, n + 1)], axis=1)
        c = np.stack([col(f"C{i}") for i in range(1, n + 1)], axis=1)
        e1 = np.zeros(n)
        e1[0] = 1.0

        def init(j: int, g_start: np.ndarray) -> np.ndarray:
            x = np.linalg.solve(g_start, (col(f"p0_{j}")[:, None] * e1)[..., None])[..., 0]
            for i in range(2, n + 1):
                x[:, i - 1] += col(f"dev{j}_{i}")
            return x

        t1, t1_mean = _ladder_response(rec, r, c, col("g_fan"), self.link, self.duty_ref, self.die_w, col("busy_w"),
                                       init)
        ob = rec.obs_bin if mask is None else rec.obs_bin[mask]
        fr = rec.obs_frac if mask is None else rec.obs_frac[mask]
        node = (t1_mean[:, ob] if rec.obs_mean else t1[:, ob] + fr[None, :] * (t1[:, ob + 1] - t1[:, ob]))
        out = (col("ambient")[:, None] + col("r_direct")[:, None] * self.die_w[None, ob]
               + col("hot_c")[:, None] * rec.hot_weight(col("hot_exp"))[:, ob] + node)
        scalar = all(np.ndim(x) == 0 for x in v.values())
        return out[0] if scalar else out

    def fit(self, start: dict[str, float], mask: np.ndarray | None = None, max_nfev: int | None = None,
            frozen: Sequence[str] = ()) -> LadderFit:
        rec = self.rec
        sel = np.ones(len(rec.obs_y), bool) if mask is None else mask
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = fit_lsq(lambda v: self.sensor(v, sel), self.params(start, frozen), rec.obs_y[sel], vectorized=True,
                          max_nfev=max_nfev)
        v = {p.name: p.value for p in res.params}
        tau, r = ladder_poles(v, self.n)
        return LadderFit(self.n, self.link, v, res, tau, r, res.rmse, res.bic, list(res.warnings), res.yhat - res.y)


def ladder_poles(v: dict[str, float], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Foster poles (s, C/W; fastest first) at the reference duty of fitted ladder values ``v``."""
    return ladder_foster([v[f"R{i}"] for i in range(1, n + 1)], [v[f"C{i}"] for i in range(1, n + 1)])


def _ladder_start(n: int, spectrum: tuple | None) -> dict[str, float]:
    """Start of an n-node ladder from scratch: the Cauer ladder of the Foster spectrum's n poles when it has
    one, else a default ladder (poles of some tens, hundreds and a thousand seconds)."""
    rs = cs = None
    if spectrum is not None:
        r, tau = spectrum
        try:
            rs, cs = foster_to_cauer(r, tau)
            if len(rs) != n or not all(np.isfinite(rs + cs)) or min(rs + cs) <= 0:
                rs = cs = None
        except (ZeroDivisionError, FloatingPointError, ValueError):
            rs = cs = None
    if rs is None:
        rs = list(np.geomspace(0.1, 0.02, n))
        cs = list(np.geomspace(300.0, 30000.0, n))
    return {**{f"R{i + 1}": float(rs[i]) for i in range(n)}, **{f"C{i + 1}": float(cs[i]) for i in range(n)}}


def _start_outer(prev: LadderFit, c_ratio: float = 20.0) -> dict[str, float]:
    """The (n-1)-node fit with a slow outer node added (its last link split: the data may ask for a slower
    part behind it, the case air), of ``c_ratio`` times the last node's capacity."""
    m = prev.n
    st = dict(prev.values)
    st[f"R{m}"] = 0.8 * prev.values[f"R{m}"]
    st[f"R{m + 1}"] = 0.25 * prev.values[f"R{m}"]
    st[f"C{m + 1}"] = c_ratio * prev.values[f"C{m}"]
    for j in range(len([k for k in st if k.startswith("p0_")])):
        st[f"dev{j}_{m + 1}"] = 0.0
    return st


def _start_die(prev: LadderFit) -> dict[str, float]:
    """The (n-1)-node fit with a fast die node put in front of it, taken from its direct term (the die's
    own pole, a fraction of a second on air-cooled cards, resolved by the bins right after each power
    step)."""
    m = prev.n
    v = prev.values
    st = {k: val for k, val in v.items() if not k.startswith(("R", "C", "dev"))}
    rd = max(v["r_direct"], 1e-3)
    st["R1"], st["C1"], st["r_direct"] = 0.7 * rd, 0.4 / (0.7 * rd), 0.3 * rd
    for i in range(1, m + 1):
        st[f"R{i + 1}"], st[f"C{i + 1}"] = v[f"R{i}"], v[f"C{i}"]
    for j in range(len([k for k in v if k.startswith("p0_")])):
        for i in range(2, m + 1):
            st[f"dev{j}_{i + 1}"] = v.get(f"dev{j}_{i}", 0.0)
        st[f"dev{j}_2"] = 0.0
    return st


def _dominant(f: LadderFit, width: float) -> int:
    """Poles of a ladder fit that the grid resolves (two bins or slower): the fastest may be the die, which
    the direct term stands for where the data cannot resolve it."""
    return int(np.sum(f.tau >= 2.0 * width))


def _ar1_bic(f: LadderFit, rec: _Record) -> tuple[float, float]:
    """BIC of a ladder fit whose errors are AR(1) (module docstring, selection): the residuals' lag-1
    coefficient rho pooled over the steps, the innovations e_t - rho e_(t-1) Gaussian, N ln(their mean
    square) + (k + 1) ln N over the N innovations, k the fit's varied parameters (plus rho). Returns
    (BIC, rho)."""
    parts = [f.resid[rec.obs_step == k] for k in np.unique(rec.obs_step)]
    rho = ar1_rho(parts)
    e = np.concatenate([p[1:] - rho * p[:-1] for p in parts])
    k = sum(p.vary for p in f.result.params) + 1
    return len(e) * math.log(max(float(np.mean(e ** 2)), 1e-300)) + k * math.log(len(e)), float(rho)


def _follow(x: np.ndarray, inp: np.ndarray, duty: np.ndarray, first: np.ndarray, h: float) -> np.ndarray:
    """Duty (K x N) a controller gives for K parameter sets ``x`` (K x 4: floor, t0, gain, slew per s) along
    the input temperature ``inp`` (N bins of ``h`` s), restarting from the logged ``duty`` where ``first``."""
    lo, t0, gain, slew = (np.asarray(c, dtype=float) for c in np.atleast_2d(x).T)
    lim = slew * h
    out = np.empty((len(lo), len(inp)))
    d = np.zeros(len(lo))
    for j in range(len(inp)):
        if first[j]:
            d = np.full(len(lo), duty[j])
        out[:, j] = d
        want = np.minimum(1.0, np.maximum(lo, lo + gain * (inp[j] - t0)))
        d = d + np.clip(want - d, -lim, lim)
    return out


def _fit_controller(rec: _Record, hot_c: np.ndarray, step_c: float = 0.0, duty_step: float = 0.0
                    ) -> tuple[Any, dict[str, Any]]:
    """The fan controller (:class:`calib.model.thermal_network.FanController`) from the logged duty against
    the sensor temperature of the thermal record: a line from the lowest duty above a temperature, slew
    limited, fitted by least squares of the duty it gives from each record's first logged duty (a grid of
    start temperatures and gains, then refined: the clip and the slew make the misfit piecewise). The
    controller's input is the sensor reading, or the reading without the memory hot spot (the die
    temperature next to it; ``hot_c``: the fitted hot spot per bin, C), whichever follows the log better. A
    duty that never rose above its floor gives
    a fan held at its floor (the curve above the temperatures the campaign reached is unknown). ``step_c``:
    the sensor's resolution (C; 1 for an integer sensor): a ramp narrower than :data:`RAMP_SPAN_STEPS`
    steps leaves the gain and start temperature undetermined (``info["undetermined"]``). The slew is
    determined only where it limits the logged duty: the fit with the slew unlimited is worse by more than
    BIC's price of the parameter (ln N) and the gain is determined (else a slow slew stands in for the gain);
    otherwise it is named undetermined with the bound the log gives, the fastest change of the logged duty
    between bins less its resolution ``duty_step`` (0..1; 0.01 for an integer percent)."""
    h = rec.width
    temp = pd.Series(rec.temp_bin).interpolate(limit_direction="both").to_numpy()
    duty = rec.duty
    floor = float(np.percentile(duty, 5))
    info: dict[str, Any] = {"n_bins": int(len(duty)), "floor_pct": 100.0 * floor}
    up = duty > floor + 0.02
    if up.sum() < 5 or np.ptp(temp[up]) < 1.0:
        info["model"] = (f"the duty stayed at its floor ({100 * floor:.0f} %) up to {float(np.nanmax(temp)):.0f} C: no "
                         "curve above it is known; the fan is held at its floor")
        return FanController(floor, float(np.nanmax(temp)), 0.0, 1.0, math.inf), info
    seg = np.searchsorted(rec.starts, np.arange(len(duty)), side="right") - 1
    first = np.r_[True, seg[1:] != seg[:-1]]
    slew0 = max(float(np.percentile(np.abs(np.diff(duty)), 99.5)) / h, 2e-3)
    t_grid = np.linspace(float(np.min(temp)), float(np.max(temp)), 41)
    g_grid = np.geomspace(2e-3, 0.5, 31)
    tt, gg = np.meshgrid(t_grid, g_grid)
    grid = np.column_stack([np.full(tt.size, floor), tt.ravel(), gg.ravel(), np.full(tt.size, slew0)])
    best = None
    for label, inp in (("sensor", temp), ("sensor without the memory hot spot", temp - hot_c)):
        sse = np.sum((_follow(grid, inp, duty, first, h) - duty) ** 2, axis=1)
        x0 = grid[int(np.argmin(sse))]
        sol = least_squares(lambda x: _follow(x, inp, duty, first, h)[0] - duty, x0,
                            bounds=([0.0, -50.0, 0.0, 1e-4], [1.0, 200.0, 2.0, 1.0]), diff_step=1e-3)
        rmse = float(np.sqrt(np.mean(sol.fun ** 2)))
        if best is None or rmse < best[0]:
            best = (rmse, label, sol.x)
    rmse, label, (lo, t0, gain, slew) = best
    info.update({"input": label, "rmse_pct": 100.0 * rmse,
                 "model": "duty = min(100 %, max(fan_min_pct, fan_min_pct + fan_gain_pct_per_c (T - fan_t0_c))), "
                          "reached at most fan_slew_pct_per_s"})
    inp = temp if label == "sensor" else temp - hot_c
    ramp = up & (duty < 0.98)
    lo_c, hi_c = (float(x) for x in np.percentile(inp[ramp], [5, 95])) if ramp.any() else (math.nan, math.nan)
    span = hi_c - lo_c
    info["ramp"] = {"input_p5_c": lo_c, "input_p95_c": hi_c, "duty_max_pct": 100.0 * float(np.max(duty[ramp])),
                    "sensor_step_c": step_c, "bins": int(ramp.sum())}
    if step_c > 0 and not span >= RAMP_SPAN_STEPS * step_c:
        rise = 100.0 * (float(np.max(duty[ramp])) - floor)
        info["undetermined"] = ["fan_gain_pct_per_c", "fan_t0_c"]
        info["gain_at_least_pct_per_c"] = rise / max(span, step_c)
        info["reason"] = (f"the duty rose from {100 * floor:.0f} % to {100 * float(np.max(duty[ramp])):.0f} % while the "
                          f"controller's input ({label}) stayed within {lo_c:.1f}-{hi_c:.1f} C (P5-P95), under "
                          f"{RAMP_SPAN_STEPS:g} steps of the {step_c:g} C sensor: the slope is not resolved (the readings' "
                          f"rounding and noise dilute it towards 0); the gain is at least about {info['gain_at_least_pct_per_c']:.2g} "
                          f"%/C ({rise:.0f} points within {max(span, step_c):.1f} C); the fitted {100 * gain:.3g} %/C and "
                          f"fan_t0_c {t0:.1f} C are the best fit to the log, not measured")
    slew_info = _slew_binds(np.array([lo, t0, gain, slew]), inp, duty, first, h, duty_step)
    info["slew"] = slew_info
    if "undetermined" in info or not slew_info["binds"]:
        why = ("the gain is undetermined (a steep thermostat on a rounded, noisy input): the fitted slew smooths the "
               "input's noise instead of measuring the fan" if "undetermined" in info else
               f"the duty never changes at the fitted slew (the fit with an unlimited slew is {slew_info['bic_gain']:.3g} "
               f"worse in N ln(SSE), under BIC's ln N = {math.log(len(duty)):.3g})")
        info.setdefault("undetermined", []).append("fan_slew_pct_per_s")
        info["slew_at_least_pct_per_s"] = slew_info["fastest_pct_per_s"]
        info["slew_reason"] = (f"{why}; the logged duty changed by at most {slew_info['fastest_pct_per_s'] + 100 * duty_step / h:.3g} "
                               f"%/s between {h:g} s bins, so the slew is at least {slew_info['fastest_pct_per_s']:.3g} %/s "
                               f"(less the duty's {100 * duty_step:g} % resolution); the fitted {100 * slew:.3g} %/s is the "
                               "best fit to the log, not measured")
    return FanController(float(lo), float(t0), float(gain), 1.0, float(slew), label != "sensor"), info


def _slew_binds(x: np.ndarray, inp: np.ndarray, duty: np.ndarray, first: np.ndarray, h: float,
                duty_step: float) -> dict[str, Any]:
    """Whether the controller's slew (``x``: floor, t0, gain, slew per s, as :func:`_follow`) limits the
    logged ``duty`` (0..1, bins of ``h`` s): the rise in N ln(SSE) when the slew is unlimited against BIC's
    ln N, the bins where the fitted slew limits the duty, and the fastest logged change between bins less
    the duty's resolution ``duty_step`` (a lower bound on the slew: bin means of a duty that changes at
    most s per second differ by at most s h, and the rounding by at most one step), %/s."""
    fast = x.copy()
    fast[3] = 1.0  # the fit's upper bound: 100 %/s
    out = _follow(np.vstack([x, fast]), inp, duty, first, h)
    sse = np.sum((out - duty) ** 2, axis=1)
    n = len(duty)
    gain = float(n * math.log(max(sse[1], 1e-300) / max(sse[0], 1e-300)))
    lo, t0, g, slew = x
    want = np.minimum(1.0, np.maximum(lo, lo + g * (inp - t0)))
    limited = int(np.sum(np.abs(want - out[0]) > slew * h * (1 + 1e-9)))
    dd = np.abs(np.diff(duty))[~first[1:]]
    fastest = max(float(dd.max()) - duty_step, 0.0) / h if dd.size else 0.0
    return {"binds": bool(gain > math.log(n)), "bic_gain": gain, "limited_bins": limited,
            "fastest_pct_per_s": 100.0 * fastest}


def _leak_fit(steps: Sequence[ThermalStep], idle_temp_c: float, idle_power_w: float, skip_s: float,
              fan_max_w: float | None, fan_max_se_w: float | None = None) -> dict[str, Any]:
    """Linear and exponential leakage fits (module docstring) to the steps' readings above idle. ``fan_max_se_w``:
    the standard error of the fan power subtracted from every sample; the leakage parameters' standard errors
    count it (below)."""
    xs, ys, ds, grp = [], [], [], []
    for k, s in enumerate(steps):
        sel = s.heat_t >= skip_s
        hp = (s.heat_power_w - idle_power_w)[sel].astype(float)
        cp = (s.cool_power_w - idle_power_w).astype(float)
        hd, cd = np.zeros(len(hp)), np.zeros(len(cp))
        if fan_max_w is not None:
            if s.heat_fan_pct is not None and np.isfinite(s.heat_fan_pct).all():
                hd = (s.heat_fan_pct[sel] / 100.0) ** 3
            if s.cool_fan_pct is not None and np.isfinite(s.cool_fan_pct).all():
                cd = (s.cool_fan_pct / 100.0) ** 3
            hp, cp = hp - fan_max_w * hd, cp - fan_max_w * cd
        # cooling: skip the first seconds (the kernel's end, the power sensor's averaging)
        csel = s.cool_t >= 3.0
        xs += [(s.heat_temp_c - idle_temp_c)[sel], (s.cool_temp_c - idle_temp_c)[csel]]
        ys += [hp, cp[csel]]
        ds += [hd, cd[csel]]
        grp += [np.full(int(sel.sum()), k), np.full(int(csel.sum()), -1)]
    x, y, g = np.concatenate(xs).astype(float), np.concatenate(ys), np.concatenate(grp)
    duty3 = np.concatenate(ds)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y, g, duty3 = x[ok], y[ok], g[ok], duty3[ok]
    ng = len(steps)
    heat = g >= 0
    gi = np.where(heat, g, 0)
    # idle-power offset of the cooling rows: the fan at its idle duty and sensor offsets; one shared constant
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
    return {"linear": lin, "exponential": expo, "n": int(len(y)), "span_c": float(np.ptp(x)) if len(x) else 0.0}


class ThermalNetworkFitter(Estimator):
    """Fits the ``thermal_network`` section (module docstring); an estimator (:mod:`calib.fit.base`).
    Fitted state: ``fits_`` (pole count -> :class:`LadderFit`, the best fan link), ``cv_`` (pole count ->
    held-out RMSE, C), ``loo_``, ``poles_``, ``network_``, ``record_``, ``warnings_``, ``section_``.

    Settings: ``max_poles`` (1-3), ``poles`` (force a pole count; None: select), ``selection`` ("bic_ar1",
    "cv" or "bic"), ``cv_tolerance`` (with "cv": relative held-out RMSE within which fewer poles are
    preferred), ``bin_s``
    (fit grid, s), ``leakage`` ("auto", "linear", "exponential", "none"), ``leak_skip_s`` (seconds of
    heating left out of the leakage fit), ``leak_bic_margin``, ``slowdown_temp_c`` (None: the device's, else
    95 C), ``fan`` ("auto": the fan in the model when the logged duty moved by at least 2 points; "none").
    """

    constraints = {
        "max_poles": number(1, MAX_POLES, integer=True),
        "poles": optional(number(1, MAX_POLES, integer=True)),
        "selection": options("bic_ar1", "cv", "bic"),
        "cv_tolerance": number(0.0, 1.0),
        "bin_s": number(0.1, 60.0),
        "leakage": options("auto", "linear", "exponential", "none"),
        "leak_skip_s": number(0.0),
        "leak_bic_margin": number(0.0),
        "slowdown_temp_c": optional(number(0.0, 150.0, lo_open=True)),
        "fan": options("auto", "none"),
    }

    def __init__(self, *, max_poles: int = MAX_POLES, poles: int | None = None, selection: str = "bic_ar1",
                 cv_tolerance: float = 0.05, bin_s: float = 1.0, leakage: str = "auto", leak_skip_s: float = 8.0,
                 leak_bic_margin: float = 10.0, slowdown_temp_c: float | None = None, fan: str = "auto"):
        self._store(locals())

    def fit(self, data: SessionData) -> "ThermalNetworkFitter":
        """Fit to a session's thermal steps, idle baseline (temperature C and power W with their standard errors:
        the idle power is measured, not fitted here, and ``calib diff`` tests it with that), idle fan sweep (for
        the fan's power), device slowdown temperature and measured ambient (C) (:class:`calib.segment.SessionData`)."""
        if data.idle is None:
            raise FitError("no idle window; cannot fit the thermal network")
        steps, fan, ambient_temp_c, idle = data.thermal_steps, data.fan, data.ambient_temp_c, data.idle
        idle_temp_c, idle_power_w = idle.temp_c, idle.power_w
        idle_temp_se, idle_power_se = idle.temp_se_c, idle.power_se_w
        device_slowdown_c = None if data.device is None else data.device.raw.get("slowdown_temp_c")
        self._validate_settings()
        if not steps:
            raise FitError("no complete thermal step in the session; cannot fit the thermal network")
        w = float(self.bin_s)
        temps = np.concatenate([np.concatenate([s.heat_temp_c, s.cool_temp_c]) for s in steps])
        temps = temps[np.isfinite(temps)]
        quantized = bool(len(temps)) and bool(np.all(temps == np.round(temps)))
        data = [_prepare(s, idle_temp_c, idle_power_w, w, quantized) for s in steps]
        rec = _record(steps, w, quantized)
        warns: list[str] = []
        fan_w = fan_power(fan, idle_temp_c)
        fan_pw = 0.0 if fan_w is None or not rec.has_fan else float(fan_w.value)
        use_fan = self.fan == "auto" and rec.has_fan and float(np.ptp(rec.duty)) >= 0.02
        # the reference duty: where the reference (first) step's heating ended; the idle duty: where the
        # steps' cooling ended
        s0 = rec.steps[0]
        duty_ref = float(np.mean(rec.duty[max(s0[0], s0[1] - int(round(30.0 / w))):s0[1]])) if rec.has_fan else 0.0
        idle_duty = float(np.median([rec.duty[b - 1] for _, _, b in rec.steps])) if rec.has_fan else 0.0
        n_max = int(self.max_poles if self.poles is None else self.poles)
        counts = [int(self.poles)] if self.poles is not None else list(range(1, n_max + 1))
        problems: dict[int, _LadderProblem] = {}
        fits: dict[int, LadderFit] = {}
        prev: LadderFit | None = None
        for n in range(1, max(counts) + 1):
            cands: list[tuple[dict[str, float], int]] = []
            if prev is None:
                try:
                    r0, t0, _ = _spectrum_init(data, n, w)
                    spectrum = (r0, t0)
                except (ValueError, np.linalg.LinAlgError):
                    spectrum = None
                st = _ladder_start(n, spectrum)
                rs = sum(st[f"R{i}"] for i in range(1, n + 1))
                die0 = rec.power_w - fan_pw * rec.duty ** 3
                st["ambient"] = float(np.min(rec.obs_y)) - rs * float(np.min(die0))
                cands.append((st, 1))
            else:
                if prev.tau.min() >= 2.0 * w:  # a die node in front, unless the ladder has one already
                    cands.append((_start_die(prev), min(prev.link + 1, n) if use_fan else 1))
                # two sizes of the outer node: from one alone the search lands, on some seeds, in a pole of a
                # few seconds carrying no resistance (quick campaign, sim:gtx580 seeds 1, 4, 5, 7, 9)
                cands += [(_start_outer(prev, c), prev.link) for c in OUTER_C_RATIOS]
            best = None
            for st, link in cands:
                prob = _LadderProblem(rec, n, link, duty_ref, fan_pw, use_fan)
                try:
                    f = prob.fit(st)
                except FitError:
                    continue
                if best is None or f.bic < best[0].bic:
                    best = (f, prob)
            if best is None:
                raise FitError(f"the thermal network with {n} pole(s) could not be fitted to the thermal steps")
            fits[n], problems[n] = best
            prev = fits[n]
            log.info("thermal network: %d node(s), fan link %d: RMSE %.3f C, BIC %.1f, poles %s", n, fits[n].link,
                     fits[n].rmse_c, fits[n].bic, ", ".join(f"{a:.1f} s/{b:.4f}" for a, b in zip(fits[n].tau, fits[n].r)))
        fits = {n: fits[n] for n in counts}
        # a ladder whose fastest pole is slower than two bins, or is the die's (faster), and whose other poles
        # each carry a share of the resistance and are not slower than ten times the record nor than TAU_MAX_S
        # (the section's bound: a pole beyond it cannot be written; sim:gtx280_2pole seed 4, whose 3-pole fit
        # from the larger outer start put 41 % of the resistance in a 62000 s drift of a 7600 s record and won
        # the BIC by 7.5, ended in a ValueError), is a candidate
        lo = 2.0 * w
        span = float(len(rec.duty)) * w

        def sound(n: int) -> bool:
            f = fits[n]
            slow = f.tau[f.tau >= lo]
            return len(slow) >= 1 and (f.tau < lo).sum() <= 1 and slow.max() < min(10.0 * span, TAU_MAX_S) \
                and (len(slow) == 1 or f.r[f.tau >= lo].min() >= MIN_POLE_SHARE * float(f.r.sum()))

        ok_counts = [n for n in counts if sound(n)] or counts[:1]
        # leave-one-step-out: each step's readings left out of the fit (its power still drives the record)
        # and predicted; the jackknife of the chosen network (and, with selection="cv", the selection)
        loo: dict[int, list[LadderFit]] = {}
        cv: dict[int, float] = {}

        def leave_steps_out(n: int) -> None:
            errs, reps = [], []
            for k in range(len(steps)):
                out = rec.obs_step == k
                g = problems[n].fit(fits[n].values, mask=~out, frozen=problems[n].initial_state_names(k))
                reps.append(g)
                errs.append(problems[n].sensor(g.values, out) - rec.obs_y[out])
            loo[n] = reps
            cv[n] = float(np.sqrt(np.mean(np.concatenate(errs) ** 2)))
            log.info("thermal network: %d pole(s): held-out RMSE %.3f C", n, cv[n])

        ar1 = {n: _ar1_bic(fits[n], rec) for n in ok_counts}
        if self.poles is not None:
            chosen, how = int(self.poles), "given"
        elif self.selection == "cv" and len(steps) >= 3:
            for n in ok_counts:
                leave_steps_out(n)
            # per count of resolved poles the ladder (with or without the die node) that predicts best; then
            # the fewest resolved poles within cv_tolerance of the best
            by_dom: dict[int, int] = {}
            for n in ok_counts:
                m = _dominant(fits[n], w)
                if m not in by_dom or cv[n] < cv[by_dom[m]]:
                    by_dom[m] = n
            best_cv = min(cv[n] for n in by_dom.values())
            chosen = by_dom[min(m for m, n in by_dom.items() if cv[n] <= best_cv * (1.0 + self.cv_tolerance))]
            how = "cross-validation over thermal steps"
        else:
            if self.selection == "bic_ar1":
                score, how = {n: ar1[n][0] for n in ok_counts}, "BIC with AR(1) residuals"
            else:
                score, how = {n: fits[n].bic for n in ok_counts}, "BIC"
            chosen = min(score, key=score.get)
            if self.selection == "cv":
                warns.append(f"only {len(steps)} thermal steps: pole count chosen by BIC, not cross-validation")
        if len(steps) >= 3 and chosen not in loo:
            leave_steps_out(chosen)
        f = fits[chosen]
        prob = problems[chosen]
        warns += [f"{chosen}-pole fit: {m}" for m in f.warnings if not m.startswith(("p0_", "dev"))
                  and "p0_" not in m and "dev" not in m]
        params, cov = self._foster_params(f, rec)
        # stderr_total by the one rule (calib.fit.uncertainty.total_stderr; module docstring): not the
        # leave-one-step-out jackknife where the fit with one more resolved pole exists (without the one
        # low-power step without memory traffic the host heat and the outer pole trade): 4-10x the errors
        # against truth on the standard presets' seeds (tests/benchmarks/thermal_results.md, session 7). A fit
        # whose one more pole is the die (faster than two bins, which the direct term holds) is the same
        # network, no evidence on the form: the jackknife then (session 10: gtx280's two poles 3-7 total errors
        # off without it)
        shift: list[float] = [0.0] * len(params)
        se_jack: list[float | None] = [None] * len(params)
        alt = fits.get(chosen + 1)
        if alt is not None and sound(chosen + 1) and _dominant(alt, w) > _dominant(f, w):
            matched = set()
            for i in range(chosen):
                j = int(np.argmin(np.abs(np.log(alt.tau / f.tau[i]))))
                matched.add(j)
                shift[i], shift[chosen + i] = alt.r[j] - f.r[i], alt.tau[j] - f.tau[i]
            # an extra pole faster than two bins is the die the direct term stands for: it belongs to it
            fast_extra = sum(float(alt.r[j]) for j in range(len(alt.tau)) if j not in matched and alt.tau[j] < lo)
            shift[2 * chosen] = alt.values["r_direct"] + fast_extra - f.values["r_direct"]
        else:
            # no sound fit with one more resolved pole: the leave-one-step-out spread is the only model-form
            # evidence left; it over-states it (leverage), so it stands only here
            if chosen in loo:
                reps = loo[chosen]
                se_jack = [jackknife_sd([_foster_vector(rp.values, chosen)[j] for rp in reps])
                           for j in range(len(params))]
        for j, p in enumerate(params):
            p.stderr_total = total_stderr(p.stderr, se_jack[j], [shift[j]])
        cov_obj = Covariance(tuple(p.name for p in params), cov) if cov is not None else None
        params.insert(0, Param("idle_temp_c", float(idle_temp_c), "C", 0.0, 125.0, True, stderr=idle_temp_se,
                               stderr_total=idle_temp_se, description="idle temperature the rises are measured from"))
        params.insert(1, Param("idle_power_w", float(idle_power_w), "W", 0.0, 10000.0, False, stderr=idle_power_se,
                               stderr_total=idle_power_se,
                               description="idle board power the network's input is measured from (measured mean, "
                                           "not fitted: its standard error is the mean's)"))
        # the node form's own parameters: effective ambient, fan link, host heat, hot spot
        byn = f.result.by_name()
        node_desc = {"ambient": (NODE_AMBIENT, "C", "effective ambient of the ladder (room air plus the host's idle heat)"),
                     "g_fan": (NODE_FAN_G, "W/C", "conductance of the fan link per unit duty (0..1) around the "
                                                  "reference duty"),
                     "busy_w": (NODE_BUSY_HEAT, "W", "heat into the outermost node while a kernel runs (the host "
                                                     "launching it warms the intake air)"),
                     "hot_c": (NODE_HOT_SPOT, "C",
                               "sensor rise at 100 % memory utilization (util_mem_pct; the memory interface next to the "
                               "sensor): hot spot = hot_spot_c x (util_mem_pct / 100) ^ hot_spot_util_exp"
                               if rec.util_logged else "sensor rise while a kernel with memory traffic runs (the memory "
                                                       "interface next to the sensor)"),
                     "hot_exp": (NODE_HOT_EXP, "", "exponent of the memory utilization in the hot spot (fitted: the "
                                                   "thermal steps' kernels load the memory to different degrees)"
                                 if problems[chosen].hot_exp_free else "exponent of the memory utilization in the hot "
                                 "spot (held at 1: the thermal steps' kernels do not load the memory to different "
                                 "degrees)")}
        jack = {k: jackknife_sd([rp.values[k] for rp in loo[chosen]]) for k in node_desc} if chosen in loo else {}
        for k, (nm, unit, desc) in node_desc.items():
            src = byn[k]
            if ((k == "g_fan" and not use_fan) or (k == "hot_c" and not src.vary)
                    or (k == "hot_exp" and not (rec.util_logged and byn["hot_c"].vary))):
                continue
            se = src.stderr * math.sqrt(self._infl) if src.stderr is not None else None
            params.append(Param(nm, float(src.value), unit, src.min, src.max, src.vary, None, se, desc,
                                stderr_total=math.hypot(se or 0.0, jack.get(k, 0.0)) if src.vary else None))
        # the host heat: only its sensor rise is determined (module docstring)
        undetermined: dict[str, str] = {}
        busy = self._busy_rise(f, loo.get(chosen, []))
        if busy is not None:
            params.append(busy[0])
            undetermined[NODE_BUSY_HEAT] = busy[1]
            for p in params:
                if p.name == NODE_BUSY_HEAT:
                    p.description += (f" (UNDETERMINED by this campaign: {busy[1]}; the determined quantity is "
                                      f"{NODE_BUSY_RISE})")
        # leakage
        lk = _leak_fit(steps, idle_temp_c, idle_power_w, self.leak_skip_s, None if fan_w is None else fan_w.value,
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
        # the fan controller
        fans = [x for s in steps for x in (s.heat_fan_pct, s.cool_fan_pct) if x is not None]
        fans = np.concatenate(fans) if fans else np.zeros(0)
        fans = fans[np.isfinite(fans)]
        duty_step = 0.01 if len(fans) and bool(np.all(fans == np.round(fans))) else 0.0  # integer percent
        controller, ctl_info = (None, {"model": "no fan duty logged"}) if not rec.has_fan else \
            _fit_controller(rec, f.values["hot_c"] * rec.hot_weight(f.values["hot_exp"])[0], 1.0 if quantized else 0.0,
                            duty_step)
        und = ctl_info.get("undetermined", [])
        if "fan_gain_pct_per_c" in und:
            warns.append(f"fan controller: fan_gain_pct_per_c and fan_t0_c are undetermined: {ctl_info['reason']}")
            undetermined["fan_gain_pct_per_c"] = (f"at least {ctl_info['gain_at_least_pct_per_c']:.2g} %/C: the ramp's "
                                                  "input spans under "f"{RAMP_SPAN_STEPS:g} sensor steps")
            undetermined["fan_t0_c"] = (f"the ramp happened within {ctl_info['ramp']['input_p5_c']:.1f}-"
                                        f"{ctl_info['ramp']['input_p95_c']:.1f} C (P5-P95)")
        if "fan_slew_pct_per_s" in und:
            warns.append(f"fan controller: fan_slew_pct_per_s is undetermined: {ctl_info['slew_reason']}")
            undetermined["fan_slew_pct_per_s"] = (f"at least {ctl_info['slew_at_least_pct_per_s']:.2g} %/s: the fastest "
                                                  "logged duty change; the slew never limits the logged duty")
        if controller is not None:
            for nm, val, unit, desc in (
                    ("fan_min_pct", 100.0 * controller.min_duty, "%", "fan controller: lowest duty"),
                    ("fan_max_pct", 100.0 * controller.max_duty, "%", "fan controller: highest duty (assumed 100 %)"),
                    ("fan_t0_c", controller.t0_c, "C", "fan controller: temperature above which the duty rises"),
                    ("fan_gain_pct_per_c", 100.0 * controller.gain_per_c, "%/C", "fan controller: duty per degree"),
                    ("fan_slew_pct_per_s", 100.0 * min(controller.slew_per_s, 100.0), "%/s",
                     "fan controller: fastest change of the duty")):
                if nm in und:
                    desc += (f" (UNDETERMINED by this campaign: {undetermined[nm]}; see thermal_network.fan.controller."
                             f"{'slew_reason' if nm == 'fan_slew_pct_per_s' else 'reason'})")
                params.append(Param(nm, float(val), unit, vary=nm != "fan_max_pct", description=desc))
        slow = self.slowdown_temp_c or device_slowdown_c or DEFAULT_SLOWDOWN_C
        busy_thr = self._busy_threshold(steps, idle_power_w)
        fan_model = FanCooling(f.link, f.values["g_fan"], duty_ref, idle_duty, fan_pw) if use_fan else None
        # the hot spot: by the logged memory utilization, or on/off (logs without util_mem_pct); its weight
        # while a kernel runs for traces without the utilization: the mean over the steps' running bins
        hot_w = rec.hot_weight(f.values["hot_exp"])[0]
        hot_exp = float(f.values["hot_exp"]) if rec.util_logged else None
        busy_weight = float(np.mean(hot_w[rec.busy > 0])) if rec.util_logged and np.any(rec.busy > 0) else 0.5
        step_weight = rec.step_means(hot_w)
        net = FosterNetwork(tuple(f.r), tuple(f.tau), f.values["r_direct"], float(idle_temp_c), float(idle_power_w),
                            leak, float(slow), ambient_c=f.values["ambient"], fan=fan_model,
                            controller=controller if use_fan else None, busy_heat_w=f.values["busy_w"],
                            hot_spot_c=f.values["hot_c"], busy_threshold_w=busy_thr,
                            hot_spot_util_exp=hot_exp, hot_spot_busy_weight=busy_weight)
        # loop gain and runaway at each step's cold runtime power (mean power of seconds 1-4 of heating)
        loops = []
        for k, s in enumerate(steps):
            sel = (s.heat_t >= 1.0) & (s.heat_t <= 4.0)
            run = float(np.mean(s.heat_power_w[sel])) - idle_power_w if sel.any() else math.nan
            if not math.isfinite(run):
                continue
            ss = steady_state(net, run, mem=float(step_weight[k]))
            loops.append({"workload": s.workload, "run_power_w": run, "steady_temp_c": ss.temp_c,
                          "steady_power_w": ss.power_w, "loop_gain": ss.loop_gain, "runaway": ss.runaway})
        rp = runaway_power_w(net)
        runaway_any = any(x["runaway"] for x in loops)
        if runaway_any:
            names_ = ", ".join(x["workload"] for x in loops if x["runaway"])
            warns.append(f"thermal runaway: no steady state below the slowdown temperature {slow:g} C for {names_} "
                         "(leakage feedback)")
        gains = [x["loop_gain"] for x in loops if x["loop_gain"] is not None]
        amb_src = "sensor" if ambient_temp_c is not None else "fitted (the ladder's ambient node)"
        amb = ambient_temp_c if ambient_temp_c is not None else f.values["ambient"]
        fan_struct: dict[str, Any] = {"duty_ref_pct": 100.0 * duty_ref, "idle_duty_pct": 100.0 * idle_duty,
                                      "fan_power_w": fan_pw}
        if use_fan:
            fan_struct.update({"link": int(f.link), "model": "conductance of ladder link `link` = its value at "
                               "duty_ref_pct + fan_g_w_per_c x (duty - duty_ref) (duties 0..1); the poles are "
                               "those at duty_ref_pct; fan_power_w x duty^3 is board power that does not heat the die"})
        else:
            fan_struct["model"] = ("fan duty not logged" if not rec.has_fan else
                                   "the fan duty did not move in the thermal steps: R(fan) not identified")
        fan_struct["controller"] = {**ctl_info, **({"without_hot_spot": controller.without_hot_spot}
                                                   if controller is not None else {})}
        structure = {
            "poles": int(chosen),
            "dominant_poles": _dominant(f, w),
            "form": NODE_FORM,
            "equations": "Cauer ladder of the poles (die node first), link `fan.link` following the fan duty; "
                         "sensor = ambient_temp_c + die node + r_direct_c_per_w x die power + hot spot (hot_spot."
                         "model); die power = board power - fan power; busy_heat_w into the outer node while a "
                         "kernel runs; calib/model/thermal_network.py",
            "hot_spot": {"weight": "util_mem_pct" if rec.util_logged else "memory kernel running",
                         "model": ("hot_spot_c x (util_mem_pct / 100) ^ hot_spot_util_exp (the logged memory "
                                   "utilization; hot_spot_c: the rise at 100 %)" if rec.util_logged else
                                   "hot_spot_c while a kernel with memory traffic runs (no util_mem_pct logged)"),
                         "busy_weight": busy_weight,
                         "busy_weight_source": ("mean weight over the thermal steps' running bins: used for a trace "
                                                "without util_mem_pct" if rec.util_logged else
                                                "a trace's kernels move memory or not: half weight while one runs"),
                         "steps": [{"workload": st_.workload, "util_mem_pct": 100.0 * float(u), "weight": float(wt)}
                                   for st_, u, wt in zip(steps, rec.step_means(), step_weight)]},
            "selection": {"method": how, "cv_rmse_c": {str(n): v for n, v in cv.items()},
                          "candidates": [int(n) for n in ok_counts],
                          "rmse_c": {str(n): fits[n].rmse_c for n in counts},
                          "bic": {str(n): fits[n].bic for n in counts},
                          "bic_ar1": {str(n): v[0] for n, v in ar1.items()},
                          "residual_lag1": {str(n): v[1] for n, v in ar1.items()},
                          "fan_link": {str(n): int(fits[n].link) for n in counts}, "cv_tolerance": self.cv_tolerance},
            "cauer": cauer_of(net),
            "leakage": leak_struct,
            "slowdown_temp_c": float(slow),
            "loop": {"max_loop_gain": max(gains) if gains else None, "runaway": runaway_any,
                     "runaway_run_power_w": rp, "steps": loops},
            "ambient_temp_c": float(amb), "ambient_source": amb_src,
            "fan": fan_struct,
            "busy_threshold_w": busy_thr,
            "bin_s": w,
            "observations": rec.observations,
            "steps": [{"workload": d.workload, "fan_end_pct": finite_or_none(d.fan_end_pct)} for d in data],
        }
        stats = {"n_samples": int(len(rec.obs_y)), "rmse_c": f.rmse_c, "mape_pct": None, "r2": None,
                 "n_steps": len(data), "cv_rmse_c": cv.get(chosen)}
        if warns:
            stats["warnings"] = warns
        if undetermined:
            # what calib diff and the report show as undetermined (a bound or a reason), not as a measurement
            stats["undetermined"] = undetermined
        self.fits_, self.cv_, self.loo_, self.poles_, self.network_ = fits, cv, loo, chosen, net
        self.data_, self.record_, self.controller_info_ = data, rec, ctl_info
        self.warnings_ = warns
        for m in warns:
            warnings.warn(m)
        full_cov = Covariance.from_blocks(params, [cov_obj]) if cov_obj is not None else None
        self.section_ = Section(MODEL_NAME, params, structure, stats, full_cov, self.settings())
        return self

    def _foster_params(self, f: LadderFit, rec: _Record) -> tuple[list[Param], np.ndarray | None]:
        """The Foster poles at the reference duty and the direct term as parameters, their covariance by the
        delta method from the ladder's (R_i, C_i, r_direct) covariance, scaled for the residuals' lag-1
        autocorrelation (quantized sensor, model error: the residuals are not white)."""
        n = f.n
        parts = [f.resid[rec.obs_step == k] for k in np.unique(rec.obs_step)]
        self._infl = ar1_inflation(parts)
        inner = [f"R{i}" for i in range(1, n + 1)] + [f"C{i}" for i in range(1, n + 1)] + ["r_direct"]
        base = _foster_vector(f.values, n)
        jac = np.zeros((2 * n + 1, len(inner)))
        for j, nm in enumerate(inner):
            h = 1e-6 * max(abs(f.values[nm]), 1e-6)
            jac[:, j] = (_foster_vector({**f.values, nm: f.values[nm] + h}, n) - base) / h
        cov = None
        fc = f.result.covariance()
        if fc is not None and all(nm in fc.names for nm in inner):
            idx = [fc.names.index(nm) for nm in inner]
            cov = jac @ fc.matrix[np.ix_(idx, idx)] @ jac.T * self._infl
        out_names = [names.foster_r(i) for i in range(1, n + 1)] + [names.foster_tau(i) for i in range(1, n + 1)] \
            + [names.R_DIRECT]
        units = ["C/W"] * n + ["s"] * n + ["C/W"]
        params = []
        for j, nm in enumerate(out_names):
            se = stderr_of(cov[j, j]) if cov is not None else None
            desc = ("Foster pole resistance at the reference fan duty" if nm.startswith("r") and nm != names.R_DIRECT
                    else "Foster pole time constant at the reference fan duty" if nm.startswith("tau")
                    else "resistance of the poles faster than the fit grid (the die itself), direct term")
            params.append(Param(nm, float(base[j]), units[j], 0.0, TAU_MAX_S if units[j] == "s" else R_MAX, True, None,
                                se, desc))
        return params, cov

    def _busy_rise(self, f: LadderFit, reps: Sequence[LadderFit]) -> tuple[Param, str] | None:
        """The steady sensor rise (C) of the heat ``busy_w`` into the outer node while a kernel runs, ``busy_w``
        x R_n at the reference duty (module docstring, host heat), its standard error by the delta method
        (scaled as the poles') and its jackknife over steps (``reps``). Returns (parameter, why
        ``busy_heat_w`` is undetermined), None when the host heat is not fitted."""
        src = f.result.by_name().get("busy_w")
        rn = f"R{f.n}"
        if src is None or not src.vary:
            return None
        rise = f.values[rn] * f.values["busy_w"]
        fc = f.result.covariance()
        se = corr = None
        if fc is not None and rn in fc.names and "busy_w" in fc.names:
            idx = [fc.names.index(rn), fc.names.index("busy_w")]
            m = fc.matrix[np.ix_(idx, idx)]
            g = np.array([f.values["busy_w"], f.values[rn]])
            var = float(g @ m @ g) * self._infl
            se = stderr_of(var)
            den = math.sqrt(m[0, 0] * m[1, 1])
            corr = float(m[0, 1] / den) if den > 0 and np.isfinite(den) else None
        jk = jackknife_sd([rp.values[rn] * rp.values["busy_w"] for rp in reps]) if len(reps) >= 3 else 0.0
        p = Param(NODE_BUSY_RISE, float(rise), "C", 0.0, math.inf, True, None, se,
                  f"steady sensor rise from the heat into the outermost node while a kernel runs (busy_heat_w x the "
                  f"outer link's resistance {rn} of the ladder, thermal_network.cauer): the host launching the kernels "
                  "warms the intake air; determined where busy_heat_w is not",
                  stderr_total=math.hypot(se or 0.0, jk) if se is not None or jk else None)
        why = ("only its sensor rise busy_rise_c is seen: in the ladder's units (the card's power that would warm "
               "the outer node as much; only a share of the card's heat stays at the intake, so not the host's "
               "watts)" + (f", and it trades against the outer resistance along their product (correlation "
                           f"{corr:.3f})" if corr is not None else ""))
        return p, why

    @staticmethod
    def _busy_threshold(steps: Sequence[ThermalStep], idle_power_w: float) -> float:
        """Power above idle (W) above which a row of a power trace counts as a running kernel: a quarter of
        the lightest thermal step's runtime power among the steps a power trace can tell from a warm idle
        card, i.e. whose quarter is at least the warmest card's idle excess (the power in the first seconds
        of a cooling phase above cold idle: leakage and fan). A one-SM step (a few W, under a
        warm card's leakage: sim:gtx280 7 W against about 9 W) put the threshold at 2 W, and the idle gaps of a
        trace after a kernel counted as running (the host's heat switched on through them)."""
        runs = [float(np.median(s.heat_power_w)) - idle_power_w for s in steps if len(s.heat_power_w)]
        runs = [r for r in runs if math.isfinite(r) and r > 0]
        warm = [float(np.median(s.cool_power_w[(s.cool_t >= 1.0) & (s.cool_t <= 4.0)])) - idle_power_w
                for s in steps if s.cool_power_w is not None and np.any((s.cool_t >= 1.0) & (s.cool_t <= 4.0))]
        warm_w = max([w for w in warm if math.isfinite(w)], default=0.0)
        seen = [r for r in runs if 0.25 * r >= warm_w]
        return 0.25 * min(seen or runs) if runs else 10.0


def _foster_vector(v: dict[str, float], n: int) -> np.ndarray:
    """(r_1..r_n, tau_1..tau_n, r_direct) at the reference duty of fitted ladder values ``v``."""
    tau, r = ladder_poles(v, n)
    return np.concatenate([r, tau, [v["r_direct"]]])
