"""The fan in the thermal network (issue 30) on a card whose temperature-controlled fan moves within a
campaign (sim:gtx580: duty 30 % + 3 %/C above 45 C, slew 8 %/s; sink-to-case conductance 3.5 + 12.0 x duty
W/C): the controller curve and the fan link fitted from the quick campaign against the preset's physics, and
`calib predict --trace` following the fan without a fan log and with one (``fan_pct``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest


@pytest.fixture(scope="module")
def gtx580(tmp_path_factory):
    from thermal_support import quick_campaign

    return quick_campaign(tmp_path_factory, "gtx580")


def test_controller_curve_and_fan_link_are_the_physics(gtx580):
    """The controller's floor, threshold, gain and slew and the fan link's conductance per unit duty are the
    preset's (fails on main: no controller is fitted and the fan link is a per-step regression)."""
    from microbench.devices.sim.presets import get_preset

    th = get_preset("gtx580").thermal
    _, pf = gtx580
    sec = pf["thermal_network"]
    assert abs(sec.value("fan_min_pct") - 100 * th.fan_min) <= 1.0
    assert abs(sec.value("fan_t0_c") - th.fan_t0_c) <= 1.5
    assert abs(sec.value("fan_gain_pct_per_c") / (100 * th.fan_gain_per_c) - 1.0) <= 0.10
    # the slew never limits the duty on the fit's 1 s bins (the fit is as good with it unlimited: the fitted
    # 9.2 %/s was wherever the optimizer stopped): named undetermined with the log's bound, which holds
    ctl = sec.structure["fan"]["controller"]
    assert ctl["undetermined"] == ["fan_slew_pct_per_s"]
    assert 0.3 * 100 * th.fan_slew_per_s <= ctl["slew_at_least_pct_per_s"] <= 100 * th.fan_slew_per_s  # 3.9 %/s
    assert abs(sec.value("fan_g_w_per_c") / th.g_sink_case_fan_w_per_c - 1.0) <= 0.10


def test_steep_thermostat_gain_is_named_undetermined(quick_run):
    """sim:gtx280's fan is a steep thermostat (27 % + 20.9 %/C of die temperature above 69.2 C): in the quick
    campaign its duty climbs to 38 % while the integer sensor moves about 1 C, and the least-squares gain
    came out 2.06 %/C (3.07 on the standard campaign), a slope diluted by the readings' rounding; with the
    memory hot spot weighed by the logged utilization (the controller's input, the sensor without it, is the
    die's more closely) 14.2 %/C, still 32 % off. The file must name the gain and start temperature
    undetermined (fan.controller.undetermined, a section warning, the parameters' descriptions) with a lower
    bound the truth respects, not publish the slope as measured. Catches: the diluted gain published as a
    measurement (the state before this check)."""
    from calib.core import params as P
    from microbench.devices.sim.presets import get_preset

    th = get_preset("gtx280").thermal
    pf = P.load(quick_run / "fitted" / "q.json")
    sec = pf["thermal_network"]
    ctl = sec.structure["fan"]["controller"]
    # the slew too: with the gain undetermined a slow slew stands in for it (tests/test_thermal_undetermined.py)
    assert ctl["undetermined"] == ["fan_gain_pct_per_c", "fan_t0_c", "fan_slew_pct_per_s"]
    # why: further from the truth than the 10 % a measured gain meets (gtx580, test above)
    assert abs(sec.value("fan_gain_pct_per_c") / (100 * th.fan_gain_per_c) - 1.0) > 0.2
    assert ctl["ramp"]["input_p95_c"] - ctl["ramp"]["input_p5_c"] < 3.0
    assert ctl["gain_at_least_pct_per_c"] <= 100 * th.fan_gain_per_c  # the bound holds against the truth
    assert "UNDETERMINED by this campaign" in sec["fan_gain_pct_per_c"].description
    assert "UNDETERMINED by this campaign" in sec["fan_t0_c"].description
    assert "UNDETERMINED" not in sec["fan_min_pct"].description  # the floor is measured (27 %)
    assert abs(sec.value("fan_min_pct") - 100 * th.fan_min) <= 1.0
    assert any(w.startswith("fan controller: fan_gain_pct_per_c and fan_t0_c are undetermined: the duty rose from 27 %")
               for w in sec.stats["warnings"])


def test_resolved_controller_is_not_named_undetermined(gtx580):
    """On sim:gtx580 the duty ramps 30-60 % over about 10 C: the gain is measured (within 10 % of the truth,
    test above) and must not be named undetermined (catches a span check that flags every controller); only
    the slew, which never limits the logged duty, is."""
    _, pf = gtx580
    sec = pf["thermal_network"]
    ctl = sec.structure["fan"]["controller"]
    assert "fan_gain_pct_per_c" not in ctl["undetermined"] and ctl["ramp"]["input_p95_c"] - ctl["ramp"]["input_p5_c"] >= 3.0
    assert not any(w.startswith("fan controller: fan_gain") for w in sec.stats.get("warnings", []))
    assert set(sec.stats["undetermined"]) == {"fan_slew_pct_per_s", "busy_heat_w"}


