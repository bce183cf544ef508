"""Thermal network on the virtual GPU (issue 14's "Must show"), run by hand:

    .venv/bin/python tests/benchmarks/bench_thermal.py [--campaign standard] [--work DIR]

For gtx280_1pole, gtx280_2pole, gtx280_runaway and gtx280: a campaign (`calib run`, reused when DIR has it),
the fitted network against the truth of the virtual GPU's network (microbench/thermal_truth.py), the pole
count chosen, the step-response RMSE of the 1- and 2-pole fits; a 20-minute kernel sequence with idle gaps
the fit never saw (RMSE of the chosen network and of the 1-pole fit); the leakage fixed point against the
settled card at three power levels; runaway flags; the grid solver against analytic cases; HotSpot files
read back. Prints a Markdown report.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

PRESETS = ("gtx280_1pole", "gtx280_2pole", "gtx280_runaway", "gtx280")


def campaign(work: Path, preset: str, spec: str) -> Path:
    from calib.cli import main

    d = work / preset
    if not (d / "fitted" / f"{preset}.json").exists():
        d.mkdir(parents=True, exist_ok=True)
        cwd = os.getcwd()
        os.chdir(d)
        try:
            assert main(["run", "--quiet", "--campaign", spec, "--name", preset, "--device", f"sim:{preset}"]) == 0
        finally:
            os.chdir(cwd)
    return d


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--campaign", default="standard")
    ap.add_argument("--work", default="/tmp/bench_thermal")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    from calib.core import params as P
    from calib.core.metrics import errors
    from calib.fit.thermal_network import ThermalNetworkFitter
    from calib.model.thermal_network import FosterNetwork, predict_trace, steady_state
    from calib.segment import IdleBaseline, SessionData, session_samples, thermal_steps
    from calib.core.session import read_session
    from microbench.thermal_truth import network_truth
    from thermal_support import kernel_sequence, settled

    work = Path(args.work)
    print(f"# Thermal network on the virtual GPU ({args.campaign} campaign)\n")
    for preset in PRESETS:
        t0 = time.time()
        d = campaign(work, preset, args.campaign)
        pf = P.load(d / "fitted" / f"{preset}.json")
        sec = pf["thermal_network"]
        net = FosterNetwork.from_section(sec)
        truth = network_truth(preset)
        sel = sec.structure["selection"]
        print(f"## {preset}\n")
        print(f"- truth (fan duty {truth['duty']:.2f}): dominant poles "
              + ", ".join(f"tau {x['tau_s']:.1f} s / R {x['r_c_per_w']:.4f} C/W" for x in truth["dominant"])
              + f"; direct {truth['r_direct_c_per_w']:.4f} C/W")
        print(f"- chosen: {sec.structure['poles']} pole(s) by {sel['method']} (truth: {len(truth['dominant'])}); "
              f"held-out RMSE by pole count {', '.join(f'{k}: {v:.3f} C' for k, v in sel['cv_rmse_c'].items())}; "
              f"candidates {sel['candidates']}")
        print(f"- step-response RMSE (fit) by pole count: {', '.join(f'{k}: {v:.3f} C' for k, v in sel['rmse_c'].items())}")
        for i in range(1, net.poles + 1):
            tau, r = sec[f"tau{i}_s"], sec[f"r{i}_c_per_w"]
            j = int(np.argmin([abs(math.log(tau.value / x["tau_s"])) for x in truth["dominant"]]))
            tt, tr = truth["dominant"][j]["tau_s"], truth["dominant"][j]["r_c_per_w"]
            print(f"- pole {i}: tau {tau.value:.2f} s (+/- {tau.stderr:.2g}, total {tau.stderr_total:.2g}) vs {tt:.2f}: "
                  f"{100 * (tau.value - tt) / tt:+.1f} %, {abs(tau.value - tt) / tau.stderr_total:.2f} total se; "
                  f"R {r.value:.4f} C/W (total +/- {r.stderr_total:.2g}) vs {tr:.4f}: {100 * (r.value - tr) / tr:+.1f} %")
        # the 2-pole fit, forced, for the figures on every preset
        sess = read_session(d / "logs" / preset)
        df = session_samples(sess)
        idle = df[df["role"] == "idle"]
        steps = thermal_steps(sess)
        it, ip = float(idle["temp_c"].mean()), float(idle["power_w"].mean())
        data = SessionData(df, idle=IdleBaseline(it, None, ip, None), thermal_steps=steps)
        one = ThermalNetworkFitter(poles=1).fit(data).network_
        two = ThermalNetworkFitter(poles=2).fit(data).network_
        print(f"- forced 2-pole fit: taus {', '.join(f'{x:.2f}' for x in two.tau_s)} s; forced 1-pole: {one.tau_s[0]:.2f} s")
        lk = sec.structure["leakage"]
        loop = sec.structure["loop"]
        print(f"- leakage: {lk['form']} (BIC linear {lk['compared']['linear']['bic']:.0f}, exponential "
              f"{lk['compared']['exponential']['bic']:.0f}); max loop gain {loop['max_loop_gain']:.3f}; runaway "
              f"{'FLAGGED' if loop['runaway'] else 'no'} (cold runtime power at which it starts: "
              f"{loop['runaway_run_power_w'] if loop['runaway_run_power_w'] is None else round(loop['runaway_run_power_w'], 1)} W)")
        for x in loop["steps"]:
            print(f"    - {x['workload']}: run {x['run_power_w']:.1f} W -> "
                  + (f"{x['steady_temp_c']:.1f} C, {x['steady_power_w']:.1f} W, gain {x['loop_gain']:.2f}"
                     if not x["runaway"] else "no steady state below slowdown"))
        # unseen kernel sequence
        seq = kernel_sequence(preset)
        for label, n in (("chosen", net), ("1-pole", one), ("2-pole", two)):
            pred = predict_trace(n, seq)
            print(f"- 20-min kernel sequence with idle gaps ({len(seq)} readings, {seq['temp_c'].min():.0f}-"
                  f"{seq['temp_c'].max():.0f} C): RMSE {label} {errors(seq['temp_c'], pred).rmse:.3f} C")
        # leakage fixed point at three power levels
        if preset != "gtx280":
            for k in (3, 0, 1):  # sfu, fp32, dram: three power levels
                s = settled(preset, k)
                ss = steady_state(net, s["cold_power_w"] - net.idle_power_w)
                if ss.runaway:
                    print(f"- settled workload {k}: measured {s['temp_c']:.2f} C / {s['power_w']:.1f} W; predicted: "
                          f"no steady state below {net.slowdown_temp_c:g} C (runaway flagged)")
                else:
                    print(f"- settled workload {k} (cold {s['cold_power_w']:.1f} W): measured {s['temp_c']:.2f} C / "
                          f"{s['power_w']:.1f} W; fixed point {ss.temp_c:.2f} C / {ss.power_w:.1f} W "
                          f"({ss.temp_c - s['temp_c']:+.2f} C, {100 * (ss.power_w - s['power_w']) / s['power_w']:+.2f} %)")
        print(f"- ({time.time() - t0:.0f} s)\n")


if __name__ == "__main__":
    main()
