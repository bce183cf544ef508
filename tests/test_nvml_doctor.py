"""`calib doctor` with a patched NVML and an analyzer emulator on a pty."""

from __future__ import annotations

import json
from unittest import mock

import pytest

from calib.cli import main
from microbench.testing.nvml_fake import FakeGpu, install_fake
from microbench.testing.emulators import CsvEmulator, HiokiEmulator, YokogawaEmulator


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


@pytest.mark.parametrize("emulator,protocol,lines", [
    (lambda link: HiokiEmulator(link, 0.05, separator=",", answer_codes=False), "hioki",
     ["  the instrument used: confirmation_codes = False (HIOKI: False = the meter does not confirm commands; "
      "settings checked with :ERR?)",
      "  the instrument used: separator = ',' (HIOKI reply item separator: working scripts show ';', a manual "
      "page ',')"]),
    (lambda link: YokogawaEmulator(link, model="WT210"), "wt210",
     ["  the instrument used: rate_format = 'seconds' (WT210 :SAMP:RATE: 'seconds' as yoko-tool sends it, or a "
      "'suffix' such as 250MS)"]),
])
def test_doctor_reports_which_reading_of_an_unconfirmed_fact_the_instrument_used(fake, capsys, tmp_path, emulator,
                                                                                  protocol, lines):
    link = tmp_path / "a.tty"
    with emulator(link):
        assert main(["doctor", "--serial", str(link), "--protocol", protocol]) == 0
    out = capsys.readouterr().out.splitlines()
    assert any(x.startswith(f"Analyzer {protocol} on {link}: ok, ") for x in out), out
    for line in lines:
        assert line in out


def test_doctor_failed_analyzer_check_exits_non_zero_with_the_reason(fake, capsys, tmp_path):
    import os

    master, slave = os.openpty()  # a port where nothing answers
    port = os.ttyname(slave)
    try:
        assert main(["doctor", "--serial", port, "--protocol", "hioki"]) == 1
    finally:
        os.close(master)
        os.close(slave)
    out, err = capsys.readouterr()
    reason = (f"hioki on {port}: no reply to '*IDN?' within 1.0 s (wrong port or baud rate (9600), or not a "
              "null-modem cable?)")
    assert f"Analyzer hioki on {port}: FAILED -- {reason}" in out  # the report, then the one-line reason
    assert err == f"ERROR: {reason}\n"


def test_doctor_analyzer_without_a_reading_is_a_failed_check(fake, capsys, tmp_path):
    class Garbage(CsvEmulator):
        def frame(self, seq):
            return b"garbage,xx\r\n"

    link = tmp_path / "g.tty"
    with Garbage(link, 0.05):
        assert main(["doctor", "--json", "--serial", str(link), "--protocol", "csv"]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out)["analyzer_probe"]["ok"] is False
    assert err.startswith(f"ERROR: analyzer csv on {link}: no reading in 1 s (rejected ")
    assert "last rejected frame: csv: expected 1 fields, got 2: 'garbage,xx'" in err and err.count("\n") == 1
