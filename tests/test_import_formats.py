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


def test_dcgm_power_std_is_the_sample_standard_deviation():
    """power_std_w of a group is the sample standard deviation (ddof 1) of its POWER readings, by hand: the
    busy 1410 MHz samples 250 and 254 W give sqrt(((250-252)^2 + (254-252)^2) / 1) = 2.828 W (ddof 0: 2.0),
    the 1005 MHz pair 200 and 204 W the same; with the idle 62 W sample kept, 62/250/254 give 110.3 W."""
    busy = import_table("dcgm", DATA / "import_dcgm_dmon.txt", workload="train", skip_idle=True)
    assert list(busy.power_std_w) == [pytest.approx(8 ** 0.5, rel=1e-12), pytest.approx(8 ** 0.5, rel=1e-12)]
    every = import_table("dcgm", DATA / "import_dcgm_dmon.txt", workload="train")
    m = (62 + 250 + 254) / 3
    assert every.power_std_w.iloc[0] == pytest.approx((((62 - m) ** 2 + (250 - m) ** 2 + (254 - m) ** 2) / 2) ** 0.5,
                                                      rel=1e-12)


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


# -- real profiler output (tests/data/profilers/README.md: how each transcript was made) ---------------

PROF = DATA / "profilers"
SAXPY, GEMM = "saxpy(int, float, float*, float*)", "gemm(float const *, float const *, float*, int)"


def _kernels(path, **kw):
    from calib.importers.kernels import read_kernels

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return read_kernels(path, **kw).set_index("workload")


@pytest.mark.parametrize("metrics", ["nvprof_11.8_metrics_summary.csv", "nvprof_11.8_metrics_trace.csv"])
def test_nvprof_real_exports_give_the_kernel_table_by_hand(metrics):
    """nvprof 11.8's own output (units inside the values, 715.780258MB/s and 148.250824GB/s in one row,
    levels, its units row) was refused: "line 10, metric global_hit_rate: '80.000000%' is not a number".
    Expected values by hand from the profile make_nvprof_transcripts.py gives nvprof: saxpy (4096 blocks x 8
    warps) 12 warp instructions, 2 loads + 1 store, L1 hit 50 % of loads, L2 hit 25 %, thread-level fp 2,
    int 5, misc 1, control 1 per warp; gemm 400, 16 + 1, 80 %, 90 %, fp 256 (8 special), int 80, misc 20,
    control 27. The summary and the per-launch trace give the same table."""
    df = _kernels(PROF / metrics, trace=PROF / "nvprof_11.8_gpu_trace.csv", core_mhz=1582, mem_mhz=5505)
    s, g = df.loc[SAXPY], df.loc[GEMM]
    # saxpy: l1 = 3 x (0.5 x 2/3) = 1; l2 = (3 - 1) x 0.25 = 0.5; global 1.5; the 9 others by thread shares
    assert {c: s[f"cnt_{c}"] for c in ("l1", "l2", "global", "fp", "int", "alu", "ctrl")} == pytest.approx(
        {"l1": 1.0, "l2": 0.5, "global": 1.5, "fp": 2.0, "int": 5.0, "alu": 1.0, "ctrl": 1.0})
    # gemm: l1 = 17 x 0.8 x 16/17 = 12.8; l2 = 4.2 x 0.9 = 3.78; global 0.42; fp 256 - 8 special
    assert {c: g[f"cnt_{c}"] for c in ("l1", "l2", "global", "fp", "sfu", "int", "alu", "ctrl")} == pytest.approx(
        {"l1": 12.8, "l2": 3.78, "global": 0.42, "fp": 248.0, "sfu": 8.0, "int": 80.0, "alu": 20.0, "ctrl": 27.0})
    assert s["time_s"] == pytest.approx((160.512e-6 + 161.024e-6 + 159.968e-6) / 3)  # the trace's three launches
    assert g["time_s"] == pytest.approx(2.345678e-3)
    assert (s["blocks"], s["threads_per_block"], g["blocks"], g["threads_per_block"]) == (4096, 256, 4096, 256)
    # achieved occupancy (0.8123 + 0.8077 + 0.8150) / 3 of GP102's 64 warp slots, over 8 warps per block
    assert s["active_blocks_per_sm"] == pytest.approx((0.8123 + 0.8077 + 0.8150) / 3 * 64 / 8, rel=1e-6)
    assert s["uncoal_frac"] == 0.0
    # no --sm-count: nvprof names the board, a GeForce GTX 1080 Ti has 28 SMs
    assert (s["active_sms"], g["active_sms"]) == (28, 28) and set(df["arch"]) == {"GP102"}


