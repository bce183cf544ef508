"""Power as NVML samples it, on the virtual GPUs modelled on A100, H100 (25 ms of every 100 ms) and A10
(a 1 s average): the measured update period and window against the presets', and a 5-second kernel's
energy from naive polling and from the corrected measurement against the true energy (issue 31).

    python tests/benchmarks/power_sampling_study.py [--seeds 5] [--out tests/benchmarks/power_sampling_results.md]

For each preset and seed: :func:`microbench.power_sampling.characterise`; then a 5 s kernel, flat or
with bursts below the update period (60 % of every 50.4 ms at full power, 35 % in between), run at the
phase offsets the facts ask for (two tilings of the update period where the reading is part-time, else
three arbitrary phases). Naive: the trapezoid of one run's readings over the run
(:func:`calib.windows.window_energy`), every run; corrected: the counter (full-time) or the readings
pooled over the phased runs, with their stated standard error. Truth: the simulator's kept true power.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from calib.windows import Run, counter_run_energy, mean_run_energy, power_run_energy, window_energy  # noqa: E402
from microbench.devices import open_device  # noqa: E402
from microbench.power_sampling import characterise, default_load, energy_source, phase_offsets, phased_runs  # noqa: E402
from microbench.sampling_truth import sampling_truth  # noqa: E402

BURSTY = {"period_s": 0.0504, "duty": 0.6, "low": 0.35}


def corrected(f, runs):
    if energy_source(f) == "counter":
        m = mean_run_energy([counter_run_energy(r.t_s, r.energy_mj, r.start_s, r.stop_s) for r in runs])
        return m.energy_j, m.stderr_j, "counter"
    e = power_run_energy([Run(r.t_s, r.power_w, r.start_s, r.stop_s) for r in runs], window_s=f.power_window_s,
                         lag_s=f.power_lag_s, update_period_s=f.update_period_s, noise_w=f.power_noise_w,
                         window_stderr_s=f.power_window_stderr_s)
    return e.energy_j, e.stderr_j, f"readings, {len(runs)} phased runs"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    lines = ["# Power as NVML samples it: measured sampling and a 5 s kernel's energy (issue 31)", "",
             f"`python tests/benchmarks/power_sampling_study.py --seeds {args.seeds}` "
             f"({time.strftime('%Y-%m-%d', time.gmtime())}); virtual GPUs, seeds 0..{args.seeds - 1}.", "",
             "## Measured sampling against the presets'", "",
             "| preset | update period ms (truth) | window ms (truth) | window error / stderr (rms over seeds) | "
             "coverage | counter window ms (truth) | energy from |", "|---|---|---|---|---|---|---|"]
    energy = ["", "## A 5 s kernel's energy: naive polling and corrected, against the truth", "",
              "| preset | kernel | truth J | naive error % (runs: min .. max) | corrected error % | stated stderr % | "
              "source |", "|---|---|---|---|---|---|---|"]
    t_cpu = time.process_time()
    for name in ("a100", "h100", "a10"):
        truth = sampling_truth(name)
        facts = [characterise(open_device(f"sim:{name}", seed=s)) for s in range(args.seeds)]
        u = np.array([f.update_period_s for f in facts]) * 1e3
        w = np.array([f.power_window_s for f in facts]) * 1e3
        z = [(f.power_window_s - truth["power_window_s"]) / f.power_window_stderr_s for f in facts]
        cw = np.array([f.counter_window_s for f in facts]) * 1e3
        lines.append(f"| sim:{name} | {u.mean():.3f} ({truth['update_period_s'] * 1e3:g}) | "
                     f"{w.mean():.3f} +- {np.mean([f.power_window_stderr_s for f in facts]) * 1e3:.3f} "
                     f"[{w.min():.3f} .. {w.max():.3f}] ({truth['power_window_s'] * 1e3:g}) | "
                     f"{math.sqrt(np.mean(np.square(z))):.2f} | {np.mean([f.coverage for f in facts]):.3f} | "
                     f"{cw.mean():.2f} ({truth['counter_window_s'] * 1e3:g}) | {energy_source(facts[0])} |")
        for kname, shape in (("flat", None), ("bursty", BURSTY)):
            for seed in range(args.seeds):
                f = facts[seed]
                dev = open_device(f"sim:{name}", seed=seed)
                dev.keep_power_trace()
                offs = phase_offsets(f, 2) if f.part_time else [0.0, 0.37 * f.update_period_s, 0.71 * f.update_period_s]
                runs = phased_runs(dev, default_load(dev), 5.0, f, offsets=offs, shape=shape)
                truths = [dev.true_energy_j(r.start_s, r.stop_s) for r in runs]
                naive = [window_energy({"t_mono_s": r.t_s, "power_w": r.power_w}, r.start_s, r.stop_s).integrated_j
                         for r in runs]
                ne = [100 * (n - t) / t for n, t in zip(naive, truths)]
                e, se, how = corrected(f, runs)
                tm = float(np.mean(truths))
                energy.append(f"| sim:{name} (seed {seed}) | {kname} | {tm:.1f} | {min(ne):+.2f} .. {max(ne):+.2f} | "
                              f"{100 * (e - tm) / tm:+.4f} | {100 * se / tm:.4f} | {how} |")
    lines += energy
    lines += ["", f"CPU time: {time.process_time() - t_cpu:.0f} s."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
