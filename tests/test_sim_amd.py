"""The AMD virtual GPUs (sim:mi250x, sim:mi300x): wave64, the CU's units, an amdsmi-like stream, and a
campaign that calibrates end to end with its recovery report."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from calib.cli import main
from calib.core import params as P
from calib.core.arch import AMD_UNITS
from microbench.benchmarks import plan
from microbench.devices import open_device
from microbench.devices.base import Launch, Workload
from microbench.devices.sim.presets import PRESETS


@pytest.mark.parametrize("name, cus, target, columns", [
    ("mi250x", 110, "gfx90a", ["power_w", "power_avg_w", "energy_mj", "temp_c", "sm_mhz", "mem_mhz", "util_gpu_pct",
                "util_mem_pct"]),
    ("mi300x", 304, "gfx942", ["power_w", "energy_mj", "temp_c", "sm_mhz", "mem_mhz", "util_gpu_pct",
                "util_mem_pct"]),
])
def test_amd_presets_carry_the_target_facts(name, cus, target, columns):
    dev = open_device(f"sim:{name}")
    info = dev.info
    assert (info.sm_count, info.warp_issue_per_cycle, info.extra["warp_size"]) == (cus, 2.0, 64)
    assert info.extra["units"] == list(AMD_UNITS.units) and info.extra["architecture_target"] == target
    assert info.extra["unit_classes"]["valu_int"] == ["int", "alu"] and info.extra["mem_domain_units"] == ["hbm"]
    gpu, wall, host = dev.sensors()
    assert (gpu.name, gpu.kind, gpu.scope, list(gpu.columns)) == ("amdsmi0", "amdsmi", "gpu", columns)
    assert wall.scope == "system" and (host.name, host.scope) == ("rapl", "host")
    # the MI250X node's EPYC shows no DRAM zone; the MI300X node's two Xeons each a package and its DRAM
    assert host.zones == {"mi250x": ["package-0"],
                          "mi300x": ["package-0", "package-1", "package-0/dram", "package-1/dram"]}[name]
    assert dev.preset.idle_steady_state()["power_w"] == pytest.approx({"mi250x": 91.4, "mi300x": 152.4}[name], abs=0.1)


def test_a_block_occupies_whole_waves():
    """Catches a simulator counting 32-lane warps on a wave64 GPU: 32 threads per block cost a whole wave
    (same time and power as 64), where on an NVIDIA preset 64 threads are twice the work of 32."""
    pw = {"fp": 4096.0}
    amd = open_device("sim:mi250x")
    t32, l32 = amd.evaluate(Workload("k", pw, Launch(110 * 4, 32, 110)))
    t64, l64 = amd.evaluate(Workload("k", pw, Launch(110 * 4, 64, 110)))
    assert t32 == pytest.approx(t64, rel=1e-12) and l32.dyn_core_w == pytest.approx(l64.dyn_core_w, rel=1e-12)
    nv = open_device("sim:titanx")
    n32, _ = nv.evaluate(Workload("k", pw, Launch(24 * 64, 32, 24)))
    n64, _ = nv.evaluate(Workload("k", pw, Launch(24 * 64, 64, 24)))
    assert n64 == pytest.approx(2 * n32, rel=0.05)


def test_amd_campaign_runs_each_class_kernel_and_no_sub_wave_launch():
    info = open_device("sim:mi250x").info
    _, benches = plan(info, "standard")
    unit = [b for b in benches if b.role == "unit"]
    assert {b.stresses for b in unit} == {"fp", "dp", "int", "alu", "sfu", "tensor", "ctrl", "const", "shared",
                                          "l1", "tex", "l2", "global", "local"}
    assert all(b.warps_per_sm % 2 == 0 for b in unit)          # whole wave64s: 2 warps of 32 threads
    assert not any(b.stresses in ("issue", "fds", "reg") for b in benches if b.role == "unit")
    w = next(b for b in unit if b.kernel == "tex").workload(info)
    assert w.per_warp.get("tex")  # served by the vector L1 (the l1 unit), not moved to DRAM


@pytest.fixture(scope="module")
def mi250x_quick(tmp_path_factory):
    root = tmp_path_factory.mktemp("mi250x")
    code = main(["run", "--device", "sim:mi250x", "--campaign", "quick", "--name", "q", "--logs-dir",
                 str(root / "logs"), "--fitted-dir", str(root / "fitted"), "--quiet"])
    assert code == 0
    return root


def test_calib_run_on_sim_mi250x_calibrates_end_to_end(mi250x_quick):
    """The quick campaign recovers what it can: idle power within 1 %, the issue rate of a wave64 CU in
    32-thread warps (0.5 cycles) within 1 %, DRAM latency within 2 %, held-out mixes under 4 %; the
    recovery report names the AMD units."""
    rec = json.loads((mi250x_quick / "fitted" / "q.recovery.json").read_text())
    rows = {r["parameter"]: r for r in rec["parameters"]}
    assert abs(rows["power.idle_power_w"]["error_pct"]) < 1.0
    assert abs(rows["timing.issue_cycles"]["error_pct"]) < 1.0 and rows["timing.issue_cycles"]["truth"] == 0.5
    assert abs(rows["timing.mem_ld_cycles"]["error_pct"]) < 2.0
    assert rec["heldout_mape_pct"] < 4.0 and rec["heldout_rows"] == 8
    assert {f"power.max_power_{u}_w" for u in AMD_UNITS.units} <= set(rows)
    fitted = [r for k, r in rows.items() if k.startswith("power.max_power_") and r["fitted"] is not None]
    assert len(fitted) == len(AMD_UNITS.units)
    pf = P.load(mi250x_quick / "fitted" / "q.json")
    assert pf.device["unit_classes"]["salu"] == ["ctrl", "const"] and pf.device["warp_size"] == 64
    assert list(pf["power"].structure["units"]) == list(AMD_UNITS.units)


def test_amd_samples_access_rates_follow_the_unit_classes(mi250x_quick):
    """act_issue is the sum of every class's access (each class on exactly one other unit); an int_mad row
    stresses valu_int, a const row salu."""
    df = pd.read_csv(mi250x_quick / "fitted" / "q.samples.csv")
    acts = [f"act_{u}" for u in AMD_UNITS.units if u != "issue"]
    k = df[df["role"] != "idle"]
    assert (k["act_issue"] - k[acts].sum(axis=1)).abs().max() < 1e-9
    row = df[df["workload"] == "int_mad/w64"].iloc[0]
    assert row["act_valu_int"] > 0.5 and row["act_valu_fp32"] == 0.0
    assert df[df["workload"] == "const/w64"].iloc[0]["act_salu"] > 0


def test_predicting_from_counts_uses_the_files_unit_classes(mi250x_quick):
    """Catches a model that maps counts to units by IPP's names: from cnt_ columns alone the AMD file
    gives the same power as from the measured act_ columns."""
    from calib.model.predict import predict_power

    pf = P.load(mi250x_quick / "fitted" / "q.json")
    df = pd.read_csv(mi250x_quick / "fitted" / "q.samples.csv")
    k = df[df["role"] == "unit"].reset_index(drop=True)
    with_act = predict_power(pf, k)
    counts_only = predict_power(pf, k.drop(columns=[c for c in k.columns if c.startswith("act_")]))
    assert counts_only == pytest.approx(with_act, rel=1e-6)


def test_every_preset_is_listed_by_calib_devices(capsys):
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    for name in PRESETS:
        assert f"  sim:{name}" in out
    assert "sim:mi250x   AMD Instinct MI250X, one GCD (CDNA2 gfx90a): 110 CUs, wave64, 1700/1600 MHz, units valu_fp32" in out


def test_host_power_enters_the_system_baseline_and_the_copy_breakdown(mi250x_quick):
    """The MI250X node's EPYC host has RAPL (package, no DRAM): the fit records the host's idle power beside
    the board's (truth: the package's 70 W at idle) and the copy section its CPU power above idle per host
    memory (truth from the simulator's link and host shares, microbench.devices.sim.pcie.truth)."""
    from microbench.devices.sim import pcie
    from microbench.devices.sim.presets import MI250X
    from calib.model.transfer import copy_breakdown

    pf = P.load(mi250x_quick / "fitted" / "q.json")
    st = pf["power"].stats
    assert st["host_idle_power_w"] == pytest.approx(70.0, rel=1e-3) and st["host_idle_power_source"] == "RAPL package-0"
    truth = pcie.truth(MI250X.pcie, MI250X)
    for m in ("pinned", "pageable"):
        p = pf["transfer"][f"host_rapl_power_{m}_w"]
        assert p.value == pytest.approx(truth[f"host_rapl_power_{m}_w"], rel=0.01), m
    b = copy_breakdown(pf, pd.DataFrame({"workload": ["k"], "bytes_h2d": [1 << 28], "bytes_d2h": [0.0],
                                         "host_pinned": [0.0], "time_s": [0.1]}))
    t = b["copy_time_s"].iloc[0]
    assert b["copy_host_cpu_dram_energy_j"].iloc[0] == pytest.approx(pf["transfer"].value("host_rapl_power_pageable_w") * t)
