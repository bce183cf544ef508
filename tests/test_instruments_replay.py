"""Replay tests: each instrument's documented command/reply transcript against its driver, without a pty.

Each transcript is what the instrument's manual, its maker's host code or a working third-party logger
shows (sources in ``shared/reference/instrument-protocol-facts.md``); the replay fails if the driver
writes anything else, in another order, or stops short. Also: the declared command tables, and the
wire trace at DEBUG.
"""

from __future__ import annotations

import logging
import re
import struct

import pytest

from microbench.instruments import PROTOCOLS, InstrumentError
from microbench.instruments.base import Command
from microbench.testing.replay import ReplayPort, replay

OK = b'0,"No error"\r\n'


def _wt_setting(cmd: bytes) -> list:
    return [(cmd + b"\r\n", None), (b":STAT:ERR?\r\n", OK)]


# -- Yokogawa WT310 (yoko-tool _yokobase.py / _wt310.py) -----------------------------------------
WT310 = [
    (b"*CLS\r\n", None), (b"*CLS\r\n", None), (b":COMM:REM ON\r\n", None),
    (b"*IDN?\r\n", b"YOKOGAWA,WT310,C2QE12345,F1.03\r\n"), (b":STAT:ERR?\r\n", OK),
    *_wt_setting(b":SYST:COMM:COMM WT300"), *_wt_setting(b":COMM:HEAD OFF"), *_wt_setting(b":NUM:FORM ASCII"),
    *_wt_setting(b":NUM:NORM:NUM 3"), *_wt_setting(b":NUM:NORM:ITEM1 U,1"), *_wt_setting(b":NUM:NORM:ITEM2 I,1"),
    *_wt_setting(b":NUM:NORM:ITEM3 P,1"), *_wt_setting(b":RATE 100MS"), *_wt_setting(b":INP:VOLT:AUTO OFF"),
    *_wt_setting(b":INP:VOLT:RANG 300V"), *_wt_setting(b":INP:CURR:AUTO OFF"), *_wt_setting(b":INP:CURR:RANG 5A"),
    *_wt_setting(b":STAT:FILT1 FALL"),
    (b":COMM:WAIT 1;:NUM:NORM:VAL?;:STAT:EESR?\r\n", b"1.1014E+02,1.2345E+00,1.3596E+02;1\r\n"),
    (b":COMM:WAIT 1;:NUM:NORM:VAL?;:STAT:EESR?\r\n", b"9.91E+37,9.91E+37,9.91E+37;1\r\n"),
    (b"*CLS\r\n", None), (b":COMM:REM OFF\r\n", None),
]

# -- Yokogawa WT210 (yoko-tool _wt210.py: :CONF/:MEAS tree, :SAMP:RATE in bare seconds) -------------
_WT210_HEAD = [
    (b"*CLS\r\n", None), (b"*CLS\r\n", None), (b":COMM:REM ON\r\n", None),
    (b"*IDN?\r\n", b"YOKOGAWA,WT210,91H123456,F3.01\r\n"), (b":STAT:ERR?\r\n", OK),
    *_wt_setting(b":COMM:HEAD OFF"), *_wt_setting(b":MEAS:NORM:ITEM:PRES CLE"),
    *_wt_setting(b":MEAS:NORM:ITEM:V:ELEM1 ON"), *_wt_setting(b":MEAS:NORM:ITEM:A:ELEM1 ON"),
    *_wt_setting(b":MEAS:NORM:ITEM:W:ELEM1 ON"),
]
_WT210_TAIL = [
    *_wt_setting(b":CONF:VOLT:AUTO OFF"), *_wt_setting(b":CONF:VOLT:RANG 300V"), *_wt_setting(b":CONF:CURR:AUTO OFF"),
    *_wt_setting(b":CONF:CURR:RANG 5A"), *_wt_setting(b":STAT:FILT1 FALL"),
    (b":COMM:WAIT 1;:MEAS:NORM:VAL?;:STAT:EESR?\r\n", b"2.3012E+02,4.3480E-01,1.0005E+02;1\r\n"),
    (b"*CLS\r\n", None), (b":COMM:REM OFF\r\n", None),
]
WT210 = _WT210_HEAD + _wt_setting(b":SAMP:RATE 0.25") + _WT210_TAIL
WT210_SUFFIX = _WT210_HEAD + [(b":SAMP:RATE 0.25\r\n", None), (b":STAT:ERR?\r\n", b'-224,"Illegal parameter value"\r\n'),
                              *_wt_setting(b":SAMP:RATE 250MS")] + _WT210_TAIL

