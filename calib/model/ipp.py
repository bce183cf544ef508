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
from typing import Any

import numpy as np
import pandas as pd

from calib.core.errors import BadInputError
from calib.model.arfunc import LOG, ar_transform
from calib.core.activity import ActivityBasis, basis_of, has_counts, table_access_rates
from calib.core.samples import ACT_PREFIX


def sm_scale(form: str, beta: float, active: np.ndarray, total: int) -> np.ndarray:
    """S(n) of eq. (14)/(16) (``"log"``) or the linear scaling of power-gated GPUs (``"linear"``)."""
    n = np.asarray(active, dtype=float)
    if form == "log":
        alpha = (10.0 - beta) / total
        return np.log10(alpha * n + beta)
    if form == "linear":
        return n / total
    raise ValueError(f"unknown SM scaling {form!r}")


def runtime_components(structure: Mapping[str, Any], values: Mapping[str, float],
                       act: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Runtime power of each unit at full SM count (W, chip total), before S(n): ``{unit: array}``."""
    n_sm = int(structure["sm_count"])
    out = {}
    for unit, u in structure["units"].items():
        ar = act[unit]
        if u["ar_function"] == LOG:
            f = ar_transform(ar, LOG, values[f"ar_log_a_{unit}"], values.get("ar_log_b", 1.0))
        else:
            f = ar_transform(ar, u["ar_function"])
        p = values[f"max_power_{unit}_w"] * f
        out[unit] = p if u["scope"] == "chip" else n_sm * p
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
    """Predicts power from a parameter file's ``power`` section (model ``ipp``)."""

    def __init__(self, doc: Mapping[str, Any]):
        sec = doc.get("power")
        if sec is None or sec.get("model") != "ipp":
            raise BadInputError("parameter file has no IPP power section (power.model == 'ipp')")
        self.structure = sec
        self.basis = basis_of(doc)
        self.values = {k: float(v["value"]) for k, v in sec["parameters"].items()}
        th = doc.get("thermal", {}).get("parameters", {})
        self.sigma = float(th["sigma_w_per_c"]["value"]) if "sigma_w_per_c" in th else None
        self.idle_temp_c = float(th["idle_temp_c"]["value"]) if "idle_temp_c" in th else None

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
