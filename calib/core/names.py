"""Names of per-unit and per-level parameters, made in one place.

Parameter files key parameters by name; names that carry a unit, an instruction class or a clock level
are built here and parsed here, so that a fitter, a model, a report and a comparison can never spell
the same parameter two ways.
"""

from __future__ import annotations


def max_power(unit: str) -> str:
    """IPP MaxPower of a unit at AR = 1, W: ``max_power_<unit>_w``."""
    return f"max_power_{unit}_w"


def ar_log_a(unit: str) -> str:
    """Slope of a unit's IPP log access-rate function: ``ar_log_a_<unit>``."""
    return f"ar_log_a_{unit}"


def unit_weight(unit: str) -> str:
    """DVFS dynamic power of a unit at full activity and the reference clocks, W: ``w_<unit>``."""
    return f"w_{unit}"


def voltage_level(domain: str, mhz: float) -> str:
    """Relative voltage of a clock level: ``v_<domain>_<MHz>``, e.g. ``v_core_975``."""
    return f"v_{domain}_{mhz:g}"


def core_voltage_level(mhz: float, mem_mhz: float | None = None) -> str:
    """Core voltage: ``v_core_975``, or ``v_core_975_mem_810`` on a memory level's own curve."""
    return voltage_level("core", mhz) + ("" if mem_mhz is None else f"_mem_{mem_mhz:g}")


M_FACTOR_PREFIX = "m_factor_"


def m_factor(cls: str) -> str:
    """Issue slots per warp instruction of an instruction class (timing): ``m_factor_<class>``."""
    return M_FACTOR_PREFIX + cls


def m_factor_class(name: str) -> str | None:
    """The instruction class of an ``m_factor_<class>`` name, else None."""
    return name[len(M_FACTOR_PREFIX):] if name.startswith(M_FACTOR_PREFIX) else None


def unit_names(unit: str) -> tuple[str, ...]:
    """Every per-unit parameter name a unit may have (IPP and DVFS)."""
    return (max_power(unit), ar_log_a(unit), unit_weight(unit))


def copy_bandwidth(direction: str, host_memory: str) -> str:
    """Host-device copy bandwidth, bytes/s: ``bandwidth_<h2d|d2h>_<pinned|pageable>_bytes_per_s``."""
    return f"bandwidth_{direction}_{host_memory}_bytes_per_s"


def copy_latency(direction: str, host_memory: str) -> str:
    """Fixed time of one host-device copy, s: ``latency_<h2d|d2h>_<pinned|pageable>_s``."""
    return f"latency_{direction}_{host_memory}_s"


def copy_energy_per_byte(direction: str) -> str:
    """Board energy per byte copied above idle, J/B: ``energy_<h2d|d2h>_j_per_byte``."""
    return f"energy_{direction}_j_per_byte"


def copy_host_power(host_memory: str) -> str:
    """Host (wall) power above idle while copying, W: ``host_power_<pinned|pageable>_w``."""
    return f"host_power_{host_memory}_w"


def copy_host_rapl_power(host_memory: str) -> str:
    """Host CPU package and DRAM power above idle while copying (RAPL), W: ``host_rapl_power_<pinned|pageable>_w``."""
    return f"host_rapl_power_{host_memory}_w"
def foster_r(pole: int) -> str:
    """Thermal resistance of Foster pole ``pole`` (1 = fastest), C/W: ``r<pole>_c_per_w``."""
    return f"r{pole}_c_per_w"


def foster_tau(pole: int) -> str:
    """Time constant of Foster pole ``pole`` (1 = fastest), s: ``tau<pole>_s``."""
    return f"tau{pole}_s"


#: thermal resistance of the poles faster than the sensor resolves (a direct term of the network), C/W
R_DIRECT = "r_direct_c_per_w"
#: leakage (static power) rise per degree above idle, linear form, W/C
LEAK_SIGMA = "leak_sigma_w_per_c"
#: leakage exponential form: amplitude (W) and rate (1/C) of L(dT) = amp (exp(k dT) - 1)
LEAK_EXP_AMP = "leak_exp_w"
LEAK_EXP_K = "leak_k_per_c"
