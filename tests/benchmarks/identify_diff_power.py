"""`calib diff` on the power section (issue 29): false alarms between seeds, and detection of a hidden change.

False alarms: the power sections refitted by identify_study.py (``--out``: OUT/<preset>/s<seed>.json) of
seeds that differ only in noise, compared pairwise (s, s+1) with calib.report.compare as `calib diff`
does; a pair is flagged when any power parameter or determined quantity is significant (Holm, 5 %).

Detection: a campaign on the preset with one hidden change (``--change fp10``: the FP unit's MaxPower
x 1.1, a driver that changes one unit's clock gating; ``--change idle5``: the board's constant power
+5 W), seed s + 100 (other noise), its power section fitted as identify_study.py fits it, compared with
the stock seed s. Flagged when `calib diff` exits 3 (something significant), and which parameters.

    python tests/benchmarks/identify_diff_power.py --fits /tmp/id_after --sessions /tmp/seeds --cache /tmp/idcache \\
        --preset gtx580 --seeds 0-4 [--change fp10,idle5 --work /tmp/id_changed]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from identify_study import cached_inputs, fit_power, seeds_of  # noqa: E402


def as_file(sec, dev: dict):  # noqa: ANN001, ANN201 - a ParameterFile with this power section
    from calib.core.params import ParameterFile

    pf = ParameterFile.new(dev, [])
    pf["power"] = sec
    return pf


def load_section(path: Path):  # noqa: ANN201
    from calib.core.params import Section

    sec, fit = json.loads(path.read_text())["section"]  # Section.to_json: (section, its fit entry)
    return Section.from_json(sec, fit)


def changed_preset(preset: str, change: str):  # noqa: ANN201
    from microbench.devices.sim.presets import get_preset

    p = get_preset(preset)
    if change == "fp10":
        units = dict(p.power.units)
        units["fp"] = dataclasses.replace(units["fp"], max_power_w=1.1 * units["fp"].max_power_w)
        return dataclasses.replace(p, power=dataclasses.replace(p.power, units=units))
    if change == "idle5":
        return dataclasses.replace(p, power=dataclasses.replace(p.power, p_const_w=p.power.p_const_w + 5.0))
    raise SystemExit(f"unknown change {change!r}")


def verdict(old, new) -> tuple[bool, list[str]]:  # noqa: ANN001
    from calib.report.compare import compare

    c = compare(old, new)
    return bool(c.significant), [f"{ch.name} z {ch.z:+.1f}" for ch in c.significant]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fits", required=True)
    ap.add_argument("--sessions", default="/tmp/seeds")
    ap.add_argument("--cache", default="/tmp/idcache")
    ap.add_argument("--preset", default="gtx580")
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--change", default="")
    ap.add_argument("--work", default="/tmp/id_changed")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    seeds = seeds_of(a.seeds)
    secs, devs = {}, {}
    for s in seeds:
        f = Path(a.fits) / a.preset / f"s{s}.json"
        if f.exists():
            secs[s] = load_section(f)
            _, devs[s], _ = cached_inputs(Path(a.sessions) / a.preset / f"s{s}", Path(a.cache) / a.preset / f"s{s}")
    have = sorted(secs)
    flagged = 0
    for i, s in enumerate(have):
        t = have[(i + 1) % len(have)]
        if t == s:
            continue
        hit, what = verdict(as_file(secs[s], devs[s]), as_file(secs[t], devs[t]))
        flagged += hit
        print(f"{a.preset} s{s} vs s{t}: {'FLAGGED ' + ', '.join(what) if hit else 'nothing significant'}", flush=True)
    print(f"== {a.preset}: false alarms {flagged} of {len(have)} seed pairs (nominal 5 %)", flush=True)
    from microbench.campaign import Campaign
    from microbench.devices.sim.device import VirtualGPU

    for change in [c for c in a.change.split(",") if c]:
        hits = 0
        for s in have:
            d = Path(a.work) / a.preset / change / f"s{s}"
            if not ((d / "manifest.json").exists()):
                dev = VirtualGPU(changed_preset(a.preset, change), s + 100)
                try:
                    Campaign(dev, "standard", s + 100).run(d)
                finally:
                    dev.close()
            df, dev_m, corr = cached_inputs(d, Path(a.work) / "cache" / a.preset / change / f"s{s}")
            sec, _ = fit_power(df, dev_m, corr)
            hit, what = verdict(as_file(secs[s], devs[s]), as_file(sec, dev_m))
            hits += hit
            print(f"{a.preset} {change} s{s}: {'flagged: ' + ', '.join(what) if hit else 'NOT FLAGGED'}", flush=True)
        print(f"== {a.preset} {change}: flagged {hits} of {len(have)} seeds", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
