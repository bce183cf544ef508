"""A stand-in for AMD's ``amdsmi`` Python package (7.x), with the real function names, signatures,
enums, status codes, exception classes and return shapes, for tests without an AMD GPU.

Written against the source of the PyPI wheel ``amdsmi`` 7.0.2 (``amdsmi/amdsmi_interface.py``,
``amdsmi_exception.py``, ``amdsmi_wrapper.py``; the wheel needs ``libamd_smi.so`` to import, so its
source was read, not run). ``tests/test_amdsmi.py`` checks the fake against that source when the wheel
is installed (``pip install 'gpu-calib[amd]'``): every function's parameter names, the keys of every
returned dict and the status-code values. What the wrapper does on top of the C library is done the same
way here: power fields equal to 0xFFFF become the string ``"N/A"``
(``amdsmi_get_power_info``), clock fields equal to the type's maximum become ``"N/A"``
(``_validate_if_max_uint``), a non-zero status raises ``AmdSmiLibraryException(code)`` (``RETRY`` and
``TIMEOUT`` their own subclasses, ``_check_res``), and a wrong argument type raises
``AmdSmiParameterException``.

Install it as the ``amdsmi`` module (``monkeypatch.setitem(sys.modules, "amdsmi", fake_module(...))``).
Each :class:`FakeAmdGpu` is one processor handle; its power follows ``power_fn(t)`` (W, t = Unix time)
and its energy accumulator integrates it exactly, in ticks of ``counter_resolution`` (15.3 uJ,
hard-coded in the C library). Faults the backend must handle:

- ``na``: power fields that read ``"N/A"`` (MI300X: ``average_socket_power``; MI200: ``current_socket_power``);
- ``fail``: ``{function name: status code}`` makes that call raise (e.g. ``AMDSMI_STATUS_NO_PERM``);
- ``stuck_counter``: the energy accumulator never moves (MI100 in Zeus' reports);
- ``zero_power``: the GCD reports 0 W and a zero counter (the odd GCD of an MI250/MI250X);
- ``hip_id``: the HIP device index, which need not follow the handle order;
- ``energy_key``: ``"power"`` for the 6.2 wheels' key of the accumulator (``"energy_accumulator"`` from 6.3);
- concurrent calls from two threads are counted in ``FakeAmdSmi.concurrent_calls`` (the library is not
  thread-safe before ROCm 7.2).
"""

from __future__ import annotations

import ctypes
import sys
import threading
import time
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

#: the status codes of amdsmi_wrapper.py (7.0.2)
STATUS: dict[str, int] = {
    "AMDSMI_STATUS_SUCCESS": 0, "AMDSMI_STATUS_INVAL": 1, "AMDSMI_STATUS_NOT_SUPPORTED": 2,
    "AMDSMI_STATUS_NOT_YET_IMPLEMENTED": 3, "AMDSMI_STATUS_FAIL_LOAD_MODULE": 4, "AMDSMI_STATUS_FAIL_LOAD_SYMBOL": 5,
    "AMDSMI_STATUS_DRM_ERROR": 6, "AMDSMI_STATUS_API_FAILED": 7, "AMDSMI_STATUS_TIMEOUT": 8,
    "AMDSMI_STATUS_RETRY": 9, "AMDSMI_STATUS_NO_PERM": 10, "AMDSMI_STATUS_INTERRUPT": 11, "AMDSMI_STATUS_IO": 12,
    "AMDSMI_STATUS_ADDRESS_FAULT": 13, "AMDSMI_STATUS_FILE_ERROR": 14, "AMDSMI_STATUS_OUT_OF_RESOURCES": 15,
    "AMDSMI_STATUS_INTERNAL_EXCEPTION": 16, "AMDSMI_STATUS_INPUT_OUT_OF_BOUNDS": 17, "AMDSMI_STATUS_INIT_ERROR": 18,
    "AMDSMI_STATUS_REFCOUNT_OVERFLOW": 19, "AMDSMI_STATUS_DIRECTORY_NOT_FOUND": 20, "AMDSMI_STATUS_BUSY": 30,
    "AMDSMI_STATUS_NOT_FOUND": 31, "AMDSMI_STATUS_NOT_INIT": 32, "AMDSMI_STATUS_NO_SLOT": 33,
    "AMDSMI_STATUS_DRIVER_NOT_LOADED": 34, "AMDSMI_STATUS_MORE_DATA": 39, "AMDSMI_STATUS_NO_DATA": 40,
    "AMDSMI_STATUS_INSUFFICIENT_SIZE": 41, "AMDSMI_STATUS_UNEXPECTED_SIZE": 42, "AMDSMI_STATUS_UNEXPECTED_DATA": 43,
    "AMDSMI_STATUS_FILE_NOT_FOUND": 52, "AMDSMI_STATUS_ARG_PTR_NULL": 53, "AMDSMI_STATUS_AMDGPU_RESTART_ERR": 54,
    "AMDSMI_STATUS_SETTING_UNAVAILABLE": 55, "AMDSMI_STATUS_CORRUPTED_EEPROM": 56,
    "AMDSMI_STATUS_MAP_ERROR": 4294967294, "AMDSMI_STATUS_UNKNOWN_ERROR": 4294967295,
}
#: the energy counter's resolution as the wrapper returns it (a C float of 15.3 uJ)
COUNTER_RESOLUTION_UJ = ctypes.c_float(15.3).value

