"""IPP temperature model and the temperature-driven static power rise (paper 004, eqs. 17-23).

    Temperature_rise(t)  = Idle_temp + delta x (1 - exp(-t / RC_Rise))        (17)
    Temperature_decay(t) = Idle_temp + gamma x exp(-t / RC_Decay)             (18)
    delta = Max_temp(P) = mu x Runtime_Power + lambda + rho x MemAccess_intensity   (19), (51)
    GPU_power(t) = IdlePower + Runtime_power_0 + sigma x (Temperature(t) - Idle_temp)   (21)-(23)

Max_temp is the rise above the idle temperature (errata, hong-thesis-2012-notes.md, sec. 6 note 8).
Times in s, temperatures in degC, powers in W.
"""

from __future__ import annotations

import numpy as np

from calib.core.errors import SchemaError
from calib.core.params import Section
from calib.model.validation import check_names


def leakage_w(sigma_w_per_c: float | np.ndarray, temp_c: float | np.ndarray | None,
              idle_temp_c: float) -> np.ndarray | float:
    """Static-power rise over the idle temperature, eq. (22): ``sigma x (Temperature - Idle_temp)``, W.

    ``sigma_w_per_c`` (W/C, scalar or per row), ``temp_c`` and ``idle_temp_c`` (C); a missing temperature
    (NaN) adds nothing. The one home of the term: the IPP and DVFS power models, the thermal fit and the
    DVFS training rows all call it."""
    if temp_c is None:
        return 0.0
    return sigma_w_per_c * np.nan_to_num(np.asarray(temp_c, dtype=float) - idle_temp_c, nan=0.0)


def rc_rise(t_s: np.ndarray, rc_s: float) -> np.ndarray:
    """The one-pole rise of eq. (17), ``1 - exp(-t / RC)``, dimensionless (``t_s`` and ``rc_s`` in s)."""
    return 1.0 - np.exp(-np.asarray(t_s, float) / rc_s)


def rc_decay(t_s: np.ndarray, rc_s: float) -> np.ndarray:
    """The one-pole decay of eq. (18), ``exp(-t / RC)``, dimensionless (``t_s`` and ``rc_s`` in s)."""
    return np.exp(-np.asarray(t_s, float) / rc_s)


def max_temp_rise_c(values: dict[str, float], runtime_power_w: float | np.ndarray,
                    mem_intensity: float | np.ndarray = 0.0) -> np.ndarray:
    """Max_temp above the idle temperature, eqs. (19), (51): ``mu x Runtime_power + lambda + rho x
    MemAccess_intensity`` (C; ``values`` holds ``mu_c_per_w``, ``lambda_c``, ``rho_c``, absent ones 0)."""
    return (values.get("mu_c_per_w", 0.0) * np.asarray(runtime_power_w, float) + values.get("lambda_c", 0.0)
            + values.get("rho_c", 0.0) * np.asarray(mem_intensity, float))


#: the parameters of IPP's thermal model (eqs. 17-19, the fan and the leakage slope)
PARAMETERS = ("idle_temp_c", "fan_max_power_w", "sigma_w_per_c", "mu_c_per_w", "lambda_c", "rho_c", "rc_rise_s",
              "rc_decay_s")

class ThermalModel:
    """Temperature and power over time from a parameter file's ``thermal`` section."""

    MODEL = "ipp-thermal"

    def __init__(self, section: Section, where: str = "thermal"):
        self.validate(section, where)
        self.section = section
        v = section.values()
        self.idle_temp_c = v["idle_temp_c"]
        self.rc_rise_s = v["rc_rise_s"]
        self.rc_decay_s = v["rc_decay_s"]
        self.mu = v.get("mu_c_per_w", 0.0)
        self.lam = v.get("lambda_c", 0.0)
        self.rho = v.get("rho_c", 0.0)
        self.sigma = v.get("sigma_w_per_c", 0.0)

    @staticmethod
    def validate(sec: Section, where: str = "thermal") -> None:
        """SchemaError (naming the field) when the section lacks what the model needs."""
        for name in ("idle_temp_c", "rc_rise_s", "rc_decay_s"):
            if name not in sec:
                raise SchemaError(f"{where}.parameters: {name} missing")
        for name in ("rc_rise_s", "rc_decay_s"):
            if not sec.value(name) > 0:
                raise SchemaError(f"{where}.parameters.{name}: must be > 0")
        check_names(sec, where, PARAMETERS)

    def max_rise_c(self, runtime_power_w: float | np.ndarray, mem_intensity: float | np.ndarray = 0.0) -> np.ndarray:
        """Steady rise above idle (eq. 19), degC."""
        return max_temp_rise_c({"mu_c_per_w": self.mu, "lambda_c": self.lam, "rho_c": self.rho}, runtime_power_w,
                               mem_intensity)

    def temperature_rise(self, t_s: np.ndarray, runtime_power_w: float, mem_intensity: float = 0.0) -> np.ndarray:
        """Temperature while a kernel runs from a cold (idle) start, eq. (17), degC."""
        delta = float(self.max_rise_c(runtime_power_w, mem_intensity))
        return self.idle_temp_c + delta * rc_rise(t_s, self.rc_rise_s)

    def temperature_decay(self, t_s: np.ndarray, decay_temp_c: float) -> np.ndarray:
        """Temperature after the kernel stops at ``decay_temp_c``, eq. (18), degC."""
        gamma = decay_temp_c - self.idle_temp_c
        return self.idle_temp_c + gamma * rc_decay(t_s, self.rc_decay_s)

    def power_over_time(self, t_s: np.ndarray, idle_power_w: float, runtime_power0_w: float,
                        mem_intensity: float = 0.0) -> np.ndarray:
        """GPU power while a kernel runs from a cold start, eqs. (21)-(23), W."""
        temp = self.temperature_rise(t_s, runtime_power0_w, mem_intensity)
        return idle_power_w + runtime_power0_w + leakage_w(self.sigma, temp, self.idle_temp_c)
