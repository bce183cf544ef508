"""CudaDevice over a patched NVML with a fake kernel runner; the thermally stable protocol."""

from __future__ import annotations

import math
import sys
import time
from unittest import mock

import pytest
import pynvml as real_pynvml

from calib.core.errors import DeviceError, DeviceNoPermissionError
from calib.core.session import SessionWriter, read_session
from microbench.devices.base import Device, DeviceInfo, Launch, RunResult, Workload
from microbench.testing.nvml_fake import FakeGpu, install_fake
from microbench.logger import SensorLogger
from microbench.protocol import ThermalProtocol, cooldown, run_point, temperature_gate

WL = Workload("fp32_fma", {"fp": 1000.0}, Launch(80, 256, 80), kernel="fp32_fma", params={"iters": 100})


class FakeRunner:
    def __init__(self):
        self.prepared = []
        self.runs = []
        self.closed = False

    def prepare(self, kernel, params, launch):
        self.prepared.append((kernel, params, launch))
        return ("prepared", kernel)

    def run_for(self, prepared, duration_s):
        self.runs.append((prepared, duration_s))
        time.sleep(duration_s)
        return RunResult(launches=int(duration_s * 1000), kernel_time_s=0.001)

    def close(self):
        self.closed = True


@pytest.fixture
def fake():
    with mock.patch("microbench.devices.nvml.pynvml", autospec=True) as m:
        gpus = [FakeGpu(pci_bus_id="00000000:3B:00.0"),
                FakeGpu(name="NVIDIA Fake H100", uuid="GPU-h100", pci_bus_id="00000000:5E:00.0",
                        arch=real_pynvml.NVML_DEVICE_ARCH_HOPPER, power_fn=lambda t: 300.0)]
        yield install_fake(m, gpus)


PROPS_CUDA0_IS_H100 = {"pciDomainID": 0, "pciBusID": 0x5E, "pciDeviceID": 0, "multiProcessorCount": 132,
                       "major": 9, "minor": 0}


def _device(props, runner=None, **kw):
    from microbench.devices.cuda import CudaDevice

    with mock.patch("microbench.devices.cuda.cuda_properties", return_value=props):
        return CudaDevice(0, runner=runner, **kw)


def test_cuda_index_is_matched_to_nvml_by_pci_bus_id(fake):
    dev = _device(PROPS_CUDA0_IS_H100, FakeRunner())
    assert dev.info.name == "NVIDIA Fake H100" and dev.info.uuid == "GPU-h100"  # not NVML GPU 0
    assert dev.info.sm_count == 132 and dev.info.extra["compute_capability"] == "9.0"
    assert dev.info.supported_clocks == {"mem_mhz": [1215.0], "core_mhz": [210.0, 1095.0, 1200.0, 1305.0, 1410.0]}
    assert (dev.info.default_core_mhz, dev.info.default_mem_mhz) == (1410.0, 1215.0)
    [s] = dev.sensors()
    assert s.name == "nvml0" and s.read()[0].values["power_w"] == pytest.approx(300.0)
    dev.close()
    assert fake.init_count == 0


def test_without_cupy_nvml_index_is_assumed_with_warning(fake):
    with pytest.warns(RuntimeWarning, match="CuPy is not installed, so the CUDA->NVML index mapping is unknown"):
        dev = _device(None, FakeRunner())
    assert dev.info.name == "NVIDIA Fake A100" and dev.info.sm_count == 0
    dev.close()


def test_run_prepares_once_and_delegates(fake):
    runner = FakeRunner()
    dev = _device(PROPS_CUDA0_IS_H100, runner)
    r1 = dev.run(WL, 0.05)
    r2 = dev.run(WL, 0.05)
    assert r1 == r2 == RunResult(50, 0.001)
    assert runner.prepared == [("fp32_fma", {"iters": 100}, WL.launch)]
    assert len(runner.runs) == 2
    dev.close()


def test_missing_runner_or_cupy_is_a_clear_error(fake):
    dev = _device(PROPS_CUDA0_IS_H100)
    with mock.patch.dict(sys.modules, {"microbench.kernels.runner": None}):
        with pytest.raises(DeviceError, match=r"cuda:0: running kernels needs CuPy and the kernel runner .*"
                                              r"pip install 'gpu-calib\[gpu\]'"):
            dev.run(WL, 0.01)
    dev.close()


def test_set_clocks_locks_and_close_resets(fake):
    dev = _device(PROPS_CUDA0_IS_H100, FakeRunner())
    dev.set_clocks(1200, 1215)
    h100 = fake.gpus[1]
    assert h100.locked_core == (1200, 1200) and dev.clocks() == (1200.0, 1215.0)
    dev.close()
    assert h100.locked_core is None and h100.locked_mem is None


def test_set_clocks_without_root(fake):
    fake.gpus[1].lock_error = real_pynvml.NVML_ERROR_NO_PERMISSION
    dev = _device(PROPS_CUDA0_IS_H100, FakeRunner())
    with pytest.raises(DeviceNoPermissionError, match="needs root"):
        dev.set_clocks(1200, None)
    dev.close()


# -- the protocol on a thermal toy device (simulated time) ---------------------------------------------

