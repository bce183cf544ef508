"""Ground truth of the virtual GPU's thermal network, in the terms of the fitted Foster network.

Read only by the recovery report and the simulator's tests; the fitter never reads it. The hidden
network (die, heatsink, case air; :class:`microbench.devices.sim.physics.ThermalPhysics`) is linear at a
fixed fan duty. Its truth here is exact linear algebra on the preset's figures, no fit:

- the operating point: the fan duty at the steady state of the campaign's reference thermal step (the fan
  of a thermostat card moves; the network is linearised there; the fitted poles are at the duty at the end
  of that step's heating, the same point). The AMD stand-ins log no fan, and theirs moves from 0.45 at idle
  to 0.6-0.94 in every step: a fan-less fit is no linear network at any one duty, and their middle and slow
  poles are not comparable to this truth (tests/benchmarks/thermal_results.md, session 11);
- the poles: eigenvalues of C^-1 G of the three-node network at that duty, tau_i = -1/lambda_i (s);
- the resistances: the residues of the die temperature's response to heat put into the die, per pole
  (R_i in C/W; they add up to the steady rise per W);
- dominant poles: those slower than the fit grid (1 s) that carry at least 5 % of the total resistance,
  fastest first; the faster ones (the die itself, ~0.2-0.5 s) are the network's direct term.

The input of the fitted network is the measured board power (leakage included), so the truth is the
passive network without the leakage feedback. Heat that the host puts into the case air while it launches
kernels and the fan's own power are not GPU heat in the die: on presets that have them the fitted slow
resistance absorbs them (the study presets gtx280_1pole/_2pole/_runaway have neither).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from microbench.benchmarks import thermal_benchmarks
from calib.core.params import ParameterFile, transferred_total_se
from microbench.devices.sim.presets import Preset, get_preset

#: poles faster than this (s, two fit-grid bins) are the network's direct term
GRID_S = 2.0
#: share of the total resistance a pole needs to count as dominant
DOMINANT_SHARE = 0.05


def network_matrices(p: Preset, duty: float) -> tuple[np.ndarray, np.ndarray]:
    """(C diagonal J/C, G W/C) of the die/heatsink/case network at fan duty ``duty`` (0..1), written from
    the simulator's update: the case keeps the recirculated share of the heat the sink gives it."""
    th = p.thermal
    g_ds = th.g_die_sink_w_per_c
    g_sc = th.g_sink_case0_w_per_c + th.g_sink_case_fan_w_per_c * duty
    r = th.recirculation
    c = np.array([th.c_die_j_per_c, th.c_sink_j_per_c, th.c_case_j_per_c])
    g = np.array([[g_ds, -g_ds, 0.0],
                  [-g_ds, g_ds + g_sc, -g_sc],
                  [0.0, -r * g_sc, r * g_sc + th.g_case_room_w_per_c]])
    return c, g


def poles(p: Preset, duty: float) -> list[dict[str, float]]:
    """Every pole of the network at fan duty ``duty``: time constant (s) and resistance (C/W) of the die
    temperature's response to die heat, fastest first."""
    c, g = network_matrices(p, duty)
    a = -g / c[:, None]
    lam, v = np.linalg.eig(a)
    b = np.array([1.0, 0.0, 0.0]) / c
    res = (v[0, :] * np.linalg.solve(v, b))
    r = (-res / lam).real
    tau = (-1.0 / lam).real
    order = np.argsort(tau)
    return [{"tau_s": float(tau[i]), "r_c_per_w": float(r[i])} for i in order]


def operating_duty(p: Preset) -> float:
    """Fan duty at the steady state of the reference thermal step (0..1)."""
    from microbench.devices.sim.device import VirtualGPU

    dev = VirtualGPU(p, seed=0)
    ref = thermal_benchmarks(dev.info, "standard")[0].workload(dev.info)
    _, load = dev.evaluate(ref)
    return float(p.steady_state(load.dyn_core_w + load.dyn_mem_w, load.dyn_mem_w, host_busy=True)["duty"])


@lru_cache(maxsize=16)
def network_truth(name: str) -> dict[str, Any]:
    """Truth of a preset's network (module docstring): ``duty``, ``poles`` (all), ``dominant`` (the
    dominant poles, fastest first), ``r_direct_c_per_w`` (poles faster than the grid), ``r_total_c_per_w``."""
    return truth_of(get_preset(name))


def truth_of(p: Preset) -> dict[str, Any]:
    duty = operating_duty(p)
    ps = poles(p, duty)
    total = sum(x["r_c_per_w"] for x in ps)
    dom = [x for x in ps if x["tau_s"] >= GRID_S and x["r_c_per_w"] >= DOMINANT_SHARE * total]
    direct = sum(x["r_c_per_w"] for x in ps if x["tau_s"] < GRID_S)
    return {"duty": duty, "poles": ps, "dominant": dom, "r_direct_c_per_w": direct, "r_total_c_per_w": total,
            "how": f"eigen-decomposition of the die/heatsink/case network at fan duty {duty:.2f} "
                   "(steady state of the reference thermal step)"}


