"""Bounded least squares: estimates, standard errors, identifiability warnings."""

from __future__ import annotations

import numpy as np
import pytest

from calib.core.errors import FitError
from calib.fit.core import fit_lsq
from calib.core.params import Param


def test_linear_fit_matches_ols_with_standard_errors():
    rng = np.random.default_rng(1)
    x = np.linspace(0, 10, 200)
    y = 3.0 + 0.5 * x + rng.normal(0, 0.2, x.size)
    res = fit_lsq(lambda v: v["a"] + v["b"] * x, [Param("a", 0.0, "W"), Param("b", 0.0, "W")], y)
    A = np.column_stack([np.ones_like(x), x])
    coef, rss, *_ = np.linalg.lstsq(A, y, rcond=None)
    cov = np.linalg.inv(A.T @ A) * rss[0] / (len(x) - 2)
    p = res.by_name()
    assert p["a"].value == pytest.approx(coef[0], rel=1e-6)
    assert p["b"].value == pytest.approx(coef[1], rel=1e-6)
    assert p["a"].stderr == pytest.approx(np.sqrt(cov[0, 0]), rel=1e-4)
    assert p["b"].stderr == pytest.approx(np.sqrt(cov[1, 1]), rel=1e-4)
    assert res.r2 > 0.97 and res.warnings == []


def test_analytic_jacobian_gives_same_answer():
    x = np.linspace(0.1, 5, 50)
    y = 2.0 * np.exp(-x / 1.5)
    model = lambda v: v["a"] * np.exp(-x / v["t"])  # noqa: E731
    jac = lambda v: {"a": np.exp(-x / v["t"]), "t": v["a"] * np.exp(-x / v["t"]) * x / v["t"] ** 2}  # noqa: E731
    r1 = fit_lsq(model, [Param("a", 1.0, "C"), Param("t", 1.0, "s", 0.01, 100)], y)
    r2 = fit_lsq(model, [Param("a", 1.0, "C"), Param("t", 1.0, "s", 0.01, 100)], y, jac=jac)
    assert r1.by_name()["t"].value == pytest.approx(1.5, rel=1e-6)
    assert r2.by_name()["t"].value == pytest.approx(1.5, rel=1e-8)


def test_rank_deficiency_is_named():
    x = np.linspace(0, 1, 30)
    y = 1.0 + 2.0 * x
    # c and d enter only as their sum: the data cannot separate them
    res = fit_lsq(lambda v: v["c"] + v["d"] + v["e"] * x,
                  [Param("c", 0.1, "W"), Param("d", 0.2, "W"), Param("e", 0.0, "W")], y)
    assert any("cannot separate" in w and "c" in w and "d" in w for w in res.warnings)
    assert res.by_name()["c"].value + res.by_name()["d"].value == pytest.approx(1.0, abs=1e-6)


def test_parameter_the_data_do_not_touch():
    x = np.linspace(0, 1, 30)
    res = fit_lsq(lambda v: v["a"] * x + 0 * v["ghost"], [Param("a", 0.0, "W"), Param("ghost", 1.0, "W")], 2 * x)
    assert "ghost: the data do not depend on this parameter (not identifiable)" in res.warnings
    assert res.by_name()["ghost"].stderr is None


def test_bound_active_is_reported():
    x = np.linspace(0, 1, 20)
    res = fit_lsq(lambda v: v["a"] * x, [Param("a", 1.0, "W", 0.0, 10.0)], -x)
    assert res.by_name()["a"].value == pytest.approx(0.0, abs=1e-9)
    assert any(w.startswith("a: at a bound") and "local curvature only" in w for w in res.warnings)
    assert res.by_name()["a"].stderr is not None


def test_too_few_samples():
    with pytest.raises(FitError, match="2 samples cannot determine 3 parameters"):
        fit_lsq(lambda v: np.zeros(2), [Param(n, 0.0, "W") for n in "abc"], np.zeros(2))


def test_vectorized_jacobian_is_scipys_in_one_call_per_jacobian():
    # a model that broadcasts over (P, 1) parameter columns: the fit must equal scipy's own 2-point
    # fit to the last bit (same steps, same bound handling: 'b' starts at its upper bound, 'c' is
    # negative), and each Jacobian must be one model call
    x = np.linspace(0.1, 5, 40)
    y = 2.0 * np.exp(-x / 1.5) - 0.3 * x
    calls = {"batched": 0, "plain": 0}

    def model(v):
        calls["batched" if np.ndim(v["a"]) == 2 else "plain"] += 1
        return v["a"] * np.exp(-x / v["b"]) + v["c"] * x

    ps = [Param("a", 1.0, "C"), Param("b", 3.0, "s", 0.01, 3.0), Param("c", -1.0, "C/s", -5.0, 5.0)]
    r1 = fit_lsq(model, ps, y)
    n_plain = calls["plain"]
    calls["plain"] = 0
    r2 = fit_lsq(model, ps, y, vectorized=True)
    for p1, p2 in zip(r1.params, r2.params):
        assert p1.value == p2.value and p1.stderr == p2.stderr, p1.name
    assert r2.by_name()["b"].value == pytest.approx(1.5, rel=1e-6)
    assert r1.nfev == r2.nfev
    # scipy's differences: 3 model calls per Jacobian on top of the residuals; batched: one
    assert calls["plain"] == r2.nfev + 2 and calls["batched"] > 0     # + the start check and the final yhat
    assert n_plain == calls["plain"] + 3 * calls["batched"]
    assert r2.solver_kwargs["jacobian"] == "2-point, one vectorized call"
    assert r1.solver_kwargs["jacobian"] == "2-point"
