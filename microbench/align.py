"""Aligning sensor streams in time (NVML vs a power analyzer, or either vs the commanded load).

All streams of a session are stamped with the same host clocks (``t_mono_s``, ``t_wall_s``), but
each stamp is the time a value *reached the host*, not when the sensor measured it: NVML's power
reading lags the load (its averaging window, reported as ~300 ms for DCGM activity metrics), a
serial analyzer's frame waits in USB/serial buffers for milliseconds, a 1 s Watts up? record
describes the second before it. To align the streams, drive a known load pattern and measure each
stream's lag against it:

1. :func:`square_wave` alternates a power-hungry workload and idle (e.g. 1 s / 1 s, 5 cycles) and
   returns the commanded edges (host monotonic time), marked in the session as ``idle_start`` /
   ``idle_stop`` with workload ``"align"``;
2. :func:`estimate_lag` cross-correlates each stream's power with the commanded pattern
   (:func:`pattern_signal`) -- or one stream with another -- on a uniform grid, and refines the peak
   with a parabola: the lag resolution is a fraction of the grid step;
3. :func:`shift` moves a stream's time columns back by its lag.

Device markers do the same for instruments that support them (PowerSensor3 ``mark()``): the host
time of ``mark()`` vs the arrival time of the marked frame bounds the transport latency.

The residual offset after alignment is what this cannot remove: the jitter of host arrival stamps
and the sensor's own smoothing. The README quotes the figures measured by the tests and
``tests/benchmarks/bench_logger.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import signal


@dataclass(frozen=True)
class LagEstimate:
    """``other`` lags ``ref`` by ``lag_s`` seconds (positive: ``other`` sees things later).

    ``correlation`` is the normalised cross-correlation at the peak (1 = identical shape);
    ``step_s`` the grid step used; ``n`` the number of grid points in the overlap.
    """

    lag_s: float
    correlation: float
    step_s: float
    n: int


def _clean(t: Sequence[float], x: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    t = np.asarray(t, dtype=float)
    x = np.asarray(x, dtype=float)
    ok = np.isfinite(t) & np.isfinite(x)
    t, x = t[ok], x[ok]
    order = np.argsort(t, kind="stable")
    return t[order], x[order]


def estimate_lag(ref_t: Sequence[float], ref_x: Sequence[float], other_t: Sequence[float],
                 other_x: Sequence[float], *, max_lag_s: float = 1.0, step_s: float = 0.002) -> LagEstimate:
    """Lag of ``other`` behind ``ref`` by cross-correlation (times in s on the same clock).

    Both series are linearly resampled onto a common grid of ``step_s`` over their overlap,
    standardised, and correlated for lags in ``[-max_lag_s, max_lag_s]``. Raises ``ValueError`` when
    the overlap is too short or a series is constant (nothing to align on).
    """
    rt, rx = _clean(ref_t, ref_x)
    ot, ox = _clean(other_t, other_x)
    if rt.size < 2 or ot.size < 2:
        raise ValueError("estimate_lag: each series needs at least 2 finite samples")
    lo, hi = max(rt[0], ot[0]), min(rt[-1], ot[-1])
    if hi - lo < 4 * max_lag_s:
        raise ValueError(f"estimate_lag: the series overlap for {max(0.0, hi - lo):.3f} s; need at least "
                         f"{4 * max_lag_s:.3f} s (4 x max_lag_s)")
    grid = np.arange(lo, hi, step_s)
    a = np.interp(grid, rt, rx)
    b = np.interp(grid, ot, ox)
    if a.std() == 0 or b.std() == 0:
        raise ValueError("estimate_lag: a series is constant over the overlap; drive a load pattern first")
    a = (a - a.mean()) / a.std()
    b = (b - b.mean()) / b.std()
    corr = signal.correlate(b, a, mode="full", method="fft")
    lags = signal.correlation_lags(b.size, a.size, mode="full")
    k = int(round(max_lag_s / step_s))
    sel = np.abs(lags) <= k
    c, lg = corr[sel], lags[sel]
    overlap = b.size - np.abs(lg)  # normalise by the number of overlapping points at each lag
    c = c / overlap
    i = int(np.argmax(c))
    frac = 0.0
    if 0 < i < c.size - 1:  # parabolic refinement of the peak
        y0, y1, y2 = c[i - 1], c[i], c[i + 1]
        den = y0 - 2 * y1 + y2
        frac = 0.5 * (y0 - y2) / den if den != 0 else 0.0
    return LagEstimate(float((lg[i] + frac) * step_s), float(c[i]), step_s, int(grid.size))


def pattern_signal(edges: Sequence[tuple[float, float]], t: Sequence[float]) -> np.ndarray:
    """The commanded pattern at times ``t``: 1 inside any ``(start, stop)`` high phase, else 0 (all in s,
    on one clock, e.g. the host's monotonic clock)."""
    t = np.asarray(t, dtype=float)
    y = np.zeros_like(t)
    for a, b in edges:
        y[(t >= a) & (t < b)] = 1.0
    return y


def lag_vs_pattern(edges: Sequence[tuple[float, float]], t: Sequence[float], power_w: Sequence[float], *,
                   max_lag_s: float = 1.0, step_s: float = 0.002) -> LagEstimate:
    """Lag of a power stream (``t`` in s, ``power_w`` in W) behind the commanded square wave ``edges`` (s,
    same clock as ``t``)."""
    lo = edges[0][0] - 2 * max_lag_s
    hi = edges[-1][1] + 2 * max_lag_s
    ref_t = np.arange(lo, hi, step_s / 2)
    return estimate_lag(ref_t, pattern_signal(edges, ref_t), t, power_w, max_lag_s=max_lag_s, step_s=step_s)


def shift(df: Any, lag_s: float, columns: Sequence[str] = ("t_mono_s", "t_wall_s")) -> Any:
    """A copy of stream table ``df`` with its time columns moved back by ``lag_s`` (undo a lag)."""
    out = df.copy()
    for c in columns:
        if c in out:
            out[c] = out[c] - lag_s
    return out


def square_wave(device: Any, workload: Any, *, high_s: float = 1.0, low_s: float = 1.0, cycles: int = 5,
                mark: Callable[..., None] | None = None,
                clock: Callable[[], float] | None = None) -> list[tuple[float, float]]:
    """Drive ``device`` with ``workload`` for ``high_s`` then idle for ``low_s``, ``cycles`` times.

    Returns the commanded high phases as ``(start, stop)`` on the host monotonic clock (taken
    right before and after ``device.run``). ``mark`` (e.g. ``writer.mark``) receives
    ``idle_stop``/``idle_start`` markers with workload ``"align"`` at every edge.
    """
    import time

    now = clock or time.monotonic
    edges = []
    device.idle(low_s)
    for i in range(cycles):
        t0 = now()
        if mark:
            mark("idle_stop", workload="align", repeat=i)
        device.run(workload, high_s)
        t1 = now()
        if mark:
            mark("idle_start", workload="align", repeat=i)
        edges.append((t0, t1))
        device.idle(low_s)
    return edges
