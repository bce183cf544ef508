"""The thermally stable measurement protocol the campaign runs on: temperature waits, warm-up,
optional temperature gate, measurement window, repeats -- for any :class:`~microbench.devices.base.Device`.

Why: hotter silicon leaks more, so back-to-back trials drift upward (Zeus, "Thermally Stable
Profiling"); NVML's energy counter updates about every 100 ms, so windows must be seconds long and
repeated. AccelWattch-style gating goes further: it measures only once the GPU has reached a fixed
temperature, so every sample sees the same static power.

Every wait for a temperature is :func:`wait_for_temperature` (the campaign's cooldown after each
benchmark and its settle-to-idle before a thermal step, :func:`cooldown`, :func:`temperature_gate`, and
the ground truth's thermal traces). Everything waits with ``device.idle()`` / ``device.run()`` and reads
time from ``device.clock()`` and temperature from ``device.temperature_c()``, so it works unchanged on the
virtual GPU (simulated time) and on :class:`microbench.devices.cuda.CudaDevice` (real time).

Per workload and clock point::

    apply_clocks(device, core_mhz, mem_mhz)                  # locked per DVFS point (reset at close)
    for r in range(protocol.repeats):
        trial = run_trial(device, workload, protocol, writer=writer, repeat=r, logger=logger)

Markers written (``writer.mark``): ``cooldown_start``, ``warmup_start``, ``measure_start``,
``measure_stop``. ``measure_start`` and ``measure_stop`` carry the clocks the device reported
(``core_mhz``, ``mem_mhz``, MHz: the samples layer reads them); ``measure_stop`` also the temperatures
before/after, launches, kernel time and the cooldown and gate outcome (when the cooldown runs before
the window).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from microbench.devices.base import Device, RunResult, Workload

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ThermalProtocol:
    """Settings of the thermally stable protocol (temperatures in °C, times in s).

    ``cooldown_band_c = (lo, hi)``: idle until the GPU is at or below ``hi``; if it is below ``lo``,
    heat it with the trial's workload until it reaches ``lo`` (``lo = None``: never heat; the band
    ``None``: no cooldown). The cooldown runs before each trial, or after its window with
    ``cooldown_after`` (the campaign's order: each benchmark leaves the GPU in the idle band for the
    next). ``gate_c``: after warm-up, keep running the workload (or idle) until the temperature is
    within ``gate_tol_c`` of ``gate_c`` (``None``: no gate). Trials whose cooldown or gate timed out
    are still measured but flagged (``ok = False``). ``poll_s``: temperature poll period of both.
    """

    warmup_s: float = 2.0
    measure_s: float = 5.0
    repeats: int = 3
    cooldown_band_c: tuple[float | None, float] | None = None
    cooldown_timeout_s: float = 300.0
    cooldown_after: bool = False
    gate_c: float | None = None
    gate_tol_c: float = 2.0
    gate_timeout_s: float = 120.0
    poll_s: float = 1.0

    def __post_init__(self) -> None:
        if self.measure_s <= 0 or self.warmup_s < 0 or self.repeats < 1 or self.poll_s <= 0:
            raise ValueError(f"bad protocol timing: {self}")
        band = self.cooldown_band_c
        if band is not None and band[0] is not None and not band[0] <= band[1]:
            raise ValueError(f"cooldown_band_c must be (lo, hi) with lo <= hi, got {band}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ThermalWait:
    """Outcome of a temperature wait: temperatures (°C) at start and end, time waited (s), success."""

    start_c: float | None
    end_c: float | None
    waited_s: float
    reached: bool
    action: str  # "none", "idle", "heat"


def wait_for_temperature(device: Device, band_c: tuple[float | None, float | None], *, timeout_s: float,
                         poll_s: float, stable_s: float = 0.0, heat_workload: Workload | None = None,
                         on_poll: Callable[[float], None] | None = None) -> ThermalWait:
    """Wait until the GPU temperature is inside ``band_c = (lo, hi)`` °C (either may be ``None``: open).

    Every ``poll_s`` seconds: idle while hotter than ``hi``; run ``heat_workload`` while colder than
    ``lo`` (given one; without it a cold GPU counts as inside); inside the band, idle on until the
    reading has not changed for ``stable_s`` seconds (0: done at once). Gives up after ``timeout_s``
    seconds of polls (``reached = False``). ``on_poll(waited_s)`` runs after each poll period (the
    campaign drains its sensors there). A device that reports no temperature returns at once with
    ``start_c = None``.
    """
    lo, hi = band_c
    clock0 = device.clock()[0]
    start = device.temperature_c()
    if start is None:
        return ThermalWait(None, None, 0.0, False, "none")
    temp, last = start, None
    # the loop counts its own poll periods (exact on simulated time); a real device's clock can only be later
    waited = still = 0.0
    action = "none"
    while True:
        still = still + poll_s if temp == last else 0.0
        hot = hi is not None and temp > hi
        cold = lo is not None and heat_workload is not None and temp < lo
        if not hot and not cold and still >= stable_s:
            reached = True
            break
        if max(waited, device.clock()[0] - clock0) >= timeout_s:
            reached = False
            break
        last = temp
        if cold:
            action = "heat"
            device.run(heat_workload, poll_s)  # type: ignore[arg-type]
        else:
            action = "idle"
            device.idle(poll_s)
        waited += poll_s
        if on_poll is not None:
            on_poll(waited)
        temp = device.temperature_c()
        if temp is None:  # the sensor went away mid-wait
            return ThermalWait(start, None, max(waited, device.clock()[0] - clock0), False, action)
    return ThermalWait(start, temp, max(waited, device.clock()[0] - clock0), reached, action)


def cooldown(device: Device, band_c: tuple[float | None, float], *, timeout_s: float = 300.0, poll_s: float = 1.0,
             heat_workload: Workload | None = None) -> ThermalWait:
    """Bring the GPU into ``band_c = (lo, hi)`` °C: idle while hotter than ``hi``; run
    ``heat_workload`` while colder than ``lo`` (if given). Gives up after ``timeout_s`` (warning)."""
    w = wait_for_temperature(device, band_c, timeout_s=timeout_s, poll_s=poll_s, heat_workload=heat_workload)
    lo, hi = band_c
    band = f"{lo:g}..{hi:g}" if lo is not None else f"..{hi:g}"
    return _warn_unless_reached(w, "cooldown", timeout_s, f"outside the band {band} °C")


def _warn_unless_reached(w: ThermalWait, what: str, timeout_s: float, miss: str) -> ThermalWait:
    """``w``, after a warning when the device reports no temperature or the wait gave up (``miss``: how)."""
    if w.start_c is None:
        warnings.warn(f"{what}: the device reports no temperature; skipping", RuntimeWarning, stacklevel=3)
    elif not w.reached:
        warnings.warn(f"{what}: GPU at {w.end_c:.1f} °C after {timeout_s:.0f} s, {miss}", RuntimeWarning, stacklevel=3)
    return w


def temperature_gate(device: Device, workload: Workload, target_c: float, *, tol_c: float = 2.0,
                     timeout_s: float = 120.0, poll_s: float = 1.0) -> ThermalWait:
    """AccelWattch-style gate: run ``workload`` until the GPU is within ``tol_c`` of ``target_c``
    (idle instead while it is hotter than ``target_c + tol_c``). Gives up after ``timeout_s`` (warning)."""
    w = wait_for_temperature(device, (target_c - tol_c, target_c + tol_c), timeout_s=timeout_s, poll_s=poll_s,
                             heat_workload=workload)
    return _warn_unless_reached(w, "temperature gate", timeout_s, f"target {target_c:g} ± {tol_c:g} °C not reached")


@dataclass(frozen=True)
class Trial:
    """One measurement window: host times (device clock, s), result, temperatures, thermal outcome."""

    workload: str
    repeat: int
    t0_s: float
    t1_s: float
    t0_wall_s: float
    t1_wall_s: float
    result: RunResult
    temp_before_c: float | None
    temp_after_c: float | None
    cooldown: ThermalWait | None
    gate: ThermalWait | None

    @property
    def ok(self) -> bool:
        """False when the cooldown or gate did not reach its target (flag or drop the sample)."""
        return all(w is None or w.reached or w.start_c is None for w in (self.cooldown, self.gate))


def apply_clocks(device: Device, core_mhz: float | None, mem_mhz: float | None) -> tuple[float, float]:
    """Lock the clocks of one DVFS point (``None`` = default for that domain); returns the clocks the
    device reports afterwards (MHz). Real GPUs reset the lock at ``device.close()``, exit and Ctrl-C."""
    device.set_clocks(core_mhz, mem_mhz)
    return device.clocks()


def run_trial(device: Device, workload: Workload, protocol: ThermalProtocol, *, writer: Any = None,
              repeat: int = 0, logger: Any = None, clocks: tuple[float, float] | None = None,
              on_poll: Callable[[float], None] | None = None) -> Trial:
    """cooldown -> [lock ``clocks``] -> warm-up -> gate -> measurement window [-> reset clocks] [-> cooldown
    with ``protocol.cooldown_after``], with markers; returns the :class:`Trial`.

    ``writer`` is anything with ``mark(event, workload=..., repeat=..., t=..., **info)`` (a
    :class:`calib.core.session.SessionWriter`, or the campaign, which drains its sensors first).
    ``clocks`` (MHz): locked for the warm-up and window only, then reset to the defaults.
    ``logger`` (a :class:`microbench.logger.SensorLogger`) is checked after the window so a lost
    sensor stops the campaign instead of producing a window without data. ``on_poll`` is passed to
    the temperature waits.
    """
    name = workload.name

    def mark(event: str, t: tuple[float, float] | None = None, **info: Any) -> None:
        if writer is not None:
            writer.mark(event, workload=name, repeat=repeat, t=t, **info)

    def cool() -> ThermalWait | None:
        band = protocol.cooldown_band_c
        if band is None:
            return None
        mark("cooldown_start", band_c=list(band))
        w = wait_for_temperature(device, band, timeout_s=protocol.cooldown_timeout_s, poll_s=protocol.poll_s,
                                 heat_workload=workload if band[0] is not None else None, on_poll=on_poll)
        if w.start_c is not None and not w.reached:
            log.info("%s (repeat %d): cooldown gave up after %.0f s at %.1f °C (band %s)", name, repeat,
                     w.waited_s, w.end_c, band)
        return w

    before = None if protocol.cooldown_after else cool()
    if clocks:
        device.set_clocks(*clocks)
    if protocol.warmup_s > 0:
        mark("warmup_start")
        device.run(workload, protocol.warmup_s)
    gate = None
    if protocol.gate_c is not None:
        gate = temperature_gate(device, workload, protocol.gate_c, tol_c=protocol.gate_tol_c,
                                timeout_s=protocol.gate_timeout_s, poll_s=protocol.poll_s)
    temp0 = device.temperature_c()
    core, mem = device.clocks()
    t0 = device.clock()
    mark("measure_start", t=t0, temp_c=temp0, core_mhz=core, mem_mhz=mem)
    result = device.run(workload, protocol.measure_s)
    t1 = device.clock()
    temp1 = device.temperature_c()
    ok = all(w is None or w.reached or w.start_c is None for w in (before, gate))
    mark("measure_stop", t=t1, launches=result.launches, kernel_time_s=result.kernel_time_s, core_mhz=core,
         mem_mhz=mem, temp_before_c=temp0, temp_after_c=temp1, ok=ok,
         cooldown=None if before is None else asdict(before), gate=None if gate is None else asdict(gate))
    if logger is not None:
        logger.check()
    if clocks:
        device.set_clocks(None, None)
    after = cool() if protocol.cooldown_after else None
    return Trial(name, repeat, t0[0], t1[0], t0[1], t1[1], result, temp0, temp1, before or after, gate)


def run_point(device: Device, workload: Workload, protocol: ThermalProtocol, *, core_mhz: float | None = None,
              mem_mhz: float | None = None, writer: Any = None, logger: Any = None) -> list[Trial]:
    """All repeats of one workload at one clock point (clocks locked first when given, and left locked)."""
    if core_mhz is not None or mem_mhz is not None:
        apply_clocks(device, core_mhz, mem_mhz)
    return [run_trial(device, workload, protocol, writer=writer, repeat=r, logger=logger)
            for r in range(protocol.repeats)]
