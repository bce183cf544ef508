"""Prediction intervals: ``<column>_lo`` / ``<column>_hi`` beside every prediction, at a stated level.

A prediction for a workload the model was not fitted on is off for two reasons, and the interval holds
both (Gaussian, two-sided, ``level`` = 0.90 by default; the half-width is ``z`` times the larger of the
two standard deviations below, not their root sum of squares: the discrepancy is measured as this fit's
errors on workloads it did not see, which already include what its parameter error does there, so the
parameter term only widens an interval where it is the larger one, e.g. at clocks or rates far from the
held-out workloads'; adding both counted the parameter error twice):

- **parameter uncertainty**: the delta method through the whole prediction, ``g^T Sigma g``, with ``g``
  the change of the predicted column per unit change of each fitted parameter (finite differences of
  :func:`calib.model.predict.predict_table` itself, so every model and every dispatch rule is included)
  and ``Sigma`` each section's statistical covariance (sections are independent fits). Not the total
  covariance: that one also holds what a missing benchmark family or an extrapolation to AR = 1 would
  do to a parameter, which is not the error of a new workload whose units the campaign measured;
- **model discrepancy at this workload**: what the fit says the model misses for a workload it has not
  seen -- the ``discrepancy_rel`` of the section that predicts the row (``fit.<section>.prediction``:
  the RMS of relative errors on the campaign's held-out workloads (:func:`set_heldout_discrepancy`),
  or, without those, of the training workloads left out one at a time), times the prediction; taken at
  the interval's level from the empirical quantiles of those errors (discrepancies differ between
  workloads: a few large ones make the RMS a poor 90 % scale), widened for the few workloads that scale
  was measured on (:func:`small_sample_factor`: Student's t instead of the normal quantile); for
  temperatures the scatter of the thermal steps around the Max_temp plane (C).

How often measured values fall inside is checked on held-out workloads of the virtual GPUs and on the
real Titan X applications (tests/test_uncertainty.py, tests/test_validate_model.py, tests/benchmarks/uncertainty_study.py).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np
import pandas as pd
from scipy.stats import norm
from scipy.stats import t as student_t

from calib.core.errors import BadInputError
from calib.core.params import ParameterFile, Section
from calib.model.registry import power_sections
from calib.model.thermal import max_temp_rise_c

#: predicted columns that get an interval, and the section whose discrepancy applies (None: per row)
INTERVAL_COLUMNS = ("power_w_pred", "time_s_pred", "temp_c_pred")
DEFAULT_LEVEL = 0.90


def _cov(sec: Section) -> tuple[list[str], np.ndarray] | None:
    """(names, covariance) for the parameter uncertainty of a section: the statistical covariance, else
    the statistical standard errors on the diagonal (module docstring)."""
    if sec.covariance is not None:
        return list(sec.covariance.names), np.where(np.isfinite(sec.covariance.matrix), sec.covariance.matrix, 0.0)
    names = [n for n, p in sec.params.items() if p.vary and p.stderr]
    return (names, np.diag([sec[n].stderr ** 2 for n in names])) if names else None


def parameter_sd(pf: ParameterFile, predict: Callable[[ParameterFile], pd.DataFrame],
                 columns: list[str]) -> dict[str, np.ndarray]:
    """Standard deviation of each predicted column from the parameters' uncertainty (delta method,
    module docstring). ``predict(pf)`` gives the prediction table; parameters are perturbed in place and
    restored."""
    base = predict(pf)
    var = {c: np.zeros(len(base)) for c in columns}
    for _name, sec in pf.items():
        got = _cov(sec)
        if got is None:
            continue
        names, S = got
        G = {c: np.zeros((len(base), len(names))) for c in columns}
        for j, n in enumerate(names):
            p = sec.params.get(n)
            sd = math.sqrt(S[j, j]) if S[j, j] > 0 else 0.0
            if p is None or sd == 0.0:
                continue
            # a small step on the scale of the uncertainty (the models are smooth there); downwards when
            # upwards leaves what the model accepts (e.g. a voltage level equal to the next one's)
            for step in (1e-3 * sd, -1e-3 * sd):
                old = p.value
                p.value = old + step
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        moved = predict(pf)
                    break
                except BadInputError:
                    moved = None
                finally:
                    p.value = old
            if moved is None:
                continue
            for c in columns:
                G[c][:, j] = (moved[c].to_numpy(float) - base[c].to_numpy(float)) / step
        for c in columns:
            g = np.nan_to_num(G[c])
            var[c] += np.einsum("ij,jk,ik->i", g, S, g)
    return {c: np.sqrt(np.clip(v, 0.0, None)) for c, v in var.items()}


def _max_temp_scatter_c(sec: Section) -> float | None:
    """RMS (C) of the thermal steps' steady rises around the fitted Max_temp plane (IPP eq. 19)."""
    steps = sec.structure.get("steps") or []
    if len(steps) < 2:
        return None
    v = sec.values()
    r = [s["amplitude_c"] - float(max_temp_rise_c(v, s["runtime_power_w"], s["mem_intensity"])) for s in steps]
    return float(math.sqrt(np.mean(np.square(r))))


