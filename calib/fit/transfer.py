"""Fit the ``transfer`` section (model ``pcie``, :mod:`calib.model.transfer`) from copy windows.

The samples stage reduces a session's copy windows to one row each (:func:`calib.segment.transfer_table`:
direction, host memory, bytes, time per copy, board power of the window and of its idle reference, wall
power of both); :class:`TransferFitter` fits, by weighted least squares (:func:`calib.fit.core.fit_lsq`):

- per direction and host memory, ``time = latency + bytes / bandwidth`` on relative residuals, over
  the copies of at least ``min_bytes``;
- per direction, the board's extra power ``P_copy - P_ref = energy_per_byte x bytes / time`` (through
  the origin: no bytes, no extra energy), pinned and pageable rows together;
- per host memory, the host's wall power above idle beyond the board's, ``(W_copy - W_ref) -
  (P_copy - P_ref)``, as the mean over the streaming copies (at least ``stream_share`` of their time
  moving bytes at the fitted bandwidth); where the session has a RAPL stream, likewise the host CPU
  package and DRAM power above idle, ``H_copy - H_ref`` (``host_rapl_power_<m>_w``);
- the board idle power, the mean of the reference windows.

Uncertainties: ``stderr`` from each fit's covariance (what the same campaign would give again). The
copy-time noise is one relative noise of the event timer and the link, the same for the four time lines,
so its variance is pooled over them (sum of squared relative residuals over the sum of their degrees of
freedom), with at least the scatter the repeated windows show: one line of a quick campaign has three
sizes of at least ``min_bytes``, one degree of freedom, and its own residual variance alone scattered by
a factor of 100 between two runs (the standard errors with it, so that ``calib diff`` flagged noise).
The degrees of freedom of each standard error go into ``stats["stderr_dof"]`` (``calib diff`` tests
with Student's t, not the normal, when they are few);
``stderr_total`` adds the model discrepancy: the larger of ``stderr`` and a jackknife over the transfer
sizes (each size left out in turn, the spread of the refits), combined with the difference between the
relative-residual time fit and an absolute-residual one (how far the copies are from a straight line:
descriptor staircase, staging pipeline).
"""

from __future__ import annotations

import logging
import math
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from calib.core import names
from calib.core.errors import BadInputError, FitError
from calib.core.metrics import errors
from calib.core.params import Param, Section
from calib.fit.base import Estimator, number
from calib.fit.core import fit_lsq
from calib.fit.uncertainty import jackknife_sd, total_stderr
from calib.model.transfer import DIRECTIONS, HOST_MEMORY, MODEL_NAME
from calib.segment import SessionData

log = logging.getLogger(__name__)

def _param(name: str, value: float, unit: str, description: str, lo: float = 0.0, hi: float = math.inf) -> Param:
    return Param(name, float(value), unit, lo, hi, True, float(value), None, description)


