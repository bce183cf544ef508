"""Issue 29, the adaptive design: does the refit preview (``calib run``'s ``_preview_errors``: the session
refitted with the rows a round would add if the fit were right) predict what a round that was run reached?

Takes a design session whose round ROUND was run, removes the rows of later rounds, replaces the power of
ROUND's rows by the prediction of the fit before it (ROUND0_JSON: the campaign's file for round 1, e.g.
the same campaign and seed run without ``--design``) at the rows' measured access rates, refits the
power section and prints per target: relative total standard error (%) before, as the criterion's linear
update predicted, as this refit predicts, and as reached.

    .venv/bin/python tests/benchmarks/design_preview_check.py SESSION_DIR ROUND0_JSON ROUND
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    from calib.core.params import load
    from calib.core.session import read_session
    from calib.fit.pipeline import session_power_fitter
    from calib.model.predict import predict_power
    from calib.segment import session_data

    argv = sys.argv[1:] if argv is None else argv
    sess, pf0, rnd = argv[0], load(argv[1]), int(argv[2])
    recs = json.loads((Path(sess) / "manifest.json").read_text())["design"]
    later = {k["name"] for r in recs if r["round"] > rnd for k in r["kernels"]}
    this = {k["name"] for r in recs if r["round"] == rnd for k in r["kernels"]}
    data = session_data(read_session(Path(sess)))
    df = data.samples
    df = df[~df["workload"].isin(later)].reset_index(drop=True)
    m = df["workload"].isin(this).to_numpy()
    df.loc[m, "power_w"] = predict_power(pf0, df[m])
    data.samples = df
    th = pf0["thermal"]
    corr = {"sigma_w_per_c": th.value("sigma_w_per_c"), "idle_temp_c": th.value("idle_temp_c")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sec = session_power_fitter(data.device, df, corr).fit(data).section_
    rec = next(r for r in recs if r["round"] == rnd)
    print(f"round {rnd}: {int(m.sum())} rows of {len(this)} kernels")
    print(f"{'target':22s} {'before':>7s} {'linear':>7s} {'refit':>7s} {'reached':>7s}")
    for n in rec["before"]:
        p = sec[n] if n in sec else None
        syn = 100 * p.stderr_total / abs(p.value) if p is not None and p.stderr_total and p.value else float("nan")
        b = rec["before"][n]["rel_total_pct"]
        a = (rec.get("after") or {}).get(n, {}).get("rel_total_pct")
        pa = (rec.get("predicted_rel_total_pct") or {}).get(n)
        f = lambda x: "-" if x is None else f"{x:.1f}"  # noqa: E731
        print(f"{n:22s} {f(b):>7s} {f(pa):>7s} {syn:7.1f} {f(a):>7s}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
