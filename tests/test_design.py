"""Adaptive campaign design (issue 29): the criterion, the design rounds in a session, `calib run --design`."""

from __future__ import annotations

import json
import os
import shutil
import warnings

import numpy as np
import pytest

from calib.fit.design import Candidate, candidates, choose


def test_choose_picks_the_kernel_that_separates_two_tied_parameters():
    """Two parameters measured almost only through their sum (rows [1, 1], one row [1, 0.9]): a kernel
    that measures their difference ([1, -1]) is worth more than one more of the sum ([2, 2]), and the
    covariance after it is the Sherman-Morrison update by hand. Catches a criterion that ranks by the
    predicted signal (the [2, 2] row is larger) instead of by the variance it removes."""
    J0 = np.array([[1.0, 1.0]] * 10 + [[1.0, 0.9]])
    s2 = 0.01
    C = np.linalg.inv(J0.T @ J0) * s2
    cand = np.array([[2.0, 2.0], [1.0, -1.0]])
    picked, after = choose(C, np.array([1.0, 1.0]), cand, s2, targets=[0, 1], k=1)
    assert picked == [1]
    j = cand[1]
    expected = C - np.outer(C @ j, C @ j) / (s2 + j @ C @ j)
    assert after == pytest.approx(expected, rel=1e-12)
    # the difference is now measured: both variances fall by more than 100x
    assert np.all(np.diag(after) < np.diag(C) / 100)


def test_choose_stops_when_every_target_is_met():
    """A target already within ``target_pct`` does not count, so nothing is chosen for it."""
    C = np.diag([1e-6, 1e-6])
    picked, after = choose(C, np.array([1.0, 1.0]), np.eye(2), 1.0, targets=[0, 1], k=3, target_pct=5.0)
    assert picked == [] and np.array_equal(after, C)


def test_candidates_are_real_mix_kernels_of_the_units_present():
    """Every candidate is a mix of the classes the GPU has (no L1 mix on a GPU without L1), at most two
    classes, at the campaign's occupancies; its entry builds the mix kernel with those per-step counts."""
    from microbench.benchmarks import design_benchmark
    from microbench.devices.sim.presets import get_preset

    info = get_preset("gtx280").device_info()
    cs = candidates(info.extra["units"], max_warps=32)
    assert cs and all(set(c.mix) <= set(info.extra["units"]) and len(c.mix) <= 2 for c in cs)
    assert not any("l1" in c.mix for c in cs)
    c = Candidate({"fp": 3.0, "sfu": 1.0}, 32)
    b = design_benchmark(c.entry())
    assert (b.kernel, b.role, b.stresses, b.warps_per_sm) == ("mix", "unit", "mixed", 32)
    pw = b.workload(info).per_warp
    assert pw["sfu"] == pytest.approx(1024 * 4 * 1.0) and pw["fp"] >= 1024 * 4 * 3.0


@pytest.fixture
def session_copy(quick_run, tmp_path):
    """The shared quick gtx280 campaign copied (a design round writes into its session)."""
    shutil.copytree(quick_run / "logs", tmp_path / "logs")
    shutil.copytree(quick_run / "fitted", tmp_path / "fitted")
    return tmp_path


