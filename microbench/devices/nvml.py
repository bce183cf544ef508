"""NVIDIA GPUs through NVML (package ``nvidia-ml-py``): enumeration, the NVML sensor, clock control.

All use of ``pynvml`` in the toolkit is confined to this module; NVML return codes are mapped here, once,
to the toolkit's typed errors (:func:`map_nvml_error`: not supported, no permission, lost, transient, NVML
not usable; anything else a :class:`calib.core.errors.DeviceError`).

The sensor's stream columns (one row per poll; NVML units converted here, once):

``power_w``            board power, W: ``NVML_FI_DEV_POWER_INSTANT`` (GPU scope); when that field is not
                       supported, ``nvmlDeviceGetPowerUsage`` (a 1 s average on Ampere-except-GA100 and
                       newer -- ``capabilities()["power_w_source"]`` says which)
``power_avg_w``        NVML's averaged power, W (``NVML_FI_DEV_POWER_AVERAGE``)
``power_t_wall_s``     NVML's own timestamp of the ``power_w`` field value, Unix s (µs resolution)
``energy_mj``          total-energy counter, mJ since driver load (field 83, else
                       ``nvmlDeviceGetTotalEnergyConsumption``); updates about every 100 ms
``energy_t_wall_s``    NVML's timestamp of the counter field value, Unix s
``energy_reset``       1 when the counter went backwards since the previous row (driver reload or
                       64-bit wrap), else 0
``temp_c``             GPU core temperature, °C (``nvmlDeviceGetTemperatureV``)
``mem_temp_c``         memory (HBM) temperature, °C (field 82; empty on GDDR boards)
``sm_mhz``, ``mem_mhz`` current SM and memory clocks, MHz
``clock_event_reasons`` clock-event (throttle) reason bit mask (``nvmlDeviceGetCurrentClocksEventReasons``)
``fan_pct``            fan speed, % of maximum (the mean of the fans on a board with several)
``fan<i>_pct``         fan i's speed, % (``nvmlDeviceGetFanSpeed_v2``), on boards with two or more fans only:
                       ``fan0_pct``, ``fan1_pct``, ... (``NvmlGpu.columns``; fanless boards log no fan)
``util_gpu_pct``, ``util_mem_pct``  GPU and memory-controller utilization, %
``pstate``             performance state (0 = P0 = maximum performance)
``read_s``             host time spent in this poll, s

A quantity the GPU does not support is probed once, recorded in ``capabilities()`` and left empty.

Every NVML call goes through one boundary (:func:`_nvml`), which maps errors and, at ``DEBUG`` level of
this module's logger (``calib -vv``), traces the call: function name, arguments, result or error.
"""

from __future__ import annotations

import ctypes
import logging
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pynvml  # nvidia-ml-py (the official binding; never the deprecated `pynvml` wheel)

from calib.core.errors import (
    BadInputError,
    DeviceError,
    DeviceLostError,
    DeviceNoPermissionError,
    DeviceNotFoundError,
    DeviceNotSupportedError,
)
from microbench.devices.base import (
    CLOCKS_HELD,
    PolledGpuSensor,
    VendorGpu,
    install_clock_reset_handlers,
)
from microbench.logger import TransientSensorError

SENSOR_COLUMNS: tuple[str, ...] = (
    "power_w", "power_avg_w", "power_t_wall_s", "energy_mj", "energy_t_wall_s", "energy_reset",
    "temp_c", "mem_temp_c", "sm_mhz", "mem_mhz", "clock_event_reasons", "fan_pct",
    "util_gpu_pct", "util_mem_pct", "pstate", "read_s",
)

#: clock-event (throttle) reasons that mean the GPU is not at the requested clock because of power or heat
#: (NVML "ClocksEventReasons" bits: sw_power_cap, hw_slowdown, sw/hw thermal slowdown, hw power brake)
THROTTLE_MASK = 0x4 | 0x8 | 0x20 | 0x40 | 0x80

