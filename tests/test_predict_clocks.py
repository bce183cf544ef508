"""`calib predict --clocks`: every kernel at every clock pair, with intervals, from a samples table, a
kernel description without clocks, and a DVFS power-only file (newcomer findings 1 and 2 of the
sharp-tests issue)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from conftest import ROOT, SHARED

TITANX = ROOT / "fitted" / "sim-titanx.json"
TITANX_SAMPLES = ROOT / "fitted" / "sim-titanx.samples.csv"
GPM = SHARED / "data" / "guerreiro-gtxtitanx"


@pytest.fixture(scope="module")
def few_rows(tmp_path_factory):
    """Five kernels of the committed titanx samples (held-out application-like mixes at the default
    clocks), as a table to predict from."""
    df = pd.read_csv(TITANX_SAMPLES)
    df = df[(df["role"] == "heldout") & (df["core_mhz"] == 975) & (df["mem_mhz"] == 3505)]
    df = df.groupby("workload").head(1).head(5)
    path = tmp_path_factory.mktemp("clk") / "few.csv"
    df.to_csv(path, index=False)
    return path, df.reset_index(drop=True)


def test_clocks_all_with_intervals_equals_the_rows_predicted_at_each_pair(few_rows, tmp_path, cli):
    """Bug: `--clocks all` (any list of two or more pairs) crashed with an IndexError in
    `discrepancy_sd`: the intervals chose each row's power section on the input rows, not on the grid.
    Independent route: the grid written out by hand (each row at each pair) and predicted without
    --clocks must give the same predictions and intervals, the DVFS section's discrepancy for the
    off-default pairs included."""
    path, df = few_rows
    pf = json.loads(TITANX.read_text())
    sup = pf["device"]["clocks"]["supported"]
    pairs = [(c, m) for c in sup["core_mhz"] for m in sup["mem_mhz"]]
    out = tmp_path / "grid.csv"
    code, _, err = cli("predict", TITANX, path, "--clocks", "all", "-o", out, "-q")
    assert code == 0, err
    got = pd.read_csv(out)
    assert len(got) == len(df) * len(pairs) == 5 * 64
    # by hand: every row at every pair, the measured columns (profiled pair) left out
    by_hand = df.loc[np.repeat(np.arange(len(df)), len(pairs))].reset_index(drop=True)
    by_hand["core_mhz"] = [c for _ in range(len(df)) for c, _m in pairs]
    by_hand["mem_mhz"] = [m for _ in range(len(df)) for _c, m in pairs]
    by_hand = by_hand.drop(columns=[c for c in ("power_w", "energy_j", "time_s", "temp_c") if c in by_hand])
    hp = tmp_path / "by_hand.csv"
    by_hand.to_csv(hp, index=False)
    ref = tmp_path / "ref.csv"
    code, _, err = cli("predict", TITANX, hp, "-o", ref, "-q")
    assert code == 0, err
    ref = pd.read_csv(ref)
    for c in ("power_w_pred", "power_w_lo", "power_w_hi"):
        np.testing.assert_allclose(got[c], ref[c], rtol=1e-9, err_msg=c)
    # the off-default pairs use the DVFS section's discrepancy, the default pair the power section's: each
    # row's discrepancy is its section's recorded |relative error| quantile at the interval level (0.9),
    # as a Gaussian-equivalent sd, times the small-sample factor of its workload count
    from scipy.stats import norm

    from calib.core.params import load
    from calib.model.intervals import DEFAULT_LEVEL, discrepancy_sd, small_sample_factor

    assert DEFAULT_LEVEL == 0.9
    expect = {s: pf["fit"][s]["prediction"]["abs_rel_quantiles"]["0.9"] / norm.ppf(0.95)
              * small_sample_factor(pf["fit"][s]["prediction"]["n_groups"]) for s in ("power", "dvfs")}
    assert abs(expect["dvfs"] / expect["power"] - 1) > 1e-3  # the premise: the two sections' figures differ
    rel = discrepancy_sd(load(TITANX), got, "power_w_pred") / got["power_w_pred"].to_numpy()
    default = ((got["core_mhz"] == pf["device"]["clocks"]["core_mhz"])
               & (got["mem_mhz"] == pf["device"]["clocks"]["mem_mhz"])).to_numpy()
    assert default.sum() == 5
    np.testing.assert_allclose(rel[default], expect["power"], rtol=1e-9)
    np.testing.assert_allclose(rel[~default], expect["dvfs"], rtol=1e-9)
    # what was measured belongs to the profiled pair: kept under profiled_, never beside the new pair
    assert "power_w" not in got and "time_s" not in got
    np.testing.assert_allclose(got["profiled_power_w"].to_numpy()[:: len(pairs)], df["power_w"])


def test_kernel_description_without_clocks_predicts_every_pair(tmp_path, cli):
    """Bug: the README's kernel JSON (clocks optional) was refused by --clocks with "column 'core_mhz'
    missing": the profiled clocks are needed only to anchor a measured time."""
    k = tmp_path / "k.json"
    k.write_text(json.dumps({"name": "k", "per_warp": {"fp": 2000, "global": 100},
                             "launch": {"blocks": 480, "threads_per_block": 256}, "ilp": 2}))
    out = tmp_path / "k.csv"
    code, _, err = cli("predict", TITANX, k, "--clocks", "1088:3505,595:810", "-o", out, "-q")
    assert code == 0, err
    got = pd.read_csv(out)
    assert got[["core_mhz", "mem_mhz"]].values.tolist() == [[1088, 3505], [595, 810]]
    # a lower core and a quarter of the memory clock: slower, and less power
    assert got["time_s_pred"][1] > 1.5 * got["time_s_pred"][0]
    assert got["power_w_pred"][1] < got["power_w_pred"][0]
    # --anchor still needs the profiled clocks and a measured time, and says so
    code, _, err = cli("predict", TITANX, k, "--clocks", "all", "--anchor", "-o", tmp_path / "a.csv")
    assert code == 2 and "column 'core_mhz' missing" in err and "--anchor" in err


