"""Reproduce benchmarks/titanx_results.md: the DVFS model on the Guerreiro et al. GTX Titan X and Titan Xp tables.

Run from the repository root (takes a few minutes on one core)::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/titanx_study.py [--data DIR] [--out benchmarks/titanx_results.md]

Every number comes from this toolkit's own fits (calib.importers.gpmtool -> calib.fit.dvfs.fit_dvfs ->
calib.model.dvfs.predict_power, calib.fit.crossval.cross_validate). The authors' fitted model files
(``*_model_*``) are only read to put their coefficients and errors next to ours.

Data: J. Guerreiro, A. Ilic, N. Roma, P. Tomas. "GPGPU Power Modeling for Multi-Domain Voltage-Frequency
Scaling", HPCA 2018; "Modeling and Decoupling the GPU Power Consumption for Cross-Domain DVFS", IEEE TPDS
2019 (gpmTOOL, BSD-3-Clause with citation clause; ../shared/data/guerreiro-gtxtitanx/LICENSE).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # "one core": must precede the numpy import
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calib.fit.crossval import cross_validate  # noqa: E402
from calib.fit.dvfs import fit_dvfs  # noqa: E402
from calib.importers.gpmtool import read as read_gpmtool  # noqa: E402
from calib.model.dvfs import predict_power  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "guerreiro-gtxtitanx"

#: model variants for the ablation: label -> fit_dvfs keyword arguments
VARIANTS: list[tuple[str, dict]] = [
    ("gpmTOOL form refit (linear, absolute residuals, no active term, no memory-bound scaling)",
     dict(ar_form="linear", weighting="absolute", active_terms=False, activity_clocks="off")),
    ("+ relative residuals", dict(ar_form="linear", active_terms=False, activity_clocks="off")),
    ("+ active-domain terms", dict(ar_form="linear", activity_clocks="off")),
    ("+ memory-bound scaling of default-clock activities", dict(ar_form="linear")),
    ("+ access-rate transform U^p (pow)", dict(ar_form="pow")),
    ("+ Box-Cox transform 1 + a(U^lam - 1)/lam (a, lam fitted)", dict(ar_form="boxcox")),
    ("thresholded power (U^lam - t^lam)/(1 - t^lam), t fitted", dict(ar_threshold=None)),
    ("thresholded power, t = 0.01", dict(ar_threshold=0.01)),
    ("**thresholded power, t = 0.03 (default)**", dict()),
    ("thresholded power, t = 0.06", dict(ar_threshold=0.06)),
    ("thresholded power, t = 0.10", dict(ar_threshold=0.10)),
    ("IPP log transform, IPP constants a = 0.1365, b = 1.001375", dict(ar_form="log", fit_log_a=False)),
    ("IPP log transform, slope a fitted", dict(ar_form="log")),
    ("default + ridge 0.01 on unit weights", dict(ridge=0.01)),
]


def mape(pred: np.ndarray, y: np.ndarray) -> float:
    return float(100 * np.mean(np.abs(pred - y) / y))


def fit_doc(df: pd.DataFrame, **kw) -> tuple[dict, object]:
    sec = fit_dvfs(df, **kw)
    doc: dict = {}
    sec.store(doc, "power")
    return doc, sec


def timed_fit(df: pd.DataFrame, repeat: int = 3, **kw) -> tuple[float, dict, object]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        doc, sec = fit_doc(df, **kw)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), doc, sec


def cv(df: pd.DataFrame, k: int = 5, seed: int = 0, **kw):
    return cross_validate(df, k, lambda d: fit_dvfs(d, **kw), predict_power, seed=seed)


# ---------------------------------------------------------------- the authors' model files (comparison only)
def authors_model(path: Path) -> dict:
    """Parse a gpmTOOL model file: clocks, beta0..3, omegas, relative voltages."""
    lines = [x for x in path.read_text().splitlines() if x.strip()]
    names = [n.strip() for n in lines[3].split(",")]
    fc = [float(v) for v in lines[4].split(",")]
    fm = [float(v) for v in lines[5].split(",")]
    coef = [float(v) for v in lines[6].split(",")]
    vc = [float(v) for v in lines[7].split(",")]
    vm = [float(v) for v in lines[8].split(",")]
    default = [float(v) for v in lines[1].split(",")]
    n_core = int(lines[2].split(",")[0])
    return {"names": names, "n_core": n_core, "fc": fc, "fm": fm, "beta": coef[:4], "omega": coef[4:],
            "vc": vc, "vm": vm, "default": default}


def authors_predict(m: dict, df: pd.DataFrame) -> np.ndarray:
    """gpmTOOL's P = b0 Vc + b1 Vm + b2 Vc^2 fc + b3 Vm^2 fm + sum w_i V^2 f U_i (f in MHz)."""
    from calib.importers._common import unit_name

    vc = np.interp(df["core_mhz"], m["fc"], m["vc"])
    vm = np.interp(df["mem_mhz"], m["fm"], m["vm"])
    fc, fm = df["core_mhz"].to_numpy(float), df["mem_mhz"].to_numpy(float)
    b = m["beta"]
    p = b[0] * vc + b[1] * vm + b[2] * vc**2 * fc + b[3] * vm**2 * fm
    for i, (n, w) in enumerate(zip(m["names"], m["omega"])):
        col = "act_" + unit_name(n)
        if col not in df.columns:
            col = "act_mem_" + unit_name(n)
        f = vc**2 * fc if i < m["n_core"] else vm**2 * fm
        p = p + w * f * df[col].to_numpy(float)
    return p


