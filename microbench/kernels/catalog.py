"""The microbenchmark kernels: where each lives, what it stresses, and its per-warp instruction counts.

Each :class:`KernelSpec` names a CUDA source under ``microbench/kernels/`` and its entry function, and
carries a *count model*: the per-warp dynamic instruction counts per class (see
:mod:`calib.units`) as a function of the kernel parameters. The same counts drive the virtual GPU, the
access-rate computation of the samples layer (IPP eq. 10) and, for real GPUs, are checked against the
PTX of the kernel's hot loop (``python -m microbench verify``).

Every kernel has the same skeleton: a prologue (index arithmetic), ``iters`` trips of a loop whose body
is the stressed instruction repeated ``unroll`` times, then a store guarded by a condition that is never
true at run time (so the compiler cannot remove the loop). Loop overhead per trip: one integer add
(counter), one ``setp`` (ALU) and one branch (ctrl).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

Counts = dict[str, float]

#: per-trip loop overhead: counter increment, compare, branch
LOOP_OVERHEAD: Counts = {"int": 1.0, "alu": 1.0, "ctrl": 1.0}
#: prologue + guarded epilogue (thread index, bounds, the never-true store's compare and branch)
PROLOGUE: Counts = {"int": 4.0, "alu": 4.0, "ctrl": 2.0}


def _add(acc: Counts, part: Mapping[str, float], times: float = 1.0) -> None:
    for k, v in part.items():
        acc[k] = acc.get(k, 0.0) + times * float(v)


@dataclass(frozen=True)
class KernelSpec:
    """A microbenchmark kernel and its count model.

    ``body`` gives, for one unrolled step of the loop body, the per-warp instruction counts by class
    (a callable of the parameters when the body depends on them). ``traits`` tells a timing model how
    the kernel behaves (dependency chains, memory footprint, coalescing).
    """

    name: str
    source: str
    entry: str
    stresses: str
    body: Counts | Callable[[Mapping[str, Any]], Counts]
    defaults: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""
    traits: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
    min_arch: str = "sm_70"

    def params(self, **overrides: Any) -> dict[str, Any]:
        p = dict(self.defaults)
        unknown = set(overrides) - set(p)
        if unknown:
            raise KeyError(f"{self.name}: unknown parameters {sorted(unknown)}; known: {sorted(p)}")
        p.update(overrides)
        return p

    def body_counts(self, params: Mapping[str, Any]) -> Counts:
        return dict(self.body(params)) if callable(self.body) else dict(self.body)

    def per_warp(self, params: Mapping[str, Any]) -> Counts:
        """Per-warp dynamic instruction counts of one launch, by instruction class."""
        iters = float(params["iters"])
        unroll = float(params.get("unroll", 1))
        acc: Counts = {}
        _add(acc, PROLOGUE)
        _add(acc, self.body_counts(params), iters * unroll)
        _add(acc, LOOP_OVERHEAD, iters)
        return {k: v for k, v in acc.items() if v}

    def kernel_traits(self, params: Mapping[str, Any]) -> dict[str, Any]:
        base = {"ilp": float(params.get("ilp", 1))}
        if self.traits is not None:
            base.update(self.traits(params))
        return base


def _mem_traits(level: str, coalesced: bool = True) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    def f(p: Mapping[str, Any]) -> dict[str, Any]:
        return {"mem_level": level, "coalesced": coalesced, "footprint_bytes": float(p.get("footprint_bytes", 0)),
                "bytes_per_access": 4.0 * 32, "dependent_loads": bool(p.get("chase", False)),
                "ilp": float(p.get("ilp", 1))}
    return f


def _fma_intensity_body(p: Mapping[str, Any]) -> Counts:
    # mixbench-style: per loaded element k dependent FMAs, one coalesced load (DRAM) and the address add
    k = float(p["k"])
    return {"global": 1.0, "fp": k, "int": 1.0}


def _mix_body(p: Mapping[str, Any]) -> Counts:
    # an application-like mix: per body step the given number of each class
    return {c: float(p[c]) for c in ("fp", "dp", "int", "sfu", "alu", "shared", "const", "tex", "l1", "l2", "global")
            if float(p.get(c, 0))}


def _mix_traits(p: Mapping[str, Any]) -> dict[str, Any]:
    return {"mem_level": "mixed", "coalesced": bool(p.get("coalesced", True)), "ilp": float(p.get("ilp", 2)),
            "bytes_per_access": 128.0}


_LOOP = {"iters": 4096, "unroll": 16, "ilp": 4}

KERNELS: dict[str, KernelSpec] = {k.name: k for k in [
    KernelSpec("idle", "idle.cu", "idle_kernel", "fds", {}, {"iters": 0, "unroll": 1},
               "launch-only kernel: measures kernel-activation power with almost no work"),
    KernelSpec("fp32_fma", "fp32.cu", "fp32_fma", "fp", {"fp": 1}, _LOOP,
               "FP32 FMA chains (fma.rn.f32), ilp independent chains per thread"),
    KernelSpec("fp32_addmul", "fp32.cu", "fp32_addmul", "fp", {"fp": 1}, _LOOP,
               "alternating FP32 add and mul (add.f32 / mul.f32)"),
    KernelSpec("fp64_fma", "fp64.cu", "fp64_fma", "dp", {"dp": 1}, _LOOP, "FP64 FMA chains (fma.rn.f64)"),
    KernelSpec("int_mad", "int.cu", "int_mad", "int", {"int": 1}, _LOOP, "INT32 multiply-add chains (mad.lo.s32)"),
    KernelSpec("alu_logic", "alu.cu", "alu_logic", "alu", {"alu": 1}, _LOOP, "logic and shift chains (xor/shl/and)"),
    KernelSpec("sfu", "sfu.cu", "sfu_mix", "sfu", {"sfu": 1}, _LOOP,
               "special functions via intrinsics (__sinf, __cosf, rsqrtf, exp2f, log2f)"),
    KernelSpec("reg_mov", "reg.cu", "reg_mov", "reg", {"alu": 1}, _LOOP,
               "register-file heavy: rotations of many live registers (mov.b32)"),
    KernelSpec("ctrl", "ctrl.cu", "ctrl_branch", "fds", {"ctrl": 1}, _LOOP,
               "uniform branches: fetch/decode/schedule without register traffic"),
    KernelSpec("shared", "shared.cu", "shared_rw", "shared", {"shared": 1}, {**_LOOP, "conflict_ways": 1},
               "shared-memory loads/stores; conflict_ways > 1 adds bank conflicts"),
    KernelSpec("const", "const.cu", "const_ld", "const", {"const": 1}, _LOOP, "constant-cache loads (ld.const), uniform address"),
    KernelSpec("tex", "tex.cu", "tex_ldg", "tex", {"tex": 1}, {**_LOOP, "footprint_bytes": 8192},
               "read-only data cache loads (__ldg / ld.global.nc) over a small working set",
               _mem_traits("tex")),
    KernelSpec("l1", "mem.cu", "l1_hit", "l1", {"l1": 1}, {**_LOOP, "footprint_bytes": 8192},
               "global loads that hit L1 (ld.global.ca, small working set)", _mem_traits("l1")),
    KernelSpec("l2", "mem.cu", "l2_hit", "l2", {"l2": 1}, {**_LOOP, "footprint_bytes": 1 << 20},
               "global loads that bypass L1 and hit L2 (ld.global.cg, working set between L1 and L2)",
               _mem_traits("l2")),
    KernelSpec("dram", "mem.cu", "dram_stream", "global", {"global": 1, "int": 1},
               {**_LOOP, "footprint_bytes": 1 << 30},
               "streaming loads (ld.global.cg) over a working set far larger than L2", _mem_traits("dram")),
    KernelSpec("local", "local.cu", "local_spill", "local", {"local": 1}, _LOOP,
               "local-memory traffic from a dynamically indexed per-thread array (spills)", _mem_traits("local")),
    KernelSpec("fma_intensity", "mem.cu", "fma_intensity", "global", _fma_intensity_body,
               {"iters": 1024, "unroll": 8, "ilp": 1, "k": 8, "footprint_bytes": 1 << 30},
               "mixbench-style arithmetic-intensity sweep: k dependent FMAs per loaded element",
               _mem_traits("dram")),
    KernelSpec("tensor", "tensor.cu", "tensor_mma", "tensor", {"tensor": 1}, _LOOP,
               "tensor-core mma.sync (Volta+)", None, "sm_70"),
    KernelSpec("mix", "mix.cu", "app_mix", "mixed", _mix_body,
               {"iters": 1024, "unroll": 1, "ilp": 2, "coalesced": True, "fp": 0, "dp": 0, "int": 0, "sfu": 0,
                "alu": 0, "shared": 0, "const": 0, "tex": 0, "l1": 0, "l2": 0, "global": 0},
               "application-like instruction mix (held-out workloads)", _mix_traits),
]}


def get(name: str) -> KernelSpec:
    """The kernel spec called ``name``."""
    try:
        return KERNELS[name]
    except KeyError:
        raise KeyError(f"unknown kernel {name!r}; known: {', '.join(KERNELS)}") from None
