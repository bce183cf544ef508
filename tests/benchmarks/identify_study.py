"""Are the published power parameters right, and are their error bars the right size? (issue 29)

Refits only the IPP power section of recorded sessions (make_seed_sessions.py) with the current
fitter, from cached inputs (the session's samples table and the thermal fit's temperature correction,
made once per session into CACHE), and scores every parameter that has a ground truth:

- the share of MaxPower values within 10 % of the truth, and which units miss, per preset;
- the calibration of ``stderr_total``: truth within 2 stderr_total, and the median of
  |fitted - truth| / stderr_total (about 0.67 for honest Gaussian errors);
- the same for what the file publishes as determined: parameters not named as undetermined, and the
  determined quantities (``fit.power.identifiability``) in their place, scored against the truth of the
  same quantity;
- held-out power MAPE (the campaign's application-like mixes at the default clocks) and the fit's time.

    python tests/benchmarks/identify_study.py --sessions /tmp/seeds --presets gtx280,titanx --cache /tmp/idcache \\
        --out /tmp/id_after [--seeds 0-19] [--json rows.json]

``--files DIR`` scores parameter files fitted elsewhere (DIR/<preset>/s<seed>.json, e.g. uncertainty_study.py
--out) instead of refitting: the "before" figures.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from make_seed_sessions import seeds_of  # noqa: E402


def cached_inputs(session: Path, cache: Path):  # noqa: ANN201 - (samples DataFrame, manifest device, correction)
    """The session's samples table and the thermal fit's temperature correction, cached."""
    import pandas as pd

    from calib.core.session import read_session
    from calib.segment import session_data

    cache.mkdir(parents=True, exist_ok=True)
    s_path, c_path = cache / "samples.pkl", cache / "correction.json"
    sess = read_session(session)
    if not s_path.exists() or not c_path.exists():
        from calib.fit.thermal import ThermalFitter

        data = session_data(sess)
        if not s_path.exists():
            data.samples.to_pickle(s_path)
        # values only: the correction needs no error bars; remove correction.json to redo it after a change
        # of the thermal fitter (the samples stay)
        th = ThermalFitter().fit(data, uncertainty=False)
        c_path.write_text(json.dumps({"sigma_w_per_c": th.section_.value("sigma_w_per_c"),
                                      "idle_temp_c": th.section_.value("idle_temp_c")}))
    return pd.read_pickle(s_path), sess.manifest["device"], json.loads(c_path.read_text())


def fit_power(df, dev: dict, correction: dict, settings: dict | None = None):  # noqa: ANN001, ANN201
    """The power section as calib.fit.pipeline.fit_session fits it (and its CPU seconds); ``settings``:
    other fitter settings (e.g. ``{"linear_share": "off"}``, the fit before the share)."""
    from calib.core.samples import act_units
    from calib.fit.ipp import IppPowerFitter

    clocks = dev.get("clocks", {})
    mem_u = set(dev["mem_domain_units"]) & set(act_units(df))
    f = IppPowerFitter(mem_units=mem_u, sm_count=int(dev["sm_count"]), chip_units=dev["chip_units"],
                       warp_issue_per_cycle=dev.get("warp_issue_per_cycle"),
                       default_clocks={"core_mhz": clocks.get("core_mhz"), "mem_mhz": clocks.get("mem_mhz")},
                       temperature_correction=correction, **(settings or {}))
    from calib.fit.uncertainty import annotate_identifiability

    t0 = time.process_time()
    f.fit(df)
    dt = time.process_time() - t0
    annotate_identifiability(f.section_)  # as calib.fit.pipeline.annotate does
    return f.section_, dt


def heldout_mape(sec, df) -> float:  # noqa: ANN001
    """MAPE (%) of the held-out mixes at the section's default clocks."""
    from calib.core.params import ParameterFile
    from calib.model.ipp import IppPowerModel

    clocks = sec.structure.get("default_clocks") or {}
    h = df[df["role"] == "heldout"]
    for col in ("core_mhz", "mem_mhz"):
        if clocks.get(col) is not None:
            h = h[np.isclose(h[col].to_numpy(float), float(clocks[col]))]
    if not len(h):
        return float("nan")
    thermal = None
    tc = sec.structure.get("temperature_correction")
    if tc:
        from calib.core.params import Param, Section

        thermal = Section("ipp_thermal", [Param("sigma_w_per_c", tc["sigma_w_per_c"], "W/C", vary=False),
                                          Param("idle_temp_c", tc["idle_temp_c"], "C", vary=False)], {}, {})
    pred = IppPowerModel(sec, thermal).predict(h)
    y = h["power_w"].to_numpy(float)
    del ParameterFile
    return float(100 * np.mean(np.abs(pred / y - 1)))