def oracle_mape(section: dict, df: pd.DataFrame) -> float:
    """MAPE when every workload gets free core/memory dynamic power (W at the reference clocks) on top of
    the fitted voltage curves and static power: the error the frequency part alone leaves."""
    from scipy.optimize import nnls

    from calib.model.dvfs import compile_section, rows_from_table

    c = compile_section(section)
    r, _ = rows_from_table(c, df)
    vc = c.core_volts(r.fc, r.fm)
    vm = np.interp(r.fm, c.mem_mhz, c.vmem)
    kc, km = vc**2 * r.fc / c.f0c, vm**2 * r.fm / c.f0m
    static = c.coef["static_core_w"] * vc ** c.shape.get("static_v_exp", 1.0) + c.coef["static_mem_w"] * vm
    y = df["power_w"].to_numpy(float)
    pred = np.empty_like(y)
    for _, idx in df.groupby("workload").indices.items():
        A = np.column_stack([kc[idx], km[idx]]) / y[idx, None]
        x, _ = nnls(A, (y[idx] - static[idx]) / y[idx])
        pred[idx] = static[idx] + kc[idx] * x[0] + km[idx] * x[1]
    return mape(pred, y)


def coef_table(m: dict, fits: list[tuple[str, dict]]) -> str:
    """Authors' coefficients (converted to W at the default clocks) next to ours."""
    from calib.importers._common import unit_name

    f0c, f0m = m["default"]
    b = m["beta"]
    rows = [("static core (beta0 Vc), W", b[0], "static_core_w"), ("static memory (beta1 Vm), W", b[1], "static_mem_w"),
            ("constant dynamic core (beta2 Vc^2 fc), W at default clock", b[2] * f0c, "const_core_w"),
            ("constant dynamic memory (beta3 Vm^2 fm), W at default clock", b[3] * f0m, "const_mem_w")]
    for i, (n, w) in enumerate(zip(m["names"], m["omega"])):
        f0 = f0c if i < m["n_core"] else f0m
        rows.append((f"unit {n} (omega V^2 f U), W at default clock, U = 1", w * f0, "w_" + unit_name(n)))
    extra = ["active_core_w", "active_mem_w", "ar_exponent", "ar_bc_a", "ar_bc_lambda", "ar_tp_lambda",
             "ar_tp_threshold", "mem_sat"]
    head = "| coefficient | authors | " + " | ".join(lbl for lbl, _ in fits) + " |"
    out = [head, "|---|---:|" + "---:|" * len(fits)]

    def ours(doc: dict, key: str) -> str:
        p = doc["power"]["parameters"].get(key) or doc["power"]["parameters"].get(key.replace("w_", "w_mem_"))
        if p is None:
            return "-"
        se = doc["fit"]["power"]["stderr"].get(key)
        return f"{p['value']:.2f}" + (f" +/- {se:.2f}" if se is not None else "")

    for label, val, key in rows:
        out.append(f"| {label} | {val:.2f} | " + " | ".join(ours(d, key) for _, d in fits) + " |")
    for key in extra:
        if any(key in d["power"]["parameters"] for _, d in fits):
            out.append(f"| {key} | - | " + " | ".join(ours(d, key) for _, d in fits) + " |")
    return "\n".join(out)


