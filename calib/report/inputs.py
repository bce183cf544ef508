"""Find what a parameter file was fitted on: its samples table and, when still on disk, its session.

A report, a bundle and a refit all need the data behind a parameter file. The parameter file itself
records where it came from (``provenance.sources``: path, sha256 and role of every input file;
``provenance.session``: the session name), and ``calib run`` writes the samples table beside it as
``<name>.samples.csv``. Discovery therefore goes, in order:

samples table
    the ``--samples`` option; a provenance source with role ``samples`` (found at its recorded path,
    relative to the current directory or to the parameter file, and only when its sha256 still
    matches); ``<stem>.samples.csv`` beside the parameter file; the samples rebuilt from the session.
session
    the ``--session`` option; the directory holding the provenance's ``log`` sources (same search,
    only when every recorded log file still has its recorded sha256); ``logs/<session>`` beside the
    parameter file's directory or under the current directory.

A session whose files no longer match the recorded hashes is not used, with a note saying so: plots
drawn from other data than the fit's would mislead.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from calib.core.params import ParameterFile
from calib.core.errors import BadInputError
from calib.core.samples import read_samples
from calib.core.session import MANIFEST_NAME, Session, file_sha256, read_session
from calib.model.checks import load_checked


@dataclass
class ReportInputs:
    """A loaded parameter file and whatever data behind it could be found."""

    params_path: Path
    params: ParameterFile
    samples: pd.DataFrame | None = None
    samples_path: Path | None = None
    samples_origin: str = ""
    session: Session | None = None
    notes: list[str] = field(default_factory=list)
    kernels: pd.DataFrame | None = None   # kernel rows for the category map and copy breakdown (--kernels)
    floorplan: Any = None                 # a user's floorplan for the heat map (--floorplan), else the generic one
    floorplan_path: Path | None = None


def _candidates(recorded: str, params_path: Path) -> list[Path]:
    p = Path(recorded)
    # a relative path: to the directory `calib run` was started in, usually the parameter file's parent
    return [p] if p.is_absolute() else [Path.cwd() / p, params_path.parent / p, params_path.parent.parent / p]


def _sources(pf: ParameterFile, role: str) -> list[dict]:
    return [s for s in pf.provenance.get("sources", []) if s.get("role") == role]


def _find_recorded(src: dict, params_path: Path) -> Path | None:
    """The first existing file at the recorded path whose sha256 matches the record."""
    return next((c for c in _candidates(src["path"], params_path) if c.is_file() and file_sha256(c) == src["sha256"]),
                None)


def find_session(pf: ParameterFile, params_path: Path, notes: list[str]) -> Path | None:
    """The session directory the parameter file was fitted from, if it is still on disk unchanged."""
    logs = _sources(pf, "log")
    name = pf.provenance.get("session")
    dirs = [c.parent for src in logs for c in _candidates(src["path"], params_path) if c.is_file()]
    if name:
        dirs += [b / name for b in (params_path.parent.parent / "logs", Path.cwd() / "logs", params_path.parent / "logs")
                 if (b / name).is_dir()]
    for d in dict.fromkeys(dirs):
        if not (d / MANIFEST_NAME).exists():
            continue
        changed = [s["path"] for s in logs if not (d / Path(s["path"]).name).is_file()
                   or file_sha256(d / Path(s["path"]).name) != s["sha256"]]
        if changed:
            notes.append(f"session {d} found, but {len(changed)} of its log files differ from the ones the "
                         f"parameters were fitted on (e.g. {Path(changed[0]).name}); not used")
            continue
        return d
    return None


def check_session_matches(pf: ParameterFile, session_dir: Path) -> None:
    """Refuse a session given by the user whose log files are not the ones the fit recorded."""
    for s in _sources(pf, "log"):
        f = session_dir / Path(s["path"]).name
        if not f.is_file():
            raise BadInputError(f"{session_dir}: has no {f.name}, which the parameter file was fitted on")
        if file_sha256(f) != s["sha256"]:
            raise BadInputError(f"{f}: sha256 differs from the one recorded in the parameter file's provenance "
                                "(this is not the session the parameters were fitted on)")


def load_inputs(params_path: str | os.PathLike, *, samples: str | os.PathLike | None = None,
                session: str | os.PathLike | None = None, discover: bool = True) -> ReportInputs:
    """Load and validate a parameter file and locate its samples table and session (module docstring)."""
    params_path = Path(params_path)
    if params_path.is_dir():
        raise BadInputError(f"{params_path}: is a directory; expected a parameter file (JSON)")
    pf = load_checked(params_path)
    out = ReportInputs(params_path, pf)
    if session is not None:
        out.session = read_session(session)  # checks it is a session directory
        check_session_matches(pf, Path(session))
    elif discover:
        found = find_session(pf, params_path, out.notes)
        if found is not None:
            out.session = read_session(found)
    recorded = (_find_recorded(src, params_path) for src in _sources(pf, "samples"))
    beside = params_path.with_name(params_path.name[:-5] + ".samples.csv")
    if samples is not None:
        out.samples_path, out.samples_origin = Path(samples), "given with --samples"
    elif discover and (found := next(filter(None, recorded), None)) is not None:
        out.samples_path, out.samples_origin = found, "the fit's input (provenance, sha256 verified)"
    elif discover and params_path.name.endswith(".json") and beside.is_file():
        out.samples_path, out.samples_origin = beside, "written beside the parameter file by calib run"
    if out.samples_path is not None:
        out.samples = read_samples(out.samples_path, require_power=True)
    elif discover and out.session is not None:
        from calib.segment import session_samples

        out.samples = session_samples(out.session)
        out.samples_origin = f"rebuilt from the session {out.session.path}"
    if out.samples is None:
        out.notes.append("no samples table found (give --samples or --session): plots of the data are skipped")
    if out.session is None:
        out.notes.append("no session directory found (give --session): temperature traces are skipped")
    return out
