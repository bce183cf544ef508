"""What a new user and a hostile tester hit in a fresh clone (issue 27, finding 7): bad input refused at
once with one ERROR line naming it (exit 2), before any long work, never an internal error."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest


@pytest.fixture(scope="module")
def work(quick_run, tmp_path_factory):
    d = tmp_path_factory.mktemp("newcomer")
    shutil.copy(quick_run / "fitted" / "q.json", d / "p.json")
    shutil.copy(quick_run / "fitted" / "q.samples.csv", d / "s.csv")
    return d


def _err(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("ERROR:")]
    assert len(lines) == 1, err
    return lines[0]


def test_a_trace_of_18_kw_on_a_236_w_board_is_refused(work, cli, tmp_path):
    """An 18,000 W power trace (a trace in mW?) on the 236 W GTX 280 predicted 3,714 C, exit 0, no warning."""
    t = np.arange(0.0, 600.0, 1.0)
    pd.DataFrame({"time_s": t, "power_w": np.where(t < 300, 150.0, 18000.0)}).to_csv(tmp_path / "tr.csv", index=False)
    rc, out, err = cli("predict", work / "p.json", "--trace", tmp_path / "tr.csv", "-o", tmp_path / "o.csv")
    assert rc == 2
    assert _err(err) == (f"ERROR: {tmp_path / 'tr.csv'}: row 301: power_w 18000 W is not a power this board can draw "
                         "(power_w outside [0, 472] W (2 x the board's 236 W power limit); a trace in mW?)")
    assert not (tmp_path / "o.csv").exists()


@pytest.mark.parametrize("argv", [
    ("fit", "{loop}", "-o", "{tmp}/x.json"),
    ("predict", "{p}", "{loop}", "-o", "{tmp}/x.csv"),
    ("predict", "{p}", "--trace", "{loop}", "-o", "{tmp}/x.csv"),
    ("import", "gpmtool", "{loop}", "-o", "{tmp}/x.csv"),
    ("optimize", "{p}", "{loop}"),
    ("hotspot", "{p}", "{loop}", "-o", "{tmp}/hs"),
    ("report", "{p}", "-o", "{tmp}/r", "--samples", "{loop}"),
], ids=lambda a: a[0] + ("-trace" if "--trace" in a else "") + ("-samples" if "--samples" in a else ""))
def test_a_symbolic_link_loop_as_input_is_bad_input_not_an_internal_error(work, cli, tmp_path, argv):
    """A loop of links as input was 'ERROR: internal error (RuntimeError: Symlink loop from ...)', exit 1
    (Path.resolve in the output-is-not-an-input check), or 'Too many levels of symbolic links', exit 1."""
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    args = [a.format(loop=tmp_path / "a", p=work / "p.json", tmp=tmp_path) for a in argv]
    rc, out, err = cli(*args)
    assert rc == 2, err
    line = _err(err)
    assert line.startswith(f"ERROR: {tmp_path / 'a'}: ") and "internal error" not in line


def test_a_negative_window_length_is_refused(work, cli, tmp_path):
    """window_s = -5 in a samples table was accepted and fitted."""
    df = pd.read_csv(work / "s.csv")
    df.loc[3, "window_s"] = -5.0
    df.to_csv(tmp_path / "neg.csv", index=False)
    rc, out, err = cli("fit", tmp_path / "neg.csv", "-o", tmp_path / "p.json")
    assert rc == 2
    assert _err(err) == (f"ERROR: {tmp_path / 'neg.csv'}: row 4 (line 5), column 'window_s': -5 is not a valid value "
                         "(a measurement window's length must be > 0 s)")


def _no_fit(monkeypatch):
    """Any power fit fails the test: what is refused must be refused before the fit's work."""
    from calib.fit.ipp import IppPowerFitter

    def boom(self, *a, **kw):  # noqa: ANN001, ANN002, ANN003
        raise AssertionError("the fit ran before the refusal")

    monkeypatch.setattr(IppPowerFitter, "fit", boom)


@pytest.mark.parametrize("source", ["table", "session"])
def test_an_impossible_cv_is_refused_before_the_fit(work, quick_run, cli, tmp_path, monkeypatch, source):
    """--cv 1000 failed only after the whole fit (27-30 s): the folds are checked against the workloads first."""
    _no_fit(monkeypatch)
    src = work / "s.csv" if source == "table" else quick_run / "logs" / "q"
    rc, out, err = cli("fit", src, "-o", tmp_path / "p.json", "--cv", "1000")
    assert rc == 2
    assert _err(err).startswith("ERROR: cannot make 1000 folds by workload from ")
    assert not (tmp_path / "p.json").exists()


def test_an_unwritable_output_is_refused_before_the_fit(work, cli, tmp_path, monkeypatch):
    """An -o on a read-only file system failed only after the whole fit ("Read-only file system", exit 1).
    The directory is made unwritable by its probe (root writes anywhere, so permissions cannot show it)."""
    import tempfile

    real = tempfile.mkstemp
    ro = tmp_path / "ro"
    ro.mkdir()

    def mkstemp(*a, **kw):  # noqa: ANN002, ANN003
        if Path(kw.get("dir") or "") == ro:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        return real(*a, **kw)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    _no_fit(monkeypatch)
    rc, out, err = cli("fit", work / "s.csv", "-o", ro / "p.json")
    assert rc == 2
    assert _err(err) == f"ERROR: parameter file {ro / 'p.json'}: cannot write into {ro} (Read-only file system)"


