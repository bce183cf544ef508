"""DVFS-aware GPU power model over any set of unit activities (core and memory clock domains).

The model (the gpmTOOL form of Guerreiro et al., HPCA 2018 / TPDS 2019, extended; see
../shared/reference/prior-art.md) predicts board power, W, of a row at core clock ``fc`` and memory
clock ``fm`` (MHz) from the activities ``U_i`` in [0, 1] of its units::

    P = Vc^k * static_core_w + Vc * leak_core_w_per_c * (T - temp_ref_c)       static, leakage
      + Vm * static_mem_w
      + Vc^2 * fc/fc0 * (const_core_w + active_core_w * [any core U > 0] + sum_core w_i * g_i(U'_i)
                        + total_core_w * g(min(1, sum_core U'_i)))
      + Vm^2 * fm/fm0 * (const_mem_w  + active_mem_w  * [any mem U > 0]  + sum_mem  w_j * g_j(U'_j)
                        + total_mem_w * g(min(1, sum_mem U'_j)))

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
* ``k`` (``static_v_exp``, optional, default 1): leakage current grows with voltage, so the core static
  power may follow ``Vc**k`` instead of gpmTOOL's ``Vc``.
* ``total_*_w`` (optional): power that follows a domain's total activity (the sum of its units'
  rescaled activities, capped at 1, through the shared transform ``g``): shared issue/datapath power.
  Positive values make units that are active together draw less than the sum of their own terms
  (sub-additive, ``g`` being concave), negative values more.
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
  U = 0 to 0. A unit may have its own value of a shape parameter, ``<name>_<unit>`` (e.g.
  ``ar_tp_lambda_SP``), which overrides the shared one for that unit.
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
from calib.model.arfunc import IPP_A, IPP_B, LINEAR, LOG

MODEL_NAME = "dvfs"
POW = "pow"
BOXCOX = "boxcox"
TPOW = "tpow"
FORMS = (LINEAR, LOG, POW, BOXCOX, TPOW)
CORE, MEM = "core", "mem"

#: linear-coefficient parameters in the order of the design columns (before the unit weights)
CONST_TERMS = ("static_core_w", "static_mem_w", "const_core_w", "const_mem_w", "active_core_w", "active_mem_w",
               "leak_core_w_per_c", "total_core_w", "total_mem_w")
#: shape parameters of the access-rate transforms; a unit's own value is ``<name>_<unit>`` (e.g. ``ar_tp_lambda_SP``)
SHAPE_NAMES = ("ar_exponent", "ar_log_a", "ar_log_b", "ar_bc_a", "ar_bc_lambda", "ar_tp_lambda", "ar_tp_threshold",
               "mem_sat", "static_v_exp")


def transform_into(x: np.ndarray, form: str, shape: Mapping[str, float], out: np.ndarray) -> np.ndarray:
    """``g(x)`` of one access-rate form, written into ``out`` (same shape as ``x``); 0 where ``x`` is 0.

    Powers are computed as ``exp(p * ln x)`` (about 3x faster than ``np.power``); ``x`` in [0, 1].
    """
    if form == LINEAR:
        np.copyto(out, x)
        return out
    if form not in (POW, LOG, BOXCOX, TPOW):
        raise ValueError(f"unknown access-rate form {form!r}; expected one of {FORMS}")
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
    elif form == LOG:
        out *= shape.get("ar_log_a", IPP_A)
        out += shape.get("ar_log_b", IPP_B)
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


def unit_shape(shape: Mapping[str, float], unit: str) -> dict[str, float]:
    """The shape parameters of one unit: the shared values, overridden by the unit's own ``<name>_<unit>``."""
    out = {n: v for n, v in shape.items() if n in SHAPE_NAMES}
    for n in SHAPE_NAMES:
        own = f"{n}_{unit}"
        if own in shape:
            out[n] = shape[own]
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


