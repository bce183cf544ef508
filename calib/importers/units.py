"""Units as nvprof and Nsight Compute (ncu) print them -> SI; one home for every profiler unit.

Sources (transcripts and how they were made: ``tests/data/profilers/README.md``):

- **nvprof** 11.8 (the last release; Debian ``nvidia-profiler`` 11.8.87): its formatter tables (strings of
  the binary) are time ``ns us ms s``, size ``B KB MB GB``, throughput ``B/s KB/s MB/s GB/s``;
  percentages end in ``%``; utilization levels print as ``Idle (0)`` ``Low (1..3)`` ``Mid (4..6)``
  ``High (7..9)`` ``Max (10)``; an overflowed or invalid counter as ``<OVERFLOW>`` / ``<INVALID>``.
  Byte multiples are **binary**: a throughput of 159,183,110,000 B/s prints as ``148.250824GB/s``
  (/ 1024^3) and 750,550,000 B/s as ``715.780258MB/s`` (/ 1024^2) -- nvprof 11.8 printing a profile
  with those values. In a summary (``--csv``) each value carries its own unit, so one row may hold
  ``715.780258MB/s,148.250824GB/s,98.544473GB/s``; in a trace (``--print-gpu-trace``) the row under
  the header gives one unit per column (``ms``, ``%``, ``GB/s``, ``B``) and the values are bare.
  ``TB/s``/``TB`` are not in 11.8's tables; they are read as the next binary multiple.
- **ncu** 2022.3 (Debian ``nsight-compute`` 2022.3.0.22): a unit is ``[prefix]word[/[prefix]word]``,
  e.g. ``usecond``, ``cycle/nsecond``, ``Gbyte/second``, ``Kbyte/block``, ``inst/cycle``, ``sector``,
  ``sectors``, ``register/thread``. Prefixes K, M, G, T are **decimal**: ``launch__shared_mem_config_size``
  = 8.192 ``Kbyte`` is the 8192-byte configuration. Frequencies print as cycles per time
  (``cycle/usecond`` = MHz, ``cycle/nsecond`` = GHz); ``Hz``/``kHz``/``MHz``/``GHz`` and the short time
  words ``ns us ms s`` are read too (SI, unambiguous).

:func:`nvprof_value` and :func:`ncu_value` return ``(value in SI, dimension)``: dimension ``"s"``,
``"Hz"``, ``"%"``, ``"B"``, ``"B/s"``, ``"level"`` (a utilization level 0..10), ``""`` (a plain count
or ratio), or the ncu word ratio for the rest (``"inst/cycle"``, ``"sector/s"``, ``"inst"``...).
Anything else is refused with one :class:`BadInputError` naming the place (file, line, metric) and the
value as written. :data:`UNIT_TABLE` lists every unit and how it is handled (the importers' docs and
tests read it).
"""

from __future__ import annotations

import re

from calib.core.errors import BadInputError
from calib.importers._common import to_float

#: nvprof 11.8: unit -> (factor to SI, dimension); byte multiples binary (see the module docstring)
NVPROF_UNITS: dict[str, tuple[float, str]] = {
    "ns": (1e-9, "s"), "us": (1e-6, "s"), "ms": (1e-3, "s"), "s": (1.0, "s"),
    "B": (1.0, "B"), "KB": (2.0**10, "B"), "MB": (2.0**20, "B"), "GB": (2.0**30, "B"), "TB": (2.0**40, "B"),
    "B/s": (1.0, "B/s"), "KB/s": (2.0**10, "B/s"), "MB/s": (2.0**20, "B/s"), "GB/s": (2.0**30, "B/s"),
    "TB/s": (2.0**40, "B/s"), "%": (1.0, "%"),
    # system profiling columns (nvprof's "SM Clock (MHz)", "Power (mW)", "Temperature (C)", "Fan (%)")
    "Hz": (1.0, "Hz"), "kHz": (1e3, "Hz"), "MHz": (1e6, "Hz"), "GHz": (1e9, "Hz"), "mW": (1e-3, "W"), "W": (1.0, "W"),
    "C": (1.0, "C"), "": (1.0, ""),
}
#: nvprof utilization levels (the level number is printed in parentheses)
NVPROF_LEVELS = ("Idle", "Low", "Mid", "High", "Max")
#: nvprof markers of a value that is not one
NVPROF_NOT_A_VALUE = ("<OVERFLOW>", "<INVALID>")

