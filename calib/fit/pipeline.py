"""Fit a parameter document from a session directory or a samples table.

Session: samples (calib.segment) -> thermal fit (if the session has thermal steps) -> IPP power fit at
the default clocks, temperature-corrected with the fitted sigma -> DVFS power fit over all clock
configurations when there is more than one (calib.fit.dvfs). Samples table: IPP fit when the table has
one clock configuration, DVFS fit otherwise.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from calib.core import params as P
from calib.core.errors import BadInputError
from calib.fit.ipp import IppPowerFitter, IppStructure
from calib.core.samples import act_units, read_samples, table_info
from calib.segment import fan_sweep, session_samples, thermal_steps
from calib.core.session import MANIFEST_NAME, file_sha256, read_session
from calib.core.units import CHIP_UNITS


@dataclass
class FitOutcome:
    """A fitted document and what it was fitted on."""

    doc: dict
    samples: pd.DataFrame
    warnings: list[str] = field(default_factory=list)
    cv: Any = None


def _rel(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def _sources_of_session(path: Path) -> list[dict[str, str]]:
    return [{"path": _rel(p), "sha256": file_sha256(p), "role": "log"} for p in sorted(path.glob("*.csv"))]


def _default_rows(df: pd.DataFrame, core: float | None, mem: float | None) -> pd.DataFrame:
    if core is None or "core_mhz" not in df.columns:
        return df
    sel = np.isclose(df["core_mhz"].to_numpy(float), core)
    if mem is not None and "mem_mhz" in df.columns:
        sel &= np.isclose(df["mem_mhz"].to_numpy(float), mem)
    return df[sel]


def fit_session(path: str | os.PathLike, *, power: str | None = None, mem_units: set[str] | None = None,
                cv: int | None = None, dvfs_options: dict | None = None) -> FitOutcome:
    """Fit every model part the session supports."""
    path = Path(path)
    sess = read_session(path)
    man = sess.manifest
    dev = man["device"]
    df = session_samples(sess, power=power)
    doc = P.new_document(dev, _sources_of_session(path), campaign=man.get("campaign"))
    doc["provenance"]["session"] = path.name
    idle = df[df["role"] == "idle"]
    if len(idle) == 0:
        raise BadInputError(f"{path}: the session has no idle window; cannot fit idle power")
    sigma = idle_temp = None
    steps = thermal_steps(sess, power)
    if steps:
        from calib.fit.thermal import ThermalFitter

        temp = idle["temp_c"].to_numpy(float) if "temp_c" in idle.columns else np.array([np.nan])
        it = float(np.nanmean(temp))
        # the sensor reads whole degrees: its quantization (1/sqrt(12) C) does not average out when the
        # temperature is steady, so it floors the standard error
        it_se = max(float(np.nanstd(temp, ddof=1) / math.sqrt(len(temp))) if len(temp) > 1 else 0.0,
                    1.0 / math.sqrt(12.0))
        th = ThermalFitter().fit(steps, it, it_se, float(idle["power_w"].mean()), fan_sweep(sess, power))
        th.section().store(doc, "thermal")
        vals = {p.name: p.value for p in th.params_}
        sigma, idle_temp = vals["sigma_w_per_c"], vals["idle_temp_c"]
    clocks = dev.get("clocks", {})
    core, mem = clocks.get("core_mhz"), clocks.get("mem_mhz")
    chip = dev.get("chip_units", list(CHIP_UNITS))
    if not isinstance(chip, list) or not all(isinstance(u, str) for u in chip):
        raise BadInputError(f"{path}/manifest.json: device.chip_units must be a list of unit names")
    st = IppStructure(sm_count=int(dev["sm_count"]), chip_units=frozenset(chip),
                      warp_issue_per_cycle=dev.get("warp_issue_per_cycle"), core_mhz=core, mem_mhz=mem)
    ipp_rows = _default_rows(df, core, mem)
    mem_u = mem_units
    if mem_u is None and "mem_domain_units" in dev:  # the device's list may name units this campaign did not run
        mem_u = set(dev["mem_domain_units"]) & set(act_units(ipp_rows))
    fitter = IppPowerFitter(mem_units=mem_u).fit(ipp_rows, st, sigma=sigma, idle_temp_c=idle_temp)
    fitter.section().store(doc, "power")
    out = FitOutcome(doc, df, list(fitter.warnings_))
    if len(table_info(df).clock_configs) > 1:
        _fit_dvfs_into(doc, df, mem_u, str(path), sigma, idle_temp, dvfs_options)
    from calib.fit.timing import fit_timing

    timing = fit_timing(df, dev, man.get("plan"))
    if timing is not None:
        timing.store(doc, "timing")
    if cv:  # on the rows the IPP fit uses, folds spread over the units the benchmarks stress
        from calib.fit.ipp import EXCLUDED_ROLES

        cv_rows = ipp_rows[~ipp_rows["role"].isin(EXCLUDED_ROLES)]
        out.cv = _cross_validate(cv_rows, cv, lambda d: IppPowerFitter(mem_units=mem_u).fit(
            d, st, sigma=sigma, idle_temp_c=idle_temp).section(), _ipp_predict_with(doc), strata="stresses")
        doc["fit"]["power"]["cv_mape_pct"] = out.cv.mape_pct
        doc["fit"]["power"]["cv_folds"] = int(cv)
    return out


def _ipp_predict_with(doc: dict) -> Callable[[dict, pd.DataFrame], np.ndarray]:
    from calib.model.ipp import IppPowerModel

    thermal = doc.get("thermal")

    def predict(section: dict, df: pd.DataFrame) -> np.ndarray:
        d = {"power": section, **({"thermal": thermal} if thermal else {})}
        return IppPowerModel(d).predict(df)

    return predict


def _fit_dvfs_into(doc: dict, df: pd.DataFrame, mem_units: set[str] | None, source: str,
                   sigma: float | None = None, idle_temp_c: float | None = None,
                   options: dict | None = None) -> None:
    """The ``dvfs`` section from every clock configuration of a session.

    With a thermal fit, power is first brought to the idle temperature with its sigma (IPP eq. 22) and
    the temperature column is left out: within a campaign the window temperature follows the window's
    own power, so a leakage slope fitted here would soak up dynamic power (seen: ~20 W/C against the
    thermal fit's ~0.3 W/C). Predictions add the same correction back (calib.model.predict). Rows of the
    active-SM sweep stay out (the DVFS model has no active-SM term; the IPP section covers it).
    """
    try:
        from calib.fit.dvfs import fit_dvfs
    except ImportError:  # the DVFS fitter is optional until installed
        import warnings

        warnings.warn("several clock configurations present but the DVFS fitter is not available; DVFS not fitted")
        return
    data, correction = dvfs_training_rows(df, sigma, idle_temp_c)
    # IPP access rates of memory units are small (a few % of issue slots): fit the transform's threshold
    sec = fit_dvfs(data, mem_units=mem_units, source=source, **{"ar_threshold": None, **(options or {})})
    sec.structure["temperature_correction"] = correction
    sec.store(doc, "dvfs")


def dvfs_training_rows(df: pd.DataFrame, sigma: float | None = None,
                       idle_temp_c: float | None = None) -> tuple[pd.DataFrame, dict | None]:
    """The rows a session's DVFS fit uses, and the temperature correction applied to them.

    Drops held-out, thermal and timing rows and the active-SM sweep (whole-GPU rows only); with a
    thermal fit, brings power to the idle temperature (power - sigma x (temp_c - idle_temp_c)) and drops
    ``temp_c``. ``sigma`` in W/C, ``idle_temp_c`` in C. Returns (rows, {"sigma_w_per_c", "idle_temp_c"} or None).
    """
    from calib.fit.ipp import EXCLUDED_ROLES

    data = df[~df["role"].astype(str).isin(EXCLUDED_ROLES)] if "role" in df.columns else df
    if "active_sms" in data.columns:  # the DVFS model has no active-SM term: whole-GPU rows only
        data = data[data["active_sms"].isna() | (data["active_sms"] >= data["active_sms"].max())]
    correction = None
    if sigma is not None and idle_temp_c is not None and "temp_c" in data.columns:
        data = data.copy()
        data["power_w"] = data["power_w"] - sigma * (data["temp_c"].fillna(idle_temp_c) - idle_temp_c)
        data = data.drop(columns=["temp_c"])
        correction = {"sigma_w_per_c": sigma, "idle_temp_c": idle_temp_c}
    return data, correction


def _cross_validate(df: pd.DataFrame, k: int, fit: Callable[[pd.DataFrame], P.SectionFit],
                    predict: Callable[[dict, pd.DataFrame], np.ndarray], strata: str | None = None) -> Any:
    from calib.fit.crossval import cross_validate

    return cross_validate(df, k, fit, predict, strata=strata)


def fit_table(path: str | os.PathLike, *, mem_units: set[str] | None = None, cv: int | None = None,
              sm_count: int | None = None, dvfs_options: dict | None = None) -> FitOutcome:
    """Fit the power model of a samples table (IPP for one clock configuration, DVFS for several)."""
    path = Path(path)
    df = read_samples(path, require_power=True)
    info = table_info(df)
    if "active_sms" in df.columns and df["active_sms"].notna().any():
        most = int(df["active_sms"].max())
        if sm_count is None:
            sm_count = most  # a table from a campaign: its widest launch used every SM
        elif most > sm_count:
            raise BadInputError(f"{path}: column 'active_sms' reaches {most}, more than --sm-count {sm_count}")
    device = {"name": "unknown (fitted from a samples table)", "sm_count": int(sm_count or 1),
              "clocks": {"core_mhz": info.clock_configs[0][0] if not info.multi_clock and not math.isnan(info.clock_configs[0][0]) else None,
                         "mem_mhz": info.clock_configs[0][1] if not info.multi_clock and not math.isnan(info.clock_configs[0][1]) else None}}
    # the hash of the bytes actually read (a pipe cannot be read twice)
    doc = P.new_document(device, [{"path": _rel(path), "sha256": df.attrs.get("sha256") or file_sha256(path),
                                   "role": "samples"}])
    out = FitOutcome(doc, df)
    if info.multi_clock:
        from calib.fit.dvfs import fit_dvfs
        from calib.model.dvfs import predict_power

        opts = dict(dvfs_options or {})
        rows, _ = dvfs_training_rows(df)  # a campaign's table: held-out, thermal, timing, SM-sweep rows out
        if len(rows) < len(df):
            import warnings

            warnings.warn(f"{path}: {len(df) - len(rows)} rows not used by the DVFS fit (roles heldout/thermal/"
                          "timing, or fewer active SMs than the widest launch)")
        sec = fit_dvfs(rows, mem_units=mem_units, source=str(path), **opts)
        sec.store(doc, "power")
        if cv:
            out.cv = _cross_validate(rows, cv, lambda d: fit_dvfs(d, mem_units=mem_units, source=str(path), **opts),
                                     lambda s, d: predict_power(s, d))
    else:
        from calib.fit.ipp import EXCLUDED_ROLES

        st = IppStructure(sm_count=int(sm_count or 1), chip_units=frozenset() if not sm_count else frozenset(CHIP_UNITS),
                          core_mhz=device["clocks"]["core_mhz"], mem_mhz=device["clocks"]["mem_mhz"])
        fitter = IppPowerFitter(mem_units=mem_units).fit(df, st)
        fitter.section().store(doc, "power")
        out.warnings = list(fitter.warnings_)
        if cv:
            rows = df[~df["role"].isin(EXCLUDED_ROLES)] if "role" in df.columns else df
            out.cv = _cross_validate(rows, cv, lambda d: IppPowerFitter(mem_units=mem_units).fit(d, st).section(),
                                     _ipp_predict_with(doc), strata="stresses" if "stresses" in df.columns else None)
    if out.cv is not None:
        doc["fit"]["power"]["cv_mape_pct"] = out.cv.mape_pct
        doc["fit"]["power"]["cv_folds"] = int(cv or 0)
    return out


def fit_source(source: str | os.PathLike, **kw: Any) -> FitOutcome:
    """Fit from a session directory or a samples table, whichever ``source`` is.

    A fit the data cannot support (FitError) is reported with the source named."""
    from calib.core.errors import FitError

    try:
        return _fit_source(Path(source), **kw)
    except FitError as e:
        if str(source) in str(e):
            raise
        raise FitError(f"{source}: {e}") from e


def _fit_source(p: Path, **kw: Any) -> FitOutcome:
    if p.is_dir():
        if not (p / MANIFEST_NAME).exists():
            raise BadInputError(f"{p}: directory without {MANIFEST_NAME}; expected a session directory or a samples CSV")
        if kw.pop("sm_count", None) is not None:
            raise BadInputError(f"{p}: --sm-count applies to samples tables; a session's manifest gives the SM count")
        return fit_session(p, **kw)
    return fit_table(p, **kw)