def test_a_session_name_too_long_for_the_file_system_is_refused_at_once(cli, tmp_path):
    """A 300-character --name passed validation, created the logs directory and failed 'File name too long'
    (exit 1) once the campaign started."""
    rc, out, err = cli("run", "--campaign", "quick", "--name", "a" * 300, "--logs-dir", tmp_path / "L",
                       "--fitted-dir", tmp_path / "F")
    assert rc == 2
    assert _err(err) == ("ERROR: argument --name: invalid session name (300 characters): at most 200 (its files' "
                         "names must fit the file system's 255)")
    assert not (tmp_path / "L").exists() and not (tmp_path / "F").exists()
    rc, out, err = cli("fleet", "submit", tmp_path / "f", "--count", "2", "--name", "b" * 250, "--dry-run")
    assert rc == 2 and "invalid fleet name (250 characters): at most 188" in _err(err)


def test_a_warning_is_printed_once(cli, tmp_path):
    """predict --clocks printed one clamp warning four times (Python's once-per-location registry is reset
    whenever a library changes the warning filters): the command prints each warning once."""
    import json

    root = Path(__file__).resolve().parents[1]
    (tmp_path / "k.json").write_text(json.dumps({"name": "k", "per_warp": {"fp": 2000, "global": 100},
                                                 "launch": {"blocks": 480, "threads_per_block": 256}, "ilp": 2}))
    rc, out, err = cli("predict", root / "fitted" / "sim-titanx.json", tmp_path / "k.json", "--clocks",
                       "1500:3505,400:3505,975:3505", "-o", tmp_path / "o.csv")
    assert rc == 0, err
    lines = [ln for ln in err.splitlines() if ln.startswith("WARNING:")]
    assert lines.count("WARNING: 2 rows outside the fitted core clock range [595, 1164] MHz: voltage clamped to "
                       "the end value") == 1
    assert len(lines) == len(set(lines))


ROOT = Path(__file__).resolve().parents[1]


def _readme_line(prefix: str) -> str:
    lines = [ln.split("#")[0].strip() for ln in (ROOT / "README.md").read_text().splitlines()
             if ln.strip().startswith(prefix)]
    assert lines, f"README.md has no command line starting with {prefix!r}"
    return lines[0]


def test_the_readme_says_how_to_start_an_emulator_that_calib_log_can_log(tmp_path):
    """Issue 27, finding 7: the README never said how to start an analyzer emulator for `calib log`, so a
    newcomer without a meter could not try it. The README's two commands, run as written (the device
    path it prints in place of the example's, a 1 s duration), log rows from it."""
    import shlex
    import signal
    import subprocess
    import sys

    from calib.core.session import read_session

    emu_cmd = shlex.split(_readme_line("python -m microbench.testing.emulators"))
    log_cmd = shlex.split(_readme_line("calib log --serial"))
    emu = subprocess.Popen([sys.executable, *emu_cmd[1:]], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, cwd=ROOT)
    try:
        path = emu.stdout.readline().strip()
        assert path.startswith("/dev/pts/"), path
        args = log_cmd[1:]
        args[args.index("--serial") + 1] = path
        args[args.index("--duration") + 1] = "1"
        args[args.index("-o") + 1] = str(tmp_path / "meter")
        calib = Path(sys.executable).with_name("calib")
        r = subprocess.run([str(calib), *args], capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert r.returncode == 0, r.stderr
    finally:
        emu.send_signal(signal.SIGINT)
        emu.wait(10)
    protocol = args[args.index("--protocol") + 1]
    assert len(read_session(tmp_path / "meter").stream(protocol)) >= 2


def test_the_readme_quotes_the_measured_cpu_times():
    """Issue 27, finding 5: the README said "about 10 s" for `calib run` (measured 22-33 s wall, 18-19 s
    CPU), "~2 s" for the DVFS fit (4.0 s) and "~15 s CPU" for the timing fit (19.8 s). Each figure it quotes
    now is the CPU time tests/benchmarks/bench_readme.py measured (readme_timings.md), to the second."""
    import re

    measured = {}
    for ln in (ROOT / "tests" / "benchmarks" / "readme_timings.md").read_text().splitlines():
        m = re.match(r"\| `(calib [^`]+)` \| ([\d.]+) \| ([\d.]+) \|", ln)
        if m:
            measured.setdefault(m.group(1), []).append(float(m.group(3)))
    readme = (ROOT / "README.md").read_text()
    quoted = {cmd: [float(x) for x in re.findall(rf"{key}", readme)] for cmd, key in {
        "calib run": r"`calib run`: ([\d.]+) s CPU",
        "calib run --campaign quick": r"`--campaign quick`: ([\d.]+) s CPU",
        "calib fit micro.csv": r"# ([\d.]+) s CPU for the fit,",
        "calib fit micro.csv --cv 5": r"CPU for the fit, ([\d.]+) s with --cv 5",
        "calib fit kernels.csv --timing": r"timing\.json +# ([\d.]+) s CPU",
    }.items()}
    assert all(len(v) == 1 for v in quoted.values()), quoted
    for cmd, (q,) in quoted.items():
        assert min(measured[cmd]) - 0.5 <= q <= max(measured[cmd]) + 0.5, (cmd, q, measured[cmd])
