"""DVFS-aware GPU power model over any set of unit activities (core and memory clock domains).

The model (the gpmTOOL form of Guerreiro et al., HPCA 2018 / TPDS 2019, extended; see
../shared/reference/prior-art.md) predicts board power, W, of a row at core clock ``fc`` and memory
clock ``fm`` (MHz) from the activities ``U_i`` in [0, 1] of its units::

    P = Vc * static_core_w + Vc * leak_core_w_per_c * (T - temp_ref_c)         static, leakage (eq. 22 form)
      + Vm * static_mem_w
      + Vc^2 * fc/fc0 * (const_core_w + active_core_w * [any core U > 0] + sum_core w_i * g_i(U'_i))
      + Vm^2 * fm/fm0 * (const_mem_w  + active_mem_w  * [any mem U > 0]  + sum_mem  w_j * g_j(U'_j))

* ``Vc``, ``Vm``: relative voltage of each domain (1 at the reference clocks ``fc0``, ``fm0``). NVML
  cannot read voltages, so they are latent: one value per clock level in the fitted table
  (parameters ``v_core_<MHz>``, ``v_mem_<MHz>``), non-decreasing in clock. Between levels the voltage
  is interpolated linearly (monotone); outside the fitted range it is held at the end value ("clamp",
  with a warning), while the ``f`` factor keeps the row's clock.
* Core voltage per memory level (``voltage.core.per_mem`` in the structure, optional): the core
  voltage at a given core clock may depend on the memory clock, because the driver's performance
  state (chosen with the memory clock) has its own voltage/frequency table. On the GTX Titan X the
  idle board draws +1.5 W from 595 to 975 MHz core at memory 3300-4005 MHz but +5.9 W at 810 MHz:
  the core voltage is flat below 975 MHz in the first case and rises from about 0.88 in the second.
  Then every memory level has its own monotone core curve (``v_core_<MHz>_mem_<MHz>``; the curve of
  the reference memory clock keeps the names ``v_core_<MHz>``) and a row's core voltage is bilinear
  in (core clock, memory clock) over that table, clamped at its edges.
* All W coefficients are the power at the reference clocks; ``w_<unit>`` is the dynamic power of a
  unit at full activity. ``active_*_w`` is the power of a domain as soon as a kernel keeps it busy at
  all (IPP's constant runtime power of active SMs); it exists only when the training table has rows
  with and without activity in that domain (e.g. an idle row).
* ``g_i``: the access-rate transform of unit ``i`` (``ar_form`` in the structure). Default
  ``"tpow"``, a thresholded power with shared parameters ``ar_tp_lambda`` (lam) and
  ``ar_tp_threshold`` (t)::

      g(U) = max(0, (U**lam - t**lam) / (1 - t**lam))      0 below U = t, 1 at U = 1, concave

  It contains the linear form (lam = 1, t = 0), ``U**p`` (t = 0) and, as lam -> 0, IPP's clamped
  log ``a*ln(U) + b`` with ``a/b = 1/ln(1/t)`` (IPP's 0.1365/1.001375 is t = 6.5e-4). The threshold
  says that a unit busy on a few % of cycles stays clock-gated most of the time. The other forms:
  ``"linear"``, ``"pow"`` (``U**ar_exponent``), ``"boxcox"`` (``max(0, 1 + a*(U**lam - 1)/lam)``,
  ``ar_bc_a``, ``ar_bc_lambda``: the same family for a >= lam, plus a jump at U = 0+ for a < lam) and
  ``"log"`` (IPP's form from :mod:`calib.model.arfunc`, ``ar_log_a``, ``ar_log_b``). Every form maps
  U = 0 to 0; the shape parameters are shared by the units.
* ``T`` (``temp_c``) enters only through the leakage term, and only when the table had temperatures.
* Memory-bound throughput (optional, ``activity_clocks`` in the structure): published tables (gpmTOOL)
  measure activities once, at the clocks ``(ac, am)``, and repeat them at every clock. A kernel
  whose memory activity is ``beta = min(1, sum_mem U / mem_sat)`` of saturation runs, relative to
  the activity clocks, ``tau = max(ac/fc, beta * am/fm)`` times longer (it becomes memory bound when
  the memory clock drops or the core clock rises). Activities at the row's clocks are then
  ``U'_core = min(1, U * (ac/fc) / tau)`` and ``U'_mem = min(1, U * (am/fm) / tau)``. Without
  ``activity_clocks`` (activities measured at every row's own clocks), ``U' = U``.

With one clock configuration the voltages are 1, the clock factors are 1 and the constant terms merge
into ``const_core_w``: the model is IPP's ``P = const + sum_i w_i * g_i(U_i)``.

Parameter-file layout (section ``power``, or ``dvfs`` in session fits; ``"model": "dvfs"``)::

    "units": [{"name": "SP", "domain": "core", "ar_form": "pow"}, ...],
    "ref_clocks": {"core_mhz": 975.0, "mem_mhz": 3505.0},      V = 1 and coefficients at these clocks
    "voltage": {"core": {"mhz": [595.0, ...], "params": ["v_core_595", ...],
                         "per_mem": {"mem_mhz": [810.0, ...],                     optional: one curve
                                     "params": [["v_core_595_mem_810", ...], ...]}},   per memory level
                "mem":  {"mhz": [...], "params": [...]}},
    "activity_clocks": {"core_mhz": .., "mem_mhz": .., "source": ".."} or null,
    "temp_ref_c": 45.0 or null,
    "parameters": {...}

A term is present exactly when its parameter is in ``parameters``.

The equation is written once, as the columns of its design (:func:`columns`: d P / d coefficient per
row at given shapes and voltages, so that ``P = columns @ coefficients``), with the derivatives in the
voltages (:func:`voltage_gradient`) and the shapes (:func:`shape_gradient`); predictions
(:func:`evaluate`) and the fitter (:mod:`calib.fit.dvfs`) both use them.

Cite when publishing results from the Guerreiro et al. data: J. Guerreiro, A. Ilic, N. Roma, P. Tomas,
"GPGPU Power Modeling for Multi-Domain Voltage-Frequency Scaling", HPCA 2018; "Modeling and Decoupling
the GPU Power Consumption for Cross-Domain DVFS", IEEE TPDS 2019.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from calib.core import names
from calib.core.errors import BadInputError, SchemaError
from calib.core.params import Section
from calib.model.arfunc import IPP_A, IPP_B, LINEAR, LOG, ar_transform
from calib.model.thermal import leakage_w
from calib.model.validation import MIN_IDLE_POWER_W, check_names, in_range

MODEL_NAME = "dvfs"
POW = "pow"
BOXCOX = "boxcox"
TPOW = "tpow"
FORMS = (LINEAR, LOG, POW, BOXCOX, TPOW)
CORE, MEM = "core", "mem"

#: linear-coefficient parameters in the order of the design columns (before the unit weights)
CONST_TERMS = ("static_core_w", "static_mem_w", "const_core_w", "const_mem_w", "active_core_w", "active_mem_w",
               "leak_core_w_per_c")
#: shape parameters of the access-rate transforms and of the memory-bound rescaling (shared by the units)
SHAPE_NAMES = ("ar_exponent", "ar_log_a", "ar_log_b", "ar_bc_a", "ar_bc_lambda", "ar_tp_lambda", "ar_tp_threshold",
               "mem_sat")
#: terms that scale with the core voltage alone (static), and the domain of every term
STATIC_TERMS = ("static_core_w", "static_mem_w", "leak_core_w_per_c")
TERM_DOMAIN = {"static_core_w": CORE, "static_mem_w": MEM, "const_core_w": CORE, "const_mem_w": MEM,
               "active_core_w": CORE, "active_mem_w": MEM, "leak_core_w_per_c": CORE}


def transform_into(x: np.ndarray, form: str, shape: Mapping[str, float], out: np.ndarray) -> np.ndarray:
    """``g(x)`` of one access-rate form, written into ``out`` (same shape as ``x``); 0 where ``x`` is 0.

    Powers are computed as ``exp(p * ln x)`` (about 3x faster than ``np.power``); ``x`` in [0, 1].
    """
    if form == LINEAR:
        np.copyto(out, x)
        return out
    if form not in (POW, LOG, BOXCOX, TPOW):
        raise ValueError(f"unknown access-rate form {form!r}; expected one of {FORMS}")
    if form == LOG:  # IPP's own function (calib.model.arfunc)
        np.copyto(out, ar_transform(x, LOG, shape.get("ar_log_a", IPP_A), shape.get("ar_log_b", IPP_B)))
        return out
    np.maximum(x, 1e-300, out=out)
    np.log(out, out=out)
    if form == TPOW:
        lam, t = shape["ar_tp_lambda"], shape["ar_tp_threshold"]
        if t > 0 and lam < 1e-9:  # the limit lam -> 0: ln(U/t) / ln(1/t), IPP's log
            out -= math.log(t)
            out /= -math.log(t)
        else:
            tl = t**lam
            out *= lam
            np.exp(out, out=out)
            out -= tl
            out /= 1.0 - tl
    elif form == POW:
        out *= shape["ar_exponent"]
        np.exp(out, out=out)
    else:
        a, lam = shape["ar_bc_a"], shape["ar_bc_lambda"]
        if lam < 1e-9:  # the Box-Cox limit: 1 + a*ln(x)
            out *= a
            out += 1.0
        else:
            out *= lam
            np.exp(out, out=out)
            out *= a / lam
            out += 1.0 - a / lam
    np.maximum(out, 0.0, out=out)
    out *= x > 0
    return out


def transform(u: np.ndarray, form: str, shape: Mapping[str, float]) -> np.ndarray:
    """Access-rate transform ``g(u)`` of one form (dimensionless in, dimensionless out, any shape)."""
    u = np.asarray(u, dtype=float)
    return transform_into(u, form, shape, np.empty_like(u))


@dataclass
class Rows:
    """The per-row inputs of the model as arrays (one entry per row)."""

    fc: np.ndarray            # core clock, MHz
    fm: np.ndarray            # memory clock, MHz
    U: np.ndarray             # activities, rows x units, in [0, 1]
    temp: np.ndarray | None   # temperature, degC
    ac: np.ndarray | None     # core clock at which the activities were measured, MHz
    am: np.ndarray | None     # memory clock at which the activities were measured, MHz


def scaled_activities(U: np.ndarray, is_mem: np.ndarray, fc: np.ndarray, fm: np.ndarray, ac: np.ndarray,
                      am: np.ndarray, mem_sat: float) -> np.ndarray:
    """Activities at the row's clocks ``(fc, fm)`` from activities measured at ``(ac, am)`` (all MHz;
    ``mem_sat``: summed memory activity at which a kernel is memory bound; module docstring)."""
    rc = ac / fc
    rm = am / fm
    beta = np.minimum(1.0, U[:, is_mem].sum(axis=1) / mem_sat) if is_mem.any() else np.zeros(len(fc))
    tau = np.maximum(rc, beta * rm)
    out = np.empty_like(U)
    out[:, ~is_mem] = np.minimum(1.0, U[:, ~is_mem] * (rc / tau)[:, None])
    out[:, is_mem] = np.minimum(1.0, U[:, is_mem] * (rm / tau)[:, None])
    return out


@dataclass
class Compiled:
    """A section turned into arrays for fast evaluation."""

    units: list[str]
    forms: list[str]
    is_mem: np.ndarray
    core_mhz: np.ndarray
    mem_mhz: np.ndarray
    vcore: np.ndarray
    vmem: np.ndarray
    f0c: float
    f0m: float
    coef: dict[str, float]
    weights: np.ndarray
    shape: dict[str, float]
    act_clocks: dict[str, Any] | None
    temp_ref_c: float | None
    vcore_mem_mhz: np.ndarray | None = None   # memory levels of the per-memory-level core voltage curves
    vcore_tab: np.ndarray | None = None       # their voltages: core levels x memory levels

    def core_volts(self, fc: np.ndarray, fm: np.ndarray) -> np.ndarray:
        """Relative core voltage per row: one curve in the core clock, or, with per-memory-level curves,
        bilinear in (core clock, memory clock) over the table (each curve linear in the core clock, then
        linear between neighbouring memory levels; clamped at the ends)."""
        if self.vcore_tab is None:
            return np.interp(fc, self.core_mhz, self.vcore)
        tab = self.vcore_tab
        nc, nm = tab.shape
        if nm == 1:
            return np.interp(fc, self.core_mhz, tab[:, 0])
        # fractional table positions (np.interp clamps outside the levels)
        xc = np.interp(fc, self.core_mhz, np.arange(nc, dtype=float)) if nc > 1 else np.zeros(len(fc))
        xm = np.interp(fm, self.vcore_mem_mhz, np.arange(nm, dtype=float))
        i = np.minimum(xc.astype(np.intp), max(nc - 2, 0))
        j = np.minimum(xm.astype(np.intp), nm - 2)
        a = xc - i
        b = xm - j
        flat = tab.ravel()  # row-major: index i * nm + j
        k = i * nm + j
        lo = flat[k]
        if nc > 1:
            lo += a * (flat[k + nm] - lo)
        k += 1
        hi = flat[k]
        if nc > 1:
            hi += a * (flat[k + nm] - hi)
        hi -= lo
        hi *= b
        lo += hi
        return lo


def compile_section(section: Section) -> Compiled:
    """Check a DVFS section's structure and return it as arrays (``BadInputError`` when malformed)."""
    if section.model != MODEL_NAME:
        raise BadInputError(f"power section has model {section.model!r}, expected {MODEL_NAME!r}")
    st = section.structure
    try:
        pv = section.values()
        units = [u["name"] for u in st["units"]]
        forms = [u.get("ar_form", LINEAR) for u in st["units"]]
        is_mem = np.array([u["domain"] == MEM for u in st["units"]], dtype=bool)
        ref = st["ref_clocks"]
        volt = st["voltage"]
        core_mhz = np.asarray(volt[CORE]["mhz"], float)
        mem_mhz = np.asarray(volt[MEM]["mhz"], float)
        vcore = np.array([pv[n] for n in volt[CORE]["params"]])
        vmem = np.array([pv[n] for n in volt[MEM]["params"]])
        weights = np.array([pv.get(names.unit_weight(u), 0.0) for u in units])
    except (KeyError, TypeError) as e:
        raise BadInputError(f"DVFS power section is malformed (missing {e})") from None
    for f in forms:
        if f not in FORMS:
            raise BadInputError(f"DVFS power section: unknown access-rate form {f!r} (expected one of {FORMS})")
    for dom, mhz, v in ((CORE, core_mhz, vcore), (MEM, mem_mhz, vmem)):
        if len(mhz) == 0 or len(mhz) != len(v) or np.any(np.diff(mhz) <= 0):
            raise BadInputError(f"DVFS power section: voltage.{dom}: clock levels must be increasing, one voltage each")
        if np.any(np.diff(v) < -1e-9) or np.any(v <= 0):
            raise BadInputError(f"DVFS power section: voltage.{dom}: voltages must be positive and non-decreasing")
    vtab = vlev = None
    if "per_mem" in volt[CORE]:
        try:
            vlev = np.asarray(volt[CORE]["per_mem"]["mem_mhz"], float)
            vtab = np.array([[pv[n] for n in names] for names in volt[CORE]["per_mem"]["params"]]).T
        except (KeyError, TypeError) as e:
            raise BadInputError(f"DVFS power section: voltage.core.per_mem is malformed (missing {e})") from None
        if vtab.shape != (len(core_mhz), len(vlev)) or np.any(np.diff(vlev) <= 0):
            raise BadInputError("DVFS power section: voltage.core.per_mem needs increasing memory levels and one "
                                "voltage per core level on each")
        if np.any(np.diff(vtab, axis=0) < -1e-9) or np.any(vtab <= 0):
            raise BadInputError("DVFS power section: voltage.core.per_mem: voltages must be positive and "
                                "non-decreasing in the core clock")
    coef = {n: pv.get(n, 0.0) for n in CONST_TERMS}
    shape = {n: v for n, v in pv.items() if n in SHAPE_NAMES}
    return Compiled(units, forms, is_mem, core_mhz, mem_mhz, vcore, vmem, float(ref["core_mhz"]), float(ref["mem_mhz"]),
                    coef, weights, shape, st.get("activity_clocks"), st.get("temp_ref_c"), vlev, vtab)


