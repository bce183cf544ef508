"""calib verify-bundle BUNDLE"""

from __future__ import annotations

import argparse
from typing import Any

HELP = "check a published bundle: checksums, schema, and that refitting its samples reproduces its parameters"
DESCRIPTION = (
    "Check BUNDLE (directory or .tar.gz written by `calib publish`): every file listed in MANIFEST.json is present "
    "with its sha256 and no other file was added; parameters.json passes the parameter-file schema; refitting "
    "samples.csv reproduces every power, DVFS and timing parameter within one standard error (parameters "
    "without one: to 1e-6 relative). The thermal model is "
    "fitted from temperature traces that a samples table does not carry; it is checked by checksum and schema "
    "only. Exit status 0 when the bundle verifies; 2 when it is refused, with the offending file named.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("bundle", metavar="BUNDLE", help="bundle directory or .tar.gz")


def print_verification(ver: Any) -> None:
    """Print a bundle verification: checksums, schema, and the refit against the bundled samples."""
    from calib.bundle import MANIFEST

    res = ver.refit
    print(f"verified {ver.bundle}")
    print(f"  checksums: {ver.files} files match {MANIFEST} (format {ver.manifest['format']}, "
          f"published with calib {ver.manifest.get('toolkit_version')})")
    print(f"  schema:    {ver.manifest['parameters']} is valid ({len(ver.schema_warnings)} warnings, listed in the report)")
    by_sec: dict[str, list] = {}
    for c in res.checks:
        by_sec.setdefault(c.section, []).append(c)
    for sec, cs in by_sec.items():
        ratios = [(c.ratio, c.name) for c in cs if c.ratio is not None]
        worst = max(ratios) if ratios else None
        tail = ""
        if worst is not None:
            tail = ("; the refit is identical" if worst[0] == 0 else
                    f"; largest deviation {worst[0]:.2g} standard errors ({worst[1]})")
        print(f"  refit:     {sec}: {len(cs)} parameters reproduced within their standard errors{tail}")
    for sec, why in res.not_refitted:
        print(f"  refit:     {sec}: {why}")


def run(args: argparse.Namespace) -> int:
    from calib.bundle import verify_bundle

    print_verification(verify_bundle(args.bundle))
    return 0
