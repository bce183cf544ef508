"""The thermal steps' one-SM step and what the fits do with it (issue 30, session 11).

The host that launches kernels warms the card's intake air while any kernel runs, so its rise switches with
every thermal step as the card's slowest pole does; the one-SM step (little card heat, the host as busy)
separates the two. Its small power must not lower the power-trace threshold for "a kernel runs" under a warm
idle card's leakage, and the IPP steady rise of a step slower than the shared one-pole constant is read at
its plateau."""

from __future__ import annotations

import numpy as np
import pytest

from calib.fit.thermal import ThermalFitter
from calib.fit.thermal_network import ThermalNetworkFitter
from calib.segment import ThermalStep


def _step(run_w: float, warm_w: float, idle_w: float = 80.0, heat: np.ndarray | None = None,
          t: np.ndarray | None = None) -> ThermalStep:
    t = np.arange(0.0, 900.0, 1.0) if t is None else t
    heat = np.full(t.size, 60.0) if heat is None else heat
    tc = np.arange(0.0, 600.0, 1.0)
    return ThermalStep(workload="w", per_warp={}, heat_t=t, heat_temp_c=heat, heat_power_w=np.full(t.size, idle_w + run_w),
                       heat_fan_pct=np.full(t.size, 30.0), cool_t=tc, cool_temp_c=np.full(tc.size, 50.0),
                       start_temp_c=40.0, cool_power_w=np.full(tc.size, idle_w + warm_w), heat_s=900.0)


def test_busy_threshold_ignores_a_step_a_warm_idle_card_hides():
    """Steps of 100 and 60 W above idle and a one-SM step of 6 W, a warm card idling 9 W above cold idle
    (leakage): the threshold is a quarter of the lightest step a power trace can tell from that warm idle
    card (15 W), not a quarter of the one-SM step (1.5 W, which counted the idle gaps of a trace after a
    kernel as running: sim:gtx280 unseen trace 1.71 -> 2.41 C). With every step too light to tell, the
    quarter of the lightest stays (no other number to use)."""
    steps = [_step(100.0, 9.0), _step(60.0, 9.0), _step(6.0, 2.0)]
    assert ThermalNetworkFitter._busy_threshold(steps, 80.0) == pytest.approx(15.0)
    assert ThermalNetworkFitter._busy_threshold(steps[:2], 80.0) == pytest.approx(15.0)
    light = [_step(20.0, 9.0), _step(30.0, 9.0)]
    assert ThermalNetworkFitter._busy_threshold(light, 80.0) == pytest.approx(5.0)


def test_steady_rise_of_a_step_slower_than_the_shared_constant_is_read_at_its_plateau():
    """Three one-pole steps (40 s; rises 10, 15, 20 C) and a slow one (150 s, rise 4 C, like the one-SM
    step's host heat through the case air), 900 s each, noise-free readings every second from 40 C: the
    shared one-pole constant is the fast steps', the slow step's one-pole asymptote misses its steady rise
    by 0.4 C (more than 0.3), and the rise read at the plateau is within 0.02 C of it (its last tenth is 5.4-6 of
    its time constants: 0.3 % of the rise is still to come), each fast step's within 0.01 C."""
    t = np.arange(0.0, 900.0, 1.0)
    rises = (10.0, 15.0, 20.0, 4.0)
    taus = (40.0, 40.0, 40.0, 150.0)
    steps = [_step(50.0, 5.0, heat=40.0 + r * -np.expm1(-t / tau), t=t) for r, tau in zip(rises, taus)]
    tau, amps, *_rest, asymptotes = ThermalFitter._pooled(steps, "rise", 40.0)
    assert 38.0 < tau.value < 45.0
    assert abs(asymptotes[3] - 4.0) > 0.3
    assert amps[:3] == pytest.approx(list(rises[:3]), abs=0.01)
    assert amps[3] == pytest.approx(rises[3], abs=0.02)


def test_standard_and_full_campaigns_have_one_one_sm_step_of_little_card_power():
    """sim:gtx280: the standard (6 steps) and full (7) campaigns run one thermal step on one SM, the quick
    one (4 steps of 200 s, too short for the slow pole the step is for) none; that step's cold runtime power
    is under a quarter of the lightest full-chip step's (6.8 against 47 W), so the host's rise dominates it."""
    from microbench.benchmarks import thermal_benchmarks
    from microbench.devices.sim.device import VirtualGPU
    from microbench.devices.sim.presets import get_preset

    dev = VirtualGPU(get_preset("gtx280"), seed=0)
    std = thermal_benchmarks(dev.info, "standard")
    assert [b.name for b in std] == ["thermal/fp32_fma", "thermal/dram", "thermal/app_blackscholes", "thermal/sfu",
                                     "thermal/app_stencil", "thermal/sfu_1sm"]
    assert [b.active_sms for b in std] == [None] * 5 + [1]
    assert sum(b.active_sms == 1 for b in thermal_benchmarks(dev.info, "full")) == 1
    assert all(b.active_sms is None for b in thermal_benchmarks(dev.info, "quick"))

    def run_w(b) -> float:
        _, load = dev.evaluate(b.workload(dev.info))
        return load.dyn_core_w + load.dyn_mem_w

    full_chip = [run_w(b) for b in std[:5]]
    assert run_w(std[5]) < 0.25 * min(full_chip)
