"""Publishing bundles: a parameter set with everything a recipient needs to trust and use it.

Layout (a directory, or the same directory inside a ``.tar.gz``)::

    <name>/
      MANIFEST.json     format, toolkit version, device, and sha256 + size + role of every other file
      README.md         what this is and how to check and use it
      parameters.json   the parameter file, byte for byte as published
      samples.csv       the samples table the parameters were fitted on
      plan.json         (when the session is known) the session manifest's plan: what each benchmark
                        measures, which the timing refit reads
      recovery.json     (virtual GPUs) fitted vs ground-truth parameters, when it exists
      report/           the HTML report (index.html, fig/*.png)

Verification (:func:`verify_bundle`, ``calib verify-bundle``) refuses a bundle, naming the file, when a
file listed in the manifest is missing or its sha256 differs, when a file is not listed, when the
parameter file fails the schema, or when refitting the shipped samples does not reproduce the shipped
parameters. The refit is ``Fitter(**settings).fit(samples)`` with the settings the parameter file
records for each section (:mod:`calib.fit.base`); when the IPP fitter's own choice of structure
(access-rate forms and SM scaling, by BIC) lands elsewhere than the shipped file records (e.g. a
different toolkit version), the recorded structure is imposed. A parameter is reproduced when the
refit lands within one standard error of the shipped value (parameters without a standard error:
within 1e-6 relative, 1e-9 absolute). Refitted: power (IPP or DVFS), dvfs and timing (from the
timing rows of the table, with what each one measures from the shipped ``plan.json``). The thermal
model is fitted from temperature traces, which a samples table does not carry, so it is checked by
checksum and schema only; the verification says so.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import shutil
import tarfile
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from calib import __version__
from calib.core.atomic import (atomic_write_bytes, atomic_write_json, atomic_write_text, atomic_writer, check_not_input,
                               check_output_dir, check_output_file, output_target)
from calib.core.params import ParameterFile, Section
from calib.core.errors import BadInputError, CalibError
from calib.core.session import file_sha256
from calib.model.checks import load_checked

BUNDLE_FORMAT = "calib-bundle-1"
MANIFEST = "MANIFEST.json"
PARAMS_NAME = "parameters.json"
SAMPLES_NAME = "samples.csv"
PLAN_NAME = "plan.json"
RECOVERY_NAME = "recovery.json"
README_NAME = "README.md"
REPORT_DIR = "report"
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz")
#: relative / absolute agreement demanded of a parameter that has no standard error
NOSE_RTOL, NOSE_ATOL = 1e-6, 1e-9
#: a shipped standard error must be within this factor of the refit's (the refit is deterministic: the
#: same toolkit gives the same one; another version may move it a little, not 100x)
SE_FACTOR = 1.5
#: the signature of MANIFEST.json (Ed25519, calib publish --sign); not listed in the manifest it signs
SIGNATURE_NAME = "MANIFEST.sig"
SIGNATURE_FORMAT = "calib-signature-1"
#: device fields the manifest copies from the parameter file (checked against it)
DEVICE_FIELDS = ("name", "uuid", "sm_count", "driver_version", "cuda_version")


class BundleError(BadInputError):
    """A bundle is malformed, was changed after publishing, or does not reproduce (exit status 2)."""


def is_archive(path: str | os.PathLike) -> bool:
    """True when ``path`` names a bundle archive (``.tar.gz``/``.tgz``) rather than a directory."""
    return str(path).endswith(ARCHIVE_SUFFIXES)


def bundle_name(path: str | os.PathLike) -> str:
    """The bundle's name: the file or directory name without its archive suffix."""
    name = Path(path).name
    return next((name[: -len(suf)] for suf in ARCHIVE_SUFFIXES if name.endswith(suf)), name)


# ------------------------------------------------------------------------------------------------
# refit
# ------------------------------------------------------------------------------------------------

@dataclass
class ParamCheck:
    section: str
    name: str
    shipped: float
    refit: float | None
    stderr: float | None
    ok: bool
    note: str = ""

    @property
    def ratio(self) -> float | None:
        """|refit - shipped| / stderr."""
        if self.refit is None or not self.stderr:
            return None
        return abs(self.refit - self.shipped) / self.stderr


