"""Yokogawa WT310 / WT300-family and WT210 digital power meters over RS-232 (IEEE 488.2 / SCPI-style).

As working tools drive them (intel/yoko-tool ``_yokobase.py``, ``_wt310.py``, ``_wt210.py``;
mlcommons/power-dev; pycoolr; facts in ``shared/reference/instrument-protocol-facts.md``).

WT310 setup, sent at start and after every reconnect (:meth:`YokogawaWT310.configure`, over the commands
of :attr:`YokogawaWT310.COMMANDS`): ``*CLS`` twice, as yoko-tool does (an interrupted earlier query leaves
an error that a later ``:STAT:ERR?`` would blame on the wrong command), remote mode, the identity (recorded
in the manifest), the WT300 command set (a meter left in WT200-compatible mode rejects every ``:NUM`` /
``:INP`` command), replies without headers, ASCII items U, I, P of the element, the rate, fixed ranges,
and ``:STAT:FILT1 FALL`` (EESR bit 0 set when an update completes).

Every setting is followed by ``:STAT:ERR?``; anything but ``0,...`` raises :class:`InstrumentError`
naming the command. Each poll sends ``:COMM:WAIT 1;:NUM:NORM:VAL?;:STAT:EESR?`` (wait until an update
has completed since the last poll, read it, clear the event register), and the next query goes out as
soon as the reply is in, so the meter paces the polls: every update is read once, never repeated, and
none is skipped while the host keeps up. (yoko-tool clears the register first, ``:STAT:EESR?;:COMM:WAIT
1;...``; an update landing between a reply and the next query is then cleared unread, a skip.) ``9.91E+37`` (no data), ``9.9E+37``
(over-range) and ``-9.9E+37`` (negative over-range) are error values, not readings: the sample is
dropped and counted (``stats.error_values``).

WT210 (IEEE 488.2 mode, set on the front panel): the ``:CONF``/``:MEAS`` tree; values come in V, A, W
order; the same ``*CLS`` and EESR / ``:COMM:WAIT`` update sync. The rate is set with ``:SAMP:RATE`` in
bare seconds as yoko-tool does; whether a ``250MS`` suffix is accepted is unverified, so the driver
falls back to it only if bare seconds are refused, and records which one the meter took
(``observed["rate_format"]``, shown by ``calib doctor --serial``).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from microbench.instruments.base import (
    Command,
    ErrorValueReply,
    FrameError,
    InstrumentError,
    SerialAnalyzer,
    parse_numbers,
    strict_discrete_set,
)

#: values a WT meter sends instead of a measurement
NAN_CODE, INF_CODE = 9.91e37, 9.9e37

#: WT310 ``:RATE`` settings yoko-tool offers, s; 50MS exists on the newer WT300E models only
RATES_S = {"50MS": 0.05, "100MS": 0.1, "250MS": 0.25, "500MS": 0.5, "1S": 1.0, "2S": 2.0, "5S": 5.0}
#: WT210 ``:SAMP:RATE`` settings, s
WT210_RATES_S = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0)
#: ranges at crest factor 3 and 6 (the meter's error queue refuses a range of the other factor)
VOLT_RANGES_V = (7.5, 15, 30, 60, 75, 150, 300, 600)
CURR_RANGES_A = (0.25, 0.5, 1, 2, 2.5, 5, 10, 20)

_ERR_REPLY = r'[+-]?\d+,".*"'
_VALUES = r"([^,;]+,){2}[^,;]+"


def _rate_seconds(rate: str | float) -> float:
    """Seconds of a rate given as ``"250MS"``, ``"1S"``, ``"0.25"`` or a number."""
    if isinstance(rate, (int, float)):
        return float(rate)
    r = rate.strip().upper()
    if r in RATES_S:
        return RATES_S[r]
    try:
        if r.endswith("MS"):
            return float(r[:-2]) / 1000
        return float(r[:-1] if r.endswith("S") else r)
    except ValueError:
        raise ValueError(f"update_rate {rate!r}: give one of {', '.join(RATES_S)} or seconds") from None


def error_value_kind(x: float) -> str | None:
    """The kind of WT error value ``x`` is, or None for a reading."""
    if math.isclose(x, NAN_CODE, rel_tol=1e-4):
        return "no data (NAN)"
    if math.isclose(abs(x), INF_CODE, rel_tol=1e-4):
        return "over-range (INF)" if x > 0 else "negative over-range (-INF)"
    return None


class YokogawaWT310(SerialAnalyzer):
    """Yokogawa WT310 (also WT310E/WT330 element 1). Columns: power_w, voltage_v, current_a.

    ``update_rate`` (100MS ... 5S; 50MS on WT300E models) also sets the poll period.
    ``voltage_range_v`` and ``current_range_a`` are fixed ranges (required: no autoranging).
    """

    protocol = "wt310"
    BAUDRATE = 9600
    POLLED = True
    VALUE_COLUMNS = ("power_w", "voltage_v", "current_a")
    ITEMS_ORDER = ("U", "I", "P")
    COMMANDS: ClassVar[dict[str, Command]] = {
        "clear": Command("*CLS", None, source="IEEE 488.2; yoko-tool sends it twice"),
        "remote": Command(":COMM:REM ON", None, source="yoko-tool _yokobase.py"),
        "identity": Command("*IDN?", r"YOKOGAWA,[^,]+,[^,]*,[^,]*", source="IEEE 488.2"),
        "command_set": Command(":SYST:COMM:COMM WT300", None, source="yoko-tool _wt310.py"),
        "header_off": Command(":COMM:HEAD OFF", None, source="yoko-tool"),
        "format": Command(":NUM:FORM ASCII", None, source="yoko-tool, power-dev"),
        "n_items": Command(":NUM:NORM:NUM {n}", None, {"n": strict_discrete_set((3,), "item count")},
                           source="yoko-tool"),
        "item": Command(":NUM:NORM:ITEM{k} {fn},{e}", None,
                        {"k": strict_discrete_set((1, 2, 3), "item number"),
                         "fn": strict_discrete_set(("U", "I", "P"), "function"),
                         "e": strict_discrete_set((1, 2, 3), "element")}, source="yoko-tool"),
        "rate": Command(":RATE {rate}", None, {"rate": strict_discrete_set(tuple(RATES_S), "update rate")},
                        source="yoko-tool: 100MS..5S; 50MS on WT300E"),
        "volt_auto_off": Command(":INP:VOLT:AUTO OFF", None, source="yoko-tool"),
        "volt_range": Command(":INP:VOLT:RANG {v:g}V", None, {"v": strict_discrete_set(VOLT_RANGES_V, "voltage range (V)")},
                              source="yoko-tool"),
        "curr_auto_off": Command(":INP:CURR:AUTO OFF", None, source="yoko-tool"),
        "curr_range": Command(":INP:CURR:RANG {a:g}A", None, {"a": strict_discrete_set(CURR_RANGES_A, "current range (A)")},
                              source="yoko-tool"),
        "filter": Command(":STAT:FILT1 FALL", None, source="yoko-tool update sync"),
        "error": Command(":STAT:ERR?", _ERR_REPLY, source="yoko-tool"),
        "read": Command(":NUM:NORM:VAL?", _VALUES, source="yoko-tool"),
        "read_wait": Command(":COMM:WAIT 1;:NUM:NORM:VAL?;:STAT:EESR?", _VALUES + r";\d+",
                             source="yoko-tool update sync (:STAT:FILT1 FALL, :COMM:WAIT 1, :STAT:EESR?)"),
        "local": Command(":COMM:REM OFF", None, source="yoko-tool"),
    }

    def __init__(self, port: str, name: str | None = None, *, element: int = 1, update_rate: str | float = "100MS",
                 voltage_range_v: float = 300, current_range_a: float = 5, wait_update: bool = True,
                 **kw: Any):
        self.rate_s = self._check_rate(update_rate)
        kw.setdefault("period_s", self.rate_s)
        self.COMMANDS["volt_range"].format(v=voltage_range_v)  # refuse what the meter does not have, now
        self.COMMANDS["curr_range"].format(a=current_range_a)
        self.element = int(element)
        self.voltage_range_v, self.current_range_a = voltage_range_v, current_range_a
        self.wait_update = wait_update
        super().__init__(port, name, **kw)

    def _check_rate(self, update_rate: str | float) -> float:
        s = _rate_seconds(update_rate)
        names = {v: k for k, v in RATES_S.items()}
        if s not in names:
            raise ValueError(f"update_rate {update_rate!r} not one of {', '.join(RATES_S)} (10S and 20S are not "
                             "offered; 50MS only on WT300E models)")
        self.update_rate = names[s]
        return s

    def no_reply_hint(self) -> str:
        return "wrong port, baud rate or cable? the WT needs a null-modem cable, 9600 8N1"

    def settings(self) -> dict[str, Any]:
        return {"element": self.element, "update_rate": self.update_rate, "update_s": self.rate_s,
                "voltage_range_v": self.voltage_range_v, "current_range_a": self.current_range_a,
                "wait_update": self.wait_update, "items": list(self.ITEMS_ORDER)}

    def _check_error(self, after: str, hint: str = "") -> None:
        err = self.ask("error")
        if not err.lstrip().startswith("0"):
            raise InstrumentError(f"{self.protocol} on {self.port_path}: the instrument refused {after!r}: {err}"
                                  + (f" ({hint})" if hint else ""))

    def _setting(self, name: str, hint: str = "", **params: Any) -> None:
        self._check_error(self.tell(name, **params), hint)

    def _start_session(self) -> None:
        """Clear stale errors, remote mode, identity (common to the WT family)."""
        self.drain_input(quiet_s=0.02, max_s=0.5)
        self.tell("clear")
        self.tell("clear")
        self.tell("remote")
        self.identity = self.ask("identity")
        self._check_error(self.COMMANDS["remote"].text)

    def configure(self) -> None:
        self._start_session()
        self._setting("command_set", "a meter that does not know the WT300 command set")
        self._setting("header_off")
        self._setting("format")
        self._setting("n_items", n=3)
        for k, fn in enumerate(self.ITEMS_ORDER, start=1):
            self._setting("item", k=k, fn=fn, e=self.element)
        self._setting("rate", "50MS exists only on WT300E models" if self.update_rate == "50MS" else "",
                      rate=self.update_rate)
        self._setting("volt_auto_off")
        self._setting("volt_range", v=self.voltage_range_v)
        self._setting("curr_auto_off")
        self._setting("curr_range", a=self.current_range_a)
        self._setting("filter")

    def poll_period_s(self) -> float:
        # with the update sync the meter holds each reply until its next update: query again at once, so
        # no update is skipped whatever the meter's clock does against ours
        return 0.0 if self.wait_update else self.period_s

    def query(self) -> bytes:
        return self.command_text("read_wait" if self.wait_update else "read").encode("ascii") + self.EOL

    def parse(self, frame: bytes) -> dict[str, Any]:
        text = frame.decode("ascii", "replace")
        # with the update sync the event register's value comes along: "<U>,<I>,<P>;<eesr>"
        data = [part for part in text.split(";") if "," in part]
        fields = data[0].split(",") if len(data) == 1 else text.split(",")
        if len(fields) != 3:
            raise FrameError(f"{self.protocol}: expected 3 values (U,I,P), got {len(fields)}: {text!r}")
        values = parse_numbers(fields, self.protocol)
        for x in values:
            kind = error_value_kind(x)
            if kind:
                raise ErrorValueReply(f"{self.protocol}: instrument reports {kind}: {text!r}", kind)
        u, i, p = values
        return {"power_w": p, "voltage_v": u, "current_a": i}

    def shutdown(self) -> None:
        # a poll may still be waiting for its update: the next message interrupts it and the meter queues
        # -410; *CLS (processed right after) clears it, so the next session starts with an empty queue
        self.tell("clear")
        self.tell("local")


class YokogawaWT210(YokogawaWT310):
    """Yokogawa WT210 in IEEE 488.2 mode (``:CONF`` / ``:MEAS`` tree). ``update_rate``: 0.1 ... 5 s
    (``"250MS"``, ``"0.25"`` or 0.25)."""

    protocol = "wt210"
    COMMANDS: ClassVar[dict[str, Command]] = {
        **{k: YokogawaWT310.COMMANDS[k] for k in ("clear", "remote", "identity", "header_off", "filter", "error",
                                                  "local")},
        "items_clear": Command(":MEAS:NORM:ITEM:PRES CLE", None, source="yoko-tool _wt210.py"),
        "item": Command(":MEAS:NORM:ITEM:{fn}:ELEM{e} ON", None,
                        {"fn": strict_discrete_set(("V", "A", "W"), "function"),
                         "e": strict_discrete_set((1, 2, 3), "element")}, source="yoko-tool _wt210.py"),
        "rate_seconds": Command(":SAMP:RATE {s:g}", None, {"s": strict_discrete_set(WT210_RATES_S, "update rate (s)")},
                                source="yoko-tool _wt210.py: bare seconds"),
        "rate_suffix": Command(":SAMP:RATE {ms}MS", None, source="unverified reading: a 250MS-style suffix"),
        "volt_auto_off": Command(":CONF:VOLT:AUTO OFF", None, source="yoko-tool _wt210.py"),
        "volt_range": Command(":CONF:VOLT:RANG {v:g}V", None, {"v": strict_discrete_set(VOLT_RANGES_V, "voltage range (V)")},
                              source="yoko-tool _wt210.py"),
        "curr_auto_off": Command(":CONF:CURR:AUTO OFF", None, source="yoko-tool _wt210.py"),
        "curr_range": Command(":CONF:CURR:RANG {a:g}A", None, {"a": strict_discrete_set(CURR_RANGES_A, "current range (A)")},
                              source="yoko-tool _wt210.py"),
        "read": Command(":MEAS:NORM:VAL?", _VALUES, source="yoko-tool _wt210.py: V, A, W"),
        "read_wait": Command(":COMM:WAIT 1;:MEAS:NORM:VAL?;:STAT:EESR?", _VALUES + r";\d+",
                             source="yoko-tool update sync on the WT210"),
    }

    def __init__(self, port: str, name: str | None = None, *, update_rate: str | float = "250MS", **kw: Any):
        super().__init__(port, name, update_rate=update_rate, **kw)

    def _check_rate(self, update_rate: str | float) -> float:
        s = _rate_seconds(update_rate)
        if not any(math.isclose(s, r) for r in WT210_RATES_S):
            raise ValueError(f"update_rate {update_rate!r}: the WT210 updates every "
                             f"{', '.join(f'{r:g}' for r in WT210_RATES_S)} s")
        self.update_rate = f"{s:g}S"
        return s

    def configure(self) -> None:
        self._start_session()
        self._setting("header_off")
        self._setting("items_clear")
        for fn in ("V", "A", "W"):
            self._setting("item", fn=fn, e=self.element)
        self._set_rate()
        self._setting("volt_auto_off")
        self._setting("volt_range", v=self.voltage_range_v)
        self._setting("curr_auto_off")
        self._setting("curr_range", a=self.current_range_a)
        self._setting("filter")

    def _set_rate(self) -> None:
        """Bare seconds (what yoko-tool sends); a ``250MS`` suffix only if the meter refuses them."""
        first = self.tell("rate_seconds", s=self.rate_s)
        err = self.ask("error")
        if err.lstrip().startswith("0"):
            self.observe("rate_format", "seconds", f"{first!r} accepted")
            return
        second = self.tell("rate_suffix", ms=int(round(self.rate_s * 1000)))
        err2 = self.ask("error")
        if err2.lstrip().startswith("0"):
            self.observe("rate_format", "suffix", f"{first!r} refused ({err}), {second!r} accepted")
            return
        raise InstrumentError(f"{self.protocol} on {self.port_path}: the instrument refused both {first!r} ({err}) "
                              f"and {second!r} ({err2})")

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "items": ["V", "A", "W"], "rate_format": self.observed.get("rate_format")}
