"""The one least-squares core of every fitter: bounded solve, covariance, identifiability.

:func:`solve` is the project's one call of :func:`scipy.optimize.least_squares` (trust-region reflective,
native bounds); :func:`covariance` is ``pinv(J^T J) * SSR / (n - k)`` at the solution with the columns
scaled to unit norm and one cut (:data:`COND_LIMIT`); :func:`identifiability_warnings` names the
parameters a rank-deficient or nearly collinear design cannot separate. :func:`fit_lsq` puts them
together in the manner of lmfit: parameters are :class:`calib.core.params.Param` objects (value, bounds,
vary), the result records the solver's options, chi-square statistics, AIC/BIC, the covariance and a
standard error per varied parameter. A singular Jacobian does not crash the fit: the affected standard
errors are None and a warning names the parameters the data cannot separate. Fitters with a
parameterisation of their own (the DVFS fitter's monotone voltages) call the three pieces directly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy.optimize import least_squares, lsq_linear

from calib.core.atomic import finite_or_none
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
    #: with ``fit_lsq(..., stats=False)``: what :meth:`with_stats` needs to add the covariance, standard
    #: errors and identifiability warnings (None once they are in)
    pending: Any = field(default=None, repr=False, compare=False)

    def with_stats(self) -> "LsqResult":
        """This result with its covariance, standard errors and warnings (itself when it has them): those
        of ``fit_lsq(..., stats=True)`` at the same solution."""
        if self.pending is None:
            return self
        covar, params, warns = _statistics(self.params, *self.pending)
        return replace(self, params=params, covar=covar, warnings=warns, pending=None)

    @property
    def nfree(self) -> int:
        return self.ndata - self.nvarys

    def by_name(self) -> dict[str, Param]:
        return {p.name: p for p in self.params}

    def covariance(self) -> Covariance | None:
        """Covariance of the varied parameters (None when it could not be computed)."""
        return None if self.covar is None else Covariance(tuple(p.name for p in self.params if p.vary), self.covar)

    def stats(self, unit: str = "w") -> dict[str, Any]:
        """Statistics for the parameter file's ``fit`` section."""
        d: dict[str, Any] = {"n_samples": int(self.ndata), f"rmse_{unit}": finite_or_none(self.rmse),
                             "mape_pct": finite_or_none(self.mape_pct), "r2": finite_or_none(self.r2),
                             "n_parameters": int(self.nvarys), "aic": finite_or_none(self.aic), "bic": finite_or_none(self.bic),
                             "solver": self.solver_kwargs}
        if self.warnings:
            d["warnings"] = list(self.warnings)
        return d


