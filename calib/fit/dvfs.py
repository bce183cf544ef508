"""Fit the DVFS power model (:mod:`calib.model.dvfs`) to a samples table with several clock configurations.

Method (default ``"joint"``): one bounded, weighted least-squares problem over every parameter at once
(:func:`scipy.optimize.least_squares`, trust-region reflective) with an analytic Jacobian for the
linear coefficients and the voltages, and finite differences for the few shape parameters of the
access-rate transforms, the memory-bound scaling and the static voltage exponent. Constraints are
bounds only:

* W coefficients >= 0 (non-negative least squares, as gpmTOOL); ``total_*_w`` may take either sign
  with ``total_terms="free"``;
* voltages are ``V = exp(A @ u)`` with ``u >= 0`` and ``A`` the cumulative map from the reference level
  outwards, so every voltage is positive, 1 at the reference clock and non-decreasing in clock
  (gpmTOOL forces the same monotonicity with explicit constraints); with a core curve per memory level,
  each curve other than the reference memory level's has a free log-offset in [-2, 2] at the
  reference core level;
* ``ar_tp_lambda`` in [0.01, 1], ``ar_tp_threshold`` in [0, 0.5] (when fitted), ``ar_bc_a`` in [0.01, 1],
  ``ar_bc_lambda`` in [0, 1], ``ar_exponent`` in [0.05, 1], ``ar_log_a`` in [0.01, 1] (concave transforms
  only), ``mem_sat`` in [0.05, 50] (50: practically never memory bound), ``static_v_exp`` in [1, 6].

Model choices (the figures behind each, from cross-validation by microbenchmark name on the Titan X
table and the 10 development applications, are in tests/benchmarks/titanx_results.md, not here):

* ``core_voltage="auto"`` (default): one monotone core voltage curve per memory level when every (core,
  memory) pair was measured, else one shared curve (gpmTOOL's model; ``"shared"``); ``"per_mem"`` forces
  the curves, ``"per_mem_anchored"`` also makes each 1 at the reference core clock. Virtual-GPU sessions
  measure the default core clock at the default memory clock only, so they keep the shared curve;
* access-rate transform ``"tpow"`` with the threshold fixed at ``DEFAULT_THRESHOLD`` (chosen with the
  development applications: the microbenchmarks alone cannot place it); ``ar_threshold=None`` fits it;
* options cross-validation did not support as defaults: ``static_exp``, ``total_terms``,
  ``ar_shape="per_unit"``, robust ``loss`` with ``loss_scale``, ``weighting="relative_workload"``.

Reference clocks (V = 1, and the clocks the W coefficients refer to): ``ref_clocks`` when given, else
the clocks the activities were measured at when those are levels of the table (gpmTOOL's default
clocks, from the ``ref_core_mhz``/``ref_mem_mhz`` columns), else the highest levels. Activity clocks
(memory-bound rescaling, :mod:`calib.model.dvfs`): the ``ref_`` columns; else, when every workload
repeats the same activities at all its clock configurations (activities measured once and copied),
the highest clocks are assumed; else none (activities measured at each row's clocks). On the Titan X
table, assuming the highest clocks instead of the true default clocks changes no figure noticeably
(the rescaling matters at the 810 MHz memory clock, where every default-clock choice agrees).

``method="alternating"`` reproduces gpmTOOL's scheme instead: non-negative least squares
(:func:`scipy.optimize.nnls`) for the W coefficients with voltages fixed, then bounded least squares
for the voltages and shapes with the coefficients fixed, until no parameter changes by more than 0.05 %
for 5 iterations. Both reach the same optimum on the Guerreiro et al. tables; the joint solve is
several times faster (tests/benchmarks/titanx_results.md has the measurement), hence the default.

Residuals are relative, ``(P_pred - P) / P`` (``weighting="relative"``): the fit minimises the squared
percentage error, which matches the MAPE it is judged by and keeps 40 W idle rows as important as
250 W rows. ``weighting="absolute"`` gives gpmTOOL's unweighted residuals; ``"relative_workload"``
also divides by the square root of the workload's row count (names covering several microbenchmarks
stop dominating).

Standard errors come from the Jacobian at the solution, ``cov = pinv(J^T J) * SSR / (n - p)``
(columns scaled first), for every fitted parameter, also those at a bound (then they describe the
local curvature only and a warning says the value sits on its bound). Voltages get theirs from the
increments by the delta method. A parameter the data do not touch has no standard error and a warning.

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
from scipy.optimize import least_squares, nnls

from calib.core import names
from calib.core.errors import BadInputError, FitError
from calib.model.arfunc import IPP_A, IPP_B, LOG
from calib.model.dvfs import (
    BOXCOX,
    CONST_TERMS,
    CORE,
    FORMS,
    MEM,
    MODEL_NAME,
    POW,
    SHAPE_NAMES,
    TPOW,
    domain_totals,
    levels_of,
    scaled_activities,
    total_form,
    transform,
    unit_shape,
)
from calib.core.metrics import errors
from calib.core.params import Covariance, Param, Section
from calib.fit.uncertainty import (
    IDLE_GROUP,
    apply_total,
    group_jackknife,
    prediction_stats,
    row_groups,
    total_covariance,
    workload_groups,
)
from calib.fit.base import Constraint, Estimator, either, mapping_of, names_of, number, optional, options
from calib.core.samples import ACT_PREFIX, act_units
from calib.core.units import in_memory_domain

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
    "static_v_exp": (2.0, 1.0, 6.0, "1", ("exponent of the core static power in the core voltage, Vc**k (leakage "
                                          "current grows with voltage)")),
}
TERM_DOC = {
    "static_core_w": "static power of the core domain at the reference voltage",
    "static_mem_w": "static power of the memory domain at the reference voltage",
    "const_core_w": "constant dynamic power of the core domain at the reference clock",
    "const_mem_w": "constant dynamic power of the memory domain at the reference clock",
    "active_core_w": "extra core-domain power while any core unit is active, at the reference clock",
    "active_mem_w": "extra memory-domain power while any memory unit is active, at the reference clock",
    "leak_core_w_per_c": "leakage increase per degC above temp_ref_c, at the reference core voltage",
    "total_core_w": "core-domain power following the domain's total activity (sum of its units, capped at 1)",
    "total_mem_w": "memory-domain power following the domain's total activity (sum of its units, capped at 1)",
}
TERM_UNIT = {n: ("W/C" if n.endswith("_per_c") else "W") for n in CONST_TERMS}
V_MAX_STEP = 2.0  # bound on the log-voltage increment between neighbouring levels (a factor e^2)
WEIGHTINGS = ("relative", "absolute", "relative_workload")
LOSSES = ("linear", "soft_l1", "huber", "cauchy")
#: core voltage curves: "auto" = one per memory level when every (core, memory) clock pair was measured
CORE_VOLTAGES = ("auto", "per_mem", "per_mem_anchored", "shared")


def shape_spec(name: str) -> tuple:
    """(initial value, min, max, unit, description) of a shape parameter, also a unit's own ``<name>_<unit>``."""
    if name in SHAPES:
        return SHAPES[name]
    for base in SHAPE_NAMES:
        if name.startswith(base + "_") and base in SHAPES:
            init, lo, hi, unit, desc = SHAPES[base]
            return init, lo, hi, unit, f"{desc}, unit {name[len(base) + 1:]}"
    raise KeyError(name)


