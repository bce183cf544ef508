"""IPP's sigma (eq. 22) as the model uses it, P = P0 + sigma (T - Idle_temp): the leakage secant from the idle
temperature to the reference thermal step's steady temperature, measured from the heating drift
(calib/fit/thermal.py), against the virtual GPU's hidden physics.

The bug: sigma was the least-squares slope of the drift, i.e. the leakage's local slope over the steps'
temperature ranges, where leakage is convex: +10 to +53 % above the secant on five of the eight standard
presets (tests/benchmarks/thermal_results.md, session 6). Expected values come from the simulator's own
leakage law (``leak_ref_w exp(k (T - T_ref))``) at its idle equilibrium and at the first thermal workload's
steady state (the exact three-node network and fan), never from the fitter's equations.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest


def _thermal_session(preset_name: str, campaign: str, seed: int, tmp_path):
    """The campaign's idle baseline, fan sweep and thermal steps only, on the virtual GPU; their SessionData."""
    from calib.core.session import read_session
    from calib.segment import IdleBaseline, SessionData, fan_sweep, power_stream, thermal_steps
    from microbench.campaign import Campaign, build_steps
    from microbench.devices.sim.device import VirtualGPU
    from microbench.devices.sim.presets import get_preset

    dev = VirtualGPU(get_preset(preset_name), seed=seed)
    camp = Campaign(dev, campaign, seed=seed)
    camp.benches = []
    camp.steps = build_steps(camp.spec, [], camp.thermal, camp.fan_control, [])
    d = tmp_path / f"{preset_name}-{campaign}-{seed}"
    camp.run(d)
    sess = read_session(d)
    readings = sess.readings(power_stream(sess))
    mk = sess.markers()
    base = mk[mk["workload"] == "idle_baseline"]["t_mono_s"]
    idle = readings[(readings["t_mono_s"] > base.min() + 1.3) & (readings["t_mono_s"] <= base.max())]
    return SessionData(idle=IdleBaseline(float(idle["temp_c"].mean()), 0.3, float(idle["power_w"].mean()), None),
                       thermal_steps=thermal_steps(sess), fan=fan_sweep(sess))


def _physics_secant(preset_name: str, campaign: str) -> tuple[float, float, float]:
    """(secant W/C, idle sensor temperature C, reference step's steady sensor temperature C) of the
    simulator's leakage between its idle equilibrium and the steady state of the campaign's first thermal
    workload."""
    from microbench.benchmarks import thermal_benchmarks
    from microbench.devices.sim.device import VirtualGPU
    from microbench.devices.sim.presets import get_preset

    p = get_preset(preset_name)
    pp = p.power
    dev = VirtualGPU(p, seed=0)
    _, load = dev.evaluate(thermal_benchmarks(dev.info, campaign)[0].workload(dev.info))
    idle_c = p.steady_state()["sensor_c"]
    hot_c = p.steady_state(load.dyn_core_w + load.dyn_mem_w, load.dyn_mem_w, host_busy=True)["sensor_c"]

    def leak(t: float) -> float:
        return pp.leak_ref_w * math.exp(pp.leak_k_per_c * (t - pp.leak_ref_c))

    return (leak(hot_c) - leak(idle_c)) / (hot_c - idle_c), idle_c, hot_c