@pytest.mark.parametrize("spec, message", [
    ("abc", "--clocks: 'abc' is not CORE:MEM (two clocks in MHz)"),
    ("0:0", "--clocks: '0:0': clocks must be positive MHz"),
    ("1000:3505,", "--clocks: '' is not CORE:MEM"),
])
def test_garbage_clock_lists_are_refused_by_name(tmp_path, cli, spec, message):
    """Bug: garbage `--clocks abc` / `0:0` got the "column 'core_mhz' missing" message instead of one
    naming the malformed pair."""
    k = tmp_path / "k.json"
    k.write_text(json.dumps({"name": "k", "per_warp": {"fp": 10}, "launch": {"blocks": 1, "threads_per_block": 32}}))
    code, _, err = cli("predict", TITANX, k, "--clocks", spec, "-o", tmp_path / "x.csv")
    assert code == 2 and message in err
    assert err.count("ERROR:") == 1 and not (tmp_path / "x.csv").exists()


def test_dvfs_power_only_file_predicts_power_at_any_pair(tmp_path, cli):
    """Bug: a DVFS power-only file (no timing section) refused --clocks ("no timing section") although
    it predicts power at any pair. Independent route: the same rows with their clocks rewritten by hand."""
    micro, apps = tmp_path / "micro.csv", tmp_path / "apps.csv"
    assert cli("import", "gpmtool", GPM / "tpds2019_micro_named_gtxtitanx.csv", "-o", micro, "-q")[0] == 0
    assert cli("import", "gpmtool", GPM / "tpds2019_real_dev_gtxtitanx.csv", "-o", apps, "-q")[0] == 0
    pj = tmp_path / "p.json"
    assert cli("fit", micro, "-o", pj, "-q")[0] == 0
    one = pd.read_csv(apps).groupby("workload").head(1).reset_index(drop=True)
    one.to_csv(tmp_path / "one.csv", index=False)
    out = tmp_path / "o.csv"
    code, _, err = cli("predict", pj, tmp_path / "one.csv", "--clocks", "975:3505,595:810", "-o", out, "-q")
    assert code == 0, err
    got = pd.read_csv(out)
    assert len(got) == 2 * len(one) and "time_s_pred" not in got
    hand = one.loc[np.repeat(np.arange(len(one)), 2)].reset_index(drop=True).drop(columns=["power_w"])
    hand["core_mhz"], hand["mem_mhz"] = [975, 595] * len(one), [3505, 810] * len(one)
    hand.to_csv(tmp_path / "hand.csv", index=False)
    assert cli("predict", pj, tmp_path / "hand.csv", "-o", tmp_path / "h.csv", "-q")[0] == 0
    np.testing.assert_allclose(got["power_w_pred"], pd.read_csv(tmp_path / "h.csv")["power_w_pred"], rtol=1e-9)
    # --anchor scales a measured time: it needs a timing section and says so
    code, _, err = cli("predict", pj, tmp_path / "one.csv", "--anchor", "-o", tmp_path / "a.csv")
    assert code == 2 and "no timing section" in err
