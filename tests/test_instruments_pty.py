"""Serial analyzers end to end over real pseudo-terminals, against emulators of each protocol."""

from __future__ import annotations

import os
import time
import warnings

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
    HiokiEmulator,
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
    # unplug: nothing lost once reconnected; what was in the pty when the cable was pulled is bounded
    u = f["unplug"]
    assert st["reconnects"] == 1 and r["connections"] == 2
    assert u["lost_after_reconnect"] == 0, r
    assert u["in_flight"] <= u["sent_last_50ms"], r
    assert u["reconnect_s"] < 2.0
    # the first row after each loss is flagged
    assert r["resync_rows"] >= 3


def test_reconnect_resends_full_configuration(tmp_path):
    link = tmp_path / "wt.tty"
    emu = YokogawaEmulator(link, 0.05)
    drv = YokogawaWT310(str(link), update_rate="100MS", voltage_range_v=150, current_range_a=2)
    try:
        drv.start()
        n_first = len(emu.config_log)
        assert any(c == b":INP:CURR:RANG 2A" for c in emu.config_log)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            emu.unplug()
            time.sleep(0.2)
            emu.replug()
            end = time.monotonic() + 5
            while drv.stats.reconnects == 0 and time.monotonic() < end:
                time.sleep(0.02)
        assert drv.stats.reconnects == 1, (drv.stats, drv._fatal)
        after = emu.config_log[n_first:]
        for cmd in (b":COMM:REM ON", b":INP:VOLT:AUTO OFF", b":INP:VOLT:RANG 150V", b":INP:CURR:RANG 2A",
                    b":RATE 100MS", b":NUM:NORM:ITEM3 P,1"):
            assert cmd in after
        assert emu.state["vrange"] == 150 and emu.state["crange"] == 2
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
    with YokogawaEmulator(link, 0.05):
        with pytest.raises(InstrumentError, match=r"refused ':INP:CURR:RANG 7A': -222,\"Data out of range\""):
            YokogawaWT310(str(link), current_range_a=7).start()
    link2 = tmp_path / "hioki.tty"
    with HiokiEmulator(link2, 0.05):
        with pytest.raises(InstrumentError, match=r"':VOLT:RANG 250' answered error code '002'"):
            HiokiPW3335(str(link2), voltage_range_v=250).start()


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
    with YokogawaEmulator(link, 0.1) as emu:
        drv = YokogawaWT310(str(link), update_rate="100MS")
        drv.start()
        time.sleep(1.05)
        drv.close()
        rows = drv.read()
    seqs = [emu.decode(r.values) for r in rows]
    assert len(seqs) == len(set(seqs)) and 8 <= len(seqs) <= 11
    lat = [r.values["latency_s"] for r in rows]
    assert all(0 <= x < 0.25 for x in lat)
    assert rows[0].values["voltage_v"] == pytest.approx(230.0)


def test_powersensor3_marker_timestamps_and_averaging(tmp_path):
    link = tmp_path / "ps3.tty"
    with PowerSensor3Emulator(link, frame_period_s=0.0005, burst=20) as emu:
        drv = PowerSensor3(str(link), average_frames=10, pairs=2)
        drv.start()
        time.sleep(0.2)
        t_mark = time.monotonic()
        drv.mark()
        time.sleep(0.2)
        drv.close()
        rows = drv.read()
    assert drv.columns == ("power_w", "power0_w", "voltage0_v", "current0_a", "power1_w", "voltage1_v",
                           "current1_a", "device_t_s", "marker", "frames", "resync")
    assert all(r.values["frames"] == 10 for r in rows[:-1])
    # pair 0: current level 612 -> (612-512) * 0.02 = 2 A; pair 1: 562 -> 1 A at 600 * 0.02 = 12 V
    assert rows[5].values["current0_a"] == pytest.approx(2.0)
    assert rows[5].values["power1_w"] == pytest.approx(12.0)
    marked = [r for r in rows if r.values["marker"]]
    assert len(marked) == 1
    # host arrival of the marked frame is after the mark() call, by the burst period plus transport
    assert 0 <= marked[0].t_mono_s - t_mark < 0.1
    # device time (unwrapped 10-bit µs) advances 10 frames x 500 µs = 5 ms per row
    dt = [b.values["device_t_s"] - a.values["device_t_s"] for a, b in zip(rows[1:-2], rows[2:-1])]
    assert all(d == pytest.approx(0.005, abs=1e-6) for d in dt)
    assert emu.configured is False  # the driver sent X at close


def test_open_analyzer_rejects_unknown_protocol():
    with pytest.raises(ValueError, match=r"unknown analyzer protocol 'wt999'; choose one of \['csv', 'hioki'"):
        open_analyzer("/dev/null", "wt999")
