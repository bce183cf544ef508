"""The microbenchmark kernels: where each lives, what it stresses, and its per-warp instruction counts.

Each :class:`KernelSpec` names a CUDA source under ``microbench/kernels/`` and its entry function, and
carries a *count model*: the per-warp dynamic PTX instruction counts per class (see
:mod:`calib.core.units`) as a function of the kernel parameters. The same counts drive the virtual GPU, the
access-rate computation of the samples layer (IPP eq. 10) and, for real GPUs, are checked against the
PTX of every loop (``python -m microbench verify``; the tests compare them for sm_70, sm_80, sm_90).

Every kernel has the same skeleton (``common.cuh``): a prologue, ``iters`` trips of a hot loop whose
body is ``unroll`` steps of the stressed instructions (``ilp`` independent chains per step), then a
store guarded by a condition that is never true at run time (``v == NaN``), so the compiler cannot
remove the loop. Per warp::

    per_warp = prologue + sum over loops (trips x per-trip counts)
    per-trip counts of the hot loop = unroll x body(params) + overhead(params)

``overhead`` is the loop counter (add, setp, branch) plus the per-trip address update of the memory
kernels. ``prologue`` counts what runs once (parameter loads, index arithmetic, chain set-up, the
never-true compare and branch) at the default parameters of the reference compilers; it is a few
dozen instructions against ``iters x`` hundreds, so it is a constant here.

Parameters are either compile-time (``macros``: passed as ``-DNAME=value``, e.g. ``unroll``, ``ilp``)
or run-time (``iters``, ``footprint_bytes``, ...). :meth:`KernelSpec.runtime` gives the values of the
kernel's fixed scalar inputs, so the data a kernel works on never depends on anything but its
parameters.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from calib.core.errors import BadInputError

Counts = dict[str, float]

#: per-trip loop overhead of every kernel: counter increment, compare, branch
LOOP_OVERHEAD: Counts = {"int": 1.0, "alu": 1.0, "ctrl": 1.0}
#: per-trip address update of the streaming memory kernels: (off & mask), base + off, off + step
STREAM_UPDATE: Counts = {"int": 2.0, "alu": 1.0}
#: per-trip base update of the constant and local kernels: mul.wide, add.s64, add, and
INDEX_UPDATE: Counts = {"int": 3.0, "alu": 1.0}

#: bytes one warp moves with one 4-byte-per-lane coalesced load (a 128-byte line)
LINE_BYTES = 128

#: default FP chain constant c of x <- x*x + c (chaotic, stays in [-1.9, 1.9]) and start scale
CHAIN_C = -1.9
CHAIN_SCALE = 1.0 / 1024.0
#: LCG multiplier and increment of the integer kernels (Numerical Recipes)
LCG_A, LCG_B = 1664525, 1013904223


class UnknownParameterError(BadInputError, KeyError):
    """A kernel parameter name that the kernel does not have (also a KeyError, as before)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _add(acc: Counts, part: Mapping[str, float], times: float = 1.0) -> Counts:
    for k, v in part.items():
        acc[k] = acc.get(k, 0.0) + times * float(v)
    return acc


def _scaled(part: Mapping[str, float], times: float) -> Counts:
    return {k: float(v) * times for k, v in part.items()}


@dataclass(frozen=True)
class LoopModel:
    """One loop of a kernel: trips per launch and per-trip counts by class."""

    trips: float
    per_trip: Counts
    hot: bool = False


