"""Serial analyzers end to end over real pseudo-terminals, against emulators of each protocol."""

from __future__ import annotations

import logging
import os
import re
import time

import pytest

from calib.core.errors import DeviceError, DeviceNotFoundError
from microbench.instruments import (
    CsvLineSource,
    HiokiPW3335,
    InstrumentError,
    PowerSensor3,
    YokogawaWT310,
    open_analyzer,
)
from microbench.testing.emulators import (
    CsvEmulator,
    PowerSensor3Emulator,
    YokogawaEmulator,
    run_fault_scenario,
)

PROTOCOLS = ["csv", "wattsup", "wt310", "wt210", "hioki", "powersensor3"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_faults_lose_only_the_corrupted_frames(protocol, tmp_path):
    r = run_fault_scenario(protocol, tmp_path)
    f = r["faults"]
    # garbage between frames costs nothing; a truncated frame and an error reply cost exactly themselves
    assert f["garbage"] == {"lost_whole": 0, "corrupted": 0}, r
    assert f["truncate"] == {"lost_whole": 0, "corrupted": 1}, r
    assert f["error"] == {"lost_whole": 0, "corrupted": 1}, r
    assert r["corrupted_received"] == [] and r["duplicates"] == 0
    st = r["stats"]
    assert st["truncated"] >= 1
    assert st["instrument_errors"] + st["rejected"] == 1  # the error reply, counted once
    if protocol in ("hioki", "wt310", "wt210"):  # their error reply is an error value, counted by kind
        assert st["error_values"] == {"hioki": {"over-range": 1}}.get(protocol, {"no data (NAN)": 1}), st
    # unplug: nothing lost once reconnected; what was in the pty when the cable was pulled is bounded
    u = f["unplug"]
    assert st["reconnects"] == 1 and r["connections"] == 2
    assert u["lost_after_reconnect"] == 0, r
    assert u["in_flight"] <= u["sent_last_50ms"], r
    assert u["reconnect_s"] < 2.0
    # the first row after each loss is flagged
    assert r["resync_rows"] >= 3


def test_reconnect_resends_full_configuration(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="microbench.instruments")
    link = tmp_path / "wt.tty"
    emu = YokogawaEmulator(link)
    drv = YokogawaWT310(str(link), update_rate="100MS", voltage_range_v=150, current_range_a=2)
    try:
        drv.start()
        n_first = len(emu.config_log)
        assert any(c == b":INP:CURR:RANG 2A" for c in emu.config_log)
        emu.unplug(power_off=True)  # the meter lost its settings too: only a full setup brings them back
        time.sleep(0.2)
        emu.replug()
        end = time.monotonic() + 5
        while drv.stats.reconnects == 0 and time.monotonic() < end:
            time.sleep(0.02)
        assert drv.stats.reconnects == 1, (drv.stats, drv._fatal)
        after = emu.config_log[n_first:]
        for cmd in (b"*CLS", b":COMM:REM ON", b":SYST:COMM:COMM WT300", b":INP:VOLT:AUTO OFF", b":INP:VOLT:RANG 150V",
                    b":INP:CURR:RANG 2A", b":RATE 100MS", b":NUM:NORM:ITEM3 P,1", b":STAT:FILT1 FALL"):
            assert cmd in after
        assert emu.vrange == 150 and emu.crange == 2 and emu.rate_s == 0.1 and emu.filt1 == "FALL"
        warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
        assert warned[0].startswith(f"analyzer wt310 on {link}: connection lost (") and warned[0].endswith("reconnecting")
        assert re.fullmatch(rf"analyzer wt310 on {link}: reconnected after \d+\.\d\d s \(configuration re-sent\)",
                            warned[1])
        gap = drv.stats.gaps[0]
        assert gap["back_t_mono_s"] > gap["lost_t_mono_s"]
    finally:
        drv.close()
        emu.close()


def test_exclusive_access(tmp_path):
    link = tmp_path / "csv.tty"
    with CsvEmulator(link, 0.05):
        a = CsvLineSource(str(link)).start()
        try:
            with pytest.raises(DeviceError, match=r"serial port .*csv.tty is in use by another process \(exclusive lock"):
                CsvLineSource(str(link)).start()
        finally:
            a.close()


def test_missing_port_is_bad_input(tmp_path):
    with pytest.raises(DeviceNotFoundError, match=r"serial port .*nope.tty not found \(unplugged or wrong path\)"):
        CsvLineSource(str(tmp_path / "nope.tty")).start()


def test_setup_refused_by_instrument_names_the_command(tmp_path):
    link = tmp_path / "wt.tty"
    with YokogawaEmulator(link):  # a WT310, not a WT310E: no 50 ms rate
        with pytest.raises(InstrumentError, match=r"refused ':RATE 50MS': -224,\"Illegal parameter value\" \(50MS "
                                                  r"exists only on WT300E models\)"):
            YokogawaWT310(str(link), update_rate="50MS").start()
    with YokogawaEmulator(link, model="WT310E") as emu:
        drv = YokogawaWT310(str(link), update_rate="50MS").start()
        drv.close()
        assert emu.rate_s == 0.05


def test_parameters_the_instrument_does_not_have_are_refused_before_the_wire():
    with pytest.raises(ValueError, match=r"current range \(A\) 7 is not one of 0.25, 0.5, 1, 2, 2.5, 5, 10, 20"):
        YokogawaWT310("/dev/null", current_range_a=7)
    with pytest.raises(ValueError, match=r"voltage range \(V\) 250 is not one of 6, 15, 30, 60, 150, 300, 600, 1000"):
        HiokiPW3335("/dev/null", voltage_range_v=250)


def test_silent_port_gives_clear_error(tmp_path):
    master, slave = os.openpty()
    try:
        with pytest.raises(InstrumentError, match=r"no reply to '\*IDN\?' within 1.0 s \(wrong port, baud rate or cable"):
            YokogawaWT310(os.ttyname(slave)).start()
    finally:
        os.close(master)
        os.close(slave)


def test_polled_rate_and_fresh_updates(tmp_path):
    """With :COMM:WAIT every reply is a new update: no repeats, one per update period."""
    link = tmp_path / "wt.tty"
    with YokogawaEmulator(link) as emu:  # updates every 100 ms once the driver sets :RATE 100MS
        drv = YokogawaWT310(str(link), update_rate="100MS")
        drv.start()
        time.sleep(1.05)
        drv.close()
        rows = drv.read()
    seqs = [emu.decode(r.values) for r in rows]
    # every update exactly once: no repeat, no skip
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))) and 8 <= len(seqs) <= 11
    lat = [r.values["latency_s"] for r in rows]
    assert all(0 <= x < 0.25 for x in lat)
    assert rows[0].values["voltage_v"] == pytest.approx(230.0)


