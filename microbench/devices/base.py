"""Device and sensor interfaces shared by the virtual GPU, the vendor backends and serial power analyzers.

A :class:`Sensor` produces timestamped rows for one stream of a session directory. Real sensors are
polled by the logger at a rate; the virtual GPU's sensors produce rows as its simulated time advances.
Either way the logger drains ``read()`` and appends the rows to the stream named ``sensor.name``.

A :class:`Device` runs workloads described by :class:`Workload` (kernel description + launch shape) and
owns the sensors that observe it.

A :class:`Backend` is one kind of device behind ``<prefix>:<index>`` (``sim``, ``cuda``, ``rocm``):
discovery, opening a device (telemetry, clock control, kernel runner), opening its sensor alone (for
``calib log``), and what each GPU can measure (for ``calib doctor``). Backends are listed once, in
:mod:`microbench.devices.registry`; their architecture facts and unit lists come from
:mod:`calib.core.arch`, their errors are the typed ones of :mod:`calib.core.errors`.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import threading
import time
import warnings
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from calib.core.activity import warps_per_sm
from calib.core.errors import DeviceError, DeviceNoPermissionError, DeviceNotFoundError, DeviceNotSupportedError


@dataclass(frozen=True)
class Row:
    """One sensor reading: times in s (session monotonic clock and Unix wall time) and named values."""

    t_mono_s: float
    t_wall_s: float
    values: Mapping[str, Any]


class Sensor(ABC):
    """One stream of measurements (NVML device, power analyzer, ...).

    Subclasses set ``name`` (stream name, e.g. ``"nvml0"``, ``"wall"``), ``kind`` (``"nvml"``,
    ``"analyzer"``) and ``columns`` (value columns with units in their names, e.g. ``power_w``).
    """

    name: str
    kind: str
    columns: tuple[str, ...]
    #: what the stream measures: ``gpu`` (the device's own telemetry), ``system`` (wall power),
    #: ``host`` (CPU and DRAM); the samples layer takes the GPU's power from the first ``gpu`` stream
    scope: str = "gpu"

    def describe(self) -> dict[str, Any]:
        """Manifest entry: name, kind, scope, columns and the capabilities probed once at start."""
        return {"name": self.name, "kind": self.kind, "scope": self.scope, "columns": list(self.columns),
                "capabilities": self.capabilities()}

    def capabilities(self) -> dict[str, Any]:
        """What this sensor can measure (probed once). Default: nothing beyond its columns."""
        return {}

    @abstractmethod
    def read(self) -> list[Row]:
        """Rows produced since the previous call (possibly none)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the sensor."""


@dataclass(frozen=True)
class Launch:
    """Launch shape of a kernel: grid and block size, and on how many SMs it runs."""

    blocks: int
    threads_per_block: int
    active_sms: int

    @property
    def warps_per_block(self) -> int:
        return -(-self.threads_per_block // 32)

    @property
    def warps_per_sm(self) -> float:
        """IPP eq. (12): (#threads per block / 32) x (#blocks / #active SMs)."""
        return warps_per_sm(self.threads_per_block, self.blocks, self.active_sms)

    def to_dict(self) -> dict[str, int]:
        return {"blocks": self.blocks, "threads_per_block": self.threads_per_block, "active_sms": self.active_sms}


@dataclass(frozen=True)
class Workload:
    """What a device is asked to run: a kernel description and how to launch it.

    ``per_warp`` maps instruction classes (:data:`calib.core.units.INSTRUCTION_CLASSES`) to per-warp dynamic
    counts for one launch. ``kernel`` names the CUDA kernel and its parameters for real devices;
    ``traits`` carries kernel properties a timing model needs (e.g. ``coalesced``, ``dep_chain``).
    """

    name: str
    per_warp: Mapping[str, float]
    launch: Launch
    kernel: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    traits: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DeviceInfo:
    """Identity and fixed properties of a device, recorded in manifests and parameter files."""

    name: str
    uuid: str
    sm_count: int
    default_core_mhz: float
    default_mem_mhz: float
    warp_issue_per_cycle: float
    supported_clocks: Mapping[str, list[float]] = field(default_factory=dict)
    driver_version: str | None = None
    cuda_version: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "uuid": self.uuid, "sm_count": self.sm_count,
            "clocks": {"core_mhz": self.default_core_mhz, "mem_mhz": self.default_mem_mhz,
                       "supported": {k: list(v) for k, v in self.supported_clocks.items()}},
            "warp_issue_per_cycle": self.warp_issue_per_cycle,
            "driver_version": self.driver_version, "cuda_version": self.cuda_version,
            **dict(self.extra),
        }