def voltage_table(m: dict, fits: list[tuple[str, dict]], dom: str) -> str:
    clocks = m["fc"] if dom == "core" else m["fm"]
    volts = m["vc"] if dom == "core" else m["vm"]
    out = [f"| {dom} MHz | authors | " + " | ".join(lbl for lbl, _ in fits) + " |", "|---:|---:|" + "---:|" * len(fits)]
    for f, v in zip(clocks, volts):
        cells = []
        for _, d in fits:
            p = d["power"]["parameters"].get(f"v_{dom}_{f:g}")
            cells.append("-" if p is None else f"{p['value']:.3f}")
        out.append(f"| {f:g} | {v:.3f} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "titanx_results.md"))
    ap.add_argument("--seeds", type=int, default=5, help="fold seeds for the CV spread of the default model")
    args = ap.parse_args(argv)
    data = Path(args.data)
    warnings.simplefilter("ignore")
    md: list[str] = []
    w = md.append

    tx = read_gpmtool(data / "tpds2019_micro_named_gtxtitanx.csv")
    dev = read_gpmtool(data / "tpds2019_real_dev_gtxtitanx.csv")
    xp = read_gpmtool(data / "tpds2019_micro_titanxp.csv")
    hp = read_gpmtool(data / "hpca2018_micro_gtxtitanx.csv")

    # ------------------------------------------------------------------ Titan X headline
    t_fit, doc, sec = timed_fit(tx)
    y = tx["power_w"].to_numpy(float)
    train = mape(predict_power(doc["power"], tx), y)
    cvs = [cv(tx, seed=s) for s in range(args.seeds)]
    cv0 = cvs[0]
    pdev = predict_power(doc["power"], dev)
    ydev = dev["power_w"].to_numpy(float)
    dev_mape = mape(pdev, ydev)
    dev_max = float(100 * np.max(np.abs(pdev - ydev) / ydev))
    ref_doc, _ = fit_doc(tx, **VARIANTS[0][1])
    ref_dev = mape(predict_power(ref_doc["power"], dev), ydev)
    ref_cv = cv(tx, **VARIANTS[0][1])
    print(f"Titan X: fit {t_fit:.2f}s train {train:.2f}% cv {cv0.mape_pct:.2f}% dev {dev_mape:.2f}%", flush=True)

    cvv = [c.mape_pct for c in cvs]
    w("# DVFS power model on the Guerreiro et al. GTX Titan X and Titan Xp measurements\n")
    w("Generated by `benchmarks/titanx_study.py` (rerun it to reproduce every number; one BLAS thread). "
      "All figures come from this toolkit's own fits: `calib.importers.gpmtool` -> `calib.fit.dvfs.fit_dvfs` -> "
      "`calib.model.dvfs.predict_power`, cross-validation with `calib.fit.crossval.cross_validate` (folds by "
      "microbenchmark name, never splitting a name). The authors' fitted files (`*_model_*`) are only read to "
      "show their coefficients and errors next to ours.\n")
    w("Data: J. Guerreiro, A. Ilic, N. Roma, P. Tomas, *GPGPU Power Modeling for Multi-Domain Voltage-Frequency "
      "Scaling*, HPCA 2018, and *Modeling and Decoupling the GPU Power Consumption for Cross-Domain DVFS*, IEEE "
      "TPDS 2019 (gpmTOOL; BSD-3-Clause with citation clause, see ../shared/data/guerreiro-gtxtitanx/LICENSE).\n")
    w("Model (calib/model/dvfs.py): `P = Vc*(Sc + k_T*dT) + Vm*Sm + Vc^2*fc/fc0*(Cc + Ac*[core busy] + sum_core w_i*g(U'_i)) "
      "+ Vm^2*fm/fm0*(Cm + Am*[memory busy] + sum_mem w_j*g(U'_j))`, with latent monotone voltages per clock "
      "level, the thresholded-power access-rate transform `g(U) = max(0, (U^lam - t^lam)/(1 - t^lam))` (contains "
      "the linear form, `U^p` and IPP's log; `t` = 0.03, `lam` fitted), and `U'` the default-clock activities "
      "rescaled to the row's clocks when the kernel turns memory bound. Fit: joint bounded least squares on "
      "relative residuals.\n")
    w("## GTX Titan X (tpds2019_micro_named_gtxtitanx.csv: 102 microbenchmarks under 50 names x 64 clock pairs)\n")
    w("| figure | this toolkit (default model) | gpmTOOL form refit by this toolkit | authors, published |")
    w("|---|---:|---:|---:|")
    w(f"| fit time (6,528 rows, median of 3, one core) | {t_fit:.2f} s | - | - |")
    w(f"| training MAPE | {train:.2f} % | {mape(predict_power(ref_doc['power'], tx), y):.2f} % | - |")
    w(f"| 5-fold CV MAPE by microbenchmark name (seed 0) | {cv0.mape_pct:.2f} % | {ref_cv.mape_pct:.2f} % | - |")
    w(f"| 5-fold CV MAPE, seeds 0-{args.seeds - 1} (mean, min-max) | {np.mean(cvv):.2f} % ({min(cvv):.2f}-{max(cvv):.2f}) | - | - |")
    worst = cv0.per_workload["mape_pct"].drop(index="Idle", errors="ignore")
    w(f"| 5-fold CV, worst microbenchmark name (Idle apart, see below) | {worst.max():.1f} % ({worst.idxmax()}) | - | - |")
    w(f"| 5-fold CV, Idle held out | {cv0.per_workload.loc['Idle', 'mape_pct']:.1f} % | - | - |")
    w(f"| 10 real applications (dev set, never fitted), MAPE | {dev_mape:.2f} % (max {dev_max:.1f} %) | {ref_dev:.2f} % | "
      "6 % (HPCA'18), 4.6 % (TPDS'19), other real apps |")
    big = tx.iloc[np.random.default_rng(0).integers(0, len(tx), 1_000_000)].reset_index(drop=True)
    tp = []
    for _ in range(3):
        t0 = time.perf_counter()
        predict_power(doc["power"], big)
        tp.append(time.perf_counter() - t0)
    w(f"| prediction of 1e6 rows (`predict_power`, DataFrame in, one core) | {min(tp) * 1e3:.0f} ms = "
      f"{1e6 / min(tp) / 1e6:.1f} M rows/s | - | - |")
    w("")
    w("Idle: when the idle benchmark is in the held-out fold, no training row has zero activity, so the power of "
      "an active GPU (`active_*_w`) cannot be separated from the constant terms and idle power is over-predicted. "
      "Keep an idle measurement in every calibration table.\n")
    w("The dev-set MAPE is not a fully independent estimate: one hyperparameter, the activity threshold t = 0.03 of "
      "the access-rate transform, was chosen on it (and on CV; see the model-choice table). Everything else was fitted "
      "on microbenchmarks only.\n")
    w("The authors' errors are on their own real-application sets (TPDS'19 with 12 components, SP split into "
      "ADD/MUL/FMA and DP likewise); the table here has 7+1 components. Their TPDS'19 Titan X model file has those "
      "12 components, so it cannot be evaluated on this 8-column table; the gpmTOOL-form column is the authors' "
      "model form and fitting criterion (unweighted least squares, linear utilizations) refitted by this toolkit on "
      "the same table, i.e. the like-for-like baseline.\n")

    w("### Development set: the 10 real applications (fit on microbenchmarks only)\n")
    e = (pdev - ydev) / ydev * 100
    e_ref = (predict_power(ref_doc["power"], dev) - ydev) / ydev * 100
    t = pd.DataFrame({"workload": dev["workload"].astype(str), "e": e, "a": np.abs(e), "er": np.abs(e_ref),
                      "b": e_ref})
    g = t.groupby("workload").agg(mape=("a", "mean"), bias=("e", "mean"), mx=("a", "max"), ref=("er", "mean"),
                                  refb=("b", "mean"))
    w("| application | MAPE % | bias % | max % | gpmTOOL-form refit MAPE % (bias %) |")
    w("|---|---:|---:|---:|---:|")
    for name, r in g.sort_values("mape", ascending=False).iterrows():
        w(f"| {name} | {r.mape:.2f} | {r.bias:+.2f} | {r.mx:.1f} | {r.ref:.2f} ({r.refb:+.1f}) |")
    w("")
    orc = oracle_mape(doc["power"], dev)
    w("Where the remaining error comes from: giving each application its own core and memory dynamic power "
      f"(two free numbers per application) with the voltage curves and static power fitted on the microbenchmarks "
      f"fits the 10 applications to {orc:.2f} % MAPE, so the frequency/voltage part carries over to real "
      "applications and the error is in mapping their 8 counters to power. 2MM and GEMM are under-predicted at every "
      "clock pair: no microbenchmark with their counters (L2 0.72, DRAM 0.14, SP 0.03-0.06) draws as much; their "
      "load/texture traffic is not among the measured activities. backprop, reduction and streamcluster are "
      "over-predicted (time the GPU idles between kernels lowers the measured mean power but not the per-kernel "
      "counters is one candidate).\n")

    # ------------------------------------------------------------------ ablation
    w("### Model choices (each validated by 5-fold CV by name and by the dev applications)\n")
    w("| variant | training MAPE % | 5-fold CV MAPE % | dev-apps MAPE % | fit time s |")
    w("|---|---:|---:|---:|---:|")
    for label, kw in VARIANTS:
        tf, d, _ = timed_fit(tx, repeat=1, **kw)
        c = cv(tx, **kw)
        w(f"| {label} | {mape(predict_power(d['power'], tx), y):.2f} | {c.mape_pct:.2f} | "
          f"{mape(predict_power(d['power'], dev), ydev):.2f} | {tf:.2f} |")
        print("  variant", label, flush=True)
    ta, da, sa = timed_fit(tx, repeat=1, method="alternating")

    def ssr(d: dict) -> float:
        return float(np.sum(((predict_power(d["power"], tx) - y) / y) ** 2))

    w("")
    w(f"Solver: the joint bounded least squares (default) and gpmTOOL's alternating scheme (NNLS for the W "
      f"coefficients / bounded least squares for voltages and shapes, until every parameter changes < 0.05 % for 5 "
      f"iterations) on this table: training MAPE {train:.3f} % vs {mape(predict_power(da['power'], tx), y):.3f} %, "
      f"sum of squared relative residuals {ssr(doc):.4f} vs {ssr(da):.4f}, time {t_fit:.2f} s vs {ta:.1f} s "
      f"({sa.stats['solver_message']}). The joint solve is the default.\n")

    # ------------------------------------------------------------------ coefficients
    am = authors_model(data / "tpds2019_model_dvfs_gtxtitanx.csv")
    hm = authors_model(data / "hpca2018_model_gtxtitanx.csv")
    w("### Coefficients next to the authors' (W at the default clocks 975/3505 MHz, +/- standard error)\n")
    w("The authors' TPDS'19 Titan X file has 11 core components (SP/DP split by ADD/MUL/FMA); only the "
      "components with the same name are comparable. Ours: `ref` = gpmTOOL form refit, `default` = this toolkit's model "
      "(its unit weights act on transformed activities, so they are not the same quantity as omega).\n")
    w(coef_table(am, [("ref (gpmTOOL form)", ref_doc), ("default", doc)]))
    w("")
    w("Relative core voltage (1 at 975 MHz; latent, fitted):\n")
    w(voltage_table(am, [("ref (gpmTOOL form)", ref_doc), ("default", doc)], "core"))
    w("")
    w(voltage_table(am, [("ref (gpmTOOL form)", ref_doc), ("default", doc)], "mem"))
    w("")
    hdoc, _ = fit_doc(hp)
    hdoc_ref, _ = fit_doc(hp, **VARIANTS[0][1])
    yh = hp["power_w"].to_numpy(float)
    w("### HPCA'18 table (hpca2018_micro_gtxtitanx.csv, 83 microbenchmarks x 16 clock pairs, 6+1 components)\n")
    w("| model | MAPE on this table % | 5-fold CV % |")
    w("|---|---:|---:|")
    w(f"| authors' HPCA'18 fitted model (their file; voltage lines 8/9 read as core/memory) | "
      f"{mape(authors_predict(hm, hp), yh):.2f} | - |")
    w(f"| gpmTOOL form refit by this toolkit | {mape(predict_power(hdoc_ref['power'], hp), yh):.2f} | "
      f"{cv(hp, **VARIANTS[0][1]).mape_pct:.2f} |")
    w(f"| this toolkit, default model | {mape(predict_power(hdoc['power'], hp), yh):.2f} | {cv(hp).mape_pct:.2f} |")
    w("")
    w("(The HPCA'18 file has no names: workloads are groups of rows with identical utilizations, `mb001`...)\n")
    w(coef_table(hm, [("ref (gpmTOOL form)", hdoc_ref), ("default", hdoc)]))
    w("")

    # ------------------------------------------------------------------ Titan Xp
    t_xp, xdoc, xsec = timed_fit(xp)
    yx = xp["power_w"].to_numpy(float)
    xcvs = [cv(xp, seed=s) for s in range(args.seeds)]
    xref, _ = fit_doc(xp, **VARIANTS[0][1])
    xm = authors_model(data / "tpds2019_model_dvfs_titanxp.csv")
    print(f"Titan Xp: fit {t_xp:.2f}s train {mape(predict_power(xdoc['power'], xp), yx):.2f}%", flush=True)
    w("## Titan Xp (tpds2019_micro_titanxp.csv: 67 microbenchmarks x 24 clock pairs, 11+1 components)\n")
    w("No names in this file: the importer names each group of rows with identical utilizations (one "
      "microbenchmark at every clock pair) `mb001`..`mb067`, and CV folds never split a microbenchmark. No real "
      "applications are available for this GPU.\n")
    xc = [c.mape_pct for c in xcvs]
    w("| figure | this toolkit (default model) | gpmTOOL form refit | authors |")
    w("|---|---:|---:|---:|")
    w(f"| fit time (1,608 rows, median of 3, one core) | {t_xp:.2f} s | - | - |")
    w(f"| training MAPE | {mape(predict_power(xdoc['power'], xp), yx):.2f} % | "
      f"{mape(predict_power(xref['power'], xp), yx):.2f} % | {mape(authors_predict(xm, xp), yx):.2f} % "
      "(their fitted file evaluated on this table) |")
    w(f"| 5-fold CV MAPE by microbenchmark (seed 0) | {xc[0]:.2f} % | {cv(xp, **VARIANTS[0][1]).mape_pct:.2f} % | - |")
    w(f"| 5-fold CV MAPE, seeds 0-{args.seeds - 1} (mean, min-max) | {np.mean(xc):.2f} % ({min(xc):.2f}-{max(xc):.2f}) | - | - |")
    w("| real applications | (none available) | - | 7 % (HPCA'18), 3.5 % (TPDS'19) |")
    w("")
    if xsec.stats.get("warnings"):
        w("Fit warnings: " + "; ".join(xsec.stats["warnings"]) + ".\n")
    w("Coefficients (W at the default clocks 1404/5705 MHz; the same 12 components as the authors' file):\n")
    w(coef_table(xm, [("ref (gpmTOOL form)", xref), ("default", xdoc)]))
    w("")
    w(voltage_table(xm, [("ref (gpmTOOL form)", xref), ("default", xdoc)], "core"))
    w("")
    w(voltage_table(xm, [("ref (gpmTOOL form)", xref), ("default", xdoc)], "mem"))
    w("")
    w("## Notes\n")
    w("* Fit time is wall time of `fit_dvfs` (import excluded) with one BLAS thread; with several BLAS threads on "
      "a busy 2-core machine the SVDs inside the trust-region solver were up to 6x slower.")
    w("* CV MAPE is the mean absolute percentage error over all held-out rows; folds hold whole names "
      "(`calib fit --cv 5` prints the seed-0 figure).")
    w("* Activities in these tables are measured at the default clocks and repeated on every row (README); the "
      "importer records those clocks in `ref_core_mhz`/`ref_mem_mhz` and the model rescales the activities of kernels "
      "that turn memory bound at other clocks (`mem_sat`).")
    Path(args.out).write_text("\n".join(md) + "\n", encoding="utf-8")
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
