"""Issue 29, the adaptive design on one preset: each round's chosen mixes and each MaxPower's relative total
standard error before, as predicted (the criterion's linear update; the refit preview when recorded) and
after it; the MaxPower errors against the virtual GPU's truth before the design (the standard campaign's
fit, the first round's ``before``) and after it.

    .venv/bin/python tests/benchmarks/design_run_figures.py SESSION_DIR RECOVERY_JSON

SESSION_DIR: a ``calib run --design adaptive`` session (its manifest's ``design`` records). RECOVERY_JSON:
the run's ``<name>.recovery.json`` (the truth comes from there: :mod:`calib.report.recovery`, the scoring
layer; no fitter reads it). Markdown tables on stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def _short(n: str) -> str:
    return n.replace("max_power_", "").replace("_power_w", "").replace("_w", "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("session")
    ap.add_argument("recovery")
    a = ap.parse_args(argv)
    man = json.loads((Path(a.session) / "manifest.json").read_text())
    rounds = man.get("design") or []
    if not rounds:
        print("no design rounds in this session")
        return 1
    rec = json.loads(Path(a.recovery).read_text())
    truth = {p["parameter"].split(".", 1)[1]: p for p in rec["parameters"] if p["parameter"].startswith("power.")}
    names = list(rounds[0]["before"])
    print("| round | kernels (classes per step / warps per SM) | " + " | ".join(_short(n) for n in names) + " |")
    print("|---|---|" + "---:|" * len(names))
    rel = lambda d, n: (d.get(n) or {}).get("rel_total_pct")  # noqa: E731
    fmt = lambda x: "-" if x is None else f"{x:.1f}"  # noqa: E731
    print("| 0 (standard campaign) | - | " + " | ".join(fmt(rel(rounds[0]["before"], n)) for n in names) + " |")
    for r in rounds:
        ks = ", ".join(k["name"].replace("design_", "") for k in r["kernels"])
        pred = r.get("predicted_rel_total_pct") or {}
        print(f"| {r['round']} predicted | {ks} ({r['expected_s']:.0f} s) | "
              + " | ".join(fmt(pred.get(n)) if n in pred else "" for n in names) + " |")
        prev = r.get("preview_rel_total_pct")
        if prev:
            print(f"| {r['round']} preview (refit) | | " + " | ".join(fmt(prev.get(n)) if n in prev else "" for n in names) + " |")
        if r.get("after"):
            print(f"| {r['round']} after | | " + " | ".join(fmt(rel(r["after"], n)) for n in names) + " |")
    last = rounds[-1].get("after") or rounds[-1]["before"]
    print()
    print("| parameter | truth | before: fitted (error %, |error| / stderr_total) | after: fitted (error %, |error| / stderr_total) |")
    print("|---|---:|---|---|")
    within = {"before": 0, "after": 0}
    for n in names:
        t = truth.get(n)
        if t is None or t.get("truth") is None:
            continue
        cells = []
        for lab, d in (("before", rounds[0]["before"]), ("after", last)):
            v = d[n]
            err = 100 * (v["value"] / t["truth"] - 1) if t["truth"] else float("nan")
            z = abs(v["value"] - t["truth"]) / v["stderr_total"] if v.get("stderr_total") else float("nan")
            within[lab] += int(np.isfinite(err) and abs(err) <= 10)
            cells.append(f"{v['value']:.4g} ({err:+.1f} %, {z:.2f})")
        print(f"| {_short(n)} | {t['truth']:.4g} | " + " | ".join(cells) + " |")
    print(f"\nwithin 10 % of the truth (parameters with a non-zero truth): before {within['before']}, after {within['after']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
