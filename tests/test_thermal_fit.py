"""The IPP thermal fit (calib.fit.thermal) against the virtual GPU's hidden physics, on a card whose fan
moves while it heats.

The campaign's own thermal steps barely move the fan of the stock presets (sigma moved from 13.8 % to 17.3 %
off its truth when the fan power was not subtracted, inside a 25 % tolerance). Here a virtual GTX 280 whose
fan starts ramping two degrees above idle and draws 40 W at full speed (the stock card: 7 W, ramping at
69 C) runs the quick campaign's fan sweep and thermal steps: the fan goes from 27 % to 55 % duty during
heating, so its power (0.8 W -> 6.7 W) is as large as the leakage rise itself. Expected values come from the
simulator's physics (its exponential leakage law and its steady states), never from the fitter's equations.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest

FAN_W = 40.0


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    from calib.core.session import read_session
    from calib.fit.thermal import SIGMA_SKIP_S, ThermalFitter
    from calib.segment import IdleBaseline, SessionData, fan_sweep, power_stream, thermal_steps
    from microbench.campaign import Campaign, build_steps
    from microbench.devices.sim.device import VirtualGPU
    from microbench.devices.sim.presets import get_preset

    base = get_preset("gtx280")
    preset = dataclasses.replace(base, power=dataclasses.replace(base.power, fan_max_w=FAN_W),
                                 thermal=dataclasses.replace(base.thermal, fan_t0_c=58.0, fan_gain_per_c=0.04))
    dev = VirtualGPU(preset, seed=0)
    camp = Campaign(dev, "quick", seed=0)
    camp.benches = []   # the idle baseline, the fan sweep and the thermal steps only
    camp.steps = build_steps(camp.spec, [], camp.thermal, camp.fan_control, [])
    d = tmp_path_factory.mktemp("thermal") / "s"
    camp.run(d)
    sess = read_session(d)
    steps, fan = thermal_steps(sess), fan_sweep(sess)
    readings = sess.readings(power_stream(sess))
    mk = sess.markers()
    base_w = mk[mk["workload"] == "idle_baseline"]["t_mono_s"]
    idle = readings[(readings["t_mono_s"] > base_w.min() + 1.3) & (readings["t_mono_s"] <= base_w.max())]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = SessionData(idle=IdleBaseline(float(idle["temp_c"].mean()), 0.3, float(idle["power_w"].mean()), None),
                           thermal_steps=steps, fan=fan)
        fit = ThermalFitter().fit(data)
    drift_c = np.concatenate([s.heat_temp_c[s.heat_t >= SIGMA_SKIP_S] for s in steps])
    return {"fit": fit, "params": {p.name: p for p in fit.params_}, "preset": preset, "dev": dev, "steps": steps,
            "drift_c": drift_c, "session": d}


def _leak_slope_w_per_c(preset, temp_c: float) -> float:
    """The simulator's leakage, ``leak_ref_w exp(k (T - T_ref))`` at the default voltage, differentiated."""
    pp = preset.power
    return pp.leak_ref_w * pp.leak_k_per_c * math.exp(pp.leak_k_per_c * (temp_c - pp.leak_ref_c))


def test_the_fan_moves_while_the_card_heats(fitted):
    """The premise of the other tests: the fan power changes during heating as much as the leakage does."""
    duty = np.concatenate([s.heat_fan_pct for s in fitted["steps"]]) / 100.0
    fan_span_w = FAN_W * (duty.max() ** 3 - duty.min() ** 3)
    t = fitted["drift_c"]
    leak_span_w = _leak_slope_w_per_c(fitted["preset"], t.min()) * (t.max() - t.min())
    assert duty.min() < 0.3 and duty.max() > 0.5
    assert fan_span_w > leak_span_w


