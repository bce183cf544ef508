"""calib optimize: clock table and recommendation, active-SM choice, bad input (exit 2, one message)."""

from __future__ import annotations

import json
import warnings

import pandas as pd
import pytest

from calib.core import params as P
from calib.fit.timing import fit_timing
from calib.segment import session_samples
from calib.core.session import read_session

KERNEL = {"name": "stencil_like", "per_warp": {"fp": 6000, "int": 3000, "alu": 2000, "shared": 4000, "global": 1000,
                                               "ctrl": 300},
          "launch": {"blocks": 480, "threads_per_block": 256}, "ilp": 2}


@pytest.fixture(scope="module")
def gtx280_params(quick_run, tmp_path_factory):
    """The quick run's parameter file with a timing section fitted from its timing microbenchmarks."""
    doc = P.load(quick_run / "fitted" / "q.json")
    if "timing" not in doc:
        sess = read_session(quick_run / "logs" / "q")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            doc["timing"] = fit_timing(session_samples(sess), sess.manifest["device"], sess.manifest.get("plan"))
    path = tmp_path_factory.mktemp("opt") / "p.json"
    doc.save(path)
    return path


def test_optimize_single_clock_device(gtx280_params, cli, tmp_path):
    (tmp_path / "k.json").write_text(json.dumps(KERNEL))
    code, out, err = cli("optimize", gtx280_params, tmp_path / "k.json", "-o", tmp_path / "t.csv",
                         "--sms-output", tmp_path / "s.csv")
    assert code == 0, err
    assert "kernel stencil_like: time from the timing model; power from the IPP model" in out
    assert "recommendation (least energy, slowdown <= 10%): 1296/1107 MHz" in out
    assert "active SMs: optimal" in out and "by eq. 34" in out
    assert "no DVFS power model in the parameter file" in err
    t = pd.read_csv(tmp_path / "t.csv")
    assert len(t) == 1 and bool(t["default"].iloc[0])
    assert t["energy_j"].iloc[0] == pytest.approx(t["power_w"].iloc[0] * t["time_s"].iloc[0])
    s = pd.read_csv(tmp_path / "s.csv")
    assert list(s["active_sms"]) == list(range(1, 31))


def _dvfs_params(tmp_path):
    from test_energy import _dvfs_doc

    doc = P.ParameterFile.new(_dvfs_doc().device, [])
    doc.sections.update(_dvfs_doc().sections)
    stats = {"n_samples": 10, "rmse_w": 1.0, "mape_pct": 1.0, "r2": 0.99}
    for name, sec in doc.items():
        sec.stats = dict(stats) if name != "timing" else {**stats, "rmse_w": None, "rmse_s": 0.0}
    path = tmp_path / "dvfs.json"
    doc.save(path)
    return path


def test_optimize_with_dvfs_model(cli, tmp_path):
    params = _dvfs_params(tmp_path)
    k = {"name": "mem_bound", "per_warp": {"fp": 100, "global": 400}, "launch": {"blocks": 48, "threads_per_block": 256},
         "ilp": 4}
    (tmp_path / "k.json").write_text(json.dumps(k))
    code, out, err = cli("optimize", params, tmp_path / "k.json", "-o", tmp_path / "t.csv")
    assert code == 0, err
    assert "power from the DVFS model" in out
    t = pd.read_csv(tmp_path / "t.csv")
    assert len(t) == 6
    ok = t[t["slowdown"] <= 0.10]
    best = ok.loc[ok["energy_j"].idxmin()]
    assert f"recommendation (least energy, slowdown <= 10%): {best['core_mhz']:g}/{best['mem_mhz']:g} MHz" in out
    code, out, err = cli("optimize", params, tmp_path / "k.json", "--objective", "edp", "--max-slowdown", "0")
    assert code == 0 and "recommendation (least edp, slowdown <= 0%)" in out


def test_bad_inputs(gtx280_params, cli, tmp_path):
    (tmp_path / "k.json").write_text(json.dumps(KERNEL))
    (tmp_path / "two.json").write_text(json.dumps([KERNEL, {**KERNEL, "name": "other"}]))
    code, _, err = cli("optimize", gtx280_params, tmp_path / "two.json")
    assert code == 2 and "2 kernels (stencil_like, other); choose one with --kernel-name" in err
    code, _, err = cli("optimize", gtx280_params, tmp_path / "two.json", "--kernel-name", "nope")
    assert code == 2 and "no kernel named 'nope' (kernels: stencil_like, other)" in err
    code, _, err = cli("optimize", gtx280_params, tmp_path / "two.json", "--kernel-name", "other")
    assert code == 0, err
    code, _, err = cli("optimize", gtx280_params, tmp_path / "k.json", "--max-slowdown", "-0.1")
    assert code == 2 and "--max-slowdown must be >= 0" in err
    doc = P.load(gtx280_params)
    del doc.sections["timing"]
    doc.save(tmp_path / "nt.json")
    code, _, err = cli("optimize", tmp_path / "nt.json", tmp_path / "k.json", "-o", tmp_path / "x.csv")
    assert code == 2 and "has no timing section" in err
    assert not (tmp_path / "x.csv").exists()
    (tmp_path / "s.csv").write_text("workload,power_w\nx,1\n")
    code, _, err = cli("optimize", gtx280_params, tmp_path / "s.csv")
    assert code == 2 and "not an nvprof/ncu metrics export" in err


def test_optimize_and_predict_give_the_same_power_at_a_non_default_clock_pair(cli, tmp_path):
    """One kernel, one (core, memory) pair other than the default: the clock table of `calib optimize`
    and `calib predict` of the same kernel at that pair and time must agree (both compute the kernel's
    access rates with calib.core.activity and the DVFS power with calib.model.predict.dvfs_power;
    optimize once left out both the memory-domain scaling of the access rates and the temperature
    correction of a session's DVFS section)."""
    params = __import__("pathlib").Path(__file__).resolve().parents[1] / "fitted" / "sim-titanx.json"
    kernel = {"name": "memory_mix", "per_warp": {"fp": 400, "int": 200, "global": 300, "l2": 100},
              "launch": {"blocks": 480, "threads_per_block": 256}, "ilp": 2, "temp_c": 50.0}
    (tmp_path / "k.json").write_text(json.dumps(kernel))
    code, _, err = cli("optimize", params, tmp_path / "k.json", "-o", tmp_path / "t.csv")
    assert code == 0, err
    t = pd.read_csv(tmp_path / "t.csv")
    row = t[(t["core_mhz"] == t["core_mhz"].min()) & (t["mem_mhz"] == t["mem_mhz"].min())].iloc[0]
    assert not bool(row["default"])
    at_pair = dict(kernel, time_s=float(row["time_s"]), core_mhz=float(row["core_mhz"]), mem_mhz=float(row["mem_mhz"]))
    (tmp_path / "k2.json").write_text(json.dumps(at_pair))
    code, _, err = cli("predict", params, tmp_path / "k2.json", "-o", tmp_path / "p.csv")
    assert code == 0, err
    p = pd.read_csv(tmp_path / "p.csv")
    assert p["power_w_pred"].iloc[0] == pytest.approx(float(row["power_w"]), rel=1e-9)
