"""Parameter files: versioned JSON, validated by the JSON Schema shipped in ``calib/core/schema``.

Layout (contract): ``schema_version``, ``device``, ``provenance``, one section per fitted model part
(``power``, ``thermal``, ``dvfs``, ``timing``), and ``fit`` with per-section statistics and a standard
error for every fitted parameter. A section is ``{"model": <name>, "parameters": {<name>: {"value",
"unit", "min", "max", "vary", "init"}}, ...model-specific structure}``; the standard errors live in
``fit.<section>.stderr`` so that a section is exactly what the model consumes.

Files are validated before they are written and written atomically.
"""

from __future__ import annotations

import copy
import json
import math
import os
import time
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from calib import __version__
from calib.core.atomic import atomic_write_json
from calib.core.errors import SchemaError

SCHEMA_VERSION = "1.0"
SUPPORTED_MAJOR = 1
SECTIONS = ("power", "thermal", "dvfs", "timing")


@dataclass
class Param:
    """A model parameter: value with unit, bounds, whether it was fitted, and its standard error.

    ``stderr`` is None until a fit provides it (or when the fit could not estimate it).
    """

    name: str
    value: float
    unit: str
    min: float = -math.inf
    max: float = math.inf
    vary: bool = True
    init: float | None = None
    stderr: float | None = None
    description: str = ""

    def __post_init__(self) -> None:
        if self.min >= self.max:
            raise ValueError(f"parameter {self.name}: min {self.min} >= max {self.max}")
        if not (self.min <= self.value <= self.max):
            raise ValueError(f"parameter {self.name}: value {self.value} outside [{self.min}, {self.max}]")

    def at_bound(self, rtol: float = 1e-6) -> str | None:
        """'min' or 'max' when the value sits on a finite bound."""
        for side, b in (("min", self.min), ("max", self.max)):
            if math.isfinite(b) and abs(self.value - b) <= rtol * max(1.0, abs(b)):
                return side
        return None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"value": float(self.value), "unit": self.unit,
                             "min": None if not math.isfinite(self.min) else float(self.min),
                             "max": None if not math.isfinite(self.max) else float(self.max),
                             "vary": bool(self.vary)}
        if self.init is not None:
            d["init"] = float(self.init)
        if self.description:
            d["description"] = self.description
        return d

    @classmethod
    def from_json(cls, name: str, d: dict[str, Any], stderr: float | None = None) -> "Param":
        lo = -math.inf if d.get("min") is None else float(d["min"])
        hi = math.inf if d.get("max") is None else float(d["max"])
        return cls(name, float(d["value"]), d["unit"], lo, hi, bool(d.get("vary", True)), d.get("init"),
                   stderr, d.get("description", ""))

    def __repr__(self) -> str:
        err = "(fixed)" if not self.vary else (f"+/- {self.stderr:.3g}" if self.stderr is not None else "+/- ?")
        return f"<Param {self.name} = {self.value:.6g} {self.unit} {err}, bounds=[{self.min}, {self.max}]>"


def section_params(doc: dict, section: str) -> dict[str, Param]:
    """The parameters of one section as :class:`Param` objects, with their standard errors."""
    sec = doc.get(section)
    if sec is None:
        return {}
    errs = doc.get("fit", {}).get(section, {}).get("stderr", {})
    return {n: Param.from_json(n, d, errs.get(n)) for n, d in sec["parameters"].items()}


def value(doc: dict, section: str, name: str, default: float | None = None) -> float:
    """Value of one parameter; ``default`` (or KeyError) when absent."""
    try:
        return float(doc[section]["parameters"][name]["value"])
    except KeyError:
        if default is not None:
            return default
        raise KeyError(f"parameter file has no {section}.{name}") from None


def _get(doc: Any, path: list) -> Any:
    for k in path:
        doc = doc[k]
    return doc


