"""CopyRunner against a fake CuPy (no GPU here): pinned and pageable buffers, the copy calls, event
timing and duration control; the CuPy names it uses exist in the real CuPy when it is installed."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import numpy as np
import pytest

from calib.core.errors import BadInputError
from microbench.devices.base import CopyResult
from microbench.kernels.copies import CopyRunner

USED = ["cuda.Device", "cuda.alloc_pinned_memory", "cuda.Event", "cuda.get_elapsed_time", "empty", "uint8",
        "get_default_memory_pool", "get_default_pinned_memory_pool"]


class FakeDeviceArray:
    def __init__(self, n, log):
        self.a = np.zeros(n, np.uint8)
        self.log = log

    def set(self, host):
        self.log.append(("set", host.nbytes))
        self.a[:] = host

    def get(self, out=None):
        self.log.append(("get", out.nbytes))
        out[:] = self.a
        return out


def fake_cupy(per_copy_ms: float):
    log: list = []
    events = itertools.count()

    class Event:
        def __init__(self):
            self.n = None

        def record(self):
            self.n = sum(1 for c in log if c[0] in ("set", "get"))

        def synchronize(self):
            log.append(("sync",))

    pools = SimpleNamespace(free_all_blocks=lambda: log.append(("free",)))
    cp = SimpleNamespace(
        uint8=np.uint8, empty=lambda n, dtype: FakeDeviceArray(n, log),
        get_default_memory_pool=lambda: pools, get_default_pinned_memory_pool=lambda: pools,
        cuda=SimpleNamespace(Device=lambda i: SimpleNamespace(use=lambda: log.append(("use", i))),
                             alloc_pinned_memory=lambda n: (log.append(("pinned", n)), bytearray(n))[1],
                             Event=Event, get_elapsed_time=lambda a, b: (b.n - a.n) * per_copy_ms))
    del events
    return cp, log


@pytest.mark.parametrize("direction,pinned", [("h2d", True), ("h2d", False), ("d2h", True), ("d2h", False)])
def test_copies_and_timing(direction, pinned):
    cp, log = fake_cupy(2.0)
    clock = itertools.count(0.0, 0.05)  # each clock read advances 50 ms
    r = CopyRunner(1, cupy_module=cp, clock=lambda: next(clock))
    prep = r.prepare(direction, 4096, pinned)
    assert (("pinned", 4096) in log) == pinned
    assert prep.host.nbytes == 4096 and prep.host[255] == 255
    assert r.time_copies(prep, 3) == pytest.approx(2e-3)
    res = r.run_for(prep, 0.2)
    assert isinstance(res, CopyResult) and res.copy_time_s == pytest.approx(2e-3)
    assert res.copies % 50 == 0 and res.copies >= 50  # batches of ~0.1 s of 2 ms copies
    op = "set" if direction == "h2d" else "get"
    assert {c[0] for c in log if c[0] in ("set", "get")} == {op}
    assert log[0] == ("use", 1)
    r.close()


def test_bad_copy_requests():
    cp, _ = fake_cupy(1.0)
    r = CopyRunner(0, cupy_module=cp)
    with pytest.raises(BadInputError, match="copy direction must be one of h2d, d2h, not 'x'"):
        r.prepare("x", 10, True)
    with pytest.raises(BadInputError, match="copy size must be a positive number of bytes, not 0"):
        r.prepare("h2d", 0, True)


def test_used_names_exist_in_real_cupy():
    cupy = pytest.importorskip("cupy")
    for name in USED:
        obj = cupy
        for part in name.split("."):
            obj = getattr(obj, part)
    assert hasattr(cupy.ndarray, "set") and hasattr(cupy.ndarray, "get")
