"""Parameter files: the versioned JSON contract and the object every fitter writes and every model reads.

Layout (contract): ``schema_version``, ``device``, ``provenance``, one section per fitted model part
(``power``, ``thermal``, ``dvfs``, ``timing``), and ``fit`` with per-section statistics and a standard
error for every fitted parameter. A section is ``{"model": <name>, ...model structure...,
"parameters": {<name>: {"value", "unit", "min", "max", "vary", "init", "description"}}}``; the standard
errors live in ``fit.<section>.stderr`` so that a section is exactly what the model consumes. Since
schema 1.1, ``fit.<section>`` may also hold the ``covariance`` of the fitted parameters (``names`` and
``matrix``) and the fitter's ``settings`` (its constructor arguments: a refit is
``Fitter(**settings).fit(rows)``); and ``stderr_total``/``covariance_total``, the uncertainty including
model discrepancy (:mod:`calib.fit.uncertainty`). Schema 1.2 adds the IPP section's optional
``shared_activation`` term (files without it predict as before) and, in ``fit.power.identifiability``,
the quantities published where a parameter is not determined on its own (``kind``, ``undetermined``).

In memory a file is a :class:`ParameterFile`: ``device`` and ``provenance`` (plain mappings),
``sections`` (name -> :class:`Section`), each section a model name, its structure, its
:class:`Param` objects (value, unit, bounds, stderr), its fit statistics, covariance and settings.
:func:`load` reads and checks a file (schema and physical bounds; whether a section can drive its model
is checked by the model layer, :func:`calib.model.load`), :meth:`ParameterFile.save` checks and writes
one atomically. Parameter names are made in :mod:`calib.core.names`.
"""

from __future__ import annotations

import copy
import json
import math
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from calib import __version__
from calib.core.atomic import atomic_write_text, finite_or_none
from calib.core.errors import SchemaError

SCHEMA_VERSION = "1.2"
SUPPORTED_MAJOR = 1
#: sections in file order; a file may carry other sections after these (newer toolkits)
SECTIONS = ("power", "thermal", "dvfs", "timing", "transfer", "thermal_network")
#: top-level keys that are not sections
_META = ("schema_version", "device", "provenance", "fit")


