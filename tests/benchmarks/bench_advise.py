"""Acting on `calib advise` on the virtual GPU, and copy/compute ratios (issue 15's figures).

Run by hand (not a test)::

    .venv/bin/python tests/benchmarks/bench_advise.py PARAMS.json [--preset gtx580]

PARAMS.json is a parameter file fitted by ``calib run --device sim:<preset>`` (timing, power and
transfer sections). For each candidate kernel the script asks the advice (category, suggestion,
predicted change of time and energy per launch), then runs both the kernel and the suggested variant
on a fresh virtual GPU of the same preset and measures the change: kernel time from the device's
events, energy per launch from the mean NVML board power of the window times that time. It also runs
a SAXPY-like and an SGEMM-like kernel with their host-device copies and compares the measured
copy/compute time ratio with the predicted one.
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np
import pandas as pd

from calib.model.advise import advise
from calib.model.checks import load_checked
from calib.model.predict import predict_copies
from microbench.devices.base import Launch, Workload
from microbench.devices.sim.device import open_sim

WINDOW_S = 4.0

#: candidate kernels: per-warp counts, launch (blocks, threads per block, active SMs), ilp (= MSTR), coalesced
CANDIDATES = {
    "stream_bw": ({"fp": 2, "int": 2, "global": 2}, (16 * 48, 256, 16), 1, True),
    "stream_ilp4": ({"fp": 4, "int": 2, "global": 4}, (16 * 48, 256, 16), 4, True),
    "few_warps": ({"fp": 24, "int": 4, "global": 2}, (16, 64, 16), 1, True),
    "few_warps2": ({"fp": 64, "int": 8, "global": 2}, (32, 32, 16), 1, True),
    "uncoal_mid": ({"fp": 200, "int": 20, "global": 2}, (16 * 12, 256, 16), 1, False),
    "uncoal_heavy": ({"fp": 60, "int": 10, "global": 2}, (16 * 12, 256, 16), 1, False),
    "uncoal_one_sm": ({"fp": 200, "int": 20, "global": 2}, (12, 256, 1), 1, False),
    "balanced": ({"fp": 48, "int": 8, "global": 2}, (16 * 12, 256, 16), 2, True),
    "compute": ({"fp": 512, "int": 32, "global": 1}, (16 * 12, 256, 16), 4, True),
    "mid_bw": ({"fp": 12, "int": 4, "global": 2}, (16 * 12, 256, 16), 2, True),
}
SCALE = 200.0  # per-warp counts x SCALE: kernels of a few ms


def description(name: str, per_warp: dict, launch: tuple, ilp: float, coalesced: bool) -> dict:
    blocks, tpb, asm = launch
    return {"workload": name, **{f"cnt_{c}": float(v) * SCALE for c, v in per_warp.items()}, "blocks": float(blocks),
            "threads_per_block": float(tpb), "active_sms": float(asm), "ilp": float(ilp),
            "uncoal_frac": 0.0 if coalesced else 1.0}


def measure(preset: str, row: dict, seed: int) -> tuple[float, float]:
    """(kernel time s, board energy per launch J) of one kernel row on a fresh virtual GPU."""
    dev = open_sim(f"sim:{preset}", seed=seed)
    per_warp = {k[4:]: v for k, v in row.items() if k.startswith("cnt_") and v}
    w = Workload(row["workload"], per_warp, Launch(int(row["blocks"]), int(row["threads_per_block"]),
                                                   int(row["active_sms"])),
                 traits={"ilp": row["ilp"], "coalesced": row["uncoal_frac"] == 0.0})
    dev.idle(5.0)
    dev.run(w, 2.0)  # warm-up
    for s in dev.sensors():
        s.read()
    res = dev.run(w, WINDOW_S)
    nv = dev.sensors()[0].read()
    p = np.array([r.values["power_w"] for r in nv], float)
    return res.kernel_time_s, float(p[3:].mean()) * res.kernel_time_s


def variant_row(row: dict, v: dict) -> dict:
    out = dict(row)
    if "active_sms" in v:
        out["active_sms"] = float(v["active_sms"])
    if "uncoal_frac" in v:
        out["uncoal_frac"] = float(v["uncoal_frac"])
    if "blocks" in v:
        scale = v["work_scale"]
        out["blocks"] = float(v["blocks"])
        out["threads_per_block"] = float(v["threads_per_block"])
        for k in [k for k in out if k.startswith("cnt_")]:
            out[k] = out[k] * scale
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("params")
    ap.add_argument("--preset", default="gtx580")
    args = ap.parse_args(argv)
    pf = load_checked(args.params)
    rows = [description(n, *c) for n, c in CANDIDATES.items()]
    adv = advise(pf, pd.DataFrame(rows))
    print("## acting on the advice (virtual GPU", args.preset, ")")
    print(f"{'kernel':14s} {'cat':>3s} {'action':16s} {'change':52s} {'pred dT':>8s} {'meas dT':>8s} "
          f"{'pred dE':>8s} {'meas dE':>8s} {'E ratio':>7s}")
    hits: dict[int, list[str]] = {}
    for row, a in zip(rows, adv):
        base_t, base_e = measure(args.preset, row, 1)
        for e in a.effects:
            if e.note:
                print(f"{a.kernel:14s} {a.category:3d} {e.action:16s} not evaluated: {e.note}")
                continue
            t, en = measure(args.preset, variant_row(row, e.variant), 1)
            mt, me = t / base_t - 1.0, en / base_e - 1.0
            ratio = me / e.energy_change if e.energy_change else math.nan
            tr = mt / e.time_change if e.time_change else math.nan
            ok = (np.sign(me) == np.sign(e.energy_change) and abs(ratio - 1) <= 0.15) or (
                np.sign(mt) == np.sign(e.time_change) and abs(tr - 1) <= 0.15)
            if ok:
                hits.setdefault(a.category, []).append(f"{a.kernel}:{e.action}")
            print(f"{a.kernel:14s} {a.category:3d} {e.action:16s} {e.change[:52]:52s} {100 * e.time_change:+7.1f}% "
                  f"{100 * mt:+7.1f}% {100 * e.energy_change:+7.1f}% {100 * me:+7.1f}% {ratio:7.2f}"
                  + ("  <- within 15 %" if ok else ""))
        if not a.effects:
            print(f"{a.kernel:14s} {a.category:3d} (no change suggested)")
    print(f"categories with a measured change in the predicted direction within 15 % of its size: "
          f"{sorted(hits)} ({len(hits)})")
    print()
    print("## copy/compute time ratio")
    copies = {"saxpy_like": (description("saxpy_like", {"fp": 2, "int": 4, "alu": 2, "global": 3},
                                         (4096, 256, 16), 1, True), 2 * 4 * 1048576 * 4, 4 * 1048576 * 4),
              "sgemm_like": (description("sgemm_like", {"fp": 4096, "shared": 2048, "int": 256, "alu": 256, "global": 64},
                                         (1024, 256, 16), 4, True), 2 * 4 * 512 * 512, 4 * 512 * 512)}
    for name, (row, h2d, d2h) in copies.items():
        row = {**{k: v / SCALE if k.startswith("cnt_") else v for k, v in row.items()}, "bytes_h2d": float(h2d),
               "bytes_d2h": float(d2h), "host_pinned": 0.0}
        b = predict_copies(pf, pd.DataFrame([row])).iloc[0]
        dev = open_sim(f"sim:{args.preset}", seed=2)
        kt, _ = measure(args.preset, row, 2)
        t_h = dev.run_copy("h2d", int(h2d), False, 1.0).copy_time_s
        t_d = dev.run_copy("d2h", int(d2h), False, 1.0).copy_time_s
        meas = (t_h + t_d) / kt
        print(f"{name}: predicted copy {1e3 * b['copy_time_s']:.3f} ms / kernel {1e3 * b['kernel_time_s']:.3f} ms = "
              f"{b['copy_compute_ratio']:.3g}; measured {1e3 * (t_h + t_d):.3f} / {1e3 * kt:.3f} ms = {meas:.3g}; "
              f"error {100 * (b['copy_compute_ratio'] / meas - 1):+.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
