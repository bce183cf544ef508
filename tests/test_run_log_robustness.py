"""Fuzz-review findings of `calib run`, `calib fit`/`samples` on hand-edited sessions and `calib log`:
bad input is refused with one ERROR line naming the file/field, exit status 2, and nothing in the
session (or the fitted directory) changes."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from unittest import mock

import pytest

from calib.cli import main
from microbench.testing.emulators import CsvEmulator


def _digest(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` (relative path -> hex)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _error(capsys) -> str:
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.startswith("ERROR:")]
    assert len(lines) == 1, err
    assert "internal error" not in lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A complete, fitted quick gtx280 session: (logs dir, fitted dir)."""
    root = tmp_path_factory.mktemp("run")
    logs, fitted = root / "L", root / "F"
    assert main(["-q", "run", "--device", "sim:gtx280", "--campaign", "quick", "--name", "s1",
                 "--logs-dir", str(logs), "--fitted-dir", str(fitted)]) == 0
    return logs, fitted


def _copy(finished, tmp_path) -> tuple[Path, Path]:
    logs, fitted = finished
    shutil.copytree(logs, tmp_path / "L")
    shutil.copytree(fitted, tmp_path / "F")
    return tmp_path / "L", tmp_path / "F"


# -- 1. a finished session of another device, campaign or seed ----------------------------------------

@pytest.mark.parametrize("extra, asked", [
    (["--device", "sim:titanx"], "device 'virtual GeForce GTX Titan X (Maxwell GM200)' [SIM-titanx], campaign 'quick', seed 0"),
    (["--device", "sim:gtx280", "--campaign", "full"], "device 'virtual GeForce GTX 280 (GT200)' [SIM-gtx280], campaign 'full', seed 0"),
    (["--device", "sim:gtx280", "--seed", "3"], "device 'virtual GeForce GTX 280 (GT200)' [SIM-gtx280], campaign 'quick', seed 3"),
])
def test_finished_session_of_other_device_campaign_or_seed_is_refused(finished, tmp_path, capsys, extra, asked):
    logs, fitted = _copy(finished, tmp_path)
    before = _digest(tmp_path)
    argv = ["run", "--name", "s1", "--logs-dir", str(logs), "--fitted-dir", str(fitted)]
    if "--campaign" not in extra:
        argv += ["--campaign", "quick"]
    assert main(argv + extra) == 2
    assert _error(capsys) == (
        f"ERROR: {logs / 's1'}: session is complete and belongs to another device, campaign or seed "
        "(device 'virtual GeForce GTX 280 (GT200)' [SIM-gtx280], campaign 'quick', seed 0; asked for "
        f"{asked}); not using it: choose another --name, or drop --name and pass --new to start a new session")
    assert _digest(tmp_path) == before  # in particular no recovery report against the wrong truths


def test_finished_session_same_device_is_still_refitted(finished, tmp_path, capsys):
    logs, fitted = _copy(finished, tmp_path)
    (fitted / "s1.recovery.json").unlink()
    assert main(["run", "--device", "sim:gtx280", "--campaign", "quick", "--name", "s1",
                 "--logs-dir", str(logs), "--fitted-dir", str(fitted)]) == 0
    assert "is complete; fitting it" in capsys.readouterr().out
    assert json.loads((fitted / "s1.recovery.json").read_text())["preset"] == "gtx280"


# -- 2. --name that is a file ----------------------------------------------------------------------------

def test_name_that_is_a_file_is_refused_up_front(tmp_path, capsys):
    logs = tmp_path / "L"
    logs.mkdir()
    (logs / "X").write_text("keep me\n")
    assert main(["run", "--device", "sim:gtx280", "--campaign", "quick", "--name", "X",
                 "--logs-dir", str(logs), "--fitted-dir", str(tmp_path / "F")]) == 2
    out = capsys.readouterr()
    assert "running campaign" not in out.out
    lines = [x for x in out.err.splitlines() if x.startswith("ERROR:")]
    assert lines == [f"ERROR: {logs / 'X'}: exists and is not a directory; choose another --name"]
    assert (logs / "X").read_text() == "keep me\n"
    assert not (tmp_path / "F").exists()


# -- 3. a hand-edited campaign_state.json -----------------------------------------------------------------

