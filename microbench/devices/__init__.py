"""Devices: the virtual GPU (``sim:<preset>``) and real NVIDIA GPUs (``cuda:<index>``)."""

from __future__ import annotations

from calib.core.errors import DeviceError, DeviceNotFoundError
from microbench.devices.base import Device

DEFAULT_SIM = "sim:gtx280"


def open_device(spec: str, seed: int = 0) -> Device:
    """Open ``sim:<preset>`` (virtual GPU, noise seeded by ``seed``) or ``cuda:<index>``."""
    if spec.startswith("sim:"):
        from microbench.devices.sim.device import open_sim

        return open_sim(spec, seed)
    if spec.startswith("cuda:"):
        try:
            index = int(spec.split(":", 1)[1])
        except ValueError:
            raise DeviceNotFoundError(f"device {spec!r}: expected cuda:<index>, e.g. cuda:0") from None
        from microbench.devices.cuda import CudaDevice

        return CudaDevice(index)
    raise DeviceNotFoundError(f"unknown device {spec!r}: use sim:<preset> (see `calib devices`) or cuda:<index>")


def real_gpus() -> list[dict]:
    """GPUs NVML can see ([] when NVML or the driver is absent)."""
    try:
        from microbench.devices.nvml import list_gpus
    except ImportError:
        return []
    try:
        return list(list_gpus())
    except DeviceError:
        return []


def default_device_spec() -> str:
    """The first NVIDIA GPU NVML finds, else the default virtual GPU."""
    gpus = real_gpus()
    return f"cuda:{gpus[0].get('index', 0)}" if gpus else DEFAULT_SIM