_ARCH_NAMES = {2: "kepler", 3: "maxwell", 4: "pascal", 5: "volta", 6: "turing", 7: "ampere", 8: "ada",
               9: "hopper", 10: "blackwell", 13: "rubin"}


# ------------------------------------------------------------------------------------------------
# Error mapping
# ------------------------------------------------------------------------------------------------

def _codes(*names: str) -> set[int]:
    return {getattr(pynvml, n) for n in names}


def map_nvml_error(err: BaseException, what: str) -> DeviceError:
    """Translate a ``pynvml.NVMLError`` raised by ``what`` into the toolkit's typed error."""
    code = getattr(err, "value", None)
    if code in _codes("NVML_ERROR_NOT_SUPPORTED", "NVML_ERROR_FUNCTION_NOT_FOUND", "NVML_ERROR_FREQ_NOT_SUPPORTED",
                      "NVML_ERROR_ARGUMENT_VERSION_MISMATCH", "NVML_ERROR_DEPRECATED"):
        return DeviceNotSupportedError(f"{what}: not supported by this GPU or driver (NVML: {err})")
    if code in _codes("NVML_ERROR_NO_PERMISSION"):
        return DeviceNoPermissionError(
            f"{what}: not permitted (NVML: {err}); this needs root (or CAP_SYS_ADMIN): run as root, or have an "
            "administrator lock the clocks with `nvidia-smi --lock-gpu-clocks`, or run without DVFS points")
    if code in _codes("NVML_ERROR_GPU_IS_LOST", "NVML_ERROR_RESET_REQUIRED", "NVML_ERROR_GPU_NOT_FOUND"):
        return DeviceLostError(
            f"{what}: the GPU stopped answering (NVML: {err}); it fell off the bus or needs a reset -- "
            "data after this point is missing; check `nvidia-smi` and dmesg")
    if code in _codes("NVML_ERROR_TIMEOUT", "NVML_ERROR_NOT_READY", "NVML_ERROR_NO_DATA", "NVML_ERROR_IN_USE",
                      "NVML_ERROR_IRQ_ISSUE"):
        return TransientSensorError(f"{what}: transient NVML failure ({err}); will retry")
    if code in _codes("NVML_ERROR_LIBRARY_NOT_FOUND", "NVML_ERROR_DRIVER_NOT_LOADED",
                      "NVML_ERROR_LIB_RM_VERSION_MISMATCH", "NVML_ERROR_UNINITIALIZED"):
        return DeviceError(f"{what}: NVML is not usable on this machine ({err}); is the NVIDIA driver installed "
                           "and loaded? (`nvidia-smi` should work)")
    return DeviceError(f"{what}: NVML error {code} ({err})")


_log = logging.getLogger(__name__)


def _brief(x: Any) -> str:
    """Short text of an NVML argument or result for the DEBUG trace (structures by their fields)."""
    if isinstance(x, bytes):
        return repr(x.decode(errors="replace"))
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(_brief(v) for v in x) + "]"
    if hasattr(x, "fieldId") and hasattr(x, "nvmlReturn"):  # c_nvmlFieldValue_t
        try:
            val: Any = _field_value(x)
        except DeviceError:
            val = "?"
        return f"field {x.fieldId}: return {x.nvmlReturn}, value {val}"
    if isinstance(x, ctypes.Structure) and hasattr(x, "_fields_"):
        return f"{type(x).__name__}(" + ", ".join(f"{f[0]}={_brief(getattr(x, f[0]))}" for f in x._fields_[:8]) + ")"
    if isinstance(x, ctypes._Pointer):
        return "<handle>"
    return repr(x)


def _fname(fn: Any) -> str:
    name = getattr(fn, "__name__", None)
    return name if isinstance(name, str) else str(getattr(fn, "_mock_name", None) or fn)  # autospec'd in tests