_U16, _U32 = 0xFFFF, 0xFFFFFFFF


def _wrapper_module() -> types.ModuleType:
    w = types.ModuleType("amdsmi.amdsmi_wrapper")
    for k, v in STATUS.items():
        setattr(w, k, v)

    class amdsmi_processor_handle(ctypes.c_void_p):  # noqa: N801 - the real name
        pass

    w.amdsmi_processor_handle = amdsmi_processor_handle
    return w


_W = _wrapper_module()


# -- exceptions (amdsmi_exception.py) ------------------------------------------------------------

class AmdSmiException(Exception):
    """Base smi exception class"""


class AmdSmiLibraryException(AmdSmiException):
    def __init__(self, err_code):
        err_code = abs(err_code)
        super().__init__(err_code)
        self.err_code = err_code
        name = next((k for k, v in STATUS.items() if v == err_code), "AMDSMI_STATUS_UNKNOWN_ERROR")
        self.err_info = f"{name} - fake amdsmi"

    def __str__(self):
        return "Error code:\n\t{err_code} | {err_info}".format(err_code=self.err_code, err_info=self.err_info)

    def get_error_info(self, detailed=True):
        return self.err_info if detailed else str(self.err_info).split(" - ")[0]

    def get_error_code(self):
        return self.err_code


class AmdSmiRetryException(AmdSmiLibraryException):
    def __init__(self):
        super().__init__(STATUS["AMDSMI_STATUS_RETRY"])


class AmdSmiTimeoutException(AmdSmiLibraryException):
    def __init__(self):
        super().__init__(STATUS["AMDSMI_STATUS_TIMEOUT"])


class AmdSmiParameterException(AmdSmiException):
    def __init__(self, receivedValue, expectedType, msg=None):  # noqa: N803 - the real names
        super().__init__(msg)
        self.err_code = None
        self.actualType = type(receivedValue)
        self.expectedType = expectedType
        self.err_msg = msg or f"Invalid parameter:\nActual type: {self.actualType}\nExpected type: {expectedType}"

    def __str__(self):
        return self.err_msg


# -- enums (amdsmi_interface.py) -------------------------------------------------------------------

AmdSmiInitFlags = IntEnum("AmdSmiInitFlags", {"INIT_ALL_PROCESSORS": 4294967295, "INIT_AMD_CPUS": 1,
                                               "INIT_AMD_GPUS": 2, "INIT_AMD_APUS": 3, "INIT_NON_AMD_CPUS": 4,
                                               "INIT_NON_AMD_GPUS": 8})
AmdSmiClkType = IntEnum("AmdSmiClkType", {"SYS": 0, "GFX": 0, "DF": 1, "DCEF": 2, "SOC": 3, "MEM": 4, "PCIE": 5,
                                           "VCLK0": 6, "VCLK1": 7, "DCLK0": 8, "DCLK1": 9})
