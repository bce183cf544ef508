"""PowerSensor3 (ASTRON / Netherlands eScience Center): a binary stream of 2-byte words over USB CDC.

Wire format (``device/PowerSensor/PowerSensor.ino`` and ``host/src/PowerSensor.cc``):

- every value is one word: byte 0 = ``1 iii aaaa`` (bit 7 set, 3-bit sensor id, upper 4 bits of a
  10-bit level), byte 1 = ``0 m bbbbbb`` (bit 7 clear, marker bit, lower 6 bits);
- a frame is one timestamp word (id 7 with the marker bit set; the level is ``micros()`` modulo
  1024) followed by the 8 sensor words, ids 0..7 in order (even id = current, odd id = voltage of
  pair id // 2); the marker bit of sensor 0's word flags a user mark (``M`` command);
- ``S`` starts streaming, ``X`` stops it (the device then sends the stop sentinel ``0xFF 0x3F``),
  ``M`` marks the next frame.

Resync: a word whose top bits are not ``1``/``0`` means a byte was lost: drop one byte and retry
(as the host library does). A frame interrupted by a new timestamp word or an out-of-order sensor
id is dropped as truncated. A stop sentinel between frames (the device stopped, e.g. after a reset)
is counted as an instrument error and streaming is restarted with ``S``.

Device time: the 10-bit microsecond timestamp is unwrapped modulo 1024, which is valid while frames
arrive less than 1024 µs apart (they do: the device streams at several kHz). After any loss the
unwrapped count can be off by whole wraps, so it is re-anchored to host time (``resync = 1``).
``device_t_s`` = host monotonic time at the anchor + unwrapped device time since the anchor.

Conversion: level -> current ``(level - 512) * current_scale_a``, voltage ``level * voltage_scale_v``,
per pair. The real device stores its calibration in EEPROM (``R`` command, ``psconfig`` tool); pass
the matching scales (this driver does not read the EEPROM).

Rows: ``average_frames`` consecutive frames are averaged into one row (the device is far faster than
a CSV log needs); ``frames`` says how many went into the row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from microbench.devices.base import Row
from microbench.instruments.base import InstrumentErrorReply, SerialAnalyzer

N_SENSORS = 8
TS_ID = 7
STOP_SENTINEL = b"\xff\x3f"
FRAME_BYTES = 2 * (1 + N_SENSORS)
_IDS = np.arange(N_SENSORS)


def encode_word(sensor_id: int, level: int, marker: int = 0) -> bytes:
    """The 2 bytes of one word (used by the emulator and tests)."""
    if not 0 <= level < 1024 or not 0 <= sensor_id < 8:
        raise ValueError(f"bad word: id {sensor_id}, level {level}")
    return bytes((0x80 | (sensor_id << 4) | (level >> 6), ((marker & 1) << 6) | (level & 0x3F)))


def encode_frame(timestamp_us: int, levels: Sequence[int], marker: bool = False) -> bytes:
    """One frame: the timestamp word (``timestamp_us`` modulo 1024) and 8 sensor words."""
    out = bytearray(encode_word(TS_ID, timestamp_us % 1024, 1))
    for i, lv in enumerate(levels):
        out += encode_word(i, int(lv), int(marker and i == 0))
    return bytes(out)


class PS3Framer:
    """Incremental parser of the PowerSensor3 word stream; ``feed`` returns complete frames as
    ``((timestamp_level, levels[8], marker), lost_before)``."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.cur: list[int] | None = None  # [ts, l0, l1, ...]
        self.marker = False
        self.truncated = 0
        self.discarded = 0
        self.stops = 0
        self._lost = False

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
            if self.cur is None:
                fast = self._fast(parts)
                if fast:
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
            if not (b0 & 0x80) or (b1 & 0x80):
                i += 1  # misaligned: a byte was lost somewhere; drop one and retry
                self.discarded += 1
                self._lost = True
                self._drop_frame()
                continue
            i += 2
            sid = (b0 >> 4) & 0x7
            m = (b1 >> 6) & 1
            level = ((b0 & 0x0F) << 6) | (b1 & 0x3F)
            if sid == TS_ID and m == 1:
                self._drop_frame()  # a new frame starts: an unfinished one is lost
                self.cur = [level]
                self.marker = False
                continue
            if self.cur is None:
                if bytes((b0, b1)) == STOP_SENTINEL:
                    self.stops += 1
                else:
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
        if len(parts) == 1:
            return parts[0]
        return FrameBatch(np.concatenate([p.ts for p in parts]), np.concatenate([p.levels for p in parts]),
                          np.concatenate([p.marker for p in parts]), np.concatenate([p.lost for p in parts]))

    def __len__(self) -> int:
        return int(self.ts.shape[0])


