"""calib validate PARAMS.json"""

from __future__ import annotations

import argparse

HELP = "check a parameter file against the schema and physical bounds"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("params", help="parameter file (JSON)")


def run(args: argparse.Namespace) -> int:
    from calib.core import params

    from calib.model.checks import load_checked

    doc = load_checked(args.params)
    warns = params.validate(doc, args.params)
    for w in warns:
        print(f"warning: {w}")
    sections = [s for s in params.SECTIONS if s in doc]
    n = sum(len(doc[s]["parameters"]) for s in sections)
    print(f"{args.params}: valid (schema {doc['schema_version']}, device {doc['device']['name']}, "
          f"sections {', '.join(sections) or 'none'}, {n} parameters)")
    return 0
