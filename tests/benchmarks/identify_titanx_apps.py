"""Real data (issue 29): the IPP power model with and without the shared-activation term, fitted on the
GTX Titan X microbenchmarks of Guerreiro et al. (TPDS 2019, /work/shared/data/guerreiro-gtxtitanx, see its
README for the citation) at the default clocks, scored on the 10 development applications at the same
clocks (never fitted). The counters are the paper's 8 utilisations (SP, INT, DP, SFU, CF, L2, Shared, DRAM),
read as access rates; L2 and DRAM are chip-level.

    .venv/bin/python tests/benchmarks/identify_titanx_apps.py [--data DIR]

Prints, per setting of ``shared_activation`` (off, on, auto = BIC), the structure chosen, BIC, training
MAPE, the development applications' MAPE (all rows at the default clocks) and the fit's CPU time.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
DATA = Path("/work/shared/data/guerreiro-gtxtitanx")


def main(argv: list[str] | None = None) -> int:
    from calib.fit.ipp import IppPowerFitter
    from calib.importers.gpmtool import read
    from calib.model.ipp import IppPowerModel

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DATA))
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    tx = read(Path(a.data) / "tpds2019_micro_named_gtxtitanx.csv")
    dev = read(Path(a.data) / "tpds2019_real_dev_gtxtitanx.csv")
    core, mem = float(tx["ref_core_mhz"].iloc[0]), float(tx["ref_mem_mhz"].iloc[0])
    at = lambda d: d[np.isclose(d["core_mhz"], core) & np.isclose(d["mem_mhz"], mem)].reset_index(drop=True)  # noqa: E731
    train, test = at(tx), at(dev)
    train = train.assign(role=np.where(train["workload"].astype(str).str.lower() == "idle", "idle", "unit"))
    test = test.assign(role="app")
    print(f"default clocks {core:g}/{mem:g} MHz: {len(train)} microbenchmark rows, {len(test)} application rows "
          f"({test['workload'].nunique()} applications)")
    for sh in ("off", "on", "auto"):
        t0 = time.process_time()
        f = IppPowerFitter(sm_count=24, chip_units=["L2", "DRAM"], mem_units=["DRAM"], shared_activation=sh,
                           default_clocks={"core_mhz": core, "mem_mhz": mem}).fit(train)
        dt = time.process_time() - t0
        m = IppPowerModel(f.section_)
        tr = 100 * np.mean(np.abs(m.predict(train) / train["power_w"] - 1))
        e = 100 * np.abs(m.predict(test) / test["power_w"] - 1)
        gamma = f.section_.value("shared_activation_frac") if "shared_activation_frac" in f.section_ else None
        print(f"shared_activation={sh}: term {'on' if f.shared_ else 'off'}"
              + (f" (share {gamma:.3f} +/- {f.section_['shared_activation_frac'].stderr_total or 0:.3f})" if gamma is not None else "")
              + f", BIC {f.result_.bic:.1f}, linear units {sorted(u for u, v in f.forms_.items() if v == 'linear')}; "
              f"training MAPE {tr:.2f} %, development applications MAPE {np.mean(e):.2f} % (max {np.max(e):.1f} %); "
              f"fit {dt:.1f} s CPU", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
