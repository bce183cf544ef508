"""Sensors of the virtual GPU: an NVML-like device sensor and a wall (AC) power analyzer.

They model what real instruments do to the signal (see ../shared/reference/measurement-notes.md):

NVML-like (stream ``nvml0``)
    updates every ``nvml_update_s`` (100 ms): instant power (field POWER_INSTANT) with noise and mW
    resolution, power averaged over the last ``nvml_avg_window_s`` (1 s, like nvmlDeviceGetPowerUsage on
    Ampere and newer), the total-energy counter in integer mJ, temperature in integer degrees, clocks,
    fan duty in integer percent, utilization, and clock-event reasons (GpuIdle when idle).
Wall analyzer (stream ``wall``)
    the whole system at the AC plug: (GPU + host) / PSU efficiency(load), averaged over its own sample
    interval (2 Hz), with noise and 0.1 W resolution.

The device pushes rows into these sensors as its simulated time advances; ``read()`` drains them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from microbench.devices.base import Row, Sensor

NVML_COLUMNS = ("power_w", "power_avg_w", "energy_mj", "temp_c", "sm_mhz", "mem_mhz", "fan_pct",
                "util_gpu_pct", "pstate", "clock_event_reasons")
WALL_COLUMNS = ("power_w",)


@dataclass(frozen=True)
class SensorModel:
    """How the virtual instruments sample and distort the true signals."""

    nvml_update_s: float = 0.1
    nvml_avg_window_s: float = 1.0
    nvml_power_noise_w: float = 0.5
    wall_interval_s: float = 0.5
    wall_noise_w: float = 0.6
    wall_resolution_w: float = 0.1
    psu_rated_w: float = 850.0
    kernel_time_noise: float = 0.002   # relative s.d. of event-timed kernel durations

    def psu_efficiency(self, dc_w: float) -> float:
        """80 PLUS-like efficiency curve: ~0.80 at 10 % load, peak ~0.89 near 50 %, 0.86 at full load."""
        x = max(0.02, dc_w / self.psu_rated_w)
        return 0.90 - 0.12 * (x - 0.5) ** 2 - 0.008 / x


class _Buffered(Sensor):
    """Holds blocks of readings (arrays) pushed by the device until they are read."""

    def __init__(self, name: str, kind: str, columns: tuple[str, ...], caps: dict, scope: str = "gpu"):
        self.name = name
        self.kind = kind
        self.scope = scope
        self.columns = columns
        self._caps = caps
        self._blocks: list[tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]] = []

    def capabilities(self) -> dict:
        return dict(self._caps)

    def push_block(self, t_mono: np.ndarray, t_wall: np.ndarray, values: dict[str, np.ndarray]) -> None:
        self._blocks.append((t_mono, t_wall, values))

    def read_blocks(self) -> list[tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]]:
        """Readings since the last read, as column blocks (fast path for high-rate logging)."""
        blocks, self._blocks = self._blocks, []
        return blocks

    def read(self) -> list[Row]:
        rows = []
        for t_mono, t_wall, values in self.read_blocks():
            cols = {k: v.tolist() for k, v in values.items()}
            for i in range(len(t_mono)):
                rows.append(Row(float(t_mono[i]), float(t_wall[i]), {k: cols[k][i] for k in cols}))
        return rows


class SimNvmlSensor(_Buffered):
    """NVML-like sensor of the virtual GPU (stream ``nvml0``)."""

    def __init__(self, model: SensorModel, index: int = 0):
        super().__init__(f"nvml{index}", "nvml", NVML_COLUMNS, {
            "power_instant": True, "power_average": True, "power_average_window_s": model.nvml_avg_window_s,
            "energy_counter": True, "energy_counter_unit": "mJ", "update_period_s": model.nvml_update_s,
            "temperature_resolution_c": 1, "memory_temperature": False, "fan": True, "clock_events": True,
            "virtual": True,
        })


class SimWallMeter(_Buffered):
    """Wall (AC) power analyzer of the virtual test system (stream ``wall``)."""

    def __init__(self, model: SensorModel):
        super().__init__("wall", "analyzer", WALL_COLUMNS, {
            "protocol": "virtual", "interval_s": model.wall_interval_s, "resolution_w": model.wall_resolution_w,
            "measures": "system AC input power (GPU + host, through the PSU)", "virtual": True,
        }, scope="system")
