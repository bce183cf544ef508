"""Reproduce tests/benchmarks/titanx_results.md: the DVFS model on the Guerreiro et al. GTX Titan X and Titan Xp tables.

Run from the repository root (about 25 minutes on one core; ``--seeds 1`` for a quick look)::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/benchmarks/titanx_study.py [--data DIR] [--out tests/benchmarks/titanx_results.md]

Model selection protocol: candidates are compared by 5-fold cross-validation by microbenchmark name on
the Titan X microbenchmark table (seeds 0-4, paired by seed); a candidate becomes the default only when
its mean CV improvement exceeds the seed spread (max - min) of the current default's CV and the MAPE on
the 10 development applications does not get worse. The development applications are evaluated only
for the models listed in ``DEV_LOOKED`` (the ones that passed the CV criterion, plus the defaults);
the other rows of the ablation say "not looked at".

The candidates cross-validation rejected (ridge on the unit weights, core curves anchored at the
reference core clock, the static-power exponent Vc^k, per-domain total-activity terms, per-unit
transform powers, robust losses, equal weight per workload name) were removed from the fitter with
issue 28; their rows in titanx_results.md come from this script at commit 1a6b24f, the last where
they existed.

Every number comes from this toolkit's own fits (calib.importers.gpmtool -> calib.fit.dvfs.DvfsPowerFitter ->
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

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from calib.fit.crossval import cross_validate  # noqa: E402
from calib.core.params import Section  # noqa: E402
from calib.fit.dvfs import DvfsPowerFitter  # noqa: E402
from calib.importers.gpmtool import read as read_gpmtool  # noqa: E402
from calib.model import dvfs as dvfs_model  # noqa: E402


def fit_dvfs(df: pd.DataFrame, **settings) -> Section:
    """The DVFS section fitted with ``settings`` (DvfsPowerFitter's keyword arguments)."""
    return DvfsPowerFitter(**settings).fit(df).section_


def predict_power(section: Section | dict, df: pd.DataFrame) -> np.ndarray:
    """DVFS power (W) of a section, given as a Section or as the file's JSON of one."""
    return dvfs_model.predict_power(section if isinstance(section, Section) else Section.from_json(section), df)

DATA = ROOT.parent / "shared" / "data" / "guerreiro-gtxtitanx"

#: the gpmTOOL model form refitted by this toolkit (the like-for-like baseline)
GPMTOOL_FORM = dict(ar_form="linear", weighting="absolute", active_terms=False, activity_clocks="off",
                    core_voltage="shared")
#: the default before this study: one core voltage curve for every memory clock
SHARED = dict(core_voltage="shared")

#: history of the model choices (one core voltage curve), label -> fit_dvfs keyword arguments
VARIANTS: list[tuple[str, dict]] = [
    ("gpmTOOL form refit (linear, absolute residuals, no active term, no memory-bound scaling)", GPMTOOL_FORM),
    ("+ relative residuals", dict(ar_form="linear", active_terms=False, activity_clocks="off", core_voltage="shared")),
    ("+ active-domain terms", dict(ar_form="linear", activity_clocks="off", core_voltage="shared")),
    ("+ memory-bound scaling of default-clock activities", dict(ar_form="linear", core_voltage="shared")),
    ("+ access-rate transform U^p (pow)", dict(ar_form="pow", core_voltage="shared")),
    ("+ Box-Cox transform 1 + a(U^lam - 1)/lam (a, lam fitted)", dict(ar_form="boxcox", core_voltage="shared")),
    ("thresholded power (U^lam - t^lam)/(1 - t^lam), t fitted", dict(ar_threshold=None, core_voltage="shared")),
    ("thresholded power, t = 0.01", dict(ar_threshold=0.01, core_voltage="shared")),
    ("**thresholded power, t = 0.03 (the previous default)**", SHARED),
    ("thresholded power, t = 0.06", dict(ar_threshold=0.06, core_voltage="shared")),
    ("thresholded power, t = 0.10", dict(ar_threshold=0.10, core_voltage="shared")),
    ("IPP log transform, IPP constants a = 0.1365, b = 1.001375", dict(ar_form="log", fit_log_a=False,
                                                                      core_voltage="shared")),
    ("IPP log transform, slope a fitted", dict(ar_form="log", core_voltage="shared")),
]

#: this study's candidates, each on top of the default (core voltage curve per memory level)
CANDIDATES: list[tuple[str, dict]] = [
    ("**default: core voltage curve per memory level**", {}),
    ("+ absolute residuals", dict(weighting="absolute")),
    ("- active-domain terms", dict(active_terms=False)),
    ("- memory-bound scaling", dict(activity_clocks="off")),
    ("linear transform", dict(ar_form="linear")),
    ("Box-Cox transform", dict(ar_form="boxcox")),
    ("threshold t fitted", dict(ar_threshold=None)),
    ("threshold t = 0.01", dict(ar_threshold=0.01)),
    ("threshold t = 0.06", dict(ar_threshold=0.06)),
]
#: models whose development-set MAPE was looked at during this study (the defaults and the candidates
#: that passed the CV criterion); the others are not evaluated on the development set
DEV_LOOKED = {"**default: core voltage curve per memory level**", "Box-Cox transform", "threshold t fitted",
              "threshold t = 0.01"}
#: candidates shown per microbenchmark name
PER_NAME = ["threshold t = 0.01"]


def mape(pred: np.ndarray, y: np.ndarray) -> float:
    return float(100 * np.mean(np.abs(pred - y) / y))


def fit_doc(df: pd.DataFrame, **kw) -> tuple[dict, object]:
    """(the fitted section as a parameter file holds it: {"power": ..., "fit": {"power": ...}}, the Section)."""
    sec = fit_dvfs(df, **kw)
    js, fit = sec.to_json()
    return {"power": js, "fit": {"power": fit}}, sec


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
    section = Section.from_json(section)
    """MAPE when every workload gets free core/memory dynamic power (W at the reference clocks) on top of
    the fitted voltage curves and static power: the error the frequency part alone leaves."""
    from scipy.optimize import nnls

    from calib.model.dvfs import compile_section, rows_from_table

    c = compile_section(section)
    r, _ = rows_from_table(c, df)
    vc = c.core_volts(r.fc, r.fm)
    vm = np.interp(r.fm, c.mem_mhz, c.vmem)
    kc, km = vc**2 * r.fc / c.f0c, vm**2 * r.fm / c.f0m
    static = c.coef["static_core_w"] * vc + c.coef["static_mem_w"] * vm
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
    """Relative voltages per clock level: the authors' curve and ours; a fit with core curves per memory
    level gets one column per memory level."""
    clocks = m["fc"] if dom == "core" else m["fm"]
    volts = m["vc"] if dom == "core" else m["vm"]
    cols: list[tuple[str, dict, str]] = []  # (label, parameters, name suffix)
    for lbl, d in fits:
        per = d["power"]["voltage"][dom].get("per_mem")
        if per is None:
            cols.append((lbl, d["power"]["parameters"], ""))
            continue
        ref_m = d["power"]["ref_clocks"]["mem_mhz"]
        for fm in per["mem_mhz"]:
            cols.append((f"{lbl}, memory {fm:g} MHz", d["power"]["parameters"], "" if fm == ref_m else f"_mem_{fm:g}"))
    out = [f"| {dom} MHz | authors | " + " | ".join(c[0] for c in cols) + " |", "|---:|---:|" + "---:|" * len(cols)]
    for f, v in zip(clocks, volts):
        cells = []
        for _, pv, suffix in cols:
            p = pv.get(f"v_{dom}_{f:g}{suffix}")
            cells.append("-" if p is None else f"{p['value']:.3f}")
        out.append(f"| {f:g} | {v:.3f} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def cv_pinned(df: pd.DataFrame, seed: int, pin: tuple[str, ...] = ("Idle",), k: int = 5, **kw) -> float:
    """5-fold CV by name with the pinned names (the idle benchmark) always in the training set and not
    scored: a calibration table always has its idle measurement."""
    from calib.fit.crossval import make_folds

    wl = df["workload"].astype(str)
    pred = pd.Series(np.nan, index=df.index)
    for fold in make_folds(wl[~wl.isin(pin)], k, seed):
        test = wl.isin(fold)
        doc, _ = fit_doc(df[~test], **kw)
        pred[test] = predict_power(doc["power"], df[test])
    m = ~wl.isin(pin)
    return mape(pred[m].to_numpy(), df.loc[m, "power_w"].to_numpy(float))


def cv_summary(df: pd.DataFrame, seeds: int, **kw) -> dict:
    """Per-seed CV MAPE, per-name CV MAPE averaged over the seeds, seed-0 result."""
    runs = [cv(df, seed=s, **kw) for s in range(seeds)]
    per = pd.concat([r.per_workload["mape_pct"] for r in runs], axis=1).mean(axis=1)
    return {"seeds": np.array([r.mape_pct for r in runs]), "per_name": per, "first": runs[0]}


def spread(v: np.ndarray) -> str:
    return f"{np.mean(v):.2f} ({np.min(v):.2f}-{np.max(v):.2f})" if len(v) > 1 else f"{v[0]:.2f}"


def bias_within(df: pd.DataFrame, pred: np.ndarray) -> tuple[float, float]:
    """Mean |per-workload bias| and the MAPE left after removing each workload's mean error, %."""
    e = pd.Series(100 * (pred - df["power_w"].to_numpy(float)) / df["power_w"].to_numpy(float), index=df.index)
    b = e.groupby(df["workload"].astype(str)).transform("mean")
    return float(b.abs().mean()), float((e - b).abs().mean())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--out", default=str(ROOT / "tests" / "benchmarks" / "titanx_results.md"))
    ap.add_argument("--seeds", type=int, default=5, help="fold seeds of every cross-validation (default 5)")
    args = ap.parse_args(argv)
    data = Path(args.data)
    S = args.seeds
    warnings.simplefilter("ignore")
    md: list[str] = []
    w = md.append

    tx = read_gpmtool(data / "tpds2019_micro_named_gtxtitanx.csv")
    dev = read_gpmtool(data / "tpds2019_real_dev_gtxtitanx.csv")
    xp = read_gpmtool(data / "tpds2019_micro_titanxp.csv")
    hp = read_gpmtool(data / "hpca2018_micro_gtxtitanx.csv")
    y = tx["power_w"].to_numpy(float)
    ydev = dev["power_w"].to_numpy(float)

    # ------------------------------------------------------------------ Titan X headline
    t_fit, doc, sec = timed_fit(tx)
    t_old, old_doc, _ = timed_fit(tx, **SHARED)
    ref_doc, _ = fit_doc(tx, **GPMTOOL_FORM)
    head = {}
    for key, d, kw in (("new", doc, {}), ("old", old_doc, SHARED), ("ref", ref_doc, GPMTOOL_FORM)):
        c = cv_summary(tx, S, **kw)
        pdev = predict_power(d["power"], dev)
        head[key] = {"train": mape(predict_power(d["power"], tx), y), "cv": c,
                     "pinned": np.array([cv_pinned(tx, s, **kw) for s in range(S)]) if key != "ref" else None,
                     "pdev": pdev, "dev": mape(pdev, ydev), "dev_max": float(100 * np.max(np.abs(pdev - ydev) / ydev)),
                     "bw": bias_within(dev, pdev)}
        print(f"  headline {key}: train {head[key]['train']:.2f} cv {spread(c['seeds'])} dev {head[key]['dev']:.2f}",
              flush=True)
    N, O, R = head["new"], head["old"], head["ref"]

    w("# DVFS power model on the Guerreiro et al. GTX Titan X and Titan Xp measurements\n")
    w("Generated by `tests/benchmarks/titanx_study.py` (rerun it to reproduce every number; one BLAS thread). "
      "All figures come from this toolkit's own fits: `calib.importers.gpmtool` -> `calib.fit.dvfs.DvfsPowerFitter` -> "
      "`calib.model.dvfs.predict_power`, cross-validation with `calib.fit.crossval.cross_validate` (folds by "
      "microbenchmark name, never splitting a name). The authors' fitted files (`*_model_*`) are only read to "
      "show their coefficients and errors next to ours.\n")
    w("Data: J. Guerreiro, A. Ilic, N. Roma, P. Tomas, *GPGPU Power Modeling for Multi-Domain Voltage-Frequency "
      "Scaling*, HPCA 2018, and *Modeling and Decoupling the GPU Power Consumption for Cross-Domain DVFS*, IEEE "
      "TPDS 2019 (gpmTOOL; BSD-3-Clause with citation clause, see ../shared/data/guerreiro-gtxtitanx/LICENSE from the repository root).\n")
    w("Model (calib/model/dvfs.py): `P = Vc*Sc + Vm*Sm + Vc^2*fc/fc0*(Cc + Ac*[core busy] + sum_core w_i*g(U'_i)) "
      "+ Vm^2*fm/fm0*(Cm + Am*[memory busy] + sum_mem w_j*g(U'_j))`, with latent monotone voltages per clock "
      "level, **the core voltage a separate monotone curve for every memory clock** (`Vc(fc, fm)`; new default "
      "on tables that measured every clock pair), the thresholded-power access-rate transform "
      "`g(U) = max(0, (U^lam - t^lam)/(1 - t^lam))` (contains the linear form, `U^p` and IPP's log; `t` = 0.03, "
      "`lam` fitted), and `U'` the default-clock activities rescaled to the row's clocks when the kernel turns "
      "memory bound. Fit: joint bounded least squares on relative residuals.\n")
    w("## GTX Titan X (tpds2019_micro_named_gtxtitanx.csv: 102 microbenchmarks under 50 names x 64 clock pairs)\n")
    w("| figure | default (core voltage per memory level) | previous default (one core voltage curve) | "
      "gpmTOOL form refit by this toolkit | authors, published |")
    w("|---|---:|---:|---:|---:|")
    w(f"| fit time (6,528 rows, median of 3, one core) | {t_fit:.2f} s | {t_old:.2f} s | - | - |")
    w(f"| training MAPE | {N['train']:.2f} % | {O['train']:.2f} % | {R['train']:.2f} % | - |")
    w(f"| 5-fold CV MAPE by microbenchmark name (seed 0) | {N['cv']['seeds'][0]:.2f} % | {O['cv']['seeds'][0]:.2f} % | "
      f"{R['cv']['seeds'][0]:.2f} % | - |")
    w(f"| 5-fold CV MAPE, seeds 0-{S - 1} (mean, min-max) | {spread(N['cv']['seeds'])} % | {spread(O['cv']['seeds'])} % | "
      f"{spread(R['cv']['seeds'])} % | - |")
    w(f"| 5-fold CV MAPE, Idle always in the training folds, seeds 0-{S - 1} | {spread(N['pinned'])} % | "
      f"{spread(O['pinned'])} % | - | - |")
    for key in ("new", "old"):
        pw = head[key]["cv"]["per_name"]
        head[key]["worst"] = pw.drop(index="Idle", errors="ignore")
    w(f"| 5-fold CV, worst microbenchmark name (Idle apart, mean over seeds) | {N['worst'].max():.1f} % "
      f"({N['worst'].idxmax()}) | {O['worst'].max():.1f} % ({O['worst'].idxmax()}) | - | - |")
    w(f"| 5-fold CV, Idle held out (mean over seeds) | {N['cv']['per_name'].get('Idle', float('nan')):.1f} % | "
      f"{O['cv']['per_name'].get('Idle', float('nan')):.1f} % | - | - |")
    w(f"| 10 real applications (dev set, never fitted), MAPE | {N['dev']:.2f} % (max {N['dev_max']:.1f} %) | "
      f"{O['dev']:.2f} % (max {O['dev_max']:.1f} %) | {R['dev']:.2f} % | 6 % (HPCA'18), 4.6 % (TPDS'19), other real apps |")
    w(f"| dev set: mean per-application bias / error left after removing it | {N['bw'][0]:.2f} % / {N['bw'][1]:.2f} % | "
      f"{O['bw'][0]:.2f} % / {O['bw'][1]:.2f} % | {R['bw'][0]:.2f} % / {R['bw'][1]:.2f} % | - |")
    big = tx.iloc[np.random.default_rng(0).integers(0, len(tx), 1_000_000)].reset_index(drop=True)
    tp = []
    for _ in range(3):
        t0 = time.perf_counter()
        predict_power(doc["power"], big)
        tp.append(time.perf_counter() - t0)
    w(f"| prediction of 1e6 rows (`predict_power`, DataFrame in, one core) | {min(tp) * 1e3:.0f} ms = "
      f"{1e6 / min(tp) / 1e6:.1f} M rows/s | - | - | - |")
    w("")
    w("Idle: when the idle benchmark is in the held-out fold, no training row has zero activity, so the power of "
      "an active GPU (`active_*_w`) cannot be separated from the constant terms and idle power is over-predicted. "
      "A calibration table always has its idle measurement, hence the row with Idle kept in every training fold.\n")
    w("The dev-set MAPE is not a fully independent estimate. The activity threshold t = 0.03 of the access-rate "
      "transform was chosen on it by the previous engineer (cross-validation prefers t = 0.01 with either voltage "
      "model; see the tables below), and this study kept t = 0.03 because t = 0.01 made the development set worse: "
      "that is a choice between models made with the development applications. The new core voltage model was "
      "selected by cross-validation and then checked on the development set. Everything else is fitted on "
      "microbenchmarks only.\n")
    w("The authors' errors are on their own real-application sets (TPDS'19 with 12 components, SP split into "
      "ADD/MUL/FMA and DP likewise); the table here has 7+1 components. Their TPDS'19 Titan X model file has those "
      "12 components, so it cannot be evaluated on this 8-column table; the gpmTOOL-form column is the authors' "
      "model form and fitting criterion (unweighted least squares, linear utilizations, one core voltage curve) "
      "refitted by this toolkit on the same table, i.e. the like-for-like baseline.\n")

    # ------------------------------------------------------------------ why a core voltage curve per memory clock
    w("### Why a core voltage curve per memory clock\n")
    w("Measured board power (W) of two microbenchmarks at the lowest and the default core clock, for every memory "
      "clock. With one core voltage curve, the rise from 595 to 975 MHz core would be the same dynamic power "
      "`C V^2 f` scaled by the clock at every memory clock; at 810 MHz memory it is several times larger, i.e. the "
      "core voltage itself rises with the core clock there (the driver's performance state at that memory clock "
      "has its own voltage/frequency table), while at 3300-4005 MHz it is flat below 975 MHz:\n")
    w("| memory MHz | Idle at 595 / 975 MHz core | rise | SP at 595 / 975 MHz core | rise |")
    w("|---:|---:|---:|---:|---:|")
    for fm in sorted(tx["mem_mhz"].unique()):
        cells = []
        for name in ("Idle", "SP"):
            r = tx[(tx["workload"] == name) & (tx["mem_mhz"] == fm)].set_index("core_mhz")["power_w"]
            cells.append(f"{r.loc[595.0]:.1f} / {r.loc[975.0]:.1f} | {r.loc[975.0] - r.loc[595.0]:+.1f}")
        w(f"| {fm:g} | " + " | ".join(cells) + " |")
    w("")
    tmp = tx.assign(e=100 * (predict_power(old_doc["power"], tx) - y) / y)
    mb = tmp.groupby(["workload"] + [c for c in tx.columns if c.startswith("act_")], sort=False).ngroup()
    b_old = tmp.groupby(mb)["e"].transform("mean")
    tmp2 = tx.assign(e=100 * (predict_power(doc["power"], tx) - y) / y)
    b_new = tmp2.groupby(mb)["e"].transform("mean")
    w(f"In the training fit, the error left after removing each microbenchmark's mean error (the part that depends "
      f"on the clocks) falls from {(tmp['e'] - b_old).abs().mean():.2f} % with one core voltage curve to "
      f"{(tmp2['e'] - b_new).abs().mean():.2f} % with a curve per memory clock (at 810 MHz memory: "
      f"{(tmp['e'] - b_old)[tx['mem_mhz'] == 810].abs().mean():.2f} % -> "
      f"{(tmp2['e'] - b_new)[tx['mem_mhz'] == 810].abs().mean():.2f} %); the per-microbenchmark bias "
      f"(counters -> power) stays ({b_old.abs().mean():.2f} % -> {b_new.abs().mean():.2f} %). Cost: 48 more "
      "voltage parameters (3 curves x 15 steps + 3 offsets) on 6,528 rows.\n")
    pv = doc["power"]["parameters"]
    w(f"Interpretation caveat: with a core curve per memory clock, the 810 MHz core curve takes over the voltage "
      f"drop that the one-curve model put into the memory domain; the memory voltage at 810 MHz goes to its upper "
      f"bound ({pv['v_mem_810']['value']:.3f}, monotone: not above the 3300 MHz value) and the static memory power to "
      f"{pv['static_mem_w']['value']:.1f} W (core static {pv['static_core_w']['value']:.1f} W). How the 810 MHz "
      "power drop splits between the domains is weakly identified (standard errors of the static terms 5-6 W); the "
      "predictions on the measured grid do not depend on that split, but the latent voltages and static powers "
      "are not measurements.\n")

    # ------------------------------------------------------------------ dev apps
    w("### Development set: the 10 real applications (fit on microbenchmarks only)\n")
    e = (N["pdev"] - ydev) / ydev * 100
    e_old = (O["pdev"] - ydev) / ydev * 100
    e_ref = (R["pdev"] - ydev) / ydev * 100
    t = pd.DataFrame({"workload": dev["workload"].astype(str), "e": e, "a": np.abs(e), "eo": e_old,
                      "ao": np.abs(e_old), "er": np.abs(e_ref), "b": e_ref})
    g = t.groupby("workload").agg(mape=("a", "mean"), bias=("e", "mean"), mx=("a", "max"), old=("ao", "mean"),
                                  oldb=("eo", "mean"), ref=("er", "mean"), refb=("b", "mean"))
    w("| application | MAPE % | bias % | max % | previous default MAPE % (bias %) | gpmTOOL-form refit MAPE % (bias %) |")
    w("|---|---:|---:|---:|---:|---:|")
    for name, r in g.sort_values("mape", ascending=False).iterrows():
        w(f"| {name} | {r.mape:.2f} | {r.bias:+.2f} | {r.mx:.1f} | {r.old:.2f} ({r.oldb:+.1f}) | {r.ref:.2f} ({r.refb:+.1f}) |")
    w("")
    orc = oracle_mape(doc["power"], dev)
    orc_old = oracle_mape(old_doc["power"], dev)
    w("Where the remaining error comes from: giving each application its own core and memory dynamic power "
      f"(two free numbers per application) with the voltage curves and static power fitted on the microbenchmarks "
      f"fits the 10 applications to {orc:.2f} % MAPE ({orc_old:.2f} % with one core voltage curve), so the "
      "frequency/voltage part carries over to real applications and most of the error is in mapping their 8 "
      "counters to power (the per-application bias above). 2MM and GEMM are under-predicted by 13 % at every "
      "clock pair: they draw more (158-162 W at the default clocks) than the L2 microbenchmark (134 W, L2 0.96) "
      "or the DRAM one (136 W) although their counters are lower (L2 0.72, DRAM 0.14, SP 0.03-0.06); their "
      "load/store and L1/texture traffic is not among the measured activities. reduction draws less (134 W) than "
      "the DRAM microbenchmark although its counters are a superset of it (DRAM 0.69, L2 0.20 plus DP 0.16, INT "
      "0.08, Shared 0.07), and backprop, streamcluster likewise sit below what their counters say (time the GPU "
      "idles between kernels lowers the measured mean power but not the per-kernel counters is one candidate). "
      "No monotone function of these counters fitted to the microbenchmarks can produce either effect, and the "
      "microbenchmarks themselves are close to additive (the total-activity terms below find no sub-additivity).\n")

    # ------------------------------------------------------------------ this study's ablation
    w(f"### Model selection: candidates on top of the default (5-fold CV by name, seeds 0-{S - 1})\n")
    w("Protocol: every candidate is cross-validated on the microbenchmark table only; the difference to the "
      "default is paired by fold seed. A candidate would become the default only if its mean CV improvement "
      f"exceeded the seed spread (max - min) of the default's CV ({np.ptp(N['cv']['seeds']):.2f} points here) "
      "and the development MAPE did not get worse; the development applications were evaluated only for the "
      "candidates that passed the CV criterion. The same protocol made the per-memory-level core voltage the "
      f"default: against the previous default its CV improvement is "
      f"{np.mean(O['cv']['seeds'] - N['cv']['seeds']):.2f} points (seed spread of the previous default "
      f"{np.ptp(O['cv']['seeds']):.2f}) and the development MAPE fell from {O['dev']:.2f} % to {N['dev']:.2f} %.\n")
    w("Development-set evaluations during this study (counted, all listed): the previous default (6.69 %), the "
      "per-memory-level core voltage (6.09 %), and the three candidates that passed the CV criterion: threshold "
      "t = 0.01, threshold fitted, Box-Cox transform (6.88 %, 6.86 %, 6.96 %). That is five models (the "
      "per-memory-level one computed twice, identical); besides, the bias/within and two-numbers-per-application "
      "decompositions above were computed for the previous and the new default. The three threshold variants "
      "made the development set worse, so the threshold stays at 0.03: a choice between models made with the "
      "development set, as the previous engineer's t = 0.03 was.\n")
    w("| candidate | training MAPE % | CV MAPE %, mean (min-max) | change vs default, paired (sd) | "
      "worst name % | names better / worse by > 0.5 pt | dev-apps MAPE % | fit time s |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|")
    cand_res: dict[str, dict] = {}
    base = N["cv"]
    for label, kw in CANDIDATES:
        tf, d, _ = timed_fit(tx, repeat=1, **kw)
        c = base if not kw else cv_summary(tx, S, **kw)
        cand_res[label] = c
        dv = mape(predict_power(d["power"], dev), ydev) if label in DEV_LOOKED else None
        diff = c["seeds"] - base["seeds"]
        wn = c["per_name"].drop(index="Idle", errors="ignore")
        delta = (c["per_name"] - base["per_name"]).drop(index="Idle", errors="ignore")
        w(f"| {label} | {mape(predict_power(d['power'], tx), y):.2f} | {spread(c['seeds'])} | "
          + ("-" if not kw else f"{np.mean(diff):+.3f} ({np.std(diff, ddof=1) if len(diff) > 1 else 0:.3f})")
          + f" | {wn.max():.1f} ({wn.idxmax()}) | " + ("-" if not kw else f"{int((delta < -0.5).sum())} / {int((delta > 0.5).sum())}")
          + f" | {'not looked at' if dv is None else f'{dv:.2f}'} | {tf:.2f} |")
        print("  candidate", label, spread(c["seeds"]), flush=True)
    w("")
    bar = float(np.ptp(base["seeds"]))
    passed = [lbl for lbl, kw in CANDIDATES if kw and np.mean(base["seeds"] - cand_res[lbl]["seeds"]) > bar]
    w(f"Candidates whose mean CV improvement exceeds the default's seed spread ({bar:.2f} points): "
      + (", ".join(passed) if passed else "none") + ".")
    if set(passed) != DEV_LOOKED - {CANDIDATES[0][0]}:
        w(f"**Note: this run's CV pass list differs from the models whose development MAPE was looked at during "
          f"the study ({', '.join(sorted(DEV_LOOKED - {CANDIDATES[0][0]}))}).**")
    w("")
    w("During the study, the candidates passing were the three lower-threshold variants (t = 0.01, t "
      "fitted, Box-Cox with its jump at U = 0+), which fail the development check. The per-unit transform power "
      "and the static-power exponent improve CV consistently (paired) but by less than the seed spread; the "
      "robust losses, the total-activity terms (shared issue/datapath power, either sign: the microbenchmarks are "
      "additive within the fit's resolution), ridge, absolute residuals and equal weights per name do not "
      "improve it; removing the active-domain terms or the memory-bound scaling, or a linear transform, makes it "
      "worse. Monotone splines per unit were not tried beyond the per-unit power: the microbenchmark activities of "
      "most units cluster at a few levels (0, ~0.2, ~0.9), too few to place spline knots.\n")

    w("Per microbenchmark name, 5-fold CV MAPE % (mean over the seeds), sorted by the default's error:\n")
    cols = [("previous default", O["cv"]["per_name"]), ("default", N["cv"]["per_name"])]
    cols += [(lbl, cand_res[lbl]["per_name"]) for lbl in PER_NAME]
    w("| name | " + " | ".join(c[0] for c in cols) + " |")
    w("|---|" + "---:|" * len(cols))
    for name in N["cv"]["per_name"].sort_values(ascending=False).index:
        w(f"| {name} | " + " | ".join(f"{c[1].get(name, float('nan')):.2f}" for c in cols) + " |")
    w("")

    # ------------------------------------------------------------------ history (one core voltage curve)
    w(f"### Earlier model choices (one core voltage curve; CV seeds 0-{S - 1})\n")
    w("These are the previous engineer's steps, rerun with this study's seeds. Their development-set MAPE was "
      "looked at for every row when they were made (and t = 0.03 was chosen with it).\n")
    w("| variant | training MAPE % | 5-fold CV MAPE %, mean (min-max) | dev-apps MAPE % | fit time s |")
    w("|---|---:|---:|---:|---:|")
    for label, kw in VARIANTS:
        tf, d, _ = timed_fit(tx, repeat=1, **kw)
        c = O["cv"] if kw is SHARED else (R["cv"] if kw is GPMTOOL_FORM else cv_summary(tx, S, **kw))
        w(f"| {label} | {mape(predict_power(d['power'], tx), y):.2f} | {spread(c['seeds'])} | "
          f"{mape(predict_power(d['power'], dev), ydev):.2f} | {tf:.2f} |")
        print("  variant", label, flush=True)
    ta, da, sa = timed_fit(tx, repeat=1, method="alternating")

    def ssr(d: dict) -> float:
        return float(np.sum(((predict_power(d["power"], tx) - y) / y) ** 2))

    w("")
    w(f"Solver: the joint bounded least squares (default: fixed typical variable scales, then a polish with the "
      f"Jacobian's scaling) and gpmTOOL's alternating scheme (NNLS for the W coefficients / bounded least squares "
      f"for voltages and shapes, until every parameter changes < 0.05 % for 5 iterations) on this table, default "
      f"model: training MAPE {N['train']:.3f} % vs {mape(predict_power(da['power'], tx), y):.3f} %, sum of squared "
      f"relative residuals {ssr(doc):.4f} vs {ssr(da):.4f}, time {t_fit:.2f} s vs {ta:.1f} s "
      f"({sa.stats['solver_message']}). The joint solve is the default; most of its time is the singular value "
      f"decomposition of the Jacobian ({sec.stats['n_parameters']} parameters x 6,528 rows) in every step.\n")

    # ------------------------------------------------------------------ coefficients
    am = authors_model(data / "tpds2019_model_dvfs_gtxtitanx.csv")
    hm = authors_model(data / "hpca2018_model_gtxtitanx.csv")
    w("### Coefficients next to the authors' (W at the default clocks 975/3505 MHz, +/- standard error)\n")
    w("The authors' TPDS'19 Titan X file has 11 core components (SP/DP split by ADD/MUL/FMA); only the "
      "components with the same name are comparable. Ours: `ref` = gpmTOOL form refit, `previous` = one core "
      "voltage curve, `default` = core voltage per memory clock (their unit weights act on transformed "
      "activities, so they are not the same quantity as omega).\n")
    fits = [("ref (gpmTOOL form)", ref_doc), ("previous", old_doc), ("default", doc)]
    w(coef_table(am, fits))
    w("")
    w("Relative core voltage (1 at 975 MHz core, 3505 MHz memory; latent, fitted):\n")
    w(voltage_table(am, fits, "core"))
    w("")
    w(voltage_table(am, fits, "mem"))
    w("")
    hdoc, _ = fit_doc(hp)
    hdoc_old, _ = fit_doc(hp, **SHARED)
    hdoc_ref, _ = fit_doc(hp, **GPMTOOL_FORM)
    yh = hp["power_w"].to_numpy(float)
    w("### HPCA'18 table (hpca2018_micro_gtxtitanx.csv, 83 microbenchmarks x 16 clock pairs, 6+1 components)\n")
    w(f"| model | MAPE on this table % | 5-fold CV %, seeds 0-{S - 1} |")
    w("|---|---:|---:|")
    w(f"| authors' HPCA'18 fitted model (their file; voltage lines 8/9 read as core/memory) | "
      f"{mape(authors_predict(hm, hp), yh):.2f} | - |")
    for lbl, d, kw in (("gpmTOOL form refit by this toolkit", hdoc_ref, GPMTOOL_FORM),
                       ("this toolkit, previous default (one core voltage curve)", hdoc_old, SHARED),
                       ("this toolkit, default (core voltage per memory clock)", hdoc, {})):
        w(f"| {lbl} | {mape(predict_power(d['power'], hp), yh):.2f} | {spread(cv_summary(hp, S, **kw)['seeds'])} |")
    w("")
    w("(The HPCA'18 file has no names: workloads are groups of rows with identical utilizations, `mb001`...)\n")
    w(coef_table(hm, [("ref (gpmTOOL form)", hdoc_ref), ("previous", hdoc_old), ("default", hdoc)]))
    w("")

    # ------------------------------------------------------------------ Titan Xp
    t_xp, xdoc, xsec = timed_fit(xp)
    xold, _ = fit_doc(xp, **SHARED)
    yx = xp["power_w"].to_numpy(float)
    xc = cv_summary(xp, S)["seeds"]
    xco = cv_summary(xp, S, **SHARED)["seeds"]
    xref, _ = fit_doc(xp, **GPMTOOL_FORM)
    xm = authors_model(data / "tpds2019_model_dvfs_titanxp.csv")
    print(f"Titan Xp: fit {t_xp:.2f}s train {mape(predict_power(xdoc['power'], xp), yx):.2f}%", flush=True)
    w("## Titan Xp (tpds2019_micro_titanxp.csv: 67 microbenchmarks x 24 clock pairs, 11+1 components)\n")
    w("No names in this file: the importer names each group of rows with identical utilizations (one "
      "microbenchmark at every clock pair) `mb001`..`mb067`, and CV folds never split a microbenchmark. No real "
      "applications are available for this GPU.\n")
    w("| figure | default (core voltage per memory level) | previous default | gpmTOOL form refit | authors |")
    w("|---|---:|---:|---:|---:|")
    w(f"| fit time (1,608 rows, median of 3, one core) | {t_xp:.2f} s | - | - | - |")
    w(f"| training MAPE | {mape(predict_power(xdoc['power'], xp), yx):.2f} % | "
      f"{mape(predict_power(xold['power'], xp), yx):.2f} % | {mape(predict_power(xref['power'], xp), yx):.2f} % | "
      f"{mape(authors_predict(xm, xp), yx):.2f} % (their fitted file evaluated on this table) |")
    w(f"| 5-fold CV MAPE by microbenchmark (seed 0) | {xc[0]:.2f} % | {xco[0]:.2f} % | "
      f"{cv(xp, **GPMTOOL_FORM).mape_pct:.2f} % | - |")
    w(f"| 5-fold CV MAPE, seeds 0-{S - 1} (mean, min-max) | {spread(xc)} % | {spread(xco)} % | - | - |")
    w("| real applications | (none available) | - | - | 7 % (HPCA'18), 3.5 % (TPDS'19) |")
    w("")
    if xsec.stats.get("warnings"):
        w("Fit warnings: " + "; ".join(xsec.stats["warnings"]) + ".\n")
    w("Coefficients (W at the default clocks 1404/5705 MHz; the same 12 components as the authors' file):\n")
    xfits = [("ref (gpmTOOL form)", xref), ("previous", xold), ("default", xdoc)]
    w(coef_table(xm, xfits))
    w("")
    w(voltage_table(xm, xfits, "core"))
    w("")
    w(voltage_table(xm, xfits, "mem"))
    w("")
    w("## Notes\n")
    w("* Fit time is wall time of `DvfsPowerFitter.fit` (import excluded) with one BLAS thread; with several BLAS threads on "
      "a busy 2-core machine the SVDs inside the trust-region solver were up to 20x slower.")
    w("* CV MAPE is the mean absolute percentage error over all held-out rows; folds hold whole names "
      "(`calib fit --cv 5` prints the seed-0 figure).")
    w("* Activities in these tables are measured at the default clocks and repeated on every row (README); the "
      "importer records those clocks in `ref_core_mhz`/`ref_mem_mhz` and the model rescales the activities of kernels "
      "that turn memory bound at other clocks (`mem_sat`).")
    w("* The core voltage curves per memory clock are used when the table measured every (core, memory) clock "
      "pair (`core_voltage=\"auto\"`); the virtual-GPU sessions measure the default core clock at the default "
      "memory clock only and keep one curve (`calib run --device sim:titanx`: held-out power MAPE 1.21 % over "
      "176 rows, unchanged).")
    Path(args.out).write_text("\n".join(md) + "\n", encoding="utf-8")
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
