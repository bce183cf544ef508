"""Host-device copy microbenchmarks: which copies the campaign times, declared once for every device.

Each :class:`TransferBenchmark` is one copy direction (``h2d``, ``d2h``), one kind of host memory
(pinned, i.e. page-locked, or pageable, as ``malloc`` gives) and one size. Sizes run from a few KiB,
where the fixed latency dominates, to hundreds of MiB, where the bandwidth does, so that a fit can
separate the two (sankaranarayanan-thesis-2016-notes.md sec. 7.2 item 1; Table 4.1 transfers are
8-555 MB). Each runs back to back for a window after an idle reference window of the same length;
the board (and wall) power of the copy window minus that of the reference is the copy's power.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from calib.core.units import COPY_DIRECTIONS as DIRECTIONS
KIB, MIB = 1 << 10, 1 << 20

#: sizes per campaign (bytes), window and reference lengths (s)
SIZES: dict[str, tuple[int, ...]] = {
    "quick": (4 * KIB, 256 * KIB, 4 * MIB, 64 * MIB, 256 * MIB),
    "standard": (4 * KIB, 32 * KIB, 256 * KIB, MIB, 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB),
    "full": (4 * KIB, 16 * KIB, 64 * KIB, 256 * KIB, MIB, 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB, 512 * MIB),
}
WINDOW_S: dict[str, float] = {"quick": 2.0, "standard": 3.0, "full": 4.0}
#: repeats of the sweep (the fit takes the measurement noise from their scatter)
REPEATS: dict[str, int] = {"quick": 1, "standard": 2, "full": 2}


def size_label(nbytes: int) -> str:
    """``4KiB``, ``256MiB``, or the byte count."""
    for unit, name in ((MIB, "MiB"), (KIB, "KiB")):
        if nbytes % unit == 0:
            return f"{nbytes // unit}{name}"
    return f"{nbytes}B"


@dataclass(frozen=True)
class TransferBenchmark:
    """One copy of the sweep (module docstring)."""

    direction: str
    nbytes: int
    pinned: bool

    def __post_init__(self) -> None:
        if self.direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {DIRECTIONS}, not {self.direction!r}")
        if self.nbytes < 1:
            raise ValueError(f"copy size must be at least 1 byte, not {self.nbytes}")

    @property
    def host_memory(self) -> str:
        return "pinned" if self.pinned else "pageable"

    @property
    def name(self) -> str:
        return f"copy_{self.direction}_{self.host_memory}/{size_label(self.nbytes)}"

    def describe(self) -> dict[str, Any]:
        """Manifest entry (``transfer_plan``)."""
        return {"name": self.name, "direction": self.direction, "bytes": int(self.nbytes),
                "host_memory": self.host_memory}


def transfer_benchmarks(campaign: str) -> list[TransferBenchmark]:
    """The copy sweep of a campaign: every size, both directions, pinned and pageable."""
    return [TransferBenchmark(d, n, pinned) for pinned in (True, False) for d in DIRECTIONS
            for n in SIZES.get(campaign, SIZES["standard"])]
