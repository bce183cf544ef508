"""Model-level checks of a parameter document, beyond the JSON Schema.

The schema checks the file format; each model checks that its section has what it needs to predict
(structure, parameters, value ranges), so that `calib validate` accepts only files `calib predict` can
use. :func:`calib.core.params.load` runs these checks after the schema and physical bounds, so every verb
that reads a parameter file (validate, predict, validate-model, optimize, diff, report, publish) refuses
a broken one up front, naming the file and the field (SchemaError, exit status 2). The checks end with
a dry run of every model section on a tiny table, a net for whatever the precise checks miss.
:func:`load_checked` is kept as the name the commands use.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from calib.core import params as P
from calib.core.errors import BadInputError, SchemaError
from calib.model.arfunc import FORMS, LOG

#: a powered GPU board draws several W at idle (fans, DRAM refresh, regulator losses); a fitted idle
#: power below this comes from a power sensor that read ~0 (e.g. NVML power not supported), and every
#: prediction of such a file would be meaningless, so it is refused rather than warned about
MIN_IDLE_POWER_W = 1.0
#: streaming multiprocessors: the largest GPUs have ~150 (the schema's device.sm_count bound too)
MAX_SM_COUNT = 1024


def _num(sec: Mapping[str, Any], name: str) -> float | None:
    p = sec.get("parameters", {}).get(name)
    return None if p is None else float(p["value"])


def _in_range(sec: Mapping[str, Any], name: str, where: str, lo: float, hi: float, why: str,
              lo_open: bool = False, hi_open: bool = False) -> None:
    """SchemaError when parameter ``name`` is present and outside [lo, hi] (open ends when asked)."""
    v = _num(sec, name)
    if v is None:
        return
    ok_lo = v > lo if lo_open else v >= lo
    ok_hi = v < hi if hi_open else v <= hi
    if not (ok_lo and ok_hi):
        rng = f"{'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
        raise SchemaError(f"{where}.parameters.{name}: {v:g} is outside {rng}: {why}")


def _check_ipp(sec: Mapping[str, Any], where: str) -> None:
    n = sec.get("sm_count")
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_SM_COUNT:
        raise SchemaError(f"{where}.sm_count: {n!r} is not a positive integer (at most {MAX_SM_COUNT})")
    form = sec.get("sm_scaling")
    if form not in ("log", "linear"):
        raise SchemaError(f"{where}.sm_scaling: {form!r} is not 'log' or 'linear'")
    units = sec.get("units")
    if not isinstance(units, dict):
        raise SchemaError(f"{where}.units: expected an object unit -> {{scope, ar_function, domain}}")
    pars = sec["parameters"]
    if "idle_power_w" not in pars:
        raise SchemaError(f"{where}.parameters: idle_power_w missing")
    for u, spec in units.items():
        if not isinstance(spec, dict):
            raise SchemaError(f"{where}.units.{u}: expected an object")
        if spec.get("scope") not in ("sm", "chip"):
            raise SchemaError(f"{where}.units.{u}.scope: {spec.get('scope')!r} is not 'sm' or 'chip'")
        if spec.get("domain", "core") not in ("core", "mem"):
            raise SchemaError(f"{where}.units.{u}.domain: {spec.get('domain')!r} is not 'core' or 'mem'")
        if spec.get("ar_function") not in FORMS:
            raise SchemaError(f"{where}.units.{u}.ar_function: {spec.get('ar_function')!r} is not one of {', '.join(FORMS)}")
        if f"max_power_{u}_w" not in pars:
            raise SchemaError(f"{where}.parameters: max_power_{u}_w missing (unit {u} is modelled)")
        if spec["ar_function"] == LOG and f"ar_log_a_{u}" not in pars:
            raise SchemaError(f"{where}.parameters: ar_log_a_{u} missing (unit {u} has the log access-rate function)")
    _in_range(sec, "ar_log_b", where, 0.0, 2.0, "the log access-rate function a ln(AR) + b is b at full "
              "activity, about 1 (IPP: 1.001375); b <= 0 means the unit never draws power", lo_open=True)
    for u in units:
        _in_range(sec, f"ar_log_a_{u}", where, 0.0, 10.0, "the log access-rate slope must be positive "
                  "(IPP: 0.1365)", lo_open=True)
    idle = _num(sec, "idle_power_w")
    if idle < MIN_IDLE_POWER_W:
        raise SchemaError(f"{where}.parameters.idle_power_w: {idle:g} W is not a plausible idle power of a GPU "
                          f"board (< {MIN_IDLE_POWER_W:g} W): were the power readings of the fitted table all ~0?")
    if form == "log":
        beta = _num(sec, "sm_beta")
        if beta is None or not 0.0 < beta < 10.0:
            raise SchemaError(f"{where}.parameters.sm_beta: {beta!r}: log10(alpha n + beta) needs 0 < beta < 10")
    clocks = sec.get("default_clocks")
    if clocks is not None and not isinstance(clocks, dict):
        raise SchemaError(f"{where}.default_clocks: expected an object (core_mhz, mem_mhz)")


def _check_thermal(sec: Mapping[str, Any], where: str) -> None:
    for name in ("idle_temp_c", "rc_rise_s", "rc_decay_s"):
        v = _num(sec, name)
        if v is None:
            raise SchemaError(f"{where}.parameters: {name} missing")
    for name in ("rc_rise_s", "rc_decay_s"):
        if not _num(sec, name) > 0:
            raise SchemaError(f"{where}.parameters.{name}: must be > 0")


#: ranges of the DVFS access-rate shape parameters (calib.model.dvfs.transform_into), shared or per unit
_DVFS_SHAPE_RANGES = {
    "ar_tp_threshold": (0.0, 1.0, False, True, "the tpow threshold is an activity in [0, 1)"),
    "ar_tp_lambda": (0.0, 10.0, False, False, "the tpow exponent must be >= 0"),
    "ar_exponent": (0.0, 10.0, True, False, "the pow exponent must be > 0"),
    "ar_bc_lambda": (0.0, 10.0, False, False, "the Box-Cox exponent must be >= 0"),
    "ar_bc_a": (-100.0, 100.0, False, False, "the Box-Cox slope must be moderate"),
    "ar_log_a": (0.0, 10.0, True, False, "the log access-rate slope must be positive"),
    "ar_log_b": (0.0, 2.0, True, False, "the log access-rate function is b at full activity, about 1"),
    "mem_sat": (0.0, 100.0, True, False, "the summed memory activity at saturation must be > 0"),
    "static_v_exp": (0.0, 10.0, True, False, "the static-power voltage exponent must be > 0"),
}
#: shape parameters each access-rate form reads without a default
_DVFS_FORM_NEEDS = {"tpow": ("ar_tp_lambda", "ar_tp_threshold"), "pow": ("ar_exponent",),
                    "boxcox": ("ar_bc_a", "ar_bc_lambda"), "log": (), "linear": ()}


def _check_dvfs(sec: Mapping[str, Any], where: str) -> None:
    """Structure the schema cannot express: unit names unique, voltage parameters present, the shape
    parameters each unit's form needs present and in range, a plausible idle power."""
    from calib.model.dvfs import CONST_TERMS, total_form, unit_param

    pars = sec["parameters"]
    units = [u["name"] for u in sec["units"]]
    dup = sorted({u for u in units if units.count(u) > 1})
    if dup:
        raise SchemaError(f"{where}.units: unit {dup[0]!r} is listed twice")
    for dom in ("core", "mem"):
        curve = sec["voltage"][dom]
        names = list(curve["params"])
        if "per_mem" in curve and dom == "core":
            names += [n for row in curve["per_mem"]["params"] for n in row]
        for n in names:
            if n not in pars:
                raise SchemaError(f"{where}.voltage.{dom}: voltage parameter {n} is not in {where.split(': ')[-1]}.parameters")
        if len(curve["mhz"]) != len(curve["params"]):
            raise SchemaError(f"{where}.voltage.{dom}: {len(curve['mhz'])} clock levels (mhz) but "
                              f"{len(curve['params'])} voltage parameters (params)")
    shared = {n for n in pars if n in _DVFS_SHAPE_RANGES}
    for name in pars:
        base = next((b for b in _DVFS_SHAPE_RANGES if name == b or name.startswith(b + "_")), None)
        if base is not None:
            lo, hi, lo_open, hi_open, why = _DVFS_SHAPE_RANGES[base]
            _in_range(sec, name, where, lo, hi, why, lo_open, hi_open)
    forms = [u.get("ar_form", "linear") for u in sec["units"]]
    for u, form in zip(units, forms):
        if pars.get(unit_param(u)) is None and not any(pars.get(f"total_{d}_w") for d in ("core", "mem")):
            continue  # a unit without weight is never transformed
        for need in _DVFS_FORM_NEEDS.get(form, ()):
            if need not in shared and f"{need}_{u}" not in pars:
                raise SchemaError(f"{where}.parameters: {need} missing (unit {u} has the {form!r} access-rate form)")
    tform = total_form(forms)
    if any(n in pars for n in ("total_core_w", "total_mem_w")):
        for need in _DVFS_FORM_NEEDS.get(tform, ()):
            if need not in shared:
                raise SchemaError(f"{where}.parameters: {need} missing (the total-activity terms use the "
                                  f"{tform!r} form)")
    idle = sum(_num(sec, n) or 0.0 for n in CONST_TERMS if n.startswith(("static_", "const_")))
    if idle < MIN_IDLE_POWER_W:
        raise SchemaError(f"{where}.parameters: static_* + const_* = {idle:g} W, the idle power at the reference "
                          f"clocks, is not plausible for a GPU board (< {MIN_IDLE_POWER_W:g} W): were the power "
                          "readings of the fitted table all ~0?")