def _column(df: pd.DataFrame, name: str, default: float, what: str, warn: list[str]) -> np.ndarray:
    if name in df.columns:
        v = df[name].to_numpy(dtype=float)
        miss = np.isnan(v)
        if miss.any():
            warn.append(f"{int(miss.sum())} rows without {name}: {what} {default:g} used")
            v = np.where(miss, default, v)
        return v
    warn.append(f"no {name} column: {what} {default:g} used for every row")
    return np.full(len(df), float(default))


def rows_from_table(c: Compiled, df: pd.DataFrame) -> tuple[Rows, list[str]]:
    """Arrays of the model inputs from a samples table, with notes about defaults that were applied."""
    missing = [u for u in c.units if "act_" + u not in df.columns]
    if missing:
        raise BadInputError(f"the table has no column 'act_{missing[0]}' (the model needs act_ columns for: "
                            + ", ".join(c.units) + ")")
    notes: list[str] = []
    fc = _column(df, "core_mhz", c.f0c, "the reference core clock", notes) if len(c.core_mhz) > 1 or "core_mhz" in df else np.full(len(df), c.f0c)
    fm = _column(df, "mem_mhz", c.f0m, "the reference memory clock", notes) if len(c.mem_mhz) > 1 or "mem_mhz" in df else np.full(len(df), c.f0m)
    U = np.empty((len(df), len(c.units)), order="F")  # column-major: one contiguous column per unit
    for j, u in enumerate(c.units):
        U[:, j] = df["act_" + u].to_numpy(dtype=float)
    if np.isnan(U).any():
        r, j = np.argwhere(np.isnan(U))[0]
        raise BadInputError(f"row {r + 1}, column 'act_{c.units[j]}': missing activity")
    temp = (_column(df, "temp_c", c.temp_ref_c, "the reference temperature (degC)", notes)
            if c.temp_ref_c is not None and "leak_core_w_per_c" in c.coef else None)
    ac = am = None
    if c.act_clocks is not None:
        ac = df["ref_core_mhz"].to_numpy(float) if "ref_core_mhz" in df.columns else np.full(len(df), float(c.act_clocks["core_mhz"]))
        am = df["ref_mem_mhz"].to_numpy(float) if "ref_mem_mhz" in df.columns else np.full(len(df), float(c.act_clocks["mem_mhz"]))
        ac = np.where(np.isnan(ac), float(c.act_clocks["core_mhz"]), ac)
        am = np.where(np.isnan(am), float(c.act_clocks["mem_mhz"]), am)
    return Rows(fc, fm, U, temp, ac, am), notes


