"""A fake Linux powercap tree (``/sys/class/powercap``) whose RAPL counters follow power traces, for tests of
:mod:`microbench.devices.rapl` without RAPL hardware or root.

The layout and file semantics follow the kernel: ``Documentation/power/powercap/powercap.rst`` (its example
tree: ``intel-rapl:0`` ``package-0`` with subzones ``intel-rapl:0:0`` ``core`` and ``intel-rapl:0:1``
``uncore``, each with ``name``, ``energy_uj``, ``max_energy_range_uj``, ``constraint_0_power_limit_uw``) and
``drivers/powercap/intel_rapl_common.c`` (``energy_uj`` is the 32-bit energy-status register times the
energy unit, so it wraps to 0 after ``max_energy_range_uj`` = (2^32 - 1) units). The energy unit is
2^-14 J (61.04 uJ) on most Intel parts and 2^-16 J (15.26 uJ) on AMD Zen, whose range is then ~65.5 kJ.
``energy_uj`` is mode 0400 since the CVE-2020-8694 fix (kernel commit 949dd0104c49, "powercap: restrict
energy meter to root access"); as tests run as root, refusal is injected at the open (see the tests).

Layouts: :func:`intel_server` (two sockets, each ``package-N`` with a ``dram`` subzone), :func:`intel_client`
(``package-0`` with ``core`` and ``uncore``, ``psys`` beside it, and an ``intel-rapl-mmio:0`` duplicate of the
package), :func:`amd_zen` (``package-0`` with ``core`` only, no DRAM). ``bits`` shortens the register so a
short trace wraps.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

INTEL_UNIT_UJ = 1e6 / 2 ** 14
AMD_UNIT_UJ = 1e6 / 2 ** 16


@dataclass
class FakeZone:
    """One RAPL zone: its name, power trace (W at t s), energy unit, register width and subzones."""

    name: str
    power_fn: Callable[[float], float]
    unit_uj: float = INTEL_UNIT_UJ
    bits: int = 32
    limit_w: float | None = 200.0
    start_j: float = 0.0            # energy already in the register at t = 0
    sub: list["FakeZone"] = field(default_factory=list)
    path: Path | None = None
    energy_j: float = 0.0           # true energy since t = 0

    @property
    def max_energy_range_uj(self) -> int:
        return int((2 ** self.bits - 1) * self.unit_uj)

    def register_uj(self) -> int:
        units = int((self.start_j + self.energy_j) * 1e6 / self.unit_uj) % (2 ** self.bits)
        return int(units * self.unit_uj)


class FakePowercap:
    """The tree under ``root``; :meth:`advance` moves time and rewrites every ``energy_uj``."""

    def __init__(self, root: Path, packages: list[FakeZone], psys: FakeZone | None = None, mmio: bool = False):
        self.root = Path(root)
        self.t = 0.0
        self.zones: dict[str, FakeZone] = {}
        (self.root / "intel-rapl").mkdir(parents=True, exist_ok=True)  # the control type: no colon, not a zone
        (self.root / "intel-rapl" / "enabled").write_text("1\n")
        tops = list(packages) + ([psys] if psys is not None else [])
        for n, z in enumerate(tops):
            self._make(f"intel-rapl:{n}", z, z.name)
            for m, s in enumerate(z.sub):
                self._make(f"intel-rapl:{n}:{m}", s, f"{z.name}/{s.name}")
        if mmio and packages:  # the same package counter through MMIO (client parts): must not be added
            self._make("intel-rapl-mmio:0", packages[0], None)
        self._write()

    def _make(self, dirname: str, z: FakeZone, key: str | None) -> None:
        d = self.root / dirname
        d.mkdir()
        (d / "name").write_text(z.name + "\n")
        (d / "max_energy_range_uj").write_text(f"{z.max_energy_range_uj}\n")
        if z.limit_w is not None:
            (d / "constraint_0_power_limit_uw").write_text(f"{int(z.limit_w * 1e6)}\n")
        (d / "energy_uj").write_text("0\n")
        if key is not None:
            z.path = d
            self.zones[key] = z
        else:
            (d / "energy_uj").unlink()
            (d / "energy_uj").symlink_to(z.path / "energy_uj")

    def _write(self) -> None:
        for z in self.zones.values():  # atomically, as a sysfs read is: a reader never sees a half-written file
            tmp = z.path / ".energy_uj.tmp"
            tmp.write_text(f"{z.register_uj()}\n")
            os.replace(tmp, z.path / "energy_uj")

    def advance(self, dt_s: float, step_s: float = 0.001) -> None:
        """Move time by ``dt_s``, integrating every zone's power exactly enough (trapezoid, ``step_s``)."""
        n = max(1, math.ceil(dt_s / step_s))
        h = dt_s / n
        for z in self.zones.values():
            ps = [z.power_fn(self.t + i * h) for i in range(n + 1)]
            z.energy_j += h * (sum(ps) - 0.5 * (ps[0] + ps[-1]))
        self.t += dt_s
        self._write()

    def wraps(self, key: str) -> int:
        """How often the zone's register has wrapped since t = 0."""
        z = self.zones[key]
        span = (2 ** z.bits) * z.unit_uj / 1e6
        return int((z.start_j + z.energy_j) // span) - int(z.start_j // span)


def intel_server(root: Path, package_w: Callable[[float], float], dram_w: Callable[[float], float],
                 bits: int = 32, start_j: float = 0.0) -> FakePowercap:
    """Two sockets, each ``package-N`` with a ``dram`` subzone (Xeon servers)."""
    pk = [FakeZone(f"package-{n}", package_w, bits=bits, start_j=start_j, limit_w=270.0,
                   sub=[FakeZone("dram", dram_w, bits=bits, start_j=start_j / 4, limit_w=None)]) for n in (0, 1)]
    return FakePowercap(root, pk)


def intel_client(root: Path, package_w: Callable[[float], float], core_w: Callable[[float], float],
                 psys_w: Callable[[float], float], bits: int = 32) -> FakePowercap:
    """A laptop/desktop part: ``package-0`` with ``core`` and ``uncore``, ``psys`` beside it, an MMIO duplicate."""
    pk = FakeZone("package-0", package_w, bits=bits, limit_w=28.0,
                  sub=[FakeZone("core", core_w, bits=bits, limit_w=None), FakeZone("uncore", lambda t: 1.5, bits=bits,
                                                                                   limit_w=None)])
    return FakePowercap(root, [pk], psys=FakeZone("psys", psys_w, bits=bits, limit_w=None), mmio=True)


def amd_zen(root: Path, package_w: Callable[[float], float], core_w: Callable[[float], float],
            bits: int = 32, start_j: float = 0.0) -> FakePowercap:
    """AMD Zen (Linux >= 5.11): the same tree, ``package-0`` with ``core`` only (no DRAM), 15.26 uJ units."""
    pk = FakeZone("package-0", package_w, unit_uj=AMD_UNIT_UJ, bits=bits, start_j=start_j, limit_w=280.0,
                  sub=[FakeZone("core", core_w, unit_uj=AMD_UNIT_UJ, bits=bits, limit_w=None)])
    return FakePowercap(root, [pk])
