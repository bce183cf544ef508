"""Sensors of the virtual GPU: an NVML-like device sensor and a wall (AC) power analyzer.

They model what real instruments do to the signal (see ../shared/reference/measurement-notes.md):

NVML-like (stream ``nvml0``)
    updates every ``nvml_update_s`` (100 ms): instant power (field POWER_INSTANT) with noise and mW
    resolution, power averaged over the last ``nvml_avg_window_s`` (1 s, like nvmlDeviceGetPowerUsage on
    Ampere and newer), the total-energy counter in integer mJ, temperature in integer degrees (of the
    sensor's reading with its own noise, ``nvml_temp_noise_c``), clocks,
    fan duty in integer percent, utilization (``util_mem_pct``: the DRAM's busy share over the past update
    period, from the bytes the load moves against the DRAM's sustainable rate), and clock-event reasons
    (GpuIdle when idle).

    Part-time sampling (issue 31; presets that set ``nvml_power_window_s``): the true board power is
    followed at :data:`FINE_DT_S` (1 ms) and the sensor is the physical description of what NVML does
    on A100/H100 (Yang, Adamek, Armour, arXiv 2312.02741 / SC24): at each update instant
    ``t_k = nvml_phase_s + k * nvml_update_s`` it publishes the boxcar mean of the true power over
    ``[t_k - nvml_power_window_s, t_k]`` -- 25 ms of every 100 ms on those GPUs, so 75 % of the time is
    never seen -- or, with a window of 1 s, the trailing 1 s average of Ampere-and-newer boards. The
    energy counter is published at the same instants; it is either a hardware accumulator of the true
    energy (``nvml_counter_window_s = None``) or it adds ``nvml_update_s`` x the mean power over its own
    window before each update (a counter built from part-time samples). :class:`BoxcarSampler` is that
    description and nothing else: it does not know how the toolkit corrects for it.
Wall analyzer (stream ``wall``)
    the whole system at the AC plug: (GPU + host) / PSU efficiency(load), averaged over its own sample
    interval (2 Hz), with noise and 0.1 W resolution.

The device pushes rows into these sensors as its simulated time advances; ``read()`` drains them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from microbench.devices.base import Row, Sensor

NVML_COLUMNS = ("power_w", "power_avg_w", "energy_mj", "temp_c", "sm_mhz", "mem_mhz", "fan_pct",
                "util_gpu_pct", "util_mem_pct", "pstate", "clock_event_reasons")
WALL_COLUMNS = ("power_w",)


@dataclass(frozen=True)
class SensorModel:
    """How the virtual instruments sample and distort the true signals."""

    nvml_update_s: float = 0.1
    nvml_avg_window_s: float = 1.0
    nvml_power_noise_w: float = 0.5
    #: white noise of the on-die temperature sensor before NVML rounds it to whole degrees (C, s.d. per
    #: reading): a steady card's reading flickers between neighbouring degrees, so it differs between noise
    #: seeds and its mean is not stuck at the rounded value
    nvml_temp_noise_c: float = 0.3
    wall_interval_s: float = 0.5
    wall_noise_w: float = 0.6
    wall_resolution_w: float = 0.1
    psu_rated_w: float = 850.0
    kernel_time_noise: float = 0.002   # relative s.d. of event-timed kernel durations
    #: part-time sampling (None: the per-step sensor of the older presets, whose reading is the power of
    #: the last 100 ms simulation step); boxcar width of the ``power_w`` reading, s
    nvml_power_window_s: float | None = None
    #: first update instant after t = 0, s (the sampling grid's phase against the device's clock)
    nvml_phase_s: float = 0.0
    #: None: the energy counter integrates the true power all the time; a width (s): before each update
    #: the counter adds ``nvml_update_s`` x the mean true power over the last ``nvml_counter_window_s``
    nvml_counter_window_s: float | None = None

    def psu_efficiency(self, dc_w: float) -> float:
        """80 PLUS-like efficiency curve: ~0.80 at 10 % load, peak ~0.89 near 50 %, 0.86 at full load."""
        x = max(0.02, dc_w / self.psu_rated_w)
        return 0.90 - 0.12 * (x - 0.5) ** 2 - 0.008 / x


#: time resolution of the true power the part-time sensor samples, s
FINE_DT_S = 0.001


class BoxcarSampler:
    """What the NVML power sensor of a part-time-sampling preset publishes (module docstring).

    The device hands over its true board power at :data:`FINE_DT_S` resolution, block by block
    (:meth:`feed`); the sampler keeps enough history for its longest window and returns, for each update
    instant inside the block, the published values: ``power_w`` (boxcar mean over
    ``nvml_power_window_s`` ending at the instant), ``power_avg_w`` (boxcar mean over
    ``nvml_avg_window_s``) and ``energy_j`` (the counter, before rounding to mJ). Means over a window are
    differences of the cumulative energy, interpolated linearly inside a 1 ms sample (exact for the
    piecewise-constant fine power).
    """

    def __init__(self, model: SensorModel, initial_power_w: float, dt_s: float = FINE_DT_S):
        if model.nvml_power_window_s is None:
            raise ValueError("BoxcarSampler needs a sensor model with nvml_power_window_s")
        self.m = model
        self.dt = float(dt_s)
        longest = max(model.nvml_power_window_s, model.nvml_avg_window_s, model.nvml_counter_window_s or 0.0)
        self.keep = int(math.ceil(longest / self.dt)) + 2
        #: true power of the last ``keep`` fine samples before the next block, W (the device starts idle)
        self.hist = np.full(self.keep, float(initial_power_w))
        self.next_update_s = float(model.nvml_phase_s) if model.nvml_phase_s > 0 else float(model.nvml_update_s)
        self.counter_j = 0.0  # part-time counter: what it has added so far, J

    def state(self) -> dict[str, Any]:
        """Everything needed to continue exactly (for the device's snapshot)."""
        return {"nvml_hist_w": self.hist.tolist(), "nvml_next_update_s": self.next_update_s,
                "nvml_counter_j": self.counter_j}

    def set_state(self, state: dict[str, Any], shift_s: float = 0.0) -> None:
        self.hist = np.asarray(state["nvml_hist_w"], dtype=float)
        self.next_update_s = float(state["nvml_next_update_s"]) + shift_s
        self.counter_j = float(state["nvml_counter_j"])

    def feed(self, t0_s: float, power_w: np.ndarray, energy0_j: float) -> dict[str, np.ndarray]:
        """Consume the true power ``power_w`` (W, one value per :attr:`dt` from ``t0_s``); ``energy0_j``
        is the device's true cumulative energy at ``t0_s``. Returns the updates inside the block:
        ``t`` (s), ``power_w``, ``power_avg_w`` (W) and ``energy_j`` (the counter, J)."""
        m, dt = self.m, self.dt
        p_all = np.concatenate([self.hist, np.asarray(power_w, dtype=float)])
        start = t0_s - self.hist.size * dt
        cum = np.concatenate([[0.0], np.cumsum(p_all) * dt])   # J since ``start``
        grid = start + dt * np.arange(cum.size)
        t1 = t0_s + len(power_w) * dt
        ts = []
        while self.next_update_s <= t1 + 1e-9:
            ts.append(self.next_update_s)
            self.next_update_s += m.nvml_update_s
        t = np.asarray(ts, dtype=float)

        def mean_over(width: float) -> np.ndarray:
            return (np.interp(t, grid, cum) - np.interp(t - width, grid, cum)) / width

        out = {"t": t, "power_w": mean_over(m.nvml_power_window_s), "power_avg_w": mean_over(m.nvml_avg_window_s)}
        if m.nvml_counter_window_s is None:  # hardware accumulator: the true energy at the instant
            c0 = np.interp(t0_s, grid, cum)
            out["energy_j"] = energy0_j + np.interp(t, grid, cum) - c0
        else:  # adds update period x its windowed mean before each update
            adds = m.nvml_update_s * mean_over(m.nvml_counter_window_s)
            out["energy_j"] = self.counter_j + np.cumsum(adds)
            if adds.size:
                self.counter_j = float(out["energy_j"][-1])
        self.hist = p_all[-self.keep:].copy()
        return out


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
            rows += [Row(float(t_mono[i]), float(t_wall[i]), {k: cols[k][i] for k in cols}) for i in range(len(t_mono))]
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


#: what amdsmi's counter counts in (15.3 uJ, hard-coded in libamd_smi; microbench.devices.amd)
AMDSMI_COUNTER_RESOLUTION_UJ = 15.3


class SimAmdSmiSensor(_Buffered):
    """amdsmi-like sensor of a virtual AMD GPU (stream ``amdsmi0``), as :mod:`microbench.devices.amd` logs it:
    socket power in whole watts -- averaged over ``nvml_avg_window_s`` where the GPU only has the average
    (MI200: ``averaged``) -- the energy accumulator in ticks of 15.3 uJ (as mJ), the hotspot temperature in
    whole degrees, clocks and activity. No fan column: an OAM has no fan of its own."""

    def __init__(self, model: SensorModel, averaged: bool, index: int = 0):
        cols = ("power_w",) + (("power_avg_w",) if averaged else ()) + (
            "energy_mj", "temp_c", "sm_mhz", "mem_mhz", "util_gpu_pct", "util_mem_pct")
        super().__init__(f"amdsmi{index}", "amdsmi", cols, {
            "power_w_source": "amdsmi_get_power_info['socket_power'] (the average)" if averaged
            else "amdsmi_get_power_info['current_socket_power']",
            "power_average_window_s": model.nvml_avg_window_s if averaged else None,
            "energy_counter_key": "energy_accumulator", "energy_counter_resolution_uj": AMDSMI_COUNTER_RESOLUTION_UJ,
            "update_period_s": model.nvml_update_s, "temp_c_source": "hotspot (junction)",
            "temperature_resolution_c": 1, "fan": False, "virtual": True,
        })
        self.averaged = averaged

    def encode(self, t: np.ndarray, power_w: np.ndarray, avg_w: np.ndarray, energy_j: np.ndarray,
               temp_c: np.ndarray, core_mhz: float, mem_mhz: float, running: bool,
               noise: np.ndarray, util_mem: np.ndarray) -> dict[str, np.ndarray]:
        """The stream's columns from the true signals at the update instants (noise: (k, 2) standard
        normal draws scaled by the power noise; ``util_mem``: the DRAM's busy share 0..1, logged as
        ``umc_activity`` %)."""
        k = len(t)
        shown = avg_w + 0.3 * noise[:, 1] if self.averaged else power_w + noise[:, 0]
        out = {"power_w": np.rint(shown).astype(np.int64)}
        if self.averaged:
            out["power_avg_w"] = out["power_w"]
        ticks = np.floor(energy_j * 1e6 / AMDSMI_COUNTER_RESOLUTION_UJ)
        out.update({"energy_mj": ticks * AMDSMI_COUNTER_RESOLUTION_UJ / 1000.0,
                    "temp_c": np.rint(temp_c).astype(np.int64), "sm_mhz": np.full(k, core_mhz),
                    "mem_mhz": np.full(k, mem_mhz), "util_gpu_pct": np.full(k, 100 if running else 0, dtype=np.int64),
                    "util_mem_pct": np.rint(100.0 * util_mem).astype(np.int64)})
        return out


@dataclass(frozen=True)
class HostRapl:
    """The virtual test system's CPU sockets as RAPL shows them (:mod:`microbench.devices.rapl`): idle power
    per package and per DRAM zone (W; ``dram_idle_w`` None: no DRAM zone, as on AMD Zen), and the share of
    the host's launch work (``host_busy_w``) and of a copy's host power (staging memcpy and host memory)
    that the first package draws (the rest of a copy's goes to DRAM, seen only where there is a DRAM zone;
    the rest of the launch work is the platform's). ``unit_uj``: the counters' energy unit."""

    packages: int = 1
    package_idle_w: float = 60.0
    dram_idle_w: float | None = None
    busy_share: float = 0.8
    copy_package_share: float = 0.55
    unit_uj: float = 1e6 / 2 ** 14


class SimRaplSensor(_Buffered):
    """RAPL stream of the virtual test system (stream ``rapl``, scope ``host``), in the real reader's columns:
    cumulative energy per zone (quantized to the energy unit) and the host's energy and power."""

    def __init__(self, host: HostRapl):
        self.host = host
        self.zones = [f"package-{n}" for n in range(host.packages)] + (
            [f"package-{n}/dram" for n in range(host.packages)] if host.dram_idle_w is not None else [])
        cols = tuple(z.replace("-", "_").replace("/", "_") + "_energy_j" for z in self.zones)
        super().__init__("rapl", "rapl", cols + ("host_energy_j", "host_power_w"), {
            "zones": {z: {"in_host_power": True, "virtual": True} for z in self.zones}, "unreadable": {},
            "absent": [] if host.dram_idle_w is not None else [
                "dram: this machine's RAPL tree has no DRAM zone (AMD Zen exposes package and core only; client "
                "Intel parts often none): host power is the packages' alone, DRAM not measured"],
            "host_power": " + ".join(self.zones), "virtual": True}, scope="host")
        self._last: tuple[float, float] | None = None  # (t, host energy) of the previous row

    def zone_power_w(self, busy_w: float, extra_w: float) -> np.ndarray:
        """Power of each zone (W) with ``busy_w`` of launch work and ``extra_w`` of copy work on the host."""
        h = self.host
        pk = np.full(h.packages, h.package_idle_w)
        pk[0] += h.busy_share * busy_w + h.copy_package_share * extra_w
        if h.dram_idle_w is None:
            return pk
        dr = np.full(h.packages, h.dram_idle_w)
        dr[0] += (1.0 - h.copy_package_share) * extra_w
        return np.concatenate([pk, dr])

    def encode(self, t: np.ndarray, energy_j: np.ndarray) -> dict[str, np.ndarray]:
        """Columns at the instants ``t`` (s) from each zone's true cumulative energy there (J, rows x zones):
        counters quantized to the energy unit, the host's power since the previous row."""
        q = np.floor(energy_j * 1e6 / self.host.unit_uj) * self.host.unit_uj / 1e6
        host = q.sum(axis=1)
        prev_t = np.concatenate([[self._last[0] if self._last else np.nan], t[:-1]])
        prev_e = np.concatenate([[self._last[1] if self._last else np.nan], host[:-1]])
        self._last = (float(t[-1]), float(host[-1]))
        out = {c: q[:, i] for i, c in enumerate(self.columns[:len(self.zones)])}
        out["host_energy_j"] = host
        out["host_power_w"] = (host - prev_e) / (t - prev_t)
        return out
