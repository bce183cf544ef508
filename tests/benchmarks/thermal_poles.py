"""Which pole count does the thermal network choose, across presets and noise seeds? (issue 30, session 10)

Fits the thermal network of recorded sessions (make_seed_sessions.py) with the current fitter, and reports
per preset the dominant poles chosen against the truth's and every tau / R / direct term against its
stated total standard error:

    python tests/benchmarks/thermal_poles.py fit --sessions /work/s10/seeds,/tmp/th10/seeds \\
        --presets gtx280,gtx580 --seeds 0-19 --out /tmp/th10/before
    python tests/benchmarks/thermal_poles.py table --out /tmp/th10/before --presets gtx280,gtx580 --seeds 0-19

``fit`` caches per session OUT/<preset>_s<seed>.json (selection and recovery rows) and .pkl (the fitter
and its ladder problems, for ``criteria``); a rerun only scores. ``criteria`` applies other pole-count
rules to the cached fits (no refit but the blocked cross-validation's) and prints the dominant count each
chooses, per preset. The truth is read here, by the study, never by a fitter.
"""

from __future__ import annotations

import argparse
import json
import math
import pickle
import statistics
import sys
import warnings
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from make_seed_sessions import finished, seeds_of  # noqa: E402


def _session(roots: list[str], preset: str, seed: int) -> Path | None:
    for r in roots:
        d = Path(r) / preset / f"s{seed}"
        if finished(d):
            return d
    return None


def fit_one(session: Path, preset: str, settings: dict) -> tuple[dict, dict]:
    """(summary, pickle payload) of the thermal network fitted to one session as `calib fit` does."""
    import calib.fit.thermal_network as TN
    from calib.core.params import ParameterFile
    from calib.core.session import read_session
    from calib.segment import session_data
    from microbench.thermal_truth import network_truth, thermal_network_recovery_rows

    made = []
    orig = TN._LadderProblem.__init__

    def init(self, *a, **k):  # keep the ladder problems (the fitter keeps only their fits)
        orig(self, *a, **k)
        made.append(self)

    TN._LadderProblem.__init__ = init
    try:
        sess = read_session(session)
        data = session_data(sess)
        f = TN.ThermalNetworkFitter(**settings).fit(data)
    finally:
        TN._LadderProblem.__init__ = orig
    problems = {n: [p for p in made if p.n == n and p.link == fl.link][-1] for n, fl in f.fits_.items()}
    pf = ParameterFile.new(dict(data.device.raw), [], campaign=sess.manifest.get("campaign"))
    pf["thermal_network"] = f.section_
    st = f.section_.structure
    summary = {"preset": preset, "session": str(session), "poles": st["poles"], "dominant": st["dominant_poles"],
               "truth_dominant": len(network_truth(preset)["dominant"]), "selection": st["selection"],
               "rows": thermal_network_recovery_rows(preset, pf)}
    return summary, {"fitter": f, "problems": problems}


def cmd_fit(a: argparse.Namespace) -> int:
    settings = json.loads(a.settings) if a.settings else {}
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    for preset in a.presets.split(","):
        for seed in seeds_of(a.seeds):
            js = out / f"{preset}_s{seed}.json"
            if js.exists():
                continue
            d = _session(a.sessions.split(","), preset, seed)
            if d is None:
                continue
            summary, payload = fit_one(d, preset, settings)
            if a.pickle:
                with open(out / f"{preset}_s{seed}.pkl", "wb") as fh:
                    pickle.dump(payload, fh)
            js.write_text(json.dumps(summary, default=float))
            print(f"{preset} s{seed}: {summary['dominant']} of {summary['truth_dominant']} dominant poles "
                  f"(ladder of {summary['poles']})", flush=True)
    return 0


def _load(out: Path, presets: str, seeds: str) -> dict[str, list[dict]]:
    by: dict[str, list[dict]] = defaultdict(list)
    for preset in presets.split(","):
        for seed in seeds_of(seeds):
            js = out / f"{preset}_s{seed}.json"
            if js.exists():
                by[preset].append({**json.loads(js.read_text()), "seed": seed})
    return by


