"""Bounded least squares with standard errors, fit statistics and identifiability warnings.

A thin layer over :func:`scipy.optimize.least_squares` (trust-region reflective, native bounds) in the
manner of lmfit: parameters are :class:`calib.core.params.Param` objects (value, bounds, vary), the result
records the solver's options, chi-square statistics, AIC/BIC, the covariance ``inv(J^T J) * redchi``
and a standard error per varied parameter. A singular Jacobian does not crash the fit: the affected
standard errors are None and a warning names the parameters the data cannot separate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from calib.core.errors import FitError
from calib.core.metrics import errors
from calib.core.params import Covariance, Param

#: condition number of the column-scaled Jacobian above which parameters are called unidentifiable
COND_LIMIT = 1e7
#: |correlation| above which a pair of parameters is called hard to separate
CORR_LIMIT = 0.995


@dataclass
class LsqResult:
    """Outcome of :func:`fit_lsq` (documented fields only; see module docstring)."""

    params: list[Param]
    success: bool
    message: str
    nfev: int
    ndata: int
    nvarys: int
    chisqr: float
    redchi: float
    aic: float
    bic: float
    rmse: float
    mape_pct: float
    r2: float
    covar: np.ndarray | None
    y: np.ndarray
    yhat: np.ndarray
    warnings: list[str] = field(default_factory=list)
    solver_kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def nfree(self) -> int:
        return self.ndata - self.nvarys

    def by_name(self) -> dict[str, Param]:
        return {p.name: p for p in self.params}

    def covariance(self) -> Covariance | None:
        """Covariance of the varied parameters (None when it could not be computed)."""
        if self.covar is None:
            return None
        return Covariance(tuple(p.name for p in self.params if p.vary), self.covar)

    def stats(self, unit: str = "w") -> dict[str, Any]:
        """Statistics for the parameter file's ``fit`` section."""
        d: dict[str, Any] = {"n_samples": int(self.ndata), f"rmse_{unit}": _finite(self.rmse),
                             "mape_pct": _finite(self.mape_pct), "r2": _finite(self.r2),
                             "n_parameters": int(self.nvarys), "aic": _finite(self.aic), "bic": _finite(self.bic),
                             "solver": self.solver_kwargs}
        if self.warnings:
            d["warnings"] = list(self.warnings)
        return d


