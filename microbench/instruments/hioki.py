"""HIOKI PW3335 (and 3334 / PW3336 / PW3337-class) power meters over RS-232C (CR LF, 9600 baud).

As the instrument speaks it (Communication Command Instruction Manual PW3335A985-01 p. 68; two
independent working scripts, GX20_PW3335.py and hioki3334; facts in
``shared/reference/instrument-protocol-facts.md``):

- **reply items** are separated by ``;`` in both working scripts (``U +110.14E+0;I +0.0000E+0;P
  +000.00E+0``, with headers; the meter starts with headers on); a scraped manual page shows ``,``.
  Unconfirmed, so the driver accepts both, strips item headers if present, and records which one the
  instrument used (``observed["separator"]``, logged at INFO, shown by ``calib doctor --serial``).
- **error values** are not readings: +-999.99E+9 over-range, +-888.88E+9 scaling error, +-777.77E+9
  no data. A reply carrying one is dropped and counted (``stats.instrument_errors``, by kind in
  ``stats.error_values``).
- **confirmation codes** (``:RS232:ANSW ON``, replies ending in ``;000``; a reply that is only a code
  is taken as ``000`` or ``;000``, both readings of the manuals' "replies like ;000") are documented for the
  3332/3334/PW3336/7; on the PW3335 the command may be a compatibility dummy. Setup never depends on
  them: after ``:HEAD OFF`` it waits ``confirm_timeout_s`` for a code; with none it checks every
  setting with ``:ERR?`` (``0`` = no error) instead (``*IDN?`` comes first: a query is always
  answered, so silence there means nothing is listening). Which one the meter did is
  ``observed["confirmation_codes"]``.

Setup (start and every reconnect): an empty line and a drain (clears a half-typed command and stale
replies), ``:RS232:ANSW ON``, ``:HEAD OFF``, ``*IDN?``, ``:VOLT:AUTO OFF``, ``:VOLT:RANG <v>``,
``:CURR:AUTO OFF``, ``:CURR:RANG <a>``; a refused setting raises :class:`InstrumentError` naming the
command. Each poll sends ``:MEAS? U,I,P``. The PW3335 updates its data every 200 ms, the default poll
period.
"""

from __future__ import annotations

import math
import re
from typing import Any

from microbench.instruments.base import (
    Command,
    ErrorValueReply,
    FrameError,
    InstrumentError,
    InstrumentErrorReply,
    SerialAnalyzer,
    strict_discrete_set,
)

#: PW3335 ranges
VOLT_RANGES_V = (6, 15, 30, 60, 150, 300, 600, 1000)
CURR_RANGES_A = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20)
#: error values (manual p. 68), magnitude -> kind
ERROR_VALUES = {999.99e9: "over-range", 888.88e9: "scaling error", 777.77e9: "no data"}

_NUM = r"[+-]?\d+(\.\d*)?([eE][+-]?\d+)?"
_CODE = re.compile(r"^(?P<payload>.*?)[;,]?(?P<code>\d{3})$")
_ITEM = re.compile(r"^(?P<head>[A-Za-z]+\s+)?(?P<num>\S+)$")


def error_value_kind(x: float) -> str | None:
    """The kind of HIOKI error value ``x`` is (``"over-range"``...), or None for a reading."""
    for v, kind in ERROR_VALUES.items():
        if math.isclose(abs(x), v, rel_tol=1e-6):
            return kind
    return None


