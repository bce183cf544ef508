"""Instrument emulators on real pseudo-terminals, for tests, benchmarks and demos without hardware.

Each emulator owns the master side of an ``os.openpty()`` pair and exposes the slave through a
symlink path (``link``) that the driver opens -- like a udev symlink for a USB adapter. It speaks the
documented protocol (see each driver's docstring), numbers every data frame it sends (``seq``) and
encodes that number in the values, so a test can tell exactly which frames reached the driver.

Faults (:meth:`PtyEmulator.inject`), applied to the next frame:

``"garbage"``   the frame is sent whole, followed by line-noise bytes
``"truncate"``  only part of the frame is sent (that frame is corrupted; its seq is in ``corrupted``)
``"error"``     the instrument's error reply replaces the frame (seq in ``corrupted``)

:meth:`PtyEmulator.unplug` closes the pty and removes the symlink (the driver sees an I/O error and
cannot re-open the path); :meth:`PtyEmulator.replug` creates a new pty behind the same path, with the
instrument back in its power-on state (unconfigured), so data flows again only if the driver
re-sends its configuration.
"""

from __future__ import annotations

import errno
import os
import select
import threading
import time
import tty
from pathlib import Path
from typing import Any

from microbench.instruments.powersensor3 import STOP_SENTINEL, encode_frame

GARBAGE = b"\x00\xff\xfe#!$\x7f\x81"


