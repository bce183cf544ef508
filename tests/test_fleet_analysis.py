"""Fleet analysis on synthetic fleets with known truth: spread, partial pooling, shrinkage, outliers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calib.fleet.analysis import analyze_frame


def _fleet(n_long=150, n_short=150, tau=1.0, s_long=0.2, s_short=2.0, mu=10.0, seed=1, outliers=None,
           unit="W", name="idle_power_w"):
    """One parameter over a synthetic fleet: theta_i ~ N(mu, tau^2), estimate ~ N(theta_i, s_i^2)."""
    rng = np.random.default_rng(seed)
    n = n_long + n_short
    theta = rng.normal(mu, tau, n)
    s = np.r_[np.full(n_long, s_long), np.full(n_short, s_short)]
    for i, shift in (outliers or {}).items():
        theta[i] += shift
    y = theta + rng.normal(0.0, s)
    df = pd.DataFrame({"gpu_uuid": [f"GPU-{i}" for i in range(n)], "gpu_name": "X", "serial": np.arange(n),
                       "node": [f"n{i // 4}" for i in range(n)], "gpu_slot": [str(i % 4) for i in range(n)],
                       "session": [f"s{i}" for i in range(n)], "section": "power", "name": name, "form": "ipp",
                       "value": y, "stderr": s, "unit": unit, "vary": True,
                       "campaign_name": ["standard"] * n_long + ["quick"] * n_short, "chip": "x"})
    return df, theta


def test_typical_value_spread_and_tau_are_recovered():
    df, theta = _fleet()
    an = analyze_frame(df)
    p = an.params.iloc[0]
    assert p["median"] == pytest.approx(10.0, abs=0.2)
    assert p["tau"] == pytest.approx(1.0, rel=0.15)          # REML on a mixed-precision fleet
    assert p["n_outliers"] == 0


def test_short_campaigns_borrow_strength_shrinkage_and_stderr_are_honest():
    df, theta = _fleet()
    an = analyze_frame(df)
    g = an.gpus.set_index("gpu_uuid").loc[df["gpu_uuid"]]
    short = (df["campaign_name"] == "quick").to_numpy()
    b = g["shrinkage"].to_numpy()
    tau2 = an.params.iloc[0]["tau"] ** 2
    assert b[short] == pytest.approx(4.0 / (4.0 + tau2))         # B = s^2 / (s^2 + tau^2)
    assert b[~short] == pytest.approx(0.04 / (0.04 + tau2))
    raw = np.sqrt(np.mean((g["value"].to_numpy()[short] - theta[short]) ** 2))
    pooled = np.sqrt(np.mean((g["pooled_value"].to_numpy()[short] - theta[short]) ** 2))
    assert raw == pytest.approx(2.0, rel=0.15)
    assert pooled == pytest.approx(np.sqrt(1 / (1 / 4.0 + 1 / tau2)), rel=0.15)  # ~0.89 vs 2: pooling helps
    # the stated uncertainties mean what they say: ~95 % of the +-1.96 se intervals hold the truth
    cover = np.abs(g["pooled_value"].to_numpy() - theta) <= 1.96 * g["pooled_stderr"].to_numpy()
    assert 0.91 <= cover[short].mean() <= 0.99 and 0.91 <= cover[~short].mean() <= 0.99
    # long campaigns keep their own estimates (shrinkage ~4 %)
    assert np.max(np.abs(g["pooled_value"].to_numpy()[~short] - g["value"].to_numpy()[~short])) < 0.35


def test_no_spread_beyond_noise_means_full_pooling():
    df, theta = _fleet(tau=0.0, n_long=0, n_short=200, s_short=1.0)
    an = analyze_frame(df)
    assert an.params.iloc[0]["tau"] < 0.15
    assert an.gpus["shrinkage"].min() > 0.97


def test_planted_outliers_are_found_and_not_pooled():
    df, theta = _fleet(outliers={3: 12.0, 160: -25.0, 200: 40.0})
    an = analyze_frame(df, threshold=6.0)
    o = an.outlier_gpus()
    assert set(o["gpu_uuid"]) == {"GPU-3", "GPU-160", "GPU-200"}
    g = an.gpus.set_index("gpu_uuid")
    assert g.loc["GPU-200", "pooled_value"] == g.loc["GPU-200", "value"]   # the fleet prior does not describe it
    assert np.isnan(g.loc["GPU-200", "shrinkage"])
    row = o.set_index("gpu_uuid").loc["GPU-200"]
    assert row["parameters"].startswith("power.idle_power_w (z=+") and row["max_abs_z"] > 6


def test_a_campaign_bias_is_not_an_outlier():
    df, _ = _fleet(n_long=40, n_short=40, s_long=0.2, s_short=0.2, tau=0.2)
    df.loc[df["campaign_name"] == "quick", "value"] += 3.0   # every quick-campaign GPU reads 3 higher
    assert analyze_frame(df).outlier_gpus().empty
    df.loc[5, "value"] += 5.0                                  # one long-campaign GPU truly off
    assert list(analyze_frame(df).outlier_gpus()["gpu_uuid"]) == ["GPU-5"]


def test_dimensionless_shapes_and_small_groups_call_no_outlier():
    df, _ = _fleet(outliers={3: 40.0}, unit="1", name="ar_log_a_fp")
    assert analyze_frame(df).outlier_gpus().empty
    small, _ = _fleet(n_long=0, n_short=8, outliers={3: 40.0})
    assert analyze_frame(small).outlier_gpus().empty


def test_model_forms_are_compared_separately():
    a, _ = _fleet(n_long=100, n_short=0, seed=2)
    b, _ = _fleet(n_long=30, n_short=0, mu=30.0, seed=3)
    b["gpu_uuid"] = "B" + b["gpu_uuid"]
    b["form"] = "ipp/ar=log"
    a["form"] = "ipp/ar=linear"
    an = analyze_frame(pd.concat([a, b], ignore_index=True))
    assert set(an.params["key"]) == {"power.idle_power_w[ipp/ar=linear]", "power.idle_power_w[ipp/ar=log]"}
    assert an.outlier_gpus().empty   # 30 vs 10 is a different form, not 30 outliers
