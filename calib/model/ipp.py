"""IPP power model (Hong & Kim, ISCA 2010, paper 004), consuming a parameter file's ``power`` section.

    GPU_power   = IdlePower + Runtime_power                                            (5)
    RP_comp     = MaxPower_comp x AR'(AccessRate_comp)                                  (9)
    AccessRate  = DAC_per_th x Warps_per_SM / (Exec_cycles x warp_issue_per_cycle)      (10)-(12)
    Runtime     = Activation + S(Active_SMs) x (Max_SM + RP_Memory)                     (16)
    Max_SM      = Num_SMs x (Const_SM + sum over SM units of RP_comp)                   (7), (15)
    S(n)        = log10(alpha x n + beta), alpha = (10 - beta) / Num_SMs   ("log", GT200, no gating)
                  or n / Num_SMs                                             ("linear", Fermi and later)
    GPU_power(t)= ... + sigma x (Temperature(t) - Idle_temp)                            (21)-(23)

AR' is the identity or the clamped logarithm ``max(0, a_unit ln AR + b)`` per unit (see
:mod:`calib.model.arfunc`). Chip-level units (L2, global and local memory) are not multiplied by the
number of SMs. ``Activation`` is the Fermi-style constant power of any running kernel (0 on GT200, where
it is part of Const_SM). Everything is vectorised over rows.

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
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from calib.core.errors import BadInputError, SchemaError
from calib.core.params import ParameterFile, Section
from calib.model.arfunc import FORMS, LOG, ar_transform
from calib.model.validation import MAX_SM_COUNT, MIN_IDLE_POWER_W, check_names, in_range
from calib.core import names
from calib.core.activity import ActivityBasis, basis_of, has_counts, table_access_rates
from calib.core.samples import ACT_PREFIX

#: structure key of the shared-activation term (module docstring) and its parameter
SHARED_KEY = "shared_activation"
SHARED_PARAM = "shared_activation_frac"
#: units never pooled: active with every instruction (the issue stage itself)
NOT_POOLED = frozenset({"reg", "fds"})
#: the model's parameters besides each unit's max_power_<unit>_w and ar_log_a_<unit> (calib.core.names)
PARAMETERS = ("idle_power_w", "activation_power_w", "const_sm_power_w", "ar_log_b", "sm_beta", SHARED_PARAM)


def shared_pool(units: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The units the shared-activation term pools (module docstring): SM-scope units with the log
    access-rate function, except the register file and fetch/decode/schedule."""
    return [u for u, spec in units.items()
            if spec.get("scope") == "sm" and spec.get("ar_function") == LOG and u not in NOT_POOLED]


