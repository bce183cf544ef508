"""Run the standard campaign of virtual GPU presets at many noise seeds and keep the sessions.

The uncertainty study (uncertainty_study.py) and the diff false-alarm count refit these sessions; the
campaigns themselves are the slow part, so they are made once:

    python tests/benchmarks/make_seed_sessions.py --presets gtx280,gtx580,titanx --seeds 0-19 --out /tmp/seeds

Each session goes to OUT/<preset>/s<seed>; a finished session is skipped (an interrupted one resumes).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def seeds_of(text: str) -> list[int]:
    """'0-19' or '0,3,5' -> list of seeds."""
    out: list[int] = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b) + 1)) if b else [int(a)]
    return out


def finished(session: Path) -> bool:
    """Whether a seed session's campaign ran to its end (a partial one is resumed, not scored)."""
    from calib.core.session import read_session

    return (session / "manifest.json").exists() and read_session(session).is_complete()


def main(argv: list[str] | None = None) -> int:
    import warnings

    from microbench.campaign import Campaign
    from microbench.devices import open_device

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", default="gtx280,gtx580,titanx")
    ap.add_argument("--seeds", default="0-19")
    ap.add_argument("--campaign", default="standard")
    ap.add_argument("--out", default="/tmp/seeds")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    for preset in a.presets.split(","):
        for seed in seeds_of(a.seeds):
            d = Path(a.out) / preset / f"s{seed}"
            if finished(d):
                continue
            t0 = time.perf_counter()
            dev = open_device(f"sim:{preset}", seed=seed)
            try:
                Campaign(dev, a.campaign, seed).run(d)
            finally:
                dev.close()
            print(f"{preset} seed {seed}: {time.perf_counter() - t0:.1f} s -> {d}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