@dataclass(frozen=True)
class RunResult:
    """Outcome of running a workload for a while: launches made and mean kernel time (events), s."""

    launches: int
    kernel_time_s: float


@dataclass(frozen=True)
class CopyResult:
    """Outcome of repeating one host-device copy for a while: copies made and mean time per copy, s."""

    copies: int
    copy_time_s: float


class Device(ABC):
    """A GPU the campaign can drive: run workloads, idle, set clocks, and expose sensors."""

    info: DeviceInfo
    virtual: bool = False

    @abstractmethod
    def sensors(self) -> list[Sensor]:
        """The sensors observing this device."""

    @abstractmethod
    def clock(self) -> tuple[float, float]:
        """(t_mono_s, t_wall_s) now, on the device's clock."""

    @abstractmethod
    def run(self, workload: Workload, duration_s: float) -> RunResult:
        """Run ``workload`` back to back for ``duration_s`` seconds; sensors keep logging."""

    @abstractmethod
    def idle(self, duration_s: float) -> None:
        """Leave the GPU idle for ``duration_s`` seconds."""

    def attach(self, sensor: Sensor) -> None:
        """Log ``sensor`` with this device's own (a host RAPL stream, say): it joins :meth:`sensors`."""
        self.__dict__.setdefault("_attached", []).append(sensor)

    def attached(self) -> list[Sensor]:
        """The sensors given with :meth:`attach`."""
        return list(self.__dict__.get("_attached", []))

    def run_copy(self, direction: str, nbytes: int, pinned: bool, duration_s: float) -> CopyResult:
        """Repeat one host-device copy (``direction`` ``"h2d"`` or ``"d2h"``, ``nbytes`` bytes, from or
        to pinned or pageable host memory) back to back for ``duration_s`` seconds; sensors keep logging."""
        raise NotImplementedError(f"{self.info.name}: host-device copies not available")

    def set_clocks(self, core_mhz: float | None, mem_mhz: float | None) -> None:
        """Lock (core, memory) clocks in MHz; ``None`` resets that domain to its default."""
        raise NotImplementedError(f"{self.info.name}: clock control not available")

    def clocks(self) -> tuple[float, float]:
        """Current (core_mhz, mem_mhz)."""
        return (self.info.default_core_mhz, self.info.default_mem_mhz)

    def temperature_c(self) -> float | None:
        """Current GPU temperature, degC, if the device can tell."""
        return None

    def snapshot(self) -> dict | None:
        """Device state for resuming a campaign exactly (virtual devices only); None otherwise."""
        return None

    def restore(self, state: dict, t_mono_s: float) -> None:
        """Restore a :meth:`snapshot`, continuing the clock from ``t_mono_s``."""
        raise NotImplementedError

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the device (and reset anything it changed, e.g. locked clocks)."""


class PolledGpuSensor(Sensor):
    """A vendor GPU's telemetry stream: one row per ``read()`` from ``gpu.sample()`` (a dict of the
    stream's columns), stamped at the middle of the poll -- the best host-side estimate of when the values
    were taken. ``gpu``: a ``gpu_class`` object, or an index to open one, which the sensor then owns
    (closes with itself, and when its first probe fails). ``name``: the stream, default ``<kind><index>``.
    Subclasses set ``kind``, ``columns`` (the GPU object's own ``columns`` instead where it has them: they can
    depend on the board) and ``gpu_class``."""

    gpu_class: Any

    def __init__(self, gpu: Any, name: str | None = None, clock: Any = None):
        owns = not isinstance(gpu, self.gpu_class)
        if owns:
            gpu = self.gpu_class(int(gpu))
        self.gpu, self._owns, self.name = gpu, owns, name or f"{self.kind}{gpu.index}"
        self._clock = clock or (lambda: (time.monotonic(), time.time()))
        try:
            self.gpu.capabilities()
        except BaseException:
            if owns:
                self.gpu.close()
            raise
        self.columns = getattr(self.gpu, "columns", self.columns)

    def capabilities(self) -> dict[str, Any]:
        return self.gpu.capabilities()

    def read(self) -> list[Row]:
        t0m, t0w = self._clock()
        values = self.gpu.sample()
        t1m, t1w = self._clock()
        return [Row((t0m + t1m) / 2, (t0w + t1w) / 2, values)]

    def close(self) -> None:
        if self._owns:
            self.gpu.close()


# ------------------------------------------------------------------------------------------------
# Real GPUs: clocks reset however the process ends, and what every vendor's device does the same way
# ------------------------------------------------------------------------------------------------

#: GPUs with held clocks (objects with ``reset_clocks()`` and ``where``), reset at exit
CLOCKS_HELD: set[Any] = set()
_HANDLERS_INSTALLED = False


def reset_all_held_clocks() -> None:
    """Reset the clocks of every GPU in :data:`CLOCKS_HELD` (at exit: report failures, keep going)."""
    for gpu in list(CLOCKS_HELD):
        try:
            gpu.reset_clocks()
        except Exception as e:  # noqa: BLE001 - at exit: report, keep going
            warnings.warn(f"{gpu.where}: could not reset locked clocks at exit: {e}", RuntimeWarning, stacklevel=1)


def install_clock_reset_handlers() -> None:
    """Make sure held clocks are reset however the process ends (short of SIGKILL).

    Registers an ``atexit`` hook, and -- from the main thread, when SIGTERM still has its default
    action -- turns SIGTERM into ``SystemExit`` so ``finally`` blocks and ``atexit`` run. Ctrl-C
    raises ``KeyboardInterrupt``, which unwinds through the GPUs' ``close`` / ``atexit`` too.
    """
    global _HANDLERS_INSTALLED
    if _HANDLERS_INSTALLED:
        return
    _HANDLERS_INSTALLED = True
    atexit.register(reset_all_held_clocks)
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        def _on_term(signum: int, frame: Any) -> None:
            raise SystemExit(128 + signum)
        signal.signal(signal.SIGTERM, _on_term)


def runtime_properties(index: int, prefix: str, hip: bool = False) -> dict[str, Any] | None:
    """Device properties of GPU ``index`` through CuPy's runtime (``cupy.cuda.runtime``), or None when
    CuPy is not installed (or, with ``hip``, is not the ROCm build). ``prefix`` (``cuda``, ``rocm``)
    names the GPU in messages; DeviceError when the runtime does not work, DeviceNotFoundError for an
    index it does not have."""
    try:
        from cupy.cuda import runtime
    except ImportError:
        return None
    if hip and not getattr(runtime, "is_hip", False):
        return None
    api = "HIP" if hip else "CUDA"
    try:
        n = runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001 - driver errors come in many types
        raise DeviceError(f"{prefix}:{index}: {api} is not usable ({e})") from e
    if not 0 <= index < n:
        raise DeviceNotFoundError(f"{prefix}:{index} not found: {api} sees {n} GPU(s)")
    p = runtime.getDeviceProperties(index)
    return {k.decode() if isinstance(k, bytes) else k: v for k, v in p.items()}


class VendorGpu:
    """What a vendor library's GPU object (``NvmlGpu``, ``AmdGpu``) does the same way: :meth:`close` resets
    held clocks and then releases the library once, and it is a context manager. Subclasses call :meth:`_start`
    once the library is initialised and define ``reset_clocks`` and ``_shutdown`` (the library's release, its
    errors already typed)."""

    _open: bool
    where: str

    def _call(self, fn: Any, what: str, *args: Any) -> Any:
        """``fn(*args)`` through the vendor library's boundary, its errors typed, messages naming this GPU."""
        raise NotImplementedError

    def _start(self) -> None:
        """The library is initialised (``close`` releases it); no clock held, no capabilities probed yet, no
        energy-counter reset and no query refused mid-run so far."""
        self._open = True
        self._clock_lock = threading.Lock()
        self.locked: dict[str, Any] = {"core": None, "mem": None}
        self._caps: dict[str, Any] | None = None
        self._prev_energy_mj: float | None = None
        self.energy_resets = 0
        self.runtime_not_supported: dict[str, int] = {}

    def _try(self, fn: Any, what: str, *args: Any) -> tuple[Any, str]:
        """Probe one query: ``(value, "ok")``, or ``(None, "not supported" | "no permission")``."""
        try:
            return self._call(fn, what, *args), "ok"
        except DeviceNotSupportedError:
            return None, "not supported"
        except DeviceNoPermissionError:
            return None, "no permission"

    def _optional(self, key: str, fn: Any, *args: Any, what: str | None = None) -> Any:
        """A query supported at probe time (``what`` in messages, default ``key``); NotSupported mid-run
        gives None and is counted under ``key``."""
        try:
            return self._call(fn, what or key, *args)
        except DeviceNotSupportedError:
            self.runtime_not_supported[key] = self.runtime_not_supported.get(key, 0) + 1
            return None

    def _energy_reset(self, mj: float) -> int:
        """1 when the energy counter went backwards since the last sample (counted and warned), else 0."""
        prev, self._prev_energy_mj = self._prev_energy_mj, mj
        if prev is None or mj >= prev:
            return 0
        self.energy_resets += 1
        warnings.warn(f"{self.where}: energy counter went backwards ({prev:.1f} -> {mj:.1f} mJ): driver reload, "
                      "reset or wrap; windows spanning it are unwrapped (calib.windows)", RuntimeWarning, stacklevel=3)
        return 1

    def reset_clocks(self) -> None:
        raise NotImplementedError

    def _shutdown(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Reset held clocks and release the library (once; a failing release is not an error)."""
        if not self._open:
            return
        try:
            self.reset_clocks()
        finally:
            self._open = False
            with contextlib.suppress(DeviceError):
                self._shutdown()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def clock_control_note(held: str) -> str:
    """What ``calib doctor`` says about clock control here: possible as root, else what DVFS points (whose
    clocks are ``held``: locked, held) will meet."""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return "possible (running as root)"
    return f"needs root: DVFS points ({held} clocks) will fail with 'not permitted'"


class RealGpu(Device):
    """What a real GPU of any vendor does the same way: wall-clock time, its own stream plus an optional
    analyzer as sensors, kernels through a runner prepared once per shape, sleeping idle, clocks and
    temperature through the vendor's GPU object (``self.gpu``: ``lock_clocks``, ``clocks_mhz``,
    ``temperature_c``, ``reset_clocks``, ``close``), and a close that releases everything. Subclasses
    set ``gpu`` and call :meth:`_attach`."""

    virtual = False
    gpu: Any

    def _attach(self, sensor: Sensor, analyzer: Sensor | None, runner: Any) -> None:
        """The GPU's own stream, an optional external power analyzer (started by the caller or lazily on first
        read), and the kernel runner: ``prepare(kernel, params, launch)``, ``run_for(prepared, duration_s)``,
        ``close()`` (None: the vendor's, :meth:`_new_runner`, created on first use and closed with the device)."""
        self._sensor, self._analyzer, self._runner = sensor, analyzer, runner
        self._owns_runner = runner is None
        self._prepared: dict[Any, Any] = {}

    def sensors(self) -> list[Sensor]:
        return [self._sensor] + ([self._analyzer] if self._analyzer is not None else []) + self.attached()

    def _new_runner(self) -> Any:
        """The vendor's kernel runner (DeviceError naming what to install when it cannot run kernels)."""
        raise NotImplementedError

    def clock(self) -> tuple[float, float]:
        return time.monotonic(), time.time()

    def _get_runner(self) -> Any:
        if self._runner is None:
            self._runner = self._new_runner()
        return self._runner

    def run(self, workload: Workload, duration_s: float) -> RunResult:
        """Launch the workload's kernel back to back for ``duration_s`` s (prepared once per shape)."""
        runner = self._get_runner()
        key = (workload.kernel or workload.name, tuple(sorted(dict(workload.params).items())), workload.launch)
        prepared = self._prepared.get(key)
        if prepared is None:
            prepared = runner.prepare(workload.kernel or workload.name, dict(workload.params), workload.launch)
            self._prepared[key] = prepared
        return runner.run_for(prepared, duration_s)

    def idle(self, duration_s: float) -> None:
        time.sleep(max(0.0, duration_s))

    def set_clocks(self, core_mhz: float | None, mem_mhz: float | None) -> None:
        """Lock core/memory clocks (MHz) for a DVFS point; ``None`` resets that domain. Needs root."""
        self.gpu.lock_clocks(core_mhz, mem_mhz)

    def clocks(self) -> tuple[float, float]:
        return self.gpu.clocks_mhz()

    def temperature_c(self) -> float | None:
        return self.gpu.temperature_c()

    def close(self) -> None:
        """Reset held clocks, release the runner, the analyzer and the library (errors: first one re-raised)."""
        first: BaseException | None = None
        for fn in (self.gpu.reset_clocks,
                   (lambda: self._runner.close()) if (self._runner is not None and self._owns_runner) else None,
                   (lambda: self._analyzer.close()) if self._analyzer is not None else None,
                   self.gpu.close):
            if fn is None:
                continue
            try:
                fn()
            except Exception as e:  # noqa: BLE001 - release everything, report the first failure
                first = first or e
        if first is not None:
            raise first

    def __enter__(self) -> "RealGpu":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Backend(ABC):
    """One kind of device, opened as ``<prefix>:<what>`` (``what``: an index, or a preset for ``sim``).

    A new vendor is one module with a ``BACKEND`` instance of a subclass, and one line in
    :data:`microbench.devices.registry.BACKENDS`. Subclasses set ``prefix``, ``vendor``, ``library``
    (what gives the telemetry, for messages) and ``virtual``.
    """

    prefix: str
    vendor: str
    library: str
    virtual: bool = False

    @abstractmethod
    def available(self) -> tuple[bool, str]:
        """Whether the backend's library and driver work here: ``(ok, message)``; never raises."""

    @abstractmethod
    def list_gpus(self) -> list[dict[str, Any]]:
        """The GPUs it sees, each a dict with at least ``index``, ``name``, ``uuid`` (``[]`` when the
        library or driver is absent)."""

    #: a real GPU's Device class, opened by index (``<prefix>:<index>``), and its sensor's class
    device_class: Any = None
    sensor_class: Any = None

    def open(self, what: str, seed: int = 0) -> Device:
        """The device ``<prefix>:<what>`` (DeviceNotFoundError for a malformed or unknown ``what``): by
        default ``device_class(index)``; a backend opened by another name (a preset) overrides it."""
        try:
            index = int(what)
        except ValueError:
            raise DeviceNotFoundError(f"device {self.prefix}:{what}: expected {self.prefix}:<index>, "
                                      f"e.g. {self.prefix}:0") from None
        return self.device_class(index)

    def sensor(self, index: int) -> Sensor:
        """The telemetry stream of GPU ``index`` alone (``calib log``), without a kernel runner."""
        if self.sensor_class is None:
            raise NotImplementedError(f"{self.prefix}: no standalone sensor")
        return self.sensor_class(int(index))

    def report(self, probe_rate: bool = False) -> dict[str, Any]:
        """What each GPU can measure (``calib doctor``): ``available``, ``message``, ``gpus`` (each with
        ``identity`` and ``measurable``/``not_available`` lists, clock control, and ``error`` if it could
        not be opened)."""
        ok, msg = self.available()
        return {"library": self.library, "available": ok, "message": msg, "gpus": []}

    def spec(self, index: int | str) -> str:
        """The device spec of GPU ``index``: ``<prefix>:<index>``."""
        return f"{self.prefix}:{index}"
