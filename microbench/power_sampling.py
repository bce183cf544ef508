"""How NVML samples a GPU's power, measured: update period, averaging window, share of time covered.

On A100 and H100 NVML's power reading covers only 25 ms of every 100 ms (Yang, Adamek, Armour,
"Part-time Power Measurements: nvidia-smi's Lack of Attention", arXiv 2312.02741 / SC24); on Ampere
(except GA100) and newer ``nvmlDeviceGetPowerUsage`` is a 1 s average; the energy counter updates about
every 100 ms (../shared/reference/measurement-notes.md, sections 3.2, 3.3, 3.7). None of this can be
read from the driver, so it is measured here with the paper's method -- loads of known shape against
the power readings and the energy counter:

1. **update period** ``U``: a steady load; the instants at which the reading changes (each new value's
   first appearance) lie on a grid ``t0 + k U``; ``U`` is the slope of a line through them
   (:func:`fit_update_period`), robust to updates that repeated a value or were missed;
2. **averaging window** ``W`` (and lag): square waves of known period and edges (the GPU runs a kernel
   for half of each period and idles for the rest). A reading that averages the power over
   ``[t - lag - W, t - lag]`` sees each edge as a ramp ``W`` long; :func:`fit_boxcar` fits ``W`` and the
   lag (and the two power levels and a slow drift) to all readings at once. A slow wave (3 s) brackets
   windows up to about 1.4 s; a fast one of period ``2.03 U`` spreads the readings over every phase of
   its cycle (3 % of ``U`` apart), which resolves windows down to a few ms;
3. **share of time covered** ``min(1, W / U)``: 0.25 on A100/H100;
4. the **energy counter** the same way: its increments divided by the time between its updates are a
   reading too, whose window says whether the counter integrates all the time (window = its update
   period) or adds part-time samples (window shorter).

The facts go into the campaign's manifest (``power_sampling``) and decide how a window's energy is
taken (:mod:`calib.windows`): the counter where it integrates all the time; otherwise the readings of
windows repeated at shifted phases of the sampling grid (:func:`phase_offsets`, :func:`run_at`), so that
together they cover every instant. The same code runs on a real GPU (a thread polls NVML, the host
times the square wave) and on the virtual GPUs, whose sensors sample like the real ones
(:mod:`microbench.devices.sim.sensors`) and whose truths (:mod:`microbench.sampling_truth`) the tests
compare with -- this module never reads them.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from typing import Any

import numpy as np

from calib.core.atomic import json_safe
from calib.core.errors import BadInputError, DeviceError
from microbench.devices.base import Device, Sensor, Workload

log = logging.getLogger(__name__)

#: a reading covering at least this share of the time counts as full-time
FULL_TIME = 0.95
#: period of the slow square wave, s (half periods bracket windows up to ~1.4 s)
SLOW_PERIOD_S = 3.0
#: the fast square wave's period in update periods: not a whole number, so its readings walk through
#: every phase of the wave (0.03 U apart)
FAST_PERIODS_PER_UPDATE = 2.03
#: polling period of the NVML tap on a real GPU, s
TAP_POLL_S = 0.002


@dataclass(frozen=True)
class SamplingFacts:
    """What NVML's power reading and energy counter cover, as measured (times in s).

    ``power_window_s`` is the width of the boxcar the reading averages, ``power_lag_s`` how long after
    the window's end the host sees the value, ``coverage`` = min(1, window / update period): the share
    of the time the reading sees. ``counter_*``: the same for the energy counter (None without one).
    ``power_noise_w``: residual scatter of the readings around the fitted boxcar, W; ``fit_residual_rel``
    that scatter relative to the square wave's step (a boxcar that does not describe the sensor shows
    here). Standard errors (``*_stderr_s``) are the fits' (least squares covariance scaled by the
    residual variance).
    """

    update_period_s: float
    update_period_stderr_s: float
    power_window_s: float
    power_window_stderr_s: float
    power_lag_s: float
    power_noise_w: float
    fit_residual_rel: float
    counter_update_s: float | None = None
    counter_window_s: float | None = None
    counter_window_stderr_s: float | None = None
    counter_lag_s: float | None = None
    power_column: str = "power_w"
    method: str = "square waves against readings and counter (Yang, Adamek, Armour, arXiv 2312.02741)"
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def coverage(self) -> float:
        """Share of the time the power reading sees (1 when its windows overlap)."""
        return min(1.0, self.power_window_s / self.update_period_s)

    @property
    def counter_coverage(self) -> float | None:
        """Share of the time the energy counter integrates (None without a counter)."""
        if self.counter_window_s is None or not self.counter_update_s:
            return None
        return min(1.0, self.counter_window_s / self.counter_update_s)

    @property
    def part_time(self) -> bool:
        """Whether the power reading misses part of the time."""
        return self.coverage < FULL_TIME

    @property
    def counter_full_time(self) -> bool:
        """Whether the energy counter integrates all of the time (the better source then)."""
        c = self.counter_coverage
        return c is not None and c >= FULL_TIME

    def to_dict(self) -> dict[str, Any]:
        """Manifest entry (``power_sampling``): the measured values plus coverage and the source choice."""
        d = asdict(self)
        d.update(coverage=self.coverage, counter_coverage=self.counter_coverage, part_time=self.part_time,
                 counter_full_time=self.counter_full_time, energy_source=energy_source(self))
        return json_safe(d)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "SamplingFacts":
        """Back from :meth:`to_dict` (derived keys ignored); BadInputError naming a missing field."""
        names = set(cls.__dataclass_fields__)
        missing = [f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING
                   and f.name not in d]
        if missing:
            raise BadInputError(f"power_sampling: field(s) {', '.join(missing)} missing")
        return cls(**{k: v for k, v in d.items() if k in names})


def energy_source(facts: SamplingFacts) -> str:
    """Where a window's energy comes from under ``facts``: ``counter`` (it integrates all the time),
    ``power`` (the reading does) or ``power_phased`` (both are part-time: readings of windows repeated
    at shifted phases of the sampling grid)."""
    if facts.counter_full_time:
        return "counter"
    return "power" if not facts.part_time else "power_phased"


def phase_offsets(facts: SamplingFacts, tilings: int = 2) -> list[float]:
    """Start offsets (s, within one update period) of repeated windows so that their readings tile
    every instant ``tilings`` times: ``n = tilings x ceil(U / W)`` offsets ``k U / n`` in order, so the
    runs whose index is ``g`` modulo ``tilings`` are a complete tiling of their own (offsets ``U /
    ceil(U / W)`` apart) and the groups interleave in time (a drift over the session -- the card warming
    up -- reaches every group alike). One offset when the reading covers all of the time."""
    if not facts.part_time:
        return [0.0]
    ratio = facts.update_period_s / max(facts.power_window_s, 1e-6)
    # U / W within 5 % of a whole number (25 ms of 100): that many windows tile U, overlapping or leaving
    # gaps of a few per cent of W that the pooling fills; otherwise enough to cover it
    per = int(round(ratio)) if abs(ratio - round(ratio)) < 0.05 * ratio / max(1, round(ratio)) + 1e-9 \
        else int(math.ceil(ratio - 1e-9))
    n = per * max(1, int(tilings))
    return [k * facts.update_period_s / n for k in range(n)]


# ------------------------------------------------------------------------------------------------
# Analysis (pure functions of readings)
# ------------------------------------------------------------------------------------------------

def change_instants(t_s: Sequence[float], values: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Times and values at which each new value first appeared (repeats of a value collapsed, missing
    values skipped): the host-side instants of the sensor's updates."""
    t = np.asarray(t_s, dtype=float)
    v = np.asarray(values, dtype=float)
    ok = np.isfinite(v) & np.isfinite(t)
    t, v = t[ok], v[ok]
    if t.size == 0:
        return t, v
    new = np.concatenate([[True], np.diff(v) != 0])
    return t[new], v[new]


