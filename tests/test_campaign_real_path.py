"""The campaign's real-device path: sensors polled by the SensorLogger thread instead of being drained.

A stand-in device wraps the virtual GPU but declares itself non-virtual, so `Campaign` takes the code path
of `cuda:N` (background logger, no fan sweep, no exact resume state) while the physics stays simulated.
"""

from __future__ import annotations

import pytest

from calib.fit.pipeline import fit_session
from calib.core.session import read_session
from microbench.campaign import Campaign
from microbench.devices.base import Device
from microbench.devices.sim.device import open_sim


class _RealLike(Device):
    virtual = False

    def __init__(self):
        self._sim = open_sim("sim:gtx280", seed=0)
        self.info = self._sim.info

    def sensors(self):
        return self._sim.sensors()

    def clock(self):
        return self._sim.clock()

    def run(self, workload, duration_s):
        return self._sim.run(workload, duration_s)

    def idle(self, duration_s):
        self._sim.idle(duration_s)

    def temperature_c(self):
        return self._sim.temperature_c()


def test_campaign_with_a_polled_logger_produces_a_fittable_session(tmp_path):
    dev = _RealLike()
    session = Campaign(dev, "quick", 0).run(tmp_path / "s")
    sess = read_session(session)
    assert sess.is_complete()
    nv = sess.stream("nvml0")
    assert len(nv) > 1000 and nv["t_mono_s"].is_monotonic_increasing
    assert "fan_sweep" not in (sess.path / "markers.csv").read_text()   # no fan control on real GPUs
    out = fit_session(session)
    assert out.params["power"].value("idle_power_w") == pytest.approx(83.0, rel=0.02)
    assert out.params["thermal"].value("rc_rise_s") > 0