@dataclass(frozen=True)
class KernelSpec:
    """A microbenchmark kernel and its count model.

    ``body`` gives, for one unrolled step of the hot loop, the per-warp instruction counts by class
    (a callable of the parameters when the body depends on them). ``overhead`` is per trip,
    ``prologue`` per launch. ``loops`` (optional) replaces the single hot loop for kernels with
    several loops (e.g. a warm-up pass). ``traits`` tells a timing model how the kernel behaves.
    ``macros`` maps compile-time parameters to preprocessor macros. ``mem_level`` says where the
    kernel's global accesses are served (``l1``, ``l2``, ``dram``), which decides how the PTX
    classifier counts them. ``min_share`` is the smallest share of the ``stresses`` classes (or
    ``share_classes``) among the hot loop's instructions that verify accepts; ``load_op`` the cache
    operator every global load of the hot loop must carry (``ca``, ``cg``, ``nc``);
    ``footprint_rule`` how the working set must compare with the caches (``<=l1``, ``l1<f<=l2``,
    ``>l2``); ``verify_params`` the parameters verify compiles (defaults otherwise); ``hot_ops`` the
    PTX opcodes (prefixes, e.g. ``fma.rn.f32``) that count as the stressed unit's instructions when
    verify computes the share (the stressed classes when empty).
    """

    name: str
    source: str
    entry: str
    stresses: str
    body: Counts | Callable[[Mapping[str, Any]], Counts]
    defaults: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""
    traits: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
    min_arch: str = "sm_60"
    overhead: Counts | Callable[[Mapping[str, Any]], Counts] = field(default_factory=lambda: dict(LOOP_OVERHEAD))
    prologue: Counts = field(default_factory=dict)
    loops: Callable[[Mapping[str, Any]], list[LoopModel]] | None = None
    macros: Mapping[str, str] = field(default_factory=lambda: {"unroll": "UNROLL", "ilp": "ILP"})
    mem_level: str = "dram"
    share_classes: tuple[str, ...] = ()
    min_share: float = 0.9
    runtime: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
    validate: Callable[[Mapping[str, Any]], None] | None = None
    derive: Callable[[dict[str, Any]], None] | None = None
    launch_note: str = ""
    merge_classes: Mapping[str, str] = field(default_factory=dict)
    load_op: str | None = None
    footprint_rule: str | None = None
    verify_params: Mapping[str, Any] = field(default_factory=dict)
    macro_values: Callable[[Mapping[str, Any]], dict[str, int]] | None = None
    hot_ops: tuple[str, ...] = ()
    extra_macros: Mapping[str, int] = field(default_factory=dict)

    # -- parameters -------------------------------------------------------------------------
    def params(self, **overrides: Any) -> dict[str, Any]:
        """Default parameters updated with ``overrides`` (unknown names or bad values: BadInputError)."""
        p = dict(self.defaults)
        unknown = set(overrides) - set(p)
        if unknown:
            raise UnknownParameterError(f"{self.name}: unknown parameters {sorted(unknown)}; known: {sorted(p)}")
        p.update(overrides)
        if self.derive is not None and "iters" not in overrides:
            self.derive(p)
        _check_common(self.name, p)
        if self.validate is not None:
            self.validate(p)
        return p

    def compile_macros(self, params: Mapping[str, Any]) -> dict[str, int]:
        """Preprocessor macros (name -> integer value) of the compile-time parameters."""
        if self.macro_values is not None:
            return self.macro_values(params)
        # extra_macros: fixed values for macros of other kernels in the same source, so kernels
        # sharing a source and defaults share one compile
        out = dict(self.extra_macros)
        for pname, macro in self.macros.items():
            out[macro] = int(params[pname])
        return out

    def runtime_args(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Fixed scalar inputs: ``fa``, ``fb`` (float), ``ia``, ``ib`` (uint32), ``foot_bytes``."""
        base = {"fa": CHAIN_C, "fb": CHAIN_SCALE, "ia": 0, "ib": 0,
                "foot_bytes": int(params.get("footprint_bytes", 0) or 0)}
        if self.runtime is not None:
            base.update(self.runtime(params))
        return base

    # -- count model --------------------------------------------------------------------------
    def body_counts(self, params: Mapping[str, Any]) -> Counts:
        return dict(self.body(params) if callable(self.body) else self.body)

    def overhead_counts(self, params: Mapping[str, Any]) -> Counts:
        return dict(self.overhead(params) if callable(self.overhead) else self.overhead)

    def loop_models(self, params: Mapping[str, Any]) -> list[LoopModel]:
        """The kernel's loops in program order (the hot one flagged)."""
        if self.loops is not None:
            return self.loops(params)
        if not self.body_counts(params) and not params.get("iters"):
            return []
        per_trip = _add(_scaled(self.body_counts(params), float(params.get("unroll", 1))),
                        self.overhead_counts(params))
        return [LoopModel(float(params["iters"]), per_trip, hot=True)]

    def per_trip(self, params: Mapping[str, Any]) -> Counts:
        """Per-trip counts of the hot loop (what verify compares with the PTX loop body)."""
        for lp in self.loop_models(params):
            if lp.hot:
                return dict(lp.per_trip)
        return {}

    def per_warp(self, params: Mapping[str, Any]) -> Counts:
        """Per-warp dynamic instruction counts of one launch, by instruction class."""
        acc: Counts = {}
        _add(acc, self.prologue)
        for lp in self.loop_models(params):
            _add(acc, lp.per_trip, lp.trips)
        return {k: v for k, v in acc.items() if v}

    def is_hot_op(self, opcode: str) -> bool:
        """Whether a PTX opcode is one of the stressed unit's declared instructions."""
        return any(opcode == op or opcode.startswith(op + ".") for op in self.hot_ops)

    def stressed_share(self, counts: Mapping[str, float]) -> float:
        """Share of the stressed classes among all instructions of ``counts``."""
        total = sum(counts.values())
        classes = self.share_classes or (self.stresses,)
        return sum(counts.get(c, 0.0) for c in classes) / total if total else 0.0

    def kernel_traits(self, params: Mapping[str, Any]) -> dict[str, Any]:
        base = {"ilp": float(params.get("ilp", 1))}
        if self.traits is not None:
            base.update(self.traits(params))
        return base


# -- parameter checks ------------------------------------------------------------------------

def _is_pow2(v: Any) -> bool:
    return isinstance(v, (int,)) and not isinstance(v, bool) and v > 0 and (v & (v - 1)) == 0


def _check_common(name: str, p: Mapping[str, Any]) -> None:
    it = p.get("iters")
    if it is not None and (not isinstance(it, int) or isinstance(it, bool) or it < 0 or it > 2**31 - 1):
        raise BadInputError(f"{name}: iters must be an integer in [0, 2^31), not {it!r}")
    for key, hi in (("unroll", 256), ("ilp", 16)):
        v = p.get(key)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= hi):
            raise BadInputError(f"{name}: {key} must be an integer in [1, {hi}], not {v!r}")


def _window_bytes(p: Mapping[str, Any], loads_per_step: float, bytes_per_lane: int = 4) -> int:
    return int(p["unroll"] * loads_per_step * 32 * bytes_per_lane)


def _check_footprint(window: Callable[[Mapping[str, Any]], int]) -> Callable[[Mapping[str, Any]], None]:
    def check(p: Mapping[str, Any]) -> None:
        f = p["footprint_bytes"]
        w = window(p)
        if not _is_pow2(f) or f < w:
            raise BadInputError(f"footprint_bytes must be a power of two >= the per-trip window of {w} bytes "
                                f"(2 x unroll x ilp x 128 for the load kernels), not {f!r}")
        if not (_is_pow2(p["unroll"]) and _is_pow2(p.get("ilp", 1))):
            raise BadInputError("unroll and ilp of the memory kernels must be powers of two "
                                "(windows then tile the working set)")
    return check


# -- traits ------------------------------------------------------------------------------------

def _mem_traits(level: str, coalesced: bool = True, bytes_per_access: float = 4.0 * 32) -> Callable[
        [Mapping[str, Any]], dict[str, Any]]:
    def f(p: Mapping[str, Any]) -> dict[str, Any]:
        return {"mem_level": level, "coalesced": coalesced, "footprint_bytes": float(p.get("footprint_bytes", 0)),
                "bytes_per_access": bytes_per_access, "dependent_loads": bool(p.get("chase", False)),
                "ilp": float(p.get("ilp", 1))}
    return f


