"""AMD GPUs (``rocm:<HIP index>``) through ``amdsmi``: discovery, the amdsmi sensor, clock control.

``amdsmi`` is AMD's Python package (PyPI ``amdsmi``, 6.x/7.x; ``pip install 'gpu-calib[amd]'``), a ctypes
wrapper of ``libamd_smi.so`` from a ROCm install (Debian/Ubuntu package ``amd-smi-lib``). All use of it in
the toolkit is confined to this module and goes through one boundary (:func:`_smi`), which

- imports it guarded and quietly: without ``libamd_smi.so`` the 7.x wheel prints "Could not load
  libamd_smi.so ... try installing amd-smi-lib" to stdout and then raises ``KeyError: 'libamd_smi.so'``
  (``amdsmi_wrapper.py``, ``find_smi_library`` and the line after it); both become one
  :class:`calib.core.errors.DeviceLibraryError` naming the fix;
- serialises every call with one lock: the library is not thread-safe before ROCm 7.2, and the logger
  polls from its own thread while the campaign sets clocks;
- maps ``AmdSmiLibraryException`` status codes (``amdsmi_wrapper.AMDSMI_STATUS_*``) to the toolkit's
  typed errors, once (:func:`map_amdsmi_error`; the status groups are :data:`_GROUPS`: not supported,
  no permission, lost, transient, library; anything else is a :class:`calib.core.errors.DeviceError`).

The sensor's stream (``amdsmi<N>``; one row per poll; units converted here, once):

``power_w``             socket power, W: ``amdsmi_get_power_info``'s ``current_socket_power`` (instantaneous;
                        MI300), else ``socket_power`` (7.x), else ``average_socket_power`` (MI200: the only
                        one it has) -- ``capabilities()["power_w_source"]`` says which. A field the GPU
                        does not have reads the string ``"N/A"`` (the wrapper's 0xFFFF) and stays empty.
``power_avg_w``         ``average_socket_power``, W (``"N/A"`` on MI300X: empty)
``energy_mj``           ``amdsmi_get_energy_count``: ``energy_accumulator`` x ``counter_resolution``
                        (15.3 uJ, hard-coded in the C library and returned as a C float) / 1000, mJ; the key
                        is ``power`` in the PyPI wheels up to 6.2.4, both in 6.3.x, ``energy_accumulator``
                        from 6.4/7.x (read: the wheels' ``amdsmi_interface.py``). The key and the
                        resolution are recorded in the manifest (``capabilities()``).
``energy_timestamp_s``  the library's timestamp of that reading (ns), s
``energy_reset``        1 when the counter went backwards since the previous row
``temp_c``              hotspot (junction) temperature, degC (``amdsmi_get_temp_metric(HOTSPOT, CURRENT)``),
                        else edge. The library returns degrees although its README says millidegrees:
                        not divided again (Zeus and CodeCarbon divide by 1000, a bug to avoid).
``edge_temp_c``, ``mem_temp_c``  edge and VRAM (HBM) temperatures, degC (MI200/MI300 have no edge sensor)
``sm_mhz``, ``mem_mhz``  GFX and memory clocks, MHz (``amdsmi_get_clock_info``)
``util_gpu_pct``, ``util_mem_pct``  ``gfx_activity``, ``umc_activity``, % (``amdsmi_get_gpu_activity``)
``read_s``              host time spent in this poll, s

Known faults, each with one message or a named fallback (``capabilities()["faults"]``):

- **stuck energy counter** (MI100 in Zeus' reports): at probe time the counter's energy over
  ``energy_check_s`` is compared with the power integrated over the same time, as Zeus does; outside
  0.1-10x the counter is not logged (``energy_mj`` empty; fallback ``integrated_power``: window energy
  comes from ``power_w``);
- **odd MI250/MI250X GCD reading 0 W**: the two GCDs of an OAM package report the package's power on the
  even one; the odd one reads 0 W and a zero counter. Fallback ``sibling_gcd``: the sensor reads the
  package power (and counter) from the GCD of the same ``oam_id`` that reports it, and says the stream is
  the package (both GCDs), as the even GCD's always is (``power_scope``);
- **HIP and amdsmi orders differ**: ``rocm:N`` is the HIP index (what the kernel runner uses); the
  amdsmi handle is the one whose ``amdsmi_get_gpu_enumeration_info(...)["hip_id"]`` is N (7.x), else
  the one at the PCI address HIP reports for N, else handle N with a warning when there are several;
- **not thread-safe before ROCm 7.2**: the lock above.

Clock control (``set_clocks``): ``amdsmi_set_gpu_clk_range(h, f, f, GFX|MEM)`` in MHz, falling back to
``amdsmi_set_gpu_perf_determinism_mode(h, f)`` for the GFX clock where the range is not supported;
restored with ``amdsmi_set_gpu_perf_level(h, AmdSmiDevPerfLevel.AUTO)`` at :meth:`AmdGpu.close`, at exit,
on Ctrl-C and SIGTERM. The power cap (``amdsmi_get_power_cap_info``) is in uW.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

from calib.core.errors import (
    BadInputError,
    DeviceError,
    DeviceLibraryError,
    DeviceLostError,
    DeviceNoPermissionError,
    DeviceNotFoundError,
    DeviceNotSupportedError,
    TransientSensorError,
)
from microbench.devices.base import (
    CLOCKS_HELD,
    Backend,
    CopyResult,
    DeviceInfo,
    PolledGpuSensor,
    RealGpu,
    Sensor,
    VendorGpu,
    clock_control_note,
    install_clock_reset_handlers,
    runtime_properties,
)

SENSOR_COLUMNS: tuple[str, ...] = (
    "power_w", "power_avg_w", "energy_mj", "energy_timestamp_s", "energy_reset", "temp_c", "edge_temp_c",
    "mem_temp_c", "sm_mhz", "mem_mhz", "util_gpu_pct", "util_mem_pct", "read_s",
)
INSTALL_HINT = ("pip install 'gpu-calib[amd]' (the amdsmi package) and ROCm's amd-smi-lib (libamd_smi.so; "
                "set ROCM_PATH if ROCm is not in /opt/rocm)")
#: accepted ratio of the energy counter's energy to integrated power at probe time (as Zeus)
COUNTER_RATIO_RANGE = (0.1, 10.0)

_log = logging.getLogger(__name__)
#: every amdsmi call holds this lock (the library is not thread-safe before ROCm 7.2)
_LOCK = threading.RLock()


# ------------------------------------------------------------------------------------------------
# The library boundary
# ------------------------------------------------------------------------------------------------

def load_amdsmi() -> Any:
    """The ``amdsmi`` module, imported quietly (module docstring); DeviceLibraryError when it is not
    installed or ``libamd_smi.so`` cannot be loaded."""
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            return importlib.import_module("amdsmi")
    except ImportError as e:
        raise DeviceLibraryError(f"amdsmi is not installed ({e}); {INSTALL_HINT}") from None
    except (KeyError, OSError, AttributeError) as e:
        said = " ".join(out.getvalue().split())
        raise DeviceLibraryError(f"amdsmi cannot load libamd_smi.so ({said or e!r}); {INSTALL_HINT}") from None


_GROUPS: dict[str, tuple[str, ...]] = {
    "not_supported": ("NOT_SUPPORTED", "NOT_YET_IMPLEMENTED", "SETTING_UNAVAILABLE", "FILE_NOT_FOUND"),
    "no_perm": ("NO_PERM",),
    "lost": ("NOT_FOUND", "DRM_ERROR", "AMDGPU_RESTART_ERR", "IO"),
    "transient": ("RETRY", "TIMEOUT", "BUSY", "INTERRUPT", "NO_DATA"),
    "library": ("NOT_INIT", "INIT_ERROR", "DRIVER_NOT_LOADED", "FAIL_LOAD_MODULE", "FAIL_LOAD_SYMBOL"),
}


def map_amdsmi_error(lib: Any, err: BaseException, what: str) -> DeviceError:
    """Translate an ``amdsmi`` exception raised by ``what`` into the toolkit's typed error."""
    if not isinstance(err, lib.AmdSmiLibraryException):  # parameter/key errors: a bug on our side
        return DeviceError(f"{what}: amdsmi refused the call ({type(err).__name__}: {err})")
    code = err.get_error_code()
    name = next((n for n in dir(lib.amdsmi_wrapper) if n.startswith("AMDSMI_STATUS_")
                 and getattr(lib.amdsmi_wrapper, n) == code), f"status {code}")
    text = f"{name.removeprefix('AMDSMI_STATUS_')} (amdsmi status {code})"

    def is_(group: str) -> bool:
        return code in {getattr(lib.amdsmi_wrapper, "AMDSMI_STATUS_" + n, None) for n in _GROUPS[group]}

    if is_("not_supported"):
        return DeviceNotSupportedError(f"{what}: not supported by this GPU or driver: {text}")
    if is_("no_perm"):
        return DeviceNoPermissionError(
            f"{what}: not permitted: {text}; setting clocks needs root (or membership of the render/video "
            "groups and a ROCm that allows it): run as root, or have an administrator set the clocks with "
            "`amd-smi set --perf-determinism`, or run without DVFS points")
    if is_("lost"):
        return DeviceLostError(f"{what}: the GPU stopped answering: {text}; check `amd-smi list` and dmesg -- "
                               "data after this point is missing")
    if is_("transient"):
        return TransientSensorError(f"{what}: transient amdsmi failure: {text}; will retry")
    if is_("library"):
        return DeviceLibraryError(f"{what}: amdsmi is not usable: {text}; is the amdgpu driver loaded "
                                  "(`amd-smi list` should work)?")
    return DeviceError(f"{what}: amdsmi error: {text}")


