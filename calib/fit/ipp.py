"""Fitting the IPP power model (paper 004, Sec. 3.4-3.7) to a samples table.

Parameters: ``idle_power_w``; ``activation_power_w`` (constant power of any running kernel, Fermi's
"Activation"); ``const_sm_power_w`` (RP_Const_SM, per active SM); ``max_power_<unit>_w`` (per SM, or
per chip for L2/global/local) seeded from relative die-area priors; ``ar_log_a_<unit>`` for units whose
access-rate function is the clamped log ``max(0, a ln AR + b)`` (b fixed at 1, so MaxPower is the power
at AR = 1); ``sm_beta`` of the log active-SM scaling.

Model choices are made by the data, with BIC = n ln(RSS/n) + k ln n:

- per unit, linear vs log access-rate function (greedy: start from all-log, flip the unit whose flip
  lowers BIC most, repeat). BIC rather than RSS because the log form costs one parameter more; BIC
  rather than AIC because with ~10^2 samples AIC's 2k penalty still rewards fitting noise with extra
  shape parameters, while BIC's k ln n does not (and it is consistent: with more data it keeps choosing
  the true form);
- the active-SM scaling: log10(alpha n + beta) (no power gating) vs linear (power-gated SMs).

Temperature: when the thermal fit gave sigma and the idle temperature, rows are corrected by
``sigma x (temp_c - idle_temp_c)`` (IPP eq. 22) inside the model, so MaxPower values refer to the idle
temperature.

Units whose activity never varies are dropped with a warning. Rows with role ``heldout``, ``thermal``
or ``timing`` are not used.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from calib.core import names
from calib.core.errors import BadInputError, FitError
from calib.fit.core import LsqResult, fit_lsq
from calib.model.arfunc import IPP_A, LINEAR, LOG, ar_transform
from calib.model.intervals import MIN_HELDOUT_WORKLOADS
from calib.model import ipp as model
from calib.core.params import Covariance, Param, Section
from calib.fit.uncertainty import (
    IDLE_GROUP,
    KEEP_GROUP,
    apply_total,
    discrepancy_covariance,
    envelope_covariance,
    group_jackknife,
    refit_jackknife,
    repeat_groups,
    row_groups,
    prediction_stats,
    total_covariance,
    workload_rms,
    workload_groups,
)
from calib.fit.base import Estimator, either, mapping_of, names_of, number, optional, options
from calib.core.samples import ACT_PREFIX, act_units
from calib.core.units import CHIP_UNITS, DIE_AREA_PRIOR, in_memory_domain
from calib.segment import SessionData

EXCLUDED_ROLES = ("heldout", "thermal", "timing")  # timing: latency chases and bursts, not power benchmarks
#: the flip of the active-SM scaling among the form alternatives (not a unit name: units are lower-case words)
SM_FLIP = "<sm_scaling>"


class IppPowerFitter(Estimator):
    """Fits the IPP power model (module docstring); an estimator (:mod:`calib.fit.base`).

    Settings
    --------
    ar_forms:
        ``"auto"`` (choose per unit by BIC) or a mapping unit -> ``"linear"``/``"log"``.
    sm_scaling:
        ``"auto"``, ``"log"`` or ``"linear"``.
    loss:
        ``scipy.optimize.least_squares`` loss (``"linear"`` = ordinary least squares).
    mem_units:
        units of the memory clock domain (default: the samples-table contract's name rule).
    sm_count, chip_units:
        the GPU's SMs and which units are chip-level (L2, DRAM) rather than per SM.
    warp_issue_per_cycle, default_clocks:
        the GPU's issue rate and default ``{"core_mhz", "mem_mhz"}`` (recorded in the section; rows at
        other clocks are not used: the DVFS model covers them).
    temperature_correction:
        ``{"sigma_w_per_c", "idle_temp_c"}`` from a thermal fit: power is referred to the idle
        temperature (IPP eq. 22).
    """

    constraints = {
        "ar_forms": either(options("auto"), mapping_of(options(LINEAR, LOG), "units")),
        "sm_scaling": options("auto", "log", "linear"),
        "loss": options("linear", "soft_l1", "huber", "cauchy", "arctan"),
        "mem_units": optional(names_of("units")),
        "sm_count": number(1, 1024, integer=True),
        "chip_units": optional(names_of("units")),
        "warp_issue_per_cycle": optional(number(0, 64, lo_open=True)),
        "default_clocks": optional(mapping_of(optional(number(0, 1e5, lo_open=True)), "core_mhz/mem_mhz")),
        "temperature_correction": optional(mapping_of(number(), "sigma_w_per_c/idle_temp_c")),
    }

    def __init__(self, *, ar_forms: str | Mapping[str, str] = "auto", sm_scaling: str = "auto",
                 loss: str = "linear", mem_units: Iterable[str] | None = None, sm_count: int = 1,
                 chip_units: Iterable[str] | None = None, warp_issue_per_cycle: float | None = None,
                 default_clocks: Mapping[str, float | None] | None = None,
                 temperature_correction: Mapping[str, float] | None = None):
        self.ar_forms = ar_forms
        self.sm_scaling = sm_scaling
        self.loss = loss
        self.mem_units = mem_units
        self.sm_count = sm_count
        self.chip_units = chip_units
        self.warp_issue_per_cycle = warp_issue_per_cycle
        self.default_clocks = default_clocks
        self.temperature_correction = temperature_correction

    # -- fitting ------------------------------------------------------------------------------
    def training_rows(self, df: pd.DataFrame) -> pd.DataFrame:
        """The rows of a samples table the model covers: no held-out, thermal or timing rows, and at
        the default clocks when they are set."""
        data = df[~df["role"].isin(EXCLUDED_ROLES)] if "role" in df.columns else df
        return self._at_default_clocks(data)

    def _at_default_clocks(self, data: pd.DataFrame) -> pd.DataFrame:
        clocks = self.default_clocks or {}
        for col in ("core_mhz", "mem_mhz"):
            if clocks.get(col) is not None and col in data.columns:
                data = data[np.isclose(data[col].to_numpy(float), float(clocks[col]))]
        return data

    def _arrays(self, data: pd.DataFrame, units: list[str], sigma: float | None) -> tuple:
        """(activities per unit, running mask, active SMs, temperature or None, power W) of ``data``."""
        act = {u: data[ACT_PREFIX + u].to_numpy(float) for u in units}
        running, active = model.launch_facts(data, act, int(self.sm_count))
        temp = data["temp_c"].to_numpy(float) if "temp_c" in data.columns and sigma is not None else None
        return act, running, active, temp, data["power_w"].to_numpy(float)

    def fit(self, data: SessionData | pd.DataFrame, *, uncertainty: bool = True) -> "IppPowerFitter":
        """Fit to the rows of a session's checked samples table (``data.samples``, or the table itself) that
        the model covers (:meth:`training_rows`);
        ``uncertainty=False`` learns the values only (no multi-start, repeat jackknife or total
        covariance: what a replicate of an uncertainty estimate needs). Returns self."""
        self._validate_settings()
        self._uncertainty = uncertainty
        df = SessionData.of(data).samples
        data = self.training_rows(df).reset_index(drop=True)
        if len(data) < 3:
            raise FitError(f"only {len(data)} samples to fit")
        tc = self.temperature_correction or {}
        sigma, idle_temp_c = tc.get("sigma_w_per_c"), tc.get("idle_temp_c")
        warns: list[str] = []
        units = []
        for u in act_units(data):
            a = data[ACT_PREFIX + u].to_numpy(float)
            if np.nanmax(a) <= 0:
                warns.append(f"unit {u}: activity is 0 in every sample; not fitted (no benchmark stresses it)")
            elif np.nanmax(a) - np.nanmin(a) < 1e-6:
                warns.append(f"unit {u}: activity never varies ({a[0]:.4g}); not fitted (indistinguishable from idle power)")
            else:
                units.append(u)
        if not units:
            raise FitError("no unit activity varies across the samples; nothing to fit")
        if self.mem_units is not None:
            unknown = sorted(set(self.mem_units) - set(act_units(data)))
            if unknown:  # a typo would silently move the memory units to the core domain
                raise BadInputError(f"memory unit(s) {', '.join(unknown)} not in the table "
                                    f"(units: {', '.join(act_units(data))})")
        self.units_ = units
        self._chip = frozenset(CHIP_UNITS if self.chip_units is None else self.chip_units)
        self._pinned: set[str] = set()
        n_sm = int(self.sm_count)
        act, running, active, temp, y = self._arrays(data, units, sigma)
        has_sweep = len(np.unique(active)) > 2
        has_idle = bool((~running).any())
        self._has_sweep = has_sweep
        self._data = (act, running, active, temp, y, sigma, idle_temp_c)
        # the campaign's held-out workloads (application-like mixes, never fitted) at the clocks the model
        # covers: only their residuals are read, for the discrepancy scale of the total uncertainty
        held = df[df["role"].astype(str) == "heldout"] if "role" in df.columns else df.iloc[:0]
        held = self._at_default_clocks(held).reset_index(drop=True)
        held = held[np.isfinite(held["power_w"].to_numpy(float))] if len(held) else held
        self._heldout = held if len(held) and all(ACT_PREFIX + u in held.columns for u in units) else None

        if isinstance(self.ar_forms, Mapping):
            forms = {u: self.ar_forms.get(u, LOG) for u in units}
        else:
            forms = {u: LOG for u in units}
        sm_forms = [self.sm_scaling] if self.sm_scaling != "auto" else (["log", "linear"] if has_sweep else ["linear"])
        # SM scaling first (with the starting unit forms), then the unit forms for the winner
        first = {smf: self._restarted(self._fit_once(forms, smf, has_idle, n_sm), forms, smf, has_idle, n_sm,
                                      from_default=True) for smf in sm_forms}
        smf = min(first, key=lambda k: first[k].bic)
        res, forms = self._search_forms(dict(forms), smf, has_idle, has_sweep, n_sm, first[smf])
        # a log form clamped to 0 on every row where its unit is active contributes nothing, and its
        # MaxPower then means nothing: such units are given the linear form (and stay linear)
        dead = self._dead_log_units(res, forms)
        while dead:
            for u in dead:
                forms[u] = LINEAR
                warns.append(f"unit {u}: the fitted log access-rate function was 0 at every observed access rate; "
                             "linear form used instead")
            self._pinned |= set(dead)
            res, forms = self._search_forms(dict(forms), smf, has_idle, has_sweep, n_sm,
                                            self._fit_once(forms, smf, has_idle, n_sm))
            dead = self._dead_log_units(res, forms)
        res, self.alternatives_ = self._multistart(res, forms, smf, has_idle, n_sm)
        self.result_ = res
        self.forms_ = forms
        self.sm_scaling_ = smf
        self.params_ = res.params
        self.warnings_ = warns + res.warnings
        if not has_sweep:
            self.warnings_.append("no active-SM sweep in the samples: SM scaling not identified (linear assumed)")
        for w in self.warnings_:
            warnings.warn(w)
        self.covariance_ = res.covariance()
        if uncertainty:
            self.covariance_ = self._repeatability(data)
            self.covariance_total_ = self._total_covariance(data)
        self.section_ = self._make_section()
        return self

    #: multi-start: starting points besides the selection's warm start (the default start, and these many
    #: with every free parameter scaled by a factor in [0.5, 1.5] from a fixed random stream)
    N_RANDOM_STARTS = 2

    def _multistart(self, res: LsqResult, forms: Mapping[str, str], smf: str, has_idle: bool,
                    n_sm: int) -> tuple[LsqResult, list[LsqResult]]:
        """The final structure refitted from other starting points: the best solution, and the other
        solutions that fit as well within the noise (sum of squares within 3.84 x the residual variance
        of the best, chi-square(1) at 95 %). Units that every instruction touches (REG, FDS) can leave
        two such optima; which one a campaign lands in is then chance, and the statistical uncertainty
        must span both (:meth:`_repeatability`)."""
        if not self._uncertainty:
            return res, []
        cands = [res]
        cands += self._fits_from(forms, smf, has_idle, n_sm, [None, *self._random_starts(res)])
        best = min(cands, key=lambda r: r.chisqr)
        tol = 3.84 * best.redchi
        alts = [r for r in cands if r is not best and r.chisqr <= best.chisqr + tol]
        return best, alts

    def _repeatability(self, data: pd.DataFrame) -> Covariance | None:
        """The statistical covariance: the least-squares one, with each variance raised to what the
        campaign's repeats show when that is larger (a delete-a-repeat jackknife with real refits, the
        structure fixed: :func:`calib.fit.uncertainty.refit_jackknife`). The least-squares covariance
        alone assumes independent errors in power only; the access rates come from measured kernel
        times too, and parameters the design barely separates move more between repeated campaigns
        than it says. Sets the parameters' ``stderr``."""
        stat = self.result_.covariance()
        if stat is None:
            return stat
        names = list(stat.names)
        best = {p.name: p.value for p in self.result_.params}
        # optima that fit as well (multi-start): the direction to the farthest of them is one the data do
        # not fix; half the distance along it is one standard error (a rank-one term, so that what both
        # optima agree on stays determined)
        sd = np.sqrt(np.clip(np.diag(stat.matrix), 1e-300, None))
        halves = [np.array([{p.name: p.value for p in alt.params}.get(n, best[n]) - best[n] for n in names]) / 2.0
                  for alt in self.alternatives_]
        if halves:
            d = max(halves, key=lambda h: float(np.sum((h / sd) ** 2)))
            stat = Covariance(stat.names, np.where(np.isfinite(stat.matrix), stat.matrix, 0.0) + np.outer(d, d))
        groups = repeat_groups(data)
        if groups is None:
            self._set_stderr(stat)
            return stat
        settings = dict(self.get_params(), ar_forms=dict(self.forms_), sm_scaling=self.sm_scaling_)

        def refit(mask: np.ndarray) -> dict[str, float] | None:
            sub = IppPowerFitter(**settings)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    sub.fit(data[mask], uncertainty=False)
            except (FitError, BadInputError):
                return None
            return {p.name: p.value for p in sub.params_}

        rep = refit_jackknife(refit, groups, names, keep=[KEEP_GROUP])
        cov = stat if rep is None else Covariance(stat.names, total_covariance(stat, rep))
        self._set_stderr(cov)
        return cov

    def _set_stderr(self, cov: Covariance) -> None:
        names = list(cov.names)
        for p in self.params_:
            if p.vary and p.name in names and p.stderr is not None:
                v = cov.matrix[names.index(p.name), names.index(p.name)]
                p.stderr = float(math.sqrt(v)) if np.isfinite(v) and v >= 0 else p.stderr

    def _total_covariance(self, data: pd.DataFrame) -> np.ndarray | None:
        """Covariance including model discrepancy (:mod:`calib.fit.uncertainty`): the delete-a-group
        jackknife over the benchmark groups (:func:`calib.fit.uncertainty.row_groups`; idle rows always
        kept), plus, for a unit with the log access-rate function measured only below AR = 1, the
        extrapolation of its MaxPower to AR = 1: a concave power curve lies between the fitted log
        curve and its tangent at the highest measured access rate, so half that gap at AR = 1 is taken
        as one standard error, along the direction of (MaxPower, slope) that leaves the power at the
        highest measured rate unchanged. Also sets ``stderr_total`` of the fitted parameters."""
        res = self.result_
        free = [p.name for p in res.params if p.vary]
        vals = {p.name: p.value for p in res.params}
        act, running, active, temp, y, sigma, idle_temp_c = self._data
        d = model.design(self._structure(self.forms_, self.sm_scaling_), act, running, active, temp, sigma, idle_temp_c)
        jd = model.jacobian(vals, d)
        J = np.column_stack([np.broadcast_to(jd[n], y.shape) for n in free])
        pred = model.power(vals, d)
        r = pred - y
        jack, _ = group_jackknife(J, r, row_groups(data), keep=[IDLE_GROUP])
        oog = np.empty(len(y))
        wl = workload_groups(data)
        _, n_wl = group_jackknife(J, r, wl, keep=[IDLE_GROUP], out_of_group=oog)
        self.prediction_ = prediction_stats(oog / y, n_wl)
        dyn = np.where(running, pred - vals["idle_power_w"], 0.0)
        tau, source, n_tau = self._discrepancy_scale(vals, oog, dyn, wl)
        disc = discrepancy_covariance(J, tau * dyn, wl, keep=[IDLE_GROUP])
        form = np.zeros((len(free), len(free)))
        for u, f in self.forms_.items():
            if f != LOG:
                continue
            on = running & (act[u] > 0)
            x = float(np.max(act[u][on])) if on.any() else 0.0
            if 0.0 < x < 1.0:
                m, a = vals[names.max_power(u)], vals[names.ar_log_a(u)]
                gap = m * a * ((1.0 - x) / x + math.log(x))
                # along the direction that keeps the unit's power at its highest measured rate: MaxPower
                # moves, the slope compensates, so predictions inside the measured range barely move
                v = np.zeros(len(free))
                v[free.index(names.max_power(u))] = 1.0
                v[free.index(names.ar_log_a(u))] = -(1.0 + a * math.log(x)) / (m * math.log(x))
                form += (0.5 * gap) ** 2 * np.outer(v, v)
        # alternative model forms that fit as well as the chosen one once the discrepancy is counted
        s2 = float(self.result_.redchi) + tau ** 2 * float(np.mean(dyn[running] ** 2)) if running.any() else \
            float(self.result_.redchi)
        alt_cov, alts = self._form_alternatives(free, vals, s2)
        self.discrepancy_ = {"tau_rel_runtime": tau, "source": source, "n_workloads": n_tau,
                             "form_alternatives": alts,
                             "method": "workload discrepancy (relative to the runtime power, common to a workload's "
                                       "rows) through the fit's Jacobian; access-rate-function and SM-scaling "
                                       "alternatives up to three flips away within chi-square(k) 95 % of the best "
                                       "fit at the discrepancy-inflated residual variance, half their shift as one "
                                       "standard error"}
        cov = total_covariance(self.covariance_, jack)
        if cov is not None:
            cov = cov + form + np.nan_to_num(disc) + alt_cov
        apply_total(res.params, free, cov)
        return None if cov is None else Covariance(tuple(free), cov)

    #: fewest held-out workloads whose residuals set the discrepancy scale (else leave-one-workload-out)
    MIN_HELDOUT_WORKLOADS = MIN_HELDOUT_WORKLOADS

    def _discrepancy_scale(self, vals: Mapping[str, float], oog: np.ndarray, dyn: np.ndarray,
                           wl: np.ndarray) -> tuple[float, str, int]:
        """Relative discrepancy of the runtime power for a workload the fit has not seen (RMS over
        workloads of their mean relative error): from the campaign's held-out workloads when it has at
        least :attr:`MIN_HELDOUT_WORKLOADS`, else from the training workloads left out one at a time.
        Returns (scale, source, number of workloads)."""
        act, running, active, temp, y, sigma, idle_temp_c = self._data
        h = self._heldout
        if h is not None and h["workload"].nunique() >= self.MIN_HELDOUT_WORKLOADS:
            ha, hr, hn, ht, hy = self._arrays(h, list(self.units_), sigma)
            hp = model.power(vals, model.design(self._structure(self.forms_, self.sm_scaling_), ha, hr, hn, ht, sigma,
                                                idle_temp_c))
            hdyn = hp - vals["idle_power_w"]
            ok = hr & (hdyn > 0)
            names_h = h["workload"].astype(str).to_numpy()
            tau, n = workload_rms((hy - hp)[ok] / hdyn[ok], names_h[ok])
            return tau, "held-out workloads of the campaign", n
        ok = running & np.isfinite(oog) & (dyn > 0)
        tau, n = workload_rms(oog[ok] / dyn[ok], wl[ok])
        return tau, "training workloads left out one at a time (linearised)", n

    #: structures up to this many form flips away from the chosen one are tried as alternatives
    MAX_FORM_FLIPS = 3
    #: at most this many multi-flip structures are fitted (a bound on the breadth-first search)
    MAX_MULTI_FLIP_FITS = 60

    def _form_alternatives(self, free: list[str], vals: Mapping[str, float], s2: float
                           ) -> tuple[np.ndarray, list[str]]:
        """Covariance of the model-form alternatives that fit as well as the chosen structure.

        A structure differs from the chosen one by a set of flips: a unit's access-rate function (log
        <-> linear) or, with an active-SM sweep, the SM scaling. It fits as well when its sum of squares
        exceeds the best by at most ``chi2_0.95(k) x s2`` for ``k`` flips (a likelihood-ratio confidence
        set over the structures; ``s2`` the residual variance with the discrepancy counted). Single
        flips are all tried; structures two or three flips away are reached breadth-first through
        structures in the set: units that share every instruction (ALU, REG, FDS) trade power only when
        several forms change together, and on titanx the structure one flip away that would show it is
        outside the set while the one three flips away, the hidden physics' own, is inside.

        The structures' half shifts of the parameters make one standard error through
        :func:`calib.fit.uncertainty.envelope_covariance`: 2 standard errors reach the farthest structure
        in every parameter, with the correlations of the shifts. A sum of rank-one terms (what a single
        alternative gives) counted a flip once for every structure that contains it: on titanx twelve
        structures carry the SFU flip. Returns (covariance, labels of the structures in the set).
        """
        from scipy.stats import chi2

        kept: list[str] = []
        shifts: list[np.ndarray] = []
        if s2 <= 0:
            return np.zeros((len(free), len(free))), kept
        n_sm = int(self.sm_count)
        has_idle = bool((~self._data[1]).any())
        flips = [u for u in self.forms_ if u not in self._pinned]
        if self._has_sweep and self.sm_scaling == "auto":
            flips.append(SM_FLIP)

        def structure(flipped: frozenset) -> tuple[dict[str, str], str]:
            forms = {u: ((LINEAR if f == LOG else LOG) if u in flipped else f) for u, f in self.forms_.items()}
            smf = self.sm_scaling_
            if SM_FLIP in flipped:
                smf = "linear" if smf == "log" else "log"
            return forms, smf

        def label(flipped: frozenset) -> str:
            forms, smf = structure(flipped)
            return " + ".join(f"sm_scaling {smf}" if u == SM_FLIP else f"{u} {forms[u]}"
                              for u in sorted(flipped, key=flips.index))

        # breadth-first over the number of flips; a structure is fitted from the default start, from
        # the chosen solution and from the kept structure it was reached from, and the best counts
        frontier: list[tuple[frozenset, Mapping[str, float]]] = [(frozenset(), vals)]
        seen: set[frozenset] = {frozenset()}
        n_multi = 0
        for k in range(1, self.MAX_FORM_FLIPS + 1):
            gate = float(chi2.ppf(0.95, k)) * s2
            nxt: list[tuple[frozenset, Mapping[str, float]]] = []
            for parent, start in frontier:
                for u in flips:
                    child = parent | {u}
                    if child in seen:  # also u in parent: the parent itself is seen
                        continue
                    if k > 1:
                        if n_multi >= self.MAX_MULTI_FLIP_FITS:
                            continue
                        n_multi += 1
                    seen.add(child)
                    forms, smf = structure(child)
                    starts = (None, vals) if k == 1 else (None, vals, start)
                    fits = self._fits_from(forms, smf, has_idle, n_sm, starts)
                    if not fits:
                        continue
                    r = min(fits, key=lambda x: x.chisqr)
                    if r.chisqr - self.result_.chisqr > gate:
                        continue
                    got = {p.name: p.value for p in r.params}
                    nxt.append((child, got))
                    shifts.append(0.5 * np.array([got.get(n, vals[n]) - vals[n] for n in free]))
                    kept.append(label(child))
            frontier = nxt
            if not frontier:
                break
        return envelope_covariance(shifts, len(free)), kept

    def _fits_from(self, forms: Mapping[str, str], smf: str, has_idle: bool, n_sm: int,
                   starts: Sequence[Mapping[str, float] | None]) -> list[LsqResult]:
        """The structure fitted from each starting point (None: the default start); starts whose fit
        fails are left out."""
        out = []
        for start in starts:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    out.append(self._fit_once(forms, smf, has_idle, n_sm, start))
            except FitError:
                continue
        return out

    def _params(self, forms: Mapping[str, str], smf: str, has_idle: bool, n_sm: int,
                start: Mapping[str, float] | None = None) -> list[Param]:
        act, running, active, temp, y, *_ = self._data
        idle_rows = y[~running]
        idle0 = float(np.median(idle_rows)) if len(idle_rows) else float(np.min(y))
        run_excess = max(1.0, float(np.percentile(y, 90)) - idle0)
        ps = [Param("idle_power_w", idle0, "W", 0.0, math.inf, True, description="IdlePower: GPU on, no kernel")]
        ps.append(Param("activation_power_w", 0.0 + 1e-3, "W", 0.0, math.inf, True,
                        description="constant power of any running kernel (Fermi 'Activation')"))
        ps.append(Param("const_sm_power_w", 0.1 * run_excess / n_sm, "W", 0.0, math.inf, True,
                        description="RP_Const_SM: constant runtime power per active SM"))
        prior_total = sum(DIE_AREA_PRIOR.get(u, 0.5) * (1 if u in self._chip else n_sm) for u in forms)
        for u, form in forms.items():
            mult = 1 if u in self._chip else n_sm
            seed = run_excess * DIE_AREA_PRIOR.get(u, 0.5) / max(prior_total, 1e-9) * 2.0
            ps.append(Param(names.max_power(u), max(seed / 1.0, 1e-3) if mult == 1 else max(seed, 1e-3),
                            "W", 0.0, math.inf, True,
                            description=f"MaxPower of {u} at AR = 1 ({'per chip' if mult == 1 else 'per SM'})"))
            if form == LOG:
                ps.append(Param(names.ar_log_a(u), IPP_A, "1", 0.005, 2.0, True,
                                description=f"slope a of {u}'s access-rate function a ln(AR) + b"))
        if any(f == LOG for f in forms.values()):
            ps.append(Param("ar_log_b", 1.0, "1", -math.inf, math.inf, False,
                            description="intercept b, fixed at 1 so that MaxPower is the power at AR = 1"))
        if smf == "log":
            ps.append(Param("sm_beta", 1.1, "1", 1.0001, 9.9, True,
                            description="beta of log10(alpha n + beta), alpha = (10 - beta)/Num_SMs"))
        if start:  # warm start from a neighbouring model's solution
            for p in ps:
                if p.name in start and p.vary:
                    p.value = min(max(start[p.name], p.min), p.max)
        if not has_idle:
            for p in ps:
                if p.name == "activation_power_w":
                    p.vary = False
                    p.value = 0.0
                    p.description += " (fixed at 0: no idle samples to separate it from idle power)"
        return ps

    def _structure(self, forms: Mapping[str, str], smf: str) -> dict[str, Any]:
        mem = set(self.mem_units) if self.mem_units is not None else None
        return {"sm_count": int(self.sm_count), "sm_scaling": smf,
                "units": {u: {"scope": "chip" if u in self._chip else "sm", "ar_function": f,
                              "domain": "mem" if in_memory_domain(u, mem) else "core"} for u, f in forms.items()}}

    def _fit_once(self, forms: Mapping[str, str], smf: str, has_idle: bool, n_sm: int,
                  start: Mapping[str, float] | None = None) -> LsqResult:
        act, running, active, temp, y, sigma, idle_temp_c = self._data
        d = model.design(self._structure(forms, smf), act, running, active, temp, sigma, idle_temp_c)
        return fit_lsq(lambda v: model.power(v, d), self._params(forms, smf, has_idle, n_sm, start), y,
                       loss=self.loss, jac=lambda v: model.jacobian(v, d))

    def _dead_log_units(self, res: LsqResult, forms: Mapping[str, str]) -> list[str]:
        act = self._data[0]
        v = {p.name: p.value for p in res.params}
        dead = []
        for u, f in forms.items():
            if f != LOG:
                continue
            pos = act[u][act[u] > 0]
            if len(pos) and not np.any(ar_transform(pos, LOG, v[names.ar_log_a(u)], v.get("ar_log_b", 1.0))):
                dead.append(u)
        return dead

    #: rounds of (greedy search, restart of its result) at most: a bound on the loop, each round must
    #: lower the sum of squares
    MAX_SEARCH_ROUNDS = 4

    def _random_starts(self, res: LsqResult) -> list[dict[str, float]]:
        """:attr:`N_RANDOM_STARTS` starting points: every free parameter of ``res`` scaled by a factor in
        [0.5, 1.5] from a fixed random stream (the same for every call: results do not depend on order)."""
        rng = np.random.default_rng(0)
        free = [p for p in res.params if p.vary]
        return [{p.name: p.value * float(rng.uniform(0.5, 1.5)) for p in free} for _ in range(self.N_RANDOM_STARTS)]

    def _restarted(self, res: LsqResult, forms: Mapping[str, str], smf: str, has_idle: bool,
                   n_sm: int, *, from_default: bool = False) -> LsqResult:
        """``res`` or, when one fits better, the structure refitted from the default start (unless ``res``
        came from it: ``from_default``) or from the random starts (only while the forms are being chosen: a
        structure compared at a worse local optimum than its rivals loses for the wrong reason)."""
        if isinstance(self.ar_forms, Mapping):
            return res
        starts: list[dict[str, float] | None] = ([] if from_default else [None]) + list(self._random_starts(res))
        return min([res, *self._fits_from(forms, smf, has_idle, n_sm, starts)], key=lambda r: r.chisqr)

    def _search_forms(self, forms: dict[str, str], smf: str, has_idle: bool, has_sweep: bool,
                      n_sm: int, res: LsqResult) -> tuple[LsqResult, dict[str, str]]:
        """The greedy form search (:meth:`_select_forms`), its result restarted (:meth:`_restarted`), and
        the search continued from a better optimum when the restart found one. The greedy trials are
        warm-started from the current solution, which is cheap but keeps the search in one basin: on
        two of twenty titanx seeds it ended in a structure whose BIC was 70-90 worse than the usual
        one's, and `calib diff` called those calibrations different."""
        for _ in range(self.MAX_SEARCH_ROUNDS):
            res, forms = self._select_forms(forms, smf, has_idle, has_sweep, n_sm, res)
            better = self._restarted(res, forms, smf, has_idle, n_sm)
            if better.chisqr >= res.chisqr - 1e-9 * max(res.chisqr, 1e-300):
                break
            res = better
        return res, forms

    def _select_forms(self, forms: dict[str, str], smf: str, has_idle: bool, has_sweep: bool,
                      n_sm: int, res: LsqResult) -> tuple[LsqResult, dict[str, str]]:
        """Greedy per-unit form search by BIC. Each pass flips every unit once and keeps the best flip;
        trials are warm-started from the current solution (cheap, and usually the right basin). A pass
        that finds no better flip is repeated with the trials started cold (the default start and the
        random starts of :meth:`_restarted`): a flip that needs the other units' parameters to move far
        (ALU against REG/FDS, which every instruction touches) looks worse from the warm start than it
        is; on 2 of 20 titanx seeds the warm-only search stopped 60 BIC above the usual structure."""
        if isinstance(self.ar_forms, Mapping):
            return res, forms
        warm = True
        while True:
            best_bic, best_unit, best_res = res.bic, None, None
            start = {p.name: p.value for p in res.params} if warm else None
            for u in forms:
                if u in self._pinned:
                    continue
                trial = dict(forms)
                trial[u] = LINEAR if forms[u] == LOG else LOG
                try:
                    r = self._fit_once(trial, smf, has_idle, n_sm, start)
                    if not warm:
                        r = self._restarted(r, trial, smf, has_idle, n_sm, from_default=True)
                except FitError:
                    continue
                if r.bic < best_bic - 1e-9:
                    best_bic, best_unit, best_res = r.bic, u, r
            if best_unit is not None:
                forms[best_unit] = LINEAR if forms[best_unit] == LOG else LOG
                res = best_res  # type: ignore[assignment]
                warm = True
            elif warm:
                warm = False
            else:
                return res, forms

    # -- output ---------------------------------------------------------------------------------
    def _make_section(self) -> Section:
        """The fitted ``power`` section (model ``ipp``) with its statistics, covariance and settings."""
        structure = self._structure(self.forms_, self.sm_scaling_)
        clocks = self.default_clocks or {}
        structure["warp_issue_per_cycle"] = self.warp_issue_per_cycle
        structure["default_clocks"] = {"core_mhz": clocks.get("core_mhz"), "mem_mhz": clocks.get("mem_mhz")}
        structure["ar_function_choice"] = "BIC, greedy per unit from all-log"
        tc = self.temperature_correction
        structure["temperature_correction"] = (
            {"sigma_w_per_c": tc["sigma_w_per_c"], "idle_temp_c": tc["idle_temp_c"]} if tc else None)
        stats = self.result_.stats("w")
        stats["units_fitted"] = list(self.units_)
        if getattr(self, "prediction_", None):
            stats["prediction"] = self.prediction_
        if getattr(self, "discrepancy_", None):
            stats["discrepancy"] = self.discrepancy_
        return Section("ipp", self.params_, structure, stats, self.covariance_, self.settings(),
                       getattr(self, "covariance_total_", None))
