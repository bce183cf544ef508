"""The virtual GPU device (``sim:<preset>``): runs workloads in simulated time, without sleeping.

Time advances in fixed steps of ``DT_S``; each step updates the thermal network, the fan and the energy
counter, and the sensors sample the true signals on their own schedules. Noise comes from a generator
seeded by (seed, call number), so a run is reproducible, and a campaign resumed from a
:meth:`VirtualGPU.snapshot` continues exactly as if it had not been interrupted.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

import numpy as np

from calib.core.errors import BadInputError
from calib.core.units import unit_counts
from microbench.devices.base import Backend, CopyResult, Device, RunResult, Sensor, Workload
from microbench.devices.sim.loadshape import LoadShape
from microbench.devices.sim.physics import Load, load_for
from microbench.devices.sim.presets import Preset
from microbench.devices.sim.sensors import (FINE_DT_S, BoxcarSampler, SimAmdSmiSensor, SimNvmlSensor,
                                               SimRaplSensor, SimWallMeter)
from microbench.devices.sim.timing import dram_busy_share, kernel_time_s, occupied_warps

DT_S = 0.1
#: virtual wall clock: simulated time counts from this Unix time (2026-01-01T00:00:00Z)
EPOCH_S = 1767225600.0


class VirtualGPU(Device):
    """A simulated GPU with hidden physics from a :class:`Preset`."""

    virtual = True

    def __init__(self, preset: Preset, seed: int = 0):
        self.preset = preset
        self.info = preset.device_info()
        self.seed = int(seed)
        # the GPU's own stream: NVML-like, or amdsmi-like for an AMD preset (MI200 reports only the average)
        self._nvml = (SimNvmlSensor(preset.sensors) if preset.target is None else
                      SimAmdSmiSensor(preset.sensors, averaged=preset.target == "gfx90a"))
        self._wall = SimWallMeter(preset.sensors)
        # the host's RAPL counters, where the preset's test system has them (true energy per zone, J)
        self._rapl = SimRaplSensor(preset.host_rapl) if preset.host_rapl is not None else None
        self._rapl_j = np.zeros(len(self._rapl.zones)) if self._rapl is not None else None
        self._core_mhz = self.info.default_core_mhz
        self._mem_mhz = self.info.default_mem_mhz
        self._fan_override: float | None = None
        self._calls = 0
        self._load = Load()
        self._host_busy = False
        self._host_extra_w = 0.0  # host power of a copy beyond the busy CPU (staging memcpy, host memory)
        st = preset.idle_steady_state()
        self.t = 0.0
        self.t_die, self.t_sink, self.t_case, self.duty = st["t_die"], st["t_sink"], st["t_case"], st["duty"]
        self.energy_j = 0.0
        self._avg_buf: deque[float] = deque(maxlen=max(1, round(preset.sensors.nvml_avg_window_s / DT_S)))
        self._next_nvml = preset.sensors.nvml_update_s
        self._next_wall = preset.sensors.wall_interval_s
        self._wall_acc = 0.0
        self._wall_n = 0
        self._rng = np.random.default_rng([self.seed, 0])
        #: sub-step time structure of the current load (workload trait ``power_shape``), None: flat
        self._shape: LoadShape | None = None
        #: part-time NVML sampling of the true power at 1 ms (presets with nvml_power_window_s), else None
        self._sampler = (BoxcarSampler(preset.sensors, st["power_w"])
                         if preset.sensors.nvml_power_window_s is not None else None)
        #: ground truth for tests (None: not kept): blocks (start s, step s, true board power W)
        self.power_trace: list[tuple[float, float, np.ndarray]] | None = None

    @property
    def can_copy(self) -> bool:
        """Whether host-device copies are simulated (the preset has a PCIe link)."""
        return self.preset.pcie is not None

    # -- Device interface ---------------------------------------------------------------------
    def sensors(self) -> list[Sensor]:
        return [self._nvml, self._wall] + ([self._rapl] if self._rapl is not None else [])

    def clock(self) -> tuple[float, float]:
        return (self.t, EPOCH_S + self.t)

    def clocks(self) -> tuple[float, float]:
        return (self._core_mhz, self._mem_mhz)

    def set_clocks(self, core_mhz: float | None, mem_mhz: float | None) -> None:
        sup = self.info.supported_clocks
        core = self.info.default_core_mhz if core_mhz is None else float(core_mhz)
        mem = self.info.default_mem_mhz if mem_mhz is None else float(mem_mhz)
        if core not in sup.get("core_mhz", [core]):
            raise BadInputError(f"{self.info.name}: core clock {core:g} MHz not supported; supported: {sup['core_mhz']}")
        if mem not in sup.get("mem_mhz", [mem]):
            raise BadInputError(f"{self.info.name}: memory clock {mem:g} MHz not supported; supported: {sup['mem_mhz']}")
        self._core_mhz, self._mem_mhz = core, mem

    def set_fan(self, duty: float | None) -> None:
        """Hold the fan at ``duty`` (0..1), or give it back to the automatic curve with None."""
        self._fan_override = None if duty is None else min(1.0, max(0.0, float(duty)))

    def temperature_c(self) -> float:
        return float(round(self._sensor_temp()))

    def idle(self, duration_s: float) -> None:
        self._start_idle()
        self._advance(duration_s)

    def _start_idle(self) -> None:
        """The state of an idle card (no kernel, host idle), for :meth:`_advance` (also
        microbench.truth's noise-free traces)."""
        self._load = Load()
        self._shape = None
        self._host_busy = False
        self._host_extra_w = 0.0

    def run_copy(self, direction: str, nbytes: int, pinned: bool, duration_s: float) -> CopyResult:
        """Copies back to back through the preset's PCIe link (:mod:`microbench.devices.sim.pcie`): the
        link's and GPU memory's power on the board, the staging memcpy and host memory on the host (the
        CPU is busy in the synchronous copy call either way)."""
        from microbench.devices.sim import pcie

        link = self.preset.pcie
        if link is None:
            raise BadInputError(f"{self.info.name}: this virtual GPU has no PCIe link model")
        c = pcie.copy(link, nbytes, direction, pinned)
        board_w, host_w = pcie.copy_power(link, c)
        # the link, copy engine and GPU memory at the memory clock's voltage; not the memory-interface
        # hot spot near the sensor (dyn_mem_w), which only kernels' DRAM traffic heats
        s_core, s_mem = self.preset.scales(self._core_mhz, self._mem_mhz)
        tp = self.preset.timing  # the copy's DRAM traffic at the link's rate, against the DRAM's own
        busy = min(1.0, nbytes / c.time_s / (tp.dram_bytes_per_mem_cycle * tp.dram_efficiency * self._mem_mhz * 1e6))
        self._load = Load(False, board_w * s_mem, 0.0, {"copy": board_w}, busy)
        self._shape = None
        self._host_busy = True
        self._host_extra_w = host_w
        span = max(duration_s, c.time_s)
        self._advance(span)
        copies = max(1, int(span / c.time_s))
        noise = float(self._rng.normal(0.0, self.preset.sensors.kernel_time_noise))
        return CopyResult(copies, c.time_s * (1.0 + noise))

    def run(self, workload: Workload, duration_s: float) -> RunResult:
        t_true = self._start_kernel(workload)
        span = max(duration_s, t_true)
        t0 = self.t
        self._advance(span)
        # a shape launches only while its kernel runs (and not between high phases with low = 0)
        busy_s = span if self._shape is None else self._shape.busy_share(t0, self.t) * (self.t - t0)
        launches = max(1, int(busy_s / t_true))
        noise = float(self._rng.normal(0.0, self.preset.sensors.kernel_time_noise))
        return RunResult(launches, t_true * (1.0 + noise))

    def _start_kernel(self, workload: Workload) -> float:
        """The state of ``workload`` running back to back (its load and power shape, host busy launching),
        for :meth:`_advance` (also microbench.truth's noise-free traces); returns its true time, s."""
        t_true, self._load = self.evaluate(workload)
        self._shape = LoadShape.from_trait(workload.traits.get("power_shape"), self.t)
        self._host_busy = True
        self._host_extra_w = 0.0
        return t_true

    def snapshot(self) -> dict:
        extra = self._sampler.state() if self._sampler is not None else {}
        return {**extra, "t": self.t, "t_die": self.t_die, "t_sink": self.t_sink, "t_case": self.t_case,
                "duty": self.duty, "energy_j": self.energy_j, "avg_buf": list(self._avg_buf),
                "next_nvml": self._next_nvml, "next_wall": self._next_wall, "wall_acc": self._wall_acc,
                "wall_n": self._wall_n, "calls": self._calls, "core_mhz": self._core_mhz,
                "mem_mhz": self._mem_mhz, "fan_override": self._fan_override,
                **({"rapl_j": self._rapl_j.tolist(), "rapl_last": list(self._rapl._last or (None, None))}
                   if self._rapl is not None else {})}

    def restore(self, state: dict, t_mono_s: float | None = None) -> None:
        for k in ("t", "t_die", "t_sink", "t_case", "duty", "energy_j"):
            setattr(self, k, float(state[k]))
        self._avg_buf.clear()
        self._avg_buf.extend(state["avg_buf"])
        for k in ("next_nvml", "next_wall", "wall_acc", "wall_n", "core_mhz", "mem_mhz", "fan_override"):
            setattr(self, f"_{k}", state[k])
        self._calls = int(state["calls"])
        if self._rapl is not None:
            self._rapl_j = np.asarray(state["rapl_j"], float)
            last = state["rapl_last"]
            self._rapl._last = None if last[0] is None else (float(last[0]), float(last[1]))
        shift = 0.0
        if t_mono_s is not None and t_mono_s > self.t:
            shift = t_mono_s - self.t  # keep the session clock monotonic across a resume
            self.t += shift
            self._next_nvml += shift
            self._next_wall += shift
            if self._rapl is not None and self._rapl._last is not None:
                self._rapl._last = (self._rapl._last[0] + shift, self._rapl._last[1])
        if self._sampler is not None:
            self._sampler.set_state(state, shift)

    # -- physics --------------------------------------------------------------------------------
    def evaluate(self, workload: Workload) -> tuple[float, Load]:
        """True kernel time (s) and power load of ``workload`` at the current clocks (no time passes)."""
        p = self.preset
        fc, fm = self._core_mhz, self._mem_mhz
        t_true = kernel_time_s(p.timing, workload.per_warp, workload.launch, workload.traits, fc, fm,
                               self.info.default_core_mhz, self.info.default_mem_mhz)
        counts = unit_counts(workload.per_warp, unit_classes=p.unit_classes)
        cycles = t_true * fc * 1e6
        la = workload.launch
        # a block occupies whole hardware warps (a wave64 issues for 64 lanes even with 32 threads)
        wps = (la.warps_per_sm if p.timing.warp_size == 32 else
               occupied_warps(la.threads_per_block, p.timing.warp_size) * la.blocks / la.active_sms)
        ar = {u: min(1.0, counts[u] * wps / (cycles * p.timing.warp_issue_per_cycle)) for u in p.power.units}
        # memory-domain units are driven by their accesses per memory cycle (IPP's per-core-cycle rate,
        # converted at the default clock ratio so both agree at the default clocks)
        ratio = (fc / fm) / (self.info.default_core_mhz / self.info.default_mem_mhz)
        for u, up in p.power.units.items():
            if up.domain == "mem":
                ar[u] = min(1.0, ar[u] * ratio)
        s_core, s_mem = p.scales(fc, fm)
        load = load_for(p.power, ar, workload.launch.active_sms, self.info.sm_count, s_core, s_mem)
        # what the sensor logs as memory utilization: the DRAM's busy share from the bytes the kernel moves
        # (the timing model's), not from the memory units' power
        load.dram_busy = dram_busy_share(p.timing, workload.per_warp, la, workload.traits, t_true, fm)
        return t_true, load

    def _sensor_temp(self) -> float:
        return self.t_die + self.preset.thermal.r_io_c_per_w * self._load.dyn_mem_w

    def _advance(self, duration_s: float) -> None:
        """Advance simulated time by ``duration_s`` (rounded to whole steps)."""
        self._calls += 1
        self._rng = np.random.default_rng([self.seed, self._calls])
        n = max(1, int(round(duration_s / DT_S)))
        p, th, sm = self.preset, self.preset.thermal, self.preset.sensors
        t_start, e_start = self.t, self.energy_j
        sampler, shape = self._sampler, self._shape
        sub = int(round(DT_S / FINE_DT_S))
        act_fine = act_step = None
        if shape is not None:  # the load's activity at 1 ms, and its mean over each step (for the heat)
            edges = t_start + FINE_DT_S * np.arange(n * sub + 1)
            act_fine = shape.mean_activity(edges[:-1], edges[1:])
            act_step = act_fine.reshape(n, sub).mean(axis=1).tolist()
        trace = self.power_trace is not None and sampler is None
        step_p: list[float] = []
        slow_w: list[float] = []   # per step: board power without the shaped runtime part (sampler only)
        step_temp: list[float] = []
        step_duty: list[float] = []
        pp = p.power
        fc, fm = self._core_mhz, self._mem_mhz
        s_core, s_mem = p.scales(fc, fm)
        leak_v = p.v_core_rel(fc) ** pp.leak_v_exp
        base_w = pp.p_const_w + pp.idle_core_w * s_core + pp.idle_mem_w * s_mem
        run_w0 = run_w = self._load.dyn_core_w + self._load.dyn_mem_w
        mem_w0 = mem_w = self._load.dyn_mem_w
        host_w = pp.host_idle_w + (pp.host_busy_w if self._host_busy else 0.0) + self._host_extra_w
        sink_frac = th.mem_heat_to_sink
        hot0 = hot = th.r_io_c_per_w * mem_w
        util0 = util = self._load.dram_busy  # memory utilization (0..1): the DRAM's busy share
        util_acc, util_n = 0.0, 0
        running = self._load.running
        c_d, c_s, c_c = th.c_die_j_per_c, th.c_sink_j_per_c, th.c_case_j_per_c
        g_ds, g_sc0, g_scf, g_cr = (th.g_die_sink_w_per_c, th.g_sink_case0_w_per_c, th.g_sink_case_fan_w_per_c,
                                    th.g_case_room_w_per_c)
        die_decay = math.exp(-DT_S * g_ds / c_d)  # exact update of the fast die node
        t_room, recirc = th.t_room_c, th.recirculation
        fan_max = pp.fan_max_w
        leak_ref, leak_k, leak_t0 = pp.leak_ref_w * leak_v, pp.leak_k_per_c, pp.leak_ref_c
        slew = th.fan_slew_per_s * DT_S
        fan_min, fan_t0, fan_gain = th.fan_min, th.fan_t0_c, th.fan_gain_per_c
        override = self._fan_override
        t_die, t_sink, t_case, duty = self.t_die, self.t_sink, self.t_case, self.duty
        energy, t = self.energy_j, self.t
        avg = self._avg_buf
        avg_sum = sum(avg)
        next_nvml, next_wall = self._next_nvml, self._next_wall
        wall_acc, wall_n = self._wall_acc, self._wall_n
        nv_t, nv_p, nv_avg, nv_e, nv_temp, nv_fan, nv_util = [], [], [], [], [], [], []
        step_util: list[float] = []
        wl_t, wl_dc = [], []
        upd, wint = sm.nvml_update_s, sm.wall_interval_s
        for i in range(n):
            if act_step is not None:
                a = act_step[i]
                run_w, mem_w, hot, util = run_w0 * a, mem_w0 * a, hot0 * a, util0 * a
            fan_w = fan_max * duty * duty * duty
            # the memory-interface hot spot near the sensor leaks too: leakage follows the sensor's temperature
            p_board = base_w + leak_ref * math.exp(leak_k * (t_die + hot - leak_t0)) + fan_w + run_w
            heat_die = p_board - fan_w - sink_frac * mem_w
            eq = t_sink + heat_die / g_ds
            new_die = eq + (t_die - eq) * die_decay
            q_ds = g_ds * (0.5 * (t_die + new_die) - t_sink)
            q_sc = (g_sc0 + g_scf * duty) * (t_sink - t_case)
            t_die = new_die
            t_sink += DT_S * (sink_frac * mem_w + q_ds - q_sc) / c_s
            t_case += DT_S * (recirc * (q_sc + fan_w) + host_w - g_cr * (t_case - t_room)) / c_c
            # fan controller: target from the die temperature, slew-limited
            if override is not None:
                target = override
            else:
                target = fan_min + fan_gain * (t_die - fan_t0)
                target = fan_min if target < fan_min else (1.0 if target > 1.0 else target)
            duty = min(target, duty + slew) if target > duty else max(target, duty - slew)
            energy += p_board * DT_S
            if trace:
                step_p.append(p_board)
            if sampler is not None:  # the part-time sensor samples the 1 ms power after the loop
                slow_w.append(p_board - run_w)
                step_temp.append(t_die + hot)
                step_duty.append(duty)
                step_util.append(util)
            else:
                if len(avg) == avg.maxlen:
                    avg_sum -= avg[0]
                avg.append(p_board)
                avg_sum += p_board
            t += DT_S
            util_acc += util
            util_n += 1
            wall_acc += p_board + host_w
            wall_n += 1
            if sampler is None and t >= next_nvml - 1e-9:
                nv_t.append(t)
                nv_p.append(p_board)
                nv_avg.append(avg_sum / len(avg))
                nv_e.append(energy)
                nv_temp.append(t_die + hot)
                nv_fan.append(duty)
                nv_util.append(util_acc / util_n)  # NVML: busy share over the past sample period
                util_acc, util_n = 0.0, 0
                next_nvml += upd
            if t >= next_wall - 1e-9:
                wl_t.append(t)
                wl_dc.append(wall_acc / wall_n)
                wall_acc, wall_n = 0.0, 0
                next_wall += wint
        self.t_die, self.t_sink, self.t_case, self.duty = t_die, t_sink, t_case, duty
        self.energy_j, self.t = energy, t
        self._next_nvml, self._next_wall = next_nvml, next_wall
        self._wall_acc, self._wall_n = wall_acc, wall_n
        if sampler is None and self.power_trace is not None:
            self.power_trace.append((t_start, DT_S, np.asarray(step_p)))
        if sampler is not None:
            self._sample_fine(t_start, e_start, n, sub, slow_w, run_w0, act_fine, step_temp, step_duty, step_util,
                              fc, fm, running)
        if self._rapl is not None:  # host power is constant over this call: each zone's energy is a line in t
            zone_w = self._rapl.zone_power_w(pp.host_busy_w if self._host_busy else 0.0, self._host_extra_w)
            if nv_t:
                tt = np.array(nv_t)
                e = self._rapl_j + np.outer(tt - t_start, zone_w)
                self._rapl.push_block(tt, EPOCH_S + tt, self._rapl.encode(tt, e))
            self._rapl_j = self._rapl_j + zone_w * (n * DT_S)
        if nv_t and isinstance(self._nvml, SimAmdSmiSensor):
            noise = self._rng.normal(0.0, sm.nvml_power_noise_w, size=(len(nv_t), 2))
            tt = np.array(nv_t)
            self._nvml.push_block(tt, EPOCH_S + tt, self._nvml.encode(
                tt, np.array(nv_p), np.array(nv_avg), np.array(nv_e), np.array(nv_temp), fc, fm, running, noise,
                np.array(nv_util)))
        elif nv_t:
            k = len(nv_t)
            noise = self._rng.normal(0.0, sm.nvml_power_noise_w, size=(k, 2))
            # the temperature sensor's noise from a stream of its own (the power and timing draws stay those
            # of older toolkits for the same seed)
            temp_noise = np.random.default_rng([self.seed, self._calls, 1]).normal(0.0, sm.nvml_temp_noise_c, k)
            tt = np.array(nv_t)
            self._nvml.push_block(tt, EPOCH_S + tt, {
                "power_w": np.round(np.array(nv_p) + noise[:, 0], 3),
                "power_avg_w": np.round(np.array(nv_avg) + 0.3 * noise[:, 1], 3),
                "energy_mj": (np.array(nv_e) * 1000.0).astype(np.int64),
                "temp_c": np.rint(np.array(nv_temp) + temp_noise).astype(np.int64),
                "sm_mhz": np.full(k, fc), "mem_mhz": np.full(k, fm),
                "fan_pct": np.rint(100.0 * np.array(nv_fan)).astype(np.int64),
                "util_gpu_pct": np.full(k, 100 if running else 0, dtype=np.int64),
                "util_mem_pct": np.rint(100.0 * np.array(nv_util)).astype(np.int64),
                "pstate": np.full(k, 0 if running else 8, dtype=np.int64),
                "clock_event_reasons": np.full(k, 0 if running else 0x1, dtype=np.int64)})
        if wl_t:
            dc = np.array(wl_dc)
            eff = np.array([sm.psu_efficiency(x) for x in dc])
            ac = dc / eff + self._rng.normal(0.0, sm.wall_noise_w, size=len(dc))
            tt = np.array(wl_t)
            self._wall.push_block(tt, EPOCH_S + tt, {"power_w": np.round(np.round(ac / sm.wall_resolution_w) * sm.wall_resolution_w, 1)})

    def _sample_fine(self, t_start: float, e_start: float, n: int, sub: int, slow_w: list[float], run_w: float,
                     act_fine: np.ndarray | None, step_temp: list[float], step_duty: list[float],
                     step_util: list[float], fc: float, fm: float, running: bool) -> None:
        """The part-time NVML sensor's rows for the ``n`` steps just simulated: the true power at 1 ms
        (each step's slow part plus the shaped runtime power) through :class:`BoxcarSampler`."""
        sm = self.preset.sensors
        fine = np.repeat(np.asarray(slow_w), sub)
        fine += run_w * (act_fine if act_fine is not None else 1.0)
        if self.power_trace is not None:
            self.power_trace.append((t_start, FINE_DT_S, fine.copy()))
        up = self._sampler.feed(t_start, fine, e_start)
        tt = up["t"]
        k = tt.size
        if not k:
            return
        # temperature and fan of the step each update falls in
        idx = np.clip(((tt - t_start) / DT_S - 1e-9).astype(int), 0, n - 1)
        noise = self._rng.normal(0.0, sm.nvml_power_noise_w, size=(k, 2))
        self._nvml.push_block(tt, EPOCH_S + tt, {
            "power_w": np.round(up["power_w"] + noise[:, 0], 3),
            "power_avg_w": np.round(up["power_avg_w"] + 0.3 * noise[:, 1], 3),
            "energy_mj": np.floor(up["energy_j"] * 1000.0).astype(np.int64),
            "temp_c": np.rint(np.asarray(step_temp)[idx]).astype(np.int64),
            "sm_mhz": np.full(k, fc), "mem_mhz": np.full(k, fm),
            "fan_pct": np.rint(100.0 * np.asarray(step_duty)[idx]).astype(np.int64),
            "util_gpu_pct": np.full(k, 100 if running else 0, dtype=np.int64),
            "util_mem_pct": np.rint(100.0 * np.asarray(step_util)[idx]).astype(np.int64),
            "pstate": np.full(k, 0 if running else 8, dtype=np.int64),
            "clock_event_reasons": np.full(k, 0 if running else 0x1, dtype=np.int64)})

    def keep_power_trace(self) -> None:
        """Start keeping the true board power (for :meth:`true_energy_j`; tests and studies only)."""
        self.power_trace = []

    def true_energy_j(self, t0_s: float, t1_s: float) -> float:
        """True board energy between ``t0_s`` and ``t1_s`` (J) from the kept power trace; for tests of
        the simulator and studies of measurement methods only (the toolkit never sees it)."""
        if self.power_trace is None:
            raise RuntimeError("call keep_power_trace() before the run")
        total = 0.0
        for start, dt, p in self.power_trace:
            edges = start + dt * np.arange(p.size + 1)
            lo = np.clip(edges[:-1], t0_s, t1_s)
            hi = np.clip(edges[1:], t0_s, t1_s)
            total += float(np.sum(p * (hi - lo)))
        return total

    def true_power_w(self) -> float:
        """Current true board power (W); for tests of the simulator only."""
        p = self.preset
        s_core, s_mem = p.scales(self._core_mhz, self._mem_mhz)
        pp = p.power
        leak = pp.leak_ref_w * p.v_core_rel(self._core_mhz) ** pp.leak_v_exp * math.exp(
            pp.leak_k_per_c * (self._sensor_temp() - pp.leak_ref_c))
        return (pp.p_const_w + pp.idle_core_w * s_core + pp.idle_mem_w * s_mem + leak
                + pp.fan_max_w * self.duty ** 3 + self._load.dyn_core_w + self._load.dyn_mem_w)

    def close(self) -> None:
        """Reset locked clocks and the fan, as a real device's close does (the state stays readable)."""
        self._core_mhz, self._mem_mhz = self.info.default_core_mhz, self.info.default_mem_mhz
        self._fan_override = None

    def describe(self) -> dict[str, Any]:
        return {"preset": self.preset.name, "seed": self.seed, "dt_s": DT_S, "virtual_epoch_s": EPOCH_S}


def open_sim(spec: str, seed: int = 0) -> VirtualGPU:
    """``sim:<preset>`` -> a :class:`VirtualGPU`."""
    from microbench.devices.sim.presets import get_preset

    name = spec.split(":", 1)[1] if ":" in spec else spec
    return VirtualGPU(get_preset(name), seed=seed)


class SimBackend(Backend):
    """The virtual GPUs, ``sim:<preset>`` (:mod:`microbench.devices.sim.presets`)."""

    prefix = "sim"
    vendor = "virtual"
    library = "simulation (no library)"
    virtual = True

    def available(self) -> tuple[bool, str]:
        return True, "virtual GPUs are always available"

    def list_gpus(self) -> list[dict[str, Any]]:
        from microbench.devices.sim.presets import PRESETS

        return [{"index": name, "name": f"virtual {p.description}", "uuid": f"SIM-{name}"}
                for name, p in PRESETS.items()]

    def open(self, what: str, seed: int = 0) -> VirtualGPU:
        return open_sim(what, seed)


BACKEND = SimBackend()
