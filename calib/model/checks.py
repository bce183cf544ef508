"""Model-level checks of a parameter document, beyond the JSON Schema.

The schema checks the file format; each model checks that its section has what it needs to predict
(structure, parameters, value ranges), so that `calib validate` accepts only files `calib predict` can
use. :func:`load_checked` = :func:`calib.params.load` + these checks.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

from calib import params as P
from calib.errors import BadInputError, SchemaError
from calib.model.arfunc import FORMS, LOG


def _num(sec: Mapping[str, Any], name: str) -> float | None:
    p = sec.get("parameters", {}).get(name)
    return None if p is None else float(p["value"])


def _check_ipp(sec: Mapping[str, Any], where: str) -> None:
    n = sec.get("sm_count")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise SchemaError(f"{where}.sm_count: {n!r} is not a positive integer")
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
        if spec.get("ar_function") not in FORMS:
            raise SchemaError(f"{where}.units.{u}.ar_function: {spec.get('ar_function')!r} is not one of {', '.join(FORMS)}")
        if f"max_power_{u}_w" not in pars:
            raise SchemaError(f"{where}.parameters: max_power_{u}_w missing (unit {u} is modelled)")
        if spec["ar_function"] == LOG and f"ar_log_a_{u}" not in pars:
            raise SchemaError(f"{where}.parameters: ar_log_a_{u} missing (unit {u} has the log access-rate function)")
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


def _check_compiles(compile_fn: Any, doc_or_sec: Any, where: str) -> None:
    try:
        compile_fn(doc_or_sec)
    except (BadInputError, KeyError, TypeError, ValueError, IndexError) as e:
        raise SchemaError(f"{where}: cannot be used for predictions ({e})") from e


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
            from calib.model.dvfs import compile_section

            _check_compiles(compile_section, sec, where)
        elif section == "timing":
            from calib.model.timing import compile_section as compile_timing

            _check_compiles(compile_timing, sec, where)
        for name, p in sec["parameters"].items():
            if not math.isfinite(float(p["value"])):
                raise SchemaError(f"{where}.parameters.{name}: not finite")


def load_checked(path: str | os.PathLike) -> dict:
    """Read a parameter file, validate it against the schema and check every model section."""
    doc = P.load(path)
    check_models(doc, str(path))
    return doc
