"""Does every adaptive-design candidate compile to the counts its model says? (found in session 6)

Compiles each distinct mix of :func:`calib.fit.design.candidates` (every design class alone and every
pair at 1:1, 3:1 and 1:3) for sm_80 and compares the PTX loop's instruction counts with the ``mix``
kernel's count model (:mod:`microbench.kernels.catalog`), as tests/test_verify.py does for the
campaign's kernels:

    python tests/benchmarks/design_counts.py [--cache /tmp/ptx-cache] [--json bad.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    from calib.fit.design import DESIGN_CLASSES, candidates
    from microbench.benchmarks import design_benchmark
    from microbench.kernels import catalog
    from microbench.toolchain import KernelCompiler, Toolchains
    from microbench.verify import arch_info, check_compiled

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default="/tmp/ptx-cache")
    ap.add_argument("--arch", default="sm_80")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    comp = KernelCompiler(Toolchains(), Path(a.cache))
    spec = catalog.get("mix")
    seen: set[tuple] = set()
    bad = []
    for c in candidates(DESIGN_CLASSES, max_warps=64):
        key = tuple(sorted(c.mix.items()))
        if key in seen:
            continue
        seen.add(key)
        p = spec.params(**design_benchmark(c.entry()).params)
        r = check_compiled(spec, p, comp.compile(spec.source, spec.compile_macros(p), a.arch), arch_info(a.arch))
        if not (r.ok and r.loops_match):
            ptx, model = r.loops_ptx[0], r.loops_model[0]
            diff = {k: [ptx.get(k, 0), model.get(k, 0)] for k in sorted(set(ptx) | set(model)) if ptx.get(k, 0) != model.get(k, 0)}
            bad.append({"mix": dict(c.mix), "ptx_vs_model_per_trip": diff})
            print(f"{dict(c.mix)}: per trip (PTX, model) {diff}")
    print(f"{len(bad)} of {len(seen)} distinct design mixes differ from their count model ({a.arch})")
    if a.json:
        Path(a.json).write_text(json.dumps(bad, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
