"""Issue 17, findings 6 and 7: exit statuses that survive a closed pipe, and messages that name the
right file in plain words."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def work(quick_run, tmp_path):
    shutil.copy(quick_run / "fitted" / "q.json", tmp_path / "p.json")
    shutil.copy(quick_run / "fitted" / "q.samples.csv", tmp_path / "s.csv")
    return tmp_path


def _moved(work: Path) -> Path:
    """A copy of the parameter file whose idle power moved by 5 W (a significant move)."""
    doc = json.loads((work / "p.json").read_text())
    doc["power"]["parameters"]["idle_power_w"]["value"] += 5.0
    (work / "moved.json").write_text(json.dumps(doc))
    return work / "moved.json"


# -- 6. exit statuses ---------------------------------------------------------------------------------

def test_diff_keeps_exit_status_3_when_its_reader_stops_early(work):
    """`calib diff OLD NEW | head -1`: a closed stdout must not turn the 3 into a 1."""
    moved = _moved(work)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run(["bash", "-c", f'"{sys.executable}" -m calib diff "{work / "p.json"}" "{moved}" | head -1; '
                        'exit "${PIPESTATUS[0]}"'], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 3, r.stderr
    assert r.stdout.startswith("calib diff")
    assert "ERROR" not in r.stderr and "BrokenPipeError" not in r.stderr and "Exception ignored" not in r.stderr
    # deterministic variant: the reader is gone before the first byte is written
    p = subprocess.Popen([sys.executable, "-m", "calib", "diff", str(work / "p.json"), str(moved)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=300) == 3, err
    assert err == ""


def test_diff_head_of_identical_files_exits_0(work):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen([sys.executable, "-m", "calib", "diff", str(work / "p.json"), str(work / "p.json")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    p.stdout.close()
    assert p.wait(timeout=300) == 0 and p.stderr.read() == b""


# -- 7. messages -------------------------------------------------------------------------------------

def test_a_nan_in_a_long_stream_gives_one_error_line_and_no_pandas_warning(quick_run, tmp_path, cli):
    sess = tmp_path / "sess"
    shutil.copytree(quick_run / "logs" / "q", sess)
    lines = (sess / "nvml0.csv").read_text().splitlines(keepends=True)
    last = lines[-1].split(",")
    extra = []
    for i in range(300_000):  # long enough for pandas to read it in several chunks
        last[0] = repr(1e5 + 0.1 * i)
        extra.append(",".join(last))
    bad = len(lines) + 290_000
    f = extra[290_000 - 1].split(",")
    f[3] = "nan"
    extra[290_000 - 1] = ",".join(f)
    (sess / "nvml0.csv").write_text("".join(lines + extra))
    rc, out, err = cli("samples", sess, "-o", tmp_path / "o.csv")
    assert rc == 2
    assert err.strip().splitlines() == [
        f"ERROR: {sess / 'nvml0.csv'}: line {bad}, column 'power_w': 'nan' is not a finite number (leave the field "
        "empty for a missing reading)"]
    from calib.core.errors import BadInputError
    from calib.core.session import read_stream_csv

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a DtypeWarning would be raised here
        with pytest.raises(BadInputError, match=f"line {bad}, column 'power_w'"):
            read_stream_csv(sess / "nvml0.csv")


def test_a_parameter_file_without_power_is_blamed_on_itself(work, cli):
    doc = json.loads((work / "p.json").read_text())
    del doc["power"]
    (work / "nopower.json").write_text(json.dumps(doc))
    rc, out, err = cli("validate-model", work / "nopower.json", work / "s.csv")
    assert rc == 2
    assert err.strip() == (f"ERROR: {work / 'nopower.json'}: the parameter file has no power section; "
                           "validate-model compares measured with predicted power")


@pytest.mark.parametrize("which", ["params", "manifest"])
def test_json_errors_read_plainly(quick_run, tmp_path, cli, which):
    if which == "params":
        path = tmp_path / "p.json"
        path.write_text('{"schema_version": "1.1", "device": {"name": "x')
        rc, out, err = cli("validate", path)
    else:
        shutil.copytree(quick_run / "logs" / "q", tmp_path / "s")
        path = tmp_path / "s" / "manifest.json"
        path.write_text('{"session_format": 1, "device": {"name": "x')
        rc, out, err = cli("samples", tmp_path / "s", "-o", tmp_path / "o.csv")
    assert rc == 2
    assert err.strip() == f"ERROR: {path}: not valid JSON (Unterminated string starting at: line 1, column {46 if which == 'params' else 42})"
    assert "at at" not in err


def test_rmse_units_are_written_as_units(quick_run):
    from calib.core.params import load
    from calib.report_text import fit_summary, rmse_text

    assert rmse_text({"rmse_s": 0.0216}) == "RMSE 0.0216 s"
    assert rmse_text({"rmse_c": 0.5}) == "RMSE 0.5 degC"
    assert rmse_text({}) == ""
    text = fit_summary(load(quick_run / "fitted" / "q.json"))
    timing = next(line for line in text.splitlines() if line.startswith("[[timing:"))
    assert " s, MAPE" in timing and " S," not in text and " C," not in text


def test_a_table_without_sm_counts_does_not_claim_1_sm(work, cli):
    import pandas as pd

    # a tool that measured with the whole chip and did not record the SM count: the full-chip rows
    # without the column (rows measured on fewer SMs could not be told apart without it)
    df = pd.read_csv(work / "s.csv")
    df = df[df["active_sms"] == df["active_sms"].max()]
    df.drop(columns=["active_sms"]).to_csv(work / "nosm.csv", index=False)
    rc, out, err = cli("fit", work / "nosm.csv", "-o", work / "o.json")
    assert rc == 0, err
    assert out.splitlines()[0] == ("device: unknown (fitted from a samples table), SM count unknown "
                                   "(MaxPower per chip; --sm-count N sets it)")
    rc, out, err = cli("fit", work / "s.csv", "-o", work / "o2.json")
    assert out.splitlines()[0] == "device: unknown (fitted from a samples table) (30 SMs)"


def test_diff_of_identical_files_says_how_many_are_unchanged(work, cli):
    from calib.core.params import load

    n = sum(len(sec.params) for sec in load(work / "p.json").sections.values())
    rc, out, err = cli("diff", work / "p.json", work / "p.json")
    assert rc == 0
    assert out.strip().splitlines()[-2:] == [f"no parameter changed ({n} unchanged)",
                                             "exit status 0: nothing moved significantly"]
    # 67 before the thermal network published its node form (ambient, fan link, host heat, hot spot, ...),
    # 76 before hot_spot_util_exp and busy_rise_c, 78 before the per-access share (ar_linear_share) and
    # the smooth-toe unit curves (SFU now fitted with the log: its slope ar_log_a_sfu), 80 before the
    # thermal network's pole count by BIC with AR(1) residuals (the quick campaign's network: 2 poles, as
    # the gtx280 truth, where cross-validation kept 1: tau2_s, r2_c_per_w)
    assert n == 82
