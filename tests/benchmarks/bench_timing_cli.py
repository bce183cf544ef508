"""Time at every clock pair from one profiled pair, through the command line only (issue 13 must-show).

    .venv/bin/python tests/benchmarks/bench_timing_cli.py [--train 15] [--heldout 15] [--seed 1] [--keep DIR]

On the virtual Titan X (sim:titanx): application-like kernels (microbench.testing.profiler_export) are
profiled by the stand-in profiler as ncu raw-page exports (``ncu --csv --page raw``: one file with the
measured clocks and the board's SM count) -- the training kernels at 5 core x 4 memory
clock pairs, the held-out kernels once at the highest pair (the profile a user has) and, for scoring
only, at all 20 pairs. Then only the verbs:

    calib import ncu train.csv --kernels -o train_k.csv
    calib fit train_k.csv --timing -o P.json
    calib import ncu heldout_top.csv --kernels -o held_k.csv
    calib predict P.json held_k.csv --clocks all --anchor -o pred.csv

and the predicted times are compared with the held-out kernels' measured times at every pair, next to
two references on the same rows: the profiled time scaled by 1 / core clock, and the profiled time
unscaled. Prints the MAPE of each, per kernel shape, and the wall and CPU time of the fit.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from calib.cli import main as calib  # noqa: E402
from calib.core.metrics import mape  # noqa: E402
from calib.core.units import clock_levels, nearest_level  # noqa: E402
from microbench.testing import profiler_export as PE  # noqa: E402

PRESET, SMS, BOARD = "titanx", 24, "GeForce GTX TITAN X"


def run(*argv: str) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = calib(list(argv))
    if rc != 0:
        raise SystemExit(f"calib {' '.join(argv)} exited {rc}")
    return buf.getvalue()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", type=int, default=15)
    ap.add_argument("--heldout", type=int, default=15)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", default=None, help="directory to keep the files in")
    a = ap.parse_args()
    d = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="bench_timing_cli_"))
    d.mkdir(parents=True, exist_ok=True)
    pairs = PE.grid_pairs(PRESET)
    train = PE.app_kernels(a.train, a.seed, SMS, prefix="tr")
    held = PE.app_kernels(a.heldout, a.seed + 1000, SMS, prefix="ho")
    (d / "train.csv").write_text(PE.ncu_raw_csv(PE.profile(train, PRESET, pairs, seed=a.seed), BOARD))
    (d / "heldout_top.csv").write_text(PE.ncu_raw_csv(PE.profile(held, PRESET, [max(pairs)], seed=a.seed + 1), BOARD))
    (d / "heldout_all.csv").write_text(PE.ncu_raw_csv(PE.profile(held, PRESET, pairs, seed=a.seed + 2), BOARD))

    print(run("import", "ncu", str(d / "train.csv"), "--kernels", "-o", str(d / "train_k.csv")).strip())
    t0, c0 = time.monotonic(), time.process_time()
    fit_out = run("fit", str(d / "train_k.csv"), "--timing", "-o", str(d / "P.json"))
    fit_s, fit_cpu_s = time.monotonic() - t0, time.process_time() - c0
    print(fit_out.strip())
    print(run("import", "ncu", str(d / "heldout_top.csv"), "--kernels", "-o", str(d / "held_k.csv")).strip())
    print(run("import", "ncu", str(d / "heldout_all.csv"), "--kernels", "-o", str(d / "truth_k.csv")).strip())
    print(run("predict", str(d / "P.json"), str(d / "held_k.csv"), "--clocks", "all", "--anchor", "-o", str(d / "pred.csv")).strip())

    pred = pd.read_csv(d / "pred.csv")
    truth = pd.read_csv(d / "truth_k.csv")
    # match the measured rows to the predicted pairs by clock level (measured clocks jitter around them)
    for df in (pred, truth):
        df["fc_level"] = nearest_level(df["core_mhz"], clock_levels(truth["core_mhz"]))
        df["fm_level"] = nearest_level(df["mem_mhz"], clock_levels(truth["mem_mhz"]))
    j = truth.merge(pred[["workload", "fc_level", "fm_level", "time_s_pred", "profiled_time_s", "profiled_core_mhz"]],
                    on=["workload", "fc_level", "fm_level"], how="inner")
    y = j["time_s"].to_numpy(float)
    model = j["time_s_pred"].to_numpy(float)
    inv_core = j["profiled_time_s"].to_numpy(float) * j["profiled_core_mhz"].to_numpy(float) / j["core_mhz"].to_numpy(float)
    flat = j["profiled_time_s"].to_numpy(float)
    n_pairs = len(set(zip(j["fc_level"], j["fm_level"])))
    print(f"\nheld-out: {j['workload'].nunique()} kernels x {n_pairs} clock pairs "
          f"({len(clock_levels(truth['core_mhz']))} core x {len(clock_levels(truth['mem_mhz']))} memory) = {len(j)} rows, "
          f"each predicted from its profile at one pair")
    print(f"  time MAPE, calib predict --clocks all --anchor : {mape(y, model):6.2f} %   (worst row {np.max(np.abs(model / y - 1)) * 100:.1f} %)")
    print(f"  time MAPE, profiled time x 1/core clock       : {mape(y, inv_core):6.2f} %")
    print(f"  time MAPE, profiled time unscaled             : {mape(y, flat):6.2f} %")
    j["shape"] = j["workload"].str.extract(r"^ho_([a-z]+)_")[0]
    print("  per kernel shape (model / 1/core / none):")
    for shape, g in j.groupby("shape"):
        gy = g["time_s"].to_numpy(float)
        print(f"    {shape:8s} {mape(gy, g['time_s_pred']):6.2f} % {mape(gy, inv_core[g.index]):6.2f} % {mape(gy, flat[g.index]):6.2f} %")
    print(f"  fit wall time {fit_s:.1f} s, CPU {fit_cpu_s:.1f} s; files in {d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
