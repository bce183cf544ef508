"""False-alarm rate of `calib diff` between calibrations that differ only in the noise seed (issue 12/17).

Fits the sessions of make_seed_sessions.py (cached as OUT/<preset>/s<seed>.json), then compares seed
pairs (s, s+1 mod N) with calib.report.compare, as `calib diff` does, and counts the pairs it flags
(exit status 3) and the parameters it calls significant. Also checks that a hidden +5 W change of the
board's constant power is flagged (``--driver-update``: a campaign on the updated preset).

    python tests/benchmarks/diff_false_alarms.py --sessions /tmp/seeds --out /tmp/seeds_fit [--spread]

``--spread``: per parameter, the spread (s.d.) of its estimate over the seeds against the root mean square
of its stated statistical stderr, and the min/max of that stderr over the seeds: a ratio well above 1
names a standard error that misses a source of run-to-run variation; a min/max near 0.01 one estimated
from too few degrees of freedom (how the causes in uncertainty_results.md were found).
"""

from __future__ import annotations

import argparse
import collections
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))


def fitted(session: Path, out: Path, cached: bool = False):  # noqa: ANN201 - a ParameterFile
    from calib.core import params as P
    from calib.fit.pipeline import fit_session

    out.parent.mkdir(parents=True, exist_ok=True)
    newest_code = max(f.stat().st_mtime for f in (ROOT / "calib").rglob("*.py"))
    if out.exists() and (cached or out.stat().st_mtime > newest_code):  # fitted after the last change of calib/
        return P.load(out)
    pf = fit_session(session).params
    pf.save(out)
    return pf


def main(argv: list[str] | None = None) -> int:
    from calib.report.compare import compare

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", default="/tmp/seeds")
    ap.add_argument("--out", default="/tmp/seeds_fit")
    ap.add_argument("--presets", default="gtx280,gtx580,titanx")
    ap.add_argument("--cached", action="store_true", help="use the parameter files in OUT whatever their age")
    ap.add_argument("--refit", action="store_true", help="refit even when a cached parameter file exists")
    ap.add_argument("--spread", action="store_true", help="per parameter: seed-to-seed s.d. / rms stderr")
    ap.add_argument("--driver-update", action="store_true",
                    help="also run the standard campaign on the preset with its hidden constant power raised by "
                         "5 W (seed 100, cached in OUT/<preset>/update.json) and compare every seed's file with it")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    for preset in a.presets.split(","):
        dirs = sorted((Path(a.sessions) / preset).glob("s*"), key=lambda d: int(d.name[1:]))
        pfs = []
        for d in dirs:
            o = Path(a.out) / preset / f"{d.name}.json"
            if a.refit and o.exists():
                o.unlink()
            pfs.append(fitted(d, o, a.cached))
        n = len(pfs)
        flagged = 0
        why: collections.Counter = collections.Counter()
        tested = 0
        pairs = []
        for i in range(n):
            c = compare(pfs[i], pfs[(i + 1) % n])
            tested += sum(1 for x in c.params if x.p is not None)
            if c.moved:
                flagged += 1
                pairs.append(f"{dirs[i].name}-{dirs[(i + 1) % n].name} ("
                             + (", ".join(x.key for x in c.significant) or "no parameter: a section or its form differs")
                             + ")")
            for x in c.significant:
                why[x.key] += 1
        print(f"{preset}: {flagged} of {n} seed pairs flagged (exit 3); {tested / n:.0f} parameters tested per "
              f"pair; significant: " + (", ".join(f"{k} x{v}" for k, v in why.most_common(10)) or "none")
              + ("; flagged pairs: " + "; ".join(pairs) if pairs else ""), flush=True)
        if a.spread:
            print(spread_table(pfs), flush=True)
        if a.driver_update:
            upd = updated_fit(preset, Path(a.out) / preset)
            seen = [compare(pf, upd) for pf in pfs]
            idle = [[x for x in c.significant if "idle_power_w" in x.key] for c in seen]
            print(f"{preset}: +5 W constant power (seed 100) against each of the {n} seeds: flagged (exit 3) "
                  f"{sum(1 for c in seen if c.moved)} of {n}; a parameter or determined combination with idle "
                  f"power significant in {sum(1 for x in idle if x)} of {n} ("
                  + ", ".join(sorted({x.key for xs in idle for x in xs})) + ")",
                  flush=True)
    return 0


def updated_fit(preset: str, out: Path):  # noqa: ANN201 - a ParameterFile
    """The standard campaign on ``preset`` with its hidden constant power raised by 5 W (seed 100), fitted
    (driver_update_diff.py's preset change); cached as OUT/update.json."""
    from calib.core import params as P
    from driver_update_diff import run_campaign, updated_preset

    o = out / "update.json"
    if not o.exists():
        run_campaign(updated_preset(preset), 100, out / "update-session", o, campaign="standard")
    return P.load(o)


def spread_table(pfs: list) -> str:
    """Per parameter present in every file: s.d. over the files / rms stderr, mean, s.d., rms stderr,
    min/max stderr; largest ratio first."""
    import numpy as np

    vals: dict[str, list[float]] = collections.defaultdict(list)
    ses: dict[str, list[float]] = collections.defaultdict(list)
    for pf in pfs:
        for sname, sec in pf.items():
            for pn, p in sec.params.items():
                if p.vary:
                    vals[f"{sname}.{pn}"].append(p.value)
                    ses[f"{sname}.{pn}"].append(p.stderr if p.stderr else np.nan)
    rows = []
    for k, v in vals.items():
        se = np.array(ses[k], float)
        if len(v) < len(pfs) or not np.isfinite(se).any():
            continue
        rms = float(np.sqrt(np.nanmean(se ** 2)))
        sd = float(np.std(v, ddof=1))
        rows.append((sd / rms if rms > 0 else np.inf, k, float(np.mean(v)), sd, rms, np.nanmin(se) / np.nanmax(se)))
    rows.sort(key=lambda r: -r[0])
    out = [f"  {'parameter':52s} {'sd/rms se':>9s} {'mean':>11s} {'sd':>9s} {'rms se':>9s} {'se min/max':>10s}"]
    out += [f"  {k:52s} {r:9.2f} {m:11.4g} {sd:9.2g} {rms:9.2g} {mm:10.2f}" for r, k, m, sd, rms, mm in rows]
    return "\n".join(out)


if __name__ == "__main__":
    raise SystemExit(main())
