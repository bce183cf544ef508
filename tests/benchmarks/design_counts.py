"""Does every adaptive-design candidate compile to the counts its model says? (found in session 6)

Compiles each distinct mix of :func:`calib.fit.design.candidates` (every design class alone and every
pair at 1:1, 3:1 and 1:3) and every ``mix`` kernel of the standard campaign (training, held-out, the
timing plan's issue_mix, on titanx, which has every class) for each architecture, and compares the
PTX loop's instruction counts with the ``mix`` kernel's count model (:mod:`microbench.kernels.catalog`),
as tests/test_verify.py does:

    python tests/benchmarks/design_counts.py [--arch sm_70,sm_80,sm_90] [--cache /tmp/ptx-cache] [--json bad.json]
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
    from microbench.benchmarks import design_benchmark, plan
    from microbench.devices.sim.presets import get_preset
    from microbench.kernels import catalog
    from microbench.toolchain import KernelCompiler, Toolchains
    from microbench.verify import arch_info, check_compiled

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default="/tmp/ptx-cache")
    ap.add_argument("--arch", default="sm_80", help="comma-separated, e.g. sm_70,sm_80,sm_90")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    comp = KernelCompiler(Toolchains(), Path(a.cache))
    spec = catalog.get("mix")
    groups: dict[str, dict[str, dict]] = {"design": {}, "campaign": {}}
    for c in candidates(DESIGN_CLASSES, max_warps=64):
        groups["design"].setdefault(c.name.split("/")[0], design_benchmark(c.entry()).params)
    for b in plan(get_preset("titanx").device_info(), "standard")[1]:
        if b.kernel == "mix":
            groups["campaign"].setdefault(b.name.split("@")[0].split("/")[0], dict(b.params))
    bad = []
    for arch in a.arch.split(","):
        for group, mixes in groups.items():
            n_bad = 0
            for name, params in mixes.items():
                p = spec.params(**params)
                r = check_compiled(spec, p, comp.compile(spec.source, spec.compile_macros(p), arch), arch_info(arch))
                if not (r.ok and r.loops_match):
                    n_bad += 1
                    ptx, model = (r.loops_ptx or [{}])[0], (r.loops_model or [{}])[0]
                    diff = {k: [ptx.get(k, 0), model.get(k, 0)] for k in sorted(set(ptx) | set(model))
                            if ptx.get(k, 0) != model.get(k, 0)}
                    bad.append({"arch": arch, "mix": name, "params": params, "ptx_vs_model_per_trip": diff,
                                "problems": r.problems})
                    print(f"{arch} {name}: per trip (PTX, model) {diff}")
            print(f"{arch}: {n_bad} of {len(mixes)} distinct {group} mixes differ from their count model")
    if a.json:
        Path(a.json).write_text(json.dumps(bad, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
