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

import math
from collections.abc import Mapping, Sequence
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
    """Continuous cumulative energy (mJ, from 0) across counter resets and 64-bit wraps (module
    docstring, 1.). Returns the series and the number of resets/wraps."""
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


# ------------------------------------------------------------------------------------------------
# Energy of a kernel run under part-time power sampling (issue 31)
# ------------------------------------------------------------------------------------------------
# NVML's power reading may cover only part of the time (25 ms of every 100 ms on A100/H100: Yang,
# Adamek, Armour, arXiv 2312.02741) or average over a trailing second (Ampere except GA100 and newer);
# the energy counter may integrate all of the time or add part-time samples. How a GPU samples is
# measured by microbench.power_sampling and recorded in the manifest (``power_sampling``); these
# functions take an energy from the source that is right under it:
#
# - ``counter`` (it integrates all of the time): the counter between its last update at or before the
#   run's start and its first update at or after its end, minus what the GPU drew in the two bits of
#   time outside the run (their power from the counter just outside): :func:`counter_run_energy`;
# - ``power`` / ``power_phased`` (readings; part-time ones from runs repeated at shifted phases of the
#   sampling grid): every reading is the mean power over its window ``[t - lag - W, t - lag]``; the
#   part of a window outside the run is taken off at the power measured just outside, the rest gives
#   the mean power over the part inside; pooled over the runs on the time since each run's start, the
#   windows cover the run (each instant by several windows when the phases tile the update period), and
#   the energy is the integral of their average: :func:`power_run_energy`.


@dataclass(frozen=True)
class RunEnergy:
    """Energy of a kernel run (J) with its standard error and where it came from.

    ``source``: ``counter``, ``power`` or ``power_phased``; ``runs``: runs pooled; ``covered``: share of
    the run's time that some reading saw (power sources; 1 for the counter); ``stderr_dof``: degrees of
    freedom of the standard error when it comes from the spread of independent estimates (None: from
    error propagation); ``detail``: the parts of the error budget and the powers outside the run.
    """

    energy_j: float
    stderr_j: float
    source: str
    runs: int
    covered: float
    stderr_dof: int | None = None
    detail: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


#: one integer mJ step of the counter (floor to mJ at each update): sd of a difference of two, J
_COUNTER_QUANT_SD_J = 1e-3 / math.sqrt(6.0)


def counter_run_energy(t_s: Sequence[float], energy_mj: Sequence[float], start_s: float, stop_s: float, *,
                       timing_sd_s: float = 0.0) -> RunEnergy | None:
    """Energy (J) of a run from ``start_s`` to ``stop_s`` from a counter that integrates all of the time.

    ``t_s``, ``energy_mj``: the stream's times and counter (repeats of a value are collapsed to its first
    appearance, i.e. the update instant as the host saw it; resets and wraps unwrapped). The counter is
    taken between its last update at or before ``start_s`` and its first at or after ``stop_s``; the
    energy of the two bits of time outside the run is their length times the power over the counter
    interval next to each (before the first, after the last update: the nearest the counter allows).

    The standard error counts the counter's mJ steps (1 mJ per reading, uniform), how much the power
    outside could differ in the bit outside the run from the interval next to it (the change between the
    two nearest intervals on that side, uniform, as a drift over at most one interval), and
    ``timing_sd_s``, the uncertainty of the host's update instants (polling: period / sqrt(12)), times
    the power step at each edge. None when the stream does not bracket the run with two counter updates
    on each side.
    """
    t = np.asarray(t_s, dtype=float)
    e = np.asarray(energy_mj, dtype=float)
    ok = np.isfinite(t) & np.isfinite(e)
    t, e = t[ok], e[ok]
    if t.size < 3:
        return None
    cum, _ = unwrap_energy_mj(e)
    first = np.concatenate([[True], np.diff(cum) != 0])
    tu, cu = t[first], cum[first] / 1000.0
    ia = np.nonzero(tu <= start_s)[0]
    ib = np.nonzero(tu >= stop_s)[0]
    if ia.size == 0 or ib.size == 0:
        return None
    a, b = int(ia[-1]), int(ib[0])
    if a < 2 or b + 2 >= tu.size:
        return None
    power = np.diff(cu) / np.diff(tu)          # power over each counter interval, W
    p_before, p_after = float(power[a - 1]), float(power[b])
    drift_before = abs(p_before - float(power[a - 2]))
    drift_after = abs(float(power[b + 1]) - p_after)
    gap0, gap1 = start_s - tu[a], tu[b] - stop_s
    energy = float(cu[b] - cu[a] - p_before * gap0 - p_after * gap1)
    p_in = energy / (stop_s - start_s)
    quant_w = 1e-3 / math.sqrt(6.0) / float(np.median(np.diff(tu)))   # one interval's power from two mJ floors
    parts = {"quantization_j": _COUNTER_QUANT_SD_J,
             "outside_power_j": math.hypot(gap0 * math.hypot(drift_before / math.sqrt(3.0), quant_w),
                                           gap1 * math.hypot(drift_after / math.sqrt(3.0), quant_w)),
             "timing_j": timing_sd_s * math.hypot(p_in - p_before, p_in - p_after)}
    se = math.sqrt(sum(v * v for v in parts.values()))
    return RunEnergy(energy, se, "counter", 1, 1.0, None,
                     {**parts, "power_before_w": p_before, "power_after_w": p_after, "gap_s": [gap0, gap1]})


