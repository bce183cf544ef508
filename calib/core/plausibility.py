"""Plausible sensor readings: the limits a raw reading must respect to enter a measurement window.

A power, temperature or clock reading outside what the device can physically produce (a 99,999 W or
-50 W power sample, a 300 C temperature, a 90 GHz clock) is a sensor or logging fault. The samples
layer (:meth:`calib.core.session.Session.readings`) excludes such readings from the windows and warns
once per stream with the count and the first offending line; the raw logs are never changed, so the
exclusion can be inspected and undone.

Limits, per stream column (:func:`limits_for`):

- power (``power_w``, ``power_avg_w``): of a GPU sensor, 0 to :data:`POWER_MARGIN` x the board's power
  limit from the manifest (``device.power_limit_w``; NVML's maximum settable limit), else 0 to
  :data:`PHYSICAL_POWER_W`; of an analyzer (wall or rail power), :data:`ANALYZER_POWER_W`;
- temperature (``temp_c``, ``mem_temp_c``): :data:`PHYSICAL_TEMP_C`, the top lowered to the device's
  shutdown temperature (``device.shutdown_temp_c``) plus :data:`TEMP_MARGIN_C` when the manifest has it;
- clocks (``sm_mhz``, ``mem_mhz``, ``core_mhz``): 0 to :data:`CLOCK_MARGIN` x the highest supported
  clock of the domain (``device.clocks.supported``, ``device.max_sm_mhz``/``max_mem_mhz``), else 0 to
  :data:`PHYSICAL_CLOCK_MHZ`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

#: a GPU board's power reading, W, when the manifest does not give its limit (the largest boards and
#: superchip modules draw ~1-3 kW)
PHYSICAL_POWER_W = (0.0, 5000.0)
#: an analyzer's reading (system AC or a DC rail), W; a rail sensor reads slightly below 0 at no load
ANALYZER_POWER_W = (-10.0, 20000.0)
#: readings above this multiple of the board's power limit are not transients of a real board (NVML's
#: instant power overshoots the limit for milliseconds, by tens of per cent)
POWER_MARGIN = 2.0
#: die temperatures, C (also the bound of kernel descriptions' temp_c)
PHYSICAL_TEMP_C = (-60.0, 150.0)
#: a reading this far above the shutdown temperature cannot come from a running board, C
TEMP_MARGIN_C = 15.0
#: clocks, MHz
PHYSICAL_CLOCK_MHZ = (0.0, 10000.0)
#: boost and overclocking above the highest listed clock stay within this factor
CLOCK_MARGIN = 1.5

POWER_COLUMNS = ("power_w", "power_avg_w")
TEMP_COLUMNS = ("temp_c", "mem_temp_c")
#: clock column -> domain of device.clocks.supported
CLOCK_COLUMNS = {"sm_mhz": "core_mhz", "core_mhz": "core_mhz", "mem_mhz": "mem_mhz"}


@dataclass(frozen=True)
class Limit:
    """Allowed range of one column: [lo, hi] in ``unit``; ``source`` says where the range came from."""

    lo: float
    hi: float
    unit: str
    source: str

    def text(self, column: str) -> str:
        return f"{column} outside [{self.lo:g}, {self.hi:g}] {self.unit} ({self.source})"


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        return None
    return float(v)


def _max_clock(device: Mapping[str, Any], domain: str) -> float | None:
    clocks = device.get("clocks") if isinstance(device.get("clocks"), Mapping) else {}
    supported = clocks.get("supported") if isinstance(clocks.get("supported"), Mapping) else {}
    values = [_number(x) for x in (supported.get(domain) or []) if _number(x) is not None]
    values += [v for v in (_number(clocks.get(domain)),
                           _number(device.get("max_sm_mhz" if domain == "core_mhz" else "max_mem_mhz"))) if v]
    return max(values) if values else None


def limits_for(device: Mapping[str, Any], sensor: Mapping[str, Any]) -> dict[str, Limit]:
    """The limits of the columns of one sensor stream (module docstring), from the manifest's ``device``
    and the sensor's entry in ``sensors``."""
    columns = [c for c in (sensor.get("columns") or []) if isinstance(c, str)]
    out: dict[str, Limit] = {}
    analyzer = sensor.get("kind") == "analyzer"
    cap = _number(device.get("power_limit_w"))
    for c in columns:
        if c in POWER_COLUMNS:
            if analyzer:
                out[c] = Limit(*ANALYZER_POWER_W, "W", "physical limits of an analyzer")
            elif cap is not None:
                out[c] = Limit(0.0, POWER_MARGIN * cap, "W", f"{POWER_MARGIN:g} x the board's {cap:g} W power limit")
            else:
                out[c] = Limit(*PHYSICAL_POWER_W, "W", "physical limits; the manifest gives no power limit")
        elif c in TEMP_COLUMNS:
            stop = _number(device.get("shutdown_temp_c"))
            out[c] = (Limit(*PHYSICAL_TEMP_C, "C", "physical limits") if stop is None else
                      Limit(PHYSICAL_TEMP_C[0], min(PHYSICAL_TEMP_C[1], stop + TEMP_MARGIN_C), "C",
                            f"the board shuts down at {stop:g} C"))
        elif c in CLOCK_COLUMNS:
            top = _max_clock(device, CLOCK_COLUMNS[c])
            out[c] = (Limit(*PHYSICAL_CLOCK_MHZ, "MHz", "physical limits") if top is None else
                      Limit(0.0, CLOCK_MARGIN * top, "MHz", f"{CLOCK_MARGIN:g} x the highest clock, {top:g} MHz"))
    return out


@dataclass
class Screening:
    """What :func:`screen` excluded from one stream."""

    counts: dict[str, int] = field(default_factory=dict)       # column -> readings excluded
    limits: dict[str, Limit] = field(default_factory=dict)
    first_line: int | None = None                              # file line of the first offending reading
    first: tuple[str, float] | None = None                     # (column, value) there

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def message(self, path: Any) -> str:
        parts = "; ".join(f"{self.limits[c].text(c)}: {n}" for c, n in self.counts.items())
        col, v = self.first or ("?", math.nan)
        return (f"{path}: {self.total} implausible reading{'s' if self.total != 1 else ''} excluded from the "
                f"measurement windows ({parts}); first at line {self.first_line}: {col} = {v:g}; "
                "the log itself is unchanged")


def screen(df: pd.DataFrame, limits: Mapping[str, Limit]) -> tuple[pd.DataFrame, Screening]:
    """``df`` with every reading outside its column's limits set to NaN (missing: the windows skip it),
    and what was excluded. Rows are kept (other columns of the row stay usable); line numbers assume
    ``df`` holds the stream's rows in file order after a one-line header."""
    rep = Screening()
    bad_any = np.zeros(len(df), dtype=bool)
    masks = {}
    for c, lim in limits.items():
        if c not in df.columns:
            continue
        v = df[c].to_numpy(dtype=float)
        bad = np.isfinite(v) & ((v < lim.lo) | (v > lim.hi))
        if bad.any():
            masks[c] = bad
            bad_any |= bad
            rep.counts[c] = int(bad.sum())
            rep.limits[c] = lim
    if not masks:
        return df, rep
    i = int(np.flatnonzero(bad_any)[0])
    col = next(c for c in masks if masks[c][i])
    rep.first_line, rep.first = i + 2, (col, float(df[col].iloc[i]))
    out = df.copy()
    for c, bad in masks.items():
        out.loc[bad, c] = np.nan
    return out, rep
