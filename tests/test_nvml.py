"""NVML sensor, error mapping, energy windows and clock control, against a patched (autospec) binding."""

from __future__ import annotations

import ast
import importlib.metadata
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd
import pynvml as real_pynvml
import pytest

from calib.core.errors import (
    BadInputError,
    DeviceError,
    DeviceLostError,
    DeviceNoPermissionError,
    DeviceNotFoundError,
    DeviceNotSupportedError,
)
from microbench.devices import nvml
from microbench.devices.base import CLOCKS_HELD, reset_all_held_clocks
from microbench.testing.nvml_fake import FakeGpu, install_fake
from microbench.logger import TransientSensorError

ROOT = Path(__file__).resolve().parents[1]
NVML_SRC = ROOT / "microbench" / "devices" / "nvml.py"


def _pynvml_names(path: Path) -> set[str]:
    """Every ``pynvml.<name>`` referenced in a module (AST scan)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.attr for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "pynvml"}


def test_every_pynvml_name_used_exists_in_installed_binding():
    names = _pynvml_names(NVML_SRC)
    assert len(names) > 30  # the scan really sees the module's calls
    missing = sorted(n for n in names if not hasattr(real_pynvml, n))
    assert missing == []
    # deprecated in nvidia-ml-py 13.x ("will be removed in CUDA 14.0"): not used
    deprecated = {"nvmlDeviceGetTemperature", "nvmlDeviceGetCurrentClocksThrottleReasons",
                  "nvmlDeviceSetApplicationsClocks", "nvmlDeviceGetPowerState", "nvmlDeviceGetHandleBySerial"}
    assert names & deprecated == set()


def test_binding_is_nvidia_ml_py_not_the_deprecated_wheel():
    files = importlib.metadata.files("nvidia-ml-py") or []
    assert any(str(f) == "pynvml.py" for f in files)
    with pytest.raises(importlib.metadata.PackageNotFoundError):
        importlib.metadata.distribution("pynvml")
    assert hasattr(real_pynvml, "_nvmlGetFunctionPointer")


@pytest.fixture
def fake():
    with mock.patch("microbench.devices.nvml.pynvml", autospec=True) as m:
        yield install_fake(m, [FakeGpu(power_fn=lambda t: 123.456)])


def test_sensor_row_has_all_columns_in_si_units(fake):
    s = nvml.NvmlSensor(0)
    assert s.name == "nvml0" and s.columns == nvml.SENSOR_COLUMNS
    before, before_mono = time.time(), time.monotonic()
    [row] = s.read()
    after, after_mono = time.time(), time.monotonic()
    v = row.values
    assert set(v) == set(nvml.SENSOR_COLUMNS)
    assert v["power_w"] == pytest.approx(123.456)
    assert v["power_avg_w"] == pytest.approx(123.456)
    assert before <= v["power_t_wall_s"] <= after       # stamped during the call (was: within 1 s of it)
    assert isinstance(v["energy_mj"], int) and v["energy_mj"] >= 123_456_789
    assert v["energy_reset"] == 0
    assert (v["temp_c"], v["mem_temp_c"], v["sm_mhz"], v["mem_mhz"]) == (45, 50.0, 1410, 1215)
    assert (v["fan_pct"], v["util_gpu_pct"], v["util_mem_pct"], v["pstate"], v["clock_event_reasons"]) == (
        30, 97, 12, 0, 0)
    # the read's own duration and stamps lie inside the call (were: read_s < 0.5 s and t_wall within 1 s,
    # latencies a loaded machine can exceed)
    assert 0 <= v["read_s"] <= after_mono - before_mono
    assert before <= row.t_wall_s <= after and before_mono <= row.t_mono_s <= after_mono
    caps = s.capabilities()
    assert caps["power_w_source"].startswith("field NVML_FI_DEV_POWER_INSTANT")
    assert caps["supported"]["energy_field"] and caps["gpu"]["architecture"] == "ampere"
    # one field-values call per sample, with the GPU power scope for the power fields
    fv_calls = [c for c in fake.gpus[0].calls if c[0] == "field_values"]
    assert fv_calls[-1][1] == ((real_pynvml.NVML_FI_DEV_POWER_INSTANT, real_pynvml.NVML_POWER_SCOPE_GPU),
                               (real_pynvml.NVML_FI_DEV_POWER_AVERAGE, real_pynvml.NVML_POWER_SCOPE_GPU),
                               real_pynvml.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION, real_pynvml.NVML_FI_DEV_MEMORY_TEMP)
    s.close()
    assert fake.init_count == 0  # every nvmlInit matched by nvmlShutdown


def test_fallback_to_power_usage_and_energy_function_when_fields_unsupported(fake):
    fake.gpus[0].unsupported |= {"power_instant", "power_average", "energy_field", "mem_temp"}
    s = nvml.NvmlSensor(0)
    [row] = s.read()
    assert row.values["power_w"] == pytest.approx(123.456)
    assert row.values["power_avg_w"] is None and row.values["mem_temp_c"] is None
    assert row.values["energy_mj"] >= 123_456_789 and row.values["energy_t_wall_s"] is None
    caps = s.capabilities()
    assert caps["power_w_source"].startswith("nvmlDeviceGetPowerUsage (1 s average")
    assert caps["energy_mj_source"].startswith("nvmlDeviceGetTotalEnergyConsumption")
    assert caps["unsupported_reasons"]["mem_temp"] == "not supported"
    s.close()


def test_grace_hopper_falls_back_to_module_scope_power(fake):
    fake.gpus[0].module_scope_only = True
    with pytest.warns(RuntimeWarning, match="logging MODULE-scope power"):
        s = nvml.NvmlSensor(0)
    assert s.capabilities()["power_scope"] == "NVML_POWER_SCOPE_MODULE"
    assert s.read()[0].values["power_w"] == pytest.approx(123.456)
    s.close()


def test_unsupported_at_probe_leaves_column_empty(fake):
    fake.gpus[0].unsupported |= {"fan", "utilization"}
    s = nvml.NvmlSensor(0)
    n_probe = len(fake.gpus[0].calls)
    [row] = s.read()
    assert row.values["fan_pct"] is None and row.values["util_gpu_pct"] is None
    assert s.capabilities()["supported"]["fan"] is False
    assert not any(c[0] == "fan" for c in fake.gpus[0].calls[n_probe:])  # not polled after the probe
    s.close()


def test_not_supported_mid_run_is_counted_not_fatal(fake):
    s = nvml.NvmlSensor(0)
    s.read()
    fake.gpus[0].fail["temperature"] = real_pynvml.NVML_ERROR_NOT_SUPPORTED
    fake.gpus[0].fail["power_instant"] = real_pynvml.NVML_ERROR_NOT_SUPPORTED
    [row] = s.read()
    assert row.values["temp_c"] is None
    assert s.gpu.runtime_not_supported == {"temperature": 1, "power_instant": 1}
    s.close()


@pytest.mark.parametrize("where", ["field_values", "power_instant", "temperature"])
def test_gpu_lost_raises_typed_error(fake, where):
    s = nvml.NvmlSensor(0)
    fake.gpus[0].fail[where] = real_pynvml.NVML_ERROR_GPU_IS_LOST
    with pytest.raises(DeviceLostError, match=r"GPU 0 \(NVIDIA Fake A100\).*stopped answering \(NVML: GPU is lost\)"):
        s.read()
    s.close()


def test_no_permission_while_sampling_raises_typed_error(fake):
    s = nvml.NvmlSensor(0)
    fake.gpus[0].fail["field_values"] = real_pynvml.NVML_ERROR_NO_PERMISSION
    with pytest.raises(DeviceNoPermissionError, match="not permitted"):
        s.read()
    s.close()


def test_timeout_is_transient(fake):
    s = nvml.NvmlSensor(0)
    fake.gpus[0].fail["field_values"] = real_pynvml.NVML_ERROR_TIMEOUT
    with pytest.raises(TransientSensorError, match="transient NVML failure \\(Timeout\\)"):
        s.read()
    del fake.gpus[0].fail["field_values"]
    assert s.read()[0].values["power_w"] == pytest.approx(123.456)
    s.close()


@pytest.mark.parametrize("code,cls", [
    (real_pynvml.NVML_ERROR_NOT_SUPPORTED, DeviceNotSupportedError),
    (real_pynvml.NVML_ERROR_FUNCTION_NOT_FOUND, DeviceNotSupportedError),
    (real_pynvml.NVML_ERROR_NO_PERMISSION, DeviceNoPermissionError),
    (real_pynvml.NVML_ERROR_GPU_IS_LOST, DeviceLostError),
    (real_pynvml.NVML_ERROR_RESET_REQUIRED, DeviceLostError),
    (real_pynvml.NVML_ERROR_TIMEOUT, TransientSensorError),
    (real_pynvml.NVML_ERROR_DRIVER_NOT_LOADED, DeviceError),
    (real_pynvml.NVML_ERROR_UNKNOWN, DeviceError),
])
def test_error_mapping_table(code, cls):
    err = nvml.map_nvml_error(real_pynvml.NVMLError(code), "op")
    assert type(err) is cls
    assert str(err).startswith("op: ")


def test_no_driver_means_no_gpus_and_clear_error(fake):
    fake.lib_missing = True
    ok, msg = nvml.nvml_available()
    assert not ok and "NVML is not usable on this machine (NVML Shared Library Not Found)" in msg
    assert nvml.list_gpus() == []
    with pytest.raises(DeviceError, match="is the NVIDIA driver installed"):
        nvml.NvmlGpu(0)


def test_bad_index_is_bad_input(fake):
    with pytest.raises(DeviceNotFoundError, match=r"GPU index 3 not found: NVML sees 1 GPU\(s\) \(valid indices 0..0\)"):
        nvml.NvmlGpu(3)
    assert fake.init_count == 0


def test_list_gpus(fake):
    fake.gpus.append(FakeGpu(name="NVIDIA Fake V100", uuid="GPU-2", pci_bus_id="00000000:5E:00.0",
                             arch=real_pynvml.NVML_DEVICE_ARCH_VOLTA))
    gpus = nvml.list_gpus()
    assert [(g["index"], g["name"], g["architecture"], g["pci_bus_id"]) for g in gpus] == [
        (0, "NVIDIA Fake A100", "ampere", "00000000:3B:00.0"), (1, "NVIDIA Fake V100", "volta", "00000000:5E:00.0")]
    assert gpus[0]["driver_version"] == "580.65.06" and gpus[0]["cuda_driver_version"] == "13.0"
    assert fake.init_count == 0


def test_open_by_pci_bus_id(fake):
    with nvml.NvmlGpu(pci_bus_id="00000000:3B:00.0") as g:
        assert g.uuid == fake.gpus[0].uuid


def test_energy_counter_reset_is_detected(fake):
    s = nvml.NvmlSensor(0)
    assert s.read()[0].values["energy_reset"] == 0
    fake.gpus[0].energy0_mj = 0  # driver reload: the counter restarts near 0
    with pytest.warns(RuntimeWarning, match="energy counter went backwards"):
        v = s.read()[0].values
    assert v["energy_reset"] == 1 and s.gpu.energy_resets == 1
    s.close()


# -- clocks -----------------------------------------------------------------------------------------

def test_supported_clocks_and_lock_then_reset_on_close(fake):
    g = nvml.NvmlGpu(0)
    assert g.supported_clocks() == {1215: [1410, 1305, 1200, 1095, 210]}
    g.lock_clocks(1305, 1215)
    gpu = fake.gpus[0]
    assert gpu.locked_core == (1305, 1305) and gpu.locked_mem == (1215, 1215)
    assert g.clocks_mhz() == (1305.0, 1215.0)
    g.lock_clocks(None, 1215)  # None = default for that domain
    assert gpu.locked_core is None
    g.close()
    assert gpu.locked_mem is None and ("reset_mem", ()) in gpu.calls


def test_every_nvml_call_is_traced_at_debug(fake, caplog):
    """-vv: each NVML call appears once in the DEBUG trace with its name, arguments and result or error."""
    import logging

    with caplog.at_level(logging.DEBUG, logger="microbench.devices.nvml"):
        g = nvml.NvmlGpu(0)
        g.lock_clocks(1305, 1215)
        fake.gpus[0].lock_error = real_pynvml.NVML_ERROR_NO_PERMISSION
        with pytest.raises(DeviceNoPermissionError):
            g.lock_clocks(1200, 1215, validate=False)
        fake.gpus[0].lock_error = None
        g.close()
    lines = [r.getMessage() for r in caplog.records if r.name == "microbench.devices.nvml"]
    assert all(r.levelno == logging.DEBUG for r in caplog.records if r.name == "microbench.devices.nvml")
    assert lines[0] == "NVML nvmlInit() -> None [nvmlInit]"
    assert "NVML nvmlDeviceGetHandleByIndex(0) -> <FakeGpu NVIDIA Fake A100> [GPU 0]" in lines
    assert "NVML nvmlDeviceGetName(<FakeGpu NVIDIA Fake A100>) -> 'NVIDIA Fake A100' [GPU name]" in lines
    assert ("NVML nvmlDeviceSetGpuLockedClocks(<FakeGpu NVIDIA Fake A100>, 1305, 1305) -> None "
            "[GPU 0 (NVIDIA Fake A100): lock SM clock at 1305 MHz]") in lines
    assert ("NVML nvmlDeviceSetMemoryLockedClocks(<FakeGpu NVIDIA Fake A100>, 1215, 1215) -> error 4 "
            "(Insufficient Permissions) "
            "[GPU 0 (NVIDIA Fake A100): lock memory clock at 1215 MHz]") in lines
    assert lines[-1] == "NVML nvmlShutdown() -> None [nvmlShutdown]"
    # nothing is traced (or formatted) above DEBUG
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="microbench.devices.nvml"):
        nvml.NvmlGpu(0).close()
    assert not [r for r in caplog.records if r.name == "microbench.devices.nvml"]


def test_trace_shows_nvml_structures_by_their_fields():
    import ctypes

    fv = real_pynvml.c_nvmlFieldValue_t()
    fv.fieldId, fv.nvmlReturn, fv.valueType = 83, 0, real_pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
    fv.value.ullVal = 1234
    assert nvml._brief([fv]) == "[field 83: return 0, value 1234]"
    assert nvml._brief(real_pynvml.c_nvmlUtilization_t(gpu=5, memory=7)) == "c_nvmlUtilization_t(gpu=5, memory=7)"
    assert nvml._brief(ctypes.POINTER(ctypes.c_int)()) == "<handle>"  # a real device handle
    assert nvml._brief(b"535.54") == "'535.54'"


def test_unsupported_clock_is_bad_input_with_nearest(fake):
    with nvml.NvmlGpu(0) as g:
        with pytest.raises(BadInputError, match=r"core clock 1300 MHz is not supported with memory clock 1215 MHz; "
                                                r"nearest supported: \[1200, 1305, 1410\] MHz"):
            g.lock_clocks(1300, 1215)
        with pytest.raises(BadInputError, match=r"memory clock 877 MHz is not supported; supported: \[1215\] MHz"):
            g.lock_clocks(1305, 877)


def test_lock_without_root_is_clear(fake):
    fake.gpus[0].lock_error = real_pynvml.NVML_ERROR_NO_PERMISSION
    with nvml.NvmlGpu(0) as g:
        with pytest.raises(DeviceNoPermissionError) as ei:
            g.lock_clocks(1305, 1215)
    msg = str(ei.value)
    assert "lock memory clock at 1215 MHz: not permitted (NVML: Insufficient Permissions)" in msg
    assert "needs root" in msg


def test_clock_lock_not_supported(fake):
    fake.gpus[0].lock_error = real_pynvml.NVML_ERROR_NOT_SUPPORTED
    with nvml.NvmlGpu(0) as g, pytest.raises(DeviceNotSupportedError, match="not supported by this GPU"):
        g.lock_clocks(1305, None)


def test_ctrl_c_inside_block_resets_clocks(fake):
    gpu = fake.gpus[0]
    with pytest.raises(KeyboardInterrupt):
        with nvml.NvmlGpu(0) as g:
            g.lock_clocks(1095, 1215)
            raise KeyboardInterrupt
    assert gpu.locked_core is None and gpu.locked_mem is None


def test_atexit_handler_resets_forgotten_locks(fake):
    g = nvml.NvmlGpu(0)
    g.lock_clocks(1095, 1215)
    assert g in CLOCKS_HELD
    reset_all_held_clocks()
    assert fake.gpus[0].locked_core is None and g not in CLOCKS_HELD
    g.close()


_CHILD = textwrap.dedent("""
    import sys, time
    from unittest import mock
    m = mock.patch("microbench.devices.nvml.pynvml", autospec=True).start()  # stays patched until exit
    from microbench.devices import nvml
    from microbench.testing.nvml_fake import install_fake
    fake = install_fake(m)
    gpu = fake.gpus[0]
    import atexit
    atexit.register(lambda: print("final", gpu.locked_core, gpu.locked_mem, flush=True))
    g = nvml.NvmlGpu(0)
    g.lock_clocks(1200, 1215)
    print("locked", gpu.locked_core, flush=True)
    time.sleep(30)