def test_sigma_is_the_leakage_slope_with_the_fan_power_removed(fitted):
    """The bug: sigma's drift without the fan power subtracted (calib/fit/thermal.py), which read
    1.26 W/C here against a leakage slope of 0.41-0.52 W/C (the fan's own power rise taken for leakage).

    Expected (physics, not the fitter): sigma is the leakage secant from the idle equilibrium to the steady
    temperature of the first thermal workload (tests/test_thermal_sigma.py); leakage is convex, so it lies
    between the leakage's tangents at those two temperatures (3 statistical standard errors added for the
    noise), and the stated total uncertainty reaches the secant itself."""
    from microbench.benchmarks import thermal_benchmarks

    preset, dev = fitted["preset"], fitted["dev"]
    sigma = fitted["params"]["sigma_w_per_c"]
    _, load = dev.evaluate(thermal_benchmarks(dev.info, "quick")[0].workload(dev.info))
    idle_c = preset.steady_state()["sensor_c"]
    hot_c = preset.steady_state(load.dyn_core_w + load.dyn_mem_w, load.dyn_mem_w, host_busy=True)["sensor_c"]
    lo, hi = _leak_slope_w_per_c(preset, idle_c), _leak_slope_w_per_c(preset, hot_c)
    assert lo - 3 * sigma.stderr <= sigma.value <= hi + 3 * sigma.stderr, (sigma.value, lo, hi)
    pp = preset.power
    secant = pp.leak_ref_w * (math.exp(pp.leak_k_per_c * (hot_c - pp.leak_ref_c))
                              - math.exp(pp.leak_k_per_c * (idle_c - pp.leak_ref_c))) / (hot_c - idle_c)
    assert abs(sigma.value - secant) <= 3 * sigma.stderr_total, (sigma.value, secant, sigma.stderr_total)


def test_fan_power_is_the_fan_of_the_physics(fitted):
    """The fan's power at full duty (cube law of fan affinity) is the simulator's design value, within 3
    of its total standard errors (a square law, or a sweep read off the wrong column, lands outside)."""
    fan = fitted["params"]["fan_max_power_w"]
    assert abs(fan.value - FAN_W) <= 3 * fan.stderr_total, (fan.value, fan.stderr_total)


def test_max_temp_predicts_the_steady_rise_of_the_physics(fitted):
    """Eq. (19), Max_temp = mu P + lambda + rho MI, is the steady rise above the idle temperature for the
    cold runtime power P above idle. The bugs: delta taken as the absolute temperature (the thesis's
    erratum: +56 C here), or mu/lambda fitted against board power instead of the power above idle (lambda
    off by mu x idle power, -14 C here). Expected: the simulator's steady state of each thermal workload
    (its runtime power, the exact three-node network, the fan's control), within 3 standard errors of the
    prediction from the section's total covariance of (mu, lambda, rho)."""
    from calib.core.units import mem_intensity
    from microbench.benchmarks import thermal_benchmarks

    fit, preset, dev = fitted["fit"], fitted["preset"], fitted["dev"]
    sec = fit.section_
    cov = sec.covariance_total if sec.covariance_total is not None else sec.covariance
    names = ["mu_c_per_w", "lambda_c", "rho_c"]
    m = cov.sub(names)
    idle_c = preset.steady_state()["sensor_c"]
    for b in thermal_benchmarks(dev.info, "quick"):
        w = b.workload(dev.info)
        _, load = dev.evaluate(w)
        run_w = load.dyn_core_w + load.dyn_mem_w
        rise = preset.steady_state(run_w, load.dyn_mem_w, host_busy=True)["sensor_c"] - idle_c
        mi = mem_intensity(w.per_warp)
        j = np.array([run_w, 1.0, mi])
        pred = float(j @ np.array([sec.value(n) for n in names]))
        se = math.sqrt(float(j @ m @ j))
        assert abs(pred - rise) <= 3 * se, (b.name, pred, rise, se)