def mean_run_energy(runs: Sequence[RunEnergy]) -> RunEnergy:
    """The mean of several runs' counter energies (:func:`counter_run_energy`) with its standard error:
    the counter's mJ steps are independent from run to run, but the power outside each run drifts the
    same way every time (the card cooling before, or still warm after, each run), so that part and the
    timing part are counted as fully correlated -- averaging runs does not shrink them."""
    if not runs:
        raise ValueError("mean_run_energy: no runs")
    n = len(runs)
    d = [r.detail or {} for r in runs]
    quant = math.sqrt(sum(x.get("quantization_j", 0.0) ** 2 for x in d)) / n
    outside = sum(x.get("outside_power_j", 0.0) for x in d) / n
    timing = sum(x.get("timing_j", 0.0) for x in d) / n
    se = math.sqrt(quant ** 2 + outside ** 2 + timing ** 2)
    return RunEnergy(float(np.mean([r.energy_j for r in runs])), se, runs[0].source, n, 1.0, None,
                     {"quantization_j": quant, "outside_power_j": outside, "timing_j": timing,
                      "run_energies_j": [r.energy_j for r in runs]})


@dataclass(frozen=True)
class Run:
    """One kernel run and the readings around it: ``t_s``, ``power_w`` (the stream's times and power
    readings; repeats collapsed by the caller or not) and the run's ``start_s``, ``stop_s``."""

    t_s: np.ndarray
    power_w: np.ndarray
    start_s: float
    stop_s: float


def _outside_power(t: np.ndarray, y: np.ndarray, lo: float, hi: float) -> float:
    sel = (t >= lo) & (t <= hi)
    return float(np.mean(y[sel])) if sel.any() else math.nan


def power_run_energy(runs: Sequence[Run], *, window_s: float, lag_s: float, update_period_s: float,
                     noise_w: float, window_stderr_s: float = 0.0, lag_stderr_s: float = 0.0,
                     guard_s: float = 1.0, groups: int = 1) -> RunEnergy:
    """Energy (J) of one kernel run from power readings pooled over ``runs`` of the same kernel (module
    comment above): each reading is the mean power over ``[t - lag_s - window_s, t - lag_s]``.

    Readings are each value's first appearance (repeats collapsed here). The power outside a run is the
    mean of the readings whose windows lie within ``guard_s`` before its start (after its end). Instants
    no window saw are filled by interpolation, and ``covered`` says how much of the run that was.

    Standard error (error propagation): the readings' noise ``noise_w`` through the pooling (a reading's
    window energy enters once per instant it covers, divided by the number of windows covering it); the
    measured window and lag's own errors (``window_stderr_s``, ``lag_stderr_s``: the energy recomputed
    one standard error away); and, for time no window saw, its length times the spread of the power that
    was seen, less the readings' noise (unseen power is unknown: aliasing with a kernel's own period can
    make it anything in that range, so this part does not shrink with the length). With ``groups`` >= 2 (run ``i`` in group ``i mod groups``, each group tiling the update
    period: :func:`microbench.power_sampling.phase_offsets` orders the runs so) the groups' own
    estimates are reported in ``detail`` as a check (they also differ by the drift between runs, so their
    spread is not the error of the pooled value).
    """
    if not runs:
        raise ValueError("power_run_energy: no runs")
    if not (window_s > 0 and update_period_s > 0):
        raise ValueError(f"power_run_energy: window_s and update_period_s must be positive, got {window_s}, "
                         f"{update_period_s}")
    durations = np.array([r.stop_s - r.start_s for r in runs])
    span = float(np.median(durations))
    h = max(min(window_s, update_period_s) / 25.0, span / 20000.0)   # reconstruction grid, s
    n_cells = max(1, int(round(span / h)))
    h = span / n_cells

    def pool(rs: Sequence[Run], w: float = window_s, lag: float = lag_s) -> dict[str, Any]:
        return _pool(rs, w, lag, guard_s, n_cells, h, span, update_period_s, noise_w)

    pooled = pool(runs)
    energy, covered, seen_sd = pooled["energy_j"], pooled["covered"], pooled["seen_sd_w"]
    noise_j = noise_w * math.sqrt(pooled["weight_sq"])
    window_j = abs(pool(runs, w=window_s + window_stderr_s)["energy_j"] - energy) if window_stderr_s > 0 else 0.0
    lag_j = abs(pool(runs, lag=lag_s + lag_stderr_s)["energy_j"] - energy) if lag_stderr_s > 0 else 0.0
    unseen_j = (1.0 - covered) * span * seen_sd
    detail: dict[str, Any] = {"noise_j": noise_j, "window_j": window_j, "lag_j": lag_j, "unseen_j": unseen_j,
                              "outside_power_w": pooled["outside_w"], "readings_used": pooled["used"]}
    k = int(groups)
    if k >= 2 and len(runs) >= k:
        detail["group_energies_j"] = [pool(runs[g::k])["energy_j"] for g in range(k)]
    se = math.sqrt(noise_j ** 2 + window_j ** 2 + lag_j ** 2 + unseen_j ** 2)
    source = "power_phased" if len(runs) > 1 else "power"
    return RunEnergy(energy, se, source, len(runs), covered, None, detail)