""")


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_signal_resets_clocks_in_a_real_process(sig):
    import signal as _s
    # the child starts as from a terminal: a job started in the background of a non-interactive shell
    # (e.g. `.ci/run &`) inherits SIGINT ignored, and Python then never raises KeyboardInterrupt
    p = subprocess.Popen([sys.executable, "-c", _CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, cwd=ROOT, preexec_fn=lambda: _s.signal(_s.SIGINT, _s.SIG_DFL))
    assert p.stdout.readline().strip() == "locked (1200, 1200)"
    p.send_signal(getattr(_s, sig))
    out, err = p.communicate(timeout=20)
    assert "final None None" in out, err



# -- fans: one column per fan where the board has several (issue 30) ------------------------------------------

def test_two_fan_board_logs_each_fan_and_their_mean(fake):
    """Catches: only fan 0 logged on a multi-fan board (nvmlDeviceGetFanSpeed reports fan 0), or fan_pct
    not the mean of the fans. Expected values are the fake board's duties, averaged by hand."""
    fake.gpus[0].fans_pct = [40, 61]
    s = nvml.NvmlSensor(0)
    assert s.columns == nvml.SENSOR_COLUMNS + ("fan0_pct", "fan1_pct")
    assert s.describe()["columns"][-2:] == ["fan0_pct", "fan1_pct"]  # the manifest lists them
    [row] = s.read()
    assert (row.values["fan0_pct"], row.values["fan1_pct"], row.values["fan_pct"]) == (40, 61, 50.5)
    assert set(row.values) == set(s.columns)
    s.close()


