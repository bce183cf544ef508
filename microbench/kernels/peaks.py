"""Theoretical peak throughput per architecture, and a kernel's achieved rate in the same unit.

Per-SM, per-clock rates (results per clock cycle per multiprocessor) come from the CUDA C++
Programming Guide's arithmetic-instruction throughput table (FP32, FP64, 32-bit integer
multiply-add, logic/shift, special functions) and from NVIDIA's architecture whitepapers (tensor
cores: dense FP16 inputs with FP32 accumulation; L1 and shared memory: 128 bytes per clock per SM;
L2: 2048 bytes/clock on V100, 5120 on A100; none published for H100). The chip peak is::

    peak = per_SM_per_clock x SM count x SM clock          (compute, L1, shared)
    peak = bytes_per_clock x SM clock                      (L2)
    peak = 2 x memory clock x bus width / 8                (DRAM: double data rate)

with the SM clock the device's maximum (``cudaDevAttrClockRate``) unless a measured clock is
given, and the memory clock and bus width from ``cudaDevAttrMemoryClockRate`` and
``cudaDevAttrGlobalMemoryBusWidth`` (for HBM and GDDR alike these give the data rate with the
factor 2). Architectures not in the tables report the achieved rate without a percentage.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

#: thread-level results per clock per SM, by compute capability (CUDA C++ Programming Guide; the
#: integer multiply-add is "multiple instructions" before Volta, hence no entry)
LANES_PER_SM_CLK: dict[str, dict[int, float]] = {
    "fp": {60: 64, 61: 128, 70: 64, 75: 64, 80: 64, 86: 128, 87: 128, 89: 128, 90: 128},
    "dp": {60: 32, 61: 4, 70: 32, 75: 2, 80: 32, 86: 2, 87: 2, 89: 2, 90: 64},
    "int": {70: 64, 75: 64, 80: 64, 86: 64, 87: 64, 89: 64, 90: 64},
    "alu": {60: 64, 61: 128, 70: 64, 75: 64, 80: 64, 86: 64, 87: 64, 89: 64, 90: 64},
    "sfu": {60: 16, 61: 32, 70: 16, 75: 16, 80: 16, 86: 16, 87: 16, 89: 16, 90: 16},
    # one warp instruction issued per scheduler per clock, four schedulers per SM
    "ctrl": {60: 64, 61: 128, 70: 128, 75: 128, 80: 128, 86: 128, 87: 128, 89: 128, 90: 128},
}
#: dense FP16-input, FP32-accumulate tensor FLOP per clock per SM (V100, T4, A100, H100 whitepapers)
TENSOR_FLOP_PER_SM_CLK: dict[int, float] = {70: 1024, 75: 1024, 80: 2048, 90: 4096}
#: flops of one warp-wide mma.sync of the shape tensor.cu uses on that architecture
MMA_FLOPS_PER_WARP: dict[int, float] = {70: 2048, 75: 2048, 80: 4096}
#: L1 / shared memory bytes per clock per SM
L1_BYTES_PER_SM_CLK: dict[int, float] = {70: 128, 80: 128, 86: 128, 87: 128, 89: 128, 90: 128}
SHARED_BYTES_PER_SM_CLK: dict[int, float] = {60: 128, 61: 128, 70: 128, 75: 128, 80: 128, 86: 128, 87: 128,
                                             89: 128, 90: 128}
#: L2 bytes per clock (whole chip)
L2_BYTES_PER_CLK: dict[int, float] = {70: 2048, 80: 5120}


def mma_flops(cc: int) -> float:
    """FLOPs of one warp-wide mma.sync as tensor.cu issues it on compute capability ``cc``."""
    return MMA_FLOPS_PER_WARP[max(k for k in MMA_FLOPS_PER_WARP if k <= cc)] if cc >= 70 else 0.0


@dataclass(frozen=True)
class DeviceRates:
    """What the peaks depend on: compute capability (e.g. 80), SMs, clocks in Hz, bus width in bits."""

    cc: int
    sm_count: int
    sm_clock_hz: float
    mem_clock_hz: float
    bus_bits: int

    @property
    def dram_bytes_per_s(self) -> float:
        return 2.0 * self.mem_clock_hz * self.bus_bits / 8.0


@dataclass(frozen=True)
class Rate:
    """An achieved rate and the matching peak (None when the architecture has no published figure)."""

    value: float
    unit: str
    peak: float | None

    @property
    def percent_of_peak(self) -> float | None:
        return 100.0 * self.value / self.peak if self.peak else None

    def to_dict(self) -> dict[str, object]:
        return {"rate": self.value, "unit": self.unit, "peak": self.peak, "percent_of_peak": self.percent_of_peak}


#: how each kernel's achieved rate is expressed: (instruction class, unit, work per warp instruction,
#: peak kind). Work per warp instruction: 32 lanes x (2 flops for FMA), bytes for memory.
RATE_KINDS: dict[str, tuple[str, str, float, str]] = {
    "fp32_fma": ("fp", "FLOP/s", 64.0, "fp2"),
    "fp32_addmul": ("fp", "FLOP/s", 32.0, "fp"),
    "fp64_fma": ("dp", "FLOP/s", 64.0, "dp2"),
    "int_mad": ("int", "op/s", 32.0, "int"),
    "alu_logic": ("alu", "op/s", 32.0, "alu"),
    "reg_mov": ("alu", "op/s", 32.0, "alu"),
    "sfu": ("sfu", "op/s", 32.0, "sfu"),
    "ctrl": ("ctrl", "op/s", 32.0, "ctrl"),
    "shared": ("shared", "B/s", 128.0, "shared"),
    "const": ("const", "warp-ld/s", 1.0, "none"),
    "tex": ("tex", "B/s", 128.0, "l1"),
    "l1": ("l1", "B/s", 128.0, "l1"),
    "l2": ("l2", "B/s", 128.0, "l2"),
    "dram": ("global", "B/s", 128.0, "dram"),
    "fma_intensity": ("global", "B/s", 128.0, "dram"),
    "bw_stream": ("global", "B/s", 512.0, "dram"),
    "local": ("local", "B/s", 128.0, "dram"),
    "tensor": ("tensor", "FLOP/s", 0.0, "tensor"),
}


def peak(kind: str, dev: DeviceRates) -> float | None:
    """Theoretical peak of ``kind`` (see RATE_KINDS) on ``dev``, in the unit of RATE_KINDS."""
    cc, sms, f = dev.cc, dev.sm_count, dev.sm_clock_hz
    if kind in ("fp", "dp", "int", "alu", "sfu", "ctrl"):
        lanes = LANES_PER_SM_CLK[kind].get(cc)
        return lanes * sms * f if lanes else None
    if kind in ("fp2", "dp2"):
        lanes = LANES_PER_SM_CLK[kind[:-1]].get(cc)
        return 2.0 * lanes * sms * f if lanes else None
    per_sm = {"tensor": TENSOR_FLOP_PER_SM_CLK, "shared": SHARED_BYTES_PER_SM_CLK, "l1": L1_BYTES_PER_SM_CLK}
    if kind in per_sm:
        v = per_sm[kind].get(cc)
        return v * sms * f if v else None
    if kind == "l2":
        v = L2_BYTES_PER_CLK.get(cc)
        return v * f if v else None
    if kind == "dram":
        return dev.dram_bytes_per_s if dev.mem_clock_hz and dev.bus_bits else None
    return None


def achieved(kernel: str, per_warp: Mapping[str, float], warps: float, launches: int, seconds: float,
             dev: DeviceRates) -> Rate | None:
    """Achieved rate of ``kernel``'s stressed unit over ``launches`` launches of ``warps`` warps that
    took ``seconds`` of kernel time, with the device's peak; None for kernels without a rate."""
    if kernel not in RATE_KINDS or seconds <= 0:
        return None
    cls, unit, work, kind = RATE_KINDS[kernel]
    if kernel == "tensor":
        work = mma_flops(dev.cc)
    value = per_warp.get(cls, 0.0) * warps * launches * work / seconds
    return Rate(value, unit, peak(kind, dev))