class HiokiPW3335(SerialAnalyzer):
    """HIOKI PW3335-class. Columns: power_w, voltage_v, current_a.

    ``voltage_range_v`` and ``current_range_a``: fixed ranges (no autoranging), one of
    :data:`VOLT_RANGES_V` / :data:`CURR_RANGES_A`. ``confirm_timeout_s``: how long to wait for a
    confirmation code before falling back to ``:ERR?``.
    """

    protocol = "hioki"
    BAUDRATE = 9600
    POLLED = True
    VALUE_COLUMNS = ("power_w", "voltage_v", "current_a")
    COMMANDS = {
        "answer_on": Command(":RS232:ANSW ON", None, source="3334/PW3336 manuals (a dummy on the PW3335)"),
        "header_off": Command(":HEAD OFF", None, source="PW3335 manual"),
        "identity": Command("*IDN?", r"HIOKI,[^,;]+,[^,;]*,[^,;]*([;,]\d{3})?", source="IEEE 488.2"),
        "error": Command(":ERR?", r"\d+([;,]\d{3})?", source="PW3335 manual: error register, 0 = none"),
        "volt_auto_off": Command(":VOLT:AUTO OFF", None, source="PW3335 manual"),
        "volt_range": Command(":VOLT:RANG {v:g}", None, {"v": strict_discrete_set(VOLT_RANGES_V, "voltage range (V)")},
                              source="PW3335 manual"),
        "curr_auto_off": Command(":CURR:AUTO OFF", None, source="PW3335 manual"),
        "curr_range": Command(":CURR:RANG {a:g}", None, {"a": strict_discrete_set(CURR_RANGES_A, "current range (A)")},
                              source="PW3335 manual"),
        "measure": Command(":MEAS? U,I,P",
                           rf"(U\s*)?{_NUM}[;,](I\s*)?{_NUM}[;,](P\s*)?{_NUM}([;,]\d{{3}})?",
                           source="GX20_PW3335.py / hioki3334: 'U +110.14E+0;I +0.0000E+0;P +000.00E+0'"),
    }

    def __init__(self, port: str, name: str | None = None, *, voltage_range_v: float = 300,
                 current_range_a: float = 5, confirm_timeout_s: float = 0.3, **kw: Any):
        kw.setdefault("period_s", 0.2)
        self.COMMANDS["volt_range"].format(v=voltage_range_v)  # refuse a range the meter does not have, now
        self.COMMANDS["curr_range"].format(a=current_range_a)
        self.voltage_range_v, self.current_range_a = voltage_range_v, current_range_a
        self.confirm_timeout_s = confirm_timeout_s
        self.codes: bool | None = None  # does the meter send confirmation codes? (learned at setup)
        super().__init__(port, name, **kw)

    def no_reply_hint(self) -> str:
        return "wrong port or baud rate (9600), or not a null-modem cable?"

    def settings(self) -> dict[str, Any]:
        return {"voltage_range_v": self.voltage_range_v, "current_range_a": self.current_range_a,
                "items": ["U", "I", "P"]}

    # -- setup -----------------------------------------------------------------------------------
    @staticmethod
    def _split_code(text: str) -> tuple[str, str | None]:
        """(payload, code) of a reply; code None when the reply carries no confirmation code."""
        t = text.strip()
        if re.fullmatch(r"\d{3}", t):
            return "", t
        m = _CODE.match(t)
        if m and re.search(r"[;,]\d{3}$", t):  # a reading always has an exponent, never ends in 3 bare digits
            return m.group("payload"), m.group("code")
        return t, None

    @classmethod
    def _code_only(cls, reply: bytes) -> str | None:
        """The 3-digit code of a reply that is only a confirmation code, else None: ``000`` or ``;000`` (the
        manuals' "replies like ;000" read either way; a ``,`` where the meter separates items with commas)."""
        payload, code = cls._split_code(reply.decode("ascii", "replace"))
        return None if payload else code

    def _setting(self, name: str, **params: Any) -> None:
        """Send one setting; refused (code or ``:ERR?``) -> InstrumentError naming it."""
        text = self.tell(name, **params)
        if self.codes:
            reply = self.read_frame(1.0)
            if reply is None:
                raise InstrumentError(f"hioki on {self.port_path}: {text!r} answered no confirmation code within 1 s")
            code = self._code_only(reply)
            if code != "000":
                raise InstrumentError(f"hioki on {self.port_path}: {text!r} answered "
                                      + (f"error code {code!r}" if code else
                                         f"{reply.decode('ascii', 'replace').strip()!r}, not a confirmation code"))
            return
        self._check_error(text)

    def _check_error(self, after: str) -> None:
        payload, _ = self._split_code(self.ask("error"))
        if payload.strip() not in ("0", "000"):
            raise InstrumentError(f"hioki on {self.port_path}: the meter refused {after!r} (:ERR? = {payload.strip()})")

    def configure(self) -> None:
        self.write(b"\r\n")
        self.drain_input(quiet_s=0.05, max_s=0.5)
        self.tell("answer_on")
        # its own confirmation (if any) depends on the mode it was in: read it with the next one
        self.drain_input(quiet_s=0.05, max_s=0.5)
        text = self.tell("header_off")
        reply = self.read_frame(self.confirm_timeout_s)
        if reply is not None:
            code = self._code_only(reply)
            if code is None:
                raise InstrumentError(f"hioki on {self.port_path}: {text!r} answered "
                                      f"{reply.decode('ascii', 'replace').strip()!r}, neither a confirmation "
                                      "code (000 or ;000) nor silence (wrong protocol?)")
            if code != "000":
                raise InstrumentError(f"hioki on {self.port_path}: {text!r} answered error code {code!r}")
        self.identity, _ = self._split_code(self.ask("identity"))  # silence here: nothing is listening
        self.codes = reply is not None
        if self.codes:
            self.observe("confirmation_codes", True, "3-digit code after every command")
        else:
            self.observe("confirmation_codes", False, "no code after :HEAD OFF; settings checked with :ERR?")
            self._check_error(text)
        self._setting("volt_auto_off")
        self._setting("volt_range", v=self.voltage_range_v)
        self._setting("curr_auto_off")
        self._setting("curr_range", a=self.current_range_a)

    def query(self) -> bytes:
        return self.command_text("measure").encode("ascii") + self.EOL

    # -- replies ---------------------------------------------------------------------------------
    def parse(self, frame: bytes) -> dict[str, Any]:
        text = frame.decode("ascii", "replace").strip()
        payload, code = self._split_code(text)
        if code is not None and code != "000":
            raise InstrumentErrorReply(f"hioki: measurement query answered error code {code!r}")
        if code is not None and not payload:
            raise FrameError(f"hioki: confirmation code without data: {text!r}")
        sep = ";" if ";" in payload else ","
        fields = payload.split(sep)
        if len(fields) != 3:
            raise FrameError(f"hioki: expected 3 items (U,I,P), got {len(fields)}: {text!r}")
        values = []
        for want, f in zip("UIP", fields):
            m = _ITEM.match(f.strip())
            if m is None:
                raise FrameError(f"hioki: item {f!r} is not '<header> <number>' or '<number>': {text!r}")
            head = (m.group("head") or "").strip().upper()
            if head and head != want:
                raise FrameError(f"hioki: item header {head!r} where {want!r} was expected: {text!r}")
            try:
                values.append(float(m.group("num")))
            except ValueError:
                raise FrameError(f"hioki: item {want} {m.group('num')!r} is not a number") from None
        self.observe("separator", sep, "unconfirmed: working scripts show ';', a manual page ','")
        for item, x in zip("UIP", values):
            kind = error_value_kind(x)
            if kind:
                raise ErrorValueReply(f"hioki: {item} = {x:+.5g}, the meter's {kind} error value, not a reading", kind)
        u, i, p = values
        return {"power_w": p, "voltage_v": u, "current_a": i}
