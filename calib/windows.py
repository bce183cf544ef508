"""Reductions of logged stream rows over a time window: the one definition of a window's energy.

A window's counter energy is the difference of the cumulative energy counter *at the window's edges*:

1. the counter (mJ, NVML's total-energy counter) is unwrapped into a continuous cumulative series:
   a step down from the top half of the uint64 range is a 64-bit wrap (add 2^64), any other step down
   is a reset (driver reload: the counter restarted from 0, so the new value is the energy since the
   reset). A reset loses at most one counter period of energy; dropping the interval instead (what the
   samples layer did before) loses the whole interval;
2. repeated values are collapsed to the row where each new value first appeared (NVML updates the
   counter about every 100 ms, faster polls repeat it), which is the best host-side estimate of when
   the value was taken;
3. the cumulative series is interpolated linearly at the window's start and end, so the energy covers
   exactly the window (the interval its launches were counted over), not the readings around it.

The integrated energy (trapezoid of ``power_w`` over the window) is the cross-check
(:func:`window_energy`). Both are ``None`` when the stream does not cover the window: no reading at or
before its start, or none at or after its end.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: the NVML total-energy counter is an unsigned 64-bit number of mJ
UINT64 = float(2 ** 64)


@dataclass(frozen=True)
class WindowEnergy:
    """Energy of one time window from the NVML counter and from integrated power.

    ``counter_j`` is the counter difference (interpolated between counter updates at the window
    edges), ``integrated_j`` the trapezoidal integral of ``power_w``. ``disagreement_pct`` =
    100 (integrated - counter) / counter. Either is ``None`` when the stream has no data for it.
    """

    t0_s: float
    t1_s: float
    counter_j: float | None
    integrated_j: float | None
    disagreement_pct: float | None
    n_power: int
    n_counter_updates: int
    counter_resets: int

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def unwrap_energy_mj(energy_mj: Sequence[float]) -> tuple[np.ndarray, int]:
    """Continuous cumulative energy (mJ, from 0) across counter resets and 64-bit wraps.

    A step down from a value in the top half of the uint64 range is a wrap (add 2^64); any other
    step down is a reset (driver reload: the counter restarted from 0, so the new value is the
    energy since the reset). Returns the series and the number of resets/wraps.
    """
    e = np.asarray(energy_mj, dtype=float)
    if e.size == 0:
        return e, 0
    d = np.diff(e)
    resets = 0
    for i in np.nonzero(d < 0)[0]:
        resets += 1
        prev, new = e[i], e[i + 1]
        d[i] = (new + UINT64 - prev) if prev >= UINT64 / 2 else new
    return np.concatenate([[0.0], np.cumsum(d)]), resets


@dataclass(frozen=True)
class EnergyCounter:
    """The cumulative counter of one stream (one session segment), ready for many windows.

    ``t_s``: times (s) at which each new counter value first appeared, plus the last row's time;
    ``cum_mj``: the unwrapped counter there (mJ); ``reset_t_s``: times of the rows where the counter
    went backwards (reset or wrap).
    """

    t_s: np.ndarray
    cum_mj: np.ndarray
    reset_t_s: np.ndarray
    first_s: float
    last_s: float

    @classmethod
    def from_stream(cls, df: Any, time_col: str = "t_mono_s", col: str = "energy_mj") -> "EnergyCounter | None":
        """The counter of a stream table (rows in time order), or None without two counter readings."""
        if col not in df:
            return None
        raw = np.asarray(df[col], dtype=float)
        ok = ~np.isnan(raw)
        te, raw = np.asarray(df[time_col], dtype=float)[ok], raw[ok]
        if te.size < 2:
            return None
        cum, _ = unwrap_energy_mj(raw)
        resets_at = te[1:][np.diff(raw) < 0]
        first = np.concatenate([[True], np.diff(cum) != 0])  # row where each new counter value appeared
        tu, cu = te[first], cum[first]
        if tu[-1] < te[-1]:  # keep the last row so the counter is bounded on the right
            tu, cu = np.append(tu, te[-1]), np.append(cu, cum[-1])
        return cls(tu, cu, resets_at, float(te[0]), float(te[-1]))

    def between_j(self, t0_s: float, t1_s: float) -> float | None:
        """Energy (J) between ``t0_s`` and ``t1_s``; None when the readings do not cover the window."""
        if not (self.first_s <= t0_s and self.last_s >= t1_s):
            return None
        return float(np.interp(t1_s, self.t_s, self.cum_mj) - np.interp(t0_s, self.t_s, self.cum_mj)) / 1000.0

    def updates_in(self, t0_s: float, t1_s: float) -> int:
        """Counter updates seen inside the window (edges included)."""
        return int(((self.t_s >= t0_s) & (self.t_s <= t1_s)).sum())

    def resets_in(self, t0_s: float, t1_s: float) -> int:
        """Resets or wraps that fall inside the window (edges included)."""
        return int(((self.reset_t_s >= t0_s) & (self.reset_t_s <= t1_s)).sum())


def window_energy(df: Any, t0_s: float, t1_s: float, time_col: str = "t_mono_s") -> WindowEnergy:
    """Energy between ``t0_s`` and ``t1_s`` (on ``time_col``) from an NVML stream table.

    ``df`` has the NVML sensor's columns (e.g. ``read_session(p).stream("nvml0")``, one segment). The
    counter only changes about every 100 ms, so windows should be seconds long (module docstring).
    ``counter_resets`` counts the resets and wraps of the whole stream given (when it covers the window).
    """
    if not t1_s > t0_s:
        raise ValueError(f"window must have t1_s > t0_s, got [{t0_s}, {t1_s}]")
    t = np.asarray(df[time_col], dtype=float)
    counter_j = integ_j = None
    n_upd = resets = n_pow = 0
    ctr = EnergyCounter.from_stream(df, time_col)
    if ctr is not None:
        counter_j = ctr.between_j(t0_s, t1_s)
        if counter_j is not None:
            n_upd, resets = ctr.updates_in(t0_s, t1_s), len(ctr.reset_t_s)
    if "power_w" in df:
        ok = ~np.isnan(np.asarray(df["power_w"], dtype=float))
        tp, p = t[ok], np.asarray(df["power_w"], dtype=float)[ok]
        inside = (tp > t0_s) & (tp < t1_s)
        n_pow = int(inside.sum())
        if tp.size >= 2 and tp[0] <= t0_s and tp[-1] >= t1_s:
            grid = np.concatenate([[t0_s], tp[inside], [t1_s]])
            integ_j = float(np.trapezoid(np.interp(grid, tp, p), grid))
    dis = None
    if counter_j is not None and integ_j is not None and counter_j != 0:
        dis = 100.0 * (integ_j - counter_j) / counter_j
    return WindowEnergy(t0_s, t1_s, counter_j, integ_j, dis, n_pow, n_upd, resets)