class ThermalToy(Device):
    """First-order thermal model in simulated time: T -> 35 °C idle, 80 °C under load, tau 20 s."""

    virtual = True

    def __init__(self, temp_c=70.0):
        self.info = DeviceInfo("toy", "toy", 1, 1000.0, 1000.0, 1.0)
        self.t = 0.0
        self.temp = temp_c
        self.log = []
        self.core = self.mem = None

    def _advance(self, d, target):
        self.temp = target + (self.temp - target) * math.exp(-d / 20.0)
        self.t += d

    def sensors(self):
        return []

    def clock(self):
        return self.t, 1.7e9 + self.t

    def run(self, workload, duration_s):
        self.log.append(("run", duration_s))
        self._advance(duration_s, 80.0)
        return RunResult(int(duration_s * 100), 0.01)

    def idle(self, duration_s):
        self.log.append(("idle", duration_s))
        self._advance(duration_s, 35.0)

    def temperature_c(self):
        return self.temp

    def set_clocks(self, core_mhz, mem_mhz):
        self.core, self.mem = core_mhz, mem_mhz

    def clocks(self):
        return (self.core or 1000.0, self.mem or 1000.0)


def test_cooldown_idles_into_the_band():
    dev = ThermalToy(70.0)
    w = cooldown(dev, (40.0, 45.0), poll_s=1.0)
    assert w.reached and w.action == "idle" and 40.0 <= w.end_c <= 45.0
    assert w.waited_s == pytest.approx(20 * math.log(35 / 10), abs=1.0)  # time for 70 -> 45 °C


def test_cooldown_heats_a_cold_gpu_with_the_workload():
    dev = ThermalToy(36.0)
    w = cooldown(dev, (40.0, 45.0), poll_s=1.0, heat_workload=WL)
    assert w.reached and w.action == "heat" and w.end_c >= 40.0


def test_cooldown_timeout_is_flagged():
    dev = ThermalToy(70.0)
    with pytest.warns(RuntimeWarning, match=r"cooldown: GPU at .* °C after 5 s, outside the band 40..45 °C"):
        w = cooldown(dev, (40.0, 45.0), poll_s=1.0, timeout_s=5.0)
    assert not w.reached


def test_temperature_gate_heats_to_target():
    dev = ThermalToy(45.0)
    g = temperature_gate(dev, WL, 60.0, tol_c=1.0, poll_s=0.5)
    assert g.reached and abs(g.end_c - 60.0) <= 1.0 and g.action == "heat"
    assert g.waited_s == pytest.approx(20 * math.log(35 / 21), abs=0.6)


def test_run_point_locks_clocks_and_writes_markers(tmp_path):
    dev = ThermalToy(70.0)
    w = SessionWriter.create(tmp_path / "s", {"device": {"name": "toy"}, "sensors": []}, clock=dev.clock)
    proto = ThermalProtocol(warmup_s=2.0, measure_s=5.0, repeats=2, cooldown_band_c=(40.0, 45.0),
                            gate_c=55.0, gate_tol_c=1.0, poll_s=0.5)
    trials = run_point(dev, WL, proto, core_mhz=900.0, mem_mhz=800.0, writer=w)
    w.close()
    assert (dev.core, dev.mem) == (900.0, 800.0)
    assert len(trials) == 2 and all(t.ok for t in trials)
    assert all(t.t1_s - t.t0_s == pytest.approx(5.0) for t in trials)
    assert all(54.0 <= t.temp_before_c <= 56.0 for t in trials)  # the gate made both windows start alike
    m = read_session(tmp_path / "s").markers()
    assert list(m["event"]) == ["cooldown_start", "warmup_start", "measure_start", "measure_stop"] * 2
    assert list(m["repeat"]) == [0] * 4 + [1] * 4
    stop = m["info"].iloc[3]
    assert stop["ok"] is True and stop["gate"]["reached"] is True and stop["launches"] == 500
    # one clock payload for the protocol and the campaign: the samples layer reads core_mhz/mem_mhz
    for i in (2, 3):
        assert (m["info"].iloc[i]["core_mhz"], m["info"].iloc[i]["mem_mhz"]) == (900.0, 800.0)
        assert "clocks_mhz" not in m["info"].iloc[i]


def test_protocol_validation():
    with pytest.raises(ValueError, match=r"cooldown_band_c must be \(lo, hi\) with lo <= hi"):
        ThermalProtocol(cooldown_band_c=(50.0, 40.0))
    with pytest.raises(ValueError, match="bad protocol timing"):
        ThermalProtocol(measure_s=0)


def test_campaign_slice_on_fake_gpu_with_logger(fake, tmp_path):
    """CudaDevice + SensorLogger + protocol: each window has NVML rows and counter-vs-integral energy."""
    from calib.windows import window_energy

    dev = _device(PROPS_CUDA0_IS_H100, FakeRunner())
    w = SessionWriter.create(tmp_path / "s", {"device": dev.info.to_dict(),
                                              "sensors": [s.describe() for s in dev.sensors()]})
    proto = ThermalProtocol(warmup_s=0.1, measure_s=1.2, repeats=1, cooldown_band_c=(30.0, 50.0), poll_s=0.1)
    with SensorLogger(w, dev.sensors(), period_s=0.02) as lg:
        [trial] = run_point(dev, WL, proto, core_mhz=1305, mem_mhz=1215, writer=w, logger=lg)
    dev.close()
    w.close()
    assert fake.gpus[1].locked_core is None  # reset at close
    df = read_session(tmp_path / "s").stream("nvml0")
    inside = df[(df["t_mono_s"] >= trial.t0_s) & (df["t_mono_s"] <= trial.t1_s)]
    assert len(inside) >= 5 and (inside["sm_mhz"] == 1305).all()
    # against the window's own length and the stream's own stamps (it asserted >= 40 rows, 300 W x 1.2 s
    # within 2 % and a disagreement < 12 %: a loaded machine stretches the window and spaces the readings)
    span = trial.t1_s - trial.t0_s
    assert span >= 1.2
    e = window_energy(df, trial.t0_s, trial.t1_s)
    assert e.integrated_j == pytest.approx(300.0 * span, rel=1e-9)
    gap = float(df["t_mono_s"].diff().max())
    assert abs(e.disagreement_pct) <= 100.0 * 2 * (0.1 + gap) / span