def _nvml(what: str, fn: Callable[..., Any], *args: Any) -> Any:
    """Call ``pynvml.fn(*args)``: the one boundary of every NVML call. NVML errors come out as typed
    toolkit errors (``from`` the original); at DEBUG level each call is traced (name, arguments,
    result or error)."""
    trace = _log.isEnabledFor(logging.DEBUG)
    try:
        out = fn(*args)
    except pynvml.NVMLError as e:
        if trace:
            _log.debug("NVML %s(%s) -> error %s (%s) [%s]", _fname(fn),
                       ", ".join(_brief(a) for a in args), getattr(e, "value", None), e, what)
        raise map_nvml_error(e, what) from e
    if trace:
        _log.debug("NVML %s(%s) -> %s [%s]", _fname(fn), ", ".join(_brief(a) for a in args),
                   _brief(out), what)
    return out


def _str(x: Any) -> str:
    return x.decode() if isinstance(x, bytes) else str(x)


def nvml_available() -> tuple[bool, str]:
    """Whether NVML can be initialised here: ``(ok, message)``. Refuses the unofficial ``pynvml`` wheel."""
    if not hasattr(pynvml, "_nvmlGetFunctionPointer"):
        return False, ("the installed `pynvml` module is not NVIDIA's nvidia-ml-py (the deprecated `pynvml` or "
                       "`nvidia-ml-py3` package shadows it): pip uninstall pynvml nvidia-ml-py3; "
                       "pip install --force-reinstall nvidia-ml-py")
    try:
        _nvml("nvmlInit", pynvml.nvmlInit)
    except DeviceError as e:
        return False, str(e)
    try:
        drv = _str(_nvml("driver version", pynvml.nvmlSystemGetDriverVersion))
        n = _nvml("device count", pynvml.nvmlDeviceGetCount)
        return True, f"NVML ok: driver {drv}, {n} GPU(s)"
    finally:
        _nvml("nvmlShutdown", pynvml.nvmlShutdown)


# ------------------------------------------------------------------------------------------------
# Field values
# ------------------------------------------------------------------------------------------------

def _field_value(fv: Any) -> float | int:
    """The number held by one ``c_nvmlFieldValue_t`` according to its ``valueType``."""
    vt = fv.valueType
    attr = {
        pynvml.NVML_VALUE_TYPE_DOUBLE: "dVal", pynvml.NVML_VALUE_TYPE_UNSIGNED_INT: "uiVal",
        pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG: "ulVal", pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: "ullVal",
        pynvml.NVML_VALUE_TYPE_SIGNED_LONG_LONG: "sllVal", pynvml.NVML_VALUE_TYPE_SIGNED_INT: "siVal",
        pynvml.NVML_VALUE_TYPE_UNSIGNED_SHORT: "usVal",
    }.get(vt)
    if attr is None:
        raise DeviceError(f"NVML field {fv.fieldId}: unknown value type {vt}")
    return getattr(fv.value, attr)


# ------------------------------------------------------------------------------------------------
# One GPU
# ------------------------------------------------------------------------------------------------

