"""Framers and frame parsers without a port: arbitrary chunking, garbage, truncation."""

from __future__ import annotations

import pytest

from microbench.instruments.base import FrameError, InstrumentErrorReply, TextFramer
from microbench.instruments.csvline import CsvLineSource
from microbench.instruments.hioki import HiokiPW3335
from microbench.instruments.powersensor3 import PS3Framer, encode_frame, encode_word
from microbench.instruments.wattsup import WattsUpPro
from microbench.instruments.yokogawa import YokogawaWT310


def _feed_bytewise(framer, data, t=0.0):
    out = []
    for b in data:
        out += framer.feed(bytes((b,)), t)
    return out


def test_text_framer_any_chunking_gives_same_frames():
    data = b"1.0,2.0\r\n3.0,4.0\r\n5.0,"
    whole = TextFramer(b"\n").feed(data, 0.0)
    bytewise = _feed_bytewise(TextFramer(b"\n"), data)
    assert whole == bytewise == [(b"1.0,2.0", False), (b"3.0,4.0", False)]


def test_text_framer_cuts_line_noise_and_flags_loss():
    fr = TextFramer(b"\n")
    out = fr.feed(b"1.0\r\n\x00\xff\x13zz\x812.0\r\n", 0.0)
    assert out == [(b"1.0", False), (b"2.0", True)]
    assert fr.discarded == 6


def test_text_framer_drops_stale_partial():
    fr = TextFramer(b"\n", stale_s=0.02)
    assert fr.feed(b"12.5", 0.0) == []
    assert fr.feed(b"", 0.01) == []  # not stale yet
    assert fr.feed(b"13.0\n", 0.05) == [(b"13.0", True)]
    assert fr.truncated == 1


def test_start_byte_framer_abandons_cut_record():
    fr = TextFramer(b";", start=b"#")
    out = fr.feed(b"junk#d,-,3,1#d,-,3,1,2,3;\r\n#d,-,3,4,5,6;", 0.0)
    assert out == [(b"#d,-,3,1,2,3", True), (b"#d,-,3,4,5,6", False)]
    assert fr.truncated == 1 and fr.discarded == 4 + 8  # junk + the cut record


def test_ps3_framer_resyncs_by_dropping_bytes():
    f1 = encode_frame(100, [512, 1, 2, 3, 4, 5, 6, 7])
    f2 = encode_frame(400, [600, 9, 2, 3, 4, 5, 6, 7], marker=True)
    f3 = encode_frame(700, [512, 10, 2, 3, 4, 5, 6, 7])
    fr = PS3Framer()
    data = f1 + b"\x00\x13" + f2[:7] + f3
    out = _feed_bytewise(fr, data)
    assert [o[0][0] for o in out] == [100, 700 % 1024]
    assert out[0][0][1] == [512, 1, 2, 3, 4, 5, 6, 7] and out[1][1] is True
    assert fr.truncated == 1
    fr2 = PS3Framer()
    (frame, lost), = fr2.feed(f2, 0.0)
    assert frame == (400, [600, 9, 2, 3, 4, 5, 6, 7], True) and not lost


def test_ps3_stop_sentinel_pair_is_one_stop():
    fr = PS3Framer()
    out = fr.feed(encode_frame(1, [0] * 8) + b"\xff\x3f\xff\x3f", 0.0)
    assert len(out) == 1 and fr.stops == 1  # the device sends the sentinel twice per stop
    # a sentinel cuts a frame short: that frame is dropped, the stop still counted
    fr2 = PS3Framer()
    out = fr2.feed(encode_frame(1, [0] * 8)[:8] + b"\xff\x3f\xff\x3f" + encode_frame(2, [5] * 8), 0.0)
    assert [o[0][0] for o in out] == [2] and fr2.stops == 1 and fr2.truncated == 1


def test_ps3_word_encoding_bits():
    assert encode_word(7, 1023, 1) == b"\xff\x7f"
    assert encode_word(0, 0, 0) == b"\x80\x00"
    with pytest.raises(ValueError):
        encode_word(0, 1024)


def _bare(cls, **kw):
    return cls("/dev/null", **kw)  # not started: parse() needs no port


def test_wattsup_record_checks():
    w = _bare(WattsUpPro)
    rec = b"#d,-,18,1234,1201,8333," + b",".join([b"0"] * 15)
    assert w.parse(rec) == {"power_w": 123.4, "voltage_v": 120.1, "current_a": 8.333}
    with pytest.raises(FrameError, match="declares 18 fields but has 17"):
        w.parse(rec.rsplit(b",", 1)[0])
    with pytest.raises(FrameError, match="not a data record"):
        w.parse(b"#h,-,18,W,V")
    with pytest.raises(FrameError, match=r"field 1 'x12' is not a number"):
        w.parse(b"#d,-,3,x12,1,2")


