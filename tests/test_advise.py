"""Thesis Ch. V throughput analysis: the 10 categories (each case reproduced by a kernel built for it),
the 0.85 boundary on both sides, unknown categories with the missing inputs named, the predicted
effects of the suggestions, and the `calib advise` command."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from calib.cli import main
from calib.core.params import ParameterFile, Section
from calib.model import advise as A
from calib.model import throughput as TP
from calib.model import timing as T
from calib.model.arfunc import IPP_A, IPP_B, LINEAR, LOG

# GTX580 of thesis Table 14 (DRAM latency 450, bandwidth 150 GB/s, 16 SMs, N up to 48), with the core
# clock of Table 10 (1.544 GHz): Table 14 swaps the GPU's and the CPU's frequencies (errata)
CORE_MHZ, MEM_MHZ, BW = 1544.0, 2004.0, 150e9


def p(v, unit="cycles"):
    return {"value": float(v), "unit": unit, "vary": False}


def thesis_gtx580() -> ParameterFile:
    """Timing section from Table 14 (Mem_LD 450, coalesced departure 10 -> MWP_Proc 46, uncoalesced
    departure 10 -> MWP_Proc 2.4) and a small linear IPP power section for the effects."""
    timing = {"model": T.MODEL_NAME, "predictor": "mwp_cwp", "comp_form": "sum", "mem_l_coal": "thesis",
              "ref_clocks": {"core_mhz": CORE_MHZ, "mem_mhz": MEM_MHZ}, "sm_count": 16, "max_warps_per_sm": 48,
              "max_blocks_per_sm": 8,
              "parameters": {"issue_cycles": p(4), "mem_ld_cycles": p(450), "departure_del_coal_cycles": p(10),
                             "departure_del_uncoal_cycles": p(10),
                             "dram_del_coal_mem_cycles": p(128 * MEM_MHZ * 1e6 / BW, "mem cycles")}}
    units = {"fp": {"scope": "sm", "ar_function": LOG, "domain": "core"},
             "global": {"scope": "chip", "ar_function": LOG, "domain": "mem"}}
    power = {"model": "ipp", "sm_count": 16, "sm_scaling": "linear", "units": units, "warp_issue_per_cycle": 1.0,
             "parameters": {"idle_power_w": p(27.0, "W"), "const_sm_power_w": p(0.5, "W"),
                            "activation_power_w": p(64.0, "W"), "ar_log_b": p(IPP_B, "1"),
                            "max_power_fp_w": p(1.2, "W"), "ar_log_a_fp": p(IPP_A, "1"),
                            "max_power_global_w": p(28.0, "W"), "ar_log_a_global": p(IPP_A, "1")}}
    doc = {"device": {"name": "GTX 580 (thesis Table 14)", "sm_count": 16, "warp_issue_per_cycle": 1.0,
                      "clocks": {"core_mhz": CORE_MHZ, "mem_mhz": MEM_MHZ}},
           "timing": timing, "power": power}
    pf = ParameterFile.new(doc["device"], [])
    for k in ("timing", "power"):
        pf[k] = Section.from_json(doc[k])
    return pf


def kernel(name, fp, warps, mstr, asm=16, uncoal=0.0):
    """Warps of ``fp`` FP instructions per global load, ``warps`` resident warps per SM (one block of
    ``warps`` warps resident at a time, as when shared memory limits the occupancy), 12 rounds on ``asm`` SMs."""
    return {"workload": name, "cnt_fp": float(fp), "cnt_global": 1.0, "blocks": 12.0 * asm, "active_sms": float(asm),
            "threads_per_block": 32.0 * warps, "active_blocks_per_sm": 1.0, "mstr": float(mstr),
            "uncoal_frac": float(uncoal)}


# (kernel, the category the thesis's definitions give). MWP_Proc: 46 coalesced, 2.4 uncoalesced;
# MWP_BW: 21.8 coalesced (16 SMs), 4.5 uncoalesced (16 SMs), 72 uncoalesced on one SM;
# MWP_App_InfiN: 115 with no FP (sub-category I up to N = 48), 28.75 / 23 / 5.75 with 3 / 4 / 19 FPs
# per load (II at N = 32 / 32 / 8)
CASES = [
    (kernel("c1_warps_process_bw", 0, 8, 1, uncoal=1.0), 1),
    (kernel("c2_warps_process", 0, 8, 1, asm=1, uncoal=1.0), 2),
    (kernel("c3_warps_bw", 0, 32, 1), 3),
    (kernel("c4_warps_bw_just", 0, 24, 1), 4),
    (kernel("c5_warps_only", 0, 8, 1), 5),
    (kernel("c6_saturation", 19, 16, 1, uncoal=1.0), 6),
    (kernel("c7_process", 19, 16, 1, asm=1, uncoal=1.0), 7),
    (kernel("c8_bw", 3, 32, 1), 8),
    (kernel("c9_bw_just", 4, 32, 1), 9),
    (kernel("c10_best", 19, 8, 1), 10),
]


def test_each_of_the_ten_cases_lands_in_its_category():
    pf = thesis_gtx580()
    df = pd.DataFrame([k for k, _ in CASES])
    got = [a.category for a in A.advise(pf, df, effects=False)]
    assert got == [c for _, c in CASES]


def test_quantities_match_the_thesis_equations():
    pf = thesis_gtx580()
    q = A.quantities(pf, pd.DataFrame([CASES[2][0], CASES[9][0]]))
    # EffMem = Mem_L = 450 + 10 (coalesced, thesis form of Mem_L_Coal); EffComp = 4 issue cycles x
    # (FP + the load itself) per load
    assert q["eff_mem_cycles"] == pytest.approx([460.0, 460.0])
    assert q["eff_comp_cycles"] == pytest.approx([4.0, 80.0])
    assert q["mwp_app_infin"] == pytest.approx([115.0, 5.75])
    assert q["mwp_proc"] == pytest.approx([46.0, 46.0])
    bw_per_warp = CORE_MHZ * 1e6 * 128 / 460
    assert q["mwp_bw"] == pytest.approx(BW / (bw_per_warp * 16), rel=1e-9)
    # eq. (74): MWP_App = MIN(InfiN, N) x MSTR; eq. (71): MWP = MIN(App, BW, Proc, N)
    assert q["mwp_app"] == pytest.approx([32.0, 5.75])
    assert q["mwp"][0] == pytest.approx(q["mwp_bw"][0])
    # EffRatio (77)-(82), best case: N 8, MWP = MWP_App = 5.75; Mem_N = 460 x 8 / 5.75 + 80 x 4.75 = 1020,
    # IdleMemCycles = 1020 - 80 x 8 = 380; EffPerf = 4 x 19 = 76
    assert q["eff_ratio"][1] == pytest.approx(76.0 * 8 / (80.0 * 8 + 380.0))


@pytest.mark.parametrize("sub_n,low,high", [(8.0, 3, 4), (None, 8, 9)])
def test_the_085_boundary_on_both_sides(sub_n, low, high):
    """MWP_BW just below 0.85 x MWP_App is a bandwidth problem (3 / 8); at or just above it the
    bandwidth "may be just enough" (4 / 9). MSTR is set from the section's own MWP_BW."""
    pf = thesis_gtx580()
    base = CASES[4][0] if sub_n else CASES[9][0]
    q = A.quantities(pf, pd.DataFrame([base]))
    bw = float(q["mwp_bw"][0])
    per_mstr = float(q["mwp_app"][0])  # MWP_App at MSTR 1
    rows = []
    for f in (1.0 + 1e-6, 1.0, 1.0 - 1e-6):  # MWP_App slightly above, at, slightly below bw / 0.85
        rows.append({**base, "mstr": bw / (TP.BW_THRESHOLD * per_mstr) * f})
    got = [a.category for a in A.advise(pf, pd.DataFrame(rows), effects=False)]
    # MWP_App above bw/0.85 -> MWP_BW < 0.85 MWP_App; at it (float rounding aside) and below -> just enough
    assert got[0] == low and got[2] == high
    assert got[1] in (low, high)
    assert TP.category(8, 100, 10.0, 8.5, 50) == 4 and TP.category(8, 100, 10.0, 8.4999999, 50) == 3
    assert TP.category(8, 4, 10.0, 8.5, 50) == 9 and TP.category(8, 4, 10.0, 8.4999999, 50) == 8


