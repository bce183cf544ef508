"""Devices: the virtual GPU (``sim:<preset>``) and real GPUs behind vendor backends (``cuda:<index>``,
``rocm:<index>``); the backends are listed in :mod:`microbench.devices.registry`."""

from __future__ import annotations

from microbench.devices.base import Device
from microbench.devices.registry import DEFAULT_SIM, default_device_spec, open_device, real_gpus

__all__ = ["DEFAULT_SIM", "Device", "default_device_spec", "open_device", "real_gpus"]
