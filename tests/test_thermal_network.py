"""Thermal network (issue 14): Foster fits against the virtual GPU's network truth, pole-count selection,
temperature under an unseen kernel sequence, the leakage fixed point and runaway, the grid solver against
analytic cases, HotSpot files, and bad input."""

from __future__ import annotations

import math
from pathlib import Path
import warnings

import numpy as np
import pandas as pd
import pytest

from calib.core.errors import BadInputError
from calib.model import floorplan as F
from calib.model.thermal_network import (FosterNetwork, Leakage, foster_to_cauer, predict_trace, steady_state)
from thermal_support import quick_campaign as _campaign


@pytest.fixture(scope="module")
def two_pole(tmp_path_factory):
    return _campaign(tmp_path_factory, "gtx280_2pole")


@pytest.fixture(scope="module")
def one_pole(tmp_path_factory):
    return _campaign(tmp_path_factory, "gtx280_1pole")


def _slow(sec):
    """Indices (1-based) of the fitted poles the grid resolves: a node-form ladder may carry the die as a
    pole faster than the truth's grid (microbench.thermal_truth.GRID_S), which the truth counts in its
    direct term."""
    from microbench.thermal_truth import GRID_S

    return [i for i in range(1, sec.structure["poles"] + 1) if sec.value(f"tau{i}_s") >= GRID_S]


def _matched(sec, truth):
    """(fitted Param, truth value) for every resolved pole's tau and r (nearest dominant truth pole)."""
    out = []
    for i in _slow(sec):
        tau = sec[f"tau{i}_s"]
        j = int(np.argmin([abs(math.log(tau.value / d["tau_s"])) for d in truth["dominant"]]))
        out += [(tau, truth["dominant"][j]["tau_s"]), (sec[f"r{i}_c_per_w"], truth["dominant"][j]["r_c_per_w"])]
    return out


def _direct_c_per_w(sec):
    """The fitted direct term: r_direct plus the poles faster than the truth's grid (the die node)."""
    slow = _slow(sec)
    return sec.value("r_direct_c_per_w") + sum(sec.value(f"r{i}_c_per_w") for i in range(1, sec.structure["poles"] + 1)
                                               if i not in slow)


def test_two_pole_preset_recovers_both_time_constants(two_pole):
    from microbench.thermal_truth import network_truth

    _, pf = two_pole
    sec = pf["thermal_network"]
    truth = network_truth("gtx280_2pole")
    slow = _slow(sec)
    assert len(truth["dominant"]) == 2 and len(slow) == 2 and sec.structure["dominant_poles"] == 2
    for i, d in zip(slow, truth["dominant"]):
        assert abs(sec.value(f"tau{i}_s") - d["tau_s"]) <= 0.10 * d["tau_s"]
        assert abs(sec.value(f"r{i}_c_per_w") - d["r_c_per_w"]) <= 0.10 * d["r_c_per_w"]
    assert abs(_direct_c_per_w(sec) - truth["r_direct_c_per_w"]) <= 0.10 * truth["r_direct_c_per_w"]
    rmse = sec.structure["selection"]["rmse_c"]
    assert rmse["2"] < 0.5 * rmse["1"]  # the 2-pole step response is much closer than the 1-pole one
    # the pole count is chosen by BIC with AR(1) residuals (issue 30, b3d9215); the leave-one-step-out held-out
    # RMSE is computed for the chosen count only, so the 2-pole held-out error is compared with the 1-pole
    # in-sample one (a lower bound of its held-out error in practice). Measured on this quick campaign: BIC_AR1
    # -7227 (2 poles) against -6141 (1 pole); held-out 0.138 C (2 poles) against in-sample 0.385 C (1 pole)
    sel = sec.structure["selection"]
    assert sel["bic_ar1"]["2"] < sel["bic_ar1"]["1"]
    assert sel["cv_rmse_c"]["2"] < rmse["1"]


@pytest.mark.parametrize("fixture", ["two_pole", "one_pole"])
def test_stderr_and_stderr_total_against_truth(fixture, request):
    """Coverage: truth within 2 total standard errors; the statistical one is never larger than the total."""
    from microbench.thermal_truth import network_truth

    _, pf = request.getfixturevalue(fixture)
    sec = pf["thermal_network"]
    truth = network_truth("gtx280_2pole" if fixture == "two_pole" else "gtx280_1pole")
    for p, t in _matched(sec, truth):
        assert p.stderr is not None and p.stderr_total is not None and p.stderr <= p.stderr_total
        assert abs(p.value - t) <= 2.0 * p.stderr_total, (p, t)


