"""Fit a parameter document from a session directory or a samples table.

Session: samples (calib.segment) -> thermal fit (if the session has thermal steps) -> IPP power fit at
the default clocks, temperature-corrected with the fitted sigma -> DVFS power fit over all clock
configurations when there is more than one (calib.fit.dvfs). Samples table: IPP fit when the table has
one clock configuration, DVFS fit otherwise.
"""

from __future__ import annotations

import copy
import logging
import math
import os
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from calib.core import arch
from calib.core.errors import BadInputError, FitError
from calib.core.metrics import errors
from calib.core.params import ParameterFile, Section
from calib.fit.crossval import check_folds, cross_validate
from calib.fit.dvfs import DvfsPowerFitter, training_rows
from calib.fit.ipp import IppPowerFitter
from calib.fit.thermal import ThermalFitter
from calib.fit.thermal_network import ThermalNetworkFitter
from calib.fit.timing import SessionTimingFitter
from calib.fit.timing_table import TimingFitter
from calib.fit.transfer import TransferFitter
from calib.fit.uncertainty import annotate_identifiability
from calib.core.samples import act_units, read_samples, table_info
from calib.segment import DeviceFacts, IdleBaseline, host_stream, session_data
from calib.core.session import MANIFEST_NAME, file_sha256, read_session
from calib.core.units import CHIP_UNITS, clock_levels
from calib.model import dvfs as dvfs_model
from calib.model.intervals import MIN_HELDOUT_WORKLOADS, set_heldout_discrepancy
from calib.model.ipp import IppPowerModel
from calib.model.predict import predict_power
from calib.model.validation import fit_quality_problems


@dataclass
class FitOutcome:
    """A fitted parameter file and what it was fitted on."""

    params: ParameterFile
    samples: pd.DataFrame
    warnings: list[str] = field(default_factory=list)
    cv: Any = None


