"""Cross-validation by workload: folds never split a workload, errors are computed on held-out rows only."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calib.core.errors import BadInputError
from calib.fit.crossval import cross_validate, make_folds
from calib.core.params import Param, Section


def table() -> pd.DataFrame:
    # workload i has power 100 + 10 i at every one of (i + 1) rows
    rows = [{"workload": f"w{i}", "power_w": 100.0 + 10 * i, "act_x": 0.1 * i} for i in range(6) for _ in range(i + 1)]
    return pd.DataFrame(rows)


def mean_fit(df: pd.DataFrame) -> Section:
    """A trivial model: the mean training power; it records which workloads it saw."""
    return Section("mean", [Param("mean_w", float(df.power_w.mean()), "W", 0.0)],
                   {"seen": sorted(df.workload.unique())})


def mean_predict(section: Section, df: pd.DataFrame) -> np.ndarray:
    assert not set(section.structure["seen"]) & set(df.workload)  # never predicts a workload it was fitted on
    return np.full(len(df), section.value("mean_w"))


def test_folds_partition_workloads_and_balance_rows():
    wl = table()["workload"]
    folds = make_folds(wl, 3, seed=0)
    flat = [w for f in folds for w in f]
    assert sorted(flat) == sorted(wl.unique()) and len(flat) == len(set(flat))
    sizes = [int(wl.isin(f).sum()) for f in folds]
    assert max(sizes) - min(sizes) <= 6  # 21 rows into 3 folds; the largest workload has 6 rows
    assert make_folds(wl, 3, seed=0) == folds and make_folds(wl, 3, seed=1) != folds


def test_errors_are_held_out_errors_computed_by_hand():
    df = table()
    res = cross_validate(df, 3, mean_fit, mean_predict, seed=0)
    expect = []
    for f in make_folds(df.workload, 3, seed=0):
        test = df.workload.isin(f)
        m = df.loc[~test, "power_w"].mean()
        expect.append(np.abs(m - df.loc[test, "power_w"]) / df.loc[test, "power_w"] * 100)
    allerr = pd.concat(expect)
    assert res.mape_pct == pytest.approx(allerr.mean(), rel=1e-12)
    assert res.max_abs_pct == pytest.approx(allerr.max(), rel=1e-12)
    assert [f["n_rows"] for f in res.per_fold] == [int(df.workload.isin(f["workloads"]).sum()) for f in res.per_fold]
    assert list(res.per_workload.index) == [f"w{i}" for i in range(6)]
    assert res.per_workload.loc["w5", "n_rows"] == 6
    assert res.predictions.notna().all()


def test_refuses_impossible_k():
    df = table()
    with pytest.raises(BadInputError, match="cannot make 7 folds by workload from 6 workloads"):
        cross_validate(df, 7, mean_fit, mean_predict)
    with pytest.raises(BadInputError, match="K >= 2"):
        cross_validate(df, 1, mean_fit, mean_predict)
    with pytest.raises(BadInputError, match="needs a 'workload' column"):
        cross_validate(df.drop(columns=["workload"]), 2, mean_fit, mean_predict)


def test_dvfs_cross_validation_on_a_synthetic_table():
    from calib.model.dvfs import predict_power
    from test_dvfs_fit import fit_dvfs, synthetic

    df = synthetic(n_workloads=20, noise=0.005)
    res = cross_validate(df, 4, lambda d: fit_dvfs(d, ar_form="linear", activity_clocks="off"), predict_power)
    assert res.mape_pct < 1.0  # model = truth, 0.5 % noise: held-out error stays at the noise level
    assert set(res.per_workload["fold"]) == {1, 2, 3, 4}
