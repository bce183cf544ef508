"""Per-architecture facts the models need and profiler exports do not carry: the SM issue width.

One table, by compute capability (``major.minor``), with the chips that have it. ``warp_issue_per_cycle``
is the warp instructions an SM issues per core cycle: one per warp scheduler from Kepler on (Kepler's
dual dispatch needs two independent instructions of one warp, which the timing model's ILP input
covers, not the issue width); Fermi GF100/GF110's two schedulers each need two cycles per warp
instruction on 16-lane pipes; GT200's SM issues one warp instruction every 4 cycles on 8 lanes.
Within Pascal the width differs by chip: GP100 (6.0) has two schedulers per SM, GP102/GP104/GP106/GP107
(6.1) and GP10B (6.2) four.

=======  ==========================================  ==========  =====================  ================
 CC       chips                                       schedulers  warp instr. per cycle  max warps per SM
=======  ==========================================  ==========  =====================  ================
 1.3      GT200                                       1           0.25                   32
 2.0      GF100, GF110                                2           1                      48
 2.1      GF104, GF106, GF108, GF114, GF116           2           2                      48
 3.0-3.7  GK104, GK106, GK107, GK110, GK110B, GK210   4           4                      64
 5.x      GM107, GM108, GM200, GM204, GM206, GM20B    4           4                      64
 6.0      GP100                                       2           2                      64
 6.1      GP102, GP104, GP106, GP107, GP108           4           4                      64
 6.2      GP10B                                       4           4                      64
 7.0/7.2  GV100, GV10B                                4           4                      64
 7.5      TU102, TU104, TU106, TU116, TU117           4           4                      32
 8.0      GA100                                       4           4                      64
 8.6/8.7  GA102, GA103, GA104, GA106, GA107, GA10B     4           4                      48
 8.9      AD102, AD103, AD104, AD106, AD107           4           4                      48
 9.0      GH100                                       4           4                      64
 10.0     GB100, GB102                                4           4                      64
 12.0     GB202, GB203, GB205, GB206, GB207           4           4                      48
=======  ==========================================  ==========  =====================  ================

Products are found by name (``GeForce GTX 1080 Ti`` -> GP102) through :data:`PRODUCTS`, a short list of
common boards; anything else needs the chip or the compute capability given explicitly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from calib.core.errors import BadInputError


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
    best = None
    for product, chip in PRODUCTS.items():
        p = product.upper()
        if re.search(r"(?<![A-Z0-9])" + re.escape(p) + r"(?![A-Z0-9])", norm) and (best is None or len(p) > len(best[0])):
            best = (p, chip)
    return None if best is None else best[1]


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