def fit_update_period(t_changes: Sequence[float]) -> tuple[float, float, float]:
    """``(U, stderr of U, t0)`` of update instants ``t0 + k U`` from observed change instants.

    Consecutive changes are one or more updates apart (an update that repeats a value is not seen);
    each is given its whole number of periods from a first guess (the median gap), then a straight
    line ``t = t0 + U k`` is fitted, dropping instants more than a quarter period off it. Raises
    BadInputError with fewer than 5 changes.
    """
    t = np.sort(np.asarray(t_changes, dtype=float))
    if t.size < 5:
        raise BadInputError(f"update period: {t.size} changes of the reading; need at least 5 (is the GPU loaded?)")
    gaps = np.diff(t)
    q = float(np.percentile(gaps, 10))
    if not q > 0:
        raise BadInputError("update period: the reading changes at identical instants")
    # the period is the largest q / n (n = 1..6) of which the gaps are whole multiples (to a tenth of it):
    # when few consecutive updates change the value, even the short gaps span two or more periods
    u0 = q
    for n in range(1, 7):
        cand = q / n
        frac = gaps / cand - np.round(gaps / cand)
        if float(np.sqrt(np.mean(frac ** 2))) < 0.1:
            u0 = float(np.median(gaps / np.maximum(1.0, np.round(gaps / cand))))
            break
    keep = np.ones(t.size, dtype=bool)
    for _ in range(3):
        k = np.round((t - t[0]) / u0)
        A = np.vstack([np.ones(t.size), k]).T
        coef, *_ = np.linalg.lstsq(A[keep], t[keep], rcond=None)
        resid = t - A @ coef
        new_keep = np.abs(resid) < u0 / 4
        u0 = float(coef[1])
        if (new_keep == keep).all():
            break
        keep = new_keep
    k = np.round((t - t[0]) / u0)[keep]
    tk = t[keep]
    A = np.vstack([np.ones(k.size), k]).T
    coef, res, *_ = np.linalg.lstsq(A, tk, rcond=None)
    dof = max(1, k.size - 2)
    s2 = float(np.sum((tk - A @ coef) ** 2)) / dof
    cov = s2 * np.linalg.inv(A.T @ A)
    return float(coef[1]), float(math.sqrt(max(cov[1, 1], 0.0))), float(coef[0])