@dataclass
class RefitResult:
    checks: list[ParamCheck] = field(default_factory=list)
    not_refitted: list[tuple[str, str]] = field(default_factory=list)   # (section, why)

    @property
    def failures(self) -> list[ParamCheck]:
        return [c for c in self.checks if not c.ok]


#: the fitter of each refittable model, by model name (timing: the session's procedure on the table's rows)
def _fitter(model: str) -> Any:
    from calib.fit.dvfs import DvfsPowerFitter
    from calib.fit.ipp import IppPowerFitter

    return {"ipp": IppPowerFitter, "dvfs": DvfsPowerFitter}.get(model)


def _refit_section(pf: ParameterFile, name: str, df: pd.DataFrame, plan: list | None = None) -> Section | None:
    """Refit one section with the settings it records: ``Fitter(**settings).fit(samples)``. IPP: when
    the fitter's own choice of structure (access-rate forms and SM scaling by BIC) lands elsewhere than
    the shipped file records (e.g. another toolkit version), the recorded structure is imposed."""
    sec = pf[name]
    if sec.model == "mwp_cwp_wangchu":
        from calib.fit.timing import fit_timing

        # the session's plan says what each timing microbenchmark measures (its kind); without it the
        # timing section is not refitted
        return fit_timing(df, pf.device, plan)
    fitter = _fitter(sec.model).from_settings(sec.settings)
    fitted = fitter.fit(df).section_
    if sec.model == "ipp":
        forms = {u: s["ar_function"] for u, s in sec.structure["units"].items()}
        if fitter.forms_ != forms or fitter.sm_scaling_ != sec.structure.get("sm_scaling", "linear"):
            settings = dict(sec.settings, ar_forms=forms, sm_scaling=sec.structure.get("sm_scaling", "linear"))
            fitted = _fitter("ipp").from_settings(settings).fit(df).section_
    return fitted


def refit(pf: ParameterFile, samples: pd.DataFrame, plan: list | None = None) -> RefitResult:
    """Refit the power, DVFS and timing sections of ``pf`` to ``samples``; compare every parameter."""
    out = RefitResult()
    todo: list[str] = []
    for name, sec in pf.items():
        if sec.model == "ipp-thermal":
            out.not_refitted.append((name, "fitted from heating/cooling traces, which a samples table does not "
                                           "carry: checked by checksum and schema only"))
        elif sec.model == "mwp_cwp_wangchu":
            todo.append(name)
        elif _fitter(sec.model) is None:
            out.not_refitted.append((name, f"model {sec.model!r} has no refit here"))
        elif sec.settings is None:
            out.not_refitted.append((name, "the file records no fitter settings (written by calib before 0.2): "
                                           "checked by checksum and schema only"))
        else:
            todo.append(name)
    for name in todo:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the fit's own warnings are already in the shipped file
            fitted = _refit_section(pf, name, samples, plan)
        if fitted is None:
            out.not_refitted.append((name, "the samples table has no timing information to refit it from"))
            continue
        new = fitted.params
        for pname, p in pf[name].params.items():
            q = new.get(pname)
            if q is None:
                out.checks.append(ParamCheck(name, pname, p.value, None, p.stderr, False,
                                             "absent from the refit (the samples do not support it)"))
                continue
            # judged with the refit's own standard error: the shipped one is part of what is being checked
            se = q.stderr if p.vary else None
            if se:
                ok = abs(q.value - p.value) <= se
                note = "" if ok else (f"refit {q.value:.6g} is {abs(q.value - p.value) / se:.2f} standard errors away "
                                      f"(the refit's standard error {se:.3g})")
            else:
                ok = math.isclose(q.value, p.value, rel_tol=NOSE_RTOL, abs_tol=NOSE_ATOL)
                note = "" if ok else f"refit {q.value:.6g} differs (no standard error: exact agreement required)"
            for what, mine, theirs in (("standard error", p.stderr, q.stderr),
                                       ("total standard error", p.stderr_total, q.stderr_total)):
                if ok and p.vary and mine and theirs and not 1 / SE_FACTOR <= mine / theirs <= SE_FACTOR:
                    ok, note = False, f"its {what} {mine:.3g} is {mine / theirs:.3g}x the refit's {theirs:.3g}"
            out.checks.append(ParamCheck(name, pname, p.value, q.value, se, ok, note))
        for pname, q in new.items():
            if pname not in pf[name].params:
                out.checks.append(ParamCheck(name, pname, math.nan, q.value, None, False,
                                             "the refit has this parameter but the shipped file does not"))
    return out


