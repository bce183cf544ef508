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


def test_pooled_stderr_counts_the_uncertainty_of_the_fleet_mean():
    """The bug: the pooled standard error without its B^2 var(mu) term. By hand: 20 GPUs measuring one common
    value, each with standard error 1 (no spread beyond the noise: tau = 0, B = 1), pool to the fleet's mean,
    whose standard error is 1 / sqrt(20) -- not 0. And over 400 such fleets, 95 % of the +-1.96 se intervals
    hold the true value (the large fleets of the other tests make var(mu) too small to see)."""
    rng = np.random.default_rng(7)
    df, _ = _fleet(n_long=0, n_short=20, tau=0.0, s_short=1.0)
    df["value"] = 10.0 + 0.2 * rng.standard_normal(20)     # less spread than the noise: REML gives tau = 0
    an = analyze_frame(df)
    assert an.params.iloc[0]["tau"] == 0.0
    assert an.gpus["pooled_value"].to_numpy() == pytest.approx(np.full(20, df["value"].mean()), rel=1e-12)
    assert an.gpus["pooled_stderr"].to_numpy() == pytest.approx(np.full(20, 1.0 / np.sqrt(20.0)), rel=1e-9)
    inside = []
    for seed in range(400):
        df, theta = _fleet(n_long=0, n_short=20, tau=0.0, s_short=1.0, seed=100 + seed)
        g = analyze_frame(df).gpus
        inside.append(abs(g["pooled_value"].iloc[0] - theta[0]) <= 1.96 * g["pooled_stderr"].iloc[0])
    assert 0.92 <= np.mean(inside) <= 0.98, np.mean(inside)


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


def _write_fleet(root, n=40, seed=5):
    """A synthetic fleet written as a real dataset (calib.fleet.dataset's writer, one file per GPU): two
    campaigns, a parameter in two model forms, a dimensionless shape, a fixed parameter, a parameter on two
    GPUs only, the reference section, and two planted outliers."""
    from calib.fleet.dataset import _write_gpu

    rng = np.random.default_rng(seed)
    for i in range(n):
        quick = i % 3 == 0
        s = 2.0 if quick else 0.3
        gpu = {"gpu_uuid": f"GPU-{i:03d}", "gpu_name": "Synthetic X", "serial": i, "node": f"n{i // 8}",
               "gpu_slot": str(i % 8), "session": f"s{i:03d}", "driver_version": "1.0",
               "campaign_name": "quick" if quick else "standard", "param_sha256": f"{i:064x}"}
        idle = rng.normal(50.0, 1.0) + rng.normal(0.0, s) + (30.0 if i == 7 else 0.0)
        fp_form = "ipp/ar=log" if i % 4 == 1 else "ipp/ar=linear"
        rows = [
            {"section": "power", "name": "idle_power_w", "form": "ipp", "value": idle, "stderr": s, "unit": "W", "vary": True},
            {"section": "power", "name": "max_power_fp_w", "form": fp_form,
             "value": rng.normal(20.0 if fp_form.endswith("linear") else 35.0, 1.5), "stderr": rng.uniform(0.1, 1.0),
             "unit": "W", "vary": True},
            {"section": "power", "name": "ar_shape_fp", "form": "ipp", "value": rng.normal(1.0, 0.3), "stderr": 0.05,
             "unit": "1", "vary": True},
            {"section": "thermal", "name": "rho_c", "form": "ipp", "value": rng.normal(5.0, 0.2) - (4.0 if i == 20 else 0.0),
             "stderr": None if i % 5 == 0 else 0.35, "unit": "C", "vary": True},
            {"section": "power", "name": "fixed_w", "form": "ipp", "value": 1.0, "stderr": None, "unit": "W", "vary": False},
            {"section": "reference", "name": "power_w_pred", "form": "predicted", "value": 150.0 + idle, "stderr": None,
             "unit": "W", "vary": False},
        ]
        if i < 2:
            rows.append({"section": "timing", "name": "rare_cycles", "form": "mwp", "value": 3.0, "stderr": 0.1,
                         "unit": "cycles", "vary": True})
        _write_gpu(root, gpu, rows)


def test_streamed_analysis_equals_the_in_memory_one(tmp_path, monkeypatch):
    """calib fleet analyze's streamed analysis (one parameter at a time through a re-sorted copy on disk)
    gives the in-memory analysis' results: every row of gpus.csv byte for byte, the parameter table, the
    outliers, the notes and the per-GPU summary; also when the re-sorting chunk holds only a few GPUs."""
    import calib.fleet.analysis as A
    import pyarrow.dataset as pads

    from calib.fleet.report import GpusTableWriter

    ds = tmp_path / "ds"
    _write_fleet(ds)
    # the in-memory route: the whole dataset read at once (as `pd.read_parquet(FLEET)` would)
    frame = pads.dataset(ds, format="parquet", partitioning="hive").to_table(columns=A.COLUMNS).to_pandas()
    mem = A.analyze_frame(frame)
    assert set(mem.outlier_gpus()["gpu_uuid"]) == {"GPU-007", "GPU-020"}   # the synthetic fleet is a real test
    assert {"power.max_power_fp_w[ipp/ar=linear]", "power.max_power_fp_w[ipp/ar=log]"} <= set(mem.params["key"])
    assert mem.notes == ["synthetic-x: timing.rare_cycles on 2 GPU(s) only; not analysed"]
    for rows in (A.SPILL_ROWS, 13):   # 13 rows: a chunk ends inside a GPU's rows
        monkeypatch.setattr(A, "SPILL_ROWS", rows)
        out = tmp_path / f"gpus-{rows}.csv"
        with GpusTableWriter(out) as sink:
            st = A.analyze(ds, sinks=[sink], tmp_dir=tmp_path)
        assert st.gpus is None
        assert out.read_text() == mem.gpus.to_csv(index=False, lineterminator="\n")
        pd.testing.assert_frame_equal(st.params, mem.params)
        pd.testing.assert_frame_equal(st.outlier_gpus(), mem.outlier_gpus())
        pd.testing.assert_frame_equal(st.per_gpu, mem.per_gpu)
        assert st.notes == mem.notes
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []   # the copy is removed


def test_pooling_takes_each_campaign_s_mean_so_that_its_bias_stays_its_own():
    """A bias of one campaign (every standard-campaign GPU reads 3 high) does not move the quick
    campaign's pooled estimates: each GPU shrinks toward its own campaign's mean (the fleet-wide mean
    would pull each quick GPU up by B x ~3, B ~ 0.8 here); tau is still the between-GPU spread."""
    df, theta = _fleet(n_long=150, n_short=150)
    long_ = (df["campaign_name"] == "standard").to_numpy()
    df.loc[long_, "value"] += 3.0
    an = analyze_frame(df)
    g = an.gpus.set_index("gpu_uuid").loc[df["gpu_uuid"]]
    err = g["pooled_value"].to_numpy() - theta
    assert abs(err[~long_].mean()) < 0.25          # the quick campaign keeps its own (unbiased) level
    assert err[long_].mean() == pytest.approx(3.0, abs=0.1)   # and the standard one its bias
    assert an.params.iloc[0]["tau"] == pytest.approx(1.0, rel=0.15)
    cover = np.abs(err) <= 1.96 * g["pooled_stderr"].to_numpy()
    assert 0.91 <= cover[~long_].mean() <= 0.99
