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
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import wilcoxon

from calib.core import names
from calib.core.errors import BadInputError, FitError
from calib.fit.core import LsqResult, fit_lsq, solve_linear
from calib.model.arfunc import IPP_A, LINEAR, LOG, ar_transform
from calib.model.intervals import MIN_HELDOUT_WORKLOADS
from calib.model import ipp as model
from calib.model.ipp import (DISPATCH_KEY, DISPATCH_UNIT, LINEAR_SHARE, SHARED_KEY, SHARED_PARAM, dispatch_pool,
                              shared_pool, with_dispatch_activity)
from calib.core.params import Covariance, Param, Section
from calib.fit.uncertainty import (
    IDLE_GROUP,
    KEEP_GROUP,
    apply_total,
    collinear_units,
    discrepancy_covariance,
    evidence_log_weight,
    group_jackknife,
    model_average_covariance,
    refit_jackknife,
    repeat_groups,
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
#: the flip of the shared-activation term (on/off) among the search's flips
SHARED_FLIP = "<shared_activation>"
#: the flip of the log access-rate function's per-access share (on/off)
SHARE_FLIP = "<linear_share>"
#: the flip of the dispatch stage (on/off)
DISPATCH_FLIP = "<dispatch_stage>"


def _values(params: Iterable[Param], free: bool = False) -> dict[str, float]:
    """Parameter name -> value (``free``: of the varied parameters only)."""
    return {p.name: p.value for p in params if p.vary or not free}


def _shift(params: Iterable[Param], ref: Mapping[str, float], names_: Sequence[str],
           absent: Mapping[str, float] = {}) -> np.ndarray:
    """Each of ``names_``'s value in ``params`` less its value in ``ref``: 0 for a parameter ``params`` lack
    unless ``absent`` gives the value its absence means."""
    got = {**absent, **_values(params)}
    return np.array([got.get(n, ref[n]) - ref[n] for n in names_])


def _quiet(fit: Any, *args: Any, errors: tuple[type[Exception], ...] = (FitError,)) -> Any:
    """``fit(*args)`` with its warnings silenced, or None when it raises one of ``errors``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fit(*args)
    except errors:
        return None


@dataclass(frozen=True)
class _Struct:
    """A model structure the search compares: each unit's access-rate function (in unit order), the
    active-SM scaling, whether the shared-activation term is on, whether the log function has its
    per-access share and whether the dispatch stage is modelled (its unit then among ``forms``)."""

    forms: tuple[tuple[str, str], ...]
    smf: str
    shared: bool
    share: bool = False
    dispatch: bool = False

    def flip(self, what: str, fitter: "IppPowerFitter") -> "_Struct":
        """This structure with one flip (a unit's function, :data:`SM_FLIP`, :data:`SHARED_FLIP`,
        :data:`SHARE_FLIP` or :data:`DISPATCH_FLIP`)."""
        forms = dict(self.forms)
        if what in forms:
            forms[what] = LINEAR if forms[what] == LOG else LOG
        smf = {"log": "linear", "linear": "log"}[self.smf] if what == SM_FLIP else self.smf
        return fitter._struct(forms, smf, self.shared != (what == SHARED_FLIP), self.share != (what == SHARE_FLIP),
                              self.dispatch != (what == DISPATCH_FLIP))


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
    shared_activation:
        ``"auto"`` (default: the term for the activation the saturating SM pipes share,
        :mod:`calib.model.ipp`, on or off by BIC, searched with the access-rate functions and the SM
        scaling as one more flip), ``"on"`` (its share fitted, 0 included) or ``"off"`` (the additive IPP
        model). BIC, not cross-validation: the criterion of the other structure choices, and one fit per
        structure instead of one per workload (figures: tests/benchmarks/code_figures.md).
    linear_share:
        ``"auto"`` (default: the log access-rate function's per-access share ``ar_linear_share``,
        :mod:`calib.model.arfunc`, on or off by BIC, one more flip of the search, which starts without
        it), ``"on"`` (fitted from the start, 0 included) or ``"off"`` (IPP's pure log).
    dispatch_stage:
        ``"auto"`` (default: the dispatch stage, :mod:`calib.model.ipp`, a per-SM unit driven by the pooled
        pipes' summed access rate, tried after the structure search and kept when the training mixes
        left out one at a time are predicted better beyond chance: :meth:`_choose_dispatch`), ``"on"``
        (from the start) or ``"off"`` (IPP's units only).
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
        "shared_activation": options("auto", "on", "off"),
        "linear_share": options("auto", "on", "off"),
        "dispatch_stage": options("auto", "on", "off"),
    }

    def __init__(self, *, ar_forms: str | Mapping[str, str] = "auto", sm_scaling: str = "auto",
                 loss: str = "linear", mem_units: Iterable[str] | None = None, sm_count: int = 1,
                 chip_units: Iterable[str] | None = None, warp_issue_per_cycle: float | None = None,
                 default_clocks: Mapping[str, float | None] | None = None,
                 temperature_correction: Mapping[str, float] | None = None, shared_activation: str = "auto",
                 linear_share: str = "auto", dispatch_stage: str = "auto"):
        self.ar_forms = ar_forms
        self.sm_scaling = sm_scaling
        self.loss = loss
        self.mem_units = mem_units
        self.sm_count = sm_count
        self.chip_units = chip_units
        self.warp_issue_per_cycle = warp_issue_per_cycle
        self.default_clocks = default_clocks
        self.temperature_correction = temperature_correction
        self.shared_activation = shared_activation
        self.linear_share = linear_share
        self.dispatch_stage = dispatch_stage

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

    def fit(self, data: SessionData | pd.DataFrame, *, uncertainty: bool = True) -> "IppPowerFitter":
        """Fit to the rows of a session's checked samples table (``data.samples``, or the table itself) that
        the model covers (:meth:`training_rows`); ``uncertainty=False`` learns the values only (no
        multi-start, repeat jackknife or total covariance: what a replicate of an uncertainty estimate
        needs). Returns self."""
        self._validate_settings()
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
        unknown = sorted(set(self.mem_units or ()) - set(act_units(data)))
        if unknown:  # a typo would silently move the memory units to the core domain
            raise BadInputError(f"memory unit(s) {', '.join(unknown)} not in the table "
                                f"(units: {', '.join(act_units(data))})")
        self.units_ = units
        self._chip = frozenset(CHIP_UNITS if self.chip_units is None else self.chip_units)
        self._pinned: set[str] = set()
        self._seen: dict[_Struct, LsqResult] = {}
        self._memo: dict[tuple, LsqResult | FitError] = {}
        self._twins: dict[tuple, list[tuple[dict[str, float], LsqResult | None]]] = {}
        self._designs: dict[_Struct, model.Design] = {}
        self._hold: frozenset[str] = frozenset()
        act = {u: data[ACT_PREFIX + u].to_numpy(float) for u in units}
        spec = {u: {"scope": "chip" if u in self._chip else "sm"} for u in units}
        # a table with a unit of the stage's name has no room for the stage
        self._dispatch_pool = [] if DISPATCH_UNIT in units else dispatch_pool(spec)
        if self._dispatch_pool:  # the dispatch stage's derived access rate (calib.model.ipp), for every structure
            act = dict(with_dispatch_activity({DISPATCH_KEY: {"units": self._dispatch_pool}}, act))
        running, active = model.launch_facts(data, act, int(self.sm_count))
        temp = data["temp_c"].to_numpy(float) if "temp_c" in data.columns and sigma is not None else None
        self._workloads = workload_groups(data)
        self._mixes = (data["stresses"].astype(str) == "mixed").to_numpy() if "stresses" in data.columns \
            else np.zeros(len(data), bool)
        self._has_sweep = len(np.unique(active)) > 2
        self._has_idle = bool((~running).any())
        self._data = (act, running, active, temp, data["power_w"].to_numpy(float), sigma, idle_temp_c)
        # the campaign's held-out workloads (application-like mixes, never fitted) at the clocks the model
        # covers: only their residuals are read, for the discrepancy scale of the total uncertainty
        held = df[df["role"].astype(str) == "heldout"] if "role" in df.columns else df.iloc[:0]
        held = self._at_default_clocks(held).reset_index(drop=True)
        held = held[np.isfinite(held["power_w"].to_numpy(float))] if len(held) else held
        self._heldout = held if len(held) and all(ACT_PREFIX + u in held.columns for u in units) else None

        given = self.ar_forms if isinstance(self.ar_forms, Mapping) else {}
        forms = {u: given.get(u, LOG) for u in units}
        sm_forms = [self.sm_scaling] if self.sm_scaling != "auto" else (["log", "linear"] if self._has_sweep else ["linear"])
        shared = [False, True] if self.shared_activation == "auto" else [self.shared_activation == "on"]
        # the SM scaling and the shared-activation term first (with the starting unit forms), then the
        # unit forms (and both again, as flips of the search) from the best of them
        dispatch = self.dispatch_stage == "on"
        first = [self._struct(forms, smf, sh, self.linear_share == "on", dispatch) for smf in sm_forms for sh in shared]
        first = [(s_, self._fit(s_)) for s_ in first]
        st, res = min(first, key=lambda t: t[1].bic)
        st, res = self._search(st, res)
        st, res = self._other_shared(st, res, first)
        # a log form clamped to 0 on every row where its unit is active contributes nothing, and its
        # MaxPower then means nothing: such units are given the linear form (and stay linear)
        while dead := self._dead_log_units(res, st):
            for u in dead:
                st = st.flip(u, self)
                warns.append(f"unit {u}: the fitted log access-rate function was 0 at every observed access rate; "
                             "linear form used instead")
            self._pinned |= set(dead)
            st, res = self._search(st, self._fit(st))
        st, res = self._choose_dispatch(st, res, first)
        res, self.alternatives_ = self._multistart(res, st) if uncertainty else (res, [])
        self.result_ = res = res.with_stats()
        self.struct_ = st
        self.forms_ = dict(st.forms)
        self.sm_scaling_ = st.smf
        self.shared_ = st.shared
        self.share_ = st.share
        self.dispatch_ = st.dispatch
        self.params_ = res.params
        self.warnings_ = warns + res.warnings
        if not self._has_sweep:
            self.warnings_.append("no active-SM sweep in the samples: SM scaling not identified (linear assumed)")
        for w in self.warnings_:
            warnings.warn(w)
        self.covariance_ = res.covariance()
        if uncertainty:
            self.covariance_ = self._repeatability(data)
            self.covariance_total_ = self._total_covariance()
        self.section_ = self._make_section()
        return self

    def _choose_dispatch(self, st: "_Struct", res: LsqResult, first: Sequence[tuple["_Struct", LsqResult]] = ()
                        ) -> tuple["_Struct", LsqResult]:
        """With ``dispatch_stage="auto"``: the dispatch stage added to the searched structure (fitted from
        ``res`` and from the default start) and, as :meth:`_other_shared` does for the shared activation,
        the search made again from the best first-stage structure with the stage on and held (greedy,
        without restarts: the stage added to the searched structure alone stays in that structure's basin,
        sim:gtx580_nonadd seeds 4 and 6 at BIC 93 and 123 where the search from the start with the stage
        reaches about 51). The best of these by BIC, when it predicts the workloads left out one at a time
        better on the whole (:meth:`_cv_errors`), is searched again with restarts (so a GPU without the
        stage pays for the greedy search only: sim:titanx seed 0's power fit 5.2 s of CPU against 13.3 s),
        and kept when it predicts the training mixes left out one at a time better than ``res``, beyond
        chance: the one-sided Wilcoxon signed-rank test of their squared errors, workload by workload, at
        :data:`DISPATCH_P` (the stage's claim is about units that run together, so its evidence is the
        mixes, ``stresses`` = ``mixed``; a table without them is judged on every workload).

        Not BIC, nor the mean error over every workload: the stage's unit, driven by nearly the sum REG is
        driven by, also bends to the misfit of the access-rate curves. BIC took it on a GPU without one
        (sim:gtx580 seed 0: -591 with it against -576), and the mean left-out error on 8 of 20 sim:gtx580
        seeds and 3 of 20 sim:titanx seeds (held-out MAPE then 0.30-0.48 % against 0.25-0.33 %; MaxPowers
        within 10 % of the truth 35 -> 20 % on gtx580), where the mixes improved by chance (p 0.10-0.8);
        on sim:gtx580_nonadd and sim:titanx_nonadd, which have the stage, p 0.01-0.04."""
        if self.dispatch_stage != "auto" or not self._dispatch_pool or st.dispatch:
            return st, res
        flip = st.flip(DISPATCH_FLIP, self)
        cands = [(flip, r) for r in self._fits_from(flip, [_values(res.params), None])]
        if first:
            s0 = min(first, key=lambda t: t[1].bic)[0].flip(DISPATCH_FLIP, self)
            r0 = _quiet(self._fit, s0)
            if r0 is not None:
                cands.append(self._search(s0, r0, give_up=-math.inf))
        if not cands:
            return st, res
        best = min(cands, key=lambda t: t[1].bic)
        base = self._cv_errors(st, res)
        if np.nanmean(self._cv_errors(*best)) >= np.nanmean(base):
            return st, res
        # now the restarts of the search (costly, so made only where the stage may be kept)
        done = self._search(*best)
        return done if self._mixes_better(self._cv_errors(*done), base) else (st, res)

    #: the significance level at which the training mixes must show the dispatch stage (:meth:`_choose_dispatch`)
    DISPATCH_P = 0.05

    def _mixes_better(self, errs: np.ndarray, base: np.ndarray) -> bool:
        """Whether the squared left-out errors ``errs`` (per row, W^2) are smaller than ``base`` on the training
        mixes (on every workload when the campaign has none: AMD's, whose units count several classes),
        workload by workload, by the one-sided Wilcoxon signed-rank test at :data:`DISPATCH_P`."""
        m = (self._mixes if self._mixes.any() else np.ones(len(errs), bool)) & np.isfinite(errs) & np.isfinite(base)
        per = pd.DataFrame({"w": self._workloads[m], "d": (base - errs)[m]}).groupby("w")["d"].mean().to_numpy()
        if len(per) < 6 or not np.any(per):  # the test cannot reach 5 % with fewer than 6 workloads
            return False
        return bool(wilcoxon(per, alternative="greater").pvalue < self.DISPATCH_P)

    def _cv_errors(self, st: "_Struct", res: LsqResult) -> np.ndarray:
        """Squared leave-one-workload-out prediction error (W^2) per training row of a fitted structure
        (:meth:`_left_out`; idle rows: NaN)."""
        return self._left_out(st, res)[4] ** 2

    def _left_out(self, st: "_Struct", res: LsqResult) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, np.ndarray]:
        """``st`` fitted as ``res``, linearised, with each workload left out in turn
        (:func:`calib.fit.uncertainty.group_jackknife`; idle rows always kept): the Jacobian over the free
        parameters (rows x parameters, W per parameter unit), the prediction (W), the delete-a-workload
        covariance and the number of workloads it used, and every row's residual predicted without its
        workload (W; idle rows NaN)."""
        y, d, vals = self._data[4], self._design(st), _values(res.params)
        jd = model.jacobian(vals, d)
        J = np.column_stack([np.broadcast_to(jd[n], y.shape) for n in _values(res.params, free=True)])
        pred = model.power(vals, d)
        oog = np.empty(len(y))
        jack, n = group_jackknife(J, pred - y, self._workloads, keep=[IDLE_GROUP], out_of_group=oog)
        return J, pred, jack, n, oog

    #: random starting points (:meth:`_random_starts`) of the multi-start and of each restart of the search
    N_RANDOM_STARTS = 2

    def _multistart(self, res: LsqResult, st: "_Struct") -> tuple[LsqResult, list[LsqResult]]:
        """The final structure refitted from other starting points: the best solution, and the other
        solutions that fit as well within the noise (sum of squares within 3.84 x the residual variance
        of the best, chi-square(1) at 95 %). Units that every instruction touches (REG, FDS) can leave
        two such optima; which one a campaign lands in is then chance, and the statistical uncertainty
        must span both (:meth:`_repeatability`)."""
        cands = [res, *self._fits_from(st, [None, *self._random_starts(res)])]
        best = min(cands, key=lambda r: r.chisqr)
        return best, [r for r in cands if r is not best and r.chisqr <= best.chisqr + 3.84 * best.redchi]

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
        names_ = list(stat.names)
        # optima that fit as well (multi-start): the direction to the farthest of them is one the data do
        # not fix; half the distance along it is one standard error (a rank-one term, so that what both
        # optima agree on stays determined)
        sd = np.sqrt(np.clip(np.diag(stat.matrix), 1e-300, None))
        halves = [_shift(alt.params, _values(self.result_.params), names_) / 2.0 for alt in self.alternatives_]
        if halves:
            d = max(halves, key=lambda h: float(np.sum((h / sd) ** 2)))
            stat = Covariance(stat.names, np.where(np.isfinite(stat.matrix), stat.matrix, 0.0) + np.outer(d, d))
        settings = dict(self.get_params(), ar_forms=dict(self.forms_), sm_scaling=self.sm_scaling_,
                        shared_activation="on" if self.shared_ else "off",
                        linear_share="on" if self.share_ else "off", dispatch_stage="on" if self.dispatch_ else "off")

        def refit(mask: np.ndarray) -> dict[str, float] | None:
            sub = _quiet(lambda: IppPowerFitter(**settings).fit(data[mask], uncertainty=False),
                         errors=(FitError, BadInputError))
            return None if sub is None else _values(sub.params_)

        groups = repeat_groups(data)
        rep = None if groups is None else refit_jackknife(refit, groups, names_, keep=[KEEP_GROUP])
        cov = stat if rep is None else Covariance(stat.names, total_covariance(stat, rep))
        for p in self.params_:
            if p.vary and p.name in names_ and p.stderr is not None:
                v = cov.matrix[names_.index(p.name), names_.index(p.name)]
                p.stderr = float(math.sqrt(v)) if np.isfinite(v) and v >= 0 else p.stderr
        return cov

    def _total_covariance(self) -> Covariance | None:
        """Covariance including model discrepancy (:mod:`calib.fit.uncertainty`): the delete-a-workload
        jackknife (:func:`calib.fit.uncertainty.workload_groups`; idle rows always kept), the workload
        discrepancy propagated through the fit, the extrapolation to AR = 1 of each MaxPower measured only
        below it (:attr:`EXTRAPOLATION_SE`), the split of units the campaign does not separate
        (:meth:`_split_profile`), and the structures the search fitted, averaged by their evidence
        (:meth:`_structure_average`). Also sets ``stderr_total`` of the fitted parameters."""
        res = self.result_
        free = list(_values(res.params, free=True))
        vals = _values(res.params)
        act, running, y = self._data[0], self._data[1], self._data[4]
        # delete-a-workload: a whole stressed unit's benchmarks left out leaves its MaxPower to the few
        # kernels where the unit runs beside others, and the linearised step then swings without bound
        wl = self._workloads
        J, pred, jack, n_wl, oog = self._left_out(self.struct_, res)
        self.prediction_ = prediction_stats(oog / y, n_wl)
        dyn = np.where(running, pred - vals["idle_power_w"], 0.0)
        tau, source, n_tau = self._discrepancy_scale(vals, oog, dyn, wl)
        disc = discrepancy_covariance(J, tau * dyn, wl, keep=[IDLE_GROUP])
        form = np.zeros((len(free), len(free)))
        self.measured_ar_ = {}
        for u, f in self.forms_.items():
            on = running & (act[u] > 0)
            x = self.measured_ar_[u] = float(np.max(act[u][on])) if on.any() else 0.0
            m = vals[names.max_power(u)]
            if not (0.0 < x < 1.0 and m > 0.0):
                continue
            if f != LOG:
                if self.LINEAR_EXTRAPOLATION:
                    # a linear unit measured only up to x: its MaxPower is P(x) / x, a straight line
                    # continued beyond the data. The other curve through the same measurements is the
                    # saturating one the model also has, the log with the line's value and slope at x
                    # (elasticity 1: a = 1 / (1 - ln x)), whose power at AR = 1 is m x (1 - ln x)
                    # (figures: tests/benchmarks/code_figures.md)
                    gap = m * (1.0 - x * (1.0 - math.log(x)))
                    i = free.index(names.max_power(u))
                    form[i, i] += (self.EXTRAPOLATION_SE * gap) ** 2
                continue
            a, b, sh = vals[names.ar_log_a(u)], vals.get("ar_log_b", 1.0), vals.get(LINEAR_SHARE, 0.0)
            level = float(ar_transform(x, LOG, a, b, sh))
            if float(ar_transform(x, LOG, a, b)) > 0.0:
                # another saturating curve through the same measurements: the power law AR^e with the
                # fitted curve's value and elasticity e at x; its value at AR = 1 differs from the fitted
                # one's by m (f(x) x^-e - 1), about m (a ln x)^2 / 2 for the pure log (figures:
                # tests/benchmarks/code_figures.md)
                e = (sh * x + (1.0 - sh) * a) / level
                gap = m * (level * x ** (-e) - 1.0)
                # along the direction that keeps the unit's power at its highest measured rate: MaxPower
                # moves, the slope compensates, so predictions inside the measured range barely move
                v = np.zeros(len(free))
                v[free.index(names.max_power(u))] = 1.0
                v[free.index(names.ar_log_a(u))] = -level / (m * (1.0 - sh) * math.log(x))
                form += (self.EXTRAPOLATION_SE * gap) ** 2 * np.outer(v, v)
        # other structures that fit nearly as well once the discrepancy is counted
        s2 = float(res.redchi) + (tau ** 2 * float(np.mean(dyn[running] ** 2)) if running.any() else 0.0)
        alt_cov, alts = self._structure_average(free, vals, s2, len(y))
        split_cov = self._split_profile(free, vals)
        self.discrepancy_ = {"tau_rel_runtime": tau, "source": source, "n_workloads": n_tau,
                             "form_alternatives": alts,
                             "method": "workload discrepancy (relative to the runtime power, common to a workload's "
                                       "rows) through the fit's Jacobian; the structures the search fitted "
                                       "(access-rate functions, SM scaling, shared activation) averaged by their "
                                       "evidence at the discrepancy-inflated residual variance"}
        cov = total_covariance(self.covariance_, jack, [form, disc, alt_cov, split_cov])
        apply_total(res.params, free, cov)
        self.quantities_ = self._unit_quantities(free, vals, jack, disc + split_cov)
        return None if cov is None else Covariance(tuple(free), cov)

    #: one standard error of an extrapolated MaxPower, as a fraction of the gap between the log and the
    #: power-law curves through its highest measured access rate (:meth:`_total_covariance`): the whole
    #: gap, not half of it (the power law is one concave curve among many through the same point, not
    #: the farthest; figures: tests/benchmarks/code_figures.md)
    EXTRAPOLATION_SE = 1.0
    #: the extrapolation term for units with the linear access-rate function too (off: for the tests
    #: that show what it changes)
    LINEAR_EXTRAPOLATION = True

    def _discrepancy_scale(self, vals: Mapping[str, float], oog: np.ndarray, dyn: np.ndarray,
                           wl: np.ndarray) -> tuple[float, str, int]:
        """Relative discrepancy of the runtime power for a workload the fit has not seen (RMS over
        workloads of their mean relative error): from the campaign's held-out workloads when it has at
        least :data:`~calib.model.intervals.MIN_HELDOUT_WORKLOADS`, else from the training workloads left
        out one at a time. Returns (scale, source, number of workloads)."""
        act, running, active, temp, y, sigma, idle_temp_c = self._data
        h = self._heldout
        if h is not None and h["workload"].nunique() >= MIN_HELDOUT_WORKLOADS:
            hact = {u: h[ACT_PREFIX + u].to_numpy(float) for u in self.units_}
            hd = model.table_design(self._structure(self.struct_), h, hact, sigma, idle_temp_c)
            hp = model.power(vals, hd)
            hdyn = hp - vals["idle_power_w"]
            ok = (hd.run > 0) & (hdyn > 0)
            names_h = h["workload"].astype(str).to_numpy()
            tau, n = workload_rms((h["power_w"].to_numpy(float) - hp)[ok] / hdyn[ok], names_h[ok])
            return tau, "held-out workloads of the campaign", n
        ok = running & np.isfinite(oog) & (dyn > 0)
        tau, n = workload_rms(oog[ok] / dyn[ok], wl[ok])
        return tau, "training workloads left out one at a time (linearised)", n

    def _structure_average(self, free: list[str], vals: Mapping[str, float], s2: float, n: int
                           ) -> tuple[np.ndarray, list[str]]:
        """Covariance of the structure uncertainty and the labels of the structures that carry weight.

        Every structure the search fitted (:attr:`_seen`: access-rate functions, SM scaling, shared
        activation) is weighted by its evidence relative to the chosen one at the residual variance
        ``s2`` that counts the model's discrepancy (:func:`calib.fit.uncertainty.evidence_log_weight`),
        and the covariance is model averaging's between-structure term
        (:func:`calib.fit.uncertainty.model_average_covariance`). Parameters a structure lacks (a linear
        unit's slope) count as unchanged, except the per-access share (absent: 0)."""
        k = len(free)
        self._weights: list[tuple[_Struct, LsqResult, float]] = []
        if s2 <= 0 or not self._seen:
            return np.zeros((k, k)), []
        best = self.result_
        alts = [(st, r) for st, r in self._seen.items() if st != self.struct_]
        shifts = [_shift(r.params, vals, free, {LINEAR_SHARE: 0.0, names.max_power(DISPATCH_UNIT): 0.0}) for _, r in alts]
        logw = [evidence_log_weight(r.chisqr, r.nvarys, best.chisqr, best.nvarys, s2, n) for _, r in alts]
        cov, w = model_average_covariance(shifts, logw, k)
        self._weights = [(st, r, float(wi)) for (st, r), wi in zip(alts, w)]
        return cov, [f"{self._label(alts[i][0])} (weight {w[i]:.2f})" for i in np.argsort(-w) if w[i] >= 0.01]

    def _split_profile(self, free: list[str], vals: Mapping[str, float]) -> np.ndarray:
        """Covariance of the split of a group of units whose activities the campaign does not separate
        (:func:`calib.fit.uncertainty.collinear_units`): the data fix the sum of their MaxPowers, not how
        it divides. The split, a nuisance with a uniform prior, is profiled: the structure refitted with
        the members' shares of the fitted sum held at 1/6, 1/2, 5/6 (two units; more: the centroid and the
        points 2/3 of the way to each vertex), the mean of ``d d^T`` (``d``: the shift from the fit) on the
        members' own parameters (MaxPower and log slope) only: the other units' shifts under a forced split
        are what the rows of their own benchmarks reject, not their uncertainty (figures:
        tests/benchmarks/code_figures.md)."""
        out = np.zeros((len(free), len(free)))
        act, running = self._data[0], self._data[1]
        modelled = dict(self.struct_.forms)
        self.collinear_ = groups = collinear_units({u: a[running] for u, a in act.items() if u in modelled})
        for g in groups:
            ms = [names.max_power(u) for u in g]
            if not set(ms) <= set(free):
                continue
            total = sum(vals[n] for n in ms)
            m = len(g)
            centre = np.full(m, 1.0 / m)
            points = [centre] + [centre + 2.0 / 3.0 * (np.eye(m)[i] - centre) for i in range(m)]
            if m == 2:
                points = [np.array([0.5, 0.5]), np.array([5 / 6, 1 / 6]), np.array([1 / 6, 5 / 6])]
            fits = [self._fit_held({n: float(total * sh) for n, sh in zip(ms, share)}, vals) for share in points]
            ds = [_shift(r.params, vals, free) for r in fits if r is not None]
            if ds:
                # equal weights: the fit's likelihood of a split rests on the assumed access-rate curves,
                # which is what cannot be trusted here (weighted by it, the REG/FDS totals shrank until
                # their truths were 3-7 total stderr away on every preset)
                own = np.array([any(n in (names.max_power(u), names.ar_log_a(u)) for u in g) for n in free])
                D = np.array(ds) * own
                out += D.T @ D / len(ds)
        return out

    def _fit_held(self, held: Mapping[str, float], start: Mapping[str, float]) -> LsqResult | None:
        """The chosen structure refitted from ``start`` with the parameters ``held`` fixed at their values."""
        ps = self._params(self.struct_, start)
        for p in ps:
            if p.name in held:
                p.value, p.vary = held[p.name], False
        return _quiet(self._lsq, self.struct_, ps)

    def _unit_quantities(self, free: list[str], vals: Mapping[str, float], jack: np.ndarray, disc: np.ndarray
                         ) -> list[dict]:
        """Each unit's power at the highest access rate the campaign measured (W per SM, or per chip):
        what the data fix even where the MaxPower at AR = 1 is an extrapolation. Its standard errors by
        the delta method through the statistical, jackknife and discrepancy covariances (the rule of
        :func:`calib.fit.uncertainty.total_covariance`), and its structure term evaluated in each
        structure the search fitted (the quantity is the same physical power whatever access-rate
        function a structure gives the unit, while the MaxPower and slope are not)."""
        stat = self.covariance_.matrix if self.covariance_ is not None else None
        out = []
        for u, x in self.measured_ar_.items():
            if not 0.0 < x <= 1.0:
                continue
            q0, grad = model.unit_power(vals, u, self.forms_[u], x)
            g = np.array([grad.get(n, 0.0) for n in free])

            def var(c: np.ndarray | None) -> float:
                return float(g @ np.nan_to_num(c) @ g) if c is not None else 0.0

            v_struct = 0.0
            for st, r, w in self._weights:
                f = dict(st.forms).get(u)  # a structure without the dispatch stage draws none at its rate
                v_struct += w * ((model.unit_power(_values(r.params), u, f, x)[0] if f else 0.0) - q0) ** 2
            v_stat = var(stat)
            v_total = max(v_stat, var(jack)) + var(disc) + v_struct
            out.append({"kind": "power_at_ar", "unit": u, "ar": float(x), "value": float(q0),
                        "stderr": float(math.sqrt(max(v_stat, 0.0))), "stderr_total": float(math.sqrt(max(v_total, 0.0))),
                        "parameters": [n for n in grad if n in free]})
        return out

    def _label(self, st: "_Struct") -> str:
        """What ``st`` changes against the chosen structure, e.g. ``sfu log + shared activation off``."""
        ref, on = self.struct_, {True: "on", False: "off"}
        parts = [f"{u} {f}" for (u, f), (_, f0) in zip(st.forms, ref.forms) if f != f0]
        parts += [text for changed, text in ((st.smf != ref.smf, f"sm_scaling {st.smf}"),
                                             (st.shared != ref.shared, f"shared activation {on[st.shared]}"),
                                             (st.share != ref.share, f"per-access share {on[st.share]}"),
                                             (st.dispatch != ref.dispatch, f"dispatch stage {on[st.dispatch]}")) if changed]
        return " + ".join(parts) or "(same structure, another optimum)"

    # -- structures and their fits --------------------------------------------------------------
    def _struct(self, forms: Mapping[str, str], smf: str, shared: bool, share: bool = False,
                dispatch: bool = False) -> "_Struct":
        """The structure of these forms (a shared-activation term without a pool is no term, nor a
        per-access share without a log unit, nor a dispatch stage without pipes to drive it; the dispatch
        stage's unit starts with the log function)."""
        dispatch = bool(dispatch and self._dispatch_pool)
        order = [*self.units_, *([DISPATCH_UNIT] if dispatch else [])]
        forms = {u: forms.get(u, LOG) for u in order}
        spec = {u: {"scope": "chip" if u in self._chip else "sm", "ar_function": f} for u, f in forms.items()}
        return _Struct(tuple((u, forms[u]) for u in order), smf, bool(shared and shared_pool(spec)),
                       bool(share and any(f == LOG for f in forms.values())), dispatch)

    def _fits_from(self, st: "_Struct", starts: Sequence[Mapping[str, float] | None]) -> list[LsqResult]:
        """The structure fitted from each starting point (None: the default start); starts whose fit
        fails are left out."""
        return [r for r in (_quiet(self._fit, st, start) for start in starts) if r is not None]

    def _params(self, st: "_Struct", start: Mapping[str, float] | None = None) -> list[Param]:
        """The parameters of ``st`` at the default start (MaxPowers from the die-area priors), or at
        ``start``'s values where it has them (clipped to their bounds)."""
        running, y = self._data[1], self._data[4]
        n_sm = int(self.sm_count)
        forms = dict(st.forms)
        idle_rows = y[~running]
        idle0 = float(np.median(idle_rows)) if len(idle_rows) else float(np.min(y))
        run_excess = max(1.0, float(np.percentile(y, 90)) - idle0)
        idle = self._has_idle
        ps = [Param("idle_power_w", idle0, "W", 0.0, math.inf, True, description="IdlePower: GPU on, no kernel"),
              Param("activation_power_w", 1e-3 if idle else 0.0, "W", 0.0, math.inf, idle,
                    description="constant power of any running kernel (Fermi 'Activation')"
                    + ("" if idle else " (fixed at 0: no idle samples to separate it from idle power)")),
              Param("const_sm_power_w", 0.1 * run_excess / n_sm, "W", 0.0, math.inf, True,
                    description="RP_Const_SM: constant runtime power per active SM")]
        prior_total = sum(DIE_AREA_PRIOR.get(u, 0.5) * (1 if u in self._chip else n_sm) for u in forms)
        for u, form in forms.items():
            seed = run_excess * DIE_AREA_PRIOR.get(u, 0.5) / max(prior_total, 1e-9) * 2.0
            ps.append(Param(names.max_power(u), max(seed, 1e-3), "W", 0.0, math.inf, True,
                            description=f"MaxPower of {u} at AR = 1 ({'per chip' if u in self._chip else 'per SM'})"))
            if form == LOG:
                ps.append(Param(names.ar_log_a(u), IPP_A, "1", 0.005, 2.0, True,
                                description=f"slope a of {u}'s access-rate function a ln(AR) + b"))
        if any(f == LOG for f in forms.values()):
            ps.append(Param("ar_log_b", 1.0, "1", -math.inf, math.inf, False,
                            description="intercept b, fixed at 1 so that MaxPower is the power at AR = 1"))
            if st.share:
                ps.append(Param(LINEAR_SHARE, 0.05, "1", 0.0, 0.95, True,
                                description="share of a log unit's power proportional to its accesses, "
                                            "s AR + (1 - s)(a ln AR + b)"))
        if st.smf == "log":
            ps.append(Param("sm_beta", 1.1, "1", 1.0001, 9.9, True,
                            description="beta of log10(alpha n + beta), alpha = (10 - beta)/Num_SMs"))
        if st.shared:
            ps.append(Param(SHARED_PARAM, 0.1, "1", 0.0, 1.0, True,
                            description="share of a pooled pipe's power drawn by the activation stage the pipes "
                                        "share (on when any of them is on)"))
        for p in ps:  # warm start from a neighbouring model's solution
            if start and p.name in start and p.vary:
                p.value = min(max(start[p.name], p.min), p.max)
        return ps

    def _structure(self, st: "_Struct") -> dict[str, Any]:
        mem = set(self.mem_units) if self.mem_units is not None else None
        out: dict[str, Any] = {
            "sm_count": int(self.sm_count), "sm_scaling": st.smf,
            "units": {u: {"scope": "chip" if u in self._chip else "sm", "ar_function": f,
                          "domain": "mem" if in_memory_domain(u, mem) else "core"} for u, f in st.forms}}
        if st.shared:
            out[SHARED_KEY] = {"units": shared_pool(out["units"])}
        if st.dispatch:
            out[DISPATCH_KEY] = {"units": dispatch_pool(out["units"])}
        return out

    #: parameters the model is linear in (given the access-rate slopes, beta and the shared share)
    _LINEAR = ("idle_power_w", "activation_power_w", "const_sm_power_w")

    def _fit(self, st: "_Struct", start: Mapping[str, float] | None = None) -> LsqResult:
        """One structure fitted from ``start`` (None: the default start; :meth:`_lsq`). Every fit is kept in
        :attr:`_seen` (the best per structure). A fit is a function of (structure, start) alone, so each
        one is made once per :meth:`fit` and repeats are read back (:attr:`_memo`): the search's last
        restarts are the final structure's multi-start, and its cold passes fit the same flips from the
        default start again."""
        key = (st, None if start is None else tuple(sorted(start.items())))
        if key not in self._memo:
            try:
                r = self._memo[key] = self._lsq(st, self._params(st, start))
            except FitError as e:
                self._memo[key] = e
            else:
                if st not in self._seen or r.chisqr < self._seen[st].chisqr:
                    self._seen[st] = r
        hit = self._memo[key]
        if isinstance(hit, FitError):
            raise hit
        return hit

    def _lsq(self, st: "_Struct", ps: list[Param]) -> LsqResult:
        """``st`` fitted to the training rows from ``ps``, the parameters the model is linear in (idle,
        activation, Const_SM, every MaxPower) first solved exactly for the others (:meth:`_linear_start`),
        so that each fit starts at its conditional optimum and needs a few iterations. Without standard
        errors: the search compares fits by their sum of squares, and :meth:`fit` adds them to the one it
        keeps."""
        y, d = self._data[4], self._design(st)
        return fit_lsq(lambda v: model.power(v, d), self._linear_start(d, ps, y), y, loss=self.loss,
                       jac=lambda v: model.jacobian(v, d), stats=False)

    def _design(self, st: "_Struct") -> model.Design:
        """The training rows' design for ``st`` (made once per structure and :meth:`fit`)."""
        d = self._designs.get(st)
        if d is None:
            act, running, active, temp, y, sigma, idle_temp_c = self._data
            d = self._designs[st] = model.design(self._structure(st), act, running, active, temp, sigma, idle_temp_c)
        return d

    def _linear_start(self, d: model.Design, ps: list[Param], y: np.ndarray) -> list[Param]:
        """``ps`` with the linear parameters solved for the others (bounded linear least squares); MaxPowers
        kept a little above 0 so that the slopes of their access-rate functions still move the fit."""
        vals = _values(ps)
        lin = [p for p in ps if p.vary and (p.name in self._LINEAR or p.name.startswith("max_power_"))]
        if not lin:
            return ps
        jd = model.jacobian(vals, d)
        X = np.column_stack([np.broadcast_to(jd[p.name], y.shape) for p in lin])
        fixed_part = model.power(vals, d) - X @ np.array([p.value for p in lin])
        x = solve_linear(X, y - fixed_part, np.array([p.min for p in lin]), np.array([p.max for p in lin]))
        if x is None:
            return ps
        for p, v in zip(lin, x):
            floor = 1e-3 * p.value if p.name.startswith("max_power_") else 0.0
            p.value = float(min(max(v, p.min, floor), p.max))
        return ps

    def _dead_log_units(self, res: LsqResult, st: "_Struct") -> list[str]:
        """The units of ``st`` whose fitted log access-rate function is 0 at every access rate observed."""
        act, v = self._data[0], _values(res.params)
        return [u for u, f in st.forms if f == LOG and (act[u] > 0).any() and not np.any(
            ar_transform(act[u][act[u] > 0], LOG, v[names.ar_log_a(u)], v.get("ar_log_b", 1.0)))]

    #: rounds of (greedy search, restart of its result) at most: a bound on the loop, each round must
    #: lower the sum of squares
    MAX_SEARCH_ROUNDS = 4

    def _random_starts(self, res: LsqResult) -> list[dict[str, float]]:
        """:attr:`N_RANDOM_STARTS` starting points: every free parameter of ``res`` scaled by a factor in
        [0.5, 1.5] from a fixed random stream (the same for every call: results do not depend on order)."""
        rng, free = np.random.default_rng(0), _values(res.params, free=True)
        return [{n: x * float(rng.uniform(0.5, 1.5)) for n, x in free.items()} for _ in range(self.N_RANDOM_STARTS)]

    #: the factors of :meth:`_hops`: each nonlinear parameter scaled by each, one parameter at a time (0.7
    #: and 1.4 as well made titanx's standard-campaign power fit 57 s of CPU; these two reach the same optima
    #: on the recorded mi300x and titanx rows of tests/test_ipp_fit.py and the reference fits)
    HOP_FACTORS = (0.5, 2.0)

    #: a restart is not made again from a solution that moved less than this (relative, in every free
    #: parameter) from the one it was made from (:meth:`_recipe_fits`)
    TWIN_TOLERANCE = 1e-2

    def _recipe_fits(self, st: "_Struct", res: LsqResult,
                     recipes: Sequence[tuple[tuple, Mapping[str, float] | None]]) -> list[LsqResult]:
        """``st`` fitted from each start of ``recipes`` (``(recipe, start)``: a start made by a rule from the
        current solution ``res`` -- a hop, a random start, a flip's warm or cold start), except a start
        whose recipe was made before from a solution within :attr:`TWIN_TOLERANCE` of ``res`` and reached
        a fit that does not beat ``res`` by BIC and is not ``res`` itself: that earlier fit stands for it
        (failed fits are left out). Consecutive rounds of :meth:`_search` restart from nearby optima (the
        flat REG/FDS valleys), and each round made every restart again, to the same optima; the restart
        that produced ``res`` is made again (from where it ended the search continues). Figures:
        tests/benchmarks/power_fit_speed.md."""
        here = _values(res.params, free=True)
        out = []
        for recipe, start in recipes:
            key = (st, recipe)
            r = next((r for b, r in self._twins.get(key, ()) if r is not res and (r is None or r.bic >= res.bic)
                      and self._moved(b, here) < self.TWIN_TOLERANCE), False)
            if r is False:
                r = _quiet(self._fit, st, start)
                self._twins.setdefault(key, []).append((here, r))
            if r is not None:
                out.append(r)
        return out

    @staticmethod
    def _moved(a: Mapping[str, float], b: Mapping[str, float]) -> float:
        """The largest relative change (dimensionless) of a parameter between two solutions of one
        structure (parameter name -> value)."""
        x = np.array(list(a.values()))
        y = np.array([b.get(n, v) for n, v in a.items()])
        scale = np.maximum(np.abs(x), np.abs(y))
        return float(np.max(np.abs(x - y) / np.where(scale > 0, scale, 1.0), initial=0.0))

    def _hops(self, res: LsqResult) -> list[tuple[tuple[str, float], dict[str, float]]]:
        """Starting points one nonlinear parameter away from ``res`` (an access-rate slope, ``sm_beta`` or
        the shared share, scaled by each of :attr:`HOP_FACTORS` within its bounds), each with its recipe
        (parameter, factor) for :meth:`_recipe_fits`. The clamped log access-rate functions make the sum
        of squares piecewise smooth (rows enter and leave a unit's clamp as its slope moves), with several
        optima a few % apart: which one the random starts (every parameter moved at once) reached was
        chance, while one slope moved alone leads into the better one from either side
        (tests/benchmarks/thermal_results.md, session 7). Deterministic: a refit of the same rows is the
        same fit."""
        base = _values(res.params, free=True)
        out = []
        for p in res.params:
            if not p.vary or p.name in self._LINEAR or p.name.startswith("max_power_"):
                continue
            for m in self.HOP_FACTORS:
                v = min(max(p.value * m, p.min), p.max)
                if v != p.value:
                    out.append(((p.name, m), {**base, p.name: v}))
        return out

    def _flips(self) -> list[str]:
        """What the search may change: units' access-rate functions (unless given), the SM scaling (with
        an active-SM sweep, when not given), the shared-activation term and the per-access share (each when
        not given)."""
        out = [] if isinstance(self.ar_forms, Mapping) else [u for u in self.units_ if u not in self._pinned]
        out += [f for f, on in ((SM_FLIP, self._has_sweep and self.sm_scaling == "auto"),
                                (SHARED_FLIP, self.shared_activation == "auto"),
                                (SHARE_FLIP, self.linear_share == "auto")) if on]
        return [f for f in out if f not in self._hold]

    def _other_shared(self, st: "_Struct", res: LsqResult, first: Sequence[tuple["_Struct", LsqResult]] = ()
                      ) -> tuple["_Struct", LsqResult]:
        """A second start of the search, from the other setting of the shared-activation term (with
        ``shared_activation="auto"``): the first-stage fit with the other setting (all access-rate
        functions at their starting forms) searched again with the term held (:meth:`_search`, its
        restarts included), and the full search continued from there when it beats ``res`` by BIC. One
        search from the all-log start stays in the term's first basin (figures:
        tests/benchmarks/code_figures.md). Always made, not gated by the term flipped on ``res``: that
        warm start is in ``res``'s basin, not the other setting's (tests/benchmarks/thermal_results.md,
        session 7). Also puts the best structures of the other setting into the structure average
        (:meth:`_structure_average`). Costs one more search, without its restarts when its greedy result
        is more than :attr:`GIVE_UP_BIC` behind ``res``."""
        cands = [x for x in first if x[0].shared != st.shared]
        if self.shared_activation != "auto" or st.flip(SHARED_FLIP, self) == st or not cands:
            return st, res
        other, r = min(cands, key=lambda x: x[1].bic)
        self._hold = frozenset({SHARED_FLIP})
        try:
            st2, r2 = self._search(other, r, give_up=res.bic + self.GIVE_UP_BIC)
        finally:
            self._hold = frozenset()
        return (st, res) if r2.bic >= res.bic - 1e-9 else self._search(st2, r2)

    #: the second search (:meth:`_other_shared`) makes no restarts once its greedy result is this much
    #: BIC behind the first search's: a round of restarts and hops gained at most 45 on the recorded fits,
    #: and the other setting's greedy result was within 16 or 130-235 behind (tests/benchmarks/power_fit_speed.md)
    GIVE_UP_BIC = 100.0

    def _search(self, st: "_Struct", res: LsqResult, give_up: float = math.inf) -> tuple["_Struct", LsqResult]:
        """The greedy search (:meth:`_select`), its result restarted from the default start, the random
        starts and the hops, and the search continued from a better optimum when a restart found one: the
        greedy trials' warm starts keep the search in one basin (figures: tests/benchmarks/code_figures.md).
        No restarts once the greedy result's BIC is above ``give_up``."""
        if not self._flips():
            return st, res
        for _ in range(self.MAX_SEARCH_ROUNDS):
            st, res = self._select(st, res)
            if res.bic > give_up:
                break
            recipes = [(("rand", i), x) for i, x in enumerate(self._random_starts(res))]
            recipes += [(("hop", *h), x) for h, x in self._hops(res)]
            better = min([res, *self._fits_from(st, [None]), *self._recipe_fits(st, res, recipes)],
                         key=lambda r: r.chisqr)
            if better.chisqr >= res.chisqr - 1e-9 * max(res.chisqr, 1e-300):
                break
            res = better
        return st, res

    #: flips fully refitted per pass: the best of the screen (:meth:`_screen`)
    FLIPS_FITTED_PER_PASS = 6

    def _select(self, st: "_Struct", res: LsqResult) -> tuple["_Struct", LsqResult]:
        """Greedy search by BIC over :meth:`_flips`. Each pass screens every flip (:meth:`_screen`), fits
        the most promising ones (:attr:`FLIPS_FITTED_PER_PASS`) warm-started from the current solution,
        takes the best, then tries the other flips that helped on their own, best first, each on top of
        what was taken. A pass that finds no better flip is repeated cold, each flip fitted from the
        default start and the random starts: a flip that needs the other units' parameters to move far
        (ALU against REG/FDS, which every instruction touches) looks worse from the warm start than it is."""
        warm = True
        while True:
            start = _values(res.params) if warm else None
            gains: list[tuple[float, str, _Struct, LsqResult]] = []
            for what, trial in self._screen(st, start)[: self.FLIPS_FITTED_PER_PASS]:
                if warm:
                    fits = self._recipe_fits(trial, res, [(("warm", what), start)])
                else:  # cold: the default start and the random starts of the current solution
                    cold = [(("cold", what, i), x) for i, x in enumerate(self._random_starts(res))]
                    fits = [*self._fits_from(trial, [None]), *self._recipe_fits(trial, res, cold)]
                r = min(fits, key=lambda x: x.bic, default=None)
                if r is not None and r.bic < res.bic - 1e-9:
                    gains.append((r.bic, what, trial, r))
            if not gains:
                if not warm:
                    return st, res
                warm = False
                continue
            gains.sort(key=lambda g: g[0])
            _, _, st, res = gains[0]
            for _, what, _, _ in gains[1:]:  # each flip once: _flips has no repeats
                trial = st.flip(what, self)
                r = None if trial == st else _quiet(self._fit, trial, _values(res.params))
                if r is not None and r.bic < res.bic - 1e-9:
                    st, res = trial, r
            warm = True

    def _screen(self, st: "_Struct", start: Mapping[str, float] | None) -> list[tuple[str, "_Struct"]]:
        """Every flip of ``st`` (:meth:`_flips`) with the BIC it reaches when only its linear parameters
        are solved at ``start``'s others (a new log slope at IPP's 0.1365): an upper bound of what its fit
        reaches, cheap enough to rank all flips; returned best first."""
        y = self._data[4]
        n = len(y)
        out = []
        for what in self._flips():
            trial = st.flip(what, self)
            if trial == st:
                continue
            d = self._design(trial)
            ps = self._linear_start(d, self._params(trial, start), y)
            ssr = float(np.sum((model.power(_values(ps), d) - y) ** 2))
            k = sum(1 for p in ps if p.vary)
            out.append((n * math.log(max(ssr, 1e-300) / n) + k * math.log(n), what, trial))
        out.sort(key=lambda t: t[0])
        return [(what, trial) for _, what, trial in out]

    # -- output ---------------------------------------------------------------------------------
    def _make_section(self) -> Section:
        """The fitted ``power`` section (model ``ipp``) with its statistics, covariance and settings."""
        structure = self._structure(self.struct_)
        clocks = self.default_clocks or {}
        tc = self.temperature_correction
        tc = {"sigma_w_per_c": tc["sigma_w_per_c"], "idle_temp_c": tc["idle_temp_c"]} if tc else None
        structure.update(
            warp_issue_per_cycle=self.warp_issue_per_cycle,
            default_clocks={"core_mhz": clocks.get("core_mhz"), "mem_mhz": clocks.get("mem_mhz")},
            ar_function_choice="BIC, greedy per unit from all-log (with the SM scaling and the shared activation); "
                               "the dispatch stage by the left-out training mixes (Wilcoxon, 5 %)",
            temperature_correction=tc)
        stats = self.result_.stats("w")
        stats["units_fitted"] = list(self.units_)
        for key, attr in (("measured_ar_max", "measured_ar_"), ("unit_power_at_measured_ar", "quantities_"),
                          ("collinear_units", "collinear_"), ("prediction", "prediction_"),
                          ("discrepancy", "discrepancy_")):
            if getattr(self, attr, None):
                stats[key] = getattr(self, attr)
        return Section("ipp", self.params_, structure, stats, self.covariance_, self.settings(),
                       getattr(self, "covariance_total_", None))
