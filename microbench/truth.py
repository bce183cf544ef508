"""Ground truth of the virtual GPU presets, in the terms of the fitted model.

Only :mod:`calib.report.recovery` (and tests of the simulator) read this module; the fitter
never does. Model-level truths are either design values of the hidden physics (MaxPower per unit at
AR = 1, Const_SM, activation, beta) or exact consequences of it, computed without noise:

- ``const_sm_power_w``, ``activation_power_w`` of a GPU whose idle SMs are partly clock-gated while a
  kernel runs (``sm_scaling="gated"``): one more active SM's increment, and the constant of a running
  kernel with the idle SMs' draw (no launch can separate the two from the physics' design values);

- ``idle_power_w``, ``idle_temp_c``: the idle thermal/power equilibrium at default clocks;
- ``rc_rise_s``, ``rc_decay_s``: single-pole time constants that fit best (least squares) the noise-free,
  unquantized sensor temperature of the session's campaign's thermal steps at every simulation step, the
  instants the sensor's readings sample (the standard campaign's steps by default; a one-pole constant of a
  multi-pole card depends on the window and the instants it is fitted over), each started after the
  campaign's settle-to-idle cooldown (the physics has three poles and a temperature-controlled fan, so
  "the" RC constant is defined by this protocol);
- ``sigma_w_per_c``: the slope of leakage power between the idle temperature and the steady temperature
  of the reference thermal step (leakage is exponential, so this is a secant);
- ``mu_c_per_w``, ``lambda_c``, ``rho_c``: the least-squares plane through the exact steady-state
  temperature rises of the campaign's thermal workloads (the steps its sessions run, as for the RC
  constants) vs their cold runtime power and memory intensity (IPP eq. 19): a plane through a few points
  is defined by which points, and a session cannot estimate one through workloads it did not run;
- ``fan_max_power_w``: fan power at 100 % duty.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np
from calib.core.units import mem_intensity
from microbench.benchmarks import CAMPAIGNS, thermal_benchmarks
from microbench.devices.sim.presets import Preset, get_preset
from microbench.protocol import wait_for_temperature

#: the thermal protocol that defines the RC truths
RC_PROTOCOL = "standard"


def _rise(t: np.ndarray, t0: float, delta: float, tau: float) -> np.ndarray:
    return t0 + delta * (1.0 - np.exp(-t / tau))


def _decay(t: np.ndarray, tinf: float, gamma: float, tau: float) -> np.ndarray:
    return tinf + gamma * np.exp(-t / tau)


def _pooled_tau(curves: list[tuple[np.ndarray, np.ndarray]], kind: str) -> float:
    """Shared time constant of several step curves, each with its own level and amplitude."""
    from scipy.optimize import least_squares

    def resid(x: np.ndarray) -> np.ndarray:
        tau = x[0]
        out = []
        for i, (t, y) in enumerate(curves):
            a, b = x[1 + 2 * i], x[2 + 2 * i]
            model = _rise(t, a, b, tau) if kind == "rise" else _decay(t, a, b, tau)
            out.append(model - y)
        return np.concatenate(out)

    x0 = [40.0]
    for t, y in curves:
        x0 += [float(y[0]), float(y[-1] - y[0])] if kind == "rise" else [float(y[-1]), float(y[0] - y[-1])]
    return float(least_squares(resid, x0).x[0])


def _record(dev: Any, workload: Any, duration_s: float) -> np.ndarray:
    """Run ``workload`` (None: idle) for ``duration_s`` seconds as one call of the campaign does and return
    the noise-free, unquantized sensor temperature after every simulation step (C): the trace the sensor's
    readings sample (every ``DT_S``; a one-pole constant of a multi-pole trace depends on which instants it
    is fitted at, tests/benchmarks/thermal_results.md session 9)."""
    from microbench.devices.sim.device import DT_S

    # the state dev.run / dev.idle set, then the physics one step at a time (dev.run would round a step up to
    # the kernel's length)
    if workload is None:
        dev._start_idle()
    else:
        dev._start_kernel(workload)
    out = []
    for _ in range(int(round(duration_s / DT_S))):
        dev._advance(DT_S)
        out.append(dev._sensor_temp())
    return np.array(out)


def _thermal_traces(preset: Preset, campaign: str = RC_PROTOCOL) -> list[dict[str, Any]]:
    """The campaign's thermal steps run noise-free: per step its heat and cool traces, (time since the phase's
    start s, sensor temperature C) after every simulation step, each step in the campaign's chunks and
    after its settle-to-idle."""
    from microbench.devices.sim.device import DT_S, VirtualGPU

    spec = CAMPAIGNS[campaign]
    dev = VirtualGPU(preset, seed=0)
    idle_c = dev.temperature_c()
    chunk = spec.thermal_chunk_s
    out = []
    for b in thermal_benchmarks(dev.info, campaign):
        w = b.workload(dev.info)
        heat = np.concatenate([_record(dev, w, chunk) for _ in range(int(spec.heat_s / chunk))])
        cool = np.concatenate([_record(dev, None, chunk) for _ in range(int(spec.cool_s / chunk))])
        out.append({"workload": b.name, "heat": (DT_S * np.arange(1, len(heat) + 1), heat),
                    "cool": (DT_S * np.arange(1, len(cool) + 1), cool)})
        # the campaign's settle-to-idle before the next step (same wait, same settings)
        wait_for_temperature(dev, (None, idle_c), timeout_s=spec.settle_max_s, poll_s=spec.settle_poll_s,
                             stable_s=spec.settle_stable_s)
    return out


def _leak(p: Preset, temp_c: float) -> float:
    pp = p.power
    return pp.leak_ref_w * math.exp(pp.leak_k_per_c * (temp_c - pp.leak_ref_c))


def _thermal_protocol(campaign: str | None) -> str:
    """The campaign whose thermal steps define the thermal constants: ``campaign``, or the standard one
    for none, an unknown one or one without thermal steps."""
    return campaign if campaign in CAMPAIGNS and CAMPAIGNS[campaign].thermal_steps else RC_PROTOCOL


def ground_truth(name: str, campaign: str | None = None) -> dict[str, dict[str, Any]]:
    """Truth per parameter name, ``{"section.param": {"value", "unit", "how"}}`` (see module docstring), the
    protocol-defined thermal constants for ``campaign``'s thermal steps (default, or a campaign without
    thermal steps: the standard campaign's)."""
    return _ground_truth(name, _thermal_protocol(campaign))


