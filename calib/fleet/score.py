"""Scoring a virtual fleet against its ground truth (tests, benchmarks and ``calib fleet analyze
--score``): never used by a fit or by the analysis itself.

For every GPU that is a unit of a virtual fleet (``serial`` set), the truth is the existing truth function
applied to its varied preset (:func:`ground_truth` of ``<preset>@<serial>``)
and the planted defect is :func:`microbench.devices.sim.fleet.planted_defect`.
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np
import pandas as pd

from calib.fleet.analysis import FleetAnalysis


def ground_truth(preset: str) -> dict[str, dict[str, Any]]:
    """The virtual GPU's ground truth for preset name ``preset`` (``gtx280@17``), taken through the
    recovery report (:mod:`calib.report.recovery`), the one consumer of the truth module in calib."""
    from calib.report.recovery import ground_truth as truth_fn

    return truth_fn(preset)


def _truth(preset: str) -> dict[str, float]:
    return {k: v["value"] for k, v in ground_truth(preset).items()}


def truths(presets: list[str], workers: int = 1) -> dict[str, dict[str, float]]:
    """Ground truth per unit preset name (``gtx280@17``), ``{"section.name": value}``; about 1 s of CPU
    per unit (it simulates the thermal protocol), hence the optional process pool."""
    presets = sorted(set(presets))
    if workers > 1 and len(presets) > 1:
        with ProcessPoolExecutor(workers) as ex:
            return dict(zip(presets, ex.map(_truth, presets)))
    return {p: _truth(p) for p in presets}


def outlier_score(an: FleetAnalysis) -> dict[str, Any]:
    """Planted outliers found and false outliers, at the analysis threshold."""
    from microbench.devices.sim.fleet import planted_defect

    gpus = an.per_gpu[["gpu_uuid", "serial"]].dropna()
    planted = {int(s): planted_defect(int(s)) for s in gpus["serial"] if planted_defect(int(s))}
    found = {int(s) for s in an.outlier_gpus()["serial"].dropna()}
    return {"gpus": int(len(gpus)), "planted": {str(k): v for k, v in sorted(planted.items())},
            "found": sorted(found & set(planted)), "missed": sorted(set(planted) - found),
            "false": sorted(found - set(planted)), "threshold": an.threshold}


def _pooling_row(key: str, rows: pd.DataFrame, truth: dict[str, dict[str, float]], campaign: str) -> dict | None:
    """One parameter's row of :class:`PoolingErrorsSink` (None when no GPU qualifies)."""
    from microbench.devices.sim.fleet import planted_defect

    g = rows[(rows["campaign_name"] == campaign) & rows["serial"].notna()].copy()
    g = g[[planted_defect(int(s)) is None for s in g["serial"]]]
    # the dataset's preset column is not among the analysis columns: rebuilt from the uuid
    presets = [u.removeprefix("SIM-") for u in g["gpu_uuid"]]
    g["truth"] = [truth.get(p, {}).get(k) for p, k in zip(presets, g["section"] + "." + g["name"])]
    sub = g[g["truth"].notna() & np.isfinite(g["stderr"].astype(float)) & g["shrinkage"].notna()]
    if sub.empty:
        return None
    t = sub["truth"].to_numpy(float)
    raw, pooled = sub["value"].to_numpy(float), sub["pooled_value"].to_numpy(float)
    se, pse = sub["stderr"].to_numpy(float), sub["pooled_stderr"].to_numpy(float)
    scale = np.abs(t).mean() or 1.0
    return {"key": key, "gpus": len(sub), "truth_mean": float(t.mean()),
            "truth_sd": float(t.std(ddof=1)) if len(t) > 1 else float("nan"),
            "rms_err_raw": float(np.sqrt(np.mean((raw - t) ** 2))),
            "rms_err_pooled": float(np.sqrt(np.mean((pooled - t) ** 2))),
            "rms_err_raw_pct": float(100 * np.sqrt(np.mean((raw - t) ** 2)) / scale),
            "rms_err_pooled_pct": float(100 * np.sqrt(np.mean((pooled - t) ** 2)) / scale),
            "bias": float(np.mean(raw - t)),
            # each GPU's deviation from the fleet against its true deviation: the part of the
            # error pooling can act on (a bias shared by the whole fleet cancels here)
            "rms_dev_err_raw": float(np.sqrt(np.mean(((raw - raw.mean()) - (t - t.mean())) ** 2))),
            "rms_dev_err_pooled": float(np.sqrt(np.mean(((pooled - pooled.mean()) - (t - t.mean())) ** 2))),
            "rms_stderr_raw": float(np.sqrt(np.mean(se ** 2))),
            "rms_stderr_pooled": float(np.sqrt(np.mean(pse ** 2))),
            "mean_shrinkage": float(sub["shrinkage"].mean()),
            "coverage95_raw": float(np.mean(np.abs(raw - t) <= 1.96 * se)),
            "coverage95_pooled": float(np.mean(np.abs(pooled - t) <= 1.96 * pse))}


class PoolingErrorsSink:
    """Per parameter (a sink of :func:`calib.fleet.analysis.analyze`, one parameter at a time), over the
    normal (not planted-outlier) GPUs of ``campaign`` that have a truth and a standard error: RMS error
    against the truth of the GPU's own estimate and of its pooled estimate (absolute and in % of the mean
    truth), the same for the GPU's deviation from the fleet mean (``rms_dev_err_*``: a bias shared by every
    GPU cancels), the RMS of the stated standard errors, the mean shrinkage, and the coverage of the
    +-1.96 stderr intervals (raw and pooled): the check that the stated uncertainties mean what they say.
    The ground truth of each virtual unit is computed when the unit first appears (``workers`` processes)
    and kept. :meth:`table` gives the result."""

    def __init__(self, campaign: str = "quick", workers: int = 2):
        self.campaign, self.workers = campaign, workers
        self.truth: dict[str, dict[str, float]] = {}
        self.rows: list[dict] = []

    def add(self, chip: str, key: str, rows: pd.DataFrame, summary: dict) -> None:
        units = rows.loc[(rows["campaign_name"] == self.campaign) & rows["serial"].notna(), "gpu_uuid"]
        todo = [u.removeprefix("SIM-") for u in units if u.startswith("SIM-") and u.removeprefix("SIM-") not in self.truth]
        if todo:
            self.truth.update(truths(todo, workers=self.workers))
        r = _pooling_row(key, rows, self.truth, self.campaign)
        if r is not None:
            self.rows.append(r)

    def table(self) -> pd.DataFrame:
        return pd.DataFrame(sorted(self.rows, key=lambda r: r["key"]))