# ------------------------------------------------------------------------------------------------
# verify
# ------------------------------------------------------------------------------------------------

@dataclass
class Verification:
    """What :func:`verify_bundle` checked (it raises :class:`BundleError` instead of returning a failure)."""

    bundle: Path
    manifest: dict
    files: int
    schema_warnings: list[str]
    refit: RefitResult
    signature: str = "unsigned"              # verified | unchecked | unsigned (see check_signature)
    key_fingerprint: str | None = None       # of the key that signed it


def _safe_extract(archive: Path, dest: Path) -> Path:
    """Extract a bundle archive into ``dest`` (regular files and directories only, all under one top
    directory); returns that directory."""
    try:
        with tarfile.open(archive, "r:gz") as tf:
            members = tf.getmembers()
            tops = {Path(m.name).parts[0] for m in members if m.name not in ("", ".")}
            if len(tops) != 1:
                raise BundleError(f"{archive}: expected one top-level directory in the archive, found {len(tops)}")
            for m in members:
                parts = Path(m.name).parts
                if Path(m.name).is_absolute() or ".." in parts or not (m.isfile() or m.isdir()):
                    raise BundleError(f"{archive}: member {m.name!r} is not a plain file inside the bundle; refusing")
            if hasattr(tarfile, "data_filter"):
                tf.extractall(dest, filter="data")
            else:  # pragma: no cover - Python without extraction filters; members were checked above
                tf.extractall(dest)
    except (tarfile.TarError, OSError, EOFError) as e:
        if isinstance(e, BundleError):
            raise
        raise BundleError(f"{archive}: not a readable .tar.gz bundle ({e}); it may have been changed or truncated") from e
    return dest / tops.pop()


