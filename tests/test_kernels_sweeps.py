"""Sweep generators: intensity, active SMs (constant total work), warps per SM."""

from __future__ import annotations

import pytest

from calib.core.errors import BadInputError
from microbench.devices.base import Launch
from microbench.kernels import catalog, sweeps


def test_intensity_sweep_covers_0_to_256() -> None:
    pts = sweeps.intensity_sweep(Launch(108 * 4, 256, 108))
    assert [p.params["k"] for p in pts] == [0, 1, 2, 4, 8, 16, 32, 64, 128, 256]
    spec = catalog.get("fma_intensity")
    fp = [spec.per_trip(p.params)["fp"] for p in pts]
    loads = spec.per_trip(pts[0].params)["global"]
    assert fp == [loads * (k + 1) for k in (0, 1, 2, 4, 8, 16, 32, 64, 128, 256)]


def test_active_sm_sweep_keeps_total_work() -> None:
    pts = sweeps.active_sm_sweep("fp32_fma", 80, [1, 2, 5, 10, 40, 80], iters=1000)
    for p in pts:
        assert p.launch.blocks == p.launch.active_sms  # one block per SM
        assert p.launch.warps_per_sm == 8
    work = [p.total_warp_trips for p in pts]
    assert work[-1] == 80 * 8 * 1000
    assert all(abs(w - work[-1]) / work[-1] < 1e-3 for w in work)
    with pytest.raises(BadInputError, match=r"active SM counts must be in \[1, 80\]"):
        sweeps.active_sm_sweep("fp32_fma", 80, [0, 4])


def test_sm_points() -> None:
    assert sweeps.sm_points(132, 6) == [1, 3, 7, 19, 50, 132]
    assert sweeps.sm_points(1, 5) == [1]


def test_warps_per_sm_sweep() -> None:
    pts = sweeps.warps_per_sm_sweep("dram", 108, (1, 8, 32, 48, 64))
    assert [p.launch.warps_per_sm for p in pts] == [1, 8, 32, 48, 64]
    assert [p.launch.threads_per_block for p in pts] == [32, 256, 1024, 768, 1024]
    assert all(p.launch.active_sms == 108 for p in pts)
    with pytest.raises(BadInputError, match="cannot be split evenly"):
        sweeps.warps_per_sm_sweep("dram", 108, (33,))