def thermal_network_recovery_rows(preset: str, pf: ParameterFile) -> list[dict[str, Any]]:
    """Recovery rows of a parameter file's ``thermal_network`` section: each fitted pole against the
    dominant truth pole of nearest time constant (log scale), the direct term and the total resistance."""
    sec = pf.get("thermal_network")
    if sec is None:
        return []
    truth = network_truth(preset)
    rows = []

    def row(name: str, t: float, how: str) -> None:
        p = sec[name] if name in sec else None
        fitted = None if p is None else float(p.value)
        err = None if fitted is None or t == 0 else 100.0 * (fitted - t) / abs(t)
        rows.append({"parameter": f"thermal_network.{name}", "unit": "s" if name.endswith("_s") else "C/W",
                     "truth": t, "fitted": fitted, "stderr": None if p is None else p.stderr,
                     "stderr_total": None if p is None else p.stderr_total,
                     "error_pct": err, "abs_error": None if fitted is None else fitted - t, "truth_from": how})

    n = int(sec.structure.get("poles", 0))
    dom = truth["dominant"]
    fast_r = 0.0  # fitted poles faster than the grid (the die node of a ladder) belong to the direct term
    fast_idx: list[int] = []
    n_dom = 0
    for i in range(1, n + 1):
        tau = sec.value(f"tau{i}_s", None) if f"tau{i}_s" in sec else None
        if tau is not None and tau < GRID_S:
            fast_r += sec.value(f"r{i}_c_per_w")
            fast_idx.append(i)
            continue
        n_dom += 1
        if tau is None or not dom:
            continue
        j = int(np.argmin([abs(np.log(tau / d["tau_s"])) for d in dom]))
        how = f"pole {j + 1} of {len(dom)} dominant; {truth['how']}"
        row(f"tau{i}_s", dom[j]["tau_s"], how)
        row(f"r{i}_c_per_w", dom[j]["r_c_per_w"], how)
    row("r_direct_c_per_w", truth["r_direct_c_per_w"], f"poles faster than {GRID_S:g} s; {truth['how']}")
    if fast_r:  # the fitted direct term is r_direct plus the fitted poles faster than the grid
        r = rows[-1]
        r["fitted"] += fast_r
        r["error_pct"] = 100.0 * (r["fitted"] - r["truth"]) / abs(r["truth"]) if r["truth"] else None
        r["abs_error"] = r["fitted"] - r["truth"]
        r["truth_from"] += f"; fitted: r_direct_c_per_w plus the fitted poles faster than {GRID_S:g} s"
        # the sum's own standard errors: the grid cannot separate a sub-grid pole from the direct term (their
        # estimates are anti-correlated), so r_direct's marginal error is not the sum's
        r["stderr"], r["stderr_total"] = _sum_stderr(sec, [f"r{i}_c_per_w" for i in fast_idx] + ["r_direct_c_per_w"])
    rows.append({"parameter": "thermal_network.dominant_poles", "unit": "1", "truth": float(len(dom)),
                 "fitted": float(n_dom), "stderr": None, "stderr_total": None,
                 "error_pct": None if not dom else 100.0 * (n_dom - len(dom)) / len(dom),
                 "abs_error": float(n_dom - len(dom)),
                 "truth_from": f"poles slower than {GRID_S:g} s with >= {100 * DOMINANT_SHARE:g} % of the resistance"})
    return rows


def _sum_stderr(sec: Any, members: list[str]) -> tuple[float | None, float | None]:
    """Statistical and total standard errors of the sum of ``members`` of a section: the statistical one
    from the section's covariance; the total one transferred from it as for the combinations a file
    publishes (:func:`calib.core.params.transferred_total_se`). (None, None) without a usable covariance."""
    cov = sec.covariance
    if cov is None or any(n not in cov.names for n in members):
        return None, None
    m = cov.sub(members)
    if not np.all(np.isfinite(m)):
        return None, None
    se = float(np.sqrt(max(float(np.sum(m)), 0.0)))
    return se, transferred_total_se(se, [sec[n].stderr for n in members], [sec[n].stderr_total for n in members])


def true_run(preset: str, workload_index: int, seconds: float, *, idle_s: float = 30.0, step_s: float = 5.0,
             seed: int = 3) -> tuple["pd.DataFrame", "pd.DataFrame"]:
    """The simulator's run of a trace: a fresh virtual GPU of ``preset`` idles ``idle_s`` seconds, then runs
    thermal workload ``workload_index`` of the full campaign for ``seconds`` (s). Returns (truth, log):
    ``truth`` has, every ``step_s`` seconds from the kernel's start, the true sensor temperature
    ``temp_c`` (the hidden die temperature plus the memory hot spot, not rounded like the NVML reading)
    and the true board power ``power_w`` (leakage at that temperature included); ``log`` is the NVML log
    a user would have (``time_s`` from the kernel's start, ``power_w``, ``temp_c``, ``fan_pct``). For
    checks of transient predictions (leakage feedback): the model reads only the log, never ``truth``."""
    import pandas as pd

    from microbench.devices.sim.device import VirtualGPU

    dev = VirtualGPU(get_preset(preset), seed=seed)
    w = thermal_benchmarks(dev.info, "full")[workload_index].workload(dev.info)
    dev.idle(idle_s)
    t0 = dev.clock()[0]
    rows = [(0.0, dev._sensor_temp(), dev.true_power_w())]
    n = int(round(seconds / step_s))
    for k in range(n):
        dev.run(w, step_s)
        rows.append(((k + 1) * step_s, dev._sensor_temp(), dev.true_power_w()))
    blocks = dev.sensors()[0].read_blocks()
    log = pd.DataFrame({"time_s": np.concatenate([b[0] for b in blocks]) - t0,
                        "power_w": np.concatenate([b[2]["power_w"] for b in blocks]).astype(float),
                        "temp_c": np.concatenate([b[2]["temp_c"] for b in blocks]).astype(float),
                        "fan_pct": np.concatenate([b[2]["fan_pct"] for b in blocks]).astype(float)})
    return pd.DataFrame(rows, columns=["time_s", "temp_c", "power_w"]), log
