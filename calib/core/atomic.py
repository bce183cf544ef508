"""Atomic file writes: a reader sees the old file or the new one, never half of either."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def check_output_file(path: str | os.PathLike, what: str = "output") -> Path:
    """Refuse (BadInputError) an output path that is a directory or whose parent is a file; call it
    before long work so that a typo does not cost the work."""
    from calib.core.errors import BadInputError

    path = Path(path)
    if path.is_dir():
        raise BadInputError(f"{path}: is a directory; the {what} must be a file path")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise BadInputError(f"{path}: {parent} is not a directory")
            break
    return path


def check_output_dir(path: str | os.PathLike, what: str = "output directory") -> Path:
    """Refuse (BadInputError) a directory path that exists as a file (or has a file as an ancestor)."""
    from calib.core.errors import BadInputError

    path = Path(path)
    for p in (path, *path.parents):
        if p.exists():
            if not p.is_dir():
                raise BadInputError(f"{what} {path}: {p} exists and is not a directory")
            break
    return path


def check_not_input(output: str | os.PathLike | None, *inputs: str | os.PathLike | None,
                    what: str = "output") -> None:
    """Refuse (BadInputError) an output path that is one of the inputs or lies inside an input directory
    (e.g. a session): writing it would destroy the data the command reads. ``None`` entries are skipped."""
    from calib.core.errors import BadInputError

    if output is None:
        return
    out = Path(output).resolve()
    for src in inputs:
        if src is None:
            continue
        s = Path(src).resolve()
        if out == s:
            raise BadInputError(f"{output}: the {what} is also an input; choose another path")
        if s.is_dir() and s in out.parents:
            raise BadInputError(f"{output}: the {what} would be written inside the input directory {src}; "
                                "choose a path outside it")


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory and ``os.replace``."""
    path = check_output_file(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates 0600; give the file the mode a plain open() would (published files must be readable)
        os.fchmod(fd, 0o666 & ~_UMASK)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def _read_umask() -> int:
    mask = os.umask(0)  # the only portable way to read it; restored at once (at import, before any thread)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


def public_mode(path: str | os.PathLike, directory: bool = False) -> None:
    """Give ``path`` the mode a plain ``open()``/``mkdir()`` would under the process umask (``mkstemp``
    and ``mkdtemp`` create private 0600/0700 files and directories)."""
    os.chmod(path, (0o777 if directory else 0o666) & ~_UMASK)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Atomically write UTF-8 text."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: Any) -> None:
    """Atomically write ``obj`` as indented JSON with a trailing newline."""
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=False, allow_nan=False) + "\n")