@dataclass
class Param:
    """A model parameter: value with unit, bounds, whether it was fitted, and its two uncertainties.

    ``stderr`` is the statistical standard error: how much the value would move if the same campaign
    were run again on the same card (repeatability under sensor noise; what ``calib diff`` tests).
    ``stderr_total`` also includes model discrepancy (the physics is not the model): how far the value
    may be from the quantity it names. Both are None until a fit provides them (or when it cannot).
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
    stderr_total: float | None = None

    def __post_init__(self) -> None:
        if self.min >= self.max:
            raise ValueError(f"parameter {self.name}: min {self.min} >= max {self.max}")
        if not (self.min <= self.value <= self.max):
            raise ValueError(f"parameter {self.name}: value {self.value} outside [{self.min}, {self.max}]")

    def at_bound(self, rtol: float = 1e-6) -> str | None:
        """'min' or 'max' when the value sits on a finite bound: within ``rtol`` of the bound's magnitude
        (at least 1), or of the span between the bounds when that is smaller (a parameter of J/byte bounded
        to [0, 1e-6] at 4.7e-10 was "at its min bound" by an absolute 1e-6, and calib diff called its
        change "unchanged")."""
        span = self.max - self.min
        for side, b in (("min", self.min), ("max", self.max)):
            if math.isfinite(b) and abs(self.value - b) <= rtol * min(max(1.0, abs(b)), span):
                return side
        return None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"value": float(self.value), "unit": self.unit, "min": finite_or_none(self.min),
                             "max": finite_or_none(self.max), "vary": bool(self.vary)}
        if self.init is not None:
            d["init"] = float(self.init)
        if self.description:
            d["description"] = self.description
        return d

    @classmethod
    def from_json(cls, name: str, d: Mapping[str, Any], stderr: float | None = None,
                  stderr_total: float | None = None) -> "Param":
        lo = -math.inf if d.get("min") is None else float(d["min"])
        hi = math.inf if d.get("max") is None else float(d["max"])
        return cls(name, float(d["value"]), d["unit"], lo, hi, bool(d.get("vary", True)), d.get("init"),
                   stderr, d.get("description", ""), stderr_total)

    def __repr__(self) -> str:
        err = "(fixed)" if not self.vary else (f"+/- {self.stderr:.3g}" if self.stderr is not None else "+/- ?")
        if self.vary and self.stderr_total is not None:
            err += f" (total +/- {self.stderr_total:.3g})"
        return f"<Param {self.name} = {self.value:.6g} {self.unit} {err}, bounds=[{self.min}, {self.max}]>"


@dataclass
class Covariance:
    """Covariance of fitted parameters (``names`` in matrix order; units are the parameters' units
    squared); NaN where the fit could not estimate an entry."""

    names: tuple[str, ...]
    matrix: np.ndarray

    def __post_init__(self) -> None:
        self.names = tuple(self.names)
        self.matrix = np.asarray(self.matrix, dtype=float)
        if self.matrix.shape != (len(self.names), len(self.names)):
            raise ValueError(f"covariance of {len(self.names)} parameters has shape {self.matrix.shape}")

    def index(self, name: str) -> int:
        return self.names.index(name)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Covariance) and self.names == other.names
                and np.array_equal(self.matrix, other.matrix, equal_nan=True))

    @classmethod
    def from_blocks(cls, params: Sequence[Param], blocks: Sequence["Covariance | None"] = ()) -> "Covariance":
        """Covariance of the varied ``params`` from independent fits: each block's entries where it
        covers two parameters, else the parameter's stderr squared on the diagonal and 0 between
        parameters of different fits (NaN for a missing stderr)."""
        names = tuple(p.name for p in params if p.vary)
        m = np.diag([math.nan if p.stderr is None else p.stderr ** 2 for p in params if p.vary])
        for b in (b for b in blocks if b is not None):
            mine = [i for i, n in enumerate(names) if n in b.names]
            m[np.ix_(mine, mine)] = b.sub([names[i] for i in mine])
        return cls(names, m)

    def sub(self, names: Sequence[str]) -> np.ndarray:
        """The covariance of ``names`` (in that order)."""
        idx = [self.index(n) for n in names]
        return self.matrix[np.ix_(idx, idx)]

    def correlation(self) -> np.ndarray:
        """Correlation matrix (NaN where a variance is missing or zero)."""
        sd = np.sqrt(np.where(np.diag(self.matrix) > 0, np.diag(self.matrix), np.nan))
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.matrix / np.outer(sd, sd)

    def to_json(self) -> dict[str, Any]:
        return {"names": list(self.names), "matrix": [[finite_or_none(x) for x in row] for row in self.matrix]}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Covariance":
        rows = [[math.nan if x is None else float(x) for x in row] for row in d["matrix"]]
        n = len(d["names"])
        if len(rows) != n or any(len(r) != n for r in rows):
            raise ValueError(f"covariance of {n} parameters has {len(rows)} rows of lengths "
                             f"{sorted({len(r) for r in rows})} (expected {n} x {n})")
        return cls(tuple(d["names"]), np.array(rows, dtype=float).reshape(n, n))


def transferred_total_se(se: float, stderr: Sequence[float | None], stderr_total: Sequence[float | None]) -> float:
    """Total standard error of a combination of parameters (a sum, or the weighted combination a file
    publishes where the campaign does not separate its members) whose statistical standard error is
    ``se``: scaled by the members' largest ratio of total to statistical standard error (a rough but
    conservative transfer: the model-discrepancy terms are per parameter, not per combination). Members
    without both errors are skipped; ``se`` itself when none has them. Same unit as ``se``."""
    ratios = [t / s for s, t in zip(stderr, stderr_total) if s and t is not None and math.isfinite(t / s)]
    return se * max(ratios, default=1.0)


@dataclass
class Section:
    """One fitted model part: the model's name and structure, its parameters, and what the fit knows
    about them (statistics, covariance, the fitter's settings)."""

    model: str
    params: dict[str, Param]
    structure: dict[str, Any] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    covariance: Covariance | None = None
    settings: dict[str, Any] | None = None
    covariance_total: Covariance | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.params, dict):  # a list of Param is accepted and keyed by name
            self.params = {p.name: p for p in self.params}

    def __getitem__(self, name: str) -> Param:
        try:
            return self.params[name]
        except KeyError:
            raise KeyError(f"the {self.model} section has no parameter {name!r}") from None

    def __contains__(self, name: object) -> bool:
        return name in self.params

    def __iter__(self) -> Iterator[Param]:
        return iter(self.params.values())

    def values(self) -> dict[str, float]:
        """Every parameter's value by name (what a model evaluates)."""
        return {n: p.value for n, p in self.params.items()}

    def value(self, name: str, default: float | None = None) -> float:
        """Value of one parameter; ``default`` (or KeyError) when absent."""
        p = self.params.get(name)
        if p is None:
            if default is not None:
                return default
            raise KeyError(f"the {self.model} section has no parameter {name!r}")
        return p.value

    def correlation(self, a: str, b: str) -> float | None:
        """Correlation of two fitted parameters, when the covariance has both."""
        if self.covariance is None or a not in self.covariance.names or b not in self.covariance.names:
            return None
        c = self.covariance.correlation()[self.covariance.index(a), self.covariance.index(b)]
        return float(c) if math.isfinite(c) else None

    def to_json(self) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """(the section as the file holds it, its ``fit`` entry; None for a section nothing was fitted
        for, e.g. published values entered by hand)."""
        sec = {"model": self.model, **copy.deepcopy(self.structure),
               "parameters": {n: p.to_json() for n, p in self.params.items()}}
        fit = dict(copy.deepcopy(self.stats))
        # fixed parameters carry a standard error only when they are measured inputs (e.g. an idle power a
        # section is referred to); a value entered by hand has none
        fit["stderr"] = {n: finite_or_none(p.stderr) for n, p in self.params.items() if p.vary or p.stderr is not None}
        if any(p.stderr_total is not None for p in self.params.values() if p.vary):
            fit["stderr_total"] = {n: finite_or_none(p.stderr_total) for n, p in self.params.items()
                                   if p.vary or p.stderr_total is not None}
        if self.covariance is not None:
            fit["covariance"] = self.covariance.to_json()
        if self.covariance_total is not None:
            fit["covariance_total"] = self.covariance_total.to_json()
        if self.settings is not None:
            fit["settings"] = copy.deepcopy(self.settings)
        if not self.stats and not fit["stderr"] and len(fit) == 1:
            return sec, None
        return sec, fit

    @classmethod
    def from_json(cls, sec: Mapping[str, Any], fit: Mapping[str, Any] | None = None) -> "Section":
        fit = fit or {}
        errs = fit.get("stderr") or {}
        total = fit.get("stderr_total") or {}
        params = {n: Param.from_json(n, d, errs.get(n), total.get(n)) for n, d in sec["parameters"].items()}
        structure = {k: copy.deepcopy(v) for k, v in sec.items() if k not in ("model", "parameters")}
        stats = {k: copy.deepcopy(v) for k, v in fit.items()
                 if k not in ("stderr", "stderr_total", "covariance", "covariance_total", "settings")}
        cov = Covariance.from_json(fit["covariance"]) if fit.get("covariance") else None
        cov_t = Covariance.from_json(fit["covariance_total"]) if fit.get("covariance_total") else None
        return cls(sec["model"], params, structure, stats, cov, copy.deepcopy(fit.get("settings")), cov_t)


