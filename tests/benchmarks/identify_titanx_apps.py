"""Real data (issue 29): the IPP power model with and without the shared-activation term, fitted on the
GTX Titan X microbenchmarks of Guerreiro et al. (TPDS 2019, /work/shared/data/guerreiro-gtxtitanx, see its
README for the citation: J. Guerreiro, A. Ilic, N. Roma, P. Tomas, "Modeling and Decoupling the GPU Power
Consumption for Cross-Domain DVFS", IEEE TPDS 2019; data from gpmTOOL, BSD-3-Clause with a citation
clause) at the default clocks, scored on the 10 development applications at the same clocks (never
fitted). The counters are the paper's 8 utilisations (SP, INT, DP, SFU, CF, L2, Shared, DRAM), read as
access rates; L2 and DRAM are chip-level.

    .venv/bin/python tests/benchmarks/identify_titanx_apps.py [--data DIR] [--cv-seeds 0,1,2] [--all-clocks] [--dispatch off]

Prints, per setting of ``shared_activation`` (off, on, auto = BIC), the structure chosen, BIC, training
MAPE, the K-fold cross-validated MAPE by microbenchmark (``calib fit --cv``'s folds, per seed), the
development applications' error (each application's signed error and the mean absolute) and the fit's
CPU time. ``--all-clocks`` also fits the IPP model separately at each of the 64 (core, memory) clock
pairs (the IPP model is one clock configuration; the utilisations are the default clocks' on every row,
as in the paper's table) and scores every application row at its pair: per-application MAPE over the 64
pairs, the mean over the 640 rows, and at how many pairs ``auto`` turned the term on.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
DATA = Path("/work/shared/data/guerreiro-gtxtitanx")
SETTINGS = ("off", "on", "auto")
#: the fitter's dispatch_stage setting for every fit (--dispatch)
DISPATCH = {"dispatch_stage": "auto"}


def _fitter(setting: str, core: float, mem: float):  # noqa: ANN202
    from calib.fit.ipp import IppPowerFitter

    return IppPowerFitter(sm_count=24, chip_units=["L2", "DRAM"], mem_units=["DRAM"], shared_activation=setting,
                          default_clocks={"core_mhz": core, "mem_mhz": mem}, **DISPATCH)


def _roles(d: pd.DataFrame, role: str | None = None) -> pd.DataFrame:
    if role is not None:
        return d.assign(role=role)
    return d.assign(role=np.where(d["workload"].astype(str).str.lower() == "idle", "idle", "unit"))


def _cv_mape(train: pd.DataFrame, k: int, seed: int, setting: str, core: float, mem: float) -> float:
    """K-fold CV MAPE (%) by microbenchmark (:func:`calib.fit.crossval.make_folds`); the idle row stays in
    every training fold (an IPP fit without it has no idle power)."""
    from calib.fit.crossval import make_folds
    from calib.model.ipp import IppPowerModel

    idle = (train["role"] == "idle").to_numpy()
    wl = train["workload"].astype(str)
    err = np.full(len(train), np.nan)
    for names in make_folds(wl[~idle], k, seed):
        test = wl.isin(names).to_numpy() & ~idle
        sec = _fitter(setting, core, mem).fit(train[~test], uncertainty=False).section_
        err[test] = 100 * np.abs(IppPowerModel(sec).predict(train[test]) / train.loc[test, "power_w"] - 1)
    return float(np.nanmean(err))


def main(argv: list[str] | None = None) -> int:
    from calib.importers.gpmtool import read
    from calib.model.ipp import IppPowerModel

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--cv", type=int, default=5, help="folds of the cross-validation by microbenchmark (0: none)")
    ap.add_argument("--cv-seeds", default="0", help="comma-separated fold seeds")
    ap.add_argument("--all-clocks", action="store_true", help="also fit at every clock pair (module docstring)")
    ap.add_argument("--dispatch", default="auto", choices=("auto", "on", "off"),
                    help="the fitter's dispatch_stage setting (calib.model.ipp's dispatch stage)")
    a = ap.parse_args(argv)
    DISPATCH["dispatch_stage"] = a.dispatch
    warnings.simplefilter("ignore")
    tx = read(Path(a.data) / "tpds2019_micro_named_gtxtitanx.csv")
    dev = read(Path(a.data) / "tpds2019_real_dev_gtxtitanx.csv")
    core, mem = float(tx["ref_core_mhz"].iloc[0]), float(tx["ref_mem_mhz"].iloc[0])
    at = lambda d, c, m: d[np.isclose(d["core_mhz"], c) & np.isclose(d["mem_mhz"], m)].reset_index(drop=True)  # noqa: E731
    train, test = _roles(at(tx, core, mem)), _roles(at(dev, core, mem), "app")
    apps = list(dict.fromkeys(test["workload"].astype(str)))
    print(f"default clocks {core:g}/{mem:g} MHz: {len(train)} microbenchmark rows, {len(test)} application rows "
          f"({len(apps)} applications)")
    seeds = [int(s) for s in a.cv_seeds.split(",") if s.strip()]
    per_app: dict[str, np.ndarray] = {}
    for sh in SETTINGS:
        t0 = time.process_time()
        f = _fitter(sh, core, mem).fit(train)
        dt = time.process_time() - t0
        m = IppPowerModel(f.section_)
        tr = 100 * np.mean(np.abs(m.predict(train) / train["power_w"] - 1))
        e = 100 * (m.predict(test) / test["power_w"] - 1)
        per_app[sh] = np.asarray(e, float)
        gamma = f.section_.value("shared_activation_frac") if "shared_activation_frac" in f.section_ else None
        cvs = []
        if a.cv:
            cvs = [_cv_mape(train, a.cv, s, sh, core, mem) for s in seeds]
        print(f"shared_activation={sh}: term {'on' if f.shared_ else 'off'}, dispatch stage {'on' if f.dispatch_ else 'off'}"
              + (f" (share {gamma:.3f} +/- {f.section_['shared_activation_frac'].stderr_total or 0:.3f})" if gamma is not None else "")
              + f", BIC {f.result_.bic:.1f}, linear units {sorted(u for u, v in f.forms_.items() if v == 'linear')}; "
              f"training MAPE {tr:.2f} %"
              + (f", {a.cv}-fold CV MAPE by microbenchmark (seeds {a.cv_seeds}) " + " / ".join(f"{c:.2f}" for c in cvs) + " %"
                 if cvs else "")
              + f"; development applications MAPE {np.mean(np.abs(e)):.2f} % (max {np.max(np.abs(e)):.1f} %); "
              f"fit {dt:.1f} s CPU", flush=True)
    print("per application, signed error % at the default clocks (" + " / ".join(SETTINGS) + "):")
    for i, app in enumerate(apps):
        print(f"  {app:16s} " + " / ".join(f"{per_app[sh][i]:+6.2f}" for sh in SETTINGS))
    if a.all_clocks:
        _all_clocks(tx, dev, apps)
    return 0


def _all_clocks(tx: pd.DataFrame, dev: pd.DataFrame, apps: list[str]) -> None:
    from calib.model.ipp import IppPowerModel

    pairs = sorted({(float(c), float(m)) for c, m in zip(tx["core_mhz"], tx["mem_mhz"])})
    err = {sh: [] for sh in SETTINGS}
    on_count = {sh: 0 for sh in SETTINGS}
    cpu = {sh: 0.0 for sh in SETTINGS}
    for c, m in pairs:
        tr = _roles(tx[np.isclose(tx["core_mhz"], c) & np.isclose(tx["mem_mhz"], m)].reset_index(drop=True))
        te = _roles(dev[np.isclose(dev["core_mhz"], c) & np.isclose(dev["mem_mhz"], m)].reset_index(drop=True), "app")
        if te.empty:
            continue
        for sh in SETTINGS:
            t0 = time.process_time()
            f = _fitter(sh, c, m).fit(tr, uncertainty=False)
            cpu[sh] += time.process_time() - t0
            on_count[sh] += int(bool(f.shared_))
            e = 100 * (IppPowerModel(f.section_).predict(te) / te["power_w"] - 1)
            err[sh].append(pd.DataFrame({"workload": te["workload"].astype(str), "err_pct": np.asarray(e, float)}))
    print(f"every clock pair ({len(pairs)} pairs, one IPP fit per pair and setting, scored on the applications at that pair):")
    tabs = {sh: pd.concat(err[sh]) for sh in SETTINGS}
    for sh in SETTINGS:
        t = tabs[sh]
        print(f"  shared_activation={sh}: term on at {on_count[sh]} of {len(pairs)} pairs; MAPE over {len(t)} "
              f"application rows {t['err_pct'].abs().mean():.2f} % (max {t['err_pct'].abs().max():.1f} %); "
              f"fits {cpu[sh]:.0f} s CPU")
    print("  per application, MAPE % over the clock pairs (" + " / ".join(SETTINGS) + "):")
    for app in apps:
        print(f"    {app:16s} " + " / ".join(
            f"{tabs[sh].loc[tabs[sh]['workload'] == app, 'err_pct'].abs().mean():6.2f}" for sh in SETTINGS))


if __name__ == "__main__":
    raise SystemExit(main())
