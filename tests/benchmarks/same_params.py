"""Are two parameter files the same fit, up to float rounding and provenance?

Run from the repository root::

    .venv/bin/python tests/benchmarks/same_params.py OLD.json NEW.json [--rtol 1e-9] [--atol 1e-12]
    .venv/bin/python tests/benchmarks/same_params.py OLD_DIR NEW_DIR     # every *.json in OLD_DIR

A refactor that must not change what the toolkit computes (issue 28: "fitted/sim-* identical up to
float rounding and provenance") is checked by fitting the same session before and after it and
comparing the two files here. Every value is compared except ``provenance`` (commit, time) and the
report's own timings; numbers within ``rtol``/``atol``, everything else exactly. Prints one line per
difference (path, old, new) and exits 1 when there is any.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

IGNORED = {"provenance", "created_utc", "elapsed_s", "fit_time_s", "toolkit_commit"}


def differences(old, new, rtol: float, atol: float, path: str = "") -> list[str]:
    """Paths where ``old`` and ``new`` differ beyond the tolerances (numbers) or at all (the rest)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in sorted(set(old) | set(new)):
            if key in IGNORED:
                continue
            if key not in old or key not in new:
                out.append(f"{path}/{key}: only in {'new' if key in new else 'old'}")
                continue
            out += differences(old[key], new[key], rtol, atol, f"{path}/{key}")
        return out
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return [f"{path}: length {len(old)} -> {len(new)}"]
        return [d for i, (a, b) in enumerate(zip(old, new)) for d in differences(a, b, rtol, atol, f"{path}[{i}]")]
    numbers = (int, float)
    if isinstance(old, numbers) and isinstance(new, numbers) and not isinstance(old, bool):
        if math.isclose(old, new, rel_tol=rtol, abs_tol=atol):
            return []
        return [f"{path}: {old!r} -> {new!r}"]
    return [] if old == new else [f"{path}: {old!r} -> {new!r}"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("old", type=Path)
    p.add_argument("new", type=Path)
    p.add_argument("--rtol", type=float, default=1e-9)
    p.add_argument("--atol", type=float, default=1e-12)
    a = p.parse_args(argv)
    pairs = ([(f, a.new / f.name) for f in sorted(a.old.glob("*.json"))] if a.old.is_dir()
             else [(a.old, a.new)])
    bad = 0
    for old, new in pairs:
        if not new.exists():
            print(f"{old.name}: only in old (not compared)")
            continue
        diffs = differences(json.loads(old.read_text()), json.loads(new.read_text()), a.rtol, a.atol)
        print(f"{old.name}: {'same' if not diffs else f'{len(diffs)} differences'}")
        for d in diffs[:40]:
            print("  " + d)
        bad += bool(diffs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
