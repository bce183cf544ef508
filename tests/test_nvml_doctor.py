"""`calib doctor` with a patched NVML and an analyzer emulator on a pty."""

from __future__ import annotations

import json
from unittest import mock

import pytest

from calib.cli import main
from microbench.devices.nvml_fake import FakeGpu, install_fake
from microbench.testing.emulators import YokogawaEmulator


@pytest.fixture
def fake():
    with mock.patch("microbench.devices.nvml.pynvml", autospec=True) as m:
        yield install_fake(m, [FakeGpu(), FakeGpu(name="NVIDIA Fake RTX", uuid="GPU-rtx",
                                                  unsupported={"mem_temp", "power_instant", "power_average"})])


def test_doctor_reports_fields_sources_and_permission(fake, capsys):
    with mock.patch("os.geteuid", return_value=1000):
        assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "NVML binding: nvidia-ml-py 13.615.71" in out
    assert "NVML ok: driver 580.65.06, 2 GPU(s)" in out
    assert "GPU 1: NVIDIA Fake RTX (ampere, 00000000:3B:00.0, GPU-rtx)" in out
    assert "power_w from: field NVML_FI_DEV_POWER_INSTANT (instantaneous)" in out
    assert "power_w from: nvmlDeviceGetPowerUsage (1 s average on Ampere-except-GA100 and newer" in out
    assert "not available: power_instant (not supported), power_average (not supported), mem_temp (not supported)" in out
    assert "clock locking: needs root: DVFS points (locked clocks) will fail with 'not permitted'" in out
    assert "clocks: memory [1215] MHz; core clocks per memory clock {1215: 5}" in out
    assert fake.init_count == 0


def test_doctor_json_probe_rate_and_analyzer(fake, capsys, tmp_path):
    fake.gpus.pop()  # one GPU: the rate probe takes 1 s per GPU
    link = tmp_path / "wt.tty"
    with YokogawaEmulator(link, 0.1):
        assert main(["doctor", "--json", "--probe-rate", "--serial", str(link), "--protocol", "wt310"]) == 0
    rep = json.loads(capsys.readouterr().out)
    g0 = rep["nvml"]["gpus"][0]
    assert g0["supported"]["energy_field"] is True
    # the fake counter advances every 100 ms: the probe finds that period
    assert g0["update_period_s"]["energy_mj"] == pytest.approx(0.1, abs=0.03)
    a = rep["analyzer_probe"]
    assert a["ok"] and a["identity"].startswith("YOKOGAWA,WT310") and 7 <= a["rows_in_1s"] <= 11


def test_doctor_without_driver(fake, capsys):
    fake.lib_missing = True
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "NVML: nvmlInit: NVML is not usable on this machine (NVML Shared Library Not Found)" in out


def test_doctor_analyzer_needs_protocol(fake, capsys):
    assert main(["doctor", "--serial", "/dev/null"]) == 2
    assert "ERROR: --serial needs --protocol, one of csv, hioki" in capsys.readouterr().err