def test_nvprof_real_summary_cli_before_and_after(cli, tmp_path):
    out = tmp_path / "k.csv"
    code, stdout, err = cli("import", "nvprof", PROF / "nvprof_11.8_metrics_summary.csv", "--kernels",
                            "--trace", PROF / "nvprof_11.8_gpu_trace.csv", "--core-mhz", "1582", "--mem-mhz", "5505",
                            "-o", out)
    assert code == 0, err
    assert "2 kernel rows, 2 kernels, 2 with a measured time, 1 core x 1 memory clock levels, arch GP102" in stdout
    # without the gpu trace: a summary has no launch shape (nvprof prints none with metrics)
    code, _, err = cli("import", "nvprof", PROF / "nvprof_11.8_metrics_summary.csv", "--kernels", "-o", tmp_path / "x.csv")
    assert code == 2 and "no launch shape" in err and not (tmp_path / "x.csv").exists()
    # the gpu trace alone has durations but no counts
    code, _, err = cli("import", "nvprof", PROF / "nvprof_11.8_gpu_trace.csv", "--kernels", "-o", tmp_path / "x.csv")
    assert code == 2 and "has durations but no instruction counts" in err


def test_nvprof_real_summary_activities():
    """Levels and percentages of nvprof's summary: dram_utilization 'High (7)' -> 0.7, issue_slot_utilization
    '12.500000%' -> 0.125, single_precision_fu_utilization 'Max (10)' -> 1.0."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = import_table("nvprof", PROF / "nvprof_11.8_metrics_summary.csv").set_index("workload")
    assert df.loc[SAXPY, ["act_dram", "act_fp", "act_issue"]].tolist() == pytest.approx([0.7, 0.2, 0.125])
    assert df.loc[GEMM, ["act_dram", "act_fp", "act_issue"]].tolist() == pytest.approx([0.1, 1.0, 0.8])


def _raw_page(path):
    """The raw page read with the csv module alone (the independent route): {metric: (unit, value)}."""
    import csv

    head, units, vals = list(csv.reader(path.read_text().splitlines()))
    return {h: (u, v) for h, u, v in zip(head, units, vals)}


@pytest.mark.parametrize("kernel", ["addConstDouble3", "addConstDouble"])
def test_ncu_real_raw_page_kernel_table(kernel):
    """ncu 2022.3's raw page of NVIDIA's example reports (measured on an RTX A2000) was refused ("unknown unit
    '%'" for l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum.pct_of_peak_sustained_elapsed). Now: the row from
    the page's own values, converted by hand (usecond, cycle/usecond = MHz, cycle/nsecond = GHz)."""
    raw = _raw_page(PROF / f"ncu_2022.3_raw_{kernel}.csv")
    row = _kernels(PROF / f"ncu_2022.3_raw_{kernel}.csv").iloc[0]

    def val(m, unit):
        assert raw[m][0] == unit
        return float(raw[m][1])

    warps = val("launch__grid_size", "") * val("launch__block_size", "") / 32
    assert row["time_s"] == pytest.approx(val("gpu__time_duration.sum", "usecond") * 1e-6)
    assert row["core_mhz"] == pytest.approx(val("sm__cycles_elapsed.avg.per_second", "cycle/usecond"))
    assert row["mem_mhz"] == pytest.approx(val("dram__cycles_elapsed.avg.per_second", "cycle/nsecond") * 1e3)
    assert row["cnt_alu"] == pytest.approx(val("smsp__inst_executed.sum", "inst") / warps)  # no pipe counts exported
    spr = val("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "sector") / val(
        "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "request")
    assert spr == {"addConstDouble3": 24.0, "addConstDouble": 8.0}[kernel]  # double3 strides: 24 sectors/request
    assert row["uncoal_frac"] == pytest.approx((spr - 4) / 28, abs=1e-6)
    assert row["active_blocks_per_sm"] == pytest.approx(val("sm__warps_active.avg.per_cycle_active", "warp") / 8)
    assert row["active_sms"] == 26 and row["device"] == "NVIDIA RTX A2000"  # device__attribute_multiprocessor_count


def test_ncu_real_details_page_agrees_with_its_raw_page():
    """The details page (section metrics by label, rows ending after the value, rule rows) was refused
    ("line 2: 13 fields, expected 15"); now it gives the raw page's row to its 2 printed decimals."""
    d = _kernels(PROF / "ncu_2022.3_details_addConstDouble3.csv", sm_count=26).iloc[0]
    r = _kernels(PROF / "ncu_2022.3_raw_addConstDouble3.csv").iloc[0]
    for c in ("time_s", "core_mhz", "mem_mhz", "cnt_alu", "active_blocks_per_sm", "blocks", "threads_per_block"):
        assert d[c] == pytest.approx(r[c], rel=2e-3), c


def test_ncu_real_pages_activities():
    """Activities from the pages' percentage rollups; count and rate rollups of the same metrics beside them
    (l1tex__data_pipe_lsu_wavefronts_mem_shared.sum, sm__warps_active.avg.per_cycle_active) are not refused."""
    raw = _raw_page(PROF / "ncu_2022.3_raw_addConstDouble3.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = import_table("ncu", PROF / "ncu_2022.3_raw_addConstDouble3.csv").iloc[0]
        b = import_table("ncu", PROF / "ncu_2022.3_details_addConstDouble3.csv").iloc[0]
    assert a["act_dram"] == pytest.approx(float(raw["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"][1]) / 100)
    assert a["act_dp"] == pytest.approx(float(raw["sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed"][1]) / 100)
    assert a["act_occupancy"] == pytest.approx(float(raw["sm__warps_active.avg.pct_of_peak_sustained_active"][1]) / 100)
    # the details page prints "DRAM Throughput 72.61 %", "Achieved Occupancy 77.07 %"
    assert (b["act_dram"], b["act_occupancy"]) == pytest.approx((0.7261, 0.7707))


def test_dcgm_reconstructed_dmon_with_id_units_line():
    """DCGM's units line is spelled "Id" in the reconstructed transcript (README: no dcgmi here); it was
    read as a data line ("0 values after the entity 'Id'")."""
    df = import_table("dcgm", PROF / "dcgmi_dmon_reconstructed.txt", workload="w", skip_idle=True)
    r = df.iloc[0]
    assert r.power_w == pytest.approx((251.730 + 255.102) / 2) and r.act_fp == pytest.approx((0.604 + 0.622) / 2)
    assert (r.core_mhz, r.mem_mhz, r.temp_c) == (1410, 1215, pytest.approx(61.5))


# -- every unit nvprof and ncu print: converted, or refused with one message --------------------------

@pytest.mark.parametrize("text, unit, si, dim", [
    ("50.000000%", "", 50.0, "%"), ("12.500000", "%", 12.5, "%"),
    ("715.780258MB/s", "", 715.780258 * 2**20, "B/s"), ("148.250824GB/s", "", 148.250824 * 2**30, "B/s"),
    ("0.699004", "GB/s", 0.699004 * 2**30, "B/s"), ("3.5KB/s", "", 3584.0, "B/s"), ("17B/s", "", 17.0, "B/s"),
    ("1.5TB/s", "", 1.5 * 2**40, "B/s"), ("4.000000MB", "", 4 * 2**20, "B"), ("2KB", "", 2048.0, "B"),
    ("7GB", "", 7 * 2**30, "B"), ("0", "B", 0.0, "B"), ("160.51us", "", 160.51e-6, "s"), ("0.160512", "ms", 160.512e-6, "s"),
    ("7.25", "ns", 7.25e-9, "s"), ("1.5", "s", 1.5, "s"), ("1911", "MHz", 1911e6, "Hz"),
    ("High (8)", "", 8.0, "level"), ("Idle (0)", "", 0.0, "level"), ("Max (10)", "", 10.0, "level"),
    ("1234567", "", 1234567.0, ""), ("0.812300", "", 0.8123, ""),
])
def test_nvprof_units_converted(text, unit, si, dim):
    from calib.importers.units import nvprof_value

    v, d = nvprof_value(text, unit, "f: line 3, metric m")
    assert d == dim and v == pytest.approx(si, rel=1e-12)


@pytest.mark.parametrize("text, unit, si, dim", [
    ("91.75", "%", 91.75, "%"), ("204.358281", "Gbyte/second", 204.358281e9, "B/s"), ("3", "Tbyte/second", 3e12, "B/s"),
    ("7", "Mbyte/second", 7e6, "B/s"), ("8.192", "Kbyte", 8192.0, "B"), ("1.024", "Kbyte/block", 1024.0, "B/block"),
    ("0", "byte/block", 0.0, "B/block"), ("2", "Mbyte", 2e6, "B"), ("1", "Gbyte", 1e9, "B"), ("12", "byte", 12.0, "B"),
    ("17", "byte/second", 17.0, "B/s"), ("239.01", "usecond", 239.01e-6, "s"), ("3", "nsecond", 3e-9, "s"),
    ("1.5", "msecond", 1.5e-3, "s"), ("2", "second", 2.0, "s"), ("5.79", "cycle/nsecond", 5.79e9, "Hz"),
    ("543.80", "cycle/usecond", 543.8e6, "Hz"), ("900", "cycle/msecond", 900e3, "Hz"), ("5", "cycle/second", 5.0, "Hz"),
    ("1.41", "GHz", 1.41e9, "Hz"), ("1410", "Mhz", 1410e6, "Hz"), ("3", "khz", 3e3, "Hz"), ("60", "hz", 60.0, "Hz"),
    ("655360", "inst", 655360.0, "inst"), ("1.5", "Kinst", 1500.0, "inst"), ("2", "Minst", 2e6, "inst"),
    ("36.99", "warp", 36.99, "warp"), ("24", "sectors", 24.0, "sector"), ("3", "Msector", 3e6, "sector"),
    ("98304", "request", 98304.0, "request"), ("129977", "cycle", 129977.0, "cycle"), ("0.41", "inst/cycle", 0.41, "inst/cycle"),
    ("16", "register/thread", 16.0, "register/thread"), ("1,048,576", "thread", 1048576.0, "thread"),
    ("16", "block", 16.0, "block"), ("2.5", "sector/nsecond", 2.5e9, "sector/s"), ("4096", "", 4096.0, ""),
])
def test_ncu_units_converted(text, unit, si, dim):
    from calib.importers.units import ncu_value

    v, d = ncu_value(text, unit, "f: line 3, metric m")
    assert d == dim and v == pytest.approx(si, rel=1e-12)


@pytest.mark.parametrize("tool, text, unit, message", [
    ("nvprof", "12 furlongs", "", "'12 furlongs' is not a number with one of nvprof's units"),
    ("nvprof", "5GiB/s", "", "'5GiB/s' is not a number with one of nvprof's units"),
    ("nvprof", "0.5", "fortnights", "'0.5': unit 'fortnights' is not one nvprof prints"),
    ("nvprof", "50%", "GB/s", "'50%' carries '%' under a column in 'GB/s'"),
    ("nvprof", "<OVERFLOW>", "", "'<OVERFLOW>': nvprof could not count this value (counter overflow)"),
    ("nvprof", "<INVALID>", "", "'<INVALID>': nvprof could not count this value (counter invalid)"),
    ("nvprof", "Huge (12)", "", "'Huge (12)' is not an nvprof utilization level"),
    ("ncu", "5", "parsecs", "'5': unit 'parsecs' is not one ncu prints"),
    ("ncu", "5", "GB/s", "'5': unit 'GB/s' is not one ncu prints"),
    ("ncu", "5", "inst/fortnight", "'5': unit 'inst/fortnight' is not one ncu prints"),
    ("ncu", "lots", "inst", "'lots' is not a number"),
    ("ncu", "inf", "%", "'inf' is not a finite number"),
])
def test_unknown_units_refused_with_one_message(tool, text, unit, message):
    from calib.importers.units import ncu_value, nvprof_value

    with pytest.raises(BadInputError) as e:
        (nvprof_value if tool == "nvprof" else ncu_value)(text, unit, "f.csv: line 3, metric m")
    assert str(e.value) .startswith("f.csv: line 3, metric m: " + message), str(e.value)


def test_unit_table_lists_both_profilers():
    from calib.importers.units import UNIT_TABLE

    assert {t for t, _, _ in UNIT_TABLE} == {"nvprof", "ncu"} and len(UNIT_TABLE) == 17


# -- board names -> SM count ----------------------------------------------------------------------------

def test_board_names_give_sm_counts():
    """nvprof's and ncu's names of a board give its SM count; a longer name is not matched by a shorter one."""
    from calib.importers.boards import BOARDS, CORES_PER_SM, sm_count_of

    assert sm_count_of("GeForce GTX 1080 Ti (0)") == 28 and sm_count_of("GeForce GTX 1080 (0)") == 20
    assert sm_count_of("NVIDIA GeForce GTX 1080 Ti") == 28 and sm_count_of("geforce gtx titan x") == 24
    assert sm_count_of("GeForce GTX 1080 Ti SuperClocked (0)") is None and sm_count_of("") is None
    # NVIDIA's own ncu report of an RTX A2000 names 26 SMs (device__attribute_multiprocessor_count)
    assert sm_count_of(_raw_page(PROF / "ncu_2022.3_raw_addConstDouble.csv")["device__attribute_display_name"][1]) == \
        int(_raw_page(PROF / "ncu_2022.3_raw_addConstDouble.csv")["device__attribute_multiprocessor_count"][1])
    # every entry's SM count is its CUDA cores over the cores per SM of its compute capability
    bad = {k: v for k, v in BOARDS.items() if v[0] * CORES_PER_SM[v[2]] != v[1]}
    assert not bad, bad


# -- the stand-in profiler writes the real shapes --------------------------------------------------------

def _lines(path):
    return path.read_text().splitlines()


def test_stand_in_profiler_writes_the_transcripts_shapes(tmp_path):
    """microbench.testing.profiler_export against the real transcripts: the same header lines and quoting,
    an unquoted nvprof units row, units inside nvprof summary values in binary multiples, ncu metric rows that
    end after the value. The stand-in used to write bare numbers and a combined Duration + metrics table
    nvprof never writes, the importer's own misunderstanding."""
    import csv
    import re

    from microbench.testing import profiler_export as PE

    ks = PE.app_kernels(3, 3, 24, prefix="k")
    la = PE.profile(ks, "titanx", [(1164.0, 4005.0)], seed=3) * 2  # each kernel launched twice
    real_tr, real_mt, real_sum = (_lines(PROF / f) for f in ("nvprof_11.8_gpu_trace.csv", "nvprof_11.8_metrics_trace.csv",
                                                            "nvprof_11.8_metrics_summary.csv"))
    tr = PE.nvprof_gpu_trace_csv(la, "GeForce GTX TITAN X").splitlines()
    assert tr[3] == real_tr[1]  # the header, after the banner
    assert re.fullmatch(r"(ms|us),(ms|us),,,,,,,,B,B,,,,,", tr[4]) and re.fullmatch(r"ms,ms,,,,,,,,B,B,,,,,", real_tr[2])
    mt = PE.nvprof_metrics_trace_csv(la, "GeForce GTX TITAN X").splitlines()
    assert mt[3].startswith(real_mt[1][:real_mt[1].index('"achieved_occupancy"')])
    assert '"' not in mt[4] and mt[4].startswith(",,,,,") and real_mt[2].startswith(",,,,,")
    sm = PE.nvprof_metrics_summary_csv(la, "GeForce GTX TITAN X").splitlines()
    assert sm[4] == real_sum[2]
    rows = {r[3]: r for r in csv.reader(sm[5:])}
    assert re.fullmatch(r"\d+\.\d{6}%", rows["global_hit_rate"][7])
    assert re.fullmatch(r"\d+\.\d{6}[KMG]?B/s", rows["gld_throughput"][7])
    assert re.fullmatch(r'(Idle|Low|Mid|High|Max) \(\d+\)', rows["dram_utilization"][7])
    assert ',"dram_utilization","Device Memory Utilization","' in sm[5 + list(rows).index("dram_utilization")]
    # binary multiples: the Avg of the last kernel's gld_throughput is its bytes/s over 1024^k
    from microbench.testing.profiler_export import _counters
    b = _counters(la[2])["gld_throughput"]
    num, unit = re.fullmatch(r"([\d.]+)([KMG]?B/s)", rows["gld_throughput"][7]).groups()
    assert float(num) * {"B/s": 1, "KB/s": 2**10, "MB/s": 2**20, "GB/s": 2**30}[unit] == pytest.approx(b, rel=1e-6)
    real_det, real_raw = _lines(PROF / "ncu_2022.3_details_addConstDouble3.csv"), _lines(PROF / "ncu_2022.3_raw_addConstDouble3.csv")
    det = PE.ncu_details_csv(la).splitlines()
    assert det[0] == real_det[0]
    assert all(line.endswith('",') and len(next(csv.reader([line]))) == 13 for line in det[1:])
    assert real_det[1].endswith('",') and len(next(csv.reader([real_det[1]]))) == 13
    raw = PE.ncu_raw_csv(la, "NVIDIA GeForce GTX TITAN X").splitlines()
    n = len('"ID","Process ID","Process Name","Host Name","Kernel Name","Kernel Time","Context","Stream",')
    assert raw[0][:n] == real_raw[0][:n] and raw[1].startswith('"","","","","","","","",') and real_raw[1].startswith('"","",')
    # and what the importer makes of the summary: the stand-in's per-warp counts back
    (tmp_path / "s.csv").write_text("\n".join(sm) + "\n")
    (tmp_path / "t.csv").write_text("\n".join(tr) + "\n")
    df = _kernels(tmp_path / "s.csv", trace=tmp_path / "t.csv", core_mhz=1164, mem_mhz=4005)
    for launch in la[:3]:
        row = df.loc[launch.kernel.name + "(float*, int)"]
        assert row["n_launches"] == 1 and row["active_sms"] == min(24, launch.kernel.blocks)
        assert row["time_s"] == pytest.approx(launch.time_s, rel=1e-5)
        for cls, x in launch.kernel.per_warp.items():
            assert row[f"cnt_{cls}"] == pytest.approx(x, rel=2e-3, abs=0.02), cls
