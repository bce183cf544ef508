"""Helpers shared by the importers: reading text, sanitising unit names, numbers with context."""

from __future__ import annotations

import os
import re
from pathlib import Path

from calib.errors import BadInputError


def read_lines(path: str | os.PathLike) -> list[str]:
    """Lines of a text file (BadInputError when missing, a directory, binary or empty)."""
    p = Path(path)
    if not p.exists():
        raise BadInputError(f"{p}: file not found")
    if p.is_dir():
        raise BadInputError(f"{p}: is a directory, expected a file")
    try:
        text = p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise BadInputError(f"{p}: not a text file ({e.reason} at byte {e.start})") from e
    lines = text.splitlines()
    if not any(line.strip() for line in lines):
        raise BadInputError(f"{p}: empty file")
    return lines


def unit_name(raw: str) -> str:
    """An ``act_`` unit name from a tool's component name: runs of other characters become ``_``."""
    name = re.sub(r"[^0-9A-Za-z_]+", "_", raw.strip()).strip("_")
    return name


def to_float(text: str, where: str) -> float:
    """A number from a field, or BadInputError naming ``where`` (file, line, field)."""
    t = text.strip().strip('"').strip()
    try:
        return float(t)
    except ValueError:
        raise BadInputError(f"{where}: {text.strip()!r} is not a number") from None
