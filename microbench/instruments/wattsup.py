"""Watts up? PRO over its FTDI USB-serial link (115200 8N1).

As kjordahl/Watts-Up--logger (``wattsup.py``, ``samples/*.raw``) and the ``wattsup.c`` utility drive it
(facts in ``shared/reference/instrument-protocol-facts.md``).

Setup (start and every reconnect): ``#L,W,3,E,,<interval>;`` -- external logging, one record every
``interval`` whole seconds. Stop at exit: ``#L,R,0;`` ("stop logging and read time stamp";
``#L,W,0;`` does not stop it, and the meter would go on logging into a closed port). Records look like
``#d,-,18,<W*10>,<V*10>,<mA>,...;`` (kjordahl/Watts-Up--logger ``wattsup.py``): field 3 is the count of
data fields that follow; W = field[3]/10, V = field[4]/10, A = field[5]/1000. There is no checksum and
no timestamp: a record is accepted when it starts with ``#d``, has exactly 3 + count fields and its
numbers parse. Records start with ``#``, so a record cut short is abandoned at the next ``#`` and
costs only itself. Other record types (``#h`` header, replies to other commands) are rejected and
counted; the protocol has no error reply. 1 s resolution: only for long steady windows.
"""

from __future__ import annotations

from typing import Any

from microbench.instruments.base import Command, FrameError, SerialAnalyzer, TextFramer, parse_numbers, strict_range


class WattsUpPro(SerialAnalyzer):
    """Watts up? PRO. Columns: power_w, voltage_v, current_a."""

    protocol = "wattsup"
    BAUDRATE = 115200
    VALUE_COLUMNS = ("power_w", "voltage_v", "current_a")
    EOL = b";"
    COMMANDS = {
        "start": Command("#L,W,3,E,,{interval}", None, {"interval": strict_range(1, 3600, "logging interval (s)")},
                         source="Watts-Up--logger wattsup.py: external logging"),
        "stop": Command("#L,R,0", None, source="wattsup.c: stop logging and read time stamp"),
        "record": Command("", r"#d,-,18(,[^,;]*){18}", source="Watts-Up--logger samples/*.raw: 21 fields"),
    }

    def __init__(self, port: str, name: str | None = None, *, interval_s: int = 1, **kw: Any):
        if int(interval_s) != interval_s or interval_s < 1:
            raise ValueError(f"interval_s must be a whole number of seconds >= 1, got {interval_s!r}")
        self.interval_s = int(interval_s)
        kw.setdefault("period_s", float(self.interval_s))
        super().__init__(port, name, **kw)

    def make_framer(self) -> TextFramer:
        return TextFramer(b";", start=b"#")

    def settings(self) -> dict[str, Any]:
        return {"interval_s": self.interval_s, "mode": "external logging (#L,W,3,E)"}

    def configure(self) -> None:
        self.drain_input(quiet_s=0.02, max_s=0.3)
        self.tell("start", interval=self.interval_s)

    def shutdown(self) -> None:
        self.tell("stop")

    def parse(self, frame: bytes) -> dict[str, Any]:
        text = frame.decode("ascii", "replace")
        fields = text.split(",")
        if fields[0] != "#d":
            raise FrameError(f"wattsup: not a data record: {text[:40]!r}")
        try:
            count = int(fields[2])
        except (IndexError, ValueError):
            raise FrameError(f"wattsup: bad field count in {text[:40]!r}") from None
        if len(fields) != 3 + count or count < 3:
            raise FrameError(f"wattsup: record declares {count} fields but has {len(fields) - 3}")
        w10, v10, ma = parse_numbers(fields[3:6], "wattsup")
        return {"power_w": w10 / 10.0, "voltage_v": v10 / 10.0, "current_a": ma / 1000.0}
