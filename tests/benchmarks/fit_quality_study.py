"""Fit-quality figures behind the gate of `calib fit`/`calib run` (calib.model.validation.FIT_LIMITS).

Run by hand:  .venv/bin/python tests/benchmarks/fit_quality_study.py [--standard]

For every virtual preset (quick campaign; --standard adds the standard campaign of the three main
presets) and every real measurement file in ../shared/data (gpmTOOL tables: fitted as samples tables),
prints each fitted section's error measures (MAPE, R^2, RMSE), the largest of each measure over the
good fits, and the fit of a corrupted table (the issue's absurd case: 400 readings of 99,999 W among
a campaign's, as a samples table: what the gate must refuse).

Figures (2 shared cores, this toolkit at the commit that added the gate; worst good fit per section):

    section          worst MAPE            worst R^2   worst RMSE   where
    power            2.94 % (virtual 1.24) 0.9871      -            real Titan Xp micro (virtual: titanx_nonadd quick)
    dvfs             0.83 %                0.9974      2.33 W       titanx standard
    thermal          0.72 %                0.9821      0.47 C       gtx280 standard
    thermal_network  -                     -           1.00 C       gtx280 standard
    timing           9.15 %                0.9775      -            titanx quick / gtx580 quick
    transfer         91.4 %                -           -            gtx580 quick (small copies: latency-dominated)

    corrupted table (4 windows at 99,999 W): power MAPE 3958 %, R^2 0.245 (refused)
    the issue's raw log (400 NVML readings at 99,999 W, before the plausibility screen): MAPE 656 %

Limits chosen from these: calib.model.validation.FIT_LIMITS.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data" / "guerreiro-gtxtitanx"


def _main(*argv: str) -> int:
    from calib.cli import main

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(list(argv))


def _stats(path: Path) -> dict:
    doc = json.loads(path.read_text())
    return {s: {k: v.get(k) for k in ("n_samples", "mape_pct", "r2", "rmse_w", "rmse_c", "rmse_s")}
            for s, v in doc.get("fit", {}).items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--standard", action="store_true", help="also the standard campaign of gtx280/gtx580/titanx")
    a = ap.parse_args()
    from microbench.devices.sim.presets import PRESETS

    rows: list[tuple[str, str, dict]] = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        runs = [(p, "quick") for p in PRESETS] + ([(p, "standard") for p in ("gtx280", "gtx580", "titanx")]
                                                  if a.standard else [])
        for preset, camp in runs:
            t0 = time.monotonic()
            rc = _main("-q", "run", "--device", f"sim:{preset}", "--campaign", camp, "--name", f"{preset}-{camp}",
                       "--logs-dir", str(tmp / "L"), "--fitted-dir", str(tmp / "F"), "--accept-poor-fit")
            label = f"sim:{preset} {camp} ({time.monotonic() - t0:.0f} s)"
            if rc != 0:
                print(f"{label}: exit {rc}")
                continue
            for sec, st in _stats(tmp / "F" / f"{preset}-{camp}.json").items():
                rows.append((label, sec, st))
        for name in ("tpds2019_micro_named_gtxtitanx.csv", "hpca2018_micro_gtxtitanx.csv", "tpds2019_micro_titanxp.csv",
                     "tpds2019_real_dev_gtxtitanx.csv"):
            src = DATA / name
            if not src.exists():
                continue
            table = tmp / f"{name}.samples.csv"
            if _main("import", "gpmtool", str(src), "-o", str(table)) != 0:
                print(f"{name}: import failed")
                continue
            out = tmp / f"{name}.json"
            rc = _main("fit", str(table), "-o", str(out), "--accept-poor-fit")
            if rc != 0:
                print(f"{name}: fit exit {rc}")
                continue
            for sec, st in _stats(out).items():
                rows.append((f"real {name}", sec, st))
        # the absurd case: a campaign's samples table in which 4 windows read 99,999 W
        import pandas as pd

        base = tmp / "F" / "gtx280-quick.samples.csv"
        if base.exists():
            df = pd.read_csv(base)
            df.loc[df.index[df["role"] == "unit"][:4], "power_w"] = 99999.0
            df.to_csv(tmp / "absurd.csv", index=False)
            _main("fit", str(tmp / "absurd.csv"), "-o", str(tmp / "absurd.json"), "--accept-poor-fit")
            for sec, st in _stats(tmp / "absurd.json").items():
                rows.append(("corrupted: 4 windows at 99,999 W", sec, st))
    print(f"{'source':52s} {'section':16s} {'n':>6s} {'MAPE %':>8s} {'R^2':>8s} {'RMSE':>10s}")
    for label, sec, st in rows:
        rm = next((f"{st[k]:.3g} {k[5:]}" for k in ("rmse_w", "rmse_c", "rmse_s") if st.get(k) is not None), "-")
        mape = "-" if st.get("mape_pct") is None else f"{st['mape_pct']:.3g}"
        r2 = "-" if st.get("r2") is None else f"{st['r2']:.4f}"
        print(f"{label:52s} {sec:16s} {st.get('n_samples', 0):6d} {mape:>8s} {r2:>8s} {rm:>10s}")
    good = [r for r in rows if not r[0].startswith("corrupted")]
    print("\nworst over the good fits, per section:")
    for sec in sorted({r[1] for r in good}):
        m = [r[2]["mape_pct"] for r in good if r[1] == sec and r[2].get("mape_pct") is not None]
        r2 = [r[2]["r2"] for r in good if r[1] == sec and r[2].get("r2") is not None]
        rc = [r[2]["rmse_c"] for r in good if r[1] == sec and r[2].get("rmse_c") is not None]
        print(f"  {sec:16s} max MAPE {max(m) if m else float('nan'):.3g} %, min R^2 "
              f"{min(r2) if r2 else float('nan'):.4f}" + (f", max RMSE {max(rc):.3g} C" if rc else ""))


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    main()
