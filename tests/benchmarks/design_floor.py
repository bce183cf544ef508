"""Issue 29, the adaptive design: what part of each MaxPower's total standard error more kernels can shrink.

For a session and its parameter file, refits the IPP power section (:func:`calib.fit.pipeline.refit_power`,
what ``calib run --design adaptive`` does after a round) and splits every target's total variance into the
terms of :func:`calib.fit.uncertainty.total_covariance` as the fitter passes them: the statistical covariance,
the jackknife's excess over it, the extrapolation (model-form) term, the workload discrepancy, the
structure average and the split profile of units the campaign does not separate. Prints each as a
relative standard error (% of the value), and the "floor": the total without the statistical part.

    .venv/bin/python tests/benchmarks/design_floor.py SESSION_DIR PARAMETER_FILE
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

TERMS = ("stat", "jack+", "extrap", "discrep", "struct", "split")


def main(argv: list[str] | None = None) -> int:
    import calib.fit.ipp as ipp_mod
    from calib.core.params import load
    from calib.fit.pipeline import refit_power
    from calib.fit.uncertainty import total_covariance

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("session")
    ap.add_argument("params")
    a = ap.parse_args(argv)
    seen = []

    def spy(stat, jack, form_var=None):  # noqa: ANN001, ANN202
        out = total_covariance(stat, jack, form_var)
        if form_var is not None and len(form_var) == 4:
            seen.append((stat, jack, form_var, out))
        return out

    ipp_mod.total_covariance = spy
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = refit_power(load(a.params), a.session)
    stat, jack, (form, disc, alt, split), tot = seen[-1]
    names = list(stat.names)
    s = np.diag(np.array(stat.matrix, float))
    j = np.diag(total_covariance(stat, jack)) - s
    sec = out.params["power"]
    print(f"{'parameter':24s} {'value':>9s} " + " ".join(f"{t:>8s}" for t in TERMS) + f" {'total':>8s} {'floor':>8s}  (% of the value)")
    for i, n in enumerate(names):
        if not (n.startswith("max_power_") or n in ("const_sm_power_w", "activation_power_w")):
            continue
        v = abs(sec.value(n))
        parts = [s[i], j[i], form[i, i], disc[i, i], alt[i, i], split[i, i]]
        rel = lambda x: 100 * np.sqrt(max(x, 0.0)) / v if v else np.inf  # noqa: E731
        print(f"{n:24s} {sec.value(n):9.4g} " + " ".join(f"{rel(x):8.1f}" for x in parts)
              + f" {rel(tot[i, i]):8.1f} {rel(tot[i, i] - s[i]):8.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