def _rel(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


#: stages of a session fit and their expected share of its time (measured with calib -v, which logs each
#: stage's duration: tests/benchmarks/uncertainty_results.md): progress and its ETA follow them
FIT_STAGES = {"samples": 0.17, "thermal": 0.08, "thermal network": 0.21, "power": 0.40, "dvfs": 0.03,
              "timing": 0.02, "transfer": 0.09}
#: the same for a samples table (reading and checking it is quick; the power fit is the work)
TABLE_STAGES = {"samples": 0.05, "power": 0.95}


def _system_baseline(pf: ParameterFile, idle: IdleBaseline, sess: Any) -> None:
    """The host beside the board's idle power, where the session logged RAPL: the idle windows' mean host
    CPU package + DRAM power (``fit.power.host_idle_power_w``, its standard error, and which zones), as the
    samples stage measured it (:func:`calib.segment.idle_baseline`)."""
    if idle.host_power_w is None:
        return
    entry = next((s for s in sess.manifest.get("sensors", []) if s.get("name") == host_stream(sess)), {})
    st = pf["power"].stats
    st["host_idle_power_w"] = idle.host_power_w
    st["host_idle_power_se_w"] = idle.host_power_se_w
    st["host_idle_power_source"] = "RAPL " + str((entry.get("capabilities") or {}).get("host_power") or entry.get("name"))


def fit_session(path: str | os.PathLike, *, power: str | None = None, mem_units: set[str] | None = None,
                cv: int | None = None, dvfs_options: dict | None = None, accept_poor_fit: bool = False,
                progress: Callable[[str], None] | None = None) -> FitOutcome:
    """Fit every model part the session supports (module docstring). ``progress(stage)`` is called as each
    stage of :data:`FIT_STAGES` starts."""
    log = logging.getLogger(__name__)
    t_stage = [time.monotonic(), ""]

    def stage(name: str) -> None:
        now = time.monotonic()
        if t_stage[1]:
            log.info("fit stage %s: %.1f s", t_stage[1], now - t_stage[0])
        t_stage[:] = [now, name]
        if progress is not None:
            progress(name)

    path = Path(path)
    sess = read_session(path)
    man = sess.manifest
    stage("samples")
    data = session_data(sess, power)
    df, dev = data.samples, data.device
    pf = ParameterFile.new(dict(dev.raw), [{"path": _rel(p), "sha256": file_sha256(p), "role": "log"}
                                           for p in sorted(path.glob("*.csv"))], campaign=man.get("campaign"))
    pf.provenance["session"] = path.name
    if data.idle is None:
        raise BadInputError(f"{path}: the session has no idle window; cannot fit idle power")
    if cv:  # before any fit: an impossible --cv must not cost the fit
        check_folds(IppPowerFitter(default_clocks={"core_mhz": dev.core_mhz, "mem_mhz": dev.mem_mhz}
                                   ).training_rows(df), cv)
    correction = None
    if data.thermal_steps:
        stage("thermal")
        pf["thermal"] = ThermalFitter().fit(data).section_
        # the network beside IPP's single pole (a section of its own: files with only `thermal` stay valid)
        stage("thermal network")
        pf["thermal_network"] = ThermalNetworkFitter().fit(data).section_
        correction = _correction(pf["thermal"])
    stage("power")
    ipp = session_power_fitter(dev, df, correction, mem_units).fit(data)
    pf["power"] = ipp.section_
    _system_baseline(pf, data.idle, sess)
    if "thermal_network" in pf and "idle_power_w" in pf["thermal_network"] and "idle_power_w" in pf["power"]:
        # the network's reference is the board's idle power: between two campaigns it moves at least as
        # much as the power fit says its idle power does (the idle windows' own scatter is a few
        # windows' worth, too small for calib diff)
        ref, fitted = pf["thermal_network"]["idle_power_w"], pf["power"]["idle_power_w"]
        if fitted.stderr:
            ref.stderr = max(ref.stderr or 0.0, fitted.stderr)
            ref.stderr_total = max(ref.stderr_total or 0.0, fitted.stderr_total or fitted.stderr)
    out = FitOutcome(pf, df, list(ipp.warnings_))
    if len(table_info(df).clock_configs) > 1:
        stage("dvfs")
        # IPP access rates of memory units are small (a few % of issue slots): fit the transform's threshold
        opts = {"ar_threshold": None, **(dvfs_options or {})}
        pf["dvfs"] = DvfsPowerFitter(mem_units=ipp.mem_units, temperature_correction=correction, **opts).fit(data).section_
    stage("timing")
    timing = SessionTimingFitter().fit(data).section_
    if timing is not None:
        pf["timing"] = timing
    stage("transfer")
    if data.copies is not None and len(data.copies):  # host-device copy windows (microbench.transfer_plan)
        pf["transfer"] = TransferFitter().fit(data).section_
    stage("held-out")
    _score_heldout(pf, df)
    annotate(pf)
    if cv:  # on the rows the IPP fit uses, folds spread over the units the benchmarks stress
        out.cv = cross_validate(ipp.training_rows(df), cv, lambda d: IppPowerFitter(**ipp.get_params()).fit(d).section_,
                                _ipp_predictor(pf.get("thermal")), strata="stresses")
        pf["power"].stats.update(cv_mape_pct=out.cv.mape_pct, cv_folds=int(cv))
    stage("")
    check_fit_quality(pf, str(path), accept_poor_fit)
    return out


def session_power_fitter(dev: DeviceFacts, df: pd.DataFrame, correction: dict | None,
                         mem_units: set[str] | None = None) -> IppPowerFitter:
    """The IPP power fitter of a session (unfitted): the device's SM count, chip and memory-domain units
    (those of them this campaign ran, from ``df``), issue rate and default clocks, the thermal fit's
    temperature ``correction``."""
    mem_u = mem_units
    if mem_u is None and dev.mem_domain_units is not None:  # the device's list may name units this campaign did not run
        mem_u = set(dev.mem_domain_units) & set(act_units(df))
    return IppPowerFitter(mem_units=mem_u, sm_count=dev.sm_count, chip_units=list(dev.chip_units),
                          warp_issue_per_cycle=dev.raw.get("warp_issue_per_cycle"),
                          default_clocks={k: dev.raw["clocks"].get(k) for k in ("core_mhz", "mem_mhz")},
                          temperature_correction=correction)


def _correction(thermal: Section | None) -> dict | None:
    """The temperature correction a thermal section gives the power fits (its sigma and idle temperature)."""
    return None if thermal is None else {k: thermal.value(k) for k in ("sigma_w_per_c", "idle_temp_c")}


def refit_power(pf: ParameterFile, path: str | os.PathLike) -> FitOutcome:
    """``pf`` (a fit of the session at ``path``) with its IPP power section refitted on the session's
    samples as they are now (a design round added kernels; the thermal and timing sections, fitted on
    steps the round did not change, are kept)."""
    data = session_data(read_session(Path(path)))
    ipp = session_power_fitter(data.device, data.samples, _correction(pf.get("thermal"))).fit(data)
    out = copy.deepcopy(pf)
    out["power"] = ipp.section_
    annotate(out)
    return FitOutcome(out, data.samples, list(ipp.warnings_))


def _score_heldout(pf: ParameterFile, df: pd.DataFrame) -> None:
    """Power error on the campaign's held-out application-like workloads (role ``heldout``, never
    fitted), overall and split by default vs other clocks, into the power section's statistics; the
    power sections' prediction discrepancy from the same workloads."""
    held = df[df["role"] == "heldout"] if "role" in df.columns else df.iloc[:0]
    if not len(held):
        return
    y = held["power_w"].to_numpy(float)
    pred = predict_power(pf, held)
    set_heldout_discrepancy(pf, held, pred)
    stats = pf["power"].stats
    stats["heldout_mape_pct"] = errors(y, pred).mape_pct
    stats["heldout_rows"] = int(len(held))
    clocks = pf.device.get("clocks") or {}
    default = (np.isclose(held["core_mhz"].to_numpy(float), float(clocks.get("core_mhz") or np.nan))
               & np.isclose(held["mem_mhz"].to_numpy(float), float(clocks.get("mem_mhz") or np.nan)))
    stats["heldout_by_clocks"] = {label: {"mape_pct": errors(y[sel], pred[sel]).mape_pct, "rows": int(sel.sum())}
                                  for label, sel in (("default_clocks", default), ("other_clocks", ~default))
                                  if sel.any()}


def _ipp_predictor(thermal: Section | None) -> Callable[[Section, pd.DataFrame], np.ndarray]:
    return lambda section, df: IppPowerModel(section, thermal).predict(df)


def fit_table(path: str | os.PathLike, *, mem_units: set[str] | None = None, cv: int | None = None,
              sm_count: int | None = None, dvfs_options: dict | None = None,
              accept_poor_fit: bool = False, progress: Callable[[str], None] | None = None) -> FitOutcome:
    """Fit the power model of a samples table (IPP for one clock configuration, DVFS for several);
    ``progress(stage)`` as the stages of :data:`TABLE_STAGES` start."""
    step = progress or (lambda name: None)
    path = Path(path)
    step("samples")
    df = read_samples(path, require_power=True)
    info = table_info(df)
    if "active_sms" in df.columns and df["active_sms"].notna().any():
        most = int(df["active_sms"].max())
        if sm_count is None:
            sm_count = most  # a table from a campaign: its widest launch used every SM
        elif most > sm_count:
            raise BadInputError(f"{path}: column 'active_sms' reaches {most}, more than --sm-count {sm_count}")
    one = not info.multi_clock
    device = {"name": "unknown (fitted from a samples table)", "sm_count": int(sm_count or 1),
              "clocks": {k: f if one and not math.isnan(f) else None
                         for k, f in zip(("core_mhz", "mem_mhz"), info.clock_configs[0])}}
    # the hash of the bytes actually read (a pipe cannot be read twice)
    pf = ParameterFile.new(device, [{"path": _rel(path), "sha256": df.attrs.get("sha256") or file_sha256(path),
                                     "role": "samples"}])
    out = FitOutcome(pf, df)
    if cv:  # before the fit: an impossible --cv must not cost the fit
        check_folds(training_rows(df)[0] if info.multi_clock
                    else IppPowerFitter(default_clocks=device["clocks"]).training_rows(df), cv)
    step("power")
    if info.multi_clock:
        fitter = DvfsPowerFitter(mem_units=mem_units, **(dvfs_options or {}))
        pf["power"] = fitter.fit(df, source=str(path)).section_
        if cv:
            out.cv = cross_validate(training_rows(df)[0], cv,
                                    lambda d: DvfsPowerFitter(**fitter.get_params()).fit(d, source=str(path)).section_,
                                    dvfs_model.predict_power)
    else:
        fitter = IppPowerFitter(mem_units=mem_units, sm_count=int(sm_count or 1),
                                chip_units=sorted(CHIP_UNITS) if sm_count else [],
                                default_clocks=device["clocks"]).fit(df)
        pf["power"] = fitter.section_
        out.warnings = list(fitter.warnings_)
        if cv:
            out.cv = cross_validate(fitter.training_rows(df), cv, lambda d: IppPowerFitter(**fitter.get_params()).fit(d).section_,
                                    _ipp_predictor(None), strata="stresses" if "stresses" in df.columns else None)
    if out.cv is not None:
        pf["power"].stats.update(cv_mape_pct=out.cv.mape_pct, cv_folds=int(cv or 0))
    annotate(pf)
    check_fit_quality(pf, str(path), accept_poor_fit)
    return out


def fit_timing_table(path: str | os.PathLike, *, predictor: str = "auto", chip: str | None = None,
                     cv_folds: int = 5, sm_count: int | None = None, accept_poor_fit: bool = False,
                     progress: Callable[[str], None] | None = None) -> FitOutcome:
    """A parameter file with only a timing section, from a (kernel, clocks, time) table (``calib fit
    --timing``; :class:`calib.fit.timing_table.TimingFitter`): ``chip`` (a name or compute capability)
    gives the SM issue width when the table's arch column does not; ``progress(stage)`` as the stages
    ``kernel table`` and ``timing`` start."""
    step = progress or (lambda name: None)
    src = Path(path)
    if src.is_dir():
        raise BadInputError(f"{src}: --timing fits a kernel table (CSV), not a session directory")
    step("kernel table")
    df = read_samples(src, require_power=False, require_act=False)
    step("timing")
    issue = arch.arch_of(chip=None, cc=chip).warp_issue_per_cycle if chip and chip[:1].isdigit() else (
        arch.warp_issue_per_cycle(chip=chip) if chip else None)
    ft = TimingFitter(predictor=predictor, cv_folds=cv_folds, sm_count=sm_count,
                      warp_issue_per_cycle=issue).fit(df, source=str(src))
    sec, dev, rows = ft.section_, ft.device_, ft.rows_
    device = {"name": dev["name"] or "GPU of the kernel table", "sm_count": dev["sm_count"],
              "clocks": {"core_mhz": dev["ref"][0], "mem_mhz": dev["ref"][1],
                         "supported": {k: [round(x, 1) for x in clock_levels(rows[k])] for k in ("core_mhz", "mem_mhz")}},
              "warp_issue_per_cycle": 1.0 / sec.value("issue_cycles")}
    if dev.get("chip"):
        device["chip"] = dev["chip"]
    pf = ParameterFile.new(device, [{"path": str(src), "sha256": df.attrs.get("sha256") or file_sha256(src),
                                     "role": "kernel table"}])
    pf["timing"] = sec
    annotate(pf)
    check_fit_quality(pf, str(src), accept_poor_fit)
    return FitOutcome(pf, df)


def check_fit_quality(pf: ParameterFile, source: str, accept: bool = False) -> list[str]:
    """The fit-quality gate (:data:`calib.model.validation.FIT_LIMITS`): FitError naming ``source`` and the
    numbers when a fitted section's error is absurd; with ``accept`` (``--accept-poor-fit``) a warning
    instead, and each such section records why in its statistics (``poor_fit``), which `calib validate`
    refuses. Returns the problems."""
    problems = fit_quality_problems(pf.items())
    if not problems:
        return []
    what = "; ".join(problems)
    if not accept:
        raise FitError(f"{source}: the fit is not credible ({what}): the data or the model are wrong (check the "
                       "input for implausible readings); nothing written. --accept-poor-fit writes it anyway")
    by_section: dict[str, list[str]] = {}
    for p in problems:
        sec, what_ = p.split(": ", 1)
        by_section.setdefault(sec, []).append(what_)
    for sec, whats in by_section.items():
        pf[sec].stats["poor_fit"] = "; ".join(whats) + " (written with --accept-poor-fit)"
    warnings.warn(f"{source}: the fit is not credible ({what}); written because of --accept-poor-fit")
    return problems


def annotate(pf: ParameterFile) -> None:
    """State, in every fitted section, which combinations of parameters the campaign determines where it
    does not separate them (:func:`calib.fit.uncertainty.annotate_identifiability`)."""
    for _, sec in pf.items():
        annotate_identifiability(sec)


def fit_source(source: str | os.PathLike, **kw: Any) -> FitOutcome:
    """Fit from a session directory or a samples table, whichever ``source`` is.

    A fit the data cannot support (FitError) is reported with the source named."""
    heldout = kw.pop("heldout", None)
    try:
        out = _fit_source(Path(source), **kw)
    except FitError as e:
        if str(source) in str(e):
            raise
        raise FitError(f"{source}: {e}") from e
    if heldout is not None:
        score_heldout_table(out, heldout)
    return out


def score_heldout_table(out: FitOutcome, path: str | os.PathLike) -> None:
    """Score a fitted file on measured workloads it was not fitted on (``calib fit --heldout TABLE``: a
    samples table with ``power_w`` and ``workload``, e.g. a few applications measured at several clocks)
    and take the power sections' prediction discrepancy from them, as a campaign's held-out mixes do: the
    intervals then say what the model misses on such workloads, not on its own benchmarks left out one at
    a time (:file:`tests/benchmarks/uncertainty_results.md` has how much that matters on real applications).
    The table joins the file's sources with role ``heldout``. Refused, nothing fitted: a workload that is
    also a training workload, fewer than :data:`calib.model.intervals.MIN_HELDOUT_WORKLOADS` workloads."""
    path = Path(path)
    held = read_samples(path, require_power=True, needed=("workload",))
    sha = held.attrs.get("sha256") or file_sha256(path)  # before the concat below, which drops attrs
    names = set(held["workload"].astype(str))
    samples = out.samples
    # the campaign's own held-out mixes (role heldout) were not fitted either: scored together with the table
    own = samples["role"] == "heldout" if "role" in samples.columns else pd.Series(False, index=samples.index)
    trained = set(samples.loc[~own, "workload"].astype(str)) if "workload" in samples.columns else set()
    both = sorted(names & trained)
    if both:
        raise BadInputError(f"{path}: column 'workload': {', '.join(both[:5])}{' ...' if len(both) > 5 else ''} "
                            "also in the training data; held-out workloads must be ones the fit has not seen")
    if len(names) < MIN_HELDOUT_WORKLOADS:
        raise BadInputError(f"{path}: column 'workload': {len(names)} workload(s); the prediction discrepancy "
                            f"needs at least {MIN_HELDOUT_WORKLOADS} held-out workloads")
    held = pd.concat([samples[own], held.assign(role="heldout")], ignore_index=True)
    _score_heldout(out.params, held)
    out.params.provenance.setdefault("sources", []).append({"path": _rel(path), "sha256": sha, "role": "heldout"})


def _fit_source(p: Path, **kw: Any) -> FitOutcome:
    if p.is_dir():
        if not (p / MANIFEST_NAME).exists():
            raise BadInputError(f"{p}: directory without {MANIFEST_NAME}; expected a session directory or a samples CSV")
        if kw.pop("sm_count", None) is not None:
            raise BadInputError(f"{p}: --sm-count applies to samples tables; a session's manifest gives the SM count")
        return fit_session(p, **kw)
    return fit_table(p, **kw)