def _smi(lib: Any, what: str, fn: Callable[..., Any], *args: Any) -> Any:
    """Call ``fn(*args)`` of amdsmi: the one boundary (lock, typed errors ``from`` the original, a DEBUG
    trace of the call)."""
    with _LOCK:
        try:
            out = fn(*args)
        except lib.AmdSmiException as e:
            _log.debug("amdsmi %s%r -> %s [%s]", getattr(fn, "__name__", fn), args, e, what)
            raise map_amdsmi_error(lib, e, what) from e
    _log.debug("amdsmi %s%r -> %r [%s]", getattr(fn, "__name__", fn), args, out, what)
    return out


def _num(x: Any) -> float | None:
    """A reading, or None for the wrapper's ``"N/A"``."""
    return None if isinstance(x, str) or x is None else float(x)


def amdsmi_available() -> tuple[bool, str]:
    """Whether amdsmi can be initialised here: ``(ok, message)``; never raises."""
    try:
        lib = load_amdsmi()
        _smi(lib, "amdsmi_init", lib.amdsmi_init, lib.AmdSmiInitFlags.INIT_AMD_GPUS)
    except DeviceError as e:
        return False, str(e)
    try:
        n = len(_smi(lib, "processor handles", lib.amdsmi_get_processor_handles))
        v = _smi(lib, "library version", lib.amdsmi_get_lib_version)
        return True, f"amdsmi ok: library {v.get('major')}.{v.get('minor')}.{v.get('release')}, {n} GPU(s)"
    except DeviceError as e:
        return False, str(e)
    finally:
        with contextlib.suppress(DeviceError):
            _smi(lib, "amdsmi_shut_down", lib.amdsmi_shut_down)


