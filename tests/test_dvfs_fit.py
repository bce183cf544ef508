"""DVFS power model: recovery of known coefficients from synthetic tables, prediction, warnings, refusals."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from calib.core import params as P
from calib.core.params import ParameterFile, Section
from calib.core.errors import BadInputError
from calib.fit.dvfs import DvfsPowerFitter
from calib.model.dvfs import (
    breakdown,
    compile_section,
    predict_power,
    relative_voltages,
    scaled_activities,
    transform,
)

def fit_dvfs(df: pd.DataFrame, source: str = "", **settings) -> Section:
    """The fitted section of ``DvfsPowerFitter(**settings).fit(df)``."""
    return DvfsPowerFitter(**settings).fit(df, source=source).section_


def stored(sec: Section) -> Section:
    """A section as a parameter file gives it back (JSON round trip)."""
    return Section.from_json(*sec.to_json())


CORE_MHZ = np.array([600.0, 800.0, 1000.0, 1200.0, 1400.0])
MEM_MHZ = np.array([800.0, 3000.0, 3500.0])
V_CORE = np.array([0.85, 0.88, 0.95, 1.0, 1.10])  # 1 at 1200 MHz (the highest level is 1400: not the reference)
V_MEM = np.array([0.70, 0.95, 1.0])
UNITS = ["fp", "int", "sfu", "dram"]
TRUE = {"static_core_w": 20.0, "static_mem_w": 15.0, "const_core_w": 12.0, "const_mem_w": 18.0,
        "active_core_w": 6.0, "active_mem_w": 4.0, "w_fp": 40.0, "w_int": 30.0, "w_sfu": 25.0, "w_dram": 50.0}


def synthetic(n_workloads: int = 30, noise: float = 0.005, seed: int = 1, form: str = "linear",
              shape: dict | None = None, temp: bool = False, mem_sat: float | None = None,
              vcore_by_mem: np.ndarray | None = None) -> pd.DataFrame:
    """A table from known coefficients: every workload at every (core, mem) pair, ``noise`` relative sd.

    ``vcore_by_mem``: core voltages per (core level, memory level) instead of ``V_CORE`` at every memory
    level."""
    rng = np.random.default_rng(seed)
    acts = rng.uniform(0, 1, (n_workloads, len(UNITS))) * (rng.uniform(0, 1, (n_workloads, len(UNITS))) < 0.7)
    acts[0] = 0.0  # an idle workload, so the active terms are identifiable
    rows = []
    for w in range(n_workloads):
        for ic, fc in enumerate(CORE_MHZ):
            for im, fm in enumerate(MEM_MHZ):
                vc = V_CORE[ic] if vcore_by_mem is None else vcore_by_mem[ic, im]
                rows.append({"workload": f"k{w:02d}", "core_mhz": fc, "mem_mhz": fm,
                             **{f"act_{u}": acts[w, j] for j, u in enumerate(UNITS)}, "_vc": vc, "_vm": V_MEM[im]})
    df = pd.DataFrame(rows)
    U = df[[f"act_{u}" for u in UNITS]].to_numpy()
    if mem_sat is not None:
        df["ref_core_mhz"] = 1200.0
        df["ref_mem_mhz"] = 3500.0
        U = scaled_activities(U, np.array([False, False, False, True]), df.core_mhz.to_numpy(), df.mem_mhz.to_numpy(),
                              df.ref_core_mhz.to_numpy(), df.ref_mem_mhz.to_numpy(), mem_sat)
    G = np.column_stack([transform(U[:, j], form, shape or {}) for j in range(len(UNITS))])
    vc, vm = df.pop("_vc").to_numpy(), df.pop("_vm").to_numpy()
    kc, km = vc**2 * df.core_mhz.to_numpy() / 1200.0, vm**2 * df.mem_mhz.to_numpy() / 3500.0
    raw = df[[f"act_{u}" for u in UNITS]].to_numpy()
    p = (TRUE["static_core_w"] * vc + TRUE["static_mem_w"] * vm
         + kc * (TRUE["const_core_w"] + TRUE["active_core_w"] * (raw[:, :3] > 0).any(axis=1) + G[:, :3] @ [40.0, 30.0, 25.0])
         + km * (TRUE["const_mem_w"] + TRUE["active_mem_w"] * (raw[:, 3] > 0) + G[:, 3] * 50.0))
    if temp:
        t = rng.uniform(40, 80, len(df))
        df["temp_c"] = t
        p = p + 0.3 * (t - t.min()) * vc
    df["power_w"] = p * (1 + noise * rng.standard_normal(len(df)))
    return df


def values(sec) -> dict[str, float]:
    return {p.name: p.value for p in sec.params.values()}


def test_recovers_known_coefficients_with_noise():
    df = synthetic(noise=0.005)
    # activities are per row here: no memory-bound rescaling; the reference clock is 1200 MHz by construction
    sec = fit_dvfs(df, ar_form="linear", activity_clocks="off", ref_clocks=(1200.0, 3500.0))
    v = values(sec)
    errs = {p.name: p.stderr for p in sec.params.values()}
    for name in ("w_fp", "w_int", "w_sfu", "w_dram", "const_core_w", "const_mem_w", "active_core_w", "active_mem_w"):
        assert v[name] == pytest.approx(TRUE[name], rel=0.06, abs=1.0), name
        assert errs[name] is not None and errs[name] > 0
        assert abs(v[name] - TRUE[name]) < 5 * errs[name] + 0.5, name
    for f, vt in zip(CORE_MHZ, V_CORE):
        assert v[f"v_core_{f:g}"] == pytest.approx(vt, abs=0.02)
    for f, vt in zip(MEM_MHZ, V_MEM):
        assert v[f"v_mem_{f:g}"] == pytest.approx(vt, abs=0.03)
    assert sec.stats["mape_pct"] < 0.6  # the noise level (0.5 % sd -> 0.4 % mean absolute)
    assert sec.structure["ref_clocks"] == {"core_mhz": 1200.0, "mem_mhz": 3500.0}


def test_recovers_box_cox_shape_temperature_and_memory_saturation():
    shape = {"ar_bc_a": 0.5, "ar_bc_lambda": 0.4}
    df = synthetic(noise=0.003, form="boxcox", shape=shape, temp=True, mem_sat=0.8, n_workloads=40, seed=3)
    sec = fit_dvfs(df, ar_form="boxcox")  # activity clocks from the ref_ columns
    v = values(sec)
    assert v["ar_bc_a"] == pytest.approx(0.5, abs=0.05)
    assert v["ar_bc_lambda"] == pytest.approx(0.4, abs=0.06)
    assert v["mem_sat"] == pytest.approx(0.8, abs=0.05)
    assert v["leak_core_w_per_c"] == pytest.approx(0.3, abs=0.05)
    assert v["w_dram"] == pytest.approx(50.0, rel=0.08)
    assert sec.structure["activity_clocks"]["source"].startswith("table columns")
    assert sec.structure["temp_ref_c"] == pytest.approx(df.temp_c.min())
    assert sec.stats["mape_pct"] < 0.5
    doc = stored(sec)  # the vectorised predictor gives the fit's own predictions
    pred = predict_power(doc, df)
    assert np.mean(np.abs(pred - df.power_w) / df.power_w) * 100 == pytest.approx(sec.stats["mape_pct"], rel=1e-9)


def test_recovers_thresholded_power_shape():
    shape = {"ar_tp_lambda": 0.5, "ar_tp_threshold": 0.05}
    df = synthetic(noise=0.003, form="tpow", shape=shape, n_workloads=40, seed=4)
    ref = (1200.0, 3500.0)
    fixed = fit_dvfs(df, activity_clocks="off", ref_clocks=ref)  # default: threshold fixed at 0.03, power fitted
    free = fit_dvfs(df, activity_clocks="off", ref_clocks=ref, ar_threshold=None)
    v = values(free)
    assert v["ar_tp_threshold"] == pytest.approx(0.05, abs=0.01)
    assert v["ar_tp_lambda"] == pytest.approx(0.5, abs=0.05)
    assert v["w_fp"] == pytest.approx(40.0, rel=0.05)
    t = next(p for p in fixed.params.values() if p.name == "ar_tp_threshold")
    assert t.value == 0.03 and not t.vary
    assert free.stats["mape_pct"] < 0.4 < fixed.stats["mape_pct"]


def test_transforms_match_their_definitions():
    from calib.model.arfunc import ar_transform

    u = np.array([0.0, 1e-5, 0.001, 0.05, 0.3, 1.0])
    np.testing.assert_allclose(transform(u, "log", {}), ar_transform(u, "log"), rtol=1e-12)
    np.testing.assert_allclose(transform(u, "pow", {"ar_exponent": 0.6}), np.where(u > 0, u**0.6, 0), rtol=1e-12)
    bc = transform(u, "boxcox", {"ar_bc_a": 0.3, "ar_bc_lambda": 0.5})
    np.testing.assert_allclose(bc, np.where(u > 0, np.maximum(0, 1 + 0.3 * (u**0.5 - 1) / 0.5), 0), rtol=1e-12)
    # Box-Cox contains U**p (a = lambda), the linear form (a = lambda = 1) and IPP's log (lambda -> 0)
    np.testing.assert_allclose(transform(u, "boxcox", {"ar_bc_a": 0.6, "ar_bc_lambda": 0.6}),
                               transform(u, "pow", {"ar_exponent": 0.6}), rtol=1e-12)
    np.testing.assert_allclose(transform(u, "boxcox", {"ar_bc_a": 1.0, "ar_bc_lambda": 1.0}), u, rtol=1e-12, atol=1e-15)
    a = 0.1365 / 1.001375
    np.testing.assert_allclose(transform(u, "boxcox", {"ar_bc_a": a, "ar_bc_lambda": 0.0}) * 1.001375,
                               ar_transform(u, "log"), rtol=1e-12)
    # thresholded power: 0 below t, 1 at 1; lam -> 0 is IPP's log with zero crossing t = exp(-b/a)
    tp = transform(u, "tpow", {"ar_tp_lambda": 0.5, "ar_tp_threshold": 0.04})
    np.testing.assert_allclose(tp, np.maximum(0, (u**0.5 - 0.2) / 0.8), rtol=1e-12, atol=1e-15)
    t_ipp = np.exp(-1.001375 / 0.1365)
    np.testing.assert_allclose(transform(u, "tpow", {"ar_tp_lambda": 0.0, "ar_tp_threshold": t_ipp}) * 1.001375,
                               ar_transform(u, "log"), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(transform(u, "tpow", {"ar_tp_lambda": 1.0, "ar_tp_threshold": 0.0}), u, atol=1e-15)


def test_predict_matches_fit_and_document_validates():
    df = synthetic()
    sec = fit_dvfs(df, activity_clocks="off")
    pf = ParameterFile.new({"name": "synthetic", "sm_count": 1}, [])
    pf["power"] = sec
    P.validate(pf.to_dict())
    doc = stored(sec)
    pred = predict_power(doc, df)
    resid = np.abs(pred - df.power_w) / df.power_w * 100
    assert resid.mean() == pytest.approx(sec.stats["mape_pct"], rel=1e-9)
    parts = breakdown(doc, df)
    np.testing.assert_allclose(parts.sum(axis=1).to_numpy(), pred, rtol=1e-12)
    stderr = pf.to_dict()["fit"]["power"]["stderr"]
    assert set(stderr) == {p.name for p in sec.params.values() if p.vary}
    assert all(stderr[n] is not None for n in stderr)


def test_interpolates_between_levels_and_clamps_outside_with_warning():
    df = synthetic()
    doc = stored(fit_dvfs(df, ar_form="linear", activity_clocks="off"))
    row = df[df.workload == "k05"].iloc[[0]].copy()
    grid = pd.concat([row.assign(core_mhz=f, mem_mhz=3500.0) for f in (600, 700, 800, 1400)], ignore_index=True)
    p = predict_power(doc, grid)
    assert p[0] < p[1] < p[2] < p[3]  # monotone in clock
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        predict_power(doc, grid)  # inside the fitted range: no warning
    out = pd.concat([row.assign(core_mhz=1600.0, mem_mhz=3500.0), row.assign(core_mhz=1400.0, mem_mhz=3500.0)])
    with pytest.warns(UserWarning, match=r"1 rows outside the fitted core clock range \[600, 1400\] MHz: voltage clamped"):
        q = predict_power(doc, out)
    # clamped voltage, real clock: only the f factor of the dynamic part grows
    assert q[0] > q[1]
    assert doc.structure["ref_clocks"]["core_mhz"] == 1400.0  # no reference given: the highest level
    assert doc.value("v_core_1200") == pytest.approx(1.0 / 1.10, abs=0.03)


def test_single_clock_table_reduces_to_ipp_form():
    df = synthetic()
    one = df[(df.core_mhz == 1200) & (df.mem_mhz == 3500)].reset_index(drop=True)
    sec = fit_dvfs(one, ar_form="linear", activity_clocks="off")
    names = {p.name for p in sec.params.values() if p.vary}
    assert names == {"const_core_w", "active_core_w", "active_mem_w", "w_fp", "w_int", "w_sfu", "w_dram"}
    v = values(sec)
    # IPP: P = const + sum w_i U_i, with all the constant power lumped into const_core_w
    assert v["const_core_w"] == pytest.approx(TRUE["static_core_w"] + TRUE["static_mem_w"] + TRUE["const_core_w"]
                                             + TRUE["const_mem_w"], rel=0.03)
    assert v["w_fp"] == pytest.approx(40.0, rel=0.05)


def test_warns_about_constant_and_collinear_units():
    df = synthetic()
    df["act_tex"] = 0.0
    df["act_l2"] = np.clip(df["act_fp"] * 0.98 + 0.001, 0, 1)
    sec = fit_dvfs(df, ar_form="linear", activity_clocks="off")
    ws = sec.stats["warnings"]
    assert "act_tex never varies (always 0): its weight cannot be fitted and is fixed at 0" in ws
    assert any(w.startswith("act_fp and act_l2 are collinear over the workloads (r = +1.000)") for w in ws)
    tex = next(p for p in sec.params.values() if p.name == "w_tex")
    assert tex.value == 0.0 and not tex.vary


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.drop(columns=["power_w"]), "required column 'power_w' missing"),
    (lambda d: d.assign(act_fp=np.where(d.index == 7, 1.5, d.act_fp)), "row 8, column 'act_fp': activity 1.5 outside [0, 1]"),
    (lambda d: d.assign(power_w=np.where(d.index == 2, -3.0, d.power_w)), "row 3, column 'power_w'"),
])
def test_refuses_malformed_tables(mutate, message):
    with pytest.raises(BadInputError, match=message.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(").replace(")", r"\)")):
        fit_dvfs(mutate(synthetic(n_workloads=5)), source="t.csv")


def test_activity_clocks_detected_when_activities_repeat_across_clocks():
    df = synthetic(n_workloads=8)
    sec = fit_dvfs(df)
    assert sec.structure["activity_clocks"] == {
        "core_mhz": 1400.0, "mem_mhz": 3500.0,
        "source": "assumed: activities repeat across clocks, taken as measured at the highest clocks"}
    assert "mem_sat" in values(sec)
    # measured at every row's clocks: every activity moves a little with the clocks
    f = (df.core_mhz / 1400.0) * (0.9 + 0.1 * df.mem_mhz / 3500.0)
    varying = df.assign(**{f"act_{u}": df[f"act_{u}"] * f for u in UNITS})
    sec2 = fit_dvfs(varying)
    assert sec2.structure["activity_clocks"] is None and "mem_sat" not in values(sec2)


def test_refuses_unknown_memory_unit_and_form():
    df = synthetic(n_workloads=5)
    with pytest.raises(BadInputError, match="memory unit.s. HBM not in the table"):
        fit_dvfs(df, mem_units={"HBM"})
    with pytest.raises(BadInputError, match=r"DvfsPowerFitter: setting ar_form='cubic' is not valid \(expected one of "
                                            "'linear', 'log', 'pow', 'boxcox', 'tpow'\)"):
        fit_dvfs(df, ar_form="cubic")


def test_alternating_and_joint_reach_the_same_optimum():
    df = synthetic(n_workloads=12)
    a = values(fit_dvfs(df, ar_form="linear", activity_clocks="off", method="joint"))
    b = values(fit_dvfs(df, ar_form="linear", activity_clocks="off", method="alternating"))
    for k in ("w_fp", "w_dram", "v_core_600", "v_mem_800"):
        assert a[k] == pytest.approx(b[k], rel=0.01, abs=0.05)


def test_prediction_of_a_large_table_equals_row_by_row_prediction():
    # the rate itself (>= 1e6 rows/s on one core) is measured by tests/benchmarks/bench_dvfs.py, not asserted here
    df = synthetic()
    doc = stored(fit_dvfs(df, ar_form="linear", activity_clocks="off"))
    big = pd.concat([df] * 400, ignore_index=True)  # 180,000 rows in one call
    p = predict_power(doc, big)
    assert p.shape == (len(big),) and np.all(np.isfinite(p))
    one = np.array([predict_power(doc, df.iloc[[i]])[0] for i in range(0, len(df), 37)])
    np.testing.assert_allclose(p[0:len(df):37], one, rtol=1e-12)
    np.testing.assert_allclose(p[len(df):2 * len(df)], p[:len(df)], rtol=1e-12)


# ------------------------------------------------------------------ model terms added by the generalisation study
#: core voltage per (core level, memory level): at the lowest memory level the curve starts lower and rises
#: earlier (another performance state), as on the GTX Titan X at 810 MHz; reference (1200, 3500) = 1
V_CORE_BY_MEM = np.array([[0.80, 0.96, 1.00],
                          [0.84, 0.96, 1.00],
                          [0.90, 0.97, 1.00],
                          [0.97, 1.00, 1.00],
                          [1.08, 1.10, 1.10]])


def test_recovers_core_voltage_per_memory_level():
    df = synthetic(noise=0.003, vcore_by_mem=V_CORE_BY_MEM, n_workloads=30, seed=5)
    ref = (1200.0, 3500.0)
    sec = fit_dvfs(df, ar_form="linear", activity_clocks="off", ref_clocks=ref)  # default "auto": full grid
    v = values(sec)
    for i, fc in enumerate(CORE_MHZ):
        for j, fm in enumerate(MEM_MHZ):
            name = f"v_core_{fc:g}" + ("" if fm == 3500.0 else f"_mem_{fm:g}")
            assert v[name] == pytest.approx(V_CORE_BY_MEM[i, j], abs=0.015), name
    assert v["w_fp"] == pytest.approx(40.0, rel=0.05)
    assert sec.stats["mape_pct"] < 0.4  # the noise level (0.3 % sd)
    per = sec.structure["voltage"]["core"]["per_mem"]
    assert per["mem_mhz"] == [800.0, 3000.0, 3500.0]
    assert per["params"][2] == sec.structure["voltage"]["core"]["params"]  # the reference level's curve
    shared = fit_dvfs(df, ar_form="linear", activity_clocks="off", ref_clocks=ref, core_voltage="shared")
    assert "per_mem" not in shared.structure["voltage"]["core"]
    assert shared.stats["mape_pct"] > 3 * sec.stats["mape_pct"]  # one curve cannot follow the table
    doc = stored(sec)  # the vectorised predictor gives the fit's own predictions
    pred = predict_power(doc, df)
    assert np.mean(np.abs(pred - df.power_w) / df.power_w) * 100 == pytest.approx(sec.stats["mape_pct"], rel=1e-9)
    np.testing.assert_allclose(breakdown(doc, df).sum(axis=1).to_numpy(), pred, rtol=1e-12)


def test_core_voltage_is_bilinear_between_memory_levels_and_clamped():
    df = synthetic(noise=0.0, vcore_by_mem=V_CORE_BY_MEM, n_workloads=12, seed=6)
    doc = stored(fit_dvfs(df, ar_form="linear", activity_clocks="off", ref_clocks=(1200.0, 3500.0)))
    c = compile_section(doc)
    fc = np.array([600.0, 700.0, 700.0, 1400.0, 500.0, 1200.0])
    fm = np.array([800.0, 800.0, 1900.0, 9000.0, 3250.0, 3500.0])
    got = c.core_volts(fc, fm)
    tab = c.vcore_tab  # fitted: core levels x memory levels
    at = lambda f, j: np.interp(f, CORE_MHZ, tab[:, j])
    want = [tab[0, 0], at(700, 0), 0.5 * (at(700, 0) + at(700, 1)), tab[4, 2], 0.5 * (tab[0, 1] + tab[0, 2]), 1.0]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(tab, V_CORE_BY_MEM, atol=2e-3)
    curves = relative_voltages(doc)
    assert curves["core"] == curves["core_mem_3500"] and [v for _, v in curves["core_mem_800"]] == tab[:, 0].tolist()
    bad = stored(doc)
    bad.structure["voltage"]["core"]["per_mem"] = {"mem_mhz": [800.0, 3000.0], "params": [["v_core_600"]]}
    with pytest.raises(BadInputError, match="voltage.core.per_mem needs increasing memory levels and one voltage "
                                            "per core level on each"):
        compile_section(bad)


def test_core_voltage_auto_keeps_one_curve_on_an_incomplete_grid():
    df = synthetic(n_workloads=10)
    # the default core clock measured at the default memory clock only (as the virtual-GPU sessions do)
    part = df[(df.core_mhz != 1200.0) | (df.mem_mhz == 3500.0)]
    sec = fit_dvfs(part, ar_form="linear", activity_clocks="off")
    assert "per_mem" not in sec.structure["voltage"]["core"]
    assert not any(p.name.startswith("v_core_") and "_mem_" in p.name for p in sec.params.values())
    forced = fit_dvfs(part, ar_form="linear", activity_clocks="off", core_voltage="per_mem")
    assert ("core voltage per memory level: 2 of 15 (core, memory) clock pairs have no rows; those voltages are "
            "held only by the monotonicity bounds") in forced.stats["warnings"]
    with pytest.raises(BadInputError, match=r"DvfsPowerFitter: setting core_voltage='pstate' is not valid \(expected "
                                            "one of 'auto', 'per_mem', 'shared'\)"):
        fit_dvfs(part, core_voltage="pstate")


def test_settings_of_an_older_file_refit_without_the_retired_options():
    """Files fitted before issue 28 record the options the Titan X study rejected (ridge, ar_shape,
    total_terms, loss, loss_scale, static_exp) at their defaults: a refit from them (calib verify-bundle)
    must drop them, not crash on an unknown keyword; a retired option at a value that changed the fit
    is refused, naming it."""
    old = {"mem_units": None, "ar_form": "linear", "activity_clocks": "off", "ref_clocks": [1200.0, 3500.0],
           "ridge": 0.0, "ar_shape": "shared", "total_terms": False, "loss": "linear", "loss_scale": 0.05,
           "static_exp": False}
    f = DvfsPowerFitter.from_settings(old)
    assert f.get_params()["ar_form"] == "linear" and "ridge" not in f.get_params()
    sec = f.fit(synthetic(n_workloads=8)).section_
    assert values(sec)["w_fp"] == pytest.approx(40.0, rel=0.1)
    with pytest.raises(BadInputError, match=r"DvfsPowerFitter: setting ridge=0.03 is not supported by this version"):
        DvfsPowerFitter.from_settings({**old, "ridge": 0.03})