class ParameterFile:
    """A parameter file in memory (module docstring). ``pf["power"]`` is a :class:`Section`."""

    def __init__(self, device: Mapping[str, Any], provenance: Mapping[str, Any],
                 sections: Mapping[str, Section] | None = None, schema_version: str = SCHEMA_VERSION):
        self.schema_version = schema_version
        self.device: dict[str, Any] = copy.deepcopy(dict(device))
        self.provenance: dict[str, Any] = copy.deepcopy(dict(provenance))
        self.sections: dict[str, Section] = dict(sections or {})

    # -- sections ------------------------------------------------------------------------------
    def __getitem__(self, name: str) -> Section:
        try:
            return self.sections[name]
        except KeyError:
            raise KeyError(f"the parameter file has no {name!r} section") from None

    def __setitem__(self, name: str, section: Section) -> None:
        self.sections[name] = section

    def __contains__(self, name: object) -> bool:
        return name in self.sections

    def __iter__(self) -> Iterator[str]:
        """Section names in file order."""
        return iter([n for n, _ in self.items()])

    def __len__(self) -> int:
        return len(self.sections)

    def get(self, name: str) -> Section | None:
        return self.sections.get(name)

    def items(self) -> list[tuple[str, Section]]:
        """(name, section) in file order: :data:`SECTIONS` first, then any other."""
        order = [s for s in SECTIONS if s in self.sections] + [s for s in self.sections if s not in SECTIONS]
        return [(n, self.sections[n]) for n in order]

    def model_of(self, name: str) -> str | None:
        """Model name of a section, or None when the file has no such section."""
        sec = self.sections.get(name)
        return None if sec is None else sec.model

    # -- construction and JSON -------------------------------------------------------------------
    @classmethod
    def new(cls, device: Mapping[str, Any], sources: list[dict], campaign: dict | None = None,
            created_utc: str | None = None) -> "ParameterFile":
        """An empty parameter file for ``device`` with provenance filled in."""
        return cls(device, {"toolkit_version": __version__, "toolkit_commit": toolkit_commit(),
                            "created_utc": created_utc or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                            "sources": sources, "campaign": campaign})

    def to_dict(self) -> dict[str, Any]:
        """The file's JSON document (contract layout: sections in :data:`SECTIONS` order)."""
        doc: dict[str, Any] = {"schema_version": self.schema_version, "device": copy.deepcopy(self.device),
                               "provenance": copy.deepcopy(self.provenance)}
        fit: dict[str, Any] = {}
        for name, section in self.items():
            doc[name], entry = section.to_json()
            if entry is not None:
                fit[name] = entry
        doc["fit"] = fit
        return doc

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any], source: str = "<parameters>", check: bool = True) -> "ParameterFile":
        """A parameter file from its JSON document; checked against the schema and the physical bounds
        first (``check=False`` only for documents this toolkit has just built)."""
        if check:
            validate(doc, source)
        fit = doc.get("fit") or {}
        sections = {}
        for k, v in doc.items():
            if k in _META or not isinstance(v, Mapping) or "parameters" not in v:
                continue
            try:
                sections[k] = Section.from_json(v, fit.get(k))
            except ValueError as e:  # e.g. a covariance matrix that does not match its names
                raise SchemaError(f"{source}: field fit/{k}: {e}") from e
        return cls(doc.get("device") or {}, doc.get("provenance") or {}, sections, doc.get("schema_version", SCHEMA_VERSION))

    def to_json_text(self) -> str:
        """The file's text: indented JSON, one covariance row per line."""
        doc = self.to_dict()
        rows: list[str] = []
        for fit in doc["fit"].values():
            for key in ("covariance", "covariance_total"):
                cov = fit.get(key)
                if cov:
                    rows += [json.dumps(row, allow_nan=False) for row in cov["matrix"]]
                    cov["matrix"] = [f"@@row{i}@@" for i in range(len(rows) - len(cov["matrix"]), len(rows))]
        text = json.dumps(doc, indent=2, allow_nan=False)
        for i, r in enumerate(rows):
            text = text.replace(f'"@@row{i}@@"', r, 1)
        return text + "\n"

    def save(self, path: str | os.PathLike) -> None:
        """Check (schema, physical bounds) and write atomically."""
        doc = self.to_dict()
        validate(doc, str(path))
        atomic_write_text(path, self.to_json_text())

    def warnings(self, source: str = "<parameters>") -> list[str]:
        """What :func:`validate` says of this file besides errors (parameters at a bound, no stderr)."""
        return validate(self.to_dict(), source)

    def copy(self) -> "ParameterFile":
        return ParameterFile.from_dict(self.to_dict(), check=False)


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
                ("_temp_c", "C"), ("_bytes_per_s", "B/s"), ("_pct_per_s", "%/s"), ("_j_per_byte", "J/B"), ("_w", "W"), ("_s", "s"))
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
    for sec in [k for k, v in doc.items() if k not in _META and isinstance(v, dict) and "parameters" in v]:
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


def load(path: str | os.PathLike) -> ParameterFile:
    """Read a parameter file and check it against the schema and the physical bounds (SchemaError naming
    the file and the field). Whether each section can drive its model is the model layer's check:
    commands read parameter files with :func:`calib.model.load`, which does both."""
    path = Path(path)
    if not path.exists():
        raise SchemaError(f"{path}: file not found")
    if path.is_dir():
        raise SchemaError(f"{path}: is a directory, not a parameter file (give the .json file written by calib fit)")
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except json.JSONDecodeError as e:
        raise SchemaError(f"{path}: not valid JSON ({e.msg}: line {e.lineno}, column {e.colno})") from e
    except UnicodeDecodeError as e:
        raise SchemaError(f"{path}: not a text file") from e
    except RecursionError as e:
        raise SchemaError(f"{path}: JSON nested too deeply to be a parameter file") from e
    except OSError as e:
        raise SchemaError(f"{path}: cannot be read ({e.strerror or e})") from e
    return ParameterFile.from_dict(doc, str(path))


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


