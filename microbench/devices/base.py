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

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from calib.core.activity import warps_per_sm


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

    @abstractmethod
    def open(self, what: str, seed: int = 0) -> Device:
        """The device ``<prefix>:<what>`` (DeviceNotFoundError for a malformed or unknown ``what``)."""

    def sensor(self, index: int) -> Sensor:
        """The telemetry stream of GPU ``index`` alone (``calib log``), without a kernel runner."""
        raise NotImplementedError(f"{self.prefix}: no standalone sensor")

    def report(self, probe_rate: bool = False) -> dict[str, Any]:
        """What each GPU can measure (``calib doctor``): ``available``, ``message``, ``gpus`` (each with
        ``identity`` and ``measurable``/``not_available`` lists, clock control, and ``error`` if it could
        not be opened)."""
        ok, msg = self.available()
        return {"library": self.library, "available": ok, "message": msg, "gpus": []}

    def spec(self, index: int | str) -> str:
        """The device spec of GPU ``index``: ``<prefix>:<index>``."""
        return f"{self.prefix}:{index}"