def _relative_sd(stats: dict | None, level: float) -> float | None:
    """Relative discrepancy as a Gaussian-equivalent standard deviation at ``level``: the empirical
    quantile of |relative error| at that level over the normal quantile, where the fit kept quantiles
    (interpolated between :data:`QUANTILE_LEVELS`, clamped at their ends), else the RMS."""
    if not stats:
        return None
    q = stats.get("abs_rel_quantiles")
    if q:
        lv = np.array([float(k) for k in q])
        order = np.argsort(lv)
        val = float(np.interp(level, lv[order], np.array(list(q.values()), float)[order]))
        sd = val / float(norm.ppf(0.5 + min(max(level, lv.min()), lv.max()) / 2.0))
    else:
        sd = stats.get("discrepancy_rel")
    return None if sd is None else sd * small_sample_factor(stats.get("n_groups"), level)


def small_sample_factor(n_groups: int | None, level: float = DEFAULT_LEVEL) -> float:
    """How much wider an interval for a new workload is when the discrepancy's scale was estimated from
    ``n_groups`` workloads rather than known: a workload's miss is mostly its own (its rows at different
    clocks move together), so the scale has about n - 1 degrees of freedom and the Student prediction
    interval for one more draw, ``t(n-1) * s * sqrt(1 + 1/n)``, replaces ``z * s``. 1 without a count
    (or with fewer than 2 workloads, where nothing better is known)."""
    if not n_groups or n_groups < 2:
        return 1.0
    p = 0.5 + level / 2.0
    return float(student_t.ppf(p, n_groups - 1) * math.sqrt(1.0 + 1.0 / n_groups) / norm.ppf(p))


def discrepancy_sd(pf: ParameterFile, out: pd.DataFrame, column: str, level: float = DEFAULT_LEVEL) -> np.ndarray:
    """Standard deviation of the model's discrepancy for each row's ``column`` of the predicted rows
    ``out`` (module docstring), as seen at the interval ``level``; 0 where the fit recorded none."""
    pred = out[column].to_numpy(float)
    sd = np.zeros(len(out))
    if column == "power_w_pred":
        for name, mask in power_sections(pf).rows(pf, out):
            rel = _relative_sd(pf[name].stats.get("prediction"), level)
            if rel:
                sd[mask] = rel * np.abs(pred[mask])
    elif column == "time_s_pred" and "timing" in pf:
        rel = _relative_sd(pf["timing"].stats.get("prediction"), level)
        if rel:
            sd = rel * np.abs(pred)
    elif column == "temp_c_pred" and "thermal" in pf:
        c = _max_temp_scatter_c(pf["thermal"])
        if c:
            sd = np.full(len(out), c)
    return sd


#: levels at which the discrepancy's empirical |relative error| quantiles are kept (intervals interpolate)
QUANTILE_LEVELS = (0.5, 0.68, 0.8, 0.9, 0.95, 0.99)


