"""Hidden physics of the virtual GPU's PCIe link: how long a host-device copy takes and what it draws.

Deliberately not the toolkit's ``pcie`` transfer model (latency + bytes / bandwidth, board power =
link power + energy per byte x rate):

- the wire carries TLPs: every ``max_payload_bytes`` of data costs ``tlp_overhead_bytes`` of header,
  framing and flow-control traffic; host-to-device copies are DMA *reads* by the GPU (non-posted
  requests whose completions come back in smaller pieces), so they reach a lower share of the wire;
- a DMA engine moves a copy in descriptors of ``dma_chunk_bytes``, each with a fixed set-up cost:
  the time is a staircase in the size, not a line;
- a pageable copy goes through the driver's pinned staging buffer: the CPU copies a chunk
  (``host_memcpy_bytes_per_s``) while the DMA moves the previous one, a handshake per chunk, the
  slower of the two setting the pace -- below one chunk nothing overlaps;
- power: the link and copy engine draw ``phy_active_w`` only while the DMA moves data, every byte on
  the wire costs ``wire_j_per_byte`` and every byte written to / read from GPU memory
  ``dram_j_per_byte`` (writes and reads differ); on the host the root complex and host memory draw
  ``host_dma_w`` during the DMA and a CPU core doing the staging memcpy ``host_memcpy_w``.

Ground truth derived from these figures (the asymptotic bandwidth, the board energy per byte of
payload, ...) is in :func:`truth`; nothing here is visible to the fitter, which only sees measured
copy times and power readings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

DIRECTIONS = ("h2d", "d2h")


@dataclass(frozen=True)
class PcieLink:
    """Hidden PCIe link parameters (s, bytes, W, J)."""

    raw_bytes_per_s: float                       # after line encoding (gen2 x16: 8e9, gen3 x16: 15.75e9)
    latency_s: dict = field(default_factory=lambda: {"h2d": 7e-6, "d2h": 8e-6})  # call to first byte, pinned
    pageable_latency_s: float = 4e-6             # extra set-up of a pageable copy (staging buffer lookup)
    max_payload_bytes: float = 256.0
    tlp_overhead_bytes: float = 24.0
    read_efficiency: float = 0.86                # share of the wire DMA reads (h2d) reach
    dma_chunk_bytes: float = float(1 << 21)
    dma_desc_s: float = 1.5e-6
    stage_bytes: float = float(1 << 20)
    stage_sync_s: float = 5e-6
    host_memcpy_bytes_per_s: float = 6.0e9
    phy_active_w: float = 2.4
    wire_j_per_byte: float = 7.0e-11
    dram_j_per_byte: dict = field(default_factory=lambda: {"h2d": 1.9e-10, "d2h": 1.4e-10})
    host_dma_w: float = 3.0
    host_memcpy_w: float = 16.0

    def wire_ratio(self) -> float:
        """Bytes on the wire per byte of payload."""
        return 1.0 + self.tlp_overhead_bytes / self.max_payload_bytes

    def dma_rate(self, direction: str) -> float:
        """Payload bytes per second while a DMA streams."""
        eff = self.read_efficiency if direction == "h2d" else 1.0
        return self.raw_bytes_per_s * eff / self.wire_ratio()

    def dma_s(self, nbytes: float, direction: str) -> float:
        """DMA time of ``nbytes`` (descriptor set-up per chunk plus streaming)."""
        if nbytes <= 0:
            return 0.0
        return math.ceil(nbytes / self.dma_chunk_bytes) * self.dma_desc_s + nbytes / self.dma_rate(direction)


@dataclass(frozen=True)
class Copy:
    """One copy: its time and the time its parts keep the link, the DMA and the CPU busy (s), and
    the energy of its bytes (J)."""

    time_s: float
    dma_s: float
    memcpy_s: float
    byte_energy_j: float


def copy(link: PcieLink, nbytes: float, direction: str, pinned: bool) -> Copy:
    """One ``direction`` copy of ``nbytes`` from or to ``pinned`` (else pageable) host memory."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, not {direction!r}")
    nbytes = float(nbytes)
    e = nbytes * (link.wire_ratio() * link.wire_j_per_byte + link.dram_j_per_byte[direction])
    if pinned:
        d = link.dma_s(nbytes, direction)
        return Copy(link.latency_s[direction] + d, d, 0.0, e)
    # pageable: chunks through the staging buffer, the memcpy of one overlapping the DMA of another
    n_full = int(nbytes // link.stage_bytes)
    rest = nbytes - n_full * link.stage_bytes
    chunks = [link.stage_bytes] * n_full + ([rest] if rest > 0 else [])
    cpy = [c / link.host_memcpy_bytes_per_s for c in chunks]
    dma = [link.dma_s(c, direction) + link.stage_sync_s for c in chunks]
    first, second = (cpy, dma) if direction == "h2d" else (dma, cpy)  # d2h: DMA into staging, then memcpy out
    t = first[0] + sum(max(a, b) for a, b in zip(first[1:], second[:-1])) + second[-1] if chunks else 0.0
    t += link.latency_s[direction] + link.pageable_latency_s
    return Copy(t, sum(dma), sum(cpy), e)


def copy_power(link: PcieLink, c: Copy) -> tuple[float, float]:
    """(board, host) power above idle, W, averaged over back-to-back copies like ``c``."""
    board = (link.phy_active_w * c.dma_s + c.byte_energy_j) / c.time_s
    host = (link.host_dma_w * c.dma_s + link.host_memcpy_w * c.memcpy_s) / c.time_s
    return board, host


def truth(link: PcieLink, preset: Any = None) -> dict[str, Any]:
    """What the fitted ``transfer`` section's parameters name, from the hidden physics.

    Per direction and host memory: the asymptotic bandwidth (the slope of time in size between two
    large copies) and the fixed latency (that line's time at zero bytes: the large-copy intercept,
    which for a pageable copy includes the staging pipeline's fill); per direction, the board energy
    above idle per byte (the slope of the copy's board energy in size, link power while the DMA runs
    included). With the ``preset`` (its idle power and wall meter), per host memory the wall power
    above idle beyond the board's while a large copy streams (PSU losses included), and where the preset's
    host has RAPL the CPU package and DRAM power above idle it shows (``host_rapl_power_<m>_w``)."""
    out: dict[str, Any] = {}
    big, bigger = 256.0 * float(1 << 20), 512.0 * float(1 << 20)
    for d in DIRECTIONS:
        for mode, pinned in (("pinned", True), ("pageable", False)):
            c1, c2 = copy(link, big, d, pinned), copy(link, bigger, d, pinned)
            bw = (bigger - big) / (c2.time_s - c1.time_s)
            out[f"bandwidth_{d}_{mode}_bytes_per_s"] = bw
            out[f"latency_{d}_{mode}_s"] = c1.time_s - big / bw
        c1, c2 = copy(link, big, d, True), copy(link, bigger, d, True)
        e1, e2 = (copy_power(link, c)[0] * c.time_s for c in (c1, c2))
        out[f"energy_{d}_j_per_byte"] = (e2 - e1) / (bigger - big)
    if preset is not None:
        idle = preset.idle_steady_state()
        pb, ph = idle["power_w"], preset.power.host_idle_w
        eff = preset.sensors.psu_efficiency
        for mode, pinned in (("pinned", True), ("pageable", False)):
            vals = []
            for d in DIRECTIONS:
                db, dh = copy_power(link, copy(link, big, d, pinned))
                on, off = pb + db + ph + (dh + preset.power.host_busy_w), pb + ph  # the CPU waits in the copy call
                vals.append(on / eff(on) - off / eff(off) - db)
            out[f"host_power_{mode}_w"] = sum(vals) / len(vals)
        h = preset.host_rapl
        if h is not None:  # what RAPL sees of it: the launch work's package share, the copy's package + DRAM
            seen = h.copy_package_share + (1.0 - h.copy_package_share) * (h.dram_idle_w is not None)
            for mode, pinned in (("pinned", True), ("pageable", False)):
                vals = [h.busy_share * preset.power.host_busy_w
                        + seen * copy_power(link, copy(link, big, d, pinned))[1] for d in DIRECTIONS]
                out[f"host_rapl_power_{mode}_w"] = sum(vals) / len(vals)
    return out
