"""Stated uncertainties against the truth (issue 12): parameters' total standard errors, prediction
intervals on held-out workloads, determined combinations, and the jackknife's arithmetic."""

from __future__ import annotations

import json
import math
import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calib.core.params import Covariance
from calib.fit.uncertainty import determined_combinations, format_combination, group_jackknife, refit_jackknife

ROOT = Path(__file__).resolve().parents[1]


def test_linearised_group_jackknife_equals_refits_for_a_linear_model():
    """For least squares linear in its parameters the one-step jackknife is exact: it must equal the
    delete-a-group jackknife computed by refitting, and its out-of-group residuals the refits'."""
    rng = np.random.default_rng(3)
    n = 60
    X = np.column_stack([np.ones(n), rng.uniform(0, 1, n), rng.uniform(0, 1, n) ** 2])
    groups = np.repeat(np.arange(12), 5)
    y = X @ [2.0, 1.0, -0.5] + rng.normal(0, 0.05, n) + 0.1 * np.sin(groups)  # structured misfit by group
    beta = np.linalg.lstsq(X, y, rcond=None)[0]
    r = X @ beta - y
    oog = np.empty(n)
    cov, G = group_jackknife(X, r, groups, out_of_group=oog)
    assert G == 12

    def refit(mask: np.ndarray) -> dict[str, float]:
        b = np.linalg.lstsq(X[mask], y[mask], rcond=None)[0]
        return {"a": b[0], "b": b[1], "c": b[2]}

    exact = refit_jackknife(refit, groups, ["a", "b", "c"])
    np.testing.assert_allclose(cov, exact, rtol=1e-8, atol=1e-14)
    for g in range(12):
        m = groups == g
        b = np.linalg.lstsq(X[~m], y[~m], rcond=None)[0]
        np.testing.assert_allclose(oog[m], X[m] @ b - y[m], rtol=1e-8, atol=1e-12)


def test_determined_combination_of_two_parameters_the_data_do_not_separate():
    """Two parameters known only through their sum: the file states the sum, with the sum's standard
    error (the square root of 1' C 1), and the members one by one are not separated."""
    sa = sb = 1.0
    rho = -0.999
    cov = Covariance(("a_w", "b_w", "c_w"), [[sa * sa, rho * sa * sb, 0], [rho * sa * sb, sb * sb, 0], [0, 0, 0.01]])
    (cb,) = determined_combinations(cov, {"a_w": 3.0, "b_w": 2.0, "c_w": 1.0})
    assert cb["parameters"] == ["a_w", "b_w"]
    assert cb["weights"] == pytest.approx({"a_w": 1.0, "b_w": 1.0})
    assert cb["value"] == pytest.approx(5.0)
    assert cb["stderr"] == pytest.approx(np.sqrt(2 + 2 * rho))
    assert format_combination(cb["weights"]) == "a_w + b_w"


@pytest.fixture(scope="module")
def nonadditive_run(tmp_path_factory):
    """A quick campaign on the virtual GPU whose power departs from the model's form."""
    from calib.cli import main

    d = tmp_path_factory.mktemp("nonadd")
    cwd = os.getcwd()
    os.chdir(d)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            code = main(["run", "--quiet", "--campaign", "quick", "--name", "na", "--device", "sim:gtx580_nonadd"])
    finally:
        os.chdir(cwd)
    assert code == 0
    return d


def test_total_standard_errors_cover_the_truth_when_the_model_is_wrong(nonadditive_run):
    """On sim:gtx580_nonadd (unit curves, interactions and SM scaling unlike the model's), the truth of
    the power and thermal parameters lies within 2 total standard errors for at least 85 % of them, while
    the statistical standard errors alone cover fewer (they describe repeatability, not truth)."""
    rec = json.loads((nonadditive_run / "fitted" / "na.recovery.json").read_text())
    rows = [r for r in rec["parameters"] if r["parameter"].split(".")[0] in ("power", "thermal")
            and r["fitted"] is not None and r["stderr_total"]]
    assert len(rows) >= 20
    total = np.mean([abs(r["fitted"] - r["truth"]) <= 2 * r["stderr_total"] for r in rows])
    stat = np.mean([abs(r["fitted"] - r["truth"]) <= 2 * r["stderr"] for r in rows])
    assert total >= 0.85, [(r["parameter"], r["truth"], r["fitted"], r["stderr_total"]) for r in rows
                           if abs(r["fitted"] - r["truth"]) > 2 * r["stderr_total"]]
    # the statistical errors alone miss parameters the total errors cover (measured: 18 of 24 against 22 of
    # 24 on this quick campaign, whose small design already makes some statistical errors wide; 42 % against
    # 88 % over the standard campaigns of tests/benchmarks/uncertainty_results.md)
    assert stat <= total - 3 / len(rows)
    assert all(r["stderr_total"] >= r["stderr"] for r in rows)