class PowerSensor3(SerialAnalyzer):
    """PowerSensor3. Columns: power_w (sum of pairs), power{k}_w, voltage{k}_v, current{k}_a for each pair,
    device_t_s, marker, frames."""

    protocol = "powersensor3"
    BAUDRATE = 115200  # USB CDC: the rate is ignored by the device

    def __init__(self, port: str, name: str | None = None, *, pairs: int = 4, average_frames: int = 20,
                 current_scale_a: float | Sequence[float] = 0.02, voltage_scale_v: float | Sequence[float] = 0.02,
                 **kw: Any):
        if not 1 <= pairs <= 4:
            raise ValueError(f"pairs must be 1..4, got {pairs}")
        if average_frames < 1:
            raise ValueError("average_frames must be >= 1")
        self.pairs = pairs
        self.average_frames = int(average_frames)
        cs = [current_scale_a] * 4 if isinstance(current_scale_a, (int, float)) else list(current_scale_a)
        vs = [voltage_scale_v] * 4 if isinstance(voltage_scale_v, (int, float)) else list(voltage_scale_v)
        self.current_scale_a, self.voltage_scale_v = cs, vs
        cols = ["power_w"]
        for k in range(pairs):
            cols += [f"power{k}_w", f"voltage{k}_v", f"current{k}_a"]
        self.VALUE_COLUMNS = tuple(cols) + ("device_t_s", "marker", "frames")  # type: ignore[misc]
        self._pending: list[tuple[np.ndarray, ...]] = []
        self._anchor: tuple[float, int] | None = None  # (host t_mono at anchor, unwrapped µs at anchor)
        self._dev_us = 0
        self._prev_ts: int | None = None
        self._acc_resync = False
        super().__init__(port, name, **kw)

    def make_framer(self) -> PS3Framer:
        return PS3Framer()

    def settings(self) -> dict[str, Any]:
        return {"pairs": self.pairs, "average_frames": self.average_frames,
                "current_scale_a": self.current_scale_a[: self.pairs],
                "voltage_scale_v": self.voltage_scale_v[: self.pairs]}

    def configure(self) -> None:
        self.write(b"X")  # it may still be streaming from a previous session
        self.drain_input(quiet_s=0.02, max_s=0.5)
        self.framer = self.make_framer()
        self._anchor = None
        self._pending = []
        self.write(b"S")

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
            fr.stops = 0
            self._resync = True
            self._anchor = None
            self.write(b"S")

    def handle_data(self, data: bytes, t_mono: float, t_wall: float) -> None:
        """Decode a chunk in bulk (the device streams thousands of frames per second)."""
        b = self.framer.feed_bulk(data)
        if len(b):
            self.stats.frames_ok += len(b)
            self._frames(b, t_mono, t_wall)

    def _frames(self, b: FrameBatch, t_mono: float, t_wall: float) -> None:
        p = self.pairs
        cur = (b.levels[:, 0:2 * p:2] - 512) * np.asarray(self.current_scale_a[:p])
        volt = b.levels[:, 1:2 * p:2] * np.asarray(self.voltage_scale_v[:p])
        powr = cur * volt
        # split where something was lost: the 1024 µs wrap count across a gap is unknown
        starts = [0] + [int(k) for k in np.nonzero(b.lost)[0] if k > 0] + [len(b)]
        for a, z in zip(starts[:-1], starts[1:]):
            if b.lost[a] or self._resync or self._anchor is None or self._prev_ts is None:
                self._flush(t_mono, t_wall)  # no row mixes frames from both sides of a gap
                self._acc_resync = bool(b.lost[a] or self._resync)
                self._resync = False
                self._anchor = (t_mono, 0)
                self._dev_us = 0
                steps = np.concatenate([[0], np.diff(b.ts[a:z]) % 1024])
            else:
                steps = np.diff(np.concatenate([[self._prev_ts], b.ts[a:z]])) % 1024
            dev_us = self._dev_us + np.cumsum(steps)
            self._dev_us = int(dev_us[-1])
            self._prev_ts = int(b.ts[z - 1])
            self._pending.append((powr[a:z], volt[a:z], cur[a:z], b.marker[a:z],
                                  self._anchor[0] + dev_us / 1e6))
            self._emit_rows(t_mono, t_wall, final=False)

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
            for k in range(self.pairs):
                row[f"power{k}_w"], row[f"voltage{k}_v"], row[f"current{k}_a"] = float(pw[k]), float(vv[k]), float(cc[k])
            row["device_t_s"] = float(dev_t[z - 1])
            row["marker"] = int(mark[a:z].any())
            row["frames"] = z - a
            row["resync"] = int(self._acc_resync)
            self._acc_resync = False
            self._rows.put(Row(t_mono, t_wall, row))
        used = groups[-1][1] if groups else 0
        self._pending = [] if used == n else [(powr[used:], volt[used:], cur[used:], mark[used:], dev_t[used:])]

    def _flush(self, t_mono: float, t_wall: float) -> None:
        """Emit the partial average (frames < average_frames) before a gap."""
        self._emit_rows(t_mono, t_wall, final=True)
        self._pending = []

    def parse(self, frame: tuple[int, list[int], bool]) -> dict[str, Any]:
        """Values of one frame (the reader decodes in bulk; this is the same arithmetic for one frame)."""
        ts, levels, marker = frame
        if len(levels) != N_SENSORS:
            raise InstrumentErrorReply(f"powersensor3: frame with {len(levels)} sensor words")
        v: dict[str, Any] = {"marker": int(marker)}
        total = 0.0
        for k in range(self.pairs):
            i_a = (levels[2 * k] - 512) * self.current_scale_a[k]
            u_v = levels[2 * k + 1] * self.voltage_scale_v[k]
            v[f"current{k}_a"], v[f"voltage{k}_v"], v[f"power{k}_w"] = i_a, u_v, i_a * u_v
            total += i_a * u_v
        v["power_w"] = total
        return v