def _finite(x: float) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def fit_lsq(model: Callable[[dict[str, float]], np.ndarray], params: Sequence[Param], y: np.ndarray,
            weights: np.ndarray | None = None, *, loss: str = "linear", max_nfev: int | None = None,
            x_scale: str | np.ndarray = "jac",
            jac: Callable[[dict[str, float]], dict[str, np.ndarray]] | None = None,
            vectorized: bool = False) -> LsqResult:
    """Fit ``model(values) -> yhat`` to ``y`` over the varied ``params`` (bounded least squares).

    ``values`` maps every parameter name (varied or fixed) to its value. Residuals are
    ``(yhat - y) * weights``. ``jac(values)``, when given, returns d yhat / d parameter for (at least)
    every varied parameter; otherwise the Jacobian is taken by finite differences -- scipy's forward
    differences, or, with ``vectorized=True`` (a model that broadcasts: the varied parameters' values
    may be arrays of shape (P, 1) and it then returns (P, len(y))), the same differences (scipy's steps and
    bound handling) in one model call for all parameters, which saves the per-call cost of a model
    that is slow to call and cheap per row. Returns fitted copies of the parameters with standard errors.
    """
    params = [Param(**{**p.__dict__}) for p in params]
    y = np.asarray(y, dtype=float)
    w = np.ones_like(y) if weights is None else np.asarray(weights, dtype=float)
    free = [p for p in params if p.vary]
    fixed = {p.name: p.value for p in params if not p.vary}
    if not free:
        raise FitError("no parameter to fit")
    if len(y) < len(free):
        raise FitError(f"{len(y)} samples cannot determine {len(free)} parameters ({', '.join(p.name for p in free)})")
    names = [p.name for p in free]
    lo = np.array([p.min for p in free])
    hi = np.array([p.max for p in free])
    x0 = np.clip(np.array([p.value for p in free], float), lo, hi)
    # keep the start strictly inside finite bounds (trf requires it)
    span = np.where(np.isfinite(hi - lo), hi - lo, np.abs(x0) + 1.0)
    x0 = np.where(x0 <= lo, lo + 1e-6 * span, x0)
    x0 = np.where(x0 >= hi, hi - 1e-6 * span, x0)

    def values(x: np.ndarray) -> dict[str, float]:
        d = dict(fixed)
        d.update(zip(names, x))
        return d

    def resid(x: np.ndarray) -> np.ndarray:
        return (model(values(x)) - y) * w

    jac_kind = "analytic" if jac is not None else "2-point, one vectorized call" if vectorized else "2-point"
    kwargs: dict[str, Any] = {"method": "trf", "loss": loss, "x_scale": x_scale,
                              "max_nfev": max_nfev or 200 * (len(free) + 1)}
    if jac is not None:
        def jac_x(x: np.ndarray) -> np.ndarray:
            d = jac(values(x))
            return np.column_stack([np.broadcast_to(d[nm], y.shape) for nm in names]) * w[:, None]

        kwargs["jac"] = jac_x
    elif vectorized:
        kwargs["jac"] = _batched_forward_jacobian(model, names, fixed, lo, hi, y, w)
    r0 = resid(x0)
    if not np.all(np.isfinite(r0)):
        raise FitError("the model gives non-finite values at the starting point (check the input table)")
    sol = least_squares(resid, x0, bounds=(lo, hi), **kwargs)
    kwargs.pop("jac", None)
    yhat = model(values(sol.x))
    n, k = len(y), len(free)
    chisqr = float(np.sum(sol.fun**2))
    redchi = chisqr / max(1, n - k)
    aic = n * math.log(max(chisqr, 1e-300) / n) + 2 * k
    bic = n * math.log(max(chisqr, 1e-300) / n) + k * math.log(n)
    m = errors(y, yhat)
    rmse, mape, r2 = m.rmse, m.mape_pct, m.r2
    warnings_: list[str] = []
    covar = None
    stderr = [None] * k
    jac = np.asarray(sol.jac, dtype=float)
    active = np.asarray(sol.active_mask) != 0
    # every varied parameter gets a standard error; for one sitting on a bound it describes the local
    # curvature only (the true uncertainty is one-sided) and a warning says so
    keep = np.ones(k, dtype=bool)
    if keep.any():
        jk = jac[:, keep]
        colnorm = np.linalg.norm(jk, axis=0)
        dead = colnorm == 0
        scale = np.where(dead, 1.0, colnorm)
        js = jk / scale
        _, s, vt = np.linalg.svd(js, full_matrices=False)
        kept_names = [nm for nm, kp in zip(names, keep) if kp]
        for i, d in enumerate(dead):
            if d:
                warnings_.append(f"{kept_names[i]}: the data do not depend on this parameter (not identifiable)")
        cond = s[0] / s[-1] if s[-1] > 0 else math.inf
        if cond > COND_LIMIT:
            for j in np.flatnonzero(s < s[0] / COND_LIMIT):
                involved = [kept_names[i] for i in np.argsort(-np.abs(vt[j])) if abs(vt[j, i]) > 0.25]
                if involved:
                    warnings_.append("the campaign cannot separate " + ", ".join(involved)
                                     + " (rank-deficient design: only a combination of them is determined)")
        try:
            cov_s = np.linalg.pinv(js.T @ js, rcond=1.0 / COND_LIMIT)
            cov = cov_s / np.outer(scale, scale) * redchi
            idx = np.flatnonzero(keep)
            covar = np.full((k, k), np.nan)
            covar[np.ix_(idx, idx)] = cov
            for ii, j in enumerate(idx):
                v = cov[ii, ii]
                stderr[j] = float(math.sqrt(v)) if v >= 0 and math.isfinite(v) and not dead[ii] else None
            sd = np.sqrt(np.clip(np.diag(cov), 1e-300, None))
            corr = cov / np.outer(sd, sd)
            for a in range(len(idx)):
                for b in range(a + 1, len(idx)):
                    if abs(corr[a, b]) > CORR_LIMIT and not (dead[a] or dead[b]):
                        warnings_.append(f"{kept_names[a]} and {kept_names[b]} are {corr[a, b]:+.3f} correlated: "
                                         "the campaign barely separates them")
        except np.linalg.LinAlgError:
            warnings_.append("covariance could not be computed; standard errors unavailable")
    for i, nm in enumerate(names):
        if active[i]:
            warnings_.append(f"{nm}: at a bound ({sol.x[i]:.6g}); its standard error describes the local "
                             "curvature only")
    out = []
    it = iter(range(k))
    for p in params:
        if p.vary:
            i = next(it)
            out.append(Param(p.name, float(sol.x[i]), p.unit, p.min, p.max, True, p.init if p.init is not None else float(x0[i]),
                             stderr[i], p.description))
        else:
            out.append(p)
    return LsqResult(out, bool(sol.success), str(sol.message), int(sol.nfev), n, k, chisqr, redchi, aic, bic,
                     rmse, mape, r2, covar, y, yhat, warnings_, {"method": "trf", "loss": loss, "x_scale": str(x_scale) if isinstance(x_scale, str) else "array",
                      "jacobian": jac_kind})


#: scipy's relative step for 2-point differences (sqrt of the float64 epsilon)
_FD_REL_STEP = float(np.finfo(float).eps) ** 0.5


def _batched_forward_jacobian(model: Callable[[dict[str, Any]], np.ndarray], names: Sequence[str],
                              fixed: dict[str, float], lo: np.ndarray, hi: np.ndarray, y: np.ndarray,
                              w: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """The residuals' Jacobian by forward differences as scipy's ``least_squares`` takes them by default
    (step ``sqrt(eps) x max(1, |x|)``, sign +1 at x >= 0, reversed when it would leave the bounds, cut to
    the bound when neither direction fits), evaluated as one call of a broadcasting ``model`` over the
    point and its k displaced copies (values of shape (k + 1, 1)). The differences are taken of the
    residuals ``(yhat - y) w``, as scipy takes them, so the Jacobian is scipy's to the last bit."""
    k = len(names)

    def jac_x(x: np.ndarray) -> np.ndarray:
        h = _FD_REL_STEP * np.where(x >= 0, 1.0, -1.0) * np.maximum(1.0, np.abs(x))
        lower, upper = x - lo, hi - x
        xh = x + h
        fitting = np.abs(h) <= np.maximum(lower, upper)
        h = np.where(((xh < lo) | (xh > hi)) & fitting, -h, h)
        h = np.where(~fitting, np.where(upper >= lower, upper, -lower), h)
        pts = np.repeat(x[None, :], k + 1, axis=0)
        pts[np.arange(1, k + 1), np.arange(k)] += h
        dx = pts[np.arange(1, k + 1), np.arange(k)] - x       # the step as represented
        vals: dict[str, Any] = dict(fixed)
        vals.update({nm: pts[:, j:j + 1] for j, nm in enumerate(names)})
        r = (np.asarray(model(vals), dtype=float) - y) * w
        return ((r[1:] - r[0]) / dx[:, None]).T

    return jac_x