def test_one_dominant_pole_is_chosen(one_pole):
    from microbench.thermal_truth import network_truth

    _, pf = one_pole
    sec = pf["thermal_network"]
    truth = network_truth("gtx280_1pole")
    slow = _slow(sec)
    assert len(truth["dominant"]) == 1 and len(slow) == 1 and sec.structure["dominant_poles"] == 1
    assert abs(sec.value(f"tau{slow[0]}_s") / truth["dominant"][0]["tau_s"] - 1.0) < 0.10
    assert not sec.structure["loop"]["runaway"]


def test_recovery_report_lists_the_network_truth(two_pole):
    import json

    d, _ = two_pole
    rep = json.loads((d / "fitted" / "q.recovery.json").read_text())
    rows = {r["parameter"]: r for r in rep["parameters"]}
    assert rows["thermal_network.dominant_poles"]["truth"] == 2.0 and rows["thermal_network.dominant_poles"]["fitted"] == 2.0
    slow = [r for r in rows.values() if r["parameter"].startswith("thermal_network.tau") and abs(r["truth"] - 129.2) < 0.1]
    assert len(slow) == 1 and abs(slow[0]["fitted"] / 129.2 - 1.0) < 0.10
    # the one rule (calib.fit.uncertainty.total_stderr): max(statistical, jackknife) plus form terms
    assert slow[0]["stderr_total"] >= slow[0]["stderr"] > 0


