"""The sensor logger: a background thread that polls sensors and appends their rows to a session.

:class:`SensorLogger` calls ``sensor.read()`` on every sensor once per ``period_s`` and appends the
returned rows to ``writer.stream(sensor.name, sensor.columns)``. Polled sensors (NVML) take one
sample per call, so ``period_s`` is their sampling period; streaming sensors (serial analyzers) run
their own reader thread and ``read()`` drains what arrived since the last call.

Only known transient errors are tolerated (:class:`TransientSensorError`, and
:class:`calib.core.errors.DeviceNotSupportedError` raised mid-run for a query that worked at probe time):
they are counted per sensor and warned about at a limited rate (1st, 10th, 100th, ... occurrence). Any
other exception stops the logger; it is kept and re-raised by :meth:`SensorLogger.check` and
:meth:`SensorLogger.stop`, so the caller (the campaign or ``calib log``) decides what to do.
"""

from __future__ import annotations

import queue
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from calib.core.errors import DeviceNotSupportedError, TransientSensorError
from microbench.devices.base import Sensor


#: errors the logger counts and survives; everything else stops it
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (TransientSensorError, DeviceNotSupportedError)


@dataclass
class SensorStats:
    """Per-sensor counters of a logger run."""

    rows: int = 0
    reads: int = 0
    transient_errors: int = 0
    last_error: str = ""
    read_time_s: float = 0.0  # total time spent inside read(), s

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "read_time_s": round(self.read_time_s, 6)}


@dataclass
class LoggerStats:
    """Counters of a logger run: ticks made, ticks skipped because a poll overran, per-sensor stats."""

    period_s: float
    started_mono_s: float | None = None
    stopped_mono_s: float | None = None
    ticks: int = 0
    overruns: int = 0
    sensors: dict[str, SensorStats] = field(default_factory=dict)

    @property
    def elapsed_s(self) -> float:
        if self.started_mono_s is None:
            return 0.0
        end = self.stopped_mono_s if self.stopped_mono_s is not None else time.monotonic()
        return end - self.started_mono_s

    def achieved_hz(self, sensor: str) -> float:
        """Rows per second the sensor produced over the run."""
        el = self.elapsed_s
        return self.sensors[sensor].rows / el if el > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"period_s": self.period_s, "elapsed_s": round(self.elapsed_s, 6), "ticks": self.ticks,
                "overruns": self.overruns, "sensors": {k: v.to_dict() for k, v in self.sensors.items()}}


def _warn_rate_limited(count: int, message: str) -> None:
    # 1st, 10th, 100th, ... occurrence: visible without flooding a long run
    if count in (1, 10, 100, 1000, 10000) or count % 100000 == 0:
        warnings.warn(f"{message} (occurrence {count})", RuntimeWarning, stacklevel=3)


