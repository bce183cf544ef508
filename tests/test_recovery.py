"""What the standard campaign recovers on each virtual GPU preset: every parameter that has a ground truth,
judged by the uncertainty the parameter file states for it (tests/recovery_rule.py: within 4 total
standard errors, the combination where the file declares its members not separately determined, a
physical bound for the pole count), never a blanket percentage.

The ground truth is read here, by the test, never by the fitter.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from recovery_rule import (COUNT_ROWS, KNOWN_FAILURES, KNOWN_HELDOUT_FAILURES, KNOWN_FORM_FAILURES, KNOWN_QUICK_FAILURES,
                           STALE_REFERENCE_FAILURES, combinations_of, failures, judge)

PRESETS = ("gtx280", "gtx580", "titanx", "mi250x", "mi300x")
FITTED = Path(__file__).resolve().parents[1] / "fitted"
RUNS: dict[str, Path] = {}   # each run's directory (its samples table)


def _run(tmp_path_factory, preset: str, campaign: str = "standard") -> tuple[dict, dict]:
    from calib.cli import main

    d = tmp_path_factory.mktemp(f"{preset}-{campaign}")
    cwd = os.getcwd()
    os.chdir(d)
    try:
        assert main(["run", "--quiet", "--campaign", campaign, "--name", "s", "--device", f"sim:{preset}"]) == 0
    finally:
        os.chdir(cwd)
    RUNS[preset if campaign == "standard" else f"{preset}-{campaign}"] = d
    return (json.loads((d / "fitted" / "s.recovery.json").read_text()),
            json.loads((d / "fitted" / "s.json").read_text()))


@pytest.fixture(scope="module", params=PRESETS)
def standard(request, tmp_path_factory):
    rep, doc = _run(tmp_path_factory, request.param)
    return request.param, rep, doc, RUNS[request.param]


def test_every_parameter_with_a_truth_is_recovered_within_its_stated_uncertainty(standard):
    """Before: 8 of the 38 rows of gtx280 asserted (none of gtx580's or titanx's), with tolerances of
    2-25 %. Now every row with a truth has a verdict, and the failures are exactly the known ones."""
    preset, rep, doc, _ = standard
    rows = [r for r in rep["parameters"] if r["truth"] is not None]
    verdicts = judge(rows, combinations_of(doc))
    judged = {v.what for v in verdicts}
    combos = combinations_of(doc)
    members = {f"{s}.{n}" for s, cbs in combos.items() for cb in cbs for n in cb["parameters"]}
    unjudged = [r["parameter"] for r in rows if r["parameter"] not in judged and r["parameter"] not in members]
    assert unjudged == []
    assert len(rows) >= {"gtx280": 38, "gtx580": 43, "titanx": 47, "mi250x": 45, "mi300x": 45}[preset]
    bad = {v.what for v in verdicts if not v.ok}
    assert bad == set(KNOWN_FAILURES.get(preset, {})), failures(verdicts)


@pytest.mark.parametrize("preset", [p.name[4:-len(".recovery.json")] for p in sorted(FITTED.glob("sim-*.recovery.json"))])
def test_committed_reference_fit_recovers_within_its_stated_uncertainty(preset):
    """Every committed reference fit of a virtual GPU (fitted/sim-<preset>.json with its recovery file),
    judged by the same rule, fails exactly its preset's known failures: a reference file refitted with a
    regressed fitter, or one whose stated errors were shrunk, fails here at once (no campaign is run)."""
    rep = json.loads((FITTED / f"sim-{preset}.recovery.json").read_text())
    doc = json.loads((FITTED / f"sim-{preset}.json").read_text())
    assert rep["preset"] == preset
    rows = [r for r in rep["parameters"] if r["truth"] is not None]
    verdicts = judge(rows, combinations_of(doc))
    members = {f"{s}.{n}" for s, cbs in combinations_of(doc).items() for cb in cbs for n in cb["parameters"]}
    assert [r["parameter"] for r in rows if r["parameter"] not in {v.what for v in verdicts} | members] == []
    assert ({v.what for v in verdicts if not v.ok}
            == set(KNOWN_FAILURES.get(preset, {})) | set(STALE_REFERENCE_FAILURES.get(preset, {}))), failures(verdicts)
    flips, alts = _forms(rep, doc)
    assert (not flips or flips in alts) == (preset not in KNOWN_FORM_FAILURES), (flips, alts)


def _forms(rep: dict, doc: dict) -> tuple[set[str], list[set[str]]]:
    """The units whose access-rate form differs from the physics', as "unit form" flips, and the file's
    form alternatives as sets of the same labels. Units the file declares the campaign does not separate
    (REG and FDS, active with every instruction: it publishes their sum) have no determined form (issue
    29); alternatives read "sfu linear + shared activation on (weight 0.07)" (the structure average)."""
    import re

    tied = {u for g in doc["fit"]["power"].get("collinear_units") or [] for u in g}
    flips = {f"{u} {d['truth']}" for u, d in rep["ar_function_agreement"]["disagree"].items() if u not in tied}
    alts = [{re.sub(r" \(weight [0-9.]+\)$", "", x) for x in a.split(" + ")}
            for a in doc["fit"]["power"].get("discrepancy", {}).get("form_alternatives", [])]
    # the shared-activation and dispatch-stage terms are not access-rate forms
    return flips, [{x for x in a if not x.startswith(("shared activation", "dispatch stage"))} for a in alts]


def test_heldout_power_mape(standard):
    preset, rep, _, _ = standard
    assert rep["heldout_rows"] == {"gtx280": 16, "gtx580": 16, "titanx": 176, "mi250x": 48, "mi300x": 48}[preset]
    if preset in KNOWN_HELDOUT_FAILURES:  # listed with its cause; fails once fixed (then remove the entry)
        bound, cause = KNOWN_HELDOUT_FAILURES[preset]
        assert 3.0 < rep["heldout_mape_pct"] <= bound, cause
    else:
        assert rep["heldout_mape_pct"] <= 3.0


def test_the_discrepancy_is_scaled_by_the_heldout_workloads_at_the_default_clocks(standard):
    """The IPP fit covers the default clock pair; its discrepancy (tau) is read from the campaign's held-out
    workloads there. Counted by hand from the samples table: the held-out workloads at the file's default
    clocks (8 of the 168 on the DVFS presets, whose held-out mixes also run at 20 other pairs). With the
    clock filter dropped the fit scaled its uncertainty by the held-out rows at every pair (mutation M26)."""
    import pandas as pd

    preset, _, doc, run = standard
    s = pd.read_csv(run / "fitted" / "s.samples.csv")
    clk = doc["device"]["clocks"]
    held = s[(s["role"] == "heldout") & (s["core_mhz"] == clk["core_mhz"]) & (s["mem_mhz"] == clk["mem_mhz"])]
    assert doc["fit"]["power"]["discrepancy"]["n_workloads"] == held["workload"].nunique() >= 3


def test_access_rate_forms_follow_the_physics(standard):
    """Each unit's access-rate function (linear or log) is the one its physics resembles, or the data cannot
    tell: the units whose form differs, flipped to the physics' forms, make a structure the file lists among
    its form alternatives (those within chi-square of the chosen one, which its total errors include)."""
    preset, rep, doc, _ = standard
    flips, alts = _forms(rep, doc)
    assert (not flips or flips in alts) == (preset not in KNOWN_FORM_FAILURES), (flips, alts)


def test_gtx580_quick_campaign_recovers_within_its_stated_uncertainty(tmp_path_factory):
    """The quick campaign on the GTX 580, judged by the same rule (it was: every MaxPower within 60 %,
    which passed at 53.9 %). A log access-rate form clamped to 0 on every observed rate would leave
    MaxPower meaningless (seen for the GTX 580's SFU, whose access rate never exceeds 1/8): the fitter
    falls back to linear, and the rule then holds for every unit."""
    rep, doc = _run(tmp_path_factory, "gtx580", "quick")
    verdicts = judge([r for r in rep["parameters"] if r["truth"] is not None], combinations_of(doc))
    assert len([v for v in verdicts if v.what.startswith("power.max_power_")]) >= 10
    assert {v.what for v in verdicts if not v.ok} == set(KNOWN_QUICK_FAILURES["gtx580"]), failures(verdicts)
    assert all(v.what not in COUNT_ROWS or v.ok for v in verdicts)


def test_the_rule_by_hand():
    """The rule on rows made by hand: 3.9 stated total errors off passes, 4.1 fails; a parameter with a
    truth but no stated error and no combination fails; a term zero by design and not published passes,
    but a published-nowhere parameter whose truth is not zero (a dropped fan on a card with one) fails; a
    combination is judged by its own stated error, and the pole count by 1 <= fitted <= truth."""
    rows = [
        {"parameter": "power.a", "truth": 10.0, "fitted": 10.39, "stderr_total": 0.1},
        {"parameter": "power.b", "truth": 10.0, "fitted": 10.41, "stderr_total": 0.1},
        {"parameter": "power.c", "truth": 1.0, "fitted": 1.0, "stderr_total": None},
        {"parameter": "thermal.fan_max_power_w", "truth": 0.0, "fitted": None, "stderr_total": None,
         "truth_from": "design"},
        {"parameter": "thermal.fan2", "truth": 4.0, "fitted": None, "stderr_total": None, "truth_from": "design"},
        {"parameter": "thermal.mu", "truth": 0.1, "fitted": 0.3, "stderr_total": None},
        {"parameter": "thermal.lam", "truth": 5.0, "fitted": -5.0, "stderr_total": None},
        {"parameter": "thermal_network.dominant_poles", "truth": 2, "fitted": 3, "stderr_total": None},
    ]
    combos = {"thermal": [{"parameters": ["mu", "lam"], "weights": {"mu": 1.0, "lam": 0.02}, "stderr_total": 0.001}]}
    ok = {v.what: v.ok for v in judge(rows, combos)}
    # the combination: 1 x 0.2 + 0.02 x (-10) = 0 (exactly determined), so it passes at any stated error
    assert ok == {"power.a": True, "power.b": False, "power.c": False, "thermal.fan_max_power_w": True,
                  "thermal.fan2": False, "thermal.[1 mu + 0.02 lam]": True, "thermal_network.dominant_poles": False}