def test_missing_inputs_are_named_never_guessed(tmp_path):
    kd = tmp_path / "k.json"
    kd.write_text(json.dumps([
        {"name": "no_mstr", "per_warp": {"fp": 4, "global": 1}, "launch": {"blocks": 16, "threads_per_block": 256}},
        {"name": "no_mem", "per_warp": {"fp": 4}, "launch": {"blocks": 16, "threads_per_block": 256}, "ilp": 2},
        {"name": "ok", "per_warp": {"fp": 4, "global": 0}, "launch": {"blocks": 16, "threads_per_block": 256},
         "memory": {"mstr": 1}}]))
    from calib.model.predict import kernel_description_table

    res = A.advise(thesis_gtx580(), kernel_description_table(kd, fill_counts=False))
    assert res[0].category is None
    assert res[0].missing == ["MSTR (memory.mstr, or ilp: independent loads before the first use)"]
    assert res[1].category is None
    assert res[1].missing == ["the memory instruction count (per_warp.global or .local or .l2 / cnt_global; "
                              "0 when the kernel has none)"]
    assert res[2].category == 10  # no memory instruction: nothing to hide, the best case
    table = pd.DataFrame({"workload": ["t"], "cnt_fp": [4.0], "cnt_global": [1.0], "ilp": [1.0]})
    assert A.advise(thesis_gtx580(), table)[0].missing == ["launch.blocks", "launch.threads_per_block"]


