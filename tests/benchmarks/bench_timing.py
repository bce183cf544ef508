"""Timing and energy figures on the virtual GPU (issue 6 must-shows).

    .venv/bin/python tests/benchmarks/bench_timing.py [--presets gtx280,titanx] [--json OUT.json] [--seed 0]

For each preset: run the standard campaign (the power campaign plus the timing microbenchmarks) into a
temporary session, take its samples table, fit the timing section (calib.fit.timing.fit_timing with the
session plan) and report

1. recovery: every timing parameter against the hidden physics (timing_truth), with standard errors;
2. the model on the session's kernels: MAPE on the training/check rows and the held-out mixes, both
   predictors; on DVFS presets the held-out mixes at every grid pair (5 core x 4 memory clocks)
   predicted from the default-clock row (model alone, and scaled from the measured default time)
   against Wang & Chu's 3.5 %;
3. on DVFS presets: ``calib optimize`` (energy, slowdown <= 10 %) for each held-out mix, then both the
   default and the recommended clocks are *run* on a fresh virtual GPU (same protocol: 60 s warm-up,
   30 s window, energy from the NVML energy counter per launch) and the measured energy compared;
4. on the GTX 280: the optimal active-SM count of a bandwidth-bound stream kernel (sweep and eq. 34),
   the predicted savings three ways, and the measured energy at that count against all SMs.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from calib.core.params import ParameterFile
from calib.fit.pipeline import fit_session
from calib.fit.timing import fit_timing, with_plan_inputs
from calib.model import energy as E
from calib.model import timing as T
from calib.core.session import read_session
from microbench.benchmarks import HELDOUT_MIXES, Benchmark, _mix_params
from microbench.campaign import Campaign
from microbench.devices import open_device
from microbench.devices.base import Launch, Workload
from microbench.timing_truth import timing_recovery_rows


def run_session(preset: str, seed: int, workdir: Path) -> Path:
    dev = open_device(f"sim:{preset}", seed=seed)
    t0 = time.monotonic()
    path = Campaign(dev, "standard", seed).run(workdir / f"{preset}-standard")
    print(f"[{preset}] standard campaign: {time.monotonic() - t0:.1f} s wall")
    return path


def measured_energy(preset: str, workload: Workload, clocks: tuple[float, float], seed: int,
                    warmup_s: float = 60.0, window_s: float = 30.0) -> dict[str, float]:
    """Energy per launch on a fresh virtual GPU at ``clocks``, from the NVML energy counter."""
    dev = open_device(f"sim:{preset}", seed=seed)
    dev.set_clocks(*clocks)
    dev.run(workload, warmup_s)
    nv = dev.sensors()[0]
    nv.read()
    res = dev.run(workload, window_s)
    rows = nv.read()
    e = [r.values["energy_mj"] for r in rows]
    p = [r.values["power_w"] for r in rows]
    energy_j = (e[-1] - e[0]) / 1000.0 * window_s / (rows[-1].t_mono_s - rows[0].t_mono_s)
    launches = window_s / res.kernel_time_s
    return {"time_s": res.kernel_time_s, "power_w": float(np.mean(p)), "energy_per_launch_j": energy_j / launches}


def recovery(preset: str, pf: ParameterFile) -> list[dict]:
    rows = timing_recovery_rows(preset, pf)
    print(f"[{preset}] timing recovery (truth, fitted +/- s.e., error):")
    for r in rows:
        se = "-" if r["stderr"] is None else f"{r['stderr']:.3g}"
        print(f"    {r['parameter']:34s} {r['truth']:11.5g} {r['fitted']:11.5g} +/- {se:>8s} {r['error_pct']:+6.1f}%")
    worst = max(abs(r["error_pct"]) for r in rows)
    print(f"    worst |error| {worst:.1f}% over {len(rows)} parameters")
    return rows


def model_quality(preset: str, df: pd.DataFrame, pf: ParameterFile) -> dict:
    out = {}
    st = pf["timing"].stats
    out["check_mape_pct"] = st["mape_pct"]
    out["structure_choice"] = st["structure_choice"]
    out["heldout_mape_pct"] = st.get("heldout_mape_pct")
    for pred in T.PREDICTORS:
        held = df[df["role"] == "heldout"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = T.predict_time(pf["timing"], held, pred)
        out[f"heldout_mape_pct_{pred}"] = float(100 * np.mean(np.abs(t / held["time_s"] - 1)))
    print(f"[{preset}] time MAPE: check rows {st['mape_pct']:.2f}% ({st['n_samples']} rows, {pf['timing'].structure['predictor']}), "
          f"held-out {st.get('heldout_mape_pct'):.2f}% ({st.get('heldout_rows')} rows); held-out by predictor: "
          + ", ".join(f"{p} {out[f'heldout_mape_pct_{p}']:.2f}%" for p in T.PREDICTORS))
    dv = st.get("heldout_dvfs")
    if dv:
        out["dvfs"] = dv
        print(f"[{preset}] DVFS: {dv['kernels']} held-out kernels x {dv['clock_pairs']} clock pairs "
              f"({dv['core_levels']} core x {dv['mem_levels']} memory clocks) = {dv['rows']} rows: time MAPE "
              f"{dv['mape_pct']:.2f}% (model alone), {dv['anchored_mape_pct']:.2f}% (scaled from the default-clock "
              f"time; Wang & Chu: 3.5%); worst {dv['max_abs_err_pct']:.1f}% / {dv['anchored_max_abs_err_pct']:.1f}%")
        for k, v in dv["per_kernel"].items():
            print(f"    {k:18s} {v['mape_pct']:6.2f}%  {v['anchored_mape_pct']:6.2f}%")
    return out


def heldout_workload(info, name: str) -> tuple[Benchmark, Workload]:
    mix = HELDOUT_MIXES[name]
    max_w = int(info.extra.get("max_warps_per_sm", 32))
    b = Benchmark(name=name, kernel="mix", role="heldout", stresses="mixed", kind="app_mix", params=_mix_params(mix),
                  warps_per_sm=min(16, max_w), blocks_per_sm=2)
    return b, b.workload(info)


def optimize_and_measure(preset: str, pf: ParameterFile, df: pd.DataFrame, seed: int, workdir: Path,
                         extra_args: tuple[str, ...] = (), label: str = "") -> list[dict]:
    dev = open_device(f"sim:{preset}", seed=seed)
    info = dev.info
    fc0, fm0 = info.default_core_mhz, info.default_mem_mhz
    params_path = workdir / f"{preset}-timing.json"
    pf.save(params_path)
    out = []
    print(f"[{preset}] calib optimize (least energy, slowdown <= 10 %{label}), then both clock pairs run on the "
          "virtual GPU:")
    measured_default: dict[str, dict] = {}
    for name in HELDOUT_MIXES:
        _b, w = heldout_workload(info, name)
        base = df[(df["workload"] == name) & np.isclose(df["core_mhz"], fc0) & np.isclose(df["mem_mhz"], fm0)]
        # the one profile a user takes: time and temperature at the default clocks
        desc = {"name": name, "per_warp": dict(w.per_warp), "launch": w.launch.to_dict(), "ilp": float(w.params["ilp"]),
                "time_s": float(base["time_s"].mean()), "temp_c": float(base["temp_c"].mean()), "core_mhz": fc0,
                "mem_mhz": fm0}
        kpath = workdir / f"{name}.json"
        kpath.write_text(json.dumps(desc))
        from calib.cli import main as calib_main

        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
            code = calib_main(["optimize", str(params_path), str(kpath), "-o", str(workdir / f"{name}.opt.csv"),
                               *extra_args])
        assert code == 0, buf.getvalue()
        table = pd.read_csv(workdir / f"{name}.opt.csv")
        ok = table[table["slowdown"] <= 0.10 + 1e-12]
        best = ok.loc[ok["energy_j"].idxmin()]
        d = table[table["default"]].iloc[0]
        rec = (float(best["core_mhz"]), float(best["mem_mhz"]))
        m0 = measured_default.setdefault(name, measured_energy(preset, w, (fc0, fm0), seed))
        m1 = measured_energy(preset, w, rec, seed) if rec != (fc0, fm0) else m0
        row = {"kernel": name, "recommended": rec, "pred_saving_pct": 100 * (1 - best["energy_j"] / d["energy_j"]),
               "pred_slowdown_pct": 100 * best["slowdown"],
               "meas_saving_pct": 100 * (1 - m1["energy_per_launch_j"] / m0["energy_per_launch_j"]),
               "meas_slowdown_pct": 100 * (m1["time_s"] / m0["time_s"] - 1), "meas_default_j": m0["energy_per_launch_j"],
               "meas_recommended_j": m1["energy_per_launch_j"], "pred_default_j": float(d["energy_j"]),
               "pred_recommended_j": float(best["energy_j"])}
        out.append(row)
        print(f"    {name:17s} -> {rec[0]:g}/{rec[1]:g} MHz: predicted {row['pred_saving_pct']:+5.1f}% energy "
              f"({row['pred_slowdown_pct']:+4.1f}% time); measured {row['meas_saving_pct']:+5.1f}% energy "
              f"({row['meas_slowdown_pct']:+4.1f}% time); energy/launch {1e3 * m0['energy_per_launch_j']:.1f} -> "
              f"{1e3 * m1['energy_per_launch_j']:.1f} mJ (predicted {1e3 * row['pred_default_j']:.1f} -> "
              f"{1e3 * row['pred_recommended_j']:.1f} mJ)")
    ms = [r["meas_saving_pct"] for r in out]
    within = sum(r["meas_slowdown_pct"] <= 10.5 for r in out)
    print(f"    measured saving: mean {np.mean(ms):.1f}%, min {np.min(ms):.1f}%, max {np.max(ms):.1f}%; "
          f"slowdown bound kept (<= 10 %, 0.5 % timer margin) for {within} of {len(out)}")
    return out


def best_measured(preset: str, seed: int, name: str) -> dict:
    """The measured energy-optimal pair within 10 % slowdown (every supported pair run): the ceiling."""
    dev = open_device(f"sim:{preset}", seed=seed)
    info = dev.info
    _, w = heldout_workload(info, name)
    fc0, fm0 = info.default_core_mhz, info.default_mem_mhz
    m0 = measured_energy(preset, w, (fc0, fm0), seed)
    best = (fc0, fm0, m0)
    for c in info.supported_clocks["core_mhz"]:
        for m in info.supported_clocks["mem_mhz"]:
            r = measured_energy(preset, w, (c, m), seed, warmup_s=30.0, window_s=10.0)
            if r["time_s"] <= 1.10 * m0["time_s"] and r["energy_per_launch_j"] < best[2]["energy_per_launch_j"]:
                best = (c, m, r)
    return {"kernel": name, "pair": best[:2], "saving_pct": 100 * (1 - best[2]["energy_per_launch_j"] / m0["energy_per_launch_j"])}


def sm_choice_gtx280(pf: ParameterFile, seed: int) -> dict:
    """Optimal active SMs of a bandwidth-bound stream (the dram kernel, one 16-warp block per SM, work
    per SM scaled so the total is constant, as IPP's experiment) on the virtual GTX 280: the model's
    GIPS/W sweep and eq. 34, then the energy per launch measured on the virtual GPU at a range of SM
    counts (the measured optimum) and at the model's choice against all 30 SMs."""
    from microbench.kernels import catalog

    spec = catalog.get("dram")
    params = spec.params(iters=4096)
    per_warp = spec.per_warp(params)
    k = pd.DataFrame({"workload": ["stream"], **{f"cnt_{c}": [v] for c, v in per_warp.items()}, "blocks": [30.0],
                      "threads_per_block": [512.0], "ilp": [float(params["ilp"])], "core_mhz": [1296.0],
                      "mem_mhz": [1107.0]})
    res = E.optimal_sms(pf, k, one_block_per_sm=True)
    n_opt = res["optimal_sms_sweep"]
    pred = res["table"].set_index("active_sms")
    meas = {}
    for n in sorted({10, 14, 17, 20, 22, 25, 30, n_opt, res["optimal_sms_eq34"]}):
        pw = {c: v * 30 / n for c, v in per_warp.items()}
        w = Workload("stream", pw, Launch(n, 512, n), "dram", params, spec.kernel_traits(params))
        meas[n] = measured_energy("gtx280", w, (1296.0, 1107.0), seed)
    best_meas = min(meas, key=lambda n: meas[n]["energy_per_launch_j"])
    s = res["savings"]

    def saving(n: int) -> float:
        return 100 * (1 - meas[n]["energy_per_launch_j"] / meas[30]["energy_per_launch_j"])

    out = {"optimal_sms_sweep": n_opt, "optimal_sms_eq34": res["optimal_sms_eq34"], "mwp": res["mwp"], "cwp": res["cwp"],
           "n": res["n"], "mwp_peak_bw": res["mwp_peak_bw"], "pred_savings_pct": {k_: 100 * v for k_, v in s.items()},
           "measured": {str(n): v for n, v in meas.items()}, "measured_optimum": best_meas,
           "meas_saving_pct_at_sweep": saving(n_opt), "meas_saving_pct_at_eq34": saving(res["optimal_sms_eq34"]),
           "meas_saving_pct_at_measured_optimum": saving(best_meas),
           "predicted": {str(n): {"time_s": float(pred.loc[n, "time_s"]), "energy_j": float(pred.loc[n, "energy_j"])}
                         for n in meas}}
    print(f"[gtx280] stream kernel, 16 warps/SM, ILP 4, constant work: optimal SMs {n_opt} (GIPS/W sweep), "
          f"{res['optimal_sms_eq34']} (eq. 34; MWP {res['mwp']:.2f}, CWP {res['cwp']:.2f}, N {res['n']:.0f}, "
          f"MWP_peak_BW {res['mwp_peak_bw']:.2f}); predicted savings vs 30 SMs: runtime+idle "
          f"{100 * s['runtime_idle']:.1f}%, runtime {100 * s['runtime']:.1f}%, power gating {100 * s['powergating']:.1f}%")
    print("    SMs   predicted time, energy/launch   measured time, energy/launch")
    for n, m in meas.items():
        print(f"    {n:3d}   {1e3 * pred.loc[n, 'time_s']:8.2f} ms {pred.loc[n, 'energy_j']:8.3f} J      "
              f"{1e3 * m['time_s']:8.2f} ms {m['energy_per_launch_j']:8.3f} J")
    print(f"    measured energy saving vs 30 SMs: {saving(n_opt):.1f}% at the sweep's {n_opt}, "
          f"{saving(res['optimal_sms_eq34']):.1f}% at eq. 34's {res['optimal_sms_eq34']}, best measured "
          f"{saving(best_meas):.1f}% at {best_meas}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", default="gtx280,titanx")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    results: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for preset in a.presets.split(","):
            sess = run_session(preset, a.seed, work)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fit = fit_session(sess)
                s = read_session(sess)
                df = with_plan_inputs(fit.samples, s.manifest.get("plan"))
                sec = fit_timing(fit.samples, s.manifest["device"], s.manifest.get("plan"))
            doc = fit.params
            doc["timing"] = sec
            r: dict = {"recovery": recovery(preset, doc), "model": model_quality(preset, df, doc)}
            if len(doc.device["clocks"].get("supported", {}).get("mem_mhz") or []) > 1:
                r["optimize"] = optimize_and_measure(preset, doc, df, a.seed, work)
                # the same at the DVFS power model's reference temperature (see timing_results.md)
                tref = doc["dvfs"].structure.get("temp_ref_c") if "dvfs" in doc else None
                if tref is not None:
                    r["optimize_at_temp_ref"] = optimize_and_measure(
                        preset, doc, df, a.seed, work, ("--temp-c", str(tref)), f", power at {tref:g} C")
                r["measured_ceiling"] = [best_measured(preset, a.seed, n) for n in HELDOUT_MIXES]
                print(f"[{preset}] measured ceiling (every pair run, least energy within 10 % slowdown): "
                      + ", ".join(f"{c['kernel']} {c['pair'][0]:g}/{c['pair'][1]:g} {c['saving_pct']:.1f}%"
                                  for c in r["measured_ceiling"]))
            if preset == "gtx280":
                r["sm_choice"] = sm_choice_gtx280(doc, a.seed)
            results[preset] = r
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1, default=lambda o: o if not isinstance(o, float) or math.isfinite(o) else None))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
