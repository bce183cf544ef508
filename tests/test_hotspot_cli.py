"""calib hotspot (issue 14, item 4 on the command line): HotSpot's .flp/.ptrace/config from a parameter file
and a samples table, on the shared quick virtual campaign (sim:gtx280, which has a thermal_network section);
the report's heat map on a user's floorplan; bad input refused with one exact ERROR line and nothing written."""

from __future__ import annotations

import json
import shlex
import warnings

import numpy as np
import pandas as pd
import pytest

from calib.core import params as P
from calib.model import floorplan as F

#: a user's floorplan with a block for every unit of the GTX280 power section (chip units in a bottom band)
USER_FLP = """\
# a user's floorplan: chip-wide units along the bottom, per-SM units in named regions
global\t0.02\t0.004\t0\t0
local\t0.02\t0.004\t0.02\t0
west_fp\t0.01\t0.016\t0\t0.004
west_int\t0.01\t0.016\t0.01\t0.004
east_sfu\t0.01\t0.016\t0.02\t0.004
east_alu\t0.01\t0.016\t0.03\t0.004
north_reg\t0.008\t0.01\t0\t0.02
north_fds\t0.008\t0.01\t0.008\t0.02
north_shared\t0.008\t0.01\t0.016\t0.02
north_const\t0.008\t0.01\t0.024\t0.02
north_tex\t0.008\t0.01\t0.032\t0.02
"""


@pytest.fixture(scope="module")
def fitted(quick_run):
    """(parameter file path, samples path, ParameterFile, samples table) of the quick campaign."""
    from calib.core.samples import read_samples

    pj, sc = quick_run / "fitted" / "q.json", quick_run / "fitted" / "q.samples.csv"
    pf = P.load(pj)
    assert "thermal_network" in pf and pf.model_of("power") == "ipp"
    return pj, sc, pf, read_samples(sc, require_power=False, require_act=False)


def _predicted_w(pf, df) -> np.ndarray:
    from calib.model.predict import predict_power

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return predict_power(pf, df, "test")


def _errors(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("ERROR:")]


def test_writes_flp_ptrace_and_config(fitted, tmp_path, cli):
    from calib.fit.ipp import DIE_AREA_PRIOR
    from calib.model.ipp import IppPowerModel
    from calib.model.thermal_network import FosterNetwork

    pj, sc, pf, df = fitted
    out = tmp_path / "new" / "hs"  # -o is a directory, created with its parents
    code, stdout, err = cli("hotspot", pj, sc, "-o", out)
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["gpu.config", "gpu.flp", "gpu.ptrace"]  # no temporary left

    # the floorplan: the generic one of the power section, built as the report's heat map builds it
    st = pf["power"].structure
    chip = [u for u, s in st["units"].items() if s["scope"] == "chip"]
    want = F.generic_floorplan(list(st["units"]), int(st["sm_count"]), chip, DIE_AREA_PRIOR)
    fp = F.read_flp(out / "gpu.flp")
    assert fp.names == want.names and len(fp.blocks) == 30 * 9 + 2
    for a, b in zip(fp.blocks, want.blocks):
        for f in ("width_m", "height_m", "left_m", "bottom_m"):
            assert getattr(a, f) == pytest.approx(getattr(b, f), rel=1e-8, abs=1e-15)

    # the power trace: the flp's blocks, one row per samples row in order, each summing to its predicted power
    names, rows = F.read_ptrace(out / "gpu.ptrace", fp)
    assert names == fp.names and rows.shape == (len(df), len(fp.blocks))
    pred = _predicted_w(pf, df)
    np.testing.assert_allclose(rows.sum(axis=1), pred, rtol=1e-6)
    # and the units are where they belong: the DRAM interface block holds the row's global power plus its
    # area share of the rest (idle, activation, constant per SM); the SMs' fp strips hold fp's power
    bd = IppPowerModel.from_file(pf).breakdown(df)
    units = list(st["units"])
    area = np.array([b.area_m2 for b in fp.blocks]) / fp.area_m2
    rest = pred - bd[units].sum(axis=1).to_numpy()
    g = fp.names.index("global")
    np.testing.assert_allclose(rows[:, g], bd["global"].to_numpy() + rest * area[g], rtol=1e-6)
    fp_cols = [i for i, n in enumerate(fp.names) if n.endswith("_fp")]
    np.testing.assert_allclose(rows[:, fp_cols].sum(axis=1),
                               bd["fp"].to_numpy() + rest * area[fp_cols].sum(), rtol=1e-6)
    hot = int(np.argmax(bd["fp"].to_numpy()))
    assert bd["fp"].iloc[hot] > 1.0  # the check above is not on zeros

    # the config: package from the network, ambient from its structure, 1 s (no duration_s column), block model
    cfg = F.read_config(out / "gpu.config")
    sec = pf["thermal_network"]
    net = FosterNetwork.from_section(sec)
    amb = float(sec.structure["ambient_temp_c"])
    ref = F.hotspot_config(net, fp, amb)
    assert cfg["r_convec"] == pytest.approx(ref["r_convec"], rel=1e-8)
    assert cfg["c_convec"] == pytest.approx(ref["c_convec"], rel=1e-8)
    assert cfg["p_sink"] == pytest.approx(ref["p_sink"], rel=1e-8)
    assert cfg["ambient"] == pytest.approx(amb + 273.15, rel=1e-8)
    assert cfg["sampling_intvl"] == 1.0 and cfg["model_type"] == "block"

    lines = stdout.splitlines()
    assert lines[0] == f"{out / 'gpu.flp'}: 272 blocks (generic: 30 SMs, 11 units, die-area priors)"
    assert lines[1] == (f"{out / 'gpu.ptrace'}: {len(df)} rows x 272 blocks, total {pred.min():.1f}-{pred.max():.1f} W "
                        "per row (the predicted power of each samples row)")
    assert lines[2].startswith(f"{out / 'gpu.config'}: HotSpot block model, package from the {net.poles}-pole "
                               "thermal network")
    assert lines[2].endswith(f"ambient {amb:.1f} C, sampling interval 1 s: not every samples row has a positive duration_s")
    assert lines[3] == (f"run: hotspot -c {out / 'gpu.config'} -f {out / 'gpu.flp'} -p {out / 'gpu.ptrace'} "
                        f"-o {out / 'gpu.ttrace'}")