class NvmlGpu(VendorGpu):
    """One NVIDIA GPU through NVML: identity, probed capabilities, one-shot samples, clock control.

    Open by NVML ``index`` or by ``pci_bus_id`` (preferred when the CUDA index is known: NVML orders
    GPUs by PCI bus, CUDA by default fastest-first). Call :meth:`close` (or use ``with``) to reset any
    locked clocks and release NVML.
    """

    def __init__(self, index: int | None = None, *, pci_bus_id: str | None = None):
        _nvml("nvmlInit", pynvml.nvmlInit)
        self._start()
        try:
            count = _nvml("device count", pynvml.nvmlDeviceGetCount)
            if pci_bus_id is not None:
                self.handle = _nvml(f"GPU {pci_bus_id}", pynvml.nvmlDeviceGetHandleByPciBusId, pci_bus_id)
            else:
                index = 0 if index is None else int(index)
                if not 0 <= index < count:
                    raise DeviceNotFoundError(
                        f"GPU index {index} not found: NVML sees {count} GPU(s)"
                        + (f" (valid indices 0..{count - 1})" if count else ""))
                self.handle = _nvml(f"GPU {index}", pynvml.nvmlDeviceGetHandleByIndex, index)
            self.index = index if index is not None else -1
            self.name = _str(_nvml("GPU name", pynvml.nvmlDeviceGetName, self.handle))
            self.uuid = _str(_nvml("GPU UUID", pynvml.nvmlDeviceGetUUID, self.handle))
            self._fields: list[tuple[str, Any]] = []
        except BaseException:
            _nvml("nvmlShutdown", pynvml.nvmlShutdown)
            self._open = False
            raise

    @property
    def where(self) -> str:
        """How messages name this GPU."""
        return f"GPU {self.index} ({self.name})" if self.index >= 0 else f"GPU {self.name}"

    def _call(self, fn: Callable[..., Any], what: str, *args: Any) -> Any:
        return _nvml(f"{self.where}: {what}", fn, *args)

    # -- identity --------------------------------------------------------------------------------
    def identity(self) -> dict[str, Any]:
        """Name, UUID, PCI bus id, architecture, driver and CUDA driver versions (what NVML knows)."""
        out: dict[str, Any] = {"index": self.index, "name": self.name, "uuid": self.uuid}
        h = self.handle
        for key, what, call, conv in (
            ("pci_bus_id", "PCI info", (pynvml.nvmlDeviceGetPciInfo, h), lambda info: _str(info.busId)),
            ("architecture", "architecture", (pynvml.nvmlDeviceGetArchitecture, h),
             lambda a: _ARCH_NAMES.get(int(a), f"arch{int(a)}")),
            ("driver_version", "driver version", (pynvml.nvmlSystemGetDriverVersion,), _str),
            ("cuda_driver_version", "CUDA driver version", (pynvml.nvmlSystemGetCudaDriverVersion,),
             lambda v: f"{int(v) // 1000}.{int(v) % 1000 // 10}"),
            ("cuda_cores", "core count", (pynvml.nvmlDeviceGetNumGpuCores, h), int),
            ("max_sm_mhz", "max SM clock", (pynvml.nvmlDeviceGetMaxClockInfo, h, pynvml.NVML_CLOCK_SM), int),
            ("max_mem_mhz", "max memory clock", (pynvml.nvmlDeviceGetMaxClockInfo, h, pynvml.NVML_CLOCK_MEM), int),
            # the board's limits, which the samples layer checks readings against (calib.core.plausibility)
            ("power_limit_w", "power limit constraints", (pynvml.nvmlDeviceGetPowerManagementLimitConstraints, h),
             lambda lim: float(lim[1]) / 1000.0),
            ("shutdown_temp_c", "shutdown temperature",
             (pynvml.nvmlDeviceGetTemperatureThreshold, h, pynvml.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN), float),
        ):
            try:
                out[key] = conv(_nvml(f"{self.where}: {what}", *call))
            except DeviceNotSupportedError:
                out[key] = None
        return out

    # -- capabilities ------------------------------------------------------------------------------
    def _probe_field(self, fid: Any) -> tuple[bool, str]:
        fvs, how = self._try(pynvml.nvmlDeviceGetFieldValues, f"field {fid}", self.handle, [fid])
        if fvs is None:
            return False, how
        fv = fvs[0]
        if fv.nvmlReturn != pynvml.NVML_SUCCESS:  # the call succeeds while the field itself fails
            err = map_nvml_error(pynvml.NVMLError(fv.nvmlReturn), f"field {fid}")
            if isinstance(err, DeviceNotSupportedError):
                return False, "not supported"
            if isinstance(err, DeviceNoPermissionError):
                return False, "no permission"
            return False, str(err)
        return True, "ok"

    def _probe_fans(self) -> int:
        """How many fans to log one by one (0 unless the board has two or more and the per-fan call works).

        ``nvmlDeviceGetNumFans`` is NOT_SUPPORTED (or 0) on fanless boards (A100, H100, passively cooled
        cards); older drivers lack ``nvmlDeviceGetFanSpeed_v2`` (FUNCTION_NOT_FOUND) or refuse it
        (NOT_SUPPORTED): then ``fan_pct`` stays the single ``nvmlDeviceGetFanSpeed`` reading.
        """
        try:
            n = int(_nvml(f"{self.where}: fan count", pynvml.nvmlDeviceGetNumFans, self.handle))
        except (DeviceNotSupportedError, DeviceNoPermissionError):
            return 0
        if n < 2:
            return 0
        for i in range(n):
            if self._try(pynvml.nvmlDeviceGetFanSpeed_v2, f"fan {i}", self.handle, i)[1] != "ok":
                return 0
        return n

    @property
    def columns(self) -> tuple[str, ...]:
        """This GPU's stream columns: :data:`SENSOR_COLUMNS`, then ``fan<i>_pct`` per fan (boards with several)."""
        n = self.capabilities()["fans_logged"]
        return SENSOR_COLUMNS + tuple(f"fan{i}_pct" for i in range(n))

    def capabilities(self) -> dict[str, Any]:
        """Probe once (then cached) what this GPU can report; recorded in the session manifest."""
        if self._caps is not None:
            return self._caps
        h = self.handle
        scope_gpu = pynvml.NVML_POWER_SCOPE_GPU
        fields = {
            "power_instant": (pynvml.NVML_FI_DEV_POWER_INSTANT, scope_gpu),
            "power_average": (pynvml.NVML_FI_DEV_POWER_AVERAGE, scope_gpu),
            "energy_field": pynvml.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION,
            "mem_temp": pynvml.NVML_FI_DEV_MEMORY_TEMP,
        }
        supported: dict[str, bool] = {}
        notes: dict[str, str] = {}
        for key, fid in fields.items():
            supported[key], notes[key] = self._probe_field(fid)
        scope = "NVML_POWER_SCOPE_GPU"
        if not supported["power_instant"]:
            # Grace Hopper reports power for the module (CPU + GPU + memory) only (Zeus, PMT do the same)
            mod = (pynvml.NVML_FI_DEV_POWER_INSTANT, pynvml.NVML_POWER_SCOPE_MODULE)
            ok, _ = self._probe_field(mod)
            if ok:
                fields["power_instant"] = mod
                fields["power_average"] = (pynvml.NVML_FI_DEV_POWER_AVERAGE, pynvml.NVML_POWER_SCOPE_MODULE)
                supported["power_instant"], notes["power_instant"] = True, "ok"
                supported["power_average"], notes["power_average"] = self._probe_field(fields["power_average"])
                scope = "NVML_POWER_SCOPE_MODULE"
                warnings.warn(f"{self.where}: GPU-scope power is not available; logging MODULE-scope power "
                              "(whole superchip: CPU + GPU + memory)", RuntimeWarning, stacklevel=2)
        self._calls = calls = {
            "power_usage": (pynvml.nvmlDeviceGetPowerUsage, h),
            "energy_counter": (pynvml.nvmlDeviceGetTotalEnergyConsumption, h),
            "temperature": (pynvml.nvmlDeviceGetTemperatureV, h, pynvml.NVML_TEMPERATURE_GPU),
            "sm_clock": (pynvml.nvmlDeviceGetClockInfo, h, pynvml.NVML_CLOCK_SM),
            "mem_clock": (pynvml.nvmlDeviceGetClockInfo, h, pynvml.NVML_CLOCK_MEM),
            "clock_event_reasons": (pynvml.nvmlDeviceGetCurrentClocksEventReasons, h),
            "fan": (pynvml.nvmlDeviceGetFanSpeed, h),
            "utilization": (pynvml.nvmlDeviceGetUtilizationRates, h),
            "pstate": (pynvml.nvmlDeviceGetPerformanceState, h),
        }
        for key, (fn, *args) in calls.items():
            notes[key] = self._try(fn, key, *args)[1]
            supported[key] = notes[key] == "ok"
        self._fields = [(k, fields[k]) for k in ("power_instant", "power_average", "energy_field", "mem_temp")
                        if supported[k]]
        fans_logged = self._probe_fans()
        src = ("field NVML_FI_DEV_POWER_INSTANT (instantaneous)" if supported["power_instant"] else
               "nvmlDeviceGetPowerUsage (1 s average on Ampere-except-GA100 and newer, instantaneous on older GPUs)"
               if supported["power_usage"] else None)
        esrc = ("field NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION (mJ, ~100 ms updates)" if supported["energy_field"] else
                "nvmlDeviceGetTotalEnergyConsumption (mJ, ~100 ms updates)" if supported["energy_counter"] else None)
        self._caps = {
            "gpu": self.identity(),
            "supported": supported,
            "unsupported_reasons": {k: v for k, v in notes.items() if not supported[k]},
            "power_w_source": src,
            "energy_mj_source": esrc,
            "power_scope": scope,
            "fans_logged": fans_logged,
            "binding": f"nvidia-ml-py (pynvml module {getattr(pynvml, '__file__', '?')})",
        }
        if src is None:
            warnings.warn(f"{self.where}: NVML reports no board power on this GPU; power_w stays empty",
                          RuntimeWarning, stacklevel=2)
        return self._caps

    # -- sampling --------------------------------------------------------------------------------
    def sample(self) -> dict[str, Any]:
        """One poll of everything supported, as a dict keyed by :data:`SENSOR_COLUMNS` (SI units).

        Raises :class:`DeviceLostError`, :class:`DeviceNoPermissionError` or
        :class:`TransientSensorError`; a single unsupported quantity just stays ``None``.
        """
        caps = self.capabilities()
        sup = caps["supported"]
        h = self.handle
        t0 = time.perf_counter()
        v: dict[str, Any] = dict.fromkeys(self.columns)
        if self._fields:
            fvs = self._call(pynvml.nvmlDeviceGetFieldValues, "field values", h, [fid for _, fid in self._fields])
            for (key, _), fv in zip(self._fields, fvs):
                if fv.nvmlReturn != pynvml.NVML_SUCCESS:
                    err = map_nvml_error(pynvml.NVMLError(fv.nvmlReturn), f"{self.where}: field {key}")
                    if isinstance(err, (DeviceLostError, DeviceNoPermissionError)):
                        raise err
                    self.runtime_not_supported[key] = self.runtime_not_supported.get(key, 0) + 1
                    continue
                x = _field_value(fv)
                ts = fv.timestamp / 1e6 if fv.timestamp else None  # µs since 1970 -> s
                if key == "power_instant":
                    v["power_w"], v["power_t_wall_s"] = x / 1000.0, ts
                elif key == "power_average":
                    v["power_avg_w"] = x / 1000.0
                elif key == "energy_field":
                    v["energy_mj"], v["energy_t_wall_s"] = int(x), ts
                elif key == "mem_temp":
                    v["mem_temp_c"] = float(x)
        if v["power_w"] is None and sup["power_usage"]:
            mw = self._optional("power_usage", *self._calls["power_usage"])
            v["power_w"] = None if mw is None else mw / 1000.0
        if v["energy_mj"] is None and sup["energy_counter"] and not sup["energy_field"]:
            v["energy_mj"] = self._optional("energy_counter", *self._calls["energy_counter"])
        if v["energy_mj"] is not None:
            v["energy_reset"] = self._energy_reset(int(v["energy_mj"]))
        for col, key in (("temp_c", "temperature"), ("sm_mhz", "sm_clock"), ("mem_mhz", "mem_clock"),
                         ("clock_event_reasons", "clock_event_reasons"), ("pstate", "pstate")):
            if sup[key]:
                v[col] = self._optional(key, *self._calls[key])
        per_fan = [self._optional(f"fan{i}", pynvml.nvmlDeviceGetFanSpeed_v2, h, i)
                   for i in range(caps["fans_logged"])]
        for i, duty in enumerate(per_fan):
            v[f"fan{i}_pct"] = duty
        read = [float(d) for d in per_fan if d is not None]
        if read:
            # nvmlDeviceGetFanSpeed reports fan 0 only; the sink's cooling (the thermal network's fan link,
            # calib.model.thermal_network) comes from the airflow of all the fans, so the one-number duty
            # of a multi-fan board is their mean (equal to each when the driver runs them together)
            v["fan_pct"] = float(np.mean(read))
        elif sup["fan"]:
            v["fan_pct"] = self._optional("fan", *self._calls["fan"])
        if sup["utilization"]:
            u = self._optional("utilization", *self._calls["utilization"])
            if u is not None:
                v["util_gpu_pct"], v["util_mem_pct"] = u.gpu, u.memory
        v["read_s"] = time.perf_counter() - t0
        return v

    def measure_update_period_s(self, duration_s: float = 1.0) -> dict[str, float | None]:
        """How often NVML's power reading and energy counter actually change, s (Zeus-style probe).

        Polls both as fast as possible for ``duration_s`` and returns the median interval between
        value changes (None when the value never changed twice, e.g. on an idle GPU).
        """
        caps = self.capabilities()
        changes: dict[str, list[float]] = {"power_w": [], "energy_mj": []}
        last: dict[str, Any] = {"power_w": None, "energy_mj": None}
        t_end = time.monotonic() + duration_s
        while time.monotonic() < t_end:
            v = self.sample()
            now = time.monotonic()
            for k in changes:
                if v[k] is not None and v[k] != last[k]:
                    if last[k] is not None:
                        changes[k].append(now)
                    last[k] = v[k]
        out: dict[str, float | None] = {}
        for k, ts in changes.items():
            # median, not min: each change is seen up to one poll late, so single intervals scatter
            out[k] = float(np.median(np.diff(ts))) if len(ts) >= 2 else None
        out["power_source"] = caps["power_w_source"]  # type: ignore[assignment]
        return out

    def temperature_c(self) -> float | None:
        """GPU core temperature now, °C (None when not supported)."""
        try:
            return float(self._call(pynvml.nvmlDeviceGetTemperatureV, "temperature", self.handle,
                                    pynvml.NVML_TEMPERATURE_GPU))
        except DeviceNotSupportedError:
            return None

    def clocks_mhz(self) -> tuple[float, float]:
        """Current (SM, memory) clocks, MHz."""
        sm = _nvml(f"{self.where}: SM clock", pynvml.nvmlDeviceGetClockInfo, self.handle, pynvml.NVML_CLOCK_SM)
        mem = _nvml(f"{self.where}: memory clock", pynvml.nvmlDeviceGetClockInfo, self.handle, pynvml.NVML_CLOCK_MEM)
        return float(sm), float(mem)

    # -- clock control ---------------------------------------------------------------------------
    def supported_clocks(self) -> dict[int, list[int]]:
        """``{mem_mhz: [core_mhz, ...]}``: the graphics clocks valid with each memory clock (descending)."""
        mems = self._call(pynvml.nvmlDeviceGetSupportedMemoryClocks, "supported memory clocks", self.handle)
        out: dict[int, list[int]] = {}
        for m in sorted((int(x) for x in mems), reverse=True):
            cores = _nvml(f"{self.where}: supported graphics clocks at {m} MHz",
                          pynvml.nvmlDeviceGetSupportedGraphicsClocks, self.handle, m)
            out[m] = sorted((int(c) for c in cores), reverse=True)
        return out

    def _check_pair(self, core_mhz: int | None, mem_mhz: int | None) -> None:
        table = self.supported_clocks()
        if mem_mhz is not None and mem_mhz not in table:
            raise BadInputError(f"{self.where}: memory clock {mem_mhz} MHz is not supported; "
                                f"supported: {sorted(table)} MHz")
        if core_mhz is not None:
            mem = mem_mhz if mem_mhz is not None else max(table) if table else None
            cores = table.get(mem, []) if mem is not None else []
            if core_mhz not in cores:
                near = sorted(cores, key=lambda c: abs(c - core_mhz))[:3]
                raise BadInputError(f"{self.where}: core clock {core_mhz} MHz is not supported with memory clock "
                                    f"{mem} MHz; nearest supported: {sorted(near)} MHz")

    def lock_clocks(self, core_mhz: float | None, mem_mhz: float | None, *, validate: bool = True) -> None:
        """Lock SM and/or memory clocks (MHz) with ``nvmlDeviceSet{Gpu,Memory}LockedClocks``.

        ``None`` resets that domain to its default. Values must come from :meth:`supported_clocks`
        (checked when ``validate``). The reset is guaranteed at :meth:`close`, at interpreter exit
        (``atexit``), on Ctrl-C and on SIGTERM (see :func:`install_clock_reset_handlers`).
        Raises :class:`DeviceNoPermissionError` (needs root) or :class:`DeviceNotSupportedError`.
        """
        core = None if core_mhz is None else int(round(core_mhz))
        mem = None if mem_mhz is None else int(round(mem_mhz))
        if validate and (core is not None or mem is not None):
            self._check_pair(core, mem)
        install_clock_reset_handlers()
        with self._clock_lock:
            CLOCKS_HELD.add(self)
            if mem is None:
                self._reset_domain("mem")
            else:
                _nvml(f"{self.where}: lock memory clock at {mem} MHz", pynvml.nvmlDeviceSetMemoryLockedClocks,
                      self.handle, mem, mem)
                self.locked["mem"] = (mem, mem)
            if core is None:
                self._reset_domain("core")
            else:
                _nvml(f"{self.where}: lock SM clock at {core} MHz", pynvml.nvmlDeviceSetGpuLockedClocks,
                      self.handle, core, core)
                self.locked["core"] = (core, core)

    def _reset_domain(self, dom: str) -> None:
        if self.locked[dom] is None:
            return
        fn = pynvml.nvmlDeviceResetGpuLockedClocks if dom == "core" else pynvml.nvmlDeviceResetMemoryLockedClocks
        _nvml(f"{self.where}: reset {'SM' if dom == 'core' else 'memory'} locked clocks", fn, self.handle)
        self.locked[dom] = None

    def reset_clocks(self) -> None:
        """Undo :meth:`lock_clocks` (both domains). Safe to call repeatedly."""
        with self._clock_lock:
            errors = []
            for dom in ("core", "mem"):
                try:
                    self._reset_domain(dom)
                except DeviceError as e:  # try the other domain anyway
                    errors.append(e)
                    self.locked[dom] = None
            CLOCKS_HELD.discard(self)
            if errors:
                raise errors[0]

    def _shutdown(self) -> None:
        _nvml("nvmlShutdown", pynvml.nvmlShutdown)


