"""Which part of the virtual Titan X's physics makes the fit's fp/int/alu MaxPower 5-9 % low? (issue 29)

Runs the standard campaign (``calib run``) on a variant of sim:titanx registered in this process: ``purelog``
makes every saturating unit's power curve the pure log (the physics' per-access share, 8 %, removed),
``nooverlap`` removes the pipes' shared activation (overlap 0.15 -> 0), ``both`` does both. The recovery
report (OUT/fitted/titanx_<kind>.recovery.json) has each parameter's error against the variant's truth.

    python tests/benchmarks/identify_variant.py purelog [--out /tmp/var8]
"""

from __future__ import annotations

import argparse
from dataclasses import replace


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kind", choices=["purelog", "nooverlap", "both"])
    ap.add_argument("--out", default="/tmp/var8")
    a = ap.parse_args(argv)
    from calib.cli import main as calib_main
    from microbench.devices.sim.presets import TITANX, register_preset

    units = dict(TITANX.power.units)
    if a.kind in ("purelog", "both"):
        units = {n: (replace(u, w=1.0) if u.w else u) for n, u in units.items()}
    power = replace(TITANX.power, units=units)
    if a.kind in ("nooverlap", "both"):
        power = replace(power, overlap=0.0)
    p = register_preset(replace(TITANX, name=f"titanx_{a.kind}", power=power))
    return calib_main(["run", "--quiet", "--device", f"sim:{p.name}", "--campaign", "standard", "--name", p.name,
                       "--logs-dir", f"{a.out}/logs", "--fitted-dir", f"{a.out}/fitted"])


if __name__ == "__main__":
    raise SystemExit(main())
