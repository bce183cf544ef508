"""IPP power model (Hong & Kim, ISCA 2010, paper 004), consuming a parameter file's ``power`` section.

    GPU_power   = IdlePower + Runtime_power                                            (5)
    RP_comp     = MaxPower_comp x AR'(AccessRate_comp)                                  (9)
    AccessRate  = DAC_per_th x Warps_per_SM / (Exec_cycles x warp_issue_per_cycle)      (10)-(12)
    Runtime     = Activation + S(Active_SMs) x (Max_SM + RP_Memory)                     (16)
    Max_SM      = Num_SMs x (Const_SM + sum over SM units of RP_comp)                   (7), (15)
    S(n)        = log10(alpha x n + beta), alpha = (10 - beta) / Num_SMs   ("log", GT200, no gating)
                  or n / Num_SMs                                             ("linear", Fermi and later)
    GPU_power(t)= ... + sigma x (Temperature(t) - Idle_temp)                            (21)-(23)

AR' is the identity or the clamped logarithm ``max(0, a_unit ln AR + b)`` per unit, the latter with an
optional part proportional to the accesses, ``s AR + (1 - s) max(0, a_unit ln AR + b)`` (one share ``s``,
``ar_linear_share``, for every log unit; absent = 0, IPP's form; see :mod:`calib.model.arfunc`).
Chip-level units (L2, global and local memory) are not multiplied by the number of SMs. ``Activation`` is
the Fermi-style constant power of any running kernel (0 on GT200, where it is part of Const_SM).
Everything is vectorised over rows.

**Shared activation** (optional, ``structure["shared_activation"]``; files without it predict as
before): the SM pipes whose power saturates with activity (log access-rate function: a unit leaving
idle costs most of its power) share part of that activation -- operand collectors, dispatch, the
clock tree that feeds them -- so units that run together draw less than the sum of their parts. A
share ``gamma`` (``shared_activation_frac``) of each pooled unit's power belongs to a stage that is on
when *any* of them is on. With independent activities, the stage is on a share
``U = 1 - prod_u (1 - f_u)`` of the time, where additive IPP counts ``F = sum_u f_u`` (``f_u``: the
units' AR'); so the pooled power is

    sum_u P_u x (1 - gamma x (1 - U / F)),        P_u = MaxPower_u x f_u  (x Num_SMs)

A unit alone gives U = F: its power is its own MaxPower x AR', so each MaxPower stays the unit's own
power at AR = 1 and the term changes only mixes. The register file and fetch/decode/schedule (active with
every instruction: they are the issue stage itself) and chip-level units are not pooled.

**Dispatch stage** (optional, ``structure["dispatch_stage"]``; files without it predict as before): a
per-SM stage that issues to every execution pipe (warp scheduler, dispatch, operand delivery) draws power
by the SM's total issue activity, not by any one pipe's. It is the unit ``dispatch``
(``max_power_dispatch_w``, ``ar_log_a_dispatch``; per SM, the log access-rate function) whose access rate
is the summed access rate of the pooled SM units (``structure["dispatch_stage"]["units"]``: the SM-scope
units except those active with every instruction -- REG, FDS, AMD's ``issue`` -- and the stage itself), at
most 1, computed from the other units' activities, never from a column of its own:

    AR_dispatch = min(1, sum over pooled units u of AR_u)

Two pipes running together draw it once, at their summed rate, where additive IPP charges each pipe's
MaxPower with a share of it: without the term every pipe's MaxPower (and the constant of a running kernel)
absorbs it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from calib.core.errors import BadInputError, SchemaError
from calib.core.params import ParameterFile, Section
from calib.model.arfunc import FORMS, LOG, mixed_rate
from calib.model.thermal import leakage_w
from calib.model.validation import MAX_SM_COUNT, MIN_IDLE_POWER_W, check_names, in_range
from calib.core import names
from calib.core.activity import ActivityBasis, basis_of, has_counts, table_access_rates
from calib.core.samples import ACT_PREFIX
from calib.core.units import DERIVED_UNITS, DISPATCH_UNIT

#: structure key of the shared-activation term (module docstring) and its parameter
SHARED_KEY = "shared_activation"
SHARED_PARAM = "shared_activation_frac"
#: structure key of the dispatch-stage term (module docstring; its unit: calib.core.units.DISPATCH_UNIT)
DISPATCH_KEY = "dispatch_stage"
#: units never pooled: active with every instruction (the issue stage itself), or the dispatch stage
NOT_POOLED = frozenset({"reg", "fds", DISPATCH_UNIT})
#: units that do not drive the dispatch stage: those active with every instruction (IPP's REG and FDS,
#: AMD's ``issue``: calib.core.arch) and the stage itself
NOT_DISPATCHED = NOT_POOLED | {"issue"}
#: the per-access share of the log access-rate function (module docstring; absent: 0)
LINEAR_SHARE = "ar_linear_share"
#: the model's parameters besides each unit's max_power_<unit>_w and ar_log_a_<unit> (calib.core.names)
PARAMETERS = ("idle_power_w", "activation_power_w", "const_sm_power_w", "ar_log_b", "sm_beta", SHARED_PARAM,
              LINEAR_SHARE)


def shared_pool(units: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The units the shared-activation term pools (module docstring): SM-scope units with the log
    access-rate function, except the register file and fetch/decode/schedule."""
    return [u for u, spec in units.items()
            if spec.get("scope") == "sm" and spec.get("ar_function") == LOG and u not in NOT_POOLED]