def fit_lsq(model: Callable[[dict[str, float]], np.ndarray], params: Sequence[Param], y: np.ndarray,
            weights: np.ndarray | None = None, *, loss: str = "linear", max_nfev: int | None = None,
            x_scale: str | np.ndarray = "jac",
            jac: Callable[[dict[str, float]], dict[str, np.ndarray]] | None = None,
            vectorized: bool = False, stats: bool = True) -> LsqResult:
    """Fit ``model(values) -> yhat`` to ``y`` over the varied ``params`` (bounded least squares).

    ``values`` maps every parameter name (varied or fixed) to its value. Residuals are
    ``(yhat - y) * weights``. ``jac(values)``, when given, returns d yhat / d parameter for (at least)
    every varied parameter; otherwise the Jacobian is taken by finite differences -- scipy's forward
    differences, or, with ``vectorized=True`` (a model that broadcasts: the varied parameters' values
    may be arrays of shape (P, 1) and it then returns (P, len(y))), the same differences (scipy's steps and
    bound handling) in one model call for all parameters, which saves the per-call cost of a model
    that is slow to call and cheap per row. Returns fitted copies of the parameters with standard errors;
    ``stats=False`` leaves out the covariance, the standard errors and the identifiability warnings until
    :meth:`LsqResult.with_stats` (a search that compares many fits by their sum of squares needs them for
    the one it keeps).
    """
    params = [replace(p) for p in params]
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
        return {**fixed, **dict(zip(names, x))}

    def resid(x: np.ndarray) -> np.ndarray:
        return (model(values(x)) - y) * w

    jac_kind = "analytic" if jac is not None else "2-point, one vectorized call" if vectorized else "2-point"
    kwargs: dict[str, Any] = {"loss": loss, "x_scale": x_scale, "max_nfev": max_nfev or 200 * (len(free) + 1)}
    if jac is not None:
        def jac_x(x: np.ndarray) -> np.ndarray:
            d = jac(values(x))
            J = np.empty((len(y), len(names)))
            for i, nm in enumerate(names):  # a constant column may come as a scalar
                J[:, i] = d[nm]
            return J * w[:, None]

        kwargs["jac"] = jac_x
    elif vectorized:
        kwargs["jac"] = _batched_forward_jacobian(model, names, fixed, lo, hi, y, w)
    r0 = resid(x0)
    if not np.all(np.isfinite(r0)):
        raise FitError("the model gives non-finite values at the starting point (check the input table)")
    sol = solve(resid, x0, lo, hi, rows=len(y), **kwargs)
    yhat = model(values(sol.x))
    n, k = len(y), len(free)
    chisqr = float(np.sum(sol.fun**2))
    loglike = n * math.log(max(chisqr, 1e-300) / n)
    m = errors(y, yhat)
    out = [replace(p, value=float(x), init=p.init if p.init is not None else float(s), stderr=None, stderr_total=None)
           if p.vary else p for p, x, s in zip(params, _spread(params, sol.x), _spread(params, x0))]
    res = LsqResult(out, bool(sol.success), str(sol.message), int(sol.nfev), n, k, chisqr, chisqr / max(1, n - k),
                    loglike + 2 * k, loglike + k * math.log(n), m.rmse, m.mape_pct, m.r2, None, y, yhat, [],
                    {"method": "trf", "loss": loss, "x_scale": str(x_scale) if isinstance(x_scale, str) else "array",
                     "jacobian": jac_kind},
                    (np.asarray(sol.jac, dtype=float), sol.fun, np.asarray(sol.active_mask), lo, hi))
    return res.with_stats() if stats else res


def _statistics(params: Sequence[Param], J: np.ndarray, fun: np.ndarray, side: np.ndarray, lo: np.ndarray,
                hi: np.ndarray) -> tuple[np.ndarray, list[Param], list[str]]:
    """(covariance, the parameters with their standard errors, warnings) of a solution: ``J`` and ``fun``
    the residuals' Jacobian and values there, ``side`` the solver's active-bound mask (-1 lower, +1
    upper), ``lo``/``hi`` the varied parameters' bounds."""
    names = [p.name for p in params if p.vary]
    covar, dead = covariance(J, fun)
    stderr = [stderr_of(v) for v in np.diag(covar)]
    warnings_ = identifiability_warnings(J, names, covar, dead)
    for i, nm in enumerate(names):
        if side[i]:
            # the bound itself, not the solution's last digits there (1e-19 above 0 differs between runs)
            warnings_.append(f"{nm}: at a bound ({(lo[i] if side[i] < 0 else hi[i]):.6g}); its standard error "
                             "describes the local curvature only")
    out = [replace(p, stderr=se, stderr_total=None) if p.vary else p for p, se in zip(params, _spread(params, stderr))]
    return covar, out, warnings_


def stderr_of(var: float | None) -> float | None:
    """The standard error of a variance: its square root, None when it is unknown, not finite or negative."""
    return float(math.sqrt(var)) if var is not None and math.isfinite(var) and var >= 0 else None


def _spread(params: Sequence[Param], varied: Sequence) -> list:
    """``varied`` (one entry per varied parameter, in order) spread over ``params``: None at the fixed ones."""
    it = iter(varied)
    return [next(it) if p.vary else None for p in params]


