"""Are the thermal sections' error bars the right size? (issues 29 and 30)

Fits the IPP thermal section and the thermal network of recorded standard-campaign sessions
(make_seed_sessions.py) with the current fitters and scores every parameter that has a ground truth:
the truth within 2 ``stderr_total`` (goal >= 90 %) and the median of |fitted - truth| / stderr_total
(about 0.67 for honest Gaussian errors; the issue's band 0.45-0.9), per parameter and per preset.

    python tests/benchmarks/thermal_calibration.py --sessions /tmp/seeds --presets gtx280,gtx580,titanx \\
        --seeds 0-4 --out /tmp/thcal

Each session's recovery rows are cached as OUT/<preset>_s<seed>.json (a rerun only scores); the
truth is read here, by the study, never by a fitter.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import warnings
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from make_seed_sessions import finished, seeds_of  # noqa: E402


def fit_rows(session: Path, preset: str, sections: tuple[str, ...] = ("thermal", "thermal_network")) -> list[dict]:
    """The thermal recovery rows (truth, fitted, stderr_total) of one session, fitted as `calib fit` does
    (only the ``sections`` named: the network's fit is the slow one)."""
    from calib.core.params import ParameterFile
    from calib.core.session import read_session
    from calib.fit.thermal import ThermalFitter
    from calib.fit.thermal_network import ThermalNetworkFitter
    from calib.report.recovery import recovery_report
    from calib.segment import session_data

    sess = read_session(session)
    data = session_data(sess)
    pf = ParameterFile.new(dict(data.device.raw), [], campaign=sess.manifest.get("campaign"))
    if "thermal" in sections:
        pf["thermal"] = ThermalFitter().fit(data).section_
    if "thermal_network" in sections:
        pf["thermal_network"] = ThermalNetworkFitter().fit(data).section_
    return [r for r in recovery_report(preset, pf, None)["parameters"]
            if r["parameter"].split(".")[0] in sections]


def score(rows_by_preset: dict[str, list[list[dict]]]) -> str:
    """Markdown tables: per preset and parameter, then per preset over all parameters."""
    lines = ["| preset | parameter | seeds | within 2 stderr_total | median abs(err)/stderr_total | median error % |",
             "|---|---|---:|---:|---:|---:|"]
    totals = []
    for preset, sessions in rows_by_preset.items():
        per: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for rows in sessions:
            for r in rows:
                if r["fitted"] is None or not r.get("stderr_total") or r["truth"] is None or "poles" in r["parameter"]:
                    continue
                per[r["parameter"]].append((abs(r["fitted"] - r["truth"]) / r["stderr_total"], r["error_pct"] or 0.0))
        zs_all = []
        for name, v in sorted(per.items()):
            zs = [z for z, _ in v]
            zs_all += zs
            lines.append(f"| {preset} | {name} | {len(zs)} | {sum(z <= 2 for z in zs) / len(zs):.0%} | "
                         f"{statistics.median(zs):.2f} | {statistics.median(e for _, e in v):+.1f} |")
        if zs_all:
            totals.append(f"| {preset} | {len(sessions)} | {len(zs_all)} | {sum(z <= 2 for z in zs_all) / len(zs_all):.1%} | "
                          f"{statistics.median(zs_all):.2f} |")
    return "\n".join(lines + ["", "| preset | seeds | values | within 2 stderr_total | median |", "|---|---:|---:|---:|---:|"]
                     + totals)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", default="/tmp/seeds")
    ap.add_argument("--presets", default="gtx280,gtx580,titanx")
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--out", default="/tmp/thcal")
    ap.add_argument("--sections", default="thermal,thermal_network",
                    help="the sections to fit and score (thermal: the IPP section alone, fast)")
    a = ap.parse_args(argv)
    sections = tuple(a.sections.split(","))
    warnings.simplefilter("ignore")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    by: dict[str, list[list[dict]]] = defaultdict(list)
    for preset in a.presets.split(","):
        for seed in seeds_of(a.seeds):
            cache = out / f"{preset}_s{seed}.json"
            if not cache.exists():
                d = Path(a.sessions) / preset / f"s{seed}"
                if not finished(d):
                    continue
                cache.write_text(json.dumps(fit_rows(d, preset, sections), default=float))
            by[preset].append(json.loads(cache.read_text()))
    print(score(by))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
