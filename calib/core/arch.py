"""Per-architecture facts the models need and profiler exports do not carry: the issue width, the warp
size, the resident warps, and the power model's units of each GPU family (NVIDIA and AMD).

Every device backend of the device layer takes its architecture facts from here
(:func:`nvidia_facts`, :func:`amd_facts`), so the unit list and the issue rate of a real GPU have one home.

NVIDIA: one table, :data:`_TABLE`, by compute capability (``major.minor``), with the chips that have
it. ``warp_issue_per_cycle`` is the warp instructions an SM issues per core cycle: one per warp scheduler from Kepler on (Kepler's
dual dispatch needs two independent instructions of one warp, which the timing model's ILP input
covers, not the issue width); Fermi GF100/GF110's two schedulers each need two cycles per warp
instruction on 16-lane pipes; GT200's SM issues one warp instruction every 4 cycles on 8 lanes.
Within Pascal the width differs by chip: GP100 (6.0) has two schedulers per SM, GP102/GP104/GP106/GP107
(6.1) and GP10B (6.2) four.

Products are found by name (``GeForce GTX 1080 Ti`` -> GP102) through :data:`PRODUCTS`, a short list of
common boards; anything else needs the chip or the compute capability given explicitly.

AMD: one table, by LLVM target (``gfx90a``), :data:`AMD_TARGETS` (sources: LLVM's AMDGPU back-end
documentation, "Processors" and "Wavefront size"; AMD's CDNA, CDNA2 and CDNA3 white papers and
instruction-set manuals; RDNA3 ISA manual). A CDNA compute unit (CU) has 4 SIMD16 vector units, each
finishing one wave64 VALU instruction every 4 cycles, so the CU issues one wave64 VALU instruction per
cycle; an RDNA3 CU has 2 SIMD32 units, one wave32 instruction per cycle each.

**Warps in the models are 32 threads on every vendor** (IPP eq. 12 counts threads / 32). Per-warp
instruction counts are per-thread counts of a SIMT kernel, so they are the same per wave64; a wave64
instruction is two 32-thread warp instructions. The facts below are therefore stated in 32-thread warps:
a CDNA CU issuing one wave64 VALU instruction per cycle issues ``warp_issue_per_cycle = 2``, and its 32
resident waves are ``max_warps_per_sm = 64``. Access rates (eq. 10) are exact for launches in whole waves,
which is how the campaign launches on a wave64 device (``warp_size`` in the device facts); a block of 32
threads on a wave64 GPU still occupies a whole wave.

Units of the power model (:class:`UnitSet`): NVIDIA GPUs have the IPP units
(:data:`calib.core.units.POWER_UNITS`, one per instruction class plus the register file ``reg`` and
fetch/decode/schedule ``fds``). AMD GPUs are named by what the hardware has (:data:`AMD_UNITS`; the
hardware behind each unit: calib/ARCHITECTURE.md, "AMD power-model units"). ``issue`` plays IPP's ``fds``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from calib.core.errors import BadInputError
from calib.core.units import CHIP_UNITS, INSTRUCTION_CLASSES, IPP_UNIT_CLASSES


@dataclass(frozen=True)
class Arch:
    """SM facts of one compute capability."""

    cc: str
    chips: tuple[str, ...]
    schedulers_per_sm: int
    warp_issue_per_cycle: float
    max_warps_per_sm: int


_TABLE = (
    Arch("1.3", ("GT200",), 1, 0.25, 32),
    Arch("2.0", ("GF100", "GF110"), 2, 1.0, 48),
    Arch("2.1", ("GF104", "GF106", "GF108", "GF114", "GF116"), 2, 2.0, 48),
    Arch("3.0", ("GK104", "GK106", "GK107"), 4, 4.0, 64),
    Arch("3.5", ("GK110", "GK110B"), 4, 4.0, 64),
    Arch("3.7", ("GK210",), 4, 4.0, 64),
    Arch("5.0", ("GM107", "GM108"), 4, 4.0, 64),
    Arch("5.2", ("GM200", "GM204", "GM206"), 4, 4.0, 64),
    Arch("5.3", ("GM20B",), 4, 4.0, 64),
    Arch("6.0", ("GP100",), 2, 2.0, 64),
    Arch("6.1", ("GP102", "GP104", "GP106", "GP107", "GP108"), 4, 4.0, 64),
    Arch("6.2", ("GP10B",), 4, 4.0, 64),
    Arch("7.0", ("GV100",), 4, 4.0, 64),
    Arch("7.2", ("GV10B",), 4, 4.0, 64),
    Arch("7.5", ("TU102", "TU104", "TU106", "TU116", "TU117"), 4, 4.0, 32),
    Arch("8.0", ("GA100",), 4, 4.0, 64),
    Arch("8.6", ("GA102", "GA103", "GA104", "GA106", "GA107"), 4, 4.0, 48),
    Arch("8.7", ("GA10B",), 4, 4.0, 48),
    Arch("8.9", ("AD102", "AD103", "AD104", "AD106", "AD107"), 4, 4.0, 48),
    Arch("9.0", ("GH100",), 4, 4.0, 64),
    Arch("10.0", ("GB100", "GB102"), 4, 4.0, 64),
    Arch("12.0", ("GB202", "GB203", "GB205", "GB206", "GB207"), 4, 4.0, 48),
)
BY_CC: dict[str, Arch] = {a.cc: a for a in _TABLE}
BY_CHIP: dict[str, Arch] = {c: a for a in _TABLE for c in a.chips}

#: common boards -> chip (matched case-insensitively as a word sequence in a device name)
PRODUCTS: dict[str, str] = {
    "GTX 280": "GT200", "GTX 285": "GT200", "GTX 480": "GF100", "GTX 580": "GF110", "GTX 680": "GK104",
    "GTX 780": "GK110", "GTX TITAN Black": "GK110B", "Tesla K40": "GK110B", "Tesla K80": "GK210",
    "GTX 750 Ti": "GM107", "GTX 970": "GM204", "GTX 980 Ti": "GM200", "GTX 980": "GM204",
    "GTX TITAN X": "GM200", "Tesla M40": "GM200", "Tesla P100": "GP100", "TITAN Xp": "GP102",
    "TITAN X (Pascal)": "GP102", "GTX 1080 Ti": "GP102", "GTX 1080": "GP104", "GTX 1070": "GP104",
    "GTX 1060": "GP106", "GTX 1050": "GP107", "Tesla P40": "GP102", "Tesla P4": "GP104", "Jetson TX2": "GP10B",
    "Tesla V100": "GV100", "TITAN V": "GV100", "RTX 2080 Ti": "TU102", "RTX 2080": "TU104", "Tesla T4": "TU104",
    "A100": "GA100", "RTX 3090": "GA102", "RTX 3080": "GA102", "A40": "GA102", "A10": "GA102",
    "RTX 4090": "AD102", "L40": "AD102", "L4": "AD104", "H100": "GH100",
}


def chip_of_device_name(name: str) -> str | None:
    """The chip of a board name such as ``GeForce GTX 1080 Ti (0)`` (longest product match), or None."""
    norm = " " + re.sub(r"\s+", " ", name.upper()) + " "
    hits = [(len(p), chip) for p, chip in PRODUCTS.items()
            if re.search(r"(?<![A-Z0-9])" + re.escape(p.upper()) + r"(?![A-Z0-9])", norm)]
    return max(hits, key=lambda h: h[0])[1] if hits else None   # the first of the longest


def arch_of(chip: str | None = None, cc: str | None = None) -> Arch:
    """The :class:`Arch` of a chip (``GP102``) or a compute capability (``6.1``); BadInputError when
    neither is known (the message lists what is)."""
    if chip:
        a = BY_CHIP.get(chip.strip().upper())
        if a is None:
            raise BadInputError(f"chip {chip!r} is not in the architecture table (calib/core/arch.py); known: "
                                + ", ".join(sorted(BY_CHIP)))
        return a
    if cc:
        a = BY_CC.get(str(cc).strip())
        if a is None:
            raise BadInputError(f"compute capability {cc!r} is not in the architecture table (calib/core/arch.py); "
                                "known: " + ", ".join(BY_CC))
        return a
    raise BadInputError("no chip or compute capability given")


def warp_issue_per_cycle(chip: str | None = None, cc: str | None = None) -> float:
    """Warp instructions one SM issues per core cycle (module docstring's table)."""
    return arch_of(chip, cc).warp_issue_per_cycle


# ------------------------------------------------------------------------------------------------
# Units of the power model per GPU family, and the architecture facts a device backend records
# ------------------------------------------------------------------------------------------------

#: warp instructions per SM per cycle assumed for a parameter file or table that does not say: GT200
#: (the GTX 280 of the IPP paper) issues one every 4 cycles
IPP_WARP_ISSUE_PER_CYCLE = 0.25
#: threads per warp in the models' accounting (module docstring: 32 on every vendor)
MODEL_WARP_SIZE = 32


@dataclass(frozen=True)
class UnitSet:
    """The power model's units of one GPU family: their order, which instruction classes each one
    counts as its accesses (:func:`calib.core.units.unit_counts`), which are chip-level (one per chip,
    not per SM) and which are in the memory clock domain."""

    units: tuple[str, ...]
    classes: Mapping[str, tuple[str, ...]]
    chip_units: tuple[str, ...]
    mem_units: tuple[str, ...]

    def __post_init__(self) -> None:
        missing = [u for u in self.units if u not in self.classes]
        if missing:
            raise ValueError(f"units {missing} have no instruction classes")

    def device_fields(self) -> dict[str, Any]:
        """The device entries of a manifest (and parameter file) that carry this unit set. The mapping
        ``unit_classes`` is written only where it is not IPP's (files of NVIDIA GPUs do not change)."""
        out: dict[str, Any] = {"units": list(self.units), "chip_units": list(self.chip_units),
                               "mem_domain_units": list(self.mem_units)}
        if any(tuple(self.classes[u]) != tuple(IPP_UNIT_CLASSES.get(u, ())) for u in self.units):
            out["unit_classes"] = {u: list(self.classes[u]) for u in self.units}
        return out


def nvidia_units(major: int | None) -> UnitSet:
    """IPP's units of an NVIDIA generation (compute capability major; None: unknown): L1/L2 on every
    GPU since Fermi, tensor cores since Volta."""
    units = ["fp", "dp", "int", "sfu", "alu", "reg", "fds", "shared", "const", "tex", "l1", "l2", "global", "local"]
    if major is not None and major >= 7:
        units.insert(4, "tensor")
    return UnitSet(tuple(units), {u: IPP_UNIT_CLASSES[u] for u in units},
                   tuple(u for u in units if u in CHIP_UNITS), ("global", "local"))


#: AMD units named by the hardware (module docstring)
AMD_UNITS = UnitSet(
    units=("valu_fp32", "valu_fp64", "valu_int", "valu_trans", "matrix", "salu", "issue", "lds", "l1", "l2", "hbm"),
    classes={"valu_fp32": ("fp",), "valu_fp64": ("dp",), "valu_int": ("int", "alu"), "valu_trans": ("sfu",),
             "matrix": ("tensor",), "salu": ("ctrl", "const"), "issue": INSTRUCTION_CLASSES, "lds": ("shared",),
             "l1": ("l1", "tex"), "l2": ("l2",), "hbm": ("global", "local")},
    chip_units=("l2", "hbm"),
    mem_units=("hbm",),
)


@dataclass(frozen=True)
class AmdTarget:
    """One AMD GPU target (LLVM ``gfx`` name) and its CU facts (module docstring's table)."""

    gfx: str
    family: str
    products: tuple[str, ...]
    wave_size: int
    simds_per_cu: int
    max_waves_per_simd: int
    valu_lanes_per_cycle: int      # lanes of VALU work one CU finishes per cycle
    lds_bytes: int
    l1_bytes: int
    matrix: str                    # matrix-core instructions: "mfma" (CDNA) or "wmma" (RDNA3)


AMD_TARGETS: dict[str, AmdTarget] = {t.gfx: t for t in (
    AmdTarget("gfx908", "CDNA", ("MI100",), 64, 4, 10, 64, 64 * 1024, 16 * 1024, "mfma"),
    AmdTarget("gfx90a", "CDNA2", ("MI210", "MI250", "MI250X"), 64, 4, 8, 64, 64 * 1024, 16 * 1024, "mfma"),
    AmdTarget("gfx942", "CDNA3", ("MI300A", "MI300X", "MI325X"), 64, 4, 8, 64, 64 * 1024, 32 * 1024, "mfma"),
    AmdTarget("gfx1100", "RDNA3", ("RX 7900 XTX", "RX 7900 XT", "PRO W7900"), 32, 2, 16, 64, 64 * 1024,
              32 * 1024, "wmma"),
)}


@dataclass(frozen=True)
class ArchFacts:
    """What a device backend records about a GPU's architecture (``DeviceInfo.extra``): vendor, target
    (compute capability or gfx name), the warp size of the hardware, the issue rate and resident warps
    in 32-thread warps (module docstring), and the power model's units. ``known`` is False when the
    target is not in the tables and the figures are the newest family's (the manifest says so)."""

    vendor: str
    arch: str | None
    family: str | None
    warp_size: int
    warp_issue_per_cycle: float
    max_warps_per_sm: int | None
    units: UnitSet
    known: bool = True
    extra: Mapping[str, Any] = field(default_factory=dict)

    def device_fields(self) -> dict[str, Any]:
        """Entries of ``DeviceInfo.extra`` (the warp size only where it is not 32)."""
        out: dict[str, Any] = {**self.units.device_fields(), "vendor": self.vendor, "architecture_target": self.arch,
                               "architecture_known": self.known}
        if self.max_warps_per_sm is not None:
            out["max_warps_per_sm"] = self.max_warps_per_sm
        if self.warp_size != MODEL_WARP_SIZE:
            out["warp_size"] = self.warp_size
        out.update(self.extra)
        return out


#: issue rate of an NVIDIA GPU whose compute capability the table does not list yet (newer than it):
#: every generation since Kepler issues 4 warp instructions per SM per cycle
_NEWEST_NVIDIA = BY_CC["12.0"]


def nvidia_facts(cc: str | None = None, name: str | None = None) -> ArchFacts:
    """Architecture facts of an NVIDIA GPU from its compute capability (``"8.0"``), else from its board
    name (:func:`chip_of_device_name`); a GPU neither identifies gets the newest generation's figures
    with ``known=False``."""
    a = BY_CC.get(str(cc)) if cc else None
    if a is None and name:
        chip = chip_of_device_name(name)
        a = BY_CHIP.get(chip) if chip else None
    major = int(str(a.cc if a else cc).split(".")[0]) if (a or cc) else None
    ref = a or _NEWEST_NVIDIA
    return ArchFacts("nvidia", a.cc if a else (str(cc) if cc else None), None, 32, ref.warp_issue_per_cycle,
                     ref.max_warps_per_sm, nvidia_units(major), known=a is not None)


def amd_facts(gfx: str) -> ArchFacts:
    """Architecture facts of an AMD GPU from its LLVM target (``gfx90a``; a feature suffix such as
    ``gfx90a:sramecc+:xnack-`` is ignored). An unknown target gets the newest CDNA's figures with
    ``known=False``."""
    base = str(gfx).split(":", 1)[0].strip().lower()
    t = AMD_TARGETS.get(base)
    ref = t or AMD_TARGETS["gfx942"]
    issue = ref.valu_lanes_per_cycle / MODEL_WARP_SIZE
    resident = ref.simds_per_cu * ref.max_waves_per_simd * ref.wave_size // MODEL_WARP_SIZE
    return ArchFacts("amd", base or None, ref.family if t else None, ref.wave_size, issue, resident, AMD_UNITS,
                     known=t is not None, extra={"lds_bytes": ref.lds_bytes, "l1_bytes": ref.l1_bytes,
                                                 "matrix_instructions": ref.matrix})
