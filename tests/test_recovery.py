"""What the default campaign recovers on the virtual GTX 280 (issue 2's tolerances).

The ground truth is read here, by the test, never by the fitter.
"""

from __future__ import annotations

import json
import os

import pytest


@pytest.fixture(scope="module")
def standard_gtx280(tmp_path_factory):
    from calib.cli import main

    d = tmp_path_factory.mktemp("std")
    cwd = os.getcwd()
    os.chdir(d)
    try:
        assert main(["run", "--quiet", "--name", "s", "--device", "sim:gtx280"]) == 0   # default campaign
    finally:
        os.chdir(cwd)
    return json.loads((d / "fitted" / "s.recovery.json").read_text())


def _err(rep, name):
    row = next(r for r in rep["parameters"] if r["parameter"] == name)
    return abs(row["error_pct"])


@pytest.mark.parametrize("name,tol_pct", [
    ("power.idle_power_w", 2.0),
    ("thermal.rc_rise_s", 15.0),
    ("thermal.rc_decay_s", 15.0),
    ("thermal.sigma_w_per_c", 25.0),
    ("power.max_power_global_w", 15.0),
    ("power.sm_beta", 5.0),
    ("thermal.idle_temp_c", 2.0),
    ("thermal.fan_max_power_w", 25.0),
])
def test_recovery_within_tolerance(standard_gtx280, name, tol_pct):
    assert _err(standard_gtx280, name) <= tol_pct


def test_heldout_power_mape(standard_gtx280):
    assert standard_gtx280["heldout_rows"] == 16
    assert standard_gtx280["heldout_mape_pct"] <= 3.0


def test_access_rate_forms_follow_the_physics(standard_gtx280):
    agr = standard_gtx280["ar_function_agreement"]
    assert agr["agree"] >= agr["of"] - 1


def test_gtx580_no_unit_is_fitted_to_a_meaningless_value(tmp_path_factory):
    """A log access-rate form clamped to 0 on every observed rate would leave MaxPower meaningless
    (seen for GTX580's SFU, whose access rate never exceeds 1/8): the fitter falls back to linear."""
    from calib.cli import main

    d = tmp_path_factory.mktemp("g580")
    cwd = os.getcwd()
    os.chdir(d)
    try:
        assert main(["run", "--quiet", "--campaign", "quick", "--name", "s", "--device", "sim:gtx580"]) == 0
    finally:
        os.chdir(cwd)
    rep = json.loads((d / "fitted" / "s.recovery.json").read_text())
    errs = {r["parameter"]: r["error_pct"] for r in rep["parameters"] if r["error_pct"] is not None}
    assert abs(errs["power.idle_power_w"]) < 2.0
    assert abs(errs["power.activation_power_w"]) < 5.0
    worst = max(abs(v) for k, v in errs.items() if k.startswith("power.max_power_"))
    assert worst < 60.0, errs
