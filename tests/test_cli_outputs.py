"""Outputs never destroy inputs: output == input refused, publish --force only replaces bundles, file
modes follow the umask, environment errors (full disk) are reported as such."""

from __future__ import annotations

import os
import shutil
import stat

import pytest


@pytest.fixture
def work(quick_run, tmp_path):
    """Copies of the quick campaign's parameter file, samples table and session."""
    shutil.copy(quick_run / "fitted" / "q.json", tmp_path / "p.json")
    shutil.copy(quick_run / "fitted" / "q.samples.csv", tmp_path / "s.csv")
    shutil.copytree(quick_run / "logs" / "q", tmp_path / "sess")
    return tmp_path


def _snapshot(d):
    return {p: p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("argv, what", [
    (["fit", "{w}/s.csv", "-o", "{w}/s.csv"], "s.csv: the parameter file is also an input"),
    (["predict", "{w}/p.json", "{w}/s.csv", "-o", "{w}/p.json"], "p.json: the output is also an input"),
    (["validate-model", "{w}/p.json", "{w}/s.csv", "--table", "{w}/s.csv"], "s.csv: the --table is also an input"),
    (["diff", "{w}/p.json", "{w}/p.json", "--json", "{w}/p.json"], "p.json: the --json output is also an input"),
    (["samples", "{w}/sess", "-o", "{w}/sess/nvml0.csv"], "would be written inside the input directory"),
    (["fit", "{w}/sess", "-o", "{w}/sess/p.json"], "would be written inside the input directory"),
])
def test_output_that_is_an_input_is_refused_and_nothing_changes(cli, work, argv, what):
    before = _snapshot(work)
    rc, out, err = cli(*[a.format(w=work) for a in argv])
    assert rc == 2, err
    assert what in err and err.startswith("ERROR: ")
    assert _snapshot(work) == before


def test_import_refuses_to_overwrite_its_source(cli, tmp_path):
    src = tmp_path / "g.csv"
    shutil.copy(os.path.join(os.path.dirname(__file__), "data", "import_gpmtool_named.csv"), src)
    before = src.read_bytes()
    rc, out, err = cli("import", "gpmtool", str(src), "-o", str(src))
    assert rc == 2 and "g.csv: the samples table is also an input" in err
    assert src.read_bytes() == before


def test_publish_force_replaces_a_bundle_but_never_a_directory_of_other_files(cli, work):
    victim = work / "mine"
    victim.mkdir()
    (victim / "keep.txt").write_text("keep\n")
    rc, out, err = cli("publish", str(work / "p.json"), "--samples", str(work / "s.csv"), "-o", str(victim), "--force")
    assert rc == 2 and "exists and is not a bundle (no MANIFEST.json); refusing to replace it" in err
    assert (victim / "keep.txt").read_text() == "keep\n"
    # a previous bundle is replaced
    b = work / "bundle"
    assert cli("publish", str(work / "p.json"), "--samples", str(work / "s.csv"), "-o", str(b))[0] == 0
    assert cli("publish", str(work / "p.json"), "--samples", str(work / "s.csv"), "-o", str(b), "--force")[0] == 0
    assert (b / "MANIFEST.json").is_file()


def test_published_and_fitted_files_follow_the_umask(cli, work):
    old = os.umask(0o022)
    try:
        import calib.core.atomic as A

        mask = A._UMASK
        assert cli("fit", str(work / "s.csv"), "-o", str(work / "refit.json"))[0] == 0
        assert cli("publish", str(work / "p.json"), "--samples", str(work / "s.csv"), "-o", str(work / "b.tar.gz"))[0] == 0
    finally:
        os.umask(old)
    for f in ("refit.json", "b.tar.gz"):
        assert stat.S_IMODE((work / f).stat().st_mode) == 0o666 & ~mask, f


def test_full_disk_is_reported_as_an_environment_error(cli, work, monkeypatch):
    import calib.core.atomic as A

    def full(src, dst):
        raise OSError(28, "No space left on device", str(dst))

    monkeypatch.setattr(A.os, "replace", full)
    rc, out, err = cli("fit", str(work / "s.csv"), "-o", str(work / "x.json"))
    assert rc == 1
    assert err.strip().endswith("x.json: No space left on device") and "internal error" not in err
    assert not (work / "x.json").exists() and not list(work.glob(".x.json.*"))


def test_no_verb_says_so(cli):
    rc, out, err = cli()
    assert rc == 2 and "ERROR: no VERB given" in err


def test_single_workload_cross_validation_advice_is_not_contradictory(cli, work):
    import pandas as pd

    df = pd.read_csv(work / "s.csv")
    df["workload"] = "everything"  # fits (many rows), but folds by workload are impossible
    df.to_csv(work / "one.csv", index=False)
    rc, out, err = cli("fit", str(work / "one.csv"), "--cv", "2", "-o", str(work / "o.json"))
    assert rc == 2
    assert "cannot cross-validate: the table has 1 workload (folds by workload need 2)" in err
    assert "--cv 1" not in err


KERNEL = {"name": "k", "per_warp": {"fp": 2000, "global": 100}, "launch": {"blocks": 480, "threads_per_block": 256}}


@pytest.mark.parametrize("edit, message", [
    ({"name": None}, "field 'name': None is not a non-empty string"),
    ({"launch": {"blocks": 0.5, "threads_per_block": 256}}, "launch.blocks: 0.5 is not a positive integer"),
    ({"launch": {"blocks": 4, "threads_per_block": 100000}}, "launch.threads_per_block: 100000 exceeds 1024"),
    ({"per_warp": {"fp": 1e308}}, "per_warp.fp: 1e+308 is implausibly large"),
    ({"temp_c": 9999}, "field 'temp_c': 9999 is outside (-60, 150)"),
    ({"core_mhz": -5}, "field 'core_mhz': -5 is outside (0, 10000)"),
])
def test_kernel_description_values_are_range_checked(cli, quick_run, tmp_path, edit, message):
    import json

    (tmp_path / "k.json").write_text(json.dumps({**KERNEL, **edit}))
    rc, out, err = cli("predict", str(quick_run / "fitted" / "q.json"), str(tmp_path / "k.json"), "-o", str(tmp_path / "o.csv"))
    assert rc == 2 and message in err, err
    assert not (tmp_path / "o.csv").exists()


@pytest.mark.parametrize("opts, message", [
    (["--temp-c", "nan"], "--temp-c nan: outside (-60, 150) degC"),
    (["--temp-c", "-300"], "--temp-c -300.0: outside (-60, 150) degC"),
    (["--blocks", "-5"], "--blocks -5: must be >= 1"),
    (["--threads-per-block", "0"], "--threads-per-block 0: must be >= 1"),
])
def test_optimize_options_are_range_checked(cli, quick_run, tmp_path, opts, message):
    import json

    (tmp_path / "k.json").write_text(json.dumps(KERNEL))
    rc, out, err = cli("optimize", str(quick_run / "fitted" / "q.json"), str(tmp_path / "k.json"), *opts)
    assert rc == 2 and message in err, err


def test_import_clock_options_are_range_checked(cli, tmp_path):
    src = os.path.join(os.path.dirname(__file__), "data", "import_gpmtool_named.csv")
    rc, out, err = cli("import", "gpmtool", src, "-o", str(tmp_path / "o.csv"), "--core-mhz", "nan")
    assert rc == 2 and "--core-mhz nan: must be a positive clock in MHz" in err


def test_run_new_with_an_existing_name_is_refused_and_keeps_the_session(cli, quick_run, tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(quick_run / "logs" / "q", logs / "q")
    before = _snapshot(logs)
    rc, out, err = cli("run", "--device", "sim:gtx280", "--campaign", "quick", "--name", "q", "--new",
                       "--logs-dir", str(logs), "--fitted-dir", str(tmp_path / "fitted"))
    assert rc == 2 and "exists; --new with --name needs a name not in use" in err
    assert _snapshot(logs) == before


def test_validate_model_writes_its_files_before_printing(cli, work, monkeypatch):
    # a reader that stops early (| head) raises BrokenPipeError at the first print: the files must exist
    import builtins

    def closed_pipe(*a, **k):
        raise BrokenPipeError

    monkeypatch.setattr(builtins, "print", closed_pipe)
    rc, out, err = cli("validate-model", str(work / "p.json"), str(work / "s.csv"),
                       "--table", str(work / "t.csv"), "--plot", str(work / "v.png"))
    assert rc == 1
    assert (work / "t.csv").read_text().startswith("workload,")
    assert (work / "v.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_diff_says_why_it_exits_3_when_sections_differ(cli, work):
    import json

    doc = json.loads((work / "p.json").read_text())
    assert "thermal" in doc
    del doc["thermal"]
    (work / "nothermal.json").write_text(json.dumps(doc))
    rc, out, err = cli("diff", str(work / "p.json"), str(work / "nothermal.json"))
    assert rc == 3
    assert out.strip().splitlines()[-1] == "exit status 3: the files do not have the same sections (removed thermal)"
