"""Edge cases of the spine found in review: each would give a wrong number or a traceback otherwise."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pandas as pd
import pytest

from calib.core import params as P


def _err_line(err: str) -> str:
    lines = [x for x in err.strip().splitlines() if x.startswith("ERROR")]
    assert "Traceback" not in err and len(lines) == 1, err
    return lines[0]


def test_complete_but_unfitted_session_is_fitted_on_rerun(tmp_path, cli):
    from microbench.campaign import Campaign
    from microbench.devices import open_device

    # the campaign finished, then the run died before writing anything under fitted/
    Campaign(open_device("sim:gtx280"), "quick", 0).run(tmp_path / "logs" / "k")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        code, out, err = cli("run", "--campaign", "quick", "--name", "k")
        assert code == 0, err
        assert "session logs/k is complete; fitting it" in out
        assert P.load(tmp_path / "fitted" / "k.json")["power"].model == "ipp"
        # without --name, an unfitted complete session of the same device/campaign/seed is picked up
        (tmp_path / "fitted" / "k.json").unlink()
        code, out, err = cli("run", "--campaign", "quick")
        assert code == 0 and "is complete; fitting it" in out
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize("argv,msg", [
    (["--name", ".."], "invalid session name '..'"),
    (["--name", "a/b"], "invalid session name 'a/b'"),
    (["--seed", "-5"], "invalid seed -5"),
])
def test_run_argument_checks(tmp_path, cli, argv, msg):
    code, out, err = cli("run", "--campaign", "quick", "--logs-dir", tmp_path / "l", *argv)
    assert code == 2 and msg in err
    assert not (tmp_path / "l").exists()


def test_output_dirs_checked_before_the_campaign(tmp_path, cli):
    (tmp_path / "f").write_text("")
    code, out, err = cli("run", "--campaign", "quick", "--logs-dir", tmp_path / "l", "--fitted-dir", tmp_path / "f")
    assert code == 2 and "--fitted-dir" in _err_line(err) and "is not a directory" in err
    assert not (tmp_path / "l").exists()


def test_missing_kernel_time_is_refused(quick_run, tmp_path, cli):
    s = tmp_path / "s"
    shutil.copytree(quick_run / "logs" / "q", s)
    text = (s / "markers.csv").read_text()
    (s / "markers.csv").write_text(text.replace('""kernel_time_s"":', '""kernel_t"":'))
    code, out, err = cli("samples", s, "-o", tmp_path / "o.csv")
    assert code == 2 and "no kernel_time_s" in _err_line(err)
    assert not (tmp_path / "o.csv").exists()


def test_energy_per_launch_matches_power_times_time(quick_run):
    s = pd.read_csv(quick_run / "fitted" / "q.samples.csv")
    k = s[s["role"] == "unit"]
    ratio = k["energy_j"] / (k["power_w"] * k["time_s"])
    assert ratio.mean() == pytest.approx(1.0, abs=0.02)
    w = s["energy_counter_j"] / (s["power_w"] * s["window_s"])
    assert w.mean() == pytest.approx(1.0, abs=0.02)


def test_session_cross_validation_uses_the_ipp_rows(quick_run, cli, tmp_path):
    code, out, err = cli("fit", quick_run / "logs" / "q", "-o", tmp_path / "p.json", "--cv", "3")
    assert code == 0, err
    doc = P.load(tmp_path / "p.json")
    assert doc["power"].stats["cv_mape_pct"] < 5.0


def test_table_fit_takes_sm_count_from_active_sms(quick_run, cli, tmp_path):
    code, out, err = cli("fit", quick_run / "fitted" / "q.samples.csv", "-o", tmp_path / "p.json")
    assert code == 0, err
    doc = P.load(tmp_path / "p.json")
    assert doc["power"].structure["sm_count"] == 30
    assert doc["power"].value("idle_power_w") == pytest.approx(83.0, rel=0.02)
    code, out, err = cli("fit", quick_run / "fitted" / "q.samples.csv", "-o", tmp_path / "p2.json", "--sm-count", "16")
    assert code == 2 and "active_sms' reaches 30, more than --sm-count 16" in err
    code, out, err = cli("fit", quick_run / "logs" / "q", "-o", tmp_path / "p3.json", "--sm-count", "30")
    assert code == 2 and "--sm-count applies to samples tables" in err


def test_kernel_descriptions_with_and_without_active_sms(quick_run, cli, tmp_path):
    ks = [{"name": "a", "per_warp": {"fp": 1000, "global": 10}, "launch": {"blocks": 30, "threads_per_block": 256,
                                                                            "active_sms": 30}, "time_s": 1e-3},
          {"name": "b", "per_warp": {"fp": 1000, "global": 10}, "launch": {"blocks": 30, "threads_per_block": 256},
           "time_s": 1e-3}]
    (tmp_path / "k.json").write_text(json.dumps(ks))
    code, out, err = cli("predict", quick_run / "fitted" / "q.json", tmp_path / "k.json", "-o", tmp_path / "o.csv")
    assert code == 0, err
    o = pd.read_csv(tmp_path / "o.csv")
    assert np.isfinite(o["power_w_pred"]).all()
    assert o["power_w_pred"][0] == pytest.approx(o["power_w_pred"][1])


@pytest.mark.parametrize("field,value,msg", [
    ("core_mhz", True, "field 'core_mhz': True is not a number"),
    ("time_s", "fast", "field 'time_s': 'fast' is not a number"),
])
def test_kernel_description_values(quick_run, cli, tmp_path, field, value, msg):
    k = {"name": "a", "per_warp": {"fp": 10}, "launch": {"blocks": 30, "threads_per_block": 256}, "time_s": 1e-3,
         field: value}
    (tmp_path / "k.json").write_text(json.dumps(k))
    code, out, err = cli("predict", quick_run / "fitted" / "q.json", tmp_path / "k.json", "-o", tmp_path / "o.csv")
    assert code == 2 and msg in _err_line(err)


@pytest.mark.parametrize("text,msg", [
    ("workload,power_w,act_x,temp_c\na,100,0.5,inf\n", "column 'temp_c': inf is not a finite number"),
    ("workload,power_w,act_x\n ,100,0.5\n", "column 'workload': empty name"),
    ("workload,power_w,act_x,energy_j\na,100,0.5,-1\n", "column 'energy_j': -1 is not a valid value"),
    ("workload,power_w,act_x\na,1e300,0.5\n", "column 'power_w': 1e+300 is not a valid value"),
])
def test_values_outside_physical_ranges(tmp_path, cli, text, msg):
    (tmp_path / "t.csv").write_text(text)
    code, out, err = cli("fit", tmp_path / "t.csv", "-o", tmp_path / "p.json")
    assert code == 2 and msg in _err_line(err)


def test_too_little_data_is_bad_input_naming_the_file(tmp_path, cli):
    (tmp_path / "one.csv").write_text("workload,power_w,act_x\na,100,0.5\n")
    code, out, err = cli("fit", tmp_path / "one.csv", "-o", tmp_path / "p.json")
    assert code == 2 and str(tmp_path / "one.csv") in _err_line(err)


@pytest.mark.parametrize("mutate,msg", [
    (lambda d: d["power"]["parameters"].pop("max_power_fp_w"), "max_power_fp_w missing"),
    (lambda d: d["power"]["parameters"].pop("ar_log_a_fp"), "ar_log_a_fp missing"),
    (lambda d: d["power"].update(units=["fp"]), "power.units: expected an object"),
    (lambda d: d["power"]["units"]["fp"].update(ar_function="cubic"), "units.fp.ar_function: 'cubic'"),
    (lambda d: d["power"].update(sm_scaling="cubic"), "sm_scaling: 'cubic'"),
    (lambda d: d["power"].update(sm_count=0), "sm_count: 0 is not a positive integer"),
    (lambda d: d["thermal"]["parameters"].pop("rc_rise_s"), "thermal.parameters: rc_rise_s missing"),
    (lambda d: d["power"]["parameters"]["sm_beta"].update(value=-50.0, min=None), "sm_beta: -50.0"),
])
def test_validate_refuses_what_predict_cannot_use(quick_run, cli, tmp_path, mutate, msg):
    doc = json.loads((quick_run / "fitted" / "q.json").read_text())
    mutate(doc)
    (tmp_path / "p.json").write_text(json.dumps(doc))
    code, out, err = cli("validate", tmp_path / "p.json")
    assert code == 2 and msg in _err_line(err)
