"""A scripted stand-in for NVML, installed into an autospec'd mock of the ``pynvml`` module.

Used by the tests and ``tests/benchmarks/bench_logger.py`` (there is no GPU in CI)::

    with mock.patch("microbench.devices.nvml.pynvml", autospec=True) as m:
        fake = install_fake(m, [FakeGpu()])
        ...

``mock.patch(..., autospec=True)`` keeps every function's real signature (a wrong call fails the
test) but replaces constants and exception classes with mocks; :func:`install_fake` puts the real
constants, error classes and ctypes structures back and wires each function to a :class:`FakeGpu`.
Power follows ``power_fn(t)`` (W, t = Unix time, s); the energy counter integrates it exactly and
only advances every ``counter_period_s`` like real GPUs (~100 ms).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pynvml as real

#: names of the fake's queries, as used in ``FakeGpu.unsupported`` and ``FakeGpu.fail``
QUERIES = ("power_instant", "power_average", "energy_field", "mem_temp", "power_usage", "energy_counter",
           "temperature", "sm_clock", "mem_clock", "clock_event_reasons", "fan", "num_fans", "fan_v2", "utilization",
           "pstate")

_FIELD_KEYS = {real.NVML_FI_DEV_POWER_INSTANT: "power_instant", real.NVML_FI_DEV_POWER_AVERAGE: "power_average",
               real.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION: "energy_field", real.NVML_FI_DEV_MEMORY_TEMP: "mem_temp"}


@dataclass
class FakeGpu:
    """State of one fake GPU. ``fail[query] = NVML error code`` makes that query fail (every time)."""

    name: str = "NVIDIA Fake A100"
    uuid: str = "GPU-00000000-fake-0000-0000-000000000000"
    pci_bus_id: str = "00000000:3B:00.0"
    arch: int = real.NVML_DEVICE_ARCH_AMPERE
    power_fn: Callable[[float], float] = lambda t: 100.0
    temp_c: float = 45.0
    mem_temp_c: float = 50.0
    sm_mhz: int = 1410
    mem_mhz: int = 1215
    reasons: int = 0
    fan_pct: int = 30
    #: per-fan duties, % (``nvmlDeviceGetNumFans``, ``nvmlDeviceGetFanSpeed_v2``); None: one fan at ``fan_pct``;
    #: ``[]``: a fanless board (A100, H100): the fan count is 0 and ``nvmlDeviceGetFanSpeed`` NOT_SUPPORTED
    fans_pct: list[int] | None = None
    pstate: int = 0
    counter_period_s: float = 0.1
    energy0_mj: int = 123_456_789
    supported: dict[int, list[int]] = field(default_factory=lambda: {1215: [1410, 1305, 1200, 1095, 210]})
    unsupported: set[str] = field(default_factory=set)
    fail: dict[str, int] = field(default_factory=dict)
    lock_error: int | None = None  # error code returned by Set*LockedClocks
    module_scope_only: bool = False  # Grace Hopper: power fields only at NVML_POWER_SCOPE_MODULE
    power_limits_mw: tuple[int, int] = (100_000, 400_000)  # nvmlDeviceGetPowerManagementLimitConstraints
    shutdown_temp_c: int = 92                             # NVML_TEMPERATURE_THRESHOLD_SHUTDOWN
    t0: float = field(default_factory=time.time)
    calls: list[tuple[str, tuple]] = field(default_factory=list)
    locked_core: tuple[int, int] | None = None
    locked_mem: tuple[int, int] | None = None

    _ecache: tuple[float, float] | None = None  # (time, joules) integrated so far

    def __repr__(self) -> str:  # the fake's device handle, as the NVML DEBUG trace shows it
        return f"<FakeGpu {self.name}>"

    def energy_mj(self, t: float) -> int:
        """Counter value at Unix time ``t``: integral of power up to the last counter update, mJ."""
        tq = self.t0 + ((t - self.t0) // self.counter_period_s) * self.counter_period_s
        tc, ej = self._ecache or (self.t0, 0.0)
        if tq > tc:  # integrate power from the cached point to tq (trapezoid, 10 ms steps)
            n = max(2, int((tq - tc) / 0.01) + 1)
            step = (tq - tc) / (n - 1)
            ps = [self.power_fn(tc + i * step) for i in range(n)]
            ej += sum((ps[i] + ps[i + 1]) / 2 * step for i in range(n - 1))
            self._ecache = (tq, ej)
        return int(self.energy0_mj + ej * 1000.0)


class FakeNvml:
    """The wiring between the mock module and the fake GPUs (handles are the FakeGpu objects)."""

    def __init__(self, mod: Any, gpus: list[FakeGpu]):
        self.mod = mod
        self.gpus = gpus
        self.init_count = 0
        self.lib_missing = False

    def _check(self, gpu: FakeGpu, query: str) -> None:
        gpu.calls.append((query, ()))
        if query in gpu.fail:
            raise real.NVMLError(gpu.fail[query])
        if query in gpu.unsupported:
            raise real.NVMLError(real.NVML_ERROR_NOT_SUPPORTED)

    def field_values(self, gpu: FakeGpu, field_ids: list[Any]) -> Any:
        gpu.calls.append(("field_values", tuple(field_ids)))
        if "field_values" in gpu.fail:
            raise real.NVMLError(gpu.fail["field_values"])
        arr = (real.c_nvmlFieldValue_t * len(field_ids))()
        now = time.time()
        for i, fid in enumerate(field_ids):
            fid, scope = fid if isinstance(fid, tuple) else (fid, 0)
            fv = arr[i]
            fv.fieldId, fv.scopeId = fid, scope
            fv.timestamp = int(now * 1e6)
            key = _FIELD_KEYS.get(fid)
            if key in ("power_instant", "power_average") and gpu.module_scope_only != (
                    scope == real.NVML_POWER_SCOPE_MODULE):
                fv.nvmlReturn = real.NVML_ERROR_NOT_SUPPORTED
                continue
            if key is None or key in gpu.unsupported:
                fv.nvmlReturn = real.NVML_ERROR_NOT_SUPPORTED
                continue
            if key in gpu.fail:
                fv.nvmlReturn = gpu.fail[key]
                continue
            fv.nvmlReturn = real.NVML_SUCCESS
            if key in ("power_instant", "power_average"):
                fv.valueType, fv.value.uiVal = real.NVML_VALUE_TYPE_UNSIGNED_INT, int(gpu.power_fn(now) * 1000)
            elif key == "energy_field":
                fv.valueType, fv.value.ullVal = real.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG, gpu.energy_mj(now)
            elif key == "mem_temp":
                fv.valueType, fv.value.uiVal = real.NVML_VALUE_TYPE_UNSIGNED_INT, int(gpu.mem_temp_c)
        return arr


def _restore_real_names(mod: Any) -> None:
    for name in dir(real):
        if name.startswith(("NVML_", "nvmlClocksEventReason", "NVMLError", "c_nvml")) or name in (
                "nvmlTemperature_v1",):
            setattr(mod, name, getattr(real, name))


def install_fake(mod: Any, gpus: list[FakeGpu] | None = None) -> FakeNvml:
    """Wire an autospec'd ``pynvml`` mock ``mod`` to ``gpus`` (default: one :class:`FakeGpu`)."""
    gpus = list(gpus) if gpus is not None else [FakeGpu()]
    fake = FakeNvml(mod, gpus)
    _restore_real_names(mod)

    def init(*a: Any) -> None:
        if fake.lib_missing:
            raise real.NVMLError(real.NVML_ERROR_LIBRARY_NOT_FOUND)
        fake.init_count += 1

    def shutdown() -> None:
        fake.init_count -= 1

    def by_index(i: int) -> FakeGpu:
        if not 0 <= i < len(gpus):
            raise real.NVMLError(real.NVML_ERROR_INVALID_ARGUMENT)
        return gpus[i]

    def by_pci(bus: Any) -> FakeGpu:
        bus = bus.decode() if isinstance(bus, bytes) else bus
        for g in gpus:
            if g.pci_bus_id.lower() == str(bus).lower():
                return g
        raise real.NVMLError(real.NVML_ERROR_NOT_FOUND)

    def q(query: str, value: Callable[[FakeGpu], Any]) -> Callable[..., Any]:
        def f(h: FakeGpu, *a: Any) -> Any:
            fake._check(h, query)
            return value(h)
        return f

    class _Pci:
        def __init__(self, g: FakeGpu):
            self.busId = g.pci_bus_id.encode()

    class _Util:
        def __init__(self, gpu: int, memory: int):
            self.gpu, self.memory = gpu, memory

    def clock_info(h: FakeGpu, typ: int) -> int:
        if typ == real.NVML_CLOCK_SM:
            fake._check(h, "sm_clock")
            return h.locked_core[0] if h.locked_core else h.sm_mhz
        fake._check(h, "mem_clock")
        return h.locked_mem[0] if h.locked_mem else h.mem_mhz

    def set_locked(dom: str) -> Callable[..., None]:
        def f(h: FakeGpu, lo: int, hi: int) -> None:
            h.calls.append((f"set_{dom}", (lo, hi)))
            if h.lock_error is not None:
                raise real.NVMLError(h.lock_error)
            setattr(h, f"locked_{dom}", (lo, hi))
        return f

    def reset_locked(dom: str) -> Callable[..., None]:
        def f(h: FakeGpu) -> None:
            h.calls.append((f"reset_{dom}", ()))
            setattr(h, f"locked_{dom}", None)
        return f

    def graphics_clocks(h: FakeGpu, mem: int) -> list[int]:
        if mem not in h.supported:
            raise real.NVMLError(real.NVML_ERROR_INVALID_ARGUMENT)
        return list(h.supported[mem])

    m = mod
    m.nvmlInit.side_effect = init
    m.nvmlInitWithFlags.side_effect = init
    m.nvmlShutdown.side_effect = shutdown
    m.nvmlDeviceGetCount.side_effect = lambda: len(gpus)
    m.nvmlDeviceGetHandleByIndex.side_effect = by_index
    m.nvmlDeviceGetHandleByPciBusId.side_effect = by_pci
    m.nvmlDeviceGetName.side_effect = lambda h: h.name
    m.nvmlDeviceGetUUID.side_effect = lambda h: h.uuid
    m.nvmlDeviceGetPciInfo.side_effect = lambda h: _Pci(h)
    m.nvmlDeviceGetArchitecture.side_effect = lambda h: h.arch
    m.nvmlDeviceGetNumGpuCores.side_effect = lambda h: 6912
    m.nvmlDeviceGetMaxClockInfo.side_effect = lambda h, t: (max(max(v) for v in h.supported.values())
                                                            if t == real.NVML_CLOCK_SM else max(h.supported))
    m.nvmlDeviceGetPowerManagementLimitConstraints.side_effect = q("power_limit", lambda h: list(h.power_limits_mw))
    m.nvmlDeviceGetTemperatureThreshold.side_effect = lambda h, t: (
        h.shutdown_temp_c if t == real.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN else h.shutdown_temp_c - 5)
    m.nvmlSystemGetDriverVersion.side_effect = lambda: "580.65.06"
    m.nvmlSystemGetCudaDriverVersion.side_effect = lambda: 13000
    m.nvmlDeviceGetFieldValues.side_effect = fake.field_values
    m.nvmlDeviceGetPowerUsage.side_effect = q("power_usage", lambda h: int(h.power_fn(time.time()) * 1000))
    m.nvmlDeviceGetTotalEnergyConsumption.side_effect = q("energy_counter", lambda h: h.energy_mj(time.time()))
    m.nvmlDeviceGetTemperatureV.side_effect = q("temperature", lambda h: int(h.temp_c))
    m.nvmlDeviceGetClockInfo.side_effect = clock_info
    m.nvmlDeviceGetCurrentClocksEventReasons.side_effect = q("clock_event_reasons", lambda h: h.reasons)
    def fan_list(h: FakeGpu) -> list[int]:
        return [h.fan_pct] if h.fans_pct is None else list(h.fans_pct)

    def fan_speed_v2(h: FakeGpu, fan: int, query: str = "fan_v2") -> int:
        fake._check(h, query)
        fans = fan_list(h)
        if not fans:
            raise real.NVMLError(real.NVML_ERROR_NOT_SUPPORTED)
        if not 0 <= fan < len(fans):
            raise real.NVMLError(real.NVML_ERROR_INVALID_ARGUMENT)
        return fans[fan]

    m.nvmlDeviceGetFanSpeed.side_effect = lambda h: fan_speed_v2(h, 0, "fan")  # the single-fan call: fan 0
    m.nvmlDeviceGetFanSpeed_v2.side_effect = fan_speed_v2
    m.nvmlDeviceGetNumFans.side_effect = q("num_fans", lambda h: len(fan_list(h)))
    m.nvmlDeviceGetUtilizationRates.side_effect = q("utilization", lambda h: _Util(97, 12))
    m.nvmlDeviceGetPerformanceState.side_effect = q("pstate", lambda h: h.pstate)
    m.nvmlDeviceGetSupportedMemoryClocks.side_effect = lambda h: sorted(h.supported)
    m.nvmlDeviceGetSupportedGraphicsClocks.side_effect = graphics_clocks
    m.nvmlDeviceSetGpuLockedClocks.side_effect = set_locked("core")
    m.nvmlDeviceSetMemoryLockedClocks.side_effect = set_locked("mem")
    m.nvmlDeviceResetGpuLockedClocks.side_effect = reset_locked("core")
    m.nvmlDeviceResetMemoryLockedClocks.side_effect = reset_locked("mem")
    return fake