@lru_cache(maxsize=16)
def _ground_truth(name: str, campaign: str) -> dict[str, dict[str, Any]]:
    return truth_of(get_preset(name), campaign=campaign)


def truth_of(p: Preset, thermal_only: bool = False, campaign: str | None = None) -> dict[str, dict[str, Any]]:
    """Ground truth of any preset object (used to design presets as well); ``campaign``: as
    :func:`ground_truth`."""
    campaign = _thermal_protocol(campaign)
    from microbench.devices.sim.device import VirtualGPU

    idle = p.steady_state()
    truth: dict[str, dict[str, Any]] = {}

    def put(key: str, value: float, unit: str, how: str) -> None:
        truth[key] = {"value": float(value), "unit": unit, "how": how}

    put("power.idle_power_w", idle["power_w"], "W", "idle equilibrium")
    # "gated" SM scaling: an SM without work still draws a share phi of its constant power while a
    # kernel runs, so N active SMs draw A + phi c N + n c (1 - phi): the model's activation (the constant
    # of a running kernel, whatever its SMs) is A + phi c N and its Const_SM (what one more active SM
    # adds) c (1 - phi). No campaign can tell the physics' A and c apart from these: every launch's power
    # is the same function of n either way
    phi = p.power.idle_sm_fraction if p.power.sm_scaling == "gated" else 0.0
    if phi:
        put("power.const_sm_power_w", p.power.const_sm_w * (1.0 - phi), "W",
            f"design: one more active SM's increment (an idle SM keeps {phi:g} of {p.power.const_sm_w:g} W)")
        put("power.activation_power_w", p.power.activation_w + phi * p.power.const_sm_w * p.sm_count, "W",
            "design: the constant of a running kernel, the idle SMs' gated draw included")
    else:
        put("power.const_sm_power_w", p.power.const_sm_w, "W", "design")
        put("power.activation_power_w", p.power.activation_w, "W", "design")
    if p.power.sm_scaling == "log":
        put("power.sm_beta", p.power.sm_beta, "1", "design")
    for u, up in p.power.units.items():
        put(f"power.max_power_{u}_w", up.max_power_w, "W", "design (power at AR = 1)")
    if p.power.issue_w:  # the shared issue/dispatch stage (physics.PowerPhysics.issue_w, per SM)
        put("power.max_power_dispatch_w", p.power.issue_w, "W", "design (dispatch stage at summed pipe AR = 1)")
    put("thermal.idle_temp_c", idle["sensor_c"], "C", "idle equilibrium")
    put("thermal.fan_max_power_w", p.power.fan_max_w, "W", "design")

    dev = VirtualGPU(p, seed=0)
    benches = thermal_benchmarks(dev.info, campaign)
    ref = benches[0].workload(dev.info)
    _, load = dev.evaluate(ref)
    hot = p.steady_state(load.dyn_core_w + load.dyn_mem_w, load.dyn_mem_w, host_busy=True)
    put("thermal.sigma_w_per_c",
        (_leak(p, hot["sensor_c"]) - _leak(p, idle["sensor_c"])) / (hot["sensor_c"] - idle["sensor_c"]),
        "W/C", f"leakage secant between idle and {benches[0].name} steady state")

    rows = []
    all_b = list(thermal_benchmarks(dev.info, campaign))
    for b in all_b:
        w = b.workload(dev.info)
        _, ld = dev.evaluate(w)
        run_w = ld.dyn_core_w + ld.dyn_mem_w
        ss = p.steady_state(run_w, ld.dyn_mem_w, host_busy=True)
        rows.append((run_w, mem_intensity(w.per_warp), ss["sensor_c"] - idle["sensor_c"]))
    a = np.array([[r[0], 1.0, r[1]] for r in rows])
    y = np.array([r[2] for r in rows])
    mu, lam, rho = np.linalg.lstsq(a, y, rcond=None)[0]
    how = f"plane through exact steady-state rises of {len(rows)} thermal workloads"
    put("thermal.mu_c_per_w", mu, "C/W", how)
    put("thermal.lambda_c", lam, "C", how)
    put("thermal.rho_c", rho, "C", how)

    traces = _thermal_traces(p, campaign)
    put("thermal.rc_rise_s", _pooled_tau([tr["heat"] for tr in traces], "rise"), "s",
        f"pooled single-pole fit to noise-free {campaign} thermal steps")
    put("thermal.rc_decay_s", _pooled_tau([tr["cool"] for tr in traces], "decay"), "s",
        f"pooled single-pole fit to noise-free {campaign} thermal steps")
    return truth


def ar_forms(name: str) -> dict[str, str]:
    """Which access-rate function each unit's physics resembles: 'log' (saturating) or 'linear'."""
    p = get_preset(name)
    return {u: ("log" if up.w > 0 else "linear") for u, up in p.power.units.items()}