AmdSmiTemperatureType = IntEnum("AmdSmiTemperatureType", {"EDGE": 0, "HOTSPOT": 1, "JUNCTION": 1, "VRAM": 2,
                                                           "HBM_0": 3, "HBM_1": 4, "HBM_2": 5, "HBM_3": 6, "PLX": 7})
AmdSmiTemperatureMetric = IntEnum("AmdSmiTemperatureMetric", "CURRENT MAX MIN MAX_HYST MIN_HYST CRITICAL CRITICAL_HYST "
                                  "EMERGENCY EMERGENCY_HYST CRIT_MIN CRIT_MIN_HYST OFFSET LOWEST HIGHEST", start=0)
AmdSmiDevPerfLevel = IntEnum("AmdSmiDevPerfLevel", {
    "AUTO": 0, "LOW": 1, "HIGH": 2, "MANUAL": 3, "STABLE_STD": 4, "STABLE_PEAK": 5, "STABLE_MIN_MCLK": 6,
    "STABLE_MIN_SCLK": 7, "DETERMINISM": 8, "UNKNOWN": 256})
_PERF_NAMES = {m.value: f"AMDSMI_DEV_PERF_LEVEL_{m.name}" for m in AmdSmiDevPerfLevel}


# -- one fake GPU (processor handle) ---------------------------------------------------------------

@dataclass
class FakeAmdGpu:
    """State of one fake AMD GPU (one GCD). Temperatures in degrees C: the C library already returns
    degrees, although the README says millidegrees."""

    market_name: str = "AMD Instinct MI300X"
    gfx: int = 0x942                     # target_graphics_version (the wrapper prints "gfx" + hex)
    num_compute_units: int = 304
    oam_id: int = 0
    hip_id: int = 0
    uuid: str = "00ff74a1-0000-1000-8013-2c1a6d2f6b1e"
    bdf: str = "0000:05:00.0"
    power_fn: Callable[[float], float] = lambda t: 300.0
    #: power fields reading "N/A" (0xFFFF from the library): MI300X's average_socket_power
    na: set[str] = field(default_factory=lambda: {"average_socket_power"})
    energy_key: str = "energy_accumulator"
    stuck_counter: bool = False
    zero_power: bool = False
    hotspot_c: int = 48
    edge_c: int | None = None            # MI200/MI300: no edge sensor (NOT_SUPPORTED)
    vram_c: int = 41
    gfx_mhz: int = 2100
    mem_mhz: int = 1300
    gfx_levels_mhz: tuple[int, ...] = (500, 1300, 2100)
    mem_levels_mhz: tuple[int, ...] = (1300,)
    power_cap_uw: int = 750_000_000
    fail: dict[str, int] = field(default_factory=dict)
    t0: float = field(default_factory=time.time)
    accumulator0: int = 1_234_567
    perf_level: int = 0
    clk_range: dict[int, tuple[int, int]] = field(default_factory=dict)
    determinism_mhz: int | None = None
    calls: list[tuple[str, tuple]] = field(default_factory=list)

    def energy_j(self, t: float) -> float:
        """Exact integral of ``power_fn`` from ``t0`` to ``t`` (trapezoid, 2 ms steps), J."""
        n = max(2, int((t - self.t0) / 0.002) + 1)
        step = (t - self.t0) / (n - 1)
        ps = [self.power_fn(self.t0 + i * step) for i in range(n)]
        return sum((ps[i] + ps[i + 1]) / 2 * step for i in range(n - 1))


