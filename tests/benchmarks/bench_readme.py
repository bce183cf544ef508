"""Time the README's commands as a user runs them (issue 27, newcomer finding 5), and write the figures the
README quotes to ``tests/benchmarks/readme_timings.md``.

    nice -n 10 .venv/bin/python tests/benchmarks/bench_readme.py [--repeat 1] [--out tests/benchmarks/readme_timings.md]

Each command is a separate process (``calib`` from this virtual environment, in a scratch directory), so
its start-up (imports) is counted as the user sees it. Reported per command: the wall time (which on a
shared machine includes waiting for a CPU: the load average is printed beside it) and the CPU time of the
process and its children (user + system, ``resource.getrusage(RUSAGE_CHILDREN)``), which the load barely
changes. The README quotes the CPU time; ``tests/test_newcomer.py`` checks that it quotes these figures.

Commands (the README's Quick start, DVFS and timing sections):

- ``calib run`` (standard campaign on sim:gtx280, then the fit) and ``calib run --campaign quick``;
- ``calib fit micro.csv`` and ``calib fit micro.csv --cv 5`` on the imported GTX Titan X table
  (``../shared/data/guerreiro-gtxtitanx``; J. Guerreiro et al., IEEE TPDS 2019);
- ``calib fit kernels.csv --timing`` on ``tests/data/timing_ncu_train.csv`` imported with ``--kernels``.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CALIB = Path(sys.executable).with_name("calib")
DATA = ROOT.parent / "shared" / "data" / "guerreiro-gtxtitanx"


def timed(args: list[str], cwd: Path, command: tuple[str, ...] = (str(CALIB),),
          env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall s, CPU s) of ``calib ARGS`` (``command`` + ARGS, in ``env``) run to completion in ``cwd``;
    raises if it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    r = subprocess.run([*command, *args], cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise SystemExit(f"calib {' '.join(args)} failed ({r.returncode}): {r.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--out", default=str(ROOT / "tests" / "benchmarks" / "readme_timings.md"))
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-readme-") as tmp:
        d = Path(tmp)
        # inputs, untimed
        for args in (["import", "gpmtool", str(DATA / "tpds2019_micro_named_gtxtitanx.csv"), "-o", "micro.csv"],
                     ["import", "ncu", str(ROOT / "tests" / "data" / "timing_ncu_train.csv"), "--kernels",
                      "-o", "kernels.csv"]):
            timed(args, d)
        cases = [
            ("calib run", ["run", "-q", "--name", "std{i}"]),
            ("calib run --campaign quick", ["run", "-q", "--campaign", "quick", "--name", "quick{i}"]),
            ("calib fit micro.csv", ["fit", "-q", "micro.csv", "-o", "titanx{i}.json"]),
            ("calib fit micro.csv --cv 5", ["fit", "-q", "micro.csv", "--cv", "5", "-o", "titanx_cv{i}.json"]),
            ("calib fit kernels.csv --timing", ["fit", "-q", "kernels.csv", "--timing", "-o", "timing{i}.json"]),
        ]
        rows = []
        for label, args in cases:
            for i in range(a.repeat):
                load = os.getloadavg()[0]
                wall, cpu = timed([x.format(i=i) for x in args], d)
                rows.append((label, wall, cpu, load))
                print(f"{label:34s} wall {wall:6.1f} s  CPU {cpu:6.1f} s  (load {load:.1f})", flush=True)
    lines = ["# The README's commands, timed (tests/benchmarks/bench_readme.py)", "",
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores shared with other "
             "jobs (load average at each start in the last column). CPU = user + system of the process and its "
             "children; wall includes waiting for a CPU.", "",
             "| command | wall s | CPU s | load |", "|---|---|---|---|"]
    lines += [f"| `{label}` | {wall:.1f} | {cpu:.1f} | {load:.1f} |" for label, wall, cpu, load in rows]
    Path(a.out).write_text("\n".join(lines) + "\n")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
