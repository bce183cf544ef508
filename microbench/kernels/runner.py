"""Running the microbenchmark kernels on a real NVIDIA GPU with CuPy.

:class:`KernelRunner` compiles a kernel's source with ``cupy.RawModule`` (NVRTC; the kernel text
``python -m microbench verify`` checks, headers inlined), allocates its fixed inputs, launches it with a
:class:`~microbench.devices.base.Launch` and times it with CUDA events::

    runner = KernelRunner(0)
    prep = runner.prepare("fp32_fma", {"iters": 20000}, Launch(blocks=264, threads_per_block=256, active_sms=132))
    result = runner.run_for(prep, 10.0)        # RunResult(launches, kernel_time_s)
    runner.close()

Duration control: :meth:`KernelRunner.run_for` repeats launches back to back (at most two batches
of about 0.1 s queued, so the GPU never idles between batches) until the requested wall time has
passed; the per-launch time is probed by the first launch. The iteration count is never changed
behind the caller's back, because the per-warp instruction counts depend on it;
:meth:`KernelRunner.calibrate_iters` computes one from a short probe instead.

Active SMs: a launch on fewer SMs than the device has must use one block per SM
(``blocks == active_sms``). The runner then requests more than half of an SM's shared memory as
dynamic shared memory, so no SM can hold two blocks and every block lands on its own SM.

CuPy is imported lazily (:func:`import_cupy`), so this module imports without it.

AMD GPUs run the same kernels through CuPy for ROCm (``pip install cupy-rocm-7-0``, the ``gpu-rocm``
extra): ``cupy.cuda.runtime.is_hip`` is true, RawModule compiles the CUDA-dialect source with hiprtc
(the kernels' AMDGCN branch; no PTX asm, no jitify), the architecture is ``gcnArchName`` of
``getDeviceProperties`` (``gfx90a:sramecc+:xnack-`` -> ``gfx90a``) and the wave size its ``warpSize``.
A block must then be whole waves, and the memory kernels' per-trip window (4 x wave bytes per line)
must fit their working set. Peak rates are tabulated for NVIDIA GPUs only.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from calib.core.errors import BadInputError, DeviceError
from microbench.amdgcn import has_matrix_cores
from microbench.devices.base import Launch, RunResult
from microbench.kernels import catalog, peaks
from microbench.kernels.catalog import KernelSpec
from microbench.toolchain import BASE_OPTIONS, KERNEL_DIR, expand_includes

#: seed of the fixed input data (the data never depends on anything else)
DATA_SEED = 20240611
#: target duration of one batch of launches in run_for, s
BATCH_S = 0.1


def import_cupy() -> Any:
    """The ``cupy`` module, or a DeviceError saying how to get it."""
    try:
        import cupy
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise DeviceError("running kernels on a GPU needs CuPy: pip install cupy-cuda12x "
                          "(or the package matching your CUDA driver; cupy-rocm-7-0 for AMD GPUs)") from e
    return cupy


@dataclass
class PreparedKernel:
    """A kernel ready to launch: compiled function, arguments, buffers and launch shape."""

    name: str
    spec: KernelSpec
    params: dict[str, Any]
    launch: Launch
    function: Any
    args: tuple[Any, ...]
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_mem: int
    per_warp: dict[str, float]
    buffers: dict[str, Any] = field(default_factory=dict)

    @property
    def total_warps(self) -> int:
        return self.launch.blocks * self.launch.warps_per_block


def pointer_chain(n_elems: int, pattern: str, seed: int = DATA_SEED) -> np.ndarray:
    """Successor of each element of a single cycle through ``n_elems`` elements.

    ``stride``: element k is followed by k+1 (the last by 0). ``random``: a random single cycle
    (Sattolo's algorithm), which defeats prefetchers and DRAM row-buffer locality.
    """
    if n_elems < 2:
        raise BadInputError("a pointer chase needs at least two elements")
    if pattern == "stride":
        return (np.arange(n_elems, dtype=np.int64) + 1) % n_elems
    if pattern != "random":
        raise BadInputError(f"pattern must be 'stride' or 'random', not {pattern!r}")
    rng = np.random.default_rng(seed)
    perm = np.arange(n_elems, dtype=np.int64)
    for i in range(n_elems - 1, 0, -1):  # Sattolo: one cycle through all elements
        j = int(rng.integers(0, i))
        perm[i], perm[j] = perm[j], perm[i]
    nxt = np.empty(n_elems, dtype=np.int64)
    nxt[perm] = np.roll(perm, -1)
    return nxt


def departure_delay_fit(latencies_cycles: np.ndarray, transactions_per_warp: float) -> dict[str, float]:
    """Wang & Chu eq. (3) from one burst of warps: sorted latencies grow linearly with the rank.

    T(n) = dm_lat + dm_del x gld_trans x n for the n-th served warp, so a straight line through
    (rank, sorted latency) gives dm_del = slope / gld_trans and dm_lat = intercept (cycles).
    """
    lat = np.sort(np.asarray(latencies_cycles, dtype=float))
    if lat.size < 3:
        raise BadInputError("departure delay needs at least three warps' latencies")
    rank = np.arange(lat.size, dtype=float)
    slope, intercept = np.polyfit(rank, lat, 1)
    resid = lat - (intercept + slope * rank)
    return {"dm_lat_cycles": float(intercept), "dm_del_cycles": float(slope / transactions_per_warp),
            "warps": float(lat.size), "rms_residual_cycles": float(np.sqrt(np.mean(resid ** 2)))}


class KernelRunner:
    """Compiles, prepares and runs catalog kernels on CUDA device ``device_index`` (see module doc).

    ``cupy_module`` and ``clock`` (wall clock in s) can be injected for tests.
    """

    def __init__(self, device_index: int, *, cupy_module: Any = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        cp = cupy_module if cupy_module is not None else import_cupy()
        self._cp = cp
        self._clock = clock
        self.device_index = int(device_index)
        rt = cp.cuda.runtime
        self.is_hip = bool(getattr(rt, "is_hip", False))
        try:
            self.device = cp.cuda.Device(self.device_index)
            self.device.use()
            if self.is_hip:
                props = rt.getDeviceProperties(self.device_index)
            else:
                cc = str(self.device.compute_capability)
        except Exception as e:  # CuPy raises its own CUDARuntimeError types
            raise DeviceError(f"cuda:{device_index}: cannot open the device ({e})") from e
        if self.is_hip:
            # hipDeviceProp_t: the target with its features ("gfx90a:sramecc+:xnack-") and the wave size;
            # CuPy's compute_capability on HIP is a number derived from it, not an sm_ architecture
            name = props["gcnArchName"]
            self.arch = (name.decode() if isinstance(name, bytes) else str(name)).split(":")[0].strip().lower()
            self.cc = 0
            self.wave_size = int(props["warpSize"])
        else:
            self.cc = int(cc)
            self.arch = f"sm_{self.cc}"
            self.wave_size = 32

        def attr(name: str) -> int:
            return int(rt.deviceGetAttribute(getattr(rt, f"cudaDevAttr{name}"), self.device_index))

        self.sm_count = attr("MultiProcessorCount")
        self.sm_clock_hz = attr("ClockRate") * 1e3
        self.mem_clock_hz = attr("MemoryClockRate") * 1e3
        self.bus_bits = attr("GlobalMemoryBusWidth")
        self.l2_bytes = attr("L2CacheSize")
        self.smem_per_sm = attr("MaxSharedMemoryPerMultiprocessor")
        if self.is_hip:  # CuPy for ROCm has no cudaDevAttrMaxSharedMemoryPerBlockOptin
            self.smem_per_block_optin = int(props.get("sharedMemPerBlockOptin") or props["sharedMemPerBlock"])
        else:
            self.smem_per_block_optin = attr("MaxSharedMemoryPerBlockOptin")
        self.stream = cp.cuda.Stream(non_blocking=True)
        self._modules: dict[tuple[str, tuple[tuple[str, int], ...]], Any] = {}
        # read-only inputs are shared by every prepared kernel that needs the same data (a campaign
        # prepares dozens of workloads over 1 GiB working sets)
        self._data: dict[tuple[Any, ...], Any] = {}
        self._closed = False

    # -- device facts ------------------------------------------------------------------------
    def rates(self, sm_clock_hz: float | None = None) -> peaks.DeviceRates:
        if self.is_hip:
            raise DeviceError(f"cuda:{self.device_index} is an AMD GPU ({self.arch}): peak rates are tabulated "
                              f"for NVIDIA GPUs only")
        return peaks.DeviceRates(self.cc, self.sm_count, sm_clock_hz or self.sm_clock_hz, self.mem_clock_hz,
                                 self.bus_bits)

    # -- compile and prepare -----------------------------------------------------------------
    def module(self, spec: KernelSpec, params: Mapping[str, Any]) -> Any:
        """The RawModule of ``spec``'s source with its compile-time parameters (cached)."""
        macros = spec.compile_macros(params)
        key = (spec.source, tuple(sorted(macros.items())))
        mod = self._modules.get(key)
        if mod is None:
            code = expand_includes(KERNEL_DIR / spec.source)
            options = (*BASE_OPTIONS, *(f"-D{k}={v}" for k, v in sorted(macros.items())))
            mod = self._cp.RawModule(code=code, options=options)
            self._modules[key] = mod
        return mod

    def prepare(self, kernel_name: str, params: Mapping[str, Any], launch: Launch) -> PreparedKernel:
        """Compile (cached), allocate fixed inputs and build the launch of ``kernel_name``."""
        cp = self._cp
        spec = catalog.get(kernel_name)
        p = spec.params(**dict(params))
        self._check_launch(spec, launch)
        if self.is_hip:
            if spec.name == "tensor" and not has_matrix_cores(self.arch):
                raise BadInputError(f"tensor needs matrix instructions (CDNA v_mfma or RDNA3 v_wmma); "
                                    f"cuda:{self.device_index} is {self.arch}")
            problem = catalog.wave_window_error(spec, p, self.wave_size)
            if problem:
                raise BadInputError(f"{kernel_name} on {self.arch}: {problem}")
        elif self.cc < int(spec.min_arch.split("_")[1]):
            raise BadInputError(f"{kernel_name} needs {spec.min_arch}; cuda:{self.device_index} is {self.arch}")
        mod = self.module(spec, p)
        fn = mod.get_function(spec.entry)
        rt = spec.runtime_args(p)
        with self.device:
            data, buffers = self._inputs(spec, p, mod)
            out = cp.zeros(self._out_words(spec, p, launch), dtype=cp.float32)
        buffers["out"] = out
        buffers["data"] = data
        args = (out, data, np.int32(p["iters"]), np.uint64(rt["foot_bytes"]), np.float32(rt["fa"]),
                np.float32(rt["fb"]), np.uint32(rt["ia"] & 0xFFFFFFFF), np.uint32(rt["ib"] & 0xFFFFFFFF),
                np.float32(np.nan))
        shared = 0
        if launch.active_sms < self.sm_count:
            # static + dynamic shared memory above half an SM's: no SM can hold two blocks
            static = int(fn.shared_size_bytes)
            shared = max(0, min(self.smem_per_block_optin - static, self.smem_per_sm // 2 + 1 - static))
            fn.max_dynamic_shared_size_bytes = shared
        return PreparedKernel(kernel_name, spec, p, launch, fn, args, (launch.blocks, 1, 1),
                              (launch.threads_per_block, 1, 1), shared, spec.per_warp(p), buffers)

    def _check_launch(self, spec: KernelSpec, launch: Launch) -> None:
        tpb = launch.threads_per_block
        if spec.launch_note == "one thread":
            if (launch.blocks, tpb) != (1, 1):
                raise BadInputError(f"{spec.name} runs as one thread: use Launch(1, 1, 1)")
            return
        w = self.wave_size
        if tpb < w or tpb > 1024 or tpb % w:
            raise BadInputError(f"{spec.name}: threads_per_block must be a multiple of {w} in [{w}, 1024], not {tpb}")
        if not 1 <= launch.active_sms <= self.sm_count:
            raise BadInputError(f"active_sms must be in [1, {self.sm_count}], not {launch.active_sms}")
        if launch.active_sms < self.sm_count and launch.blocks != launch.active_sms:
            raise BadInputError(f"a launch on {launch.active_sms} of {self.sm_count} SMs must use one block per SM "
                                f"(blocks == active_sms), not {launch.blocks} blocks")

    def _out_words(self, spec: KernelSpec, p: Mapping[str, Any], launch: Launch) -> int:
        n_threads = launch.blocks * launch.threads_per_block
        if spec.entry == "departure_delay":
            return max(n_threads, 4 * int(p["iters"]) * launch.blocks * launch.warps_per_block)
        return max(n_threads, 4)

    def _inputs(self, spec: KernelSpec, p: Mapping[str, Any], mod: Any) -> tuple[Any, dict[str, Any]]:
        cp = self._cp
        buffers: dict[str, Any] = {}
        entry = spec.entry
        if entry in ("pchase_ca", "pchase_cg"):
            f, s = int(p["footprint_bytes"]), int(p["stride_bytes"])
            key = ("chain64", f, s, p["pattern"])
            if key not in self._data:
                n = f // s
                nxt = pointer_chain(n, p["pattern"])
                buf = cp.zeros(f // 8, dtype=cp.uint64)
                base = int(buf.data.ptr)
                idx = np.arange(n, dtype=np.int64) * (s // 8)
                buf[cp.asarray(idx)] = cp.asarray((base + nxt * s).astype(np.uint64))
                self._data[key] = buf
            return self._data[key], buffers
        if entry == "pchase_shared":
            f, s = int(p["footprint_bytes"]), int(p["stride_bytes"])
            n = f // s
            nxt = pointer_chain(n, p["pattern"])
            words = np.zeros(f // 4, dtype=np.uint32)
            words[np.arange(n) * (s // 4)] = (nxt * (s // 4)).astype(np.uint32)
            return cp.asarray(words), buffers
        if entry == "const_ld" or entry == "app_mix":
            name = "cbank" if entry == "const_ld" else "mix_cbank"
            n = 4096 + 2 * int(p["unroll"]) * int(p.get("ilp", 1))  # CONST_WORDS + CONST_NLOAD
            if entry == "app_mix":
                n = 4096 + int(catalog.mix_per_trip_ops(p)["const"]) + 1
            bank = cp.ndarray((n,), cp.float32, mod.get_global(name))
            bank[...] = cp.asarray(np.random.default_rng(DATA_SEED).uniform(-1.0, 1.0, n).astype(np.float32))
            buffers["cbank"] = bank
        foot = int(p.get("footprint_bytes", 0) or 0)
        if entry in ("const_ld",) or not foot:
            return cp.zeros(4, dtype=cp.float32), buffers
        key = ("floats", foot)
        if key not in self._data:
            self._data[key] = cp.random.RandomState(DATA_SEED).uniform(-1.0, 1.0, foot // 4, dtype=cp.float32)
        return self._data[key], buffers

    # -- running ------------------------------------------------------------------------------
    def _launch(self, prep: PreparedKernel, count: int) -> None:
        fn = prep.function
        for _ in range(count):
            fn(prep.grid, prep.block, prep.args, shared_mem=prep.shared_mem)

    def _timed(self, launch: Callable[[], None]) -> tuple[Any, Any]:
        """CUDA events recorded on the runner's stream around ``launch()`` (not waited for)."""
        e0, e1 = self._cp.cuda.Event(), self._cp.cuda.Event()
        with self.device, self.stream:
            e0.record(self.stream)
            launch()
            e1.record(self.stream)
        return e0, e1

    def time_launches(self, prep: PreparedKernel, count: int = 1) -> float:
        """Mean kernel time of ``count`` back-to-back launches, s (CUDA events; waits for them)."""
        e0, e1 = self._timed(lambda: self._launch(prep, count))
        e1.synchronize()
        return self._cp.cuda.get_elapsed_time(e0, e1) / 1e3 / count

    def run_for(self, prepared: PreparedKernel, duration_s: float) -> RunResult:
        """Launch ``prepared`` back to back for ``duration_s`` s of wall time (at least once).

        Returns the launches made and their mean kernel time (events around each batch).
        """
        if not duration_s > 0 or not math.isfinite(duration_s):
            raise BadInputError(f"duration_s must be a positive number of seconds, not {duration_s!r}")
        cp = self._cp
        t_end = self._clock() + duration_s
        launches = timed = 0
        kernel_s = 0.0
        per_launch: float | None = None
        pending: list[tuple[Any, Any, int]] = []
        batch = 1

        def drain_one() -> None:
            nonlocal kernel_s, timed, per_launch
            e0, e1, n = pending.pop(0)
            e1.synchronize()
            kernel_s += cp.cuda.get_elapsed_time(e0, e1) / 1e3
            timed += n
            per_launch = kernel_s / timed

        while True:
            if launches and self._clock() >= t_end:
                break
            if per_launch is not None:
                remaining = max(0.0, t_end - self._clock() - per_launch * sum(n for *_, n in pending))
                if launches and remaining <= 0:
                    break
                batch = max(1, min(int(BATCH_S / max(per_launch, 1e-9)), int(remaining / max(per_launch, 1e-9)) or 1))
            pending.append((*self._timed(lambda: self._launch(prepared, batch)), batch))
            launches += batch
            if per_launch is None or len(pending) >= 2:
                drain_one()
        while pending:
            drain_one()
        return RunResult(launches, kernel_s / timed)

    def calibrate_iters(self, kernel_name: str, params: Mapping[str, Any], launch: Launch,
                        target_launch_s: float = 0.05) -> int:
        """An ``iters`` giving launches of about ``target_launch_s`` s, from a short probe launch."""
        p = dict(params)
        spec = catalog.get(kernel_name)
        p.setdefault("iters", spec.params(**{k: v for k, v in p.items() if k != "iters"})["iters"])
        for _ in range(4):
            prep = self.prepare(kernel_name, p, launch)
            self.time_launches(prep, 1)  # warm-up (module load, clocks up)
            t = self.time_launches(prep, 1)
            new = int(min(2**31 - 1, max(1, round(p["iters"] * target_launch_s / max(t, 1e-7)))))
            if t > 0.2 * target_launch_s or new == p["iters"]:
                return new
            p["iters"] = new  # probe was too short to time well: probe again, longer
        return int(p["iters"])

    # -- measurements --------------------------------------------------------------------------
    def measure_sm_clock_hz(self, cycles: int = 1 << 27) -> float:
        """Average SM clock while one warp spins for ``cycles`` cycles, Hz (clock64 vs events)."""
        mod = self.module(KernelSpec("clock_spin", "util.cu", "clock_spin", "fds", {}, {}, macros={}), {})
        fn = mod.get_function("clock_spin")
        cp = self._cp
        out = cp.zeros(4, dtype=cp.float32)
        args = (out, out, np.int32(0), np.uint64(0), np.float32(0), np.float32(0),
                np.uint32(cycles >> 20), np.uint32(cycles & 0xFFFFF), np.float32(np.nan))
        e0, e1 = self._timed(lambda: fn((1, 1, 1), (32, 1, 1), args))
        e1.synchronize()
        spun = int(out.view(cp.uint64)[0].get())
        return spun / (cp.cuda.get_elapsed_time(e0, e1) / 1e3)

    def latency_cycles(self, kernel_name: str, params: Mapping[str, Any] | None = None) -> float:
        """Cycles per dependent access of a pointer-chase kernel (pchase_l1/l2/dram/shared)."""
        if not kernel_name.startswith("pchase_"):
            raise BadInputError(f"{kernel_name} is not a pointer-chase kernel")
        prep = self.prepare(kernel_name, dict(params or {}), Launch(1, 1, 1))
        self.time_launches(prep, 1)
        out = prep.buffers["out"].view(self._cp.uint64).get()
        steps = prep.params["iters"] * prep.params["unroll"]
        return float(out[0]) / steps

    def departure_delay(self, params: Mapping[str, Any] | None = None, launch: Launch | None = None) -> dict[str, float]:
        """Wang & Chu departure delay (and unloaded latency) in cycles from one burst of warps.

        Every warp of ``launch`` (default: 32 warps on every SM) issues ``reqs`` loads at once; the
        first trip's per-warp latencies are fitted by :func:`departure_delay_fit`.
        """
        launch = launch or Launch(self.sm_count * 4, 256, self.sm_count)
        prep = self.prepare("departure_delay", dict(params or {}), launch)
        self.time_launches(prep, 1)
        rec = prep.buffers["out"].view(self._cp.uint64).get()
        # one record per wave: blocks x threads / wave size (32-lane warps on NVIDIA)
        w = prep.launch.blocks * prep.launch.threads_per_block // self.wave_size
        t0, t1 = rec[0:2 * w:2].astype(np.int64), rec[1:2 * w:2].astype(np.int64)
        trans = prep.params["reqs"] * (self.wave_size if prep.params["lane_stride"] == 32 else 1)
        return departure_delay_fit((t1 - t0).astype(float), trans)

    def measure_throughput(self, kernel_name: str, params: Mapping[str, Any] | None = None,
                           duration_s: float = 1.0, launch: Launch | None = None) -> dict[str, Any]:
        """Achieved rate of the kernel's stressed unit and its share of the peak (verify --gpu)."""
        p = dict(params or {})
        if kernel_name.startswith("pchase_"):
            return peaks.Rate(self.latency_cycles(kernel_name, p), "cyc/load", None).to_dict()
        if kernel_name == "departure_delay":
            return peaks.Rate(self.departure_delay(p)["dm_del_cycles"], "cyc/txn", None).to_dict()
        launch = launch or Launch(self.sm_count * 4, 256, self.sm_count)
        if kernel_name != "idle":
            p["iters"] = self.calibrate_iters(kernel_name, p, launch, target_launch_s=0.02)
        prep = self.prepare(kernel_name, p, launch)
        res = self.run_for(prep, duration_s)
        if kernel_name == "idle":
            return peaks.Rate(1.0 / res.kernel_time_s, "launch/s", None).to_dict()
        rate = None if self.is_hip else peaks.achieved(kernel_name, prep.per_warp, prep.total_warps, 1,
                                                       res.kernel_time_s, self.rates())
        if rate is None:
            rate = peaks.Rate(sum(prep.per_warp.values()) * prep.total_warps / res.kernel_time_s, "warp-inst/s", None)
        return rate.to_dict()

    def close(self) -> None:
        """Wait for outstanding work and drop the modules and buffers."""
        if self._closed:
            return
        self._closed = True
        try:
            self.stream.synchronize()
        finally:
            self._modules.clear()
            self._data.clear()