@pytest.mark.parametrize("count", ["zero", "not_supported"])
def test_fanless_board_logs_no_fan_and_does_not_fail(fake, count):
    """Catches: a fanless board (A100/H100: nvmlDeviceGetNumFans gives 0 or NOT_SUPPORTED, the fan speed
    NOT_SUPPORTED) failing the sensor's start or its polls, or getting fan columns."""
    g = fake.gpus[0]
    g.fans_pct = []
    if count == "not_supported":
        g.unsupported.add("num_fans")
    s = nvml.NvmlSensor(0)
    assert any(c[0] == "num_fans" for c in g.calls)  # the board was asked how many fans it has
    assert s.columns == nvml.SENSOR_COLUMNS
    rows = s.read() + s.read()
    assert all(r.values["fan_pct"] is None for r in rows)
    assert s.capabilities()["supported"]["fan"] is False and s.capabilities()["fans_logged"] == 0
    s.close()


def test_fan_v2_not_supported_falls_back_to_the_single_reading(fake):
    """Catches: a driver that refuses nvmlDeviceGetFanSpeed_v2 (NOT_SUPPORTED) losing the fan duty or
    leaving empty per-fan columns: fan_pct is then nvmlDeviceGetFanSpeed's reading (fan 0)."""
    g = fake.gpus[0]
    g.fans_pct = [40, 61]
    g.fail["fan_v2"] = real_pynvml.NVML_ERROR_NOT_SUPPORTED
    s = nvml.NvmlSensor(0)
    assert any(c[0] == "fan_v2" for c in g.calls)  # the per-fan call was tried
    assert s.columns == nvml.SENSOR_COLUMNS and s.capabilities()["fans_logged"] == 0
    [row] = s.read()
    assert row.values["fan_pct"] == 40
    s.close()