def shared_overlap(fs: Sequence[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
    """``r = 1 - U / F`` of the pooled units' AR' values ``fs`` (each clipped to [0, 1]; module
    docstring) and ``dr / df_u`` for each: 0 where at most one unit is on. Dimensionless."""
    if not len(fs):
        return np.zeros(0), []
    f = np.clip(np.asarray([np.asarray(x, float) for x in fs]), 0.0, 1.0)
    F = f.sum(axis=0)
    one_minus = 1.0 - f
    U = 1.0 - np.prod(one_minus, axis=0)
    on = F > 1e-12
    Fs = np.where(on, F, 1.0)
    r = np.where(on, 1.0 - U / Fs, 0.0)
    # dU/df_i is the product over the other units, taken directly (f_i may be 1)
    k = len(f)
    others = np.array([np.prod(np.delete(one_minus, i, axis=0), axis=0) if k > 1 else np.ones_like(F)
                       for i in range(k)])
    grads = np.where(on, -(others * Fs - U) / Fs ** 2, 0.0)
    return r, list(grads)


def sm_scale(form: str, beta: float, active: np.ndarray, total: int) -> np.ndarray:
    """S(n) of eq. (14)/(16) (``"log"``) or the linear scaling of power-gated GPUs (``"linear"``)."""
    n = np.asarray(active, dtype=float)
    if form == "log":
        alpha = (10.0 - beta) / total
        return np.log10(alpha * n + beta)
    if form == "linear":
        return n / total
    raise ValueError(f"unknown SM scaling {form!r}")


def activation_factors(structure: Mapping[str, Any], values: Mapping[str, float],
                       act: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """AR' of every unit (dimensionless, eq. 9's transformed access rate): ``{unit: array}``."""
    out = {}
    for unit, u in structure["units"].items():
        ar = act[unit]
        if u["ar_function"] == LOG:
            out[unit] = ar_transform(ar, LOG, values[names.ar_log_a(unit)], values.get("ar_log_b", 1.0))
        else:
            out[unit] = ar_transform(ar, u["ar_function"])
    return out


def runtime_components(structure: Mapping[str, Any], values: Mapping[str, float],
                       act: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Runtime power of each unit at full SM count (W, chip total), before S(n): ``{unit: array}``;
    with the shared-activation term, each pooled unit's power net of its share of the overlap."""
    n_sm = int(structure["sm_count"])
    fs = activation_factors(structure, values, act)
    out = {}
    for unit, u in structure["units"].items():
        p = values[names.max_power(unit)] * fs[unit]
        out[unit] = p if u["scope"] == "chip" else n_sm * p
    shared = structure.get(SHARED_KEY)
    if shared:
        pool = [u for u in shared["units"] if u in out]
        r, _ = shared_overlap([fs[u] for u in pool])
        if pool:
            keep = 1.0 - values.get(SHARED_PARAM, 0.0) * r
            for u in pool:
                out[u] = out[u] * keep
    return out


def power_from_arrays(structure: Mapping[str, Any], values: Mapping[str, float], act: Mapping[str, np.ndarray],
                      running: np.ndarray, active_sms: np.ndarray, temp_c: np.ndarray | None = None,
                      sigma: float | None = None, idle_temp_c: float | None = None) -> np.ndarray:
    """Board power (W) per row from unit activities and launch facts (see module docstring).

    ``temp_c`` (C), ``sigma`` (W/C) and ``idle_temp_c`` (C) add the static-power rise when all three are given."""
    n_sm = int(structure["sm_count"])
    comps = runtime_components(structure, values, act)
    total = np.zeros_like(np.asarray(running, dtype=float))
    for v in comps.values():
        total = total + v
    total = total + n_sm * values.get("const_sm_power_w", 0.0)
    s = sm_scale(structure.get("sm_scaling", "linear"), values.get("sm_beta", 1.1), active_sms, n_sm)
    runtime = values.get("activation_power_w", 0.0) + s * total
    p = values["idle_power_w"] + np.asarray(running, dtype=float) * runtime
    if temp_c is not None and sigma is not None and idle_temp_c is not None:
        dt = np.nan_to_num(np.asarray(temp_c, dtype=float) - idle_temp_c, nan=0.0)
        p = p + sigma * dt
    return p


def activities(basis: ActivityBasis, units: Sequence[str], df: pd.DataFrame, time_s: np.ndarray | None = None,
               source: str = "<table>") -> dict[str, np.ndarray]:
    """Activity arrays per modelled unit from ``act_<unit>`` columns, or, when those are missing, from
    per-warp counts (``cnt_<class>``), launch shape and ``time_s`` (IPP eq. 10, :mod:`calib.core.activity`)."""
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

    def __init__(self, power: Section, thermal: Section | None = None, basis: ActivityBasis | None = None,
                 where: str = "power"):
        if power.model != self.MODEL:
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
        power = pf.get("power")
        if power is None or power.model != cls.MODEL:
            raise BadInputError("parameter file has no IPP power section (power.model == 'ipp')")
        return cls(power, pf.get("thermal"), basis_of(pf))

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
        check_names(sec, where, PARAMETERS + tuple(n for u in units for n in (names.max_power(u), names.ar_log_a(u))))

    def predict(self, df: pd.DataFrame, time_s: np.ndarray | None = None, use_temperature: bool = True,
                source: str = "<table>") -> np.ndarray:
        """Board power (W) for each row of a samples table."""
        act = activities(self.basis, list(self.structure["units"]), df, time_s, source)
        running = _running(df, act)
        n_sm = int(self.structure["sm_count"])
        active = df["active_sms"].to_numpy(dtype=float) if "active_sms" in df.columns else np.full(len(df), n_sm)
        active = np.where(np.isnan(active), n_sm, active)
        temp = df["temp_c"].to_numpy(dtype=float) if use_temperature and "temp_c" in df.columns else None
        return power_from_arrays(self.structure, self.values, act, running, active, temp, self.sigma, self.idle_temp_c)

    def breakdown(self, df: pd.DataFrame) -> pd.DataFrame:
        """Power per component (W) per row: idle, activation, const_sm and each unit, after S(n)."""
        act = activities(self.basis, list(self.structure["units"]), df)
        running = _running(df, act).astype(float)
        n_sm = int(self.structure["sm_count"])
        active = df["active_sms"].to_numpy(dtype=float) if "active_sms" in df.columns else np.full(len(df), n_sm)
        s = sm_scale(self.structure.get("sm_scaling", "linear"), self.values.get("sm_beta", 1.1), active, n_sm)
        out = {"idle": np.full(len(df), self.values["idle_power_w"]),
               "activation": running * self.values.get("activation_power_w", 0.0),
               "const_sm": running * s * n_sm * self.values.get("const_sm_power_w", 0.0)}
        for u, p in runtime_components(self.structure, self.values, act).items():
            out[u] = running * s * p
        return pd.DataFrame(out, index=df.index)


def _running(df: pd.DataFrame, act: Mapping[str, np.ndarray]) -> np.ndarray:
    """A row runs a kernel unless it is an idle row (role 'idle', or every activity exactly 0)."""
    if "role" in df.columns:
        return (df["role"].astype(str) != "idle").to_numpy()
    tot = np.zeros(len(df))
    for a in act.values():
        tot = tot + np.nan_to_num(a)
    return tot > 0


def log_factor(beta: float, n: float, total: int) -> float:
    """Scalar S(n) for the log form (used in hand checks: S(1) = 0.1451 on GTX280 with beta 1.1)."""
    return math.log10((10.0 - beta) / total * n + beta)
