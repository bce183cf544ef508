"""Serial power analyzers: the common reader (port ownership, reconnects, timestamps) and framers.

Each protocol is a small subclass of :class:`SerialAnalyzer` that declares its framer, how to
configure the instrument, and how to turn one frame into values. This base class owns everything
protocol-independent:

- **exclusive access**: the port is opened with ``exclusive=True`` (POSIX ``flock``), so two loggers
  can never interleave on one instrument; a held lock is a clear error, not garbage data.
- **timestamps**: every frame is stamped on the host with ``time.monotonic()`` and ``time.time()``
  when the chunk that completed it was read (an upper bound on the sample time: USB/serial
  buffering adds milliseconds; see README "Alignment").
- **framing checks and resync**: frames that fail the protocol's structure checks are rejected and
  counted, never interpolated; the first good row after any loss carries ``resync = 1``.
- **reconnect**: an I/O error (unplugged adapter) closes the port, retries opening it *by path*
  with back-off, and re-sends the full configuration (instruments come back in local mode).
  Each outage is recorded in ``stats.gaps``.
- **polled protocols** (SCPI query/reply): one query per period; input that arrived before the
  query is discarded (it cannot be the answer); a reply that does not complete within
  ``response_timeout_s`` is dropped as truncated.

Counters: ``stats``, an :class:`AnalyzerStats`.

Declared commands: each protocol lists its instrument commands in a table (``COMMANDS``: name ->
:class:`Command`, with the reply shape and a parameter validator, and where it is documented), and
sends them through :meth:`SerialAnalyzer.tell` / :meth:`SerialAnalyzer.ask`, so a refused parameter is
a ``ValueError`` naming the allowed values before anything reaches the wire, and a reply of the wrong
shape is an :class:`InstrumentError` naming the command.

Wire trace: every write and read is logged at DEBUG on this module's logger
(``"<port> WRITE b'...'"``, ``"<port> READ b'...'"``; ``calib -vv log ...`` shows it); rejected
frames and resyncs at INFO, lost connections and reconnects at WARNING. Facts an instrument revealed
about itself at setup (``observed``: e.g. the HIOKI item separator) are logged at INFO and recorded in
the capabilities.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import queue
import re
import threading
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import serial

try:  # pyserial's flush() is tcdrain(), which raises termios.error (not OSError) on a vanished tty
    import termios

    IO_ERRORS: tuple[type[BaseException], ...] = (serial.SerialException, OSError, termios.error)
except ImportError:  # pragma: no cover - non-POSIX
    IO_ERRORS = (serial.SerialException, OSError)

from calib.core.errors import CalibError, DeviceError, DeviceLostError, DeviceNoPermissionError, DeviceNotFoundError
from microbench.devices.base import Row, Sensor

log = logging.getLogger(__name__)


class InstrumentError(DeviceError):
    """The instrument answered with an error (error queue entry, error code) or refused the setup."""


class FrameError(ValueError):
    """A frame failed the protocol's structure checks (wrong prefix, field count, non-numeric...)."""


class InstrumentErrorReply(FrameError):
    """A well-formed reply that reports an instrument error instead of data (counted separately)."""


@dataclass
class AnalyzerStats:
    """Counters of one analyzer connection (all protocols); ``rejected``: frames that failed the checks."""

    frames_ok: int = 0
    rejected: int = 0
    truncated: int = 0
    instrument_errors: int = 0
    bytes_discarded: int = 0
    timeouts: int = 0
    reconnects: int = 0
    gaps: list[dict[str, float]] = field(default_factory=list)
    #: monotonic time (s) at which the connection was lost, while it is still lost (None when connected):
    #: an outage that has not ended has no entry in ``gaps`` yet, and the log must still name it
    lost_t_mono_s: float | None = None
    last_reject: str = ""
    #: error values the instrument sent instead of readings, by kind (e.g. ``{"over-range": 2}``)
    error_values: dict[str, int] = field(default_factory=dict)
    #: device-clock corrections (PowerSensor3: whole timestamp wraps lost invisibly)
    clock_slips: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


class ErrorValueReply(InstrumentErrorReply):
    """A reply that carries the instrument's error value (over-range, no data...) instead of a reading."""

    def __init__(self, message: str, kind: str):
        super().__init__(message)
        self.kind = kind


# ------------------------------------------------------------------------------------------------
# Declared commands
# ------------------------------------------------------------------------------------------------

