"""Time structure of a load on the virtual GPU below the 100 ms simulation step.

A kernel's power is not flat on a real GPU: launches with a light tail, phases of compute and memory
traffic, a host loop that launches for a while and then waits. That structure is what part-time power
sampling misses (Yang, Adamek, Armour, arXiv 2312.02741). A :class:`LoadShape` describes it as a square
wave: for ``duty`` of every ``period_s`` the kernel draws its full runtime power, for the rest
``low`` of it (0: the GPU idles in between, as in a square-wave load of known period). The wave starts
(its first high phase) at ``t0_s``.

Workloads ask for one with the trait ``power_shape`` = ``{"period_s": ..., "duty": ..., "low": ...}``;
without it the load is flat (activity 1).
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

    @classmethod
    def from_trait(cls, trait: Mapping[str, Any] | None, t0_s: float) -> "LoadShape | None":
        """The shape a workload's ``power_shape`` trait asks for, starting at ``t0_s`` (None: flat)."""
        if not trait:
            return None
        try:
            period, duty, low = float(trait["period_s"]), float(trait["duty"]), float(trait.get("low", 0.0))
        except (KeyError, TypeError, ValueError) as e:
            raise BadInputError(f"power_shape {dict(trait)!r}: needs numbers period_s, duty (and low)") from e
        if not (period > 0 and 0.0 < duty <= 1.0 and 0.0 <= low <= 1.0):
            raise BadInputError(f"power_shape {dict(trait)!r}: needs period_s > 0, 0 < duty <= 1, 0 <= low <= 1")
        return cls(period, duty, low, float(t0_s))

    def activity(self, t_s: np.ndarray) -> np.ndarray:
        """Activity (share of the full runtime power) at times ``t_s``."""
        phase = np.mod(np.asarray(t_s, dtype=float) - self.t0_s, self.period_s)
        return np.where(phase < self.duty * self.period_s, 1.0, self.low)

    def mean_activity(self) -> float:
        """Long-run mean of :meth:`activity`."""
        return self.duty + (1.0 - self.duty) * self.low
