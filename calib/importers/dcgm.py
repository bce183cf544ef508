"""DCGM profiling fields (``dcgmi dmon``) -> samples table.

Input: the text output of ``dcgmi dmon -e <field ids>`` (header line ``#Entity  SMACT ...``, a units
line starting with ``ID`` or ``Id`` (both spellings are in circulation; no dcgmi could be run here, see
``tests/data/profilers/README.md``), then one line per sample ``GPU 0  0.512 ...``; repeated header lines and
``N/A`` values are tolerated), or a CSV with the same short field names as column headers (optional
``workload`` and ``entity`` columns).

Field mapping (short name -> samples-table column): :data:`FIELDS`; the field ids to ask ``dcgmi dmon -e``
for are in ``calib/importers/README.md``.

dmon prints a time series; the importer averages the samples of each (entity, SMCLK, MMCLK)
combination into one row (``n_power`` = samples averaged, ``power_std_w`` = their standard
deviation). The workload is ``--workload`` (default: the file name without extension), with
``@GPU1`` etc. appended when the file holds several entities. ``skip_idle=True`` drops samples whose
activity fields are all zero (the GPU waiting before/after the workload).
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np
import pandas as pd

from calib.core.errors import BadInputError
from calib.importers._common import cut_hint, is_number, read_text, to_float
from calib.core.samples import check_samples

DESCRIPTION = "dcgmi dmon output with profiling fields (FP32A, FP64A, FP16A, TENSO, DRAMA, SMACT, SMOCC, ...)"

FIELDS: dict[str, str] = {
    "FP32A": "act_fp", "FP64A": "act_dp", "FP16A": "act_hp", "TENSO": "act_tensor",
    "TENDF": "act_tensor_dp", "TENSH": "act_tensor_hmma", "TENSI": "act_tensor_imma",
    "DRAMA": "act_dram", "SMACT": "act_sm", "SMOCC": "act_smocc", "GRACT": "act_gr",
    "POWER": "power_w", "SMCLK": "core_mhz", "MMCLK": "mem_mhz", "TMPTR": "temp_c", "GTEMP": "temp_c",
}
MISSING = {"N/A", "NA", "", "-"}


def _value(text: str, where: str) -> float:
    if text.strip().upper() in MISSING:
        return np.nan
    v = to_float(text, where)
    if np.isinf(v):
        raise BadInputError(f"{where}: {text.strip()!r} is not a finite number")
    return v


def _entity_width(tok: list[str]) -> int:
    """Tokens of the entity at the start of a dmon line: 'GPU 0', 'GPU-I 1', 'GPU-CI 2' (a type and an
    integer id), or a bare id. Counted from the entity's own shape, not from the line's length, so that
    a short (truncated) line is refused instead of shifting its values into the wrong fields."""
    if len(tok) >= 2 and not (tok[0].upper() in MISSING or is_number(tok[0])) and tok[1].isdigit():
        return 2
    return 1


def _parse_dmon(lines: list[str], p: Path, ends_nl: bool = True) -> pd.DataFrame:
    header: list[str] | None = None
    recs: list[dict[str, object]] = []
    last = max((k for k, x in enumerate(lines, start=1) if x.strip()), default=0)
    for i, line in enumerate(lines, start=1):
        s = line.strip()
        if not s:
            continue
        if s.startswith("#"):
            names = s.lstrip("#").split()
            if not names or names[0].lower() != "entity":
                raise BadInputError(f"{p}: line {i}: expected a dmon header '#Entity FIELD ...', got {s[:40]!r}")
            if header is not None and names[1:] != header:
                raise BadInputError(f"{p}: line {i}: the header changes fields mid-file")
            header = names[1:]
            continue
        if s.split()[0].upper() == "ID":  # the units line ("ID" or "Id": see tests/data/profilers/README.md)
            continue
        if header is None:
            raise BadInputError(f"{p}: line {i}: data before the '#Entity ...' header")
        tok = s.split()
        n = len(header)
        w = _entity_width(tok)
        if len(tok) - w != n:
            raise BadInputError(f"{p}: line {i}: {len(tok) - w} values after the entity {' '.join(tok[:w])!r}, "
                                f"expected {n} ({' '.join(header)})"
                                + cut_hint(i == last and len(tok) - w < n, ends_nl))
        recs.append({"entity": " ".join(tok[:w]), "_line": i,
                     **{name: _value(v, f"{p}: line {i}, field {name}") for name, v in zip(header, tok[w:])}})
    if header is None:
        raise BadInputError(f"{p}: no dmon header ('#Entity FIELD ...') found")
    if not recs:
        raise BadInputError(f"{p}: no samples after the header")
    return pd.DataFrame(recs)


def _parse_csv(lines: list[str], p: Path, ends_nl: bool = True) -> pd.DataFrame:
    body = [(i, x) for i, x in enumerate(lines, start=1) if x.strip()]  # keep file line numbers
    try:
        rows = [(i, next(csv.reader([x]))) for i, x in body]
    except csv.Error as e:
        raise BadInputError(f"{p}: not a readable CSV file ({e})") from None
    header = [h.strip() for h in rows[0][1]]
    for j, h in enumerate(header):
        if not h:
            raise BadInputError(f"{p}: line {rows[0][0]}: column {j + 1} has no name")
    recs = []
    for k, (i, r) in enumerate(rows[1:], start=2):
        if len(r) != len(header):
            raise BadInputError(f"{p}: line {i}: {len(r)} fields, expected {len(header)}"
                                + cut_hint(k == len(rows) and len(r) < len(header), ends_nl))
        recs.append({"_line": i, **{h: v.strip() if h in ("workload", "entity")
                                    else _value(v, f"{p}: line {i}, field {h}") for h, v in zip(header, r)}})
    if not recs:
        raise BadInputError(f"{p}: no samples after the header")
    return pd.DataFrame(recs)


def read(path: str | os.PathLike, workload: str | None = None, skip_idle: bool = False) -> pd.DataFrame:
    """Read dcgmi dmon output (or its CSV form) into a checked samples table (module docstring)."""
    p = Path(path)
    lines, ends_nl = read_text(p)
    first = next(x for x in lines if x.strip())
    is_csv = "," in first and not first.lstrip().startswith("#")
    raw = _parse_csv(lines, p, ends_nl) if is_csv else _parse_dmon(lines, p, ends_nl)
    known = [c for c in raw.columns if c in FIELDS]
    unknown = [c for c in raw.columns if c not in FIELDS and c not in ("entity", "workload", "_line")]
    if unknown:
        raise BadInputError(f"{p}: unknown DCGM field {unknown[0]!r} (known: {', '.join(FIELDS)})")
    acts = [c for c in known if FIELDS[c].startswith("act_")]
    if not acts:
        raise BadInputError(f"{p}: no profiling field (FP32A, FP64A, FP16A, TENSO, DRAMA, SMACT, SMOCC) in the file")
    cols = [FIELDS[c] for c in known]
    if len(set(cols)) != len(cols):
        raise BadInputError(f"{p}: both TMPTR and GTEMP given; keep one temperature field")
    df = raw.rename(columns={c: FIELDS[c] for c in known})
    act_cols = [FIELDS[c] for c in acts]
    line_of = df["_line"].to_numpy()
    last_line = int(line_of.max())
    field_of = {FIELDS[c]: c for c in known}
    for c in act_cols:
        v = df[c].to_numpy(float)
        bad = (v < -1e-6) | (v > 1 + 1e-6)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise BadInputError(f"{p}: line {line_of[i]}, sample {i + 1}, field {field_of[c]}: "
                                f"{v[i]:g} outside [0, 1]")
    # Per sample, so that the message names the line (after averaging it could not). Clocks are the
    # grouping keys: a sample without them (a cut-off last line) would form a group of its own.
    for c, what in (("power_w", "W is not a positive power"), ("core_mhz", "MHz is not a positive clock"),
                    ("mem_mhz", "MHz is not a positive clock")):
        if c not in df.columns:
            continue
        v = df[c].to_numpy(float)
        bad = v <= 0
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise BadInputError(f"{p}: line {line_of[i]}, field {field_of[c]}: {v[i]:g} {what}")
        if c != "power_w" and np.isnan(v).any():
            i = int(np.flatnonzero(np.isnan(v))[0])
            raise BadInputError(f"{p}: line {line_of[i]}, field {field_of[c]}: no value; every sample needs its "
                                "clocks (they group the samples)" + cut_hint(line_of[i] == last_line, ends_nl))
    df = df.drop(columns=["_line"])
    if skip_idle:
        busy = (df[act_cols].fillna(0.0) > 0).any(axis=1)
        if not busy.any():
            raise BadInputError(f"{p}: every sample is idle (all activity fields 0); nothing left with skip_idle")
        df = df[busy]
    if "entity" not in df.columns:
        df["entity"] = "GPU 0"
    base = workload or p.stem
    multi = df["entity"].nunique() > 1
    keys = ["entity"] + [c for c in ("core_mhz", "mem_mhz") if c in df.columns]
    if "workload" in df.columns:
        keys.insert(0, "workload")
    out = []
    for key, g in df.groupby(keys, sort=False, dropna=False):   # (a list of keys: key is a tuple)
        kd = dict(zip(keys, key))
        name = str(kd["workload"]) if "workload" in kd else base
        if multi:
            name += "@" + str(kd["entity"]).replace(" ", "")
        row: dict[str, object] = {"workload": name}
        for c in ("core_mhz", "mem_mhz"):
            if c in kd:
                row[c] = kd[c]
        for c in act_cols + [c for c in ("temp_c",) if c in g.columns]:
            row[c] = float(g[c].mean())
        if "power_w" in g.columns:
            pw = g["power_w"].dropna()
            row["power_w"] = float(pw.mean()) if len(pw) else np.nan
            row["n_power"] = int(len(pw))
            row["power_std_w"] = float(pw.std(ddof=1)) if len(pw) > 1 else np.nan
        out.append(row)
    res = pd.DataFrame(out)
    res[act_cols] = res[act_cols].clip(0.0, 1.0)
    return check_samples(res, str(p), require_power=False)