class SensorLogger:
    """Poll ``sensors`` every ``period_s`` seconds on a background thread and log their rows.

    Parameters
    ----------
    writer:
        a :class:`calib.core.session.SessionWriter`; one stream per sensor (``sensor.name``).
    sensors:
        the sensors to poll. Stream writers are created in :meth:`start` (caller's thread).
    period_s:
        polling period, s (> 0). Ticks are scheduled on an absolute grid; a late tick runs at once,
        and ticks missed by a whole period are skipped and counted in ``stats.overruns`` (no bursts).
    clock:
        monotonic clock, s (injectable for tests).

    Use as a context manager, or call :meth:`start` and :meth:`stop`. :meth:`stop` drains every sensor
    one last time, so rows produced just before stopping are kept.

    Polling and writing run on two threads joined by a queue, so a slow disk (the session's fsync
    once per second) never delays a poll; rows normally reach the file within milliseconds.
    """

    def __init__(self, writer: Any, sensors: Sequence[Sensor], period_s: float,
                 clock: Callable[[], float] = time.monotonic):
        if not period_s > 0:
            raise ValueError(f"period_s must be > 0, got {period_s!r}")
        names = [s.name for s in sensors]
        if len(set(names)) != len(names):
            raise ValueError(f"sensor names must be unique, got {names}")
        self.writer = writer
        self.sensors = list(sensors)
        self.period_s = float(period_s)
        self._clock = clock
        self.stats = LoggerStats(self.period_s, sensors={n: SensorStats() for n in names})
        self.error: BaseException | None = None
        self._streams: dict[str, Any] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._writer_thread: threading.Thread | None = None
        self._queue: queue.SimpleQueue[tuple[str, list[Any]] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()  # one poll at a time (thread vs the final drain in stop())

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> "SensorLogger":
        if self._thread is not None:
            raise RuntimeError("logger already started")
        for s in self.sensors:
            self._streams[s.name] = self.writer.stream(s.name, s.columns)
        self.stats.started_mono_s = self._clock()
        self._writer_thread = threading.Thread(target=self._write_loop, name="SensorLogger-writer", daemon=True)
        self._writer_thread.start()
        self._thread = threading.Thread(target=self._run, name="SensorLogger", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 5.0) -> LoggerStats:
        """Stop polling, drain every sensor once more, and re-raise a fatal sensor error if one occurred."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                warnings.warn(f"logger thread did not stop within {timeout_s} s", RuntimeWarning, stacklevel=2)
        if self.error is None and self._thread is not None and not self._thread.is_alive():
            self.poll_once()  # rows that arrived between the last tick and now
        if self._writer_thread is not None:
            self._queue.put(None)
            self._writer_thread.join(timeout_s)
        if self.stats.stopped_mono_s is None:
            self.stats.stopped_mono_s = self._clock()
        self.check()
        return self.stats

    def check(self) -> None:
        """Raise the error that stopped the logger, if any (call it between campaign steps)."""
        if self.error is not None:
            raise self.error

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def __enter__(self) -> "SensorLogger":
        return self.start()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            self.stop()
        except BaseException:
            if exc_type is None:  # don't mask the error that ended the with-block
                raise

    # -- polling --------------------------------------------------------------------------------
    def poll_once(self) -> int:
        """Read every sensor once and queue its rows for writing; returns the number of rows read."""
        n = 0
        with self._lock:
            for s in self.sensors:
                st = self.stats.sensors[s.name]
                t0 = self._clock()
                try:
                    rows = s.read()
                except TRANSIENT_ERRORS as e:
                    st.transient_errors += 1
                    st.last_error = str(e)
                    _warn_rate_limited(st.transient_errors, f"sensor {s.name}: {e}")
                    continue
                finally:
                    st.read_time_s += self._clock() - t0
                    st.reads += 1
                if rows:
                    if self._writer_thread is not None and self._writer_thread.is_alive():
                        self._queue.put((s.name, rows))
                    else:  # not started (direct use) or writer gone: write here
                        self._write(s.name, rows)
                st.rows += len(rows)
                n += len(rows)
        return n

    def _write(self, name: str, rows: list[Any]) -> None:
        stream = self._streams[name]
        for r in rows:
            stream.append(r.t_mono_s, r.t_wall_s, r.values)

    def _write_loop(self) -> None:
        try:
            while True:
                item = self._queue.get()
                if item is None:
                    return
                self._write(*item)
        except BaseException as e:  # noqa: BLE001 - e.g. disk full: stop polling, surface it
            self.error = self.error or e
            self._stop.set()

    def _run(self) -> None:
        t_next = self._clock()
        try:
            while not self._stop.is_set():
                self.poll_once()
                self.stats.ticks += 1
                t_next += self.period_s
                now = self._clock()
                if now - t_next >= self.period_s:  # a whole tick missed: skip it instead of bursting
                    missed = int((now - t_next) // self.period_s)
                    self.stats.overruns += missed
                    t_next += missed * self.period_s
                self._stop.wait(max(0.0, t_next - self._clock()))
        except BaseException as e:  # noqa: BLE001 - kept and re-raised in the caller's thread
            self.error = e
        finally:
            self.stats.stopped_mono_s = self._clock()