def update_readings(t_s: np.ndarray, values: np.ndarray, update_period_s: float) -> tuple[np.ndarray, np.ndarray]:
    """Each update of a reading once.

    A stream with about one row per update (the median spacing over half an update period: the
    virtual GPU's, or a slow poll) is each update already and is kept whole. A polled stream repeats
    each update until the next; a row is then a new update when its value differs from the last one
    kept (at its first appearance), or, for an update that repeated the value (a window inside a flat
    phase, a counter's whole mJ), when it comes one and a half update periods or more after it -- it is
    then put on the update grid, one period after the last. Collapsing every repeat instead would drop
    those updates and leave holes.
    """
    t = np.asarray(t_s, dtype=float)
    y = np.asarray(values, dtype=float)
    if t.size < 2 or float(np.median(np.diff(t))) > 0.5 * update_period_s:
        return t, y
    keep_t, keep_y = [float(t[0])], [float(y[0])]
    for ti, yi in zip(t[1:].tolist(), y[1:].tolist()):
        dt = ti - keep_t[-1]
        if yi != keep_y[-1]:
            keep_t.append(ti)
            keep_y.append(yi)
        elif dt >= 1.5 * update_period_s:
            keep_t.append(keep_t[-1] + update_period_s * math.floor(dt / update_period_s - 0.5))
            keep_y.append(yi)
    return np.asarray(keep_t), np.asarray(keep_y)