# ------------------------------------------------------------------------------------------------
# One GPU
# ------------------------------------------------------------------------------------------------

class AmdGpu(VendorGpu):
    """One AMD GPU (one GCD) through amdsmi: identity, probed capabilities, samples, clock control.

    Open by HIP index (``hip_index``; the mapping to amdsmi's handles is in the module docstring) or by
    amdsmi's own order (``amdsmi_index``). ``hip_pci`` (``0000:c1:00.0``) is the PCI address HIP reports
    for the index, when known. ``energy_check_s`` is how long the probe watches the energy counter against
    power. Call :meth:`close` (or use ``with``) to restore the clocks and release the library.
    """

    def __init__(self, hip_index: int | None = None, *, amdsmi_index: int | None = None, hip_pci: str | None = None,
                 energy_check_s: float = 0.5):
        self.lib = lib = load_amdsmi()
        self.index = hip_index if hip_index is not None else (amdsmi_index or 0)
        self.name = "AMD GPU"
        self._call(lib.amdsmi_init, "amdsmi_init", lib.AmdSmiInitFlags.INIT_AMD_GPUS)
        self._start()
        self.energy_check_s = float(energy_check_s)
        try:
            self.handles = list(self._call(lib.amdsmi_get_processor_handles, "processor handles"))
            n = len(self.handles)
            if not n:
                raise DeviceNotFoundError("no AMD GPU found by amdsmi (is the amdgpu driver loaded? `amd-smi list`)")
            self.smi_index, self.mapping = self._find(hip_index, amdsmi_index, hip_pci)
            self.index = hip_index if hip_index is not None else self.smi_index
            self.handle = self.handles[self.smi_index]
            asic = self._call(lib.amdsmi_get_gpu_asic_info, "ASIC info", self.handle)
            self.name = str(asic.get("market_name") or "AMD GPU")
            self.asic = asic
            self.uuid = str(self._call(lib.amdsmi_get_gpu_device_uuid, "UUID", self.handle))
            self._power_handle = self.handle
        except BaseException:
            self._call(lib.amdsmi_shut_down, "amdsmi_shut_down")
            self._open = False
            raise

    def _call(self, fn: Callable[..., Any], what: str, *args: Any) -> Any:
        return _smi(self.lib, f"{self.where}: {what}", fn, *args)

    @property
    def where(self) -> str:
        """How messages name this GPU."""
        return f"rocm:{self.index} ({self.name})"

    def _find(self, hip_index: int | None, amdsmi_index: int | None, hip_pci: str | None) -> tuple[int, str]:
        """amdsmi handle index of the GPU and how it was found (module docstring)."""
        lib, n = self.lib, len(self.handles)
        if amdsmi_index is not None:
            if not 0 <= amdsmi_index < n:
                raise DeviceNotFoundError(f"amdsmi GPU {amdsmi_index} not found: amdsmi sees {n} GPU(s)")
            return amdsmi_index, "amdsmi order"
        hip = 0 if hip_index is None else int(hip_index)
        if hasattr(lib, "amdsmi_get_gpu_enumeration_info"):
            ids = []
            for i, h in enumerate(self.handles):
                try:
                    ids.append(_num(self._call(lib.amdsmi_get_gpu_enumeration_info, "enumeration info", h)["hip_id"]))
                except DeviceNotSupportedError:
                    ids.append(None)
            if hip in ids:
                return ids.index(hip), "hip_id"
            if any(x is not None for x in ids):
                raise DeviceNotFoundError(f"rocm:{hip} not found: amdsmi's GPUs have HIP indices "
                                          f"{sorted(int(x) for x in ids if x is not None)}")
        if hip_pci is not None:
            for i, h in enumerate(self.handles):
                if str(self._call(lib.amdsmi_get_gpu_device_bdf, "PCI address", h)).lower() == hip_pci.lower():
                    return i, "pci address"
        if not 0 <= hip < n:
            raise DeviceNotFoundError(f"rocm:{hip} not found: amdsmi sees {n} GPU(s)"
                                      + (f" (valid indices 0..{n - 1})" if n else ""))
        if n > 1:
            warnings.warn(f"rocm:{hip}: this amdsmi has no hip_id and HIP's PCI address is unknown, so the HIP -> "
                          f"amdsmi order is unknown; assuming amdsmi GPU {hip}. Install amdsmi >= 6.4 (or CuPy for ROCm)",
                          RuntimeWarning, stacklevel=3)
        return hip, "same order (assumed)"

    # -- identity --------------------------------------------------------------------------------
    def identity(self) -> dict[str, Any]:
        """Name, UUID, target, CUs, PCI address, driver and library versions, power cap, limits."""
        a = self.asic
        out: dict[str, Any] = {"index": self.index, "amdsmi_index": self.smi_index, "name": self.name,
                               "uuid": self.uuid, "architecture": a.get("target_graphics_version"),
                               "compute_units": _num(a.get("num_compute_units")), "oam_id": _num(a.get("oam_id")),
                               "hip_mapping": self.mapping}
        for key, what, fn, conv in (
            ("pci_bus_id", "PCI address", self.lib.amdsmi_get_gpu_device_bdf, str),
            ("driver_version", "driver info", self.lib.amdsmi_get_gpu_driver_info, lambda d: d.get("driver_version")),
            # the board's limit, which the samples layer checks readings against (uW -> W)
            ("power_limit_w", "power cap", self.lib.amdsmi_get_power_cap_info,
             lambda c: None if _num(c.get("power_cap")) is None else _num(c["power_cap"]) / 1e6),
        ):
            try:
                out[key] = conv(self._call(fn, what, self.handle))
            except DeviceNotSupportedError:
                out[key] = None
        try:
            v = self._call(self.lib.amdsmi_get_lib_version, "library version")
            out["amdsmi_version"] = f"{v.get('major')}.{v.get('minor')}.{v.get('release')}"
        except DeviceError:
            out["amdsmi_version"] = None
        return out

    # -- capabilities ----------------------------------------------------------------------------
    def _power_field(self, info: dict[str, Any]) -> str | None:
        for key in ("current_socket_power", "socket_power", "average_socket_power"):
            if _num(info.get(key)) is not None:
                return key
        return None

    def _sibling(self) -> int | None:
        """amdsmi index of the GCD of the same OAM package that reports its power (not this one)."""
        oam = self.asic.get("oam_id")
        for i, h in enumerate(self.handles):
            if i == self.smi_index:
                continue
            try:
                a = self._call(self.lib.amdsmi_get_gpu_asic_info, "ASIC info", h)
                if a.get("oam_id") != oam or _num(oam) is None or a.get("market_name") != self.name:
                    continue
                p = self._call(self.lib.amdsmi_get_power_info, "power info", h)
            except DeviceError:
                continue
            key = self._power_field(p)
            if key is not None and _num(p[key]):
                return i
        return None

    def capabilities(self) -> dict[str, Any]:
        """Probe once what this GPU supports (module docstring), recorded in the manifest."""
        if self._caps is not None:
            return self._caps
        lib, h = self.lib, self.handle
        sup: dict[str, bool] = {}
        why: dict[str, str] = {}
        faults: dict[str, str] = {}
        caps: dict[str, Any] = {"gpu": self.identity(), "supported": sup, "unsupported_reasons": why,
                                "faults": faults, "power_scope": "gpu"}

        def note(k: str, ok: bool, reason: str) -> None:
            sup[k] = ok
            if not ok:
                why[k] = reason

        info, how = self._try(lib.amdsmi_get_power_info, "power info", h)
        key = self._power_field(info) if info else None
        note("power", key is not None, how if info is None else "every power field reads N/A")
        caps["power_w_source"] = f"amdsmi_get_power_info['{key}']" if key else None
        caps["power_avg_source"] = ("amdsmi_get_power_info['average_socket_power']"
                                    if info and _num(info.get("average_socket_power")) is not None else None)
        self._power_key = key
        if "MI250" in self.name:  # the OAM package's power is read on its even GCD: both GCDs
            caps["power_scope"] = "package (both GCDs of the OAM)"
        if key is not None and not _num(info[key]):
            sib = self._sibling()
            if sib is None:
                sup["power"] = False
                why["power"] = ("reads 0 W and no other GCD of the same OAM package reports power (an odd MI250/"
                                "MI250X GCD reports none; the even one carries both)")
                faults["zero_power"] = why["power"]
            else:
                self._power_handle = self.handles[sib]
                caps["power_scope"] = "package (both GCDs of the OAM)"
                faults["zero_power"] = (f"reads 0 W (an odd MI250/MI250X GCD: the even GCD carries the package's "
                                        f"power); fallback sibling_gcd: power and energy are the package's, read from "
                                        f"amdsmi GPU {sib}")
                warnings.warn(f"{self.where}: {faults['zero_power']}", RuntimeWarning, stacklevel=2)
                ph = self._power_handle
                info = self._call(lib.amdsmi_get_power_info, "power info (sibling GCD)", ph)
                self._power_key = key = self._power_field(info)
        e1, how = self._try(lib.amdsmi_get_energy_count, "energy counter", self._power_handle)
        self._energy_key = None
        if e1 is not None:
            self._energy_key = "energy_accumulator" if "energy_accumulator" in e1 else (
                "power" if "power" in e1 else None)
        note("energy_counter", self._energy_key is not None, how if e1 is None else f"unknown reply keys {sorted(e1)}")
        caps["energy_mj_source"] = None
        if sup["energy_counter"]:
            res = float(e1["counter_resolution"])
            caps["energy_counter_key"] = self._energy_key
            caps["energy_counter_resolution_uj"] = res
            caps["energy_mj_source"] = (f"amdsmi_get_energy_count['{self._energy_key}'] x counter_resolution "
                                        f"({res:.6g} uJ) / 1000")
            if sup["power"] and self.energy_check_s > 0:
                self._check_counter(e1, res, caps)
        self._calls = {
            "temp_hotspot": ("hotspot temperature", lib.amdsmi_get_temp_metric,
                             (h, lib.AmdSmiTemperatureType.HOTSPOT, lib.AmdSmiTemperatureMetric.CURRENT)),
            "temp_edge": ("edge temperature", lib.amdsmi_get_temp_metric,
                          (h, lib.AmdSmiTemperatureType.EDGE, lib.AmdSmiTemperatureMetric.CURRENT)),
            "temp_vram": ("VRAM temperature", lib.amdsmi_get_temp_metric,
                          (h, lib.AmdSmiTemperatureType.VRAM, lib.AmdSmiTemperatureMetric.CURRENT)),
            "gfx_clock": ("GFX clock", lib.amdsmi_get_clock_info, (h, lib.AmdSmiClkType.GFX)),
            "mem_clock": ("memory clock", lib.amdsmi_get_clock_info, (h, lib.AmdSmiClkType.MEM)),
            "activity": ("activity", lib.amdsmi_get_gpu_activity, (h,)),
        }
        for k, (what, fn, args) in self._calls.items():
            v, how = self._try(fn, what, *args)
            note(k, v is not None, how)
        caps["temp_c_source"] = ("hotspot (junction)" if sup["temp_hotspot"] else "edge" if sup["temp_edge"] else None)
        caps["temperature_unit"] = "degC as returned by amdsmi (not divided by 1000)"
        self._caps = caps
        return caps

    def _check_counter(self, e1: dict[str, Any], res: float, caps: dict[str, Any]) -> None:
        """The counter's energy against integrated power over ``energy_check_s`` (fault: stuck counter)."""
        lib, ph = self.lib, self._power_handle
        t0 = time.monotonic()
        p = [_num(self._call(lib.amdsmi_get_power_info, "power info", ph)[self._power_key])]
        while time.monotonic() - t0 < self.energy_check_s:
            time.sleep(min(0.05, self.energy_check_s / 10))
            p.append(_num(self._call(lib.amdsmi_get_power_info, "power info", ph)[self._power_key]))
        e2 = self._call(lib.amdsmi_get_energy_count, "energy counter", ph)
        dt = (float(e2["timestamp"]) - float(e1["timestamp"])) / 1e9
        if not dt > 0:
            dt = time.monotonic() - t0
        counter_j = (float(e2[self._energy_key]) - float(e1[self._energy_key])) * res / 1e6
        vals = [x for x in p if x is not None]
        power_j = (sum(vals) / len(vals)) * dt if vals else 0.0
        ratio = counter_j / power_j if power_j > 0 else None
        caps["energy_counter_check"] = {"counter_j": counter_j, "integrated_power_j": power_j, "seconds": dt,
                                        "ratio": ratio}
        lo, hi = COUNTER_RATIO_RANGE
        if ratio is not None and not lo <= ratio <= hi:
            caps["supported"]["energy_counter"] = False
            caps["unsupported_reasons"]["energy_counter"] = "failed the power cross-check"
            caps["energy_mj_source"] = None
            caps["faults"]["energy_counter"] = (
                f"the energy counter gave {counter_j:.3f} J in {dt:.2f} s while power integrated to {power_j:.1f} J "
                f"(ratio {ratio:.3g}, outside {lo:g}-{hi:g}x; MI100 counters are known to stick): counter not "
                "logged, fallback integrated_power (window energy from power_w)")
            warnings.warn(f"{self.where}: {caps['faults']['energy_counter']}", RuntimeWarning, stacklevel=3)

    # -- sampling --------------------------------------------------------------------------------
    def sample(self) -> dict[str, Any]:
        """One poll of everything supported, keyed by :data:`SENSOR_COLUMNS` (SI units).

        Raises :class:`DeviceLostError`, :class:`DeviceNoPermissionError` or
        :class:`TransientSensorError`; a single unsupported quantity stays ``None``.
        """
        caps = self.capabilities()
        sup = caps["supported"]
        lib = self.lib
        t0 = time.perf_counter()
        v: dict[str, Any] = dict.fromkeys(SENSOR_COLUMNS)
        if sup["power"]:
            info = self._optional("power", lib.amdsmi_get_power_info, self._power_handle, what="power info")
            if info is not None:
                v["power_w"] = _num(info.get(self._power_key))
                v["power_avg_w"] = _num(info.get("average_socket_power"))
        if sup["energy_counter"]:
            e = self._optional("energy_counter", lib.amdsmi_get_energy_count, self._power_handle, what="energy counter")
            if e is not None:
                mj = float(e[self._energy_key]) * float(e["counter_resolution"]) / 1000.0
                v["energy_mj"], v["energy_reset"] = mj, self._energy_reset(mj)
                v["energy_timestamp_s"] = float(e["timestamp"]) / 1e9
        got = {}
        for key, (what, fn, args) in self._calls.items():
            if sup[key]:
                got[key] = self._optional(key, fn, *args, what=what)
        temps = {k: _num(got.get(k)) for k in ("temp_hotspot", "temp_edge", "temp_vram")}
        v["temp_c"] = temps["temp_hotspot"] if temps["temp_hotspot"] is not None else temps["temp_edge"]
        v["edge_temp_c"], v["mem_temp_c"] = temps["temp_edge"], temps["temp_vram"]
        for col, key in (("sm_mhz", "gfx_clock"), ("mem_mhz", "mem_clock")):
            v[col] = None if got.get(key) is None else _num(got[key].get("clk"))
        a = got.get("activity")
        if a is not None:
            v["util_gpu_pct"], v["util_mem_pct"] = _num(a.get("gfx_activity")), _num(a.get("umc_activity"))
        v["read_s"] = time.perf_counter() - t0
        return v

    def temperature_c(self) -> float | None:
        """Hotspot temperature now, degC (edge where there is no hotspot sensor; None when neither)."""
        lib = self.lib
        for typ in (lib.AmdSmiTemperatureType.HOTSPOT, lib.AmdSmiTemperatureType.EDGE):
            try:
                return _num(self._call(lib.amdsmi_get_temp_metric, "temperature", self.handle, typ,
                                       lib.AmdSmiTemperatureMetric.CURRENT))
            except DeviceNotSupportedError:
                continue
        return None

    def clocks_mhz(self) -> tuple[float, float]:
        """Current (GFX, memory) clocks, MHz."""
        lib = self.lib
        gfx = self._call(lib.amdsmi_get_clock_info, "GFX clock", self.handle, lib.AmdSmiClkType.GFX)
        mem = self._call(lib.amdsmi_get_clock_info, "memory clock", self.handle, lib.AmdSmiClkType.MEM)
        return float(gfx["clk"]), float(mem["clk"])

    # -- clock control ---------------------------------------------------------------------------
    def supported_clocks(self) -> dict[str, list[float]]:
        """``{"core_mhz": [...], "mem_mhz": [...]}`` ascending: the DPM levels of the GFX and memory clocks
        (``amdsmi_get_clk_freq``, whose ``frequency`` is in Hz)."""
        lib = self.lib
        out = {}
        for key, typ in (("core_mhz", lib.AmdSmiClkType.GFX), ("mem_mhz", lib.AmdSmiClkType.MEM)):
            f = self._call(lib.amdsmi_get_clk_freq, f"supported {key[:-4]} clocks", self.handle, typ)
            hz = [float(x) for x in f["frequency"][: int(f["num_supported"])]]
            out[key] = sorted({round(x / 1e6) if x > 1e5 else x for x in hz})
        return out

    def lock_clocks(self, core_mhz: float | None, mem_mhz: float | None) -> None:
        """Hold the GFX and/or memory clock at a DPM level (MHz); ``None`` lets that domain float.

        GFX: ``amdsmi_set_gpu_clk_range(h, f, f, GFX)``, else the determinism mode at ``f`` (fallback
        ``determinism``, recorded in ``locked``). Values must be DPM levels (:meth:`supported_clocks`).
        Restored at :meth:`close`, at exit, on Ctrl-C and SIGTERM. Raises DeviceNoPermissionError (root).
        """
        table = self.supported_clocks()
        lib = self.lib
        for dom, want, key in (("mem", mem_mhz, "mem_mhz"), ("core", core_mhz, "core_mhz")):
            if want is not None and int(round(want)) not in [int(x) for x in table[key]]:
                near = sorted(table[key], key=lambda c: abs(c - want))[:3]
                raise BadInputError(f"{self.where}: {'GFX' if dom == 'core' else 'memory'} clock {want:g} MHz is not a "
                                    f"DPM level; nearest: {sorted(near)} MHz")
        install_clock_reset_handlers()
        with self._clock_lock:
            CLOCKS_HELD.add(self)
            if core_mhz is None and mem_mhz is None:
                self._restore()
                return
            for dom, want, typ in (("mem", mem_mhz, lib.AmdSmiClkType.MEM), ("core", core_mhz, lib.AmdSmiClkType.GFX)):
                if want is None:
                    continue
                f = int(round(want))
                if dom == "mem" and len(table["mem_mhz"]) == 1:
                    continue  # one memory level (MI200/MI300): nothing to hold
                try:
                    self._call(lib.amdsmi_set_gpu_clk_range, f"hold {dom} clock at {f} MHz", self.handle, f, f, typ)
                    self.locked[dom] = f
                except DeviceNotSupportedError:
                    if dom != "core":
                        raise
                    self._call(lib.amdsmi_set_gpu_perf_determinism_mode, f"determinism mode at {f} MHz", self.handle, f)
                    self.locked[dom] = f
                    self.locked["fallback"] = "determinism"  # type: ignore[assignment]

    def _restore(self) -> None:
        lib = self.lib
        if all(v is None for k, v in self.locked.items() if k in ("core", "mem")):
            return
        self._call(lib.amdsmi_set_gpu_perf_level, "restore perf level AUTO", self.handle, lib.AmdSmiDevPerfLevel.AUTO)
        self.locked = {"core": None, "mem": None}

    def reset_clocks(self) -> None:
        """Undo :meth:`lock_clocks` (perf level AUTO). Safe to call repeatedly."""
        with self._clock_lock:
            try:
                self._restore()
            finally:
                CLOCKS_HELD.discard(self)

    def _shutdown(self) -> None:
        self._call(self.lib.amdsmi_shut_down, "amdsmi_shut_down")


