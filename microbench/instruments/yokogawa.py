"""Yokogawa WT310 / WT210 digital power meters over RS-232 (IEEE 488.2 / SCPI-style commands).

Setup sent at start and after every reconnect (WT310 command tree, from yoko-tool ``_wt310.py`` /
``_yokobase.py`` and the WT310 communication manual, IM WT310-17EN)::

    :COMM:REM ON            remote mode
    *IDN?                   identity (recorded in the manifest)
    :COMM:HEAD OFF          replies without headers
    :NUM:FORM ASCII         numeric data as ASCII
    :NUM:NORM:NUM 3         three items:
    :NUM:NORM:ITEM1 U,<e>   voltage, element e
    :NUM:NORM:ITEM2 I,<e>   current
    :NUM:NORM:ITEM3 P,<e>   active power
    :RATE <rate>            update interval (e.g. 100MS)
    :INP:VOLT:AUTO OFF      fixed ranges: autoranging loses samples (SPEC forbids it)
    :INP:VOLT:RANG <v>V
    :INP:CURR:AUTO OFF
    :INP:CURR:RANG <a>A
    :STAT:FILT1 FALL        EESR bit 1 (UPD) set on the falling edge: "a new update is ready"

Every setup command is followed by ``:STAT:ERR?``; anything but ``0,...`` raises
:class:`InstrumentError` naming the command. Each poll sends
``:STAT:EESR?;:COMM:WAIT 1;:NUM:NORM:VAL?`` (clear the event register, wait for the next update,
read it), so every reply is a fresh update, never a stale repeat. The reply is ``<eesr>;<U>,<I>,<P>``.
``9.91E+37`` (NAN: no data) and ``9.9E+37`` (INF: over-range) are instrument error values: the
sample is dropped and counted in ``stats.instrument_errors``.

The WT210 (in its "488.2" mode, set on the front panel) uses the ``:MEAS``/``:CONF`` tree instead;
its command table below follows yoko-tool's ``_wt210.py`` naming and should be checked against the
WT210 manual before first use (no hardware was available to verify it).
"""

from __future__ import annotations

from typing import Any, ClassVar

from microbench.instruments.base import (
    FrameError,
    InstrumentError,
    InstrumentErrorReply,
    SerialAnalyzer,
    TextFramer,
    parse_numbers,
)

#: values a WT meter sends instead of a measurement
NAN_CODE, INF_CODE = 9.91e37, 9.9e37

#: ``:RATE`` settings; 50MS exists on the newer WT300E-series only (check the model's manual)
RATES_S = {"50MS": 0.05, "100MS": 0.1, "250MS": 0.25, "500MS": 0.5, "1S": 1.0, "2S": 2.0, "5S": 5.0,
           "10S": 10.0, "20S": 20.0}


