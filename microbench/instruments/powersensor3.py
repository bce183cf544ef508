"""PowerSensor3 (ASTRON / Netherlands eScience Center): a binary stream of 2-byte words over USB CDC.

As the maker's firmware and host library speak it (``device/PowerSensor/PowerSensor.ino``,
``host/src/PowerSensor.cc``, ``host/src/sensors.cc``, ``psconfig.cc``; facts in
``shared/reference/instrument-protocol-facts.md``):

- **words**: byte 0 = ``1 iii aaaa`` (bit 7 set, 3-bit sensor id, upper 4 bits of a 10-bit level),
  byte 1 = ``0 m bbbbbb`` (bit 7 clear, marker bit, lower 6 bits). A frame is one timestamp word (id
  7, marker bit set, level = ``micros() & 0x3FF``) and the 8 sensor words, ids 0..7 in order; the
  marker bit of sensor 0's word flags a user mark (``M``).
- **commands**: ``S`` start streaming, ``X`` stop, ``M`` mark, ``R`` read the configuration.
- **stop**: after ``X`` the device waits 100 ms and sends the sentinel ``FF 3F`` twice, streaming or
  not. Setup waits for both (so they never reach the stream); a sentinel pair in the stream (the
  device stopped) counts as one instrument error and streaming is restarted with ``S``.
- **calibration** (EEPROM, read at every setup): after ``R`` the device sends one 41-byte record per
  sensor -- ``char type[16]``, ``char pairName[16]`` (NUL-terminated), ``float32 vref`` (V),
  ``float32 sensitivity`` (V/A for a current sensor, a gain for a voltage sensor), ``uint8 inUse``,
  little-endian, packed -- the host acknowledges each record with a byte (``s``), and the device ends
  with ``D``. A name without its NUL means a corrupt EEPROM: that sensor is invalid.
- **conversion** per sensor: ``value = (3.3 * level / 1023 - vref) / sensitivity`` (A for the current
  sensor 2p, V for the voltage sensor 2p+1 of pair p); pair power = current x voltage. Only pairs
  whose two sensors are both flagged in use are logged and summed into ``power_w``: unwired channels
  float. A pair with only one of its sensors in use is a configuration error (warned, not used).

Resync: a word whose top bits are not ``1``/``0`` means a byte was lost: drop one byte and retry (as
the host library does). A frame interrupted by a new timestamp word, an out-of-order sensor id or a
sentinel is dropped as truncated.

Device time (``device_t_s``): the 10-bit microsecond timestamp wraps every 1024 µs; the driver counts
wraps (valid while frames arrive less than 1024 µs apart: the device streams at several kHz). After a
visible loss the count is re-anchored to host time (``resync = 1``), with the newest frame of the
chunk at its arrival time. Frames dropped in the device's own USB queue are invisible, and a gap of a
whole number of wraps cannot be seen in the timestamps; it shows as the device clock falling behind
host time. The driver watches the lowest transport lag (host arrival minus device time of the newest
frame of each chunk) over ``slip_window_s``: when it stays more than ``slip_threshold_s`` above the
lowest lag seen since the anchor, the missed wraps are added back (``stats.clock_slips``, ``resync =
1``). Rows in the detection window keep the uncorrected device time.

Rows: ``average_frames`` consecutive frames are averaged into one row (the device is far faster than a
CSV log needs); ``frames`` says how many went into the row.
"""

from __future__ import annotations

import collections
import logging
import struct
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from microbench.devices.base import Row
from microbench.instruments.base import Command, InstrumentError, InstrumentErrorReply, SerialAnalyzer

log = logging.getLogger(__name__)

N_SENSORS = 8
TS_ID = 7
STOP_SENTINEL = b"\xff\x3f"
FRAME_BYTES = 2 * (1 + N_SENSORS)
_IDS = np.arange(N_SENSORS)
#: ADC: 3.3 V full scale over 1023 levels
VOLTS_PER_LEVEL = 3.3 / 1023
#: one EEPROM record: type[16], pairName[16], float32 vref, float32 sensitivity, uint8 inUse
RECORD = struct.Struct("<16s16sffB")
WRAP_US = 1024


