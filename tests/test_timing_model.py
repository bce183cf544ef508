"""calib.model.timing: the timing section, row inputs, both predictors, and calib predict with a kernel
description (time_s_pred, energy_j_pred)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from calib.core import params as P
from calib.core.errors import BadInputError
from calib.core.params import Section
from calib.model import timing as T


def p(v, unit="cycles"):
    return {"value": float(v), "unit": unit}


def section(predictor="wangchu", **extra):
    par = {"issue_cycles": p(0.25), "mem_ld_cycles": p(370), "dm_lat_a_cycles": p(935), "dm_lat_b_cycles": p(110),
           "departure_del_coal_cycles": p(5.8), "departure_del_uncoal_cycles": p(5.8),
           "dram_del_coal_mem_cycles": p(1.5, "mem cycles"), "l2_lat_cycles": p(200), "l2_del_cycles": p(0.25),
           "sh_lat_cycles": p(24), "l1_lat_cycles": p(82), "inst_lat_cycles": p(6), "m_factor_sfu": p(4, "1"),
           "launch_overhead_s": p(4e-6, "s")}
    par.update(extra)
    return Section.from_json({"model": T.MODEL_NAME, "predictor": predictor,
                              "ref_clocks": {"core_mhz": 975.0, "mem_mhz": 3505.0},
                              "sm_count": 24, "max_warps_per_sm": 64, "max_blocks_per_sm": 32, "parameters": par})


def rows(**cols):
    base = {"workload": "k", "cnt_fp": 4000.0, "cnt_global": 1000.0, "cnt_int": 500.0, "blocks": 96.0,
            "threads_per_block": 256.0}
    base.update(cols)
    n = max(len(v) if isinstance(v, list) else 1 for v in base.values())
    return pd.DataFrame({k: v if isinstance(v, list) else [v] * n for k, v in base.items()})


@pytest.mark.parametrize("pred", ["wangchu", "mwp_cwp"])
def test_time_responds_to_clocks_as_the_physics_would(pred):
    doc = section(pred)
    mem_bound = rows(core_mhz=[975.0, 975.0, 595.0], mem_mhz=[3505.0, 810.0, 3505.0], ilp=4.0)
    t = T.predict_time(doc, mem_bound)
    assert t[1] > 2.5 * t[0]                 # DRAM-bound: ~1/fm
    assert t[2] < 1.25 * t[0]                # the core clock barely matters
    comp = rows(cnt_fp=400000.0, cnt_global=10.0, core_mhz=[975.0, 595.0], mem_mhz=[3505.0, 3505.0])
    t = T.predict_time(doc, comp)
    assert (t[1] - 4e-6) / (t[0] - 4e-6) == pytest.approx(975 / 595, rel=0.01)


def test_l2_hits_uncoalesced_access_and_ilp():
    doc = section()
    t_dram = T.predict_time(doc, rows(ilp=2.0))[0]
    t_l2 = T.predict_time(doc, rows(cnt_global=0.0, cnt_l2=1000.0, ilp=2.0))[0]
    assert t_l2 < t_dram
    # an explicit hit rate overrides the class split
    t_hr = T.predict_time(doc, rows(l2_hit_rate=1.0, ilp=2.0))[0]
    assert t_hr == pytest.approx(t_l2)
    assert T.predict_time(doc, rows(uncoal_frac=1.0, ilp=2.0))[0] > 2 * t_dram
    assert T.predict_time(doc, rows(ilp=4.0, blocks=24.0))[0] < T.predict_time(doc, rows(ilp=1.0, blocks=24.0))[0]


def test_no_l2_parameters_treats_hits_as_dram():
    doc = section()
    del doc.params["l2_lat_cycles"]
    with pytest.warns(UserWarning, match="no L2 latency; L2 hits are treated as DRAM accesses"):
        t = T.predict_time(doc, rows(cnt_global=0.0, cnt_l2=1000.0))
    assert t[0] == pytest.approx(T.predict_time(doc, rows())[0])


def test_anchored_prediction():
    doc = section()
    r = rows(core_mhz=[975.0, 595.0, 1164.0], mem_mhz=[3505.0, 810.0, 4005.0], ilp=2.0)
    t = T.predict_time_anchored(doc, r, 0.01, 975.0, 3505.0)
    plain = T.predict_time(doc, r)
    assert t[0] == pytest.approx(0.01)
    assert t[1] / t[0] == pytest.approx(plain[1] / plain[0])


def test_section_errors():
    with pytest.raises(BadInputError, match="no timing section of model 'mwp_cwp_wangchu'"):
        T.predict_time(Section("ipp", []), rows())
    doc = section()
    del doc.params["issue_cycles"]
    with pytest.raises(BadInputError, match="timing section lacks parameter\\(s\\) issue_cycles"):
        T.predict_time(doc, rows())
    doc = section(predictor="roofline")
    with pytest.raises(BadInputError, match="predictor 'roofline' is not one of"):
        T.predict_time(doc, rows())
    doc = section()
    doc.structure["rounds_form"] = "sometimes"
    with pytest.raises(BadInputError, match="rounds_form 'sometimes' is not one of \\('paper', 'overlap'\\)"):
        T.predict_time(doc, rows())
    doc = section()
    doc.structure["bandwidth_form"] = "ceiling"
    with pytest.raises(BadInputError, match="bandwidth_form 'ceiling' is not one of \\('thesis', 'roofline'\\)"):
        T.predict_time(doc, rows())
    for key, allowed in (("case3_form", "\\('thesis', 'once'\\)"), ("departure_scale", "\\('dram', 'round_trip'\\)")):
        doc = section()
        doc.structure[key] = "often"
        with pytest.raises(BadInputError, match=f"timing section: {key} 'often' is not one of {allowed}"):
            T.predict_time(doc, rows())
    with pytest.raises(BadInputError, match="no per-warp counts"):
        T.predict_time(section(), pd.DataFrame({"workload": ["k"], "blocks": [1.0], "threads_per_block": [32.0]}))
    with pytest.raises(BadInputError, match="column 'blocks' missing"):
        T.predict_time(section(), pd.DataFrame({"workload": ["k"], "cnt_fp": [1.0], "threads_per_block": [32.0]}))


def test_predict_cli_adds_time_and_energy(quick_run, cli, tmp_path):
    from calib.fit.timing import fit_timing
    from calib.segment import session_samples
    from calib.core.session import read_session

    doc = P.load(quick_run / "fitted" / "q.json")
    sess = read_session(quick_run / "logs" / "q")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = session_samples(sess)
        doc["timing"] = fit_timing(df, sess.manifest["device"], sess.manifest.get("plan"))
    doc.save(tmp_path / "p.json")
    # a held-out mix of the session, described as a user would: counts, launch, ILP
    plan = {b["name"]: b for b in sess.manifest["plan"]}
    mix = plan["app_stencil"]
    k = {"name": "app_stencil", "per_warp": mix["per_warp"], "launch": mix["launch"], "ilp": mix["params"]["ilp"],
         "core_mhz": 1296.0, "mem_mhz": 1107.0}
    (tmp_path / "k.json").write_text(json.dumps(k))
    code, _, err = cli("predict", tmp_path / "p.json", tmp_path / "k.json", "-o", tmp_path / "o.csv")
    assert code == 0, err
    o = pd.read_csv(tmp_path / "o.csv")
    measured = df.loc[df["workload"] == "app_stencil", "time_s"].mean()
    assert o["time_s_pred"].iloc[0] == pytest.approx(measured, rel=0.10)
    assert o["energy_j_pred"].iloc[0] == pytest.approx(o["power_w_pred"].iloc[0] * o["time_s_pred"].iloc[0])
    assert np.isfinite(o["power_w_pred"].iloc[0]) and o["power_w_pred"].iloc[0] > 83


def test_rounds_form_overlap_hand_computed():
    """A SAXPY-like kernel (3 loads per warp, 64 rounds of resident blocks): eq. 6 pays agl_lat +
    avr_comp each round, "overlap" once; a file without the field is eq. 6 (older files unchanged)."""
    df = rows(cnt_fp=2.0, cnt_int=0.0, cnt_global=3.0, blocks=24 * 8 * 64, threads_per_block=256.0)
    paper, overlap = section(), section()
    overlap.structure["rounds_form"] = "overlap"
    explicit = section()
    explicit.structure["rounds_form"] = "paper"
    ts = T.compile_section(paper)
    x = T.inputs_from_table(ts, df)
    d = T.wangchu_details(ts, x)
    assert int(d["case"][0]) == 2 and float(d["aw"][0]) == 64.0 and float(d["o_itrs"][0]) == 3.0
    lat = 935 * 975 / 3505 + 110                      # dm_lat at the reference clocks
    dl = 1.5 * 975 / 3505 * 24                        # dram_del_mem x fc/fm x #Asm
    comp = 0.25 * 5 / 3                               # issue cycles of 5 instructions over 3 periods
    t_round = lat + comp + dl * 64 * 3                # eq. (11)
    rounds = 8 * (24 * 8 * 64) / (64 * 24)            # 64
    ovh = 4e-6
    t_paper = T.predict_time(paper, df)[0]
    assert t_paper == pytest.approx(t_round * rounds / 975e6 + ovh, rel=1e-12)
    assert T.predict_time(explicit, df)[0] == t_paper
    t_over = T.predict_time(overlap, df)[0]
    assert t_over == pytest.approx((t_round * rounds - (lat + comp) * (rounds - 1)) / 975e6 + ovh, rel=1e-12)
    # one round: the two forms agree
    one = rows(cnt_fp=2.0, cnt_int=0.0, cnt_global=3.0, blocks=24 * 8, threads_per_block=256.0)
    assert T.predict_time(overlap, one)[0] == T.predict_time(paper, one)[0]
    # MWP/CWP ignores the field
    mp, mo = section("mwp_cwp"), section("mwp_cwp")
    mo.structure["rounds_form"] = "overlap"
    assert T.predict_time(mo, df)[0] == T.predict_time(mp, df)[0]
