"""KernelRunner against a fake CuPy (no GPU here): launches, duration control, inputs, measurements.

The fake records every CuPy name the runner touches; when CuPy is installed, a test checks that
each of those names exists in the real CuPy, so the runner cannot drift to invented API names.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from calib.core.errors import BadInputError
from microbench.devices.base import Launch, RunResult
from microbench.kernels import catalog, peaks
from microbench.kernels.runner import KernelRunner, departure_delay_fit, pointer_chain

ACCESSED: set[str] = set()


class _Rec:
    """Wraps a namespace and records dotted attribute paths read through it."""

    def __init__(self, obj: Any, path: str) -> None:
        object.__setattr__(self, "_obj", obj)
        object.__setattr__(self, "_path", path)

    def __getattr__(self, name: str) -> Any:
        full = f"{self._path}.{name}"
        ACCESSED.add(full)
        val = getattr(self._obj, name)
        if isinstance(val, SimpleNamespace):
            return _Rec(val, full)
        return val


class FakeArray:
    _next_ptr = 0x7F0000000000

    def __init__(self, a: np.ndarray, ptr: int | None = None) -> None:
        self.a = a
        if ptr is None:
            ptr = FakeArray._next_ptr
            FakeArray._next_ptr += (a.nbytes + 4095) // 4096 * 4096 + 4096
        self.data = SimpleNamespace(ptr=ptr)

    def __setitem__(self, idx: Any, val: Any) -> None:
        idx = idx.a if isinstance(idx, FakeArray) else idx
        self.a[idx] = val.a if isinstance(val, FakeArray) else val

    def __getitem__(self, idx: Any) -> FakeArray:
        return FakeArray(np.atleast_1d(self.a[idx]), self.data.ptr)

    def view(self, dtype: Any) -> FakeArray:
        return FakeArray(self.a.view(dtype), self.data.ptr)

    def get(self) -> np.ndarray:
        return self.a.copy() if self.a.size != 1 else self.a.reshape(())[()]


class FakeGPU:
    """Virtual GPU time: kernels queue work; events stamp it; synchronize moves the wall clock."""

    def __init__(self, sm_count: int = 80, cc: str = "80", kernel_s: Callable[[str, tuple], float] | None = None):
        self.sm_count, self.cc = sm_count, cc
        self.gpu_t = 0.0
        self.wall = 0.0
        self.kernel_s = kernel_s or (lambda name, args: 1e-3)
        self.calls: list[tuple[str, tuple, tuple, tuple, int]] = []
        self.globals: dict[str, FakeArray] = {}
        self.modules: list[tuple[str, tuple]] = []

    def clock(self) -> float:
        return self.wall

    def module(self) -> _Rec:
        gpu = self
        attrs = {"MultiProcessorCount": self.sm_count, "ClockRate": 1_410_000, "MemoryClockRate": 1_215_000,
                 "GlobalMemoryBusWidth": 5120, "L2CacheSize": 40 << 20, "MaxSharedMemoryPerMultiprocessor": 167936,
                 "MaxSharedMemoryPerBlockOptin": 166912}
        runtime = SimpleNamespace(deviceGetAttribute=lambda attr, dev: attrs[attr],
                                  **{f"cudaDevAttr{k}": k for k in attrs})

        class Ctx:
            def __enter__(self):
                return self

            def __exit__(self, *a):
                return False

        class Device(Ctx):
            def __init__(self, idx):
                self.compute_capability = gpu.cc

            def use(self):
                pass

        class Stream(Ctx):
            def __init__(self, non_blocking=False):
                pass

            def synchronize(self):
                gpu.wall = max(gpu.wall, gpu.gpu_t)

        class Event:
            def __init__(self):
                self.t = None

            def record(self, stream=None):
                self.t = gpu.gpu_t

            def synchronize(self):
                gpu.wall = max(gpu.wall, self.t)

        class Kernel:
            def __init__(self, name):
                self.name = name
                self.max_dynamic_shared_size_bytes = 0
                self.shared_size_bytes = 2560 if name == "shared_rw" else 0

            def __call__(self, grid, block, args, shared_mem=0):
                gpu.calls.append((self.name, grid, block, args, shared_mem))
                gpu.gpu_t += gpu.kernel_s(self.name, args)
                _execute(self.name, grid, block, args)

        class RawModule:
            def __init__(self, code=None, options=()):
                gpu.modules.append((code, tuple(options)))

            def get_function(self, name):
                return Kernel(name)

            def get_global(self, name):
                arr = FakeArray(np.zeros(8192, dtype=np.float32))
                gpu.globals[name] = arr
                return arr

        class RandomState:
            def __init__(self, seed):
                self.rng = np.random.default_rng(seed)

            def uniform(self, low=0.0, high=1.0, size=None, dtype=float):
                return FakeArray(self.rng.uniform(low, high, size).astype(dtype))

        def ndarray(shape, dtype, memptr):
            n = int(np.prod(shape))
            return FakeArray(memptr.a.view(dtype)[:n].reshape(shape), memptr.data.ptr)

        cuda = SimpleNamespace(Device=Device, Stream=Stream, Event=Event, runtime=runtime,
                               get_elapsed_time=lambda e0, e1: (e1.t - e0.t) * 1e3)
        cp = SimpleNamespace(cuda=cuda, RawModule=RawModule, ndarray=ndarray,
                             zeros=lambda n, dtype=np.float32: FakeArray(np.zeros(n, dtype)),
                             asarray=lambda a: FakeArray(np.asarray(a)),
                             random=SimpleNamespace(RandomState=RandomState),
                             float32=np.float32, uint64=np.uint64)
        return _Rec(cp, "cupy")


def _execute(name: str, grid: tuple, block: tuple, args: tuple) -> None:
    """What the kernels write to ``out`` (enough to test how the runner reads it)."""
    out, iters = args[0], int(args[2])
    o64 = out.a.view(np.uint64)
    if name in ("pchase_ca", "pchase_cg", "pchase_shared"):
        o64[0] = iters * 8 * 250  # unroll 8 in the tests: 250 cycles per access
    elif name == "departure_delay":
        warps = grid[0] * block[0] // 32
        reqs = 8
        rank = np.random.default_rng(1).permutation(warps)
        o64[0:2 * warps:2] = 1000
        o64[1:2 * warps:2] = 1000 + 400 + 12 * reqs * rank
    elif name == "clock_spin":
        o64[0] = (int(args[6]) << 20) + int(args[7])


@pytest.fixture()
def gpu() -> FakeGPU:
    return FakeGPU()


def _runner(gpu: FakeGPU) -> KernelRunner:
    return KernelRunner(0, cupy_module=gpu.module(), clock=gpu.clock)


def test_device_facts(gpu: FakeGPU) -> None:
    r = _runner(gpu)
    assert (r.arch, r.sm_count, r.l2_bytes) == ("sm_80", 80, 40 << 20)
    assert r.sm_clock_hz == 1.41e9 and r.rates().dram_bytes_per_s == pytest.approx(2 * 1.215e9 * 640)


def test_prepare_builds_fixed_arguments_and_compiles_the_verified_text(gpu: FakeGPU) -> None:
    r = _runner(gpu)
    prep = r.prepare("dram", {"footprint_bytes": 1 << 20, "iters": 10}, Launch(160, 256, 80))
    out, data, iters, foot, fa, fb, ia, ib, never = prep.args
    assert isinstance(iters, np.int32) and iters == 10
    assert isinstance(fb, np.float32) and isinstance(ib, np.uint32)
    assert isinstance(foot, np.uint64) and foot == 1 << 20
    assert isinstance(fa, np.float32) and isinstance(ia, np.uint32) and math.isnan(never)
    assert data.a.dtype == np.float32 and data.a.nbytes == 1 << 20 and -1 <= data.a.min() < data.a.max() <= 1
    assert out.a.size == 160 * 256
    assert (prep.grid, prep.block, prep.shared_mem) == ((160, 1, 1), (256, 1, 1), 0)
    # the source CuPy compiles is self-contained (headers inlined) and carries the macros
    code, options = gpu.modules[-1]
    assert '#include' not in code and "dram_stream" in code
    assert options == ("-std=c++11", "-DILP=4", "-DK_FMA=8", "-DUNROLL=16")
    # same data for the same parameters: inputs are fixed, and shared between prepared kernels
    again = r.prepare("l2", {"footprint_bytes": 1 << 20, "iters": 10}, Launch(160, 256, 80))
    assert again.args[1] is data
    fresh = _runner(gpu).prepare("dram", {"footprint_bytes": 1 << 20, "iters": 10}, Launch(160, 256, 80))
    np.testing.assert_array_equal(fresh.args[1].a, data.a)
    assert prep.per_warp == catalog.get("dram").per_warp(prep.params)


def test_one_block_per_sm_for_partial_launches(gpu: FakeGPU) -> None:
    r = _runner(gpu)
    prep = r.prepare("fp32_fma", {}, Launch(4, 256, 4))
    assert prep.shared_mem == 167936 // 2 + 1
    assert prep.function.max_dynamic_shared_size_bytes == prep.shared_mem
    shared = r.prepare("shared", {}, Launch(4, 256, 4))
    assert shared.shared_mem + 2560 == 167936 // 2 + 1
    with pytest.raises(BadInputError, match=r"a launch on 4 of 80 SMs must use one block per SM"):
        r.prepare("fp32_fma", {}, Launch(8, 256, 4))
    with pytest.raises(BadInputError, match="threads_per_block must be a multiple of 32"):
        r.prepare("fp32_fma", {}, Launch(80, 100, 80))
    with pytest.raises(BadInputError, match=r"runs as one thread: use Launch\(1, 1, 1\)"):
        r.prepare("pchase_l1", {}, Launch(80, 256, 80))


def test_run_for_keeps_launching_until_the_duration(gpu: FakeGPU) -> None:
    r = _runner(gpu)
    prep = r.prepare("fp32_fma", {"iters": 100}, Launch(80, 256, 80))
    res = r.run_for(prep, 2.0)
    assert isinstance(res, RunResult)
    assert res.kernel_time_s == pytest.approx(1e-3)
    assert 2.0 <= res.launches * 1e-3 <= 2.0 + 0.25
    assert len(gpu.calls) == res.launches
    assert gpu.wall >= 2.0


def test_run_for_long_kernel_launches_once(gpu: FakeGPU) -> None:
    gpu.kernel_s = lambda name, args: 3.0
    r = _runner(gpu)
    res = r.run_for(r.prepare("fp32_fma", {}, Launch(80, 256, 80)), 1.0)
    assert res == RunResult(1, 3.0)
    with pytest.raises(BadInputError, match="duration_s must be a positive number"):
        r.run_for(r.prepare("fp32_fma", {}, Launch(80, 256, 80)), 0.0)


def test_calibrate_iters_scales_to_the_target(gpu: FakeGPU) -> None:
    gpu.kernel_s = lambda name, args: int(args[2]) * 1e-6
    r = _runner(gpu)
    assert r.calibrate_iters("fp32_fma", {"iters": 100}, Launch(80, 256, 80), target_launch_s=0.05) == 50000


def test_pointer_chase_chain_and_latency(gpu: FakeGPU) -> None:
    r = _runner(gpu)
    prep = r.prepare("pchase_l1", {"footprint_bytes": 8192, "stride_bytes": 128, "pattern": "random"},
                     Launch(1, 1, 1))
    buf = prep.args[1]
    base = buf.data.ptr
    words = buf.a.view(np.uint64)
    seen, p = set(), base
    for _ in range(64):  # follow the chain the kernel follows
        off = p - base
        assert off % 128 == 0 and 0 <= off < 8192
        seen.add(off)
        p = int(words[off // 8])
    assert len(seen) == 64 and p == base
    assert r.latency_cycles("pchase_l1", {"unroll": 8}) == pytest.approx(250.0)
    with pytest.raises(BadInputError, match="not a pointer-chase kernel"):
        r.latency_cycles("dram")


def test_pointer_chain_patterns() -> None:
    assert pointer_chain(4, "stride").tolist() == [1, 2, 3, 0]
    nxt = pointer_chain(1000, "random")
    k, seen = 0, set()
    for _ in range(1000):
        seen.add(k)
        k = int(nxt[k])
    assert k == 0 and len(seen) == 1000
    with pytest.raises(BadInputError, match="pattern must be"):
        pointer_chain(4, "zigzag")


def test_departure_delay_fit_recovers_latency_and_delay() -> None:
    rng = np.random.default_rng(0)
    rank = rng.permutation(256)
    lat = 420.0 + 9.0 * 4 * rank + rng.normal(0, 2, 256)
    fit = departure_delay_fit(lat, 4)
    assert fit["dm_lat_cycles"] == pytest.approx(420, abs=2)
    assert fit["dm_del_cycles"] == pytest.approx(9.0, abs=0.02)
    with pytest.raises(BadInputError, match="at least three"):
        departure_delay_fit([1.0, 2.0], 1)


def test_departure_delay_measurement(gpu: FakeGPU) -> None:
    r = _runner(gpu)
    fit = r.departure_delay({"footprint_bytes": 1 << 20}, Launch(80, 256, 80))
    assert fit["warps"] == 80 * 8
    assert fit["dm_lat_cycles"] == pytest.approx(400) and fit["dm_del_cycles"] == pytest.approx(12)


def test_sm_clock_from_spin(gpu: FakeGPU) -> None:
    gpu.kernel_s = lambda name, args: ((int(args[6]) << 20) + int(args[7])) / 1.5e9 if name == "clock_spin" else 1e-3
    r = _runner(gpu)
    assert r.measure_sm_clock_hz(1 << 24) == pytest.approx(1.5e9)


def test_throughput_against_peak(gpu: FakeGPU) -> None:
    r = _runner(gpu)
    spec = catalog.get("fp32_fma")
    launch = Launch(320, 256, 80)
    warps = 320 * 8
    dev = r.rates()
    peak = peaks.peak("fp2", dev)
    assert peak == pytest.approx(2 * 64 * 80 * 1.41e9)

    # a kernel time that gives exactly 50 % of peak at whatever iters calibration picks
    def kernel_s(name: str, args: tuple) -> float:
        p = spec.params(iters=int(args[2]))
        return spec.per_warp(p)["fp"] * warps * 64 / (0.5 * peak)

    gpu.kernel_s = kernel_s
    res = r.measure_throughput("fp32_fma", {}, duration_s=0.5, launch=launch)
    assert res["unit"] == "FLOP/s" and res["percent_of_peak"] == pytest.approx(50.0)
    lat = r.measure_throughput("pchase_l2", {"unroll": 8})
    assert lat == {"rate": pytest.approx(250.0), "unit": "cyc/load", "peak": None, "percent_of_peak": None}


def test_peaks_per_architecture() -> None:
    a100 = peaks.DeviceRates(80, 108, 1.41e9, 1.215e9, 5120)
    h100 = peaks.DeviceRates(90, 132, 1.98e9, 2.619e9, 5120)
    v100 = peaks.DeviceRates(70, 80, 1.53e9, 0.877e9, 4096)
    assert peaks.peak("fp2", a100) / 1e12 == pytest.approx(19.49, abs=0.01)      # A100 FP32 19.5 TFLOPS
    assert peaks.peak("dp2", h100) / 1e12 == pytest.approx(33.45, abs=0.01)      # H100 SXM FP64 (vector) 34 TFLOPS
    assert peaks.peak("tensor", v100) / 1e12 == pytest.approx(125.3, abs=0.1)    # V100 125 TFLOPS
    assert peaks.peak("tensor", a100) / 1e12 == pytest.approx(311.9, abs=0.1)    # A100 312 TFLOPS
    assert peaks.peak("dram", a100) / 1e9 == pytest.approx(1555.2, abs=0.1)      # A100 40 GB 1555 GB/s
    assert peaks.peak("dram", v100) / 1e9 == pytest.approx(898.0, abs=0.1)       # V100 900 GB/s
    assert peaks.peak("l2", h100) is None and peaks.peak("int", peaks.DeviceRates(61, 20, 1e9, 1e9, 256)) is None
    assert peaks.mma_flops(70) == 2048 and peaks.mma_flops(86) == 4096


def test_runner_uses_only_real_cupy_names(gpu: FakeGPU) -> None:
    ACCESSED.clear()
    gpu.kernel_s = lambda name, args: 1e-3
    r = _runner(gpu)
    launch = Launch(80, 256, 80)
    r.run_for(r.prepare("const", {}, launch), 0.05)
    r.run_for(r.prepare("mix", {"fp": 1, "const": 1, "footprint_bytes": 1 << 24}, Launch(4, 256, 4)), 0.05)
    r.latency_cycles("pchase_dram", {"iters": 2, "footprint_bytes": 1 << 16})
    r.latency_cycles("pchase_shared", {})
    r.departure_delay({"footprint_bytes": 1 << 20}, launch)
    r.measure_sm_clock_hz(1 << 20)
    r.close()
    cupy = pytest.importorskip("cupy")
    for path in sorted(ACCESSED):
        obj = cupy
        for part in path.split(".")[1:]:
            assert hasattr(obj, part), f"{path} is not a CuPy name"
            obj = getattr(obj, part)
    kernel_attrs = ("max_dynamic_shared_size_bytes", "shared_size_bytes")
    for a in kernel_attrs:
        assert hasattr(cupy.RawKernel, a)
    assert "shared_mem" in cupy.RawKernel.__call__.__doc__
    assert "non_blocking" in cupy.cuda.Stream.__init__.__doc__


def test_verify_gpu_reports_achieved_vs_peak(gpu: FakeGPU, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture) -> None:
    import os

    from microbench.__main__ import main
    from microbench.kernels import runner as runner_mod
    from microbench.toolchain import ToolchainError, Toolchains

    try:
        Toolchains().for_arch("sm_80")
    except ToolchainError as e:
        if os.environ.get("MICROBENCH_REQUIRE_TOOLCHAINS") == "1":
            raise
        pytest.skip(str(e))
    monkeypatch.setattr(runner_mod, "KernelRunner",
                        lambda idx: KernelRunner(idx, cupy_module=gpu.module(), clock=gpu.clock))
    rc = main(["verify", "--gpu", "0", "--kernel", "fp32_fma", "--kernel", "pchase_l2", "--duration", "0.05"])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0
    assert out[0].startswith("sm_80 (") and out[1].split()[-3:] == ["achieved", "of", "peak"]
    fma = next(line for line in out if line.startswith("fp32_fma")).split()
    assert fma[-2] == "FLOP/s" and fma[-1].endswith("%")
    chase = next(line for line in out if line.startswith("pchase_l2")).split()
    assert chase[-3:] == ["250", "cyc/load", "n/a"]