def window_fraction(t_end: np.ndarray, width_s: float, on: np.ndarray) -> np.ndarray:
    """Share of each window ``[t_end - width_s, t_end]`` covered by the union of disjoint intervals
    ``on`` (rows ``[start, stop]``)."""
    t_end = np.asarray(t_end, dtype=float)[:, None]
    a = t_end - width_s
    lo = np.maximum(a, on[None, :, 0])
    hi = np.minimum(t_end, on[None, :, 1])
    return np.clip(hi - lo, 0.0, None).sum(axis=1) / width_s


@dataclass(frozen=True)
class BoxcarFit:
    """A boxcar fitted to readings of a square-wave load: width and lag (s), the two levels at the
    middle of the wave and the drift's slope there (W, W/s), residual scatter (W) and standard errors."""

    width_s: float
    width_stderr_s: float
    lag_s: float
    lag_stderr_s: float
    low_w: float
    high_w: float
    drift_w_per_s: float
    resid_w: float
    n: int

    @property
    def step_w(self) -> float:
        return self.high_w - self.low_w


#: degree of the polynomial drift of the levels (the card warms over a wave: leakage, fans)
DRIFT_DEGREE = 3


def _drift_basis(t: np.ndarray, t_mid: float, half_span: float) -> np.ndarray:
    x = (t - t_mid) / half_span
    return np.vstack([x ** k for k in range(1, DRIFT_DEGREE + 1)])


def _levels(frac: np.ndarray, t: np.ndarray, y: np.ndarray, t_mid: float, half_span: float) -> tuple[np.ndarray, float]:
    A = np.vstack([np.ones_like(frac), frac, _drift_basis(t, t_mid, half_span)]).T
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    r = y - A @ coef
    return coef, float(r @ r)