def cmd_table(a: argparse.Namespace) -> int:
    by = _load(Path(a.out), a.presets, a.seeds)
    print("| preset | seeds | dominant poles chosen (seeds) | truth | tau/R/direct values | within 2 stderr_total "
          "| median abs(err)/stderr_total | tau, R within 10 % (values) | largest abs(err)/stderr_total |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---|")
    pooled = []
    for preset, ss in by.items():
        counts = Counter(s["dominant"] for s in ss)
        zs, ten, n_tr, worst = [], 0, 0, (0.0, "")
        for s in ss:
            for r in s["rows"]:
                if r["stderr_total"] and r["fitted"] is not None and "dominant" not in r["parameter"]:
                    z = abs(r["abs_error"]) / r["stderr_total"]
                    zs.append(z)
                    if z > worst[0]:
                        worst = (z, f"{r['parameter'].split('.')[1]} s{s['seed']}")
                if r["parameter"].split(".")[1].startswith(("tau", "r")) and "direct" not in r["parameter"] \
                        and r["error_pct"] is not None:
                    n_tr += 1
                    ten += abs(r["error_pct"]) <= 10.0
        pooled += zs
        dist = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
        print(f"| {preset} | {len(ss)} | {dist} | {ss[0]['truth_dominant']} | {len(zs)} | "
              f"{sum(z <= 2 for z in zs) / len(zs):.0%} | {statistics.median(zs):.2f} | {ten}/{n_tr} | "
              f"{worst[0]:.1f} ({worst[1]}) |")
    if a.detail:
        print("\n| preset | parameter | values | median error % | error % range | median abs(err)/stderr_total | within 2 |")
        print("|---|---|---:|---:|---|---:|---:|")
        for preset, ss in by.items():
            per = defaultdict(list)
            for s in ss:
                for r in s["rows"]:
                    if r["stderr_total"] and r["fitted"] is not None and "dominant" not in r["parameter"]:
                        per[r["parameter"].split(".")[1]].append((r["error_pct"], abs(r["abs_error"]) / r["stderr_total"]))
            for name, v in sorted(per.items()):
                e = [x for x, _ in v if x is not None]  # no error % where the truth is 0
                z = [y for _, y in v]
                pct = f"{statistics.median(e):+.1f} | {min(e):+.1f}..{max(e):+.1f}" if e else "- | -"
                print(f"| {preset} | {name} | {len(v)} | {pct} | "
                      f"{statistics.median(z):.2f} | {sum(x <= 2 for x in z)}/{len(z)} |")
    return 0


# --- other pole-count rules on the cached fits ---------------------------------------------------------

def _ar1(parts: list[np.ndarray]) -> float:
    num = sum(float(np.sum(p[1:] * p[:-1])) for p in parts if len(p) > 1)
    den = sum(float(np.sum(p * p)) for p in parts)
    return num / den if den > 0 else 0.0


