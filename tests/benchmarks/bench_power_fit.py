"""CPU time of the IPP power fit (calib.fit.ipp.IppPowerFitter.fit) on the reference sessions, and its answers.

Fits the committed reference rows (fitted/sim-<preset>.samples.csv with the settings the file records,
fit.power.settings) as `calib fit` does (uncertainty on), and the search-only fits of the recorded rows of
tests/test_ipp_fit.py's robustness tests. Prints the CPU seconds (process time: run with one BLAS thread,
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1), the number of scipy least_squares runs and residual
evaluations, and writes every fit's structure, parameter values, standard errors and chi-square to
``--out`` (JSON), so that two versions of the fitter can be compared with ``--compare OLD.json``:

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python tests/benchmarks/bench_power_fit.py --out /tmp/before.json
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python tests/benchmarks/bench_power_fit.py --out /tmp/after.json \\
        --compare /tmp/before.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

PRESETS = ("gtx280", "gtx580", "titanx", "mi250x", "mi300x")


def cases(which: set[str], files: list[str] = ()) -> list[tuple[str, object, dict, bool]]:
    """(name, rows, settings, uncertainty) of every fit measured (``files``: other parameter files made by
    `calib run`, each with its samples table beside it)."""
    import pandas as pd

    out = []
    for f in files:
        path = Path(f)
        doc = json.loads(path.read_text())
        out.append((path.stem, pd.read_csv(path.with_suffix(".samples.csv")), doc["fit"]["power"]["settings"], True))
    for p in PRESETS:
        if p in which or "all" in which:
            doc = json.loads((ROOT / "fitted" / f"sim-{p}.json").read_text())
            out.append((p, pd.read_csv(ROOT / "fitted" / f"sim-{p}.samples.csv"), doc["fit"]["power"]["settings"], True))
    if "tests" in which or "all" in which:
        from test_ipp_fit import MI300X_S0, TITANX_NOMIX_S0

        df = pd.read_csv(ROOT / "tests" / "data" / "ipp_mi300x_seed0_rows.csv.gz")
        sigma = MI300X_S0["temperature_correction"]["sigma_w_per_c"]
        for m in (0.95, 1.0, 1.05):
            s = dict(MI300X_S0, temperature_correction={"sigma_w_per_c": sigma * m, "idle_temp_c": 45.0})
            out.append((f"mi300x_s0_sigma{m}", df, s, False))
        df = pd.read_csv(ROOT / "tests" / "data" / "ipp_titanx_nomix_seed0_rows.csv.gz")
        for sh in ("off", "on", "auto"):
            out.append((f"titanx_nomix_{sh}", df, dict(TITANX_NOMIX_S0, shared_activation=sh), False))
    return out


def measure(rows, settings: dict, uncertainty: bool) -> dict:  # noqa: ANN001
    """One fit: CPU seconds, least_squares runs and residual evaluations, and its answers."""
    import scipy.optimize

    import calib.fit.core as core
    from calib.fit.ipp import IppPowerFitter

    count = {"runs": 0, "nfev": 0}
    real = core.least_squares

    def counted(*a, **k):  # noqa: ANN002, ANN003, ANN202
        sol = real(*a, **k)
        count["runs"] += 1
        count["nfev"] += int(sol.nfev)
        return sol

    core.least_squares = counted
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.process_time()
            f = IppPowerFitter(**settings).fit(rows, uncertainty=uncertainty)
            dt = time.process_time() - t0
    finally:
        core.least_squares = real
    del scipy
    sec = f.section_
    return {"cpu_s": dt, **count, "forms": f.forms_, "sm_scaling": f.sm_scaling_, "shared": f.shared_,
            "chisqr": f.result_.chisqr, "bic": f.result_.bic,
            "values": {p.name: p.value for p in sec.params.values()},
            "stderr": {p.name: p.stderr for p in sec.params.values()},
            "stderr_total": {p.name: getattr(p, "stderr_total", None) for p in sec.params.values()},
            "n_seen": len(f._seen), "n_alternatives": len(f.alternatives_)}


def rel(a: float | None, b: float | None) -> float:
    if a is None or b is None:
        return 0.0 if a is b else float("inf")
    return abs(a - b) / max(abs(b), 1e-300)


def compare(new: dict, old: dict) -> None:
    for name, r in new.items():
        o = old.get(name)
        if o is None:
            continue
        same = (r["forms"], r["sm_scaling"], r["shared"]) == (o["forms"], o["sm_scaling"], o["shared"])
        dv = max((rel(r["values"].get(k), v) for k, v in o["values"].items()), default=0.0)
        ds = max((rel(r["stderr"].get(k), v) for k, v in o["stderr"].items()), default=0.0)
        dt = max((rel(r["stderr_total"].get(k), v) for k, v in o["stderr_total"].items()), default=0.0)
        print(f"{name:22s} cpu {o['cpu_s']:6.2f} -> {r['cpu_s']:6.2f} s (x{o['cpu_s'] / max(r['cpu_s'], 1e-9):.2f}), "
              f"runs {o['runs']} -> {r['runs']}, evals {o['nfev']} -> {r['nfev']} (x{o['nfev'] / max(r['nfev'], 1):.2f}), structure {'same' if same else 'DIFFERENT'}, "
              f"values max rel {dv:.1e}, stderr {ds:.1e}, stderr_total {dt:.1e}, "
              f"chisqr {o['chisqr']:.6g} -> {r['chisqr']:.6g}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--which", default="all", help="comma list of presets and/or 'tests', or 'all'")
    ap.add_argument("--out", required=True)
    ap.add_argument("--compare")
    ap.add_argument("--files", default="", help="comma list of other parameter files (samples table beside each)")
    a = ap.parse_args(argv)
    res = {}
    for name, rows, settings, unc in cases(set(a.which.split(",")), [f for f in a.files.split(",") if f]):
        r = measure(rows, settings, unc)
        res[name] = r
        print(f"{name:22s} cpu {r['cpu_s']:6.2f} s  least_squares runs {r['runs']:4d}  residual evals {r['nfev']:6d}  "
              f"bic {r['bic']:.4f}", flush=True)
    Path(a.out).write_text(json.dumps(res, indent=1, sort_keys=True))
    if a.compare:
        compare(res, json.loads(Path(a.compare).read_text()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
