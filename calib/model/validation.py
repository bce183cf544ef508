"""Shared pieces of the models' own section checks (each model validates the section it is built from)."""

from __future__ import annotations

import re
from collections.abc import Iterable

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


def check_names(sec: Section, where: str, known: Iterable[str] = (), patterns: Iterable[str] = ()) -> None:
    """SchemaError naming the first parameter the section's model does not have: not in ``known`` and
    matching none of ``patterns`` (regular expressions of per-unit / per-level names). A typo such as
    ``bogus_w`` would otherwise be carried along, shown in reports and compared by ``calib diff``
    without any model ever reading it."""
    known = set(known)
    rx = [re.compile(p) for p in patterns]
    for name in sec.params:
        if name in known or any(r.fullmatch(name) for r in rx):
            continue
        raise SchemaError(f"{where}.parameters.{name}: not a parameter of the {sec.model!r} model (a typo, or a "
                          "file edited by hand?); remove it or fix its name")


#: fit-quality gate: a section whose training error passes one of these limits is not a calibration of
#: anything (the data or the model are wrong), and `calib fit`/`calib run` refuse to write it unless
#: --accept-poor-fit; `calib validate` refuses a file that records one. Section name -> {statistic:
#: limit}; "r2" is a lower limit, the others upper limits. The limits sit 5-10x beyond the worst good fits
#: of tests/benchmarks/fit_quality_study.py (figures: tests/benchmarks/code_figures.md); the transfer
#: section is not gated (the fixed latency of the smallest copies dominates its MAPE on good fits).
FIT_LIMITS: dict[str, dict[str, float]] = {
    "power": {"mape_pct": 25.0, "r2": 0.8},
    "dvfs": {"mape_pct": 25.0, "r2": 0.8},
    "thermal": {"rmse_c": 5.0, "r2": 0.8},
    "thermal_network": {"rmse_c": 5.0},
    "timing": {"mape_pct": 50.0},
}
_STAT_TEXT = {"mape_pct": ("MAPE", "%"), "r2": ("R^2", ""), "rmse_c": ("RMSE", " degC"), "rmse_w": ("RMSE", " W"),
              "rmse_s": ("RMSE", " s")}


def fit_quality_problems(sections: Iterable[tuple[str, Section]]) -> list[str]:
    """The limits of :data:`FIT_LIMITS` that fitted sections pass, as 'power: MAPE 656 % (limit 25 %)'."""
    out = []
    for name, sec in sections:
        stats = sec.stats or {}
        for key, limit in FIT_LIMITS.get(name, {}).items():
            v = stats.get(key)
            if v is None or not isinstance(v, (int, float)):
                continue
            bad = v < limit if key == "r2" else v > limit
            if bad or v != v:  # NaN: no fit at all
                label, unit = _STAT_TEXT[key]
                out.append(f"{name}: {label} {v:.4g}{unit} ({'at least' if key == 'r2' else 'limit'} {limit:g}{unit})")
    return out
