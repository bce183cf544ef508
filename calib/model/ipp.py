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
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from calib.core.errors import BadInputError, SchemaError
from calib.core.params import ParameterFile, Section
from calib.model.arfunc import FORMS, LOG, log_rate
from calib.model.thermal import leakage_w
from calib.model.validation import MAX_SM_COUNT, MIN_IDLE_POWER_W, check_names, in_range
from calib.core import names
from calib.core.activity import ActivityBasis, basis_of, has_counts, table_access_rates
from calib.core.samples import ACT_PREFIX

#: the model's parameters besides each unit's max_power_<unit>_w and ar_log_a_<unit> (calib.core.names)
PARAMETERS = ("idle_power_w", "activation_power_w", "const_sm_power_w", "ar_log_b", "sm_beta")


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
    scaling): ln(AR) precomputed once, so that :func:`power` and :func:`jacobian` are cheap to call in a
    fitter's inner loop."""

    n_sm: int
    sm_scaling: str
    run: np.ndarray                 # 1.0 on rows that run a kernel, 0.0 on idle rows
    active_sms: np.ndarray          # active SMs per row
    units: list[tuple[str, str, np.ndarray, np.ndarray, np.ndarray, float]]  # (unit, form, AR, AR > 0, ln AR, SMs)
    offset: np.ndarray              # the leakage rise over the idle temperature (eq. 22), W


def design(structure: Mapping[str, Any], act: Mapping[str, np.ndarray], running: np.ndarray,
           active_sms: np.ndarray, temp_c: np.ndarray | None = None, sigma: float | None = None,
           idle_temp_c: float | None = None) -> Design:
    """The :class:`Design` of rows given as arrays: access rates per modelled unit, the running mask, the
    active SMs, and (all three or none) temperature (C), sigma (W/C) and the idle temperature (C)."""
    n_sm = int(structure["sm_count"])
    run = np.asarray(running, float)
    units = []
    for u, spec in structure["units"].items():
        ar = np.asarray(act[u], float)
        pos = ar > 0
        lnar = np.where(pos, np.log(np.where(pos, ar, 1.0)), 0.0)
        units.append((u, spec["ar_function"], ar, pos, lnar, 1.0 if spec["scope"] == "chip" else float(n_sm)))
    offset = np.zeros_like(run)
    if temp_c is not None and sigma is not None and idle_temp_c is not None:
        offset = leakage_w(sigma, temp_c, idle_temp_c)
    return Design(n_sm, structure.get("sm_scaling", "linear"), run, np.asarray(active_sms, float), units, offset)


def table_design(structure: Mapping[str, Any], df: pd.DataFrame, act: Mapping[str, np.ndarray],
                 sigma: float | None = None, idle_temp_c: float | None = None) -> Design:
    """The :class:`Design` of a samples table's rows (:func:`launch_facts`), with the leakage term from
    ``temp_c`` when sigma is given."""
    running, active = launch_facts(df, act, int(structure["sm_count"]))
    temp = df["temp_c"].to_numpy(float) if "temp_c" in df.columns and sigma is not None else None
    return design(structure, act, running, active, temp, sigma, idle_temp_c)


def _rate(values: Mapping[str, float], unit: str, form: str, ar: np.ndarray, pos: np.ndarray,
          lnar: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """AR' of a unit (eq. 9) and its derivative in the unit's log slope (None for the linear form)."""
    if form == LOG:
        return log_rate(lnar, pos, values[names.ar_log_a(unit)], values.get("ar_log_b", 1.0))
    return ar, None


def power(values: Mapping[str, float], d: Design) -> np.ndarray:
    """Board power (W) per row, eqs. (5), (7), (9), (15), (16) and (22):
    ``idle + run x (activation + S(n) (N Const_SM + sum_u N_u MaxPower_u AR'_u)) + sigma dT``."""
    s, _ = _sm_scale(d.sm_scaling, values.get("sm_beta", 1.1), d.active_sms, d.n_sm)
    total = d.n_sm * values.get("const_sm_power_w", 0.0)
    for u, form, ar, pos, lnar, mult in d.units:
        total = total + mult * values[names.max_power(u)] * _rate(values, u, form, ar, pos, lnar)[0]
    return values["idle_power_w"] + d.run * (values.get("activation_power_w", 0.0) + s * total) + d.offset


def jacobian(values: Mapping[str, float], d: Design) -> dict[str, np.ndarray]:
    """d power / d parameter (W per parameter unit) per row, for every parameter :func:`power` reads."""
    s, ds = _sm_scale(d.sm_scaling, values.get("sm_beta", 1.1), d.active_sms, d.n_sm)
    rs = d.run * s
    out = {"idle_power_w": np.ones_like(d.run), "activation_power_w": d.run, "const_sm_power_w": rs * d.n_sm}
    total = d.n_sm * values.get("const_sm_power_w", 0.0)
    for u, form, ar, pos, lnar, mult in d.units:
        f, dfa = _rate(values, u, form, ar, pos, lnar)
        m = values[names.max_power(u)]
        out[names.max_power(u)] = rs * mult * f
        if dfa is not None:
            out[names.ar_log_a(u)] = rs * mult * m * dfa
        total = total + mult * m * f
    if d.sm_scaling == "log":
        out["sm_beta"] = d.run * ds * total
    return out


def components(values: Mapping[str, float], d: Design) -> dict[str, np.ndarray]:
    """Power per component (W) per row: idle, activation, const_sm and each unit after S(n) (the terms of
    :func:`power` without the leakage)."""
    s, _ = _sm_scale(d.sm_scaling, values.get("sm_beta", 1.1), d.active_sms, d.n_sm)
    rs = d.run * s
    out = {"idle": np.full(len(d.run), values["idle_power_w"]),
           "activation": d.run * values.get("activation_power_w", 0.0),
           "const_sm": rs * d.n_sm * values.get("const_sm_power_w", 0.0)}
    for u, form, ar, pos, lnar, mult in d.units:
        out[u] = rs * mult * values[names.max_power(u)] * _rate(values, u, form, ar, pos, lnar)[0]
    return out


def launch_facts(df: pd.DataFrame, act: Mapping[str, np.ndarray], sm_count: int) -> tuple[np.ndarray, np.ndarray]:
    """(running, active SMs) per row: a row runs a kernel unless it is an idle row (role 'idle', or every
    activity exactly 0); it uses every SM where ``active_sms`` is missing."""
    if "role" in df.columns:
        running = (df["role"].astype(str) != "idle").to_numpy()
    else:
        tot = np.zeros(len(df))
        for a in act.values():
            tot = tot + np.nan_to_num(a)
        running = tot > 0
    active = df["active_sms"].to_numpy(float) if "active_sms" in df.columns else np.full(len(df), sm_count)
    return running, np.where(np.isnan(active), sm_count, active)


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