def total_form(forms: Sequence[str]) -> str:
    """Access-rate form of the per-domain total-activity terms: the units' form when they share one, else linear."""
    return forms[0] if forms and all(f == forms[0] for f in forms) else LINEAR


def domain_totals(Us: np.ndarray, is_mem: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(core, memory) total activity per row: the sum of the domain's activities, capped at 1."""
    return (np.minimum(1.0, Us[:, ~is_mem].sum(axis=1)), np.minimum(1.0, Us[:, is_mem].sum(axis=1)))


def scaled_activities(U: np.ndarray, is_mem: np.ndarray, fc: np.ndarray, fm: np.ndarray, ac: np.ndarray,
                      am: np.ndarray, mem_sat: float) -> np.ndarray:
    """Activities at the row's clocks ``(fc, fm)`` from activities measured at ``(ac, am)`` (all MHz;
    ``mem_sat``: summed memory activity at which a kernel is memory bound; module docstring)."""
    rc = ac / fc
    rm = am / fm
    if is_mem.any():
        beta = np.minimum(1.0, U[:, is_mem].sum(axis=1) / mem_sat)
    else:
        beta = np.zeros(len(fc))
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
    unit_shapes: list[dict[str, float]] = field(default_factory=list)
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
    shape = {n: v for n, v in pv.items() if n in SHAPE_NAMES or n.startswith(tuple(s + "_" for s in SHAPE_NAMES))}
    return Compiled(units, forms, is_mem, core_mhz, mem_mhz, vcore, vmem, float(ref["core_mhz"]), float(ref["mem_mhz"]),
                    coef, weights, shape, st.get("activity_clocks"), st.get("temp_ref_c"),
                    [unit_shape(shape, u) for u in units], vlev, vtab)


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
    temp = None
    if c.temp_ref_c is not None and "leak_core_w_per_c" in c.coef:
        temp = _column(df, "temp_c", c.temp_ref_c, "the reference temperature (degC)", notes)
    ac = am = None
    if c.act_clocks is not None:
        ac = df["ref_core_mhz"].to_numpy(float) if "ref_core_mhz" in df.columns else np.full(len(df), float(c.act_clocks["core_mhz"]))
        am = df["ref_mem_mhz"].to_numpy(float) if "ref_mem_mhz" in df.columns else np.full(len(df), float(c.act_clocks["mem_mhz"]))
        ac = np.where(np.isnan(ac), float(c.act_clocks["core_mhz"]), ac)
        am = np.where(np.isnan(am), float(c.act_clocks["mem_mhz"]), am)
    return Rows(fc, fm, U, temp, ac, am), notes


def evaluate(c: Compiled, r: Rows, vc: np.ndarray | None = None, vm: np.ndarray | None = None) -> np.ndarray:
    """Predicted power, W, per row. ``vc``/``vm`` (per-row voltages) default to interpolation.

    One pass per unit over contiguous columns with preallocated buffers: no rows x units temporaries.
    """
    n = len(r.fc)
    if vc is None:
        vc = c.core_volts(r.fc, r.fm)
    if vm is None:
        vm = np.interp(r.fm, c.mem_mhz, c.vmem)
    kc = vc * vc
    kc *= r.fc
    kc /= c.f0c
    km = vm * vm
    km *= r.fm
    km /= c.f0m
    k = c.coef
    U = r.U
    s_core = s_mem = None
    if c.act_clocks is not None and "mem_sat" in c.shape:
        rc = r.ac / r.fc
        rm = r.am / r.fm
        beta = np.zeros(n)
        for j in np.flatnonzero(c.is_mem):
            beta += U[:, j]
        beta /= c.shape["mem_sat"]
        np.minimum(beta, 1.0, out=beta)
        beta *= rm
        tau = np.maximum(rc, beta, out=beta)
        s_core = np.divide(rc, tau, out=rc)
        s_mem = np.divide(rm, tau, out=rm)
    dyn_c = np.full(n, k["const_core_w"])
    dyn_m = np.full(n, k["const_mem_w"])
    for coef, mem, dyn in ((k["active_core_w"], False, dyn_c), (k["active_mem_w"], True, dyn_m)):
        if coef:
            busy = np.zeros(n, dtype=bool)
            for j in np.flatnonzero(c.is_mem == mem):
                busy |= U[:, j] > 0
            dyn += coef * busy
    x = np.empty(n)
    g = np.empty(n)
    # per-domain total activity (sum of the domain's rescaled activities, capped at 1) for the total_* terms
    tot = {mem: (np.zeros(n) if k[f"total_{MEM if mem else CORE}_w"] else None) for mem in (False, True)}
    for j, form in enumerate(c.forms):
        w = c.weights[j]
        t_acc = tot[bool(c.is_mem[j])]
        if w == 0.0 and t_acc is None:
            continue
        col = U[:, j]
        scale = s_mem if c.is_mem[j] else s_core
        if scale is not None:
            np.multiply(col, scale, out=x)
            np.minimum(x, 1.0, out=x)
            col = x
        if t_acc is not None:
            t_acc += col
        if w == 0.0:
            continue
        transform_into(col, form, c.unit_shapes[j], g)
        g *= w
        (dyn_m if c.is_mem[j] else dyn_c).__iadd__(g)
    for mem, t_acc in tot.items():
        if t_acc is not None:
            np.minimum(t_acc, 1.0, out=t_acc)
            transform_into(t_acc, total_form(c.forms), c.shape, g)
            g *= k[f"total_{MEM if mem else CORE}_w"]
            (dyn_m if mem else dyn_c).__iadd__(g)
    dyn_c *= kc
    dyn_m *= km
    out = dyn_c
    out += dyn_m
    out += k["static_core_w"] * (vc ** c.shape["static_v_exp"] if "static_v_exp" in c.shape else vc)
    out += k["static_mem_w"] * vm
    if r.temp is not None and k["leak_core_w_per_c"]:
        out += k["leak_core_w_per_c"] * (r.temp - c.temp_ref_c) * vc
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
        p = p + corr["sigma_w_per_c"] * np.nan_to_num(df["temp_c"].to_numpy(float) - corr["idle_temp_c"], nan=0.0)
    return p


def breakdown(section: Section, df: pd.DataFrame) -> pd.DataFrame:
    """Power per term (W) for every row: static, constant dynamic, active and per-unit dynamic power."""
    c = compile_section(section)
    r, _ = rows_from_table(c, df)
    vc = c.core_volts(r.fc, r.fm)
    vm = np.interp(r.fm, c.mem_mhz, c.vmem)
    kc = vc * vc * (r.fc / c.f0c)
    km = vm * vm * (r.fm / c.f0m)
    Us = (scaled_activities(r.U, c.is_mem, r.fc, r.fm, r.ac, r.am, c.shape["mem_sat"])
          if c.act_clocks is not None and "mem_sat" in c.shape else r.U)
    k = c.coef
    out = {"static_w": k["static_core_w"] * vc ** c.shape.get("static_v_exp", 1.0) + k["static_mem_w"] * vm
           + (k["leak_core_w_per_c"] * (r.temp - c.temp_ref_c) * vc if r.temp is not None else 0.0),
           "const_dynamic_w": k["const_core_w"] * kc + k["const_mem_w"] * km,
           "active_w": k["active_core_w"] * kc * (r.U[:, ~c.is_mem] > 0).any(axis=1)
           + k["active_mem_w"] * km * (r.U[:, c.is_mem] > 0).any(axis=1)}
    tc, tm = domain_totals(Us, c.is_mem)
    out["total_w"] = (k["total_core_w"] * kc * transform(tc, total_form(c.forms), c.shape)
                      + k["total_mem_w"] * km * transform(tm, total_form(c.forms), c.shape))
    for j, u in enumerate(c.units):
        g = transform(Us[:, j], c.forms[j], c.unit_shapes[j])
        out[f"unit_{u}_w"] = c.weights[j] * g * (km if c.is_mem[j] else kc)
    return pd.DataFrame(out, index=df.index)


def relative_voltages(section: Section) -> dict[str, list[tuple[float, float]]]:
    """The fitted voltage curves: domain -> [(MHz, V/Vref), ...]; ``core`` is the curve at the reference
    memory clock. With core curves per memory level, also ``core_mem_<MHz>`` for every memory level."""
    c = compile_section(section)
    out = {CORE: list(zip(c.core_mhz.tolist(), c.vcore.tolist())), MEM: list(zip(c.mem_mhz.tolist(), c.vmem.tolist()))}
    if c.vcore_tab is not None:
        for j, fm in enumerate(c.vcore_mem_mhz):
            out[f"core_mem_{fm:g}"] = list(zip(c.core_mhz.tolist(), c.vcore_tab[:, j].tolist()))
    return out


def finite_or_none(x: float) -> float | None:
    """``float(x)`` when finite, else None (JSON has no NaN/inf)."""
    return float(x) if x is not None and math.isfinite(x) else None


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
    "static_v_exp": (0.0, 10.0, True, False, "the static-power voltage exponent must be > 0"),
}
#: shape parameters each access-rate form reads without a default
FORM_NEEDS = {TPOW: ("ar_tp_lambda", "ar_tp_threshold"), POW: ("ar_exponent",),
              BOXCOX: ("ar_bc_a", "ar_bc_lambda"), LOG: (), LINEAR: ()}