def _pool(runs: Sequence[Run], window_s: float, lag_s: float, guard_s: float, n_cells: int, h: float,
          span: float, update_period_s: float, noise_w: float = 0.0) -> dict[str, Any]:
    """The pooled reconstruction of :func:`power_run_energy` on ``n_cells`` cells of ``h`` s."""
    acc = np.zeros(n_cells + 1)
    cnt = np.zeros(n_cells + 1)
    contrib: list[tuple[int, int, float]] = []
    outside = []
    used = 0
    for r in runs:
        t = np.asarray(r.t_s, dtype=float)
        y = np.asarray(r.power_w, dtype=float)
        ok = np.isfinite(t) & np.isfinite(y)
        t, y = t[ok], y[ok]
        t, y = update_readings(t, y, update_period_s)
        end = t - lag_s                     # window ends, run clock
        begin = end - window_s
        d = r.stop_s - r.start_s
        p_before = _outside_power(t, y, r.start_s - guard_s + window_s + lag_s, r.start_s + lag_s)
        p_after = _outside_power(t, y, r.stop_s + window_s + lag_s, r.stop_s + guard_s + window_s + lag_s)
        outside.append((p_before, p_after))
        for bgn, e, yk in zip(begin - r.start_s, end - r.start_s, y):
            lo, hi = max(bgn, 0.0), min(e, d)
            inside = hi - lo
            if inside < 0.05 * window_s:   # (almost) all outside: nothing to learn about the run
                continue
            before = max(0.0, min(e, 0.0) - bgn)
            after = max(0.0, e - max(bgn, d))
            if (before and not math.isfinite(p_before)) or (after and not math.isfinite(p_after)):
                continue
            pk = (window_s * yk - (p_before * before if before else 0.0) - (p_after * after if after else 0.0)) / inside
            # the run's own clock is stretched onto the common span (runs differ by microseconds)
            i0 = int(math.floor(lo / d * n_cells + 0.5))
            i1 = int(math.floor(hi / d * n_cells + 0.5))
            if i1 <= i0:
                continue
            acc[i0] += pk
            acc[i1] -= pk
            cnt[i0] += 1
            cnt[i1] -= 1
            contrib.append((i0, i1, window_s / inside))
            used += 1
    acc = np.cumsum(acc)[:n_cells]
    cnt = np.cumsum(cnt)[:n_cells]
    seen = cnt > 0.5
    centers = (np.arange(n_cells) + 0.5) * h
    if not seen.any():
        raise ValueError("power_run_energy: no reading's window overlaps the runs")
    p_hat = np.interp(centers, centers[seen], acc[seen] / cnt[seen])
    energy = float(p_hat.sum() * h)
    # weight of each seen cell's value in the energy: its own h plus its share of the unseen cells
    # interpolated from it (linear between the nearest seen cells on each side, flat beyond the ends)
    idx = np.nonzero(seen)[0]
    cell_w = np.where(seen, h, 0.0)
    gaps = np.nonzero(~seen)[0]
    if gaps.size:
        pos = np.searchsorted(idx, gaps)
        left = idx[np.clip(pos - 1, 0, idx.size - 1)]
        right = idx[np.clip(pos, 0, idx.size - 1)]
        span_lr = np.where(right > left, right - left, 1)
        wr = np.where(right > left, (gaps - left) / span_lr, np.where(pos >= idx.size, 0.0, 1.0))
        np.add.at(cell_w, left, h * (1.0 - wr))
        np.add.at(cell_w, right, h * wr)
    # noise weight: a reading's error e enters its cells' means as e * W / inside / count
    weight_sq = 0.0
    for i0, i1, scale in contrib:
        c = cnt[i0:i1]
        wk = scale * float(np.sum(cell_w[i0:i1][c > 0.5] / c[c > 0.5]))
        weight_sq += wk * wk
    # spread of the power seen, less what the readings' noise adds to it (a cell's mean over cnt windows)
    seen_var = float(np.var(p_hat[seen])) if seen.sum() > 1 else 0.0
    noise_var = float(np.mean(1.0 / cnt[seen])) * noise_w ** 2 if seen.any() else 0.0
    seen_sd = math.sqrt(max(0.0, seen_var - noise_var))
    return {"energy_j": energy, "covered": float(seen.mean()), "weight_sq": weight_sq, "seen_sd_w": seen_sd,
            "outside_w": outside, "used": used}


def sampled_window_energy(t_s: Sequence[float], power_w: Sequence[float] | None, energy_mj: Sequence[float] | None,
                          t0_s: float, t1_s: float, sampling: Mapping[str, Any]) -> RunEnergy | None:
    """A measurement window's energy (J, with its standard error) under the sampling measured for the
    session (the manifest's ``power_sampling``, :meth:`microbench.power_sampling.SamplingFacts.to_dict`):
    from the counter where it integrates all of the time (:func:`counter_run_energy`), else from the
    power readings with their window and lag (:func:`power_run_energy`, one run: a part-time reading
    leaves time unseen, which the standard error counts). None when the stream cannot give it."""
    src = sampling.get("energy_source")
    if src == "counter":
        if energy_mj is None:
            return None
        return counter_run_energy(t_s, energy_mj, t0_s, t1_s)
    if power_w is None:
        return None
    t = np.asarray(t_s, dtype=float)
    if t.size < 3 or t[0] > t0_s or t[-1] < t1_s:
        return None
    try:
        return power_run_energy([Run(t, np.asarray(power_w, dtype=float), t0_s, t1_s)],
                                window_s=float(sampling["power_window_s"]), lag_s=float(sampling.get("power_lag_s", 0.0)),
                                update_period_s=float(sampling["update_period_s"]),
                                noise_w=float(sampling.get("power_noise_w", 0.0)),
                                window_stderr_s=float(sampling.get("power_window_stderr_s", 0.0)))
    except ValueError:
        return None