# ------------------------------------------------------------------------------------------------
# Sensor
# ------------------------------------------------------------------------------------------------

class NvmlSensor(PolledGpuSensor):
    """The NVML stream of one GPU (columns: :data:`SENSOR_COLUMNS`); one row per ``read()``.

    Its rate is the logger's polling rate. Below 20 Hz polling is cheap; NVML's own values update at
    roughly 10 Hz (power fields, energy counter) and Zeus warns against polling faster than 50 ms, so
    rows faster than that repeat values -- harmless: :func:`calib.windows.window_energy` deduplicates.
    """

    kind = "nvml"
    columns = SENSOR_COLUMNS  # and fan<i>_pct per fan (NvmlGpu.columns)
    gpu_class = NvmlGpu


# ------------------------------------------------------------------------------------------------
# Enumeration
# ------------------------------------------------------------------------------------------------

def list_gpus() -> list[dict[str, Any]]:
    """The GPUs NVML sees (index, name, uuid, pci_bus_id, architecture, driver versions, ...).

    Returns ``[]`` when NVML is unavailable (no driver): callers fall back to virtual devices.
    """
    ok, _ = nvml_available()
    if not ok:
        return []
    _nvml("nvmlInit", pynvml.nvmlInit)
    try:
        out = []
        for i in range(_nvml("device count", pynvml.nvmlDeviceGetCount)):
            g = NvmlGpu(i)
            try:
                out.append(g.identity())
            finally:
                g.close()
        return out
    finally:
        _nvml("nvmlShutdown", pynvml.nvmlShutdown)
