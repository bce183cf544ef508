"""gpmTOOL measurement CSV -> samples table.

Format (gpmTOOL, Guerreiro et al., HPCA 2018 / TPDS 2019; see
../shared/data/guerreiro-gtxtitanx/README.md)::

    line 1: number of clock domains (1 or 2: core[, memory])
    line 2: default clocks, MHz, one per domain ("975,3505")
    line 3: number of components per domain ("7,1")
    line 4: component names, core-domain components first ("SP,INT,...,DRAM")
    then one row per measurement: [name,] P_W, F_core_MHz[, F_mem_MHz], util_1 .. util_n

The leading name column is optional (the ``*_named_*`` files have it); all data rows must agree.

Output columns: ``workload``, ``power_w``, ``core_mhz``, ``mem_mhz``, ``act_<component>``, and
``ref_core_mhz``/``ref_mem_mhz`` = the default clocks of line 2, because gpmTOOL measures the
utilizations once, at the default clocks, and repeats them on every row (the DVFS fitter uses this).

* Component names become unit names with runs of characters other than letters, digits and ``_``
  replaced by ``_`` ("SP ADD" -> ``act_SP_ADD``).
* A memory-domain component whose name the samples-table rule would not put in the memory domain
  (no ``dram``/``global``/``local``/``mem`` in it) gets a ``mem_`` prefix, so that the rule holds;
  a core-domain component whose name contains one of those tokens is reported with a warning (fit
  with ``--mem-units`` then).
* Without a name column, rows with identical utilizations form one workload, named ``mb001``,
  ``mb002``, ... in order of first appearance (a microbenchmark measured at every clock pair).
* gpmTOOL *model* files (``*_model_*``: clock lists and fitted coefficients) are refused.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from calib.core.errors import BadInputError
from calib.importers._common import cut_hint, is_number, read_text, to_float, unit_name
from calib.core.samples import check_samples
from calib.core.units import in_memory_domain

DESCRIPTION = "gpmTOOL measurement CSV (4 header lines, then P, clocks, utilizations; optional name column)"


def _ints(line: str, where: str) -> list[int]:
    out = []
    for f in line.split(","):
        v = to_float(f, where)
        if not np.isfinite(v) or v != int(v) or v < 0:  # int(nan), int(inf) would raise
            raise BadInputError(f"{where}: {f.strip()!r} is not a non-negative integer")
        out.append(int(v))
    return out


def read(path: str | os.PathLike) -> pd.DataFrame:
    """Read a gpmTOOL measurement file into a checked samples table (module docstring)."""
    p = Path(path)
    lines, ends_nl = read_text(p)
    while lines and not lines[-1].strip():
        lines.pop()
    if len(lines) < 5:
        raise BadInputError(f"{p}: {len(lines)} lines; a gpmTOOL file has 4 header lines and then data rows")
    nd = _ints(lines[0], f"{p}: line 1 (number of clock domains)")
    if len(nd) != 1 or nd[0] not in (1, 2):
        raise BadInputError(f"{p}: line 1: number of clock domains must be 1 or 2, got {lines[0].strip()!r}")
    n_dom = nd[0]
    defaults = [to_float(f, f"{p}: line 2 (default clocks, MHz)") for f in lines[1].split(",")]
    if len(defaults) != n_dom or not all(np.isfinite(v) and v > 0 for v in defaults):
        raise BadInputError(f"{p}: line 2: expected {n_dom} positive default clock(s) in MHz (finite), got {lines[1].strip()!r}")
    per_dom = _ints(lines[2], f"{p}: line 3 (components per domain)")
    if len(per_dom) != n_dom:
        raise BadInputError(f"{p}: line 3: expected {n_dom} component count(s), got {lines[2].strip()!r}")
    raw_names = [s.strip() for s in lines[3].split(",")]
    n_comp = sum(per_dom)
    if len(raw_names) != n_comp:
        raise BadInputError(f"{p}: line 4: expected {n_comp} component names (line 3 says {lines[2].strip()}), "
                            f"got {len(raw_names)}")
    if not all(raw_names):
        k = raw_names.index("")
        raise BadInputError(f"{p}: line 4: component name {k + 1} of {n_comp} is empty")
    n_core = per_dom[0]
    units = []
    for i, raw in enumerate(raw_names):
        u = unit_name(raw)
        if not u:
            raise BadInputError(f"{p}: line 4: component {i + 1} ({raw!r}) has no usable name")
        if i >= n_core and not in_memory_domain(u):
            u = "mem_" + u
        elif i < n_core and in_memory_domain(u):
            warnings.warn(f"{p}: component {raw!r} is in the core domain but its name puts it in the memory domain "
                          f"by default; fit with --mem-units to override", stacklevel=2)
        units.append(u)
    dup = sorted({u for u in units if units.count(u) > 1})
    if dup:
        raise BadInputError(f"{p}: line 4: component name {dup[0]!r} appears more than once")
    n_num = 1 + n_dom + n_comp
    rows = [(i + 5, line) for i, line in enumerate(lines[4:]) if line.strip()]
    first = rows[0][1].split(",")
    named = len(first) == n_num + 1
    if len(first) not in (n_num, n_num + 1):
        hint = (" (this looks like a gpmTOOL model file with fitted parameters, not measurements)"
                if all(is_number(f) for f in first) else "")
        raise BadInputError(f"{p}: line {rows[0][0]}: {len(first)} fields, expected {n_num} (power, {n_dom} clock(s), "
                            f"{n_comp} utilizations) or {n_num + 1} with a leading name{hint}"
                            + cut_hint(len(rows) == 1 and len(first) < n_num, ends_nl))
    clock_names = ["core_mhz", "mem_mhz"][:n_dom]
    fields = ["power_w"] + clock_names + [f"act_{u}" for u in units]
    names: list[str] = []
    data = np.empty((len(rows), n_num))
    for r, (ln, line) in enumerate(rows):
        parts = line.split(",")
        if len(parts) != n_num + named:
            raise BadInputError(f"{p}: line {ln}: {len(parts)} fields, expected {n_num + named}"
                                + cut_hint(r == len(rows) - 1 and len(parts) < n_num + named, ends_nl))
        if named:
            nm = parts[0].strip()
            if not nm:
                raise BadInputError(f"{p}: line {ln}: empty workload name")
            names.append(nm)
            parts = parts[1:]
        for c, f in enumerate(parts):
            v = to_float(f, f"{p}: line {ln}, field '{fields[c]}'")
            if not np.isfinite(v):
                raise BadInputError(f"{p}: line {ln}, field '{fields[c]}': {f.strip()!r} is not a finite number")
            if c == 0 and v <= 0:
                raise BadInputError(f"{p}: line {ln}, field 'power_w': {v:g} W is not a positive power")
            if 0 < c <= n_dom and v <= 0:
                raise BadInputError(f"{p}: line {ln}, field '{fields[c]}': {v:g} MHz is not a positive clock")
            if c > n_dom and not (-1e-9 <= v <= 1 + 1e-9):
                raise BadInputError(f"{p}: line {ln}, field '{fields[c]}': utilization {v:g} outside [0, 1]")
            data[r, c] = v
    df = pd.DataFrame(data, columns=fields)
    if not named:
        keys = [tuple(r) for r in np.round(data[:, 1 + n_dom:], 12)]
        order: dict[tuple, int] = {}
        for k in keys:
            order.setdefault(k, len(order) + 1)
        width = max(3, len(str(len(order))))
        names = [f"mb{order[k]:0{width}d}" for k in keys]
    df.insert(0, "workload", names)
    df["ref_core_mhz"] = defaults[0]
    if n_dom == 2:
        df["ref_mem_mhz"] = defaults[1]
    return check_samples(df, str(p), require_power=True, locations=[(r + 1, ln) for r, (ln, _) in enumerate(rows)])


def write(df: pd.DataFrame, path: str | os.PathLike, default_clocks: tuple[float, float] | None = None,
          named: bool = True) -> None:
    """Write a samples table in gpmTOOL's format (core units first, then memory units).

    ``default_clocks`` defaults to the table's ``ref_core_mhz``/``ref_mem_mhz``. Used to hand tables to
    gpmTOOL itself and by the round-trip tests.
    """
    from calib.core.atomic import atomic_write_text
    from calib.core.samples import act_units

    units = act_units(df)
    core = [u for u in units if not in_memory_domain(u)]
    mem = [u for u in units if in_memory_domain(u)]
    if default_clocks is None:
        default_clocks = (float(df["ref_core_mhz"].iloc[0]), float(df["ref_mem_mhz"].iloc[0]))
    out = ["2", f"{default_clocks[0]:g},{default_clocks[1]:g}", f"{len(core)},{len(mem)}", ",".join(core + mem)]
    for _, r in df.iterrows():
        vals = [f"{r['power_w']:.10g}", f"{r['core_mhz']:g}", f"{r['mem_mhz']:g}"] + [f"{r['act_' + u]:.10g}" for u in core + mem]
        out.append(",".join(([str(r["workload"])] if named else []) + vals))
    atomic_write_text(path, "\n".join(out) + "\n")