#: rows x parameters^2 above which a tall problem's trust-region steps are taken on its n x n factor
COMPRESS_WORK = 2e7


def solve(resid: Callable[[np.ndarray], np.ndarray], x0: np.ndarray, lo: np.ndarray, hi: np.ndarray, *,
          jac: Callable[[np.ndarray], np.ndarray] | str = "2-point", x_scale: str | np.ndarray = "jac",
          loss: str = "linear", max_nfev: int | None = None, tol: float | None = None, rows: int = 0) -> Any:
    """Minimise ``sum(resid(x)**2)`` over ``lo <= x <= hi`` (trust-region reflective) from ``x0``; ``tol`` sets
    scipy's ``ftol``, ``xtol`` and ``gtol`` (default 1e-8). Returns scipy's ``OptimizeResult``.

    A tall problem (``rows`` residuals m, n parameters, m > 4 n and m n^2 > :data:`COMPRESS_WORK`) with an analytic
    Jacobian is solved as its compressed equivalent (:class:`_Compressed`): the solver's singular value
    decomposition of the m x n Jacobian in every step is most of its time (0.65 of 1.1 s on the 6,528-row
    Titan X table), and every quantity it uses (the cost, the gradient, the Gauss-Newton model) is the
    same on an (n + 1) x n factor. The result's ``fun`` and ``jac`` are then the full problem's."""
    tols = {} if tol is None else {"ftol": tol, "xtol": tol, "gtol": tol}
    kw = dict(bounds=(lo, hi), method="trf", x_scale=x_scale, loss=loss, max_nfev=max_nfev, **tols)
    n = len(x0)
    if callable(jac) and loss == "linear" and rows > 4 * n and rows * n * n > COMPRESS_WORK:
        c = _Compressed(resid, jac)
        sol = least_squares(c.fun, x0, jac=c.jac, **kw)
        sol.fun, sol.jac = resid(sol.x), jac(sol.x)
        return sol
    return least_squares(resid, x0, jac=jac, **kw)


