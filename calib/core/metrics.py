"""Error measures of predictions against measurements: the one definition every fit, verb and report uses.

Percentage errors are ``100 (predicted - measured) / measured`` per row; MAPE is the mean of their
absolute values, bias their mean (signed: positive = over-prediction). Rows whose measurement is 0
(or not finite) are left out of the percentage measures, never divided by.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd


def pct_errors(y: Any, yhat: Any) -> np.ndarray:
    """Signed percentage error per row, % (NaN where the measurement is 0 or not finite)."""
    y = np.asarray(y, float)
    yhat = np.asarray(yhat, float)
    ok = np.isfinite(y) & (np.abs(y) > 1e-12)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(ok, 100.0 * (yhat - y) / np.where(ok, y, 1.0), np.nan)


def mape(y: Any, yhat: Any) -> float:
    """Mean absolute percentage error, % (NaN without a usable row)."""
    e = pct_errors(y, yhat)
    e = e[np.isfinite(e)]
    return float(np.mean(np.abs(e))) if len(e) else math.nan


@dataclass(frozen=True)
class Errors:
    """Error measures of one set of predictions (units: those of ``y`` for ``rmse``; % for the rest)."""

    n: int
    mape_pct: float
    max_abs_pct: float
    bias_pct: float
    rmse: float
    r2: float

    def to_dict(self) -> dict[str, Any]:
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in asdict(self).items()}


def errors(y: Any, yhat: Any) -> Errors:
    """MAPE, largest absolute percentage error, bias, RMSE and R^2 of ``yhat`` against ``y``."""
    y = np.asarray(y, float)
    yhat = np.asarray(yhat, float)
    r = yhat - y
    e = pct_errors(y, yhat)
    e = e[np.isfinite(e)]
    rmse = float(np.sqrt(np.mean(r ** 2))) if len(r) else math.nan
    ss_tot = float(np.sum((y - y.mean()) ** 2)) if len(y) else 0.0
    r2 = 1.0 - float(np.sum(r ** 2)) / ss_tot if ss_tot > 0 else math.nan
    return Errors(int(len(y)), float(np.mean(np.abs(e))) if len(e) else math.nan,
                  float(np.max(np.abs(e))) if len(e) else math.nan, float(np.mean(e)) if len(e) else math.nan,
                  rmse, r2)


def per_workload(workloads: Any, y: Any, yhat: Any, **extra: Any) -> pd.DataFrame:
    """Errors per workload: a table indexed by workload (sorted) with ``n_rows``, ``mape_pct``,
    ``max_abs_pct``, ``bias_pct``, ``measured`` and ``predicted`` (means), plus the first value per
    workload of every ``extra`` column (arrays aligned with the rows, e.g. ``fold=...``)."""
    e = pct_errors(y, yhat)
    tab = pd.DataFrame({"workload": np.asarray(workloads).astype(str), "err": e, "abs": np.abs(e),
                        "y": np.asarray(y, float), "yhat": np.asarray(yhat, float), **extra})
    agg: dict[str, tuple[str, str]] = {k: (k, "first") for k in extra}
    agg |= {"n_rows": ("err", "size"), "mape_pct": ("abs", "mean"), "max_abs_pct": ("abs", "max"),
            "bias_pct": ("err", "mean"), "measured": ("y", "mean"), "predicted": ("yhat", "mean")}
    return tab.groupby("workload", sort=True).agg(**agg)


def ar1_rho(parts: Sequence[np.ndarray]) -> float:
    """Lag-1 autocorrelation of residual series, pooled over the series in ``parts`` and clipped to
    [0, 0.98] (0 for all-zero residuals)."""
    num = sum(float(np.sum(p[1:] * p[:-1])) for p in parts if len(p) > 1)
    den = sum(float(np.sum(p * p)) for p in parts)
    return float(np.clip(num / den, 0.0, 0.98)) if den > 0 else 0.0


def ar1_inflation(parts: Sequence[np.ndarray]) -> float:
    """Variance inflation ``(1 + rho) / (1 - rho)`` for residual series with lag-1 autocorrelation
    ``rho`` (:func:`ar1_rho`): time series of a quantized sensor and a model error are not white noise,
    and a least-squares covariance that counts every sample as independent understates how much a refit
    on another run moves (effective number of independent points ``n (1 - rho) / (1 + rho)``)."""
    rho = ar1_rho(parts)
    return (1.0 + rho) / (1.0 - rho)
