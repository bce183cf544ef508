"""Helpers shared by the importers: reading text, sanitising unit names, numbers with context."""

from __future__ import annotations

import math
import os
import re

from calib.core.errors import BadInputError
from calib.core.samples import read_text_file

#: Percentages up to this far above 100 % are clipped to 100 % with one warning; beyond, refused.
#: Profilers overshoot a little: ncu's pct_of_peak_sustained rollups divide counters sampled over
#: slightly different windows (per-unit active cycles vs elapsed cycles, rounded sustained rates),
#: and nvprof's utilizations are averaged over SMs measured in different replay passes, so 100.5 % or
#: 103 % on a saturated unit is noise. Anything further off, or negative, is a broken value, not noise.
OVERSHOOT_PCT = 5.0


def read_lines(path: str | os.PathLike) -> list[str]:
    """Lines of a text file (BadInputError when missing, a directory, binary or empty)."""
    return read_text(path)[0]


def read_text(path: str | os.PathLike) -> tuple[list[str], bool]:
    """(lines, whether the last non-blank line is complete) of a text file, read once.

    BadInputError when the file is missing, a directory, unreadable, binary or empty. The flag (the text
    ends with a newline, or blank lines follow its last line) lets a reader tell a file cut mid-line
    (its last row short) from one that merely lacks a final newline.
    """
    text = read_text_file(path)[1]
    lines = text.splitlines()
    return lines, text.endswith(("\n", "\r")) or bool(lines and not lines[-1].strip())


def is_number(text: str) -> bool:
    """Whether ``float`` reads ``text``."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def cut_hint(is_last: bool, ends_with_newline: bool) -> str:
    """Suffix for a short-row message: a short last line without a newline is a truncated file."""
    return "; the file ends mid-line (truncated?)" if is_last and not ends_with_newline else ""


def unit_name(raw: str) -> str:
    """An ``act_`` unit name from a tool's component name: runs of other characters become ``_``."""
    return re.sub(r"[^0-9A-Za-z_]+", "_", raw.strip()).strip("_")


def to_float(text: str, where: str, *, thousands: bool = False, percent: bool = False,
             finite: bool = False) -> float:
    """A number from a field, or BadInputError naming ``where`` (file, line, field). ``thousands``: commas
    are digit group separators (profiler exports write ``1,234``); ``percent``: a trailing ``%`` is dropped
    (the value stays in percent); ``finite``: nan and inf are refused."""
    t = text.strip().strip('"')
    if thousands:
        t = t.replace(",", "")
    if percent:
        t = t.rstrip("%")
    try:
        v = float(t.strip())
    except ValueError:
        raise BadInputError(f"{where}: {text.strip()!r} is not a number") from None
    if finite and not math.isfinite(v):
        raise BadInputError(f"{where}: {text.strip()!r} is not a finite number")
    return v