def truth_of_quantity(preset: str, q: dict, truth: dict) -> float | None:
    """The truth of a determined quantity of the file: a unit's power at an access rate from the hidden
    physics (the unit alone), or a linear combination of parameters with truths."""
    if q.get("kind") == "power_at_ar":
        from microbench.devices.sim.presets import get_preset

        up = get_preset(preset).power.units.get(q["unit"])
        return None if up is None else float(up.power(q["ar"]))
    w = q.get("weights") or {}
    if all(f"power.{n}" in truth for n in w):
        return float(sum(x * truth[f"power.{n}"]["value"] for n, x in w.items()))
    return None


def score(preset: str, sec, seed: int) -> list[dict]:  # noqa: ANN001
    """One row per parameter (and determined quantity) with a truth."""
    from calib.fit.uncertainty import named_alone
    from microbench.truth import ground_truth

    truth = ground_truth(preset)
    rows = []
    undetermined = set()
    for q in sec.stats.get("identifiability") or []:
        undetermined |= set(q.get("undetermined", q.get("parameters", [])))
        if named_alone(q):
            continue  # a parameter named undetermined on its own: scored as itself below
        t = truth_of_quantity(preset, q, truth)
        if t is None:
            continue
        label = q.get("label") or q.get("kind", "combination")
        label = f"{label} @ {q['ar']:.2g}" if q.get("kind") == "power_at_ar" else label
        label = label if q.get("kind") != "power_at_ar" else f"power of {q['unit']} at its highest AR"
        rows.append({"preset": preset, "seed": seed, "parameter": f"[{label}]", "kind": "quantity", "truth": t,
                     "fitted": q["value"], "stderr": q.get("stderr"), "stderr_total": q.get("stderr_total")})
    for n, p in sec.params.items():
        k = f"power.{n}"
        if k not in truth or not p.vary:
            continue
        rows.append({"preset": preset, "seed": seed, "parameter": n, "truth": truth[k]["value"], "fitted": p.value,
                     "stderr": p.stderr, "stderr_total": p.stderr_total,
                     "kind": "undetermined" if n in undetermined else "parameter"})
    for r in rows:
        err = r["fitted"] - r["truth"]
        r["rel_err_pct"] = 100 * err / r["truth"] if r["truth"] else None
        r["z_total"] = abs(err) / r["stderr_total"] if r["stderr_total"] else None
    return rows


