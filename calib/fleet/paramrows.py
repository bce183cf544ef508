"""The one place the fleet code reads parameter files: :func:`param_rows`.

Everything else in :mod:`calib.fleet` works on the rows this returns, so when the parameter-file API
changes (``calib.core.params``) only this module follows it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from calib.core import params
from calib.core.atomic import finite_or_none
from calib.core.errors import SchemaError


@dataclass(frozen=True)
class ParamFileRows:
    """A parameter file flattened: its device, provenance and one row per parameter."""

    device: dict[str, Any]
    provenance: dict[str, Any]
    rows: list[dict[str, Any]]   # section, name, form, value, stderr, stderr_total, min, max, unit, vary
    reference: dict[str, float]  # the model's predictions for the reference kernel ({} when none asked)


def _unit_of(name: str, units: dict) -> str | None:
    """The unit a per-unit parameter belongs to (``max_power_fp_w``, ``ar_log_a_fp`` -> ``fp``)."""
    for u in units:
        if name.endswith(f"_{u}_w") or name.endswith(f"_{u}"):
            return u
    return None


def param_rows(path: str | Path, reference_kernel: str | Path | None = None) -> ParamFileRows:
    """Load and check ``path`` (:func:`calib.core.params.load`: schema, bounds, model checks; SchemaError
    naming the file otherwise; a :class:`calib.core.params.ParameterFile`) and flatten it: one row per
    parameter of every section, with value, statistical standard error and the total one that includes
    model discrepancy (None when the fit gave none), bounds (None when unbounded), unit, whether it was
    fitted (``vary``) and its ``form``: the section's model, plus the access-rate function the fit chose
    for the unit of a per-unit power parameter (``ipp/ar=log``): a unit's MaxPower under a linear and
    under a log access-rate function are different quantities, not to be compared across GPUs.

    With ``reference_kernel`` (a kernel description), also what the file's model predicts for it:
    ``power_w_pred`` (W) and, where the file's sections provide them, ``time_s_pred`` (s),
    ``energy_j_pred`` (J), ``temp_c_pred`` (C). The file is read and checked once."""
    pf = params.load(path)
    rows = []
    for section, sec in pf.items():
        units = sec.structure.get("units") if isinstance(sec.structure.get("units"), dict) else {}
        for p in sec:
            form = sec.model
            unit = _unit_of(p.name, units)
            if unit is not None and isinstance(units[unit], dict) and units[unit].get("ar_function"):
                form = f"{sec.model}/ar={units[unit]['ar_function']}"
            rows.append({"section": section, "name": p.name, "form": form, "value": float(p.value),
                         **{k: finite_or_none(getattr(p, k)) for k in ("stderr", "stderr_total", "min", "max")},
                         "unit": p.unit, "vary": bool(p.vary)})
    ref: dict[str, float] = {}
    if reference_kernel is not None:
        from calib.model.predict import kernel_description_table, predict_table

        out = predict_table(pf, kernel_description_table(reference_kernel))
        ref = {c: float(out[c].iloc[0]) for c in out.columns
               if c.endswith("_pred") and math.isfinite(float(out[c].iloc[0]))}
    return ParamFileRows(dict(pf.device), dict(pf.provenance), rows, ref)


def param_identity(path: str | Path) -> dict[str, str]:
    """Who parameter file ``path`` says it is, read cheaply (JSON only; :func:`param_rows` does the full
    checks): ``gpu_uuid``, ``gpu_name``, ``session``, ``driver_version``. SchemaError naming the file when it is not JSON or
    has no device block."""
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError) as e:
        raise SchemaError(f"{path}: not a readable parameter file ({e})") from None
    dev = doc.get("device") if isinstance(doc, dict) else None
    if not isinstance(dev, dict):
        raise SchemaError(f"{path}: no device block")
    prov = doc.get("provenance") if isinstance(doc.get("provenance"), dict) else {}
    return {"gpu_uuid": str(dev.get("uuid") or ""), "gpu_name": str(dev.get("name") or "unknown"),
            "session": str(prov.get("session") or Path(path).stem),
            "driver_version": str(dev.get("driver_version") or "unknown")}

