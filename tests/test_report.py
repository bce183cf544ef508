"""calib report without a browser: a parameter file alone, the DVFS and active-SM figures, inputs
discovery, output directory handling and bad input. (The browser test is test_report_browser.py.)"""

from __future__ import annotations

import html as htmlmod
import re
import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calib.core import params as P

ROOT = Path(__file__).resolve().parents[1]
REF280 = ROOT / "fitted" / "reference" / "gtx280-ipp2010.json"


@pytest.fixture(autouse=True)
def _agg():
    import matplotlib

    matplotlib.use("Agg")


def _rows(page: str) -> list[str]:
    return [f"{s}.{n}" for s, n in re.findall(r'<tr id="p-([a-z]+)-([A-Za-z0-9_]+)"', page)]


def test_parameter_file_alone(cli, tmp_path):
    out = tmp_path / "rep"
    code, stdout, err = cli("report", REF280, "-o", out)
    assert code == 0, err
    page = (out / "index.html").read_text(encoding="utf-8")
    doc = P.load(REF280)
    assert sorted(_rows(page)) == sorted(f"{s}.{n}" for s in ("power", "thermal") for n in doc[s].params)
    # the figures that need measurements are skipped, and the page says why
    for key in ("power", "breakdown", "access-rates", "residuals"):
        assert re.search(rf'id="fig-{key}".*?Not drawn: needs the samples table', page, re.DOTALL), key
        assert f"skipped {key}: needs the samples table" in stdout
    # what the parameters alone can show is drawn
    for key in ("ar-functions", "thermal", "active-sms"):
        assert (out / "fig" / f"{key}.png").is_file() and f'src="fig/{key}.png"' in page
    assert "Data: none found" in page
    assert "Hong and H. Kim" in htmlmod.unescape(page)  # the citation is part of the provenance
    assert "<script" not in page.lower() and "http://" not in page and "https://" not in page


def test_dvfs_and_active_sm_figures_on_fitted_titanx():
    """The DVFS figure of the committed Titan X set, and the perf/W optimum of its SM sweep, from the
    samples table alone (no session): drawn directly, without the whole page."""
    from calib.report.inputs import load_inputs
    from calib.report.plots import Context, fig_dvfs, sm_sweep_optimum, with_predictions

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inp = load_inputs(ROOT / "fitted" / "sim-titanx.json", discover=True)
    assert inp.samples is not None
    notes: list[str] = []
    ctx = Context(inp.params, with_predictions(inp.params, inp.samples, notes), None, notes)
    fig, cap = fig_dvfs(ctx)
    assert "latent relative voltages" in cap and "clock configuration" in cap
    assert len(fig.axes) >= 3
    sweeps = sm_sweep_optimum(ctx)
    assert {s["kernel"] for s in sweeps} >= {"fp32_fma", "dram"}
    for s in sweeps:
        full = int(np.argmax(s["active_sms"]))
        assert s["ppw_meas"][full] == pytest.approx(1.0)  # relative to all SMs
        assert s["ppw_pred"][int(np.argmax(s["model_sms"]))] == pytest.approx(1.0)
        assert s["best_sms"] == s["model_sms"][int(np.argmax(s["ppw_pred"]))]


def test_perf_per_watt_optimum_by_hand():
    """Constant work: perf/W relative to all SMs is E(all) / E(n) with E = time x power."""
    from calib.report.plots import Context, sm_sweep_optimum

    doc = P.load(REF280)
    n = np.array([1.0, 2.0, 5.0, 13.0, 30.0])
    t = np.array([1.6, 0.8, 0.33, 0.15, 0.13])  # memory bound: time stops falling after ~13 SMs
    df = pd.DataFrame({"workload": [f"dram/sm{int(k)}" for k in n], "role": "sm_sweep", "active_sms": n,
                       "time_s": t, "core_mhz": 1296.0, "mem_mhz": 1107.0,
                       "power_w": np.array([97.0, 105.0, 122.0, 147.0, 166.0])})
    from calib.model.ipp import sm_scale

    s = sm_scale("log", 1.1, n, 30)
    df["power_w_pred"] = 83.0 + 70.0 * s  # a stand-in model: idle + runtime x S(n)
    (r,) = sm_sweep_optimum(Context(doc, df))
    e_pred = t * df["power_w_pred"].to_numpy()
    assert r["ppw_pred"] == pytest.approx(e_pred[-1] / e_pred)
    assert r["ppw_meas"] == pytest.approx(t[-1] * 166.0 / (t * df["power_w"].to_numpy()))
    assert r["best_sms"] == 13.0 and r["best_gain_pct"] == pytest.approx(100 * (e_pred[-1] / e_pred[3] - 1))


def test_session_with_changed_logs_is_not_used(quick_run, tmp_path):
    """A session whose files differ from the ones the fit recorded is ignored, with a note."""
    from calib.report.inputs import load_inputs

    logs = tmp_path / "logs" / "q"
    shutil.copytree(quick_run / "logs" / "q", logs)
    fitted = tmp_path / "fitted"
    fitted.mkdir()
    for f in ("q.json", "q.samples.csv"):
        shutil.copy(quick_run / "fitted" / f, fitted / f)
    ok = load_inputs(fitted / "q.json")
    assert ok.session is not None and ok.session.path == logs  # found beside the fitted/ directory
    assert ok.samples_origin.startswith("written beside the parameter file")
    with open(logs / "wall.csv", "a") as fh:
        fh.write("1.0,1.0,0,1.0\n")
    changed = load_inputs(fitted / "q.json")
    assert changed.session is None
    assert any("differ from the ones the parameters were fitted on" in n for n in changed.notes)
    from calib.core.errors import BadInputError

    with pytest.raises(BadInputError, match="wall.csv: sha256 differs"):
        load_inputs(fitted / "q.json", session=logs)


