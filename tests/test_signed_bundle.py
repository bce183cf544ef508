"""Issue 17, finding 4: signed bundles. `calib publish --sign KEY` signs MANIFEST.json (Ed25519),
`calib verify-bundle --key PUB` checks the signature, the manifest's device and toolkit fields and the
report against the parameter file, and judges the refit with the refit's own standard errors. Every kind
of tampering is refused with a message naming what disagrees, signed or not; an unsigned bundle, or a
signed one checked without a key, verifies with a warning saying so."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from calib.bundle import MANIFEST, file_sha256

SIGNATURE_NAME = "MANIFEST.sig"  # (calib.bundle.SIGNATURE_NAME; written out so that the test runs on older code)
GPU = "virtual GeForce GTX 280 (GT200)"


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    from calib.bundle import generate_key

    d = tmp_path_factory.mktemp("keys")
    priv, pub, fp = generate_key(d / "lab.key")
    other, other_pub, other_fp = generate_key(d / "mallory.key")
    return {"priv": priv, "pub": pub, "fp": fp, "other": other, "other_pub": other_pub, "other_fp": other_fp}


@pytest.fixture(scope="module")
def signed(quick_run, keys, tmp_path_factory):
    from calib.cli import main

    out = tmp_path_factory.mktemp("signed") / "gtx280-signed"
    assert main(["-q", "publish", str(quick_run / "fitted" / "q.json"), "-o", str(out), "--sign", str(keys["priv"])]) == 0
    return out


@pytest.fixture(scope="module")
def unsigned(quick_run, tmp_path_factory):
    from calib.cli import main

    out = tmp_path_factory.mktemp("unsigned") / "gtx280-unsigned"
    assert main(["-q", "publish", str(quick_run / "fitted" / "q.json"), "-o", str(out)]) == 0
    return out


def _recompute_checksums(b: Path) -> None:
    """What anyone can do to hide an edit from the checksums: list the new sha256 and size of every file."""
    man = json.loads((b / MANIFEST).read_text())
    for rel, meta in man["files"].items():
        meta["sha256"] = file_sha256(b / rel)
        meta["bytes"] = (b / rel).stat().st_size
    (b / MANIFEST).write_text(json.dumps(man, indent=2) + "\n")


def _edit_params(b: Path, fn) -> None:
    doc = json.loads((b / "parameters.json").read_text())
    fn(doc)
    (b / "parameters.json").write_text(json.dumps(doc, indent=2) + "\n")


def _edit_manifest(b: Path, fn) -> None:
    man = json.loads((b / MANIFEST).read_text())
    fn(man)
    (b / MANIFEST).write_text(json.dumps(man, indent=2) + "\n")


def _idle(doc):
    return doc["power"]["parameters"]["idle_power_w"]


def _value(doc):
    _idle(doc)["value"] += 5.0  # +5 W


def _stderr(doc):
    doc["fit"]["power"]["stderr"]["idle_power_w"] *= 100


def _value_and_stderr(doc):  # the attack: a moved value hidden behind a 100x standard error
    _value(doc)
    _stderr(doc)


def _report(b: Path) -> str:
    """Change the idle power shown in the report's parameter table; returns the number shown."""
    page = (b / "report" / "index.html").read_text()
    doc = json.loads((b / "parameters.json").read_text())
    from calib.report.html import fmt

    old = f'<td class="num">{fmt(_idle(doc)["value"], 6)}</td>'
    new_text = fmt(_idle(doc)["value"] + 5.0, 6)
    assert page.count(old) == 1
    (b / "report" / "index.html").write_text(page.replace(old, f'<td class="num">{new_text}</td>'))
    return new_text


KINDS = ["value", "stderr", "value+stderr", "device name", "sm_count", "toolkit version", "report"]


def _tamper(src: Path, tmp_path: Path, kind: str) -> tuple[Path, str]:
    """A copy of bundle ``src`` with one kind of change and recomputed checksums; returns it and the
    words that must name the disagreement."""
    b = tmp_path / src.name
    shutil.copytree(src, b)
    doc = json.loads((b / "parameters.json").read_text())
    idle, se = _idle(doc)["value"], doc["fit"]["power"]["stderr"]["idle_power_w"]
    if kind == "value":
        _edit_params(b, _value)
        expect = f"power.idle_power_w: refit {idle:.6g} is {5.0 / se:.2f} standard errors away (the refit's standard error {se:.3g})"
    elif kind == "stderr":
        _edit_params(b, _stderr)
        expect = f"power.idle_power_w: its standard error {100 * se:.3g} is 100x the refit's {se:.3g}"
    elif kind == "value+stderr":
        _edit_params(b, _value_and_stderr)
        expect = f"power.idle_power_w: refit {idle:.6g} is {5.0 / se:.2f} standard errors away"
    elif kind == "device name":
        _edit_manifest(b, lambda m: m["device"].update(name="NVIDIA GeForce GTX 580"))
        expect = f"{MANIFEST}: device.name is 'NVIDIA GeForce GTX 580', parameters.json says '{GPU}'"
    elif kind == "sm_count":
        _edit_manifest(b, lambda m: m["device"].update(sm_count=16))
        expect = f"{MANIFEST}: device.sm_count is 16, parameters.json says 30"
    elif kind == "toolkit version":
        _edit_manifest(b, lambda m: m.update(toolkit_version="0.0.1"))
        from calib import __version__

        expect = (f"report/index.html: disagrees with parameters.json: it was generated by calib {__version__}, "
                  "the manifest says calib 0.0.1")
    elif kind == "report":
        shown = _report(b)
        expect = (f"report/index.html: disagrees with parameters.json: power.idle_power_w is {shown} in the report, "
                  f"{idle:.6g} in the parameter file")
    else:  # pragma: no cover
        raise ValueError(kind)
    _recompute_checksums(b)
    return b, expect


