"""Which model reads which section, and whether a parameter file can drive them all.

The schema (:mod:`calib.core.params`) checks the file format; each model checks the section it is built
from (its ``validate``), so that `calib validate` accepts only files `calib predict` can use.
:func:`load_checked` is how every verb that reads a parameter file (validate, predict, validate-model,
optimize, diff, report, publish) opens it: schema and physical bounds, every model's own checks, then a
dry run of every model section on a tiny table, a net for whatever the precise checks miss. Failures
are SchemaError (exit status 2) naming the file and the field.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from calib.core import params as P
from calib.core.errors import BadInputError, SchemaError
from calib.core.params import ParameterFile, Section
from calib.model import dvfs, thermal_network, timing, transfer
from calib.model.ipp import IppPowerModel
from calib.model.thermal import ThermalModel

#: the model that reads a section, by the section's model name: its own check of the section
VALIDATORS: dict[str, Callable[[Section, str], None]] = {
    IppPowerModel.MODEL: IppPowerModel.validate,
    ThermalModel.MODEL: ThermalModel.validate,
    dvfs.MODEL_NAME: dvfs.validate,
    timing.MODEL_NAME: timing.validate,
    transfer.MODEL_NAME: transfer.validate,
    thermal_network.MODEL_NAME: thermal_network.validate,
}

#: what a model may raise on a section the checks above missed (the dry run turns it into SchemaError)
_MODEL_FAILURES = (BadInputError, KeyError, TypeError, ValueError, IndexError, ArithmeticError, AttributeError)


def _dry_run(pf: ParameterFile, source: str) -> None:
    """Last-resort net: run every model section of ``pf`` on a tiny table (idle, half and full
    activity; one small kernel) and refuse the file, naming the section, when a model fails or
    predicts a non-finite value. Precise checks give the better messages; this catches the rest."""
    import warnings

    import numpy as np
    import pandas as pd

    def table(units: list[str], core_mhz: float, mem_mhz: float, sm_count: int) -> pd.DataFrame:
        df = pd.DataFrame({"role": ["idle", "kernel", "kernel"], "core_mhz": core_mhz, "mem_mhz": mem_mhz,
                           "ref_core_mhz": core_mhz, "ref_mem_mhz": mem_mhz, "active_sms": float(sm_count)})
        for u in units:
            df["act_" + u] = [0.0, 0.5, 1.0]
        return df

    def run(section: str, fn: Callable[[], object]) -> None:
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                out = np.asarray(fn(), dtype=float)
        except _MODEL_FAILURES as e:
            raise SchemaError(f"{source}: {section}: cannot be used for predictions "
                              f"({type(e).__name__}: {e})") from e
        if not np.all(np.isfinite(out)):
            raise SchemaError(f"{source}: {section}: the model predicts non-finite values on a test table; "
                              "check the section's parameters")

    power = pf.get("power")
    if power is not None and power.model == IppPowerModel.MODEL:
        n = int(power.structure["sm_count"])
        clocks = power.structure.get("default_clocks") or {}
        df = table(list(power.structure["units"]), clocks.get("core_mhz") or 1000.0, clocks.get("mem_mhz") or 1000.0, n)
        run("power", lambda: IppPowerModel.from_file(pf).predict(df, use_temperature=False))
    for name in ("power", "dvfs"):
        sec = pf.get(name)
        if sec is not None and sec.model == dvfs.MODEL_NAME:
            ref = sec.structure["ref_clocks"]
            df = table([u["name"] for u in sec.structure["units"]], ref["core_mhz"], ref["mem_mhz"], 1)
            if sec.structure.get("temp_ref_c") is not None:
                df["temp_c"] = sec.structure["temp_ref_c"]
            run(name, lambda sec=sec, df=df: dvfs.predict_power(sec, df))
    sec = pf.get("timing")
    if sec is not None and sec.model == timing.MODEL_NAME:
        ref = sec.structure["ref_clocks"]
        n = int(sec.structure.get("sm_count", 1))
        kernel = pd.DataFrame({"cnt_fp": [100.0], "cnt_global": [10.0], "blocks": [2.0 * n],
                               "threads_per_block": [256.0], "core_mhz": [ref["core_mhz"]],
                               "mem_mhz": [ref["mem_mhz"]]})
        run("timing", lambda: timing.predict_time(sec, kernel))
    sec = pf.get("transfer")
    if sec is not None and sec.model == transfer.MODEL_NAME:
        run("transfer", lambda: np.concatenate([np.ravel(transfer.copy_energy_j(sec, np.array([0.0, 4096.0, 1e9]), d, p)[0])
                                                 for d in transfer.DIRECTIONS for p in (0.0, 1.0)]))
    sec = pf.get("thermal")
    if sec is not None and sec.model == ThermalModel.MODEL:
        run("thermal", lambda: ThermalModel(sec).temperature_rise(np.array([0.0, 1.0, 100.0]), 50.0))
    sec = pf.get(thermal_network.SECTION)
    if sec is not None and sec.model == thermal_network.MODEL_NAME:
        run(thermal_network.SECTION, lambda: thermal_network.dry_run(sec))


def check_models(pf: ParameterFile, source: str = "<parameters>") -> None:
    """Raise SchemaError (naming the field) when a section cannot drive its model."""
    for name, sec in pf.sections.items():
        check = VALIDATORS.get(sec.model)
        if check is not None:
            check(sec, f"{source}: {name}")
    # non-finite values were refused by the schema check; sections that do not compile fail the dry run
    _dry_run(pf, source)


def load_checked(path: str | os.PathLike, fit_quality: str = "warn") -> ParameterFile:
    """Read a parameter file, check it against the schema and physical bounds and check that every
    model section can drive its model (module docstring). A file that records an absurd fit
    (:func:`calib.model.validation.fit_quality_problems`, written with --accept-poor-fit) is refused with
    ``fit_quality="error"`` (`calib validate`) and warned about otherwise, so that it can still be
    reported on and compared."""
    import warnings

    from calib.model.validation import fit_quality_problems

    pf = P.load(path)
    problems = fit_quality_problems(pf.items())
    what = "; ".join(problems)
    if problems and fit_quality == "error":  # first: it explains what the model checks would trip on
        raise SchemaError(f"{path}: records a fit that is not credible ({what}); not valid for predictions "
                          "(refit from data without implausible readings)")
    check_models(pf, str(path))
    if problems:
        warnings.warn(f"{path}: records a fit that is not credible ({what}); its predictions mean little")
    return pf
