"""Time ``calib run`` per virtual preset, with this code and with an older checkout (issue 29, "Cost: `calib
run` wall time per preset before and after (the design rounds included)").

    python tests/benchmarks/bench_run_presets.py --presets gtx280,gtx580,titanx,gtx580_nonadd,titanx_nonadd \\
        [--before /tmp/basecode] [--design-budget 1800] [--out tests/benchmarks/run_cost_results.md]

Each run is a separate process in a scratch directory: ``calib run -q --device sim:P`` (the standard
campaign and its fit) with this virtual environment's code and, with ``--before DIR``, with the code of DIR
(an older ``git worktree``/``git archive`` of this repository, put first on ``PYTHONPATH`` so its ``calib``
package is the one imported; the dependencies are this environment's); and with ``--design-budget S``,
``calib run --design adaptive --budget S`` (this code only: the design rounds are new). Reported per run:
the wall time, which on a shared machine includes waiting for a CPU (the load average at its start is
printed beside it), and the CPU time of the process and its children (user + system), which the load
barely changes; on a virtual GPU nothing waits for a device, so on an idle machine the wall time is the
CPU time.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).parent))

from bench_readme import timed  # noqa: E402


def timed_calib(args: list[str], cwd: Path, code: Path | None = None) -> tuple[float, float]:
    """(wall s, CPU s) of ``python -m calib ARGS`` in ``cwd``, with the package from ``code`` when given."""
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = str(code)
    return timed(args, cwd, (sys.executable, "-m", "calib"), env)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--presets", default="gtx280,gtx580,titanx,gtx580_nonadd,titanx_nonadd")
    ap.add_argument("--before", type=Path, help="an older checkout of this repository (its calib/ is imported)")
    ap.add_argument("--design-budget", type=float, help="also time --design adaptive with this budget (s)")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-run-") as tmp:
        d = Path(tmp)
        for p in a.presets.split(","):
            cases = [("after", ["run", "-q", "--device", f"sim:{p}", "--name", f"{p}-after"], None)]
            if a.before is not None:
                cases.insert(0, ("before", ["run", "-q", "--device", f"sim:{p}", "--name", f"{p}-before"], a.before))
            if a.design_budget:
                cases.append((f"after, --design adaptive --budget {a.design_budget:g}",
                              ["run", "-q", "--device", f"sim:{p}", "--name", f"{p}-design", "--design", "adaptive",
                               "--budget", f"{a.design_budget:g}"], None))
            for label, args, code in cases:
                load = os.getloadavg()[0]
                wall, cpu = timed_calib(args, d, code)
                rows.append((p, label, wall, cpu, load))
                print(f"{p:14s} {label:44s} wall {wall:7.1f} s  CPU {cpu:6.1f} s  (load {load:.1f})", flush=True)
    if a.out:
        lines = ["# `calib run` per preset, before and after (tests/benchmarks/bench_run_presets.py)", "",
                 f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores shared with other "
                 "jobs (load average at each start in the last column). CPU = user + system of the process and its "
                 "children; wall includes waiting for a CPU." + (f" Before: {a.before}." if a.before else ""), "",
                 "| preset | code | wall s | CPU s | load |", "|---|---|---|---|---|"]
        lines += [f"| {p} | {label} | {wall:.1f} | {cpu:.1f} | {load:.1f} |" for p, label, wall, cpu, load in rows]
        a.out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