class PtyEmulator:
    """Base: pty plumbing, the emit loop, fault injection and frame accounting.

    ``frame_period_s``: streaming period (streaming instruments) or data update period (polled ones).
    """

    STREAMING = True

    def __init__(self, link: str | os.PathLike, frame_period_s: float = 0.05):
        self.link = Path(link)
        self.frame_period_s = frame_period_s
        self.seq = 0
        self.sent: list[int] = []  # seqs sent whole
        self.sent_t: list[float] = []  # host monotonic time each of them was written, s
        self.corrupted: list[int] = []  # seqs truncated or replaced by an error reply
        self.faults: list[str] = []
        self.configured = False
        self.config_log: list[bytes] = []  # every command received (all connections)
        self.connections = 0
        self._fault: str | None = None
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._paused = threading.Event()
        self._rx = bytearray()
        self.master = -1
        self.slave = -1
        self._plug()
        self._thread = threading.Thread(target=self._run, name=type(self).__name__, daemon=True)
        self._thread.start()

    # -- pty plumbing --------------------------------------------------------------------------
    def _plug(self) -> None:
        master, slave = os.openpty()
        tty.setraw(slave)  # no echo, no line editing, before the driver even opens it
        os.set_blocking(master, False)
        self.master, self.slave = master, slave
        tmp = self.link.with_name(self.link.name + ".tmp")
        if tmp.is_symlink():
            tmp.unlink()
        os.symlink(os.ttyname(slave), tmp)
        os.replace(tmp, self.link)
        self.connections += 1

    def unplug(self) -> None:
        """Pull the cable: the pty disappears and the path no longer exists."""
        with self._lock:
            self._paused.set()
            if self.link.is_symlink():
                self.link.unlink()
            for fd in (self.master, self.slave):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self.master = self.slave = -1
            self.configured = False
            self._rx.clear()
            self.on_reset()

    def replug(self) -> None:
        """Plug it back: a new pty at the same path, instrument in its power-on state."""
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

    def inject(self, fault: str) -> None:
        """Apply ``fault`` ("garbage", "truncate", "error") to the next frame."""
        if fault not in ("garbage", "truncate", "error"):
            raise ValueError(f"unknown fault {fault!r}")
        with self._lock:
            self._fault = fault

    def send_frame(self) -> None:
        """Send the next data frame, applying a pending fault."""
        with self._lock:
            fault, self._fault = self._fault, None
            seq = self.seq
            self.seq += 1
            if fault:
                self.faults.append(fault)
            if fault == "error":
                self.corrupted.append(seq)
                self.send(self.error_reply())
                return
            frame = self.frame(seq)
            if fault == "truncate":
                self.corrupted.append(seq)
                self.send(frame[: max(1, len(frame) * 2 // 5)])
                return
            self.send(frame)
            self.sent.append(seq)
            self.sent_t.append(time.monotonic())
            if fault == "garbage":
                self.send(GARBAGE)

    # -- protocol hooks ----------------------------------------------------------------------------
    def decode(self, values: dict[str, Any]) -> int:
        """The seq a driver row carries (inverse of :meth:`frame`'s encoding)."""
        return seq_of(values["power_w"])

    def frame(self, seq: int) -> bytes:
        raise NotImplementedError

    def error_reply(self) -> bytes:
        raise NotImplementedError

    def on_bytes(self, data: bytes) -> None:
        """Commands from the driver (default: line-based, see :meth:`on_command`)."""
        self._rx += data
        while True:
            idx = self._rx.find(b"\n")
            if idx < 0:
                break
            line = bytes(self._rx[:idx]).rstrip(b"\r")
            del self._rx[: idx + 1]
            self.config_log.append(line)
            self.on_command(line)

    def on_command(self, line: bytes) -> None:
        pass

    def on_reset(self) -> None:
        """Back to power-on state (after unplug)."""

    def on_tick(self) -> None:
        """Called every frame period (streaming instruments send a frame here)."""
        if self.STREAMING and self.configured:
            self.send_frame()

    # -- loop ------------------------------------------------------------------------------------------
    def _run(self) -> None:
        t_next = time.monotonic()
        while not self._stop.is_set():
            if self._paused.is_set():
                time.sleep(0.01)
                t_next = time.monotonic()
                continue
            timeout = max(0.0, t_next - time.monotonic())
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
                    self.on_bytes(data)
            if time.monotonic() >= t_next:
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


class CsvEmulator(PtyEmulator):
    """Prints ``<power_w>,<voltage_v>`` lines continuously (no configuration needed)."""

    def __init__(self, link: str | os.PathLike, frame_period_s: float = 0.05, columns: int = 2,
                 power_fn: Any = None):
        self.columns = columns
        self.power_fn = power_fn  # optional: power as a function of wall time (alignment tests)
        super().__init__(link, frame_period_s)
        self.configured = True

    def on_reset(self) -> None:
        self.configured = True  # a CSV bridge streams as soon as it is powered

    def frame(self, seq: int) -> bytes:
        p = self.power_fn(time.time()) if self.power_fn else _power(seq)
        vals = [f"{p:.4f}", "12.000", "8.333"][: self.columns]
        return (",".join(vals) + "\r\n").encode()

    def error_reply(self) -> bytes:
        return b"ERR overload\r\n"


class WattsUpEmulator(PtyEmulator):
    """Watts up? PRO: streams ``#d`` records after ``#L,W,3,E,,<n>;``; stops on ``#L,W,0;``.

    ``frame_period_s`` stands for the meter's 1 s interval (scaled down so tests are fast).
    """

    def on_bytes(self, data: bytes) -> None:
        self._rx += data
        while True:
            idx = self._rx.find(b";")
            if idx < 0:
                break
            cmd = bytes(self._rx[: idx + 1]).strip()
            del self._rx[: idx + 1]
            self.config_log.append(cmd)
            if cmd.startswith(b"#L,W,3,E,"):
                self.configured = True
            elif cmd.startswith(b"#L,W,0"):
                self.configured = False

    def decode(self, values: dict[str, Any]) -> int:
        return int(round(values["power_w"] * 10)) - 1000

    def frame(self, seq: int) -> bytes:
        w10 = 1000 + seq  # W x 10: the record's resolution is 0.1 W
        rest = ["0"] * 15
        return ("#d,-,18," + ",".join([str(w10), "1200", "8333"] + rest) + ";\r\n").encode()

    def error_reply(self) -> bytes:
        # the protocol has no error reply: an unexpected record type stands in for one
        return b"#h,-,18,W,V,A,WH,Cost,WH/Mo,Cost/Mo,Wmax,Vmax,Amax,Wmin,Vmin,Amin,PF,DC,PC,HZ,VA;\r\n"


class YokogawaEmulator(PtyEmulator):
    """WT310 (or WT210 with ``dialect="wt210"``): SCPI setup with an error queue, polled values.

    Data updates every ``frame_period_s``; ``:COMM:WAIT 1`` blocks until the next update. Each
    value reply is a new frame (``seq``). Refuses ranges it does not have (error -222) and unknown
    headers (-113); answers nothing to value queries until configured (remote + items set).
    """

    STREAMING = False
    VOLT_RANGES = {15, 30, 60, 150, 300, 600}
    CURR_RANGES = {0.5, 1, 2, 5, 10, 20}

    def __init__(self, link: str | os.PathLike, frame_period_s: float = 0.1, dialect: str = "wt310"):
        self.dialect = dialect
        self.errors: list[str] = []
        self.state: dict[str, Any] = {}
        self._update = threading.Condition()
        self._updates = 0
        self._pending: list[bytes] = []
        super().__init__(link, frame_period_s)

    def on_reset(self) -> None:
        self.state = {}
        self.errors = []
        self._pending = []

    def on_tick(self) -> None:
        with self._update:
            self._updates += 1
            self._update.notify_all()
        self._flush_pending()

    def _is_configured(self) -> bool:
        st = self.state
        need = ("remote", "items", "vrange", "crange")
        return all(st.get(k) for k in need)

    def on_command(self, line: bytes) -> None:
        text = line.decode("ascii", "replace").strip()
        if not text:
            return
        parts = text.split(";")
        replies: list[str] = []
        waiting = False
        for part in parts:
            p = part.strip().upper()
            if not p.startswith((":", "*")):
                p = ":" + p
            r = self._handle(p)
            if r == "__WAIT__":
                waiting = True
                continue
            if r is not None:
                replies.append(r)
        if waiting:  # answer after the next update (the emulator loop's tick)
            self._pending.append(";".join(replies).encode())
            return
        if replies:
            self._reply(";".join(replies))

    def _reply(self, text: str) -> None:
        if text == "__FRAME__" or text.endswith("__FRAME__"):
            prefix = text[: -len("__FRAME__")]
            with self._lock:
                self.send(prefix.encode())
                self.send_frame()
            return
        self.send(text.encode() + b"\r\n")

    def _flush_pending(self) -> None:
        pend, self._pending = self._pending, []
        for p in pend:
            self._reply(p.decode())

    def _handle(self, p: str) -> str | None:
        st = self.state
        wt210 = self.dialect == "wt210"
        if p == "*IDN?":
            return f"YOKOGAWA,{'WT210' if wt210 else 'WT310'},C2QE12345,F1.03"
        if p == ":COMM:REM ON":
            st["remote"] = True
            return None
        if p == ":COMM:REM OFF":
            st["remote"] = False
            return None
        if p == ":STAT:ERR?":
            return self.errors.pop(0) if self.errors else '0,"No error"'
        if p == ":STAT:EESR?":
            return "0"
        if p.startswith(":COMM:WAIT"):
            return "__WAIT__"
        if p in (":COMM:HEAD OFF", ":NUM:FORM ASCII", ":NUM:NORM:NUM 3", ":STAT:FILT1 FALL", ":INP:VOLT:AUTO OFF",
                 ":INP:CURR:AUTO OFF", ":CONF:VOLT:AUTO OFF", ":CONF:CURR:AUTO OFF", ":MEAS:NORM:ITEM:PRES CLE"):
            return None
        if p.startswith((":NUM:NORM:ITEM", ":MEAS:NORM:ITEM:")):
            st.setdefault("item_cmds", set()).add(p)
            if len(st["item_cmds"]) >= 3:
                st["items"] = True
            return None
        if p.startswith((":RATE ", ":SAMP:RATE ")):
            st["rate"] = p.split()[1]
            return None
        for prefix, key, allowed in ((":INP:VOLT:RANG ", "vrange", self.VOLT_RANGES),
                                     (":CONF:VOLT:RANG ", "vrange", self.VOLT_RANGES),
                                     (":INP:CURR:RANG ", "crange", self.CURR_RANGES),
                                     (":CONF:CURR:RANG ", "crange", self.CURR_RANGES)):
            if p.startswith(prefix):
                val = float(p[len(prefix):].rstrip("VA"))
                if val not in allowed:
                    self.errors.append('-222,"Data out of range"')
                else:
                    st[key] = val
                return None
        if p in (":NUM:NORM:VAL?", ":MEAS:NORM:VAL?"):
            if not (st.get("remote") and self._is_configured()):
                self.errors.append('-200,"Execution error"')
                return None
            return "__FRAME__"
        self.errors.append('-113,"Undefined header"')
        return None

    def frame(self, seq: int) -> bytes:
        return f"{230.0:.4E},{_power(seq) / 230.0:.6E},{_power(seq):.6E}\r\n".encode()

    def error_reply(self) -> bytes:
        return b"9.91E+37,9.91E+37,9.91E+37\r\n"


class HiokiEmulator(PtyEmulator):
    """PW3335-class: answers every command with a confirmation code once ``:RS232:ANSW ON`` is set."""

    STREAMING = False
    VOLT_RANGES = {15, 30, 60, 150, 300, 600, 1000}
    CURR_RANGES = {1, 2, 5, 10, 20}

    def __init__(self, link: str | os.PathLike, frame_period_s: float = 0.2):
        self.state: dict[str, Any] = {}
        super().__init__(link, frame_period_s)

    def on_reset(self) -> None:
        self.state = {}

    def on_tick(self) -> None:
        pass

    def on_command(self, line: bytes) -> None:
        p = line.decode("ascii", "replace").strip().upper()
        st = self.state
        if not p:
            return
        code, payload = "000", None
        if p == ":RS232:ANSW ON":
            st["answ"] = True
        elif p == ":HEAD OFF":
            st["head_off"] = True
        elif p == "*IDN?":
            payload = "HIOKI,PW3335,123456789,V1.00"
        elif p in (":VOLT:AUTO OFF", ":CURR:AUTO OFF"):
            pass
        elif p.startswith((":VOLT:RANG ", ":CURR:RANG ")):
            val = float(p.split()[1])
            key, allowed = ("vrange", self.VOLT_RANGES) if p.startswith(":VOLT") else ("crange", self.CURR_RANGES)
            if val in allowed:
                st[key] = val
            else:
                code = "002"  # parameter error
        elif p == ":MEAS? U,I,P":
            if not (st.get("answ") and st.get("head_off") and st.get("vrange") and st.get("crange")):
                code = "003"  # execution error: not set up (the emulator insists on a full setup)
            else:
                with self._lock:
                    self.send_frame()
                return
        else:
            code = "001"  # command error
        if not st.get("answ"):
            if payload is not None:
                self.send(payload.encode() + b"\r\n")
            return
        self.send(((payload + ";") if payload is not None else "").encode() + code.encode() + b"\r\n")

    def frame(self, seq: int) -> bytes:
        return f"+230.00E+0,{_power(seq) / 230.0:+.5E},{_power(seq):+.5E};000\r\n".encode()

    def error_reply(self) -> bytes:
        return b"003\r\n"


class PowerSensor3Emulator(PtyEmulator):
    """PowerSensor3: after ``S``, frames every ``frame_period_s`` of device time, sent in bursts of
    ``burst`` frames (USB packets). Voltage level of pair 0 = seq mod 1024 (so rows reveal the seq)."""

    def __init__(self, link: str | os.PathLike, frame_period_s: float = 0.0005, burst: int = 20):
        self.burst = burst
        self.device_us = 0
        self._mark = False
        super().__init__(link, frame_period_s * burst)

    def on_bytes(self, data: bytes) -> None:
        for b in data:
            c = bytes((b,))
            self.config_log.append(c)
            if c == b"S":
                self.configured = True
            elif c == b"X":
                if self.configured:
                    self.send(STOP_SENTINEL)
                self.configured = False
            elif c == b"M":
                self._mark = True

    def on_tick(self) -> None:
        if self.configured:
            for _ in range(self.burst):
                self.send_frame()

    def decode(self, values: dict[str, Any]) -> int:
        """seq modulo 1024 (voltage level of pair 0); unwrap with :func:`unwrap_mod`."""
        return int(round(values["voltage0_v"] / 0.02))

    def frame(self, seq: int) -> bytes:
        self.device_us += int(round(self.frame_period_s / self.burst * 1e6))
        levels = [612, seq % 1024, 562, 600, 512, 0, 512, 0]
        marker, self._mark = self._mark, False
        return encode_frame(self.device_us, levels, marker)

    def error_reply(self) -> bytes:
        # the device stopped (e.g. a reset): the stop sentinel between frames; it streams again on "S"
        self.configured = False
        return STOP_SENTINEL


# ------------------------------------------------------------------------------------------------
# End-to-end fault scenario (used by the tests and benchmarks/bench_logger.py)
# ------------------------------------------------------------------------------------------------

#: protocol -> (emulator factory(link), driver keyword arguments) for the fault scenario
SCENARIOS: dict[str, tuple[Any, dict[str, Any]]] = {
    "csv": (lambda link: CsvEmulator(link, 0.05), {"columns": ("power_w", "voltage_v"), "stale_partial_s": 0.02}),
    "wattsup": (lambda link: WattsUpEmulator(link, 0.05), {}),
    "wt310": (lambda link: YokogawaEmulator(link, 0.05), {"update_rate": "50MS"}),
    "wt210": (lambda link: YokogawaEmulator(link, 0.05, dialect="wt210"), {"update_rate": "50MS"}),
    "hioki": (lambda link: HiokiEmulator(link, 0.05), {"period_s": 0.05}),
    "powersensor3": (lambda link: PowerSensor3Emulator(link), {"average_frames": 1}),
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
    import warnings

    from microbench.instruments import open_analyzer

    make_emu, kw = SCENARIOS[protocol]
    link = Path(workdir) / f"{protocol}.tty"
    emu = make_emu(link)
    drv = open_analyzer(str(link), protocol, **kw)
    rows: list[Any] = []

    def seqs() -> list[int]:
        xs = [emu.decode(r.values) for r in rows]
        return unwrap_mod(xs) if protocol == "powersensor3" else xs

    def received_beyond(seq: int) -> bool:
        xs = seqs()
        return bool(xs) and max(xs) >= seq

    def pump_until(cond: Any, timeout_s: float = 10.0) -> None:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            rows.extend(drv.read())
            if cond():
                return
            time.sleep(0.01)
        raise TimeoutError(f"{protocol}: scenario step timed out ({drv.stats.to_dict()})")

    windows: list[tuple[str, int, int]] = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the reconnect warning is expected here
            drv.start()
            pump_until(lambda: len(rows) >= frames_per_phase)
            for fault in ("garbage", "truncate", "error"):
                s0 = emu.seq
                emu.inject(fault)
                pump_until(lambda: received_beyond(s0 + frames_per_phase))
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