def encode_word(sensor_id: int, level: int, marker: int = 0) -> bytes:
    """The 2 bytes of one word (for tests of the framer)."""
    if not 0 <= level < 1024 or not 0 <= sensor_id < 8:
        raise ValueError(f"bad word: id {sensor_id}, level {level}")
    return bytes((0x80 | (sensor_id << 4) | (level >> 6), ((marker & 1) << 6) | (level & 0x3F)))


def encode_frame(timestamp_us: int, levels: Sequence[int], marker: bool = False) -> bytes:
    """One frame: the timestamp word (``timestamp_us`` modulo 1024) and 8 sensor words."""
    out = bytearray(encode_word(TS_ID, timestamp_us % 1024, 1))
    for i, lv in enumerate(levels):
        out += encode_word(i, int(lv), int(marker and i == 0))
    return bytes(out)


@dataclass(frozen=True)
class SensorConfig:
    """One sensor's EEPROM record. ``sensitivity``: V/A (current sensor) or gain (voltage sensor)."""

    sensor_id: int
    type: str
    pair_name: str
    vref_v: float
    sensitivity: float
    in_use: bool
    valid: bool = True

    @property
    def kind(self) -> str:
        return "current" if self.sensor_id % 2 == 0 else "voltage"

    @property
    def unit_per_level(self) -> float:
        """A (current) or V (voltage) per ADC level."""
        return VOLTS_PER_LEVEL / self.sensitivity if self.sensitivity else float("nan")

    @property
    def zero_level(self) -> float:
        """The level that reads 0 A / 0 V (``vref`` in levels)."""
        return self.vref_v / VOLTS_PER_LEVEL


def parse_record(sensor_id: int, raw: bytes) -> SensorConfig:
    """Decode one 41-byte EEPROM record; a name without its NUL terminator marks the sensor invalid."""
    if len(raw) != RECORD.size:
        raise ValueError(f"record of {len(raw)} bytes, expected {RECORD.size}")
    t, n, vref, sens, in_use = RECORD.unpack(raw)
    valid = b"\0" in t and b"\0" in n

    def text(b: bytes) -> str:
        return b.split(b"\0", 1)[0].decode("ascii", "replace")

    return SensorConfig(sensor_id, text(t), text(n), float(vref), float(sens), bool(in_use), valid)


