"""Ground truth of how the virtual GPUs' NVML sensors sample power (what
:mod:`microbench.power_sampling` must find); read by tests and studies only, never by the toolkit.

The values are the sensor models' design values (:class:`microbench.devices.sim.sensors.SensorModel`):
``update_period_s``, ``power_window_s`` (presets without part-time sampling publish the power of the
last 100 ms simulation step: a 100 ms window), ``coverage`` = min(1, window / period), the energy
counter's window (its update period when it integrates all of the time) and coverage.
"""

from __future__ import annotations

from typing import Any

from microbench.devices.sim.device import DT_S
from microbench.devices.sim.presets import get_preset


def sampling_truth(name: str) -> dict[str, Any]:
    """The sampling truths of preset ``name`` (times in s)."""
    sm = get_preset(name).sensors
    window = sm.nvml_power_window_s if sm.nvml_power_window_s is not None else DT_S
    counter = sm.nvml_counter_window_s if sm.nvml_counter_window_s is not None else sm.nvml_update_s
    return {"update_period_s": sm.nvml_update_s, "power_window_s": window,
            "coverage": min(1.0, window / sm.nvml_update_s), "counter_update_s": sm.nvml_update_s,
            "counter_window_s": counter, "counter_coverage": min(1.0, counter / sm.nvml_update_s),
            "counter_full_time": sm.nvml_counter_window_s is None, "phase_s": sm.nvml_phase_s}