# -- HIOKI PW3335 (manual p. 68; GX20_PW3335.py): no confirmation codes, ';' between items ----------
_ERR0 = [(b":ERR?\r\n", b"0\r\n")]
HIOKI_PW3335 = [
    (b"\r\n", None), (b":RS232:ANSW ON\r\n", None), (b":HEAD OFF\r\n", None),
    (b"*IDN?\r\n", b"HIOKI,PW3335,123456789,V1.00\r\n"), *_ERR0,
    (b":VOLT:AUTO OFF\r\n", None), *_ERR0, (b":VOLT:RANG 300\r\n", None), *_ERR0,
    (b":CURR:AUTO OFF\r\n", None), *_ERR0, (b":CURR:RANG 5\r\n", None), *_ERR0,
    (b":MEAS? U,I,P\r\n", b"U +110.14E+0;I +0.0000E+0;P +000.00E+0\r\n"),  # as GX20_PW3335.py shows it
    (b":MEAS? U,I,P\r\n", b"+230.05E+0;+1.2345E+0;+283.99E+0\r\n"),
    (b":MEAS? U,I,P\r\n", b"+999.99E+9;+1.2345E+0;+999.99E+9\r\n"),  # over-range (manual p. 68)
]

# -- HIOKI 3334 / PW3336 (hioki3334 scripts): confirmation codes on, ',' between items ---------------
_C = b"000\r\n"
HIOKI_CODES = [
    (b"\r\n", None), (b":RS232:ANSW ON\r\n", _C), (b":HEAD OFF\r\n", _C),
    (b"*IDN?\r\n", b"HIOKI,PW3336,123456789,V1.00;000\r\n"),
    (b":VOLT:AUTO OFF\r\n", _C), (b":VOLT:RANG 300\r\n", _C), (b":CURR:AUTO OFF\r\n", _C), (b":CURR:RANG 5\r\n", _C),
    (b":MEAS? U,I,P\r\n", b"+110.14E+0,+1.0000E+0,+110.14E+0;000\r\n"),
]

# -- Watts up? PRO (Watts-Up--logger wattsup.py and samples/*.raw; wattsup.c) --------------------
WATTSUP = [
    (b"#L,W,3,E,,1;", b"#d,-,18,453,1200,384,0,0,0,0,0,0,0,0,0,0,0,0,0,600,505;\r\n"),  # 45.3 W, 120.0 V, 0.384 A
    (b"#L,R,0;", None),
]


# -- PowerSensor3 (PowerSensor.ino, PowerSensor.cc, sensors.cc at c5017f9) --------------------------
def _record(kind: bytes, pair: bytes, vref: float, sens: float, in_use: int) -> bytes:
    return struct.pack("<16s16sffB", kind, pair, vref, sens, in_use)  # 41 bytes, packed, little-endian


RECORDS = [_record(b"MLX10", b"PCIe 8-pin", 1.636, 0.12, 1), _record(b"voltage", b"PCIe 8-pin", 0.0, 0.091, 1),
           _record(b"MLX20", b"ATX 12V", 1.62247, 0.0625, 1), _record(b"voltage", b"ATX 12V", 0.0, 0.091, 1)] + \
          [_record(b"MLX10", b"", 1.65, 0.12, 0), _record(b"voltage", b"", 0.0, 0.091, 0)] * 2


def _word(sensor: int, level: int, marker: int = 0) -> bytes:
    return bytes((0x80 | sensor << 4 | level >> 6, marker << 6 | level & 0x3F))  # 1iiiaaaa 0mbbbbbb


def _frame(t_us: int, levels: list[int]) -> bytes:
    return _word(7, t_us & 0x3FF, 1) + b"".join(_word(i, lv) for i, lv in enumerate(levels))


LEVELS = [731, 338, 697, 333, 412, 990, 5, 700]  # pairs 2 and 3 unwired: floating levels
PS3 = [(b"X", b"\xff\x3f\xff\x3f", 0.1), (b"R", RECORDS[0]), *[(b"s", r) for r in RECORDS[1:]], (b"s", b"D"),
       (b"S", _frame(1000, LEVELS) + _frame(1500, LEVELS) + _frame(2048 + 10, LEVELS)), (b"X", None)]


def _value(level: int, vref: float, sens: float) -> float:
    return (3.3 * level / 1023 - vref) / sens


# ------------------------------------------------------------------------------------------------