def validate(section: Section, where: str = "power") -> None:
    """SchemaError (naming the field) for what the schema cannot express: unit names unique, voltage
    parameters present, the shape parameters each unit's form needs present and in range, a plausible
    idle power."""
    from calib.model.validation import MIN_IDLE_POWER_W, check_names, in_range

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
    shared = {n for n in section.params if n in SHAPE_RANGES}
    for name in section.params:
        base = next((b for b in SHAPE_RANGES if name == b or name.startswith(b + "_")), None)
        if base is not None:
            lo, hi, lo_open, hi_open, why = SHAPE_RANGES[base]
            in_range(section, name, where, lo, hi, why, lo_open, hi_open)
    forms = [u.get("ar_form", LINEAR) for u in st["units"]]
    has_total = any(section.params.get(f"total_{d}_w") for d in (CORE, MEM))
    for u, form in zip(units, forms):
        if section.params.get(names.unit_weight(u)) is None and not has_total:
            continue  # a unit without weight is never transformed
        for need in FORM_NEEDS.get(form, ()):
            if need not in shared and f"{need}_{u}" not in section:
                raise SchemaError(f"{where}.parameters: {need} missing (unit {u} has the {form!r} access-rate form)")
    tform = total_form(forms)
    if any(n in section for n in ("total_core_w", "total_mem_w")):
        for need in FORM_NEEDS.get(tform, ()):
            if need not in shared:
                raise SchemaError(f"{where}.parameters: {need} missing (the total-activity terms use the "
                                  f"{tform!r} form)")
    voltages = [n for dom in (CORE, MEM) for n in st["voltage"][dom]["params"]]
    voltages += [n for row in (st["voltage"][CORE].get("per_mem") or {}).get("params", []) for n in row]
    check_names(section, where, CONST_TERMS + SHAPE_NAMES + tuple(voltages)
                + tuple(n for u in units for n in (names.unit_weight(u), *(f"{s}_{u}" for s in SHAPE_NAMES))))
    idle = sum(section.value(n, 0.0) for n in CONST_TERMS if n.startswith(("static_", "const_")))
    if idle < MIN_IDLE_POWER_W:
        raise SchemaError(f"{where}.parameters: static_* + const_* = {idle:g} W, the idle power at the reference "
                          f"clocks, is not plausible for a GPU board (< {MIN_IDLE_POWER_W:g} W): were the power "
                          "readings of the fitted table all ~0?")