def test_wt_parse_values_and_error_codes():
    wt = _bare(YokogawaWT310)
    want = {"power_w": 115.0, "voltage_v": 230.0, "current_a": 0.5}
    assert wt.parse(b"2.3000E+02,5.0000E-01,1.1500E+02;1") == want  # with the update sync's EESR value
    assert wt.parse(b"1;2.3000E+02,5.0000E-01,1.1500E+02") == want  # (yoko-tool's order)
    assert wt.parse(b"2.3000E+02,5.0000E-01,1.1500E+02") == want
    with pytest.raises(InstrumentErrorReply, match="no data \\(NAN\\)"):
        wt.parse(b"0;9.91E+37,9.91E+37,9.91E+37")
    with pytest.raises(InstrumentErrorReply, match="over-range \\(INF\\)"):
        wt.parse(b"2.3E+02,9.9E+37,1.0E+02")
    with pytest.raises(InstrumentErrorReply, match="negative over-range \\(-INF\\)") as e:
        wt.parse(b"0;2.3E+02,-9.9E+37,-1.0E+02")
    assert e.value.kind == "negative over-range (-INF)"
    with pytest.raises(FrameError, match="expected 3 values"):
        wt.parse(b"2.3E+02,1.0E+02")
    with pytest.raises(ValueError, match="update_rate '7MS' not one of 50MS, 100MS"):
        YokogawaWT310("/dev/null", update_rate="7MS")
    with pytest.raises(ValueError, match="update_rate 'fast': give one of 50MS, 100MS"):
        YokogawaWT310("/dev/null", update_rate="fast")
    for rate in ("10S", "20S"):  # offered by no working tool and refused by most meters
        with pytest.raises(ValueError, match=rf"update_rate '{rate}' not one of 50MS, 100MS, 250MS, 500MS, 1S, 2S, "
                                             r"5S \(10S and 20S are not offered"):
            YokogawaWT310("/dev/null", update_rate=rate)


def test_hioki_replies_with_either_separator_headers_and_codes():
    h = _bare(HiokiPW3335)
    want = {"power_w": 100.05, "voltage_v": 230.0, "current_a": 0.43500}
    # as two working scripts show it (headers on, ';'), as a manual page shows it (','), with a code
    for reply in (b"U +230.00E+0;I +435.00E-3;P +100.05E+0", b"+230.00E+0;+435.00E-3;+100.05E+0",
                  b"+230.00E+0,+435.00E-3,+100.05E+0", b"+230.00E+0,+435.00E-3,+100.05E+0;000",
                  b"U +230.00E+0;I +435.00E-3;P +100.05E+0;000"):
        assert h.parse(reply) == pytest.approx(want), reply
    assert h.observed["separator"] == ";"
    h.parse(b"+230.00E+0,+435.00E-3,+100.05E+0")
    assert h.observed["separator"] == ","
    with pytest.raises(InstrumentErrorReply, match="error code '003'"):
        h.parse(b"003")
    with pytest.raises(InstrumentErrorReply, match="error code '101'"):
        h.parse(b"+230.00E+0,+5.0000E-01,+1.1500E+2;101")
    with pytest.raises(FrameError, match="item header 'P' where 'I' was expected"):
        h.parse(b"U +230.00E+0;P +435.00E-3;I +100.05E+0")
    with pytest.raises(FrameError, match=r"expected 3 items \(U,I,P\), got 2"):
        h.parse(b"+230.00E+0;+435.00E-3")


@pytest.mark.parametrize("value,kind", [("+999.99E+9", "over-range"), ("-999.99E+9", "over-range"),
                                        ("+888.88E+9", "scaling error"), ("-777.77E+9", "no data")])
def test_hioki_error_values_are_not_readings(value, kind):
    h = _bare(HiokiPW3335)
    with pytest.raises(InstrumentErrorReply, match=f"hioki: P = {value[0]}[0-9.e+]+, the meter's {kind} error value") as e:
        h.parse(f"U +230.00E+0;I +435.00E-3;P {value}".encode())
    assert e.value.kind == kind
    assert h.parse(b"U +230.00E+0;I +435.00E-3;P +999.98E+0")["power_w"] == 999.98  # a big reading is a reading


def test_csv_source_checks():
    c = _bare(CsvLineSource, columns=("power_w", "voltage_v"))
    assert c.columns == ("power_w", "voltage_v", "resync")
    assert c.parse(b"12.5,11.9") == {"power_w": 12.5, "voltage_v": 11.9}
    with pytest.raises(InstrumentErrorReply):
        c.parse(b"ERROR overload")
    with pytest.raises(FrameError, match="expected 2 fields, got 1"):
        c.parse(b"power_w")
    with pytest.raises(ValueError, match="csv column name 'Power W' is invalid"):
        CsvLineSource("/dev/null", columns=("Power W",))
    with pytest.raises(ValueError, match="csv column name 'segment' is invalid"):
        CsvLineSource("/dev/null", columns=("segment",))