def test_prediction_intervals_of_held_out_workloads(nonadditive_run, cli, tmp_path):
    """calib predict writes power_w_lo/_hi at the stated level; on the held-out application-like mixes
    (never fitted) of the non-additive GPU, the measured power falls inside the 90 % interval of most
    rows, and the interval is not absurdly wide (the figure over many seeds and presets is in
    tests/benchmarks/uncertainty_results.md)."""
    f = nonadditive_run / "fitted"
    s = pd.read_csv(f / "na.samples.csv")
    s[s["role"] == "heldout"].to_csv(tmp_path / "held.csv", index=False)
    code, out, err = cli("predict", f / "na.json", tmp_path / "held.csv", "-o", tmp_path / "p.csv")
    assert code == 0, err
    assert "and their 90% intervals (_lo, _hi)" in out
    p = pd.read_csv(tmp_path / "p.csv")
    assert {"power_w_lo", "power_w_hi", "time_s_lo", "time_s_hi"} <= set(p.columns)
    assert (p["power_w_lo"] < p["power_w_pred"]).all() and (p["power_w_pred"] < p["power_w_hi"]).all()
    inside = ((p["power_w"] >= p["power_w_lo"]) & (p["power_w"] <= p["power_w_hi"])).mean()
    width = ((p["power_w_hi"] - p["power_w_lo"]) / p["power_w_pred"]).mean()
    assert inside >= 0.6 and width < 0.25
    code, out, err = cli("predict", f / "na.json", tmp_path / "held.csv", "-o", tmp_path / "q.csv", "--level", "1.5")
    assert code == 2 and "--level 1.5: must be between 0 and 1" in err


def test_identifiability_is_stated_in_the_file(quick_run):
    """Where the campaign does not separate parameters, the parameter file says which combination it
    determines, with its standard errors."""
    doc = json.loads((Path(quick_run) / "fitted" / "q.json").read_text())
    combos = [c for sec in doc["fit"].values() for c in sec.get("identifiability", [])]
    assert combos, "the quick campaign of sim:gtx280 leaves REG and FDS unseparated"
    for c in combos:
        # a combination of parameters, or a unit's power at its highest measured access rate (for a unit
        # with the linear access-rate function that is MaxPower x AR: one parameter), or a parameter whose
        # total error is above 10 % named on its own (basis "total": model form, not noise)
        assert set(c["weights"]) == set(c["parameters"])
        assert len(c["parameters"]) >= (1 if c.get("kind") == "power_at_ar" or c.get("basis") == "total" else 2), c
        assert 0 < c["stderr"] <= c["stderr_total"]


def test_total_covariance_is_a_covariance_at_least_as_large_as_both():
    """stat + (jack - stat)+: positive semidefinite, and at least as large as each input along every direction
    (the element-wise mix it replaced had a negative eigenvalue on this pair)."""
    from calib.fit.uncertainty import total_covariance

    # a: the jackknife is larger (its correlations, +0.9 with b and c); b, c: the fit is larger (b, c at -0.9)
    stat = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, -0.9], [0.0, -0.9, 1.0]])
    sj = np.array([2.0, 0.5, 0.5])
    jack = np.array([[1.0, 0.9, 0.9], [0.9, 1.0, 0.81], [0.9, 0.81, 1.0]]) * np.outer(sj, sj)
    out = total_covariance(Covariance(("a", "b", "c"), stat), jack)
    for m in (out, out - stat, out - jack):
        assert np.linalg.eigvalsh(m).min() > -1e-12
    # the old rule: variances the larger of the two, correlations from the larger variance's estimate
    sd = np.sqrt(np.maximum(np.diag(stat), np.diag(jack)))
    use_j = np.sqrt(np.diag(jack)) > np.sqrt(np.diag(stat))
    corr = np.where(np.logical_or.outer(use_j, use_j), jack / np.outer(np.sqrt(np.diag(jack)), np.sqrt(np.diag(jack))),
                    stat / np.outer(np.sqrt(np.diag(stat)), np.sqrt(np.diag(stat))))
    np.fill_diagonal(corr, 1.0)
    assert np.linalg.eigvalsh(corr * np.outer(sd, sd)).min() < 0