class FakeAmdSmi:
    """The library's state shared by the module's functions: GPUs, init count, concurrency detector."""

    def __init__(self, gpus: list[FakeAmdGpu], clock: Callable[[], float] = time.time):
        self.gpus = gpus
        self.clock = clock
        self.init_count = 0
        self.concurrent_calls = 0
        self._busy = threading.Lock()
        self._ecache: dict[int, tuple[float, float]] = {}

    def enter(self, gpu: FakeAmdGpu | None, name: str, args: tuple) -> None:
        """Book-keeping of every call: concurrency (the library is not thread-safe before ROCm 7.2),
        the call log and injected failures."""
        if not self._busy.acquire(blocking=False):
            self.concurrent_calls += 1
        else:
            time.sleep(0.0005)  # a call takes time: overlapping calls from two threads show up
            self._busy.release()
        if self.init_count <= 0 and name not in ("amdsmi_init", "amdsmi_get_lib_version"):
            raise AmdSmiLibraryException(STATUS["AMDSMI_STATUS_NOT_INIT"])
        if gpu is not None:
            gpu.calls.append((name, args))
            if name in gpu.fail:
                code = gpu.fail[name]
                if code == STATUS["AMDSMI_STATUS_RETRY"]:
                    raise AmdSmiRetryException()
                if code == STATUS["AMDSMI_STATUS_TIMEOUT"]:
                    raise AmdSmiTimeoutException()
                raise AmdSmiLibraryException(code)

    def accumulator(self, gpu: FakeAmdGpu, t: float) -> int:
        if gpu.stuck_counter or gpu.zero_power:
            return gpu.accumulator0 if gpu.stuck_counter else 0
        return gpu.accumulator0 + int(gpu.energy_j(t) * 1e6 / COUNTER_RESOLUTION_UJ)