def test_powersensor3_marker_timestamps_and_averaging(tmp_path):
    link = tmp_path / "ps3.tty"
    with PowerSensor3Emulator(link, frame_us=500, burst=20) as emu:
        drv = PowerSensor3(str(link), average_frames=10)
        drv.start()
        time.sleep(0.2)
        t_mark = time.monotonic()
        drv.mark()
        time.sleep(0.2)
        drv.close()
        rows = drv.read()
    # the pairs in use on the device (0 and 1 of the default EEPROM) and nothing else
    assert drv.columns == ("power_w", "power0_w", "voltage0_v", "current0_a", "power1_w", "voltage1_v",
                           "current1_a", "device_t_s", "marker", "frames", "resync")
    assert all(r.values["frames"] == 10 for r in rows[:-1])
    # pair 0: 6 A (MLX10) at 12 V; pair 1: 10 A (MLX20) at 12 V; 10 dithered frames per row
    assert rows[5].values["current0_a"] == pytest.approx(6.0, abs=0.03)
    assert rows[5].values["power1_w"] == pytest.approx(120.0, rel=0.01)
    marked = [r for r in rows if r.values["marker"]]
    assert len(marked) == 1
    # host arrival of the marked frame is after the mark() call, by the burst period plus transport
    assert 0 <= marked[0].t_mono_s - t_mark < 0.1
    # device time (unwrapped 10-bit µs) advances 10 frames x 500 µs = 5 ms per row
    dt = [b.values["device_t_s"] - a.values["device_t_s"] for a, b in zip(rows[1:-2], rows[2:-1])]
    assert all(d == pytest.approx(0.005, abs=1e-6) for d in dt)
    assert emu.streaming is False  # the driver sent X at close


def test_open_analyzer_rejects_unknown_protocol():
    with pytest.raises(ValueError, match=r"unknown analyzer protocol 'wt999'; choose one of \['csv', 'hioki'"):
        open_analyzer("/dev/null", "wt999")
