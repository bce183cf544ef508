"""calib validate PARAMS.json"""

from __future__ import annotations

import argparse

HELP = "check a parameter file against the schema and physical bounds"


EPILOG = "example:\n  calib validate fitted/sim-gtx280.json"

def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("params", help="parameter file (JSON)")


def run(args: argparse.Namespace) -> int:
    import sys

    from calib.model.checks import load_checked

    pf = load_checked(args.params, fit_quality="error")
    for w in pf.warnings(args.params):  # on stderr, as every verb's warnings (stdout: the verdict)
        sys.stderr.write(f"WARNING: {w}\n")
    n = sum(len(sec.params) for sec in pf.sections.values())
    print(f"{args.params}: valid (schema {pf.schema_version}, device {pf.device['name']}, "
          f"sections {', '.join(n for n, _ in pf.items()) or 'none'}, {n} parameters)")
    return 0
