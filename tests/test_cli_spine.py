"""The spine end to end through the CLI: run -> logs -> samples -> fit -> parameter file -> predict;
determinism, resume after SIGKILL, and bad input."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from calib.core import params as P


def _strip_times(doc: dict) -> dict:
    d = json.loads(json.dumps(doc))
    d["provenance"].pop("created_utc")
    return d


def test_run_writes_logs_samples_parameters_and_recovery(quick_run, cli):
    d = quick_run
    session = d / "logs" / "q"
    assert (session / "manifest.json").exists() and (session / "markers.csv").exists()
    assert (session / "nvml0.csv").exists() and (session / "wall.csv").exists()
    doc = P.load(d / "fitted" / "q.json")
    assert {"power", "thermal"} <= set(doc)
    rec = json.loads((d / "fitted" / "q.recovery.json").read_text())
    names = {r["parameter"] for r in rec["parameters"]}
    assert {"power.idle_power_w", "thermal.rc_rise_s", "thermal.sigma_w_per_c", "power.max_power_global_w"} <= names
    assert rec["heldout_mape_pct"] is not None and rec["heldout_rows"] == 8
    code, out, err = cli("validate", d / "fitted" / "q.json")
    assert code == 0, err


def test_samples_fit_predict_round_trip(quick_run, cli, tmp_path):
    d = quick_run
    code, out, err = cli("samples", d / "logs" / "q", "-o", tmp_path / "s.csv")
    assert code == 0, err
    s = pd.read_csv(tmp_path / "s.csv")
    assert {"workload", "power_w", "core_mhz", "mem_mhz", "act_fp", "act_global", "temp_c", "time_s"} <= set(s.columns)
    assert set(s["role"]) >= {"idle", "unit", "sm_sweep", "heldout", "idle_kernel"}
    # fitting the session again gives the parameters `calib run` wrote
    code, out, err = cli("fit", d / "logs" / "q", "-o", tmp_path / "p.json")
    assert code == 0, err
    a, b = P.load(tmp_path / "p.json"), P.load(d / "fitted" / "q.json")
    assert a["power"].to_json()[0] == b["power"].to_json()[0] and a["thermal"].to_json()[0] == b["thermal"].to_json()[0]
    # predict on the samples table (without power_w, as a user would)
    s.drop(columns=["power_w"]).to_csv(tmp_path / "in.csv", index=False)
    code, out, err = cli("predict", tmp_path / "p.json", tmp_path / "in.csv", "-o", tmp_path / "out.csv")
    assert code == 0, err
    o = pd.read_csv(tmp_path / "out.csv")
    assert len(o) == len(s) and "power_w_pred" in o.columns and "temp_c_pred" in o.columns
    err_pct = (o["power_w_pred"] - s["power_w"]).abs() / s["power_w"]
    assert err_pct.mean() < 0.01


def test_predict_on_a_kernel_description(quick_run, cli, tmp_path):
    k = {"name": "saxpy_like", "per_warp": {"fp": 2000, "int": 500, "alu": 300, "global": 300, "ctrl": 100},
         "launch": {"blocks": 240, "threads_per_block": 256}, "time_s": 0.002, "core_mhz": 1296.0}
    (tmp_path / "k.json").write_text(json.dumps(k))
    code, out, err = cli("predict", quick_run / "fitted" / "q.json", tmp_path / "k.json", "-o", tmp_path / "o.csv")
    assert code == 0, err
    o = pd.read_csv(tmp_path / "o.csv")
    assert 83 < float(o["power_w_pred"][0]) < 250
    (tmp_path / "bad.json").write_text(json.dumps({**k, "per_warp": {"fpu": 3}}))
    code, out, err = cli("predict", quick_run / "fitted" / "q.json", tmp_path / "bad.json", "-o", tmp_path / "o2.csv")
    assert code == 2 and "per_warp.fpu: unknown instruction class" in err
    assert not (tmp_path / "o2.csv").exists()


def test_same_seed_gives_identical_parameter_files(quick_run, tmp_path):
    from calib.cli import main

    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert main(["run", "--quiet", "--campaign", "quick", "--name", "q", "--device", "sim:gtx280"]) == 0
    finally:
        os.chdir(cwd)
    a = json.loads((tmp_path / "fitted" / "q.json").read_text())
    b = json.loads((quick_run / "fitted" / "q.json").read_text())
    assert _strip_times(a) == _strip_times(b)
    assert (tmp_path / "fitted" / "q.recovery.json").read_bytes() == (quick_run / "fitted" / "q.recovery.json").read_bytes()


def _done_steps(session: Path) -> int:
    p = session / "markers.csv"
    return p.read_text().count(",workload_done,") if p.exists() else 0


def test_sigkill_then_resume_gives_the_uninterrupted_result(quick_run, tmp_path):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "calib", "run", "--quiet", "--campaign", "quick", "--name", "q", "--device", "sim:gtx280"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    session = tmp_path / "logs" / "q"
    deadline = time.monotonic() + 60
    while _done_steps(session) < 12 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, "campaign finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = {p.name: p.read_bytes() for p in session.glob("*.csv")}
    assert not (tmp_path / "fitted" / "q.json").exists()
    # the same command without --quiet (which prints nothing but warnings and errors): it says it resumed
    loud = [c for c in cmd if c != "--quiet"]
    res = subprocess.run(loud, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "resuming campaign" in res.stdout
    for name, old in before.items():
        new = (session / name).read_bytes()
        keep = old if old.endswith(b"\n") else old[: old.rfind(b"\n") + 1]
        assert new.startswith(keep), f"{name}: earlier log content changed by the resume"
        assert len(new) > len(keep)
    man = json.loads((session / "manifest.json").read_text())
    assert [s["segment"] for s in man["segments"]] == [0, 1]
    a = json.loads((tmp_path / "fitted" / "q.json").read_text())
    b = json.loads((quick_run / "fitted" / "q.json").read_text())
    # identical, up to float rounding: the resumed segment's clock is shifted, and the thermal fit works
    # on time differences
    for sec in ("power", "thermal"):
        _assert_close(a[sec], b[sec])
        _assert_close(a["fit"][sec], b["fit"][sec])


def _assert_close(x, y, path=""):
    if isinstance(x, dict):
        assert set(x) == set(y), path
        for k in x:
            _assert_close(x[k], y[k], f"{path}.{k}")
    elif isinstance(x, list):
        assert len(x) == len(y), path
        for i, (u, v) in enumerate(zip(x, y)):
            _assert_close(u, v, f"{path}[{i}]")
    elif isinstance(x, float) and isinstance(y, float):
        assert x == pytest.approx(y, rel=1e-5, abs=1e-9), path
    else:
        assert x == y, path


def _one_error(err: str) -> str:
    lines = [line for line in err.strip().splitlines() if not line.startswith("WARNING")]
    assert "Traceback" not in err
    assert len(lines) == 1 and lines[0].startswith("ERROR: "), err
    return lines[0]


def test_bad_inputs_give_one_clear_message(quick_run, cli, tmp_path):
    import shutil

    # a session whose NVML stream was truncated inside its header
    s = tmp_path / "trunc"
    shutil.copytree(quick_run / "logs" / "q", s)
    (s / "nvml0.csv").write_text("t_mono_s,t_wa")
    code, out, err = cli("samples", s, "-o", tmp_path / "o.csv")
    assert code == 2 and "nvml0.csv: line 1: header lacks column 't_wall_s'" in _one_error(err)
    assert not (tmp_path / "o.csv").exists()
    # a session without its manifest
    (s / "manifest.json").unlink()
    code, out, err = cli("fit", s, "-o", tmp_path / "p.json")
    assert code == 2 and "directory without manifest.json" in _one_error(err)
    code, out, err = cli("samples", s, "-o", tmp_path / "o.csv")
    assert code == 2 and "manifest.json: manifest missing" in _one_error(err)
    assert not (tmp_path / "p.json").exists()
    # a table whose rows are all NaN
    (tmp_path / "nan.csv").write_text("workload,power_w,act_fp\na,NaN,NaN\nb,NaN,NaN\n")
    code, out, err = cli("fit", tmp_path / "nan.csv", "-o", tmp_path / "p.json")
    assert code == 2 and "no usable rows" in _one_error(err)
    # an unknown column
    (tmp_path / "unk.csv").write_text("workload,power_w,act_fp,voltage\na,100,0.5,1.0\n")
    code, out, err = cli("fit", tmp_path / "unk.csv", "-o", tmp_path / "p.json")
    assert code == 2 and "unknown column 'voltage'" in _one_error(err)
    # a parameter file with a wrong schema version
    doc = json.loads((quick_run / "fitted" / "q.json").read_text())
    doc["schema_version"] = "0.9"
    (tmp_path / "old.json").write_text(json.dumps(doc))
    code, out, err = cli("predict", tmp_path / "old.json", tmp_path / "unk.csv", "-o", tmp_path / "o.csv")
    assert code == 2 and "schema_version '0.9' is not supported" in _one_error(err)
    assert not (tmp_path / "p.json").exists() and not (tmp_path / "o.csv").exists()
    # usage errors
    code, out, err = cli("fit")
    assert code == 2 and "ERROR: the following arguments are required" in err
    code, out, err = cli("run", "--device", "sim:nope", "--logs-dir", tmp_path / "l")
    assert code == 2 and "no virtual GPU preset 'nope'" in _one_error(err)
