"""DCGM profiling fields (``dcgmi dmon``) -> samples table.

Input: the text output of ``dcgmi dmon -e <field ids>`` (header line ``#Entity  SMACT ...``, a units
line starting with ``ID``, then one line per sample ``GPU 0  0.512 ...``; repeated header lines and
``N/A`` values are tolerated), or a CSV with the same short field names as column headers (optional
``workload`` and ``entity`` columns).

Field mapping (DCGM field id, short name -> samples-table column):

=====================  ==========  ===================================================
1007 FP32A             act_fp      fraction of cycles the FP32 pipes are active
1006 FP64A             act_dp      FP64 pipes
1008 FP16A             act_hp      FP16 pipes
1004 TENSO             act_tensor  tensor pipes (also TENDF 1015 -> act_tensor_dp,
                                   TENSH 1014 -> act_tensor_hmma, TENSI 1013 -> act_tensor_imma)
1005 DRAMA             act_dram    fraction of cycles the device memory interface is busy
1002 SMACT             act_sm      fraction of time at least one warp is resident on an SM
1003 SMOCC             act_smocc   resident warps / maximum (occupancy)
1001 GRACT             act_gr      graphics/compute engine active
155  POWER             power_w     W
100  SMCLK             core_mhz    MHz
101  MMCLK             mem_mhz     MHz
150  TMPTR (or GTEMP)  temp_c      degC
=====================  ==========  ===================================================

dmon prints a time series; the importer averages the samples of each (entity, SMCLK, MMCLK)
combination into one row (``n_power`` = samples averaged, ``power_std_w`` = their standard
deviation). The workload is ``--workload`` (default: the file name without extension), with
``@GPU1`` etc. appended when the file holds several entities. ``skip_idle=True`` drops samples whose
activity fields are all zero (the GPU waiting before/after the workload).
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

import numpy as np
import pandas as pd

from calib.errors import BadInputError
from calib.importers._common import read_lines
from calib.samples import check_samples

DESCRIPTION = "dcgmi dmon output with profiling fields (FP32A, FP64A, FP16A, TENSO, DRAMA, SMACT, SMOCC, ...)"

FIELDS: dict[str, str] = {
    "FP32A": "act_fp", "FP64A": "act_dp", "FP16A": "act_hp", "TENSO": "act_tensor",
    "TENDF": "act_tensor_dp", "TENSH": "act_tensor_hmma", "TENSI": "act_tensor_imma",
    "DRAMA": "act_dram", "SMACT": "act_sm", "SMOCC": "act_smocc", "GRACT": "act_gr",
    "POWER": "power_w", "SMCLK": "core_mhz", "MMCLK": "mem_mhz", "TMPTR": "temp_c", "GTEMP": "temp_c",
}
MISSING = {"N/A", "NA", "", "-"}


def _value(text: str, where: str) -> float:
    t = text.strip()
    if t.upper() in MISSING:
        return np.nan
    try:
        return float(t)
    except ValueError:
        raise BadInputError(f"{where}: {t!r} is not a number") from None


def _parse_dmon(lines: list[str], p: Path) -> pd.DataFrame:
    header: list[str] | None = None
    recs: list[dict[str, object]] = []
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
        if s.split()[0] == "ID":  # the units line
            continue
        if header is None:
            raise BadInputError(f"{p}: line {i}: data before the '#Entity ...' header")
        tok = s.split()
        n = len(header)
        if len(tok) < n + 1:
            raise BadInputError(f"{p}: line {i}: {len(tok) - 1} values, expected {n} ({' '.join(header)})")
        entity = " ".join(tok[:len(tok) - n])
        rec: dict[str, object] = {"entity": entity}
        for name, v in zip(header, tok[len(tok) - n:]):
            rec[name] = _value(v, f"{p}: line {i}, field {name}")
        recs.append(rec)
    if header is None:
        raise BadInputError(f"{p}: no dmon header ('#Entity FIELD ...') found")
    if not recs:
        raise BadInputError(f"{p}: no samples after the header")
    return pd.DataFrame(recs)


def _parse_csv(lines: list[str], p: Path) -> pd.DataFrame:
    rows = list(csv.reader(io.StringIO("\n".join(x for x in lines if x.strip()))))
    header = [h.strip() for h in rows[0]]
    recs = []
    for i, r in enumerate(rows[1:], start=2):
        if len(r) != len(header):
            raise BadInputError(f"{p}: line {i}: {len(r)} fields, expected {len(header)}")
        rec: dict[str, object] = {}
        for h, v in zip(header, r):
            if h in ("workload", "entity"):
                rec[h] = v.strip()
            else:
                rec[h] = _value(v, f"{p}: line {i}, field {h}")
        recs.append(rec)
    if not recs:
        raise BadInputError(f"{p}: no samples after the header")
    return pd.DataFrame(recs)


def read(path: str | os.PathLike, workload: str | None = None, skip_idle: bool = False) -> pd.DataFrame:
    """Read dcgmi dmon output (or its CSV form) into a checked samples table (module docstring)."""
    p = Path(path)
    lines = read_lines(p)
    first = next(x for x in lines if x.strip())
    raw = _parse_csv(lines, p) if ("," in first and not first.lstrip().startswith("#")) else _parse_dmon(lines, p)
    known = [c for c in raw.columns if c in FIELDS]
    unknown = [c for c in raw.columns if c not in FIELDS and c not in ("entity", "workload")]
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
    for c in act_cols:
        v = df[c].to_numpy(float)
        bad = (v < -1e-6) | (v > 1 + 1e-6)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise BadInputError(f"{p}: sample {i + 1}, field {[k for k in acts if FIELDS[k] == c][0]}: "
                                f"{v[i]:g} outside [0, 1]")
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
    for key, g in df.groupby(keys, sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
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