def test_a_design_round_is_recorded_run_and_resumed(session_copy):
    """A round appends its kernels to the manifest's plan and its record to ``design`` before anything
    runs, runs every repeat, and its rows are training rows of the samples table; running the same
    record again (a resumed, already finished round) runs nothing. Catches a round whose kernels the
    samples layer cannot find (not in the plan) or that is run twice."""
    from calib.core.session import read_session
    from calib.segment import session_samples
    from microbench.campaign import Campaign
    from microbench.devices import open_device

    sess_dir = session_copy / "logs" / "q"
    kernels = [Candidate({"fp": 1.0, "sfu": 1.0}, 8).entry(), Candidate({"int": 3.0, "shared": 1.0}, 8).entry()]
    dev = open_device("sim:gtx280", seed=0)
    try:
        camp = Campaign(dev, "quick", 0)
        rec = camp.run_design_round(sess_dir, {"round": 1, "kernels": kernels})
    finally:
        dev.close()
    assert rec["complete"] is True
    man = read_session(sess_dir).manifest
    assert [r["round"] for r in man["design"]] == [1] and man["design"][0]["complete"] is True
    plan = {p["name"]: p for p in man["plan"]}
    assert all(k["name"] in plan and plan[k["name"]]["role"] == "unit" for k in kernels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = session_samples(read_session(sess_dir))
    rows = df[df["workload"].isin([k["name"] for k in kernels])]
    assert sorted(rows["workload"].value_counts().to_dict().items()) == sorted((k["name"], 1) for k in kernels)
    assert (rows["role"] == "unit").all() and (rows["act_sfu"] > 0).any() and (rows["act_shared"] > 0).any()
    n_markers = len(read_session(sess_dir).markers())
    dev = open_device("sim:gtx280", seed=0)
    try:
        again = Campaign(dev, "quick", 0).run_design_round(sess_dir, {"round": 1, "kernels": kernels})
    finally:
        dev.close()
    assert again["complete"] is True
    markers = read_session(sess_dir).markers()
    done = markers[markers["event"] == "workload_done"]
    assert done["workload"].isin([k["name"] for k in kernels]).sum() == 2  # one repeat each, not two
    assert len(markers) - n_markers <= 2  # a new segment's start (and nothing run)


def _run_design(session_copy, cli, *options: str) -> tuple[str, dict]:  # noqa: ANN001
    """`calib run --design adaptive OPTIONS` on the copied quick gtx280 session: (stdout, its manifest);
    asserts exit 0."""
    cwd = os.getcwd()
    os.chdir(session_copy)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            code, out, err = cli("run", "--campaign", "quick", "--name", "q", "--device", "sim:gtx280",
                                 "--design", "adaptive", *options)
    finally:
        os.chdir(cwd)
    assert code == 0, out + err
    return out, json.loads((session_copy / "logs" / "q" / "manifest.json").read_text())


def test_calib_run_design_adaptive_records_each_round(session_copy, cli):
    """`calib run --design adaptive` on a complete session: every round's kernels, the MaxPowers above
    the target before it and their errors after it are in the manifest, and the budget bounds the added
    device time. Catches a loop that runs kernels without recording why, or past its budget."""
    out, man = _run_design(session_copy, cli, "--target", "1", "--budget", "120")
    rounds = man.get("design") or []
    assert rounds, out
    assert sum(r["expected_s"] for r in rounds) <= 120
    for r in rounds:
        assert r["complete"] and r["kernels"] and r["above_target"]
        assert set(r["before"]) >= set(r["above_target"])
        assert "after" in r and set(r["after"]) >= set(r["above_target"])
    assert "design round 1:" in out
    # the refit preview of every round that ran is recorded beside the criterion's own prediction
    assert all(set(r["preview_rel_total_pct"]) == set(r["above_target"]) for r in rounds)


def test_run_refuses_a_bad_design_target(cli):
    code, out, err = cli("run", "--design", "adaptive", "--target", "-3")
    assert code == 2 and "invalid target '-3': expected a number > 0" in err


def test_design_stops_after_a_round_that_lowers_no_target_by_a_tenth():
    """The stop rule of ``calib run --design adaptive`` (``DESIGN_MIN_GAIN``): another round is run only
    when the last one lowered some target's relative total error by 10 % of itself; what is left after
    that is model form (extrapolation, the REG/FDS split), which more kernels do not shrink. Figures by
    hand: 50 -> 45.5 % is 9 % lower (stop), 50 -> 44.9 % is 10.2 % lower (go on). Catches a rule that
    goes on after any decrease (the design would spend its whole budget on REG/FDS, as the first version
    did), one that counts parameters that are not targets, and a flipped comparison."""
    from calib.commands.run import DESIGN_MIN_GAIN, _improved

    assert DESIGN_MIN_GAIN == 0.1
    before = {"max_power_sfu_w": {"rel_total_pct": 50.0}, "max_power_fds_w": {"rel_total_pct": 160.0},
              "max_power_fp_w": {"rel_total_pct": 4.0}}
    targets = ["max_power_sfu_w", "max_power_fds_w"]
    small = {"max_power_sfu_w": {"rel_total_pct": 45.5}, "max_power_fds_w": {"rel_total_pct": 150.0},
             "max_power_fp_w": {"rel_total_pct": 0.4}}       # fp fell 90 % but is not a target
    assert not _improved(before, small, targets)
    enough = dict(small, max_power_sfu_w={"rel_total_pct": 44.9})
    assert _improved(before, enough, targets)
    worse = {"max_power_sfu_w": {"rel_total_pct": 80.0}, "max_power_fds_w": {"rel_total_pct": 300.0}}
    assert not _improved(before, worse, targets)
    # a target without a figure on either side (no standard error) neither stops nor continues the design
    assert not _improved(before, {"max_power_sfu_w": {"rel_total_pct": None}}, targets)
    assert _improved({"max_power_sfu_w": {}, **{k: v for k, v in before.items() if k != "max_power_sfu_w"}},
                     {"max_power_fds_w": {"rel_total_pct": 100.0}}, targets)


def test_preview_rows_are_the_candidates_at_the_files_predicted_power(quick_run):
    """The rows a design round would add if the fit were right: each candidate kernel ``repeats`` times,
    at the thermal section's idle temperature, its power the file's prediction there. Independent route
    for the power: :func:`calib.model.predict.predict_power` (the registry's predictor, with the
    temperature correction, which is 0 at the idle temperature). Catches rows at another temperature
    (the refit would read a leakage change as unit power) or a power that is not the model's."""
    import pandas as pd

    from calib.core.params import load
    from calib.fit.design import candidate_rows, preview_rows
    from calib.model.predict import predict_power
    from microbench.benchmarks import design_benchmark
    from microbench.devices.sim.presets import get_preset

    pf = load(quick_run / "fitted" / "q.json")
    samples = pd.read_csv(quick_run / "fitted" / "q.samples.csv")
    info = get_preset("gtx280").device_info()
    wl = lambda entry, max_w: design_benchmark(entry, max_w).workload(info)  # noqa: E731
    cands = [Candidate({"fp": 1.0, "sfu": 3.0}, 4), Candidate({"int": 1.0, "shared": 1.0}, 32)]
    rows = preview_rows(pf, cands, info, samples, repeats=2, workload_of=wl)
    assert list(rows["workload"]) == [c.name for c in cands] * 2
    assert list(rows["repeat"]) == [0.0, 0.0, 1.0, 1.0]
    assert (rows["role"] == "unit").all()
    idle_c = pf["thermal"].value("idle_temp_c")
    assert np.allclose(rows["temp_c"], idle_c)
    assert rows["power_w"].to_numpy() == pytest.approx(predict_power(pf, rows), rel=1e-12)
    # the power of a running kernel is above the idle power, and the two mixes differ
    assert (rows["power_w"] > pf["power"].value("idle_power_w")).all() and rows["power_w"].nunique() == 2
    once = candidate_rows(pf, cands, info, samples, workload_of=wl)
    assert rows[["act_fp", "act_sfu", "act_int", "act_shared"]].iloc[:2].to_numpy() == pytest.approx(
        once[["act_fp", "act_sfu", "act_int", "act_shared"]].to_numpy())


def test_design_runs_no_round_that_its_refit_preview_says_lowers_nothing(session_copy, cli):
    """Each round is run only when a refit with its kernels' predicted power lowers some target's relative
    total error by 10 % (the preview); the design stops at the first round whose preview says no, and the
    message names what is left. On the quick gtx280 campaign with a 40 % target and the curves before
    (the clamped log plus 8 % per access) the first round already stopped: the criterion's linear update
    of the total covariance predicted 46.6 -> 7.8 % (SFU), 132 -> 37 % (REG), 49 -> 14 % (FDS), and the
    round, run (main at 593097d), left them at 118, 134 and 49 %. With the smooth-toe curves two rounds
    pass the preview (SFU 3832 -> 2044 % previewed, 325 % after the first round; 325 -> 108 % previewed,
    111 % after the second), the third does not. Catches a design that runs rounds whose only predicted
    gain is model form counted as noise."""
    out, man = _run_design(session_copy, cli, "--target", "40")
    rounds = man.get("design") or []
    assert len(rounds) < 4  # the design stopped before its round limit
    for r in rounds:
        gains = [r["preview_rel_total_pct"][n] / r["before"][n]["rel_total_pct"] for n in r["preview_rel_total_pct"]]
        assert min(gains) <= 0.9, r["round"]
    assert "no round run" in out and f"design round {len(rounds) + 1}:" not in out
    for n in ("max_power_sfu_w", "max_power_reg_w", "max_power_fds_w"):
        assert n in out


def test_a_constant_within_two_errors_of_zero_is_not_a_design_target(quick_run):
    """GT200 has no activation power (it is part of Const_SM): a fitted activation a hair above 0 has a
    relative error of 300,000 % and the design listed it as its worst target. A constant within 2 total
    errors of 0 is not a target; the same constant 10 errors away is, and MaxPowers are targets whatever
    their value (a poorly determined unit near 0 is what the design is for)."""
    import pandas as pd

    from calib.core.params import load
    from calib.fit.design import design_round
    from microbench.benchmarks import design_benchmark
    from microbench.devices.sim.presets import get_preset

    pf = load(quick_run / "fitted" / "q.json")
    samples = pd.read_csv(quick_run / "fitted" / "q.samples.csv")
    info = get_preset("gtx280").device_info()
    wl = lambda entry, max_w: design_benchmark(entry, max_w).workload(info)  # noqa: E731
    act = pf["power"]["activation_power_w"]
    act.vary, act.min, act.stderr_total = True, 0.0, 0.5
    act.value = 0.6         # 1.2 errors from 0
    st = design_round(pf, info, samples, 1.0, 1, workload_of=wl)
    assert "activation_power_w" not in st.rel_se_before_pct and "activation_power_w" not in st.above_target
    assert any(n.startswith("max_power_") for n in st.rel_se_before_pct)
    act.value = 5.0         # 10 errors from 0: 10 % relative, above the 1 % target
    st = design_round(pf, info, samples, 1.0, 1, workload_of=wl)
    assert st.rel_se_before_pct["activation_power_w"] == pytest.approx(10.0)
    assert "activation_power_w" in st.above_target