def prediction_stats(rel_errors: np.ndarray, n_groups: int,
                     method: str = "RMS of leave-one-workload-out relative errors (linearised jackknife)"
                     ) -> dict | None:
    """The discrepancy of a model's predictions for workloads it was not fitted on, from relative errors
    of workloads the fit did not see (held-out workloads, or training workloads left out one at a time):
    their root mean square (``discrepancy_rel``) and the quantiles of their magnitude
    (``abs_rel_quantiles``, at :data:`QUANTILE_LEVELS`), which intervals use -- discrepancies differ
    between workloads, so their spread is not Gaussian. None with fewer than 3 errors."""
    e = np.asarray(rel_errors, float)
    e = e[np.isfinite(e)]
    if len(e) < 3:
        return None
    q = np.quantile(np.abs(e), QUANTILE_LEVELS)
    return {"discrepancy_rel": float(np.sqrt(np.mean(e ** 2))),
            "abs_rel_quantiles": {f"{lv:g}": float(v) for lv, v in zip(QUANTILE_LEVELS, q)},
            "n_rows": int(len(e)), "n_groups": int(n_groups), "method": method}


#: ``method`` of a discrepancy measured on held-out workloads (intervals warn about any other source)
HELDOUT_METHOD = "relative errors on the campaign's held-out workloads (application-like mixes the fit never saw)"

#: fewest held-out workloads a section's discrepancy is taken from (else its own leave-one-out figure)
MIN_HELDOUT_WORKLOADS = 3


def set_heldout_discrepancy(pf: ParameterFile, held: pd.DataFrame, pred_w: np.ndarray) -> list[str]:
    """Set each power section's prediction discrepancy (``fit.<section>.prediction``) from held-out
    workloads: measured rows of workloads no fit has seen (``held``, with ``power_w`` and ``workload``),
    ``pred_w`` their predicted power (W). A section gets the RMS of the relative errors of the rows it
    predicts when they come from at least :data:`MIN_HELDOUT_WORKLOADS` workloads; a new workload is
    more like those than like the fitted benchmarks left out one at a time. Returns the sections set."""
    y = held["power_w"].to_numpy(float)
    rel = (np.asarray(pred_w, float) - y) / y
    names = held["workload"].astype(str).to_numpy()
    done = []
    for name, mask in power_sections(pf).rows(pf, held):
        ok = mask & np.isfinite(rel)
        n_w = len(set(names[ok]))
        if n_w < MIN_HELDOUT_WORKLOADS:
            continue
        stats = prediction_stats(rel[ok], n_w, HELDOUT_METHOD)
        if stats is not None:
            pf[name].stats["prediction"] = stats
            done.append(name)
    return done


def add_intervals(pf: ParameterFile, out: pd.DataFrame, predict: Callable[[ParameterFile], pd.DataFrame],
                  level: float = DEFAULT_LEVEL) -> pd.DataFrame:
    """``out`` plus ``<column>_lo``/``_hi`` for every predicted column it has (``power_w_lo``, ...).
    ``out`` is what ``predict(pf)`` returns: the predicted rows with their inputs (with ``--clocks``, one
    row per kernel and clock pair, so each row's clocks choose the section that answers its power).
    ``level`` in (0, 1): the probability a measured value should fall inside."""
    columns = [c for c in INTERVAL_COLUMNS if c in out.columns]
    if not columns:
        return out
    z = float(norm.ppf(0.5 + level / 2.0))
    if "power_w_pred" in columns:
        for name, mask in power_sections(pf).rows(pf, out):
            stats = pf[name].stats.get("prediction") or {}
            if mask.any() and stats and stats.get("method") != HELDOUT_METHOD:
                # the real Titan X applications fall inside far less often than the level says
                # (tests/benchmarks/uncertainty_results.md)
                warnings.warn(f"{name}: the intervals' model discrepancy comes from the fitted benchmarks left out "
                              "one at a time (the fit had no held-out workloads); applications that mix units "
                              "can miss by more than these intervals say", stacklevel=2)
    psd = parameter_sd(pf, predict, columns)
    out = out.copy()
    for c in columns:
        # the discrepancy is measured as errors of this fit on workloads it did not see, so it already
        # holds what this fit's parameter error does to such a workload; the parameters' own spread
        # only adds where it is larger (an extrapolation to other clocks or rates than the held-out ones)
        total = np.maximum(psd[c], discrepancy_sd(pf, out, c, level))
        stem = c[: -len("_pred")]
        pred = out[c].to_numpy(float)
        lo = pred - z * total
        # power and time cannot be negative (a temperature below 0 C can be)
        out[f"{stem}_lo"] = lo if c == "temp_c_pred" else np.maximum(lo, 0.0)
        out[f"{stem}_hi"] = pred + z * total
    out.attrs["interval_level"] = level
    return out