def fake_module(gpus: list[FakeAmdGpu], clock: Callable[[], float] = time.time) -> types.ModuleType:
    """An ``amdsmi`` module over ``gpus`` (module docstring); ``module.FAKE`` is its :class:`FakeAmdSmi`."""
    lib = FakeAmdSmi(gpus, clock)
    m = types.ModuleType("amdsmi")
    m.__version__ = "7.0.2-fake"
    m.FAKE = lib
    m.amdsmi_wrapper = _W
    for cls in (AmdSmiException, AmdSmiLibraryException, AmdSmiRetryException, AmdSmiTimeoutException,
                AmdSmiParameterException, AmdSmiInitFlags, AmdSmiClkType, AmdSmiTemperatureType,
                AmdSmiTemperatureMetric, AmdSmiDevPerfLevel):
        setattr(m, cls.__name__, cls)
    handles = {id(g): _W.amdsmi_processor_handle(i + 1) for i, g in enumerate(gpus)}
    by_handle = {h.value: g for g, h in zip(gpus, handles.values())}

    def gpu_of(processor_handle: Any, name: str, args: tuple = ()) -> FakeAmdGpu:
        if not isinstance(processor_handle, _W.amdsmi_processor_handle):
            raise AmdSmiParameterException(processor_handle, _W.amdsmi_processor_handle)
        g = by_handle.get(processor_handle.value)
        if g is None:
            raise AmdSmiLibraryException(STATUS["AMDSMI_STATUS_INVAL"])
        lib.enter(g, name, args)
        return g

    def amdsmi_init(flag=AmdSmiInitFlags.INIT_AMD_GPUS):
        if not isinstance(flag, AmdSmiInitFlags):
            raise AmdSmiParameterException(flag, AmdSmiInitFlags)
        lib.enter(None, "amdsmi_init", (flag,))
        lib.init_count += 1

    def amdsmi_shut_down():
        lib.enter(None, "amdsmi_shut_down", ())
        lib.init_count -= 1

    def amdsmi_get_lib_version():
        return {"major": 25, "minor": 5, "release": 1, "build": "fake"}

    def amdsmi_get_processor_handles():
        lib.enter(None, "amdsmi_get_processor_handles", ())
        return [_W.amdsmi_processor_handle(h.value) for h in handles.values()]

    def amdsmi_get_gpu_asic_info(processor_handle):
        g = gpu_of(processor_handle, "amdsmi_get_gpu_asic_info")
        return {"market_name": g.market_name, "vendor_id": "0x1002", "vendor_name": "Advanced Micro Devices Inc.",
                "subvendor_id": "0x1002", "device_id": "0x74a1", "rev_id": "0x00", "asic_serial": "0x7A4D5E0F1B2C3D4E",
                "oam_id": g.oam_id, "num_compute_units": g.num_compute_units,
                "target_graphics_version": "gfx" + hex(g.gfx)[2:], "subsystem_id": "0x74a1"}

    def amdsmi_get_gpu_device_uuid(processor_handle):
        return gpu_of(processor_handle, "amdsmi_get_gpu_device_uuid").uuid

    def amdsmi_get_gpu_device_bdf(processor_handle):
        return gpu_of(processor_handle, "amdsmi_get_gpu_device_bdf").bdf

    def amdsmi_get_gpu_enumeration_info(processor_handle):
        g = gpu_of(processor_handle, "amdsmi_get_gpu_enumeration_info")
        return {"drm_render": 128 + g.hip_id, "drm_card": g.hip_id, "hsa_id": g.hip_id, "hip_id": g.hip_id,
                "hip_uuid": "GPU-" + g.uuid.replace("-", "")[:16]}

    def amdsmi_get_gpu_driver_info(processor_handle):
        gpu_of(processor_handle, "amdsmi_get_gpu_driver_info")
        return {"driver_name": "amdgpu", "driver_version": "6.12.12", "driver_date": "2015/01/01 00:00"}

    def amdsmi_get_power_info(processor_handle):
        g = gpu_of(processor_handle, "amdsmi_get_power_info")
        w = 0 if g.zero_power else int(round(g.power_fn(lib.clock())))
        raw = {"socket_power": w, "current_socket_power": w, "average_socket_power": w,
               "gfx_voltage": 0xFFFF, "soc_voltage": 0xFFFF, "mem_voltage": 0xFFFF,
               "power_limit": g.power_cap_uw // 1_000_000}
        for k in g.na:
            raw[k] = 0xFFFF
        return {k: ("N/A" if v == _U16 else v) for k, v in raw.items()}

    def amdsmi_get_energy_count(processor_handle):
        g = gpu_of(processor_handle, "amdsmi_get_energy_count")
        t = lib.clock()
        return {g.energy_key: lib.accumulator(g, t), "counter_resolution": COUNTER_RESOLUTION_UJ,
                "timestamp": int(t * 1e9)}

    def amdsmi_get_temp_metric(processor_handle, sensor_type, metric):
        g = gpu_of(processor_handle, "amdsmi_get_temp_metric", (sensor_type, metric))
        if not isinstance(sensor_type, AmdSmiTemperatureType):
            raise AmdSmiParameterException(sensor_type, AmdSmiTemperatureType)
        if not isinstance(metric, AmdSmiTemperatureMetric):
            raise AmdSmiParameterException(metric, AmdSmiTemperatureMetric)
        value = {AmdSmiTemperatureType.EDGE: g.edge_c, AmdSmiTemperatureType.HOTSPOT: g.hotspot_c,
                 AmdSmiTemperatureType.VRAM: g.vram_c}.get(sensor_type)
        if value is None or metric != AmdSmiTemperatureMetric.CURRENT:
            raise AmdSmiLibraryException(STATUS["AMDSMI_STATUS_NOT_SUPPORTED"])
        return int(value)

    def clock_of(processor_handle: Any, name: str, clk: Any) -> tuple[FakeAmdGpu, tuple[int, ...], int]:
        """(GPU, DPM levels in MHz, current MHz) of a clock query, its type checked as the wrapper does."""
        g = gpu_of(processor_handle, name, (clk,))
        if not isinstance(clk, AmdSmiClkType):
            raise AmdSmiParameterException(clk, AmdSmiClkType)
        gfx = clk == AmdSmiClkType.GFX
        return g, (g.gfx_levels_mhz if gfx else g.mem_levels_mhz), (g.gfx_mhz if gfx else g.mem_mhz)

    def amdsmi_get_clock_info(processor_handle, clock_type):
        g, levels, cur = clock_of(processor_handle, "amdsmi_get_clock_info", clock_type)
        return {"clk": cur, "min_clk": min(levels), "max_clk": max(levels), "clk_locked": int(clock_type) in g.clk_range,
                "clk_deep_sleep": "N/A"}

    def amdsmi_get_clk_freq(processor_handle, clk_type):
        _, levels, cur = clock_of(processor_handle, "amdsmi_get_clk_freq", clk_type)
        hz = [int(f * 1_000_000) for f in levels]  # amdsmi_frequencies_t.frequency is in Hz
        return {"num_supported": len(hz), "current": levels.index(cur) if cur in levels else 0, "frequency": hz}

    def amdsmi_get_gpu_activity(processor_handle):
        gpu_of(processor_handle, "amdsmi_get_gpu_activity")
        return {"gfx_activity": 100, "umc_activity": 35, "mm_activity": "N/A"}

    def amdsmi_get_power_cap_info(processor_handle):
        g = gpu_of(processor_handle, "amdsmi_get_power_cap_info")
        return {"power_cap": g.power_cap_uw, "default_power_cap": g.power_cap_uw, "dpm_cap": 0,
                "min_power_cap": 0, "max_power_cap": g.power_cap_uw}

    def amdsmi_set_gpu_clk_range(processor_handle, min_clk_value, max_clk_value, clk_type):
        g = gpu_of(processor_handle, "amdsmi_set_gpu_clk_range", (min_clk_value, max_clk_value, clk_type))
        if not isinstance(min_clk_value, int) or not isinstance(max_clk_value, int):
            raise AmdSmiParameterException(min_clk_value, int)
        if not isinstance(clk_type, AmdSmiClkType):
            raise AmdSmiParameterException(clk_type, AmdSmiClkType)
        g.clk_range[int(clk_type)] = (min_clk_value, max_clk_value)
        g.perf_level = AmdSmiDevPerfLevel.MANUAL
        if clk_type == AmdSmiClkType.GFX:
            g.gfx_mhz = max_clk_value
        else:
            g.mem_mhz = max_clk_value

    def amdsmi_set_gpu_perf_determinism_mode(processor_handle, clkvalue):
        g = gpu_of(processor_handle, "amdsmi_set_gpu_perf_determinism_mode", (clkvalue,))
        if not isinstance(clkvalue, int):
            raise AmdSmiParameterException(clkvalue, int)
        g.determinism_mhz = clkvalue
        g.perf_level = AmdSmiDevPerfLevel.DETERMINISM
        g.gfx_mhz = clkvalue

    def amdsmi_set_gpu_perf_level(processor_handle, perf_level):
        g = gpu_of(processor_handle, "amdsmi_set_gpu_perf_level", (perf_level,))
        if not isinstance(perf_level, AmdSmiDevPerfLevel):
            raise AmdSmiParameterException(perf_level, AmdSmiDevPerfLevel)
        g.perf_level = int(perf_level)
        if perf_level == AmdSmiDevPerfLevel.AUTO:
            g.clk_range.clear()
            g.determinism_mhz = None
            g.gfx_mhz, g.mem_mhz = max(g.gfx_levels_mhz), max(g.mem_levels_mhz)

    def amdsmi_get_gpu_perf_level(processor_handle):
        g = gpu_of(processor_handle, "amdsmi_get_gpu_perf_level")
        return _PERF_NAMES[g.perf_level]

    for name, fn in list(locals().items()):  # every amdsmi_* function defined above
        if name.startswith("amdsmi_"):
            setattr(m, name, fn)
    return m


def install(monkeypatch: Any, gpus: list[FakeAmdGpu], clock: Callable[[], float] = time.time) -> types.ModuleType:
    """Install a fake ``amdsmi`` module for a test (pytest's ``monkeypatch``); returns it."""
    mod = fake_module(gpus, clock)
    monkeypatch.setitem(sys.modules, "amdsmi", mod)
    return mod


#: the GPUs of the tests: an MI300X (current power, average N/A) and the two GCDs of an MI250X
#: (average power only; the odd GCD reports zero), with HIP indices not in handle order
def mi300x(**kw: Any) -> FakeAmdGpu:
    return FakeAmdGpu(**kw)


def mi250x_gcd(gcd: int, **kw: Any) -> FakeAmdGpu:
    base = dict(market_name="AMD Instinct MI250X", gfx=0x90A, num_compute_units=110, oam_id=0, hip_id=gcd,
                uuid=f"5fff740c-0000-1000-80{gcd:02d}-6a1b2c3d4e5f", bdf=f"0000:{0xC1 + gcd:02x}:00.0",
                na={"current_socket_power"}, gfx_mhz=1700, mem_mhz=1600, gfx_levels_mhz=(500, 800, 1700),
                mem_levels_mhz=(1600,), power_cap_uw=560_000_000, zero_power=bool(gcd % 2))
    base.update(kw)
    return FakeAmdGpu(**base)
