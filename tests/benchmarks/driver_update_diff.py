"""A "driver update" that raises idle power by 5 W, seen by `calib diff`.

Two quick campaigns on a virtual GTX 280: the stock preset (seed 0), and the same preset with the hidden
constant board power ``p_const_w`` raised by 5 W and the reported driver version changed (seed 1, so the
sensor noise differs as it would between two real runs). Both are fitted, then compared with
``calib diff``. Expected: the device identity change (driver) is listed first, ``power.idle_power_w`` is
flagged (about +5 W plus the extra leakage of a slightly warmer idle die), and nothing else is.

    .venv/bin/python tests/benchmarks/driver_update_diff.py [WORKDIR]

The preset is modified in memory (dataclasses.replace); microbench/devices/sim/presets.py is untouched.
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

IDLE_STEP_W = 5.0
NEW_DRIVER = "virtual-2 (idle power +5 W)"


def updated_preset(base: str = "gtx280", idle_step_w: float = IDLE_STEP_W):
    """The preset ``base`` with its hidden constant power raised by ``idle_step_w`` (W)."""
    from microbench.devices.sim.presets import get_preset

    p = get_preset(base)
    return dataclasses.replace(p, power=dataclasses.replace(p.power, p_const_w=p.power.p_const_w + idle_step_w))


def run_campaign(preset, seed: int, session_dir: Path, out_json: Path, campaign: str = "quick",
                 driver_version: str | None = None) -> Path:
    """Run a campaign on a virtual GPU built from ``preset``, fit it, write the parameter file (and the
    samples table beside it, as `calib run` does)."""
    from calib.fit.pipeline import fit_session
    from calib.core.samples import write_samples
    from microbench.campaign import Campaign
    from microbench.devices.sim.device import VirtualGPU

    dev = VirtualGPU(preset, seed)
    if driver_version is not None:
        dev.info = dataclasses.replace(dev.info, driver_version=driver_version)
    try:
        Campaign(dev, campaign, seed).run(session_dir)
    finally:
        dev.close()
    out = fit_session(session_dir)
    out.params.save(out_json)
    write_samples(out.samples, out_json.with_name(out_json.stem + ".samples.csv"))
    return out_json


def main(argv: list[str]) -> int:
    import warnings

    from calib.cli import main as calib_main
    from microbench.devices.sim.presets import get_preset

    work = Path(argv[0]) if argv else Path(tempfile.mkdtemp(prefix="driver-update-"))
    work.mkdir(parents=True, exist_ok=True)
    warnings.simplefilter("ignore")
    old = run_campaign(get_preset("gtx280"), 0, work / "logs" / "before", work / "before.json")
    new = run_campaign(updated_preset(), 1, work / "logs" / "after", work / "after.json", driver_version=NEW_DRIVER)
    print(f"$ calib diff {old} {new} --predict {old.with_name('before.samples.csv')}")
    return calib_main(["diff", str(old), str(new), "--predict", str(old.with_name("before.samples.csv"))])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
