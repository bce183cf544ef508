"""Energy decisions: the IPP optimal-core example on GTX280 (paper 004 sec. 6.4), energy savings three
ways, and the clock choice under a slowdown bound."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from calib.core.params import ParameterFile, Section
from calib.core.errors import BadInputError
from calib.model import energy as E
from calib.model import timing as T
from calib.model.arfunc import IPP_A, IPP_B, LINEAR, LOG

# thesis Table 8 (GTX280): MaxPower per SM (global/local: chip) and access-rate function
TABLE8 = {"fp": (0.2, LOG), "reg": (0.3, LOG), "alu": (0.2, LINEAR), "sfu": (0.5, LINEAR), "int": (0.25, LOG),
          "fds": (0.5, LOG), "shared": (1.0, LINEAR), "tex": (0.9, LOG), "const": (0.4, LOG),
          "global": (52.0, LOG), "local": (52.0, LOG)}
#: effective DRAM bandwidth that makes MWP_peak_BW = 10.802 at 30 SMs (paper 004 Table 4) with
#: Mem_L 430 and 128-byte requests at 1296 MHz: 125.0 GB/s
GTX280_BW = 10.802 * 30 * 1.296e9 * 128 / 430


def p(v, unit="cycles"):
    return {"value": float(v), "unit": unit}


def as_file(doc: dict) -> ParameterFile:
    """A parameter file of a device and sections given as the JSON holds them (no fit statistics)."""
    return ParameterFile(doc["device"], {}, {k: Section.from_json(v) for k, v in doc.items() if k != "device"})


def gtx280_doc() -> ParameterFile:
    params = {"idle_power_w": p(83.0, "W"), "const_sm_power_w": p(0.813, "W"), "activation_power_w": p(0.0, "W"),
              "ar_log_b": p(IPP_B, "1"), "sm_beta": p(1.1, "1")}
    units = {}
    for u, (mp, form) in TABLE8.items():
        params[f"max_power_{u}_w"] = p(mp, "W")
        if form == LOG:
            params[f"ar_log_a_{u}"] = p(IPP_A, "1")
        units[u] = {"scope": "chip" if u in ("global", "local") else "sm", "ar_function": form, "domain": "core"}
    timing = {"model": T.MODEL_NAME, "predictor": "mwp_cwp", "comp_form": "sum", "mem_l_coal": "thesis",
              "ref_clocks": {"core_mhz": 1296.0, "mem_mhz": 1107.0}, "sm_count": 30, "max_warps_per_sm": 32,
              "max_blocks_per_sm": 8,
              "parameters": {"issue_cycles": p(4), "mem_ld_cycles": p(426), "departure_del_coal_cycles": p(4),
                             "departure_del_uncoal_cycles": p(40),
                             "dram_del_coal_mem_cycles": p(128 * 1107e6 / GTX280_BW, "mem cycles")}}
    return as_file({"device": {"name": "GTX 280 (paper 004)", "sm_count": 30, "warp_issue_per_cycle": 0.25,
                               "clocks": {"core_mhz": 1296.0, "mem_mhz": 1107.0}},
                    "power": {"model": "ipp", "sm_count": 30, "sm_scaling": "log", "units": units, "parameters": params,
                              "warp_issue_per_cycle": 0.25},
                    "timing": timing})


def dotp_like(scale: float = 1000.0) -> pd.DataFrame:
    """A bandwidth-limited kernel as in paper 004 Table 4: 16 warps per SM (one 512-thread block per
    SM, as IPP forces), coalesced, arithmetic intensity ~1; 30 blocks, so fewer SMs do the same work."""
    return pd.DataFrame({"workload": ["dotp"], "cnt_fp": [2 * scale], "cnt_int": [1 * scale], "cnt_global": [2 * scale],
                         "blocks": [30.0], "threads_per_block": [512.0], "active_blocks_per_sm": [1.0],
                         "core_mhz": [1296.0], "mem_mhz": [1107.0]})


def test_ipp_bandwidth_limited_kernel_optimal_cores_is_20():
    doc = gtx280_doc()
    res = E.optimal_sms(doc, dotp_like())
    assert res["mwp"] == pytest.approx(10.802, abs=2e-3) and res["cwp"] == 16 and res["n"] == 16
    assert res["case"] == 2
    assert res["optimal_sms_eq34"] == 20                         # eq. (34): 30 x 10.802 / 16 = 20.25
    t = res["table"].set_index("active_sms")
    # the sweep: GIPS/W rises with the SMs until the bandwidth saturates (at 20.25 SMs) and falls
    # after; the sweep's discrete optimum is the first count past saturation (21), eq. 34 rounds down
    # (20). 20 SMs is 3.6 % slower than 21 (1.3 % unsaturated bandwidth, 2.3 % Case 1's extra
    # Comp_cycles) for 0.9 % less power: within 3 % of the optimum in GIPS/W and energy
    assert res["optimal_sms_sweep"] == 21
    assert t.loc[20, "gips_per_w"] == pytest.approx(t["gips_per_w"].max(), rel=0.03)
    assert t.loc[20, "energy_j"] == pytest.approx(t["energy_j"].min(), rel=0.03)
    assert t.loc[30, "time_s"] == pytest.approx(t.loc[22, "time_s"], rel=1e-3)   # saturated: time flat
    assert t.loc[10, "time_s"] == pytest.approx(2 * t.loc[20, "time_s"], rel=1e-6)  # below: time ~ 1/n
    assert np.all(np.diff(t["power_w"].to_numpy()) > 0)
    s = res["savings"]
    # using fewer cores saves energy, most with power gating, least counting idle power
    assert 0 < s["runtime_idle"] < s["runtime"] < s["powergating"]
    n_opt = res["optimal_sms_sweep"]
    assert s["powergating"] == pytest.approx(1 - n_opt * t.loc[n_opt, "time_s"] / (30 * t.loc[30, "time_s"]), rel=1e-9)
    assert s["runtime_idle"] == pytest.approx(1 - t.loc[n_opt, "energy_j"] / t.loc[30, "energy_j"], rel=1e-9)


def test_compute_bound_kernel_uses_all_cores():
    doc = gtx280_doc()
    k = dotp_like().assign(cnt_fp=200000.0)                   # Cmem-like: many FMAs per load
    res = E.optimal_sms(doc, k)
    assert res["optimal_sms_eq34"] == 30 and res["optimal_sms_sweep"] == 30
    assert res["savings"]["runtime"] == pytest.approx(0.0, abs=1e-12)


def _dvfs_doc() -> ParameterFile:
    """A two-domain DVFS power model (voltage rises with the core clock) and a Wang & Chu timing section."""
    core = [600.0, 800.0, 1000.0]
    mem = [800.0, 3500.0]
    par = {"static_core_w": p(20, "W"), "static_mem_w": p(10, "W"), "const_core_w": p(15, "W"), "const_mem_w": p(8, "W"),
           "active_core_w": p(10, "W"), "active_mem_w": p(5, "W"), "w_fp": p(60, "W"), "w_global": p(40, "W"),
           "v_core_600": p(0.8, "1"), "v_core_800": p(0.85, "1"), "v_core_1000": p(1.0, "1"),
           "v_mem_800": p(0.8, "1"), "v_mem_3500": p(1.0, "1")}
    dvfs = {"model": "dvfs", "units": [{"name": "fp", "domain": "core", "ar_form": "linear"},
                                       {"name": "global", "domain": "mem", "ar_form": "linear"}],
            "ref_clocks": {"core_mhz": 1000.0, "mem_mhz": 3500.0},
            "voltage": {"core": {"mhz": core, "params": [f"v_core_{c:g}" for c in core]},
                        "mem": {"mhz": mem, "params": [f"v_mem_{m:g}" for m in mem]}},
            "activity_clocks": None, "temp_ref_c": None, "parameters": par}
    timing = {"model": T.MODEL_NAME, "predictor": "wangchu", "ref_clocks": {"core_mhz": 1000.0, "mem_mhz": 3500.0},
              "sm_count": 24, "max_warps_per_sm": 64, "max_blocks_per_sm": 32,
              "parameters": {"issue_cycles": p(0.25), "mem_ld_cycles": p(370), "dm_lat_a_cycles": p(935),
                             "dm_lat_b_cycles": p(103), "departure_del_coal_cycles": p(5.8),
                             "dram_del_coal_mem_cycles": p(1.5, "mem cycles")}}
    return as_file({"device": {"name": "dvfs test GPU", "sm_count": 24, "warp_issue_per_cycle": 4.0,
                               "clocks": {"core_mhz": 1000.0, "mem_mhz": 3500.0,
                                          "supported": {"core_mhz": core, "mem_mhz": mem}}},
                    "dvfs": dvfs, "power": dvfs, "timing": timing})


def _kernel(fp: float, glob: float) -> pd.DataFrame:
    return pd.DataFrame({"workload": ["k"], "cnt_fp": [fp], "cnt_global": [glob], "blocks": [48.0],
                         "threads_per_block": [256.0], "active_sms": [24.0], "ilp": [4.0]})


def test_clock_table_and_recommendation_memory_bound():
    doc = _dvfs_doc()
    t = E.clock_table(doc, _kernel(100.0, 400.0))
    assert len(t) == 6 and t["default"].sum() == 1
    d = t[t["default"]].iloc[0]
    # memory bound: dropping the core clock costs little time and saves core power
    lo = t[(t["core_mhz"] == 600.0) & (t["mem_mhz"] == 3500.0)].iloc[0]
    assert lo["slowdown"] < 0.05 and lo["energy_j"] < d["energy_j"]
    best = E.recommend(t, "energy", 0.10)
    assert best["slowdown"] <= 0.10 and best["energy_j"] == t[t["slowdown"] <= 0.10]["energy_j"].min()
    assert best["mem_mhz"] == 3500.0                              # the low memory clock is far too slow
    # no slowdown allowed: only pairs at least as fast as the default qualify
    strict = E.recommend(t, "energy", 0.0)
    assert strict["time_s"] <= d["time_s"] * (1 + 1e-12)
    edp = E.recommend(t, "edp", 0.10)
    assert edp["edp_js"] == t[t["slowdown"] <= 0.10]["edp_js"].min()
    with pytest.raises(BadInputError, match="objective must be one of energy, edp"):
        E.recommend(t, "power")


def test_clock_table_anchors_on_a_measured_time():
    doc = _dvfs_doc()
    k = _kernel(100.0, 400.0)
    model = E.clock_table(doc, k, anchored=False)
    k2 = k.assign(time_s=2.0 * float(model[model["default"]]["time_s"].iloc[0]), core_mhz=1000.0, mem_mhz=3500.0)
    anch = E.clock_table(doc, k2)
    assert np.allclose(anch["time_s"], 2.0 * model["time_s"])
    assert np.allclose(anch["slowdown"], model["slowdown"])
    assert "scaled from the measured" in anch.attrs["time_from"]


def test_compute_bound_kernel_prefers_lower_core_clock_only_within_bound():
    doc = _dvfs_doc()
    t = E.clock_table(doc, _kernel(20000.0, 10.0))
    d = t[t["default"]].iloc[0]
    lo = t[(t["core_mhz"] == 600.0) & (t["mem_mhz"] == 3500.0)].iloc[0]
    assert lo["slowdown"] == pytest.approx(1000 / 600 - 1, rel=0.02)   # time ~ 1/fc
    best = E.recommend(t, "energy", 0.10)
    assert best["core_mhz"] == 1000.0                                   # 800 MHz is 25 % slower
    assert math.isclose(best["time_s"], d["time_s"], rel_tol=0.02)


def _timing_only(doc: ParameterFile) -> ParameterFile:
    return ParameterFile(doc.device, {}, {k: v for k, v in doc.sections.items() if k == "timing"})


def test_clock_table_without_a_power_model_gives_time_only():
    powered = _dvfs_doc()
    doc = _timing_only(powered)
    assert not E.has_power_model(doc) and E.has_power_model(powered)
    k = _kernel(100.0, 400.0)
    t, ref = E.clock_table(doc, k), E.clock_table(powered, k)
    assert list(t.columns) == list(ref.columns)
    assert np.array_equal(t["time_s"], ref["time_s"]) and np.array_equal(t["slowdown"], ref["slowdown"])
    assert t[["power_w", "idle_power_w", "energy_j", "edp_js"]].isna().all().all()
    assert E.NO_POWER_NOTE in t.attrs["notes"] and t.attrs["power"] is None and t.attrs["temperature"] is None
    assert ref.attrs["power"] == "DVFS" and E.NO_POWER_NOTE not in ref.attrs["notes"]
    with pytest.raises(BadInputError, match=r"the clock table has no energy_j \(no power model\)"):
        E.recommend(t, "energy")
    # memory bound, 10 % allowed: 600/3500 (0.6 + 1.0 of the top clocks) beats 800/3500 and 1000/3500;
    # 800 MHz memory is far too slow
    best = E.recommend(t, "time", 0.10)
    assert (best["core_mhz"], best["mem_mhz"]) == (600.0, 3500.0)
    assert E.clock_score(t, t.loc[[best.name]]).iloc[0] == pytest.approx(0.6 + 1.0)
    assert (E.fastest(t)["core_mhz"], E.fastest(t)["mem_mhz"]) == (1000.0, 3500.0)


def test_recommend_time_rule_and_ties():
    t = pd.DataFrame({"core_mhz": [1000.0, 500.0, 1000.0, 750.0, 1000.0], "mem_mhz": [4000.0, 4000.0, 2000.0, 3000.0, 1000.0],
                      "time_s": [1.0, 1.05, 1.04, 1.02, 1.5]})
    t["slowdown"] = t["time_s"] - 1.0
    # within 5 %: 1000/4000 (sum 2), 500/4000 (1.5), 1000/2000 (1.5), 750/3000 (1.5): a three-way tie at 1.5 goes
    # to the smallest slowdown (750/3000, +2 %)
    r = E.recommend(t, "time", 0.05)
    assert (r["core_mhz"], r["mem_mhz"]) == (750.0, 3000.0)
    r = E.recommend(t, "time", 0.045)      # 500/4000 (+5 %) out: 750/3000 still
    assert (r["core_mhz"], r["mem_mhz"]) == (750.0, 3000.0)
    r = E.recommend(t, "time", 0.0)        # only the default itself
    assert (r["core_mhz"], r["mem_mhz"]) == (1000.0, 4000.0)
    r = E.recommend(t, "time", 1.0)        # everything: 1000/1000 (1 + 0.25)
    assert (r["core_mhz"], r["mem_mhz"]) == (1000.0, 1000.0)
    t2 = t.assign(slowdown=[0.0, 0.02, 0.02, 0.03, 0.5])   # tie at 1.5 and at +2 %: the lower core clock
    r = E.recommend(t2, "time", 0.05)
    assert (r["core_mhz"], r["mem_mhz"]) == (500.0, 4000.0)


def test_candidate_pairs_without_dvfs_or_supported_clocks():
    doc = _timing_only(_dvfs_doc())
    assert E.candidate_pairs(doc, None) == [(c, m) for c in (600.0, 800.0, 1000.0) for m in (800.0, 3500.0)]
    # no supported clocks: the default clocks; no clocks at all: the timing section's reference, plus user pairs
    bare = ParameterFile({"name": "x", "sm_count": 24}, {}, dict(doc.sections))
    assert E.candidate_pairs(bare, None) == [(1000.0, 3500.0)]
    assert E.candidate_pairs(bare, None, [(900.0, 3500.0), (1000.0, 3500.0)]) == [(900.0, 3500.0), (1000.0, 3500.0)]
    t = E.clock_table(bare, _kernel(100.0, 400.0), pairs=E.candidate_pairs(bare, None, [(700.0, 3500.0)]))
    assert list(zip(t["core_mhz"], t["mem_mhz"])) == [(700.0, 3500.0), (1000.0, 3500.0)]
    assert list(t["default"]) == [False, True]
    with pytest.raises(BadInputError, match="lists no clocks and it has no timing section"):
        E.candidate_pairs(ParameterFile({"name": "x"}, {}, {}), None)


def test_default_pair_snaps_onto_its_measured_level():
    doc = _timing_only(_dvfs_doc())
    doc.device["clocks"] = {**doc.device["clocks"], "core_mhz": 1004.0}   # requested 1004, measured level 1000
    t = E.clock_table(doc, _kernel(100.0, 400.0))
    assert len(t) == 6 and t["default"].sum() == 1
    assert t.loc[t["default"], "core_mhz"].iloc[0] == 1000.0
    doc.device["clocks"]["core_mhz"] = 1020.0                              # 2 %: another level, kept apart
    t = E.clock_table(doc, _kernel(100.0, 400.0))
    assert len(t) == 7 and t.loc[t["default"], "core_mhz"].iloc[0] == 1020.0


def test_power_gated_power_is_the_full_chips_share_of_the_active_sms():
    """Power gating switches the idle SMs off: n of N SMs draw n/N of the all-SM power (IPP sec. 6.4). The
    savings test is blind to the divisor (a ratio of two counts, N - 1 cancels): with ``/ (n_sm - 1)``
    the 30-SM row drew 30/29 of the chip's own power and every row 3.4 % too much."""
    t = E.sm_sweep(gtx280_doc(), dotp_like()).set_index("active_sms")
    p_all = t.loc[30, "power_w"]
    assert t.loc[30, "powergated_power_w"] == pytest.approx(p_all, rel=1e-12)
    for n in (1, 10, 15, 21):
        assert t.loc[n, "powergated_power_w"] == pytest.approx(p_all * n / 30, rel=1e-12)
        assert t.loc[n, "powergated_energy_j"] == pytest.approx(p_all * n / 30 * t.loc[n, "time_s"], rel=1e-12)