@pytest.fixture(scope="module", params=["gtx280_runaway", "gtx580_nonadd"])
def fitted(request, tmp_path_factory):
    from calib.fit.thermal import ThermalFitter

    data = _thermal_session(request.param, "standard", 1, tmp_path_factory.mktemp("sigma"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = ThermalFitter().fit(data)
    return {"preset": request.param, "fit": fit, "params": {p.name: p for p in fit.params_}}


def test_sigma_is_the_leakage_secant_from_idle_to_the_reference_step(fitted):
    """gtx280_runaway (leakage exp(0.035/C), its heavier steps settle at 95-104 C) read +52.6 % with the drift's
    slope, gtx580_nonadd (exp(0.032/C), a fan ramping 30 -> 62 %) +19.7 %. Now within 5 % of the physics' secant
    and within 3 of its total standard errors."""
    truth, _, _ = _physics_secant(fitted["preset"], "standard")
    sigma = fitted["params"]["sigma_w_per_c"]
    assert abs(sigma.value - truth) <= 0.05 * truth, (sigma.value, truth)
    assert abs(sigma.value - truth) <= 3 * sigma.stderr_total, (sigma.value, truth, sigma.stderr_total)


def test_the_secant_is_taken_to_the_reference_steps_steady_temperature(fitted):
    """The section says where the secant runs: from Idle_temp to the first thermal step's steady temperature
    (its fitted rise above idle), each within 0.5 C of the physics' idle equilibrium and steady state."""
    _, idle_c, hot_c = _physics_secant(fitted["preset"], "standard")
    sig = fitted["fit"].section_.structure["sigma"]
    assert sig["reference_step"] == "thermal/fp32_fma"
    assert abs(sig["secant_from_c"] - idle_c) <= 0.5, (sig["secant_from_c"], idle_c)
    assert abs(sig["secant_to_c"] - hot_c) <= 0.5, (sig["secant_to_c"], hot_c)


def test_the_binned_drift_finds_the_leakage_curvature(fitted):
    """The cause of the old bias was hidden by the readings' noise: an exponential fitted to the raw drift found
    k = 0.0003-0.0045 /C against the physics' 0.018-0.035 (each step's top, at its steady temperature, is noise
    in x and flattens P(T)). Averaged over 10 s bins the curvature is the simulator's within 15 %."""
    from microbench.devices.sim.presets import get_preset

    k_true = get_preset(fitted["preset"]).power.leak_k_per_c
    k = fitted["fit"].section_.structure["sigma"]["leak_k_per_c"]
    assert abs(k - k_true) <= 0.15 * k_true, (k, k_true)



#: every standard preset (the study presets too) on the quick campaign, noise seeds 1-3: 24 fits
CAL_PRESETS = ("gtx280", "gtx580", "titanx", "gtx580_nonadd", "titanx_nonadd", "gtx280_1pole", "gtx280_2pole",
               "gtx280_runaway")
CAL_SEEDS = (1, 2, 3)


@pytest.fixture(scope="module")
def seed_fits(tmp_path_factory):
    """(preset, seed, sigma W/C, its stderr_total W/C, the physics' secant W/C) of every fit."""
    from calib.fit.thermal import ThermalFitter

    out = []
    for preset in CAL_PRESETS:
        truth, _, _ = _physics_secant(preset, "quick")
        for seed in CAL_SEEDS:
            data = _thermal_session(preset, "quick", seed, tmp_path_factory.mktemp("cal"))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sigma = {p.name: p for p in ThermalFitter().fit(data).params_}["sigma_w_per_c"]
            out.append((preset, seed, sigma.value, sigma.stderr_total, truth))
    return out


def _z(seed_fits) -> np.ndarray:
    """|error| / stderr_total of every fit."""
    return np.array([abs(v - t) / se for _, _, v, se, t in seed_fits])


def test_sigma_stderr_total_covers_the_truth(seed_fits):
    """The truth within 2 total standard errors in at least 90 % of the 24 fits, never beyond 3 (measured: 23 of
    24, largest 2.3; with the stated errors halved 16 of 24: this fails). The quick campaign's 200 s steps leave
    the reference step's steady temperature an extrapolation (2 C low on gtx280_2pole): its change over the
    first half of the traces is in the total (without it: 14 of the 17 of these fits measured then)."""
    z = _z(seed_fits)
    assert np.mean(z <= 2.0) >= 0.9 and z.max() <= 3.0, np.round(z, 2)


def test_sigma_stderr_total_is_not_wider_than_the_errors(seed_fits):
    """The median |error| / stderr_total of the same fits is 0.45-0.9 (a normal error with an exact standard
    error: 0.67; measured 0.75; with the stated errors doubled 0.37: this fails). The step jackknife was in
    sigma's total before and made it 2-4 x the seed-to-seed spread on the standard campaign."""
    z = _z(seed_fits)
    assert 0.45 <= np.median(z) <= 0.9, (np.median(z), np.round(z, 2))