@dataclass
class Problem:
    """Everything the residual function needs, precomputed from the table."""

    P: np.ndarray
    wt: np.ndarray
    fc: np.ndarray
    fm: np.ndarray
    U: np.ndarray
    units: list[str]
    forms: list[str]
    is_mem: np.ndarray
    vary_unit: np.ndarray
    ic: np.ndarray
    im: np.ndarray
    lc: np.ndarray
    lm: np.ndarray
    rc: int
    rm: int
    Ac: np.ndarray
    Am: np.ndarray
    f0c: float
    f0m: float
    terms: list[str]
    shapes: list[str]
    ind_c: np.ndarray
    ind_m: np.ndarray
    dT: np.ndarray | None
    ac: np.ndarray | None
    am: np.ndarray | None
    fixed_shape: dict[str, float] = field(default_factory=dict)
    ridge: float = 0.0        # weight of the penalty on unit weights (fraction of power per W)
    free_sign: tuple[str, ...] = ()   # linear terms without the >= 0 bound
    ncg: int = 1              # core voltage curves: 1, or one per memory level ("per_mem")
    core_offsets: bool = True  # curves other than the reference one have a free value at the reference core level
    rows: pd.DataFrame | None = None  # the table rows of P (for grouping them: workload, kernel, role)

    @property
    def n_off(self) -> int:
        """Number of core-curve offsets in the parameter vector."""
        return self.ncg - 1 if self.core_offsets else 0

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
        return len(self.terms) + int(self.vary_unit.sum())

    @property
    def nshape(self) -> int:
        return len(self.shapes)

    @property
    def nu_c(self) -> int:
        # per curve: the log-voltage increments between core levels; every curve but the reference one
        # also has an offset (its log-voltage at the reference core level)
        return self.ncg * (len(self.lc) - 1) + self.n_off

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

    @property
    def nu_m(self) -> int:
        return len(self.lm) - 1

    def split(self, x: np.ndarray) -> tuple[np.ndarray, dict[str, float], np.ndarray, np.ndarray]:
        """(linear coefficients, shape values, core voltages (levels x curves), memory level voltages)."""
        a, b = self.nlin, self.nlin + self.nshape
        shape = dict(self.fixed_shape)
        shape.update(zip(self.shapes, x[a:b]))
        vc = self.core_table(x[b:b + self.nu_c])
        vm = np.exp(self.Am @ x[b + self.nu_c:])
        return x[:a], shape, vc, vm

    def design(self, shape: Mapping[str, float], Vc: np.ndarray, Vm: np.ndarray) -> np.ndarray:
        """Design matrix (rows x linear coefficients) at given shapes and per-row voltages."""
        kc = Vc * Vc * (self.fc / self.f0c)
        km = Vm * Vm * (self.fm / self.f0m)
        cols = []
        for t in self.terms:
            if t.startswith("total_"):
                continue  # appended after the transforms (below), in the same order as self.terms
            cols.append({"static_core_w": lambda: Vc ** shape.get("static_v_exp", 1.0), "static_mem_w": lambda: Vm,
                         "const_core_w": lambda: kc,
                         "const_mem_w": lambda: km, "active_core_w": lambda: kc * self.ind_c,
                         "active_mem_w": lambda: km * self.ind_m, "leak_core_w_per_c": lambda: Vc * self.dT}[t]())
        G, tot = self.transformed(shape)
        for t in self.terms:
            if t.startswith("total_"):
                cols.append(tot[t] * (kc if t == "total_core_w" else km))
        for j in np.flatnonzero(self.vary_unit):
            cols.append(G[:, j] * (km if self.is_mem[j] else kc))
        return np.column_stack(cols)

    def transformed(self, shape: Mapping[str, float]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Transformed activities (rows x units) and the transformed domain totals of the total_* terms."""
        U = self.U
        if self.ac is not None and "mem_sat" in shape:
            U = scaled_activities(U, self.is_mem, self.fc, self.fm, self.ac, self.am, shape["mem_sat"])
        G = np.empty_like(U)
        for j, f in enumerate(self.forms):
            G[:, j] = transform(U[:, j], f, unit_shape(shape, self.units[j]))
        tot: dict[str, np.ndarray] = {}
        if "total_core_w" in self.terms or "total_mem_w" in self.terms:
            tc, tm = domain_totals(U, self.is_mem)
            tf = total_form(self.forms)
            tot = {"total_core_w": transform(tc, tf, shape), "total_mem_w": transform(tm, tf, shape)}
        return G, tot

    def predict(self, x: np.ndarray) -> np.ndarray:
        lin, shape, vc, vm = self.split(x)
        return self.design(shape, *self.row_volts(vc, vm)) @ lin

    def resid(self, x: np.ndarray) -> np.ndarray:
        r = (self.predict(x) - self.P) * self.wt
        if self.ridge:
            r = np.concatenate([r, self.ridge * x[len(self.terms):self.nlin]])
        return r

    def jac(self, x: np.ndarray) -> np.ndarray:
        lin, shape, vcl, vml = self.split(x)
        Vc, Vm = self.row_volts(vcl, vml)
        X = self.design(shape, Vc, Vm)
        # d P / d V per row: static terms are linear in V, dynamic ones quadratic
        dyn_c = np.zeros(len(self.P))
        dyn_m = np.zeros(len(self.P))
        st_c = np.zeros(len(self.P))
        st_m = np.zeros(len(self.P))
        kc = Vc * Vc * (self.fc / self.f0c)
        km = Vm * Vm * (self.fm / self.f0m)
        for i, t in enumerate(self.terms):
            if t == "static_core_w":
                st_c += lin[i] * X[:, i] / Vc * shape.get("static_v_exp", 1.0)
            elif t == "leak_core_w_per_c":
                st_c += lin[i] * X[:, i] / Vc
            elif t == "static_mem_w":
                st_m += lin[i] * X[:, i] / Vm
            elif t in ("const_core_w", "active_core_w", "total_core_w"):
                dyn_c += lin[i] * X[:, i]
            else:
                dyn_m += lin[i] * X[:, i]
        for k, j in enumerate(np.flatnonzero(self.vary_unit)):
            col = len(self.terms) + k
            if self.is_mem[j]:
                dyn_m += lin[col] * X[:, col]
            else:
                dyn_c += lin[col] * X[:, col]
        dPdVc = st_c + 2.0 * dyn_c / np.where(Vc > 0, Vc, 1.0)
        dPdVm = st_m + 2.0 * dyn_m / np.where(Vm > 0, Vm, 1.0)
        del kc, km
        base_c = dPdVc * Vc  # d P / d log Vc
        if self.ncg == 1:
            Jc = base_c[:, None] * self.Ac[self.ic]
        else:
            n = len(self.lc) - 1
            Jc = np.zeros((len(self.P), self.nu_c))
            Ar = self.Ac[self.ic]
            k = self.ncg * n
            for g in range(self.ncg):
                m = self.gc == g
                Jc[m, g * n:(g + 1) * n] = base_c[m, None] * Ar[m]
                if g != self.rg and self.n_off:
                    Jc[m, k] = base_c[m]
                    k += 1
        Jm = dPdVm[:, None] * (vml[:, None] * self.Am)[self.im]
        Js = np.zeros((len(self.P), self.nshape))
        if self.nshape:
            base = X @ lin
            a = self.nlin
            for k in range(self.nshape):
                h = 1e-6 * max(1.0, abs(x[a + k]))
                xp = x.copy()
                xp[a + k] += h
                _, sp, _, _ = self.split(xp)
                Js[:, k] = (self.design(sp, Vc, Vm) @ lin - base) / h
        J = np.hstack([X, Js, Jc, Jm]) * self.wt[:, None]
        if self.ridge:
            R = np.zeros((self.nlin - len(self.terms), J.shape[1]))
            R[:, len(self.terms):self.nlin] = np.eye(self.nlin - len(self.terms)) * self.ridge
            J = np.vstack([J, R])
        return J


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


def _forms_for(units: list[str], ar_form: str, ar_forms: Mapping[str, str] | None) -> list[str]:
    extra = set(ar_forms or {}) - set(units)
    if extra:
        raise BadInputError(f"access-rate form given for unknown unit(s): {', '.join(sorted(extra))} "
                            f"(units in the table: {', '.join(units)})")
    # the forms themselves were checked with the settings (DvfsPowerFitter.constraints)
    return [(ar_forms or {}).get(u, ar_form) for u in units]


def _prepare(df: pd.DataFrame, mem_units: set[str] | None, source: str, ar_form: str,
             ar_forms: Mapping[str, str] | None, activity_clocks: Any, weighting: str,
             fit_log_a: bool, active_terms: bool = True, ridge: float = 0.0,
             ref_clocks: tuple[float, float] | None = None,
             ar_threshold: float | None = None, ar_shape: str = "shared",
             total_terms: bool | str = False, core_voltage: str = "auto",
             static_exp: bool = False) -> tuple[Problem, dict[str, Any], list[str]]:
    src = source or "<table>"
    notes: list[str] = []
    if "power_w" not in df.columns:
        raise BadInputError(f"{src}: required column 'power_w' missing (needed to fit)")
    units = act_units(df)
    if not units:
        raise BadInputError(f"{src}: no activity columns (act_<unit>)")
    if mem_units is not None:
        unknown = sorted(set(mem_units) - set(units))
        if unknown:
            raise BadInputError(f"{src}: memory unit(s) {', '.join(unknown)} not in the table "
                                f"(units: {', '.join(units)})")
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
        raise BadInputError(f"{src}: row {r + 1}, column 'act_{units[j]}': activity {float(U[r, j]):g} outside [0, 1]")
    U = np.clip(U, 0.0, 1.0)
    fc = data["core_mhz"].to_numpy(float)
    fm = data["mem_mhz"].to_numpy(float)
    lc, lm = levels_of(fc), levels_of(fm)
    is_mem = np.array([in_memory_domain(u, mem_units) for u in units], dtype=bool)
    forms = _forms_for(units, ar_form, ar_forms)

    # clocks at which the activities were measured (memory-bound scaling)
    ac = am = None
    act_info: dict[str, Any] | None = None
    if activity_clocks not in (None, "off", False):
        if {"ref_core_mhz", "ref_mem_mhz"} <= set(data.columns) and data[["ref_core_mhz", "ref_mem_mhz"]].notna().all().all():
            ac = data["ref_core_mhz"].to_numpy(float)
            am = data["ref_mem_mhz"].to_numpy(float)
            act_info = {"core_mhz": float(np.median(ac)), "mem_mhz": float(np.median(am)),
                        "source": "table columns ref_core_mhz/ref_mem_mhz"}
        elif isinstance(activity_clocks, (tuple, list)):
            act_info = {"core_mhz": float(activity_clocks[0]), "mem_mhz": float(activity_clocks[1]), "source": "given"}
        elif activity_clocks == "auto" and _activities_repeat(data, [ACT_PREFIX + u for u in units]):
            act_info = {"core_mhz": float(lc[-1]), "mem_mhz": float(lm[-1]),
                        "source": "assumed: activities repeat across clocks, taken as measured at the highest clocks"}
        if act_info is not None and ac is None:
            ac = np.full(len(P), act_info["core_mhz"])
            am = np.full(len(P), act_info["mem_mhz"])
        if act_info is not None and not is_mem.any():
            act_info, ac, am = None, None, None  # no memory units: nothing can become memory bound
    # reference clocks (V = 1): the activity clocks (or the table's ref_ columns) when they are fitted
    # levels, else the highest levels; predictions do not depend on this choice, only the normalisation
    f0c, f0m = float(lc[-1]), float(lm[-1])
    want = None
    if act_info is not None:
        want = (act_info["core_mhz"], act_info["mem_mhz"])
    elif {"ref_core_mhz", "ref_mem_mhz"} <= set(data.columns) and data[["ref_core_mhz", "ref_mem_mhz"]].notna().all().all():
        want = (float(data["ref_core_mhz"].median()), float(data["ref_mem_mhz"].median()))
    if want is not None:
        if np.isclose(lc, want[0]).any():
            f0c = float(lc[np.isclose(lc, want[0])][0])
        if np.isclose(lm, want[1]).any():
            f0m = float(lm[np.isclose(lm, want[1])][0])
    if ref_clocks is not None:
        for dom, want, lv in (("core", ref_clocks[0], lc), ("memory", ref_clocks[1], lm)):
            if not np.isclose(lv, want).any():
                raise BadInputError(f"{src}: reference {dom} clock {want:g} MHz is not a clock level of the table "
                                    f"({', '.join(f'{x:g}' for x in lv)})")
        f0c = float(lc[np.isclose(lc, ref_clocks[0])][0])
        f0m = float(lm[np.isclose(lm, ref_clocks[1])][0])
    rc, rm = int(np.flatnonzero(np.isclose(lc, f0c))[0]), int(np.flatnonzero(np.isclose(lm, f0m))[0])
    ic = np.clip(np.searchsorted(lc, np.round(fc, 6)), 0, len(lc) - 1)
    im = np.clip(np.searchsorted(lm, np.round(fm, 6)), 0, len(lm) - 1)

    varies, diag = activity_diagnostics(U, units)
    for m in diag:
        notes.append(m)
    ind_c = (U[:, ~is_mem] > 0).any(axis=1).astype(float) if (~is_mem).any() else np.zeros(len(P))
    ind_m = (U[:, is_mem] > 0).any(axis=1).astype(float) if is_mem.any() else np.zeros(len(P))
    multi_c, multi_m = len(lc) > 1, len(lm) > 1
    # with one level in a domain its voltage and clock factors are 1: keep one constant per collinear group
    terms: list[str] = ["const_core_w"]
    if multi_c:
        terms.append("static_core_w")
    if multi_m:
        terms += ["static_mem_w", "const_mem_w"]
    elif multi_c:
        terms.append("static_mem_w")  # one memory level: the voltage-independent constant power
    if active_terms and 0 < ind_c.sum() < len(P):
        terms.append("active_core_w")
    if active_terms and 0 < ind_m.sum() < len(P) and not (not multi_c and not multi_m and np.array_equal(ind_m, ind_c)):
        terms.append("active_mem_w")
    dT = None
    temp_ref = None
    if "temp_c" in data.columns:
        t = data["temp_c"].to_numpy(float)
        if np.isnan(t).any():
            notes.append(f"temp_c missing in {int(np.isnan(t).sum())} rows: temperature not used in the fit")
        elif np.ptp(t) > 0.1:
            temp_ref = float(t.min())
            dT = t - temp_ref
            terms.append("leak_core_w_per_c")
    free_sign: tuple[str, ...] = ()
    if total_terms:
        # a domain's total-activity term needs two varying units in it (else it is that unit's own term)
        for dom, m in (("core", ~is_mem), ("mem", is_mem)):
            if int((varies & m).sum()) >= 2:
                terms.append(f"total_{dom}_w")
        if total_terms == "free":
            free_sign = ("total_core_w", "total_mem_w")
    terms = [t for t in CONST_TERMS if t in terms]  # canonical order

    shapes: list[str] = []
    fixed_shape: dict[str, float] = {}
    if POW in forms:
        shapes.append("ar_exponent")
    if BOXCOX in forms:
        shapes += ["ar_bc_a", "ar_bc_lambda"]
    if TPOW in forms and ar_shape == "per_unit":
        shapes += [f"ar_tp_lambda_{u}" for u, f, v in zip(units, forms, varies) if f == TPOW and v]
        if any(t.startswith("total_") for t in terms):
            shapes.append("ar_tp_lambda")
        else:
            fixed_shape["ar_tp_lambda"] = 1.0  # unused: every varying unit has its own
    elif TPOW in forms:
        shapes.append("ar_tp_lambda")
    if TPOW in forms:
        if ar_threshold is None:
            shapes.append("ar_tp_threshold")
        else:
            fixed_shape["ar_tp_threshold"] = float(ar_threshold)
    if LOG in forms:
        if fit_log_a:
            shapes.append("ar_log_a")
        else:
            fixed_shape["ar_log_a"] = IPP_A
        fixed_shape["ar_log_b"] = IPP_B
    if ac is not None:
        shapes.append("mem_sat")
    if static_exp and "static_core_w" in terms:
        shapes.append("static_v_exp")
    wt = np.ones_like(P) if weighting == "absolute" else 1.0 / P
    if weighting == "relative_workload":
        # every workload name carries the same total weight, whatever its number of rows
        n_w = data.groupby("workload")["workload"].transform("size").to_numpy(float)
        wt = wt * np.sqrt(n_w.mean() / n_w)
    prob = Problem(P, wt, fc, fm, U, units, forms, is_mem, varies, ic, im, lc, lm, rc, rm, _cum_map(len(lc), rc),
                   _cum_map(len(lm), rm), f0c, f0m, terms, shapes, ind_c, ind_m, dT, ac, am, fixed_shape, ridge,
                   free_sign)
    prob.rows = data
    if core_voltage == "per_mem_anchored":  # every curve 1 at the reference core clock
        core_voltage, prob.core_offsets = "per_mem", False
    if multi_c and multi_m and core_voltage != "shared":
        # a curve per memory level is determined only where that level was measured at the core levels
        have = np.zeros((len(lc), len(lm)), dtype=bool)
        have[ic, im] = True
        if have.all():
            prob.ncg = len(lm)
        elif core_voltage == "per_mem":
            prob.ncg = len(lm)
            notes.append(f"core voltage per memory level: {int((~have).sum())} of {have.size} (core, memory) clock "
                         "pairs have no rows; those voltages are held only by the monotonicity bounds")
    n_free = prob.nlin + prob.nshape + prob.nu_c + prob.nu_m
    if len(P) <= n_free:
        raise FitError(f"{src}: {len(P)} rows cannot determine {n_free} parameters")
    meta = {"act_info": act_info, "temp_ref_c": temp_ref, "n_workloads": int(data["workload"].nunique())}
    return prob, meta, notes


def _bounds(prob: Problem) -> tuple[np.ndarray, np.ndarray]:
    lo_lin = np.array([-np.inf if t in prob.free_sign else 0.0 for t in prob.terms]
                      + [0.0] * (prob.nlin - len(prob.terms)))
    n_off = prob.n_off  # curve offsets (log-voltage at the reference core level): either sign
    n_inc = prob.nu_c - n_off
    lo = np.concatenate([lo_lin, [shape_spec(s)[1] for s in prob.shapes], np.zeros(n_inc),
                         np.full(n_off, -V_MAX_STEP), np.zeros(prob.nu_m)])
    hi = np.concatenate([np.full(prob.nlin, np.inf), [shape_spec(s)[2] for s in prob.shapes],
                         np.full(prob.nu_c + prob.nu_m, V_MAX_STEP)])
    return lo, hi


def _start(prob: Problem) -> np.ndarray:
    shape0 = dict(prob.fixed_shape)
    shape0.update({s: shape_spec(s)[0] for s in prob.shapes})
    u0 = np.full(prob.nu_c + prob.nu_m, 0.01)
    u0[prob.nu_c - prob.n_off:prob.nu_c] = 0.0  # curve offsets
    x = np.concatenate([np.zeros(prob.nlin), [shape0[s] for s in prob.shapes], u0])
    _, _, vc, vm = prob.split(x)
    X = prob.design(shape0, *prob.row_volts(vc, vm))
    lin, _ = nnls(X * prob.wt[:, None], prob.P * prob.wt, maxiter=50 * X.shape[1])
    x[:prob.nlin] = np.maximum(lin, 1e-3)  # strictly inside the bounds for trust-region reflective
    return x


def _x_scale(prob: Problem) -> np.ndarray:
    """Typical magnitudes: W coefficients ~10 W, shapes ~0.3, log-voltage steps ~0.05."""
    return np.concatenate([np.full(prob.nlin, 10.0), np.full(prob.nshape, 0.3), np.full(prob.nu_c + prob.nu_m, 0.05)])


def _solve_joint(prob: Problem, x0: np.ndarray, max_nfev: int | None, loss: str = "linear",
                 loss_scale: float = 0.05) -> tuple[np.ndarray, int, str]:
    """Trust-region reflective from the NNLS start with fixed typical variable magnitudes, then a polish
    with the Jacobian's own scaling; the lower cost wins.

    The static/dynamic split and the voltage steps make the problem badly conditioned: with one scaling
    the solver may crawl along a flat valley (hundreds of evaluations) or stop at a slightly worse point.
    The second scaling, started where the first stopped, leaves the result practically independent of
    the reference clocks and the table (costs within 0.5 % of a full two-start solve on the Titan X,
    Titan Xp and HPCA'18 tables at several reference clocks) at half the time of two full solves: the
    singular value decomposition of the Jacobian in every step is most of the fit time.
    """
    lo, hi = _bounds(prob)
    x0 = np.clip(x0, lo, hi)
    opts = dict(bounds=(lo, hi), method="trf", ftol=1e-10, xtol=1e-10, gtol=1e-10, loss=loss, f_scale=loss_scale)
    best = least_squares(prob.resid, x0, jac=prob.jac, x_scale=_x_scale(prob), max_nfev=max_nfev or 150, **opts)
    nfev = int(best.nfev)
    sol = least_squares(prob.resid, best.x, jac=prob.jac, x_scale="jac", max_nfev=max_nfev or 150, **opts)
    nfev += int(sol.nfev)
    if sol.cost > best.cost:
        sol = best
    return sol.x, nfev, str(sol.message)


def _solve_alternating(prob: Problem, x0: np.ndarray, max_iter: int = 500, rtol: float = 5e-4,
                       patience: int = 5) -> tuple[np.ndarray, int, str]:
    """gpmTOOL's scheme: NNLS for the coefficients, then bounded least squares for voltages and shapes."""
    lo, hi = _bounds(prob)
    x = np.clip(x0, lo, hi)
    a = prob.nlin
    calm = 0
    nfev = 0
    for it in range(max_iter):
        x_old = x.copy()
        _, shape, vc, vm = prob.split(x)
        X = prob.design(shape, *prob.row_volts(vc, vm)) * prob.wt[:, None]
        x[:a], _ = nnls(X, prob.P * prob.wt, maxiter=50 * X.shape[1])
        lin = x[:a].copy()

        def r_nl(z: np.ndarray) -> np.ndarray:
            return prob.resid(np.concatenate([lin, z]))

        def j_nl(z: np.ndarray) -> np.ndarray:
            return prob.jac(np.concatenate([lin, z]))[:, a:]

        z0 = np.clip(x[a:], lo[a:] + 1e-12, hi[a:] - 1e-12)
        s = least_squares(r_nl, z0, jac=j_nl, bounds=(lo[a:], hi[a:]), method="trf", x_scale="jac", max_nfev=50)
        nfev += int(s.nfev) + 1
        x[a:] = s.x
        change = np.max(np.abs(x - x_old) / np.maximum(np.abs(x_old), 1e-6))
        calm = calm + 1 if change < rtol else 0
        if calm >= patience:
            return x, nfev, f"converged after {it + 1} alternations"
    return x, nfev, f"stopped after {max_iter} alternations without converging"


def _covariance(prob: Problem, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Covariance of the raw parameter vector (NaN where not identifiable) and the dead-column mask."""
    J = prob.jac(x)
    r = prob.resid(x)
    n, k = J.shape
    redchi = float(r @ r) / max(1, n - k)
    norm = np.linalg.norm(J, axis=0)
    dead = norm <= 1e-14 * max(1.0, norm.max())
    scale = np.where(dead, 1.0, norm)
    Js = J / scale
    cov = np.linalg.pinv(Js.T @ Js, rcond=1e-12, hermitian=True) / np.outer(scale, scale) * redchi
    cov[dead, :] = np.nan
    cov[:, dead] = np.nan
    return cov, dead


def _se(v: float) -> float | None:
    return float(math.sqrt(v)) if v is not None and math.isfinite(v) and v >= 0 else None


def training_rows(df: pd.DataFrame, temperature_correction: Mapping[str, float] | None = None
                  ) -> tuple[pd.DataFrame, dict | None]:
    """The rows a DVFS fit uses, and the temperature correction applied to them.

    Drops held-out, thermal and timing rows and the active-SM sweep (whole-GPU rows only: the model
    has no active-SM term); with a thermal fit's ``{"sigma_w_per_c", "idle_temp_c"}``, brings power to
    the idle temperature (power - sigma x (temp_c - idle_temp_c), IPP eq. 22) and drops ``temp_c``:
    within a campaign the window temperature follows the window's own power, so a leakage slope fitted
    here would soak up dynamic power (seen: ~20 W/C against the thermal fit's ~0.3 W/C); predictions add
    the correction back (:func:`calib.model.dvfs.predict_power`). Returns (rows, the correction applied
    or None).
    """
    from calib.fit.ipp import EXCLUDED_ROLES

    data = df[~df["role"].astype(str).isin(EXCLUDED_ROLES)] if "role" in df.columns else df
    if "active_sms" in data.columns:
        data = data[data["active_sms"].isna() | (data["active_sms"] >= data["active_sms"].max())]
    tc = temperature_correction
    if tc and "temp_c" in data.columns:
        sigma, idle = float(tc["sigma_w_per_c"]), float(tc["idle_temp_c"])
        data = data.copy()
        data["power_w"] = data["power_w"] - sigma * (data["temp_c"].fillna(idle) - idle)
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
    ``ref_clocks``: the clock levels where V = 1. ``weighting``: ``"relative"``, ``"absolute"`` or
    ``"relative_workload"`` residuals. ``active_terms``: allow the active-domain terms. ``ridge``:
    penalty on unit weights (fraction of power per W; 0 = none). ``method``: ``"joint"`` or
    ``"alternating"`` (module docstring). ``core_voltage``: ``"auto"``, ``"per_mem"`` or ``"shared"``
    core voltage curves (module docstring). ``static_exp``: fit the exponent ``k`` of the core static
    power ``Vc**k``. ``total_terms``: add the per-domain total-activity terms (True: >= 0, ``"free"``:
    either sign). ``ar_shape``: ``"shared"`` transform power or ``"per_unit"``. ``loss``, ``loss_scale``:
    robust loss of :func:`scipy.optimize.least_squares` on the weighted residuals (joint method only;
    standard errors then still come from the plain Jacobian). With one clock configuration the model
    reduces to the IPP form. ``temperature_correction``: a thermal fit's ``{"sigma_w_per_c",
    "idle_temp_c"}`` (:func:`training_rows`).
    """

    constraints = {
        "mem_units": optional(names_of("units")),
        "ar_form": options(*FORMS),
        "ar_forms": optional(mapping_of(options(*FORMS), "units")),
        "method": options("joint", "alternating"),
        "activity_clocks": either(options("auto", "off"), Constraint(
            lambda v: len(v) == 2 and all(float(x) > 0 for x in v), "a (core_mhz, mem_mhz) pair")),
        "weighting": options(*WEIGHTINGS),
        "fit_log_a": options(True, False),
        "active_terms": options(True, False),
        "ridge": number(0.0),
        "ref_clocks": optional(Constraint(lambda v: len(v) == 2 and all(float(x) > 0 for x in v),
                                          "a (core_mhz, mem_mhz) pair")),
        "ar_threshold": optional(number(0.0, 0.5)),
        "max_nfev": optional(number(1, 1e9, integer=True)),
        "ar_shape": options("shared", "per_unit"),
        "total_terms": options(False, True, "free"),
        "loss": options(*LOSSES),
        "loss_scale": number(0.0, lo_open=True),
        "core_voltage": options(*CORE_VOLTAGES),
        "static_exp": options(True, False),
        "temperature_correction": optional(mapping_of(number(), "sigma_w_per_c/idle_temp_c")),
    }

    def __init__(self, *, mem_units: Iterable[str] | None = None, ar_form: str = TPOW,
                 ar_forms: Mapping[str, str] | None = None, method: str = "joint", activity_clocks: Any = "auto",
                 weighting: str = "relative", fit_log_a: bool = True, active_terms: bool = True, ridge: float = 0.0,
                 ref_clocks: tuple[float, float] | None = None, ar_threshold: float | None = DEFAULT_THRESHOLD,
                 max_nfev: int | None = None, ar_shape: str = "shared", total_terms: bool | str = False,
                 loss: str = "linear", loss_scale: float = 0.05, core_voltage: str = "auto",
                 static_exp: bool = False, temperature_correction: Mapping[str, float] | None = None):
        self.mem_units = mem_units
        self.ar_form = ar_form
        self.ar_forms = ar_forms
        self.method = method
        self.activity_clocks = activity_clocks
        self.weighting = weighting
        self.fit_log_a = fit_log_a
        self.active_terms = active_terms
        self.ridge = ridge
        self.ref_clocks = ref_clocks
        self.ar_threshold = ar_threshold
        self.max_nfev = max_nfev
        self.ar_shape = ar_shape
        self.total_terms = total_terms
        self.loss = loss
        self.loss_scale = loss_scale
        self.core_voltage = core_voltage
        self.static_exp = static_exp
        self.temperature_correction = temperature_correction

    def fit(self, df: pd.DataFrame, source: str = "") -> "DvfsPowerFitter":
        """Fit to the rows of ``df`` the model covers (:func:`training_rows`); ``source`` names the
        table in messages. Returns self."""
        self._validate_settings()
        if self.loss != "linear" and self.method != "joint":
            raise BadInputError(f"loss {self.loss!r} needs the joint fit method (the alternating scheme is plain "
                                "least squares)")
        t0 = time.perf_counter()
        rows, correction = training_rows(df, self.temperature_correction)
        if len(rows) < len(df) and "role" in df.columns:
            warnings.warn(f"{source or '<table>'}: {len(df) - len(rows)} rows not used by the DVFS fit (roles "
                          "heldout/thermal/timing, or fewer active SMs than the widest launch)")
        act = self.activity_clocks
        prob, meta, notes = _prepare(rows, None if self.mem_units is None else set(self.mem_units), source,
                                     self.ar_form, self.ar_forms, act if isinstance(act, str) else tuple(act),
                                     self.weighting, self.fit_log_a, self.active_terms, self.ridge,
                                     None if self.ref_clocks is None else tuple(self.ref_clocks), self.ar_threshold,
                                     self.ar_shape, self.total_terms, self.core_voltage, self.static_exp)
        x0 = _start(prob)
        if self.method == "joint":
            x, nfev, msg = _solve_joint(prob, x0, self.max_nfev, self.loss, self.loss_scale)
        else:
            x, nfev, msg = _solve_alternating(prob, x0)
        if not np.all(np.isfinite(x)):
            raise FitError(f"{source or '<table>'}: the DVFS fit diverged ({msg})")
        cov, dead = _covariance(prob, x)
        lin, shape, vc, vm = prob.split(x)
        yhat = prob.predict(x)
        # total uncertainty: delete-a-group jackknife over the workloads' groups (calib.fit.uncertainty)
        jack = None
        self.prediction_ = None
        if not self._skip_uncertainty:
            n = len(prob.P)  # the ridge penalty's rows (when asked) belong to no group
            r = prob.resid(x)[:n]
            J = prob.jac(x)[:n]
            jack, _ = group_jackknife(J, r, row_groups(prob.rows), keep=[IDLE_GROUP])
            oog = np.empty(n)
            _, n_wl = group_jackknife(J, r, workload_groups(prob.rows), keep=[IDLE_GROUP], out_of_group=oog)
            self.prediction_ = prediction_stats(oog / (prob.wt * prob.P), n_wl)
        elapsed = time.perf_counter() - t0
        sec = _section(prob, meta, notes, x, cov, dead, lin, shape, vc, vm, yhat, nfev, msg, self.method,
                       self.weighting, elapsed, jack)
        if self.prediction_:
            sec.stats["prediction"] = self.prediction_
        sec.structure["temperature_correction"] = correction
        sec.settings = self.settings()
        self.section_ = sec
        return self


def _section(prob: Problem, meta: dict, notes: list[str], x: np.ndarray, cov: np.ndarray, dead: np.ndarray,
             lin: np.ndarray, shape: dict[str, float], vc: np.ndarray, vm: np.ndarray, yhat: np.ndarray,
             nfev: int, msg: str, method: str, weighting: str, elapsed: float,
             jack: np.ndarray | None = None) -> Section:
    warns = list(notes)
    params: list[Param] = []
    lo, hi = _bounds(prob)
    # d(reported parameter) / d(raw parameter vector): the covariance of the reported parameters is
    # grad @ cov @ grad.T (identity rows for coefficients and shapes, the delta method for voltages)
    grads: list[np.ndarray] = []

    wscale = max(1.0, float(np.max(np.abs(lin)))) if len(lin) else 1.0

    def add(name: str, idx: int, unit: str, desc: str) -> None:
        se = None if dead[idx] else _se(cov[idx, idx])
        lo_i = lo[idx]
        v = float(max(x[idx], lo_i))
        if idx < prob.nlin and v - lo_i <= 1e-6 * wscale:
            v = float(lo_i)  # the solver stops a hair inside the bound: report the bound
        p = Param(name, v, unit, float(lo_i), float(hi[idx]), True, None, se, desc)
        g = np.zeros(len(x))
        g[idx] = 1.0
        grads.append(g)
        if dead[idx]:
            warns.append(f"{name}: the data do not depend on this parameter (not identifiable); no standard error")
        elif p.at_bound():
            warns.append(f"{name}: at its {p.at_bound()} bound ({p.value:g}); its standard error describes the "
                         "local curvature only")
        params.append(p)

    for i, t in enumerate(prob.terms):
        add(t, i, TERM_UNIT[t], TERM_DOC[t])
    col = len(prob.terms)
    for j, u in enumerate(prob.units):
        dom = "memory" if prob.is_mem[j] else "core"
        if prob.vary_unit[j]:
            add(names.unit_weight(u), col, "W", f"dynamic power of {u} at full activity, reference clocks ({dom} domain)")
            col += 1
        else:
            params.append(Param(names.unit_weight(u), 0.0, "W", 0.0, math.inf, False, None, None,
                                f"{u} never varies in the fitted table: fixed at 0"))
    for k, s in enumerate(prob.shapes):
        add(s, prob.nlin + k, shape_spec(s)[3], shape_spec(s)[4])
    for s, v in prob.fixed_shape.items():
        desc = ("IPP constant (paper 004)" if s.startswith("ar_log") else
                "activity below which a unit draws no dynamic power (fixed, not fitted)")
        params.append(Param(s, float(v), "1", -math.inf, math.inf, False, None, None, desc))
    # voltages: delta method through V = exp(A u + offset)
    b = prob.nlin + prob.nshape
    nc = len(prob.lc) - 1
    curves = []  # (domain, levels, voltages, parameter indices, A with the offset column or not, ref level, names)
    k_off = b + prob.ncg * nc
    for g in range(prob.ncg):
        idx = list(range(b + g * nc, b + (g + 1) * nc))
        A = prob.Ac
        if g != prob.rg and prob.n_off:
            idx.append(k_off)
            k_off += 1
            A = np.hstack([A, np.ones((len(prob.lc), 1))])
        level_names = [names.core_voltage_level(f, None if g == prob.rg else prob.lm[g]) for f in prob.lc]
        curves.append((CORE, prob.lc, vc[:, g], idx, A, prob.rc if g == prob.rg or not prob.n_off else -1,
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
            se = _se(cv[i, i]) if np.all(np.isfinite(cv[i])) else None
            params.append(Param(level_names[i], float(v[i]), "V/Vref", 0.0, math.inf, True, None, se,
                                f"relative {dom} voltage at {f:g} MHz{where} (latent, monotone in clock)"))
            g = np.zeros(len(x))
            g[idx] = D[i]
            grads.append(g)
    m = errors(prob.P, yhat)
    structure: dict[str, Any] = {
        "units": [{"name": u, "domain": MEM if m else CORE, "ar_form": f}
                  for u, m, f in zip(prob.units, prob.is_mem, prob.forms)],
        "ref_clocks": {"core_mhz": prob.f0c, "mem_mhz": prob.f0m},
        "voltage": {CORE: {"mhz": [float(f) for f in prob.lc], "params": [names.voltage_level(CORE, f) for f in prob.lc]},
                    MEM: {"mhz": [float(f) for f in prob.lm], "params": [names.voltage_level(MEM, f) for f in prob.lm]}},
        "activity_clocks": meta["act_info"],
        "temp_ref_c": meta["temp_ref_c"],
    }
    if prob.ncg > 1:
        structure["voltage"][CORE]["per_mem"] = {
            "mem_mhz": [float(f) for f in prob.lm],
            "params": [[names.core_voltage_level(f, None if g == prob.rg else prob.lm[g]) for f in prob.lc]
                       for g in range(prob.ncg)]}
    structure |= {
        "outside_fitted_clocks": "voltage interpolated linearly between levels, held at the end value outside",
    }
    stats: dict[str, Any] = {
        "n_samples": int(len(prob.P)), "n_workloads": meta["n_workloads"],
        "rmse_w": m.rmse, "mape_pct": m.mape_pct, "r2": m.r2, "max_abs_pct": m.max_abs_pct,
        "n_parameters": int(len(x)), "method": method, "weighting": weighting, "nfev": int(nfev),
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