def test_output_directory_rules_and_bad_input(cli, tmp_path, monkeypatch):
    import calib.report.html as rh

    monkeypatch.setattr(rh, "FIGURES", ())  # directory handling does not depend on the figures
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "thesis.tex").write_text("mine")
    code, _, err = cli("report", REF280, "-o", busy)
    assert code == 2 and "holds no previous report" in err
    assert (busy / "thesis.tex").read_text() == "mine"
    out = tmp_path / "rep"
    assert cli("report", REF280, "-o", out)[0] == 0
    (out / "stale.txt").write_text("x")  # a previous report is replaced as a whole
    assert cli("report", REF280, "-o", out)[0] == 0
    assert not (out / "stale.txt").exists() and (out / "index.html").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary directories left
    code, _, err = cli("report", tmp_path / "nope.json", "-o", tmp_path / "r2")
    assert code == 2 and "nope.json: file not found" in err
    bad = tmp_path / "bad.csv"
    bad.write_text("workload,power_w,act_fp,bogus\nx,1,0.5,2\n")
    code, _, err = cli("report", REF280, "-o", tmp_path / "r3", "--samples", bad)
    assert code == 2 and "bad.csv" in err and "bogus" in err and "Traceback" not in err
    assert not (tmp_path / "r3").exists()


def test_active_sm_optimum_is_the_optimizers(quick_run):
    """With a timing section, the starred optimum is what calib.model.energy.optimal_sms (calib optimize)
    chooses for the swept kernel, and the model curve covers every SM count."""
    from calib.model.energy import optimal_sms
    from calib.report.inputs import load_inputs
    from calib.report.plots import Context, sm_sweep_optimum, with_predictions

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inp = load_inputs(quick_run / "fitted" / "q.json")
        if "timing" not in inp.params:
            pytest.skip("the campaign's parameter file has no timing section")
        ctx = Context(inp.params, with_predictions(inp.params, inp.samples, []), None, [])
        sweeps = {s["kernel"]: s for s in sm_sweep_optimum(ctx)}
        rows = inp.samples[inp.samples["workload"].astype(str).str.startswith("dram/sm")]
        full = rows.loc[[rows["active_sms"].astype(float).idxmax()]]
        opt = optimal_sms(inp.params, full, one_block_per_sm=True)
    s = sweeps["dram"]
    assert s["time_source"].startswith("timing model")
    assert s["best_sms"] == opt["optimal_sms_sweep"] and s["eq34_sms"] == opt["optimal_sms_eq34"]
    assert list(s["model_sms"]) == list(range(1, int(inp.params.device["sm_count"]) + 1))
    assert s["ppw_pred"][-1] == pytest.approx(1.0)


def test_the_report_says_what_each_mape_is_of_and_counts_poles(quick_run, cli, tmp_path):
    """The report showed "transfer MAPE 81.8 %" unexplained (the copies' time error, dominated by the 4-256 KiB
    copies, under 0.5 % from 1 MiB) and dominant_poles 2 vs 1 as "-50.0 %" (issue 27, finding 7)."""
    import json
    import re
    import shutil

    from calib.report.recovery import format_table

    for ext in (".json", ".recovery.json"):
        shutil.copy(quick_run / "fitted" / f"q{ext}", tmp_path / f"q{ext}")
    rc, out, err = cli("report", tmp_path / "q.json", "-o", tmp_path / "rep", "-q")
    assert rc == 0, err
    text = re.sub(r"<[^>]+>", "|", (tmp_path / "rep" / "index.html").read_text())
    card = text[text.index("|transfer|"):][:600]
    assert "|time MAPE " in card
    by = json.loads((tmp_path / "q.json").read_text())["fit"]["transfer"]["mape_pct_by_bytes"]
    assert re.search(r"copy-time MAPE by copy size: 4 KiB [0-9.]+%, .* 256 MiB [0-9.]+%\|", card), card
    st = json.loads((tmp_path / "q.json").read_text())["fit"]["transfer"]
    assert sorted(float(b) for b in by) == sorted(st["sizes"])
    # the copy times' MAPE is the mean of the sizes' (as many copies of each size)
    assert st["mape_pct"] == pytest.approx(sum(by.values()) / len(by), rel=1e-9)
    assert "|power MAPE " in text[text.index("|power|"):][:200]
    rec = json.loads((tmp_path / "q.recovery.json").read_text())
    poles = next(r for r in rec["parameters"] if r["parameter"] == "thermal_network.dominant_poles")
    shown = f"{poles['fitted'] - poles['truth']:+.0f} ({poles['fitted']:.0f} of {poles['truth']:.0f})"
    row = text[text.index("thermal_network.dominant_poles"):][:300]
    assert shown in row and "%" not in row.split("poles slower")[0]
    line = next(ln for ln in format_table(rec).splitlines() if ln.startswith("thermal_network.dominant_poles"))
    assert line.endswith(shown) and "%" not in line