def test_wt310_transcript():
    drv, rows = replay("wt310", WT310, steps=2)
    assert [r.values["power_w"] for r in rows] == [135.96]  # the NAN reply is counted, not logged
    assert rows[0].values["voltage_v"] == 110.14 and rows[0].values["current_a"] == 1.2345
    assert drv.stats.error_values == {"no data (NAN)": 1}
    assert drv.identity == "YOKOGAWA,WT310,C2QE12345,F1.03"


@pytest.mark.parametrize("transcript,form", [(WT210, "seconds"), (WT210_SUFFIX, "suffix")])
def test_wt210_transcript(transcript, form):
    drv, rows = replay("wt210", transcript, steps=1, update_rate="250MS")
    assert rows[0].values == {"power_w": 100.05, "voltage_v": 230.12, "current_a": 0.4348, "resync": 0,
                              "latency_s": rows[0].values["latency_s"]}
    assert drv.observed == {"rate_format": form}


def test_hioki_pw3335_transcript():
    drv, rows = replay("hioki", HIOKI_PW3335, steps=3, confirm_timeout_s=0.1)
    assert [(r.values["voltage_v"], r.values["current_a"], r.values["power_w"]) for r in rows] == \
        [(110.14, 0.0, 0.0), (230.05, 1.2345, 283.99)]
    assert drv.observed == {"confirmation_codes": False, "separator": ";"}
    assert drv.stats.error_values == {"over-range": 1} and drv.stats.instrument_errors == 1


#: the same with every bare code written ``;000`` (the other reading of the manuals' "replies like ;000")
HIOKI_CODES_SEMI = [(w, b";000\r\n" if r == _C else r) for w, r in HIOKI_CODES]


@pytest.mark.parametrize("transcript", [HIOKI_CODES, HIOKI_CODES_SEMI], ids=["000", ";000"])
def test_hioki_confirmation_code_transcript(transcript):
    """Issue 27: ``;000`` after :HEAD OFF was refused as "neither a confirmation code nor silence"."""
    drv, rows = replay("hioki", transcript, steps=1)
    assert rows[0].values["power_w"] == 110.14 and drv.identity == "HIOKI,PW3336,123456789,V1.00"
    assert drv.observed == {"confirmation_codes": True, "separator": ","}


def test_hioki_refused_setting_with_codes_names_the_command():
    refused = HIOKI_CODES[:5] + [(b":VOLT:RANG 300\r\n", b"002\r\n")]
    with pytest.raises(InstrumentError, match=r"hioki on replay:hioki: ':VOLT:RANG 300' answered error code '002'"):
        replay("hioki", refused)


def test_wattsup_transcript():
    drv, rows = replay("wattsup", WATTSUP, steps=1)
    assert rows[0].values == {"power_w": 45.3, "voltage_v": 120.0, "current_a": 0.384, "resync": 0}


def test_powersensor3_transcript():
    drv, rows = replay("powersensor3", PS3, steps=1, average_frames=1)
    assert drv.pairs == [0, 1]
    want0 = _value(731, 1.636, 0.12) * _value(338, 0.0, 0.091)
    want1 = _value(697, 1.62247, 0.0625) * _value(333, 0.0, 0.091)
    assert len(rows) == 3
    for r in rows:
        assert r.values["power0_w"] == pytest.approx(want0, rel=1e-6)  # float32 vref/sensitivity
        assert r.values["power1_w"] == pytest.approx(want1, rel=1e-6)
        assert r.values["power_w"] == pytest.approx(want0 + want1, rel=1e-6)
    # 10-bit timestamps 1000, 1500, 2058 (mod 1024 = 10): one wrap between the 2nd and 3rd frame
    dt = [b.values["device_t_s"] - a.values["device_t_s"] for a, b in zip(rows, rows[1:])]
    assert dt == pytest.approx([500e-6, 558e-6], abs=1e-9)
    assert drv.stats.instrument_errors == 0  # the sentinels after X were consumed by the setup


def test_powersensor3_corrupt_eeprom_record_is_reported():
    bad = bytearray(RECORDS[2])
    bad[:16] = b"X" * 16  # type without its NUL terminator: a corrupt record (sensors.cc)
    steps = [s if s[1] != RECORDS[2] else (s[0], bytes(bad)) for s in PS3]
    with pytest.raises(InstrumentError, match=r"pair 1 is not in use on the device .* pairs in use: 0"):
        replay("powersensor3", steps[:-2], steps=0, pairs=[0, 1])


