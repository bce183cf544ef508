"""A real NVIDIA GPU (``cuda:N``): CuPy kernels through :mod:`microbench.kernels.runner`, NVML sensors,
clock locking per DVFS point.

- **Which GPU**: ``N`` is the CUDA index (what CuPy calls device N). CUDA orders GPUs fastest-first by
  default, NVML by PCI bus, so the NVML handle is found by the PCI bus id CUDA reports for device N
  (when CuPy is missing, NVML index N is assumed, with a warning if there are several GPUs).
- **Sensors**: the NVML sensor of that GPU (:class:`microbench.devices.nvml.NvmlSensor`, stream
  ``nvml<N>``), plus an optional serial power analyzer.
- **Clocks**: :meth:`CudaDevice.set_clocks` locks SM/memory clocks with NVML (values from
  ``info.supported_clocks``); :meth:`CudaDevice.close`, interpreter exit, Ctrl-C and SIGTERM reset them.
  Locking needs root: without it the error says so.
- **Thermally stable protocol**: see :mod:`microbench.protocol` (cooldown to a band, warm-up,
  temperature gate, windows, repeats); it drives this class through the Device interface.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

from calib.core.errors import DeviceError
from microbench.devices.base import CopyResult, Device, DeviceInfo, RunResult, Sensor, Workload
from microbench.devices.nvml import NvmlGpu, NvmlSensor



def _issue_per_cycle(props: dict[str, Any] | None) -> float:
    """Warp instructions per SM per cycle from the per-architecture table (calib.core.arch: by major
    *and* minor, GP100 issues 2 and GP102 4); 4 for a capability the table does not know."""
    from calib.core.arch import BY_CC

    if not props:
        return 4.0
    a = BY_CC.get(f"{props['major']}.{props['minor']}")
    return a.warp_issue_per_cycle if a is not None else 4.0


def _model_units(major: int | None, props: dict[str, Any] | None) -> dict[str, Any]:
    """Power-model units of a GPU generation (all have L1/L2 since Fermi; tensor cores since Volta)."""
    units = ["fp", "dp", "int", "sfu", "alu", "reg", "fds", "shared", "const", "tex", "l1", "l2", "global", "local"]
    if major is not None and major >= 7:
        units.insert(4, "tensor")
    out: dict[str, Any] = {"units": units, "chip_units": ["l2", "global", "local"],
                           "mem_domain_units": ["global", "local"]}
    if props:
        out["max_warps_per_sm"] = int(props.get("maxThreadsPerMultiProcessor", 2048)) // 32
        out["l2_bytes"] = int(props.get("l2CacheSize", 0))
    return out


def cuda_properties(index: int) -> dict[str, Any] | None:
    """CUDA device properties of device ``index`` via CuPy, or None when CuPy is not installed."""
    try:
        import cupy  # noqa: F401
        from cupy.cuda import runtime
    except ImportError:
        return None
    try:
        n = runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001 - CUDA driver errors come in many types
        raise DeviceError(f"cuda:{index}: CUDA is not usable ({e})") from e
    if not 0 <= index < n:
        from calib.core.errors import DeviceNotFoundError

        raise DeviceNotFoundError(f"cuda:{index} not found: CUDA sees {n} GPU(s)")
    p = runtime.getDeviceProperties(index)
    return {k.decode() if isinstance(k, bytes) else k: v for k, v in p.items()}


def pci_bus_id(props: dict[str, Any]) -> str:
    """NVML-style PCI bus id (``00000000:3B:00.0``) from CUDA device properties."""
    return f"{int(props['pciDomainID']):08X}:{int(props['pciBusID']):02X}:{int(props['pciDeviceID']):02X}.0"


class CudaDevice(Device):
    """GPU ``cuda:<index>``.

    Parameters
    ----------
    index:
        CUDA device index.
    analyzer:
        an optional external power analyzer sensor (started by the caller or lazily on first read).
    runner:
        a kernel runner with ``prepare(kernel, params, launch)``, ``run_for(prepared, duration_s)`` and
        ``close()``; default: ``microbench.kernels.runner.KernelRunner(index)``, created on first use.
    """

    virtual = False

    def __init__(self, index: int, *, analyzer: Sensor | None = None, runner: Any = None):
        self.index = int(index)
        props = cuda_properties(self.index)
        if props is not None:
            self.gpu = NvmlGpu(pci_bus_id=pci_bus_id(props))
            self.gpu.index = self.index
        else:
            self.gpu = NvmlGpu(self.index)
        try:
            if props is None:
                from microbench.devices.nvml import list_gpus

                if len(list_gpus()) > 1:
                    warnings.warn(f"cuda:{self.index}: CuPy is not installed, so the CUDA->NVML index mapping is "
                                  f"unknown; assuming NVML GPU {self.index}. Install CuPy (pip install "
                                  "'gpu-calib[gpu]') or set CUDA_DEVICE_ORDER=PCI_BUS_ID", RuntimeWarning,
                                  stacklevel=2)
            self._nvml = NvmlSensor(self.gpu, name=f"nvml{self.index}")
            self._analyzer = analyzer
            self._runner = runner
            self._owns_runner = runner is None
            self._prepared: dict[Any, Any] = {}
            self.info = self._make_info(props)
        except BaseException:
            self.gpu.close()
            raise

    def _make_info(self, props: dict[str, Any] | None) -> DeviceInfo:
        ident = self.gpu.identity()
        try:
            table = self.gpu.supported_clocks()
        except DeviceError:  # e.g. NotSupported on some boards: DVFS sweeps unavailable
            table = {}
        mem_default = float(ident.get("max_mem_mhz") or (max(table) if table else 0.0))
        cores = table.get(int(mem_default), next(iter(table.values()), []))
        core_default = float(ident.get("max_sm_mhz") or (max(cores) if cores else 0.0))
        major = int(props["major"]) if props else None
        sm_count = int(props["multiProcessorCount"]) if props else 0
        return DeviceInfo(
            name=ident["name"], uuid=ident["uuid"], sm_count=sm_count,
            default_core_mhz=core_default, default_mem_mhz=mem_default,
            warp_issue_per_cycle=_issue_per_cycle(props),
            supported_clocks={"mem_mhz": [float(m) for m in sorted(table)],
                              "core_mhz": [float(c) for c in sorted(cores)]},
            driver_version=ident.get("driver_version"), cuda_version=ident.get("cuda_driver_version"),
            extra={**_model_units(major, props),
                   "pci_bus_id": ident.get("pci_bus_id"), "architecture": ident.get("architecture"),
                   "compute_capability": f"{props['major']}.{props['minor']}" if props else None,
                   "cuda_index": self.index, "nvml_capabilities": self._nvml.capabilities()["supported"],
                   **{k: ident[k] for k in ("power_limit_w", "shutdown_temp_c") if ident.get(k) is not None}},
        )

    # -- Device interface ---------------------------------------------------------------------
    def sensors(self) -> list[Sensor]:
        return [self._nvml] + ([self._analyzer] if self._analyzer is not None else [])

    def clock(self) -> tuple[float, float]:
        return time.monotonic(), time.time()

    def _get_runner(self) -> Any:
        if self._runner is None:
            try:
                from microbench.kernels.runner import KernelRunner
            except ImportError as e:
                raise DeviceError(f"cuda:{self.index}: running kernels needs CuPy and the kernel runner ({e}); "
                                  "install with: pip install 'gpu-calib[gpu]'") from e
            self._runner = KernelRunner(self.index)
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

    #: host-device copies are timed with CuPy (microbench.kernels.copies)
    can_copy = True

    def run_copy(self, direction: str, nbytes: int, pinned: bool, duration_s: float) -> "CopyResult":
        """Repeat one host-device copy for ``duration_s`` s (buffers prepared once per copy kind)."""
        if getattr(self, "_copies", None) is None:
            from microbench.kernels.copies import CopyRunner

            self._copies = CopyRunner(self.index)
            self._copy_prep: dict = {}
        key = (direction, int(nbytes), bool(pinned))
        prep = self._copy_prep.get(key)
        if prep is None:
            self._copy_prep.clear()  # one set of buffers at a time: copies of 512 MiB add up
            prep = self._copies.prepare(direction, int(nbytes), bool(pinned))
            self._copy_prep[key] = prep
        return self._copies.run_for(prep, duration_s)

    def idle(self, duration_s: float) -> None:
        time.sleep(max(0.0, duration_s))

    def set_clocks(self, core_mhz: float | None, mem_mhz: float | None) -> None:
        """Lock SM/memory clocks (MHz) for a DVFS point; ``None`` resets that domain. Needs root."""
        self.gpu.lock_clocks(core_mhz, mem_mhz)

    def clocks(self) -> tuple[float, float]:
        return self.gpu.clocks_mhz()

    def temperature_c(self) -> float | None:
        return self.gpu.temperature_c()

    def close(self) -> None:
        """Reset locked clocks, release the runner, the analyzer and NVML (errors: first one re-raised)."""
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

    def __enter__(self) -> "CudaDevice":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
