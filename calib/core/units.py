"""Architectural units of the IPP power model and how per-warp instruction counts map onto them.

A *kernel description* gives per-warp dynamic instruction counts by class (IPP paper 004, Table 1;
thesis Table 7), extended with FP64 (``dp``), tensor cores and the cache levels of Fermi and later GPUs. One deviation from
Table 7: ``ex2``/``lg2`` count as SFU instructions, because every GPU since Fermi executes them on the
SFU/MUFU pipe (Table 7 predates that and puts them on the FP unit). Each memory
instruction is counted once, at the level that served it: ``l1`` (L1 hit), ``l2`` (L2 hit) or
``global`` (DRAM). On GPUs without data caches (GT200) every global access is ``global``.

Two further units are derived, as in Table 1: the register file (``reg``), touched by every instruction
that reads or writes registers (everything except control flow), and fetch/decode/schedule (``fds``),
touched by every instruction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

#: Instruction classes of a kernel description (per-warp dynamic counts).
#: independent chains per class of a design kernel (enough to issue at full rate at 32 warps per SM;
#: the campaign's design kernels are built with it, and calib.fit.design predicts their rows with it)
DESIGN_ILP = 4
#: classes of the mix kernel a design may combine (calib.fit.design's candidates; the campaign's all-pipes
#: training mix, TRAINING_MIXES of the campaign plan): memory levels beyond L1 are bandwidth-bound, a mix
#: with them measures the memory, not the pipes
DESIGN_CLASSES = ("fp", "dp", "int", "sfu", "alu", "shared", "const", "tex", "l1")

INSTRUCTION_CLASSES: tuple[str, ...] = (
    "fp",      # FP32 add/sub/mul/fma/mad/min/max/abs/neg
    "dp",      # FP64 arithmetic
    "int",     # integer add/sub/mul/mad/sad/div/rem/min/abs
    "sfu",     # sin, cos, rcp, sqrt, rsqrt, ex2, lg2 approximations (special function unit)
    "tensor",  # mma / wmma (tensor cores, Volta and later)
    "alu",     # logic, shift, mov, cvt, set/setp/selp
    "ctrl",    # branches, barriers, exit: they only use fetch/decode/schedule
    "shared",  # ld.shared / st.shared
    "const",   # ld.const
    "tex",     # tex / read-only data cache (ld.global.nc)
    "l1",      # global loads served by L1
    "l2",      # global loads/stores served by L2
    "global",  # global loads/stores served by DRAM
    "local",   # ld.local / st.local (register spills)
)

#: Units the power model has a MaxPower for, in report order.
POWER_UNITS: tuple[str, ...] = (
    "fp", "dp", "int", "sfu", "tensor", "alu", "reg", "fds",
    "shared", "const", "tex", "l1", "l2", "global", "local",
)

#: The power model's dispatch stage: a unit whose activity is derived from the other units' (the SM
#: pipes' summed access rate, calib.model.ipp), not from instruction counts.
DISPATCH_UNIT = "dispatch"
#: Units whose activity the power model derives from the other units' rather than from instruction counts.
DERIVED_UNITS: frozenset[str] = frozenset({DISPATCH_UNIT})

#: Units whose MaxPower is chip-level rather than per SM (shared L2 and the DRAM interface).
CHIP_UNITS: frozenset[str] = frozenset({"l2", "global", "local"})

#: Relative die-area priors (GT200-class floorplan estimates, per SM; chip units per chip): they seed
#: MaxPower in the power fit (the share of a unit in the runtime power of a kernel that saturates it) and
#: size the blocks of the generic floorplan (:func:`calib.model.floorplan.ipp_floorplan`).
DIE_AREA_PRIOR: dict[str, float] = {
    "fp": 0.20, "dp": 0.25, "int": 0.25, "sfu": 0.5, "tensor": 1.0, "alu": 0.2, "reg": 0.3, "fds": 0.5,
    "shared": 1.0, "const": 0.4, "tex": 0.9, "l1": 1.0, "l2": 10.0, "global": 50.0, "local": 50.0,
}

#: Memory instructions for IPP eq. (20), MemAccess_intensity = Memory_Insts / NonMemory_Insts.
MEMORY_CLASSES: frozenset[str] = frozenset({"l1", "l2", "global", "local"})

#: Classes that do not read or write the register file.
_NO_REG: frozenset[str] = frozenset({"ctrl"})

_MEM_DOMAIN_TOKENS = ("dram", "global", "local", "mem")


def in_memory_domain(unit: str, mem_units: frozenset[str] | set[str] | None = None) -> bool:
    """Whether a unit belongs to the memory clock domain.

    By the samples-table contract a unit whose name contains ``dram``, ``global``, ``local`` or
    ``mem`` (any case) is a memory-domain unit, unless ``mem_units`` lists the memory units explicitly.
    """
    if mem_units is not None:
        return unit in mem_units
    low = unit.lower()
    return any(tok in low for tok in _MEM_DOMAIN_TOKENS)


#: IPP's units as instruction classes (Table 1): one unit per class, except that branches (``ctrl``) only use
#: fetch/decode/schedule; ``reg`` counts every class that reads or writes registers, ``fds`` every class.
#: Other GPU families map classes onto their own units (:class:`calib.core.arch.UnitSet`).
IPP_UNIT_CLASSES: dict[str, tuple[str, ...]] = {
    u: ((u,) if u in INSTRUCTION_CLASSES else INSTRUCTION_CLASSES if u == "fds"
        else tuple(c for c in INSTRUCTION_CLASSES if c not in _NO_REG))
    for u in POWER_UNITS
}


def unit_counts(per_warp: Mapping[str, Any], size: int | None = None,
                unit_classes: Mapping[str, Sequence[str]] | None = None) -> dict[str, Any]:
    """Per-warp dynamic access counts per power unit (DAC_per_th of IPP eq. 11).

    ``per_warp`` maps instruction classes to per-warp dynamic counts, numbers or arrays (one entry per
    kernel; give ``size``, their length, so that units without counts get arrays of zeros). Unknown
    classes raise ``KeyError`` so that a typo cannot silently drop instructions. ``unit_classes`` maps
    each unit to the classes it counts (a device's :class:`calib.core.arch.UnitSet`, recorded as
    ``device.unit_classes``); by default IPP's (:data:`IPP_UNIT_CLASSES`): counts for every unit of
    :data:`POWER_UNITS`, including the derived ``reg`` and ``fds``.
    """
    for name in per_warp:
        if name not in INSTRUCTION_CLASSES:
            raise KeyError(f"unknown instruction class {name!r}; known: {', '.join(INSTRUCTION_CLASSES)}")
    zero = 0.0 if size is None else np.zeros(size)
    mapping = IPP_UNIT_CLASSES if unit_classes is None else unit_classes
    out: dict[str, Any] = dict.fromkeys(mapping, zero)
    units_of: dict[str, list[str]] = {}
    for unit, classes in mapping.items():
        for c in classes:
            units_of.setdefault(c, []).append(unit)
    for name, n in per_warp.items():  # in the description's order: sums are the same to the last bit
        n = float(n) if size is None else np.asarray(n, float)
        for unit in units_of.get(name, ()):
            out[unit] = out[unit] + n
    return out


def total_instructions(per_warp: Mapping[str, Any]) -> Any:
    """Per-warp dynamic instruction count (all classes); numbers or arrays like :func:`unit_counts`."""
    return sum(per_warp.values(), 0.0) if per_warp else 0.0


def mem_intensity(per_warp: Mapping[str, Any]) -> Any:
    """IPP eq. (20): memory instructions over non-memory instructions (0 when there are none); per-warp
    counts as numbers (a float back) or arrays (an array back)."""
    mem = sum((per_warp.get(c, 0.0) for c in MEMORY_CLASSES), 0.0)
    other = total_instructions(per_warp) - mem
    if np.ndim(other) == 0:
        return float(mem / other) if other > 0 else 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(other > 0, np.asarray(mem, float) / np.where(other > 0, other, 1.0), 0.0)


#: measured clocks closer than this (relative) are one clock level (a card's clock under load
#: jitters by a few MHz around the level it was set to)
SAME_CLOCK_REL = 0.01


def clock_levels(mhz: Any, rel: float = SAME_CLOCK_REL) -> list[float]:
    """Distinct clock levels (MHz, ascending) of measured clocks: sorted values closer than ``rel``
    (relative) to the previous one join its level; each level is the mean of its values. Independent
    of the order of ``mhz``; NaNs are ignored."""
    v = np.sort(np.asarray(mhz, dtype=float).ravel())
    v = v[np.isfinite(v)]
    levels: list[list[float]] = []
    for x in v:
        if levels and x - levels[-1][-1] <= rel * x:
            levels[-1].append(float(x))
        else:
            levels.append([float(x)])
    return [float(np.mean(g)) for g in levels]


def nearest_level(mhz: Any, levels: Sequence[float]) -> Any:
    """Each value of ``mhz`` replaced by the nearest of ``levels``."""
    lv = np.asarray(levels, dtype=float)
    x = np.asarray(mhz, dtype=float)
    return lv[np.argmin(np.abs(x[..., None] - lv), axis=-1)]

#: host-device copies: their directions and the kinds of host memory (the campaign's copy sweep, the
#: copy windows of a session, the transfer model)
COPY_DIRECTIONS = ("h2d", "d2h")
HOST_MEMORY = ("pinned", "pageable")
