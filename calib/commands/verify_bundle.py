"""calib verify-bundle BUNDLE"""

from __future__ import annotations

import argparse
import warnings
from typing import Any

HELP = "check a published bundle: checksums, schema, and that refitting its samples reproduces its parameters"
DESCRIPTION = (
    "Check BUNDLE (directory or .tar.gz written by `calib publish`): every file listed in MANIFEST.json is present "
    "with its sha256 and no other file was added; parameters.json passes the parameter-file schema; refitting "
    "samples.csv reproduces every power, DVFS and timing parameter within one standard error (parameters "
    "without one: to 1e-6 relative). The thermal model is "
    "fitted from temperature traces that a samples table does not carry; it is checked by checksum and schema "
    "only. Exit status 0 when the bundle verifies; 2 when it is refused, with the offending file named.")


EPILOG = "example:\n  calib verify-bundle gtx280-bundle.tar.gz --key lab.key.pub"

def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("bundle", metavar="BUNDLE", help="bundle directory or .tar.gz")
    p.add_argument("--key", default=None, metavar="PUB",
                   help="the publisher's Ed25519 public key (PEM, KEY.pub of `calib keygen`): the signature of "
                        "MANIFEST.json must verify with it (an unsigned bundle is then refused)")


def print_verification(ver: Any) -> None:
    """Print a bundle verification: checksums, schema, and the refit against the bundled samples."""
    from calib.bundle import MANIFEST

    res = ver.refit
    print(f"verified {ver.bundle}")
    if ver.signature == "verified":
        print(f"  signature: {MANIFEST} signed by the key given (Ed25519, sha256 {ver.key_fingerprint[:16]}...)")
    print(f"  checksums: {ver.files} files match {MANIFEST} (format {ver.manifest['format']}, "
          f"published with calib {ver.manifest.get('toolkit_version')})")
    print(f"  schema:    {ver.manifest['parameters']} is valid ({len(ver.schema_warnings)} warnings, listed in the report)")
    by_sec: dict[str, list] = {}
    for c in res.checks:
        by_sec.setdefault(c.section, []).append(c)
    for sec, cs in by_sec.items():
        worst = max(((c.ratio, c.name) for c in cs if c.ratio is not None), default=None)
        tail = "" if worst is None else ("; the refit is identical" if worst[0] == 0 else
                                         f"; largest deviation {worst[0]:.2g} standard errors ({worst[1]})")
        print(f"  refit:     {sec}: {len(cs)} parameters reproduced within their standard errors{tail}")
    for sec, why in res.not_refitted:
        print(f"  refit:     {sec}: {why}")


def signature_warning(ver: Any) -> str | None:
    """The warning a verification without a checked signature deserves (None when it was checked)."""
    if ver.signature == "unsigned":
        return (f"{ver.bundle}: not signed: its checksums prove it is intact, not who published it "
                "(publishers: calib publish --sign KEY)")
    if ver.signature == "unchecked":
        return (f"{ver.bundle}: signed (Ed25519 key sha256 {(ver.key_fingerprint or '?')[:16]}...), but the signature "
                "was not checked: give the publisher's public key with --key PUB")
    return None


def run(args: argparse.Namespace) -> int:
    from calib.bundle import VERIFY_STAGES, verify_bundle
    from calib.progress import StagedProgress, wants_progress

    with StagedProgress(VERIFY_STAGES, "verify-bundle", wants_progress(args)) as prog:
        ver = verify_bundle(args.bundle, key=args.key, progress=prog.stage)
    w = signature_warning(ver)
    if w:
        warnings.warn(w)
    if not getattr(args, "quiet", False):
        print_verification(ver)
    return 0
