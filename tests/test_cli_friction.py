"""Issue 17, finding 8: friction. Every verb's --help ends with one example that the parser accepts; -q
is quiet on run/publish/verify-bundle; long verbs show progress with an ETA weighted by expected
durations; the README's quick start puts `calib` on PATH; generated outputs are git-ignored."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from calib.cli import VERBS, get_parser

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_every_verb_has_one_true_example(verb, cli):
    rc, out, err = cli(verb, "--help")
    assert rc == 0 and err == ""
    head, sep, tail = out.rstrip("\n").rpartition("\nexample:\n")
    assert sep, f"calib {verb} --help has no example"
    lines = tail.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"  calib {verb}")
    argv = shlex.split(lines[0], comments=True)[1:]
    args = get_parser().parse_args(argv)  # the example's options exist and parse (SystemExit otherwise)
    assert args.verb == verb
    # and the files of this repository it names exist (calib hotspot --help named fitted/q.json, which does not)
    shipped = [a for a in argv if a.startswith(("fitted/", "tests/", "microbench/"))]
    assert [a for a in shipped if not (ROOT / a).exists()] == [], lines[0]


@pytest.mark.parametrize("sub", ["submit", "collect", "analyze", "report"])
def test_every_fleet_subverb_has_one_true_example(sub, cli):
    rc, out, err = cli("fleet", sub, "--help")
    assert rc == 0 and err == ""
    head, sep, tail = out.rstrip("\n").rpartition("\nexample:\n")
    assert sep, f"calib fleet {sub} --help has no example"
    lines = tail.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"  calib fleet {sub} ")
    args = get_parser().parse_args(shlex.split(lines[0], comments=True)[1:])
    assert (args.verb, args.fleet_verb) == ("fleet", sub)


def _bar(err: str, label: str) -> str:
    """The final state of a tqdm bar written to stderr."""
    last = [seg for seg in err.replace("\n", "\r").split("\r") if seg.startswith(f"{label} ")]
    assert last, err
    return last[-1]


@pytest.fixture
def tty_progress(monkeypatch):
    """Progress as on a terminal (pytest's stderr is not one)."""
    import calib.progress as P

    monkeypatch.setattr(P, "wants_progress", lambda args: not getattr(args, "quiet", False))


def test_progress_of_fit_report_publish_and_verify_bundle(quick_run, tmp_path, cli, tty_progress):
    q = quick_run / "fitted" / "q.json"
    rc, out, err = cli("fit", quick_run / "fitted" / "q.samples.csv", "-o", tmp_path / "p.json")
    assert rc == 0
    bar = _bar(err, "fit")
    assert bar.startswith("fit 100%|") and "<00:00, power" in bar  # elapsed<remaining, last stage
    rc, out, err = cli("report", q, "-o", tmp_path / "r")
    assert rc == 0 and _bar(err, "report").startswith("report 100%|") and _bar(err, "report").endswith(", page")
    rc, out, err = cli("publish", q, "-o", tmp_path / "b")
    assert rc == 0 and _bar(err, "publish").startswith("publish 100%|")
    rc, out, err = cli("verify-bundle", tmp_path / "b")
    assert rc == 0 and _bar(err, "verify-bundle").startswith("verify-bundle 100%|") and "refit" in _bar(err, "verify-bundle")
    rc, out, err = cli("-q", "fit", quick_run / "fitted" / "q.samples.csv", "-o", tmp_path / "p2.json")
    assert rc == 0 and "fit " not in err and "100%" not in err


def test_staged_progress_moves_by_expected_share(capsys):
    from calib.progress import StagedProgress

    p = StagedProgress({"a": 0.1, "b": 0.6, "c": 0.3}, "x", enabled=True)
    p.stage("a")
    assert p.done == 0.0
    p.stage("c")  # "b" did not run: skipped over, not counted as done work
    assert p.done == pytest.approx(0.7)
    p.stage("unknown")
    assert p.done == pytest.approx(0.7)
    p.close()
    assert p.done == pytest.approx(1.0)
    assert _bar(capsys.readouterr().err, "x").startswith("x 100%|")


def test_quiet_run_publish_and_verify_print_nothing(quick_run, tmp_path, cli):
    logs, fitted = tmp_path / "L", tmp_path / "F"
    shutil.copytree(quick_run / "logs" / "q", logs / "q")  # complete: run refits it
    rc, out, err = cli("-q", "run", "--device", "sim:gtx280", "--campaign", "quick", "--name", "q",
                       "--logs-dir", logs, "--fitted-dir", fitted)
    assert rc == 0 and out == ""
    assert (fitted / "q.json").is_file() and (fitted / "q.recovery.json").is_file()
    rc, out, err = cli("-q", "publish", fitted / "q.json", "-o", tmp_path / "b")
    assert rc == 0 and out == "" and (tmp_path / "b" / "MANIFEST.json").is_file()
    rc, out, err = cli("verify-bundle", "-q", tmp_path / "b")
    assert rc == 0 and out == ""
    assert err.startswith("WARNING: ") and "not signed" in err  # warnings still say what matters


def test_readme_quick_start_puts_calib_on_path():
    text = (ROOT / "README.md").read_text()
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert ". .venv/bin/activate" in quick and "\ncalib run\n" in quick
    assert "about 20 s" not in text
    rest = text.split("## Quick start", 1)[1]
    # bare `calib` later in the README is right: the quick start activated the environment
    assert rest.count("\ncalib ") >= 4


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="not a git checkout")
def test_generated_outputs_are_git_ignored():
    paths = ["fitted/gtx280-standard-20260101T000000Z.json", "fitted/gtx280-standard-20260101T000000Z.samples.csv",
             "fitted/gtx280-standard-20260101T000000Z.recovery.json", "logs/s/nvml0.csv", "logs/s/session.lock"]
    r = subprocess.run(["git", "check-ignore", *paths], cwd=ROOT, capture_output=True, text=True)
    assert r.stdout.split() == paths
    r = subprocess.run(["git", "check-ignore", "fitted/sim-gtx280.json", "fitted/README.md"], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.stdout == ""  # the committed fits stay tracked
