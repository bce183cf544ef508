"""HIOKI PW3335-class power meters over RS-232C, with execution confirmation codes.

Setup (sent at start and after every reconnect): an empty line, then drain (clears a half-typed
command and stale replies, as the public ``hioki3334`` script does), then::

    :RS232:ANSW ON        append a confirmation code to every reply (";000" = executed)
    :HEAD OFF             replies without headers
    *IDN?                 identity
    :VOLT:AUTO OFF        fixed ranges (no autoranging)
    :VOLT:RANG <v>
    :CURR:AUTO OFF
    :CURR:RANG <a>

Each setup command must answer ``000``; any other code raises :class:`InstrumentError` naming the
command and the code. Each poll sends ``:MEAS? U,I,P``; the reply is ``<U>,<I>,<P>;000``. A reply
whose code is not ``000`` (or a bare code without data) is an instrument error: the sample is
dropped and counted. The meaning of each non-zero code is in the instrument's Communication Command
Instruction Manual; this driver reports the number. The PW3335 updates its data every 200 ms,
the default poll period.
"""

from __future__ import annotations

from typing import Any

from microbench.instruments.base import (
    FrameError,
    InstrumentError,
    InstrumentErrorReply,
    SerialAnalyzer,
    TextFramer,
    parse_numbers,
)


class HiokiPW3335(SerialAnalyzer):
    """HIOKI PW3335 / PW3336 / PW3337 / 3334-class. Columns: power_w, voltage_v, current_a."""

    protocol = "hioki"
    BAUDRATE = 9600
    POLLED = True
    VALUE_COLUMNS = ("power_w", "voltage_v", "current_a")

    def __init__(self, port: str, name: str | None = None, *, voltage_range_v: float = 300,
                 current_range_a: float = 5, **kw: Any):
        kw.setdefault("period_s", 0.2)
        self.voltage_range_v, self.current_range_a = voltage_range_v, current_range_a
        super().__init__(port, name, **kw)

    def make_framer(self) -> TextFramer:
        return TextFramer(b"\n")

    def settings(self) -> dict[str, Any]:
        return {"voltage_range_v": self.voltage_range_v, "current_range_a": self.current_range_a,
                "items": ["U", "I", "P"], "confirmation_codes": True}

    def _send(self, cmd: str, timeout_s: float = 1.0) -> str:
        """Send one command and return the reply payload; raise unless the code is 000."""
        self.write(cmd.encode("ascii") + b"\r\n")
        reply = self.read_frame(timeout_s)
        if reply is None:
            raise InstrumentError(f"hioki on {self.port_path}: no confirmation for {cmd!r} within {timeout_s} s "
                                  "(wrong port or baud rate, or confirmation codes off?)")
        text = reply.decode("ascii", "replace")
        payload, _, code = text.rpartition(";") if ";" in text else ("", "", text)
        if code.strip() != "000":
            raise InstrumentError(f"hioki on {self.port_path}: {cmd!r} answered error code {code.strip()!r}")
        return payload

    def configure(self) -> None:
        self.write(b"\r\n")
        self.drain_input(quiet_s=0.05, max_s=0.5)
        self.write(b":RS232:ANSW ON\r\n")  # its own confirmation depends on the previous mode: drain it
        self.drain_input(quiet_s=0.05, max_s=0.5)
        self._send(":HEAD OFF")
        self.identity = self._send("*IDN?")
        for cmd in (":VOLT:AUTO OFF", f":VOLT:RANG {self.voltage_range_v:g}", ":CURR:AUTO OFF",
                    f":CURR:RANG {self.current_range_a:g}"):
            self._send(cmd)

    def query(self) -> bytes:
        return b":MEAS? U,I,P\r\n"

    def parse(self, frame: bytes) -> dict[str, Any]:
        text = frame.decode("ascii", "replace")
        payload, sep, code = text.rpartition(";")
        if not sep:
            if text.strip().isdigit():
                raise InstrumentErrorReply(f"hioki: measurement query answered error code {text.strip()!r}")
            raise FrameError(f"hioki: reply without confirmation code: {text!r}")
        if code.strip() != "000":
            raise InstrumentErrorReply(f"hioki: measurement query answered error code {code.strip()!r}")
        fields = payload.split(",")
        if len(fields) != 3:
            raise FrameError(f"hioki: expected 3 values (U,I,P), got {len(fields)}: {text!r}")
        u, i, p = parse_numbers(fields, "hioki")
        return {"power_w": p, "voltage_v": u, "current_a": i}
