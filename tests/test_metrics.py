"""Error measures and the prediction discrepancy, by hand (mutations M19 and M17 of
tests/benchmarks/mutate.py survived every existing test)."""

from __future__ import annotations

import math

import pytest

from calib.core.metrics import errors, mape
from calib.model.intervals import prediction_stats


def test_mape_is_the_mean_of_absolute_errors():
    """Predictions 10 % high and 10 % low: MAPE 10 % by hand (without the absolute value it read 0 %, a
    perfect fit), largest error 10 %, bias 0 %."""
    y, yhat = [100.0, 200.0], [110.0, 180.0]
    assert mape(y, yhat) == pytest.approx(10.0, rel=1e-12)
    e = errors(y, yhat)
    assert e.mape_pct == pytest.approx(10.0, rel=1e-12) and e.max_abs_pct == pytest.approx(10.0, rel=1e-12)
    assert e.bias_pct == pytest.approx(0.0, abs=1e-12)


def test_discrepancy_is_the_root_mean_square_of_the_relative_errors():
    """Relative errors +3 %, -4 %, +12 %: RMS sqrt((9 + 16 + 144) / 3) = 7.5056 % by hand (their mean
    magnitude, 6.33 %, understates a discrepancy dominated by one workload)."""
    st = prediction_stats([0.03, -0.04, 0.12], n_groups=3)
    assert st["discrepancy_rel"] == pytest.approx(math.sqrt((0.03 ** 2 + 0.04 ** 2 + 0.12 ** 2) / 3), rel=1e-12)
    assert st["n_rows"] == 3 and prediction_stats([0.1, 0.2], n_groups=2) is None
