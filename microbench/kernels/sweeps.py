"""Sweeps over the kernels: arithmetic intensity, active SMs, warps per SM.

Each generator returns :class:`SweepPoint` s (kernel, parameters, launch) that
:meth:`microbench.kernels.runner.KernelRunner.prepare` accepts and whose per-warp counts come from
the catalog (``catalog.get(p.kernel).per_warp(p.params)``).

- :func:`intensity_sweep`: mixbench-style, ``k`` dependent FMAs per loaded element (``fma_intensity``),
  k from 0 (pure streaming) to 256 (compute bound), same launch for every point.
- :func:`active_sm_sweep`: one block per SM on 1 .. all SMs with *constant total work*: the
  iteration count grows as the SM count shrinks (rounded; the exact work of every point is in its
  parameters). The runner enforces one block per SM (see its module docstring).
- :func:`warps_per_sm_sweep`: 1 .. 64 warps per SM on every SM, as blocks per SM x warps per block.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from calib.core.errors import BadInputError
from microbench.devices.base import Launch
from microbench.kernels import catalog

#: k values of the mixbench-style sweep (dependent FMAs per loaded element)
INTENSITY_K: tuple[int, ...] = (0, 1, 2, 4, 8, 16, 32, 64, 128, 256)


@dataclass(frozen=True)
class SweepPoint:
    kernel: str
    params: Mapping[str, Any]
    launch: Launch

    @property
    def total_warp_trips(self) -> float:
        """Warps x trips of the hot loop: the work of one launch."""
        return self.launch.blocks * self.launch.warps_per_block * float(self.params["iters"])


def intensity_sweep(launch: Launch, ks: Iterable[int] = INTENSITY_K, **params: Any) -> list[SweepPoint]:
    """``fma_intensity`` at each k (k FMAs per element; flops per byte = (2k + 1) / 4)."""
    spec = catalog.get("fma_intensity")
    return [SweepPoint("fma_intensity", spec.params(**{**params, "k": int(k)}), launch) for k in ks]


def sm_points(sm_count: int, n_points: int) -> list[int]:
    """About ``n_points`` SM counts from 1 to ``sm_count``, geometrically spaced, always including both ends."""
    if sm_count < 1 or n_points < 1:
        raise BadInputError("sm_count and n_points must be positive")
    return sorted({round(float(x)) for x in np.geomspace(1, sm_count, n_points)} | {1, sm_count})


def active_sm_sweep(kernel: str, sm_count: int, points: Sequence[int] | int, warps_per_block: int = 8,
                    **params: Any) -> list[SweepPoint]:
    """One block of ``warps_per_block`` warps per SM on each number of SMs, constant total work.

    ``params["iters"]`` (or the kernel's default) is the iteration count with all SMs active.
    """
    spec = catalog.get(kernel)
    base = spec.params(**params)
    pts = sm_points(sm_count, points) if isinstance(points, int) else sorted(set(points))
    if not pts or pts[0] < 1 or pts[-1] > sm_count:
        raise BadInputError(f"active SM counts must be in [1, {sm_count}], not {pts}")
    return [SweepPoint(kernel, spec.params(**{**params, "iters": max(1, round(base["iters"] * sm_count / n))}),
                       Launch(blocks=n, threads_per_block=32 * warps_per_block, active_sms=n)) for n in pts]


def warps_per_sm_sweep(kernel: str, sm_count: int, warps: Iterable[int] = (1, 2, 4, 8, 16, 32, 48, 64),
                       max_warps_per_block: int = 32, **params: Any) -> list[SweepPoint]:
    """Every SM busy with w warps: ceil(w / max_warps_per_block) blocks per SM sharing them evenly."""
    spec = catalog.get(kernel)
    p = spec.params(**params)
    out = []
    for w in warps:
        if w < 1:
            raise BadInputError(f"warps per SM must be positive, not {w}")
        bps = -(-w // max_warps_per_block)
        if w % bps:
            raise BadInputError(f"{w} warps per SM cannot be split evenly into {bps} blocks")
        out.append(SweepPoint(kernel, p, Launch(blocks=sm_count * bps, threads_per_block=32 * (w // bps),
                                                active_sms=sm_count)))
    return out