def fit_boxcar(t_s: Sequence[float], y: Sequence[float], on: Sequence[tuple[float, float]], *,
               width_range_s: tuple[float, float], lag_max_s: float) -> BoxcarFit:
    """Fit ``y(t) = low + (high - low) x share of [t - lag - W, t - lag] inside ``on`` + drift(t)``.

    The drift is a cubic in time (zero at the middle): the card warms over a wave, and its leakage and
    fans add a slow, curved change to both levels that a straight line leaves in the ramps.

    ``on``: the load's high intervals (s). A grid over ``W`` (log-spaced in ``width_range_s``) and the
    lag (0 to ``lag_max_s``) with the linear parameters solved at each point finds the basin; a
    bounded least-squares refinement gives the values and standard errors (covariance from the
    Jacobian, scaled by the residual variance).
    """
    from scipy.optimize import least_squares

    t = np.asarray(t_s, dtype=float)
    yv = np.asarray(y, dtype=float)
    ok = np.isfinite(t) & np.isfinite(yv)
    t, yv = t[ok], yv[ok]
    iv = np.asarray(on, dtype=float).reshape(-1, 2)
    if t.size < 8 or iv.size == 0:
        raise BadInputError(f"boxcar fit: {t.size} readings and {len(iv)} load intervals; need 8 and 1")
    t_mid = float(np.mean(t))
    half = max(float(np.ptp(t)) / 2.0, 1e-9)
    w_lo, w_hi = width_range_s
    best = (math.inf, w_lo, 0.0)
    for w in np.geomspace(w_lo, w_hi, 72):
        for lag in np.linspace(0.0, lag_max_s, 25):
            frac = window_fraction(t - lag, w, iv)
            if np.ptp(frac) < 1e-9:
                continue
            _, rss = _levels(frac, t, yv, t_mid, half)
            if rss < best[0]:
                best = (rss, float(w), float(lag))
    _, w0, lag0 = best
    coef0, _ = _levels(window_fraction(t - lag0, w0, iv), t, yv, t_mid, half)
    basis = _drift_basis(t, t_mid, half)
    npar = 4 + DRIFT_DEGREE

    def resid(x: np.ndarray) -> np.ndarray:
        w, lag, lo, step = x[:4]
        return lo + step * window_fraction(t - lag, w, iv) + x[4:] @ basis - yv

    x0 = np.concatenate([[w0, lag0], coef0])
    lb = [w_lo * 0.5, -0.25 * lag_max_s - 1e-3] + [-np.inf] * (npar - 2)
    ub = [w_hi * 1.5, lag_max_s * 1.25 + 1e-3] + [np.inf] * (npar - 2)
    x0 = np.clip(x0, np.array(lb) + 1e-12, np.array(ub) - 1e-12)
    res = least_squares(resid, x0, bounds=(lb, ub), x_scale=[w0, max(w0, 1e-3)] + [1.0] * (npar - 2),
                        diff_step=1e-4)
    r = res.fun
    dof = max(1, r.size - npar)
    s2 = float(r @ r) / dof
    try:
        cov = np.linalg.inv(res.jac.T @ res.jac) * s2
        se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    except np.linalg.LinAlgError:
        se = np.full(npar, np.nan)
    w, lag, lo, step = res.x[:4]
    return BoxcarFit(float(w), float(se[0]), float(lag), float(se[1]), float(lo), float(lo + step),
                     float(res.x[4] / half), float(math.sqrt(s2)), int(r.size))


