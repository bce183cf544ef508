"""Time the virtual-GPU campaign + fit per preset and campaign size, and print what it recovered.

Run by hand:  .venv/bin/python tests/benchmarks/bench_campaign.py [--presets gtx280,gtx580,titanx] [--campaigns quick,standard]
Reports wall time of the campaign and of the fit, simulated seconds per wall second, rows logged,
held-out power MAPE and the recovery errors of the headline parameters.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import warnings
from pathlib import Path

HEADLINE = ("power.idle_power_w", "thermal.rc_rise_s", "thermal.rc_decay_s", "thermal.sigma_w_per_c",
            "power.max_power_global_w", "power.sm_beta", "power.activation_power_w", "power.max_power_l2_w")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--presets", default="gtx280,gtx580,titanx")
    ap.add_argument("--campaigns", default="standard")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    from calib.fit.pipeline import fit_session
    from microbench.campaign import Campaign
    from microbench.devices import open_device
    from calib.report.recovery import recovery_report

    for preset in a.presets.split(","):
        for camp in a.campaigns.split(","):
            with tempfile.TemporaryDirectory() as tmp:
                dev = open_device(f"sim:{preset}", seed=a.seed)
                t0 = time.perf_counter()
                session = Campaign(dev, camp, a.seed).run(Path(tmp) / "s")
                t1 = time.perf_counter()
                out = fit_session(session)
                t2 = time.perf_counter()
                stats = out.params["power"].stats
                mape, n_held = stats.get("heldout_mape_pct"), stats.get("heldout_rows", 0)
                rows = sum(sum(1 for _ in open(p)) - 1 for p in Path(session).glob("*.csv"))
                rep = recovery_report(preset, out.params, mape, n_held)
                errs = {r["parameter"]: r["error_pct"] for r in rep["parameters"]}
                print(f"{preset:7s} {camp:9s} campaign {t1 - t0:5.1f} s (simulated {dev.t:7.0f} s, "
                      f"{dev.t / (t1 - t0):6.0f}x), fit {t2 - t1:4.1f} s, {rows} log rows, "
                      f"held-out MAPE {mape:.2f}% ({n_held} rows)")
                print("   " + json.dumps({k.split(".")[1]: None if errs.get(k) is None else round(errs[k], 1)
                                         for k in HEADLINE if k in errs}))


if __name__ == "__main__":
    main()
