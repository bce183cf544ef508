"""Session directories: append-only, flushed streams; partial lines; resume segments; bad input."""

from __future__ import annotations

import json

import pytest

from calib.core.errors import BadInputError
from calib.core.session import SessionWriter, read_manifest, read_session, read_stream_csv, repair_partial_lines

MAN = {"device": {"name": "x", "sm_count": 1}, "sensors": [{"name": "s", "kind": "nvml", "columns": ["power_w"]}]}


def _clock():
    t = [0.0]

    def c():
        t[0] += 1.0
        return t[0], 1e9 + t[0]
    return c


def test_rows_are_on_disk_after_each_append(tmp_path):
    w = SessionWriter.create(tmp_path / "s1", MAN, clock=_clock())
    st = w.stream("s", ["power_w"])
    st.append(1.0, 1e9 + 1, {"power_w": 100.5})
    # not closed: the row must already be readable by another reader
    text = (tmp_path / "s1" / "s.csv").read_text()
    assert text == "t_mono_s,t_wall_s,segment,power_w\n1.0,1000000001.0,0,100.5\n"
    w.mark("measure_start", "k", 0, kernel_time_s=0.5)
    m = read_session(tmp_path / "s1").markers()
    assert list(m["event"]) == ["measure_start"] and m["info"][0] == {"kernel_time_s": 0.5}
    w.close()


def test_create_refuses_existing_session(tmp_path):
    SessionWriter.create(tmp_path / "s", MAN).close()
    with pytest.raises(BadInputError, match="a session already exists here"):
        SessionWriter.create(tmp_path / "s", MAN)


def test_partial_last_line_is_dropped_by_reader_and_repaired_on_resume(tmp_path):
    w = SessionWriter.create(tmp_path / "s", MAN, clock=_clock())
    st = w.stream("s", ["power_w"])
    for i in range(3):
        st.append(float(i), 1e9 + i, {"power_w": 10.0 + i})
    w.close()
    p = tmp_path / "s" / "s.csv"
    with open(p, "a") as fh:
        fh.write("3.0,1000000003.0,0,1")  # killed mid-line
    df, dropped = read_stream_csv(p)
    assert len(df) == 3 and dropped == 1
    with pytest.warns(UserWarning, match="dropped a partial last line"):
        w2 = SessionWriter.resume(tmp_path / "s", clock=_clock())
    w2.stream("s", ["power_w"]).append(5.0, 1e9 + 5, {"power_w": 20.0})
    w2.close()
    df, dropped = read_stream_csv(p)
    assert dropped == 0
    assert list(df["segment"]) == [0, 0, 0, 1]
    assert list(df["power_w"]) == [10.0, 11.0, 12.0, 20.0]
    man = read_manifest(tmp_path / "s")
    assert [s["segment"] for s in man["segments"]] == [0, 1]


def test_repair_partial_lines_counts_bytes(tmp_path):
    p = tmp_path / "a.csv"
    p.write_bytes(b"h\n1\n2")
    assert repair_partial_lines(p) == 1
    assert p.read_bytes() == b"h\n1\n"
    assert repair_partial_lines(p) == 0


def test_stream_with_other_header_is_refused(tmp_path):
    w = SessionWriter.create(tmp_path / "s", MAN)
    w.stream("s", ["power_w"]).append(0, 0, {"power_w": 1})
    w.close()
    w2 = SessionWriter.resume(tmp_path / "s")
    with pytest.raises(BadInputError, match="differs from the sensor's columns"):
        w2.stream("s", ["power_w", "temp_c"])


def test_malformed_line_in_the_middle_names_file_and_line(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("t_mono_s,t_wall_s,segment,power_w\n0,0,0,1\n1,1,0\n2,2,0,3\n")
    with pytest.raises(BadInputError, match=r"x\.csv: line 3: 3 fields, header has 4"):
        read_stream_csv(p)
    p.write_text("t_mono_s,t_wall_s,segment,power_w\n0,0,0,abc\n")
    with pytest.raises(BadInputError, match=r"line 2, column 'power_w': 'abc' is not a number"):
        read_stream_csv(p)


def test_manifest_problems_are_named(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(BadInputError, match="manifest missing"):
        read_session(tmp_path / "empty")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "manifest.json").write_text("{not json")
    with pytest.raises(BadInputError, match="manifest.json: not valid JSON"):
        read_session(bad)
    (bad / "manifest.json").write_text(json.dumps({"session_format": 1, "device": {}}))
    with pytest.raises(BadInputError, match="required field 'sensors' missing"):
        read_session(bad)
