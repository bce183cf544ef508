"""Time structure of a load on the virtual GPU below the 100 ms simulation step.

A kernel's power is not flat on a real GPU: launches with a light tail, phases of compute and memory
traffic, a host loop that launches for a while and then waits. That structure is what part-time power
sampling misses (Yang, Adamek, Armour, arXiv 2312.02741). A :class:`LoadShape` describes it as a square
wave: for ``duty`` of every ``period_s`` the kernel draws its full runtime power, for the rest
``low`` of it (0: the GPU idles in between, as in a square-wave load of known period). The wave starts
(its first high phase) at ``t0_s``. Outside ``[start_s, stop_s)`` the GPU waits (activity 0): the
simulation advances in 100 ms steps, and this is how a kernel starts and ends between two steps (a
host that launches at a chosen instant, e.g. a phase of NVML's sampling grid).

Workloads ask for one with the trait ``power_shape`` = ``{"period_s": ..., "duty": ..., "low": ...,
"start_after_s": ..., "stop_after_s": ...}`` (all optional; the times count from the ``run`` call, the
wave starts with the kernel); without it the load is flat (activity 1).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from calib.core.errors import BadInputError


@dataclass(frozen=True)
class LoadShape:
    """A square-wave activity in [low, 1] (dimensionless) of period ``period_s`` starting at ``t0_s``."""

    period_s: float
    duty: float
    low: float = 0.0
    t0_s: float = 0.0
    start_s: float = -np.inf
    stop_s: float = np.inf

    @classmethod
    def from_trait(cls, trait: Mapping[str, Any] | None, t0_s: float) -> "LoadShape | None":
        """The shape a workload's ``power_shape`` trait asks for, starting at ``t0_s`` (None: flat)."""
        if not trait:
            return None
        try:
            period, duty = float(trait.get("period_s", 1.0)), float(trait.get("duty", 1.0))
            low = float(trait.get("low", 0.0))
            start = float(trait.get("start_after_s", 0.0))
            stop = float(trait.get("stop_after_s", np.inf))
        except (TypeError, ValueError) as e:
            raise BadInputError(f"power_shape {dict(trait)!r}: period_s, duty, low, start_after_s and "
                                "stop_after_s must be numbers") from e
        if not (period > 0 and 0.0 < duty <= 1.0 and 0.0 <= low <= 1.0 and 0.0 <= start < stop):
            raise BadInputError(f"power_shape {dict(trait)!r}: needs period_s > 0, 0 < duty <= 1, 0 <= low <= 1, "
                                "0 <= start_after_s < stop_after_s")
        return cls(period, duty, low, float(t0_s) + start, float(t0_s) + start, float(t0_s) + stop)

    def _high_time(self, t: np.ndarray) -> np.ndarray:
        """Time spent in high phases from ``t0_s`` to ``t`` (s), ``t >= t0_s``."""
        x = t - self.t0_s
        n = np.floor(x / self.period_s)
        return n * self.duty * self.period_s + np.minimum(x - n * self.period_s, self.duty * self.period_s)

    def mean_activity(self, t0_s: np.ndarray, t1_s: np.ndarray) -> np.ndarray:
        """Mean activity over each interval ``[t0_s, t1_s]`` (exact: edges between samples count by
        the time on each side, so a 1 ms sample holding an edge has the mean power of that ms)."""
        a = np.clip(np.asarray(t0_s, dtype=float), self.start_s, self.stop_s)
        b = np.clip(np.asarray(t1_s, dtype=float), self.start_s, self.stop_s)
        base = self.t0_s
        a, b = np.maximum(a, base), np.maximum(b, base)
        high = self._high_time(b) - self._high_time(a)
        inside = b - a
        return (self.low * inside + (1.0 - self.low) * high) / (np.asarray(t1_s, dtype=float) - np.asarray(t0_s, dtype=float))

    def busy_share(self, t0_s: float, t1_s: float) -> float:
        """Share of ``[t0_s, t1_s]`` in which the kernel runs (inside ``[start_s, stop_s)``, and in the
        high phases when ``low`` is 0: the GPU idles between them)."""
        t = np.linspace(t0_s, t1_s, 2001)[:-1] + (t1_s - t0_s) / 4000
        inside = (t >= self.start_s) & (t < self.stop_s)
        if self.low == 0.0:
            inside &= np.mod(t - self.t0_s, self.period_s) < self.duty * self.period_s
        return float(inside.mean())