def _blocked_cv(f, probs: dict, n: int, block_s: float, folds: int) -> np.ndarray:
    """Per-fold held-out sum of squares for pole count n: the readings cut into blocks of ``block_s``
    seconds, block b in fold b mod ``folds``; each fold's readings left out and predicted."""
    rec = f.record_
    blk = (rec.obs_bin * rec.width // block_s).astype(int)
    fold = blk % folds
    p = probs[n]
    out = np.zeros(folds)
    for k in range(folds):
        m = fold == k
        # a record whose first readings are left out keeps its full-fit initial state (as leave-one-step-out)
        frozen = [nm for j, b in enumerate(rec.starts) if m[rec.obs_bin == b].any()
                  for nm in [f"p0_{j}"] + [f"dev{j}_{i}" for i in range(2, n + 1)]]
        g = p.fit(f.fits_[n].values, mask=~m, frozen=frozen)
        out[k] = float(np.sum((p.sensor(g.values, m) - rec.obs_y[m]) ** 2))
    return out


def criteria_of(f, probs: dict, blocked: list[tuple[float, int]]) -> dict[str, int]:
    """Dominant poles chosen by each rule (name -> count)."""
    from calib.fit.thermal_network import _dominant

    rec = f.record_
    w = rec.width
    fits = f.fits_
    cands = [int(n) for n in f.section_.structure["selection"]["candidates"]]
    dom = {n: _dominant(fits[n], w) for n in cands}
    nobs = len(rec.obs_y)
    out: dict[str, int] = {"loso_cv_5pct": f.section_.structure["dominant_poles"]}
    parts_of = {n: [fits[n].resid[rec.obs_step == s] for s in np.unique(rec.obs_step)] for n in cands}
    k_of = {n: sum(p.vary for p in fits[n].result.params) for n in cands}
    sse = {n: float(np.sum(fits[n].resid ** 2)) for n in cands}

    def pick(score: dict[int, float]) -> int:
        return dom[min(score, key=score.get)]

    out["bic"] = pick({n: nobs * math.log(sse[n] / nobs) + k_of[n] * math.log(nobs) for n in cands})
    # effective number of readings from the richest candidate's residuals
    rho = max(0.0, min(_ar1(parts_of[max(cands)]), 0.98))
    neff = nobs * (1 - rho) / (1 + rho)
    out["bic_neff"] = pick({n: neff * math.log(sse[n] / nobs) + k_of[n] * math.log(neff) for n in cands})
    # each candidate's residuals whitened with its own lag-1 coefficient (AR(1) likelihood)
    wh = {}
    for n in cands:
        r = _ar1(parts_of[n])
        e = np.concatenate([p[1:] - r * p[:-1] for p in parts_of[n]])
        wh[n] = len(e) * math.log(float(np.mean(e ** 2))) + (k_of[n] + 1) * math.log(len(e))
    out["bic_ar1"] = pick(wh)
    for block_s, folds in blocked:
        cv = {n: _blocked_cv(f, probs, n, block_s, folds) for n in cands}
        tot = {n: float(np.sum(v)) for n, v in cv.items()}
        out[f"bcv_{block_s:g}s_{folds}_min"] = pick(tot)
        # fewest dominant poles whose held-out error is within one paired standard error of the best
        best = min(tot, key=tot.get)
        ok = []
        for n in cands:
            d = cv[n] - cv[best]
            se = float(np.std(d, ddof=1) * math.sqrt(len(d))) if n != best else 0.0
            if tot[n] - tot[best] <= se:
                ok.append(n)
        out[f"bcv_{block_s:g}s_{folds}_1se"] = min(dom[n] for n in ok)
    return out


def cmd_criteria(a: argparse.Namespace) -> int:
    warnings.simplefilter("ignore")
    out = Path(a.out)
    blocked = [(float(x.split("x")[0]), int(x.split("x")[1])) for x in a.blocked.split(",")] if a.blocked else []
    res: dict[str, list[dict]] = defaultdict(list)
    for preset in a.presets.split(","):
        for seed in seeds_of(a.seeds):
            pk = out / f"{preset}_s{seed}.pkl"
            cache = out / f"{preset}_s{seed}.criteria.json"
            if not pk.exists():
                continue
            have = json.loads(cache.read_text()) if cache.exists() else {}
            need = [b for b in blocked if f"bcv_{b[0]:g}s_{b[1]}_min" not in have]
            if not have or need:
                with open(pk, "rb") as fh:
                    d = pickle.load(fh)
                have.update(criteria_of(d["fitter"], d["problems"], need))
                cache.write_text(json.dumps(have))
            truth = json.loads((out / f"{preset}_s{seed}.json").read_text())["truth_dominant"]
            res[preset].append({**have, "truth": truth, "seed": seed})
    rules = sorted({k for v in res.values() for r in v for k in r if k not in ("truth", "seed")})
    print("| preset | truth | " + " | ".join(rules) + " |")
    print("|---|---:|" + "---|" * len(rules))
    for preset, v in res.items():
        cells = []
        for rule in rules:
            c = Counter(r[rule] for r in v if rule in r)
            right = c.get(v[0]["truth"], 0)
            cells.append(f"{right}/{sum(c.values())}" + ("" if right == sum(c.values()) else
                                                         " (" + ", ".join(f"{k}: {n}" for k, n in sorted(c.items())) + ")"))
        print(f"| {preset} | {v[0]['truth']} | " + " | ".join(cells) + " |")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("fit", "table", "criteria"):
        p = sub.add_parser(name)
        p.add_argument("--presets", default="gtx280,gtx580,titanx,gtx580_nonadd,titanx_nonadd")
        p.add_argument("--seeds", default="0-19")
        p.add_argument("--out", default="/tmp/th10/poles")
        if name == "fit":
            p.add_argument("--sessions", default="/tmp/seeds", help="comma-separated roots of <preset>/s<seed>")
            p.add_argument("--settings", default="", help="ThermalNetworkFitter settings as JSON")
            p.add_argument("--pickle", action="store_true", help="keep the fitter for `criteria`")
        if name == "table":
            p.add_argument("--detail", action="store_true")
        if name == "criteria":
            p.add_argument("--blocked", default="", help="blocked CV variants BLOCK_SxFOLDS, e.g. 100x10,300x5")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    return {"fit": cmd_fit, "table": cmd_table, "criteria": cmd_criteria}[a.cmd](a)


if __name__ == "__main__":
    raise SystemExit(main())
