"""The models by section kind, and which sections answer power.

A parameter file's section names its model (``Section.model``); :data:`MODELS` has one entry per model:
its check of the section (``validate``, what the schema cannot express), how the model is built from a
file's section (``build``), the columns of ``calib predict`` it answers (``predicts``) and a run on a tiny
table (``dry_run``, :func:`calib.model.checks.load_checked`'s last net). Adding a model is one module
and one entry here.

:func:`power_sections` is the one answer to "which section predicts the power of a row": predictions,
intervals, energy decisions, optimize, advise and the report all ask it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from calib.core.params import ParameterFile, Section
from calib.model import dvfs, thermal_network, timing, transfer
from calib.model.ipp import IppPowerModel
from calib.model.thermal import ThermalModel

POWER = "power_w_pred"


@dataclass(frozen=True)
class Model:
    """One model of :data:`MODELS` (module docstring)."""

    validate: Callable[[Section, str], None]
    build: Callable[[ParameterFile, str], Any]
    predicts: tuple[str, ...]
    dry_run: Callable[[ParameterFile, str], Any]
    any_clocks: bool = False  # predicts power at clocks other than the default ones (DVFS)


def _table(units: list[str], core_mhz: float, mem_mhz: float, sm_count: int) -> pd.DataFrame:
    """Idle, half and full activity of every unit at the given clocks."""
    return pd.DataFrame({"role": ["idle", "kernel", "kernel"], "core_mhz": core_mhz, "mem_mhz": mem_mhz,
                         "ref_core_mhz": core_mhz, "ref_mem_mhz": mem_mhz, "active_sms": float(sm_count),
                         **{"act_" + u: [0.0, 0.5, 1.0] for u in units}})


def _ipp_dry(pf: ParameterFile, name: str) -> np.ndarray:
    st = pf[name].structure
    clocks = st.get("default_clocks") or {}
    df = _table(list(st["units"]), clocks.get("core_mhz") or 1000.0, clocks.get("mem_mhz") or 1000.0,
                int(st["sm_count"]))
    return IppPowerModel.from_file(pf).predict(df, use_temperature=False)


def _dvfs_dry(pf: ParameterFile, name: str) -> np.ndarray:
    sec = pf[name]
    ref = sec.structure["ref_clocks"]
    df = _table([u["name"] for u in sec.structure["units"]], ref["core_mhz"], ref["mem_mhz"], 1)
    if sec.structure.get("temp_ref_c") is not None:
        df["temp_c"] = sec.structure["temp_ref_c"]
    return dvfs.predict_power(sec, df)


def _timing_dry(pf: ParameterFile, name: str) -> np.ndarray:
    sec = pf[name]
    ref = sec.structure["ref_clocks"]
    n = int(sec.structure.get("sm_count", 1))
    kernel = pd.DataFrame({"cnt_fp": [100.0], "cnt_global": [10.0], "blocks": [2.0 * n], "threads_per_block": [256.0],
                           "core_mhz": [ref["core_mhz"]], "mem_mhz": [ref["mem_mhz"]]})
    return timing.predict_time(sec, kernel)


def _transfer_dry(pf: ParameterFile, name: str) -> np.ndarray:
    return np.concatenate([np.ravel(transfer.copy_energy_j(pf[name], np.array([0.0, 4096.0, 1e9]), d, p)[0])
                           for d in transfer.DIRECTIONS for p in (0.0, 1.0)])


#: the models by section model name (module docstring)
MODELS: dict[str, Model] = {
    IppPowerModel.MODEL: Model(IppPowerModel.validate, lambda pf, name: IppPowerModel.from_file(pf),
                               (POWER, "energy_j_pred"), _ipp_dry),
    dvfs.MODEL_NAME: Model(dvfs.validate, lambda pf, name: dvfs.compile_section(pf[name]), (POWER, "energy_j_pred"),
                           _dvfs_dry, any_clocks=True),
    ThermalModel.MODEL: Model(ThermalModel.validate, lambda pf, name: ThermalModel(pf[name]), ("temp_c_pred",),
                              lambda pf, name: ThermalModel(pf[name]).temperature_rise(np.array([0.0, 1.0, 100.0]), 50.0)),
    thermal_network.MODEL_NAME: Model(thermal_network.validate,
                                      lambda pf, name: thermal_network.FosterNetwork.from_section(pf[name]),
                                      ("temp_c_pred", POWER), lambda pf, name: thermal_network.dry_run(pf[name])),
    timing.MODEL_NAME: Model(timing.validate, lambda pf, name: timing.compile_section(pf[name]),
                             ("time_s_pred", "energy_j_pred"), _timing_dry),
    transfer.MODEL_NAME: Model(transfer.validate, lambda pf, name: pf[name],
                               ("copy_time_s_pred", "copy_energy_j_pred", "copy_host_energy_j_pred"), _transfer_dry),
}


@dataclass(frozen=True)
class PowerSections:
    """Which sections of a file answer power (:func:`power_sections`): ``default`` at the default clocks
    (or without clock columns), ``other_clocks`` at every other pair; either may be None."""

    default: str | None
    other_clocks: str | None

    def __bool__(self) -> bool:
        return self.default is not None or self.other_clocks is not None

    def rows(self, pf: ParameterFile, df: pd.DataFrame) -> list[tuple[str, np.ndarray]]:
        """``[(section name, row mask)]``: the section that predicts the power of each row of ``df``."""
        if self.default is None or self.default == self.other_clocks:
            return [(s, np.ones(len(df), dtype=bool)) for s in (self.default or self.other_clocks,) if s]
        off = off_default_clocks(pf, df) if self.other_clocks else np.zeros(len(df), dtype=bool)
        return [(name, m) for name, m in ((self.default, ~off), (self.other_clocks, off)) if m.any()]


def power_sections(pf: ParameterFile) -> PowerSections:
    """The sections that answer power: the ``power`` section at the default clocks, and at other clocks
    the first section whose model predicts power at any clocks (``dvfs``, else a DVFS ``power``)."""
    def answers(name: str) -> Model | None:
        m = MODELS.get(pf.model_of(name) or "")
        return m if m is not None and POWER in m.predicts and name in ("power", "dvfs") else None

    default = "power" if answers("power") else None
    other = next((n for n in ("dvfs", "power") if answers(n) and answers(n).any_clocks), None)
    return PowerSections(default, other)


def off_default_clocks(pf: ParameterFile, df: pd.DataFrame) -> np.ndarray:
    """Rows whose clocks differ from the IPP power section's default clocks (the DVFS model's rows)."""
    clocks = pf["power"].structure.get("default_clocks") or {}
    core0, mem0 = clocks.get("core_mhz"), clocks.get("mem_mhz")
    off = np.zeros(len(df), dtype=bool)
    if core0 is not None and "core_mhz" in df.columns:
        off = ~np.isclose(df["core_mhz"].to_numpy(float), core0)
        if mem0 is not None and "mem_mhz" in df.columns:
            off |= ~np.isclose(df["mem_mhz"].to_numpy(float), mem0)
        off &= ~df["core_mhz"].isna().to_numpy()
    return off