class TransferFitter(Estimator):
    """Fits the ``transfer`` section from the copy windows (module docstring).

    ``min_bytes``: the time line is fitted on copies of at least this size (a pageable copy pipelines
    through the driver's staging buffer: below a few of its chunks it is faster than the line through
    the large copies, whose intercept includes the pipeline's fill); ``min_sizes``: sizes needed per
    direction and host memory; ``stream_share``: share of a copy's time spent moving bytes for it to
    count in the host power.
    """

    constraints = {"min_bytes": number(0.0, 1e12), "min_sizes": number(2, 1000, integer=True),
                   "stream_share": number(0.0, 1.0, lo_open=True)}

    def __init__(self, *, min_bytes: float = float(4 << 20), min_sizes: int = 3, stream_share: float = 0.8):
        self._store(locals())

    # -- the three fits, each on a table (the jackknife refits them) -----------------------------
    @staticmethod
    def _time_fit(sub: pd.DataFrame, d: str, m: str, absolute: bool = False):
        b, t = sub["bytes"].to_numpy(float), sub["copy_time_s"].to_numpy(float)
        big = b >= np.median(b)
        bw0 = float(np.polyfit(b[big], t[big], 1)[0]) if big.sum() >= 2 else float(b.max() / t.max())
        bw0 = 1.0 / bw0 if bw0 > 0 else float(b.max() / t.max())
        lat0 = max(float(t.min() - b[np.argmin(t)] / bw0), 1e-7)
        ps = [_param(names.copy_latency(d, m), lat0, "s", f"fixed time of one {d} copy, {m} host memory", 0.0, 1.0),
              _param(names.copy_bandwidth(d, m), bw0, "B/s", f"{d} copy bandwidth, {m} host memory", 1.0, 1e13)]
        ln, bn = ps[0].name, ps[1].name

        def model(v: dict[str, float]) -> np.ndarray:
            return v[ln] + b / v[bn]

        def jac(v: dict[str, float]) -> dict[str, np.ndarray]:
            return {ln: np.ones_like(b), bn: -b / v[bn] ** 2}

        w = np.full_like(t, 1.0 / t.max()) if absolute else 1.0 / t
        return fit_lsq(model, ps, t, w, jac=jac, x_scale=np.array([lat0, bw0]))

    @staticmethod
    def _energy_fit(sub: pd.DataFrame, d: str):
        rate = sub["bytes"].to_numpy(float) / sub["copy_time_s"].to_numpy(float)
        dp = (sub["power_w"] - sub["ref_power_w"]).to_numpy(float)
        e0 = max(float(np.sum(dp * rate) / np.sum(rate * rate)), 1e-13)
        ps = [_param(names.copy_energy_per_byte(d), e0, "J/B", f"board energy above idle per byte of a {d} copy",
                     0.0, 1e-6)]
        en = ps[0].name
        return fit_lsq(lambda v: v[en] * rate, ps, dp, jac=lambda v: {en: rate}, x_scale=np.array([e0]))

    def _host_mean(self, sub: pd.DataFrame, bw: float, lat: float, rapl: bool = False) -> tuple[float, float, int]:
        """Mean host power above idle over the streaming copies, its standard error and count: the wall's
        beyond the board's, or (``rapl``) the host CPU package and DRAM's from RAPL, which the board is not in."""
        moving = (sub["bytes"] / bw) / (sub["bytes"] / bw + lat)
        col = "host_power_w" if rapl else "wall_power_w"
        if col not in sub.columns:
            return math.nan, math.nan, 0
        s = sub[(moving >= self.stream_share) & sub[col].notna() & sub["ref_" + col].notna()]
        x = (s[col] - s["ref_" + col]).to_numpy(float)
        if not rapl:
            x = x - (s["power_w"] - s["ref_power_w"]).to_numpy(float)
        if len(x) < 2:
            return math.nan, math.nan, len(x)
        return float(x.mean()), float(x.std(ddof=1) / math.sqrt(len(x))), len(x)

    @staticmethod
    def _noise(table: pd.DataFrame) -> tuple[float, float]:
        """(relative variance of a copy time, variance of a board power difference in W^2) from the
        scatter of repeated windows of the same copy (NaN without repeats)."""
        dt, dp = [], []
        for _, g in table.groupby("workload"):
            if len(g) < 2:
                continue
            t = g["copy_time_s"].to_numpy(float)
            p = (g["power_w"] - g["ref_power_w"]).to_numpy(float)
            dt.append(float(np.var(t / t.mean(), ddof=1)))
            dp.append(float(np.var(p, ddof=1)))
        return (float(np.mean(dt)) if dt else math.nan), (float(np.mean(dp)) if dp else math.nan)

    @staticmethod
    def _floored(r: Any, var: float, pooled: float | None = None) -> None:
        """Scale the fit's standard errors so that they assume the noise variance ``pooled`` per point
        (weighted residual units; None: the fit's own residual variance), and at least the repeat noise
        ``var`` (a few points on a line can scatter less than their noise by chance)."""
        if r is None or not r.redchi > 0:
            return
        v = r.redchi if pooled is None or not math.isfinite(pooled) else pooled
        f = math.sqrt(max(v, var) / r.redchi) if math.isfinite(var) else math.sqrt(v / r.redchi)
        for p in r.params:
            if p.stderr is not None:
                p.stderr *= f

    def _fit_all(self, table: pd.DataFrame, forms: dict[str, float] | None = None,
                 dof: dict[str, float] | None = None) -> dict[str, tuple[Param, Any]]:
        """Every parameter (with its fit). ``forms``, when given, receives per time parameter the
        difference between the relative-residual fit and an absolute-residual one (which the largest
        copies dominate): how much the answer depends on the weighting, i.e. on how far the copies are
        from a straight line. ``dof``, when given, receives the degrees of freedom of every standard
        error's noise estimate."""
        out: dict[str, tuple[Param, Any]] = {}
        var_t, var_p = self._noise(table)
        times = []
        for d in DIRECTIONS:
            for m in HOST_MEMORY:
                sub = table[(table["direction"] == d) & (table["host_memory"] == m)
                            & (table["bytes"] >= self.min_bytes)]
                if sub["bytes"].nunique() < self.min_sizes:
                    raise FitError(f"{d} copies from {m} memory: {sub['bytes'].nunique()} sizes of at least "
                                   f"{self.min_bytes:g} bytes, at least {self.min_sizes} needed")
                times.append(self._time_fit(sub, d, m))
                if forms is not None:
                    alt = self._time_fit(sub, d, m, absolute=True).by_name()
                    for p in times[-1].params:
                        forms[p.name] = abs(p.value - alt[p.name].value)
        # one relative time noise for the four lines (module docstring): residuals are relative errors
        nfree = sum(r.nfree for r in times)
        pooled = sum(r.chisqr for r in times) / nfree if nfree > 0 else None
        for r in times:
            self._floored(r, var_t, pooled)
            for p in r.params:
                out[p.name] = (p, r)
                if dof is not None:
                    dof[p.name] = float(nfree)
        for d in DIRECTIONS:
            r = self._energy_fit(table[table["direction"] == d], d)
            self._floored(r, var_p)
            out[r.params[0].name] = (r.params[0], r)
            if dof is not None:
                dof[r.params[0].name] = float(r.nfree)
        for m, rapl in ((m, rapl) for m in HOST_MEMORY for rapl in (False, True)):
            sub = table[table["host_memory"] == m]
            vals = [self._host_mean(sub[sub["direction"] == d], out[names.copy_bandwidth(d, m)][0].value,
                                    out[names.copy_latency(d, m)][0].value, rapl) for d in DIRECTIONS]
            n = sum(v[2] for v in vals)
            if n >= 2 and all(math.isfinite(v[0]) for v in vals if v[2]):
                mean = sum(v[0] * v[2] for v in vals if v[2]) / n
                se = math.sqrt(sum((v[1] * v[2]) ** 2 for v in vals if v[2] and math.isfinite(v[1]))) / n
                p = _param(names.copy_host_rapl_power(m) if rapl else names.copy_host_power(m), max(mean, 0.0), "W",
                           f"host CPU package and DRAM power above idle (RAPL) while a {m} copy streams" if rapl else
                           f"wall power above idle beyond the board's while a {m} copy streams "
                           "(host CPU and memory, PSU losses included)", 0.0, 1e3)
                p.stderr = se
                out[p.name] = (p, None)
                if dof is not None:
                    dof[p.name] = float(n - sum(1 for v in vals if v[2]))
        return out

    def fit(self, data: SessionData | pd.DataFrame) -> "TransferFitter":
        """Fit from a session's copy windows (``data.copies``, or a :func:`calib.segment.transfer_table`
        given directly); sets ``section_`` (and ``table_``)."""
        self._validate_settings()
        table = data.copies if isinstance(data, SessionData) else data
        missing = [c for c in ("direction", "host_memory", "bytes", "copy_time_s", "power_w", "ref_power_w")
                   if c not in table.columns]
        if missing:
            raise BadInputError(f"transfer table lacks column(s) {', '.join(missing)}")
        table = table.dropna(subset=["copy_time_s", "power_w", "ref_power_w"]).reset_index(drop=True)
        if not len(table):
            raise FitError("no complete copy window to fit")
        forms: dict[str, float] = {}
        dof: dict[str, float] = {}
        full = self._fit_all(table, forms, dof)
        # jackknife over transfer sizes: leave each size out, refit, spread of the refits
        sizes = sorted(table["bytes"].unique())
        jack: dict[str, list[float]] = {k: [] for k in full}
        for s in sizes:
            try:
                part = self._fit_all(table[table["bytes"] != s])
            except FitError:
                continue
            for k in full:
                if k in part:
                    jack[k].append(part[k][0].value)
        params = [replace(p, stderr_total=total_stderr(p.stderr, jackknife_sd(jack[k]) if len(jack[k]) >= 3 else None,
                                                       [forms.get(k, 0.0)])) for k, (p, _) in full.items()]
        idle = table["ref_power_w"].to_numpy(float)
        pid = _param("board_idle_power_w", float(idle.mean()), "W", "board power in the idle windows before the copies")
        pid.stderr = float(idle.std(ddof=1) / math.sqrt(len(idle))) if len(idle) > 1 else None
        pid.stderr_total = float(idle.std(ddof=1)) if len(idle) > 1 else None  # drifts with temperature between windows
        params.append(pid)
        v = {p.name: p.value for p in params}
        lines = list(zip(table["direction"], table["host_memory"]))
        t_pred = (np.array([v[names.copy_latency(d, m)] for d, m in lines])
                  + table["bytes"].to_numpy(float) / np.array([v[names.copy_bandwidth(d, m)] for d, m in lines]))
        rel = t_pred / table["copy_time_s"].to_numpy(float) - 1.0
        err = errors(table["copy_time_s"], t_pred)
        # the copy-time error by size: small copies are a few microseconds of latency and host jitter, and
        # their relative errors dominate the MAPE (a report showing "MAPE 82 %" alone explained nothing)
        by_size = {f"{b:.0f}": float(np.mean(np.abs(rel[table["bytes"].to_numpy(float) == b])) * 100.0)
                   for b in sorted(set(table["bytes"].to_numpy(float)))}
        stats = {"n_samples": int(len(table)), "rmse_s": err.rmse, "mape_pct": err.mape_pct, "r2": None,
                 "mape_pct_by_bytes": by_size,
                 "max_abs_rel_time_error": float(np.max(np.abs(rel))), "sizes": [float(s) for s in sizes],
                 "stderr_dof": {**dof, **({pid.name: float(len(idle) - 1)} if pid.stderr is not None else {})}}
        self.table_ = table
        self.section_ = Section(MODEL_NAME, {p.name: p for p in params}, {"directions": list(DIRECTIONS),
                                                                          "host_memory": list(HOST_MEMORY)},
                                stats, None, self.settings())
        return self
