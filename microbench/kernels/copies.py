"""Host-device copy microbenchmarks on a real NVIDIA GPU with CuPy (pinned and pageable host memory).

:class:`CopyRunner` allocates a device buffer (``cupy.empty``) and a host buffer -- page-locked from
``cupy.cuda.alloc_pinned_memory`` or an ordinary (pageable) NumPy array -- and times copies between
them with CUDA events: host to device with ``ndarray.set``, device to host with ``ndarray.get(out=)``.
:meth:`CopyRunner.run_for` repeats one copy back to back for a wall time, as the kernel runner does
for launches, so the power sensors see a steady copy load::

    runner = CopyRunner(0)
    prep = runner.prepare("h2d", 64 << 20, pinned=True)
    result = runner.run_for(prep, 3.0)        # CopyResult(copies, copy_time_s)
    runner.close()

CuPy is imported lazily (:func:`microbench.kernels.runner.import_cupy`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from calib.core.errors import BadInputError
from microbench.devices.base import CopyResult
from microbench.kernels.runner import import_cupy

DIRECTIONS = ("h2d", "d2h")


@dataclass
class PreparedCopy:
    """Buffers of one copy: direction, size (bytes), host memory kind and the two arrays."""

    direction: str
    nbytes: int
    pinned: bool
    host: np.ndarray
    device: Any
    pinned_mem: Any = None   # keeps the page-locked allocation alive as long as ``host`` is used


class CopyRunner:
    """Times host-device copies on GPU ``device_index`` (module docstring)."""

    def __init__(self, device_index: int, *, cupy_module: Any = None, clock=time.monotonic):
        self.cp = cupy_module if cupy_module is not None else import_cupy()
        self.index = int(device_index)
        self.cp.cuda.Device(self.index).use()
        self.clock = clock

    def prepare(self, direction: str, nbytes: int, pinned: bool) -> PreparedCopy:
        """Buffers for ``nbytes``-byte copies in ``direction`` (``"h2d"``/``"d2h"``)."""
        if direction not in DIRECTIONS:
            raise BadInputError(f"copy direction must be one of {', '.join(DIRECTIONS)}, not {direction!r}")
        if not isinstance(nbytes, int) or nbytes < 1:
            raise BadInputError(f"copy size must be a positive number of bytes, not {nbytes!r}")
        cp = self.cp
        mem = None
        if pinned:
            mem = cp.cuda.alloc_pinned_memory(nbytes)
            host = np.frombuffer(mem, dtype=np.uint8, count=nbytes)
        else:
            host = np.empty(nbytes, dtype=np.uint8)
        host[:] = np.arange(nbytes, dtype=np.uint64).astype(np.uint8)  # touch every page before timing
        dev = cp.empty(nbytes, dtype=cp.uint8)
        return PreparedCopy(direction, nbytes, bool(pinned), host, dev, mem)

    def _copy(self, prep: PreparedCopy) -> None:
        if prep.direction == "h2d":
            prep.device.set(prep.host)
        else:
            prep.device.get(out=prep.host)

    def time_copies(self, prep: PreparedCopy, count: int = 1) -> float:
        """Mean time of ``count`` back-to-back copies, s (CUDA events)."""
        cp = self.cp
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(count):
            self._copy(prep)
        stop.record()
        stop.synchronize()
        return cp.cuda.get_elapsed_time(start, stop) * 1e-3 / count

    def run_for(self, prep: PreparedCopy, duration_s: float) -> CopyResult:
        """Repeat the copy for about ``duration_s`` of wall time, in batches timed by events."""
        per = self.time_copies(prep, 1)  # probe (also the first, cold copy: not counted)
        batch = max(1, int(0.1 / max(per, 1e-7)))
        copies, total = 0, 0.0
        t_end = self.clock() + duration_s
        while True:
            t = self.time_copies(prep, batch)
            copies += batch
            total += t * batch
            if self.clock() >= t_end:
                break
        return CopyResult(copies, total / copies)

    def close(self) -> None:
        """Free the memory pools' cached blocks."""
        self.cp.get_default_memory_pool().free_all_blocks()
        self.cp.get_default_pinned_memory_pool().free_all_blocks()
