"""What the standard campaign recovers on each virtual GPU preset: every parameter that has a ground truth,
judged by the uncertainty the parameter file states for it (tests/recovery_rule.py: within 4 total
standard errors, the combination where the file declares its members not separately determined, a
physical bound for the pole count), never a blanket percentage.

The ground truth is read here, by the test, never by the fitter.
"""

from __future__ import annotations

import json
import os

import pytest

from recovery_rule import COUNT_ROWS, combinations_of, failures, judge

PRESETS = ("gtx280", "gtx580", "titanx")

#: assertions that fail today, each a defect of the stated uncertainty that another issue owns: listed so
#: that the test fails on any other failure, and on these once they are fixed (then remove them here)
KNOWN = {
    # the combination mu + 0.0133 lambda is stated +/- 0.0039 (total) but misses its truth by 0.0174
    # (4.4 x): the combination's total error is its members' statistical one scaled by their largest
    # total/statistical ratio (calib.fit.uncertainty.determined_combinations), which does not reach the
    # discrepancy between 5 fitted steps and the plane through the physics' steady rises (issue 29)
    "gtx280": {"thermal.[1 mu_c_per_w + 0.0133 lambda_c]"},
}


def _run(tmp_path_factory, preset: str, campaign: str = "standard") -> tuple[dict, dict]:
    from calib.cli import main

    d = tmp_path_factory.mktemp(f"{preset}-{campaign}")
    cwd = os.getcwd()
    os.chdir(d)
    try:
        assert main(["run", "--quiet", "--campaign", campaign, "--name", "s", "--device", f"sim:{preset}"]) == 0
    finally:
        os.chdir(cwd)
    return (json.loads((d / "fitted" / "s.recovery.json").read_text()),
            json.loads((d / "fitted" / "s.json").read_text()))


@pytest.fixture(scope="module", params=PRESETS)
def standard(request, tmp_path_factory):
    rep, doc = _run(tmp_path_factory, request.param)
    return request.param, rep, doc


def test_every_parameter_with_a_truth_is_recovered_within_its_stated_uncertainty(standard):
    """Before: 8 of the 38 rows of gtx280 asserted (none of gtx580's or titanx's), with tolerances of
    2-25 %. Now every row with a truth has a verdict, and the failures are exactly the known ones."""
    preset, rep, doc = standard
    rows = [r for r in rep["parameters"] if r["truth"] is not None]
    verdicts = judge(rows, combinations_of(doc))
    judged = {v.what for v in verdicts}
    combos = combinations_of(doc)
    members = {f"{s}.{n}" for s, cbs in combos.items() for cb in cbs for n in cb["parameters"]}
    unjudged = [r["parameter"] for r in rows if r["parameter"] not in judged and r["parameter"] not in members]
    assert unjudged == []
    assert len(rows) >= {"gtx280": 38, "gtx580": 43, "titanx": 47}[preset]
    bad = {v.what for v in verdicts if not v.ok}
    assert bad == KNOWN.get(preset, set()), failures(verdicts)


def test_heldout_power_mape(standard):
    preset, rep, _ = standard
    assert rep["heldout_rows"] == {"gtx280": 16, "gtx580": 16, "titanx": 176}[preset]
    assert rep["heldout_mape_pct"] <= 3.0


def test_access_rate_forms_follow_the_physics(standard):
    """Each unit's access-rate function (linear or log) is the one its physics resembles, or the data cannot
    tell: the units whose form differs, flipped to the physics' forms, make a structure the file lists among
    its form alternatives (those within chi-square of the chosen one, which its total errors include)."""
    preset, rep, doc = standard
    import re

    # units the file declares the campaign does not separate (REG and FDS, active with every instruction:
    # it publishes their sum) have no determined form either (issue 29)
    tied = {u for g in doc["fit"]["power"].get("collinear_units") or [] for u in g}
    flips = {f"{u} {d['truth']}" for u, d in rep["ar_function_agreement"]["disagree"].items() if u not in tied}
    # labels read "sfu linear + shared activation on (weight 0.07)" (the structure average's weight)
    alts = [{re.sub(r" \(weight [0-9.]+\)$", "", x) for x in a.split(" + ")}
            for a in doc["fit"]["power"].get("discrepancy", {}).get("form_alternatives", [])]
    alts = [{x for x in a if not x.startswith("shared activation")} for a in alts]
    assert not flips or flips in alts, (flips, alts)


def test_gtx580_quick_campaign_recovers_within_its_stated_uncertainty(tmp_path_factory):
    """The quick campaign on the GTX 580, judged by the same rule (it was: every MaxPower within 60 %,
    which passed at 53.9 %). A log access-rate form clamped to 0 on every observed rate would leave
    MaxPower meaningless (seen for the GTX 580's SFU, whose access rate never exceeds 1/8): the fitter
    falls back to linear, and the rule then holds for every unit."""
    rep, doc = _run(tmp_path_factory, "gtx580", "quick")
    verdicts = judge([r for r in rep["parameters"] if r["truth"] is not None], combinations_of(doc))
    assert len([v for v in verdicts if v.what.startswith("power.max_power_")]) >= 10
    assert failures(verdicts) == []
    assert all(v.what not in COUNT_ROWS or v.ok for v in verdicts)
