"""A generic line-based source: any instrument or bridge that prints one CSV line per sample.

Each line holds ``len(columns)`` numbers separated by ``delimiter`` (default ``,``), ended by LF or
CRLF. Lines that are not all numbers (a header, a banner) are rejected and counted; a line starting
with ``ERR`` is counted as an instrument error. A partial line untouched for ``stale_partial_s`` is
dropped (it would otherwise glue onto the next line and spoil it too). An optional
``start_command`` is sent at start and after every reconnect.
"""

from __future__ import annotations

import re
from typing import Any

from microbench.instruments.base import (
    FrameError,
    InstrumentErrorReply,
    SerialAnalyzer,
    TextFramer,
    parse_numbers,
)

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_RESERVED = {"t_mono_s", "t_wall_s", "segment", "resync", "latency_s"}


class CsvLineSource(SerialAnalyzer):
    """Line-based CSV analyzer. ``columns`` name the values, with units (default ``("power_w",)``)."""

    protocol = "csv"
    BAUDRATE = 115200

    def __init__(self, port: str, name: str | None = None, *, columns: tuple[str, ...] | list[str] = ("power_w",),
                 delimiter: str = ",", start_command: bytes | None = None, stale_partial_s: float = 0.05,
                 **kw: Any):
        cols = tuple(columns)
        if not cols:
            raise ValueError("csv source needs at least one column")
        for c in cols:
            if not _NAME.match(c) or c in _RESERVED:
                raise ValueError(f"csv column name {c!r} is invalid: use lower-case names with units (e.g. power_w) "
                                 f"and none of {sorted(_RESERVED)}")
        self.VALUE_COLUMNS = cols  # type: ignore[misc]
        self.delimiter = delimiter
        self.start_command = start_command
        self.stale_partial_s = stale_partial_s
        super().__init__(port, name, **kw)

    def make_framer(self) -> TextFramer:
        return TextFramer(b"\n", stale_s=self.stale_partial_s)

    def settings(self) -> dict[str, Any]:
        return {"columns": list(self.VALUE_COLUMNS), "delimiter": self.delimiter,
                "start_command": self.start_command.decode("ascii", "replace") if self.start_command else None,
                "stale_partial_s": self.stale_partial_s}

    def configure(self) -> None:
        if self.start_command:
            self.write(self.start_command)

    def parse(self, frame: bytes) -> dict[str, Any]:
        text = frame.decode("ascii", "replace").strip()
        if text[:3].upper() == "ERR":
            raise InstrumentErrorReply(f"csv: instrument error line {text[:60]!r}")
        fields = text.split(self.delimiter)
        if len(fields) != len(self.VALUE_COLUMNS):
            raise FrameError(f"csv: expected {len(self.VALUE_COLUMNS)} fields, got {len(fields)}: {text[:60]!r}")
        return dict(zip(self.VALUE_COLUMNS, parse_numbers(fields, "csv")))