def test_trace_follows_the_fan_without_a_fan_log(gtx580, tmp_path, cli):
    """An unseen 20-minute sequence given only its power: the controller turns the predicted temperature
    into a duty that follows the logged one (RMSE under 3 points on a fan that moves 30-60 %), and the
    temperature RMSE against the readings with the fan log and without one are both under 1 C (0.86 C
    measured: the memory hot spot, 2 C, is not in a power trace). Catches a prediction that
    ignores the fan_pct column (same temperature with and without it) and a controller never stepped
    (duty stuck at idle)."""
    from calib.core.metrics import errors
    from calib.model.thermal_network import FosterNetwork, simulate_nodes
    from thermal_support import kernel_sequence

    d, pf = gtx580
    seq = kernel_sequence("gtx580")
    assert seq["fan_pct"].max() - seq["fan_pct"].min() >= 15  # the fan moves within the trace
    net = FosterNetwork.from_section(pf["thermal_network"])
    _, _, duty = simulate_nodes(net, seq["time_s"], seq["power_w"])
    assert errors(seq["fan_pct"], 100 * duty).rmse < 3.0
    out = {}
    for label, cols in (("power", ["time_s", "power_w", "temp_c"]), ("fan", ["time_s", "power_w", "temp_c", "fan_pct"])):
        tr = tmp_path / f"{label}.csv"
        seq[cols].to_csv(tr, index=False)
        code, _, err = cli("predict", d / "fitted" / "q.json", "--trace", tr, "-o", tmp_path / f"{label}_out.csv")
        assert code == 0, err
        out[label] = pd.read_csv(tmp_path / f"{label}_out.csv")["temp_c_pred"].to_numpy()
        assert errors(seq["temp_c"], out[label]).rmse < 1.0, label
    assert np.max(np.abs(out["power"] - out["fan"])) > 0.02  # 0.047 C measured: the controller follows well


def test_bad_fan_column_names_the_row(gtx580, tmp_path, cli):
    d, _ = gtx580
    tr = tmp_path / "t.csv"
    tr.write_text("time_s,power_w,fan_pct\n0,100,40\n1,100,140\n")
    code, _, err = cli("predict", d / "fitted" / "q.json", "--trace", tr, "-o", tmp_path / "o.csv")
    assert code == 2 and "row 2: column 'fan_pct': 140.0 is not a fan duty in [0, 100] %" in err


def test_report_shows_the_fan_curve_and_the_steps_from_power(gtx580):
    """The report's fan figure draws the fitted controller (its line is the controller's target at the
    plotted temperatures, rising at the fitted gain) and each thermal step predicted from its power within
    1 C RMSE of the readings (fails on main: no fan figure)."""
    from calib.core.session import read_session
    from calib.report.plots import Context, fig_fan

    d, pf = gtx580
    fig, cap = fig_fan(Context(pf, session=read_session(d / "logs" / "q")))
    left, right = fig.axes[:2]
    x, y = left.lines[0].get_data()
    sec = pf["thermal_network"]
    above = np.asarray(x) > sec.value("fan_t0_c") + 1.0
    slope = np.polyfit(np.asarray(x)[above & (np.asarray(y) < 99.0)], np.asarray(y)[above & (np.asarray(y) < 99.0)], 1)[0]
    assert slope == pytest.approx(sec.value("fan_gain_pct_per_c"), rel=1e-6)
    assert np.min(y) == pytest.approx(sec.value("fan_min_pct"), rel=1e-9)
    readings = [ln for ln in right.lines if ln.get_color() == "0.6"]
    preds = [ln for ln in right.lines if ln.get_color() == "#D55E00"]
    assert len(readings) == len(preds) >= 3
    err = np.concatenate([ln_p.get_ydata() - ln_r.get_ydata() for ln_r, ln_p in zip(readings, preds)])
    assert np.sqrt(np.mean(err ** 2)) < 1.0
    assert "controller" in cap
    assert "slew undetermined, at least" in cap  # a bound, not the fitted 9.2 %/s as a measurement


def test_calib_report_contains_the_fan_figure(gtx580, tmp_path, cli):
    """`calib report` on the fitted file (session found beside it) draws the fan figure: the section, its
    PNG and its caption are in index.html, not a 'skipped' note. Catches the figure dropped from the
    report's list (calib.report.plots.FIGURES) or skipped for want of the session's thermal steps."""
    import re

    d, _ = gtx580
    rc, _, err = cli("report", d / "fitted" / "q.json", "-o", tmp_path / "rep", "-q")
    assert rc == 0, err
    page = (tmp_path / "rep" / "index.html").read_text()
    m = re.search(r'<section id="fig-fan">(.*?)</section>', page, re.S)
    assert m is not None, "no fan section in the report"
    sec = m.group(1)
    assert '<img src="fig/fan.png"' in sec and "Not drawn" not in sec
    assert "the fan duty the fitted controller aims at against the sensor temperature" in sec
    assert "against the readings" in sec
    png = (tmp_path / "rep" / "fig" / "fan.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