def test_unseen_kernel_sequence_rmse_below_one_degree(two_pole, tmp_path, cli):
    """A 20-minute random kernel sequence with idle gaps the fit never saw: RMSE <= 1 C through
    `calib predict --trace`; the 1-pole fit of the same steps is worse."""
    from calib.core.metrics import errors
    from calib.fit.thermal_network import ThermalNetworkFitter
    from calib.core.session import read_session
    from calib.segment import IdleBaseline, SessionData, session_samples, thermal_steps
    from thermal_support import kernel_sequence

    d, pf = two_pole
    seq = kernel_sequence("gtx280_2pole")
    trace = tmp_path / "trace.csv"
    seq.to_csv(trace, index=False)
    code, out, err = cli("predict", d / "fitted" / "q.json", "--trace", trace, "-o", tmp_path / "out.csv")
    assert code == 0, err
    res = pd.read_csv(tmp_path / "out.csv")
    assert len(res) == len(seq) and "temp_c_pred" in res.columns
    rmse = errors(res["temp_c"], res["temp_c_pred"]).rmse
    assert rmse <= 1.0
    assert f"RMSE against temp_c: {rmse:.3f} C" in out
    sess = read_session(d / "logs" / "q")
    df = session_samples(sess)
    idle = df[df["role"] == "idle"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = IdleBaseline(float(idle["temp_c"].mean()), None, float(idle["power_w"].mean()), None)
        one = ThermalNetworkFitter(poles=1).fit(SessionData(df, idle=base, thermal_steps=thermal_steps(sess))).network_
    assert errors(seq["temp_c"], predict_trace(one, seq)).rmse > 1.5 * rmse


def test_leakage_fixed_point_matches_settled_card(one_pole):
    """Three power levels: steady temperature within 1 C and power within 1 % of the settled virtual GPU."""
    from thermal_support import settled

    _, pf = one_pole
    net = FosterNetwork.from_section(pf["thermal_network"])
    assert net.leakage.form in ("linear", "exponential")
    for k in (3, 0, 1):  # sfu, fp32, dram thermal workloads: ~130, ~140, ~165 W
        s = settled("gtx280_1pole", k)
        ss = steady_state(net, s["cold_power_w"] - net.idle_power_w)
        assert not ss.runaway and 0 < ss.loop_gain < 1
        assert abs(ss.temp_c - s["temp_c"]) <= 1.0
        assert abs(ss.power_w - s["power_w"]) <= 0.01 * s["power_w"]


@pytest.fixture(scope="module")
def runaway(tmp_path_factory):
    return _campaign(tmp_path_factory, "gtx280_runaway")


def test_runaway_flagged_on_preset_built_to_run_away(runaway):
    _, pf = runaway
    sec = pf["thermal_network"]
    loop = sec.structure["loop"]
    assert loop["runaway"] is True and sec.structure["slowdown_temp_c"] == 95.0
    assert any(s["runaway"] for s in loop["steps"]) and not all(s["runaway"] for s in loop["steps"])
    assert any("thermal runaway" in w for w in sec.stats["warnings"])
    assert loop["runaway_run_power_w"] < max(s["run_power_w"] for s in loop["steps"])


def test_fixed_point_and_runaway_by_hand():
    net = FosterNetwork((0.2,), (50.0,), 0.0, 60.0, 100.0, Leakage("linear", sigma_w_per_c=2.0), 95.0)
    ss = steady_state(net, 10.0)  # theta = 0.2 (10 + 2 theta) -> theta = 2 / 0.6
    assert ss.temp_c == pytest.approx(60.0 + 2.0 / 0.6) and ss.loop_gain == pytest.approx(0.4)
    hot = FosterNetwork((0.2,), (50.0,), 0.0, 60.0, 100.0, Leakage("exponential", amp_w=5.0, k_per_c=0.1), 95.0)
    assert steady_state(hot, 5.0).runaway is False
    assert steady_state(hot, 80.0).runaway is True  # 0.2 (80 + 5 (e^(0.1 x) - 1)) > x up to 35 C above idle


def test_cauer_ladder_has_the_foster_impedance():
    r, tau = [0.02, 0.1, 0.05], [1.5, 20.0, 150.0]
    rs, cs = foster_to_cauer(r, tau)
    assert sum(rs) == pytest.approx(sum(r))
    for s in (1e-3, 0.05, 1.0):
        z = 0.0
        for R, C in reversed(list(zip(rs, cs))):
            z = 1.0 / (s * C + 1.0 / (R + z))
        assert z == pytest.approx(sum(ri / (1 + s * ti) for ri, ti in zip(r, tau)), rel=1e-9)


def test_trace_update_is_exact_for_any_step():
    net = FosterNetwork((0.1, 0.05), (20.0, 150.0), 0.01, 50.0, 100.0)
    t = np.sort(np.random.default_rng(0).uniform(0.0, 1000.0, 3000))
    t[0] = 0.0
    temp = net.simulate(t, np.where(t < 500.0, 200.0, 100.0))
    k = np.searchsorted(t, 499.0)
    assert temp[k] == pytest.approx(50.0 + net.step_rise_c(np.array([t[k]]), 100.0)[0], abs=1e-9)


# -- grid solver ---------------------------------------------------------------------------------------------

def _two_halves(side=0.01):
    return F.Floorplan((F.Block("left", side / 2, side, 0.0, 0.0), F.Block("right", side / 2, side, side / 2, 0.0)))


def test_grid_solver_uniform_slab_steady_and_transient():
    fp = _two_halves()
    rd, rs, cs = 0.02, [0.1, 0.05], [200.0, 3000.0]
    g = F.GridSolver(fp, rd, rs, cs, rows=16, cols=16)
    th = g.steady({"left": 50.0, "right": 50.0})
    die = th[:g.n_die]
    assert np.allclose(die, 100.0 * (rd + sum(rs)), rtol=0.01)
    # transient: the Cauer ladder's step response (the Foster sum) within 1 %
    net_r, net_tau = _cauer_to_foster(rs, cs)
    times = [10.0, 50.0, 200.0, 1000.0]
    out = g.transient(times, [{"left": 50.0, "right": 50.0}] * 4, dt_s=0.05)
    for t, row in zip(times, out):
        want = 100.0 * (rd + sum(r * (1 - math.exp(-t / tau)) for r, tau in zip(net_r, net_tau)))
        assert row[:g.n_die].mean() == pytest.approx(want, rel=0.01)


def _cauer_to_foster(rs, cs):
    """Poles/residues of a Cauer ladder (for the check above)."""
    n = len(rs)
    gm = np.zeros((n, n))
    for k in range(n):
        gm[k, k] += 1 / rs[k]
        if k + 1 < n:
            gm[k, k + 1] -= 1 / rs[k]
            gm[k + 1, k] -= 1 / rs[k]
            gm[k + 1, k + 1] += 1 / rs[k]
    a = -gm / np.array(cs)[:, None]
    lam, v = np.linalg.eig(a)
    b = np.zeros(n)
    b[0] = 1 / cs[0]
    res = v[0, :] * np.linalg.solve(v, b)
    return list((-res / lam).real), list((-1 / lam).real)


def test_grid_solver_two_blocks_against_the_fin_equation():
    """Two halves at different power over a die losing heat downwards: the 1-D fin solution."""
    side = 0.01
    fp = _two_halves(side)
    rd = 0.5
    g = F.GridSolver(fp, rd, [0.1], [100.0], rows=4, cols=200)
    p1, p2 = 80.0, 20.0
    th = g.steady({"left": p1, "right": p2})
    node = th[g.n_die]  # the package node under the die
    blocks = g.block_temps(th)
    area = side * side
    gv = 1.0 / (rd * area)                      # vertical conductance per area, W/(m^2 K)
    kt = F.K_SI_W_PER_M_K * F.T_CHIP_M
    m = math.sqrt(gv / kt)
    q1, q2 = p1 / (area / 2), p2 / (area / 2)
    a = (q2 - q1) / (2 * gv * math.cosh(m * side / 2))
    left = q1 / gv + a * math.sinh(m * side / 2) / (m * side / 2)
    right = q2 / gv - a * math.sinh(m * side / 2) / (m * side / 2)
    assert node == pytest.approx((p1 + p2) * 0.1, rel=1e-6)
    assert blocks["left"] - node == pytest.approx(left, rel=0.01)
    assert blocks["right"] - node == pytest.approx(right, rel=0.01)
    bm = F.GridSolver(fp, rd, [0.1], [100.0], mode="block").steady({"left": p1, "right": p2})
    assert bm[0] > bm[1]


# -- HotSpot files --------------------------------------------------------------------------------------------

def test_flp_ptrace_and_config_round_trip(tmp_path):
    from calib.fit.ipp import DIE_AREA_PRIOR

    fp = F.generic_floorplan(["fp", "int", "sfu", "shared", "l2", "global"], 30, ["l2", "global"], DIE_AREA_PRIOR)
    F.write_flp(fp, tmp_path / "gpu.flp")
    back = F.read_flp(tmp_path / "gpu.flp")
    assert back.names == fp.names
    assert F.flp_text(back) == F.flp_text(fp)
    for a, b in zip(back.blocks, fp.blocks):
        for f in ("width_m", "height_m", "left_m", "bottom_m"):
            assert getattr(a, f) == pytest.approx(getattr(b, f), rel=1e-8)
    bp = F.block_powers(fp, {"fp": 30.0, "global": 40.0, "l2": 5.0}, background_w=60.0)
    assert sum(bp.values()) == pytest.approx(135.0)
    rows = np.array([[bp[n] for n in fp.names], [0.5 * bp[n] for n in fp.names]])
    F.write_ptrace(tmp_path / "gpu.ptrace", fp.names, rows)
    names, back_rows = F.read_ptrace(tmp_path / "gpu.ptrace", fp)
    assert names == fp.names and np.allclose(back_rows, rows, rtol=1e-8)
    net = FosterNetwork((0.1, 0.05), (20.0, 150.0), 0.01, 50.0, 100.0)
    cfg = F.hotspot_config(net, fp, ambient_c=35.0)
    (tmp_path / "hotspot.config").write_text(F.config_text(cfg))
    back_cfg = F.read_config(tmp_path / "hotspot.config")
    assert back_cfg["ambient"] == pytest.approx(308.15) and back_cfg["model_type"] == "block"
    assert back_cfg["r_convec"] == pytest.approx(cfg["r_convec"]) and cfg["r_convec"] < net.r_total_c_per_w


# -- bad input ------------------------------------------------------------------------------------------------

def test_overlapping_and_gapped_floorplans_are_refused(tmp_path):
    (tmp_path / "over.flp").write_text("a 0.01 0.01 0 0\nb 0.01 0.01 0.005 0\n")
    with pytest.raises(BadInputError, match=r"over.flp: blocks 'a' and 'b' overlap"):
        F.read_flp(tmp_path / "over.flp")
    (tmp_path / "gap.flp").write_text("a 0.01 0.01 0 0\nb 0.01 0.01 0.02 0\n")
    with pytest.raises(BadInputError, match=r"gap.flp: gap in the floorplan: no block covers \(15, 5\) mm"):
        F.read_flp(tmp_path / "gap.flp")
    (tmp_path / "short.flp").write_text("a 0.01 0.01 0\n")
    with pytest.raises(BadInputError, match=r"short.flp: line 1: expected 'name width height left_x bottom_y"):
        F.read_flp(tmp_path / "short.flp")


def test_unit_without_block_is_refused():
    with pytest.raises(BadInputError, match=r"unit 'tensor' \(12 W\) has no block in the floorplan"):
        F.block_powers(_two_halves(), {"tensor": 12.0})


@pytest.mark.parametrize("rows, msg", [
    ("time_s,power_w\n0,100\n-1,120\n", "row 2: time -1 s is negative"),
    ("time_s,power_w\n0,100\n2,120\n1,90\n", "row 3: time 1 s does not come after the previous row's 2 s"),
    ("time_s,power_w\n0,100\n1,abc\n", "row 2: column 'power_w': 'abc' is not a number"),
    ("time,power_w\n0,100\n", "column 'time_s' missing"),
])
def test_bad_trace_one_error_naming_the_row(two_pole, tmp_path, cli, rows, msg):
    d, _ = two_pole
    (tmp_path / "t.csv").write_text(rows)
    code, _, err = cli("predict", d / "fitted" / "q.json", "--trace", tmp_path / "t.csv", "-o", tmp_path / "o.csv")
    assert code == 2
    lines = [ln for ln in err.splitlines() if ln.startswith("ERROR:")]
    assert len(lines) == 1 and msg in lines[0] and "t.csv" in lines[0]
    assert not (tmp_path / "o.csv").exists()


def test_kernel_sequence_table_gets_temperatures(two_pole, tmp_path, cli):
    d, pf = two_pole
    samples = pd.read_csv(d / "fitted" / "q.samples.csv")
    k = samples[samples["role"] == "heldout"].head(3).copy()
    k["start_s"] = [0.0, 200.0, 260.0]
    k["duration_s"] = [150.0, 30.0, 300.0]
    k.drop(columns=["temp_c"]).to_csv(tmp_path / "seq.csv", index=False)
    code, _, err = cli("predict", d / "fitted" / "q.json", tmp_path / "seq.csv", "-o", tmp_path / "o.csv")
    assert code == 0, err
    out = pd.read_csv(tmp_path / "o.csv")
    net = FosterNetwork.from_section(pf["thermal_network"])
    assert (out["temp_c_pred"] > net.idle_temp_c + 5).all()
    assert out["temp_c_pred"].iloc[2] > out["temp_c_pred"].iloc[1]  # 300 s of load end hotter than 30 s
    k.loc[k.index[1], "start_s"] = 100.0  # overlaps the first kernel (0-150 s)
    k.drop(columns=["temp_c"]).to_csv(tmp_path / "bad.csv", index=False)
    code, _, err = cli("predict", d / "fitted" / "q.json", tmp_path / "bad.csv", "-o", tmp_path / "o2.csv")
    assert code == 2 and "row 2: starts at 100 s, before row 1's kernel ends (150 s)" in err


# -- the virtual GPU's temperature sensor -----------------------------------------------------------------------

def test_temperature_readings_depend_on_the_noise_seed():
    """Issue 27 finding 3: the virtual GPU rounded its true sensor temperature with no noise, so every
    --seed logged byte-identical temperatures (rc_rise_s, rc_decay_s, idle_temp_c bit-identical over seeds;
    seed-pair figures for the thermal parameters were one draw repeated), and a steady reading sat on the
    rounded degree (titanx idle: 40 for a true 40.26 C). Now: the same seed gives the same readings, two
    seeds differ in many readings, and two minutes of idle readings average to the true sensor temperature
    (the simulator's own state) within 0.12 C on each seed (the dither's bias is ~0.05 C at sigma 0.3 C)."""
    from microbench.devices.sim.device import VirtualGPU
    from microbench.devices.sim.presets import get_preset

    def readings(seed: int) -> tuple[np.ndarray, float]:
        d = VirtualGPU(get_preset("titanx"), seed=seed)
        d.idle(120.0)
        blocks = d.sensors()[0].read_blocks()
        return np.concatenate([b[2]["temp_c"] for b in blocks]), d._sensor_temp()

    a, true_c = readings(3)
    b, _ = readings(4)
    assert np.array_equal(a, readings(3)[0])
    assert len(a) == len(b) == 1200 and np.mean(a != b) > 0.1
    for r in (a, b):
        assert abs(r.mean() - true_c) < 0.12, (r.mean(), true_c)


# -- leakage feedback stepped in a trace prediction (issue 30) --------------------------------------------------

@pytest.mark.parametrize("workload", [0, 3])  # fp32_fma and sfu thermal workloads: ~133 and ~123 W cold
def test_cold_power_trace_steps_the_leakage_feedback_against_truth(runaway, workload, tmp_path, cli):
    """`calib predict --trace --cold-power` on sim:gtx280_runaway (leakage exp(0.035/C), loop gain ~0.3):
    a 600 s run of a heavy kernel from idle, given only its cold power (the NVML power over its first
    seconds 1-4), ends within 0.75 C of the simulator's true sensor temperature and its predicted board power
    within 1.5 % of the true one; the same trace predicted without the feedback (as a measured power)
    ends more than 2 C low. Catches: the leakage not fed back into the heating power of each step (the
    prediction then equals the no-feedback one), or fed back with the wrong sign or scale."""
    from microbench.thermal_truth import true_run

    d, _ = runaway
    truth, log = true_run("gtx280_runaway", workload, 600.0)  # the model reads `log` only
    cold_w = float(log[(log["time_s"] >= 1.0) & (log["time_s"] <= 4.0)]["power_w"].mean())
    t = np.arange(0.0, 601.0)
    pd.DataFrame({"time_s": t, "power_w": np.full(t.size, cold_w)}).to_csv(tmp_path / "cold.csv", index=False)
    params = d / "fitted" / "q.json"
    code, out, err = cli("predict", params, "--trace", tmp_path / "cold.csv", "--cold-power", "-o", tmp_path / "on.csv")
    assert code == 0, err
    assert "rows with temp_c_pred and power_w_pred (leakage feedback stepped)" in out
    code, _, err = cli("predict", params, "--trace", tmp_path / "cold.csv", "-o", tmp_path / "off.csv")
    assert code == 0, err
    on, off = pd.read_csv(tmp_path / "on.csv").iloc[-1], pd.read_csv(tmp_path / "off.csv").iloc[-1]
    true_c, true_w = float(truth["temp_c"].iloc[-1]), float(truth["power_w"].iloc[-1])
    assert true_c - 65.0 > 12.0 and true_w - cold_w > 8.0  # the run heats, and the leakage adds power
    assert abs(on["temp_c_pred"] - true_c) <= 0.75, (on["temp_c_pred"], true_c)
    assert abs(on["power_w_pred"] - true_w) <= 0.015 * true_w, (on["power_w_pred"], true_w)
    assert true_c - off["temp_c_pred"] > 2.0, (off["temp_c_pred"], true_c)
    assert "power_w_pred" not in pd.read_csv(tmp_path / "off.csv").columns


def test_cold_power_feedback_matches_the_closed_form_one_pole_rise():
    """One pole (R 0.3 C/W, tau 50 s) and linear leakage sigma 1.0 W/C, cold step of 100 W: the stepped
    feedback follows theta(t) = R P / (1 - R sigma) x (1 - exp(-t (1 - R sigma) / tau)) (solved by hand from
    tau dtheta/dt = R (P + sigma theta) - theta), within 0.5 % at 1 s steps (the leakage of a step follows
    the temperature at its start). Catches: the Foster form's feedback missing or mis-scaled."""
    from calib.model.thermal_network import trace_prediction

    net = FosterNetwork((0.3,), (50.0,), 0.0, 40.0, 60.0, Leakage("linear", 1.0))
    t = np.arange(0.0, 401.0)
    temp, power = trace_prediction(net, pd.DataFrame({"time_s": t, "power_w": np.full(t.size, 160.0)}), cold=True)
    g = 1.0 - 0.3 * 1.0
    theta = 0.3 * 100.0 / g * -np.expm1(-t * g / 50.0)
    assert np.allclose(temp - 40.0, theta, rtol=5e-3, atol=0.02)
    assert np.allclose(power, 160.0 + 1.0 * (temp - 40.0))  # eq. (22) on the stepped temperature
    off = trace_prediction(net, pd.DataFrame({"time_s": t, "power_w": np.full(t.size, 160.0)}))[0]
    assert off[-1] - 40.0 == pytest.approx(0.3 * 100.0 * (1 - math.exp(-400 / 50.0)), rel=1e-6)


def test_cold_power_needs_a_trace(tmp_path, cli):
    fitted = Path(__file__).resolve().parents[1] / "fitted"
    code, _, err = cli("predict", fitted / "sim-gtx280.json", fitted / "sim-gtx280.samples.csv", "--cold-power",
                       "-o", tmp_path / "x.csv")
    assert code == 2
    assert "calib predict: --cold-power describes the power of a --trace; give --trace POWER.csv" in err


def test_direct_term_row_carries_the_sums_standard_error():
    """A node-form ladder may put the die in a pole faster than the truth's grid; the recovery row then
    compares r_direct plus that pole's r with the truth's direct term, and must state the sum's standard
    error (from the file's covariance: the two are anti-correlated), not r_direct's own, which was 10-100x
    the sum's and made the direct term look covered by any error (session 7)."""
    import json

    from calib.core.params import load
    from microbench.thermal_truth import GRID_S, thermal_network_recovery_rows

    root = Path(__file__).resolve().parents[1]
    checked = 0
    for path in sorted((root / "fitted").glob("sim-*.json")):
        if path.name.endswith(".recovery.json"):
            continue
        raw = json.loads(path.read_text())
        if "thermal_network" not in raw:
            continue
        sec = raw["thermal_network"]["parameters"]
        fast = [k for k in sec if k.startswith("tau") and sec[k]["value"] < GRID_S]
        if not fast:
            continue
        members = [k.replace("tau", "r").replace("_s", "_c_per_w") for k in fast] + ["r_direct_c_per_w"]
        cov = raw["fit"]["thermal_network"]["covariance"]
        idx = [cov["names"].index(m) for m in members]
        m = np.array(cov["matrix"], float)[np.ix_(idx, idx)]
        se_sum = math.sqrt(m.sum())
        st, tot = raw["fit"]["thermal_network"]["stderr"], raw["fit"]["thermal_network"]["stderr_total"]
        ratio = max(tot[k] / st[k] for k in members)
        row = {r["parameter"]: r for r in thermal_network_recovery_rows(path.stem[4:], load(path))}[
            "thermal_network.r_direct_c_per_w"]
        assert row["stderr"] == pytest.approx(se_sum, rel=1e-9)
        assert row["stderr_total"] == pytest.approx(se_sum * ratio, rel=1e-9)
        assert row["stderr"] < 0.5 * st["r_direct_c_per_w"]
        assert abs(row["abs_error"]) <= 2.0 * row["stderr_total"]
        checked += 1
    assert checked >= 1  # the committed gtx580 fit has a sub-grid die pole


@pytest.mark.parametrize("scale", [1.0, 2.0, 0.5])
def test_committed_networks_error_bars_are_neither_too_narrow_nor_too_wide(scale):
    """The thermal network's poles and direct term in the five committed reference fits (standard campaign),
    pooled: the truth within 2 stderr_total for at least 85 % and the median |fitted - truth| / stderr_total
    within 0.45-0.9 (issue 29's band; about 0.67 for honest errors). Passes as committed (96 %, 0.84 with
    the smooth-toe unit curves; 93 %, 0.52 before); fails with every stderr_total doubled (median 0.42) or
    halved (63 % within 2), and failed with the leave-one-step-out jackknife in the totals (median 0.31:
    gtx280's 0.09, titanx's 0.19 over five seeds each)."""
    from calib.core.params import load
    from microbench.thermal_truth import thermal_network_recovery_rows
    from recovery_rule import honest_bars

    root = Path(__file__).resolve().parents[1]
    ratios = []
    for preset in ("gtx280", "gtx580", "titanx", "mi250x", "mi300x"):
        pf = load(root / "fitted" / f"sim-{preset}.json")
        ratios += [abs(r["abs_error"]) / (scale * r["stderr_total"]) for r in thermal_network_recovery_rows(preset, pf)
                   if r["stderr_total"]]
    assert len(ratios) >= 25
    honest, within, med = honest_bars(ratios, (0.45, 0.9))
    assert honest == (scale == 1.0), (scale, round(within, 3), round(med, 3))
