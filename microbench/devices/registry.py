"""The device backends, by spec prefix: the one list a new vendor is added to.

A device spec is ``<prefix>:<what>``: ``sim:<preset>`` (the virtual GPU), ``cuda:<index>`` (NVIDIA,
NVML), ``rocm:<index>`` (AMD, amdsmi). Each entry names the module attribute holding the backend's
:class:`~microbench.devices.base.Backend` instance; a module is imported only when its prefix is used
or the real GPUs are listed, so a missing vendor library costs nothing to the others.

Adding a vendor: write ``microbench/devices/<vendor>.py`` with a ``Backend`` subclass and
``BACKEND = ...``, and add its line here. Discovery (``calib devices``, the default device of
``calib run``), ``calib doctor``, ``calib log --device`` and ``calib run --device`` then find it.
"""

from __future__ import annotations

import importlib
import logging

from calib.core.errors import DeviceError, DeviceNotFoundError
from microbench.devices.base import Backend, Device

#: spec prefix -> "module:attribute" of the backend (one line per backend)
BACKENDS: dict[str, str] = {
    "sim": "microbench.devices.sim.device:BACKEND",
    "cuda": "microbench.devices.cuda:BACKEND",
    "rocm": "microbench.devices.amd:BACKEND",
}

#: the device of ``calib run`` when no real GPU is found
DEFAULT_SIM = "sim:gtx280"

_log = logging.getLogger(__name__)


def _usage() -> str:
    return ", ".join(f"{p}:<{'preset' if p == 'sim' else 'index'}>" for p in BACKENDS) + " (see `calib devices`)"


def backend(prefix: str, spec: str | None = None) -> Backend:
    """The backend of a spec prefix (DeviceNotFoundError naming the device ``spec`` and the known
    prefixes otherwise)."""
    target = BACKENDS.get(prefix)
    if target is None:
        raise DeviceNotFoundError(f"unknown device {spec or prefix!r}: use {_usage()}")
    module, attr = target.split(":")
    return getattr(importlib.import_module(module), attr)


def backends(virtual: bool = False) -> list[Backend]:
    """The backends of real GPUs (``virtual=True``: of virtual ones) whose module imports here (a vendor
    module that cannot even be imported -- its Python binding missing -- is skipped, and logged at DEBUG
    level)."""
    out = []
    for prefix in BACKENDS:
        try:
            b = backend(prefix)
        except ImportError as e:
            _log.debug("device backend %s not importable: %s", prefix, e)
            continue
        if b.virtual == virtual:
            out.append(b)
    return out


def real_backends() -> list[Backend]:
    """The backends of real GPUs (:func:`backends`)."""
    return backends()


def open_device(spec: str, seed: int = 0) -> Device:
    """Open a device spec (module docstring); ``seed`` seeds the virtual GPU's noise."""
    prefix, sep, what = spec.partition(":")
    if not sep or not what:
        raise DeviceNotFoundError(f"unknown device {spec!r}: use {_usage()}")
    return backend(prefix, spec).open(what, seed)


def real_gpus() -> list[dict]:
    """Every real GPU any backend sees, each with its ``spec`` (``cuda:0``, ``rocm:1``); ``[]`` when no
    vendor library or driver is present."""
    out = []
    for b in real_backends():
        try:
            gpus = b.list_gpus()
        except DeviceError as e:
            _log.debug("device backend %s: %s", b.prefix, e)
            continue
        out += [{**g, "spec": b.spec(g.get("index", 0)), "vendor": b.vendor} for g in gpus]
    return out


def default_device_spec() -> str:
    """The first real GPU found (registry order), else the default virtual GPU."""
    gpus = real_gpus()
    return gpus[0]["spec"] if gpus else DEFAULT_SIM