def pairs_in_use(config: Sequence[SensorConfig]) -> tuple[list[int], list[str]]:
    """The pairs whose current and voltage sensors are both in use (and valid), and a message for each
    configuration error (one sensor of a pair in use, an invalid record, a zero sensitivity)."""
    used, problems = [], []
    for p in range(N_SENSORS // 2):
        cur, volt = config[2 * p], config[2 * p + 1]
        flags = (cur.in_use, volt.in_use)
        if flags == (True, True):
            bad = [s for s in (cur, volt) if not s.valid or not s.sensitivity]
            if bad:
                problems.append(f"pair {p}: sensor {bad[0].sensor_id} has a corrupt EEPROM record "
                                f"(type {bad[0].type!r}, sensitivity {bad[0].sensitivity:g}); pair not used")
                continue
            used.append(p)
        elif any(flags):
            which = "current" if flags[0] else "voltage"
            problems.append(f"pair {p}: only its {which} sensor is flagged in use (configuration error; set both "
                            "with psconfig); pair not used")
    return used, problems


class PS3Framer:
    """Incremental parser of the PowerSensor3 word stream; ``feed`` returns complete frames as
    ``((timestamp_level, levels[8], marker), lost_before)``. ``stops`` counts stop events (a
    sentinel, or the two sentinels the device sends together, counts once)."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.cur: list[int] | None = None  # [ts, l0, l1, ...]
        self.marker = False
        self.truncated = 0
        self.discarded = 0
        self.stops = 0
        self._lost = False
        self._after_sentinel = False

    def clear(self) -> int:
        n = len(self.buf)
        self.discarded += n
        self.buf.clear()
        if self.cur is not None:
            self.truncated += 1
            self.cur = None
        if n:
            self._lost = True
        return n

    def expire(self, now: float) -> bool:
        return False

    def _drop_frame(self) -> None:
        if self.cur is not None:
            self.truncated += 1
            self.cur = None
            self._lost = True

    def feed(self, data: bytes, now: float) -> list[tuple[tuple[int, list[int], bool], bool]]:
        """Frames as ``((timestamp_level, levels[8], marker), lost_before)`` tuples (see :meth:`feed_bulk`)."""
        b = self.feed_bulk(data)
        return [((int(t), [int(x) for x in lv], bool(m)), bool(lo))
                for t, lv, m, lo in zip(b.ts, b.levels, b.marker, b.lost)]

    def feed_bulk(self, data: bytes) -> "FrameBatch":
        """Add bytes; return every complete frame as arrays. Well-formed runs of frames are decoded
        with numpy 18 bytes at a time; anything else goes word by word (resync, partial frames)."""
        self.buf += data
        parts: list[FrameBatch] = []
        while True:
            if self.cur is None and self._fast(parts):
                continue
            if not self._slow_until_frame(parts):
                break
        return FrameBatch.concat(parts)

    def _fast(self, parts: list["FrameBatch"]) -> bool:
        n = len(self.buf) // FRAME_BYTES
        if n == 0:
            return False
        arr = np.frombuffer(bytes(self.buf[: n * FRAME_BYTES]), dtype=np.uint8).reshape(n, 9, 2)
        b0, b1 = arr[:, :, 0].astype(np.int32), arr[:, :, 1].astype(np.int32)
        sid, m = (b0 >> 4) & 7, (b1 >> 6) & 1
        ok = ((b0 & 0x80) != 0).all(1) & ((b1 & 0x80) == 0).all(1)
        ok &= (sid[:, 0] == TS_ID) & (m[:, 0] == 1) & (sid[:, 1:] == _IDS).all(1) & (m[:, 2:] == 0).all(1)
        k = n if ok.all() else int(np.argmin(ok))
        if k == 0:
            return False
        lv = ((b0[:k] & 0x0F) << 6) | (b1[:k] & 0x3F)
        lost = np.zeros(k, dtype=bool)
        lost[0] = self._lost
        self._lost = False
        self._after_sentinel = False
        parts.append(FrameBatch(lv[:, 0], lv[:, 1:], m[:k, 1].astype(bool), lost))
        del self.buf[: k * FRAME_BYTES]
        return True

    def _slow_until_frame(self, parts: list["FrameBatch"]) -> bool:
        """Word-by-word parse until one frame completes (True) or the buffer runs out (False)."""
        buf = self.buf
        i, n = 0, len(buf)
        done = False
        while n - i >= 2 and not done:
            b0, b1 = buf[i], buf[i + 1]
            if b0 == 0xFF and b1 == 0x3F:  # stop sentinel (unique: no data word has id 7 and marker 0)
                i += 2
                self._drop_frame()
                if not self._after_sentinel:
                    self.stops += 1
                self._after_sentinel = True
                continue
            if not (b0 & 0x80) or (b1 & 0x80):
                i += 1  # misaligned: a byte was lost somewhere; drop one and retry
                self.discarded += 1
                self._lost = True
                self._drop_frame()
                continue
            i += 2
            self._after_sentinel = False
            sid = (b0 >> 4) & 0x7
            m = (b1 >> 6) & 1
            level = ((b0 & 0x0F) << 6) | (b1 & 0x3F)
            if sid == TS_ID and m == 1:
                self._drop_frame()  # a new frame starts: an unfinished one is lost
                self.cur = [level]
                self.marker = False
                continue
            if self.cur is None:
                self.discarded += 2
                self._lost = True
                continue
            if sid != len(self.cur) - 1:
                self._drop_frame()  # out-of-order id: the frame is broken
                continue
            self.cur.append(level)
            if sid == 0 and m:
                self.marker = True
            if len(self.cur) == 1 + N_SENSORS:
                cur = np.asarray(self.cur)
                parts.append(FrameBatch(cur[:1], cur[None, 1:], np.array([self.marker]), np.array([self._lost])))
                self._lost = False
                self.cur = None
                done = True
        del buf[:i]
        return done


@dataclass
class FrameBatch:
    """Decoded frames: timestamp levels (n,), sensor levels (n, 8), marker flags (n,), and whether
    anything was lost right before each frame (n,)."""

    ts: np.ndarray
    levels: np.ndarray
    marker: np.ndarray
    lost: np.ndarray

    @staticmethod
    def concat(parts: list["FrameBatch"]) -> "FrameBatch":
        if not parts:
            return FrameBatch(np.zeros(0, int), np.zeros((0, N_SENSORS), int), np.zeros(0, bool), np.zeros(0, bool))
        return FrameBatch(*(np.concatenate(a) for a in zip(*((p.ts, p.levels, p.marker, p.lost) for p in parts))))

    def __len__(self) -> int:
        return int(self.ts.shape[0])


class PowerSensor3(SerialAnalyzer):
    """PowerSensor3. Columns: ``power_w`` (sum of the logged pairs), ``power{p}_w``, ``voltage{p}_v``,
    ``current{p}_a`` for each logged pair p, ``device_t_s``, ``marker``, ``frames``.

    ``pairs``: which pairs to log -- None (default): every pair the device's EEPROM flags in use; a
    list of pair numbers or a string like ``"0,2"`` (each must be in use); an int n: pairs 0..n-1
    (each must be in use). The
    columns are fixed at the first connection (they are known only once the EEPROM has been read).
    """

    protocol = "powersensor3"
    BAUDRATE = 115200  # USB CDC: the rate is ignored by the device
    COMMANDS = {
        "start": Command("S", None, source="PowerSensor.ino: start streaming"),
        "stop": Command("X", r"(\xff\x3f){2}", source="PowerSensor.ino: stop; FF 3F twice after 100 ms"),
        "mark": Command("M", None, source="PowerSensor.ino: marker bit on sensor 0's next word"),
        "read_config": Command("R", r"(?s).{41}", source="PowerSensor.cc: one 41-byte record per sensor"),
        "ack": Command("s", r"(?s).{41}|D", source="PowerSensor.cc: any byte asks for the next record; D ends"),
    }
    #: how long after ``X`` the sentinels may take (the device waits 100 ms)
    STOP_TIMEOUT_S = 0.5
    #: silence after the stop sentinels that shows no further stop reply is on its way (> the 100 ms delay)
    STOP_QUIET_S = 0.15

    def __init__(self, port: str, name: str | None = None, *, pairs: int | str | Sequence[int] | None = None,
                 average_frames: int = 20, slip_window_s: float = 0.25, slip_threshold_s: float = 0.003,
                 **kw: Any):
        if average_frames < 1:
            raise ValueError("average_frames must be >= 1")
        if isinstance(pairs, str):  # from the command line: "0,2"
            try:
                pairs = [int(p) for p in pairs.split(",")]
            except ValueError:
                raise ValueError(f"pairs {pairs!r}: give pair numbers 0..3 separated by commas, e.g. 0,1") from None
        if isinstance(pairs, int) and not isinstance(pairs, bool):
            if not 1 <= pairs <= 4:
                raise ValueError(f"pairs must be 1..4 (or a list of pair numbers 0..3), got {pairs}")
            pairs = list(range(pairs))
        if pairs is not None:
            pairs = sorted(set(int(p) for p in pairs))
            if not pairs or not all(0 <= p < 4 for p in pairs):
                raise ValueError(f"pairs must be pair numbers 0..3, got {pairs}")
        self.requested_pairs = pairs
        self.average_frames = int(average_frames)
        self.slip_window_s = float(slip_window_s)
        self.slip_threshold_s = float(slip_threshold_s)
        self.config: list[SensorConfig] = []
        self.pairs: list[int] = []
        self._vref = np.zeros(N_SENSORS)
        self._sens = np.ones(N_SENSORS)
        self._pending: list[tuple[np.ndarray, ...]] = []
        self._t0: float | None = None  # host time of unwrapped device time 0, s
        self._dev_us = 0
        self._prev_ts: int | None = None
        self._lag_base = float("inf")
        self._lags: collections.deque[tuple[float, float]] = collections.deque()
        self._acc_resync = False
        super().__init__(port, name, **kw)
        self._set_columns(pairs if pairs is not None else [])

    def _set_columns(self, pairs: Sequence[int]) -> None:
        per_pair = [c for p in pairs for c in (f"power{p}_w", f"voltage{p}_v", f"current{p}_a")]
        self.VALUE_COLUMNS = ("power_w", *per_pair, "device_t_s", "marker", "frames")  # type: ignore[misc]
        self.columns = tuple(self.VALUE_COLUMNS) + ("resync",)

    def make_framer(self) -> PS3Framer:
        return PS3Framer()

    def no_reply_hint(self) -> str:
        return "is it a PowerSensor3 with firmware that stores its calibration (R command)?"

    def settings(self) -> dict[str, Any]:
        return {"pairs": list(self.pairs), "average_frames": self.average_frames,
                "calibration": [asdict(c) for c in self.config],
                "conversion": "(3.3 * level / 1023 - vref) / sensitivity, per sensor (EEPROM)"}

    # -- setup -----------------------------------------------------------------------------------
    def configure(self) -> None:
        self.write(b"X")  # it may still be streaming from a previous session
        self._await_stop()
        self.framer = self.make_framer()
        self._apply_config(self._read_config())
        self._t0 = None
        self._prev_ts = None
        self._pending = []
        self.write(b"S")

    def _await_stop(self) -> None:
        """Read (and discard) until the two stop sentinels the device sends 100 ms after ``X``."""
        assert self._ser is not None
        buf = bytearray()
        deadline = time.monotonic() + self.STOP_TIMEOUT_S
        while time.monotonic() < deadline:
            buf += self.read_chunk()
            if buf.count(STOP_SENTINEL) >= 2:
                break
        # sentinels of an earlier stop (the previous session's close) can arrive before ours, which then
        # land in the configuration reply: discard until the line has been quiet for longer than the
        # device's 100 ms delay
        quiet_until = time.monotonic() + self.STOP_QUIET_S
        end = time.monotonic() + self.STOP_TIMEOUT_S
        while time.monotonic() < min(quiet_until, end):
            more = self.read_chunk()
            if more:
                buf += more
                quiet_until = time.monotonic() + self.STOP_QUIET_S
        seen = buf.count(STOP_SENTINEL)
        tail = buf[buf.rfind(STOP_SENTINEL) + 2:] if seen else buf
        self.stats.bytes_discarded += len(buf) - 2 * seen
        if seen < 2:
            log.warning("%s on %s: %d of the 2 stop sentinels within %.1f s of X (firmware without them?)",
                        self.name, self.port_path, seen, self.STOP_TIMEOUT_S)
        elif tail:
            log.info("%s on %s: %d byte(s) after the stop sentinels discarded", self.name, self.port_path, len(tail))

    def _read_exact(self, n: int, timeout_s: float, what: str) -> bytes:
        assert self._ser is not None
        buf = bytearray()
        deadline = time.monotonic() + timeout_s
        while len(buf) < n and time.monotonic() < deadline:
            buf += self._ser.read(n - len(buf))
        if len(buf) < n:
            raise InstrumentError(f"{self.protocol} on {self.port_path}: {what}: got {len(buf)} of {n} bytes "
                                  f"within {timeout_s} s ({self.no_reply_hint()})")
        log.debug("%s READ %r", self.port_path, bytes(buf))
        return bytes(buf)

    def _read_config(self) -> list[SensorConfig]:
        """``R``, then one record per sensor, each acknowledged; the device ends with ``D``."""
        self.write(self.command_text("read_config").encode())
        config = []
        for sid in range(N_SENSORS):
            raw = self._read_exact(RECORD.size, 1.0, f"EEPROM record of sensor {sid}")
            config.append(parse_record(sid, raw))
            self.write(self.command_text("ack").encode())
        end = self._read_exact(1, 1.0, "end of configuration ('D')")
        if end != b"D":
            raise InstrumentError(f"{self.protocol} on {self.port_path}: configuration ended with {end!r}, not 'D'")
        return config

    def _apply_config(self, config: list[SensorConfig]) -> None:
        used, problems = pairs_in_use(config)
        for msg in problems:
            log.warning("%s on %s: %s", self.name, self.port_path, msg)
        if not used:
            raise InstrumentError(f"{self.protocol} on {self.port_path}: no sensor pair is flagged in use in the "
                                  "device's EEPROM (configure it with psconfig)")
        want = self.requested_pairs if self.requested_pairs is not None else used
        if self.pairs:  # reconnect: the columns were fixed at the first connection
            want = self.pairs
        missing = [p for p in want if p not in used]
        if missing:
            raise InstrumentError(f"{self.protocol} on {self.port_path}: pair {missing[0]} is not in use on the "
                                  f"device (unwired channels float); pairs in use: {', '.join(map(str, used))}")
        self.config = config
        self._vref = np.array([c.vref_v for c in config])
        self._sens = np.array([c.sensitivity if c.sensitivity else np.nan for c in config])
        if not self.pairs:
            self.pairs = list(want)
            self._set_columns(self.pairs)
        self.observe("pairs_in_use", used)
        for p in self.pairs:
            c, v = config[2 * p], config[2 * p + 1]
            log.info("%s on %s: pair %d %r: %s vref %.5g V, %.4g A/level (null at level %.1f); voltage vref %.5g V, "
                     "%.4g V/level", self.name, self.port_path, p, c.pair_name, c.type, c.vref_v, c.unit_per_level,
                     c.zero_level, v.vref_v, v.unit_per_level)

    def convert(self, levels: np.ndarray) -> np.ndarray:
        """Physical values of sensor levels (..., 8): A for even ids, V for odd ids."""
        return (VOLTS_PER_LEVEL * np.asarray(levels, dtype=float) - self._vref) / self._sens

    # -- streaming -------------------------------------------------------------------------------
    def shutdown(self) -> None:
        self.write(b"X")
        self._flush(*self._clock())  # the partial average at the end is data too

    def mark(self) -> None:
        """Ask the device to flag the next frame (``marker = 1`` in its row): a time marker for alignment."""
        self.write(b"M")

    def after_read(self) -> None:
        fr = self.framer
        if fr.stops:
            self.stats.instrument_errors += fr.stops
            self.stats.last_reject = "device sent the stop sentinel; restarted streaming"
            log.warning("%s on %s: the device stopped streaming (stop sentinel); restarting", self.name,
                        self.port_path)
            fr.stops = 0
            self._resync = True
            self._t0 = None
            self.write(b"S")

    def handle_data(self, data: bytes, t_mono: float, t_wall: float) -> None:
        """Decode a chunk in bulk (the device streams thousands of frames per second)."""
        b = self.framer.feed_bulk(data)
        if len(b):
            self.stats.frames_ok += len(b)
            self._frames(b, t_mono, t_wall)

    def _frames(self, b: FrameBatch, t_mono: float, t_wall: float) -> None:
        vals = self.convert(b.levels)
        idx = np.asarray(self.pairs)
        cur, volt = vals[:, 2 * idx], vals[:, 2 * idx + 1]
        powr = cur * volt
        # split where something was lost: the wrap count across a visible gap is unknown
        starts = [0] + [int(k) for k in np.nonzero(b.lost)[0] if k > 0] + [len(b)]
        for a, z in zip(starts[:-1], starts[1:]):
            reanchor = bool(b.lost[a] or self._resync or self._t0 is None or self._prev_ts is None)
            if reanchor:
                self._flush(t_mono, t_wall)  # no row mixes frames from both sides of a gap
                self._acc_resync = bool(b.lost[a] or self._resync)
                self._resync = False
                steps = np.concatenate([[0], np.diff(b.ts[a:z]) % WRAP_US])
                dev_us = np.cumsum(steps)
                # the newest frame of the chunk has just arrived: it anchors device time to host time
                self._t0 = t_mono - float(dev_us[-1]) / 1e6
                self._lag_base = float("inf")
                self._lags.clear()
            else:
                steps = np.diff(np.concatenate([[self._prev_ts], b.ts[a:z]])) % WRAP_US
                dev_us = self._dev_us + np.cumsum(steps)
            self._dev_us = int(dev_us[-1])
            self._prev_ts = int(b.ts[z - 1])
            assert self._t0 is not None
            dev_t = self._t0 + dev_us / 1e6
            self._pending.append((powr[a:z], volt[a:z], cur[a:z], b.marker[a:z], dev_t))
            if z == len(b):
                self._watch_clock(t_mono)
            self._emit_rows(t_mono, t_wall, final=False)

    def _watch_clock(self, t_mono: float) -> None:
        """Detect whole wraps lost invisibly (frames dropped in the device's USB queue): the lowest
        transport lag over the last ``slip_window_s`` rising above the lowest since the anchor."""
        assert self._t0 is not None
        lag = t_mono - (self._t0 + self._dev_us / 1e6)
        self._lag_base = min(self._lag_base, lag)
        self._lags.append((t_mono, lag))
        while self._lags and self._lags[0][0] < t_mono - self.slip_window_s:
            self._lags.popleft()
        if t_mono - self._lags[0][0] < 0.8 * self.slip_window_s:
            return  # not a full window yet
        excess = min(x for _, x in self._lags) - self._lag_base
        if excess < self.slip_threshold_s:
            return
        wraps = int(round(excess * 1e6 / WRAP_US))
        self._dev_us += wraps * WRAP_US
        self.stats.clock_slips += 1
        self._acc_resync = True
        self._lags.clear()
        log.warning("%s on %s: device clock fell %.1f ms behind host time: %d whole timestamp wraps lost "
                    "(frames dropped in the device's USB queue); device time corrected", self.name, self.port_path,
                    excess * 1e3, wraps)

    def _emit_rows(self, t_mono: float, t_wall: float, final: bool) -> None:
        if not self._pending:
            return
        powr, volt, cur, mark, dev_t = (np.concatenate(x) for x in zip(*self._pending))
        n = powr.shape[0]
        full = n // self.average_frames
        groups = [(g * self.average_frames, (g + 1) * self.average_frames) for g in range(full)]
        if final and n > full * self.average_frames:
            groups.append((full * self.average_frames, n))
        for a, z in groups:
            pw = powr[a:z].mean(0)
            row: dict[str, Any] = {"power_w": float(pw.sum())}
            vv, cc = volt[a:z].mean(0), cur[a:z].mean(0)
            for j, p in enumerate(self.pairs):
                row[f"power{p}_w"], row[f"voltage{p}_v"], row[f"current{p}_a"] = float(pw[j]), float(vv[j]), float(cc[j])
            row.update(device_t_s=float(dev_t[z - 1]), marker=int(mark[a:z].any()), frames=z - a,
                       resync=int(self._acc_resync))
            self._acc_resync = False
            self._rows.put(Row(t_mono, t_wall, row))
        used = groups[-1][1] if groups else 0
        self._pending = [] if used == n else [(powr[used:], volt[used:], cur[used:], mark[used:], dev_t[used:])]

    def _flush(self, t_mono: float, t_wall: float) -> None:
        """Emit the partial average (frames < average_frames) before a gap."""
        self._emit_rows(t_mono, t_wall, final=True)

    def parse(self, frame: tuple[int, list[int], bool]) -> dict[str, Any]:
        """Values of one frame (the reader decodes in bulk; this is the same arithmetic for one frame)."""
        ts, levels, marker = frame
        if len(levels) != N_SENSORS:
            raise InstrumentErrorReply(f"powersensor3: frame with {len(levels)} sensor words")
        vals = self.convert(np.asarray(levels))
        v: dict[str, Any] = {"marker": int(marker)}
        total = 0.0
        for p in self.pairs:
            i_a, u_v = float(vals[2 * p]), float(vals[2 * p + 1])
            v[f"current{p}_a"], v[f"voltage{p}_v"], v[f"power{p}_w"] = i_a, u_v, i_a * u_v
            total += i_a * u_v
        v["power_w"] = total
        return v
