"""The thermally stable measurement protocol: cooldown to a band, warm-up, optional temperature gate,
measurement window, repeats -- for any :class:`~microbench.devices.base.Device`.

Why: hotter silicon leaks more, so back-to-back trials drift upward (Zeus, "Thermally Stable
Profiling"); NVML's energy counter updates about every 100 ms, so windows must be seconds long and
repeated. AccelWattch-style gating goes further: it measures only once the GPU has reached a fixed
temperature, so every sample sees the same static power.

Everything here waits with ``device.idle()`` / ``device.run()`` and reads time from ``device.clock()``
and temperature from ``device.temperature_c()``, so it works unchanged on the virtual GPU
(simulated time) and on :class:`microbench.devices.cuda.CudaDevice` (real time).

For the campaign, per workload and clock point::

    apply_clocks(device, core_mhz, mem_mhz)                  # locked per DVFS point (reset at close)
    for r in range(protocol.repeats):
        trial = run_trial(device, workload, protocol, writer=writer, repeat=r, logger=logger)

Markers written (``writer.mark``): ``cooldown_start``, ``warmup_start``, ``measure_start``,
``measure_stop`` (info: temperatures before/after, cooldown and gate outcome, launches, kernel time);
``measure_start`` carries the clocks the device reported.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass
from typing import Any

from microbench.devices.base import Device, RunResult, Workload


@dataclass(frozen=True)
class ThermalProtocol:
    """Settings of the thermally stable protocol (temperatures in °C, times in s).

    ``cooldown_band_c = (lo, hi)``: before each trial, idle until the GPU is at or below ``hi``; if it
    is below ``lo``, heat it with the trial's workload until it reaches ``lo`` (``None``: no cooldown).
    ``gate_c``: after warm-up, keep running the workload (or idle) until the temperature is within
    ``gate_tol_c`` of ``gate_c`` (``None``: no gate). Trials whose cooldown or gate timed out are
    still measured but flagged (``ok = False``).
    """

    warmup_s: float = 2.0
    measure_s: float = 5.0
    repeats: int = 3
    cooldown_band_c: tuple[float, float] | None = None
    cooldown_timeout_s: float = 300.0
    gate_c: float | None = None
    gate_tol_c: float = 2.0
    gate_timeout_s: float = 120.0
    poll_s: float = 1.0

    def __post_init__(self) -> None:
        if self.measure_s <= 0 or self.warmup_s < 0 or self.repeats < 1 or self.poll_s <= 0:
            raise ValueError(f"bad protocol timing: {self}")
        if self.cooldown_band_c is not None and not self.cooldown_band_c[0] <= self.cooldown_band_c[1]:
            raise ValueError(f"cooldown_band_c must be (lo, hi) with lo <= hi, got {self.cooldown_band_c}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ThermalWait:
    """Outcome of a cooldown or a gate: temperatures (°C) at start and end, time waited (s), success."""

    start_c: float | None
    end_c: float | None
    waited_s: float
    reached: bool
    action: str  # "none", "idle", "heat"


def _now(device: Device) -> float:
    return device.clock()[0]


def cooldown(device: Device, band_c: tuple[float, float], *, timeout_s: float = 300.0, poll_s: float = 1.0,
             heat_workload: Workload | None = None) -> ThermalWait:
    """Bring the GPU into ``band_c = (lo, hi)`` °C: idle while hotter than ``hi``; run
    ``heat_workload`` while colder than ``lo`` (if given). Gives up after ``timeout_s``."""
    lo, hi = band_c
    t0 = _now(device)
    start = device.temperature_c()
    if start is None:
        warnings.warn("cooldown: the device reports no temperature; skipping", RuntimeWarning, stacklevel=2)
        return ThermalWait(None, None, 0.0, False, "none")
    temp = start
    action = "none"
    while _now(device) - t0 < timeout_s:
        if temp > hi:
            action = "idle"
            device.idle(poll_s)
        elif temp < lo and heat_workload is not None:
            action = "heat"
            device.run(heat_workload, poll_s)
        else:
            return ThermalWait(start, temp, _now(device) - t0, True, action)
        temp = device.temperature_c()
    ok = temp <= hi and (heat_workload is None or temp >= lo)
    if not ok:
        warnings.warn(f"cooldown: GPU at {temp:.1f} °C after {timeout_s:.0f} s, outside the band {lo:g}..{hi:g} °C",
                      RuntimeWarning, stacklevel=2)
    return ThermalWait(start, temp, _now(device) - t0, ok, action)


def temperature_gate(device: Device, workload: Workload, target_c: float, *, tol_c: float = 2.0,
                     timeout_s: float = 120.0, poll_s: float = 1.0) -> ThermalWait:
    """AccelWattch-style gate: run ``workload`` until the GPU is within ``tol_c`` of ``target_c``
    (idle instead while it is hotter than ``target_c + tol_c``). Gives up after ``timeout_s``."""
    t0 = _now(device)
    start = device.temperature_c()
    if start is None:
        warnings.warn("temperature gate: the device reports no temperature; skipping", RuntimeWarning, stacklevel=2)
        return ThermalWait(None, None, 0.0, False, "none")
    temp = start
    action = "none"
    while abs(temp - target_c) > tol_c:
        if _now(device) - t0 >= timeout_s:
            warnings.warn(f"temperature gate: GPU at {temp:.1f} °C after {timeout_s:.0f} s, target {target_c:g} "
                          f"± {tol_c:g} °C not reached", RuntimeWarning, stacklevel=2)
            return ThermalWait(start, temp, _now(device) - t0, False, action)
        if temp < target_c:
            action = "heat"
            device.run(workload, poll_s)
        else:
            action = "idle"
            device.idle(poll_s)
        temp = device.temperature_c()
    return ThermalWait(start, temp, _now(device) - t0, True, action)


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
              repeat: int = 0, logger: Any = None) -> Trial:
    """cooldown -> warm-up -> gate -> measurement window, with markers; returns the :class:`Trial`.

    ``logger`` (a :class:`microbench.logger.SensorLogger`) is checked after the window so a lost
    sensor stops the campaign instead of producing a window without data.
    """
    name = workload.name

    def mark(event: str, t: tuple[float, float] | None = None, **info: Any) -> None:
        if writer is not None:
            writer.mark(event, workload=name, repeat=repeat, t=t, **info)

    cool = None
    if protocol.cooldown_band_c is not None:
        mark("cooldown_start", band_c=list(protocol.cooldown_band_c))
        cool = cooldown(device, protocol.cooldown_band_c, timeout_s=protocol.cooldown_timeout_s,
                        poll_s=protocol.poll_s, heat_workload=workload)
    if protocol.warmup_s > 0:
        mark("warmup_start")
        device.run(workload, protocol.warmup_s)
    gate = None
    if protocol.gate_c is not None:
        gate = temperature_gate(device, workload, protocol.gate_c, tol_c=protocol.gate_tol_c,
                                timeout_s=protocol.gate_timeout_s, poll_s=protocol.poll_s)
    temp0 = device.temperature_c()
    t0 = device.clock()
    mark("measure_start", t=t0, temp_c=temp0, clocks_mhz=list(device.clocks()))
    result = device.run(workload, protocol.measure_s)
    t1 = device.clock()
    temp1 = device.temperature_c()
    trial = Trial(name, repeat, t0[0], t1[0], t0[1], t1[1], result, temp0, temp1, cool, gate)
    mark("measure_stop", t=t1, temp_before_c=temp0, temp_after_c=temp1, launches=result.launches,
         kernel_time_s=result.kernel_time_s, ok=trial.ok,
         cooldown=None if cool is None else asdict(cool), gate=None if gate is None else asdict(gate))
    if logger is not None:
        logger.check()
    return trial


def run_point(device: Device, workload: Workload, protocol: ThermalProtocol, *, core_mhz: float | None = None,
              mem_mhz: float | None = None, writer: Any = None, logger: Any = None) -> list[Trial]:
    """All repeats of one workload at one clock point (clocks locked first when given)."""
    if core_mhz is not None or mem_mhz is not None:
        apply_clocks(device, core_mhz, mem_mhz)
    return [run_trial(device, workload, protocol, writer=writer, repeat=r, logger=logger)
            for r in range(protocol.repeats)]
