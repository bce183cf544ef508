"""Samples tables: contract columns, refusal of malformed tables with row and column named."""

from __future__ import annotations

import pandas as pd
import pytest

from calib.core.errors import BadInputError
from calib.core.samples import read_samples, table_info, write_samples


def _write(tmp_path, text, name="t.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_reads_contract_table(tmp_path):
    p = _write(tmp_path, "workload,power_w,core_mhz,mem_mhz,act_SP,act_DRAM,temp_c\n"
                         "a,100,1000,3500,0.5,0.1,60\nb,120,900,3500,0.7,0.2,61\n")
    df = read_samples(p)
    assert list(df["power_w"]) == [100.0, 120.0]
    info = table_info(df)
    assert info.units == ("SP", "DRAM") and info.multi_clock


def test_contract_check_malformed_table(tmp_path):
    # the exact table of ../shared/tools/contract-check
    p = _write(tmp_path, "workload,power_w,core_mhz,act_x\na,100,1000,0.5\nb,,1000,oops\n")
    with pytest.raises(BadInputError, match=r"row 2 \(line 3\), column 'act_x': 'oops' is not a number"):
        read_samples(p)


@pytest.mark.parametrize("text,msg", [
    ("workload,core_mhz,act_x\na,1000,0.5\n", "required column 'power_w' missing"),
    ("workload,power_w,act_x,colour\na,1,0.5,red\n", "unknown column 'colour'"),
    ("workload,power_w,act_x\na,100,1.5\n", r"row 1 \(line 2\), column 'act_x': activity 1.5 outside \[0, 1\]"),
    ("workload,power_w,act_x\na,100,-0.1\n", r"row 1 \(line 2\), column 'act_x': activity -0.1 outside \[0, 1\]"),
    ("workload,power_w,act_x,act_x\na,1,0.5,0.5\n", "column 'act_x' appears more than once"),
    ("power_w,act_x\n1,0.5\n", "required column 'workload' missing"),
    ("workload,power_w\na,1\n", r"no activity columns"),
    ("workload,power_w,act_x\na,-5,0.5\n", r"row 1 \(line 2\), column 'power_w': -5 is not a valid value"),
    ("", "empty file"),
])
def test_malformed_tables_are_refused(tmp_path, text, msg):
    with pytest.raises(BadInputError, match=msg):
        read_samples(_write(tmp_path, text))


def test_rows_with_missing_values_are_dropped_with_a_count(tmp_path):
    p = _write(tmp_path, "workload,power_w,act_x\na,100,0.5\nb,NaN,0.2\nc,,0.3\nd,90,0.1\n")
    with pytest.warns(UserWarning, match="dropped 2 of 4 rows with missing values"):
        df = read_samples(p)
    assert list(df["workload"]) == ["a", "d"]


def test_all_nan_rows_is_an_error(tmp_path):
    p = _write(tmp_path, "workload,power_w,act_x\na,NaN,NaN\nb,NaN,0.1\n")
    with pytest.warns(UserWarning), pytest.raises(BadInputError, match="no usable rows"):
        read_samples(p)


def test_write_then_read_round_trip(tmp_path):
    df = pd.DataFrame({"workload": ["a", "b"], "power_w": [100.123456789, 90.0], "act_fp": [0.25, 1.0]})
    write_samples(df, tmp_path / "o.csv")
    back = read_samples(tmp_path / "o.csv")
    assert back["power_w"].tolist() == pytest.approx([100.123456789, 90.0], rel=1e-12)