# ------------------------------------------------------------------------------------------------
# Sensor, device, backend
# ------------------------------------------------------------------------------------------------

class AmdSmiSensor(PolledGpuSensor):
    """The amdsmi stream of one AMD GPU (columns: :data:`SENSOR_COLUMNS`); one row per ``read()``."""

    kind = "amdsmi"
    columns = SENSOR_COLUMNS
    gpu_class = AmdGpu


class RocmDevice(RealGpu):
    """AMD GPU ``rocm:<HIP index>``: amdsmi sensor and clocks, kernels through CuPy for ROCm; ``analyzer`` and
    ``runner`` as :meth:`RealGpu._attach` takes them (the default :class:`microbench.kernels.runner.KernelRunner`
    needs CuPy built for ROCm and kernels that compile for AMD)."""

    def __init__(self, index: int, *, analyzer: Sensor | None = None, runner: Any = None,
                 energy_check_s: float = 0.5):
        from calib.core.arch import amd_facts

        self.index = int(index)
        props = runtime_properties(self.index, "rocm", hip=True)  # via CuPy for ROCm; None without it
        pci = (f"{int(props['pciDomainID']):04x}:{int(props['pciBusID']):02x}:{int(props['pciDeviceID']):02x}.0"
               if props else None)
        self.gpu = AmdGpu(self.index, hip_pci=pci, energy_check_s=energy_check_s)
        try:
            self._attach(AmdSmiSensor(self.gpu, name=f"amdsmi{self.index}"), analyzer, runner)
            ident = self.gpu.identity()
            try:
                table = self.gpu.supported_clocks()
            except DeviceError:
                table = {"core_mhz": [], "mem_mhz": []}
            facts = amd_facts(str(ident.get("architecture") or ""))
            cus = int(ident.get("compute_units") or (props or {}).get("multiProcessorCount") or 0)
            self.info = DeviceInfo(
                name=ident["name"], uuid=ident["uuid"], sm_count=cus,
                default_core_mhz=float(max(table["core_mhz"], default=0.0)),
                default_mem_mhz=float(max(table["mem_mhz"], default=0.0)),
                warp_issue_per_cycle=facts.warp_issue_per_cycle, supported_clocks=table,
                driver_version=ident.get("driver_version"), cuda_version=None,
                extra={**facts.device_fields(), "pci_bus_id": ident.get("pci_bus_id"),
                       "architecture": ident.get("architecture"), "hip_index": self.index,
                       "amdsmi_index": ident.get("amdsmi_index"), "hip_mapping": ident.get("hip_mapping"),
                       "amdsmi_capabilities": self._sensor.capabilities()["supported"],
                       "power_scope": self._sensor.capabilities()["power_scope"],
                       **({"power_limit_w": ident["power_limit_w"]} if ident.get("power_limit_w") else {})})
        except BaseException:
            self.gpu.close()
            raise

    def _new_runner(self) -> Any:
        try:
            from cupy.cuda import runtime

            if not getattr(runtime, "is_hip", False):
                raise ImportError("the installed CuPy is the CUDA build")
            from microbench.kernels.runner import KernelRunner
        except ImportError as e:
            raise DeviceError(f"rocm:{self.index}: running kernels needs CuPy for ROCm ({e}); install with: "
                              "pip install cupy-rocm-7-0") from e
        return KernelRunner(self.index)

    def run_copy(self, direction: str, nbytes: int, pinned: bool, duration_s: float) -> CopyResult:
        raise NotImplementedError(f"{self.info.name}: host-device copies are not timed on ROCm yet")