def test_replay_port_names_the_first_deviation():
    port = ReplayPort([(b"*CLS\r\n", None), (b"*IDN?\r\n", b"X\r\n")])
    port.write(b"*CLS\r\n")
    port.write(b":COMM:REM ON\r\n")
    with pytest.raises(AssertionError, match=r"at step 1 the driver wrote b':COMM:REM ON\\r\\n', the transcript "
                                             r"expects b'\*IDN\?\\r\\n'"):
        port.check()
    short = ReplayPort([(b"*CLS\r\n", None), (b"*IDN?\r\n", b"X\r\n")])
    short.write(b"*CLS\r\n")
    with pytest.raises(AssertionError, match=r"the driver stopped at step 1: next expected b'\*IDN\?\\r\\n'"):
        short.check()


# -- the declared command tables ------------------------------------------------------------------

TRANSCRIPTS = {"wt310": [WT310], "wt210": [WT210, WT210_SUFFIX], "hioki": [HIOKI_PW3335, HIOKI_CODES],
               "wattsup": [WATTSUP], "powersensor3": [PS3]}


def _pattern(cmd: Command) -> str:
    """The command template as a regular expression (a ``:g`` number field matches a number only)."""
    text = re.sub(r"\\\{[^}]*:g\\\}", "[-+0-9.eE]+", re.escape(cmd.text))
    return re.sub(r"\\\{[^}]*\\\}", ".+", text)


@pytest.mark.parametrize("protocol", sorted(TRANSCRIPTS))
def test_every_command_is_declared_and_every_reply_has_the_declared_shape(protocol):
    table = PROTOCOLS[protocol].COMMANDS
    assert table and all(c.source for c in table.values())  # each says where it is documented
    for transcript in TRANSCRIPTS[protocol]:
        for step in transcript:
            cmd = step[0].decode("latin-1").rstrip("\r\n;")
            if not cmd:
                continue  # the empty line that clears a half-typed command
            matches = [name for name, c in table.items() if c.text and re.fullmatch(_pattern(c), cmd)]
            assert len(matches) == 1, (protocol, cmd, matches)
            c = table[matches[0]]
            if step[1] is not None and c.reply is not None:
                reply = step[1].decode("latin-1").strip("\r\n")
                assert re.fullmatch(c.reply, reply), (protocol, cmd, reply, c.reply)


@pytest.mark.parametrize("protocol,name,params,message", [
    ("wt310", "volt_range", {"v": 250}, "voltage range (V) 250 is not one of 7.5, 15, 30, 60, 75, 150, 300, 600"),
    ("wt310", "rate", {"rate": "10S"}, "update rate '10S' is not one of 50MS, 100MS, 250MS, 500MS, 1S, 2S, 5S"),
    ("wt210", "rate_seconds", {"s": 0.3}, "update rate (s) 0.3 is not one of 0.1, 0.25, 0.5, 1.0, 2.0, 5.0"),
    ("hioki", "curr_range", {"a": 3}, "current range (A) 3 is not one of 0.001, 0.002"),
    ("wattsup", "start", {"interval": 0}, "logging interval (s) 0 is outside 1..3600"),
])
def test_validators_refuse_parameters_before_the_wire(protocol, name, params, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        PROTOCOLS[protocol].COMMANDS[name].format(**params)


# -- wire trace --------------------------------------------------------------------------------------

def test_wire_trace_at_debug_and_facts_at_info(caplog):
    with caplog.at_level(logging.DEBUG, logger="microbench.instruments"):
        replay("hioki", HIOKI_PW3335, steps=3, confirm_timeout_s=0.1)
    msgs = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert ("DEBUG", r"replay:hioki WRITE b':HEAD OFF\r\n'") in msgs
    assert ("DEBUG", r"replay:hioki READ b'HIOKI,PW3335,123456789,V1.00\r\n'") in msgs
    assert ("INFO", "hioki on replay:hioki: instrument uses confirmation_codes = False (no code after :HEAD OFF; "
                    "settings checked with :ERR?)") in msgs
    assert ("INFO", "hioki on replay:hioki: instrument uses separator = ';' (unconfirmed: working scripts show "
                    "';', a manual page ',')") in msgs
    assert any(lv == "INFO" and m.startswith("hioki on replay:hioki: instrument error reply dropped: hioki: U = "
                                            "+9.9999e+11, the meter's over-range error value") for lv, m in msgs)
    # every byte the driver wrote is in the trace, in order
    writes = [m.split(" WRITE ", 1)[1] for lv, m in msgs if " WRITE " in m]
    assert writes == [repr(s[0]) for s in HIOKI_PW3335]
