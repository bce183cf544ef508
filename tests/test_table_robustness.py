"""Fuzz-review findings on samples tables and importers: every bad input is one ``ERROR:`` line naming
the file, the row with its file line and the column (or line and field), exit status 2, no output file.

Valid inputs: the samples table of a quick virtual campaign (``calib run``, shared fixture) and the
gpmTOOL Titan X microbenchmark file imported with ``calib import gpmtool``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from calib.core.samples import read_samples

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DATA = Path(__file__).resolve().parent / "data"
GPM_CSV = SHARED / "data" / "guerreiro-gtxtitanx" / "tpds2019_micro_named_gtxtitanx.csv"


@pytest.fixture(scope="module")
def table(quick_run) -> Path:
    """The samples table written next to the parameter file by `calib run`."""
    p = quick_run / "fitted" / "q.samples.csv"
    assert p.exists()
    return p


def _gpm_lines() -> list[str]:
    """The first 40 lines of the published gpmTOOL table (the test is skipped where ../shared is absent)."""
    if not GPM_CSV.exists():
        pytest.skip(f"{GPM_CSV} not available")
    return GPM_CSV.read_text().splitlines(keepends=True)[:40]


@pytest.fixture(scope="module")
def gpm_table(tmp_path_factory) -> Path:
    from calib.cli import main

    if not GPM_CSV.exists():
        pytest.skip(f"{GPM_CSV} not available")
    out = tmp_path_factory.mktemp("gpm") / "m.csv"
    assert main(["import", "gpmtool", str(GPM_CSV), "-o", str(out)]) == 0
    return out


def _lines(p: Path) -> list[str]:
    return p.read_text().splitlines(keepends=True)


def _set(line: str, header: str, col: str, value: str) -> str:
    f = line.rstrip("\n").split(",")
    f[header.rstrip("\n").split(",").index(col)] = value
    return ",".join(f) + "\n"


def _refused(cli, argv, out: Path, expected: str) -> None:
    """Exit 2, exactly one ERROR line equal to ``expected``, no traceback, no output file."""
    code, stdout, err = cli(*argv)
    errors = [ln for ln in err.splitlines() if ln.startswith("ERROR:")]
    assert code == 2, err
    assert errors == [f"ERROR: {expected}"], err
    assert "Traceback" not in err and "internal error" not in err and "RuntimeWarning" not in err
    assert not out.exists()


# 1. row numbers count the file's rows, not the rows left after dropping; every error has the line
def test_row_and_line_are_those_of_the_file_after_a_blank_and_a_dropped_row(cli, table, tmp_path):
    lines = _lines(table)
    hdr = lines[0]
    t = tmp_path / "t.csv"
    bad = lines[:]
    bad.insert(3, "\n")  # blank line 4 = data row 3
    bad[21] = _set(bad[21], hdr, "act_int", "bogus")  # line 22 = data row 21
    t.write_text("".join(bad))
    _refused(cli, ["fit", t, "-o", tmp_path / "x.json"], tmp_path / "x.json",
             f"{t}: row 21 (line 22), column 'act_int': 'bogus' is not a number")
    # a row dropped for missing values (all fields empty) before a range error and an inf error
    for col, value, what in (("act_int", "1.5", "activity 1.5 outside [0, 1] (activities are access rates or utilizations)"),
                             ("temp_c", "inf", "inf is not a finite number"),
                             ("core_mhz", "-inf", "-inf is not a finite number")):
        rows = lines[:]
        rows[2] = "," * (len(hdr.split(",")) - 1) + "\n"
        rows[21] = _set(rows[21], hdr, col, value)
        t.write_text("".join(rows))
        _refused(cli, ["fit", t, "-o", tmp_path / "x.json"], tmp_path / "x.json",
                 f"{t}: row 21 (line 22), column '{col}': {what}")


# 2. rows with a field count different from the header's; a file cut mid-line
def test_short_and_long_rows_and_truncated_files_are_refused(cli, table, tmp_path):
    lines = _lines(table)
    n = len(lines[0].split(","))
    t = tmp_path / "t.csv"
    short = lines[:]
    short[10] = ",".join(short[10].rstrip("\n").split(",")[:-3]) + "\n"
    t.write_text("".join(short))
    _refused(cli, ["fit", t, "-o", tmp_path / "x.json"], tmp_path / "x.json",
             f"{t}: row 10 (line 11): {n - 3} fields, expected {n} as in the header (line 1)")
    long = lines[:]
    long[5] = long[5].rstrip("\n") + ",7\n"
    t.write_text("".join(long))
    _refused(cli, ["predict", table.parent / "q.json", t, "-o", tmp_path / "o.csv"], tmp_path / "o.csv",
             f"{t}: row 5 (line 6): {n + 1} fields, expected {n} as in the header (line 1)")
    text = table.read_text()
    cut = text[:text.rindex(",", 0, len(text) - 200) + 4]  # mid-value, mid-row
    t.write_text(cut)
    got = cut.splitlines()[-1].count(",") + 1
    _refused(cli, ["fit", t, "-o", tmp_path / "x.json"], tmp_path / "x.json",
             f"{t}: row {len(lines) - 1} (line {len(lines)}): {got} fields, expected {n} as in the header (line 1); "
             "the file ends mid-line (truncated?)")
    # a missing final newline alone is fine
    t.write_text(text.rstrip("\n"))
    assert len(read_samples(t)) == len(read_samples(table)) == len(lines) - 1


def test_dcgm_truncated_last_line_is_refused(cli, tmp_path):
    d = tmp_path / "d.txt"
    out = tmp_path / "o.csv"
    text = (DATA / "import_dcgm_dmon.txt").read_text()
    d.write_text(text[:-3])  # "...1215     5": MMCLK present, TMPTR cut
    _refused(cli, ["import", "dcgm", d, "-o", out], out,
             f"{d}: line 9: 10 values after the entity 'GPU 0', expected 11 (SMACT SMOCC TENSO DRAMA FP64A FP32A "
             "FP16A POWER SMCLK MMCLK TMPTR); the file ends mid-line (truncated?)")
    c = tmp_path / "d.csv"
    csv_text = (DATA / "import_dcgm.csv").read_text()
    c.write_text(csv_text[:-5])  # "gemm,...,1410," : MMCLK cut off
    _refused(cli, ["import", "dcgm", c, "-o", out], out,
             f"{c}: line 4, field MMCLK: no value; every sample needs its clocks (they group the samples); "
             "the file ends mid-line (truncated?)")
    c.write_text(csv_text.rstrip("\n"))  # no final newline alone: fine
    code, _, err = cli("import", "dcgm", c, "-o", out)
    assert code == 0, err


# 3. gpmTOOL header line 3 with non-integers that float() accepts
@pytest.mark.parametrize("line3", ["3,nan", "inf", "1e400"])
def test_gpmtool_component_counts_nan_inf_are_refused(cli, tmp_path, line3):
    lines = _gpm_lines()
    g = tmp_path / "g.csv"
    g.write_text("".join(lines[:2] + [line3 + "\n"] + lines[3:]))
    bad = line3.split(",")[-1]
    _refused(cli, ["import", "gpmtool", g, "-o", tmp_path / "o.csv"], tmp_path / "o.csv",
             f"{g}: line 3 (components per domain): {bad!r} is not a non-negative integer")


# 4. clock columns > 0 and finite, the reference clocks too
@pytest.mark.parametrize("col,value,shown", [("ref_core_mhz", "0", "0"), ("ref_mem_mhz", "-3505", "-3505"),
                                             ("core_mhz", "0", "0"), ("mem_mhz", "-1", "-1")])
def test_clock_columns_must_be_positive(cli, gpm_table, table, tmp_path, col, value, shown):
    lines = _lines(gpm_table)[:300]
    lines[7] = _set(lines[7], lines[0], col, value)
    t = tmp_path / "t.csv"
    t.write_text("".join(lines))
    msg = f"{t}: row 7 (line 8), column '{col}': {shown} is not a valid value (a clock must be > 0 and at most 1e5 MHz)"
    _refused(cli, ["fit", t, "-o", tmp_path / "x.json"], tmp_path / "x.json", msg)
    _refused(cli, ["predict", table.parent / "q.json", t, "-o", tmp_path / "o.csv"], tmp_path / "o.csv", msg)


def test_reference_clock_inf_is_refused(cli, gpm_table, tmp_path):
    lines = _lines(gpm_table)[:300]
    lines[1] = _set(lines[1], lines[0], "ref_core_mhz", "inf")
    t = tmp_path / "t.csv"
    t.write_text("".join(lines))
    _refused(cli, ["fit", t, "-o", tmp_path / "x.json"], tmp_path / "x.json",
             f"{t}: row 1 (line 2), column 'ref_core_mhz': inf is not a finite number")


# 5. ncu percentages outside [0, 100] %
@pytest.mark.parametrize("value,message", [
    ("-1.00", "-1 % outside [0, 100] % (a utilization; up to 105 % is taken as profiler overshoot)"),
    ("1e400", "'1e400' is not a finite number"),
    ("106.00", "106 % outside [0, 100] % (a utilization; up to 105 % is taken as profiler overshoot)"),
])
def test_ncu_percentages_outside_0_100_are_refused(cli, tmp_path, value, message):
    n = tmp_path / "n.csv"
    n.write_text((DATA / "import_ncu.csv").read_text().replace('"80.00"', f'"{value}"'))
    _refused(cli, ["import", "ncu", n, "-o", tmp_path / "o.csv"], tmp_path / "o.csv",
             f"{n}: line 2, metric dram__throughput.avg.pct_of_peak_sustained_elapsed: {message}")


def test_ncu_slight_overshoot_is_clipped_with_a_warning(cli, tmp_path):
    n = tmp_path / "n.csv"
    n.write_text((DATA / "import_ncu.csv").read_text().replace('"80.00"', '"104.00"'))
    code, _, err = cli("import", "ncu", n, "-o", tmp_path / "o.csv")
    assert code == 0, err
    assert (f"WARNING: {n}: 1 value(s) above 100 % (at most 105 %) clipped to 100 % (profiler overshoot; first: "
            "line 2, metric dram__throughput.avg.pct_of_peak_sustained_elapsed: 104 %)") in err
    df = read_samples(tmp_path / "o.csv", require_power=False)
    # vecadd: launches at 104 % (clipped to 100 %) and 70 %
    assert df.set_index("workload").loc["vecadd", "act_dram"] == pytest.approx(0.85, abs=1e-12)


def test_nvprof_level_above_10_is_refused(cli, tmp_path):
    n = tmp_path / "n.csv"
    lines = (DATA / "import_nvprof.csv").read_text().splitlines(keepends=True)
    lines[5] = lines[5].replace('"Low (2)"\n', '"Max (12)"\n')
    n.write_text("".join(lines))
    _refused(cli, ["import", "nvprof", n, "-o", tmp_path / "o.csv"], tmp_path / "o.csv",
             f"{n}: line 6, metric single_precision_fu_utilization: 'Max (12)': utilization level 12 outside 0 .. 10")


# 6. an unnamed column is named by its position
def test_unnamed_column_is_named_by_position(cli, table, tmp_path):
    lines = _lines(table)
    n = len(lines[0].split(","))
    t = tmp_path / "t.csv"
    t.write_text(lines[0].rstrip("\n") + ",\n" + "".join(ln.rstrip("\n") + ",5\n" for ln in lines[1:]))
    _refused(cli, ["fit", t, "-o", tmp_path / "x.json"], tmp_path / "x.json",
             f"{t}: line 1: column {n + 1} has no name (empty header field)")


# 7. a table read from a pipe is read once
def test_piped_table_fits_like_the_file(table, tmp_path):
    py = sys.executable
    out_pipe, out_file = tmp_path / "pipe.json", tmp_path / "file.json"
    # a real pipe (input=): reopening /dev/stdin of a redirected regular file would start over at byte 0
    r = subprocess.run([py, "-m", "calib", "fit", "/dev/stdin", "-o", str(out_pipe)], input=table.read_bytes(),
                       capture_output=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr.decode()
    r2 = subprocess.run([py, "-m", "calib", "fit", str(table), "-o", str(out_file)], capture_output=True, text=True,
                        cwd=ROOT, timeout=120)
    assert r2.returncode == 0, r2.stderr
    a, b = json.loads(out_pipe.read_text()), json.loads(out_file.read_text())
    assert a["power"] == b["power"] and a["fit"] == b["fit"]


def test_read_samples_records_the_sha256_of_the_bytes_read(table):
    import hashlib

    assert read_samples(table).attrs["sha256"] == hashlib.sha256(table.read_bytes()).hexdigest()


# 8. power_w must be > 0 (contract: measured mean board power)
@pytest.mark.parametrize("value", ["0", "-12.5"])
def test_non_positive_power_is_refused(cli, table, tmp_path, value):
    lines = _lines(table)
    t = tmp_path / "t.csv"
    t.write_text(lines[0] + "".join(_set(ln, lines[0], "power_w", value) for ln in lines[1:]))
    _refused(cli, ["fit", t, "-o", tmp_path / "x.json"], tmp_path / "x.json",
             f"{t}: row 1 (line 2), column 'power_w': {float(value):g} is not a valid value "
             "(power_w must be > 0 and at most 1e5 W)")


# 9. gpmTOOL header with an empty component name
def test_gpmtool_empty_component_name_is_named(cli, tmp_path):
    lines = _gpm_lines()
    lines[3] = lines[3].replace("INT,", ",")
    g = tmp_path / "g.csv"
    g.write_text("".join(lines))
    _refused(cli, ["import", "gpmtool", g, "-o", tmp_path / "o.csv"], tmp_path / "o.csv",
             f"{g}: line 4: component name 2 of 8 is empty")


def test_gpmtool_default_clock_nan_is_refused(cli, tmp_path):
    lines = _gpm_lines()
    lines[1] = "975,nan\n"
    g = tmp_path / "g.csv"
    g.write_text("".join(lines))
    _refused(cli, ["import", "gpmtool", g, "-o", tmp_path / "o.csv"], tmp_path / "o.csv",
             f"{g}: line 2: expected 2 positive default clock(s) in MHz (finite), got '975,nan'")


@pytest.mark.parametrize("text,message", [
    ("workload,power_w,act_x\n\n", "no data rows (only a header)"),
    ('workload,power_w,act_x\n"a,100,0.5\nb,90,0.5\n',
     'row 1 (line 2): 1 fields, expected 3 as in the header (line 1); a quoted field spans lines (unbalanced " quote?)'),
    ("\nworkload,power_w,act_x\na,100,0.5\n\nb,90,1.5\n",
     "row 3 (line 5), column 'act_x': activity 1.5 outside [0, 1] (activities are access rates or utilizations)"),
])
def test_header_only_unbalanced_quote_and_leading_blank_lines(tmp_path, text, message):
    from calib.core.errors import BadInputError

    t = tmp_path / "t.csv"
    t.write_text(text)
    with pytest.raises(BadInputError) as e:
        read_samples(t)
    assert str(e.value) == f"{t}: {message}"


@pytest.mark.parametrize("old,new,message", [
    ('"lts__t_sector_hit_rate.pct","%","80"', '"lts__t_sector_hit_rate.pct","%","-1"',
     "line 13, metric lts__t_sector_hit_rate.pct: -1 is negative"),
    ('"lts__t_sector_hit_rate.pct","%","80"', '"lts__t_sector_hit_rate.pct","%","1e400"',
     "line 13, metric lts__t_sector_hit_rate.pct: '1e400' is not a finite number"),
    ('"l1tex__t_sector_hit_rate.pct","%","50"', '"l1tex__t_sector_hit_rate.pct","%","150"',
     "line 12, metric l1tex__t_sector_hit_rate.pct: 150 % outside [0, 100] % (up to 105 % is taken as profiler "
     "overshoot)"),
])
def test_kernel_profile_hit_rates_and_counts_are_range_checked(tmp_path, capsys, old, new, message):
    """The kernel-description importer (calib optimize) refused to clamp broken percentages silently."""
    import importlib.util

    from calib.importers.ncu_kernel import main

    spec = importlib.util.spec_from_file_location("_ncu_kernel_tests", Path(__file__).with_name("test_timing_ncu_kernel.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    NCU = mod.NCU  # the valid ncu export of the kernel-description tests

    f = tmp_path / "ncu.csv"
    assert old in NCU
    f.write_text(NCU.replace(old, new))
    assert main([str(f), "-o", str(tmp_path / "k.json")]) == 2
    err = capsys.readouterr().err  # loading the other test module may print pytest's own warnings first
    assert [ln for ln in err.splitlines() if ln.startswith("ERROR")] == [f"ERROR: {f}: {message}"]
    assert not (tmp_path / "k.json").exists()