def _unfinished(finished, tmp_path) -> Path:
    logs = tmp_path / "L"
    shutil.copytree(finished[0] / "s1", logs / "u")
    p = logs / "u" / "markers.csv"
    lines = p.read_text().splitlines(True)
    cut = [i for i, x in enumerate(lines) if ",workload_done," in x][5]
    p.write_text("".join(lines[: cut + 1]))
    return logs


_STATE_TAIL = ("; not resuming. Restore the file, or start over in a new session (--new without --name, or "
               "another --name); the session directory is left as it is")


@pytest.mark.parametrize("text, what", [
    ("[1]\n", "expected a JSON object, got list"),
    ('{"device": {"t": "abc"}}\n', "field 'device.t': 'abc' is not a number"),
    ('{"after_step": 5}\n', "field 'after_step': 5 is not a step id"),
    ('{"idle_temp_c": "hot"}\n', "field 'idle_temp_c': 'hot' is not a number"),
    ("{not json\n", "cannot be read as JSON (JSONDecodeError)"),
])
def test_bad_campaign_state_is_refused_without_touching_the_session(finished, tmp_path, capsys, text, what):
    logs = _unfinished(finished, tmp_path)
    state = logs / "u" / "campaign_state.json"
    state.write_text(text)
    before = _digest(logs)
    assert main(["run", "--device", "sim:gtx280", "--campaign", "quick", "--name", "u",
                 "--logs-dir", str(logs), "--fitted-dir", str(tmp_path / "F")]) == 2
    assert _error(capsys) == f"ERROR: {state}: {what}{_STATE_TAIL}"
    assert _digest(logs) == before  # no new segment in the manifest, no marker
    assert not (tmp_path / "F").exists()


def test_unfinished_session_of_other_seed_is_refused(finished, tmp_path, capsys):
    logs = _unfinished(finished, tmp_path)
    before = _digest(logs)
    assert main(["run", "--device", "sim:gtx280", "--campaign", "quick", "--seed", "1", "--name", "u",
                 "--logs-dir", str(logs), "--fitted-dir", str(tmp_path / "F")]) == 2
    assert "session is unfinished and belongs to another device, campaign or seed" in _error(capsys)
    assert _digest(logs) == before


# -- 4. a hand-edited manifest ----------------------------------------------------------------------------

@pytest.mark.parametrize("edit, field, shown, what", [
    (lambda m: m["device"].__setitem__("max_warps_per_sm", "x"), "device.max_warps_per_sm", "'x'", "a positive number"),
    (lambda m: m["device"].__setitem__("max_warps_per_sm", None), "device.max_warps_per_sm", "None", "a positive number"),
    (lambda m: m["device"].__setitem__("max_blocks_per_sm", "x"), "device.max_blocks_per_sm", "'x'", "a positive number"),
    (lambda m: m["device"].__setitem__("max_blocks_per_sm", None), "device.max_blocks_per_sm", "None", "a positive number"),
    (lambda m: m["device"].__setitem__("mem_domain_units", None), "device.mem_domain_units", "None", "a list of unit names"),
    (lambda m: m["sensors"][0].__setitem__("columns", None), "sensors[0].columns", "None", "a list of column names"),
    (lambda m: m["device"].__setitem__("name", None), "device.name", "None", "a non-empty string"),
])
@pytest.mark.parametrize("verb", ["fit", "samples"])
def test_bad_manifest_field_names_the_manifest(finished, tmp_path, capsys, edit, field, shown, what, verb):
    sess = tmp_path / "s"
    shutil.copytree(finished[0] / "s1", sess)
    man = json.loads((sess / "manifest.json").read_text())
    edit(man)
    (sess / "manifest.json").write_text(json.dumps(man))
    before = _digest(sess)
    out = tmp_path / ("out.json" if verb == "fit" else "x.csv")
    assert main([verb, str(sess), "-o", str(out)]) == 2
    assert _error(capsys) == f"ERROR: {sess / 'manifest.json'}: field {field}: {shown} is not {what}"
    assert not out.exists()
    assert _digest(sess) == before


# -- 5. inf in a sensor stream ----------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["inf", "-inf", "nan"])
def test_non_finite_reading_names_stream_and_line(finished, tmp_path, capsys, value):
    sess = tmp_path / "s"
    shutil.copytree(finished[0] / "s1", sess)
    p = sess / "nvml0.csv"
    lines = p.read_text().splitlines(True)
    col = lines[0].rstrip("\n").split(",").index("power_w")
    rec = lines[499].rstrip("\n").split(",")
    rec[col] = value
    lines[499] = ",".join(rec) + "\n"
    p.write_text("".join(lines))
    assert main(["samples", str(sess), "-o", str(tmp_path / "x.csv")]) == 2
    err = capsys.readouterr().err
    assert f"ERROR: {p}: line 500, column 'power_w': '{value}' is not a finite number (leave the field empty for a missing reading)" in err
    assert "RuntimeWarning" not in err and "invalid value" not in err


