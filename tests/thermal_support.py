"""Shared by tests/test_thermal_network.py and tests/benchmarks/bench_thermal.py: measurements of the
virtual GPU that the thermal-network checks compare predictions with (a kernel sequence with idle gaps,
settled states). They drive the device like a user's own logging would and never read its truth."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from microbench.benchmarks import HELDOUT_MIXES, thermal_benchmarks
from microbench.devices.sim.device import VirtualGPU
from microbench.devices.sim.presets import get_preset


def nvml_rows(dev: VirtualGPU) -> pd.DataFrame:
    """Every NVML reading the device produced since the last call (time_s, power_w, temp_c, fan_pct)."""
    blocks = dev.sensors()[0].read_blocks()
    if not blocks:
        return pd.DataFrame({"time_s": [], "power_w": [], "temp_c": [], "fan_pct": []})
    return pd.DataFrame({"time_s": np.concatenate([b[0] for b in blocks]),
                         "power_w": np.concatenate([b[2]["power_w"] for b in blocks]).astype(float),
                         "temp_c": np.concatenate([b[2]["temp_c"] for b in blocks]).astype(float),
                         "fan_pct": np.concatenate([b[2]["fan_pct"] for b in blocks]).astype(float)})


def kernel_sequence(preset: str, minutes: float = 20.0, seed: int = 7) -> pd.DataFrame:
    """Run a random sequence of the campaign's thermal workloads and held-out mixes (runs of 15-120 s)
    with idle gaps (5-90 s) for ``minutes`` on a fresh virtual GPU, from idle. Returns the NVML log
    (time from the sequence start)."""
    from microbench.benchmarks import Benchmark

    dev = VirtualGPU(get_preset(preset), seed=seed)
    rng = np.random.default_rng(seed)
    works = [b.workload(dev.info) for b in thermal_benchmarks(dev.info, "full")]
    for name, mix in list(HELDOUT_MIXES.items())[:3]:
        works.append(Benchmark(name=f"seq/{name}", kernel="mix", role="heldout", stresses="mixed", kind="app_mix",
                               params={k: v for k, v in mix.items() if k != "ctrl"}, warps_per_sm=16,
                               blocks_per_sm=2).workload(dev.info))
    nvml_rows(dev)
    t0 = dev.clock()[0]
    end = t0 + 60.0 * minutes
    while dev.clock()[0] < end:
        w = works[int(rng.integers(len(works)))]
        dev.run(w, float(rng.uniform(15.0, 120.0)))
        dev.idle(float(rng.uniform(5.0, 90.0)))
    df = nvml_rows(dev)
    df["time_s"] = df["time_s"] - t0
    return df[df["time_s"] <= 60.0 * minutes].reset_index(drop=True)


def settled(preset: str, workload_index: int, seconds: float = 1500.0) -> dict[str, float]:
    """Run thermal workload ``workload_index`` of the full campaign from idle until settled: the cold
    runtime power (mean NVML power over seconds 1-4) and the settled sensor temperature and power (means
    of the NVML readings over the last 60 s)."""
    dev = VirtualGPU(get_preset(preset), seed=3)
    w = thermal_benchmarks(dev.info, "full")[workload_index].workload(dev.info)
    dev.idle(30.0)
    idle = nvml_rows(dev)
    t0 = dev.clock()[0]
    dev.run(w, seconds)
    df = nvml_rows(dev)
    rel = df["time_s"] - t0
    cold = df[(rel >= 1.0) & (rel <= 4.0)]["power_w"].mean()
    last = df[rel >= seconds - 60.0]
    return {"idle_power_w": float(idle["power_w"].mean()), "cold_power_w": float(cold),
            "temp_c": float(last["temp_c"].mean()), "power_w": float(last["power_w"].mean())}


def quick_campaign(tmp_path_factory, preset: str):
    """`calib run --campaign quick` on ``sim:<preset>`` in a fresh directory: (directory, parameter file)."""
    from calib.cli import main
    from calib.core import params as P

    d = tmp_path_factory.mktemp(preset)
    cwd = os.getcwd()
    os.chdir(d)
    try:
        assert main(["run", "--quiet", "--campaign", "quick", "--name", "q", "--device", f"sim:{preset}"]) == 0
    finally:
        os.chdir(cwd)
    return d, P.load(d / "fitted" / "q.json")