def _check_timing(sec: Mapping[str, Any], where: str) -> None:
    """Timing parameters the model divides by or multiplies cycle counts with: positive and moderate."""
    for name in ("issue_cycles", "mem_ld_cycles", "dram_del_coal_mem_cycles", "departure_del_coal_cycles"):
        _in_range(sec, name, where, 0.0, 1e6, "the timing model divides by it or needs a positive latency",
                  lo_open=True)
    for name in sec["parameters"]:
        if name.startswith("m_factor_"):
            _in_range(sec, name, where, 0.0, 1024.0, "issue cycles per warp instruction relative to the base "
                      "rate (1 to 32 on real GPUs)", lo_open=True)


#: what a model may raise on a section the checks above missed (the dry run turns it into SchemaError)
_MODEL_FAILURES = (BadInputError, KeyError, TypeError, ValueError, IndexError, ArithmeticError, AttributeError)


def _dry_run(doc: Mapping[str, Any], source: str) -> None:
    """Last-resort net: run every model section of ``doc`` on a tiny table (idle, half and full
    activity; one small kernel) and refuse the file, naming the section, when a model fails or
    predicts a non-finite value. Precise checks above give the better messages; this catches the rest."""
    import warnings

    import numpy as np
    import pandas as pd

    from calib.model.dvfs import predict_power as dvfs_power
    from calib.model.ipp import IppPowerModel
    from calib.model.thermal import ThermalModel
    from calib.model.timing import predict_time

    def table(units: list[str], core_mhz: float, mem_mhz: float, sm_count: int) -> pd.DataFrame:
        df = pd.DataFrame({"role": ["idle", "kernel", "kernel"], "core_mhz": core_mhz, "mem_mhz": mem_mhz,
                           "ref_core_mhz": core_mhz, "ref_mem_mhz": mem_mhz, "active_sms": float(sm_count)})
        for u in units:
            df["act_" + u] = [0.0, 0.5, 1.0]
        return df

    def run(section: str, fn: Any) -> None:
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

    power = doc.get("power")
    if power is not None and power.get("model") == "ipp":
        n = int(power["sm_count"])
        clocks = power.get("default_clocks") or {}
        df = table(list(power["units"]), clocks.get("core_mhz") or 1000.0, clocks.get("mem_mhz") or 1000.0, n)
        run("power", lambda: IppPowerModel(doc).predict(df, use_temperature=False))
    for name in ("power", "dvfs"):
        sec = doc.get(name)
        if sec is not None and sec.get("model") == "dvfs":
            ref = sec["ref_clocks"]
            df = table([u["name"] for u in sec["units"]], ref["core_mhz"], ref["mem_mhz"], 1)
            if sec.get("temp_ref_c") is not None:
                df["temp_c"] = sec["temp_ref_c"]
            run(name, lambda sec=sec, df=df: dvfs_power(sec, df))

    timing = doc.get("timing")
    if timing is not None and timing.get("model") == "mwp_cwp_wangchu":
        ref = timing["ref_clocks"]
        n = int(timing.get("sm_count", 1))
        kernel = pd.DataFrame({"cnt_fp": [100.0], "cnt_global": [10.0], "blocks": [2.0 * n],
                               "threads_per_block": [256.0], "core_mhz": [ref["core_mhz"]],
                               "mem_mhz": [ref["mem_mhz"]]})
        run("timing", lambda: predict_time(doc, kernel))
    thermal = doc.get("thermal")
    if thermal is not None and thermal.get("model") == "ipp-thermal":
        run("thermal", lambda: ThermalModel(doc).temperature_rise(np.array([0.0, 1.0, 100.0]), 50.0))


def check_models(doc: Mapping[str, Any], source: str = "<parameters>") -> None:
    """Raise SchemaError (naming the field) when a section cannot drive its model."""
    for section in P.SECTIONS:
        sec = doc.get(section)
        if sec is None:
            continue
        where = f"{source}: {section}"
        model = sec.get("model")
        if model == "ipp":
            _check_ipp(sec, where)
        elif model == "ipp-thermal":
            _check_thermal(sec, where)
        elif model == "dvfs":
            _check_dvfs(sec, where)
        elif section == "timing":
            _check_timing(sec, where)
    # non-finite values were refused by params.validate; sections that do not compile fail the dry run
    _dry_run(doc, source)


def load_checked(path: str | os.PathLike) -> dict:
    """Read a parameter file, validate it against the schema and check every model section
    (:func:`calib.core.params.load` does all of it)."""
    return P.load(path)
