"""The IPP fitter recovers known parameters from synthetic tables and chooses access-rate forms."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calib.core.errors import BadInputError, NotFittedError
from calib.fit.ipp import IppPowerFitter
from calib.model import ipp as model

TRUE = {"idle_power_w": 60.0, "activation_power_w": 10.0, "const_sm_power_w": 0.5, "sm_beta": 1.1,
        "max_power_fp_w": 1.0, "ar_log_a_fp": 0.12, "max_power_int_w": 0.8, "max_power_sfu_w": 0.6,
        "ar_log_a_sfu": 0.2, "max_power_global_w": 40.0, "ar_log_a_global": 0.1365, "ar_log_b": 1.0}
FORMS = {"fp": "log", "int": "linear", "sfu": "log", "global": "log"}
STRUCT = {"sm_count": 16, "sm_scaling": "log",
          "units": {u: {"scope": "chip" if u == "global" else "sm", "ar_function": f, "domain": "core"}
                    for u, f in FORMS.items()}}


def _table(seed: int = 0, noise: float = 0.3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = [{"workload": f"idle{i}", "role": "idle", **{f"act_{u}": 0.0 for u in FORMS}, "active_sms": 16}
            for i in range(4)]
    levels = [0.02, 0.05, 0.1, 0.2, 0.4, 0.7, 1.0]
    for u in FORMS:
        for lv in levels:
            act = {f"act_{v}": 0.0 for v in FORMS}
            act[f"act_{u}"] = lv if u != "global" else lv * 0.1
            act["act_int"] = max(act["act_int"], 0.03)  # loop overhead
            rows.append({"workload": f"{u}_{lv}", "role": "unit", **act, "active_sms": 16})
    for n in (1, 2, 4, 8, 12, 16):
        rows.append({"workload": f"sm{n}", "role": "sm_sweep", "act_fp": 0.8, "act_int": 0.05, "act_sfu": 0.0,
                     "act_global": 0.05, "active_sms": n})
    df = pd.DataFrame(rows)
    act = {u: df[f"act_{u}"].to_numpy() for u in FORMS}
    running = (df["role"] != "idle").to_numpy()
    p = model.power(TRUE, model.design(STRUCT, act, running, df["active_sms"].to_numpy(float)))
    df["power_w"] = p + rng.normal(0, noise, len(df))
    return df


def test_recovers_the_virtual_gpus_parameters_and_forms():
    """The IPP fitter on a virtual GTX 280 campaign's rows (fitted/sim-gtx280.samples.csv, recorded by
    `calib run`, with the settings that run used, its thermal fit's temperature correction included)
    recovers the hidden physics: every unit's access-rate form, and every parameter with a truth within
    the uncertainty the fit states (tests/recovery_rule.py). The test used to make its rows with the
    fitter's own model equations; the truth here is the simulator's (microbench.truth), never the fit's
    form. Without the temperature correction (power not referred to the idle temperature), the SFU and
    FDS forms flip."""
    import json
    import warnings
    from pathlib import Path

    from calib.fit.uncertainty import annotate_identifiability
    from microbench.truth import ar_forms, ground_truth
    from recovery_rule import failures, judge

    root = Path(__file__).resolve().parents[1]
    doc = json.loads((root / "fitted" / "sim-gtx280.json").read_text())
    settings = doc["fit"]["power"]["settings"]
    assert settings["temperature_correction"]["sigma_w_per_c"] > 0
    df = pd.read_csv(root / "fitted" / "sim-gtx280.samples.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = IppPowerFitter(**settings).fit(df)
    # every unit's hidden form but SFU's. On the single-unit campaign the data preferred SFU's log form by
    # 2.1 BIC only (less than positive evidence); with the standard campaign's training mixes (issue 29)
    # they prefer it by 16.9: the shared-activation pool's form (a union of independent activities) is
    # not the physics' overlap (a share of the smaller units' activation), and SFU pooled with the log
    # form absorbs part of the difference in the all-pipes mix (SFU is linear, outside the overlap, in
    # the simulator). With the smooth-toe curves (the units' power linear below AR 1e-3, where the
    # model's log is clamped at 0), by 13.6-31.7 on seeds 0-7 (27.0 on this one): SFU reaches only AR 0.1
    # to 0.25, and in its kernels INT's loop overhead (AR 1e-3 to 2e-3) sits on the physics' toe, which
    # the log SFU absorbs (residual of sfu/w1 -0.25 W with SFU linear). Bounded here so that a further
    # drift fails; its MaxPower's error is judged below.
    truth_forms = ar_forms("gtx280")
    wrong = {u for u, v in f.forms_.items() if v != truth_forms[u]}
    assert wrong <= {"sfu"}, wrong
    if wrong:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = IppPowerFitter(**dict(settings, ar_forms=truth_forms, shared_activation="on" if f.shared_ else "off")
                               ).fit(df, uncertainty=False)
        assert g.result_.bic - f.result_.bic < 40.0
    sec = f.section_
    annotate_identifiability(sec)
    truth = ground_truth("gtx280")
    rows = [{"parameter": f"power.{n}", "truth": truth[f"power.{n}"]["value"], "fitted": p.value,
             "stderr_total": p.stderr_total} for n, p in sec.params.items() if f"power.{n}" in truth]
    assert len(rows) == sum(1 for k in truth if k.startswith("power."))      # every power truth is fitted
    verdicts = judge(rows, {"power": sec.stats.get("identifiability") or []})
    assert failures(verdicts) == []


def test_fixed_forms_are_respected_and_linear_sm_scaling_selectable():
    df = _table(1)
    f = IppPowerFitter(ar_forms={u: "linear" for u in FORMS}, sm_scaling="linear", sm_count=16,
                       chip_units=["global"]).fit(df)
    assert f.forms_ == {u: "linear" for u in FORMS} and f.sm_scaling_ == "linear"
    # the misspecified model fits worse than the true one
    g = IppPowerFitter(sm_count=16, chip_units=["global"]).fit(df)
    assert g.result_.bic < f.result_.bic


def test_unit_that_never_varies_is_dropped_with_warning():
    df = _table()
    df["act_tex"] = 0.0
    with pytest.warns(UserWarning, match="unit tex: activity is 0 in every sample; not fitted"):
        f = IppPowerFitter(sm_count=16, chip_units=["global"]).fit(df)
    assert "tex" not in f.units_


def test_model_power_and_its_jacobian_match_the_equations():
    """The fitter's inner loop is the model's own power and analytic Jacobian (calib.model.ipp): power
    against eqs. (13)-(16), (22) written out by hand for one row, and the Jacobian against central
    differences (a wrong derivative steers the fit and its standard errors)."""
    df = _table()
    act = {u: df[f"act_{u}"].to_numpy() for u in FORMS}
    running = (df["role"] != "idle").to_numpy()
    n = df["active_sms"].to_numpy(float)
    temp = np.linspace(50, 70, len(df))
    d = model.design(STRUCT, act, running, n, temp, 0.4, 55.0)
    i = int(np.flatnonzero(df["workload"] == "sm4")[0])  # fp 0.8, int 0.05, global 0.05 on 4 of 16 SMs
    s = np.log10((10 - 1.1) / 16 * 4 + 1.1)
    fp = 1.0 * max(0.0, 0.12 * np.log(0.8) + 1.0)
    glob = 40.0 * max(0.0, 0.1365 * np.log(0.05) + 1.0)
    hand = 60.0 + 10.0 + s * (16 * 0.5 + 16 * fp + 16 * 0.8 * 0.05 + glob) + 0.4 * (temp[i] - 55.0)
    assert model.power(TRUE, d)[i] == pytest.approx(hand, rel=1e-12)
    jac = model.jacobian(TRUE, d)
    for name in ("sm_beta", "ar_log_a_fp", "max_power_global_w", "const_sm_power_w"):
        h = 1e-6 * max(1.0, abs(TRUE[name]))
        up, dn = dict(TRUE), dict(TRUE)
        up[name] += h
        dn[name] -= h
        num = (model.power(up, d) - model.power(dn, d)) / (2 * h)
        assert np.allclose(jac[name], num, rtol=1e-5, atol=1e-6), name


def test_the_per_access_share_is_eq_9_with_a_line_beside_the_log_and_its_jacobian_is_exact():
    """``ar_linear_share`` s: a log unit's AR' is s AR + (1 - s) max(0, a ln AR + b) (calib.model.arfunc),
    written out by hand for one row; 1 at AR = 1 (MaxPower stays the power at AR = 1); the Jacobian in s
    and the slopes against central differences, with the shared-activation pool on (its overlap moves with
    s too); and a file without the share predicts as with s = 0."""
    df = _table()
    act = {u: df[f"act_{u}"].to_numpy() for u in FORMS}
    running = (df["role"] != "idle").to_numpy()
    n = df["active_sms"].to_numpy(float)
    vals = {**TRUE, "ar_linear_share": 0.2}
    d = model.design(STRUCT, act, running, n)
    i = int(np.flatnonzero(df["workload"] == "sm4")[0])  # fp 0.8, int 0.05, global 0.05 on 4 of 16 SMs
    s = np.log10((10 - 1.1) / 16 * 4 + 1.1)
    fp = 0.2 * 0.8 + 0.8 * max(0.0, 0.12 * np.log(0.8) + 1.0)
    glob = 40.0 * (0.2 * 0.05 + 0.8 * max(0.0, 0.1365 * np.log(0.05) + 1.0))
    hand = 60.0 + 10.0 + s * (16 * 0.5 + 16 * fp + 16 * 0.8 * 0.05 + glob)
    assert model.power(vals, d)[i] == pytest.approx(hand, rel=1e-12)
    assert model.unit_power(vals, "fp", "log", 1.0)[0] == pytest.approx(1.0, rel=1e-12)
    assert np.array_equal(model.power(TRUE, d), model.power({**TRUE, "ar_linear_share": 0.0}, d))
    pooled = {**STRUCT, "shared_activation": {"units": ["fp", "sfu"]}}
    mix = {**act, "sfu": np.where(act["fp"] > 0, 0.3, act["sfu"])}
    dp = model.design(pooled, mix, running, n)
    vp = {**vals, "shared_activation_frac": 0.3}
    jac = model.jacobian(vp, dp)
    for name in ("ar_linear_share", "ar_log_a_fp", "ar_log_a_global", "shared_activation_frac"):
        h = 1e-6
        up, dn = dict(vp), dict(vp)
        up[name] += h
        dn[name] -= h
        num = (model.power(up, dp) - model.power(dn, dp)) / (2 * h)
        assert np.allclose(jac[name], num, rtol=1e-5, atol=1e-6), name
    assert np.ptp(jac["ar_linear_share"]) > 0.1


def test_auto_linear_share_is_chosen_where_the_rows_have_one_and_not_where_they_have_none():
    """``linear_share="auto"``: on rows whose log units draw 15 % of their power per access the search
    flips the share on and recovers it and the MaxPowers; on IPP's pure-log rows it keeps it off (BIC).
    Rows from the model's own equations with the share (a unit test of the search, not a recovery)."""
    import warnings

    true = {**TRUE, "ar_linear_share": 0.15}
    df = _table(noise=0.05)
    act = {u: df[f"act_{u}"].to_numpy() for u in FORMS}
    running = (df["role"] != "idle").to_numpy()
    d = model.design(STRUCT, act, running, df["active_sms"].to_numpy(float))
    with_share = df.assign(power_w=model.power(true, d) + np.random.default_rng(1).normal(0, 0.05, len(df)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        on = IppPowerFitter(sm_count=16, chip_units=["global"], linear_share="auto").fit(with_share, uncertainty=False)
        off = IppPowerFitter(sm_count=16, chip_units=["global"], linear_share="off").fit(with_share, uncertainty=False)
        pure = IppPowerFitter(sm_count=16, chip_units=["global"], linear_share="auto").fit(
            _table(noise=0.05), uncertainty=False)
    assert on.share_ and not off.share_ and not pure.share_
    v = on.section_.values()
    assert v["ar_linear_share"] == pytest.approx(0.15, abs=0.03)
    for u in ("fp", "sfu", "global"):
        assert v[f"max_power_{u}_w"] == pytest.approx(true[f"max_power_{u}_w"], rel=0.03), u
    assert on.result_.bic < off.result_.bic - 10
    assert "ar_linear_share" not in pure.section_.values()


def test_unknown_memory_unit_is_refused_by_the_cli(cli, tmp_path):
    # a typo in --mem-units must not silently move the memory units to the core domain
    from calib.core.samples import write_samples

    src = tmp_path / "t.csv"
    write_samples(_table(), src)
    rc, out, err = cli("fit", str(src), "-o", str(tmp_path / "p.json"), "--mem-units", "bogus")
    assert rc == 2
    assert "memory unit(s) bogus not in the table" in err
    assert not (tmp_path / "p.json").exists()


@pytest.mark.parametrize("settings,msg", [
    (dict(ar_forms="linear"), r"setting ar_forms='linear' is not valid \(expected one of 'auto' or a mapping of units"),
    (dict(sm_scaling="logarithmic"), r"setting sm_scaling='logarithmic' is not valid \(expected one of 'auto', 'log', "
                                     r"'linear'\)"),
    (dict(ar_forms={"fp": "cubic"}), r"setting ar_forms=\{'fp': 'cubic'\} is not valid"),
    (dict(sm_count=0), r"setting sm_count=0 is not valid \(expected an integer in \[1, 1024\]\)"),
    (dict(linear_share="maybe"), r"setting linear_share='maybe' is not valid \(expected one of 'auto', 'on', 'off'\)"),
])
def test_settings_are_validated_by_fit_not_silently_replaced(settings, msg):
    """A mistyped setting is refused by fit, naming the setting (it once ran BIC selection instead of
    the given forms, and a mistyped SM scaling became linear)."""
    f = IppPowerFitter(**settings)
    assert f.get_params()[next(iter(settings))] == next(iter(settings.values()))  # stored unchanged
    with pytest.raises(BadInputError, match="IppPowerFitter: " + msg):
        f.fit(_table())


def test_refit_from_stored_settings_reproduces_the_section():
    """The section records the fitter's settings, so that Fitter(**settings).fit(rows) is the refit."""
    first = IppPowerFitter(sm_count=16, chip_units=["global"]).fit(_table())
    sec = first.section_
    assert sec.settings == first.settings() and sec.settings["sm_count"] == 16
    again = IppPowerFitter(**sec.settings).fit(_table()).section_
    assert again.values() == pytest.approx(sec.values(), rel=1e-9)
    assert sec.covariance is not None and sec.covariance.names == tuple(n for n, p in sec.params.items() if p.vary)
    with pytest.raises(NotFittedError, match="IppPowerFitter is not fitted yet"):
        IppPowerFitter().section()


# One virtual Titan X campaign's IPP training rows (sim:titanx, standard campaign, noise seed 6), recorded
# by `calib run` and kept as a table: the warm-started greedy form search used to stop there with SHARED
# linear and ALU/FDS log (BIC -71), while 18 of 20 seeds chose ALU and FDS linear (BIC -133 on these rows).
# These rows (and the other recorded rows below) come from the presets' earlier unit curve, the clamped log
# plus 8 % per access, which the per-access share (linear_share) copies exactly: the tests of the search
# hold the pure log (linear_share="off"), which these rows do not fit by construction. With the share on,
# the search reaches the physics' own forms on them (BIC -816 on seed 6), a recovery by construction.
TITANX_S6 = dict(mem_units=["global", "local"], sm_count=24, chip_units=["l2", "global", "local"],
                 warp_issue_per_cycle=4.0, default_clocks={"core_mhz": 975.0, "mem_mhz": 3505.0},
                 temperature_correction={"sigma_w_per_c": 0.3135139838305873, "idle_temp_c": 40.5},
                 linear_share="off", dispatch_stage="off")
#: (the dispatch stage off: these tests are about the access-rate form search; on these rows, recorded
#: before the smooth-toe curves, the stage is taken, BIC -620 against -233, with ALU, SFU and SHARED linear)


def test_form_search_is_not_stuck_where_a_cold_restart_finds_a_better_flip():
    """The warm-started greedy search used to stop on these rows with SHARED linear and ALU/FDS log (BIC
    -71) while 18 of 20 seeds chose ALU and FDS linear (BIC -133). With the shared-activation term
    searched beside the forms (issue 29), the structure is ALU, FDS and SFU linear with the term on (BIC
    -226; the hidden SFU is linear too); without it, the search on these rows still stops at SHARED linear
    (BIC -91), so the search itself is checked: no single flip of the chosen structure, refitted from the
    default start and the random starts, has a lower BIC."""
    import warnings
    from pathlib import Path

    df = pd.read_csv(Path(__file__).parent / "data" / "ipp_titanx_seed6_rows.csv")
    f = IppPowerFitter(**TITANX_S6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the identifiability notes of REG/FDS are not the point here
        f.fit(df, uncertainty=False)  # the search only
    linear = sorted(u for u, v in f.forms_.items() if v == "linear")
    assert {"alu", "fds"} <= set(linear) and "shared" not in linear, linear
    assert f.result_.bic < -150
    for what in f._flips():
        trial = f.struct_.flip(what, f)
        best = min((r.bic for r in f._fits_from(trial, [None, *f._random_starts(f.result_)])), default=np.inf)
        assert best >= f.result_.bic - 1e-6, (what, best, f.result_.bic)


def test_form_alternatives_several_flips_away_cover_the_units_every_instruction_touches():
    """REG and FDS (touched by every instruction), ALU, SFU and SHARED trade power when several
    access-rate forms change together. On the recorded Titan X seed the chosen structure (ALU and FDS
    linear) puts REG at 1.4 W and FDS at 0.4 W against a truth of 1.0 and 0.8; the structure one flip
    away that would show it (FDS log) fits worse than chi-square(1) allows, the one three flips away
    (SFU and SHARED linear, FDS log; the hidden physics' own) fits within chi-square(3). The total
    standard errors must reach the truth of all five units; with single flips only (389c41f), no
    multi-flip structure is in the set and REG's truth is 2.8 total standard errors away.

    The rows: sim:titanx, standard campaign, noise seed 3 (tests/benchmarks/make_seed_sessions.py), the
    IPP training rows and the 8 held-out mixes at the default clocks; the held-out mixes set the
    discrepancy scale that widens the chi-square gates."""
    import warnings
    from pathlib import Path

    from microbench.truth import ground_truth

    df = pd.read_csv(Path(__file__).parent / "data" / "ipp_titanx_seed3_rows.csv.gz")
    settings = dict(TITANX_S6, temperature_correction={"sigma_w_per_c": 0.3187742940292961, "idle_temp_c": 40.5})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = IppPowerFitter(**settings).fit(df)
    assert {"alu", "fds"} <= {u for u, v in f.forms_.items() if v == "linear"}
    truth = ground_truth("titanx")
    sec = f.section_
    for u in ("reg", "fds", "sfu", "shared", "alu"):
        p = sec[f"max_power_{u}_w"]
        t = truth[f"power.max_power_{u}_w"]["value"]
        assert abs(p.value - t) <= 2 * p.stderr_total, (u, p.value, p.stderr_total, t)


# One virtual MI300X campaign's IPP training rows (sim:mi300x, standard campaign with main's training
# mixes, noise seed 0; the session of fitted/sim-mi300x at 51f964f, recorded by `calib run`), and the
# fitter settings `calib fit` gives that session with the secant sigma of the thermal section.
MI300X_S0 = dict(mem_units=["hbm"], sm_count=304, chip_units=["l2", "hbm"], warp_issue_per_cycle=2.0,
                 default_clocks={"core_mhz": 2100.0, "mem_mhz": 1300.0},
                 temperature_correction={"sigma_w_per_c": 0.8084441189277356, "idle_temp_c": 45.0},
                 linear_share="off")  # the earlier curve, as for TITANX_S6


def test_a_5_percent_change_of_sigma_does_not_move_a_maxpower_by_more_than_2_percent():
    """The temperature correction sigma x (temp_c - idle_temp_c) is a few % of these rows' power, so
    sigma x 0.95 or x 1.05 may move a MaxPower by a fraction of that, not more: bound 2 % of the value at
    sigma x 1.00. Before (one-parameter hops not among the search's restarts) the fit landed in an optimum
    3.8 % worse by sum of squares at x 0.95 and x 1.05 (chisqr 4720 and 4697 against 4533 at x 1.00): L2
    MaxPower 23.1 / 19.5 / 23.1 W (+18 %), HBM 125.9 / 117.5 / 125.3 W (+7 %), L1 and LDS +12 %, SALU
    +9 %. Independent route for the optimum: the chosen structure refitted at x 0.95 from the x 1.00
    solution (and the reverse), and from 12 random starts around its own (each access-rate slope and
    the shared share scaled by a log-uniform factor in [0.8, 1.25]: a different search), reaches no
    lower sum of squares than the fit's own."""
    import warnings
    from pathlib import Path

    df = pd.read_csv(Path(__file__).parent / "data" / "ipp_mi300x_seed0_rows.csv.gz")
    sigma = MI300X_S0["temperature_correction"]["sigma_w_per_c"]
    fits = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # identifiability notes are not the point here
        for m in (0.95, 1.0, 1.05):
            tc = {"sigma_w_per_c": sigma * m, "idle_temp_c": 45.0}
            fits[m] = IppPowerFitter(**dict(MI300X_S0, temperature_correction=tc)).fit(df, uncertainty=False)
    ref = fits[1.0]
    ref_v = {p.name: p.value for p in ref.params_}
    for m in (0.95, 1.05):
        f = fits[m]
        assert (f.forms_, f.sm_scaling_, f.shared_, f.dispatch_) == (ref.forms_, ref.sm_scaling_, ref.shared_,
                                                                     ref.dispatch_), m
        v = {p.name: p.value for p in f.params_}
        moved = {n: v[n] / ref_v[n] - 1 for n in ref_v if n.startswith("max_power_")}
        assert len(moved) == 11 + ref.dispatch_  # the 11 CU and chip units (and the dispatch stage)
        assert max(abs(x) for x in moved.values()) < 0.02, (m, moved)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            other = f._fit(f.struct_, ref_v)
            back = ref._fit(ref.struct_, v)
        assert other.chisqr >= f.result_.chisqr * (1 - 1e-6), (m, other.chisqr, f.result_.chisqr)
        assert back.chisqr >= ref.result_.chisqr * (1 - 1e-6), (m, back.chisqr, ref.result_.chisqr)
    rng = np.random.default_rng(7)
    for m, f in fits.items():
        v = {p.name: p.value for p in f.params_ if p.vary}
        nonlin = [n for n in v if n.startswith("ar_log_a_") or n == model.SHARED_PARAM]
        starts = [{**v, **{n: v[n] * float(np.exp(rng.uniform(np.log(0.8), np.log(1.25)))) for n in nonlin}}
                  for _ in range(12)]
        best = min(r.chisqr for r in f._fits_from(f.struct_, starts))
        assert f.result_.chisqr <= best * (1 + 1e-6), (m, f.result_.chisqr, best)


# One virtual Titan X campaign's IPP training rows from the standard campaign before the training mixes
# (branch `sigma` at cd40a89, noise seed 0), with the secant sigma `calib fit` gives that session.
TITANX_NOMIX_S0 = dict(TITANX_S6, temperature_correction={"sigma_w_per_c": 0.29533216817510516,
                                                          "idle_temp_c": 40.20954003407155})


def test_auto_shared_activation_reaches_the_better_held_setting_whatever_the_warm_start_says():
    """On these rows the search from the all-log start ends with the shared-activation term off (BIC -91)
    and the structure with the term flipped on, warm-started from there, reads 27 BIC worse; the second
    search from the other setting was skipped beyond 10, although the search with the term held on ends
    at BIC -247 (and at sigma x 0.95 and x 1.05 the first search found it: titanx's MaxPowers swung by
    -47..+40 % between sigma 0.3093 and 0.2953). Expected value from an independent route: the better of
    the two searches with the term held off and held on. The search with the term held off ends at -91 or,
    on another machine's floating-point rounding (OpenBLAS picks its kernels by CPU), at -170 (seen on 28
    Nov 2026): a greedy search over forms among near-tied optima; the premise is the gap of at least 50."""
    import warnings
    from pathlib import Path

    df = pd.read_csv(Path(__file__).parent / "data" / "ipp_titanx_nomix_seed0_rows.csv.gz")
    bic = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for sh in ("off", "on", "auto"):
            f = IppPowerFitter(**dict(TITANX_NOMIX_S0, shared_activation=sh)).fit(df, uncertainty=False)
            bic[sh] = f.result_.bic
            if sh == "auto":
                assert f.shared_, bic
    assert bic["on"] < bic["off"] - 50, bic
    assert bic["auto"] <= min(bic["on"], bic["off"]) + 1e-6, bic


def test_auto_shared_activation_reaches_the_better_setting_on_the_real_titan_x_microbenchmarks():
    """Issue 29: with ``shared_activation="auto"`` the structure search from the all-log start kept the
    term off on the GTX Titan X microbenchmarks of Guerreiro et al. (TPDS 2019, /work/shared/data/
    guerreiro-gtxtitanx, the 102 rows at the default clocks 975/3505 MHz), BIC 291.7, although the search
    with the term held on ends at 283.9 (tests/benchmarks/identify_titanx_apps.py). The second start
    from the other setting (IppPowerFitter._other_shared) reaches it. Expected value from an independent
    route: the better of the two searches with the term held off and held on."""
    import warnings

    from conftest import SHARED
    from calib.importers.gpmtool import read

    tx = read(SHARED / "data" / "guerreiro-gtxtitanx" / "tpds2019_micro_named_gtxtitanx.csv")
    core, mem = float(tx["ref_core_mhz"].iloc[0]), float(tx["ref_mem_mhz"].iloc[0])
    train = tx[np.isclose(tx["core_mhz"], core) & np.isclose(tx["mem_mhz"], mem)].reset_index(drop=True)
    train = train.assign(role=np.where(train["workload"].astype(str).str.lower() == "idle", "idle", "unit"))
    bic = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for sh in ("off", "on", "auto"):
            f = IppPowerFitter(sm_count=24, chip_units=["L2", "DRAM"], mem_units=["DRAM"], shared_activation=sh,
                               default_clocks={"core_mhz": core, "mem_mhz": mem}).fit(train, uncertainty=False)
            bic[sh] = (f.result_.bic, f.shared_)
    assert bic["on"][0] < bic["off"][0] - 5.0, bic  # the data prefer the term (by 7.8)
    assert bic["auto"][1] is True, bic
    assert bic["auto"][0] == pytest.approx(bic["on"][0], abs=1e-6), bic


def test_the_standard_campaigns_training_mixes_let_the_data_choose_the_shared_activation():
    """Issue 29: the single-unit sweeps never run two pipes at high access rate together, so on gtx280
    (pipes overlapping by 15 % of their activation in the simulator's physics) the search kept the
    shared-activation term off and every pipe absorbed the overlap. The standard campaign's training
    mixes (microbench.benchmarks.TRAINING_MIXES) measure units drawing power together: on the recorded
    campaign (fitted/sim-gtx280.samples.csv, the settings its file records) the term is chosen and fp,
    const and tex come within 15 / 7.5 / 0.2 %; the same rows without the mixes keep it off and miss by
    19 / 11 / 6 %. The truths are the simulator's (microbench.truth), read only here. Figures of seeds 0-4
    with the smooth-toe unit curves and the per-access share (identify_results.md, session 10): with the
    mixes the term is chosen on seeds 0 and 1 (BIC 2.7 and 0.6 better; fp -14.8 / -15.2 %, const -7.4 /
    -7.9 %, tex -0.1 / -0.2 %) and not on seeds 2-4 (1.9-3.0 worse; fp -21 to -23 %); without them never
    (fp -18.2 to -20.5 %, const -10.4 to -11.4 %, tex -4.7 to -5.6 %). With the curves of before (the
    clamped log plus 8 % per access, which the share copies) the term was chosen on all five."""
    import json
    import warnings
    from pathlib import Path

    from microbench.truth import ground_truth

    root = Path(__file__).resolve().parents[1]
    settings = json.loads((root / "fitted" / "sim-gtx280.json").read_text())["fit"]["power"]["settings"]
    df = pd.read_csv(root / "fitted" / "sim-gtx280.samples.csv")
    mixes = df["workload"].astype(str).str.startswith("train_")
    assert mixes.sum() >= 12
    truth = ground_truth("gtx280")
    err = {}
    for name, rows in (("with", df), ("without", df[~mixes])):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f = IppPowerFitter(**settings).fit(rows, uncertainty=False)
        err[name] = {u: 100 * (f.section_.value(f"max_power_{u}_w") / truth[f"power.max_power_{u}_w"]["value"] - 1)
                     for u in ("fp", "const", "tex")}
        err[name]["shared"] = f.shared_
    assert err["with"]["shared"] is True, err
    assert abs(err["with"]["fp"]) < 17.0 and abs(err["with"]["const"]) < 9.0 and abs(err["with"]["tex"]) < 3.0, err
    assert err["without"]["shared"] is False, err
    assert err["without"]["fp"] < -17.0 and err["without"]["const"] < -10.0 and err["without"]["tex"] < -4.0, err


#: the fitter settings of a standard campaign on sim:gtx580_nonadd, seed 0 (its thermal fit's correction)
GTX580_NONADD_S0 = {"mem_units": ["global", "local"], "sm_count": 16, "chip_units": ["l2", "global", "local"],
                    "warp_issue_per_cycle": 1.0, "default_clocks": {"core_mhz": 1544.0, "mem_mhz": 2004.0},
                    "temperature_correction": {"sigma_w_per_c": 0.26797316238276175, "idle_temp_c": 35.217356281607955}}


@pytest.fixture(scope="module")
def nonadd_dispatch_fits():
    """sim:gtx580_nonadd seed 0's standard-campaign rows (tests/data/ipp_gtx580_nonadd_seed0_rows.csv.gz:
    its power benchmarks, SM sweep, training mixes and held-out mixes at the default clocks) fitted with
    the dispatch stage chosen by the data and held off."""
    import warnings
    from pathlib import Path

    df = pd.read_csv(Path(__file__).parent / "data" / "ipp_gtx580_nonadd_seed0_rows.csv.gz")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # without the stage only the values are read: no error bars (the multi-start and jackknives cost ~10 s)
        return df, {s: IppPowerFitter(**GTX580_NONADD_S0, dispatch_stage=s).fit(df, uncertainty=s == "auto")
                    for s in ("auto", "off")}


def test_the_dispatch_stage_is_chosen_where_the_gpu_has_one_and_each_pipe_is_its_own_increment(nonadd_dispatch_fits):
    """sim:gtx580_nonadd draws a per-SM issue/dispatch stage (1.8 W at full issue, following the pipes'
    summed access rate to the power 0.4: microbench/devices/sim/physics.py), which the model's log-form
    dispatch unit is not a copy of. Without the stage every pipe's MaxPower absorbs a share of it: FP, INT
    and ALU +66 %, +69 %, +110 % (1.82, 1.86, 1.05 W against 1.1, 1.1, 0.5). With it (the training mixes
    left out one at a time predicted better, Wilcoxon p 0.032 over 15 mix workloads) they are +4 %,
    +13 %, +7 % (1.15, 1.24, 0.53 W) and their total errors cover them; the stage's own MaxPower is
    1.88 +/- 1.27 W (truth 1.8: it follows nearly the sum REG follows); the held-out mixes' MAPE (no
    temperature term) falls from 2.0 % to 0.9 %. The rows are stored exactly: rounded to 9 digits, the
    search without the stage lands in another optimum (BIC 148 instead of 113)."""
    from microbench.truth import ground_truth

    df, fits = nonadd_dispatch_fits
    truth = ground_truth("gtx580_nonadd")
    on, off = fits["auto"], fits["off"]
    assert on.dispatch_ and "dispatch_stage" in on.section_.structure and not off.dispatch_
    assert on.section_.structure["dispatch_stage"]["units"] == ["fp", "int", "sfu", "alu", "shared", "const", "tex", "l1"]
    for u in ("fp", "int", "alu"):
        t = truth[f"power.max_power_{u}_w"]["value"]
        p_on, p_off = on.section_[f"max_power_{u}_w"], off.section_[f"max_power_{u}_w"]
        assert abs(p_on.value / t - 1) <= 0.15, (u, p_on.value, t)
        assert abs(p_on.value - t) <= 2 * p_on.stderr_total, (u, p_on.value, p_on.stderr_total, t)
        assert p_off.value / t - 1 >= 0.5, (u, p_off.value, t)
    iss = on.section_["max_power_dispatch_w"]
    assert abs(iss.value - truth["power.max_power_dispatch_w"]["value"]) <= 2 * iss.stderr_total
    held = df[df["role"] == "heldout"]
    from calib.model.ipp import IppPowerModel

    def mape(f):  # noqa: ANN001, ANN202
        pred = IppPowerModel(f.section_).predict(held, use_temperature=False)
        return float(np.mean(np.abs(pred / held["power_w"].to_numpy(float) - 1)))
    assert mape(on) < 0.7 * mape(off), (mape(on), mape(off))


def test_the_dispatch_stage_is_not_taken_where_the_gpu_has_none():
    """On the committed sim:gtx580 campaign (no dispatch stage in its physics) the fitter leaves the stage
    out: the section has neither the structure key nor the unit (on seed 0's session the stage won by
    BIC, -591 against -576, and lost on left-out workloads, held-out MAPE 0.50 % against 0.34 %; on 8 of
    20 seeds it predicted left-out workloads better on the whole but the mixes only by chance)."""
    import json
    import warnings
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    settings = json.loads((root / "fitted" / "sim-gtx580.json").read_text())["fit"]["power"]["settings"]
    df = pd.read_csv(root / "fitted" / "sim-gtx580.samples.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = IppPowerFitter(**dict(settings, dispatch_stage="auto")).fit(df, uncertainty=False)
    assert not f.dispatch_ and "dispatch_stage" not in f.section_.structure and "dispatch" not in f.section_.structure["units"]


def test_the_dispatch_stage_total_errors_are_calibrated_on_its_gpu(nonadd_dispatch_fits):
    """Both ways, on the fit with the stage (sim:gtx580_nonadd seed 0, every power parameter with a truth:
    17): the truth within 2 stderr_total for 16 of 17 (L1 at 2.3), and the median |fitted - truth| /
    stderr_total 0.38, where every total doubled gives 0.19 (the 20-seed study: 96.2 % and 0.60,
    identify_results.md, session 11). Bounds: at least 85 % covered, median at least 0.3."""
    from microbench.truth import ground_truth

    _, fits = nonadd_dispatch_fits
    truth = ground_truth("gtx580_nonadd")
    z = np.array([abs(p.value - truth[f"power.{n}"]["value"]) / p.stderr_total
                  for n, p in fits["auto"].section_.params.items() if f"power.{n}" in truth and p.vary])
    assert len(z) == 17 and "max_power_dispatch_w" in fits["auto"].section_.params
    assert np.mean(z <= 2) >= 0.85, z
    assert np.median(z) >= 0.3, np.median(z)


def test_the_report_draws_the_dispatch_stage_at_its_derived_access_rates(nonadd_dispatch_fits):
    """The report's access-rate panel of the dispatch stage (which has no act_ column of its own) plots the
    rows at the pooled units' summed access rate, at most 1 (the panel had failed with a KeyError on the
    pooled units its one-unit design did not have)."""
    import matplotlib

    matplotlib.use("Agg")
    from calib.core.params import ParameterFile
    from calib.report.plots import Context, fig_ar_functions, with_predictions

    df, fits = nonadd_dispatch_fits
    sec = fits["auto"].section_
    pf = ParameterFile({"name": "sim:gtx580_nonadd", "sm_count": 16}, {}, {"power": sec})
    notes: list[str] = []
    fig, _ = fig_ar_functions(Context(pf, with_predictions(pf, df, notes), None, notes))
    ax = next(a for a in fig.axes if a.get_title().startswith("dispatch: log"))
    x = np.concatenate([c.get_offsets()[:, 0] for c in ax.collections])
    pool = sec.structure["dispatch_stage"]["units"]
    rows = df[df["role"].isin(("unit", "idle_kernel", "sm_sweep"))]
    rows = rows[rows["active_sms"].isna() | (rows["active_sms"] == 16)]
    want = np.minimum(rows[[f"act_{u}" for u in pool]].sum(axis=1).to_numpy(), 1.0)
    assert len(x) and np.allclose(np.sort(x), np.sort(want[want > 0]))


def test_the_dispatch_stage_needs_the_mixes_to_improve_beyond_chance():
    """The rule that keeps the dispatch stage (IppPowerFitter._mixes_better), on made-up left-out errors:
    15 mix workloads (2 rows each) all predicted better -> kept (one-sided Wilcoxon p 3e-5); 8 of 15 better
    and 7 worse by the same amounts -> not kept (p about 0.4); every non-mix workload better but the mixes
    not -> not kept (the stage's evidence is the mixes); a table without mixes is judged on every workload;
    fewer than 6 workloads cannot reach 5 % -> not kept."""
    f = IppPowerFitter()
    wl = np.repeat([f"w{i}" for i in range(30)], 2)
    mixes = np.arange(60) < 30                      # the first 15 workloads are mixes
    base = np.full(60, 2.0)
    f._workloads, f._mixes = wl, mixes
    better = base - np.linspace(0.1, 1.0, 60)
    assert f._mixes_better(better, base)
    step = np.repeat(np.linspace(0.1, 0.8, 15), 2)
    sign = np.repeat(np.where(np.arange(15) % 2 == 0, -1.0, 1.0), 2)  # 8 better, 7 worse
    mixed = base.copy()
    mixed[:30] += sign * step
    mixed[30:] -= 1.0
    assert not f._mixes_better(mixed, base)
    f._mixes = np.zeros(60, bool)                   # no mixes: every workload, 23 of 30 better
    assert f._mixes_better(mixed, base)
    f._workloads, f._mixes = wl[:10], mixes[:10]    # 5 mix workloads
    assert not f._mixes_better(better[:10], base[:10])


def test_a_gated_gpus_constants_are_what_its_launches_draw():
    """The truth of activation and Const_SM for a GPU whose idle SMs keep a share phi of their constant
    power while a kernel runs (sim:gtx580_nonadd, phi 0.3, microbench/truth.py) is what the physics draws
    for a kernel that uses no unit on n of N SMs, by an independent route: the line through
    physics.load_for at n = 1..N, whose intercept is the constant of a running kernel (A + phi c N = 69.76 W)
    and whose slope is one more SM's increment (c (1 - phi) = 0.84 W); the design values A = 64 W and
    c = 1.2 W are not."""
    from microbench.devices.sim.physics import load_for
    from microbench.devices.sim.presets import get_preset
    from microbench.truth import ground_truth

    p = get_preset("gtx580_nonadd")
    n = np.arange(1, p.sm_count + 1)
    core = np.array([load_for(p.power, {}, int(k), p.sm_count, 1.0, 1.0).dyn_core_w for k in n])
    slope, intercept = np.polyfit(n, core, 1)
    t = ground_truth("gtx580_nonadd")
    assert t["power.activation_power_w"]["value"] == pytest.approx(intercept, rel=1e-9)
    assert t["power.const_sm_power_w"]["value"] == pytest.approx(slope, rel=1e-9)
    assert intercept == pytest.approx(69.76) and slope == pytest.approx(0.84)
