"""calib diff's false-alarm rate: calibrations of one virtual GPU that differ only in the sensor-noise seed
must not be called different more often than the test's family-wise level says (issue 17, finding 3).

Twenty quick campaigns of sim:gtx280 (seeds 0-19), each fitted as `calib run` does; the twenty pairs
(k, k+1 mod 20) are compared as `calib diff` does (Holm, family-wise alpha 0.05): at most the nominal
share, one pair of twenty, may exit 3. That a real change is still seen (a hidden +5 W of constant
power) is tests/test_diff.py::test_driver_update_raising_idle_power_is_flagged; the standard campaign's
figures for every preset are in tests/benchmarks/uncertainty_results.md (diff_false_alarms.py).
"""

from __future__ import annotations

import warnings

import pytest

from calib.core import params as P
from calib.report.compare import compare

N_SEEDS = 20
ALPHA = 0.05


@pytest.fixture(scope="module")
def seed_fits(tmp_path_factory):
    from calib.cli import main

    d = tmp_path_factory.mktemp("seeds")
    out = []
    for k in range(N_SEEDS):
        code = main(["run", "--quiet", "--campaign", "quick", "--device", "sim:gtx280", "--seed", str(k),
                     "--name", f"s{k}", "--logs-dir", str(d / "logs"), "--fitted-dir", str(d / "fitted")])
        assert code == 0
        out.append(P.load(d / "fitted" / f"s{k}.json"))
    return out


@pytest.mark.xfail(strict=True, reason="measured 2026-11-23: 11 of 20 quick-campaign seed pairs flagged, by the "
                   "transfer section (copy latency/bandwidth) and timing.departure_del_uncoal_cycles, whose statistical "
                   "standard errors are smaller than their seed-to-seed spread; open in issue 17 (finding 3)")
def test_seed_pairs_are_flagged_at_most_at_the_nominal_rate(seed_fits):
    flagged, why = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        comps = [compare(seed_fits[k], seed_fits[(k + 1) % N_SEEDS], alpha=ALPHA) for k in range(N_SEEDS)]
    for k, c in enumerate(comps):
        if c.moved:
            flagged.append(k)
            why += [f"s{k}: {x.key} z={x.z}" for x in c.significant]
    assert len(flagged) <= round(ALPHA * N_SEEDS), why
    # the test still tests: most of each file is compared, parameter by parameter or as a determined
    # combination, not waved through as untested
    for c in comps:
        tested = [x for x in c.params if x.p is not None]
        assert len(tested) >= 15, [(x.key, x.verdict) for x in c.params]
        assert any(x.key == "power.idle_power_w" and x.p is not None for x in c.params) or \
            any("idle_power_w" in x.name and x.p is not None for x in c.params)