@pytest.mark.parametrize("kind", KINDS)
def test_tampered_signed_bundle_is_refused_naming_what_disagrees(signed, keys, tmp_path, cli, kind):
    b, expect = _tamper(signed, tmp_path, kind)
    rc, out, err = cli("verify-bundle", b, "--key", keys["pub"])
    assert rc == 2, out
    assert err.startswith(f"ERROR: {b}/{MANIFEST}: the signature does not verify with --key: the manifest was "
                          "changed after signing")
    assert expect in err, err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_checksum_recompute_attack_on_an_unsigned_bundle_is_refused(unsigned, tmp_path, cli, kind):
    """Without a signature anyone can recompute the checksums; the parts must still agree."""
    b, expect = _tamper(unsigned, tmp_path, kind)
    rc, out, err = cli("verify-bundle", b)
    assert rc == 2, out
    assert expect in err, err
    assert "signature" not in err


def test_re_signing_with_another_key_is_refused(signed, keys, tmp_path, cli):
    from calib.bundle import load_private_key, sign_manifest

    b, expect = _tamper(signed, tmp_path, "value")
    sign_manifest(b, load_private_key(keys["other"]))  # a valid signature, by someone else
    rc, out, err = cli("verify-bundle", b, "--key", keys["pub"])
    assert rc == 2
    assert (f"the signature does not verify with --key: it was signed by another key (sha256 {keys['other_fp'][:16]}...), "
            f"not by --key (sha256 {keys['fp'][:16]}...)") in err
    assert expect in err


def test_a_changed_file_without_recomputed_checksums_names_the_file(signed, keys, tmp_path, cli):
    b = tmp_path / signed.name
    shutil.copytree(signed, b)
    _edit_params(b, _value)
    rc, out, err = cli("verify-bundle", b, "--key", keys["pub"])
    assert rc == 2
    assert err.startswith(f"ERROR: {b}/parameters.json: sha256 ") and "the file was changed after publishing" in err


def test_a_removed_signature_is_refused_when_a_key_is_given(signed, keys, tmp_path, cli):
    b = tmp_path / signed.name
    shutil.copytree(signed, b)
    (b / SIGNATURE_NAME).unlink()
    rc, out, err = cli("verify-bundle", b, "--key", keys["pub"])
    assert rc == 2
    assert err.strip() == (f"ERROR: {b}: not signed ({SIGNATURE_NAME} missing), but --key was given: a signed bundle "
                           "whose signature was removed looks like this; refused")


def test_signed_bundle_verifies_with_its_key_and_warns_without(signed, keys, cli):
    rc, out, err = cli("verify-bundle", signed, "--key", keys["pub"])
    assert rc == 0, err
    assert f"  signature: {MANIFEST} signed by the key given (Ed25519, sha256 {keys['fp'][:16]}...)" in out
    assert err == ""
    man = json.loads((signed / MANIFEST).read_text())
    assert man["signed_by"] == {"algorithm": "Ed25519", "public_key_sha256": keys["fp"]}
    assert "--key PUBLISHER.pub" in (signed / "README.md").read_text()
    rc, out, err = cli("verify-bundle", signed)
    assert rc == 0
    assert err.strip() == (f"WARNING: {signed}: signed (Ed25519 key sha256 {keys['fp'][:16]}...), but the signature "
                           "was not checked: give the publisher's public key with --key PUB")


def test_unsigned_bundle_verifies_with_a_warning(unsigned, cli):
    rc, out, err = cli("verify-bundle", unsigned)
    assert rc == 0, err
    assert err.strip() == (f"WARNING: {unsigned}: not signed: its checksums prove it is intact, not who published "
                           "it (publishers: calib publish --sign KEY)")
    assert "refit:     power: 26 parameters reproduced" in out  # 24 before the per-access share and SFU's log slope


def test_keygen_and_key_errors(tmp_path, cli, keys):
    rc, out, err = cli("keygen", "-o", tmp_path / "k")
    assert rc == 0 and (tmp_path / "k").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "k.pub").read_text().startswith("-----BEGIN PUBLIC KEY-----")
    rc, out, err = cli("keygen", "-o", tmp_path / "k")
    assert rc == 2 and "already exists (use --force to replace the key pair)" in err
    rc, out, err = cli("verify-bundle", tmp_path, "--key", tmp_path / "k")
    assert rc == 2 and err.strip() == (f"ERROR: {tmp_path / 'k'}: not a public key (--key PUB): a private key: verify "
                                       "with the public key (KEY.pub)")
    rc, out, err = cli("publish", tmp_path / "p.json", "-o", tmp_path / "b", "--sign", tmp_path / "k.pub")
    assert rc == 2 and err.strip() == (f"ERROR: {tmp_path / 'k.pub'}: not a private key (--sign KEY): a public key: "
                                       "sign with the private key")
    assert not (tmp_path / "b").exists()