@dataclass
class Design:
    """Rows of a table as the equation reads them, and which of its terms are columns: the constant
    terms ``terms`` (canonical order of :data:`CONST_TERMS`) and the units ``unit_cols`` (indices into
    the units) whose weights are coefficients."""

    rows: Rows
    is_mem: np.ndarray
    forms: Sequence[str]
    f0c: float                    # reference clocks (V = 1), MHz
    f0m: float
    temp_ref_c: float | None
    terms: Sequence[str]
    unit_cols: np.ndarray
    busy_c: np.ndarray = field(init=False)   # any core (memory) unit active on the row
    busy_m: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        U, n = self.rows.U, len(self.rows.fc)
        self.busy_c = (U[:, ~self.is_mem] > 0).any(axis=1).astype(float) if (~self.is_mem).any() else np.zeros(n)
        self.busy_m = (U[:, self.is_mem] > 0).any(axis=1).astype(float) if self.is_mem.any() else np.zeros(n)


def activities_at_clocks(d: Design, shape: Mapping[str, float]) -> np.ndarray:
    """The rows' activities at their own clocks: rescaled when they were measured at other clocks and
    the section has the memory-bound rescaling (``mem_sat``), else as given."""
    r = d.rows
    return (scaled_activities(r.U, d.is_mem, r.fc, r.fm, r.ac, r.am, shape["mem_sat"])
            if r.ac is not None and "mem_sat" in shape else r.U)


