"""``calib fleet analyze``: the fleet's typical parameters, its spread, partial pooling and outliers.

Per chip (GPUs of different chips are never pooled) and per parameter (``section.name``, fitted
parameters only, compared within one model form (:func:`calib.fleet.paramrows.param_rows`), plus the reference-workload predictions of section ``reference``), with y_i the GPU's
estimate and s_i its standard error:

- **typical value and spread**: the median and the robust standard deviation 1.4826 x MAD of the y_i
  (a few bad GPUs move neither); mean, SD and the coefficient of variation are reported too.
- **robust z**: z_i = (y_i - median) / sqrt(scale^2 + s_i^2), scale = max(1.4826 MAD, ``rel_floor`` x
  |median|), median and MAD over the GPUs of the same campaign when it has at least ``min_outlier_gpus``
  of them (a campaign's own bias is not a GPU defect), else over the fleet: the deviation against the fleet's spread and the GPU's own measurement error together (a
  poorly measured estimate is not an outlier for being far off; the floor keeps GPUs that agree to
  within 1 % of the value from calling noise an outlier). A GPU is an **outlier** when any parameter or
  reference prediction has |z| > ``threshold`` (default 6, see README for how it was chosen), counted only
  where at least ``min_outlier_gpus`` (10) GPUs share the parameter and its model form, and only on
  parameters with a physical unit (dimensionless curve shapes are degenerate with MaxPower: a fit may land
  in another mode on a normal GPU, see :data:`UNSCREENED_UNITS`).
- **partial pooling** (empirical Bayes, normal-normal): y_i ~ N(theta_i, s_i^2), theta_i ~ N(mu, tau^2).
  tau^2 by restricted maximum likelihood over the non-outlier GPUs that have a standard error (the
  random-effects meta-analysis estimator); mu = their precision-weighted mean, weights
  1 / (s_i^2 + tau^2). Each GPU's estimate shrinks toward mu by the **shrinkage**
  B_i = s_i^2 / (s_i^2 + tau^2): theta_i = mu + (1 - B_i)(y_i - mu), with standard error
  sqrt((1 - B_i) s_i^2 + B_i^2 var(mu)). A GPU with a short campaign (large s_i) borrows strength from the
  fleet (B_i near 1); a well-measured one keeps its own value (B_i near 0). GPUs flagged as outliers are
  not shrunk (the fleet prior does not describe them), nor are estimates without a standard error.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from calib.fleet.dataset import read_dataset

log = logging.getLogger(__name__)

MAD_TO_SD = 1.4826
DEFAULT_THRESHOLD = 6.0
REL_FLOOR = 0.01
#: fewest GPUs a parameter (of one chip and model form) needs before any of them is called an outlier
MIN_OUTLIER_GPUS = 10
#: units of parameters that never call a GPU an outlier: dimensionless shape parameters (access-rate curve
#: shapes, the SM-scaling beta) are degenerate with their unit's MaxPower, so a fit may land in another
#: mode on a normal GPU (seen on the virtual fleet); they are still summarised and pooled
UNSCREENED_UNITS = frozenset({"1"})

COLUMNS = ["gpu_uuid", "gpu_name", "serial", "node", "gpu_slot", "session", "section", "name", "form", "value", "stderr",
           "unit", "vary", "campaign_name", "chip"]


@dataclass
class FleetAnalysis:
    """Result of :func:`analyze`: ``gpus`` (one row per GPU and parameter: value, stderr, z, pooled value,
    pooled stderr, shrinkage), ``params`` (one row per chip and parameter: typical value, spread, tau, mu)
    and the threshold used."""

    gpus: pd.DataFrame
    params: pd.DataFrame
    threshold: float
    notes: list[str] = field(default_factory=list)

    def outlier_gpus(self) -> pd.DataFrame:
        """One row per outlier GPU: its largest |z|, and the parameters beyond the threshold."""
        g = self.gpus[self.gpus["outlier_param"]]
        if g.empty:
            return pd.DataFrame(columns=["gpu_uuid", "serial", "node", "session", "max_abs_z", "parameters"])
        rows = []
        for uuid, sub in g.groupby("gpu_uuid", sort=False):
            sub = sub.reindex(sub["z"].abs().sort_values(ascending=False).index)
            rows.append({"gpu_uuid": uuid, "serial": sub["serial"].iloc[0], "node": sub["node"].iloc[0],
                         "session": sub["session"].iloc[0], "max_abs_z": float(sub["z"].abs().max()),
                         "parameters": ", ".join(f"{k} (z={z:+.1f})" for k, z in zip(sub["key"], sub["z"]))})
        return pd.DataFrame(rows).sort_values("max_abs_z", ascending=False, ignore_index=True)


def _tau2_reml(y: np.ndarray, v: np.ndarray) -> float:
    """Between-GPU variance tau^2 of estimates ``y`` with sampling variances ``v`` (normal-normal model),
    by restricted maximum likelihood (the random-effects meta-analysis estimator); 0 when the spread is
    no larger than the measurement errors explain."""
    from scipy.optimize import minimize_scalar

    def nll(t2: float) -> float:
        w = 1.0 / (v + t2)
        mu = np.sum(w * y) / np.sum(w)
        return 0.5 * float(np.sum(np.log(v + t2) + w * (y - mu) ** 2) + np.log(np.sum(w)))

    total = float(np.var(y)) + float(np.max(v))
    if total <= 0:
        return 0.0
    res = minimize_scalar(lambda lt: nll(total * np.exp(lt)), bounds=(-30.0, 2.0), method="bounded",
                          options={"xatol": 1e-4})
    t2 = total * float(np.exp(res.x))
    return 0.0 if nll(0.0) <= nll(t2) else t2


def _one_parameter(sub: pd.DataFrame, threshold: float, rel_floor: float,
                   min_outlier_gpus: int) -> tuple[pd.DataFrame, dict]:
    y = sub["value"].to_numpy(float)
    s = sub["stderr"].to_numpy(float)
    has_s = np.isfinite(s) & (s > 0)
    med = float(np.median(y))
    mad_sd = MAD_TO_SD * float(np.median(np.abs(y - med)))
    med_s = float(np.median(s[has_s])) if has_s.any() else 0.0
    scale = max(mad_sd, rel_floor * abs(med))
    # z against the GPUs measured the same way: a campaign's own bias (seen: host power from the wall
    # meter differs by 10 % between the quick and standard campaigns on identical hosts) is not a GPU's
    # defect. Campaigns with fewer than min_outlier_gpus GPUs are compared with the whole fleet.
    camp = sub["campaign_name"].astype(str).to_numpy()
    center, spread = np.full_like(y, med), np.full_like(y, scale)
    for c in np.unique(camp):
        m = camp == c
        if m.sum() >= min_outlier_gpus and m.sum() < len(y):
            mc = float(np.median(y[m]))
            center[m] = mc
            spread[m] = max(MAD_TO_SD * float(np.median(np.abs(y[m] - mc))), rel_floor * abs(mc))
    # each GPU's deviation against the spread and its own measurement error together: a poorly
    # measured estimate is not an outlier merely for being far off
    denom = np.sqrt(spread ** 2 + np.where(has_s, s, 0.0) ** 2)
    z = np.divide(y - center, denom, out=np.zeros_like(y), where=denom > 0)
    screened = len(y) >= min_outlier_gpus and str(sub["unit"].iloc[0]) not in UNSCREENED_UNITS
    out_mask = (np.abs(z) > threshold) & screened
    keep = ~out_mask
    var_i = np.where(has_s, s ** 2, np.nan)
    fit = keep & has_s
    tau2 = _tau2_reml(y[fit], var_i[fit]) if fit.sum() >= 3 else max(0.0, mad_sd ** 2 - med_s ** 2)
    w = 1.0 / (np.where(has_s, var_i, 0.0) + tau2) if tau2 > 0 else np.where(has_s, 1.0 / np.where(has_s, var_i, 1.0), 0.0)
    w = np.where(keep & np.isfinite(w), w, 0.0)
    if w.sum() > 0:
        mu = float(np.sum(w * y) / w.sum())
        var_mu = float(1.0 / w.sum())
    else:
        mu, var_mu = float(np.median(y[keep])) if keep.any() else med, float("nan")
    pool = has_s & keep
    b = np.where(pool, var_i / (var_i + tau2), 0.0) if tau2 > 0 else np.where(pool, 1.0, 0.0)
    pooled = np.where(pool, mu + (1.0 - b) * (y - mu), y)
    pooled_se = np.where(pool, np.sqrt((1.0 - b) * np.nan_to_num(var_i) + b ** 2 * np.nan_to_num(var_mu)),
                         np.where(has_s, s, np.nan))
    res = sub[["gpu_uuid"]].copy()
    res["z"] = z
    res["outlier_param"] = out_mask
    res["screened"] = bool(screened)
    res["shrinkage"] = np.where(pool, b, np.nan)
    res["pooled_value"] = pooled
    res["pooled_stderr"] = pooled_se
    summary = {"n_gpus": int(len(y)), "median": med, "robust_sd": mad_sd, "mean": float(np.mean(y)),
               "sd": float(np.std(y, ddof=1)) if len(y) > 1 else float("nan"),
               "cv_pct": float(100 * mad_sd / abs(med)) if med else float("nan"),
               "median_stderr": med_s if has_s.any() else float("nan"), "z_scale": scale,
               "tau": float(np.sqrt(tau2)), "mu": mu, "mu_stderr": float(np.sqrt(var_mu)) if np.isfinite(var_mu) else float("nan"),
               "mean_shrinkage": float(np.nanmean(np.where(pool, b, np.nan))) if pool.any() else float("nan"),
               "n_outliers": int(out_mask.sum()), "screened": bool(screened), "unit": str(sub["unit"].iloc[0])}
    return res, summary


def analyze_frame(df: pd.DataFrame, threshold: float = DEFAULT_THRESHOLD, rel_floor: float = REL_FLOOR,
                  min_gpus: int = 3, min_outlier_gpus: int = MIN_OUTLIER_GPUS,
                  progress: Callable[[str, float], None] | None = None) -> FleetAnalysis:
    """Analyse a fleet table (the dataset's rows; see module docstring). Parameters present on fewer than
    ``min_gpus`` GPUs of a chip, or fixed (not fitted), are left out (and named in ``notes``).
    ``progress("analyse", fraction)`` is called as the parameters are analysed."""
    step = progress or (lambda stage, frac: None)
    df = df[(df["vary"]) | (df["section"] == "reference")].copy()
    for c in ("chip", "section", "name", "form", "unit"):   # partition columns arrive as categoricals
        df[c] = df[c].astype(str)
    df["key"] = df["section"] + "." + df["name"]
    # a parameter whose model form differs between GPUs (e.g. a unit's access-rate function) is compared
    # within each form only: key becomes "section.name[form]" where the fleet has several forms
    nforms = df.groupby(["chip", "key"], observed=True)["form"].transform("nunique")
    df.loc[nforms > 1, "key"] = df["key"] + "[" + df["form"] + "]"
    notes: list[str] = []
    parts, summaries = [], []
    groups = df.groupby(["chip", "key"], sort=True, observed=True)
    for k, ((chip, key), sub) in enumerate(groups):
        step("analyse", k / groups.ngroups)
        if len(sub) < min_gpus:
            notes.append(f"{chip}: {key} on {len(sub)} GPU(s) only; not analysed")
            continue
        if sub["gpu_uuid"].duplicated().any():
            raise ValueError(f"{key}: a GPU appears twice")  # the dataset guarantees one file per GPU
        res, summary = _one_parameter(sub, threshold, rel_floor, min_outlier_gpus)
        parts.append(sub.join(res.drop(columns=["gpu_uuid"])))
        summaries.append({"chip": chip, "key": key, "section": sub["section"].iloc[0], "name": sub["name"].iloc[0],
                          **summary})
    gpus = pd.concat(parts, ignore_index=True) if parts else df.iloc[:0]
    return FleetAnalysis(gpus, pd.DataFrame(summaries), threshold, notes)


def analyze(fleet: str | Path, threshold: float = DEFAULT_THRESHOLD, rel_floor: float = REL_FLOOR,
            workers: int = 1, progress: Callable[[str, float], None] | None = None) -> FleetAnalysis:
    """Read dataset ``fleet`` and analyse it (:func:`analyze_frame`). ``workers`` is accepted for symmetry
    with collect; the analysis is vectorised per parameter and runs in one process. ``progress(stage,
    fraction)`` is called at the stages ``read`` and ``analyse``."""
    if progress is not None:
        progress("read", 0.0)
    df = read_dataset(fleet, columns=COLUMNS)
    return analyze_frame(df, threshold, rel_floor, progress=progress)


def short_campaign_gpus(an: FleetAnalysis, campaign: str = "quick") -> pd.Series:
    """uuids of the GPUs measured with the short campaign."""
    return an.gpus.loc[an.gpus["campaign_name"] == campaign, "gpu_uuid"].drop_duplicates()