def solve_linear(X: np.ndarray, y: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray | None:
    """Bounded linear least squares ``min |X b - y|^2`` over ``lo <= b <= hi`` (scipy's ``lsq_linear``,
    BVLS, on unit-norm columns): the exact solve of a model's linear parameters for its others (a
    fitter's starting point). None when it fails or is not finite."""
    scale = np.linalg.norm(X, axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    try:
        sol = lsq_linear(X / scale, y, bounds=(np.asarray(lo, float) * scale, np.asarray(hi, float) * scale),
                         method="bvls")
    except (ValueError, np.linalg.LinAlgError):
        return None
    return sol.x / scale if np.all(np.isfinite(sol.x)) else None


class _Compressed:
    """A least-squares problem ``min |r(x)|^2`` written with n + 1 residuals: ``(z, rho)`` with ``F^T F =
    J^T J``, ``F^T z = J^T r`` and ``|z|^2 + rho^2 = |r|^2`` (``F``, n x n, from the eigen-decomposition of the
    column-scaled ``J^T J``; J's null directions get zero rows). Cost, gradient and every Gauss-Newton
    model ``|r + J p|^2`` are those of the full problem, so the trust-region iteration is the same up to
    rounding (the normal matrix squares J's condition number: about 1e-8 relative for a condition number
    of 1e4, well inside the solver's tolerances)."""

    def __init__(self, resid: Callable[[np.ndarray], np.ndarray], jac: Callable[[np.ndarray], np.ndarray]):
        self.resid, self.jac_full = resid, jac
        self.x: np.ndarray | None = None

    def _at(self, x: np.ndarray) -> None:
        if self.x is not None and np.array_equal(x, self.x):
            return
        r = np.asarray(self.resid(x), dtype=float)
        n = len(x)
        self.x, self.f, self.F = x.copy(), np.full(n + 1, np.nan), np.zeros((n + 1, n))
        if not np.all(np.isfinite(r)):  # the solver shrinks its step
            return
        J = np.asarray(self.jac_full(x), dtype=float)
        G = J.T @ J
        d = np.sqrt(np.diag(G))
        d[d == 0] = 1.0
        lam, V = np.linalg.eigh(G / np.outer(d, d))
        on = lam > max(float(lam[-1]), 0.0) * 1e-14
        root = np.sqrt(lam[on])
        z = (V[:, on].T @ ((J.T @ r) / d)) / root
        k = int(on.sum())
        self.F[:k] = root[:, None] * V[:, on].T * d
        self.f[:k] = z
        self.f[k:] = 0.0
        self.f[n] = math.sqrt(max(float(r @ r) - float(z @ z), 0.0))

    def fun(self, x: np.ndarray) -> np.ndarray:
        self._at(x)
        return self.f

    def jac(self, x: np.ndarray) -> np.ndarray:
        self._at(x)
        return self.F


def covariance(J: np.ndarray, resid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(covariance, dead-column mask) of the parameters of a least-squares solution: ``pinv(J^T J) * SSR /
    (n - k)`` with ``J`` the residuals' Jacobian (n x k), its columns scaled to unit norm first and
    eigenvalues below ``1 / COND_LIMIT`` of the largest cut. A column the residuals do not depend on
    (norm <= 1e-14 of the largest) is dead: NaN in its row and column."""
    n, k = J.shape
    redchi = float(np.dot(resid, resid)) / max(1, n - k)
    norm = np.linalg.norm(J, axis=0)
    dead = norm <= 1e-14 * max(1.0, float(norm.max(initial=0.0)))
    scale = np.where(dead, 1.0, norm)
    Js = J / scale
    try:
        cov = np.linalg.pinv(Js.T @ Js, rcond=1.0 / COND_LIMIT, hermitian=True) / np.outer(scale, scale) * redchi
    except np.linalg.LinAlgError:  # a non-finite Jacobian: no standard errors
        return np.full((k, k), np.nan), dead
    cov[dead, :] = np.nan
    cov[:, dead] = np.nan
    return cov, dead


def identifiability_warnings(J: np.ndarray, names: Sequence[str], cov: np.ndarray, dead: np.ndarray) -> list[str]:
    """Warnings naming what the design cannot separate: parameters the data do not depend on (``dead``),
    the members of directions whose singular value of the column-scaled ``J`` is below ``1 / COND_LIMIT`` of
    the largest, and pairs whose correlation in ``cov`` exceeds :data:`CORR_LIMIT`."""
    out = [f"{nm}: the data do not depend on this parameter (not identifiable)" for nm, d in zip(names, dead) if d]
    if not np.all(np.isfinite(J)):
        return out + ["covariance could not be computed; standard errors unavailable"]
    norm = np.linalg.norm(J, axis=0)
    _, s, vt = np.linalg.svd(J / np.where(dead, 1.0, norm), full_matrices=False)
    if s[-1] <= 0 or s[0] / s[-1] > COND_LIMIT:
        for j in np.flatnonzero(s < s[0] / COND_LIMIT):
            involved = [names[i] for i in np.argsort(-np.abs(vt[j])) if abs(vt[j, i]) > 0.25]
            if involved:
                out.append("the campaign cannot separate " + ", ".join(involved)
                           + " (rank-deficient design: only a combination of them is determined)")
    sd = np.sqrt(np.clip(np.diag(cov), 1e-300, None))
    corr = cov / np.outer(sd, sd)
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            if abs(corr[a, b]) > CORR_LIMIT and not (dead[a] or dead[b]):
                out.append(f"{names[a]} and {names[b]} are {corr[a, b]:+.3f} correlated: the campaign barely "
                           "separates them")
    return out


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
        vals: dict[str, Any] = {**fixed, **{nm: pts[:, j:j + 1] for j, nm in enumerate(names)}}
        r = (np.asarray(model(vals), dtype=float) - y) * w
        return ((r[1:] - r[0]) / dx[:, None]).T

    return jac_x