def _chase_traits(level: str) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    def f(p: Mapping[str, Any]) -> dict[str, Any]:
        return {"mem_level": level, "coalesced": True, "footprint_bytes": float(p["footprint_bytes"]),
                "stride_bytes": float(p["stride_bytes"]), "bytes_per_access": 8.0, "dependent_loads": True,
                "ilp": 1.0}
    return f


# -- bodies ------------------------------------------------------------------------------------

def _per_ilp(cls: str, per_chain: float) -> Callable[[Mapping[str, Any]], Counts]:
    return lambda p: {cls: per_chain * p["ilp"]}


def _pair_body(level: str) -> Callable[[Mapping[str, Any]], Counts]:
    # per chain: two loads consumed by one FMA
    return lambda p: {level: 2.0 * p["ilp"], "fp": 1.0 * p["ilp"]}


def _fma_intensity_body(p: Mapping[str, Any]) -> Counts:
    # mixbench-style: per loaded element k dependent FMAs and one add into the accumulator
    k = float(p["k"])
    return {"global": 1.0 * p["ilp"], "fp": (k + 1.0) * p["ilp"]}


#: per-trip overhead of the streaming memory kernels and of the constant and local kernels
_STREAM_OVERHEAD, _INDEX_OVERHEAD = _add(dict(LOOP_OVERHEAD), STREAM_UPDATE), _add(dict(LOOP_OVERHEAD), INDEX_UPDATE)


# -- mix ---------------------------------------------------------------------------------------

MIX_CLASSES: tuple[str, ...] = ("fp", "dp", "int", "sfu", "alu", "shared", "const", "tex", "l1", "l2", "global")
MIX_LOAD_CLASSES: tuple[str, ...] = ("const", "tex", "l1", "l2", "global")
MIX_MACROS = {c: f"MIX_{c.upper()}" for c in MIX_CLASSES}


def mix_per_trip_ops(p: Mapping[str, Any]) -> dict[str, int]:
    """Instructions of each mix class per trip (per-step count x unroll, an integer)."""
    return {c: round(float(p[c]) * p["unroll"]) for c in MIX_CLASSES}


