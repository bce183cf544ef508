"""Shared pieces of the models' own section checks (each model validates the section it is built from)."""

from __future__ import annotations

from calib.core.errors import SchemaError
from calib.core.params import Section

#: a powered GPU board draws several W at idle (fans, DRAM refresh, regulator losses); a fitted idle
#: power below this comes from a power sensor that read ~0 (e.g. NVML power not supported), and every
#: prediction of such a file would be meaningless, so it is refused rather than warned about
MIN_IDLE_POWER_W = 1.0
#: streaming multiprocessors: the largest GPUs have ~150 (the schema's device.sm_count bound too)
MAX_SM_COUNT = 1024


def in_range(sec: Section, name: str, where: str, lo: float, hi: float, why: str,
             lo_open: bool = False, hi_open: bool = False) -> None:
    """SchemaError when parameter ``name`` is present and outside [lo, hi] (open ends when asked)."""
    p = sec.params.get(name)
    if p is None:
        return
    v = p.value
    ok_lo = v > lo if lo_open else v >= lo
    ok_hi = v < hi if hi_open else v <= hi
    if not (ok_lo and ok_hi):
        rng = f"{'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
        raise SchemaError(f"{where}.parameters.{name}: {v:g} is outside {rng}: {why}")