def summary(rows: list[dict], preset: str) -> dict:
    """Figures of one preset (module docstring)."""
    mp = [r for r in rows if r["parameter"].startswith("max_power_")]
    seeds = sorted({r["seed"] for r in rows})
    within = [r for r in mp if r["rel_err_pct"] is not None and abs(r["rel_err_pct"]) <= 10]
    comb_ok = [r for r in mp if r["kind"] == "undetermined"]

    def calib(sub: list[dict]) -> tuple[float, float, int]:
        z = [r["z_total"] for r in sub if r["z_total"] is not None]
        if not z:
            return float("nan"), float("nan"), 0
        return 100 * float(np.mean(np.array(z) <= 2)), float(np.median(z)), len(z)

    per_unit: dict[str, list[float]] = {}
    for r in mp:
        per_unit.setdefault(r["parameter"][10:-2], []).append(r["rel_err_pct"])
    published = [r for r in rows if r["kind"] in ("parameter", "quantity")]
    return {"preset": preset, "seeds": len(seeds),
            "maxpower_within_10pct": len(within) / max(1, len(mp)),
            "maxpower_within_10pct_or_undetermined": len({id(r) for r in within + comb_ok}) / max(1, len(mp)),
            "calibration_all": calib(rows), "calibration_published": calib(published),
            "per_unit_median_err_pct": {u: float(np.median(v)) for u, v in per_unit.items()}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", default="/tmp/seeds")
    ap.add_argument("--presets", default="gtx280,gtx580,titanx,gtx580_nonadd,titanx_nonadd")
    ap.add_argument("--seeds", default="0-19")
    ap.add_argument("--cache", default="/tmp/idcache")
    ap.add_argument("--out", default=None, help="save each refitted power section (OUT/<preset>/s<seed>.json)")
    ap.add_argument("--files", default=None, help="score these parameter files instead of refitting")
    ap.add_argument("--json", default=None)
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="an IppPowerFitter setting for the refits (e.g. linear_share=off)")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    from calib.core import params as P

    allrows: list[dict] = []
    for preset in a.presets.split(","):
        rows: list[dict] = []
        mapes, secs = [], []
        for seed in seeds_of(a.seeds):
            d = Path(a.sessions) / preset / f"s{seed}"
            if not (d / "manifest.json").exists():
                continue
            df, dev, corr = cached_inputs(d, Path(a.cache) / preset / f"s{seed}")
            if a.files:
                f = Path(a.files) / preset / f"s{seed}.json"
                if not f.exists():
                    continue
                doc = json.loads(f.read_text())
                if "section" in doc:  # this script's own --out file: the power section and its fit's CPU time
                    sec, dt = P.Section.from_json(*doc["section"]), float(doc.get("cpu_s", "nan"))
                else:
                    sec, dt = P.load(f)["power"], float("nan")
            else:
                sec, dt = fit_power(df, dev, corr, dict(kv.split("=", 1) for kv in a.set))
                if a.out:
                    out = Path(a.out) / preset / f"s{seed}.json"
                    out.parent.mkdir(parents=True, exist_ok=True)
                    out.write_text(json.dumps({"section": sec.to_json(), "cpu_s": dt}))
            secs.append(dt)
            mapes.append(heldout_mape(sec, df))
            rows += score(preset, sec, seed)
            print(f"{preset} s{seed}: power fit {dt:.1f} s CPU, held-out MAPE {mapes[-1]:.2f} %", flush=True)
        if not rows:
            continue
        s = summary(rows, preset)
        ca, cp = s["calibration_all"], s["calibration_published"]
        print(f"== {preset}: {s['seeds']} seeds; MaxPower within 10 %: {100 * s['maxpower_within_10pct']:.1f} % "
              f"(or undetermined: {100 * s['maxpower_within_10pct_or_undetermined']:.1f} %); "
              f"all: truth within 2 stderr_total {ca[0]:.1f} % of {ca[2]}, median |err|/stderr_total {ca[1]:.2f}; "
              f"published: {cp[0]:.1f} % of {cp[2]}, median {cp[1]:.2f}; held-out MAPE {np.nanmean(mapes):.2f} %; "
              f"power fit CPU median {np.nanmedian(secs):.1f} s, max {np.nanmax(secs):.1f} s", flush=True)
        print("   median error % per unit: " + ", ".join(f"{u} {e:+.1f}" for u, e in s["per_unit_median_err_pct"].items()),
              flush=True)
        allrows += rows
    if a.json:
        Path(a.json).write_text(json.dumps(allrows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