def strict_discrete_set(values: Collection[Any], what: str) -> Callable[[Any], Any]:
    """Validator: the value must be one of ``values`` (ValueError naming them otherwise)."""
    allowed = list(values)

    def check(x: Any) -> Any:
        if x not in allowed:
            raise ValueError(f"{what} {x!r} is not one of {', '.join(str(a) for a in allowed)}")
        return x
    return check


def strict_range(lo: float, hi: float, what: str) -> Callable[[Any], Any]:
    """Validator: ``lo <= value <= hi`` (ValueError naming the range otherwise)."""
    def check(x: Any) -> Any:
        if not lo <= float(x) <= hi:
            raise ValueError(f"{what} {x!r} is outside {lo:g}..{hi:g}")
        return x
    return check


@dataclass(frozen=True)
class Command:
    """One instrument command as its documentation gives it.

    ``text``: the command, a ``str.format`` template over the parameters (``":INP:VOLT:RANG {v}V"``);
    ``reply``: a regular expression the whole reply must match, or None when the command answers
    nothing; ``validate``: parameter name -> validator (raises ValueError naming the allowed values);
    ``source``: where the command is documented.
    """

    text: str
    reply: str | None = None
    validate: dict[str, Callable[[Any], Any]] = field(default_factory=dict)
    source: str = ""

    def format(self, **params: Any) -> str:
        """The command text for ``params`` (validated)."""
        for k, check in self.validate.items():
            check(params[k])
        return self.text.format(**params)

    def reply_ok(self, reply: str) -> bool:
        return self.reply is not None and re.fullmatch(self.reply, reply.strip()) is not None


# ------------------------------------------------------------------------------------------------
# Framers: bytes in (any chunking), whole frames out
# ------------------------------------------------------------------------------------------------

class TextFramer:
    """Incremental framer for ASCII line/record protocols.

    ``terminator``: bytes that end a frame (e.g. ``b"\\n"``; a preceding ``\\r`` is stripped).
    ``start``: optional byte that starts a frame (Watts up ``#``): bytes outside a frame are
    discarded, and a start byte inside a frame abandons the partial one (truncated).
    Text protocols carry printable ASCII only, so a frame is cut after its last control or non-ASCII
    byte (line noise), and a partial frame left untouched for ``stale_s`` is dropped as truncated
    (otherwise it would glue onto the next frame and corrupt it too).
    """

    def __init__(self, terminator: bytes = b"\n", start: bytes | None = None, stale_s: float | None = None,
                 max_len: int = 4096):
        self.terminator = terminator
        self.start = start
        self.stale_s = stale_s
        self.max_len = max_len
        self.buf = bytearray()
        self.in_frame = start is None
        self.last_data_t = 0.0
        self.truncated = 0
        self.discarded = 0
        self._lost = False  # something was dropped since the last complete frame

    def clear(self) -> int:
        """Drop any partial frame; returns the bytes dropped."""
        n = len(self.buf)
        self.discarded += n
        if n:
            self._lost = True
        self.buf.clear()
        self.in_frame = self.start is None
        return n

    def expire(self, now: float) -> bool:
        """Drop a partial frame that has been waiting longer than ``stale_s``; True if one was dropped."""
        if self.stale_s is not None and self.buf and now - self.last_data_t > self.stale_s:
            self._truncate()
            return True
        return False

    def _truncate(self) -> None:
        if self.buf.strip():
            self.truncated += 1
        self.clear()

    def feed(self, data: bytes, now: float) -> list[tuple[bytes, bool]]:
        """Add bytes; return the complete frames (without terminator, sanitized), each with a flag
        telling whether anything was dropped just before it."""
        self.expire(now)
        out: list[tuple[bytes, bool]] = []
        if data:
            self.last_data_t = now
        term = self.terminator
        for b in data:
            ch = bytes((b,))
            if self.start is not None:
                if ch == self.start:
                    if self.in_frame and self.buf:
                        self._truncate()
                    self.in_frame = True
                    self.buf += ch
                    continue
                if not self.in_frame:
                    if b not in b"\r\n":  # the line end after a record is not garbage
                        self.discarded += 1
                        self._lost = True
                    continue
            self.buf += ch
            if self.buf.endswith(term):
                frame = bytes(self.buf[: -len(term)]).rstrip(b"\r")
                self.buf.clear()
                self.in_frame = self.start is None
                frame = self._sanitize(frame)
                if frame:
                    out.append((frame, self._lost))
                    self._lost = False
            elif len(self.buf) > self.max_len:
                self._truncate()
        return out

    def _sanitize(self, frame: bytes) -> bytes:
        bad = [i for i, b in enumerate(frame) if b < 0x20 or b > 0x7E]
        if bad:
            cut = bad[-1] + 1
            self.discarded += cut
            self._lost = True
            frame = frame[cut:]
        return frame


