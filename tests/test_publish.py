"""calib publish / calib verify-bundle: round trip, tampering refused with the file named, refit check."""

from __future__ import annotations

import json
import re
import shutil
import tarfile
from pathlib import Path

import pytest

from calib.core import params as P
from calib.bundle import MANIFEST, file_sha256

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bundle_dir(quick_run, tmp_path_factory):
    """`calib publish` of the shared quick campaign's parameter file into a directory bundle."""
    from calib.cli import main

    out = tmp_path_factory.mktemp("pub") / "gtx280-quick"
    assert main(["publish", str(quick_run / "fitted" / "q.json"), "-o", str(out)]) == 0
    return out


def _copy(bundle: Path, tmp_path: Path) -> Path:
    dst = tmp_path / bundle.name
    shutil.copytree(bundle, dst)
    return dst


def _flip_byte(path: Path, offset: int = 100) -> None:
    data = bytearray(path.read_bytes())
    data[offset] = ord("7") if data[offset] != ord("7") else ord("8")
    path.write_bytes(bytes(data))


def test_bundle_contents(bundle_dir, quick_run):
    man = json.loads((bundle_dir / MANIFEST).read_text())
    files = man["files"]
    assert man["format"] == "calib-bundle-1" and man["toolkit_version"]
    for name in ("parameters.json", "samples.csv", "README.md", "report/index.html", "recovery.json"):
        assert name in files, name
    assert sum(1 for m in files.values() if m["role"] == "report") >= 8  # index.html + figures
    # the parameter file and samples table travel byte for byte
    assert files["parameters.json"]["sha256"] == file_sha256(quick_run / "fitted" / "q.json")
    assert files["samples.csv"]["sha256"] == file_sha256(quick_run / "fitted" / "q.samples.csv")
    for rel, meta in files.items():
        assert file_sha256(bundle_dir / rel) == meta["sha256"] and (bundle_dir / rel).stat().st_size == meta["bytes"]
    readme = (bundle_dir / "README.md").read_text()
    assert "calib verify-bundle" in readme and "virtual GeForce GTX 280" in readme


def test_verify_round_trip(bundle_dir, cli):
    code, out, err = cli("verify-bundle", bundle_dir)
    assert code == 0, err
    assert f"{len(json.loads((bundle_dir / MANIFEST).read_text())['files'])} files match MANIFEST.json" in out
    assert "power:" in out and "reproduced within their standard errors" in out
    assert "thermal: fitted from heating/cooling traces" in out
    if "timing" in P.load(bundle_dir / "parameters.json"):
        assert re.search(r"timing: \d+ parameters reproduced within their standard errors", out)


def test_one_changed_byte_is_refused_with_the_file_named(bundle_dir, tmp_path, cli):
    b = _copy(bundle_dir, tmp_path)
    _flip_byte(b / "samples.csv")
    code, _out, err = cli("verify-bundle", b)
    assert code == 2
    assert err.startswith(f"ERROR: {b}/samples.csv: sha256 ")
    assert "the file was changed after publishing" in err and "Traceback" not in err


def test_added_and_missing_files_are_refused(bundle_dir, tmp_path, cli):
    b = _copy(bundle_dir, tmp_path)
    (b / "report" / "extra.js").write_text("alert(1)")
    code, _, err = cli("verify-bundle", b)
    assert code == 2 and "report/extra.js: not listed in MANIFEST.json" in err
    (b / "report" / "extra.js").unlink()
    (b / "report" / "fig" / "thermal.png").unlink()
    code, _, err = cli("verify-bundle", b)
    assert code == 2 and "report/fig/thermal.png: listed in MANIFEST.json but missing" in err


def test_parameters_that_do_not_follow_from_the_samples_are_refused(bundle_dir, tmp_path, cli):
    """Re-signing the manifest hides an edit from the checksums, not from the refit."""
    b = _copy(bundle_dir, tmp_path)
    doc = P.load(b / "parameters.json")
    p = doc["power"]["max_power_global_w"]
    p.value += 5 * p.stderr
    doc.save(b / "parameters.json")
    man = json.loads((b / MANIFEST).read_text())
    man["files"]["parameters.json"]["sha256"] = file_sha256(b / "parameters.json")
    man["files"]["parameters.json"]["bytes"] = (b / "parameters.json").stat().st_size
    (b / MANIFEST).write_text(json.dumps(man))
    code, _, err = cli("verify-bundle", b)
    assert code == 2
    assert "1 parameter(s) do not reproduce from samples.csv" in err
    assert "power.max_power_global_w: refit" in err and "5.00 standard errors away" in err


