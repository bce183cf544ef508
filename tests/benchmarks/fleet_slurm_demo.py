"""The issue's fleet demonstration, run by hand: a virtual fleet of 64 GPUs through the local Slurm cluster.

    python tests/benchmarks/fleet_slurm_demo.py [--root DIR] [--long 32] [--short 32]

Starts the single-node cluster (tests/slurm/start-cluster.sh), submits two job arrays with
``calib fleet submit``: tasks 0..L-1 run the standard campaign on sim:gtx280@0..L-1 (the long
campaign) and tasks L..L+S-1 the quick campaign on the next serials (the short one); waits for Slurm,
then ``calib fleet collect`` and ``calib fleet report --score``: planted outliers found, false outliers,
per-GPU parameter errors against the truth with and without partial pooling for the short campaigns
(DIR/report/pooling_errors.csv).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def calib(*args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "calib", *args], capture_output=True, text=True, check=False)
    if out.returncode:
        sys.exit(f"calib {' '.join(args)} failed ({out.returncode}):\n{out.stderr}")
    return out.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default="/tmp/calib-fleet-demo")
    ap.add_argument("--long", type=int, default=32)
    ap.add_argument("--short", type=int, default=32)
    ap.add_argument("--preset", default="gtx280")
    a = ap.parse_args()
    root = Path(a.root)
    start = subprocess.run(["bash", str(ROOT / "tests/slurm/start-cluster.sh")], capture_output=True, text=True, check=True)
    os.environ["SLURM_CONF"] = start.stdout.strip().splitlines()[-1].removeprefix("export SLURM_CONF=")
    t0 = time.time()
    jobs = []
    for first, count, campaign in ((0, a.long, "standard"), (a.long, a.short, "quick")):
        if count:
            out = calib("fleet", "submit", str(root / "dir"), "--count", str(count), "--sim", a.preset,
                        "--first-serial", str(first), "--first-task", str(first), "--campaign", campaign,
                        "--name", "demo")
            jobs.append(out.split()[3].rstrip(":"))
            print(out.splitlines()[0], flush=True)
    while True:
        q = subprocess.run(["squeue", "-h", "-j", ",".join(jobs)], capture_output=True, text=True).stdout.strip()
        if not q:
            break
        time.sleep(5)
    print(f"Slurm finished {a.long + a.short} tasks in {time.time() - t0:.0f} s", flush=True)
    print(calib("fleet", "collect", str(root / "dir"), "-o", str(root / "dataset")))
    print(calib("fleet", "report", str(root / "dataset"), "-o", str(root / "report"), "--score"))
    summary = json.loads((root / "report" / "analysis.json").read_text())
    print(json.dumps(summary["score"], indent=1))


if __name__ == "__main__":
    main()
