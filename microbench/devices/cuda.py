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

import warnings
from typing import Any

from calib.core.errors import DeviceError
from microbench.devices.base import Backend, CopyResult, DeviceInfo, RealGpu, Sensor, runtime_properties
from microbench.devices.nvml import NvmlGpu, NvmlSensor


def _arch_fields(props: dict[str, Any] | None, name: str) -> tuple[float, dict[str, Any]]:
    """Issue rate and ``DeviceInfo.extra`` entries of a GPU from :mod:`calib.core.arch` (by compute
    capability when CuPy gives it, else by the board name), with CUDA's own resident-warp limit and L2
    size where CuPy reports them."""
    from calib.core.arch import nvidia_facts

    facts = nvidia_facts(f"{props['major']}.{props['minor']}" if props else None, name)
    out = facts.device_fields()
    if props:
        out["max_warps_per_sm"] = int(props.get("maxThreadsPerMultiProcessor", 2048)) // 32
        out["l2_bytes"] = int(props.get("l2CacheSize", 0))
    return facts.warp_issue_per_cycle, out


def cuda_properties(index: int) -> dict[str, Any] | None:
    """CUDA device properties of device ``index`` via CuPy, or None when CuPy is not installed."""
    return runtime_properties(index, "cuda")


def pci_bus_id(props: dict[str, Any]) -> str:
    """NVML-style PCI bus id (``00000000:3B:00.0``) from CUDA device properties."""
    return f"{int(props['pciDomainID']):08X}:{int(props['pciBusID']):02X}:{int(props['pciDeviceID']):02X}.0"


class CudaDevice(RealGpu):
    """GPU ``cuda:<index>`` (CUDA device index); ``analyzer`` and ``runner`` as :meth:`RealGpu._attach` takes
    them (the default runner: ``microbench.kernels.runner.KernelRunner(index)``)."""

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
            self._attach(NvmlSensor(self.gpu, name=f"nvml{self.index}"), analyzer, runner)
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
        sm_count = int(props["multiProcessorCount"]) if props else 0
        issue, arch = _arch_fields(props, ident["name"])
        return DeviceInfo(
            name=ident["name"], uuid=ident["uuid"], sm_count=sm_count,
            default_core_mhz=core_default, default_mem_mhz=mem_default,
            warp_issue_per_cycle=issue,
            supported_clocks={"mem_mhz": [float(m) for m in sorted(table)],
                              "core_mhz": [float(c) for c in sorted(cores)]},
            driver_version=ident.get("driver_version"), cuda_version=ident.get("cuda_driver_version"),
            extra={**arch,
                   "pci_bus_id": ident.get("pci_bus_id"), "architecture": ident.get("architecture"),
                   "compute_capability": f"{props['major']}.{props['minor']}" if props else None,
                   "cuda_index": self.index, "nvml_capabilities": self._sensor.capabilities()["supported"],
                   **{k: ident[k] for k in ("power_limit_w", "shutdown_temp_c") if ident.get(k) is not None}},
        )

    # -- Device interface (the rest is RealGpu's) --------------------------------------------
    def _new_runner(self) -> Any:
        try:
            from microbench.kernels.runner import KernelRunner
        except ImportError as e:
            raise DeviceError(f"cuda:{self.index}: running kernels needs CuPy and the kernel runner ({e}); "
                              "install with: pip install 'gpu-calib[gpu]'") from e
        return KernelRunner(self.index)

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


class CudaBackend(Backend):
    """NVIDIA GPUs, ``cuda:<CUDA index>``: NVML telemetry and clocks (:mod:`microbench.devices.nvml`),
    CuPy kernels."""

    prefix = "cuda"
    vendor = "NVIDIA"
    library = "NVML (nvidia-ml-py)"
    device_class = CudaDevice
    sensor_class = NvmlSensor

    def available(self) -> tuple[bool, str]:
        from microbench.devices.nvml import nvml_available

        return nvml_available()

    def list_gpus(self) -> list[dict[str, Any]]:
        from microbench.devices.nvml import list_gpus

        return list_gpus()

    def report(self, probe_rate: bool = False) -> dict[str, Any]:
        """NVML's view of every GPU: fields supported and their sources, clocks, clock-locking permission."""
        import importlib.metadata

        from calib.core.errors import CalibError
        from microbench.devices import nvml
        from microbench.devices.base import clock_control_note

        def version(dist: str) -> str | None:
            try:
                return importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                return None

        rep: dict[str, Any] = {"binding": {"nvidia-ml-py": version("nvidia-ml-py"),
                                           "deprecated_pynvml_installed": version("pynvml")}}
        ok, msg = nvml.nvml_available()
        rep["available"], rep["message"] = ok, msg
        rep["gpus"] = []
        if not ok:
            return rep
        for ident in nvml.list_gpus():
            g: dict[str, Any] = {"identity": ident}
            try:
                with nvml.NvmlGpu(ident["index"]) as gpu:
                    caps = gpu.capabilities()
                    g["supported"] = caps["supported"]
                    g["unsupported_reasons"] = caps["unsupported_reasons"]
                    g["power_w_source"] = caps["power_w_source"]
                    g["energy_mj_source"] = caps["energy_mj_source"]
                    try:
                        table = gpu.supported_clocks()
                        g["clocks"] = {"memory_mhz": sorted(table),
                                       "core_mhz_count": {m: len(c) for m, c in table.items()}}
                    except CalibError as e:
                        g["clocks"] = {"error": str(e)}
                    g["clock_locking"] = clock_control_note("locked")
                    if probe_rate:
                        g["update_period_s"] = gpu.measure_update_period_s(1.0)
            except CalibError as e:
                g["error"] = str(e)
            rep["gpus"].append(g)
        return rep


BACKEND = CudaBackend()
