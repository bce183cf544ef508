"""Fit the DVFS power model (:mod:`calib.model.dvfs`) to a samples table with several clock configurations.

The model's equation, its design columns and their derivatives are :mod:`calib.model.dvfs`'s; this module
owns the search. Method (default ``"joint"``): one bounded, weighted least-squares problem over every
parameter at once (:func:`calib.fit.core.solve`) with the model's Jacobian (analytic in the coefficients
and voltages, differences in the few shape parameters). Constraints are bounds only:

* W coefficients >= 0 (non-negative least squares, as gpmTOOL);
* voltages are ``V = exp(A @ u)`` with ``u >= 0`` and ``A`` the cumulative map from the reference level
  outwards, so every voltage is positive, 1 at the reference clock and non-decreasing in clock
  (gpmTOOL forces the same monotonicity with explicit constraints); with a core curve per memory level,
  each curve other than the reference memory level's has a free log-offset in [-2, 2] at the
  reference core level;
* ``ar_tp_lambda`` in [0.01, 1], ``ar_tp_threshold`` in [0, 0.5] (when fitted), ``ar_bc_a`` in [0.01, 1],
  ``ar_bc_lambda`` in [0, 1], ``ar_exponent`` in [0.05, 1], ``ar_log_a`` in [0.01, 1] (concave transforms
  only), ``mem_sat`` in [0.05, 50] (50: practically never memory bound).

Model choices (made by cross-validation on the Titan X table and the 10 development applications;
the figures, and those of the options it rejected, are in tests/benchmarks/titanx_results.md):

* ``core_voltage="auto"`` (default): one monotone core voltage curve per memory level when every (core,
  memory) pair was measured, else one shared curve (gpmTOOL's model; ``"shared"``); ``"per_mem"`` forces
  the curves. Virtual-GPU sessions measure the default core clock at the default memory clock only, so
  they keep the shared curve;
* access-rate transform ``"tpow"`` with the threshold fixed at ``DEFAULT_THRESHOLD`` (chosen with the
  development applications: the microbenchmarks alone cannot place it); ``ar_threshold=None`` fits it.

Reference clocks (V = 1, and the clocks the W coefficients refer to): ``ref_clocks`` when given, else
the clocks the activities were measured at when those are levels of the table (gpmTOOL's default
clocks, from the ``ref_core_mhz``/``ref_mem_mhz`` columns), else the highest levels. Activity clocks
(memory-bound rescaling): the ``ref_`` columns; else, when every workload repeats the same activities at
all its clock configurations (activities measured once and copied), the highest clocks are assumed;
else none (activities measured at each row's clocks).

``method="alternating"`` reproduces gpmTOOL's scheme instead: non-negative least squares
(:func:`scipy.optimize.nnls`) for the W coefficients with voltages fixed, then bounded least squares
for the voltages and shapes with the coefficients fixed, until no parameter changes by more than 0.05 %
for 5 iterations. Both reach the same optimum; the joint solve is faster, hence the default.

Residuals are relative, ``(P_pred - P) / P`` (``weighting="relative"``): the fit minimises the squared
percentage error, which matches the MAPE it is judged by and keeps 40 W idle rows as important as
250 W rows. ``weighting="absolute"`` gives gpmTOOL's unweighted residuals.

Standard errors: :func:`calib.fit.core.covariance` of the raw parameter vector, for every fitted
parameter, also those at a bound (then they describe the local curvature only and a warning says the
value sits on its bound); voltages get theirs from the increments by the delta method. A parameter the
data do not touch has no standard error and a warning.

Warnings (in ``fit.power.warnings``) name units that never vary (their weight is fixed at 0),
pairs of units whose activities are collinear over the distinct workloads (|r| > 0.95), units that
are nearly a combination of others (variance inflation factor > 30), parameters at a bound and
rows dropped for missing values.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import nnls

from calib.core import names
from calib.core.errors import BadInputError, FitError
from calib.core.metrics import errors
from calib.core.params import Covariance, Param, Section
from calib.core.samples import ACT_PREFIX, act_units
from calib.core.units import in_memory_domain
from calib.fit.base import CLOCK_PAIR, Estimator, either, mapping_of, names_of, number, optional, options
from calib.fit.core import covariance, solve, stderr_of
from calib.fit.ipp import EXCLUDED_ROLES
from calib.fit.uncertainty import (
    IDLE_GROUP,
    apply_total,
    group_jackknife,
    prediction_stats,
    row_groups,
    total_covariance,
    workload_groups,
)
from calib.model.arfunc import IPP_A, IPP_B, LOG
from calib.model.dvfs import (
    BOXCOX,
    CONST_TERMS,
    CORE,
    FORMS,
    MEM,
    MODEL_NAME,
    POW,
    TPOW,
    Design,
    Rows,
    columns,
    levels_of,
    shape_gradient,
    voltage_gradient,
)
from calib.model.thermal import leakage_w
from calib.segment import SessionData

#: activity threshold of the default "tpow" transform (chosen on the Titan X data: tests/benchmarks/titanx_results.md)
DEFAULT_THRESHOLD = 0.03
#: |correlation| between two units' activities (over distinct workloads) that triggers a warning
COLLINEAR_R = 0.95
#: variance inflation factor above which a unit is called nearly a combination of the others
VIF_LIMIT = 30.0
#: shape parameters: (initial value, min, max, unit, description)
SHAPES = {
    "ar_exponent": (0.7, 0.05, 1.0, "1", "exponent of the 'pow' access-rate transform U**p"),
    "ar_log_a": (IPP_A, 0.01, 1.0, "1", "slope of the IPP 'log' access-rate transform a*ln(U)+b"),
    "ar_bc_a": (0.7, 0.01, 1.0, "1", "slope of the Box-Cox access-rate transform 1 + a*(U**lambda - 1)/lambda"),
    "ar_bc_lambda": (0.7, 0.0, 1.0, "1", "power of the Box-Cox access-rate transform (0: IPP log, a = lambda: U**lambda)"),
    "ar_tp_lambda": (0.6, 0.01, 1.0, "1", "power of the thresholded access-rate transform"),
    "ar_tp_threshold": (0.03, 0.0, 0.5, "1", "activity below which a unit draws no dynamic power (tpow transform)"),
    "mem_sat": (1.0, 0.05, 50.0, "1", "summed memory activity at which a kernel is fully memory bound"),
}
TERM_DOC = {
    "static_core_w": "static power of the core domain at the reference voltage",
    "static_mem_w": "static power of the memory domain at the reference voltage",
    "const_core_w": "constant dynamic power of the core domain at the reference clock",
    "const_mem_w": "constant dynamic power of the memory domain at the reference clock",
    "active_core_w": "extra core-domain power while any core unit is active, at the reference clock",
    "active_mem_w": "extra memory-domain power while any memory unit is active, at the reference clock",
    "leak_core_w_per_c": "leakage increase per degC above temp_ref_c, at the reference core voltage",
}
TERM_UNIT = {n: ("W/C" if n.endswith("_per_c") else "W") for n in CONST_TERMS}
V_MAX_STEP = 2.0  # bound on the log-voltage increment between neighbouring levels (a factor e^2)
WEIGHTINGS = ("relative", "absolute")
#: core voltage curves: "auto" = one per memory level when every (core, memory) clock pair was measured
CORE_VOLTAGES = ("auto", "per_mem", "shared")
#: the solver's tolerances (ftol, xtol, gtol) and its evaluations per pass of the joint solve
TOL = 1e-10
MAX_NFEV = 150


@dataclass
class Problem:
    """The fit's parameter vector ``x = (coefficients, shapes, core log-voltage steps [and curve offsets],
    memory log-voltage steps)`` on the model's :class:`calib.model.dvfs.Design` of the training rows."""

    P: np.ndarray             # measured power, W
    wt: np.ndarray            # residual weights
    d: Design
    shapes: list[str]         # fitted shape parameters
    fixed_shape: dict[str, float]
    ic: np.ndarray            # per row: index of its core / memory clock level
    im: np.ndarray
    lc: np.ndarray            # the clock levels, MHz
    lm: np.ndarray
    rc: int                   # the reference levels
    rm: int
    Ac: np.ndarray            # increments -> log-voltages (0 at the reference level)
    Am: np.ndarray
    ncg: int = 1              # core voltage curves: 1, or one per memory level ("per_mem")
    rows: pd.DataFrame | None = None  # the table rows of P (for grouping them: workload, kernel, role)
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def n_off(self) -> int:
        """Core-curve offsets in the parameter vector (every curve but the reference one's)."""
        return self.ncg - 1

    @property
    def gc(self) -> np.ndarray:
        """Per row, the index of its core voltage curve."""
        return self.im if self.ncg > 1 else np.zeros_like(self.ic)

    @property
    def rg(self) -> int:
        """The core voltage curve whose reference-level voltage is 1."""
        return self.rm if self.ncg > 1 else 0

    @property
    def nlin(self) -> int:
        return len(self.d.terms) + len(self.d.unit_cols)

    @property
    def nshape(self) -> int:
        return len(self.shapes)

    @property
    def nu_c(self) -> int:
        # per curve: the log-voltage increments between core levels, plus the offsets
        return self.ncg * (len(self.lc) - 1) + self.n_off

    @property
    def nu_m(self) -> int:
        return len(self.lm) - 1

    def core_table(self, u: np.ndarray) -> np.ndarray:
        """Core voltages, core levels x curves, from the core part of the parameter vector."""
        n = len(self.lc) - 1
        tab = np.empty((len(self.lc), self.ncg))
        offs = np.insert(u[self.ncg * n:], self.rg, 0.0) if self.n_off else np.zeros(self.ncg)
        for g in range(self.ncg):
            tab[:, g] = np.exp(self.Ac @ u[g * n:(g + 1) * n] + offs[g])
        return tab

    def row_volts(self, vc: np.ndarray, vm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-row (core, memory) voltages from the level tables of :meth:`split`."""
        return vc[self.ic, self.gc], vm[self.im]

    def split(self, x: np.ndarray) -> tuple[np.ndarray, dict[str, float], np.ndarray, np.ndarray]:
        """(linear coefficients, shape values, core voltages (levels x curves), memory level voltages)."""
        a, b = self.nlin, self.nlin + self.nshape
        shape = {**self.fixed_shape, **dict(zip(self.shapes, x[a:b]))}
        vc = self.core_table(x[b:b + self.nu_c])
        vm = np.exp(self.Am @ x[b + self.nu_c:])
        return x[:a], shape, vc, vm

    def predict(self, x: np.ndarray) -> np.ndarray:
        lin, shape, vc, vm = self.split(x)
        return columns(self.d, shape, *self.row_volts(vc, vm)) @ lin

    def resid(self, x: np.ndarray) -> np.ndarray:
        return (self.predict(x) - self.P) * self.wt

    def jac(self, x: np.ndarray) -> np.ndarray:
        """The residuals' Jacobian: the model's columns and derivatives, chained into the log-voltage steps."""
        lin, shape, vcl, vml = self.split(x)
        Vc, Vm = self.row_volts(vcl, vml)
        X = columns(self.d, shape, Vc, Vm)
        dPdVc, dPdVm = voltage_gradient(self.d, X, lin, Vc, Vm)
        J = np.empty((len(self.P), len(x)), order="F")
        a, b, c = self.nlin, self.nlin + self.nshape, self.nlin + self.nshape + self.nu_c
        J[:, :a] = X
        if self.nshape:
            J[:, a:b] = shape_gradient(self.d, shape, self.shapes, lin, Vc, Vm)
        base_c = dPdVc * Vc  # d P / d log Vc
        if self.ncg == 1:
            J[:, b:c] = base_c[:, None] * self._rows_of(self.Ac, self.ic)
        else:
            n = len(self.lc) - 1
            J[:, b:c] = 0.0
            Ar = self._rows_of(self.Ac, self.ic)
            k = b + self.ncg * n
            for g in range(self.ncg):
                m = self._curve_rows(g)
                J[m, b + g * n:b + (g + 1) * n] = base_c[m, None] * Ar[m]
                if g != self.rg:
                    J[m, k] = base_c[m]
                    k += 1
        J[:, c:] = (dPdVm * Vm)[:, None] * self._rows_of(self.Am, self.im)
        J *= self.wt[:, None]
        return J

    def _rows_of(self, A: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """``A[idx]`` (a level map per row), computed once per problem."""
        key = ("rows_of", id(A))
        if key not in self._cache:
            self._cache[key] = A[idx]
        return self._cache[key]

    def _curve_rows(self, g: int) -> np.ndarray:
        """The rows of core voltage curve ``g``, computed once per problem."""
        key = ("curve", g)
        if key not in self._cache:
            self._cache[key] = np.flatnonzero(self.gc == g)
        return self._cache[key]

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        n_inc = self.nu_c - self.n_off  # curve offsets (log-voltage at the reference core level): either sign
        lo = np.concatenate([np.zeros(self.nlin), [SHAPES[s][1] for s in self.shapes], np.zeros(n_inc),
                             np.full(self.n_off, -V_MAX_STEP), np.zeros(self.nu_m)])
        hi = np.concatenate([np.full(self.nlin, np.inf), [SHAPES[s][2] for s in self.shapes],
                             np.full(self.nu_c + self.nu_m, V_MAX_STEP)])
        return lo, hi

    def start(self) -> np.ndarray:
        """Shapes at their defaults, voltages a little below 1 away from the reference, and the coefficients
        from non-negative least squares at those."""
        shape0 = {**self.fixed_shape, **{s: SHAPES[s][0] for s in self.shapes}}
        u0 = np.full(self.nu_c + self.nu_m, 0.01)
        u0[self.nu_c - self.n_off:self.nu_c] = 0.0  # curve offsets
        x = np.concatenate([np.zeros(self.nlin), [shape0[s] for s in self.shapes], u0])
        _, _, vc, vm = self.split(x)
        X = columns(self.d, shape0, *self.row_volts(vc, vm))
        lin, _ = nnls(X * self.wt[:, None], self.P * self.wt, maxiter=50 * X.shape[1])
        x[:self.nlin] = np.maximum(lin, 1e-3)  # strictly inside the bounds for trust-region reflective
        return x

    def x_scale(self) -> np.ndarray:
        """Typical magnitudes: W coefficients ~10 W, shapes ~0.3, log-voltage steps ~0.05."""
        return np.concatenate([np.full(self.nlin, 10.0), np.full(self.nshape, 0.3),
                               np.full(self.nu_c + self.nu_m, 0.05)])


def _cum_map(n: int, ref: int) -> np.ndarray:
    """Map from the n-1 log-voltage increments to the n log-voltages (0 at ``ref``)."""
    A = np.zeros((n, max(n - 1, 0)))
    for i in range(n):
        if i < ref:
            A[i, i:ref] = -1.0
        elif i > ref:
            A[i, ref:i] = 1.0
    return A


def _activities_repeat(df: pd.DataFrame, cols: list[str]) -> bool:
    """True when activities look measured once and copied to every clock configuration.

    Rows are grouped by workload and activity vector (a name may cover several microbenchmarks); the
    answer is yes when every group with some activity spans at least two clock configurations. Tables
    measured at each row's clocks have (nearly) one row per group.
    """
    if not {"core_mhz", "mem_mhz"} <= set(df.columns):
        return False
    act = df[cols].round(12)
    busy = (act > 0).any(axis=1)
    if not busy.any():
        return False
    key = df.loc[busy, ["workload"]].astype(str).join(act[busy])
    conf = df.loc[busy, ["core_mhz", "mem_mhz"]].astype(str).agg("/".join, axis=1)
    spans = conf.groupby([key[c] for c in key.columns], sort=False).nunique()
    return bool((spans >= 2).all())


def activity_diagnostics(U: np.ndarray, units: list[str]) -> tuple[np.ndarray, list[str]]:
    """Which units vary, and warnings about units that never vary or are collinear.

    Computed over the distinct activity vectors (one per workload, when activities repeat across
    clocks), so that repeating a workload at many clocks does not hide collinearity.
    """
    msgs: list[str] = []
    D = np.unique(np.round(U, 12), axis=0)
    sd = D.std(axis=0)
    varies = sd > 1e-9
    for j in np.flatnonzero(~varies):
        v = D[0, j]
        msgs.append(f"act_{units[j]} never varies (always {v:g}): its weight cannot be fitted and is fixed at 0"
                    + ("" if v == 0 else "; its power is absorbed by the constant terms"))
    idx = np.flatnonzero(varies)
    if len(idx) >= 2 and len(D) > 2:
        C = np.corrcoef(D[:, idx], rowvar=False)
        for a in range(len(idx)):
            for b in range(a + 1, len(idx)):
                if abs(C[a, b]) > COLLINEAR_R:
                    msgs.append(f"act_{units[idx[a]]} and act_{units[idx[b]]} are collinear over the workloads "
                                f"(r = {C[a, b]:+.3f}): their weights are poorly separated")
        if len(D) > len(idx) + 1:
            try:
                inv = np.linalg.inv(C)
                for a in range(len(idx)):
                    vif = inv[a, a]
                    if vif > VIF_LIMIT:
                        msgs.append(f"act_{units[idx[a]]} is nearly a linear combination of the other activities "
                                    f"(variance inflation factor {vif:.0f})")
            except np.linalg.LinAlgError:
                msgs.append("the activities are linearly dependent over the workloads: some unit weights are not "
                            "identifiable")
    return varies, msgs


def training_rows(df: pd.DataFrame, temperature_correction: Mapping[str, float] | None = None
                  ) -> tuple[pd.DataFrame, dict | None]:
    """The rows a DVFS fit uses, and the temperature correction applied to them.

    Drops held-out, thermal and timing rows and the active-SM sweep (whole-GPU rows only: the model
    has no active-SM term); with a thermal fit's ``{"sigma_w_per_c", "idle_temp_c"}``, brings power to
    the idle temperature (IPP eq. 22, :func:`calib.model.thermal.leakage_w`) and drops ``temp_c``:
    within a campaign the window temperature follows the window's own power, so a leakage slope fitted
    here would soak up dynamic power (seen: ~20 W/C against the thermal fit's ~0.3 W/C); predictions add
    the correction back (:func:`calib.model.dvfs.predict_power`). Returns (rows, the correction applied
    or None).
    """
    data = df[~df["role"].astype(str).isin(EXCLUDED_ROLES)] if "role" in df.columns else df
    if "active_sms" in data.columns:
        data = data[data["active_sms"].isna() | (data["active_sms"] >= data["active_sms"].max())]
    tc = temperature_correction
    if tc and "temp_c" in data.columns:
        sigma, idle = float(tc["sigma_w_per_c"]), float(tc["idle_temp_c"])
        data = data.copy()
        data["power_w"] = data["power_w"] - leakage_w(sigma, data["temp_c"].to_numpy(float), idle)
        return data.drop(columns=["temp_c"]), {"sigma_w_per_c": sigma, "idle_temp_c": idle}
    return data, None


class DvfsPowerFitter(Estimator):
    """Fits the DVFS power model (module docstring) to a samples table with several clock
    configurations; an estimator (:mod:`calib.fit.base`): ``DvfsPowerFitter(**settings).fit(df)``
    learns ``section_`` (model ``"dvfs"``), which records the settings.

    Settings. ``fit(df)`` takes a samples table (``power_w``, ``core_mhz``, ``mem_mhz``, ``act_<unit>``; ``workload`` and
    ``temp_c`` optional; ``ref_core_mhz``/``ref_mem_mhz`` when the activities were measured at other
    clocks than the row's). ``mem_units``: units of the memory clock domain (default: the contract's
    name rule). ``ar_form``: access-rate transform of every unit (``"tpow"`` default, ``"boxcox"``,
    ``"pow"``, ``"log"``, ``"linear"``; :mod:`calib.model.dvfs`), ``ar_forms`` per-unit overrides,
    ``ar_threshold`` the tpow threshold (None: fitted), ``fit_log_a`` whether the IPP log slope is
    fitted. ``activity_clocks``: ``"auto"`` (from the ref_ columns, or the highest clocks when every
    workload repeats its activities across clocks), ``"off"``, or a ``(core_mhz, mem_mhz)`` pair.
    ``ref_clocks``: the clock levels where V = 1. ``weighting``: ``"relative"`` or ``"absolute"``
    residuals. ``active_terms``: allow the active-domain terms. ``method``: ``"joint"`` or
    ``"alternating"`` (module docstring). ``core_voltage``: ``"auto"``, ``"per_mem"`` or ``"shared"``
    core voltage curves (module docstring). With one clock configuration the model reduces to the IPP
    form. ``temperature_correction``: a thermal fit's ``{"sigma_w_per_c", "idle_temp_c"}``
    (:func:`training_rows`).
    """

    constraints = {
        "mem_units": optional(names_of("units")),
        "ar_form": options(*FORMS),
        "ar_forms": optional(mapping_of(options(*FORMS), "units")),
        "method": options("joint", "alternating"),
        "activity_clocks": either(options("auto", "off"), CLOCK_PAIR),
        "weighting": options(*WEIGHTINGS),
        "fit_log_a": options(True, False),
        "active_terms": options(True, False),
        "ref_clocks": optional(CLOCK_PAIR),
        "ar_threshold": optional(number(0.0, 0.5)),
        "max_nfev": optional(number(1, 1e9, integer=True)),
        "core_voltage": options(*CORE_VOLTAGES),
        "temperature_correction": optional(mapping_of(number(), "sigma_w_per_c/idle_temp_c")),
    }
    #: options the Titan X study rejected (tests/benchmarks/titanx_results.md), removed; files record them
    retired_settings = {"ridge": 0.0, "ar_shape": "shared", "total_terms": False, "loss": "linear",
                        "loss_scale": None, "static_exp": False}

    def __init__(self, *, mem_units: Iterable[str] | None = None, ar_form: str = TPOW,
                 ar_forms: Mapping[str, str] | None = None, method: str = "joint", activity_clocks: Any = "auto",
                 weighting: str = "relative", fit_log_a: bool = True, active_terms: bool = True,
                 ref_clocks: tuple[float, float] | None = None, ar_threshold: float | None = DEFAULT_THRESHOLD,
                 max_nfev: int | None = None, core_voltage: str = "auto",
                 temperature_correction: Mapping[str, float] | None = None):
        self._store(locals())

    def fit(self, data: SessionData | pd.DataFrame, source: str = "", *, uncertainty: bool = True) -> "DvfsPowerFitter":
        """Fit to the rows of a session's samples table (``data.samples``, or the table itself) the model
        covers (:func:`training_rows`); ``source`` names the table in messages (default: the session's
        path); ``uncertainty=False`` skips the total covariance. Returns self."""
        self._validate_settings()
        data = SessionData.of(data)
        df, source = data.samples, source or data.source
        t0 = time.perf_counter()
        rows, correction = training_rows(df, self.temperature_correction)
        if len(rows) < len(df) and "role" in df.columns:
            warnings.warn(f"{source or '<table>'}: {len(df) - len(rows)} rows not used by the DVFS fit (roles "
                          "heldout/thermal/timing, or fewer active SMs than the widest launch)")
        prob, meta, notes = self._problem(rows, source or "<table>")
        x0 = prob.start()
        x, nfev, msg = (self._solve_joint(prob, x0) if self.method == "joint" else _solve_alternating(prob, x0))
        if not np.all(np.isfinite(x)):
            raise FitError(f"{source or '<table>'}: the DVFS fit diverged ({msg})")
        J = prob.jac(x)
        r = prob.resid(x)
        cov, dead = covariance(J, r)
        # total uncertainty: delete-a-group jackknife over the workloads' groups (calib.fit.uncertainty)
        jack = None
        self.prediction_ = None
        if uncertainty:
            jack, _ = group_jackknife(J, r, row_groups(prob.rows), keep=[IDLE_GROUP])
            oog = np.empty(len(r))
            _, n_wl = group_jackknife(J, r, workload_groups(prob.rows), keep=[IDLE_GROUP], out_of_group=oog)
            self.prediction_ = prediction_stats(oog / (prob.wt * prob.P), n_wl)
        sec = self._section(prob, meta, notes, x, cov, dead, nfev, msg, time.perf_counter() - t0, jack)
        if self.prediction_:
            sec.stats["prediction"] = self.prediction_
        sec.structure["temperature_correction"] = correction
        sec.settings = self.settings()
        self.section_ = sec
        return self

    def _solve_joint(self, prob: Problem, x0: np.ndarray) -> tuple[np.ndarray, int, str]:
        """Trust-region reflective from the NNLS start with fixed typical variable magnitudes, then a polish
        with the Jacobian's own scaling; the lower cost wins.

        The static/dynamic split and the voltage steps make the problem badly conditioned: with one
        scaling the solver may crawl along a flat valley or stop at a slightly worse point; the second
        scaling, started where the first stopped, leaves the result practically independent of the
        reference clocks and the table at half the time of two full solves."""
        lo, hi = prob.bounds()
        x0 = np.clip(x0, lo, hi)
        max_nfev = self.max_nfev or MAX_NFEV
        kw = dict(jac=prob.jac, max_nfev=max_nfev, tol=TOL, rows=len(prob.P))
        best = solve(prob.resid, x0, lo, hi, x_scale=prob.x_scale(), **kw)
        sol = solve(prob.resid, best.x, lo, hi, x_scale="jac", **kw)
        nfev = int(best.nfev) + int(sol.nfev)
        if sol.cost > best.cost:
            sol = best
        return sol.x, nfev, str(sol.message)

    def _problem(self, df: pd.DataFrame, src: str) -> tuple[Problem, dict[str, Any], list[str]]:
        """The least-squares problem of the training rows: checks, clock levels, reference and activity
        clocks, which terms and shapes are fitted (module docstring). Returns (problem, facts for the
        section's structure, notes for its warnings)."""
        notes: list[str] = []
        if "power_w" not in df.columns:
            raise BadInputError(f"{src}: required column 'power_w' missing (needed to fit)")
        units = act_units(df)
        if not units:
            raise BadInputError(f"{src}: no activity columns (act_<unit>)")
        mem_units = None if self.mem_units is None else set(self.mem_units)
        if mem_units is not None:
            unknown = sorted(mem_units - set(units))
            if unknown:
                raise BadInputError(f"{src}: memory unit(s) {', '.join(unknown)} not in the table "
                                    f"(units: {', '.join(units)})")
        extra = set(self.ar_forms or {}) - set(units)
        if extra:
            raise BadInputError(f"access-rate form given for unknown unit(s): {', '.join(sorted(extra))} "
                                f"(units in the table: {', '.join(units)})")
        forms = [(self.ar_forms or {}).get(u, self.ar_form) for u in units]
        data = df.copy()
        for col in ("core_mhz", "mem_mhz"):
            if col not in data.columns:
                data[col] = 1.0  # one nominal level: the domain does not scale (module docstring of the model)
                notes.append(f"no {col} column: the {col[:-4]} domain is treated as one clock level")
        need = ["power_w", "core_mhz", "mem_mhz"] + [ACT_PREFIX + u for u in units]
        bad = data[need].isna().any(axis=1)
        if bad.any():
            msg = f"{src}: dropped {int(bad.sum())} of {len(data)} rows with missing power, clock or activity values"
            warnings.warn(msg, stacklevel=3)
            notes.append(msg)
            data = data[~bad].reset_index(drop=True)
        if "workload" not in data.columns:
            data["workload"] = [f"row{i + 1}" for i in range(len(data))]
        P = data["power_w"].to_numpy(float)
        if len(P) == 0:
            raise BadInputError(f"{src}: no usable rows")
        if np.any(P <= 0):
            i = int(np.flatnonzero(P <= 0)[0])
            raise BadInputError(f"{src}: row {i + 1}, column 'power_w': {float(P[i]):g} W is not a positive power")
        U = data[[ACT_PREFIX + u for u in units]].to_numpy(float)
        if np.any((U < -1e-9) | (U > 1 + 1e-9)):
            r, j = np.argwhere((U < -1e-9) | (U > 1 + 1e-9))[0]
            raise BadInputError(f"{src}: row {r + 1}, column 'act_{units[j]}': activity {float(U[r, j]):g} "
                                "outside [0, 1]")
        U = np.clip(U, 0.0, 1.0)
        fc = data["core_mhz"].to_numpy(float)
        fm = data["mem_mhz"].to_numpy(float)
        lc, lm = levels_of(fc), levels_of(fm)
        is_mem = np.array([in_memory_domain(u, mem_units) for u in units], dtype=bool)
        ac, am, act_info = self._activity_clocks(data, units, is_mem, lc, lm)
        f0c, f0m = self._reference_clocks(data, act_info, lc, lm, src)
        rc, rm = int(np.flatnonzero(np.isclose(lc, f0c))[0]), int(np.flatnonzero(np.isclose(lm, f0m))[0])
        ic = np.clip(np.searchsorted(lc, np.round(fc, 6)), 0, len(lc) - 1)
        im = np.clip(np.searchsorted(lm, np.round(fm, 6)), 0, len(lm) - 1)

        varies, diag = activity_diagnostics(U, units)
        notes += diag
        busy_c = (U[:, ~is_mem] > 0).any(axis=1) if (~is_mem).any() else np.zeros(len(P), bool)
        busy_m = (U[:, is_mem] > 0).any(axis=1) if is_mem.any() else np.zeros(len(P), bool)
        multi_c, multi_m = len(lc) > 1, len(lm) > 1
        # with one level in a domain its voltage and clock factors are 1: keep one constant per collinear group
        terms: list[str] = ["const_core_w"]
        if multi_c:
            terms.append("static_core_w")
        if multi_m:
            terms += ["static_mem_w", "const_mem_w"]
        elif multi_c:
            terms.append("static_mem_w")  # one memory level: the voltage-independent constant power
        if self.active_terms and 0 < busy_c.sum() < len(P):
            terms.append("active_core_w")
        if (self.active_terms and 0 < busy_m.sum() < len(P)
                and not (not multi_c and not multi_m and np.array_equal(busy_m, busy_c))):
            terms.append("active_mem_w")
        temp, temp_ref = None, None
        if "temp_c" in data.columns:
            t = data["temp_c"].to_numpy(float)
            if np.isnan(t).any():
                notes.append(f"temp_c missing in {int(np.isnan(t).sum())} rows: temperature not used in the fit")
            elif np.ptp(t) > 0.1:
                temp, temp_ref = t, float(t.min())
                terms.append("leak_core_w_per_c")
        terms = [t for t in CONST_TERMS if t in terms]  # canonical order

        shapes: list[str] = []
        fixed_shape: dict[str, float] = {}
        if POW in forms:
            shapes.append("ar_exponent")
        if BOXCOX in forms:
            shapes += ["ar_bc_a", "ar_bc_lambda"]
        if TPOW in forms:
            shapes.append("ar_tp_lambda")
            if self.ar_threshold is None:
                shapes.append("ar_tp_threshold")
            else:
                fixed_shape["ar_tp_threshold"] = float(self.ar_threshold)
        if LOG in forms:
            if self.fit_log_a:
                shapes.append("ar_log_a")
            else:
                fixed_shape["ar_log_a"] = IPP_A
            fixed_shape["ar_log_b"] = IPP_B
        if ac is not None:
            shapes.append("mem_sat")
        wt = np.ones_like(P) if self.weighting == "absolute" else 1.0 / P
        d = Design(Rows(fc, fm, U, temp, ac, am), is_mem, forms, f0c, f0m, temp_ref, terms, np.flatnonzero(varies))
        prob = Problem(P, wt, d, shapes, fixed_shape, ic, im, lc, lm, rc, rm, _cum_map(len(lc), rc),
                       _cum_map(len(lm), rm), rows=data)
        if multi_c and multi_m and self.core_voltage != "shared":
            # a curve per memory level is determined only where that level was measured at the core levels
            have = np.zeros((len(lc), len(lm)), dtype=bool)
            have[ic, im] = True
            if have.all():
                prob.ncg = len(lm)
            elif self.core_voltage == "per_mem":
                prob.ncg = len(lm)
                notes.append(f"core voltage per memory level: {int((~have).sum())} of {have.size} (core, memory) "
                             "clock pairs have no rows; those voltages are held only by the monotonicity bounds")
        n_free = prob.nlin + prob.nshape + prob.nu_c + prob.nu_m
        if len(P) <= n_free:
            raise FitError(f"{src}: {len(P)} rows cannot determine {n_free} parameters")
        meta = {"act_info": act_info, "temp_ref_c": temp_ref, "n_workloads": int(data["workload"].nunique()),
                "units": units, "varies": varies}
        return prob, meta, notes

    def _activity_clocks(self, data: pd.DataFrame, units: list[str], is_mem: np.ndarray, lc: np.ndarray,
                         lm: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None, dict[str, Any] | None]:
        """Clocks at which the activities were measured (memory-bound rescaling): (core MHz per row, memory
        MHz per row, the structure's ``activity_clocks``), or Nones."""
        setting = self.activity_clocks
        if setting == "off" or not is_mem.any():  # no memory units: nothing can become memory bound
            return None, None, None
        if {"ref_core_mhz", "ref_mem_mhz"} <= set(data.columns) and data[["ref_core_mhz", "ref_mem_mhz"]].notna().all().all():
            ac, am = data["ref_core_mhz"].to_numpy(float), data["ref_mem_mhz"].to_numpy(float)
            return ac, am, {"core_mhz": float(np.median(ac)), "mem_mhz": float(np.median(am)),
                            "source": "table columns ref_core_mhz/ref_mem_mhz"}
        if isinstance(setting, (tuple, list)):
            info = {"core_mhz": float(setting[0]), "mem_mhz": float(setting[1]), "source": "given"}
        elif _activities_repeat(data, [ACT_PREFIX + u for u in units]):
            info = {"core_mhz": float(lc[-1]), "mem_mhz": float(lm[-1]),
                    "source": "assumed: activities repeat across clocks, taken as measured at the highest clocks"}
        else:
            return None, None, None
        return np.full(len(data), info["core_mhz"]), np.full(len(data), info["mem_mhz"]), info

    def _reference_clocks(self, data: pd.DataFrame, act_info: dict[str, Any] | None, lc: np.ndarray,
                          lm: np.ndarray, src: str) -> tuple[float, float]:
        """The clock levels where V = 1 (module docstring); predictions do not depend on the choice, only
        the normalisation of the coefficients does."""
        def level(lv: np.ndarray, f: float, default: float) -> float:
            hit = np.isclose(lv, f)
            return float(lv[hit][0]) if hit.any() else default

        want = None
        if act_info is not None:
            want = (act_info["core_mhz"], act_info["mem_mhz"])
        elif {"ref_core_mhz", "ref_mem_mhz"} <= set(data.columns) and data[["ref_core_mhz", "ref_mem_mhz"]].notna().all().all():
            want = (float(data["ref_core_mhz"].median()), float(data["ref_mem_mhz"].median()))
        if self.ref_clocks is not None:
            for dom, f, lv in (("core", self.ref_clocks[0], lc), ("memory", self.ref_clocks[1], lm)):
                if not np.isclose(lv, f).any():
                    raise BadInputError(f"{src}: reference {dom} clock {f:g} MHz is not a clock level of the table "
                                        f"({', '.join(f'{x:g}' for x in lv)})")
            want = self.ref_clocks
        f0c, f0m = float(lc[-1]), float(lm[-1])
        return (f0c, f0m) if want is None else (level(lc, want[0], f0c), level(lm, want[1], f0m))

    def _section(self, prob: Problem, meta: dict, notes: list[str], x: np.ndarray, cov: np.ndarray,
                 dead: np.ndarray, nfev: int, msg: str, elapsed: float, jack: np.ndarray | None) -> Section:
        """The fitted section: parameters with standard errors (voltages by the delta method through
        ``V = exp(A u + offset)``), structure, statistics and the statistical and total covariances."""
        warns = list(notes)
        params: list[Param] = []
        lo, hi = prob.bounds()
        lin, _, vc, vm = prob.split(x)
        # d(reported parameter) / d(raw parameter vector): the covariance of the reported parameters is
        # grad @ cov @ grad.T (identity rows for coefficients and shapes, the delta method for voltages)
        grads: list[np.ndarray] = []
        wscale = max(1.0, float(np.max(np.abs(lin)))) if len(lin) else 1.0

        def add(name: str, idx: int, unit: str, desc: str) -> None:
            se = None if dead[idx] else stderr_of(cov[idx, idx])
            v = float(max(x[idx], lo[idx]))
            if idx < prob.nlin and v - lo[idx] <= 1e-6 * wscale:
                v = float(lo[idx])  # the solver stops a hair inside the bound: report the bound
            p = Param(name, v, unit, float(lo[idx]), float(hi[idx]), True, None, se, desc)
            grads.append(np.eye(len(x))[idx])
            if dead[idx]:
                warns.append(f"{name}: the data do not depend on this parameter (not identifiable); no standard error")
            elif p.at_bound():
                warns.append(f"{name}: at its {p.at_bound()} bound ({p.value:g}); its standard error describes the "
                             "local curvature only")
            params.append(p)

        d = prob.d
        for i, t in enumerate(d.terms):
            add(t, i, TERM_UNIT[t], TERM_DOC[t])
        col = len(d.terms)
        for j, u in enumerate(meta["units"]):
            dom = "memory" if d.is_mem[j] else "core"
            if meta["varies"][j]:
                add(names.unit_weight(u), col, "W", f"dynamic power of {u} at full activity, reference clocks ({dom} domain)")
                col += 1
            else:
                params.append(Param(names.unit_weight(u), 0.0, "W", 0.0, math.inf, False, None, None,
                                    f"{u} never varies in the fitted table: fixed at 0"))
        for k, s in enumerate(prob.shapes):
            add(s, prob.nlin + k, SHAPES[s][3], SHAPES[s][4])
        for s, v in prob.fixed_shape.items():
            desc = ("IPP constant (paper 004)" if s.startswith("ar_log") else
                    "activity below which a unit draws no dynamic power (fixed, not fitted)")
            params.append(Param(s, float(v), "1", -math.inf, math.inf, False, None, None, desc))
        b = prob.nlin + prob.nshape
        nc = len(prob.lc) - 1
        curves = []  # (domain, levels, voltages, parameter indices, A with the offset column or not, ref, where, names)
        k_off = b + prob.ncg * nc
        for g in range(prob.ncg):
            idx = list(range(b + g * nc, b + (g + 1) * nc))
            A = prob.Ac
            if g != prob.rg:
                idx.append(k_off)
                k_off += 1
                A = np.hstack([A, np.ones((len(prob.lc), 1))])
            level_names = [names.core_voltage_level(f, None if g == prob.rg else prob.lm[g]) for f in prob.lc]
            curves.append((CORE, prob.lc, vc[:, g], idx, A, prob.rc if g == prob.rg else -1,
                           "" if prob.ncg == 1 else f" (memory clock {prob.lm[g]:g} MHz)", level_names))
        curves.append((MEM, prob.lm, vm, list(range(b + prob.nu_c, b + prob.nu_c + prob.nu_m)), prob.Am, prob.rm, "",
                       [names.voltage_level(MEM, f) for f in prob.lm]))
        for dom, levels, v, idx, A, ref, where, level_names in curves:
            sub = cov[np.ix_(idx, idx)] if idx else np.zeros((0, 0))
            D = v[:, None] * A
            cv = D @ sub @ D.T if idx else np.zeros((len(levels), len(levels)))
            for i, f in enumerate(levels):
                if i == ref:
                    params.append(Param(level_names[i], 1.0, "V/Vref", 0.0, math.inf, False, None, None,
                                        f"relative {dom} voltage at the reference clock {f:g} MHz"))
                    continue
                se = stderr_of(cv[i, i]) if np.all(np.isfinite(cv[i])) else None
                params.append(Param(level_names[i], float(v[i]), "V/Vref", 0.0, math.inf, True, None, se,
                                    f"relative {dom} voltage at {f:g} MHz{where} (latent, monotone in clock)"))
                g = np.zeros(len(x))
                g[idx] = D[i]
                grads.append(g)
        m = errors(prob.P, prob.predict(x))
        structure: dict[str, Any] = {
            "units": [{"name": u, "domain": MEM if mem else CORE, "ar_form": f}
                      for u, mem, f in zip(meta["units"], d.is_mem, d.forms)],
            "ref_clocks": {"core_mhz": d.f0c, "mem_mhz": d.f0m},
            "voltage": {dom: {"mhz": [float(f) for f in lv], "params": [names.voltage_level(dom, f) for f in lv]}
                        for dom, lv in ((CORE, prob.lc), (MEM, prob.lm))},
            "activity_clocks": meta["act_info"],
            "temp_ref_c": meta["temp_ref_c"],
        }
        if prob.ncg > 1:
            structure["voltage"][CORE]["per_mem"] = {"mem_mhz": [float(f) for f in prob.lm],
                                                     "params": [c[-1] for c in curves if c[0] == CORE]}
        structure["outside_fitted_clocks"] = "voltage interpolated linearly between levels, held at the end value outside"
        stats: dict[str, Any] = {
            "n_samples": int(len(prob.P)), "n_workloads": meta["n_workloads"],
            "rmse_w": m.rmse, "mape_pct": m.mape_pct, "r2": m.r2, "max_abs_pct": m.max_abs_pct,
            "n_parameters": int(len(x)), "method": self.method, "weighting": self.weighting, "nfev": int(nfev),
            "solver_message": msg, "fit_time_s": round(float(elapsed), 4),
        }
        if warns:
            stats["warnings"] = warns
        G = np.array(grads)
        full = G @ np.nan_to_num(cov) @ G.T
        unknown = (np.abs(G[:, dead]) > 0).any(axis=1) if dead.any() else np.zeros(len(G), bool)
        full[unknown, :] = np.nan
        full[:, unknown] = np.nan
        names_v = tuple(p.name for p in params if p.vary)
        stat = Covariance(names_v, full)
        total = None
        if jack is not None and np.all(np.isfinite(jack)):
            total = total_covariance(stat, G @ jack @ G.T)
            total[unknown, :] = np.nan
            total[:, unknown] = np.nan
            apply_total(params, names_v, total)
            total = Covariance(names_v, total)
        return Section(MODEL_NAME, params, structure, stats, stat, covariance_total=total)


def _solve_alternating(prob: Problem, x0: np.ndarray, max_iter: int = 500, rtol: float = 5e-4,
                       patience: int = 5) -> tuple[np.ndarray, int, str]:
    """gpmTOOL's scheme: NNLS for the coefficients, then bounded least squares for voltages and shapes."""
    lo, hi = prob.bounds()
    x = np.clip(x0, lo, hi)
    a = prob.nlin
    calm = 0
    nfev = 0
    for it in range(max_iter):
        x_old = x.copy()
        _, shape, vc, vm = prob.split(x)
        X = columns(prob.d, shape, *prob.row_volts(vc, vm)) * prob.wt[:, None]
        x[:a], _ = nnls(X, prob.P * prob.wt, maxiter=50 * X.shape[1])
        lin = x[:a].copy()

        def r_nl(z: np.ndarray) -> np.ndarray:
            return prob.resid(np.concatenate([lin, z]))

        def j_nl(z: np.ndarray) -> np.ndarray:
            return prob.jac(np.concatenate([lin, z]))[:, a:]

        z0 = np.clip(x[a:], lo[a:] + 1e-12, hi[a:] - 1e-12)
        s = solve(r_nl, z0, lo[a:], hi[a:], jac=j_nl, max_nfev=50, rows=len(prob.P))
        nfev += int(s.nfev) + 1
        x[a:] = s.x
        change = np.max(np.abs(x - x_old) / np.maximum(np.abs(x_old), 1e-6))
        calm = calm + 1 if change < rtol else 0
        if calm >= patience:
            return x, nfev, f"converged after {it + 1} alternations"
    return x, nfev, f"stopped after {max_iter} alternations without converging"
