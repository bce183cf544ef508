"""Importers: gpmTOOL round trips, profiler/DCGM mappings, refusal of malformed files with line and field named."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calib.core.errors import BadInputError
from calib.importers import import_table
from calib.importers import gpmtool
from calib.core.samples import read_samples

DATA = Path(__file__).parent / "data"


def test_gpmtool_named_round_trip(tmp_path):
    df = import_table("gpmtool", DATA / "import_gpmtool_named.csv")
    assert list(df.columns) == ["workload", "power_w", "core_mhz", "mem_mhz", "act_SP", "act_INT", "act_L2", "act_DRAM",
                                "ref_core_mhz", "ref_mem_mhz"]
    assert list(df.workload.unique()) == ["kA", "kB", "Idle"]
    assert df.loc[2].to_dict() == {"workload": "kA", "power_w": 101.0, "core_mhz": 975.0, "mem_mhz": 810.0, "act_SP": 0.5,
                                   "act_INT": 0.1, "act_L2": 0.2, "act_DRAM": 0.3, "ref_core_mhz": 975.0,
                                   "ref_mem_mhz": 3505.0}
    out = tmp_path / "again.csv"
    gpmtool.write(df, out)
    assert out.read_text().splitlines()[:4] == ["2", "975,3505", "3,1", "SP,INT,L2,DRAM"]
    pd.testing.assert_frame_equal(import_table("gpmtool", out), df)


def test_gpmtool_unnamed_groups_rows_by_utilizations_and_prefixes_memory_components(tmp_path):
    text = (DATA / "import_gpmtool_unnamed.csv").read_text().replace("SP ADD,INT,DRAM", "SP ADD,INT,FB")
    p = tmp_path / "u.csv"
    p.write_text(text)
    df = import_table("gpmtool", p)
    assert list(df.workload) == ["mb001"] * 3 + ["mb002"] * 3
    assert "act_SP_ADD" in df.columns and "act_mem_FB" in df.columns  # memory-domain component keeps its domain
    out = tmp_path / "u2.csv"
    gpmtool.write(df, out, named=False)
    pd.testing.assert_frame_equal(import_table("gpmtool", out), df)


def test_gpmtool_cli_writes_a_samples_table(cli, tmp_path):
    out = tmp_path / "s.csv"
    code, stdout, err = cli("import", "gpmtool", DATA / "import_gpmtool_named.csv", "-o", out)
    assert code == 0, err
    assert "9 rows, 3 workloads, units SP, INT, L2, DRAM, 3 clock configuration(s)" in stdout
    df = read_samples(out)
    assert df["ref_mem_mhz"].eq(3505.0).all() and len(df) == 9


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace("kA,130.25,975,3505,0.5,0.1,0.2,0.3", "kA,130.25,975,3505,0.5,0.1,0.2"),
     "line 6: 7 fields, expected 8"),
    (lambda t: t.replace("kB,110.5,975", "kB,1l0.5,975"), "line 9, field 'power_w': '1l0.5' is not a number"),
    (lambda t: t.replace("kB,80.75,975,810,0,0.9", "kB,80.75,975,810,0,1.9"), "line 10, field 'act_INT': utilization 1.9 outside [0, 1]"),
    (lambda t: t.replace("3,1\n", "3,2\n"), "line 4: expected 5 component names"),
    (lambda t: t.replace("975,3505\n", "975\n"), "line 2: expected 2 positive default clock"),
    (lambda t: t.replace("Idle,75.5,975,", "Idle,75.5,-975,"), "line 12, field 'core_mhz': -975 MHz is not a positive clock"),
])
def test_gpmtool_refuses_malformed_files(tmp_path, edit, message):
    p = tmp_path / "bad.csv"
    p.write_text(edit((DATA / "import_gpmtool_named.csv").read_text()))
    with pytest.raises(BadInputError) as e:
        import_table("gpmtool", p)
    assert message in str(e.value) and str(p) in str(e.value)


def test_gpmtool_refuses_a_model_file(tmp_path):
    p = tmp_path / "model.csv"
    p.write_text("2\n975,3505\n2,1\nSP,INT,DRAM\n595,785,975\n810,3505\n1.0,2.0,0.1,0.2,0.3,0.4,0.5\n")
    with pytest.raises(BadInputError, match="looks like a gpmTOOL model file"):
        import_table("gpmtool", p)


def test_nvprof_levels_and_percentages():
    with pytest.warns(UserWarning, match="1 metric.s. with no unit mapping ignored: achieved_occupancy"):
        df = import_table("nvprof", DATA / "import_nvprof.csv")
    assert list(df.workload) == ["saxpy(int, float, float*, float*)", "sgemm_kernel"]
    np.testing.assert_allclose(df[["act_fp", "act_dram", "act_issue"]].to_numpy(), [[0.2, 0.8, 0.125], [1.0, 0.1, 0.8]])
    assert "power_w" not in df.columns


def test_ncu_long_format_averages_launches_and_raw_format_prefers_the_listed_metric():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        long = import_table("ncu", DATA / "import_ncu.csv")
    np.testing.assert_allclose(long.set_index("workload").loc["vecadd", ["act_dram", "act_fp", "act_int"]].to_numpy(float),
                               [0.75, 0.06, 0.11])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        raw = import_table("ncu", DATA / "import_ncu_raw.csv")
    msgs = [str(w.message) for w in caught]
    assert any("metric sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active ignored: "
               "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active already gives the same unit" in m for m in msgs)
    assert any("1 metric(s) with no unit mapping ignored: gpu__time_duration.sum" in m for m in msgs)
    np.testing.assert_allclose(raw[["act_dram", "act_fp"]].to_numpy(), [[0.8, 0.05], [0.1, 0.9]])


def test_ncu_refuses_counts_and_bad_values(tmp_path):
    text = (DATA / "import_ncu.csv").read_text()
    p = tmp_path / "n.csv"
    p.write_text(text.replace('"dram__throughput.avg.pct_of_peak_sustained_elapsed","%","70.00"',
                              '"dram__throughput.avg.pct_of_peak_sustained_elapsed","%","n/a"'))
    with pytest.raises(BadInputError, match=r"line 6, metric dram__throughput.avg.pct_of_peak_sustained_elapsed: 'n/a' is not a number"):
        import_table("ncu", p)
    p.write_text(text.replace('"dram__throughput.avg.pct_of_peak_sustained_elapsed","%"', '"dram__throughput.sum","byte"'))
    with pytest.raises(BadInputError, match="metric dram__throughput.sum is in 'byte', not a percentage"):
        import_table("ncu", p)


def test_dcgm_dmon_groups_by_clocks_and_skips_idle():
    df = import_table("dcgm", DATA / "import_dcgm_dmon.txt", workload="train")
    assert list(df.workload) == ["train", "train"] and list(df.core_mhz) == [1410.0, 1005.0]
    r = df.iloc[0]
    assert r.power_w == pytest.approx((62 + 250 + 254) / 3) and r.n_power == 3
    busy = import_table("dcgm", DATA / "import_dcgm_dmon.txt", workload="train", skip_idle=True)
    r = busy.iloc[0]
    assert r.power_w == pytest.approx(252.0) and r.act_fp == pytest.approx(0.62) and r.temp_c == pytest.approx(61.0)
    assert busy.iloc[1].act_tensor == pytest.approx(0.0)  # N/A sample ignored in the mean
    assert {"act_fp", "act_dp", "act_hp", "act_tensor", "act_dram", "act_sm", "act_smocc"} <= set(df.columns)


def test_dcgm_csv_and_unknown_field(tmp_path):
    df = import_table("dcgm", DATA / "import_dcgm.csv")
    assert list(df.workload) == ["stream", "gemm"]
    assert df.set_index("workload").loc["stream", "act_dram"] == pytest.approx(0.81)
    p = tmp_path / "d.txt"
    p.write_text("# Entity  SMACT  FOO\n ID\n GPU 0 0.5 1\n")
    with pytest.raises(BadInputError, match="unknown DCGM field 'FOO'"):
        import_table("dcgm", p)
    p.write_text("# Entity  SMACT  DRAMA\n ID\n GPU 0 0.5 1.7\n")
    with pytest.raises(BadInputError, match="sample 1, field DRAMA: 1.7 outside"):
        import_table("dcgm", p)


def test_cli_joins_power_and_refuses_unknown_format(cli, tmp_path):
    out = tmp_path / "k.csv"
    code, stdout, err = cli("import", "ncu", DATA / "import_ncu.csv", "-o", out, "--power", DATA / "import_power.csv")
    assert code == 0, err
    df = read_samples(out)
    assert df.set_index("workload").loc["gemm", "power_w"] == 260.0 and df.core_mhz.eq(1410.0).all()
    code, _, err = cli("import", "bogus", DATA / "import_ncu.csv", "-o", out)
    assert code == 2 and "invalid choice: 'bogus'" in err
    code, _, err = cli("import", "gpmtool", tmp_path / "missing.csv", "-o", out)
    assert code == 2 and "missing.csv: file not found" in err and "Traceback" not in err


def test_cli_power_join_copies_profiled_activities_to_every_measured_clock_pair(cli, tmp_path):
    power = tmp_path / "p.csv"
    power.write_text("workload,power_w,core_mhz,mem_mhz\nvecadd,180.5,1410,1215\nvecadd,150.0,1005,1215\n"
                     "gemm,260.0,1410,1215\nother,99.0,1410,1215\n")
    out = tmp_path / "k.csv"
    code, _, err = cli("import", "ncu", DATA / "import_ncu.csv", "-o", out, "--power", power)
    assert code == 0, err
    assert "WARNING: " in err and "1 workload(s) not in the imported file, ignored (e.g. 'other')" in err
    df = read_samples(out).set_index(["workload", "core_mhz"])
    assert len(df) == 3 and df.loc[("vecadd", 1005.0), "power_w"] == 150.0
    assert df.loc[("vecadd", 1005.0), "act_dram"] == df.loc[("vecadd", 1410.0), "act_dram"] == pytest.approx(0.75)
