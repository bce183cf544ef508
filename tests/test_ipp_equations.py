"""The IPP equations reproduce hand-computed values (paper 004; hong-thesis-2012-notes.md sec. 7)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from calib.core.params import ParameterFile, Section
from calib.model.arfunc import IPP_A, IPP_B, LINEAR, LOG, ar_transform
from calib.model.ipp import IppPowerModel, sm_scale
from calib.model.thermal import ThermalModel
from calib.core.units import mem_intensity, unit_counts

# Table 8 of the thesis (GTX280), per SM except global/local
TABLE8 = {"fp": (0.2, LOG), "reg": (0.3, LOG), "alu": (0.2, LINEAR), "sfu": (0.5, LINEAR), "int": (0.25, LOG),
          "fds": (0.5, LOG), "shared": (1.0, LINEAR), "tex": (0.9, LOG), "const": (0.4, LOG),
          "global": (52.0, LOG), "local": (52.0, LOG)}


@pytest.mark.parametrize("ar,expected", [(1.0, 1.0014), (0.5, 0.9068), (0.2, 0.7817), (0.1, 0.6871),
                                         (0.05, 0.5925), (0.01, 0.3728), (0.001, 0.0585)])
def test_speclinear_values(ar, expected):
    assert float(ar_transform(ar, LOG, IPP_A, IPP_B)) == pytest.approx(expected, abs=5e-5)


def test_speclinear_clamped_below_root_and_zero_at_zero():
    root = math.exp(-IPP_B / IPP_A)
    assert root == pytest.approx(6.516e-4, rel=1e-3)
    assert float(ar_transform(root * 0.5, LOG, IPP_A, IPP_B)) == 0.0
    assert float(ar_transform(0.0, LOG, IPP_A, IPP_B)) == 0.0
    assert float(ar_transform(root * 1.01, LOG, IPP_A, IPP_B)) > 0.0


@pytest.mark.parametrize("n,expected", [(1, 0.1451), (2, 0.2287), (5, 0.4122), (10, 0.6092), (15, 0.7443),
                                        (19, 0.8284), (20, 0.8472), (25, 0.9303), (30, 1.0), (0, 0.0414)])
def test_log_sm_factor_gtx280(n, expected):
    assert float(sm_scale("log", 1.1, np.array([n]), 30)[0]) == pytest.approx(expected, abs=5e-5)


def test_log_sm_factor_gtx580():
    assert float(sm_scale("log", 1.1, 1, 16)) == pytest.approx(0.2191, abs=5e-5)
    assert float(sm_scale("log", 1.1, 8, 16)) == pytest.approx(0.7443, abs=5e-5)


def _table8_doc(with_thermal: bool = False) -> ParameterFile:
    params = {"idle_power_w": {"value": 83.0, "unit": "W"}, "const_sm_power_w": {"value": 0.813, "unit": "W"},
              "activation_power_w": {"value": 0.0, "unit": "W"}, "ar_log_b": {"value": IPP_B, "unit": "1"},
              "sm_beta": {"value": 1.1, "unit": "1"}}
    units = {}
    for u, (mp, form) in TABLE8.items():
        params[f"max_power_{u}_w"] = {"value": mp, "unit": "W"}
        if form == LOG:
            params[f"ar_log_a_{u}"] = {"value": IPP_A, "unit": "1"}
        units[u] = {"scope": "chip" if u in ("global", "local") else "sm", "ar_function": form, "domain": "core"}
    doc = {"power": {"model": "ipp", "sm_count": 30, "sm_scaling": "log", "units": units, "parameters": params}}
    if with_thermal:
        doc["thermal"] = {"model": "ipp-thermal", "parameters": {
            k: {"value": v, "unit": u} for k, v, u in [("idle_temp_c", 57.0, "C"), ("rc_rise_s", 35.0, "s"),
                                                       ("rc_decay_s", 60.0, "s"), ("mu_c_per_w", 0.12, "C/W"),
                                                       ("lambda_c", 5.5, "C"), ("rho_c", 21.505, "C"),
                                                       ("sigma_w_per_c", 10 / 22, "W/C")]}}
    return ParameterFile({"name": "GTX280 (Table 8)", "sm_count": 30}, {},
                         {k: Section.from_json(v) for k, v in doc.items()})


def _row(**act) -> pd.DataFrame:
    d = {"workload": ["k"], "active_sms": [30]}
    for u in TABLE8:
        d[f"act_{u}"] = [act.get(u, 0.0)]
    return pd.DataFrame(d)


def test_pure_fp_kernel_is_54_4_w_runtime():
    # thesis notes sec. 2.2 [DERIVED]: FP=REG=FDS at AR 1, others 0 -> (0.2+0.3+0.5+0.813) x 30 = 54.4 W,
    # using MaxPower at AR = 1 (the SpecLinear value at 1 is 1.001375, so 0.2 etc. scale by that factor)
    m = IppPowerModel.from_file(_table8_doc())
    p = float(m.predict(_row(fp=1.0, reg=1.0, fds=1.0))[0])
    expected = 83.0 + 30 * ((0.2 + 0.3 + 0.5) * IPP_B + 0.813)
    assert p == pytest.approx(expected, abs=1e-9)
    assert p - 83.0 == pytest.approx(54.43, abs=0.05)


def test_one_sm_runs_at_log_factor_of_full_runtime_power():
    m = IppPowerModel.from_file(_table8_doc())
    full = _row(fp=1.0, reg=1.0, fds=1.0, **{"global": 0.1})
    one = full.copy()
    one["active_sms"] = 1
    rt_full = float(m.predict(full)[0]) - 83.0
    rt_one = float(m.predict(one)[0]) - 83.0
    assert rt_one / rt_full == pytest.approx(0.1451, abs=5e-5)


def test_global_memory_is_chip_level():
    m = IppPowerModel.from_file(_table8_doc())
    p = float(m.predict(_row(**{"global": 0.1}))[0]) - 83.0 - 30 * 0.813
    assert p == pytest.approx(52.0 * (IPP_A * math.log(0.1) + IPP_B), rel=1e-12)


def test_static_power_rise_with_temperature():
    doc = _table8_doc(with_thermal=True)
    m = IppPowerModel.from_file(doc)
    cold = _row(fp=1.0, reg=1.0, fds=1.0)
    cold["temp_c"] = 57.0
    hot = cold.copy()
    hot["temp_c"] = 79.0
    assert float(m.predict(hot)[0]) - float(m.predict(cold)[0]) == pytest.approx(10.0, abs=1e-9)
    hot["temp_c"] = 68.0  # INT benchmark 57 -> 68 C: +5 W
    assert float(m.predict(hot)[0]) - float(m.predict(cold)[0]) == pytest.approx(5.0, abs=1e-9)


def test_temperature_model_hand_values():
    tm = ThermalModel(_table8_doc(with_thermal=True)["thermal"])
    # RP = 100 W, MI = 0.2 -> rise 21.8 C -> 78.8 C
    assert float(tm.max_rise_c(100.0, 0.2)) == pytest.approx(21.801, abs=1e-3)
    t = np.array([35.0, 175.0])
    temps = tm.temperature_rise(t, 100.0, 0.2)
    frac = (temps - 57.0) / 21.801
    assert frac[0] == pytest.approx(1 - math.exp(-1), abs=1e-4)      # 63 % at one RC
    assert frac[1] == pytest.approx(0.99326, abs=1e-4)               # 99.3 % at five RC
    dec = tm.temperature_decay(np.array([60.0]), 78.8)
    assert float(dec[0]) == pytest.approx(57.0 + 21.8 * math.exp(-1), abs=1e-9)
    p = tm.power_over_time(np.array([0.0, 1e9]), 83.0, 100.0, 0.2)
    assert p[0] == pytest.approx(183.0)
    assert p[1] == pytest.approx(183.0 + 10 / 22 * 21.801, abs=1e-6)


def test_unit_counts_follow_table1():
    c = unit_counts({"fp": 10, "int": 2, "ctrl": 3, "global": 1, "shared": 4})
    assert c["fp"] == 10 and c["int"] == 2 and c["global"] == 1 and c["shared"] == 4
    assert c["reg"] == 17          # everything except control flow touches the register file
    assert c["fds"] == 20          # every instruction is fetched/decoded/scheduled
    with pytest.raises(KeyError, match="unknown instruction class 'fpu'"):
        unit_counts({"fpu": 1})


def test_mem_intensity_eq20():
    assert mem_intensity({"fp": 8, "global": 2, "local": 1, "int": 4}) == pytest.approx(3 / 12)
    assert mem_intensity({"fp": 8}) == 0.0


def test_access_rate_from_counts_eq10():
    """AR = DAC x warps_per_SM / (cycles / 4): 1000 FP per warp, 8 warps/SM, 8000 cycles -> 4000/2000."""
    from calib.core.activity import ActivityBasis, table_access_rates

    basis = ActivityBasis(("fp",), sm_count=30, warp_issue_per_cycle=0.25)
    df = pd.DataFrame({"cnt_fp": [1000.0], "threads_per_block": [256.0], "blocks": [30.0], "active_sms": [30.0],
                       "core_mhz": [1000.0], "time_s": [32000 / 1e9]})
    a = table_access_rates(basis, df)
    assert a["fp"][0] == pytest.approx(1000 * 8 / (32000 / 4))


def test_access_rate_from_counts_eq10_below_saturation():
    """The same kernel 4x slower: AR = 1000 x 8 / (128000 cycles x 0.25) = 0.25 by hand. The test above sits
    at AR = 1, the clip's bound, so Exec_cycles with MHz taken as kHz (1000x too few cycles, AR 1000 clipped
    to 1) passed it; here it gives 1 instead of 0.25, and a 1.1x clock error 0.227."""
    from calib.core.activity import ActivityBasis, table_access_rates

    basis = ActivityBasis(("fp",), sm_count=30, warp_issue_per_cycle=0.25)
    df = pd.DataFrame({"cnt_fp": [1000.0], "threads_per_block": [256.0], "blocks": [30.0], "active_sms": [30.0],
                       "core_mhz": [1000.0], "time_s": [128000 / 1e9]})
    assert table_access_rates(basis, df)["fp"][0] == pytest.approx(0.25, rel=1e-12)


def test_vectorised_counts_match_unit_counts():
    from calib.core.activity import count_columns
    from calib.model.predict import mem_intensity_array

    rows = [{"fp": 10, "int": 2, "ctrl": 3, "global": 1, "shared": 4}, {"fp": 8, "global": 2, "local": 1, "int": 4},
            {"alu": 5}]
    df = pd.DataFrame([{f"cnt_{k}": v for k, v in r.items()} for r in rows]).fillna(0.0)
    arr = unit_counts(count_columns(df), size=len(df))
    for i, r in enumerate(rows):
        ref = unit_counts(r)
        for u in ("fp", "int", "reg", "fds", "global"):
            assert arr.get(u, np.zeros(3))[i] == ref[u]
    assert list(mem_intensity_array(df)) == [mem_intensity(r) for r in rows]


# -- shared activation (calib.model.ipp module docstring) ------------------------------------------

def _shared_doc(gamma: float = 0.2) -> ParameterFile:
    """Table 8 with the shared-activation term over the SM units with the log function (FP, INT, TEX,
    CONST; not REG/FDS, not the chip-level memory): share ``gamma``."""
    doc = _table8_doc().to_dict()
    doc["power"]["shared_activation"] = {"units": ["fp", "int", "const", "tex"]}
    doc["power"]["parameters"]["shared_activation_frac"] = {"value": gamma, "unit": "1"}
    return ParameterFile.from_dict(doc, check=False)


def test_shared_activation_by_hand():
    """Two pooled units together draw sum P_u (1 - gamma (1 - U/F)), U = 1 - (1-f1)(1-f2), F = f1 + f2;
    a unit alone draws its own MaxPower x AR' (so MaxPower stays the unit's own power at AR = 1), and a
    unit outside the pool (REG) is untouched. Catches a term that discounts a lone unit (the MaxPowers
    would then absorb it) or that is missing from the model the files are read with."""
    m = IppPowerModel.from_file(_shared_doc(0.2))
    base = 83.0 + 30 * 0.813
    f_fp, f_int = ar_transform(0.5, LOG), ar_transform(0.25, LOG)
    p_fp, p_int = 30 * 0.2 * f_fp, 30 * 0.25 * f_int
    alone = float(m.predict(_row(fp=0.5))[0])
    assert alone == pytest.approx(base + p_fp, rel=1e-12)
    u = 1 - (1 - f_fp) * (1 - f_int)
    r = 1 - u / (f_fp + f_int)
    both = float(m.predict(_row(fp=0.5, int=0.25))[0])
    assert both == pytest.approx(base + (p_fp + p_int) * (1 - 0.2 * r), rel=1e-12)
    # by hand: f_fp = 1.001375 + 0.1365 ln 0.5 = 0.906759, f_int = 1.001375 + 0.1365 ln 0.25 = 0.812144,
    # U = 1 - 0.093241 x 0.187856 = 0.982484, F = 1.718903, r = 1 - U/F = 0.428424
    assert r == pytest.approx(0.428424, abs=1e-5)
    reg = float(m.predict(_row(fp=0.5, int=0.25, reg=0.75))[0])
    assert reg - both == pytest.approx(30 * 0.3 * ar_transform(0.75, LOG), rel=1e-12)


def test_files_without_shared_activation_predict_as_before():
    """A file written before the term (no ``shared_activation`` in its structure) predicts the additive
    IPP sum, and a share of 0 equals it; the term cannot be switched on by a parameter alone."""
    add = IppPowerModel.from_file(_table8_doc())
    rows = pd.concat([_row(fp=0.5, int=0.25, tex=0.3), _row(fp=0.9, const=0.4)], ignore_index=True)
    p_add = add.predict(rows)
    f = {u: ar_transform(a, LOG) for u, a in (("fp", 0.5), ("int", 0.25), ("tex", 0.3))}
    assert p_add[0] == pytest.approx(83.0 + 30 * (0.813 + 0.2 * f["fp"] + 0.25 * f["int"] + 0.9 * f["tex"]), rel=1e-12)
    assert IppPowerModel.from_file(_shared_doc(0.0)).predict(rows) == pytest.approx(p_add, rel=1e-12)
    assert np.all(IppPowerModel.from_file(_shared_doc(0.3)).predict(rows) < p_add)
    from calib.core.errors import SchemaError

    doc = _table8_doc().to_dict()
    doc["power"]["parameters"]["shared_activation_frac"] = {"value": 0.2, "unit": "1"}
    with pytest.raises(SchemaError, match="shared_activation_frac without the structure's shared_activation"):
        IppPowerModel.from_file(ParameterFile.from_dict(doc, check=False))


def _dispatch_doc(max_power_w: float = 0.6, a: float = 0.2) -> ParameterFile:
    doc = _table8_doc().to_dict()
    doc["power"]["units"]["dispatch"] = {"scope": "sm", "ar_function": LOG, "domain": "core"}
    doc["power"]["dispatch_stage"] = {"units": ["fp", "int", "sfu"]}
    doc["power"]["parameters"]["max_power_dispatch_w"] = {"value": max_power_w, "unit": "W"}
    doc["power"]["parameters"]["ar_log_a_dispatch"] = {"value": a, "unit": "1"}
    return ParameterFile.from_dict(doc, check=False)


def test_dispatch_stage_by_hand():
    """The dispatch stage is a per-SM unit whose access rate is the pooled units' summed access rate, at
    most 1: FP at 0.5 and INT at 0.25 drive it at 0.75 once (not twice), the stage adds
    30 x 0.6 x (1.001375 + 0.2 ln 0.75) W; a sum above 1 is held at 1; a unit outside its pool (TEX)
    does not drive it; a file without the stage predicts the additive sum; the structure must name the
    units that drive the stage."""
    from calib.core.errors import SchemaError

    add, iss = IppPowerModel.from_file(_table8_doc()), IppPowerModel.from_file(_dispatch_doc())
    rows = pd.concat([_row(fp=0.5, int=0.25), _row(fp=0.9, int=0.6), _row(tex=0.3)], ignore_index=True)
    extra = iss.predict(rows) - add.predict(rows)
    assert extra[0] == pytest.approx(30 * 0.6 * (1.001375 + 0.2 * np.log(0.75)), rel=1e-12)
    assert extra[1] == pytest.approx(30 * 0.6 * 1.001375, rel=1e-12)
    assert extra[2] == 0.0
    # without the structure key a unit named "dispatch" is an ordinary unit: its activity is the table's
    doc = _dispatch_doc().to_dict()
    del doc["power"]["dispatch_stage"]
    plain = IppPowerModel.from_file(ParameterFile.from_dict(doc, check=False))
    row = _row(fp=0.5, int=0.25).assign(act_dispatch=0.5)
    assert float(plain.predict(row)[0] - add.predict(row)[0]) == pytest.approx(
        30 * 0.6 * (1.001375 + 0.2 * np.log(0.5)), rel=1e-12)
    doc = _dispatch_doc().to_dict()
    doc["power"]["dispatch_stage"] = {"units": ["fp", "nope"]}
    with pytest.raises(SchemaError, match="dispatch_stage: expected"):
        IppPowerModel.from_file(ParameterFile.from_dict(doc, check=False))


def test_dispatch_stage_jacobian_matches_finite_differences():
    """d power / d (max_power_dispatch_w, ar_log_a_dispatch) from :func:`calib.model.ipp.jacobian` equals the
    central finite difference of :func:`calib.model.ipp.power` (the stage is an ordinary unit of the
    equations once its access rate is derived)."""
    from calib.model import ipp as model

    pf = _dispatch_doc()
    sec = pf["power"]
    rows = pd.concat([_row(fp=0.5, int=0.25), _row(fp=0.05, sfu=0.02), _row(int=0.9)], ignore_index=True)
    act = {u: rows[f"act_{u}"].to_numpy(float) for u in TABLE8}
    d = model.table_design(sec.structure, rows, act)
    vals = sec.values()
    jac = model.jacobian(vals, d)
    for n in ("max_power_dispatch_w", "ar_log_a_dispatch"):
        h = 1e-6 * max(1.0, abs(vals[n]))
        up, dn = dict(vals, **{n: vals[n] + h}), dict(vals, **{n: vals[n] - h})
        fd = (model.power(up, d) - model.power(dn, d)) / (2 * h)
        assert jac[n] == pytest.approx(fd, rel=1e-6, abs=1e-9), n