def _read_manifest(root: Path, label: str) -> dict:
    mpath = root / MANIFEST
    if not mpath.is_file():
        raise BundleError(f"{label}: {MANIFEST} missing; not a calib bundle")
    try:
        man = json.loads(mpath.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise BundleError(f"{label}/{MANIFEST}: not valid JSON ({e})") from e
    if not isinstance(man, dict) or man.get("format") != BUNDLE_FORMAT:
        raise BundleError(f"{label}/{MANIFEST}: field 'format' is {man.get('format') if isinstance(man, dict) else None!r}, "
                          f"expected {BUNDLE_FORMAT!r}")
    files = man.get("files")
    if not isinstance(files, dict) or not files:
        raise BundleError(f"{label}/{MANIFEST}: field 'files' missing or empty")
    for rel, meta in files.items():
        if not isinstance(meta, dict) or not isinstance(meta.get("sha256"), str):
            raise BundleError(f"{label}/{MANIFEST}: files.{rel}: sha256 missing")
        if Path(rel).is_absolute() or ".." in Path(rel).parts:
            raise BundleError(f"{label}/{MANIFEST}: files.{rel}: path leaves the bundle")
    for key in ("parameters", "samples"):
        if man.get(key) not in files:
            raise BundleError(f"{label}/{MANIFEST}: field '{key}' must name a file listed under 'files'")
    return man


def check_files(root: Path, man: dict, label: str) -> int:
    """Every listed file present with its size and sha256, and no unlisted file. Returns the count."""
    listed = man["files"]
    for rel, meta in sorted(listed.items()):
        f = root / rel
        if not f.is_file():
            raise BundleError(f"{label}/{rel}: listed in {MANIFEST} but missing from the bundle")
        digest = file_sha256(f)
        if digest != meta["sha256"]:
            raise BundleError(f"{label}/{rel}: sha256 {digest} differs from the manifest's {meta['sha256']}: "
                              "the file was changed after publishing")
    present = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    extra = sorted(present - set(listed) - {MANIFEST, SIGNATURE_NAME})
    if extra:
        raise BundleError(f"{label}/{extra[0]}: not listed in {MANIFEST} (a file was added after publishing)")
    return len(listed)


# ------------------------------------------------------------------------------------------------
# signatures (Ed25519, the `cryptography` package)
# ------------------------------------------------------------------------------------------------

def generate_key(path: str | os.PathLike, force: bool = False) -> tuple[Path, Path, str]:
    """Write a new Ed25519 key pair: the private key at ``path`` (PEM, PKCS#8, unencrypted, mode 0600) and
    the public key at ``path.pub`` (PEM, SubjectPublicKeyInfo) -- the formats of ``openssl genpkey
    -algorithm ed25519`` and ``openssl pkey -pubout``. Returns (private, public, fingerprint)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    priv_path, pub_path = Path(path), Path(f"{path}.pub")
    for p in (priv_path, pub_path):
        check_output_file(p, "key file")
        if p.exists() and not force:
            raise BadInputError(f"{p}: already exists (use --force to replace the key pair)")
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    atomic_write_bytes(priv_path, pem)
    os.chmod(priv_path, 0o600)  # a private key is for its owner alone
    atomic_write_bytes(pub_path, key.public_key().public_bytes(serialization.Encoding.PEM,
                                                               serialization.PublicFormat.SubjectPublicKeyInfo))
    return priv_path, pub_path, key_fingerprint(key.public_key())


def key_fingerprint(public_key: Any) -> str:
    """sha256 (hex) of an Ed25519 public key's 32 raw bytes: how messages and manifests name a key."""
    from cryptography.hazmat.primitives import serialization

    return hashlib.sha256(public_key.public_bytes(serialization.Encoding.Raw,
                                                  serialization.PublicFormat.Raw)).hexdigest()


def _read_key(path: str | os.PathLike, private: bool) -> Any:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

    what = "private key (--sign KEY)" if private else "public key (--key PUB)"
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise BadInputError(f"{path}: cannot read the {what} ({e.strerror or e})") from None
    try:
        key = (serialization.load_pem_private_key(data, password=None) if private
               else serialization.load_pem_public_key(data))
    except TypeError:
        raise BadInputError(f"{path}: the private key is encrypted; calib signs with an unencrypted PEM key "
                            "(calib keygen)") from None
    except ValueError:
        other = "a public key: sign with the private key" if private and b"PUBLIC KEY" in data else (
            "a private key: verify with the public key (KEY.pub)" if not private and b"PRIVATE KEY" in data else
            "not a PEM key")
        raise BadInputError(f"{path}: not a {what}: {other}") from None
    if not isinstance(key, Ed25519PrivateKey if private else Ed25519PublicKey):
        raise BadInputError(f"{path}: a {type(key).__name__} key; calib signs and verifies Ed25519 keys (calib keygen)")
    return key


def load_private_key(path: str | os.PathLike) -> Any:
    """An Ed25519 private key from a PEM file (BadInputError naming the file otherwise)."""
    return _read_key(path, True)


def load_public_key(path: str | os.PathLike) -> Any:
    """An Ed25519 public key from a PEM file (BadInputError naming the file otherwise)."""
    return _read_key(path, False)


def sign_manifest(root: Path, private_key: Any) -> dict:
    """Sign the bytes of ``root/MANIFEST.json`` (which lists every other file's sha256) into
    ``root/MANIFEST.sig``; returns the signature document."""
    data = (root / MANIFEST).read_bytes()
    doc = {"format": SIGNATURE_FORMAT, "algorithm": "Ed25519", "signed_file": MANIFEST,
           "public_key_sha256": key_fingerprint(private_key.public_key()),
           "signature": base64.b64encode(private_key.sign(data)).decode("ascii")}
    atomic_write_json(root / SIGNATURE_NAME, doc)
    return doc


@dataclass
class SignatureCheck:
    """``status``: 'verified' (with the given key), 'unchecked' (signed, no key given) or 'unsigned';
    ``problem``: why a signature was refused (None when it was not)."""

    status: str
    fingerprint: str | None = None
    problem: str | None = None


def check_signature(root: Path, label: str, public_key: Any | None) -> SignatureCheck:
    """The bundle's signature against ``public_key`` (None: not checked; see :class:`SignatureCheck`)."""
    from cryptography.exceptions import InvalidSignature

    sig_path = root / SIGNATURE_NAME
    if not sig_path.is_file():
        if public_key is not None:
            return SignatureCheck("unsigned", None, f"{label}: not signed ({SIGNATURE_NAME} missing), but --key was "
                                  "given: a signed bundle whose signature was removed looks like this; refused")
        return SignatureCheck("unsigned")
    try:
        doc = json.loads(sig_path.read_text(encoding="utf-8"))
        sig = base64.b64decode(doc["signature"], validate=True)
        fp = str(doc.get("public_key_sha256") or "")
        if doc.get("format") != SIGNATURE_FORMAT or doc.get("algorithm") != "Ed25519":
            raise ValueError("format")
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
        return SignatureCheck("unsigned", None, f"{label}/{SIGNATURE_NAME}: not a calib signature file "
                              f"({SIGNATURE_FORMAT}, Ed25519); refused")
    if public_key is None:
        return SignatureCheck("unchecked", fp)
    mine = key_fingerprint(public_key)
    try:
        public_key.verify(sig, (root / MANIFEST).read_bytes())
    except InvalidSignature:
        why = ("the manifest was changed after signing" if fp == mine else
               f"it was signed by another key (sha256 {fp[:16]}...), not by --key (sha256 {mine[:16]}...)")
        return SignatureCheck("unsigned", fp, f"{label}/{MANIFEST}: the signature does not verify with --key: {why}")
    return SignatureCheck("verified", mine)


def check_consistency(root: Path, man: dict, pf: ParameterFile, label: str) -> list[str]:
    """What the parts of a bundle say about each other, each disagreement as a sentence naming the file:
    the manifest's device and toolkit fields against the parameter file, and the report against the
    parameter file (:func:`calib.report.html.check_report`)."""
    dev = man.get("device") if isinstance(man.get("device"), dict) else {}
    pname = man["parameters"]
    out = [f"{label}/{MANIFEST}: device.{k} is {dev.get(k)!r}, {pname} says {pf.device.get(k)!r}"
           for k in DEVICE_FIELDS if k in dev and dev.get(k) != pf.device.get(k)]
    fitted_with = man.get("parameters_toolkit_version")
    if fitted_with is not None and fitted_with != pf.provenance.get("toolkit_version"):
        out.append(f"{label}/{MANIFEST}: parameters_toolkit_version is {fitted_with!r}, {pname} was fitted with calib "
                   f"{pf.provenance.get('toolkit_version')!r}")
    report = man.get("report")
    if isinstance(report, str) and report in man["files"]:
        from calib.report.html import check_report

        try:
            page = (root / report).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            return out + [f"{label}/{report}: cannot be read ({e.__class__.__name__})"]
        out += [f"{label}/{report}: disagrees with {pname}: {what}"
                for what in check_report(page, pf, file_sha256(root / pname), man.get("toolkit_version"))]
    return out


#: stages of a verification and their expected share of its time (the refit is the work)
VERIFY_STAGES = {"checksums": 0.03, "consistency": 0.02, "refit": 0.95}


def _verify_root(root: Path, label: str, checked: RefitResult | None = None, key: Any | None = None,
                 progress: Any = None) -> Verification:
    """Verify an unpacked bundle; ``checked``: a refit already done on these very files (publish); ``key``:
    the publisher's public key; ``progress(stage)`` as the stages of :data:`VERIFY_STAGES` start. Every
    check runs and every disagreement is named in one BundleError."""
    from calib.core.samples import read_samples

    step = progress or (lambda name: None)
    step("checksums")
    man = _read_manifest(root, label)
    sig = check_signature(root, label, key)
    problems = [sig.problem] if sig.problem else []
    try:
        n = check_files(root, man, label)
    except BundleError as e:
        raise BundleError("; ".join(problems + [str(e)])) from e
    pfile = root / man["parameters"]
    try:
        pf = load_checked(pfile)
    except BadInputError as e:
        raise BundleError("; ".join(problems + [f"{label}/{man['parameters']}: fails the parameter-file schema: {e}"])) from e
    swarn = pf.warnings(man["parameters"])
    step("consistency")
    problems += check_consistency(root, man, pf, label)
    if checked is None:
        step("refit")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                samples = read_samples(root / man["samples"], require_power=True)
            except BadInputError as e:
                raise BundleError("; ".join(problems + [f"{label}/{man['samples']}: {e}"])) from e
        try:
            plan = None
            if man.get("plan") in man["files"]:
                try:
                    plan = json.loads((root / man["plan"]).read_text(encoding="utf-8"))
                except (OSError, UnicodeDecodeError, ValueError) as e:
                    raise BundleError(f"{label}/{man['plan']}: cannot be read as JSON ({e.__class__.__name__})") from e
            checked = check_refit(pf, samples, f"{label}/{man['parameters']}", man["samples"], plan)
        except BundleError as e:
            pub = man.get("toolkit_version")
            problems.append(f"{e} [published with calib {pub}, verified with calib {__version__}"
                            + ("" if pub == __version__ else ": a different fitter can land elsewhere") + "]")
    if problems:
        raise BundleError("; ".join(problems))
    return Verification(root, man, n, swarn, checked, sig.status, sig.fingerprint)


def check_refit(pf: ParameterFile, samples: pd.DataFrame, label: str, samples_name: str,
                plan: list | None = None) -> RefitResult:
    """:func:`refit`, raising :class:`BundleError` (naming the parameters) when something does not reproduce."""
    try:
        res = refit(pf, samples, plan)
    except CalibError as e:  # bad input or a fit that cannot run: the samples do not belong to these parameters
        raise BundleError(f"{label}: refitting {samples_name} failed: {e}") from e
    if res.failures:
        bad = res.failures
        worst = "; ".join(f"{c.section}.{c.name}: {c.note}" for c in bad[:3])
        raise BundleError(f"{label}: {len(bad)} parameter(s) do not reproduce from "
                          f"{samples_name} within their standard errors ({worst}"
                          + (f"; and {len(bad) - 3} more" if len(bad) > 3 else "") + ")")
    return res


def verify_bundle(path: str | os.PathLike, key: str | os.PathLike | None = None, progress: Any = None) -> Verification:
    """Check a bundle directory or archive (module docstring), with the publisher's public key file
    ``key`` when given; raises :class:`BundleError` naming the file and what disagrees."""
    path = Path(path)
    pub = load_public_key(key) if key is not None else None
    if not path.exists():
        raise BundleError(f"{path}: not found")
    if path.is_dir():
        return _verify_root(path, str(path), key=pub, progress=progress)
    if not is_archive(path):
        raise BundleError(f"{path}: expected a bundle directory or a .tar.gz archive")
    with tempfile.TemporaryDirectory(prefix="calib-bundle-") as tmp:
        root = _safe_extract(path, Path(tmp))
        v = _verify_root(root, f"{path}:{root.name}", key=pub, progress=progress)
        v.bundle = path
        return v


# ------------------------------------------------------------------------------------------------
# publish
# ------------------------------------------------------------------------------------------------

def _readme(pf: ParameterFile, created_utc: str, recovery: bool, signer: str | None, name: str) -> str:
    from calib.report_text import rmse_text

    dev = pf.device
    prov = pf.provenance
    lines = [f"# Calibrated GPU model parameters: {dev.get('name')}", "",
             f"Published {created_utc} with calib {__version__} (the toolkit that fits and uses "
             "these files). Parameter schema version " + str(pf.schema_version) + ".", "",
             "## What is here", "",
             f"- `{PARAMS_NAME}`: the parameter file (models: "
             + ", ".join(f"{s} ({sec.model})" for s, sec in pf.items()) + ").",
             f"- `{SAMPLES_NAME}`: the samples table the parameters were fitted on (one row per measurement window).",
             (f"- `{REPORT_DIR}/index.html`: the report with plots, every parameter with its standard error, the fit's "
             "warnings and provenance. Open it from disk; it needs no network."),
             f"- `{MANIFEST}`: sha256 of every file."]
    if recovery:
        lines.append(f"- `{RECOVERY_NAME}`: fitted vs ground-truth values (the device was a virtual GPU).")
    lines += ["", "## Device", "",
              (f"{dev.get('name')}, {dev.get('sm_count')} SMs, driver {dev.get('driver_version') or 'unknown'}, "
              f"CUDA {dev.get('cuda_version') or 'unknown'}, default clocks {(dev.get('clocks') or {}).get('core_mhz')}/"
              f"{(dev.get('clocks') or {}).get('mem_mhz')} MHz (core/memory). "
              f"Campaign: {(prov.get('campaign') or {}).get('name', 'unknown') if isinstance(prov.get('campaign'), dict) else prov.get('campaign')}."),
              "", "## Fit quality", ""]
    for s, sec in pf.items():
        st = sec.stats
        if not st:
            continue
        rm = rmse_text(st)
        extra = f", held-out MAPE {st['heldout_mape_pct']:.2f}%" if st.get("heldout_mape_pct") is not None else ""
        mp = f"MAPE {st['mape_pct']:.3g}%" if st.get("mape_pct") is not None else "MAPE -"
        lines.append(f"- {s}: {st.get('n_samples')} samples, {rm}, {mp}{extra}; "
                     f"{len(st.get('warnings', []))} warning(s) (see the report).")
    lines += ["", "## Check it", "",
              "```sh", f"calib verify-bundle {name}" + (" --key PUBLISHER.pub" if signer else ""), "```", "",
              ("This checks every file's sha256 against the manifest, the parameter file against the schema, the "
               "manifest's device and toolkit fields and the report against the parameter file, and that refitting "
               "the samples table reproduces the power, DVFS and timing parameters within the refit's standard errors.")
              + (f" `{SIGNATURE_NAME}` is the publisher's Ed25519 signature of `{MANIFEST}` (public key sha256 "
                 f"{signer}): with the publisher's public key, `--key` proves who published these files; "
                 "checksums alone prove only that they are intact." if signer else
                 " The bundle is not signed: its checksums prove it is intact, not who published it."),
              "", "## Use it", "", "```sh",
              f"calib predict {PARAMS_NAME} your_samples.csv -o predicted.csv   # power (and temperature) per row",
              f"calib diff {PARAMS_NAME} your_refit.json                        # compare with your own calibration",
              "```", ""]
    if prov.get("citation"):
        lines += ["## Cite", "", prov["citation"], ""]
    return "\n".join(lines)


def _plan_of(inp: Any) -> list | None:
    """The plan of the session the parameters came from, when it is known."""
    plan = inp.session.manifest.get("plan") if inp.session is not None else None
    return plan if isinstance(plan, list) else None


def _stage(inp: Any, root: Path) -> dict:
    from calib.report.html import write_report
    from calib.core.samples import write_samples

    root.mkdir(parents=True)
    shutil.copyfile(inp.params_path, root / PARAMS_NAME)
    if inp.samples_path is not None:
        shutil.copyfile(inp.samples_path, root / SAMPLES_NAME)
    else:
        write_samples(inp.samples, root / SAMPLES_NAME)
    roles = {PARAMS_NAME: "parameters", SAMPLES_NAME: "samples"}
    if _plan_of(inp) is not None:
        atomic_write_json(root / PLAN_NAME, _plan_of(inp))
        roles[PLAN_NAME] = "plan"
    rec = inp.params_path.with_name(inp.params_path.name[:-5] + ".recovery.json") \
        if inp.params_path.name.endswith(".json") else None
    if rec is not None and rec.is_file():
        shutil.copyfile(rec, root / RECOVERY_NAME)
        roles[RECOVERY_NAME] = "recovery"
    write_report(inp, root / REPORT_DIR)
    for p in sorted((root / REPORT_DIR).rglob("*")):
        if p.is_file():
            roles[p.relative_to(root).as_posix()] = "report"
    return roles


def _manifest(pf: ParameterFile, root: Path, roles: dict[str, str], name: str, source: Path, created_utc: str,
              signer: str | None = None) -> dict:
    dev = pf.device
    files = {rel: {"sha256": file_sha256(root / rel), "bytes": (root / rel).stat().st_size, "role": role}
             for rel, role in sorted(roles.items())}
    return {"format": BUNDLE_FORMAT, "name": name, "toolkit_version": __version__, "created_utc": created_utc,
            "device": {k: dev.get(k) for k in DEVICE_FIELDS},
            "parameters_toolkit_version": pf.provenance.get("toolkit_version"),
            **({"signed_by": {"algorithm": "Ed25519", "public_key_sha256": signer}} if signer else {}),
            "published_from": source.name, "parameters": PARAMS_NAME, "samples": SAMPLES_NAME,
            **({"plan": PLAN_NAME} if PLAN_NAME in roles else {}),
            "report": f"{REPORT_DIR}/index.html", "files": files}


def publish(params_path: str | os.PathLike, out: str | os.PathLike, *, samples: str | os.PathLike | None = None,
            session: str | os.PathLike | None = None, force: bool = False,
            sign: str | os.PathLike | None = None, progress: Any | None = None) -> tuple[Path, Verification]:
    """Build a bundle of ``params_path`` at ``out`` (directory, or ``.tar.gz``), sign its manifest with the
    private key file ``sign`` when given, verify it, then move it into place. Nothing is left at ``out``
    unless the bundle verified. ``progress(what)`` is called before each long stage."""
    from calib.report.inputs import load_inputs

    step = progress or (lambda what: None)
    key = load_private_key(sign) if sign is not None else None  # before the work: a bad key must not cost it
    if is_archive(out):
        output_target(out, "bundle")  # (a symlink is followed; a device node is refused)
    else:
        check_output_dir(out, "bundle directory")
    out = Path(out)
    if out.exists() and not force:
        raise BadInputError(f"{out}: already exists (use --force to replace it)")
    if out.exists() and out.is_dir() != (not is_archive(out)):
        raise BadInputError(f"{out}: exists and is a {'directory' if out.is_dir() else 'file'}; refusing to replace it")
    if out.is_dir() and not (out / MANIFEST).is_file():
        # --force replaces a previous bundle, never a directory of someone's files
        raise BadInputError(f"{out}: exists and is not a bundle (no {MANIFEST}); refusing to replace it")
    check_not_input(out, params_path, samples, session, what="bundle")
    inp = load_inputs(params_path, samples=samples, session=session)
    if inp.samples is None:
        raise BadInputError(f"{params_path}: no samples table found to ship with it; give --samples SAMPLES.csv "
                            "(or --session DIR to rebuild it from the session)")
    # the expensive check first: parameters that do not follow from the samples are not published
    step("refit")
    checked = check_refit(inp.params, inp.samples, str(inp.params_path),
                          str(inp.samples_path) if inp.samples_path else "the samples rebuilt from the session",
                          _plan_of(inp))
    name = bundle_name(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{name}.", dir=out.parent) as tmp:
        root = Path(tmp) / name
        step("report")
        roles = _stage(inp, root)
        step("manifest")
        signer = key_fingerprint(key.public_key()) if key is not None else None
        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        atomic_write_text(root / README_NAME, _readme(inp.params, created, RECOVERY_NAME in roles, signer, out.name))
        roles[README_NAME] = "readme"
        atomic_write_json(root / MANIFEST, _manifest(inp.params, root, roles, name, inp.params_path, created, signer))
        if key is not None:
            sign_manifest(root, key)
        step("verify")
        # checksums, signature, schema and consistency of what is about to ship
        ver = _verify_root(root, str(out), checked, key=key.public_key() if key is not None else None)
        for p in [root, *root.rglob("*")]:  # temporary files are private (0600); a bundle is for others
            os.chmod(p, 0o755 if p.is_dir() else 0o644)
        if is_archive(out):
            with atomic_writer(out) as fh, tarfile.open(fileobj=fh, mode="w:gz") as tf:
                tf.add(root, arcname=name)
        else:
            if out.exists():
                shutil.rmtree(out)
            os.rename(root, out)
    ver.bundle = out
    return out, ver
