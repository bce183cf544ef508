"""Host CPU and DRAM power through RAPL (Linux powercap): the ``rapl`` stream of ``calib log --rapl`` and of
``calib run`` where readable.

The kernel's powercap tree (``Documentation/power/powercap/powercap.rst``) has one directory per RAPL zone,
``/sys/class/powercap/intel-rapl:N`` (a socket) and ``intel-rapl:N:M`` (its subzones), each with ``name``,
``energy_uj`` (a cumulative counter, uJ) and ``max_energy_range_uj`` (where it wraps back to 0). Facts this
reader is built on:

- **zones are found by name, never by index**: ``package-N`` (a socket), and under it ``core``, ``uncore``
  (client parts) and ``dram`` (servers); ``psys`` (the platform, client parts) sits beside the packages.
  The directory numbers differ between machines and boots. ``intel-rapl-mmio:*`` (the same package
  counter through MMIO on some client parts) is not read: it would count the package twice;
- **the package excludes DRAM**: the host's power is the packages plus their ``dram`` subzones; ``core`` and
  ``uncore`` are inside the package, ``psys`` contains everything (used only when no package is readable);
- **AMD Zen** (Linux >= 5.11) uses the same ``intel-rapl`` tree with ``package`` and ``core`` zones only, no
  ``dram``: said once (``capabilities()["absent"]``), never logged as 0;
- **counters wrap at** ``max_energy_range_uj`` (a 32-bit register of energy units: Intel ~262 kJ, AMD
  ~65.5 kJ, under 4 minutes at 280 W): a step down adds ``max_energy_range_uj`` (the register wraps one
  energy unit, 15-61 uJ, later: the error per wrap). Two wraps between reads cannot be told apart, so the
  sensor refuses a polling period longer than half the shortest wrap time at the zones' power limits;
- **root only**: since CVE-2020-8694 (a power side channel) ``energy_uj`` is readable by root only. An
  unreadable zone is named with the fix (run as root, or a udev rule that opens it, which re-opens that
  side channel) instead of silently missing; with no readable zone the sensor refuses to start.

Columns (SI units, energies cumulative from the first read, wrap-corrected): ``<zone>_energy_j`` per
readable zone (``package_0_energy_j``, ``package_0_dram_energy_j``, ``package_0_core_energy_j``,
``psys_energy_j``), ``host_energy_j`` (packages + DRAM), and ``host_power_w`` (its rate since the previous
read; empty on the first row). The sensor's scope is ``host``.
"""

from __future__ import annotations

import contextlib
import re
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from calib.core.errors import DeviceError, DeviceNoPermissionError
from microbench.devices.base import Row, Sensor

POWERCAP = Path("/sys/class/powercap")
#: the fix for an unreadable counter, named in every message about one
PERMISSION_FIX = ("run as root, or let users read the counters with a udev rule (this re-opens the power side "
                  "channel CVE-2020-8694 closed; trusted machines only): "
                  "echo 'ACTION==\"add\", SUBSYSTEM==\"powercap\", KERNEL==\"intel-rapl:*\", "
                  "RUN+=\"/bin/chmod a+r /sys%p/energy_uj\"' > /etc/udev/rules.d/99-rapl.rules && "
                  "udevadm control --reload && udevadm trigger --subsystem-match=powercap --action=add")
_ZONE_DIR = re.compile(r"intel-rapl:(\d+)(?::(\d+))?$")


def _read_text(path: Path) -> str:
    with open(path, encoding="ascii") as f:  # (tests inject PermissionError here: root reads anything)
        return f.read().strip()


@dataclass
class RaplZone:
    """One readable zone: its key (``package-0``, ``package-0/dram``, ``psys``), directory, range and
    whether it counts toward the host's power (packages and DRAM)."""

    key: str
    path: Path
    max_energy_range_uj: int
    host: bool
    power_limit_w: float | None = None

    @property
    def column(self) -> str:
        return re.sub(r"[^a-z0-9]+", "_", self.key.lower()).strip("_") + "_energy_j"


def discover(root: Path | str | None = None) -> tuple[list[RaplZone], dict[str, str], list[str]]:
    """The RAPL zones under ``root`` by name: (readable zones, unreadable zone key -> reason with the fix,
    zones absent that a reader might expect: ``dram``)."""
    root = Path(POWERCAP if root is None else root)
    found: list[tuple[tuple[int, int], str, Path]] = []
    names: dict[int, str] = {}
    for d in sorted(root.glob("intel-rapl:*")):
        m = _ZONE_DIR.match(d.name)
        if not m:
            continue
        try:
            name = _read_text(d / "name")
        except OSError:
            continue
        n, sub = int(m.group(1)), m.group(2)
        if sub is None:
            names[n] = name
        found.append(((n, -1 if sub is None else int(sub)), name, d))
    zones, unreadable = [], {}
    packages = sorted(names.values())
    for (n, sub), name, d in sorted(found):
        key = name if sub < 0 else f"{names.get(n, f'zone-{n}')}/{name}"
        try:
            _read_text(d / "energy_uj")
            rng = int(_read_text(d / "max_energy_range_uj"))
        except PermissionError:
            unreadable[key] = f"{d / 'energy_uj'}: not readable by this user (root only since CVE-2020-8694); {PERMISSION_FIX}"
            continue
        except (OSError, ValueError) as e:
            unreadable[key] = f"{d}: unreadable ({e})"
            continue
        host = name.startswith("package") or name == "dram"
        limit = None
        with contextlib.suppress(OSError, ValueError):
            limit = int(_read_text(d / "constraint_0_power_limit_uw")) / 1e6
        zones.append(RaplZone(key, d, rng, host, limit))
    absent = []
    if packages and not any(z.key.endswith("dram") for z in zones) and not any(k.endswith("dram") for k in unreadable):
        absent.append("dram: this machine's RAPL tree has no DRAM zone (AMD Zen exposes package and core only; "
                      "client Intel parts often none): host power is the packages' alone, DRAM not measured")
    if zones and not any(z.host for z in zones):  # only psys readable: the platform stands for the host
        for z in zones:
            z.host = z.key == "psys"
    return zones, unreadable, absent