class YokogawaWT310(SerialAnalyzer):
    """Yokogawa WT310 (also WT310E/WT330 element 1). Columns: power_w, voltage_v, current_a.

    ``update_rate`` (one of :data:`RATES_S` keys) also sets the poll period. ``voltage_range_v`` and
    ``current_range_a`` are fixed ranges (required: no autoranging).
    """

    protocol = "wt310"
    BAUDRATE = 9600
    POLLED = True
    VALUE_COLUMNS = ("power_w", "voltage_v", "current_a")
    DIALECT: ClassVar[dict[str, str]] = {
        "remote": ":COMM:REM ON", "header_off": ":COMM:HEAD OFF",
        "setup": ":NUM:FORM ASCII|:NUM:NORM:NUM 3|:NUM:NORM:ITEM1 U,{e}|:NUM:NORM:ITEM2 I,{e}|"
                 ":NUM:NORM:ITEM3 P,{e}|:RATE {rate}|:INP:VOLT:AUTO OFF|:INP:VOLT:RANG {v}V|"
                 ":INP:CURR:AUTO OFF|:INP:CURR:RANG {a}A|:STAT:FILT1 FALL",
        "read": ":NUM:NORM:VAL?", "read_wait": ":STAT:EESR?;:COMM:WAIT 1;:NUM:NORM:VAL?",
        "error": ":STAT:ERR?", "local": ":COMM:REM OFF",
    }

    def __init__(self, port: str, name: str | None = None, *, element: int = 1, update_rate: str = "100MS",
                 voltage_range_v: float = 300, current_range_a: float = 5, wait_update: bool = True,
                 **kw: Any):
        rate = update_rate.upper()
        if rate not in RATES_S:
            raise ValueError(f"update_rate {update_rate!r} not one of {sorted(RATES_S, key=RATES_S.get)}")
        kw.setdefault("period_s", RATES_S[rate])
        self.element, self.update_rate = int(element), rate
        self.voltage_range_v, self.current_range_a = voltage_range_v, current_range_a
        self.wait_update = wait_update
        super().__init__(port, name, **kw)

    def make_framer(self) -> TextFramer:
        return TextFramer(b"\n")

    def settings(self) -> dict[str, Any]:
        return {"element": self.element, "update_rate": self.update_rate, "voltage_range_v": self.voltage_range_v,
                "current_range_a": self.current_range_a, "wait_update": self.wait_update,
                "items": ["U", "I", "P"]}

    def _cmd(self, cmd: str) -> None:
        self.write(cmd.encode("ascii") + b"\r\n")

    def _ask(self, q: str, timeout_s: float = 1.0) -> str:
        self._cmd(q)
        reply = self.read_frame(timeout_s)
        if reply is None:
            raise InstrumentError(f"{self.protocol} on {self.port_path}: no reply to {q!r} within {timeout_s} s "
                                  "(wrong port, baud rate or cable? the WT needs a null-modem cable, 9600 8N1)")
        return reply.decode("ascii", "replace")

    def _check_error(self, after: str) -> None:
        err = self._ask(self.DIALECT["error"])
        if not err.lstrip().startswith("0"):
            raise InstrumentError(f"{self.protocol} on {self.port_path}: the instrument refused {after!r}: {err}")

    def _fmt_range(self, x: float) -> str:
        return f"{x:g}"

    def configure(self) -> None:
        self.drain_input(quiet_s=0.02, max_s=0.5)
        d = self.DIALECT
        self._cmd(d["remote"])
        self.identity = self._ask("*IDN?")
        self._cmd(d["header_off"])
        self._check_error(d["header_off"])
        for cmd in d["setup"].split("|"):
            cmd = cmd.format(e=self.element, rate=self.update_rate, v=self._fmt_range(self.voltage_range_v),
                             a=self._fmt_range(self.current_range_a))
            self._cmd(cmd)
            self._check_error(cmd)

    def query(self) -> bytes:
        q = self.DIALECT["read_wait"] if self.wait_update else self.DIALECT["read"]
        return q.encode("ascii") + b"\r\n"

    def parse(self, frame: bytes) -> dict[str, Any]:
        text = frame.decode("ascii", "replace")
        data = text.rsplit(";", 1)[-1]  # after the EESR reply when waiting for updates
        fields = data.split(",")
        if len(fields) != 3:
            raise FrameError(f"{self.protocol}: expected 3 values (U,I,P), got {len(fields)}: {text!r}")
        u, i, p = parse_numbers(fields, self.protocol)
        for x in (u, i, p):
            if x >= INF_CODE * 0.999:
                raise InstrumentErrorReply(f"{self.protocol}: instrument reports "
                                           f"{'no data (NAN)' if x >= NAN_CODE * 0.999 else 'over-range (INF)'}: {text!r}")
        return {"power_w": p, "voltage_v": u, "current_a": i}

    def shutdown(self) -> None:
        self._cmd(self.DIALECT["local"])


class YokogawaWT210(YokogawaWT310):
    """Yokogawa WT210 in 488.2 mode: ``:MEAS``/``:CONF`` command tree (see module docstring caveat)."""

    protocol = "wt210"
    DIALECT: ClassVar[dict[str, str]] = {
        "remote": ":COMM:REM ON", "header_off": ":COMM:HEAD OFF",
        "setup": ":MEAS:NORM:ITEM:PRES CLE|:MEAS:NORM:ITEM:V:ELEM{e} ON|:MEAS:NORM:ITEM:A:ELEM{e} ON|"
                 ":MEAS:NORM:ITEM:W:ELEM{e} ON|:SAMP:RATE {rate}|:CONF:VOLT:AUTO OFF|:CONF:VOLT:RANG {v}V|"
                 ":CONF:CURR:AUTO OFF|:CONF:CURR:RANG {a}A",
        "read": ":MEAS:NORM:VAL?", "read_wait": ":MEAS:NORM:VAL?",
        "error": ":STAT:ERR?", "local": ":COMM:REM OFF",
    }

    def __init__(self, port: str, name: str | None = None, *, update_rate: str = "250MS", **kw: Any):
        kw.setdefault("wait_update", False)
        super().__init__(port, name, update_rate=update_rate, **kw)

    def parse(self, frame: bytes) -> dict[str, Any]:
        # the WT210 returns the items in V, A, W order too
        return super().parse(frame)