# ------------------------------------------------------------------------------------------------
# The reader
# ------------------------------------------------------------------------------------------------

def _port_error(port: str, e: BaseException) -> DeviceError:
    msg = str(e)
    low = msg.lower()
    if "exclusively lock" in low or isinstance(e, BlockingIOError):
        return DeviceError(f"serial port {port} is in use by another process (exclusive lock held); stop the "
                           "other logger first")
    err = getattr(e, "errno", None)
    if err == errno.ENOENT or "no such file" in low:
        try:
            from serial.tools import list_ports
            avail = [p.device for p in list_ports.comports()]
        except Exception:  # noqa: BLE001 - listing is best effort
            avail = []
        return DeviceNotFoundError(f"serial port {port} not found (unplugged or wrong path); ports present: "
                                   f"{avail or 'none'}")
    if err in (errno.EACCES, errno.EPERM) or "permission denied" in low:
        return DeviceNoPermissionError(f"serial port {port}: permission denied; add your user to the 'dialout' "
                                       "group (then log in again) or fix the udev rule")
    return DeviceError(f"serial port {port}: {msg}")


class SerialAnalyzer(Sensor):
    """Base class of the serial power analyzers (a :class:`Sensor` of kind ``"analyzer"``).

    Parameters
    ----------
    port:
        device path (prefer a stable udev symlink or ``/dev/serial/by-id/...``; reconnects re-open it).
    name:
        stream name (default: the protocol name).
    baudrate:
        default: the protocol's.
    period_s:
        query period of polled protocols, s (streaming protocols ignore it).
    reconnect:
        retry after I/O errors (default True); False turns an unplug into :class:`DeviceLostError`.
    clock:
        ``() -> (t_mono_s, t_wall_s)`` host clock (injectable for tests).
    transport:
        ``() -> port`` factory of a pyserial-like object (``read``, ``write``, ``flush``,
        ``in_waiting``, ``reset_input_buffer``, ``close``) used instead of opening ``port``
        (replay tests: :mod:`microbench.testing.replay`).
    """

    kind = "analyzer"
    scope = "system"
    protocol: ClassVar[str] = "base"
    BAUDRATE: ClassVar[int] = 9600
    POLLED: ClassVar[bool] = False
    #: value columns before the common ``resync`` (and ``latency_s`` for polled protocols)
    VALUE_COLUMNS: ClassVar[tuple[str, ...]] = ("power_w",)
    #: the instrument's commands (name -> :class:`Command`), as documented
    COMMANDS: ClassVar[dict[str, Command]] = {}
    #: line terminator appended to text commands
    EOL: ClassVar[bytes] = b"\r\n"

    def __init__(self, port: str, name: str | None = None, *, baudrate: int | None = None, period_s: float = 0.1,
                 reconnect: bool = True, response_timeout_s: float | None = None,
                 clock: Callable[[], tuple[float, float]] | None = None, read_timeout_s: float = 0.005,
                 max_backoff_s: float = 1.0, transport: Callable[[], Any] | None = None):
        self.port_path = port
        self.name = name or self.protocol
        self.baudrate = baudrate or self.BAUDRATE
        self.period_s = float(period_s)
        self.reconnect = reconnect
        self.response_timeout_s = response_timeout_s if response_timeout_s is not None else max(0.5, 2 * self.period_s)
        self._clock = clock or (lambda: (time.monotonic(), time.time()))
        self.read_timeout_s = read_timeout_s
        self.max_backoff_s = max_backoff_s
        self.columns = tuple(self.VALUE_COLUMNS) + ("resync",) + (("latency_s",) if self.POLLED else ())
        self.stats = AnalyzerStats()
        self.identity = ""
        #: facts the instrument revealed about itself at setup (unconfirmed protocol details)
        self.observed: dict[str, Any] = {}
        self._transport = transport
        self._ser: serial.Serial | None = None
        self._rows: queue.SimpleQueue[Row] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._wlock = threading.Lock()
        self._resync = False
        self._fatal: BaseException | None = None
        self.framer = self.make_framer()

    # -- protocol hooks ---------------------------------------------------------------------------
    def make_framer(self) -> Any:
        """The framer of this protocol (fresh one per connection)."""
        return TextFramer(b"\n")

    def configure(self) -> None:
        """Send the full setup to the instrument (called at start and after every reconnect)."""

    def query(self) -> bytes:
        """The query a polled protocol sends once per period."""
        raise NotImplementedError

    def parse(self, frame: Any) -> dict[str, Any]:
        """Values of one frame; raise :class:`FrameError` / :class:`InstrumentErrorReply` to reject it."""
        raise NotImplementedError

    def on_frame_values(self, values: dict[str, Any], t_mono: float, t_wall: float) -> list[Row]:
        """Rows for one parsed frame (hook for protocols that aggregate frames). Default: one row."""
        return [Row(t_mono, t_wall, values)]

    def settings(self) -> dict[str, Any]:
        """Protocol settings recorded in the manifest (ranges, rate, items...)."""
        return {}

    # -- port I/O (usable from configure()) -------------------------------------------------------
    def write(self, data: bytes) -> None:
        with self._wlock:
            assert self._ser is not None
            log.debug("%s WRITE %r", self.port_path, data)
            self._ser.write(data)
            self._ser.flush()

    def read_chunk(self) -> bytes:
        """What the port has (at least one byte, or nothing after ``read_timeout_s``); traced at DEBUG."""
        assert self._ser is not None
        data = self._ser.read(self._ser.in_waiting or 1)
        if data and log.isEnabledFor(logging.DEBUG):
            log.debug("%s READ %r", self.port_path, data)
        return data

    def read_frame(self, timeout_s: float) -> Any:
        """Read until the framer yields one frame (for configuration exchanges); None on timeout."""
        assert self._ser is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            frames = self.framer.feed(self.read_chunk(), time.monotonic())
            if frames:
                return frames[0][0]
        self.framer.clear()
        return None

    def drain_input(self, quiet_s: float = 0.05, max_s: float = 1.0) -> int:
        """Discard input until the line has been quiet for ``quiet_s``; returns bytes dropped."""
        assert self._ser is not None
        n = 0
        t_end = time.monotonic() + max_s
        last = time.monotonic()
        while time.monotonic() < t_end and time.monotonic() - last < quiet_s:
            data = self.read_chunk()
            if data:
                n += len(data)
                last = time.monotonic()
        self.framer.clear()
        self.stats.bytes_discarded += n
        return n

    # -- declared commands ----------------------------------------------------------------------
    def command_text(self, name: str, **params: Any) -> str:
        """The text of command ``name`` of :attr:`COMMANDS` for ``params`` (validated: ValueError)."""
        return self.COMMANDS[name].format(**params)

    def tell(self, name: str, **params: Any) -> str:
        """Send command ``name`` (no reply expected); returns the text sent."""
        text = self.command_text(name, **params)
        self.write(text.encode("ascii") + self.EOL)
        return text

    def ask(self, name: str, timeout_s: float = 1.0, **params: Any) -> str:
        """Send query ``name`` and return its reply; :class:`InstrumentError` when no reply comes within
        ``timeout_s`` or the reply does not have the documented shape."""
        text = self.tell(name, **params)
        reply = self.read_frame(timeout_s)
        if reply is None:
            raise InstrumentError(f"{self.protocol} on {self.port_path}: no reply to {text!r} within {timeout_s} s "
                                  f"({self.no_reply_hint()})")
        out = reply.decode("ascii", "replace").strip()
        if not self.COMMANDS[name].reply_ok(out):
            raise InstrumentError(f"{self.protocol} on {self.port_path}: reply to {text!r} is {out!r}, not the "
                                  f"documented shape {self.COMMANDS[name].reply}")
        return out

    def no_reply_hint(self) -> str:
        """What to check when the instrument does not answer (protocol-specific)."""
        return "wrong port, baud rate or cable?"

    def observe(self, fact: str, value: Any, note: str = "") -> None:
        """Record (and log once at INFO) which reading of an unconfirmed protocol fact the instrument used."""
        if self.observed.get(fact) != value:
            log.info("%s on %s: instrument uses %s = %r%s", self.protocol, self.port_path, fact, value,
                     f" ({note})" if note else "")
        self.observed[fact] = value

    # -- lifecycle --------------------------------------------------------------------------------
    def _open_port(self) -> None:
        try:
            if self._transport is not None:
                self._ser = self._transport()
            else:
                self._ser = serial.Serial(self.port_path, self.baudrate, timeout=self.read_timeout_s,
                                          write_timeout=1.0, exclusive=True)
            self._ser.reset_input_buffer()  # stale bytes from before we opened are not ours
        except IO_ERRORS as e:
            self._close_port()
            raise _port_error(self.port_path, e) from e
        self.framer = self.make_framer()

    def _close_port(self) -> None:
        if self._ser is not None:
            with contextlib.suppress(*IO_ERRORS):
                self._ser.close()
            self._ser = None

    def connect(self) -> "SerialAnalyzer":
        """Open the port and configure the instrument, without starting the reader thread (replay tests
        drive :meth:`step` themselves; :meth:`start` does both)."""
        self._open_port()
        try:
            self.configure()
        except BaseException:
            self._close_port()
            raise
        return self

    def start(self) -> "SerialAnalyzer":
        """Open the port, configure the instrument and start the reader thread (errors raised here)."""
        if self._thread is not None:
            return self
        self.connect()
        self._thread = threading.Thread(target=self._run, name=f"analyzer-{self.name}", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2.0)
        with contextlib.suppress(*IO_ERRORS):
            if self._ser is not None:
                self.shutdown()
        self._close_port()

    def shutdown(self) -> None:
        """Protocol hook run before the port closes (e.g. stop streaming)."""

    def __enter__(self) -> "SerialAnalyzer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def capabilities(self) -> dict[str, Any]:
        return {"protocol": self.protocol, "port": self.port_path, "baudrate": self.baudrate,
                "identity": self.identity, "polled": self.POLLED,
                "period_s": self.period_s if self.POLLED else None, "settings": self.settings(),
                "timestamps": "host monotonic + wall at frame arrival (upper bound on sample time)",
                "observed": dict(self.observed), "stats": self.stats.to_dict()}

    def read(self) -> list[Row]:
        """Rows parsed since the previous call. Raises the error that ended the reader, if any."""
        if self._thread is None:
            self.start()
        rows = self.take_rows()
        if not rows and self._fatal is not None:
            raise self._fatal
        return rows

    def take_rows(self) -> list[Row]:
        """Rows parsed and not yet taken (without starting anything)."""
        return [self._rows.get_nowait() for _ in range(self._rows.qsize())]  # (one consumer: all are there)

    # -- reader thread ----------------------------------------------------------------------------
    def _emit(self, frame: Any, t_mono: float, t_wall: float, latency_s: float | None = None) -> bool:
        try:
            values = self.parse(frame)
        except FrameError as e:
            if isinstance(e, InstrumentErrorReply):
                self.stats.instrument_errors += 1
                if isinstance(e, ErrorValueReply):
                    self.stats.error_values[e.kind] = self.stats.error_values.get(e.kind, 0) + 1
            else:
                self.stats.rejected += 1
            self.stats.last_reject = str(e)
            log.info("%s on %s: %s: %s", self.name, self.port_path, "instrument error reply dropped"
                     if isinstance(e, InstrumentErrorReply) else "frame rejected", e)
            self._resync = True
            return False
        self.stats.frames_ok += 1
        for row in self.on_frame_values(values, t_mono, t_wall):
            v = dict(row.values)
            if "resync" not in v:  # protocols that aggregate frames set it themselves
                v["resync"] = int(self._resync)
                if self._resync:
                    log.info("%s on %s: resynchronised (first good frame after a loss)", self.name, self.port_path)
                self._resync = False
            if self.POLLED:
                v["latency_s"] = latency_s
            self._rows.put(Row(row.t_mono_s, row.t_wall_s, v))
        return True

    def _sync_counters(self) -> None:
        fr = self.framer
        if fr.truncated:  # (the framer flags the next frame itself)
            log.info("%s on %s: %d truncated frame(s) dropped", self.name, self.port_path, fr.truncated)
            self.stats.truncated += fr.truncated
            fr.truncated = 0
        if fr.discarded:
            log.info("%s on %s: %d byte(s) of line noise discarded", self.name, self.port_path, fr.discarded)
            self.stats.bytes_discarded += fr.discarded
            fr.discarded = 0

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    if self.POLLED:
                        self._poll_loop()
                    else:
                        while not self._stop.is_set():
                            self.step()
                except IO_ERRORS as e:
                    if self._stop.is_set():
                        break
                    if not self.reconnect:
                        raise DeviceLostError(f"analyzer {self.name} on {self.port_path}: connection lost ({e})") from e
                    self._reconnect(e)
        except BaseException as e:  # noqa: BLE001 - surfaced by read()
            self._fatal = e

    def step(self) -> None:
        """One unit of reader work: one query and its reply (polled protocols) or one read (streaming).
        The reader thread calls it in a loop; replay tests call it directly."""
        if self.POLLED:
            self.poll_once()
            return
        data = self.read_chunk()
        t_mono, t_wall = self._clock()
        self.handle_data(data, t_mono, t_wall)
        self._sync_counters()
        self.after_read()

    def handle_data(self, data: bytes, t_mono: float, t_wall: float) -> None:
        """Frame and parse one chunk of a streaming protocol (hook for bulk decoders)."""
        for frame, lost in self.framer.feed(data, time.monotonic()):
            self._resync |= lost
            self._emit(frame, t_mono, t_wall)

    def after_read(self) -> None:
        """Hook called after every read of a streaming protocol (e.g. restart after a stop)."""

    def poll_period_s(self) -> float:
        """Time from one query to the next (0: query again as soon as the reply is in, for instruments
        that hold the reply until new data is ready)."""
        return self.period_s

    def _poll_loop(self) -> None:
        t_next = time.monotonic()
        while not self._stop.is_set():
            delay = t_next - time.monotonic()
            if delay > 0 and self._stop.wait(delay):
                return
            t_next = max(t_next + self.poll_period_s(), time.monotonic())
            self.poll_once()

    def poll_once(self) -> bool:
        """Send the query and read its reply (polled protocols); True if a reply frame arrived."""
        assert self._ser is not None
        # whatever arrived since the last reply cannot be the answer to the next query
        n = self._ser.in_waiting
        if n:
            stale = self._ser.read(n)
            log.debug("%s READ (stale, discarded) %r", self.port_path, stale)
            self.stats.bytes_discarded += len(stale)
        if self.framer.buf:
            self.framer.clear()
        self._sync_counters()
        t_query = time.monotonic()
        self.write(self.query())
        deadline = t_query + self.response_timeout_s
        got = False
        while not got and time.monotonic() < deadline and not self._stop.is_set():
            data = self.read_chunk()
            t_mono, t_wall = self._clock()
            for frame, lost in self.framer.feed(data, time.monotonic()):
                got = True
                self._resync |= lost
                self._emit(frame, t_mono, t_wall, latency_s=time.monotonic() - t_query)
            self._sync_counters()
        if not got and not self._stop.is_set():
            self.stats.timeouts += 1
            if self.framer.buf.strip():
                self.stats.truncated += 1
            log.info("%s on %s: no complete reply within %.3g s (timeout)", self.name, self.port_path,
                     self.response_timeout_s)
            self.framer.clear()
            self._sync_counters()
            self._resync = True
        return got

    def _reconnect(self, cause: BaseException) -> None:
        t_lost_m, t_lost_w = self._clock()
        self.stats.lost_t_mono_s = t_lost_m
        self._close_port()
        log.warning("analyzer %s on %s: connection lost (%s); reconnecting", self.name, self.port_path, cause)
        backoff = 0.05
        while not self._stop.is_set():
            if self._stop.wait(backoff):
                return
            try:
                self.connect()
            except (*IO_ERRORS, CalibError) as e:  # still unplugged, or not answering yet
                log.debug("analyzer %s on %s: reconnect attempt failed (%s)", self.name, self.port_path, e)
                backoff = min(backoff * 2, self.max_backoff_s)
                continue
            t_back_m, t_back_w = self._clock()
            log.warning("analyzer %s on %s: reconnected after %.2f s (configuration re-sent)", self.name,
                        self.port_path, t_back_m - t_lost_m)
            self.stats.reconnects += 1
            self.stats.lost_t_mono_s = None
            self.stats.gaps.append({"lost_t_mono_s": t_lost_m, "back_t_mono_s": t_back_m,
                                    "lost_t_wall_s": t_lost_w, "back_t_wall_s": t_back_w})
            self._resync = True
            return


def parse_numbers(fields: Iterable[bytes | str], what: str) -> list[float]:
    """Floats of ``fields``; FrameError naming the bad field otherwise."""
    out = []
    for i, f in enumerate(fields):
        s = f.decode("ascii", "replace") if isinstance(f, bytes) else f
        try:
            out.append(float(s))
        except ValueError:
            raise FrameError(f"{what}: field {i + 1} {s!r} is not a number") from None
    return out
