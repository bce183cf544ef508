"""Power-analyzer emulators on real pseudo-terminals, written from the instruments' documented behaviour.

Source: ``shared/reference/instrument-protocol-facts.md`` (the makers' host code, manuals and working
third-party loggers). Nothing here is taken from the drivers in :mod:`microbench.instruments` -- this
module does not import them -- so a mistake shared by a driver and its test double can still fail a
test. Each emulator behaves as its source says the instrument does, awkward parts included, and its
class docstring says how: :class:`PowerSensor3Emulator`, :class:`YokogawaEmulator` (WT310, WT310E,
WT210), :class:`HiokiEmulator` (PW3335), :class:`WattsUpEmulator` (Watts up? PRO), :class:`CsvEmulator`.

Each emulator owns the master side of an ``os.openpty()`` pair; the driver opens the slave, either by
its tty name (:attr:`PtyEmulator.path`) or through a symlink ``link`` (like a udev symlink of a USB
adapter). Every data frame is numbered (``seq``) and, in counting mode, the number is encoded in the
values so a test can tell exactly which frames reached the driver.

Faults (:meth:`PtyEmulator.inject`), applied to the next frame:

``"garbage"``   the frame is sent whole, followed by line-noise bytes
``"truncate"``  only part of the frame is sent (its seq is in ``corrupted``)
``"error"``     the instrument's error reply or error value replaces the frame (seq in ``corrupted``)

:meth:`PtyEmulator.unplug` closes the pty and removes the symlink; :meth:`PtyEmulator.replug` makes a
new pty behind the same path. Mains-powered meters keep their state (settings, error queue, logging
mode) across an unplugged cable; the bus-powered PowerSensor3 comes back in its power-on state.

``python -m microbench.testing.emulators PROTOCOL [options]`` serves one emulator on a pty and prints
its device path, to try ``calib log --serial PATH --protocol PROTOCOL`` without hardware.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import math
import os
import select
import signal
import struct
import sys
import threading
import time
import tty
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

GARBAGE = b"\x00\xff\xfe#!$\x7f\x81"


class PtyEmulator:
    """Base: pty plumbing, the emit loop, scheduled output, fault injection and frame accounting.

    ``link``: optional symlink to the slave tty (None: use :attr:`path`, the tty itself).
    ``frame_period_s``: streaming period (streaming instruments) or data update period (polled ones).
    """

    STREAMING = True
    #: an unplugged cable cuts the instrument's power (bus-powered) -> power-on state at replug
    POWER_OFF_ON_UNPLUG = False

    def __init__(self, link: str | os.PathLike | None = None, frame_period_s: float = 0.05):
        self.link = Path(link) if link is not None else None
        self.frame_period_s = frame_period_s
        self.seq = 0
        self.sent: list[int] = []  # seqs sent whole
        self.sent_t: list[float] = []  # host monotonic time each of them was written, s
        self.corrupted: list[int] = []  # seqs truncated or replaced by an error reply
        self.faults: list[str] = []
        self.config_log: list[bytes] = []  # every command received (all connections)
        self.connections = 0
        self._fault: str | None = None
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._paused = threading.Event()
        self._rx = bytearray()
        self._scheduled: list[tuple[float, bytes]] = []  # (host monotonic due time, bytes)
        self._retime_at: float | None = None
        self.master = -1
        self.slave = -1
        self._tty = ""
        self._plug()
        self._thread = threading.Thread(target=self._run, name=type(self).__name__, daemon=True)
        self._thread.start()

    @property
    def path(self) -> str:
        """The device path a driver opens: the symlink if there is one, else the slave tty."""
        return str(self.link) if self.link is not None else self._tty

    # -- pty plumbing --------------------------------------------------------------------------
    def _plug(self) -> None:
        master, slave = os.openpty()
        tty.setraw(slave)  # no echo, no line editing, before the driver even opens it
        os.set_blocking(master, False)
        self.master, self.slave = master, slave
        self._tty = os.ttyname(slave)
        if self.link is not None:
            tmp = self.link.with_name(self.link.name + ".tmp")
            if tmp.is_symlink():
                tmp.unlink()
            os.symlink(self._tty, tmp)
            os.replace(tmp, self.link)
        self.connections += 1

    def unplug(self, power_off: bool | None = None) -> None:
        """Pull the cable: the pty disappears and the path no longer exists. ``power_off`` (default:
        :attr:`POWER_OFF_ON_UNPLUG`) also resets the instrument to its power-on state."""
        with self._lock:
            self._paused.set()
            if self.link is not None and self.link.is_symlink():
                self.link.unlink()
            for fd in (self.master, self.slave):
                with contextlib.suppress(OSError):
                    os.close(fd)
            self.master = self.slave = -1
            self._rx.clear()
            self._scheduled.clear()
            self.on_disconnect()
            if self.POWER_OFF_ON_UNPLUG if power_off is None else power_off:
                self.on_reset()

    def replug(self) -> None:
        """Plug it back: a new pty at the same path."""
        with self._lock:
            self._plug()
            self._paused.clear()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2.0)
        with self._lock:
            if self.master >= 0:
                self.unplug()

    def __enter__(self) -> "PtyEmulator":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- I/O -----------------------------------------------------------------------------------
    def send(self, data: bytes) -> None:
        """Write all of ``data`` to the driver (waits while the pty buffer is full)."""
        view = memoryview(data)
        while view and not self._stop.is_set():
            fd = self.master
            if fd < 0:
                return
            try:
                n = os.write(fd, view)
                view = view[n:]
            except BlockingIOError:
                select.select([], [fd], [], 0.01)
            except OSError as e:
                if e.errno in (errno.EIO, errno.EBADF):
                    return
                raise

    def send_later(self, delay_s: float, data: bytes) -> None:
        """Send ``data`` after ``delay_s`` (from the emulator's loop)."""
        with self._lock:
            self._scheduled.append((time.monotonic() + delay_s, data))
            self._scheduled.sort(key=lambda x: x[0])

    def inject(self, fault: str) -> int:
        """Apply ``fault`` ("garbage", "truncate", "error") to the next frame; returns the seq of the first
        frame that may carry it (every frame before it was made without the fault)."""
        if fault not in ("garbage", "truncate", "error"):
            raise ValueError(f"unknown fault {fault!r}")
        with self._lock:
            self._fault = fault
            return self.seq

    def send_frame(self, prefix: bytes = b"") -> None:
        """Send the next data frame (after ``prefix``), applying a pending fault."""
        with self._lock:
            fault, self._fault = self._fault, None
            seq = self.next_seq()
            if fault:
                self.faults.append(fault)
            if fault == "error":
                self.corrupted.append(seq)
                self.send(prefix + self.error_reply())
                return
            frame = prefix + self.frame(seq)
            if fault == "truncate":
                self.corrupted.append(seq)
                self.send(frame[: max(1, len(frame) * 2 // 5)])
                return
            self.send(frame)
            self.sent.append(seq)
            self.sent_t.append(time.monotonic())
            if fault == "garbage":
                self.send(GARBAGE)

    def next_seq(self) -> int:
        seq = self.seq
        self.seq += 1
        return seq

    # -- protocol hooks ----------------------------------------------------------------------------
    def decode(self, values: dict[str, Any]) -> int:
        """The seq a driver row carries (inverse of :meth:`frame`'s encoding)."""
        return seq_of(values["power_w"])

    def frame(self, seq: int) -> bytes:
        raise NotImplementedError

    def error_reply(self) -> bytes:
        raise NotImplementedError

    def commands(self, data: bytes, end: bytes = b"\n") -> list[bytes]:
        """The commands completed by ``data`` (bytes from the driver, buffered until ``end``), ``end`` included."""
        *done, rest = bytes(self._rx + data).split(end)
        self._rx = bytearray(rest)
        return [c + end for c in done]

    def on_bytes(self, data: bytes) -> None:
        """Commands from the driver (default: CR LF / LF terminated lines, see :meth:`on_command`)."""
        for cmd in self.commands(data):
            line = cmd[:-1].rstrip(b"\r")
            self.config_log.append(line)
            self.on_command(line)

    def on_command(self, line: bytes) -> None:
        pass

    def on_reset(self) -> None:
        """Back to power-on state."""

    def on_disconnect(self) -> None:
        """The cable was pulled (whatever the instrument was sending is lost)."""

    def on_tick(self) -> None:
        """Called every frame period (streaming instruments send a frame here)."""
        if self.STREAMING and self.streaming:
            self.send_frame()

    streaming = False

    # -- loop ------------------------------------------------------------------------------------------
    def _run(self) -> None:
        t_next = time.monotonic()
        while not self._stop.is_set():
            if self._paused.is_set():
                time.sleep(0.01)
                t_next = time.monotonic()
                continue
            if self._retime_at is not None:  # the period changed: the next tick one new period from then
                t_next, self._retime_at = self._retime_at, None
            now = time.monotonic()
            due = t_next if not self._scheduled else min(t_next, self._scheduled[0][0])
            timeout = min(0.05, max(0.0, due - now))  # short: an unplug closes the fd select() waits on
            fd = self.master
            try:
                r, _, _ = select.select([fd], [], [], timeout)
            except (OSError, ValueError):
                time.sleep(0.005)
                continue
            if r:
                try:
                    data = os.read(fd, 4096)
                except BlockingIOError:
                    data = b""
                except OSError:  # EIO: no slave side open right now
                    time.sleep(0.005)
                    data = b""
                if data:
                    with self._lock:
                        self.on_bytes(data)
            with self._lock:
                while self._scheduled and self._scheduled[0][0] <= time.monotonic():
                    self.send(self._scheduled.pop(0)[1])
            if time.monotonic() >= t_next:
                with self._lock:
                    if not self._paused.is_set():
                        self.on_tick()
                t_next += self.frame_period_s
                if t_next < time.monotonic() - self.frame_period_s:
                    t_next = time.monotonic()


def seq_of(power_w: float) -> int:
    """The frame number the text emulators encode as power (power_w = 100 + seq / 100)."""
    return int(round((power_w - 100.0) * 100))


def unwrap_mod(values: list[int], modulus: int = 1024) -> list[int]:
    """Undo ``x % modulus`` for an increasing sequence with steps smaller than ``modulus``."""
    out: list[int] = []
    for v in values:
        out.append(v if not out else out[-1] + (v - out[-1]) % modulus)
    return out


def _power(seq: int) -> float:
    return 100.0 + seq / 100.0


# ------------------------------------------------------------------------------------------------
# CSV bridge
# ------------------------------------------------------------------------------------------------

class CsvEmulator(PtyEmulator):
    """Prints ``<power_w>,<voltage_v>`` lines continuously (no configuration needed)."""

    def __init__(self, link: str | os.PathLike | None = None, frame_period_s: float = 0.05, columns: int = 2,
                 power_fn: Callable[[float], float] | None = None):
        self.columns = columns
        self.power_fn = power_fn  # optional: power as a function of wall time (alignment tests)
        super().__init__(link, frame_period_s)
        self.streaming = True  # a CSV bridge streams as soon as it is powered

    def frame(self, seq: int) -> bytes:
        p = self.power_fn(time.time()) if self.power_fn else _power(seq)
        vals = [f"{p:.4f}", "12.000", "8.333"][: self.columns]
        return (",".join(vals) + "\r\n").encode()

    def error_reply(self) -> bytes:
        return b"ERR overload\r\n"


# ------------------------------------------------------------------------------------------------
# Watts up? PRO (kjordahl/Watts-Up--logger wattsup.py, samples/*.raw; wattsup.c)
# ------------------------------------------------------------------------------------------------

class WattsUpEmulator(PtyEmulator):
    """Watts up? PRO: ``#L,W,3,E,,<interval>;`` starts external logging, ``#L,R,0;`` stops it
    ("stop logging and read time stamp"); ``#L,W,0;`` is accepted but does not stop logging.

    The meter is mains powered: logging goes on while the USB cable is out. ``frame_period_s``
    stands for the record interval (scaled down so tests are fast).
    """

    def __init__(self, link: str | os.PathLike | None = None, frame_period_s: float = 0.05):
        self.interval_s: int | None = None
        super().__init__(link, frame_period_s)

    def on_bytes(self, data: bytes) -> None:
        for cmd in (c.strip() for c in self.commands(data, b";")):
            self.config_log.append(cmd)
            fields = cmd.rstrip(b";").split(b",")
            if fields[:4] == [b"#L", b"W", b"3", b"E"] and len(fields) >= 6:
                self.interval_s = int(fields[5] or 1)
                self.streaming = True
            elif fields[:3] == [b"#L", b"R", b"0"]:
                self.streaming = False
            # "#L,W,0;" writes logging settings; it does not stop external logging

    def decode(self, values: dict[str, Any]) -> int:
        return int(round(values["power_w"] * 10)) - 1000

    def frame(self, seq: int) -> bytes:
        # 18 data fields: W*10, V*10, A*1000, WH, Cost, WH/Mo, Cost/Mo, Wmax, Vmax, Amax, Wmin, Vmin,
        # Amin, PF, DC, PC, HZ, VA -- 21 fields with "#d", "-", "18"
        w10 = 1000 + seq  # the record's resolution is 0.1 W
        v10 = 1200
        ma = int(round(w10 / 10 / 120.0 * 1000))
        rest = ["0"] * 10 + ["100", "0", "0", "600", str(int(round(w10 / 10)))]
        return ("#d,-,18," + ",".join([str(w10), str(v10), str(ma)] + rest) + ";\r\n").encode()

    def error_reply(self) -> bytes:
        # the protocol has no error reply: a record of another type (the header record) stands in
        return b"#h,-,18,W,V,A,WH,Cost,WH/Mo,Cost/Mo,Wmax,Vmax,Amax,Wmin,Vmin,Amin,PF,DC,PC,HZ,VA;\r\n"


# ------------------------------------------------------------------------------------------------
# Yokogawa WT310 / WT310E / WT210 (intel/yoko-tool; mlcommons/power-dev; coolr-hpc/pycoolr)
# ------------------------------------------------------------------------------------------------

NAN_VALUE, INF_VALUE = 9.91e37, 9.9e37

_ERRORS = {
    -113: '-113,"Undefined header"',
    -222: '-222,"Data out of range"',
    -224: '-224,"Illegal parameter value"',
    -410: '-410,"Query INTERRUPTED"',
}


class YokogawaEmulator(PtyEmulator):
    """A Yokogawa WT310 (``model="WT310"``), WT310E (accepts ``:RATE 50MS``) or WT210.

    - An error queue read with ``:STAT:ERR?`` (``0,"No error"`` when empty) and cleared by ``*CLS``;
      it survives an unplugged cable, as the meter stays on.
    - A query whose reply is still pending when the next message arrives, or when the cable is pulled,
      leaves ``-410,"Query INTERRUPTED"`` in the queue.
    - WT310: ``command_set="WT200"`` (a meter left in WT200-compatible mode) rejects ``:NUM`` and
      ``:INP`` commands with -113 until ``:SYST:COMM:COMM WT300``.
    - ``:RATE`` accepts 100MS, 250MS, 500MS, 1S, 2S, 5S (plus 50MS on the WT310E), else -224.
      The WT210 takes ``:SAMP:RATE`` in the forms ``rate_forms`` names: ``"seconds"`` (bare seconds,
      0.1 ... 5, what yoko-tool sends: the default) and/or ``"suffix"`` (``250MS``: unverified on
      hardware, so refused by default).
    - Updates happen every rate interval times ``time_scale`` (default 1; 1.1 or 0.9 stand for a meter
      whose clock runs slow or fast against the host's). With
      ``:STAT:FILT1 FALL`` each update sets EESR bit 0; ``:STAT:EESR?`` reads and clears it;
      ``:COMM:WAIT 1`` holds the rest of the message until the bit is set.
    - Value query: the latest update's U, I, P (WT310 ``:NUM:NORM:VAL?`` in ITEM order; WT210
      ``:MEAS:NORM:VAL?`` always V, A, W); frame ``seq`` = update number, so repeated or skipped
      updates show in the driver's rows.
    - The "error" fault answers a value query with the error value ``error_value`` (``9.91E+37`` no data,
      as default; ``9.9E+37`` / ``-9.9E+37`` over-range) in every item.
    """

    STREAMING = False
    VOLT_RANGES = (15, 30, 60, 150, 300, 600)
    CURR_RANGES = (0.5, 1, 2, 5, 10, 20)
    RATES_WT310 = {"100MS": 0.1, "250MS": 0.25, "500MS": 0.5, "1S": 1.0, "2S": 2.0, "5S": 5.0}
    RATES_WT210_S = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0)

    def __init__(self, link: str | os.PathLike | None = None, frame_period_s: float | None = None,
                 model: str = "WT310", command_set: str = "WT300", rate_forms: Sequence[str] = ("seconds",),
                 time_scale: float = 1.0):
        self.model = model.upper()
        if self.model not in ("WT310", "WT310E", "WT210"):
            raise ValueError(f"model {model!r}: one of WT310, WT310E, WT210")
        self.rate_forms = tuple(rate_forms)
        self.time_scale = time_scale
        self.command_set_at_power_on = command_set.upper()
        self.error_value = NAN_VALUE  # what the "error" fault sends
        self.on_reset()
        self._period_override = frame_period_s
        super().__init__(link, frame_period_s or self.rate_s * time_scale)

    @property
    def wt210(self) -> bool:
        return self.model == "WT210"

    def on_reset(self) -> None:
        self.errors: list[int] = []
        self.command_set = self.command_set_at_power_on
        self.remote = False
        self.filt1 = "NEV"
        self.eesr = 0
        self.rate_s = 0.25
        self.vrange: float | None = None
        self.crange: float | None = None
        self.items: dict[int, str] = {1: "U", 2: "I", 3: "P"}
        self.n_items = 3
        self.update = 0
        self.seq_of_update = -1
        self._held: tuple[list[str], list[str]] | None = None  # message parts after :COMM:WAIT, replies so far
        self._last_t_update = time.monotonic()

    def on_disconnect(self) -> None:
        if self._held is not None:  # the reply the driver was waiting for is lost with the cable
            self._held = None
            self.errors.append(-410)

    # -- updates ---------------------------------------------------------------------------------
    def on_tick(self) -> None:
        self.update += 1
        self.seq = max(self.seq, self.update)
        if self.filt1 == "FALL":
            self.eesr |= 1
        if self._held is not None and self.eesr & 1:
            parts, replies = self._held
            self._held = None
            self._process(parts, replies)

    def _set_rate(self, rate_s: float) -> None:
        self.rate_s = rate_s
        if self._period_override is None:
            self.frame_period_s = rate_s * self.time_scale
            self._retime_at = time.monotonic() + self.frame_period_s  # updates restart at the new interval

    # -- commands --------------------------------------------------------------------------------
    def on_command(self, line: bytes) -> None:
        text = line.decode("ascii", "replace").strip()
        if not text:
            return
        if self._held is not None:  # a new message before the previous query was answered
            self._held = None
            self.errors.append(-410)
        self._process([p.strip() for p in text.split(";")], [])

    def _process(self, parts: list[str], replies: list[str]) -> None:
        while parts:
            part = parts.pop(0)
            p = part.upper()
            if not p:
                continue
            if not p.startswith((":", "*")):
                p = ":" + p
            if p.startswith(":COMM:WAIT"):
                if not self.eesr & 1:
                    self._held = (parts, replies)
                    return
                continue
            r = self._handle(p)
            if r is not None:  # a reply, or "__FRAME__" for the value query
                replies.append(r)
        if not replies:
            return
        if "__FRAME__" in replies:  # a message with the value query: its reply is the data frame
            k = replies.index("__FRAME__")
            self._affix = (";".join(replies[:k] + [""]) if k else "", ";".join([""] + replies[k + 1:]))
            self.send_frame()
            self._affix = ("", "")
        else:
            self.send(";".join(replies).encode() + b"\r\n")

    def _err(self, code: int) -> None:
        self.errors.append(code)

    def _handle(self, p: str) -> str | None:  # noqa: C901 - one branch per documented command
        head, _, arg = p.partition(" ")
        arg = arg.strip()
        if head == "*IDN?":
            return f"YOKOGAWA,{self.model},C2QE12345,F1.03"
        if head == "*CLS":
            self.errors.clear()
            self.eesr = 0
            return None
        if head == ":STAT:ERR?":
            return _ERRORS[self.errors.pop(0)] if self.errors else '0,"No error"'
        if head == ":STAT:EESR?":
            v, self.eesr = self.eesr, 0
            return str(v)
        if head == ":STAT:FILT1":
            if arg not in ("RISE", "FALL", "BOTH", "NEV", "NEVER"):
                return self._err(-224)
            self.filt1 = arg
            return None
        if head in (":COMM:REM", ":COMM:REMOTE"):
            self.remote = arg in ("ON", "1")
            return None
        if head in (":COMM:HEAD", ":COMM:HEADER"):
            return None
        if self.wt210:
            return self._handle_wt210(head, arg)
        if head == ":SYST:COMM:COMM":
            if arg not in ("WT300", "WT200"):
                return self._err(-224)
            self.command_set = arg
            return None
        if head == ":SYST:COMM:COMM?":
            return self.command_set
        if head.startswith((":NUM", ":INP")) and self.command_set != "WT300":
            return self._err(-113)  # WT200-compatible mode knows neither tree
        if head == ":NUM:FORM":
            return None if arg in ("ASCII", "ASC", "FLOAT") else self._err(-224)
        if head == ":NUM:NORM:NUM":
            self.n_items = int(arg)
            return None
        if head.startswith(":NUM:NORM:ITEM"):
            k = int(head[len(":NUM:NORM:ITEM"):])
            fn = arg.split(",")[0]
            if fn not in ("U", "I", "P"):
                return self._err(-224)
            self.items[k] = fn
            return None
        if head == ":NUM:NORM:VAL?":
            return "__FRAME__"
        if head == ":RATE":
            rates = dict(self.RATES_WT310)
            if self.model == "WT310E":
                rates["50MS"] = 0.05
            if arg not in rates:
                return self._err(-224)
            self._set_rate(rates[arg])
            return None
        if head == ":RATE?":
            return next((k for k, v in self.RATES_WT310.items() if v == self.rate_s), "50MS")
        if head in (":INP:VOLT:AUTO", ":INP:CURR:AUTO"):
            return None
        if head in (":INP:VOLT:RANG", ":INP:CURR:RANG"):
            return self._set_range(head, arg)
        return self._err(-113)

    def _handle_wt210(self, head: str, arg: str) -> str | None:
        if head.startswith(":MEAS:NORM:ITEM"):
            return None
        if head == ":MEAS:NORM:VAL?":
            return "__FRAME__"
        if head == ":SAMP:RATE":
            val: float | None = None
            with contextlib.suppress(ValueError):
                if "seconds" in self.rate_forms:
                    val = float(arg)
            if val is None and "suffix" in self.rate_forms and arg.endswith("MS"):
                val = float(arg[:-2]) / 1000
            if val is None or not any(math.isclose(val, r) for r in self.RATES_WT210_S):
                return self._err(-224)
            self._set_rate(val)
            return None
        if head in (":CONF:VOLT:AUTO", ":CONF:CURR:AUTO"):
            return None
        if head in (":CONF:VOLT:RANG", ":CONF:CURR:RANG"):
            return self._set_range(head, arg)
        return self._err(-113)

    def _set_range(self, head: str, arg: str) -> None:
        volt = ":VOLT:" in head
        try:
            val = float(arg.rstrip("VA"))
        except ValueError:
            return self._err(-224)
        if val not in (self.VOLT_RANGES if volt else self.CURR_RANGES):
            return self._err(-222)
        setattr(self, "vrange" if volt else "crange", val)
        return None

    # -- data ------------------------------------------------------------------------------------
    def next_seq(self) -> int:
        self.seq = self.update + 1
        return self.update

    _affix = ("", "")  # replies of the other queries of the message, before and after the values

    def frame(self, seq: int) -> bytes:
        u, p = 230.0, _power(seq)
        vals = {"U": u, "I": p / u, "P": p}
        order = ["U", "I", "P"] if self.wt210 else [self.items.get(k, "U") for k in range(1, self.n_items + 1)]
        return (self._affix[0] + ",".join(f"{vals[f]:.4E}" for f in order) + self._affix[1]).encode() + b"\r\n"

    def error_reply(self) -> bytes:
        e = f"{self.error_value:.2E}"
        return (self._affix[0] + f"{e},{e},{e}" + self._affix[1]).encode() + b"\r\n"


# ------------------------------------------------------------------------------------------------
# HIOKI PW3335 (manual PW3335A985-01 p. 68; GX20_PW3335.py; hioki3334 scripts)
# ------------------------------------------------------------------------------------------------

#: the PW3335's error values (manual p. 68): kind -> value
HIOKI_ERROR_VALUES = {"over-range": 999.99e9, "scaling error": 888.88e9, "no data": 777.77e9}


def _hioki_num(x: float) -> str:
    """A number the way the PW3335 prints it: sign, 5 digits, engineering exponent (``+110.14E+0``)."""
    if x == 0:
        return "+000.00E+0"
    exp = 3 * math.floor(math.log10(abs(x)) / 3)
    mant = x / 10 ** exp
    if abs(mant) >= 999.995:
        exp += 3
        mant /= 1000
    return f"{'+' if mant >= 0 else '-'}{abs(mant):06.2f}E{exp:+d}"


class HiokiEmulator(PtyEmulator):
    """HIOKI PW3335 on RS-232 (CR LF, 9600 baud).

    ``separator``: between reply items (``";"`` as two working scripts show; ``","`` as a scraped manual
    page shows). Headers are on at power-on (``U +110.14E+0;I +0.0000E+0;P +000.00E+0``) until
    ``:HEAD OFF``. ``answer_codes``: False (PW3335: ``:RS232:ANSW`` is a compatibility dummy, nothing
    is confirmed) or True (3334/PW3336-like: after ``:RS232:ANSW ON`` every message is answered with a
    3-digit code, ``000`` = executed, appended to a query's reply). ``code_prefix``: what precedes the
    code of a reply without data, ``""`` (``000``) or ``";"`` (``;000``: the other reading of the manuals'
    "replies like ;000"; shared/reference/instrument-protocol-facts.md). Errors are kept for ``:ERR?``
    (``0`` = none; 1 = command error, 2 = execution/parameter error). The "error" fault sends an
    error value (``error_value``: over-range +999.99E+9 by default) instead of a reading.
    Each ``:MEAS?`` reply is a new frame (the instrument's 200 ms data update is not modelled).
    """

    STREAMING = False
    VOLT_RANGES = (6, 15, 30, 60, 150, 300, 600, 1000)
    CURR_RANGES = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20)

    def __init__(self, link: str | os.PathLike | None = None, frame_period_s: float = 0.2, separator: str = ";",
                 answer_codes: bool = False, code_prefix: str = ""):
        if separator not in (";", ","):
            raise ValueError("separator must be ';' or ','")
        if code_prefix not in ("", ";"):
            raise ValueError("code_prefix must be '' or ';'")
        self.separator = separator
        self.answer_codes = answer_codes
        self.code_prefix = code_prefix
        self.error_value = HIOKI_ERROR_VALUES["over-range"]
        self.on_reset()
        super().__init__(link, frame_period_s)

    def on_reset(self) -> None:
        self.headers = True
        self.answ = False
        self.err = 0
        self.vrange: float | None = None
        self.crange: float | None = None

    def on_tick(self) -> None:
        pass  # every reply is a fresh measurement (the 200 ms update is not modelled)

    def on_command(self, line: bytes) -> None:
        p = line.decode("ascii", "replace").strip().upper()
        if not p:
            return
        code, payload = 0, None
        head, _, arg = p.partition(" ")
        if head in (":RS232:ANSW", ":RS232:ANSWER"):
            self.answ = self.answer_codes and arg == "ON"  # a dummy on the PW3335
        elif head in (":HEAD", ":HEADER"):
            self.headers = arg == "ON"
        elif head == "*IDN?":
            payload = "HIOKI,PW3335,123456789,V1.00"
        elif head == ":ERR?":
            payload, self.err = str(self.err), 0
        elif head in (":VOLT:AUTO", ":CURR:AUTO"):
            code = 0 if arg in ("ON", "OFF") else 2
        elif head in (":VOLT:RANG", ":CURR:RANG"):
            volt = head.startswith(":VOLT")
            try:
                val = float(arg)
            except ValueError:
                val = float("nan")
            if val in (self.VOLT_RANGES if volt else self.CURR_RANGES):
                setattr(self, "vrange" if volt else "crange", val)
            else:
                code = 2
        elif head == ":MEAS?" and arg.replace(" ", "") == "U,I,P":
            self.send_frame()
            return
        else:
            code = 1
        if code:
            self.err = code
        if self.answ:
            self.send(((payload + ";") if payload is not None else self.code_prefix).encode() + f"{code:03d}".encode()
                      + b"\r\n")
        elif payload is not None:
            self.send(payload.encode() + b"\r\n")

    def _items(self, values: dict[str, float]) -> bytes:
        """A reply of items (with their headers while headers are on; the code ``;000`` after ``:RS232:ANSW ON``)."""
        text = self.separator.join((f"{k} " if self.headers else "") + _hioki_num(v) for k, v in values.items())
        return (text + (";000" if self.answ else "") + "\r\n").encode()

    def frame(self, seq: int) -> bytes:
        u, p = 230.0, _power(seq)
        return self._items({"U": u, "I": p / u, "P": p})

    def error_reply(self) -> bytes:
        # over-range on the voltage input: U and P carry the error value
        return self._items({"U": self.error_value, "I": 0.4348, "P": self.error_value})


# ------------------------------------------------------------------------------------------------
# PowerSensor3 (nlesc-recruit/PowerSensor3 firmware + host library, commit c5017f9)
# ------------------------------------------------------------------------------------------------

SENTINEL = b"\xff\x3f"
#: V per ADC level (3.3 V reference, 10-bit ADC)
V_PER_LEVEL = 3.3 / 1023
#: sensitivities of the current sensor types, V/A (psconfig.cc: A per level 0.0269, 0.0516, 0.129, 0.194)
SENSITIVITY_V_PER_A = {"MLX10": 0.120, "MLX20": 0.0625, "MLX50": 0.025, "MLX75": 0.0167}
#: gain of a voltage channel (about 0.0355 V per level)
VOLTAGE_GAIN = 0.091


@dataclass
class SensorRecord:
    """One EEPROM record (41 bytes packed: type[16], pairName[16], float32 vref, float32 sensitivity,
    uint8 inUse)."""

    type: str
    pair_name: str
    vref_v: float
    sensitivity: float  # V/A (current) or a unitless gain (voltage)
    in_use: bool

    def pack(self) -> bytes:
        t, n = self.type.encode(), self.pair_name.encode()
        if len(t) > 15 or len(n) > 15:
            raise ValueError("type and pair name hold at most 15 characters (NUL-terminated in 16 bytes)")
        return struct.pack("<16s16sffB", t, n, self.vref_v, self.sensitivity, int(self.in_use))


def default_eeprom() -> list[SensorRecord]:
    """Two pairs in use (MLX10 and MLX20 current sensors at the documented vrefs 1.636 V and 1.62247 V,
    each with a voltage channel of gain 0.091) and two unwired pairs."""
    return [
        SensorRecord("MLX10", "PCIe 8-pin", 1.636, SENSITIVITY_V_PER_A["MLX10"], True),
        SensorRecord("voltage", "PCIe 8-pin", 0.0, VOLTAGE_GAIN, True),
        SensorRecord("MLX20", "ATX 12V", 1.62247, SENSITIVITY_V_PER_A["MLX20"], True),
        SensorRecord("voltage", "ATX 12V", 0.0, VOLTAGE_GAIN, True),
        SensorRecord("MLX10", "", 1.65, SENSITIVITY_V_PER_A["MLX10"], False),
        SensorRecord("voltage", "", 0.0, VOLTAGE_GAIN, False),
        SensorRecord("MLX10", "", 1.65, SENSITIVITY_V_PER_A["MLX10"], False),
        SensorRecord("voltage", "", 0.0, VOLTAGE_GAIN, False),
    ]


def _words(ids: np.ndarray, levels: np.ndarray, markers: np.ndarray) -> np.ndarray:
    """(..., 2) bytes of words ``1iiiaaaa 0mbbbbbb``."""
    out = np.empty(levels.shape + (2,), dtype=np.uint8)
    out[..., 0] = 0x80 | (ids << 4) | (levels >> 6)
    out[..., 1] = (markers << 6) | (levels & 0x3F)
    return out


class PowerSensor3Emulator(PtyEmulator):
    """PowerSensor3 over USB CDC.

    Streams, after ``S``, one frame per ``frame_us`` µs of device time -- a timestamp word (id 7,
    marker bit set, ``micros() & 0x3FF``) and the 8 sensor words -- in USB bursts of ``burst``
    frames. ``X`` stops streaming and, 100 ms later, sends ``FF 3F`` twice (streaming or not). ``M``
    sets the marker bit in sensor 0's next word. ``R`` sends the 8 EEPROM records (41 bytes each), the
    next one after each byte the host sends, and ``D`` after the host acknowledged the last one.

    Levels come from physics: ``level = round((vref + x * sensitivity) / (3.3 / 1023) + noise)`` with
    ``x`` the current (A) or voltage (V) of the pair (``currents_a``, ``voltages_v``) and gaussian noise of
    ``noise_levels`` (dither); channels not in use float (random levels). :meth:`true_power_w` is the
    power of the pairs in use. ``count=True`` replaces pair 0's voltage level by ``seq % 1024`` so rows
    reveal which frames arrived (:meth:`decode`). :meth:`drop_frames` loses frames in the device's USB
    queue (device time runs on, nothing is sent). Bus powered: an unplug is a power cycle.
    """

    POWER_OFF_ON_UNPLUG = True

    def __init__(self, link: str | os.PathLike | None = None, frame_us: int = 500, burst: int = 20,
                 eeprom: Sequence[SensorRecord] | None = None, currents_a: Sequence[float] = (6.0, 10.0, 0.0, 0.0),
                 voltages_v: Sequence[float] = (12.0, 12.0, 0.0, 0.0), noise_levels: float = 0.7,
                 count: bool = False, seed: int = 3):
        self.frame_us = int(frame_us)
        self.burst = int(burst)
        self.eeprom = list(eeprom) if eeprom is not None else default_eeprom()
        self.currents_a = list(currents_a)
        self.voltages_v = list(voltages_v)
        self.noise_levels = noise_levels
        self.count = count
        self.rng = np.random.default_rng(seed)
        self.device_us = 0
        self._mark = False
        self._drop = 0
        self.dropped = 0
        self._dump: int | None = None  # index of the next EEPROM record to send while dumping
        self._stream_t0 = 0.0
        self._frames_since_start = 0
        super().__init__(link, self.frame_us * self.burst / 1e6)

    # -- physics ---------------------------------------------------------------------------------
    def pairs_in_use(self) -> list[int]:
        return [p for p in range(4) if self.eeprom[2 * p].in_use and self.eeprom[2 * p + 1].in_use]

    def true_power_w(self) -> float:
        """Power of the pairs in use (current x voltage), W."""
        return sum(self.currents_a[p] * self.voltages_v[p] for p in self.pairs_in_use())

    def _levels(self, n: int) -> np.ndarray:
        out = np.empty((n, 8), dtype=np.int64)
        for s, rec in enumerate(self.eeprom):
            pair = s // 2
            if not rec.in_use:
                out[:, s] = self.rng.integers(0, 1024, n)  # an unwired input floats
                continue
            x = self.currents_a[pair] if s % 2 == 0 else self.voltages_v[pair]
            volts = rec.vref_v + x * rec.sensitivity
            lv = volts / V_PER_LEVEL + self.rng.normal(0.0, self.noise_levels, n)
            out[:, s] = np.clip(np.rint(lv), 0, 1023)
        return out

    # -- commands --------------------------------------------------------------------------------
    def on_bytes(self, data: bytes) -> None:
        for b in data:
            c = bytes((b,))
            self.config_log.append(c)
            if self._dump is not None:  # any byte acknowledges the record just sent
                if self._dump < 8:
                    self.send(self.eeprom[self._dump].pack())
                    self._dump += 1
                else:
                    self.send(b"D")
                    self._dump = None
                continue
            if c == b"S":
                if not self.streaming:
                    self._stream_t0 = time.monotonic()
                    self._frames_since_start = 0
                self.streaming = True
            elif c == b"X":
                self.streaming = False
                self.send_later(0.1, SENTINEL + SENTINEL)
            elif c == b"M":
                self._mark = True
            elif c == b"R":
                self.send(self.eeprom[0].pack())
                self._dump = 1

    def on_reset(self) -> None:
        self.streaming = False
        self._dump = None
        self._mark = False

    def drop_frames(self, n: int) -> None:
        """Lose the next ``n`` frames in the device's USB send queue (device time runs on)."""
        with self._lock:
            self._drop += int(n)

    # -- frames ----------------------------------------------------------------------------------
    def on_tick(self) -> None:
        if not self.streaming:
            return
        # device time is real time: send every frame due since streaming started (a late tick sends more)
        due = int((time.monotonic() - self._stream_t0) * 1e6 // self.frame_us) - self._frames_since_start
        n = max(0, min(due, 50 * self.burst))
        self._frames_since_start += max(0, due)
        if due > n:  # frames beyond the cap are lost, as in a full USB queue (device time runs on)
            self.device_us += (due - n) * self.frame_us
            self.seq += due - n
            self.dropped += due - n
        if n == 0:
            return
        if self._fault is None and not self._mark and not self._drop:
            self.send(self._frames(n))
            return
        for _ in range(n):
            if self._drop:
                self._drop -= 1
                self.dropped += 1
                self.device_us += self.frame_us
                self.next_seq()
                continue
            self.send_frame()
            if not self.streaming:
                return

    def _frames(self, n: int) -> bytes:
        """``n`` whole frames (vectorised), accounted as sent."""
        seqs = np.arange(self.seq, self.seq + n)
        self.seq += n
        out = self._encode(seqs)
        self.sent.extend(int(s) for s in seqs)
        self.sent_t.extend([time.monotonic()] * n)
        return out

    def _encode(self, seqs: np.ndarray) -> bytes:
        """The frames of ``seqs``, each ``frame_us`` of device time after the previous one (the marker bit
        asked for with ``M`` on the first)."""
        n = len(seqs)
        t_us = self.device_us + self.frame_us * np.arange(1, n + 1)
        self.device_us = int(t_us[-1])
        levels = self._levels(n)
        if self.count:
            levels[:, 1] = seqs % 1024
        marker = np.zeros((n, 8), dtype=np.int64)
        if self._mark:
            marker[0, 0] = 1
            self._mark = False
        ts = _words(np.full(n, 7), t_us & 0x3FF, np.ones(n, dtype=np.int64))
        sw = _words(np.broadcast_to(np.arange(8), (n, 8)), levels, marker)
        return np.concatenate([ts[:, None, :], sw], axis=1).tobytes()

    def frame(self, seq: int) -> bytes:
        return self._encode(np.array([seq]))

    def error_reply(self) -> bytes:
        # the frame due now is never sent; the device stops streaming as after X (the sentinel pair) and
        # streams again on "S"
        self.device_us += self.frame_us
        self.streaming = False
        return SENTINEL + SENTINEL

    def decode(self, values: dict[str, Any]) -> int:
        """seq modulo 1024 (count mode: pair 0's voltage level), from the row's ``voltage0_v``."""
        rec = self.eeprom[1]
        return int(round((values["voltage0_v"] * rec.sensitivity + rec.vref_v) / V_PER_LEVEL))


# ------------------------------------------------------------------------------------------------
# End-to-end fault scenario (used by the tests and tests/benchmarks/bench_logger.py)
# ------------------------------------------------------------------------------------------------

#: protocol -> (emulator factory(link), driver keyword arguments) for the fault scenario
SCENARIOS: dict[str, tuple[Callable[[Path], PtyEmulator], dict[str, Any]]] = {
    "csv": (lambda link: CsvEmulator(link, 0.05), {"columns": ("power_w", "voltage_v"), "stale_partial_s": 0.02}),
    "wattsup": (lambda link: WattsUpEmulator(link, 0.05), {}),
    "wt310": (lambda link: YokogawaEmulator(link), {"update_rate": "100MS"}),
    "wt210": (lambda link: YokogawaEmulator(link, model="WT210"), {"update_rate": "100MS"}),
    "hioki": (lambda link: HiokiEmulator(link, 0.05), {"period_s": 0.05}),
    "powersensor3": (lambda link: PowerSensor3Emulator(link, count=True), {"average_frames": 1}),
}


def run_fault_scenario(protocol: str, workdir: str | os.PathLike, frames_per_phase: int = 4,
                       outage_s: float = 0.3) -> dict[str, Any]:
    """Run the driver of ``protocol`` against its emulator on a pty through: clean frames, garbage,
    a truncated frame, an instrument error reply, and an unplug/replug. Returns per-fault accounting:

    ``lost_whole``: frames the emulator sent whole that never became a row (target 0);
    ``corrupted``: frames the fault itself destroyed (1 for truncate/error, 0 for garbage);
    for the unplug: ``in_flight`` (sent before the cable was pulled, never received), ``outage``
    (sent after replug but before the driver had reconnected: flushed as stale on open) and
    ``lost_after_reconnect`` (target 0).
    """
    from microbench.instruments import open_analyzer  # the driver under test (the harness, not the emulator)

    make_emu, kw = SCENARIOS[protocol]
    link = Path(workdir) / f"{protocol}.tty"
    emu = make_emu(link)
    drv = open_analyzer(str(link), protocol, **kw)
    rows: list[Any] = []

    def seqs() -> list[int]:
        xs = [emu.decode(r.values) for r in rows]
        return unwrap_mod(xs) if protocol == "powersensor3" else xs

    def received_beyond(seq: int) -> bool:
        return max(seqs(), default=-1) >= seq

    def pump_until(cond: Callable[[], bool], timeout_s: float = 10.0) -> None:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            rows.extend(drv.read())
            if cond():
                return
            time.sleep(0.01)
        raise TimeoutError(f"{protocol}: scenario step timed out ({drv.stats.to_dict()})")

    windows: list[tuple[str, int, int]] = []
    try:
        drv.start()
        pump_until(lambda: len(rows) >= frames_per_phase)
        for k, fault in enumerate(("garbage", "truncate", "error"), start=1):
            s0 = emu.inject(fault)
            pump_until(lambda: len(emu.faults) >= k)  # applied
            s_applied = emu.seq
            pump_until(lambda: received_beyond(s_applied + frames_per_phase))
            windows.append((fault, s0, emu.seq))
        s_unplug = emu.seq
        t_unplug = time.monotonic()
        emu.unplug()
        time.sleep(outage_s)
        t_replug = time.monotonic()
        emu.replug()
        pump_until(lambda: drv.stats.reconnects >= 1 and received_beyond(s_unplug), timeout_s=15.0)
        s_end = emu.seq
        pump_until(lambda: received_beyond(s_end + frames_per_phase))
    finally:
        t_close = time.monotonic()
        drv.close()
        rows.extend(drv.read())
        emu.close()
    xs = seqs()
    got = set(xs)
    sent = list(zip(emu.sent, emu.sent_t))
    report: dict[str, Any] = {"protocol": protocol, "rows": len(rows), "duplicates": len(xs) - len(got),
                              "corrupted_received": sorted(got & set(emu.corrupted)),
                              "resync_rows": sum(int(r.values["resync"]) for r in rows),
                              "stats": drv.stats.to_dict(), "commands_received": len(emu.config_log),
                              "connections": emu.connections, "faults": {}}
    for fault, s0, s1 in windows:
        window = [s for s, _ in sent if s0 <= s < s1]
        report["faults"][fault] = {"lost_whole": sum(1 for s in window if s not in got),
                                   "corrupted": sum(1 for s in emu.corrupted if s0 <= s < s1)}
    back = drv.stats.gaps[0]["back_t_mono_s"] if drv.stats.gaps else float("inf")
    last = windows[-1][2]
    report["faults"]["unplug"] = {
        "in_flight": sum(1 for s, t in sent if s >= last and t <= t_unplug and s not in got),
        "sent_last_50ms": sum(1 for _, t in sent if t_unplug - 0.05 < t <= t_unplug),
        "outage": sum(1 for s, t in sent if t_replug <= t <= back and s not in got),
        "lost_after_reconnect": sum(1 for s, t in sent if back + 0.05 < t < t_close - 0.05 and s not in got),
        "reconnect_s": back - t_replug,
    }
    return report


# ------------------------------------------------------------------------------------------------
# python -m microbench.testing.emulators PROTOCOL
# ------------------------------------------------------------------------------------------------

def _make(protocol: str, a: argparse.Namespace) -> PtyEmulator:
    link = a.link
    if protocol == "csv":
        return CsvEmulator(link, a.period or 0.1)
    if protocol == "wattsup":
        return WattsUpEmulator(link, a.period or 1.0)
    if protocol in ("wt310", "wt210"):
        model = "WT210" if protocol == "wt210" else a.model.upper()
        return YokogawaEmulator(link, a.period, model=model, command_set=a.command_set,
                                rate_forms=("seconds", "suffix") if a.rate_suffix_ok else ("seconds",))
    if protocol == "hioki":
        return HiokiEmulator(link, a.period or 0.2, separator=a.separator, answer_codes=a.answer_codes)
    if protocol == "powersensor3":
        return PowerSensor3Emulator(link, currents_a=a.current_a, voltages_v=a.voltage_v)
    raise ValueError(protocol)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve one emulator on a pseudo-terminal until Ctrl-C; print its device path first."""
    p = argparse.ArgumentParser(prog="python -m microbench.testing.emulators",
                                description="Serve a power-analyzer emulator on a pseudo-terminal and print its "
                                            "device path (then: calib log --serial PATH --protocol PROTOCOL).")
    p.add_argument("protocol", choices=["csv", "hioki", "powersensor3", "wattsup", "wt210", "wt310"])
    p.add_argument("--link", help="also make this symlink to the device (like a udev rule)")
    p.add_argument("--period", type=float, help="data update / record period, s (default: the instrument's)")
    p.add_argument("--model", default="wt310", choices=["wt310", "wt310e"], help="wt310: model (wt310e accepts 50MS)")
    p.add_argument("--command-set", default="WT300", choices=["WT300", "WT200"],
                   help="wt310: command set the meter is left in")
    p.add_argument("--rate-suffix-ok", action="store_true", help="wt210: also accept ':SAMP:RATE 250MS'")
    p.add_argument("--separator", default=";", choices=[";", ","], help="hioki: reply item separator")
    p.add_argument("--answer-codes", action="store_true", help="hioki: confirm commands with 3-digit codes")
    p.add_argument("--current-a", type=float, nargs=4, default=[6.0, 10.0, 0.0, 0.0], metavar="A",
                   help="powersensor3: current of each pair, A (pairs 2 and 3 are unwired)")
    p.add_argument("--voltage-v", type=float, nargs=4, default=[12.0, 12.0, 0.0, 0.0], metavar="V",
                   help="powersensor3: voltage of each pair, V")
    a = p.parse_args(argv)
    emu = _make(a.protocol, a)
    stop = threading.Event()
    # set both: a shell starts background jobs with SIGINT ignored, and Python then never raises
    # KeyboardInterrupt
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        print(emu.path, flush=True)
        if isinstance(emu, PowerSensor3Emulator):
            sys.stderr.write(f"true power of the pairs in use: {emu.true_power_w():.3f} W\n")
        while not stop.wait(0.2):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        emu.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