def counter_readings(t_s: Sequence[float], energy_mj: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """The energy counter as a power reading: at each update instant (first appearance of a new value)
    the increment since the previous update divided by the time between them (W)."""
    tc, c = change_instants(t_s, energy_mj)
    if tc.size < 3:
        return np.zeros(0), np.zeros(0)
    dt = np.diff(tc)
    return tc[1:], np.diff(c) / 1000.0 / dt


# ------------------------------------------------------------------------------------------------
# Driving a device
# ------------------------------------------------------------------------------------------------

def nvml_sensor(device: Device) -> Sensor:
    """The device's own telemetry stream with a power reading (the first sensor of scope ``gpu`` with a
    ``power_w`` column: NVML on NVIDIA GPUs); DeviceError when it has none."""
    for s in device.sensors():
        if getattr(s, "scope", "gpu") == "gpu" and "power_w" in s.columns:
            return s
    raise DeviceError(f"{device.info.name}: no GPU power sensor: power sampling cannot be measured")


class NvmlTap:
    """The NVML stream's readings while measurements run: the virtual sensor drained after each step
    (its rows are at the update instants), or, on a real GPU, a thread polling the sensor every
    ``poll_s`` (each value's first appearance is then its update instant, up to one poll late).

    Use as a context manager; :meth:`take` returns everything collected since the last call as arrays
    ``t`` (device monotonic clock, s), ``power_w``, ``energy_mj``, ``read_s`` (host time per poll)."""

    def __init__(self, device: Device, poll_s: float = TAP_POLL_S):
        self.device = device
        self.sensor = nvml_sensor(device)
        self.poll_s = float(poll_s)
        self._rows: list[tuple[float, float, float, float]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self.polls = 0

    def __enter__(self) -> "NvmlTap":
        if not self.device.virtual:
            self._thread = threading.Thread(target=self._poll, name="nvml-tap", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)

    def _collect(self) -> None:
        """The sensor's new rows as (t, power_w, energy_mj, read_s); ``polls`` counts the polls of a real
        GPU, the rows of a virtual one."""
        rows = [(r.t_mono_s, *(_num(r.values.get(k)) for k in ("power_w", "energy_mj", "read_s")))
                for r in self.sensor.read()]
        with self._lock:
            self._rows += rows
        self.polls += len(rows) if self.device.virtual else 1

    def _poll(self) -> None:
        try:
            while not self._stop.is_set():
                t0 = time.perf_counter()
                self._collect()
                rest = self.poll_s - (time.perf_counter() - t0)
                if rest > 0:
                    self._stop.wait(rest)
        except BaseException as e:  # noqa: BLE001 - reported by take()
            self._error = e

    def take(self) -> dict[str, np.ndarray]:
        """Readings collected since the previous call (arrays, time order)."""
        if self._error is not None:
            raise DeviceError(f"NVML tap stopped: {self._error}") from self._error
        if self.device.virtual:
            self._collect()
        with self._lock:
            rows, self._rows = self._rows, []
        a = np.asarray(rows, dtype=float).reshape(-1, 4)
        return {"t": a[:, 0], "power_w": a[:, 1], "energy_mj": a[:, 2], "read_s": a[:, 3]}


def _num(x: Any) -> float:
    try:
        return float(x) if x is not None else math.nan
    except (TypeError, ValueError):
        return math.nan


def _sim_span(seconds: float) -> float:
    """The virtual GPU advances in 100 ms steps: the run/idle length that covers ``seconds``."""
    from microbench.devices.sim.device import DT_S

    return DT_S * max(1, math.ceil(seconds / DT_S - 1e-9))


def wait(device: Device, seconds: float) -> None:
    """Idle the device for ``seconds`` (on a real GPU to within a millisecond: sleep, then spin)."""
    if seconds <= 0:
        return
    if device.virtual:
        device.idle(_sim_span(seconds))
        return
    end = time.monotonic() + seconds
    if seconds > 0.003:
        time.sleep(seconds - 0.002)
    while time.monotonic() < end:
        pass


def run_at(device: Device, workload: Workload, start_s: float, duration_s: float,
           shape: dict[str, float] | None = None) -> tuple[float, float]:
    """Run ``workload`` from ``start_s`` (device monotonic time, not earlier than now) for
    ``duration_s`` seconds, idle before; returns the kernel's (start, end) instants.

    On the virtual GPU the kernel starts and stops between simulation steps (trait ``power_shape``,
    optionally with a square wave ``shape`` = period_s/duty/low of the kernel's own power); the device
    then idles to the end of the last step. On a real GPU the host waits for ``start_s`` and launches.
    """
    now = device.clock()[0]
    delay = max(0.0, start_s - now)
    if device.virtual:
        from microbench.devices.sim.sensors import FINE_DT_S

        # the virtual GPU's true power is resolved to 1 ms: edges on that grid (steps start on it)
        delay = FINE_DT_S * round(delay / FINE_DT_S)
        duration_s = FINE_DT_S * max(1, round(duration_s / FINE_DT_S))
        trait = {**(shape or {}), "start_after_s": delay, "stop_after_s": delay + duration_s}
        w = replace(workload, traits={**dict(workload.traits), "power_shape": trait})
        device.run(w, _sim_span(delay + duration_s))
        return now + delay, now + delay + duration_s
    wait(device, delay)
    if shape:  # a real GPU: the host makes the bursts (the GPU idles between them)
        if float(shape.get("low", 0.0)) != 0.0:
            raise BadInputError("run_at: on a real GPU a shaped load can only idle between its bursts (low = 0)")
        on = square_wave(device, workload, float(shape["period_s"]), float(shape["duty"]), duration_s, lead_s=0.0)
        n = len(on)
        return on[0][0], on[0][0] + n * float(shape["period_s"])
    a = device.clock()[0]
    device.run(workload, duration_s)
    return a, device.clock()[0]


def square_wave(device: Device, workload: Workload, period_s: float, duty: float,
                duration_s: float, lead_s: float = 0.01) -> list[tuple[float, float]]:
    """Run ``workload`` for ``duty`` of every ``period_s`` (idle in between) for ``duration_s``; returns
    the high intervals (device monotonic time, s) -- on a real GPU as the host timed them (the launch
    before, the synchronisation after each burst), the first ``lead_s`` after the call."""
    if not (period_s > 0 and 0 < duty < 1 and duration_s >= period_s):
        raise BadInputError(f"square wave: needs period_s > 0, 0 < duty < 1, duration_s >= period_s "
                            f"(got {period_s}, {duty}, {duration_s})")
    n = int(duration_s // period_s)
    if device.virtual:
        from microbench.devices.sim.sensors import FINE_DT_S

        # the virtual GPU's true power is resolved to 1 ms: edges on that grid (an edge inside a ms is a
        # 1 ms ramp, which a boxcar fit of sharp edges would misread as a slightly wider window)
        period_s = FINE_DT_S * round(period_s / FINE_DT_S)
        duty = FINE_DT_S * round(duty * period_s / FINE_DT_S) / period_s
        t0 = device.clock()[0]
        trait = {"period_s": period_s, "duty": duty, "low": 0.0, "stop_after_s": n * period_s}
        device.run(replace(workload, traits={**dict(workload.traits), "power_shape": trait}), _sim_span(n * period_s))
        return [(t0 + i * period_s, t0 + i * period_s + duty * period_s) for i in range(n)]
    out = []
    t0 = device.clock()[0] + lead_s
    for i in range(n):
        wait(device, t0 + i * period_s - device.clock()[0])
        a = device.clock()[0]
        device.run(workload, duty * period_s)
        out.append((a, device.clock()[0]))
    wait(device, t0 + n * period_s - device.clock()[0])
    return out


def default_load(device: Device) -> Workload:
    """A steady compute load for the square waves: FP32 FMA chains, 32 warps on every SM, launches of
    about a millisecond (so a real GPU can start and stop within a few ms of the host's edges)."""
    from microbench.spec import Benchmark

    b = Benchmark(name="power_sampling/fp32_fma", kernel="fp32_fma", role="unit", stresses="fp", kind="unit",
                  params={"iters": 2048}, warps_per_sm=32, blocks_per_sm=4)
    return b.workload(device.info)


def next_phase_start(device: Device, tap_t: np.ndarray, tap_p: np.ndarray, update_period_s: float,
                     offset_s: float, lead_s: float = 0.3) -> float:
    """A start instant at least ``lead_s`` from now at ``offset_s`` past an update instant of the
    reading (the grid extrapolated from the latest change seen in ``tap_t``/``tap_p``)."""
    now = device.clock()[0]
    tc, _ = change_instants(tap_t, tap_p)
    if not tc.size:
        raise DeviceError("cannot align to NVML's sampling grid: the reading never changed")
    last = float(tc[-1])  # the latest update of the reading
    k = math.ceil((now + lead_s - last - offset_s) / update_period_s)
    return last + k * update_period_s + offset_s


# ------------------------------------------------------------------------------------------------
# The measurement
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CharacteriseSettings:
    """Durations (s) of the characterisation's parts: steady load, slow and fast square waves, the
    idle gap before each."""

    steady_s: float = 3.0
    slow_s: float = 15.0
    fast_s: float = 12.0
    gap_s: float = 1.0


def characterise(device: Device, workload: Workload | None = None,
                 settings: CharacteriseSettings = CharacteriseSettings(),
                 on_part: Callable[[str], None] | None = None) -> SamplingFacts:
    """Measure how NVML samples ``device``'s power (module docstring); about 35 s of device time."""
    w = workload or default_load(device)
    st = settings
    say = on_part or (lambda s: None)
    with NvmlTap(device) as tap:
        wait(device, st.gap_s)
        tap.take()
        say("steady load")
        device.run(w, st.steady_s)
        steady = tap.take()
        tc, _ = change_instants(steady["t"], steady["power_w"])
        tc = tc[tc > steady["t"][0] + 0.3] if steady["t"].size else tc  # past the load's first edge
        u, u_se, _ = fit_update_period(tc)
        ec, _ = change_instants(steady["t"], steady["energy_mj"])
        u_c = fit_update_period(ec)[0] if ec.size >= 5 else None
        say("slow square wave")
        wait(device, st.gap_s)
        tap.take()
        on_slow = square_wave(device, w, SLOW_PERIOD_S, 0.5, st.slow_s)
        wait(device, min(1.5, SLOW_PERIOD_S / 2))
        slow = tap.take()
        tp, yp = change_instants(slow["t"], slow["power_w"])
        fit_s = fit_boxcar(tp, yp, on_slow, width_range_s=(0.5e-3, 0.47 * SLOW_PERIOD_S), lag_max_s=u)
        say("fast square wave")
        # the slow wave resolves a window shorter than the update period badly (at most one reading per
        # edge falls on the ramp): undetermined, it is short, and the fast wave of 2.03 U (for windows up
        # to half an update period) resolves it; determined, its upper end sets the fast wave's period,
        # at most a third of the slow one's
        if _determined(fit_s):
            m = int(min(max(2, math.ceil(4.0 * (fit_s.width_s + 2 * fit_s.width_stderr_s) / u)),
                        max(2, SLOW_PERIOD_S / 3 // u)))
        else:
            m = 2
        fast_period = u * (m + FAST_PERIODS_PER_UPDATE - 2)
        wait(device, st.gap_s)
        tap.take()
        on_fast = square_wave(device, w, fast_period, 0.5, max(st.fast_s, 20 * fast_period))
        wait(device, max(u, fit_s.width_s) * 2)
        fast = tap.take()
    fit = fit_s
    details: dict[str, Any] = {"slow": _fit_dict(fit_s, SLOW_PERIOD_S)}
    tf, yf = change_instants(fast["t"], fast["power_w"])
    if not _determined(fit_s) or fit_s.width_s < fast_period / 4:
        fit_f = fit_boxcar(tf, yf, on_fast, width_range_s=(0.5e-3, 0.45 * fast_period), lag_max_s=u)
        details["fast"] = _fit_dict(fit_f, fast_period)
        if _determined(fit_f) or not _determined(fit_s):
            fit = fit_f
    facts: dict[str, Any] = {}
    ct, cy = counter_readings(fast["t"], fast["energy_mj"])
    if ct.size >= 8 and u_c:
        fit_c = fit_boxcar(ct, cy, on_fast, width_range_s=(0.5e-3, 1.5 * u_c), lag_max_s=u_c)
        details["counter"] = _fit_dict(fit_c, fast_period)
        facts.update(counter_update_s=u_c, counter_window_s=fit_c.width_s, counter_window_stderr_s=fit_c.width_stderr_s,
                     counter_lag_s=fit_c.lag_s)
    details["tap_polls_per_s"] = tap.polls / max(1e-9, float(np.ptp(np.concatenate([steady["t"], fast["t"]]))))
    return SamplingFacts(update_period_s=u, update_period_stderr_s=u_se, power_window_s=fit.width_s,
                         power_window_stderr_s=fit.width_stderr_s, power_lag_s=fit.lag_s,
                         power_noise_w=fit.resid_w, fit_residual_rel=fit.resid_w / max(abs(fit.step_w), 1e-9),
                         details=details, **facts)


def _determined(f: BoxcarFit) -> bool:
    """Whether a boxcar fit pinned its width down: a finite, positive standard error under half the width
    (a degenerate Jacobian gives none or zero)."""
    se = f.width_stderr_s
    return math.isfinite(se) and 0.0 < se < 0.5 * f.width_s


def _fit_dict(f: BoxcarFit, period_s: float) -> dict[str, float]:
    return {"period_s": period_s, "width_s": f.width_s, "width_stderr_s": f.width_stderr_s, "lag_s": f.lag_s,
            "lag_stderr_s": f.lag_stderr_s, "low_w": f.low_w, "high_w": f.high_w, "resid_w": f.resid_w,
            "readings": f.n}


# ------------------------------------------------------------------------------------------------
# Runs repeated at shifted phases of the sampling grid
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RunRecord:
    """One kernel run and the NVML readings around it (device monotonic time, s)."""

    start_s: float
    stop_s: float
    t_s: np.ndarray
    power_w: np.ndarray
    energy_mj: np.ndarray
    offset_s: float


def phased_runs(device: Device, workload: Workload, duration_s: float, facts: SamplingFacts, *,
                tilings: int = 2, shape: dict[str, float] | None = None, guard_s: float = 1.0,
                rest_s: float = 2.0, offsets: Sequence[float] | None = None) -> list[RunRecord]:
    """Run ``workload`` for ``duration_s`` once per offset of :func:`phase_offsets` (``tilings`` complete
    tilings of the update period when the reading is part-time, else once), each start placed at its
    offset past an update instant of the reading; ``rest_s`` idle between runs, ``guard_s`` of
    readings kept on each side (plus the window). ``shape``: a square-wave power of the kernel itself
    (virtual GPU only, see :func:`run_at`)."""
    offs = list(offsets) if offsets is not None else phase_offsets(facts, tilings)
    keep_after = guard_s + facts.power_window_s + max(facts.power_lag_s, 0.0) + facts.update_period_s
    out = []
    with NvmlTap(device) as tap:
        wait(device, guard_s + facts.power_window_s)
        data = tap.take()
        for off in offs:
            start = next_phase_start(device, data["t"], data["power_w"], facts.update_period_s, off, lead_s=guard_s)
            s0, s1 = run_at(device, workload, start, duration_s, shape)
            wait(device, keep_after)
            more = tap.take()
            allr = {k: np.concatenate([data[k], more[k]]) for k in data}
            sel = (allr["t"] >= s0 - guard_s - facts.power_window_s - 0.5) & (allr["t"] <= s1 + keep_after + 0.5)
            out.append(RunRecord(s0, s1, allr["t"][sel], allr["power_w"][sel], allr["energy_mj"][sel], off))
            wait(device, rest_s)
            data = tap.take()
    return out


#: idle after characterising a real GPU before its campaign starts (the square waves warmed it), s
COOL_AFTER_S = 60.0


def for_manifest(device: Device, seed: int = 0) -> dict[str, Any] | None:
    """The campaign manifest's ``power_sampling``: :func:`characterise` on the device (then idle
    :data:`COOL_AFTER_S`), or, on a virtual GPU, on an identical twin (same preset, its own noise), so the
    campaign runs exactly as it did before it measured this; None (logged) when it cannot be measured,
    e.g. a GPU without a power reading."""
    from calib.core.errors import CalibError

    try:
        if device.virtual and hasattr(device, "preset"):
            from microbench.devices.sim.device import VirtualGPU

            facts = characterise(VirtualGPU(device.preset, seed=int(seed) + 7919))
        else:
            facts = characterise(device)
            wait(device, COOL_AFTER_S)
    except (CalibError, ValueError, np.linalg.LinAlgError) as e:
        log.warning("power sampling not measured (%s); window energies fall back to the counter", e)
        return None
    return facts.to_dict()
