"""Prediction intervals on the real GTX Titan X applications (issue 12), run by hand:

    python tests/benchmarks/titanx_intervals.py

Fits the DVFS power model on the microbenchmark table (Guerreiro et al., TPDS 2019, ../shared/data; cite
them) and scores the 10 development applications' 90 % intervals two ways: (1) the discrepancy from the
microbenchmarks left out one at a time (what `calib fit micro.csv` alone gives); (2) cross-fitted: each
application's interval uses the discrepancy measured on the other nine (what `calib fit micro.csv
--heldout OTHERS.csv` gives). Prints coverage and mean width per application and overall.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data" / "guerreiro-gtxtitanx"


def main() -> int:
    from calib.core.samples import read_samples
    from calib.fit.pipeline import fit_source
    from calib.model.intervals import add_intervals, set_heldout_discrepancy
    from calib.model.predict import predict_power

    warnings.simplefilter("ignore")
    tmp = Path(tempfile.mkdtemp())
    for src, dst in (("tpds2019_micro_gtxtitanx.csv", "micro.csv"), ("tpds2019_real_dev_gtxtitanx.csv", "apps.csv")):
        subprocess.run([sys.executable, "-m", "calib", "-q", "import", "gpmtool", str(DATA / src), "-o", str(tmp / dst)],
                       check=True)
    pf = fit_source(tmp / "micro.csv").params
    apps = read_samples(tmp / "apps.csv").reset_index(drop=True)
    base = predict_power(pf, apps)
    saved = dict(pf["power"].stats["prediction"])

    def score(sub, label):  # noqa: ANN001, ANN202
        out = add_intervals(pf, sub.assign(power_w_pred=predict_power(pf, sub)),
                            lambda p: sub.assign(power_w_pred=predict_power(p, sub)), 0.9)
        inside = ((out.power_w_lo <= out.power_w) & (out.power_w <= out.power_w_hi)).to_numpy()
        width = (100 * (out.power_w_hi - out.power_w_lo) / out.power_w_pred).to_numpy()
        return inside, width

    ins, wid = score(apps, "benchmarks")
    print(f"discrepancy from the microbenchmarks left out one at a time: {100 * ins.mean():.1f}% of {len(ins)} rows "
          f"inside their 90% interval, mean width {wid.mean():.1f}%")
    all_in, all_w = [], []
    print("cross-fitted (each application's discrepancy from the other nine):")
    for w in apps.workload.astype(str).unique():
        mine = (apps.workload.astype(str) == w).to_numpy()
        set_heldout_discrepancy(pf, apps[~mine].reset_index(drop=True), base[~mine])
        i, wd = score(apps[mine].reset_index(drop=True), w)
        pf["power"].stats["prediction"] = dict(saved)
        err = 100 * np.mean(np.abs(base[mine] / apps.power_w.to_numpy()[mine] - 1))
        print(f"  {w:20s} MAPE {err:5.2f}%  inside {100 * i.mean():5.1f}%  width {wd.mean():5.1f}%")
        all_in += list(i)
        all_w += list(wd)
    print(f"cross-fitted: {100 * np.mean(all_in):.1f}% of {len(all_in)} rows inside, mean width {np.mean(all_w):.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