def test_sampling_interval_from_duration_and_grid_model(fitted, tmp_path, cli):
    pj, sc, pf, df = fitted
    k = pd.read_csv(sc).head(6)
    k["duration_s"] = 2.5
    k.to_csv(tmp_path / "seq.csv", index=False)
    code, stdout, err = cli("hotspot", pj, tmp_path / "seq.csv", "-o", tmp_path / "hs", "--grid", 32)
    assert code == 0, err
    cfg = F.read_config(tmp_path / "hs" / "gpu.config")
    assert cfg["sampling_intvl"] == 2.5 and cfg["model_type"] == "grid"
    assert cfg["grid_rows"] == 32 and cfg["grid_cols"] == 32
    assert "HotSpot grid model 32 x 32" in stdout and "sampling interval 2.5 s: the samples' duration_s" in stdout
    assert F.read_ptrace(tmp_path / "hs" / "gpu.ptrace")[1].shape[0] == 6
    # durations that differ: their mean, with a warning (HotSpot has one interval)
    k["duration_s"] = [1.0, 2.0, 3.0, 1.0, 2.0, 3.0]
    k.to_csv(tmp_path / "seq2.csv", index=False)
    code, stdout, err = cli("hotspot", pj, tmp_path / "seq2.csv", "-o", tmp_path / "hs2")
    assert code == 0, err
    assert F.read_config(tmp_path / "hs2" / "gpu.config")["sampling_intvl"] == 2.0
    assert (f"WARNING: {tmp_path / 'seq2.csv'}: duration_s differs between rows (1-3 s) but HotSpot steps every "
            "power-trace row by one sampling interval: gpu.config uses their mean, 2 s") in err


def test_user_floorplan(fitted, tmp_path, cli):
    pj, sc, pf, df = fitted
    (tmp_path / "user.flp").write_text(USER_FLP)
    code, stdout, err = cli("hotspot", pj, sc, "-o", tmp_path / "hs", "--floorplan", tmp_path / "user.flp")
    assert code == 0, err
    user = F.read_flp(tmp_path / "user.flp")
    fp = F.read_flp(tmp_path / "hs" / "gpu.flp")
    assert fp == user  # the same blocks, to the last digit the file holds
    names, rows = F.read_ptrace(tmp_path / "hs" / "gpu.ptrace", fp)
    assert names == user.names
    np.testing.assert_allclose(rows.sum(axis=1), _predicted_w(pf, df), rtol=1e-6)
    assert stdout.startswith(f"{tmp_path / 'hs' / 'gpu.flp'}: 11 blocks (from {tmp_path / 'user.flp'})\n")


def test_unit_without_block_refused(fitted, tmp_path, cli):
    from calib.model.ipp import IppPowerModel

    pj, sc, pf, df = fitted
    flp = tmp_path / "notex.flp"
    flp.write_text(USER_FLP.replace("north_tex", "north_spare"))
    code, stdout, err = cli("hotspot", pj, sc, "-o", tmp_path / "hs", "--floorplan", flp)
    tex = IppPowerModel.from_file(pf).breakdown(df)["tex"].to_numpy()
    p0 = tex[np.argmax(np.abs(tex))]
    assert code == 2 and stdout == ""
    assert _errors(err) == [f"ERROR: {flp}: unit 'tex' ({p0:.3g} W) has no block in the floorplan "
                            "(name a block 'tex' or '<prefix>_tex')"]
    assert not (tmp_path / "hs").exists()


