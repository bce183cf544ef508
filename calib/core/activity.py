"""Access rates from per-warp counts: IPP eqs. (10)-(12), the only copy in the toolkit.

    Warps_per_SM = (#threads per block / 32) x (#blocks / #active SMs)                     (12)
    AccessRate   = DAC_per_th x Warps_per_SM / (Exec_cycles x warp_issue_per_cycle)       (10), (11)

``Exec_cycles`` is the kernel time (s) x core clock (Hz); the paper's ``Exec_cycles / 4`` is
``Exec_cycles x 1/4`` for GT200, which issues one warp instruction every 4 cycles. Units of the memory
clock domain (DRAM) count accesses per memory cycle instead, scaled at the reference (default) clock
ratio: identical to eq. (10) at the reference clocks, and the utilization of the memory domain at
other clocks (the ratio ``(core/mem) / (core0/mem0)``).

Every consumer (the samples layer, the power models, the energy decisions) computes access rates
here, so a kernel gets the same activities -- and the same power -- whichever verb asks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from calib.core.arch import IPP_WARP_ISSUE_PER_CYCLE
from calib.core.params import ParameterFile
from calib.core.units import DERIVED_UNITS, INSTRUCTION_CLASSES, in_memory_domain, unit_counts

#: warp instructions an SM issues per cycle when nothing better is known (calib.core.arch: GT200, IPP's
#: GTX280, issues one every 4 cycles)
DEFAULT_WARP_ISSUE_PER_CYCLE = IPP_WARP_ISSUE_PER_CYCLE
CNT_PREFIX = "cnt_"
#: the launch columns eq. (10)-(12) need besides counts and time
LAUNCH_COLUMNS = ("threads_per_block", "blocks", "core_mhz")


def warps_per_sm(threads_per_block, blocks, active_sms):  # noqa: ANN001, ANN201 - scalars or arrays
    """IPP eq. (12): ``(threads_per_block / 32) x (blocks / active_sms)`` (scalars or arrays)."""
    return threads_per_block / 32.0 * blocks / active_sms


@dataclass(frozen=True)
class ActivityBasis:
    """What eq. (10) needs to know about a GPU: its units (and which are in the memory clock domain),
    SM count, issue rate (warp instructions per cycle per SM), the reference clocks (MHz) at which
    memory-domain access rates equal eq. (10), and which instruction classes each unit counts
    (``unit_classes``; None: IPP's, :data:`calib.core.units.IPP_UNIT_CLASSES`)."""

    units: tuple[str, ...]
    mem_units: frozenset[str] = frozenset()
    sm_count: int = 1
    warp_issue_per_cycle: float = DEFAULT_WARP_ISSUE_PER_CYCLE
    ref_core_mhz: float | None = None
    ref_mem_mhz: float | None = None
    unit_classes: Mapping[str, Sequence[str]] | None = None

    def mem_ratio(self, core_mhz, mem_mhz):  # noqa: ANN001, ANN201 - scalars or arrays
        """Scale of memory-domain access rates at ``(core_mhz, mem_mhz)``: 1 at the reference clocks."""
        if not self.ref_core_mhz or not self.ref_mem_mhz or mem_mhz is None:
            return 1.0
        return (core_mhz / mem_mhz) / (self.ref_core_mhz / self.ref_mem_mhz)


def access_rates(basis: ActivityBasis, counts: Mapping[str, object], wps, time_s, core_mhz,  # noqa: ANN001
                 mem_mhz=None) -> dict[str, np.ndarray]:  # noqa: ANN001
    """Access rate of every unit of ``basis`` (eq. 10), not clipped.

    ``counts``: per-warp dynamic access counts per unit (:func:`calib.core.units.unit_counts`);
    ``wps``: warps per SM (eq. 12); ``time_s``: kernel time, s; ``core_mhz``/``mem_mhz``: clocks, MHz
    (scalars or arrays of one length). A unit without counts has rate 0.
    """
    cycles = np.asarray(time_s, float) * np.asarray(core_mhz, float) * 1e6
    wps = np.asarray(wps, float)
    ratio = basis.mem_ratio(np.asarray(core_mhz, float), None if mem_mhz is None else np.asarray(mem_mhz, float))
    out = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for u in basis.units:
            ar = np.asarray(counts.get(u, 0.0), float) * wps / (cycles * basis.warp_issue_per_cycle)
            out[u] = ar * ratio if u in basis.mem_units else ar
    return out


def count_columns(df: pd.DataFrame) -> dict[str, np.ndarray]:
    """Per-warp counts by instruction class from the ``cnt_<class>`` columns of a table."""
    return {c: df[CNT_PREFIX + c].to_numpy(float) for c in INSTRUCTION_CLASSES if CNT_PREFIX + c in df.columns}


def has_counts(df: pd.DataFrame) -> bool:
    """Whether a table carries what :func:`table_access_rates` needs (counts, launch shape, clock)."""
    return bool(count_columns(df)) and all(c in df.columns for c in LAUNCH_COLUMNS)


def table_access_rates(basis: ActivityBasis, df: pd.DataFrame, time_s=None,  # noqa: ANN001
                       units: Iterable[str] | None = None) -> dict[str, np.ndarray]:
    """Access rates (clipped to [0, 1]) of ``units`` (default: all of ``basis``) for the kernel rows of
    a table: ``cnt_<class>`` counts, ``threads_per_block``, ``blocks``, ``active_sms`` (default: all
    SMs), ``core_mhz``, ``mem_mhz`` (optional) and ``time_s`` (s; or the ``time_s`` argument)."""
    n = len(df)
    t = df["time_s"].to_numpy(float) if time_s is None else np.broadcast_to(np.asarray(time_s, float), (n,))
    active = df["active_sms"].to_numpy(float) if "active_sms" in df.columns else np.full(n, float(basis.sm_count))
    active = np.where(np.isnan(active), float(basis.sm_count), active)
    wps = warps_per_sm(df["threads_per_block"].to_numpy(float), df["blocks"].to_numpy(float), active)
    counts = unit_counts(count_columns(df), size=n, unit_classes=basis.unit_classes)
    mem = df["mem_mhz"].to_numpy(float) if "mem_mhz" in df.columns else None
    sub = basis if units is None else replace(basis, units=tuple(units))
    ars = access_rates(sub, counts, wps, t, df["core_mhz"].to_numpy(float), mem)
    return {u: np.clip(a, 0.0, 1.0) for u, a in ars.items()}


def basis_of(pf: ParameterFile, units: Iterable[str] | None = None) -> ActivityBasis:
    """The activity basis a parameter file implies: the units of its IPP power section (or of its DVFS
    section, or ``units``), their clock domains, the SM count, the issue rate (the power section's,
    else the device's, else one over the timing section's ``issue_cycles``, else
    :data:`DEFAULT_WARP_ISSUE_PER_CYCLE`) and the default clocks as reference."""
    power = pf.get("power")
    st = power.structure if power is not None else {}
    dvfs = pf.get("dvfs") or (power if power is not None and power.model == "dvfs" else None)
    domains: dict[str, str] = {}
    if power is not None and power.model == "ipp":
        domains.update({u: s.get("domain", "core") for u, s in st["units"].items()})
    for u in (dvfs.structure.get("units", []) if dvfs is not None else []):
        domains.setdefault(u["name"], u.get("domain", "core"))
    # derived units (the dispatch stage) have no instruction classes: the power model computes them
    names = tuple(units) if units is not None else tuple(u for u in domains if u not in DERIVED_UNITS)
    mem = frozenset(u for u in names if domains.get(u, "mem" if in_memory_domain(u) else "core") == "mem")
    issue = st.get("warp_issue_per_cycle") or pf.device.get("warp_issue_per_cycle")
    timing = pf.get("timing")
    if not issue:
        issue = (1.0 / timing.value("issue_cycles") if timing is not None and "issue_cycles" in timing
                 else DEFAULT_WARP_ISSUE_PER_CYCLE)
    clocks = st.get("default_clocks") or pf.device.get("clocks") or {}
    sm = int(st.get("sm_count") or pf.device.get("sm_count") or 1)
    classes = pf.device.get("unit_classes")  # a GPU family whose units are not IPP's (calib.core.arch)
    return ActivityBasis(names, mem, sm, float(issue), clocks.get("core_mhz"), clocks.get("mem_mhz"),
                         {u: tuple(c) for u, c in classes.items()} if isinstance(classes, dict) else None)
