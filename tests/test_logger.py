"""SensorLogger: rows reach the session, transient errors are survived, fatal ones surface."""

from __future__ import annotations

import time
from unittest import mock

import pytest

from calib.core.errors import DeviceLostError, DeviceNotSupportedError
from calib.core.session import SessionWriter, read_session
from calib.windows import window_energy
from microbench.devices.base import Row, Sensor
from microbench.testing.nvml_fake import FakeGpu, install_fake
from microbench.logger import SensorLogger, TransientSensorError


class ScriptedSensor(Sensor):
    kind = "test"
    columns = ("power_w",)

    def __init__(self, name="s", script=None, delay_s=0.0):
        self.name = name
        self.script = list(script or [])
        self.delay_s = delay_s
        self.calls = 0

    def read(self):
        self.calls += 1
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.script:
            item = self.script.pop(0)
            if isinstance(item, BaseException):
                raise item
        t = time.monotonic()
        return [Row(t, time.time(), {"power_w": float(self.calls)})]


def _writer(tmp_path, sensors):
    return SessionWriter.create(tmp_path / "sess", {"device": {"name": "test"},
                                                    "sensors": [s.describe() for s in sensors]})


def test_rows_reach_the_session_at_the_requested_rate(tmp_path):
    s = ScriptedSensor("a")
    w = _writer(tmp_path, [s])
    with SensorLogger(w, [s], period_s=0.02) as lg:
        time.sleep(0.5)
    w.close()
    df = read_session(tmp_path / "sess").stream("a")
    assert 22 <= len(df) <= 28  # 0.5 s at 50 Hz, plus the final drain
    assert lg.stats.sensors["a"].rows == len(df)
    assert 40 <= lg.stats.achieved_hz("a") <= 60
    assert list(df["power_w"][:3]) == [1.0, 2.0, 3.0]


def test_nvml_sensor_through_the_logger_with_patched_binding(tmp_path):
    with mock.patch("microbench.devices.nvml.pynvml", autospec=True) as m:
        install_fake(m, [FakeGpu(power_fn=lambda t: 250.0)])
        from microbench.devices.nvml import NvmlSensor

        s = NvmlSensor(0)
        w = _writer(tmp_path, [s])
        with SensorLogger(w, [s], period_s=0.02):
            time.sleep(1.2)
        s.close()
        w.close()
    df = read_session(tmp_path / "sess").stream("nvml0")
    assert len(df) >= 45 and (df["power_w"] == 250.0).all()
    we = window_energy(df, float(df["t_mono_s"].iloc[2]), float(df["t_mono_s"].iloc[-3]))
    span = float(df["t_mono_s"].iloc[-3] - df["t_mono_s"].iloc[2])
    assert we.integrated_j == pytest.approx(250.0 * span, rel=1e-6)
    assert abs(we.disagreement_pct) < 12.0  # 100 ms counter steps over ~1 s


def test_transient_errors_are_counted_and_warned(tmp_path):
    s = ScriptedSensor("a", script=[TransientSensorError("timeout"), DeviceNotSupportedError("gone"), None])
    w = _writer(tmp_path, [s])
    lg = SensorLogger(w, [s], period_s=0.01)
    with pytest.warns(RuntimeWarning, match=r"sensor a: timeout \(occurrence 1\)"):
        lg.start()
        time.sleep(0.2)
        st = lg.stop()
    assert st.sensors["a"].transient_errors == 2 and st.sensors["a"].rows > 5
    assert st.sensors["a"].last_error == "gone"


def test_fatal_error_stops_logger_and_is_raised(tmp_path):
    s = ScriptedSensor("a", script=[None, None, DeviceLostError("GPU 0: the GPU stopped answering")])
    other = ScriptedSensor("b")
    w = _writer(tmp_path, [s, other])
    lg = SensorLogger(w, [s, other], period_s=0.01).start()
    time.sleep(0.2)
    assert not lg.running
    with pytest.raises(DeviceLostError, match="stopped answering"):
        lg.check()
    with pytest.raises(DeviceLostError):
        lg.stop()
    assert s.calls == 3


def test_overruns_are_skipped_not_burst(tmp_path):
    s = ScriptedSensor("slow", delay_s=0.035)
    w = _writer(tmp_path, [s])
    with SensorLogger(w, [s], period_s=0.01) as lg:
        time.sleep(0.5)
    assert lg.stats.overruns > 20
    assert lg.stats.sensors["slow"].rows <= 17  # one read per ~35 ms, no catch-up


def test_bad_configuration():
    with pytest.raises(ValueError, match="period_s must be > 0"):
        SensorLogger(None, [], 0)
    with pytest.raises(ValueError, match="sensor names must be unique"):
        SensorLogger(None, [ScriptedSensor("x"), ScriptedSensor("x")], 0.1)