def _mix_consumption(n: int, unroll: int) -> int:
    # loads of a class are split over the steps (step u gets floor((u+1)n/U) - floor(un/U)) and
    # consumed in pairs within a step: one fp instruction per pair and per odd one out
    return sum(math.ceil(((u + 1) * n // unroll - u * n // unroll) / 2) for u in range(unroll))


def _mix_loops(p: Mapping[str, Any]) -> list[LoopModel]:
    n = mix_per_trip_ops(p)
    u = int(p["unroll"])
    trip: Counts = {c: float(n[c]) for c in MIX_CLASSES if n[c]}
    consume = sum(_mix_consumption(n[c], u) for c in MIX_LOAD_CLASSES)
    if consume:
        trip["fp"] = trip.get("fp", 0.0) + consume
    _add(trip, LOOP_OVERHEAD)
    # one streaming address update per region read: the L1 one (tex, l1), the L2 one, the DRAM one
    _add(trip, STREAM_UPDATE, float(bool(n["tex"] or n["l1"]) + bool(n["l2"]) + bool(n["global"])))
    if n["const"]:
        # index update (mul.wide, add.s64, add, and) + the bank's address (mix.cu: one mov.u64 per trip)
        _add(trip, {"int": 3.0, "alu": 2.0})
    return [LoopModel(float(p["iters"]), trip, hot=True)]


def _mix_body(p: Mapping[str, Any]) -> Counts:
    # an application-like mix: per body step the given number of each class (as in the trip model)
    lp = _mix_loops(p)[0]
    return {c: v / p["unroll"] for c, v in _add(dict(lp.per_trip), LOOP_OVERHEAD, -1.0).items() if v}


def _mix_validate(p: Mapping[str, Any]) -> None:
    for c in MIX_CLASSES:
        v = p[c]
        if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0:
            raise BadInputError(f"mix: {c} must be a non-negative number of instructions per step, not {v!r}")
        per_trip = float(v) * p["unroll"]
        if abs(per_trip - round(per_trip)) > 1e-9:
            raise BadInputError(f"mix: {c} = {v} per step times unroll = {p['unroll']} is {per_trip:g} per trip; "
                                f"it must be a whole number (raise unroll)")
    if not _is_pow2(p["footprint_bytes"]) or p["footprint_bytes"] < (1 << 24):
        raise BadInputError("mix: footprint_bytes must be a power of two >= 16 MiB (the DRAM region)")
    if mix_per_trip_ops(p)["l2"] * (1 if p["coalesced"] else 32) * LINE_BYTES > (1 << 20):
        raise BadInputError("mix: l2 loads per trip exceed the 1 MiB L2 region; lower l2 or unroll")


def _mix_macros(p: Mapping[str, Any]) -> dict[str, int]:
    n = mix_per_trip_ops(p)
    out = {"UNROLL": int(p["unroll"]), "ILP": int(p["ilp"]), "MIX_LANE_STRIDE": 1 if p["coalesced"] else 32}
    out.update({MIX_MACROS[c]: n[c] for c in MIX_CLASSES})
    return out


def _mix_traits(p: Mapping[str, Any]) -> dict[str, Any]:
    return {"mem_level": "mixed", "coalesced": bool(p.get("coalesced", True)), "ilp": float(p.get("ilp", 2)),
            "bytes_per_access": 128.0 if p.get("coalesced", True) else 32 * 128.0}


# -- latency kernels ---------------------------------------------------------------------------

def _chase_validate(p: Mapping[str, Any]) -> None:
    f, s = p["footprint_bytes"], p["stride_bytes"]
    if not isinstance(s, int) or s < 8 or s % 8:
        raise BadInputError(f"stride_bytes must be a multiple of 8 (one pointer), not {s!r}")
    if not isinstance(f, int) or f < 2 * s:
        raise BadInputError(f"footprint_bytes must hold at least two elements of stride_bytes, not {f!r}")
    if p["pattern"] not in ("stride", "random"):
        raise BadInputError(f"pattern must be 'stride' or 'random', not {p['pattern']!r}")


def _chase_derive(p: dict[str, Any]) -> None:
    # default: enough trips for `passes` full passes over the chain
    elems = max(1, p["footprint_bytes"] // p["stride_bytes"])
    p["iters"] = max(1, -(-p.get("passes", 1) * elems // p["unroll"]))


def _chase_loops(level: str) -> Callable[[Mapping[str, Any]], list[LoopModel]]:
    def f(p: Mapping[str, Any]) -> list[LoopModel]:
        trip = _add({level: float(p["unroll"])}, LOOP_OVERHEAD)
        return [LoopModel(float(p["iters"]), trip), LoopModel(float(p["iters"]), dict(trip), hot=True)]
    return f


def _shared_chase_loops(p: Mapping[str, Any]) -> list[LoopModel]:
    # copy loop (one thread): load index (read-only path), scale and add the base, store to shared
    copy = {"tex": 1.0, "alu": 2.0, "int": 4.0, "shared": 1.0, "ctrl": 1.0}
    timed = _add({"shared": float(p["unroll"])}, LOOP_OVERHEAD)
    return [LoopModel(float(p["footprint_bytes"] // 4), copy), LoopModel(float(p["iters"]), timed, hot=True)]


def _shared_chase_validate(p: Mapping[str, Any]) -> None:
    _chase_validate(p)
    if p["footprint_bytes"] > 4 * 8192 or p["footprint_bytes"] % 4:
        raise BadInputError("pchase_shared: footprint_bytes must be a multiple of 4 and at most 32 KiB")


def _departure_loops(p: Mapping[str, Any]) -> list[LoopModel]:
    r = float(p["reqs"])
    trip = {"global": r + 2.0, "fp": r, "int": r + 4.0, "alu": 5.0, "ctrl": 2.0}
    return [LoopModel(float(p["iters"]), trip, hot=True)]


def _departure_validate(p: Mapping[str, Any]) -> None:
    if not isinstance(p["reqs"], int) or not 1 <= p["reqs"] <= 64:
        raise BadInputError(f"departure_delay: reqs must be an integer in [1, 64], not {p['reqs']!r}")
    if p["lane_stride"] not in (1, 32):
        raise BadInputError("departure_delay: lane_stride must be 1 (coalesced) or 32 (one line per lane)")
    w = p["reqs"] * 32 * p["lane_stride"] * 4
    if not _is_pow2(p["footprint_bytes"]) or p["footprint_bytes"] < w:
        raise BadInputError(f"departure_delay: footprint_bytes must be a power of two >= {w}")


# -- the catalog -------------------------------------------------------------------------------

_LOOP = {"iters": 4096, "unroll": 16, "ilp": 4}
_MEM_EXTRA = {"K_FMA": 8}
_LATENCY_EXTRA = {"UNROLL": 8, "REQS": 8, "LANE_STRIDE": 1}
_COMPUTE_RT = {"fa": CHAIN_C, "fb": CHAIN_SCALE}


def _stream_spec(name: str, entry: str, level: str, stresses: str, cls: str, foot: int, desc: str,
                 load_op: str, rule: str, min_share: float = 0.6) -> KernelSpec:
    def window(p: Mapping[str, Any]) -> int:
        return _window_bytes(p, 2 * p["ilp"])

    return KernelSpec(name, "mem.cu", entry, stresses, _pair_body(cls), {**_LOOP, "footprint_bytes": foot}, desc,
                      _mem_traits("tex" if cls == "tex" else level), overhead=_STREAM_OVERHEAD, mem_level=level, min_share=min_share,
                      runtime=lambda p: {"fb": CHAIN_SCALE}, validate=_check_footprint(window),
                      load_op=load_op, footprint_rule=rule, extra_macros=_MEM_EXTRA)


KERNELS: dict[str, KernelSpec] = {k.name: k for k in [
    KernelSpec("idle", "idle.cu", "idle_kernel", "fds", {}, {"iters": 0, "unroll": 1},
               "launch-only kernel: measures kernel-activation power with almost no work",
               macros={}, min_share=0.0),
    KernelSpec("fp32_fma", "fp32.cu", "fp32_fma", "fp", _per_ilp("fp", 1), _LOOP,
               "FP32 FMA chains x <- x*x + c (fma.rn.f32), ilp independent chains per thread",
               runtime=lambda p: _COMPUTE_RT),
    KernelSpec("fp32_addmul", "fp32.cu", "fp32_addmul", "fp", _per_ilp("fp", 2), _LOOP,
               "FP32 mul then add chains x <- x*x + c without contraction (mul.rn.f32 / add.rn.f32)",
               runtime=lambda p: _COMPUTE_RT),
    KernelSpec("fp64_fma", "fp64.cu", "fp64_fma", "dp", _per_ilp("dp", 1), _LOOP,
               "FP64 FMA chains x <- x*x + c (fma.rn.f64)",
               runtime=lambda p: _COMPUTE_RT),
    KernelSpec("int_mad", "int.cu", "int_mad", "int", _per_ilp("int", 1), _LOOP,
               "INT32 multiply-add chains x <- a*x + b (mad.lo.s32), a, b given at run time",
               runtime=lambda p: {"ia": LCG_A, "ib": LCG_B}),
    KernelSpec("alu_logic", "alu.cu", "alu_logic", "alu", _per_ilp("alu", 6), _LOOP,
               "logic and shift chains: xorshift32 (shl/shr/xor)"),
    KernelSpec("sfu", "sfu.cu", "sfu_mix", "sfu", _per_ilp("sfu", 7), _LOOP,
               "special functions via intrinsics: x <- sin(lg2(ex2(ex2(ex2(rsqrt(cos(x)))))))",
               runtime=lambda p: _COMPUTE_RT),
    KernelSpec("reg_mov", "reg.cu", "reg_mov", "reg", lambda p: {"alu": 3.0 * p["live_regs"]},
               {"iters": 1024, "unroll": 4, "ilp": 4, "live_regs": 64},
               "register-file heavy: live_regs live registers in ilp rows updated by the chi step "
               "x[j] ^= ~x[j-1] & x[j+1] (three register operands per update)",
               macros={"unroll": "UNROLL", "ilp": "ILP", "live_regs": "LIVE_REGS"},
               share_classes=("alu",), runtime=lambda p: {"ia": 0x9E3779B9},
               validate=lambda p: _reg_validate(p)),
    KernelSpec("ctrl", "ctrl.cu", "ctrl_branch", "fds", _per_ilp("ctrl", 1), _LOOP,
               "warp barriers (bar.warp.sync -1): fetch/decode/schedule with no register traffic",
               share_classes=("ctrl",)),
    KernelSpec("shared", "shared.cu", "shared_rw", "shared", _per_ilp("shared", 2), {**_LOOP, "conflict_ways": 1},
               "shared-memory volatile loads/stores; conflict_ways > 1 gives conflict_ways-way bank conflicts",
               macros={"unroll": "UNROLL", "ilp": "ILP", "conflict_ways": "CONFLICT_WAYS"},
               runtime=lambda p: {"fb": 1.0}, validate=lambda p: _shared_validate(p)),
    KernelSpec("const", "const.cu", "const_ld", "const", lambda p: {"const": 2.0 * p["ilp"], "fp": 1.0 * p["ilp"]},
               {**_LOOP, "footprint_bytes": 1024},
               "warp-uniform constant-cache loads (ld.const) from a moving base, consumed in pairs by FMAs",
               overhead=_INDEX_OVERHEAD, min_share=0.6,
               runtime=lambda p: {"fb": CHAIN_SCALE, "ia": 2 * p["unroll"] * p["ilp"],
                                  "ib": p["footprint_bytes"] // 4 - 1},
               validate=lambda p: _const_validate(p)),
    _stream_spec("tex", "tex_ldg", "l1", "tex", "tex", 16384,
                 "read-only data cache loads (ld.global.nc) over a small working set", "nc", "<=l1"),
    _stream_spec("l1", "l1_hit", "l1", "l1", "l1", 16384,
                 "global loads that hit L1 (ld.global.ca, small working set)", "ca", "<=l1"),
    _stream_spec("l2", "l2_hit", "l2", "l2", "l2", 1 << 20,
                 "global loads that bypass L1 and hit L2 (ld.global.cg, working set between L1 and L2)",
                 "cg", "l1<f<=l2"),
    _stream_spec("dram", "dram_stream", "dram", "global", "global", 1 << 30,
                 "streaming loads (ld.global.cg) over a working set far larger than L2", "cg", ">l2"),
    KernelSpec("local", "local.cu", "local_spill", "local", _per_ilp("local", 2), {**_LOOP, "local_words": 256},
               "local-memory traffic from a dynamically indexed per-thread array (ld/st.local, as spills)",
               _mem_traits("local"), overhead=_INDEX_OVERHEAD, macros={"unroll": "UNROLL", "ilp": "ILP", "local_words": "LOCAL_WORDS"},
               runtime=lambda p: {"fb": 1.0, "ia": 2 * p["unroll"] * p["ilp"], "ib": 0},
               validate=lambda p: _local_validate(p)),
    KernelSpec("fma_intensity", "mem.cu", "fma_intensity", "global", _fma_intensity_body,
               {"iters": 1024, "unroll": 16, "ilp": 4, "k": 8, "footprint_bytes": 1 << 30},
               "mixbench-style arithmetic-intensity sweep: k dependent FMAs per loaded element (ld.global.cg)",
               _mem_traits("dram"), overhead=_STREAM_OVERHEAD, macros={"unroll": "UNROLL", "ilp": "ILP", "k": "K_FMA"}, min_share=0.0,
               share_classes=("global",), runtime=lambda p: {"fa": CHAIN_C, "fb": CHAIN_SCALE},
               validate=lambda p: _intensity_validate(p), load_op="cg", footprint_rule=">l2"),
    KernelSpec("bw_stream", "mem.cu", "bw_stream", "global", lambda p: {"global": 1.0 * p["ilp"], "fp": 2.0 * p["ilp"]},
               {"iters": 1024, "unroll": 16, "ilp": 4, "footprint_bytes": 1 << 30},
               "streaming bandwidth: 16-byte vector loads (ld.global.cg.v4.f32, 512 bytes per warp request)",
               _mem_traits("dram", bytes_per_access=512.0), overhead=_STREAM_OVERHEAD, min_share=0.3, runtime=lambda p: {"fb": CHAIN_SCALE},
               validate=_check_footprint(lambda p: _window_bytes(p, p["ilp"], 16)), load_op="cg",
               footprint_rule=">l2", extra_macros=_MEM_EXTRA),
    KernelSpec("tensor", "tensor.cu", "tensor_mma", "tensor", _per_ilp("tensor", 1), _LOOP,
               "tensor-core mma.sync, FP16 inputs, FP32 accumulation (m8n8k4 sm_70, m16n8k8 sm_75, "
               "m16n8k16 sm_80+)", None, "sm_70", runtime=lambda p: {"fb": 1.0 / 64}),
    KernelSpec("mix", "mix.cu", "app_mix", "mixed", _mix_body,
               {"iters": 1024, "unroll": 4, "ilp": 2, "coalesced": True, "footprint_bytes": 1 << 30,
                "fp": 0, "dp": 0, "int": 0, "sfu": 0, "alu": 0, "shared": 0, "const": 0, "tex": 0, "l1": 0,
                "l2": 0, "global": 0},
               "application-like instruction mix (held-out workloads): per-step counts of each class",
               _mix_traits, overhead={}, loops=_mix_loops,
               macros={"unroll": "UNROLL", "ilp": "ILP", **MIX_MACROS}, mem_level="l1", min_share=0.0,
               runtime=lambda p: {"fa": CHAIN_C, "fb": CHAIN_SCALE, "ia": LCG_A, "ib": 0},
               validate=_mix_validate, merge_classes={"global": "l2"}, macro_values=_mix_macros,
               verify_params={"fp": 4, "dp": 0.25, "int": 1, "sfu": 1, "alu": 2, "shared": 1, "const": 1.5,
                              "tex": 0.5, "l1": 1, "l2": 0.5, "global": 0.25}),
    KernelSpec("pchase_l1", "latency.cu", "pchase_ca", "l1", {"l1": 1},
               {"iters": 64, "unroll": 8, "footprint_bytes": 8192, "stride_bytes": 128, "pattern": "stride",
                "passes": 8},
               "L1 latency: pointer chase p <- *p (ld.global.ca), warm-up pass then timed pass; one thread",
               _chase_traits("l1"), loops=_chase_loops("l1"), macros={"unroll": "UNROLL"}, extra_macros=_LATENCY_EXTRA,
               mem_level="l1", min_share=0.6, validate=_chase_validate, derive=_chase_derive,
               launch_note="one thread", load_op="ca", footprint_rule="<=l1"),
    KernelSpec("pchase_l2", "latency.cu", "pchase_cg", "l2", {"l2": 1},
               {"iters": 1024, "unroll": 8, "footprint_bytes": 1 << 20, "stride_bytes": 128, "pattern": "stride",
                "passes": 1},
               "L2 latency: pointer chase (ld.global.cg) over a working set between L1 and L2; one thread",
               _chase_traits("l2"), loops=_chase_loops("l2"), macros={"unroll": "UNROLL"}, extra_macros=_LATENCY_EXTRA,
               mem_level="l2", min_share=0.6, validate=_chase_validate, derive=_chase_derive,
               launch_note="one thread", load_op="cg", footprint_rule="l1<f<=l2"),
    KernelSpec("pchase_dram", "latency.cu", "pchase_cg", "global", {"global": 1},
               {"iters": 8192, "unroll": 8, "footprint_bytes": 1 << 28, "stride_bytes": 4096, "pattern": "random",
                "passes": 1},
               "DRAM latency: pointer chase (ld.global.cg) over a working set far larger than L2; one thread",
               _chase_traits("dram"), loops=_chase_loops("global"), macros={"unroll": "UNROLL"}, extra_macros=_LATENCY_EXTRA,
               mem_level="dram", min_share=0.6, validate=_chase_validate, derive=_chase_derive,
               launch_note="one thread", load_op="cg", footprint_rule=">l2"),
    KernelSpec("pchase_shared", "latency.cu", "pchase_shared", "shared", {"shared": 1},
               {"iters": 128, "unroll": 8, "footprint_bytes": 4096, "stride_bytes": 128, "pattern": "stride",
                "passes": 32},
               "shared-memory latency: pointer chase (ld.shared.u32) through a chain copied to shared memory",
               None, loops=_shared_chase_loops, macros={"unroll": "UNROLL"}, extra_macros=_LATENCY_EXTRA,
               min_share=0.6, validate=_shared_chase_validate, derive=_chase_derive, launch_note="one thread"),
    KernelSpec("departure_delay", "latency.cu", "departure_delay", "global", {},
               {"iters": 1, "reqs": 8, "lane_stride": 1, "footprint_bytes": 1 << 30},
               "Wang & Chu queueing: per warp reqs back-to-back ld.global.cg with start/end clock64 stamps",
               _mem_traits("dram"), loops=_departure_loops,
               macros={"reqs": "REQS", "lane_stride": "LANE_STRIDE"}, extra_macros=_LATENCY_EXTRA,
               mem_level="dram", min_share=0.2,
               runtime=lambda p: {"fb": 0.0}, validate=_departure_validate, load_op="cg", footprint_rule=">l2"),
]}


#: per-launch counts outside the loops at the default parameters, from the PTX of nvcc 13 for sm_80
#: (identical for sm_70/NVRTC 12 and sm_90 except: tensor on sm_70 sets up 8 accumulators per mma
#: instead of 4, and shared, mix, pchase_shared differ by one instruction)
PROLOGUES: dict[str, Counts] = {
    "idle": {"ctrl": 1},
    "fp32_fma": {"alu": 8, "const": 5, "ctrl": 3, "fp": 7, "int": 3},
    "fp32_addmul": {"alu": 8, "const": 5, "ctrl": 3, "fp": 7, "int": 3},
    "fp64_fma": {"alu": 11, "const": 4, "ctrl": 3, "dp": 7, "int": 3},
    "int_mad": {"alu": 12, "const": 5, "ctrl": 3, "int": 4},
    "alu_logic": {"alu": 7, "const": 2, "ctrl": 3, "int": 9},
    "sfu": {"alu": 8, "const": 4, "ctrl": 3, "fp": 7, "int": 3},
    "reg_mov": {"alu": 8, "const": 3, "ctrl": 3, "int": 176},
    "ctrl": {"alu": 4, "const": 3, "ctrl": 3},
    "shared": {"alu": 7, "const": 4, "ctrl": 3, "int": 1, "shared": 6},
    "const": {"alu": 5, "const": 6, "ctrl": 3, "fp": 6},
    "tex": {"alu": 13, "const": 6, "ctrl": 3, "fp": 6, "int": 6},
    "l1": {"alu": 13, "const": 6, "ctrl": 3, "fp": 6, "int": 6},
    "l2": {"alu": 13, "const": 6, "ctrl": 3, "fp": 6, "int": 6},
    "dram": {"alu": 13, "const": 6, "ctrl": 3, "fp": 6, "int": 6},
    "local": {"alu": 8, "const": 6, "ctrl": 3, "int": 2, "local": 97},
    "fma_intensity": {"alu": 13, "const": 7, "ctrl": 3, "fp": 6, "int": 6},
    "bw_stream": {"alu": 12, "const": 6, "ctrl": 3, "fp": 6, "int": 7},
    "tensor": {"alu": 31, "const": 3, "ctrl": 3, "fp": 22},
    "mix": {"alu": 49, "const": 9, "ctrl": 3, "fp": 17, "int": 13, "shared": 2},
    "pchase_l1": {"alu": 6, "const": 3, "ctrl": 3, "int": 1, "l2": 3},
    "pchase_l2": {"alu": 6, "const": 3, "ctrl": 3, "int": 1, "l2": 3},
    "pchase_dram": {"alu": 6, "const": 3, "ctrl": 3, "global": 3, "int": 1},
    "pchase_shared": {"alu": 15, "const": 4, "ctrl": 4, "global": 2, "int": 1},
    "departure_delay": {"alu": 15, "const": 6, "ctrl": 3, "int": 9},
}
#: PTX opcodes of each kernel's stressed unit (what the verify share counts)
HOT_OPS: dict[str, tuple[str, ...]] = {
    "fp32_fma": ("fma.rn.f32",),
    "fp32_addmul": ("mul.rn.f32", "add.rn.f32"),
    "fp64_fma": ("fma.rn.f64",),
    "int_mad": ("mad.lo.s32", "mad.lo.u32"),
    "alu_logic": ("shl.b32", "shr.u32", "shr.b32", "xor.b32"),
    "sfu": ("sin.approx", "cos.approx", "rsqrt.approx", "ex2.approx", "lg2.approx"),
    "reg_mov": ("not.b32", "and.b32", "xor.b32"),
    "ctrl": ("bar.warp.sync",),
    "shared": ("ld.volatile.shared", "st.volatile.shared"),
    "const": ("ld.const",),
    "tex": ("ld.global.nc",),
    "l1": ("ld.global.ca",),
    "l2": ("ld.global.cg",),
    "dram": ("ld.global.cg",),
    "local": ("ld.local", "st.local"),
    "fma_intensity": ("ld.global.cg",),
    "bw_stream": ("ld.global.cg.v4",),
    "tensor": ("mma.sync",),
    "pchase_l1": ("ld.global.ca",),
    "pchase_l2": ("ld.global.cg",),
    "pchase_dram": ("ld.global.cg",),
    "pchase_shared": ("ld.shared",),
    "departure_delay": ("ld.global.cg",),
}
KERNELS = {name: replace(spec, prologue={k: float(v) for k, v in PROLOGUES[name].items()},
                         hot_ops=HOT_OPS.get(name, ()))
           for name, spec in KERNELS.items()}

# -- AMD (python -m microbench verify --arch gfx90a,gfx942,gfx1100) ------------------------------

_GFX9_LOAD, _GFX11_LOAD = ("global_load_dword",), ("global_load_b32",)


def _same_ops(*ops: str) -> dict[str, tuple[str, ...]]:
    """The same mnemonics on gfx9 and gfx11."""
    return {"gfx9": ops, "gfx11": ops}


#: AMDGCN instructions of each kernel's stressed unit per ISA family (mnemonics without the encoding
#: suffix; microbench.amdgcn.generation: gfx9 = GCN5/CDNA1-2, gfx940 = CDNA3, gfx11 = RDNA3). The
#: verify share counts them (a packed v_pk_*_f32 twice), and the hot loop must hold unroll x the body's
#: count of the stressed unit of them (memory instructions of AMD_COUNT_DWORDS kernels by dwords).
AMD_HOT_OPS: dict[str, dict[str, tuple[str, ...]]] = {
    "fp32_fma": {"gfx9": ("v_pk_fma_f32", "v_fma_f32", "v_fmac_f32"),
                 "gfx11": ("v_fma_f32", "v_fmac_f32", "v_fmaak_f32", "v_fmamk_f32")},
    # v_mad_f32 / v_mac_f32: gfx9's unfused multiply-add (a multiply and an add, counted twice)
    "fp32_addmul": {"gfx9": ("v_pk_mul_f32", "v_pk_add_f32", "v_mul_f32", "v_add_f32", "v_mad_f32", "v_mac_f32"),
                    "gfx11": ("v_mul_f32", "v_add_f32")},
    "fp64_fma": _same_ops("v_fma_f64"),
    # one multiply per mad: v_mul_lo_u32 (+ a v_add_u32) on gfx9, v_mad_u64_u32 on gfx11
    "int_mad": {"gfx9": ("v_mul_lo_u32", "v_mad_u32_u24", "v_mad_u64_u32"),
                "gfx11": ("v_mad_u64_u32", "v_mul_lo_u32", "v_mad_u32_u24")},
    "alu_logic": _same_ops("v_lshlrev_b32", "v_lshrrev_b32", "v_xor_b32"),
    "sfu": _same_ops("v_exp_f32", "v_log_f32", "v_rsq_f32", "v_sin_f32", "v_cos_f32"),
    "reg_mov": _same_ops("v_not_b32", "v_and_b32", "v_xor_b32"),
    "ctrl": _same_ops("s_nop"),
    "shared": {"gfx9": ("ds_read_b32", "ds_write_b32"), "gfx11": ("ds_load_b32", "ds_store_b32")},
    "const": {"gfx9": ("s_load_dword", "s_load_dwordx2", "s_load_dwordx4", "s_load_dwordx8", "s_load_dwordx16"),
              "gfx11": ("s_load_b32", "s_load_b64", "s_load_b128", "s_load_b256", "s_load_b512")},
    **{k: {"gfx9": _GFX9_LOAD, "gfx11": _GFX11_LOAD} for k in ("tex", "l1", "l2", "dram")},
    "local": {"gfx9": ("buffer_load_dword", "buffer_store_dword", "buffer_load_dwordx2", "buffer_store_dwordx2",
                       "buffer_load_dwordx4", "buffer_store_dwordx4", "scratch_load_dword", "scratch_store_dword",
                       "scratch_load_dwordx2", "scratch_store_dwordx2", "scratch_load_dwordx4",
                       "scratch_store_dwordx4"),
              "gfx11": ("scratch_load_b32", "scratch_store_b32", "scratch_load_b64", "scratch_store_b64",
                        "scratch_load_b128", "scratch_store_b128")},
    "fma_intensity": {"gfx9": _GFX9_LOAD, "gfx11": _GFX11_LOAD},
    "bw_stream": {"gfx9": ("global_load_dwordx4",), "gfx11": ("global_load_b128",)},
    "tensor": {"gfx9": ("v_mfma_f32_16x16x16f16", "v_mfma_f32_16x16x16_f16"), "gfx11": ("v_wmma_f32_16x16x16_f16",)},
    "pchase_l1": {"gfx9": ("global_load_dwordx2",), "gfx11": ("global_load_b64",)},
    "pchase_l2": {"gfx9": ("global_load_dwordx2",), "gfx11": ("global_load_b64",)},
    "pchase_dram": {"gfx9": ("global_load_dwordx2",), "gfx11": ("global_load_b64",)},
    "pchase_shared": {"gfx9": ("ds_read_b32",), "gfx11": ("ds_load_b32",)},
    "departure_delay": {"gfx9": _GFX9_LOAD, "gfx11": _GFX11_LOAD},
}
#: kernels whose per-thread words the AMD compiler merges into wide accesses (scratch_load_dwordx4,
#: s_load_dwordx16): their unit count is in dwords, one per 4-byte access of the source
AMD_COUNT_DWORDS: frozenset[str] = frozenset({"const", "local"})
_OFFSET_WHY = ("global_load's immediate offset is 13-bit signed (+-4 KiB), so a trip's window needs 64-bit base "
               "adds (v_add_co_u32 + v_addc_co_u32) that PTX's [reg+imm32] addressing does not")
#: per ISA family, (smallest hot-loop share, why) where the AMD ISA needs more than the unit's own
#: instructions (the kernel's min_share otherwise)
AMD_MIN_SHARE: dict[str, dict[str, tuple[float, str]]] = {
    "int_mad": {"gfx9": (0.45, "gfx9 has no 32-bit integer multiply-add: v_mul_lo_u32 then v_add_u32 per mad")},
    "const": {"gfx9": (0.45, "a gfx9 VALU instruction reads one SGPR (one constant-bus read): the second scalar "
                             "operand of each FMA is first copied to a VGPR (v_mov_b32)")},
    **{k: {"gfx9": (0.55, _OFFSET_WHY), "gfx11": (0.55, _OFFSET_WHY)} for k in ("tex", "l1", "l2", "dram")},
    "bw_stream": {"gfx9": (0.25, _OFFSET_WHY), "gfx11": (0.25, _OFFSET_WHY)},
}
#: parameters verify compiles for AMD targets instead of verify_params, and why
AMD_VERIFY_PARAMS: dict[str, tuple[dict[str, Any], str]] = {
    "l1": ({"unroll": 8}, "a wave64 window at unroll 16 is 32 KiB, twice the 16 KiB working set and MI250X's L1"),
    "tex": ({"unroll": 8}, "a wave64 window at unroll 16 is 32 KiB, twice the 16 KiB working set and MI250X's L1"),
}


def _reg_validate(p: Mapping[str, Any]) -> None:
    lr = p["live_regs"]
    if not isinstance(lr, int) or not 8 <= lr <= 200 or lr % p["ilp"] or lr // p["ilp"] < 3:
        raise BadInputError(f"reg_mov: live_regs must be an integer in [8, 200], a multiple of ilp with at "
                            f"least 3 registers per row, not {lr!r}")


def _shared_validate(p: Mapping[str, Any]) -> None:
    w = p["conflict_ways"]
    if w not in (1, 2, 4, 8, 16, 32):
        raise BadInputError(f"shared: conflict_ways must be 1, 2, 4, 8, 16 or 32, not {w!r}")
    if (p["ilp"] + 1) * 32 * w * 4 > 48 * 1024:
        raise BadInputError("shared: (ilp + 1) x 32 x conflict_ways words exceed 48 KiB of shared memory")


def _const_validate(p: Mapping[str, Any]) -> None:
    f = p["footprint_bytes"]
    if not _is_pow2(f) or f > 16384 or f < 8 * p["unroll"] * p["ilp"]:
        raise BadInputError(f"const: footprint_bytes must be a power of two in [8 x unroll x ilp, 16384], not {f!r}")


def _local_validate(p: Mapping[str, Any]) -> None:
    lw = p["local_words"]
    if not _is_pow2(lw) or lw < 2 * p["unroll"] * p["ilp"] or lw > 8192:
        raise BadInputError(f"local: local_words must be a power of two in [2 x unroll x ilp, 8192], not {lw!r}")


def _intensity_validate(p: Mapping[str, Any]) -> None:
    k = p["k"]
    if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k <= 1024:
        raise BadInputError(f"fma_intensity: k must be an integer in [0, 1024], not {k!r}")
    _check_footprint(lambda q: _window_bytes(q, q["ilp"]))(p)


def wave_window_error(spec: KernelSpec, params: Mapping[str, Any], wave: int) -> str | None:
    """Why the window a ``wave``-lane wave (AMD wave64) reads per trip exceeds the working set, or None.

    The kernels' validation checks the window of 32-lane warps; a window grows with the lanes (a
    line is 4 x lanes bytes), so the same validation on a working set scaled by 32 / wave is the
    check for the wave.
    """
    if wave <= 32 or not spec.footprint_rule or "footprint_bytes" not in params:
        return None
    try:
        spec.params(**{**params, "footprint_bytes": int(params["footprint_bytes"]) * 32 // wave})
    except BadInputError as e:
        return f"wave{wave}: the per-trip window exceeds the working set ({e})"
    return None


def get(name: str) -> KernelSpec:
    """The kernel spec called ``name``."""
    try:
        return KERNELS[name]
    except KeyError:
        raise KeyError(f"unknown kernel {name!r}; known: {', '.join(KERNELS)}") from None