class RaplSensor(Sensor):
    """The ``rapl`` stream: cumulative energy per zone, the host's energy and power (module docstring).

    ``root``: the powercap directory (a fake tree in tests); ``clock``: ``(t_mono_s, t_wall_s)``;
    ``period_s``: the logger's polling period, checked against the wrap time.
    """

    kind = "rapl"
    scope = "host"

    def __init__(self, root: Path | str | None = None, name: str = "rapl", period_s: float = 0.1,
                 clock: Callable[[], tuple[float, float]] | None = None, max_power_w: float = 500.0):
        self.name = name
        self.root = Path(POWERCAP if root is None else root)
        self._clock = clock or (lambda: (time.monotonic(), time.time()))
        self.zones, self.unreadable, self.absent = discover(self.root)
        if not self.zones:
            if self.unreadable:
                raise DeviceNoPermissionError(
                    "RAPL: no zone is readable: " + "; ".join(f"{k}: {v}" for k, v in self.unreadable.items()))
            raise DeviceError(f"RAPL: no intel-rapl zone under {self.root} (no RAPL on this machine, or the "
                              "intel_rapl_common/intel_rapl_msr modules are not loaded)")
        # the shortest wrap: range over the zone's power limit (or max_power_w where the limit is unknown)
        self.wrap_s = min(z.max_energy_range_uj / 1e6 / (z.power_limit_w or max_power_w) for z in self.zones)
        if period_s > self.wrap_s / 2:
            raise DeviceError(f"RAPL: polling every {period_s:g} s could miss a counter wrap (the fastest zone wraps "
                              f"in {self.wrap_s:.0f} s at its power limit); poll at least every {self.wrap_s / 2:.0f} s")
        for key, why in self.unreadable.items():  # named with the fix, never silently missing
            warnings.warn(f"RAPL zone {key}: {why}", RuntimeWarning, stacklevel=2)
        for text in self.absent:  # said once, not logged as zero
            warnings.warn(f"RAPL: {text}", RuntimeWarning, stacklevel=2)
        self.columns = tuple(z.column for z in self.zones) + ("host_energy_j", "host_power_w")
        self._prev: dict[str, int] = {}
        self._cum: dict[str, float] = {z.key: 0.0 for z in self.zones}
        self._last: tuple[float, float] | None = None  # (t_mono_s, host_energy_j) of the previous row
        self.wraps: dict[str, int] = {z.key: 0 for z in self.zones}

    def capabilities(self) -> dict[str, Any]:
        return {"zones": {z.key: {"path": str(z.path), "max_energy_range_uj": z.max_energy_range_uj,
                                  "in_host_power": z.host, "power_limit_w": z.power_limit_w} for z in self.zones},
                "unreadable": dict(self.unreadable), "absent": list(self.absent),
                "host_power": " + ".join(z.key for z in self.zones if z.host), "wrap_s": self.wrap_s}

    def read(self) -> list[Row]:
        t0m, t0w = self._clock()
        vals: dict[str, Any] = {}
        host = 0.0
        for z in self.zones:
            raw = int(_read_text(z.path / "energy_uj"))
            prev = self._prev.get(z.key)
            if prev is not None:
                step = raw - prev
                if step < 0:  # the counter wrapped at max_energy_range_uj
                    step += z.max_energy_range_uj
                    self.wraps[z.key] += 1
                self._cum[z.key] += step / 1e6
            self._prev[z.key] = raw
            vals[z.column] = self._cum[z.key]
            if z.host:
                host += self._cum[z.key]
        t1m, t1w = self._clock()
        tm = (t0m + t1m) / 2
        vals["host_energy_j"] = host
        vals["host_power_w"] = (None if self._last is None or tm <= self._last[0]
                                else (host - self._last[1]) / (tm - self._last[0]))
        self._last = (tm, host)
        return [Row(tm, (t0w + t1w) / 2, vals)]


def rapl_status(root: Path | str | None = None) -> dict[str, Any]:
    """What RAPL gives here (``calib doctor``): readable zones, unreadable ones with the fix, absent ones."""
    zones, unreadable, absent = discover(root)
    return {"readable": [z.key for z in zones], "unreadable": unreadable, "absent": absent,
            "host_power": " + ".join(z.key for z in zones if z.host) or None}
