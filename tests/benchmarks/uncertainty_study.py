"""How well the stated uncertainties cover the truth on the virtual GPUs (issue 12), from the sessions
of make_seed_sessions.py:

    python tests/benchmarks/uncertainty_study.py --sessions /tmp/seeds --presets gtx280,gtx580,titanx

For every session (preset x seed) the session is fitted with the current fitters, and every parameter
that has a ground truth is scored: inside 2 statistical standard errors (``stderr``) and inside 2 total
standard errors (``stderr_total``). Printed per preset and section, and overall. ``--json`` keeps the
per-parameter rows.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def score(preset: str, pf) -> list[dict]:  # noqa: ANN001 - a ParameterFile
    """One row per parameter with a truth: |fitted - truth| over each standard error."""
    from microbench.truth import ground_truth
    from microbench.timing_truth import timing_truth

    truth = {**ground_truth(preset), **(timing_truth(preset) if "timing" in pf else {})}
    rows = []
    for key, t in truth.items():
        sec, name = key.split(".", 1)
        if sec not in pf or name not in pf[sec]:
            continue
        p = pf[sec][name]
        if not p.vary:
            continue
        err = p.value - t["value"]
        rows.append({"preset": preset, "parameter": key, "truth": t["value"], "fitted": p.value, "stderr": p.stderr,
                     "stderr_total": p.stderr_total,
                     "z": None if not p.stderr else err / p.stderr,
                     "z_total": None if not p.stderr_total else err / p.stderr_total})
    return rows


def interval_rows(preset: str, seed: int, pf, samples, level: float = 0.9) -> list[dict]:  # noqa: ANN001
    """Held-out rows (role heldout: application-like mixes never fitted) with their prediction interval."""
    from calib.model.intervals import add_intervals
    from calib.model.predict import predict_power

    held = samples[samples["role"] == "heldout"].reset_index(drop=True)
    if not len(held):
        return []

    def predict(p):  # noqa: ANN001, ANN202
        return held.assign(power_w_pred=predict_power(p, held))

    from calib.model.intervals import set_heldout_discrepancy

    # cross-fitted: each held-out workload's interval uses the discrepancy of the other held-out workloads
    # only (the file's own figure was taken from all of them, this workload included)
    base = predict(pf)
    rows = []
    saved = {name: dict(sec.stats.get("prediction") or {}) for name, sec in pf.items()}
    for w in held["workload"].astype(str).unique():
        mine = (held["workload"].astype(str) == w).to_numpy()
        set_heldout_discrepancy(pf, held[~mine].reset_index(drop=True), base["power_w_pred"].to_numpy()[~mine])
        sub = held[mine].reset_index(drop=True)

        def predict_sub(p):  # noqa: ANN001, ANN202
            return sub.assign(power_w_pred=predict_power(p, sub))

        out = add_intervals(pf, predict_sub(pf), predict_sub, level)
        rows += [{"preset": preset, "seed": seed, "workload": w, "power_w": y, "pred": p, "lo": lo, "hi": hi,
                  "core_mhz": c, "mem_mhz": m}
                 for y, p, lo, hi, c, m in zip(out["power_w"], out["power_w_pred"], out["power_w_lo"],
                                               out["power_w_hi"], out["core_mhz"], out["mem_mhz"])]
        for name, st in saved.items():
            if st:
                pf[name].stats["prediction"] = dict(st)
    return rows


def coverage(rows: list[dict], key: str) -> tuple[float, int]:
    z = [r[key] for r in rows]
    ok = [z_ is not None and abs(z_) <= 2.0 for z_ in z]
    return (float(np.mean(ok)) if ok else float("nan")), len(ok)


def main(argv: list[str] | None = None) -> int:
    from calib.core import params as P
    from calib.core.session import read_session
    from calib.fit.pipeline import fit_session
    from calib.segment import session_samples

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", default="/tmp/seeds")
    ap.add_argument("--presets", default="gtx280,gtx580,titanx")
    ap.add_argument("--max-seeds", type=int, default=100)
    ap.add_argument("--json", default=None)
    ap.add_argument("--out", default=None, help="save every fitted parameter file here (OUT/<preset>/s<seed>.json) and reuse those fitted after the last change of calib/")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    newest_code = max(f.stat().st_mtime for f in (ROOT / "calib").rglob("*.py"))
    allrows: list[dict] = []
    allivl: list[dict] = []
    for preset in a.presets.split(","):
        dirs = sorted((Path(a.sessions) / preset).glob("s*"), key=lambda d: int(d.name[1:]))[: a.max_seeds]
        rows: list[dict] = []
        ivl: list[dict] = []
        for d in dirs:
            cached = Path(a.out) / preset / f"{d.name}.json" if a.out else None
            if cached is not None and cached.exists() and cached.stat().st_mtime > newest_code:
                # fitted after the last change of calib/ (diff_false_alarms.py caches the same way)
                pf, samples = P.load(cached), session_samples(read_session(d))
            else:
                fit = fit_session(d)
                pf, samples = fit.params, fit.samples
                if cached is not None:
                    cached.parent.mkdir(parents=True, exist_ok=True)
                    pf.save(cached)
            r = score(preset, pf)
            for x in r:
                x["seed"] = int(d.name[1:])
            rows += r
            ivl += interval_rows(preset, int(d.name[1:]), pf, samples)
        allrows += rows
        allivl += ivl
        for sec in ("power", "thermal", "timing"):
            sub = [r for r in rows if r["parameter"].startswith(sec + ".")]
            if sub:
                c0, n = coverage(sub, "z")
                c1, _ = coverage(sub, "z_total")
                print(f"{preset:7s} {sec:8s} {n:4d} parameter fits: truth within 2 stderr {100 * c0:5.1f}%, "
                      f"within 2 stderr_total {100 * c1:5.1f}%", flush=True)
        if ivl:
            inside = [r["lo"] <= r["power_w"] <= r["hi"] for r in ivl]
            width = [100 * (r["hi"] - r["lo"]) / r["pred"] for r in ivl]
            print(f"{preset:7s} held-out power: {100 * np.mean(inside):5.1f}% of {len(ivl)} rows inside their 90% "
                  f"interval (mean width {np.mean(width):.1f}% of the prediction); MAPE "
                  f"{100 * np.mean([abs(r['pred'] / r['power_w'] - 1) for r in ivl]):.2f}%", flush=True)
        worst = {}
        for r in rows:
            if r["z_total"] is not None and abs(r["z_total"]) > 2:
                worst[r["parameter"]] = worst.get(r["parameter"], 0) + 1
        print(f"{preset:7s} missed most often (of {len(dirs)} seeds): "
              + ", ".join(f"{k} {v}" for k, v in sorted(worst.items(), key=lambda kv: -kv[1])[:8]), flush=True)
    c0, n = coverage(allrows, "z")
    c1, _ = coverage(allrows, "z_total")
    print(f"ALL {n} parameter fits: within 2 stderr {100 * c0:.1f}%, within 2 stderr_total {100 * c1:.1f}%")
    if a.json:
        Path(a.json).write_text(json.dumps({"parameters": allrows, "intervals": allivl}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