def test_schema_violation_is_refused(bundle_dir, tmp_path, cli):
    b = _copy(bundle_dir, tmp_path)
    doc = json.loads((b / "parameters.json").read_text())
    del doc["device"]["sm_count"]
    (b / "parameters.json").write_text(json.dumps(doc))
    man = json.loads((b / MANIFEST).read_text())
    man["files"]["parameters.json"] = {"sha256": file_sha256(b / "parameters.json"),
                                       "bytes": (b / "parameters.json").stat().st_size, "role": "parameters"}
    (b / MANIFEST).write_text(json.dumps(man))
    code, _, err = cli("verify-bundle", b)
    assert code == 2 and "parameters.json: fails the parameter-file schema" in err and "sm_count" in err


def _tar(src: Path, out: Path, edit: str | None = None) -> Path:
    """Pack a bundle directory like `calib publish` does, optionally with one byte of a member changed."""
    work = out.parent / ("w-" + out.name)
    shutil.copytree(src, work / src.name)
    if edit:
        _flip_byte(work / src.name / edit)
    with tarfile.open(out, "w:gz") as tf:
        tf.add(work / src.name, arcname=src.name)
    return out


def test_archive_round_trip_and_tampered_member(bundle_dir, tmp_path, cli):
    good = _tar(bundle_dir, tmp_path / "good.tar.gz")
    code, _out, err = cli("verify-bundle", good)
    assert code == 0, err
    bad = _tar(bundle_dir, tmp_path / "bad.tar.gz", edit="parameters.json")
    code, _, err = cli("verify-bundle", bad)
    assert code == 2 and f"{bad}:{bundle_dir.name}/parameters.json: sha256" in err
    raw = bytearray(good.read_bytes())
    raw[len(raw) // 2] ^= 0x01  # one bit of the compressed stream
    (tmp_path / "flipped.tar.gz").write_bytes(bytes(raw))
    code, _, err = cli("verify-bundle", tmp_path / "flipped.tar.gz")
    assert code == 2 and "flipped.tar.gz" in err and "Traceback" not in err


def test_publish_to_archive(quick_run, tmp_path, cli, monkeypatch):
    """The .tar.gz path of `calib publish` (the report itself is tested elsewhere: a small stand-in here)."""
    import calib.report.html as rh

    def small_report(inp, out_dir):  # (the parameter table: verification checks it against parameters.json)
        (out_dir / "fig").mkdir(parents=True, exist_ok=True)
        (out_dir / "index.html").write_text(f"<!DOCTYPE html><title>r</title>{rh._param_table(inp.params)[0]}")
        return {"figures": [], "skipped": [], "parameters": 0, "notes": []}

    monkeypatch.setattr(rh, "render_report", small_report)
    out = tmp_path / "pub" / "q-bundle.tar.gz"
    code, _stdout, err = cli("publish", quick_run / "fitted" / "q.json", "-o", out)
    assert code == 0, err
    with tarfile.open(out) as tf:
        names = tf.getnames()
    assert "q-bundle/MANIFEST.json" in names and "q-bundle/parameters.json" in names
    assert not [p for p in out.parent.iterdir() if p.name != out.name]  # no temporary left behind
    code, _, err = cli("verify-bundle", out)
    assert code == 0, err
    code, _, err = cli("publish", quick_run / "fitted" / "q.json", "-o", out)
    assert code == 2 and "already exists (use --force" in err


def test_publish_needs_the_samples(cli, tmp_path):
    code, _, err = cli("publish", ROOT / "fitted" / "reference" / "gtx280-ipp2010.json", "-o", tmp_path / "b")
    assert code == 2 and "no samples table found to ship with it" in err
    assert not (tmp_path / "b").exists()


def test_publish_refuses_samples_that_do_not_match(quick_run, tmp_path, cli):
    params = quick_run / "fitted" / "q.json"
    # another GPU's table: nothing at this GPU's clocks to fit
    code, _, err = cli("publish", params, "-o", tmp_path / "b", "--samples", ROOT / "fitted" / "sim-gtx580.samples.csv")
    assert code == 2 and "refitting" in err and "sim-gtx580.samples.csv failed" in err
    # the right table with every power reading 2 W higher: the refit lands elsewhere
    import pandas as pd

    df = pd.read_csv(quick_run / "fitted" / "q.samples.csv")
    df["power_w"] += 2.0
    df.to_csv(tmp_path / "shifted.csv", index=False)
    code, _, err = cli("publish", params, "-o", tmp_path / "b", "--samples", tmp_path / "shifted.csv")
    assert code == 2 and "do not reproduce from" in err and "power.idle_power_w" in err
    assert not (tmp_path / "b").exists()