@lru_cache(maxsize=1)
def schema() -> dict:
    """The JSON Schema of parameter files (version 1.x)."""
    text = resources.files("calib").joinpath("core/schema/params-1.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


def _path_str(path: Any) -> str:
    return "/".join(str(p) for p in path) or "(top level)"


def _schema_error(e: Any) -> tuple[str, str]:
    """(field path, readable message) of one schema error. For 'null or X' alternatives, the reason X
    failed, at the deepest field it names; plus the description of the expected value when the schema
    has one."""
    msg, schema_ = e.message, e.schema
    while e.validator in ("anyOf", "oneOf") and e.context:
        alts = [c for c in e.context if not (c.validator == "type" and c.validator_value == "null")]
        if not alts:
            break
        deepest = max(alts, key=lambda c: len(c.absolute_path))
        if len(deepest.absolute_path) > len(e.absolute_path):
            e = deepest
            msg, schema_ = e.message, e.schema
            continue
        msg = "; ".join(dict.fromkeys(c.message for c in alts))
        if len(alts) < len(e.context):
            msg += " (nor null)"
        schema_ = alts[0].schema
        break
    desc = schema_.get("description") if isinstance(schema_, dict) else None
    return _path_str(e.absolute_path), (f"{msg} (expected: {desc})" if desc else msg)


def _non_finite(x: Any, path: list) -> list | None:
    """Path of the first NaN or infinite number in a JSON document (JSON has neither), or None."""
    if isinstance(x, float) and not math.isfinite(x):
        return path
    if isinstance(x, dict):
        items = x.items()
    elif isinstance(x, list):
        items = enumerate(x)
    else:
        return None
    for k, v in items:
        bad = _non_finite(v, path + [k])
        if bad is not None:
            return bad
    return None


#: physical bounds of parameter values by unit: (low, high), inclusive. Generous on purpose: they catch
#: garbage (1e308 W, negative cycles), not unusual hardware. 10 kW is several times the largest board.
UNIT_BOUNDS: dict[str, tuple[float, float]] = {
    "W": (0.0, 10_000.0),
    "W/C": (0.0, 1_000.0),
    "C/W": (-100.0, 100.0),
    "s": (0.0, 86_400.0),             # time constants and launch overheads: at most a day
    "cycles": (0.0, 1e6),             # latencies and delays in core cycles
    "mem cycles": (0.0, 1e6),
    "V/Vref": (1e-3, 10.0),           # relative voltages
    "C": (-200.0, 200.0),             # temperature offsets and rises (absolute temperatures: below)
}
#: the unit a parameter name's suffix promises (longest suffix first), so a bound cannot be dodged by a
#: wrong unit
SUFFIX_UNITS = (("_w_per_c", "W/C"), ("_c_per_w", "C/W"), ("_mem_cycles", "mem cycles"), ("_cycles", "cycles"),
                ("_temp_c", "C"), ("_w", "W"), ("_s", "s"))
#: absolute temperatures (degC) must lie in (0, 125]: see the temp_c definition of the schema
ABS_TEMP_LOW_C, ABS_TEMP_HIGH_C = 0.0, 125.0


def validate(doc: Any, source: str = "<parameters>") -> list[str]:
    """Check a parameter document against the schema and physical bounds.

    Raises :class:`SchemaError` naming the file and the offending field. Returns a list of warnings
    (parameters sitting at a bound, missing standard errors).
    """
    import jsonschema

    if not isinstance(doc, dict):
        raise SchemaError(f"{source}: expected a JSON object at the top level")
    ver = doc.get("schema_version")
    if not isinstance(ver, str):
        raise SchemaError(f"{source}: field 'schema_version' missing or not a string")
    major = ver.split(".")[0]
    if major != str(SUPPORTED_MAJOR):
        raise SchemaError(
            f"{source}: schema_version {ver!r} is not supported by this toolkit (it reads {SUPPORTED_MAJOR}.x)")
    validator = jsonschema.Draft202012Validator(schema())
    bad = _non_finite(doc, [])
    if bad is not None:
        raise SchemaError(f"{source}: field {_path_str(bad)}: {_get(doc, bad)} is not a finite number "
                          "(JSON has no NaN or Infinity)")
    errors = sorted(validator.iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        where, msg = _schema_error(errors[0])
        raise SchemaError(f"{source}: field {where}: {msg}")
    warns: list[str] = []
    for sec in SECTIONS:
        if sec not in doc:
            continue
        stats = doc["fit"].get(sec, {})
        errs = stats.get("stderr", {})
        for name, p in doc[sec]["parameters"].items():
            where = f"{sec}.parameters.{name}"
            v = p["value"]
            lo, hi = p.get("min"), p.get("max")
            if lo is not None and hi is not None and lo >= hi:
                raise SchemaError(f"{source}: field {where}: min {lo} >= max {hi}")
            if lo is not None and v < lo - 1e-12 * max(1, abs(lo)):
                raise SchemaError(f"{source}: field {where}: value {v} below its minimum {lo}")
            if hi is not None and v > hi + 1e-12 * max(1, abs(hi)):
                raise SchemaError(f"{source}: field {where}: value {v} above its maximum {hi}")
            if p["unit"] in ("W", "s", "W/C") and v < 0:
                raise SchemaError(f"{source}: field {where}: a {p['unit']} quantity cannot be negative ({v})")
            suffix, want = next(((s, u) for s, u in SUFFIX_UNITS if name.endswith(s)), (None, None))
            if want is not None and p["unit"] != want:
                raise SchemaError(f"{source}: field {where}.unit: {p['unit']!r}, but a parameter named "
                                  f"*{suffix} is in {want!r}")
            b = UNIT_BOUNDS.get(p["unit"])
            if b is not None and not b[0] <= v <= b[1]:
                raise SchemaError(f"{source}: field {where}: {v} {p['unit']} is outside the physical range "
                                  f"[{b[0]:g}, {b[1]:g}] {p['unit']}")
            if name.endswith("temp_c") and not ABS_TEMP_LOW_C < v <= ABS_TEMP_HIGH_C:
                raise SchemaError(f"{source}: field {where}: {v} C is not a plausible GPU temperature "
                                  f"(expected above {ABS_TEMP_LOW_C:g} C and at most {ABS_TEMP_HIGH_C:g} C)")
            if p.get("vary", True) and name not in errs:
                warns.append(f"{where}: no standard error in fit.{sec}.stderr")
            param = Param.from_json(name, p)
            side = param.at_bound()
            if side and param.vary:
                warns.append(f"{where}: at its {side} bound ({v})")
    return warns


def load(path: str | os.PathLike) -> dict:
    """Read and validate a parameter file: the schema, the physical bounds and that every model
    section can drive its model (:func:`calib.model.checks.check_models`), so that every
    verb reading a parameter file refuses a broken one up front with the field named (SchemaError)."""
    path = Path(path)
    if not path.exists():
        raise SchemaError(f"{path}: file not found")
    if path.is_dir():
        raise SchemaError(f"{path}: is a directory, not a parameter file (give the .json file written by calib fit)")
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except json.JSONDecodeError as e:
        raise SchemaError(f"{path}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})") from e
    except UnicodeDecodeError as e:
        raise SchemaError(f"{path}: not a text file") from e
    except RecursionError as e:
        raise SchemaError(f"{path}: JSON nested too deeply to be a parameter file") from e
    except OSError as e:
        raise SchemaError(f"{path}: cannot be read ({e.strerror or e})") from e
    validate(doc, str(path))
    from calib.model.checks import check_models  # lazy: the model layer imports this module

    check_models(doc, str(path))
    return doc


def save(doc: dict, path: str | os.PathLike) -> None:
    """Validate and write a parameter file atomically."""
    validate(doc, str(path))
    atomic_write_json(path, doc)


def toolkit_commit() -> str | None:
    """Git commit of the toolkit's source tree (with '+dirty' when it has local changes), or None when
    the toolkit is not run from a git checkout."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return sha + ("+dirty" if dirty else "") if sha else None


def new_document(device: dict, sources: list[dict], campaign: dict | None = None,
                 created_utc: str | None = None) -> dict:
    """An empty parameter document for ``device`` with provenance filled in."""
    return {
        "schema_version": SCHEMA_VERSION,
        "device": copy.deepcopy(device),
        "provenance": {
            "toolkit_version": __version__,
            "toolkit_commit": toolkit_commit(),
            "created_utc": created_utc or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "sources": sources,
            "campaign": campaign,
        },
        "fit": {},
    }


@dataclass
class SectionFit:
    """A fitted section ready to be stored: parameters, model structure and fit statistics."""

    model: str
    params: list[Param]
    structure: dict[str, Any] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)

    def store(self, doc: dict, section: str) -> None:
        """Put this fit into ``doc[section]`` and ``doc['fit'][section]``."""
        doc[section] = {"model": self.model, **copy.deepcopy(self.structure),
                        "parameters": {p.name: p.to_json() for p in self.params}}
        stats = dict(self.stats)
        stats["stderr"] = {p.name: (None if p.stderr is None or not math.isfinite(p.stderr) else float(p.stderr))
                           for p in self.params if p.vary}
        doc.setdefault("fit", {})[section] = stats
