"""Replay a documented command/reply transcript against a driver, without a port.

A transcript is the instrument's side of a conversation, as its manual or its maker's host code gives
it: a list of ``(command, reply)`` or ``(command, reply, delay_s)`` steps. :class:`ReplayPort` is a
pyserial-like object that checks every byte the driver writes against the next expected command and
answers with the reply (after ``delay_s``); :func:`replay` runs a driver's setup, a few reader steps
and its shutdown over one, then checks that the driver said exactly what the transcript says, in
order, and nothing else (after pymeasure's ``expected_protocol``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

Step = tuple[bytes, bytes | None] | tuple[bytes, bytes | None, float]


class ReplayPort:
    """The instrument's side of a transcript, behind the subset of :class:`serial.Serial` the drivers use.

    ``read_timeout_s``: how long ``read`` waits when nothing is due (as a real port's timeout).
    """

    def __init__(self, transcript: Sequence[Step], read_timeout_s: float = 0.002):
        self.steps = [(s[0], s[1], s[2] if len(s) > 2 else 0.0) for s in transcript]  # type: ignore[misc]
        self.i = 0
        self.read_timeout_s = read_timeout_s
        self._rx = bytearray()  # written by the driver, not matched yet
        self._out = bytearray()  # due to the driver
        self._later: list[tuple[float, bytes]] = []
        self.unexpected: list[tuple[int, bytes]] = []  # (step index, bytes) that matched no command
        self.written: list[bytes] = []
        self.is_open = True
        self._lock = threading.Lock()

    # -- what the driver sees -------------------------------------------------------------------
    def write(self, data: bytes) -> int:
        with self._lock:
            self.written.append(bytes(data))
            self._rx += data
            self._match()
        return len(data)

    def flush(self) -> None:
        pass

    def _release(self) -> None:
        now = time.monotonic()
        while self._later and self._later[0][0] <= now:
            self._out += self._later.pop(0)[1]

    @property
    def in_waiting(self) -> int:
        with self._lock:
            self._release()
            return len(self._out)

    def read(self, n: int = 1) -> bytes:
        with self._lock:
            self._release()
            if not self._out:
                wait = self.read_timeout_s
                if self._later:
                    wait = min(wait, max(0.0, self._later[0][0] - time.monotonic()))
            else:
                wait = 0.0
        if wait:
            time.sleep(wait)
        with self._lock:
            self._release()
            data = bytes(self._out[:n])
            del self._out[:n]
            return data

    def reset_input_buffer(self) -> None:
        with self._lock:
            self._out.clear()

    def close(self) -> None:
        self.is_open = False

    # -- matching -------------------------------------------------------------------------------
    def _match(self) -> None:
        while self._rx:
            if self.i >= len(self.steps):
                self.unexpected.append((self.i, bytes(self._rx)))
                self._rx.clear()
                return
            cmd, reply, delay = self.steps[self.i]
            if self._rx.startswith(cmd):
                del self._rx[: len(cmd)]
                self.i += 1
                if reply:
                    if delay:
                        self._later.append((time.monotonic() + delay, reply))
                        self._later.sort(key=lambda x: x[0])
                    else:
                        self._out += reply
                continue
            if cmd.startswith(bytes(self._rx)):
                return  # the rest of the command is still to come
            self.unexpected.append((self.i, bytes(self._rx)))
            self._rx.clear()
            return

    @property
    def consumed(self) -> bool:
        return self.i == len(self.steps)

    def check(self) -> None:
        """AssertionError unless every step was used, in order, and nothing else was written."""
        problems = []
        if self.unexpected:
            i, data = self.unexpected[0]
            want = self.steps[i][0] if i < len(self.steps) else "(end of transcript)"
            problems.append(f"at step {i} the driver wrote {data!r}, the transcript expects {want!r}")
        if not self.consumed and not self.unexpected:
            problems.append(f"the driver stopped at step {self.i}: next expected {self.steps[self.i][0]!r}")
        if problems:
            raise AssertionError("; ".join(problems))


def replay(protocol: str, transcript: Sequence[Step], *, steps: int = 1, **options: Any) -> tuple[Any, list[Any]]:
    """Connect a ``protocol`` driver over a :class:`ReplayPort` (its setup must follow the transcript),
    run ``steps`` reader steps (polls or reads), shut it down, and check the transcript was followed
    exactly (:meth:`ReplayPort.check`). Returns ``(driver, rows)``."""
    from microbench.instruments import open_analyzer

    port = ReplayPort(transcript)
    drv = open_analyzer(f"replay:{protocol}", protocol, transport=lambda: port, reconnect=False, **options)
    try:
        drv.connect()
        for _ in range(steps):
            drv.step()
    finally:
        drv.close()
    rows = drv.take_rows()
    port.check()
    return drv, rows
