"""A virtual fleet: ``sim:<preset>@<serial>`` is one manufactured unit of a virtual GPU preset.

Identical GPUs are not identical (Sinha et al., SC'22: 8 % average, 22 % maximum performance variation
within one SKU, outliers 1.5x slower than the median). A unit's serial number seeds its manufacturing
variation, applied to the preset's hidden physics with :func:`dataclasses.replace` (the preset itself is
untouched, so new presets get fleets for free):

- ``dyn``: per-unit dynamic power factor (process corner), lognormal, sigma 4 %: every unit's MaxPower,
  the per-SM constant power and the activation step;
- ``leak``: leakage factor, lognormal, sigma 15 % (leakage varies most between dies);
- ``dv``: voltage offset, normal, sigma 1.5 % of the nominal voltage (binning): dynamic and idle
  clock-tree power scale as (1 + dv)^2, leakage as (1 + dv)^leak_v_exp;
- ``r_th``: thermal-resistance factor of the cooler (paste, mounting, fan), lognormal, sigma 8 %: the
  die-sink and sink-case conductances are divided by it.

A few units carry a planted defect (the fleet's true outliers, see :func:`planted_defect`): serials with
``serial % 16 == 11``, the kind cycling with ``serial // 16`` through

- ``leaky``: leakage x 3;
- ``hot``: cooler thermal resistance x 1.6 (a badly mounted cooler, a clogged fin stack);
- ``hungry``: dynamic power x 1.5 (the "1.5x" outliers of Sinha et al., here in power);
- ``slow-memory``: DRAM latency x 1.6 and DRAM bandwidth / 1.5 (a degraded memory subsystem; memory-bound
  work runs up to ~1.5x slower).

Each unit has its own identity (uuid ``SIM-<preset>@<serial>``, preset name ``<preset>@<serial>``), so a
fleet's sessions and parameter files are told apart like real GPUs'. Its ground truth (for scoring only,
never read by a fitter) is the existing truth functions applied to the varied preset: the preset lookup
(:func:`microbench.devices.sim.presets.get_preset`) resolves ``<preset>@<serial>`` through
:func:`unit_of`, so truth, recovery and ``calib run --device sim:gtx280@17`` all work unchanged.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from calib.core.errors import DeviceNotFoundError

#: separator between preset name and serial number in a device spec / preset name
SERIAL_SEP = "@"
#: largest serial number accepted (Summit has 27,648 GPUs; leave room)
MAX_SERIAL = 10_000_000
#: seed namespace of the manufacturing variation (so it is independent of the campaign's noise seed)
_VARIATION_SEED = 0xF1EE7

#: manufacturing spread (see module docstring): (log-)normal sigmas
SIGMA_DYN = 0.04
SIGMA_LEAK = 0.15
SIGMA_DV = 0.015
SIGMA_RTH = 0.08

#: planted defects: serial % DEFECT_PERIOD == DEFECT_PHASE, kind = DEFECT_KINDS[(serial // period) % 4]
DEFECT_PERIOD = 16
DEFECT_PHASE = 11
#: each defect's factors on the dynamic power, leakage, cooler resistance, DRAM latency and bandwidth
DEFECT_FACTORS: dict[str, dict[str, float]] = {"leaky": {"leak": 3.0}, "hot": {"r_th": 1.6}, "hungry": {"dyn": 1.5},
                                               "slow-memory": {"dram_lat": 1.6, "dram_bw": 1.0 / 1.5}}
DEFECT_KINDS = tuple(DEFECT_FACTORS)

_SPEC = re.compile(r"(?P<preset>[^@\s]+)@(?P<serial>\d+)")


@dataclass(frozen=True)
class Variation:
    """Manufacturing variation of one unit (dimensionless factors; 1 / 0 = nominal)."""

    serial: int
    dyn: float
    leak: float
    dv: float
    r_th: float
    defect: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def planted_defect(serial: int) -> str | None:
    """The planted defect of unit ``serial`` (one of :data:`DEFECT_KINDS`), or None for a normal unit."""
    if serial % DEFECT_PERIOD != DEFECT_PHASE:
        return None
    return DEFECT_KINDS[(serial // DEFECT_PERIOD) % len(DEFECT_KINDS)]


def variation(serial: int) -> Variation:
    """The manufacturing variation of unit ``serial``: drawn from a generator seeded by the serial alone,
    so every process (a Slurm task, the scorer) derives the same unit."""
    rng = np.random.default_rng([_VARIATION_SEED, int(serial)])
    z = rng.standard_normal(4)
    return Variation(int(serial), dyn=float(math.exp(SIGMA_DYN * z[0])), leak=float(math.exp(SIGMA_LEAK * z[1])),
                     dv=float(SIGMA_DV * z[2]), r_th=float(math.exp(SIGMA_RTH * z[3])),
                     defect=planted_defect(int(serial)))


def apply_variation(preset: Any, var: Variation) -> Any:
    """``preset`` as manufactured unit ``var.serial``: its physics transformed by ``var`` (see module
    docstring); identity renamed to ``<preset>@<serial>``."""
    pp, th, tm = preset.power, preset.thermal, preset.timing
    f = {"dyn": 1.0, "leak": 1.0, "r_th": 1.0, "dram_lat": 1.0, "dram_bw": 1.0, **DEFECT_FACTORS.get(var.defect, {})}
    dyn, leak, r_th = var.dyn * f["dyn"], var.leak * f["leak"], var.r_th * f["r_th"]
    dram_lat, dram_bw = f["dram_lat"], f["dram_bw"]
    v2 = (1.0 + var.dv) ** 2
    units = {n: replace(u, max_power_w=u.max_power_w * dyn * v2) for n, u in pp.units.items()}
    power = replace(pp, units=units, const_sm_w=pp.const_sm_w * dyn * v2, activation_w=pp.activation_w * dyn * v2,
                    idle_core_w=pp.idle_core_w * v2,
                    leak_ref_w=pp.leak_ref_w * leak * (1.0 + var.dv) ** pp.leak_v_exp)
    thermal = replace(th, g_die_sink_w_per_c=th.g_die_sink_w_per_c / r_th,
                      g_sink_case0_w_per_c=th.g_sink_case0_w_per_c / r_th,
                      g_sink_case_fan_w_per_c=th.g_sink_case_fan_w_per_c / r_th)
    timing = replace(tm, dram_lat_a=tm.dram_lat_a * dram_lat, dram_lat_b=tm.dram_lat_b * dram_lat,
                     dram_bytes_per_mem_cycle=tm.dram_bytes_per_mem_cycle * dram_bw)
    extra = {**preset.extra, "fleet": {"base_preset": preset.name, **var.as_dict()}}
    if "mem_l_cycles" in preset.extra:  # the preset's published DRAM round trip moves with the defect
        extra["mem_l_cycles"] = preset.extra["mem_l_cycles"] * dram_lat
    return replace(preset, name=unit_name(preset.name, var.serial), power=power, thermal=thermal, timing=timing,
                   extra=extra)


def unit_name(base: str, serial: int) -> str:
    """Preset name of unit ``serial`` of ``base``: ``<base>@<serial>``."""
    return f"{base}{SERIAL_SEP}{int(serial)}"


def parse_unit(name: str) -> tuple[str, int] | None:
    """``"gtx280@17"`` -> ``("gtx280", 17)``; None when ``name`` names no unit (a plain preset).
    A malformed serial raises DeviceNotFoundError naming it."""
    if SERIAL_SEP not in name:
        return None
    m = _SPEC.fullmatch(name)
    if not m:
        raise DeviceNotFoundError(f"virtual GPU {name!r}: expected <preset>@<serial>, serial an integer "
                                  f"0..{MAX_SERIAL}, e.g. gtx280@17")
    serial = int(m["serial"])
    if serial > MAX_SERIAL:
        raise DeviceNotFoundError(f"virtual GPU {name!r}: serial {serial} above {MAX_SERIAL}")
    return m["preset"], serial


_UNITS: dict[tuple[str, int], Any] = {}


def unit_of(base: Any, serial: int) -> Any:
    """Preset ``base`` as manufactured unit ``serial`` (cached: presets are immutable). Called by
    :func:`microbench.devices.sim.presets.get_preset` for ``<preset>@<serial>``; this module does not import
    the presets (no import circle)."""
    key = (base.name, int(serial))
    if key not in _UNITS:
        _UNITS[key] = apply_variation(base, variation(serial))
    return _UNITS[key]