def clock_factors(d: Design, vc: np.ndarray, vm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The dynamic power's ``V^2 f / f0`` per row for the core and the memory domain."""
    return vc * vc * (d.rows.fc / d.f0c), vm * vm * (d.rows.fm / d.f0m)


def columns(d: Design, shape: Mapping[str, float], vc: np.ndarray, vm: np.ndarray) -> np.ndarray:
    """d P / d coefficient per row (W per W): rows x (``d.terms``, then ``d.unit_cols``), at the access-rate
    shapes ``shape`` and the rows' relative voltages ``vc``, ``vm`` (module docstring); ``P = columns @ coef``."""
    r = d.rows
    kc, km = clock_factors(d, vc, vm)
    col = {"static_core_w": lambda: vc, "static_mem_w": lambda: vm, "const_core_w": lambda: kc,
           "const_mem_w": lambda: km, "active_core_w": lambda: kc * d.busy_c, "active_mem_w": lambda: km * d.busy_m,
           "leak_core_w_per_c": lambda: leakage_w(vc, r.temp, d.temp_ref_c)}
    return np.column_stack([col[t]() for t in d.terms] + [unit_columns(d, shape, kc, km)])


def unit_columns(d: Design, shape: Mapping[str, float], kc: np.ndarray, km: np.ndarray) -> np.ndarray:
    """The units' columns of :func:`columns` (rows x ``d.unit_cols``): ``g(U') V^2 f / f0`` of their domain."""
    U = activities_at_clocks(d, shape)
    out = np.empty((len(kc), len(d.unit_cols)), order="F")  # one contiguous column per unit
    for i, j in enumerate(d.unit_cols):
        transform_into(U[:, j], d.forms[j], shape, out[:, i])
        out[:, i] *= km if d.is_mem[j] else kc
    return out


def voltage_gradient(d: Design, X: np.ndarray, coef: np.ndarray, vc: np.ndarray,
                     vm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(d P / d Vc, d P / d Vm) per row, W per relative volt, from the :func:`columns` ``X`` at ``vc``,
    ``vm``: the static terms are linear in their voltage, the dynamic ones quadratic."""
    n = len(vc)
    st = {CORE: np.zeros(n), MEM: np.zeros(n)}
    dyn = {CORE: np.zeros(n), MEM: np.zeros(n)}
    for i, t in enumerate(d.terms):
        if t in STATIC_TERMS:
            st[TERM_DOMAIN[t]] += coef[i] * X[:, i] / (vc if TERM_DOMAIN[t] == CORE else vm)
        else:
            dyn[TERM_DOMAIN[t]] += coef[i] * X[:, i]
    for k, j in enumerate(d.unit_cols):
        i = len(d.terms) + k
        dyn[MEM if d.is_mem[j] else CORE] += coef[i] * X[:, i]
    return (st[CORE] + 2.0 * dyn[CORE] / np.where(vc > 0, vc, 1.0),
            st[MEM] + 2.0 * dyn[MEM] / np.where(vm > 0, vm, 1.0))


def shape_gradient(d: Design, shape: Mapping[str, float], names_: Sequence[str], coef: np.ndarray,
                   vc: np.ndarray, vm: np.ndarray) -> np.ndarray:
    """d P / d shape parameter per row (rows x ``names_``), by forward differences (step ``1e-6 max(1, |s|)``)
    of the units' power: the transforms are piecewise and few (at most three shapes). ``coef`` holds the
    coefficients of :func:`columns`."""
    kc, km = clock_factors(d, vc, vm)
    w = coef[len(d.terms):]
    base = unit_columns(d, shape, kc, km) @ w
    out = np.zeros((len(vc), len(names_)))
    for k, nm in enumerate(names_):
        h = 1e-6 * max(1.0, abs(shape[nm]))
        out[:, k] = (unit_columns(d, {**shape, nm: shape[nm] + h}, kc, km) @ w - base) / h
    return out


def compiled_design(c: Compiled, r: Rows, all_terms: bool = False) -> tuple[Design, np.ndarray]:
    """The :class:`Design` of a compiled section on ``r`` and its coefficient vector (the terms and units
    with a non-zero coefficient, or all of them with ``all_terms``)."""
    terms = [t for t in CONST_TERMS if (all_terms or c.coef[t]) and (t != "leak_core_w_per_c" or r.temp is not None)]
    unit_cols = np.flatnonzero(np.ones(len(c.units), bool) if all_terms else c.weights != 0.0)
    d = Design(r, c.is_mem, c.forms, c.f0c, c.f0m, c.temp_ref_c, terms, unit_cols)
    return d, np.concatenate([[c.coef[t] for t in terms], c.weights[unit_cols]])


#: rows per block of a prediction (the design of 1e6 rows at once would take ~0.1 GB)
BLOCK_ROWS = 1 << 16


def evaluate(c: Compiled, r: Rows) -> np.ndarray:
    """Predicted power, W, per row: the voltages interpolated between the fitted levels (:meth:`Compiled.core_volts`),
    the design's columns times the coefficients, in blocks of :data:`BLOCK_ROWS` rows."""
    out = np.empty(len(r.fc))
    for a in range(0, len(r.fc), BLOCK_ROWS):
        sl = slice(a, a + BLOCK_ROWS)
        rb = Rows(*(None if x is None else x[sl] for x in (r.fc, r.fm, r.U, r.temp, r.ac, r.am)))
        d, coef = compiled_design(c, rb)
        out[sl] = columns(d, c.shape, c.core_volts(rb.fc, rb.fm), np.interp(rb.fm, c.mem_mhz, c.vmem)) @ coef
    return out


def out_of_range(c: Compiled, r: Rows) -> list[str]:
    """Warnings for rows whose clocks lie outside the fitted clock levels (voltage clamped)."""
    msgs = []
    for dom, f, lv in ((CORE, r.fc, c.core_mhz), (MEM, r.fm, c.mem_mhz)):
        if len(lv) == 1:
            off = ~np.isclose(f, lv[0])
            if off.any():
                msgs.append(f"{int(off.sum())} rows at a {dom} clock other than the only fitted one ({lv[0]:g} MHz): "
                            "voltage held at the fitted value, predictions are extrapolations")
            continue
        lo, hi = f < lv[0] - 1e-9, f > lv[-1] + 1e-9
        if lo.any() or hi.any():
            msgs.append(f"{int(lo.sum() + hi.sum())} rows outside the fitted {dom} clock range "
                        f"[{lv[0]:g}, {lv[-1]:g}] MHz: voltage clamped to the end value")
    return msgs


def predict_power(section: Section, df: pd.DataFrame) -> np.ndarray:
    """Predicted board power, W, for every row of a samples table (vectorised).

    ``section`` is a parameter-file section with model ``dvfs``. Rows at clocks between fitted
    levels get a linearly interpolated voltage; rows outside the fitted range get the end value and a
    warning (module docstring). Missing ``core_mhz``/``mem_mhz``/``temp_c`` values fall back to the
    reference clocks/temperature with a warning. A section fitted on temperature-corrected power
    (``temperature_correction`` in its structure: a session's DVFS fit, power brought to the idle
    temperature with the thermal fit's sigma) gets the correction added back for rows with ``temp_c``.
    """
    c = compile_section(section)
    r, notes = rows_from_table(c, df)
    for m in notes + out_of_range(c, r):
        warnings.warn(m, stacklevel=2)
    p = evaluate(c, r)
    corr = section.structure.get("temperature_correction")
    if corr and "temp_c" in df.columns:
        p = p + leakage_w(corr["sigma_w_per_c"], df["temp_c"].to_numpy(float), corr["idle_temp_c"])
    return p


def breakdown(section: Section, df: pd.DataFrame) -> pd.DataFrame:
    """Power per term (W) for every row: static (with the leakage), constant dynamic, active and per-unit
    dynamic power (the :func:`columns` of the section times their coefficients, grouped)."""
    c = compile_section(section)
    r, _ = rows_from_table(c, df)
    d, coef = compiled_design(c, r, all_terms=True)
    parts = columns(d, c.shape, c.core_volts(r.fc, r.fm), np.interp(r.fm, c.mem_mhz, c.vmem)) * coef
    group = {"static_core_w": "static_w", "static_mem_w": "static_w", "leak_core_w_per_c": "static_w",
             "const_core_w": "const_dynamic_w", "const_mem_w": "const_dynamic_w", "active_core_w": "active_w",
             "active_mem_w": "active_w"}
    out = {g: np.zeros(len(df)) for g in ("static_w", "const_dynamic_w", "active_w")}
    for i, t in enumerate(d.terms):
        out[group[t]] += parts[:, i]
    out.update({f"unit_{u}_w": parts[:, len(d.terms) + k] for k, u in enumerate(c.units)})
    return pd.DataFrame(out, index=df.index)


def relative_voltages(section: Section) -> dict[str, list[tuple[float, float]]]:
    """The fitted voltage curves: domain -> [(MHz, V/Vref), ...]; ``core`` is the curve at the reference
    memory clock. With core curves per memory level, also ``core_mem_<MHz>`` for every memory level."""
    c = compile_section(section)
    out = {CORE: list(zip(c.core_mhz.tolist(), c.vcore.tolist())), MEM: list(zip(c.mem_mhz.tolist(), c.vmem.tolist()))}
    if c.vcore_tab is not None:
        out.update({f"core_mem_{fm:g}": list(zip(c.core_mhz.tolist(), c.vcore_tab[:, j].tolist()))
                    for j, fm in enumerate(c.vcore_mem_mhz)})
    return out


def levels_of(values: Sequence[float]) -> np.ndarray:
    """Distinct clock levels (MHz), sorted, merging values within 1e-6 MHz."""
    v = np.unique(np.round(np.asarray(values, float), 6))
    return v[~np.isnan(v)]


#: ranges of the access-rate shape parameters (:func:`transform_into`), shared or per unit:
#: (low, high, low open, high open, why)
SHAPE_RANGES = {
    "ar_tp_threshold": (0.0, 1.0, False, True, "the tpow threshold is an activity in [0, 1)"),
    "ar_tp_lambda": (0.0, 10.0, False, False, "the tpow exponent must be >= 0"),
    "ar_exponent": (0.0, 10.0, True, False, "the pow exponent must be > 0"),
    "ar_bc_lambda": (0.0, 10.0, False, False, "the Box-Cox exponent must be >= 0"),
    "ar_bc_a": (-100.0, 100.0, False, False, "the Box-Cox slope must be moderate"),
    "ar_log_a": (0.0, 10.0, True, False, "the log access-rate slope must be positive"),
    "ar_log_b": (0.0, 2.0, True, False, "the log access-rate function is b at full activity, about 1"),
    "mem_sat": (0.0, 100.0, True, False, "the summed memory activity at saturation must be > 0"),
}
#: shape parameters each access-rate form reads without a default
FORM_NEEDS = {TPOW: ("ar_tp_lambda", "ar_tp_threshold"), POW: ("ar_exponent",),
              BOXCOX: ("ar_bc_a", "ar_bc_lambda"), LOG: (), LINEAR: ()}


def validate(section: Section, where: str = "power") -> None:
    """SchemaError (naming the field) for what the schema cannot express: unit names unique, voltage
    parameters present, the shape parameters each unit's form needs present and in range, a plausible
    idle power."""
    st = section.structure
    units = [u["name"] for u in st["units"]]
    dup = sorted({u for u in units if units.count(u) > 1})
    if dup:
        raise SchemaError(f"{where}.units: unit {dup[0]!r} is listed twice")
    for dom in (CORE, MEM):
        curve = st["voltage"][dom]
        levels = list(curve["params"])
        if "per_mem" in curve and dom == CORE:
            levels += [n for row in curve["per_mem"]["params"] for n in row]
        for n in levels:
            if n not in section:
                raise SchemaError(f"{where}.voltage.{dom}: voltage parameter {n} is not in "
                                  f"{where.split(': ')[-1]}.parameters")
        if len(curve["mhz"]) != len(curve["params"]):
            raise SchemaError(f"{where}.voltage.{dom}: {len(curve['mhz'])} clock levels (mhz) but "
                              f"{len(curve['params'])} voltage parameters (params)")
    for name in section.params:
        if name in SHAPE_RANGES:
            lo, hi, lo_open, hi_open, why = SHAPE_RANGES[name]
            in_range(section, name, where, lo, hi, why, lo_open, hi_open)
    forms = [u.get("ar_form", LINEAR) for u in st["units"]]
    for u, form in zip(units, forms):
        if section.params.get(names.unit_weight(u)) is None:
            continue  # a unit without weight is never transformed
        for need in FORM_NEEDS.get(form, ()):
            if need not in section:
                raise SchemaError(f"{where}.parameters: {need} missing (unit {u} has the {form!r} access-rate form)")
    voltages = [n for dom in (CORE, MEM) for n in st["voltage"][dom]["params"]]
    voltages += [n for row in (st["voltage"][CORE].get("per_mem") or {}).get("params", []) for n in row]
    check_names(section, where, CONST_TERMS + SHAPE_NAMES + tuple(voltages)
                + tuple(names.unit_weight(u) for u in units))
    idle = sum(section.value(n, 0.0) for n in CONST_TERMS if n.startswith(("static_", "const_")))
    if idle < MIN_IDLE_POWER_W:
        raise SchemaError(f"{where}.parameters: static_* + const_* = {idle:g} W, the idle power at the reference "
                          f"clocks, is not plausible for a GPU board (< {MIN_IDLE_POWER_W:g} W): were the power "
                          "readings of the fitted table all ~0?")
