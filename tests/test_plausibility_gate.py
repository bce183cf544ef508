"""Issue 17, finding 5 (and the unknown-parameter message of finding 7): implausible raw readings are
excluded from the windows with a warning (never silently, the raw logs untouched), a fit whose error
is absurd is refused with its numbers unless --accept-poor-fit, and `calib validate` refuses files that
record such a fit or carry parameters their model does not have."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest



def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def corrupted(quick_run, tmp_path):
    """A copy of the quick session in which 400 NVML power readings are 99,999 W and one is -50 W."""
    sess = tmp_path / "sess"
    shutil.copytree(quick_run / "logs" / "q", sess)
    lines = (sess / "nvml0.csv").read_text().splitlines(keepends=True)
    rows = [600 + 50 * k for k in range(400)]  # every 5 s from t = 60 s: inside many measurement windows
    for i, v in [(r, "99999.0") for r in rows] + [(590, "-50.0")]:
        f = lines[i].split(",")
        f[3] = v  # power_w
        lines[i] = ",".join(f)
    (sess / "nvml0.csv").write_text("".join(lines))
    return sess


def test_implausible_readings_are_excluded_and_reported_never_silently(corrupted, quick_run, tmp_path, cli):
    before = _digest(corrupted)
    rc, out, err = cli("fit", corrupted, "-o", tmp_path / "p.json")
    assert rc == 0, err
    warning = (f"WARNING: {corrupted / 'nvml0.csv'}: 401 implausible readings excluded from the measurement "
               "windows (power_w outside [0, 472] W (2 x the board's 236 W power limit): 401); first at line 591: "
               "power_w = -50; the log itself is unchanged")
    assert err.count(warning) == 1, err
    assert _digest(corrupted) == before  # the raw logs are untouched
    fit = json.loads((tmp_path / "p.json").read_text())["fit"]["power"]
    clean = json.loads((quick_run / "fitted" / "q.json").read_text())["fit"]["power"]
    assert fit["mape_pct"] < 0.5 and abs(fit["mape_pct"] - clean["mape_pct"]) < 0.1  # (before: 656 %)
    # the samples table counts only the plausible readings of each window
    rc, out, err = cli("samples", corrupted, "-o", tmp_path / "s.csv")
    assert rc == 0 and err.count(warning) == 1
    s = pd.read_csv(tmp_path / "s.csv")
    ref = pd.read_csv(quick_run / "fitted" / "q.samples.csv")
    assert len(s) == len(ref) and s["n_power"].sum() < ref["n_power"].sum()
    assert s["power_w"].max() < 300 and np.allclose(s["power_w"], ref["power_w"], rtol=0.01)


def test_limits_come_from_the_manifest_or_conservative_physics():
    from calib.core.plausibility import Limit, limits_for, screen

    nvml = {"name": "nvml0", "kind": "nvml", "columns": ["power_w", "temp_c", "sm_mhz", "mem_mhz", "energy_mj"]}
    dev = {"power_limit_w": 250.0, "shutdown_temp_c": 92.0,
           "clocks": {"core_mhz": 975.0, "mem_mhz": 3505.0, "supported": {"core_mhz": [595.0, 1164.0],
                                                                        "mem_mhz": [810.0, 4005.0]}}}
    lim = limits_for(dev, nvml)
    assert (lim["power_w"].lo, lim["power_w"].hi) == (0.0, 500.0)
    assert lim["temp_c"].hi == 107.0 and lim["sm_mhz"].hi == 1746.0 and lim["mem_mhz"].hi == 6007.5
    assert "energy_mj" not in lim
    bare = limits_for({"name": "x"}, nvml)
    assert (bare["power_w"].hi, bare["temp_c"].hi, bare["sm_mhz"].hi) == (5000.0, 150.0, 10000.0)
    wall = limits_for(dev, {"name": "wall", "kind": "analyzer", "columns": ["power_w"]})
    assert wall["power_w"].lo == -10.0  # a rail sensor reads slightly below 0 at no load
    df = pd.DataFrame({"power_w": [80.0, np.nan, 1e5, -1.0, 90.0], "temp_c": [50.0, 51.0, 52.0, 400.0, 53.0]})
    out, rep = screen(df, {"power_w": Limit(0, 500, "W", "x"), "temp_c": Limit(-60, 107, "C", "y")})
    assert rep.counts == {"power_w": 2, "temp_c": 1} and rep.first_line == 4 and rep.first == ("power_w", 1e5)
    assert out["power_w"].isna().tolist() == [False, True, True, True, False]
    assert out["temp_c"].tolist()[:3] == [50.0, 51.0, 52.0] and np.isnan(out["temp_c"].iloc[3])
    assert df["power_w"].iloc[2] == 1e5  # the input is not changed


@pytest.fixture
def absurd(quick_run, tmp_path):
    """The samples table of the quick campaign with four windows reading 99,999 W."""
    df = pd.read_csv(quick_run / "fitted" / "q.samples.csv")
    df.loc[df.index[df["role"] == "unit"][:4], "power_w"] = 99999.0  # windows the power fit uses
    df.to_csv(tmp_path / "absurd.csv", index=False)
    return tmp_path / "absurd.csv"


def test_an_absurd_fit_is_refused_with_its_numbers(absurd, tmp_path, cli):
    rc, out, err = cli("fit", absurd, "-o", tmp_path / "p.json")
    assert rc == 2
    line = err.strip().splitlines()[-1]
    assert line.startswith(f"ERROR: {absurd}: the fit is not credible (power: MAPE ")
    mape = float(line.split("MAPE ")[1].split("%")[0])
    assert mape > 1000  # 3958 % on the quick campaign's table
    assert f"power: MAPE {mape:.4g}% (limit 25%)" in line and "power: R^2 " in line and "(at least 0.8)" in line
    assert line.endswith("): the data or the model are wrong (check the input for implausible readings); nothing "
                         "written. --accept-poor-fit writes it anyway")
    assert not (tmp_path / "p.json").exists()


def test_accept_poor_fit_writes_it_and_validate_refuses_it(quick_run, tmp_path, cli):
    df = pd.read_csv(quick_run / "fitted" / "q.samples.csv")
    df.loc[df.index[df["role"] == "unit"][:4], "power_w"] = 1000.0  # MAPE ~40 %: absurd, yet a usable model
    df.to_csv(tmp_path / "bad.csv", index=False)
    rc, out, err = cli("fit", tmp_path / "bad.csv", "-o", tmp_path / "p.json")
    assert rc == 2 and not (tmp_path / "p.json").exists()
    rc, out, err = cli("fit", tmp_path / "bad.csv", "-o", tmp_path / "p.json", "--accept-poor-fit")
    assert rc == 0, err
    assert "WARNING:" in err and "written because of --accept-poor-fit" in err
    doc = json.loads((tmp_path / "p.json").read_text())
    assert doc["fit"]["power"]["poor_fit"].startswith("MAPE ") and "--accept-poor-fit" in doc["fit"]["power"]["poor_fit"]
    rc, out, err = cli("validate", tmp_path / "p.json")
    assert rc == 2
    assert err.startswith(f"ERROR: {tmp_path / 'p.json'}: records a fit that is not credible (power: MAPE ")
    assert err.strip().endswith("not valid for predictions (refit from data without implausible readings)")
    # other verbs can still read it (to report on it, compare it), with a warning
    rc, out, err = cli("predict", tmp_path / "p.json", tmp_path / "bad.csv", "-o", tmp_path / "o.csv", "--no-intervals")
    assert rc == 0 and "records a fit that is not credible" in err


def test_good_fits_pass_the_gate(quick_run, cli):
    rc, out, err = cli("validate", quick_run / "fitted" / "q.json")
    assert rc == 0 and "valid" in out


SECTIONS = [("power", "ipp"), ("thermal", "ipp-thermal"), ("timing", "mwp_cwp_wangchu"), ("transfer", "pcie"),
            ("thermal_network", "foster")]


@pytest.mark.parametrize("section, model", SECTIONS + [("dvfs", "dvfs")])
def test_validate_refuses_parameters_the_model_does_not_have(quick_run, tmp_path, cli, section, model):
    root = Path(__file__).resolve().parents[1]
    src = root / "fitted" / "sim-titanx.json" if section == "dvfs" else quick_run / "fitted" / "q.json"
    doc = json.loads(src.read_text())
    first = next(iter(doc[section]["parameters"].values()))
    doc[section]["parameters"]["bogus_w"] = dict(first, unit="W")
    (tmp_path / "p.json").write_text(json.dumps(doc))
    rc, out, err = cli("validate", tmp_path / "p.json")
    assert rc == 2
    assert err.strip() == (f"ERROR: {tmp_path / 'p.json'}: {section}.parameters.bogus_w: not a parameter of the "
                           f"'{model}' model (a typo, or a file edited by hand?); remove it or fix its name")