def test_effects_are_computed_with_the_fitted_models():
    pf = thesis_gtx580()
    res = {a.kernel: a for a in A.advise(pf, pd.DataFrame([k for k, _ in CASES]))}
    # bandwidth problem: fewer SMs (alpha = MWP_App / MWP_BW) keep the time and save power
    e = res["c8_bw"].effects[0]
    assert e.action == "fewer_sms" and e.variant["active_sms"] == math.floor(16 / (res["c8_bw"].quantities["mwp_app"]
                                                                                  / res["c8_bw"].quantities["mwp_bw"]))
    # the predicted change is the fitted models' (the same as the active-SM sweep of calib optimize), not quoted:
    # here fewer SMs draw less power but take longer (the comp_p (MWP - 1) term of Case 2 grows with MWP)
    from calib.model import energy as E

    row = A._filled(pf, pd.DataFrame([CASES[7][0]]))
    sweep = E.sm_sweep(pf, row, [12, 16]).set_index("active_sms")
    assert e.time_change == pytest.approx(sweep.loc[12, "time_s"] / sweep.loc[16, "time_s"] - 1, rel=1e-9)
    assert e.energy_change == pytest.approx(sweep.loc[12, "energy_j"] / sweep.loc[16, "energy_j"] - 1, rel=1e-9)
    assert e.power_change < 0
    # too few warps, no saturation: more warps per SM (up to the occupancy limit, 6 blocks of 8 warps), less time
    e = res["c5_warps_only"].effects[0]
    assert e.action == "more_warps" and e.variant["active_blocks_per_sm"] == 6
    assert e.time_change < -0.5 and e.energy_change < -0.3
    # the memory process: coalescing cuts the time
    e = res["c7_process"].effects[0]
    assert e.action == "coalesce" and e.time_change < -0.5
    # memory saturation: fewer warps (N x MWP_BW / MWP_App)
    e = res["c6_saturation"].effects[0]
    assert e.action == "fewer_warps" and e.change == "N 16 -> 7 warps per SM (same total work)"
    # no clock table on a one-clock device: said, not invented
    e = res["c5_warps_only"].effects[1]
    assert e.action == "lower_core_clock" and math.isnan(e.energy_change)
    assert e.note == "the device lists no core clock below the default"
    assert res["c10_best"].effects == []


def test_advise_command(tmp_path, capsys):
    pf = thesis_gtx580()
    params = tmp_path / "p.json"
    pf.save(params)
    kd = tmp_path / "k.json"
    kd.write_text(json.dumps([
        {"name": "bw", "per_warp": {"fp": 3, "global": 1}, "launch": {"blocks": 192, "threads_per_block": 1024,
                                                                      "active_blocks_per_sm": 1}, "memory": {"mstr": 1}},
        {"name": "no_mstr", "per_warp": {"fp": 4, "global": 1}, "launch": {"blocks": 16, "threads_per_block": 256}}]))
    out = tmp_path / "advice.json"
    assert main(["advise", str(params), str(kd), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "bw: category 8 (sub-category II): enough warps, the bandwidth is a problem" in text
    assert "no_mstr: category unknown -- missing: MSTR (memory.mstr, or ilp" in text
    doc = json.loads(out.read_text())
    assert [a["category"] for a in doc["advice"]] == [8, None]
    assert doc["advice"][0]["effects"][0]["action"] == "fewer_sms"
    # a file without a timing section: one ERROR line, exit 2
    del pf.sections["timing"]
    pf.save(params)
    assert main(["advise", str(params), str(kd)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"ERROR: {params}: the parameter file has no timing section; the throughput analysis needs the "
                   "fitted memory latency, departure delays and bandwidth (calib run / calib fit a session with "
                   "timing microbenchmarks)"]


def test_csv_kernel_table(tmp_path, capsys):
    params = tmp_path / "p.json"
    thesis_gtx580().save(params)
    csv = tmp_path / "k.csv"
    pd.DataFrame([k for k, _ in CASES]).drop(columns=["uncoal_frac"]).to_csv(csv, index=False)
    assert main(["advise", str(params), str(csv), "--kernel-name", "c9_bw_just"]) == 0
    assert capsys.readouterr().out.startswith("c9_bw_just: category 9 (sub-category II)")


def test_report_has_the_category_map(tmp_path, capsys):
    params = tmp_path / "p.json"
    thesis_gtx580().save(params)
    csv = tmp_path / "k.csv"
    pd.DataFrame([k for k, _ in CASES]).to_csv(csv, index=False)
    out = tmp_path / "rep"
    assert main(["report", str(params), "-o", str(out), "--no-discover", "--kernels", str(csv)]) == 0
    page = (out / "index.html").read_text()
    assert '<section id="categories"><h2>Kernel categories (thesis ch. V)</h2>' in page
    for k, c in CASES:
        assert f"<td>{k['workload']}</td><td>{c} ({TP.CATEGORIES[c][0]})</td>" in page