def test_rises_are_measured_from_the_cold_idle_window_not_the_mean_of_all_idle_windows(fitted):
    """The bug: the rises of eq. (19) (hence lambda) and Idle_temp were measured from the mean of the
    session's idle windows, and the campaign's last one follows the thermal steps while the heatsink still
    holds their heat (1.5-2 C above the first on the standard campaign), so every rise came out half that
    low, and lambda with them (-26 to -59 % on the committed standard fits of sim-gtx280/580/titanx). Here
    an idle table of the baseline and a warm idle minute: Idle_temp is the simulator's idle equilibrium
    within the reading's quantization, and the rises and Max_temp are those the hand-built cold baseline
    of the other tests gives (the warm minute moves nothing)."""
    import pandas as pd

    from calib.core.session import read_session
    from calib.fit.thermal import ThermalFitter
    from calib.segment import SessionData, fan_sweep, idle_baseline, power_stream, thermal_steps

    sess = read_session(fitted["session"])
    readings, mk = sess.readings(power_stream(sess)), sess.markers()
    # the idle windows as the samples stage tables them (this session has no benchmark window): the baseline,
    # and an idle minute with a step's heat still in the heatsink (100-160 s into the first step's cooling),
    # as the standard campaign's last idle window follows its thermal steps (1.5-2 C warm there)
    t = mk[mk["workload"] == "idle_baseline"]["t_mono_s"]
    base = readings[(readings["t_mono_s"] > t.min() + 1.3) & (readings["t_mono_s"] <= t.max())]
    cool = mk[mk["event"] == "thermal_cool_start"]["t_mono_s"].iloc[0]
    warm = readings[(readings["t_mono_s"] > cool + 100.0) & (readings["t_mono_s"] <= cool + 160.0)]
    samples = pd.DataFrame([{"workload": n, "role": "idle", "temp_c": r["temp_c"].mean(), "power_w": r["power_w"].mean()}
                            for n, r in (("idle_baseline", base), ("idle_warm", warm))])
    idle = samples.set_index("workload")["temp_c"]
    assert idle["idle_warm"] - idle["idle_baseline"] > 0.8   # the premise: the second idle window is warm
    data = SessionData(samples, idle=idle_baseline(samples), thermal_steps=thermal_steps(sess), fan=fan_sweep(sess))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = ThermalFitter().fit(data)
    got, cold = {p.name: p for p in fit.params_}, fitted["params"]
    idle_c = fitted["preset"].steady_state()["sensor_c"]
    # Idle_temp: the physics' idle equilibrium within the reading's quantization, its error not inflated
    assert abs(got["idle_temp_c"].value - idle_c) <= 1.0 / math.sqrt(12.0), (got["idle_temp_c"].value, idle_c)
    assert got["idle_temp_c"].stderr <= 0.3
    # the rises and Max_temp: what the cold baseline alone gives (before: every rise 0.52 C low, lambda too)
    np.testing.assert_allclose(fit.deltas_, fitted["fit"].deltas_, atol=0.02)
    for n in ("mu_c_per_w", "lambda_c", "rho_c"):
        assert got[n].value == pytest.approx(cold[n].value, abs=0.02 if n != "mu_c_per_w" else 1e-4), n


@pytest.mark.parametrize("scale", [1.0, 2.0, 0.5])
def test_committed_ipp_thermal_error_bars_are_neither_too_narrow_nor_too_wide(scale):
    """The IPP thermal section (Max_temp plane, time constants, sigma, fan power, Idle_temp) of the five
    committed reference fits (standard campaign), pooled (38 values): the truth within 2 stderr_total for
    at least 85 % and the median |fitted - truth| / stderr_total within the issue's 0.45-0.9 (about 0.67 for
    honest errors). Passes as committed (94.7 %, 0.64); fails with every stderr_total doubled (median 0.32)
    or halved (68 % within 2), and on the files before session 8 (median 0.21: the plane's statistical error
    from its 2-dof residuals and the delete-one-step jackknife, 10-100x the plane's errors). Session 9 made
    the band's lower end the issue's: the time constants' total is no longer the first-half window's shift
    (2-7x their errors) and Idle_temp's error no longer the 1/sqrt(12) C rounding floor on a dithered sensor
    (tests/benchmarks/thermal_results.md)."""
    from pathlib import Path

    from calib.core.params import load
    from calib.report.recovery import recovery_report
    from recovery_rule import honest_bars

    root = Path(__file__).resolve().parents[1]
    ratios = []
    for preset in ("gtx280", "gtx580", "titanx", "mi250x", "mi300x"):
        pf = load(root / "fitted" / f"sim-{preset}.json")
        ratios += [abs(r["fitted"] - r["truth"]) / (scale * r["stderr_total"])
                   for r in recovery_report(preset, pf, None)["parameters"]
                   if r["parameter"].startswith("thermal.") and r.get("stderr_total") and r["fitted"] is not None
                   and r["truth"] is not None]
    assert len(ratios) >= 30
    honest, within, med = honest_bars(ratios, (0.45, 0.9))
    assert honest == (scale == 1.0), (scale, round(within, 3), round(med, 3))


def test_a_clean_integer_sensor_is_told_from_a_dithered_one():
    """The Max_temp plane keeps a step's whole quantization error only where the readings are not dithered
    (calib.fit.thermal._dithered): whole-degree readings of a settling curve with 0.3 C noise turn back and
    forth over the tail; without noise they climb one way or stay put."""
    from calib.fit.thermal import _dithered

    t = np.arange(0.0, 900.0, 1.0)
    curve = 40.0 + 17.3 * (1.0 - np.exp(-t / 48.0))
    rng = np.random.default_rng(1)
    assert _dithered(np.round(curve + rng.normal(0.0, 0.3, t.size)))
    assert not _dithered(np.round(curve))
    assert not _dithered(np.full(t.size, 57.0))
