"""Benchmark the DVFS power model: fit time on the GTX Titan X table and prediction rate on 1e6 rows.

Run from the repository root::

    .venv/bin/python tests/benchmarks/bench_dvfs.py [--rows 1000000] [--repeat 5] [--alternating]

One core: BLAS threads are limited to 1 before numpy is imported (the fit's trust-region steps use an
SVD; prediction is pure element-wise numpy and single-threaded anyway). Target: >= 1e6 predicted rows/s.

Data: J. Guerreiro, A. Ilic, N. Roma, P. Tomas, HPCA 2018 / IEEE TPDS 2019 (gpmTOOL measurements,
../shared/data/guerreiro-gtxtitanx, BSD-3-Clause with citation clause).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from calib.fit.dvfs import DvfsPowerFitter  # noqa: E402
from calib.importers.gpmtool import read as read_gpmtool  # noqa: E402
from calib.model.dvfs import compile_section, evaluate, predict_power, rows_from_table  # noqa: E402

TABLE = ROOT.parent / "shared" / "data" / "guerreiro-gtxtitanx" / "tpds2019_micro_named_gtxtitanx.csv"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", default=str(TABLE))
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--alternating", action="store_true", help="also time gpmTOOL's alternating scheme (slow)")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")

    t0 = time.perf_counter()
    df = read_gpmtool(args.table)
    t_import = time.perf_counter() - t0

    fit_times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        sec = DvfsPowerFitter().fit(df).section_
        fit_times.append(time.perf_counter() - t0)
    print(f"table: {args.table} ({len(df)} rows, {df['workload'].nunique()} names)")
    print(f"import (gpmtool)           : {t_import * 1e3:8.1f} ms")
    print(f"fit, joint (median of {args.repeat})    : {statistics.median(fit_times):8.3f} s   "
          f"(min {min(fit_times):.3f}, max {max(fit_times):.3f}; {sec.stats['nfev']} evaluations, "
          f"{len(sec.params)} parameters, training MAPE {sec.stats['mape_pct']:.2f} %)")
    if args.alternating:
        t0 = time.perf_counter()
        alt = DvfsPowerFitter(method="alternating").fit(df).section_
        print(f"fit, alternating (gpmTOOL) : {time.perf_counter() - t0:8.3f} s   ({alt.stats['solver_message']}, "
              f"training MAPE {alt.stats['mape_pct']:.2f} %)")

    # 1e6 rows: random microbenchmark activities at random clocks inside the fitted range (interpolated voltages)
    rng = np.random.default_rng(0)
    pick = rng.integers(0, len(df), args.rows)
    big = df.iloc[pick].reset_index(drop=True)
    big["core_mhz"] = rng.uniform(df.core_mhz.min(), df.core_mhz.max(), args.rows)
    big["mem_mhz"] = rng.choice(np.unique(df.mem_mhz), args.rows)
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        p = predict_power(sec, big)
        times.append(time.perf_counter() - t0)
    assert p.shape == (args.rows,) and np.all(np.isfinite(p))
    t = statistics.median(times)
    c = compile_section(sec)
    r, _ = rows_from_table(c, big)
    times_core = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        evaluate(c, r)
        times_core.append(time.perf_counter() - t0)
    tc = statistics.median(times_core)
    print(f"predict_power, {args.rows:.0e} rows : {t * 1e3:8.1f} ms  -> {args.rows / t / 1e6:5.2f} M rows/s "
          f"(DataFrame in, W out; target >= 1 M rows/s)")
    print(f"  of which the model arrays : {tc * 1e3:8.1f} ms  -> {args.rows / tc / 1e6:5.2f} M rows/s")
    return 0 if args.rows / t >= 1e6 else 1


if __name__ == "__main__":
    raise SystemExit(main())