def dispatch_pool(units: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The units whose summed access rate drives the dispatch stage (module docstring): SM-scope units
    except those active with every instruction and the stage itself (:data:`NOT_DISPATCHED`)."""
    return [u for u, spec in units.items() if spec.get("scope") == "sm" and u not in NOT_DISPATCHED]


def with_dispatch_activity(structure: Mapping[str, Any], act: Mapping[str, np.ndarray]) -> Mapping[str, np.ndarray]:
    """``act`` (activity arrays per unit) with the dispatch stage's derived access rate when ``structure``
    has the stage (module docstring: the pooled units' summed access rate, at most 1); else ``act``."""
    stage = structure.get(DISPATCH_KEY)
    if not stage:
        return act
    total = sum((np.nan_to_num(np.asarray(act[u], float)) for u in stage["units"]), np.zeros(()))
    return {**act, DISPATCH_UNIT: np.minimum(total, 1.0)}


def shared_overlap(f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``r = 1 - U / F`` of the pooled units' AR' values ``f`` (pooled units x rows, each clipped to
    [0, 1]; module docstring) and ``dr / df`` (same shape): 0 where no unit is on. Dimensionless."""
    f = np.clip(np.asarray(f, float), 0.0, 1.0)
    if f.ndim != 2 or not len(f):
        return np.zeros(f.shape[-1] if f.ndim else 0), np.zeros_like(f)
    F = f.sum(axis=0)
    one_minus = 1.0 - f
    U = 1.0 - np.prod(one_minus, axis=0)
    on = F > 1e-12
    Fs = np.where(on, F, 1.0)
    r = np.where(on, 1.0 - U / Fs, 0.0)
    # dU/df_i is the product over the other units, taken directly (f_i may be 1): row i gets the units
    # before i multiplied in order, then each unit after i in order -- the same products, rounding
    # included, as multiplying the k - 1 others in turn, in k - 1 array operations, not k deletions
    others = np.ones_like(f)
    others[1:] = np.cumprod(one_minus[:-1], axis=0)
    for j in range(1, len(f)):
        others[:j] *= one_minus[j]
    return r, np.where(on, -(others * Fs - U) / Fs ** 2, 0.0)


def sm_scale(form: str, beta: float, active: np.ndarray, total: int) -> np.ndarray:
    """S(n) of eq. (14)/(16) (``"log"``) or the linear scaling of power-gated GPUs (``"linear"``)."""
    return _sm_scale(form, beta, np.asarray(active, dtype=float), total)[0]


def _sm_scale(form: str, beta: float, n: np.ndarray, total: int) -> tuple[np.ndarray, np.ndarray]:
    """S(n) and its derivative in beta (0 for the linear scaling)."""
    if form == "log":
        alpha = (10.0 - beta) / total
        arg = alpha * n + beta
        return np.log10(arg), (1.0 - n / total) / (arg * math.log(10.0))
    if form == "linear":
        return n / total, np.zeros_like(n)
    raise ValueError(f"unknown SM scaling {form!r}")


@dataclass
class Design:
    """The rows of a table as the IPP power equations read them, for one structure (forms, scopes, SM
    scaling, the shared-activation pool): the units stacked (units x rows) and ln(AR) precomputed once,
    so that :func:`power` and :func:`jacobian` are cheap to call in a fitter's inner loop."""

    n_sm: int
    sm_scaling: str
    run: np.ndarray                 # 1.0 on rows that run a kernel, 0.0 on idle rows
    active_sms: np.ndarray          # active SMs per row
    units: list[str]                # modelled units, in structure order
    ar: np.ndarray                  # access rates (units x rows)
    pos: np.ndarray                 # AR > 0
    lnar: np.ndarray                # ln AR where AR > 0, else 0
    mult: np.ndarray                # SMs per unit (1 for chip-level units)
    is_log: np.ndarray              # the unit has the log access-rate function
    in_pool: np.ndarray             # the unit is pooled by the shared-activation term
    offset: np.ndarray              # the leakage rise over the idle temperature (eq. 22), W
    #: the last :func:`_terms` (the values it read, its arrays; never modified by a reader)
    last_terms: tuple | None = field(default=None, repr=False, compare=False)


def design(structure: Mapping[str, Any], act: Mapping[str, np.ndarray], running: np.ndarray,
           active_sms: np.ndarray, temp_c: np.ndarray | None = None, sigma: float | None = None,
           idle_temp_c: float | None = None) -> Design:
    """The :class:`Design` of rows given as arrays: access rates per modelled unit, the running mask, the
    active SMs, and (all three or none) temperature (C), sigma (W/C) and the idle temperature (C)."""
    n_sm = int(structure["sm_count"])
    run = np.asarray(running, float)
    units = list(structure["units"])
    specs = [structure["units"][u] for u in units]
    act = with_dispatch_activity(structure, act)
    shared = structure.get(SHARED_KEY)
    pool = set(shared["units"]) if shared else set()
    ar = np.array([np.broadcast_to(np.asarray(act[u], float), run.shape) for u in units]).reshape(len(units), run.size)  # a file may have no units
    pos = ar > 0
    lnar = np.where(pos, np.log(np.where(pos, ar, 1.0)), 0.0)
    offset = np.zeros_like(run)
    if temp_c is not None and sigma is not None and idle_temp_c is not None:
        offset = leakage_w(sigma, temp_c, idle_temp_c)
    return Design(n_sm, structure.get("sm_scaling", "linear"), run, np.asarray(active_sms, float), units, ar, pos,
                  lnar, np.array([1.0 if sp["scope"] == "chip" else float(n_sm) for sp in specs]),
                  np.array([sp["ar_function"] == LOG for sp in specs], bool),
                  np.array([u in pool for u in units], bool), offset)


def table_design(structure: Mapping[str, Any], df: pd.DataFrame, act: Mapping[str, np.ndarray],
                 sigma: float | None = None, idle_temp_c: float | None = None) -> Design:
    """The :class:`Design` of a samples table's rows (:func:`launch_facts`), with the leakage term from
    ``temp_c`` when sigma is given."""
    running, active = launch_facts(df, act, int(structure["sm_count"]))
    temp = df["temp_c"].to_numpy(float) if "temp_c" in df.columns and sigma is not None else None
    return design(structure, act, running, active, temp, sigma, idle_temp_c)


def _terms(values: Mapping[str, float], d: Design) -> tuple[np.ndarray, ...]:
    """AR' of every unit (eq. 9; units x rows), d AR'/d a_unit, d AR'/d share, the MaxPowers, each unit's
    power before S(n) (W, chip total) net of the shared activation, the pool's overlap r and dr/df, and the
    pool's additive power A (W, chip total)."""
    m = np.array([values[names.max_power(u)] for u in d.units])
    a = np.array([values[names.ar_log_a(u)] if lg else 0.0 for u, lg in zip(d.units, d.is_log)])
    # a fitter asks for the power and then the Jacobian at the same values: the terms are made once
    key = (m.tobytes(), a.tobytes(), values.get("ar_log_b", 1.0), values.get(SHARED_PARAM, 0.0),
           values.get(LINEAR_SHARE, 0.0))
    if d.last_terms is not None and d.last_terms[0] == key:
        return d.last_terms[1]
    mixed, dmix, dshare = mixed_rate(d.ar, d.lnar, d.pos, a[:, None], values.get("ar_log_b", 1.0),
                                     values.get(LINEAR_SHARE, 0.0))
    f = np.where(d.is_log[:, None], mixed, d.ar)
    dfa = np.where(d.is_log[:, None], dmix, 0.0)
    dfs = np.where(d.is_log[:, None], dshare, 0.0)
    # eqs. (7), (9), (15): MaxPower_u x AR'_u, times the SMs of an SM-level unit
    unit_w = (m * d.mult)[:, None] * f
    r, dr, pool_w = np.zeros_like(d.run), np.zeros((0, len(d.run))), np.zeros_like(d.run)
    if d.in_pool.any():
        r, dr = shared_overlap(f[d.in_pool])
        pool_w = unit_w[d.in_pool].sum(axis=0)
        unit_w = unit_w.copy()
        unit_w[d.in_pool] *= 1.0 - values.get(SHARED_PARAM, 0.0) * r
    d.last_terms = (key, (f, dfa, dfs, m, unit_w, r, dr, pool_w))
    return d.last_terms[1]


def unit_power(values: Mapping[str, float], unit: str, form: str, ar: float) -> tuple[float, dict[str, float]]:
    """One unit's power at access rate ``ar`` alone (eq. 9: MaxPower x AR', W per SM or per chip; a unit
    alone draws no shared-activation overlap) for its access-rate function ``form``, and its gradient
    over the parameters it reads."""
    x = np.asarray([float(ar)])
    pos = x > 0
    if form == LOG:
        f, dfa, dfs = mixed_rate(x, np.log(np.where(pos, x, 1.0)), pos, values[names.ar_log_a(unit)],
                                 values.get("ar_log_b", 1.0), values.get(LINEAR_SHARE, 0.0))
    else:
        f, dfa, dfs = x, None, None
    p = values[names.max_power(unit)] * float(f[0])
    grad = {names.max_power(unit): float(f[0])}
    if dfa is not None:
        grad[names.ar_log_a(unit)] = values[names.max_power(unit)] * float(dfa[0])
        if LINEAR_SHARE in values:
            grad[LINEAR_SHARE] = values[names.max_power(unit)] * float(dfs[0])
    return p, grad


def power(values: Mapping[str, float], d: Design) -> np.ndarray:
    """Board power (W) per row, eqs. (5), (7), (9), (15), (16) and (22):
    ``idle + run x (activation + S(n) (N Const_SM + sum_u N_u MaxPower_u AR'_u [x (1 - gamma r) for the
    units of the shared-activation pool])) + sigma dT``."""
    s, _ = _sm_scale(d.sm_scaling, values.get("sm_beta", 1.1), d.active_sms, d.n_sm)
    total = d.n_sm * values.get("const_sm_power_w", 0.0) + _terms(values, d)[4].sum(axis=0)
    return values["idle_power_w"] + d.run * (values.get("activation_power_w", 0.0) + s * total) + d.offset


def jacobian(values: Mapping[str, float], d: Design) -> dict[str, np.ndarray]:
    """d power / d parameter (W per parameter unit) per row, for every parameter :func:`power` reads."""
    s, ds = _sm_scale(d.sm_scaling, values.get("sm_beta", 1.1), d.active_sms, d.n_sm)
    rs = d.run * s
    f, dfa, dfs, m, unit_w, r, dr, pool_w = _terms(values, d)
    g = values.get(SHARED_PARAM, 0.0) if d.in_pool.any() else 0.0
    keep = np.where(d.in_pool[:, None], 1.0 - g * r[None, :], 1.0)
    dm = rs[None, :] * d.mult[:, None] * f * keep
    da = rs[None, :] * d.mult[:, None] * m[:, None] * keep * dfa
    dsh = rs[None, :] * d.mult[:, None] * m[:, None] * keep * dfs
    if d.in_pool.any():
        # the overlap r moves with each pooled unit's AR': d(-g r A)/da_u = -g A dr/df_u df_u/da_u
        da[d.in_pool] -= rs[None, :] * g * pool_w[None, :] * dr * dfa[d.in_pool]
        dsh[d.in_pool] -= rs[None, :] * g * pool_w[None, :] * dr * dfs[d.in_pool]
    out = {"idle_power_w": np.ones_like(d.run), "activation_power_w": d.run, "const_sm_power_w": rs * d.n_sm}
    for i, (u, lg) in enumerate(zip(d.units, d.is_log)):
        out[names.max_power(u)] = dm[i]
        if lg:
            out[names.ar_log_a(u)] = da[i]
    if d.is_log.any():
        out[LINEAR_SHARE] = dsh.sum(axis=0)
    if d.in_pool.any():
        out[SHARED_PARAM] = -rs * r * pool_w
    if d.sm_scaling == "log":
        out["sm_beta"] = d.run * ds * (d.n_sm * values.get("const_sm_power_w", 0.0) + unit_w.sum(axis=0))
    return out


def components(values: Mapping[str, float], d: Design) -> dict[str, np.ndarray]:
    """Power per component (W) per row: idle, activation, const_sm and each unit after S(n), a pooled unit
    net of its share of the shared activation (the terms of :func:`power` without the leakage)."""
    s, _ = _sm_scale(d.sm_scaling, values.get("sm_beta", 1.1), d.active_sms, d.n_sm)
    rs = d.run * s
    out = {"idle": np.full(len(d.run), values["idle_power_w"]),
           "activation": d.run * values.get("activation_power_w", 0.0),
           "const_sm": rs * d.n_sm * values.get("const_sm_power_w", 0.0)}
    return {**out, **{u: rs * w for u, w in zip(d.units, _terms(values, d)[4])}}


def launch_facts(df: pd.DataFrame, act: Mapping[str, np.ndarray], sm_count: int) -> tuple[np.ndarray, np.ndarray]:
    """(running, active SMs) per row: a row runs a kernel unless it is an idle row (role 'idle', or every
    activity exactly 0); it uses every SM where ``active_sms`` is missing."""
    if "role" in df.columns:
        running = (df["role"].astype(str) != "idle").to_numpy()
    else:
        running = sum((np.nan_to_num(a) for a in act.values()), np.zeros(len(df))) > 0
    active = df["active_sms"].to_numpy(float) if "active_sms" in df.columns else np.full(len(df), sm_count)
    return running, np.where(np.isnan(active), sm_count, active)


def activities(basis: ActivityBasis, units: Sequence[str], df: pd.DataFrame, time_s: np.ndarray | None = None,
               source: str = "<table>") -> dict[str, np.ndarray]:
    """Activity arrays per modelled unit from ``act_<unit>`` columns, or, when those are missing, from
    per-warp counts (``cnt_<class>``), launch shape and ``time_s`` (IPP eq. 10, :mod:`calib.core.activity`).
    Derived units (the dispatch stage) are left out: :func:`design` computes them from the others."""
    # the dispatch stage comes from the others (design); a table's own unit of that name is read
    units = [u for u in units if u not in DERIVED_UNITS or ACT_PREFIX + u in df.columns]
    missing = [u for u in units if ACT_PREFIX + u not in df.columns]
    out = {u: df[ACT_PREFIX + u].to_numpy(dtype=float) for u in units if u not in missing}
    if missing:
        if not has_counts(df) or (time_s is None and "time_s" not in df.columns):
            raise BadInputError(
                f"{source}: no activity for unit(s) {', '.join(missing)}: give act_<unit> columns, or per-warp "
                "counts (cnt_<class>) with threads_per_block, blocks, core_mhz and time_s")
        out.update(table_access_rates(basis, df, time_s, missing))
    return out


class IppPowerModel:
    """Predicts power from an IPP ``power`` section (model ``ipp``), with the thermal section's leakage
    slope sigma when the file has one (eqs. 21-23)."""

    MODEL = "ipp"

    def __init__(self, power: Section | None, thermal: Section | None = None, basis: ActivityBasis | None = None,
                 where: str = "power"):
        if power is None or power.model != self.MODEL:
            raise BadInputError("parameter file has no IPP power section (power.model == 'ipp')")
        self.validate(power, where)
        self.section = power
        self.structure = power.structure
        self.values = power.values()
        self.basis = basis or ActivityBasis(tuple(self.structure["units"]), frozenset(
            u for u, spec in self.structure["units"].items() if spec.get("domain") == "mem"),
            int(self.structure["sm_count"]))
        self.sigma = thermal.value("sigma_w_per_c") if thermal is not None and "sigma_w_per_c" in thermal else None
        self.idle_temp_c = thermal.value("idle_temp_c") if thermal is not None and "idle_temp_c" in thermal else None

    @classmethod
    def from_file(cls, pf: ParameterFile) -> "IppPowerModel":
        """The model of a file's ``power`` section (BadInputError when it is not an IPP section)."""
        return cls(pf.get("power"), pf.get("thermal"), basis_of(pf))

    @staticmethod
    def validate(sec: Section, where: str = "power") -> None:
        """SchemaError (naming the field) when the section cannot drive the model: structure the schema
        cannot express (SM count, scaling, units with scope/domain/access-rate function and their
        parameters) and plausible values (log slopes, idle power, beta)."""
        st = sec.structure
        n = st.get("sm_count")
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_SM_COUNT:
            raise SchemaError(f"{where}.sm_count: {n!r} is not a positive integer (at most {MAX_SM_COUNT})")
        form = st.get("sm_scaling")
        if form not in ("log", "linear"):
            raise SchemaError(f"{where}.sm_scaling: {form!r} is not 'log' or 'linear'")
        units = st.get("units")
        if not isinstance(units, dict):
            raise SchemaError(f"{where}.units: expected an object unit -> {{scope, ar_function, domain}}")
        if "idle_power_w" not in sec:
            raise SchemaError(f"{where}.parameters: idle_power_w missing")
        for u, spec in units.items():
            if not isinstance(spec, dict):
                raise SchemaError(f"{where}.units.{u}: expected an object")
            if spec.get("scope") not in ("sm", "chip"):
                raise SchemaError(f"{where}.units.{u}.scope: {spec.get('scope')!r} is not 'sm' or 'chip'")
            if spec.get("domain", "core") not in ("core", "mem"):
                raise SchemaError(f"{where}.units.{u}.domain: {spec.get('domain')!r} is not 'core' or 'mem'")
            if spec.get("ar_function") not in FORMS:
                raise SchemaError(f"{where}.units.{u}.ar_function: {spec.get('ar_function')!r} is not one of "
                                  f"{', '.join(FORMS)}")
            if names.max_power(u) not in sec:
                raise SchemaError(f"{where}.parameters: {names.max_power(u)} missing (unit {u} is modelled)")
            if spec["ar_function"] == LOG and names.ar_log_a(u) not in sec:
                raise SchemaError(f"{where}.parameters: {names.ar_log_a(u)} missing (unit {u} has the log "
                                  "access-rate function)")
        in_range(sec, "ar_log_b", where, 0.0, 2.0, "the log access-rate function a ln(AR) + b is b at full "
                 "activity, about 1 (IPP: 1.001375); b <= 0 means the unit never draws power", lo_open=True)
        in_range(sec, LINEAR_SHARE, where, 0.0, 1.0, "the per-access share of the log access-rate function is a "
                 "fraction")
        for u in units:
            in_range(sec, names.ar_log_a(u), where, 0.0, 10.0, "the log access-rate slope must be positive "
                     "(IPP: 0.1365)", lo_open=True)
        idle = sec.value("idle_power_w")
        if idle < MIN_IDLE_POWER_W:
            raise SchemaError(f"{where}.parameters.idle_power_w: {idle:g} W is not a plausible idle power of a GPU "
                              f"board (< {MIN_IDLE_POWER_W:g} W): were the power readings of the fitted table all ~0?")
        if form == "log":
            beta = sec.params.get("sm_beta")
            if beta is None or not 0.0 < beta.value < 10.0:
                raise SchemaError(f"{where}.parameters.sm_beta: {None if beta is None else beta.value!r}: "
                                  "log10(alpha n + beta) needs 0 < beta < 10")
        clocks = st.get("default_clocks")
        if clocks is not None and not isinstance(clocks, dict):
            raise SchemaError(f"{where}.default_clocks: expected an object (core_mhz, mem_mhz)")
        shared = st.get(SHARED_KEY)
        if shared is not None:
            pool = shared.get("units") if isinstance(shared, dict) else None
            if not isinstance(pool, list) or not all(isinstance(u, str) and u in units for u in pool):
                raise SchemaError(f"{where}.{SHARED_KEY}: expected {{\"units\": [...]}} naming modelled units, "
                                  f"got {shared!r}")
            if SHARED_PARAM not in sec:
                raise SchemaError(f"{where}.parameters: {SHARED_PARAM} missing (the section has the shared-activation term)")
            in_range(sec, SHARED_PARAM, where, 0.0, 1.0, "the share of a pooled unit's power that the shared stage "
                     "draws is a fraction")
        elif SHARED_PARAM in sec:
            raise SchemaError(f"{where}.parameters: {SHARED_PARAM} without the structure's {SHARED_KEY} (which units share it?)")
        stage = st.get(DISPATCH_KEY)
        if stage is not None:
            pool = stage.get("units") if isinstance(stage, dict) else None
            if not isinstance(pool, list) or not all(isinstance(u, str) and u in units and u != DISPATCH_UNIT for u in pool):
                raise SchemaError(f"{where}.{DISPATCH_KEY}: expected {{\"units\": [...]}} naming modelled units other "
                                  f"than {DISPATCH_UNIT!r}, got {stage!r}")
            if DISPATCH_UNIT not in units or units[DISPATCH_UNIT].get("scope") != "sm":
                raise SchemaError(f"{where}.units: the dispatch stage needs the SM-scope unit {DISPATCH_UNIT!r}")
        check_names(sec, where, PARAMETERS + tuple(n for u in units for n in (names.max_power(u), names.ar_log_a(u))))

    def predict(self, df: pd.DataFrame, time_s: np.ndarray | None = None, use_temperature: bool = True,
                source: str = "<table>") -> np.ndarray:
        """Board power (W) for each row of a samples table."""
        act = activities(self.basis, list(self.structure["units"]), df, time_s, source)
        sigma = self.sigma if use_temperature else None
        return power(self.values, table_design(self.structure, df, act, sigma, self.idle_temp_c))

    def breakdown(self, df: pd.DataFrame) -> pd.DataFrame:
        """Power per component (W) per row: idle, activation, const_sm and each unit, after S(n)."""
        act = activities(self.basis, list(self.structure["units"]), df)
        return pd.DataFrame(components(self.values, table_design(self.structure, df, act)), index=df.index)