def test_ar1_inflation_matches_the_effective_sample_size_of_an_ar1_series():
    from calib.fit.uncertainty import ar1_inflation

    rng = np.random.default_rng(3)
    rho = 0.8
    parts = []
    for _ in range(20):
        x = np.zeros(2000)
        for i in range(1, len(x)):
            x[i] = rho * x[i - 1] + rng.normal()
        parts.append(x)
    assert ar1_inflation(parts) == pytest.approx((1 + rho) / (1 - rho), rel=0.05)
    assert ar1_inflation([rng.normal(size=5000)]) == pytest.approx(1.0, abs=0.05)
    # and it is what a mean's spread over repeats shows: var(mean) x n / var(x) ~ the inflation
    means = [p.mean() for p in parts]
    assert np.var(means, ddof=1) * 2000 / np.mean([np.var(p) for p in parts]) == pytest.approx(9.0, rel=0.5)


def test_tied_groups_come_from_near_null_directions_not_chains_of_correlations():
    """a and b are tied (r = 0.995); c is correlated with b at 0.95 but the data determine it apart from
    them (no near-null direction loads on it): only [a, b] is a group, and c stays testable on its own.
    Chaining pairwise correlations >= 0.95 joined all three (and on real power sections, nearly all)."""
    R = np.eye(4)
    R[0, 1] = R[1, 0] = 0.995
    R[1, 2] = R[2, 1] = 0.95
    R[0, 2] = R[2, 0] = 0.95 * 0.995 * 0.999
    sd = np.array([2.0, 0.5, 1.0, 3.0])
    cov = Covariance(("a", "b", "c", "d"), R * np.outer(sd, sd))
    combos = determined_combinations(cov, {"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0})
    assert [c["parameters"] for c in combos] == [["a", "b"]]
    w = combos[0]["weights"]
    # the best-determined combination of a tied pair is (nearly) the standardized difference
    assert w["a"] * sd[0] == pytest.approx(-w["b"] * sd[1], rel=0.01)


def test_session_fit_with_a_heldout_table_scores_the_campaigns_mixes_and_the_table_together(quick_run, cli, tmp_path):
    """`calib fit SESSION --heldout TABLE`: the campaign's own held-out mixes and the user's measured
    applications are both workloads the fit never saw; the power section's prediction discrepancy comes from
    both (each workload once), and the table is a source of the file. Applications that the model misses by
    4-8 % widen the discrepancy far beyond what the quick campaign's mixes alone show (0.15 %)."""
    session = Path(quick_run) / "logs" / "q"
    code, out, err = cli("samples", session, "-o", tmp_path / "s.csv", "-q")
    assert code == 0, err
    own = pd.read_csv(tmp_path / "s.csv").query("role == 'heldout'")
    apps = own.copy()
    apps["workload"] = "user_" + apps["workload"].astype(str)
    apps["power_w"] *= np.resize([1.06, 0.94, 1.08, 0.96], len(apps))
    apps.to_csv(tmp_path / "apps.csv", index=False)
    code, out, err = cli("fit", session, "-o", tmp_path / "alone.json", "-q")
    assert code == 0, err
    code, out, err = cli("fit", session, "--heldout", tmp_path / "apps.csv", "-o", tmp_path / "p.json")  # not -q: the message is what this test reads
    assert code == 0, err
    n = len(own)
    assert f"apps.csv, {2 * n} rows): power MAPE" in out, out
    alone = json.loads((tmp_path / "alone.json").read_text())["fit"]["power"]["prediction"]
    both = json.loads((tmp_path / "p.json").read_text())
    pred = both["fit"]["power"]["prediction"]
    assert (alone["n_rows"], alone["n_groups"]) == (n, n)
    assert (pred["n_rows"], pred["n_groups"]) == (2 * n, 2 * n)
    assert alone["discrepancy_rel"] < 0.01 < 0.03 < pred["discrepancy_rel"] < 0.09
    src = [s for s in both["provenance"]["sources"] if s.get("role") == "heldout"]
    assert len(src) == 1 and src[0]["path"].endswith("apps.csv")


@pytest.mark.parametrize("preset", ["gtx580", "gtx280", pytest.param("titanx", marks=pytest.mark.xfail(strict=True, reason=(
    "on the reference table regenerated with the standard campaign's training mixes titanx has 88 % "
    "within 2 stderr_total and a median |error| / stderr_total of 0.12 (fp and int at z -2.4 and -2.3; "
    "sfu and shared, now fitted within 1-3 %, keep the linear-extrapolation term of about 40 %): one "
    "draw of 17 parameters; the 5-seed study gives 87.5 % and 0.54 (tests/benchmarks/identify_results.md); "
    "issue 29 stays open until it holds over seeds")))])
def test_power_stderr_total_is_calibrated_both_ways_on_a_recorded_campaign(preset):
    """Issue 29: the total standard errors of the power section describe its errors, neither too small nor
    too wide. On the recorded standard campaign of the preset (fitted/sim-<preset>.samples.csv, refitted
    with the settings its file records), every parameter with a ground truth (microbench.truth, read here
    only): the truth within 2 stderr_total for at least 90 % of them, and the median |fitted - truth| /
    stderr_total between 0.45 and 0.9 (0.67 for honest Gaussian errors). Before issue 29 the median was
    0.18 (gtx580) and 0.08 (titanx) on these fits, and every stderr_total x2 or x4 failed no test; now x2
    halves the median below 0.45 and x0.5 doubles it above 0.9 (both checked with
    tests/benchmarks/mutate.py: I1-stderr-total-x2, I9-stderr-total-half). gtx280's errors were too small
    on the single-unit campaign (67 % within 2, median 1.3: the shared-activation term was off by BIC and
    the pipes absorbed the overlap); with the standard campaign's multi-unit training mixes the data
    choose the term (tests/benchmarks/identify_results.md, 2026-11-27)."""
    import warnings

    from calib.fit.ipp import IppPowerFitter
    from microbench.truth import ground_truth

    doc = json.loads((ROOT / "fitted" / f"sim-{preset}.json").read_text())
    df = pd.read_csv(ROOT / "fitted" / f"sim-{preset}.samples.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sec = IppPowerFitter(**doc["fit"]["power"]["settings"]).fit(df).section_
    truth = ground_truth(preset)
    z = np.array([abs(p.value - truth[f"power.{n}"]["value"]) / p.stderr_total
                  for n, p in sec.params.items() if f"power.{n}" in truth and p.vary])
    assert len(z) >= 15  # gtx280 has 15 power parameters with a truth
    assert np.mean(z <= 2.0) >= 0.90, sorted(z)
    assert 0.45 <= float(np.median(z)) <= 0.9, sorted(z)


def test_model_average_covariance_is_the_between_structure_variance_of_bma():
    """The structure term of the total covariance (calib.fit.uncertainty.model_average_covariance) is
    Bayesian model averaging's between-model variance around the chosen estimate. By hand: one
    alternative with log evidence ln(1/3) relative to the chosen structure has posterior weight
    (1/3) / (1 + 1/3) = 0.25, so a shift d adds 0.25 d d^T; two alternatives as good as the chosen one
    (log evidence 0) weigh 1/3 each; one rejected by the data (log evidence -50) adds nothing. BIC's
    evidence: the same sum of squares with one parameter more, at n = e^2 rows, is ln(n) / 2 = 1 below."""
    from calib.fit.uncertainty import evidence_log_weight, model_average_covariance

    d = np.array([2.0, -1.0, 0.0])
    cov, w = model_average_covariance([d], [math.log(1 / 3)], 3)
    assert w == pytest.approx([0.25])
    assert cov == pytest.approx(0.25 * np.outer(d, d))
    e = np.array([0.0, 3.0, 1.0])
    cov, w = model_average_covariance([d, e], [0.0, 0.0], 3)
    assert w == pytest.approx([1 / 3, 1 / 3])
    assert cov == pytest.approx((np.outer(d, d) + np.outer(e, e)) / 3)
    cov, w = model_average_covariance([d], [-50.0], 3)
    assert np.abs(cov).max() < 1e-20
    assert model_average_covariance([], [], 2)[0] == pytest.approx(np.zeros((2, 2)))
    assert evidence_log_weight(10.0, 5, 10.0, 4, 1.0, round(math.e ** 2)) == pytest.approx(-math.log(7) / 2)
    # a better fit by 2 s2 in chi-square is worth one unit of log evidence
    assert evidence_log_weight(8.0, 4, 10.0, 4, 1.0, 100) == pytest.approx(1.0)


def test_structure_uncertainty_covers_a_unit_whose_access_rate_function_the_data_barely_choose():
    """Issue 29: the total standard error holds the uncertainty of the model structure (Bayesian model
    averaging over the structures the search fitted, calib.fit.uncertainty.model_average_covariance).
    On the recorded gtx280 campaign (fitted/sim-gtx280.samples.csv) the search gives SFU the log
    access-rate function while the linear one is about as probable (weight 0.81 at the discrepancy-
    inflated evidence), and the two put SFU's MaxPower at 0.19 and 0.44 W (truth 0.50). With the
    structure term the truth is within 2 stderr_total (z 1.3); without it (the term set to 0) it is 5.0
    total standard errors away, and const/tex go from 2.5/2.9 to 2.9/3.5 (the shared-activation "on"
    alternative, weight 0.07, moves them towards their truths)."""
    from calib.fit.ipp import IppPowerFitter
    from microbench.truth import ground_truth

    doc = json.loads((ROOT / "fitted" / "sim-gtx280.json").read_text())
    df = pd.read_csv(ROOT / "fitted" / "sim-gtx280.samples.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = IppPowerFitter(**doc["fit"]["power"]["settings"]).fit(df)
    truth = ground_truth("gtx280")
    sfu = f.section_.params["max_power_sfu_w"]
    assert f.forms_["sfu"] == "log"
    assert abs(sfu.value - truth["power.max_power_sfu_w"]["value"]) <= 2.0 * sfu.stderr_total
    assert any(a.startswith("sfu linear") for a in f.discrepancy_["form_alternatives"])


def _saturating_dram_table() -> tuple[pd.DataFrame, object]:
    """A small campaign whose DRAM benchmark reaches AR 0.025 only, while the DRAM's power (the virtual
    GPU's own unit physics, a Michaelis-Menten curve with k = 0.05: nearly straight up to AR 0.025, then
    saturating) is 45 W at AR = 1: an FP sweep (clamped-log physics), an empty kernel, idle rows, 0.2 %
    noise; 24 SMs."""
    from microbench.devices.sim.physics import UnitPhysics

    rng = np.random.default_rng(3)
    fp = UnitPhysics(2.0, w=0.5)
    dram = UnitPhysics(45.0, w=1.0, chip=True, domain="mem", curve="mm", k=0.05)
    n_sm, idle = 24, 70.0
    rows = [dict(role="idle", workload="idle", stresses="", act_fp=0.0, act_global=0.0, power_w=idle)] * 2
    rows += [dict(role="idle_kernel", workload="empty", stresses="", act_fp=0.0, act_global=0.0,
                  power_w=idle + 10 + n_sm * 0.8)] * 2
    for w in (1, 2, 4, 8, 16, 32):
        for _ in range(2):
            a, g = 0.9 * w / 32, 0.025 * w / 32
            rows.append(dict(role="unit", workload=f"fp/w{w}", stresses="fp", act_fp=a, act_global=0.0,
                             power_w=idle + 10 + n_sm * (0.8 + fp.power(a))))
            rows.append(dict(role="unit", workload=f"dram/w{w}", stresses="global", act_fp=0.0, act_global=g,
                             power_w=idle + 10 + n_sm * 0.8 + dram.power(g)))
    df = pd.DataFrame(rows)
    df["power_w"] = df["power_w"] * (1 + 0.002 * rng.standard_normal(len(df)))
    df["active_sms"] = n_sm
    return df, dram


def _fit_linear_dram(df: pd.DataFrame):  # noqa: ANN202 - the fitted power section
    from calib.fit.ipp import IppPowerFitter
    from calib.fit.uncertainty import annotate_identifiability

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sec = IppPowerFitter(sm_count=24, ar_forms={"fp": "log", "global": "linear"}, chip_units=["global"],
                             mem_units=["global"], shared_activation="off", sm_scaling="linear").fit(df).section_
    annotate_identifiability(sec)
    return sec


def test_a_linear_units_maxpower_beyond_its_measured_access_rates_is_an_extrapolation(monkeypatch):
    """Issue 29: the MaxPower (AR = 1) of a unit with the linear access-rate function measured only up to
    AR 0.025 is a straight line continued 40 times beyond the data; stderr_total must hold that, as it
    does for the log form. Before, the model-form term covered log units only: on the non-additive Titan X
    the DRAM, L2 and DP MaxPowers (linear, measured up to AR 0.025-0.04) were 8-20 times their truths at
    17-39 % stderr_total, and were not named undetermined. Here (truth from the virtual GPU's unit physics,
    a saturating curve nearly straight in the measured range): the fitted MaxPower is about 14 times the
    truth, 3.2 total standard errors away without the term (checked below with the term switched off),
    1.0 with it; and the file names the MaxPower undetermined and publishes the DRAM's power at AR 0.025
    instead, which is within 2 of its own total standard errors of the physics' value there."""
    from calib.fit.ipp import IppPowerFitter

    df, dram = _saturating_dram_table()
    sec = _fit_linear_dram(df)
    p = sec.params["max_power_global_w"]
    assert p.value > 5 * dram.max_power_w  # the straight line's extrapolation is far off: the case in point
    assert abs(p.value - dram.max_power_w) <= 2.0 * p.stderr_total, (p.value, p.stderr_total)
    q = [q for q in sec.stats["identifiability"] if "max_power_global_w" in q.get("undetermined", [])]
    assert len(q) == 1 and q[0]["kind"] == "power_at_ar" and q[0]["ar"] == pytest.approx(0.025)
    assert abs(q[0]["value"] - dram.power(q[0]["ar"])) <= 2.0 * q[0]["stderr_total"]
    # the same fit without the linear form's extrapolation term misses the truth and publishes the MaxPower
    monkeypatch.setattr(IppPowerFitter, "LINEAR_EXTRAPOLATION", False)
    old = _fit_linear_dram(df).params["max_power_global_w"]
    assert old.value == pytest.approx(p.value)
    assert abs(old.value - dram.max_power_w) > 2.0 * old.stderr_total


def test_every_published_maxpower_is_within_ten_percent_at_two_total_errors():
    """Issue 29: a MaxPower published as determined is one a user may quote per unit "within 10 %". With
    the rule at 10 % total relative error, values of 8-10 % passed and missed their truth by more than 10 %
    one time in four or five (20 seeds: gtx280 const on 7, titanx_nonadd fp on 5). So every MaxPower and
    Const_SM of the committed reference fits either has value +/- 2 total errors within +/- 10 %, or the file
    names it undetermined (gtx280's const at 9 % total is one such: it fails this test with the old rule)."""
    from calib.core.params import load
    from calib.fit.uncertainty import PUBLISH_REL, total_se

    assert PUBLISH_REL == 0.05
    named = 0
    for path in sorted((Path(__file__).resolve().parents[1] / "fitted").glob("sim-*.json")):
        if path.name.endswith(".recovery.json"):
            continue
        sec = load(path)["power"]
        und = {n for q in sec.stats.get("identifiability") or [] for n in q.get("undetermined", [])}
        for n, p in sec.params.items():
            if p.vary and (n.startswith("max_power_") or n == "const_sm_power_w") and n not in und:
                assert 2 * total_se(p) <= 0.10 * abs(p.value), (path.name, n, p.value, total_se(p))
            named += n in und and total_se(p) is not None and 2 * total_se(p) <= 0.2 * abs(p.value or 1e-300)
    assert named >= 1  # the rule names some values of 5-10 % total error: not vacuous


def test_a_parameter_named_alone_is_told_from_a_one_weight_quantity():
    """The report, the HTML table, `calib diff` and the identify study each asked "one weight?" to find a
    parameter named undetermined on its own; a linear unit's power at its highest access rate (MaxPower x
    AR, one weight) is a determined quantity and would have been shown as "not determined"."""
    from calib.fit.uncertainty import named_alone

    alone = {"kind": "combination", "parameters": ["max_power_sfu_w"], "weights": {"max_power_sfu_w": 1.0},
             "undetermined": ["max_power_sfu_w"], "basis": "total"}
    linear_at_ar = {"kind": "power_at_ar", "unit": "sfu", "ar": 0.25, "parameters": ["max_power_sfu_w"],
                    "weights": {"max_power_sfu_w": 0.25}, "undetermined": ["max_power_sfu_w"]}
    pair = dict(alone, parameters=["max_power_reg_w", "max_power_fds_w"],
                weights={"max_power_reg_w": 1.0, "max_power_fds_w": 1.0})
    assert named_alone(alone) and not named_alone(linear_at_ar) and not named_alone(pair)