@pytest.mark.parametrize("text, msg", [
    ("a 0.01 0.01 0 0\nb 0.01 0.01 0.005 0\n", "blocks 'a' and 'b' overlap (5 x 10 mm)"),
    ("a 0.01 0.01 0 0\nb 0.01 0.01 0.02 0\n",
     "gap in the floorplan: no block covers (15, 5) mm (the blocks must tile the die, 30 x 10 mm)"),
])
def test_overlapping_or_gapped_floorplan_refused(fitted, tmp_path, cli, text, msg):
    pj, sc, _, _ = fitted
    flp = tmp_path / "bad.flp"
    flp.write_text(text)
    code, stdout, err = cli("hotspot", pj, sc, "-o", tmp_path / "hs", "--floorplan", flp)
    assert code == 2 and stdout == ""
    assert _errors(err) == [f"ERROR: {flp}: {msg}"]
    assert not (tmp_path / "hs").exists()


@pytest.mark.parametrize("drop, msg", [
    ("thermal_network", "no thermal_network section (fit a session with thermal steps); the HotSpot package comes "
                        "from the thermal network"),
    ("power", "no IPP power section (no power section); the power trace needs the per-unit power breakdown"),
])
def test_missing_section_refused(fitted, tmp_path, cli, drop, msg):
    pj, sc, _, _ = fitted
    doc = json.loads(pj.read_text())
    del doc[drop]
    doc.get("fit", {}).pop(drop, None)
    bad = tmp_path / f"no-{drop}.json"
    bad.write_text(json.dumps(doc))
    code, stdout, err = cli("hotspot", bad, sc, "-o", tmp_path / "hs")
    assert code == 2 and stdout == ""
    assert _errors(err) == [f"ERROR: {bad}: {msg}"]
    assert not (tmp_path / "hs").exists()


def test_help_ends_with_one_example_that_parses(cli):
    from calib.cli import get_parser

    code, out, err = cli("hotspot", "--help")
    assert code == 0 and err == ""
    head, sep, tail = out.rstrip("\n").rpartition("\nexample:\n")
    assert sep and "hotspot -c gpu.config -f gpu.flp -p gpu.ptrace -o gpu.ttrace" in head
    lines = tail.splitlines()
    assert len(lines) == 1 and lines[0].startswith("  calib hotspot ")
    args = get_parser().parse_args(shlex.split(lines[0])[1:])
    assert args.verb == "hotspot" and args.output == "hotspot"


# -- the report's heat map on a user's floorplan ------------------------------------------------------------

def test_report_heat_map_on_user_floorplan(fitted, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from calib.report.plots import Context, fig_floorplan, with_predictions

    pj, sc, pf, df = fitted
    (tmp_path / "user.flp").write_text(USER_FLP)
    user = F.read_flp(tmp_path / "user.flp")
    notes: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        samples = with_predictions(pf, df, notes)
    fig, cap = fig_floorplan(Context(pf, samples, None, notes, floorplan=user, floorplan_source="user.flp"))
    assert "placed on the floorplan user.flp" in cap and "generic" not in cap
    assert fig._suptitle.get_text().startswith("Floorplan heat map (11 blocks, 96 x 96 grid)")
    labels = {t.get_text() for t in fig.axes[0].texts}
    assert labels == set(user.names)
    # the default stays the generic floorplan
    fig, cap = fig_floorplan(Context(pf, samples, None, notes))
    assert "a generic floorplan (die-area priors" in cap
    assert fig._suptitle.get_text().startswith("Floorplan heat map (272 blocks, 96 x 96 grid)")


def test_report_refuses_a_floorplan_missing_a_unit(fitted, tmp_path, cli):
    pj, _, _, _ = fitted
    flp = tmp_path / "nofp.flp"
    flp.write_text(USER_FLP.replace("west_fp", "west_spare"))
    code, stdout, err = cli("report", pj, "-o", tmp_path / "rep", "--floorplan", flp, "--no-discover")
    assert code == 2
    assert _errors(err) == [f"ERROR: {flp}: unit 'fp' has no block in the floorplan (name a block 'fp' or '<prefix>_fp')"]
    assert not (tmp_path / "rep").exists()
    flp.write_text("a 0.01 0.01 0 0\nb 0.01 0.01 0.005 0\n")
    code, stdout, err = cli("report", pj, "-o", tmp_path / "rep", "--floorplan", flp)
    assert code == 2 and _errors(err) == [f"ERROR: {flp}: blocks 'a' and 'b' overlap (5 x 10 mm)"]