def _measures(caps: dict[str, Any]) -> tuple[list[str], list[str]]:
    """What a GPU's sensor logs and what it cannot, for `calib devices` / `calib doctor`."""
    sup, why = caps["supported"], caps["unsupported_reasons"]
    names = {"power": "power_w", "energy_counter": "energy_mj", "temp_hotspot": "temp_c (hotspot)",
             "temp_edge": "edge_temp_c", "temp_vram": "mem_temp_c (HBM)", "gfx_clock": "sm_mhz",
             "mem_clock": "mem_mhz", "activity": "util_gpu_pct, util_mem_pct"}
    yes = [names[k] for k, v in sup.items() if v]
    no = [f"{names[k]} ({why.get(k, 'no')})" for k, v in sup.items() if not v]
    return yes, no


class AmdBackend(Backend):
    """AMD GPUs, ``rocm:<HIP index>``: amdsmi telemetry and clocks, CuPy-for-ROCm kernels."""

    prefix = "rocm"
    vendor = "AMD"
    library = "amdsmi"
    device_class = RocmDevice
    sensor_class = AmdSmiSensor

    def available(self) -> tuple[bool, str]:
        return amdsmi_available()

    def list_gpus(self) -> list[dict[str, Any]]:
        """Every GPU amdsmi sees, by HIP index, with what its sensor can measure ([] without amdsmi)."""
        ok, _ = amdsmi_available()
        if not ok:
            return []
        lib = load_amdsmi()
        _smi(lib, "amdsmi_init", lib.amdsmi_init, lib.AmdSmiInitFlags.INIT_AMD_GPUS)
        try:
            out = []
            for i in range(len(_smi(lib, "processor handles", lib.amdsmi_get_processor_handles))):
                g = AmdGpu(amdsmi_index=i, energy_check_s=0.0)
                try:
                    ident = g.identity()
                    if g.mapping == "hip_id":
                        ident["index"] = int(_num(_smi(lib, "enumeration info", lib.amdsmi_get_gpu_enumeration_info,
                                                       g.handle)["hip_id"]))
                    ident["measures"], ident["not_available"] = _measures(g.capabilities())
                    ident["notes"] = list(g.capabilities()["faults"].values())
                    out.append(ident)
                finally:
                    g.close()
            return sorted(out, key=lambda d: d["index"])
        finally:
            with contextlib.suppress(DeviceError):
                _smi(lib, "amdsmi_shut_down", lib.amdsmi_shut_down)

    def report(self, probe_rate: bool = False) -> dict[str, Any]:
        """What each AMD GPU can measure, its power scope, faults found, clock control."""
        ok, msg = amdsmi_available()
        rep: dict[str, Any] = {"library": self.library, "available": ok, "message": msg, "gpus": []}
        if not ok:
            return rep
        for ident in self.list_gpus():
            g: dict[str, Any] = {"identity": ident, "measurable": ident.pop("measures"),
                                 "not_available": ident.pop("not_available"),
                                 "notes": {f"fault {i + 1}": note for i, note in enumerate(ident.pop("notes"))}}
            try:
                with AmdGpu(ident["index"], energy_check_s=0.0) as gpu:
                    g["notes"]["power scope"] = gpu.capabilities()["power_scope"]
                    g["notes"]["power_w from"] = gpu.capabilities()["power_w_source"]
                    g["notes"]["energy_mj from"] = gpu.capabilities()["energy_mj_source"]
                    clk = gpu.supported_clocks()
                    g["notes"]["clocks"] = f"GFX levels {clk['core_mhz']} MHz, memory {clk['mem_mhz']} MHz"
            except DeviceError as e:
                g["error"] = str(e)
            g["notes"]["clock control"] = clock_control_note("held")
            rep["gpus"].append(g)
        return rep


BACKEND = AmdBackend()

__all__ = ["BACKEND", "SENSOR_COLUMNS", "AmdBackend", "AmdGpu", "AmdSmiSensor", "RocmDevice", "amdsmi_available",
           "load_amdsmi", "map_amdsmi_error"]