#: ncu decimal prefixes
NCU_PREFIXES: dict[str, float] = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
#: ncu time words -> s (ncu 2022.3 writes nsecond/usecond/msecond/second)
NCU_TIME_WORDS: dict[str, float] = {"nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1.0,
                                    "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
#: ncu frequency words -> Hz
NCU_HZ_WORDS: dict[str, float] = {"hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9}
#: words ncu counts in (a prefix may scale them: Kinst, Msector, Gbyte); plural forms as ncu prints some
NCU_COUNT_WORDS: dict[str, str] = {
    "inst": "inst", "warp": "warp", "warps": "warp", "sector": "sector", "sectors": "sector", "request": "request",
    "requests": "request", "transaction": "transaction", "thread": "thread", "threads": "thread", "block": "block",
    "blocks": "block", "cycle": "cycle", "cycles": "cycle", "byte": "B", "bytes": "B", "register": "register",
    "wavefront": "wavefront", "instance": "instance", "sample": "sample", "SM": "SM", "bit": "bit",
}

_NUMBER = r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d*)?(?:[eE][-+]?\d+)?"
_NVPROF_VALUE = re.compile(rf"^(?P<num>{_NUMBER})(?P<unit>%|[KMGT]?B/s|[KMGT]?B|[num]?s)?$")
_LEVEL = re.compile(r"^(?P<name>[A-Za-z]+)\s*\((?P<n>\d+)\)$")


def nvprof_value(text: str, column_unit: str, where: str) -> tuple[float, str]:
    """``(SI value, dimension)`` of one nvprof field: a summary value with its unit inside
    (``50.000000%``, ``715.780258MB/s``), a trace value whose unit is the column's (``column_unit``, from
    the row under the header), or a utilization level (``High (8)`` -> (8, ``"level"``)).
    BadInputError naming ``where`` and the value for anything else (``<OVERFLOW>``, an unknown unit,
    a value with one unit under a column of another)."""
    shown = text.strip().strip('"')
    if shown in NVPROF_NOT_A_VALUE:
        raise BadInputError(f"{where}: {shown!r}: nvprof could not count this value (counter "
                            f"{'overflow' if shown == '<OVERFLOW>' else 'invalid'}); profile the kernel again")
    m = _LEVEL.match(shown)
    if m:
        level = int(m.group("n"))
        if m.group("name") not in NVPROF_LEVELS + ("Unknown",):
            raise BadInputError(f"{where}: {shown!r} is not an nvprof utilization level (Idle (0) .. Max (10))")
        if level > 10:
            raise BadInputError(f"{where}: {shown!r}: utilization level {level} outside 0 .. 10")
        return float(level), "level"
    m = _NVPROF_VALUE.match(shown.replace(" ", ""))
    if not m or not m.group("num") or m.group("num") in ".+-":
        raise BadInputError(f"{where}: {shown!r} is not a number with one of nvprof's units "
                            f"({', '.join(u for u in NVPROF_UNITS if u and u not in ('mW', 'W', 'C'))})")
    inner = m.group("unit") or ""
    col = column_unit.strip()
    if inner and col and inner != col:
        raise BadInputError(f"{where}: {shown!r} carries {inner!r} under a column in {col!r}")
    unit = inner or col
    if unit not in NVPROF_UNITS:
        raise BadInputError(f"{where}: {shown!r}: unit {unit!r} is not one nvprof prints "
                            f"({', '.join(u for u in NVPROF_UNITS if u)})")
    factor, dim = NVPROF_UNITS[unit]
    return to_float(m.group("num"), where, thousands=True, finite=True) * factor, dim


def _ncu_word(word: str) -> tuple[float, str] | None:
    """(factor, dimension) of one side of an ncu unit (``Gbyte``, ``usecond``, ``cycle``), or None."""
    if word.lower() in NCU_HZ_WORDS:
        return NCU_HZ_WORDS[word.lower()], "Hz"
    if word in NCU_TIME_WORDS:
        return NCU_TIME_WORDS[word], "s"
    for pre in sorted(NCU_PREFIXES, key=len, reverse=True):
        rest = word[len(pre):]
        if word.startswith(pre) and rest in NCU_COUNT_WORDS:
            return NCU_PREFIXES[pre], NCU_COUNT_WORDS[rest]
    return None


def ncu_unit(unit: str) -> tuple[float, str] | None:
    """(factor to SI, dimension) of an ncu unit string, or None when it is not one ncu's grammar gives."""
    u = unit.strip()
    if u in ("", "%"):
        return 1.0, u
    num, slash, den = u.partition("/")
    a = _ncu_word(num)
    if a is None:
        return None
    if not slash:
        return a
    b = _ncu_word(den)
    if b is None:
        return None
    factor = a[0] / b[0]
    if a[1] == "cycle" and b[1] == "s":
        return factor, "Hz"  # cycle/usecond = MHz
    if a[1] == "B" and b[1] == "s":
        return factor, "B/s"
    return factor, f"{a[1]}/{b[1]}"


def ncu_value(text: str, unit: str, where: str) -> tuple[float, str]:
    """``(SI value, dimension)`` of one ncu field with its Metric Unit (details page) or units-row
    entry (raw page); thousands separators (``1,234.50``) accepted. BadInputError naming ``where``, the
    unit and the value for a unit outside ncu's grammar or a value that is not a number."""
    shown = text.strip().strip('"')
    conv = ncu_unit(unit)
    if conv is None:
        raise BadInputError(f"{where}: {shown!r}: unit {unit.strip()!r} is not one ncu prints "
                            "([K|M|G|T]<inst|warp|sector|request|thread|block|cycle|byte|...>[/<word or "
                            "nsecond|usecond|msecond|second>], %, Hz multiples)")
    return to_float(shown, where, thousands=True, finite=True) * conv[0], conv[1]


#: every unit the two profilers print and what the importers do with it (``tests/test_import_formats.py``
#: converts each of these and checks the refusals)
UNIT_TABLE: tuple[tuple[str, str, str], ...] = (
    ("nvprof", "%", "percent (summary: inside the value, 50.000000%; trace: in the units row)"),
    ("nvprof", "B/s KB/s MB/s GB/s (TB/s)", "B/s x 1, 1024, 1024^2, 1024^3 (1024^4); the unit may change row to row"),
    ("nvprof", "B KB MB GB (TB)", "bytes x 1, 1024, 1024^2, 1024^3 (1024^4)"),
    ("nvprof", "ns us ms s", "seconds x 1e-9, 1e-6, 1e-3, 1"),
    ("nvprof", "Idle (0) .. Max (10)", "utilization level 0..10 (activities: level / 10)"),
    ("nvprof", "MHz (system profiling)", "Hz x 1e6"),
    ("nvprof", "<OVERFLOW> <INVALID>", "refused when the metric is used (one message: counter overflow/invalid)"),
    ("nvprof", "anything else (e.g. 'GiB/s', '12 furlongs')", "refused: file, line, metric and value named"),
    ("ncu", "%", "percent"),
    ("ncu", "[K|M|G|T]byte, [K|M|G|T]byte/second", "bytes, B/s (decimal prefixes: 1e3 .. 1e12)"),
    ("ncu", "nsecond usecond msecond second (ns us ms s)", "seconds"),
    ("ncu", "cycle/nsecond cycle/usecond cycle/msecond cycle/second", "Hz (GHz, MHz, kHz, Hz)"),
    ("ncu", "Hz kHz MHz GHz (any case)", "Hz"),
    ("ncu", "[K|M|G]inst, warp, sector(s), request, transaction, thread, block, cycle, register", "counts x prefix"),
    ("ncu", "inst/cycle, sector/nsecond, byte/block, register/thread, ...", "ratios: numerator and denominator converted"),
    ("ncu", "'' (no unit)", "plain number (launch__grid_size, ratios)"),
    ("ncu", "anything else", "refused: file, line, metric, unit and value named"),
)