# -- 6. calib log -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, msg", [
    (["--baud", "-9600"], "--baud must be a positive number of bits/s (e.g. 9600), got -9600"),
    (["--baud", "0"], "--baud must be a positive number of bits/s (e.g. 9600), got 0"),
    (["--columns", "power_w,power_w"], "--columns 'power_w,power_w': column 'power_w' appears more than once"),
    (["--columns", "power_w,segment"], ("--columns 'power_w,segment': 'segment' is a column the stream writes "
                                        "itself; choose another name")),
    (["--analyzer-opt", "foo=bar"], ("--analyzer-opt foo: not an option of protocol 'csv'; it accepts: baudrate, "
                                     "columns, delimiter, max_backoff_s, period_s, read_timeout_s, reconnect, "
                                     "response_timeout_s, stale_partial_s, start_command")),
])
def test_log_bad_options_refused_before_anything_opens(tmp_path, capsys, args, msg):
    sess = tmp_path / "sess"
    assert main(["log", "--serial", str(tmp_path / "no-such-port"), "--protocol", "csv", *args,
                 "-o", str(sess)]) == 2
    assert _error(capsys) == f"ERROR: {msg}"
    assert not sess.exists()


def test_log_output_that_is_a_file_is_refused(tmp_path, capsys):
    f = tmp_path / "afile"
    f.write_text("data\n")
    assert main(["log", "--serial", str(tmp_path / "no-such-port"), "--protocol", "csv", "-o", str(f)]) == 2
    assert _error(capsys) == f"ERROR: -o {f}: {f} exists and is not a directory"
    assert f.read_text() == "data\n"


class _GarbageEmulator(CsvEmulator):
    def frame(self, seq: int) -> bytes:
        return b"garbage,xx\r\n"


def test_log_analyzer_sending_only_garbage_fails_loudly(tmp_path, capsys):
    link, sess = tmp_path / "meter.tty", tmp_path / "sess"
    with _GarbageEmulator(link, frame_period_s=0.02):
        rc = main(["log", "--serial", str(link), "--protocol", "csv", "--columns", "power_w,voltage_v",
                   "--duration", "0.5", "-o", str(sess)])
    assert rc == 2
    err = capsys.readouterr().err
    assert "WARNING: csv: " in err and "frames rejected (100 % of frames), 0 rows recorded" in err
    assert _error_line(err) == (f"ERROR: {sess}: no samples recorded from csv; check --protocol, --baud and the "
                                "cable (see the rejected/instrument error counts above)")
    assert (sess / "manifest.json").exists()  # the (empty) segment stays on disk, summary included
    assert json.loads((sess / "manifest.json").read_text())["log_segments"][0]["streams"]["csv"]["rows"] == 0


def _error_line(err: str) -> str:
    lines = [x for x in err.splitlines() if x.startswith("ERROR:")]
    assert len(lines) == 1, err
    return lines[0]


# -- 7. --fitted-dir that cannot be written -----------------------------------------------------------------

def test_unwritable_fitted_dir_is_refused_before_the_campaign(tmp_path, capsys):
    fitted = tmp_path / "F"
    fitted.mkdir()
    real = __import__("tempfile").mkstemp

    def mkstemp(*a, **kw):  # the test runs as root, where chmod does not stop writes: fake a read-only mount
        if Path(kw.get("dir", "")) == fitted:
            raise OSError(30, "Read-only file system")
        return real(*a, **kw)

    with mock.patch("tempfile.mkstemp", mkstemp):
        rc = main(["run", "--device", "sim:gtx280", "--campaign", "quick", "--name", "w",
                   "--logs-dir", str(tmp_path / "L"), "--fitted-dir", str(fitted)])
    assert rc == 2
    out = capsys.readouterr()
    assert "running campaign" not in out.out
    assert _error_line(out.err) == f"ERROR: --fitted-dir {fitted}: cannot write into {fitted} (Read-only file system)"
    assert not (tmp_path / "L" / "w").exists()
