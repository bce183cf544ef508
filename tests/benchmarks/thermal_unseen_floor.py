"""How well can any model predict the unseen 20-minute trace's temperature from its power alone? (issue 30)

    python tests/benchmarks/thermal_unseen_floor.py --work DIR [--presets gtx280] [--seeds 1,2]

Run after ``bench_thermal_unseen.py --work DIR`` (it reads that run's ``pred_*.csv``). For each perturbed
preset and seed the same sequence is replayed on the same virtual GPU (:func:`bench_thermal_unseen.kernel_sequence`'s
seeds), recording at every second the simulator's true sensor temperature, its die temperature and the
sensor's memory hot spot (sensor - die; read from the simulator for this study only, never by a fit). The
sensor is the die plus the hot spot, and the hot spot is r_io x the memory interface's power, which the
board power does not separate from the rest. Printed (C, RMSE over the trace's seconds):

- ``power only`` / ``with util_mem_pct``: the fitted network's predictions (bench_thermal_unseen);
  (the latter's error is what the network gets wrong besides the hot spot's weight);
- ``hot spot | power, linear``: the hot spot less its best straight line in the second's board power while
  a kernel runs (and its idle mean otherwise), fitted to this trace itself (an oracle): what a hot spot
  written as a smooth function of the power could reach at best;
- ``hot spot | power, 2 W bins``: the same with the mean hot spot in 2 W power bins (an oracle that tells
  the trace's few kernels apart by their power levels: a bound, not a model, since a kernel's memory share
  is not a function of its power on another trace);
- ``hot spot | running``: the hot spot less its best constant while a kernel runs (the oracle version of
  the fitted file's ``busy_weight``);
- ``hot spot, fitted weight``: the hot spot less what the power-only prediction uses (hot_spot_c x
  busy_weight while the power says a kernel runs).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def replay(preset, minutes: float, seed: int) -> pd.DataFrame:
    """The sequence of ``bench_thermal_unseen.kernel_sequence`` (same seeds, same picks), per second: time_s,
    true sensor, die and hot spot (C), mean logged power (W), whether a kernel ran."""
    from bench_thermal_unseen import play_sequence

    rows = []

    def keep(dev, running: bool, t_s: float) -> None:  # noqa: ANN001
        sensor = dev._sensor_temp()
        rows.append((t_s, sensor, dev.t_die, sensor - dev.t_die, running))

    blocks, t0 = play_sequence(preset, minutes, seed, keep)
    lt = np.concatenate([b[0] for b in blocks]) - t0
    lp = np.concatenate([b[2]["power_w"] for b in blocks]).astype(float)
    df = pd.DataFrame(rows, columns=["time_s", "true_c", "die_c", "hot_c", "running"])
    sec = np.floor(lt - 1e-9).astype(int) + 1  # a reading at (k-1, k] belongs to second k
    p = pd.Series(lp).groupby(sec).mean()
    df["power_w"] = p.reindex(np.round(df["time_s"]).astype(int)).to_numpy()
    return df[df["time_s"] <= 60.0 * minutes + 1e-6].reset_index(drop=True)


def rmse(x: np.ndarray) -> float:
    x = np.asarray(x, float)
    return float(np.sqrt(np.nanmean(x ** 2)))


def main() -> None:
    from bench_thermal_unseen import perturbed
    from calib.core import params as P
    from microbench.devices.sim.presets import get_preset

    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--presets", default="gtx280")
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--minutes", type=float, default=20.0)
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    print("| preset | seed | power only | with util_mem_pct | hot spot r.m.s. | hot spot, fitted weight "
          "| hot spot given running (oracle) | given power, linear (oracle) | given power, 2 W bins (oracle) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for base in a.presets.split(","):
        for seed in (int(s) for s in a.seeds.split(",")):
            preset = perturbed(get_preset(base), seed)
            d = Path(a.work) / preset.name
            df = replay(preset, a.minutes, 1000 + seed)
            log = pd.read_csv(d / "trace_power_only.csv")
            at = pd.Index((log["time_s"] * 10).round().astype(int)).get_indexer((df["time_s"] * 10).round().astype(int))
            ok = at >= 0
            df = df[ok].reset_index(drop=True)
            at = at[ok]
            pred = {k: pd.read_csv(d / f"pred_{k}.csv")["temp_c_pred"].to_numpy(float)[at]
                    for k in ("power_only", "with_util_mem_pct")}
            hot = df["hot_c"].to_numpy()
            sec = P.load(d / "fitted" / f"{preset.name}.json")["thermal_network"]
            ip = sec.value("idle_power_w")
            thr = float(sec.structure.get("busy_threshold_w", 10.0))
            hs = sec.structure.get("hot_spot", {})
            busy = (df["power_w"].to_numpy() - ip) > thr
            fitted_hot = np.where(busy, sec.value("hot_spot_c") * float(hs.get("busy_weight", 0.5)), 0.0)
            bins = np.floor(df["power_w"].to_numpy() / 2.0)
            given_p = hot - pd.Series(hot).groupby(bins).transform("mean").to_numpy()
            run = df["running"].to_numpy()
            given_run = hot - np.where(run, hot[run].mean(), hot[~run].mean() if (~run).any() else 0.0)
            pw = df["power_w"].to_numpy()
            okp = run & np.isfinite(pw)
            line = np.polyfit(pw[okp], hot[okp], 1)
            given_lin = hot - np.where(run, np.polyval(line, np.nan_to_num(pw)), hot[~run].mean() if (~run).any() else 0.0)
            true = df["true_c"].to_numpy()
            print(f"| {base} | {seed} | {rmse(pred['power_only'] - true):.2f} C | {rmse(pred['with_util_mem_pct'] - true):.2f} C "
                  f"| {rmse(hot):.2f} C | {rmse(hot - fitted_hot):.2f} C "
                  f"| {rmse(given_run):.2f} C | {rmse(given_lin):.2f} C | {rmse(given_p):.2f} C |", flush=True)


if __name__ == "__main__":
    main()
