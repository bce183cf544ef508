"""The AMD backend over a fake ``amdsmi`` (microbench.testing.amdsmi_fake), the fake checked against the
real wheel's source, and each known amdsmi fault giving one message or a named fallback."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import math
import threading
from pathlib import Path

import pytest

from calib.cli import main
from calib.core.errors import (
    DeviceLibraryError,
    DeviceLostError,
    DeviceNoPermissionError,
    DeviceNotFoundError,
    TransientSensorError,
)
from calib.core.session import read_session
from microbench.devices import amd
from microbench.devices.base import Launch, RunResult, Workload
from microbench.testing import amdsmi_fake as F

S = F.STATUS


@pytest.fixture
def mi300x(monkeypatch):
    return F.install(monkeypatch, [F.mi300x()])


# -- the fake against the real package ---------------------------------------------------------------

def _real_sources() -> dict[str, ast.Module]:
    spec = importlib.util.find_spec("amdsmi")  # finds the package without running it (it needs libamd_smi.so)
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("the amdsmi wheel is not installed (pip install 'gpu-calib[amd]')")
    root = Path(next(iter(spec.submodule_search_locations)))
    return {n: ast.parse((root / f"{n}.py").read_text()) for n in ("amdsmi_interface", "amdsmi_wrapper")}


def _returned_keys(fn: ast.FunctionDef) -> set[str]:
    """String keys of the dict literals a function of the real source builds (its return shape)."""
    keys: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Dict):
            keys |= {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    return keys


def test_fake_has_the_real_function_names_signatures_and_return_keys(monkeypatch):
    """Catches a fake written from the same understanding as the reader: every function, parameter name,
    status code and enum value the fake offers must be the real 7.x wheel's, and every dict it returns
    must have the keys the real function builds."""
    src = _real_sources()
    real_fns = {n.name: n for n in src["amdsmi_interface"].body if isinstance(n, ast.FunctionDef)}
    fake = F.fake_module([F.mi300x()])
    fake.FAKE.init_count = 1
    h = fake.amdsmi_get_processor_handles()[0]
    calls = {
        "amdsmi_get_power_info": (h,), "amdsmi_get_energy_count": (h,), "amdsmi_get_gpu_asic_info": (h,),
        "amdsmi_get_gpu_enumeration_info": (h,), "amdsmi_get_gpu_driver_info": (h,), "amdsmi_get_gpu_activity": (h,),
        "amdsmi_get_power_cap_info": (h,), "amdsmi_get_clock_info": (h, fake.AmdSmiClkType.GFX),
        "amdsmi_get_clk_freq": (h, fake.AmdSmiClkType.GFX), "amdsmi_get_lib_version": (),
    }
    checked = 0
    for name in dir(fake):
        if not name.startswith("amdsmi_") or name == "amdsmi_wrapper":
            continue
        assert name in real_fns, f"{name} is not a function of amdsmi 7.x"
        real_args = [a.arg for a in real_fns[name].args.args]
        assert list(inspect.signature(getattr(fake, name)).parameters) == real_args, name
        if name in calls:
            got = getattr(fake, name)(*calls[name])
            want = _returned_keys(real_fns[name])
            assert set(got) == want or (name == "amdsmi_get_energy_count" and set(got) <= want), (name, got, want)
        checked += 1
    assert checked == 20
    consts = {t.id: n.value.value for n in src["amdsmi_wrapper"].body if isinstance(n, ast.Assign)
              for t in n.targets if isinstance(t, ast.Name) and isinstance(n.value, ast.Constant)}
    for k, v in S.items():
        assert consts[k] == v, k
    for enum, prefix in ((fake.AmdSmiClkType, "AMDSMI_CLK_TYPE_"), (fake.AmdSmiTemperatureType, "AMDSMI_TEMPERATURE_TYPE_"),
                         (fake.AmdSmiTemperatureMetric, "AMDSMI_TEMP_"), (fake.AmdSmiDevPerfLevel, "AMDSMI_DEV_PERF_LEVEL_"),
                         (fake.AmdSmiInitFlags, "AMDSMI_")):
        for member in enum.__members__:
            assert consts[prefix + member] == enum[member], (enum, member)
    # the real wrapper's N/A rule for power: 0xFFFF -> "N/A"
    assert "if value == 65535:\n            power_info_dict[key] = 'N/A'" in ast.unparse(real_fns["amdsmi_get_power_info"])


def test_the_real_wheel_without_libamd_smi_is_one_quiet_error(capsys):
    """The real 7.x wheel prints to stdout and raises KeyError('libamd_smi.so') on import without ROCm;
    catches an import that leaks the print or a traceback."""
    if importlib.util.find_spec("amdsmi") is None:
        pytest.skip("the amdsmi wheel is not installed")
    with pytest.raises(DeviceLibraryError, match=r"^amdsmi cannot load libamd_smi\.so \(.*libamd_smi\.so.*\); "
                                                 r"pip install 'gpu-calib\[amd\]'"):
        amd.load_amdsmi()
    assert capsys.readouterr().out == ""
    ok, msg = amd.amdsmi_available()
    assert not ok and "amd-smi-lib" in msg


def test_amdsmi_not_installed_names_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "amdsmi", None)  # import amdsmi -> ImportError
    with pytest.raises(DeviceLibraryError, match=r"^amdsmi is not installed .*pip install 'gpu-calib\[amd\]'"):
        amd.load_amdsmi()


# -- readings ----------------------------------------------------------------------------------------

def test_mi300x_readings_in_si_units(monkeypatch):
    """Current power (MI300X: average N/A, left empty), energy = accumulator x 15.3 uJ, temperatures in
    degrees as returned (catches the /1000 of Zeus and CodeCarbon), clocks in MHz, power cap uW -> W."""
    now = [F.time.time()]
    fake = F.install(monkeypatch, [F.mi300x(power_fn=lambda t: 312.4, t0=now[0] - 10.0)], clock=lambda: now[0])
    with amd.AmdGpu(0, energy_check_s=0) as gpu:
        caps = gpu.capabilities()
        v = gpu.sample()
        ident = gpu.identity()
    # by hand: the start value 1,234,567 ticks x 15.3 uJ = 18,888.88 mJ, plus 10 s at 312.4 W = 3,124,000 mJ
    want_mj = 1_234_567 * 15.3e-3 + 3_124_000.0
    assert caps["power_w_source"] == "amdsmi_get_power_info['current_socket_power']"
    assert caps["power_avg_source"] is None and v["power_avg_w"] is None
    assert v["power_w"] == 312.0                      # integer W from the library
    assert v["energy_mj"] == pytest.approx(want_mj, rel=1e-7)
    assert v["energy_timestamp_s"] == pytest.approx(now[0], abs=1e-6)
    assert caps["energy_counter_key"] == "energy_accumulator"
    assert caps["energy_counter_resolution_uj"] == pytest.approx(15.3, rel=1e-6)
    assert (v["temp_c"], v["mem_temp_c"], v["edge_temp_c"]) == (48.0, 41.0, None)
    assert caps["unsupported_reasons"]["temp_edge"] == "not supported"
    assert (v["sm_mhz"], v["mem_mhz"], v["util_gpu_pct"]) == (2100.0, 1300.0, 100.0)
    assert ident["power_limit_w"] == 750.0 and ident["architecture"] == "gfx942" and ident["hip_mapping"] == "hip_id"
    assert fake.FAKE.init_count == 0


def test_counter_cross_check_passes_on_a_working_counter(mi300x):
    with amd.AmdGpu(0, energy_check_s=0.3) as gpu:
        chk = gpu.capabilities()["energy_counter_check"]
    assert chk["ratio"] == pytest.approx(1.0, abs=0.05) and gpu.capabilities()["supported"]["energy_counter"]


def test_calib_log_on_the_fake_logs_power_and_energy_within_half_a_percent(monkeypatch, tmp_path, capsys):
    """The must-show: `calib log --device rocm:0` over the fake; mean logged power against the fake's
    power at the logged instants, and the counter's energy against the exact integral, both within 0.5 %.
    The integral runs between the counter's own timestamps (``energy_timestamp_s``, the library's clock of
    each reading), not the logger's row stamps: on a loaded machine the read lags its row stamp by a
    varying few ms (1206.3 J against 1199.7 J, +0.55 %, under two CPU burners), which is the test's timing,
    not the counter's error."""
    fake = F.install(monkeypatch, [F.mi300x(power_fn=lambda t: 420.0 + 180.0 * math.sin(2 * math.pi * t / 1.7))])
    g = fake.FAKE.gpus[0]
    sess = tmp_path / "log"
    assert main(["log", "--device", "rocm:0", "--rate", "20", "--duration", "3", "-o", str(sess)]) == 0
    s = read_session(sess)
    assert s.manifest["device"]["kind"] == "amdsmi" and s.manifest["device"]["name"] == "AMD Instinct MI300X"
    [entry] = s.manifest["sensors"]
    assert entry["scope"] == "gpu" and entry["capabilities"]["energy_counter_resolution_uj"] == pytest.approx(15.3)
    df = s.stream("amdsmi0")
    truth_p = [g.power_fn(t) for t in df["t_wall_s"]]
    p_err = (df["power_w"].mean() - sum(truth_p) / len(truth_p)) / (sum(truth_p) / len(truth_p))
    e_log = (df["energy_mj"].iloc[-1] - df["energy_mj"].iloc[0]) / 1000.0
    t0, t1 = df["energy_timestamp_s"].iloc[0], df["energy_timestamp_s"].iloc[-1]
    e_true = g.energy_j(t1) - g.energy_j(t0)
    assert abs(p_err) < 0.005, p_err
    assert e_log == pytest.approx(e_true, rel=0.005)
    out = capsys.readouterr().out
    assert "amdsmi0:" in out and "energy counter" in out


# -- faults -----------------------------------------------------------------------------------------

def test_hip_order_differs_from_amdsmi_order(monkeypatch):
    """Catches opening amdsmi handle N for rocm:N: here handle 0 is HIP device 1."""
    F.install(monkeypatch, [F.mi300x(hip_id=1, uuid="second"), F.mi300x(hip_id=0, uuid="first")])
    with amd.AmdGpu(0, energy_check_s=0) as g:
        assert (g.uuid, g.smi_index, g.mapping) == ("first", 1, "hip_id")
    with pytest.raises(DeviceNotFoundError, match=r"rocm:5 not found: amdsmi's GPUs have HIP indices \[0, 1\]"):
        amd.AmdGpu(5)


def test_odd_mi250x_gcd_reads_the_package_power_of_its_sibling(monkeypatch):
    """MI250/MI250X: the odd GCD reports 0 W; fallback sibling_gcd reads the even GCD (same OAM), and both
    streams say they are the package's power (catches logging 0 W, or the even GCD's as one GCD's)."""
    fake = F.install(monkeypatch, [F.mi250x_gcd(0, power_fn=lambda t: 377.0), F.mi250x_gcd(1)])
    with pytest.warns(RuntimeWarning, match=r"rocm:1 \(AMD Instinct MI250X\): reads 0 W .*fallback sibling_gcd: "
                                            r"power and energy are the package's, read from amdsmi GPU 0"):
        g1 = amd.AmdGpu(1, energy_check_s=0.2)
        caps = g1.capabilities()
    v = g1.sample()
    assert v["power_w"] == 377.0 and v["energy_mj"] > 0
    assert caps["power_scope"] == "package (both GCDs of the OAM)"
    assert caps["power_w_source"] == "amdsmi_get_power_info['socket_power']"  # MI200: no current power (7.x)
    g1.close()
    # before 7.x there is no socket_power: MI200's average is the reading
    F.install(monkeypatch, [F.mi250x_gcd(0, na={"current_socket_power", "socket_power"})])
    with amd.AmdGpu(0, energy_check_s=0) as g:
        assert g.capabilities()["power_w_source"] == "amdsmi_get_power_info['average_socket_power']"
        assert g.sample()["power_avg_w"] == 300.0
    with amd.AmdGpu(0, energy_check_s=0) as g0:
        assert g0.capabilities()["power_scope"] == "package (both GCDs of the OAM)"
        assert "zero_power" not in g0.capabilities()["faults"]
    # an odd GCD alone (its sibling not visible, e.g. a container given one GCD): said, not logged as 0 W
    F.install(monkeypatch, [F.mi250x_gcd(1, hip_id=0)])
    with amd.AmdGpu(0, energy_check_s=0) as g:
        caps = g.capabilities()
        assert not caps["supported"]["power"] and g.sample()["power_w"] is None
        assert caps["unsupported_reasons"]["power"].startswith("reads 0 W and no other GCD of the same OAM package")
    assert fake.FAKE.concurrent_calls == 0


def test_stuck_energy_counter_is_rejected_with_a_named_fallback(monkeypatch):
    """MI100-like counter that never moves: outside 0.1-10x of integrated power -> not logged."""
    F.install(monkeypatch, [F.mi300x(stuck_counter=True)])
    with pytest.warns(RuntimeWarning, match=r"the energy counter gave 0\.000 J in 0\.\d+ s while power integrated to "
                                            r"\d+\.\d J \(ratio 0, outside 0\.1-10x; MI100 counters are known to stick\): "
                                            r"counter not logged, fallback integrated_power"):
        g = amd.AmdGpu(0, energy_check_s=0.3)
        caps = g.capabilities()
    assert not caps["supported"]["energy_counter"] and caps["energy_mj_source"] is None
    v = g.sample()
    assert v["energy_mj"] is None and v["power_w"] == 300.0
    g.close()


def test_pre_6_3_energy_key(monkeypatch):
    """The 6.2 wheels return the accumulator as 'power'."""
    F.install(monkeypatch, [F.mi300x(energy_key="power")])
    with amd.AmdGpu(0, energy_check_s=0.2) as g:
        assert g.capabilities()["energy_counter_key"] == "power" and g.sample()["energy_mj"] > 0


@pytest.mark.parametrize("code, exc, text", [
    ("AMDSMI_STATUS_BUSY", TransientSensorError, "transient amdsmi failure: BUSY (amdsmi status 30); will retry"),
    ("AMDSMI_STATUS_RETRY", TransientSensorError, "transient amdsmi failure: RETRY (amdsmi status 9)"),
    ("AMDSMI_STATUS_NOT_FOUND", DeviceLostError, "the GPU stopped answering: NOT_FOUND (amdsmi status 31)"),
    ("AMDSMI_STATUS_NO_PERM", DeviceNoPermissionError, "not permitted: NO_PERM (amdsmi status 10)"),
    ("AMDSMI_STATUS_DRIVER_NOT_LOADED", DeviceLibraryError, "amdsmi is not usable: DRIVER_NOT_LOADED"),
])
def test_status_codes_become_typed_errors_with_one_message(monkeypatch, code, exc, text):
    fake = F.install(monkeypatch, [F.mi300x()])
    with amd.AmdGpu(0, energy_check_s=0) as g:
        g.capabilities()
        fake.FAKE.gpus[0].fail["amdsmi_get_power_info"] = S[code]
        with pytest.raises(exc) as e:
            g.sample()
    assert str(e.value).startswith(f"rocm:0 (AMD Instinct MI300X): power info: {text}")


def test_unsupported_at_probe_is_recorded_not_raised(monkeypatch):
    F.install(monkeypatch, [F.mi300x(fail={"amdsmi_get_gpu_activity": S["AMDSMI_STATUS_NOT_SUPPORTED"],
                                           "amdsmi_get_energy_count": S["AMDSMI_STATUS_NO_PERM"]})])
    with amd.AmdGpu(0) as g:
        caps = g.capabilities()
        v = g.sample()
    assert caps["unsupported_reasons"] == {"temp_edge": "not supported", "energy_counter": "no permission",
                                           "activity": "not supported"}
    assert v["util_gpu_pct"] is None and v["energy_mj"] is None and v["power_w"] == 300.0


def test_library_calls_are_serialised_across_threads(monkeypatch):
    """Not thread-safe before ROCm 7.2: two threads polling one GPU never overlap inside the library.
    The fake counts overlapping calls; without the lock they happen (the check can fail)."""
    fake = F.install(monkeypatch, [F.mi300x()])
    with amd.AmdGpu(0, energy_check_s=0) as g:
        g.capabilities()

        def poll():
            for _ in range(15):
                g.sample()

        def run_two():
            ts = [threading.Thread(target=poll) for _ in range(2)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()

        run_two()
        assert fake.FAKE.concurrent_calls == 0
        monkeypatch.setattr(amd, "_LOCK", _NoLock())
        run_two()
        assert fake.FAKE.concurrent_calls > 0


class _NoLock:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


# -- clocks ---------------------------------------------------------------------------------------

def test_clock_hold_and_restore_with_determinism_fallback(monkeypatch):
    fake = F.install(monkeypatch, [F.mi300x()])
    gpu = fake.FAKE.gpus[0]
    with amd.AmdGpu(0, energy_check_s=0) as g:
        assert g.supported_clocks() == {"core_mhz": [500, 1300, 2100], "mem_mhz": [1300]}
        g.lock_clocks(1300, 1300)
        assert gpu.clk_range == {int(fake.AmdSmiClkType.GFX): (1300, 1300)}   # one memory level: not touched
        assert g.clocks_mhz() == (1300.0, 1300.0)
        with pytest.raises(Exception, match=r"GFX clock 1250 MHz is not a DPM level; nearest: \[500, 1300, 2100\] MHz"):
            g.lock_clocks(1250, None)
    assert gpu.perf_level == 0 and gpu.clk_range == {}          # AUTO restored at close
    gpu.fail["amdsmi_set_gpu_clk_range"] = S["AMDSMI_STATUS_NOT_SUPPORTED"]
    with amd.AmdGpu(0, energy_check_s=0) as g:
        g.lock_clocks(500, None)
        assert gpu.determinism_mhz == 500 and g.locked["fallback"] == "determinism"
    assert gpu.perf_level == 0
    gpu.fail["amdsmi_set_gpu_perf_determinism_mode"] = S["AMDSMI_STATUS_NO_PERM"]
    with amd.AmdGpu(0, energy_check_s=0) as g, pytest.raises(DeviceNoPermissionError, match="needs root"):
        g.lock_clocks(500, None)


# -- device, discovery, doctor ----------------------------------------------------------------------

class FakeRunner:
    def __init__(self):
        self.prepared, self.closed = [], False

    def prepare(self, kernel, params, launch):
        self.prepared.append((kernel, launch))
        return kernel

    def run_for(self, prepared, duration_s):
        return RunResult(launches=10, kernel_time_s=duration_s / 10)

    def close(self):
        self.closed = True


def test_rocm_device_info_has_amd_units_and_wave64_facts(monkeypatch):
    F.install(monkeypatch, [F.mi250x_gcd(0), F.mi250x_gcd(1)])
    runner = FakeRunner()
    dev = amd.RocmDevice(0, runner=runner, energy_check_s=0)
    info = dev.info
    assert (info.name, info.sm_count, info.warp_issue_per_cycle) == ("AMD Instinct MI250X", 110, 2.0)
    assert info.extra["units"][:2] == ["valu_fp32", "valu_fp64"] and info.extra["warp_size"] == 64
    assert info.extra["mem_domain_units"] == ["hbm"] and info.extra["max_warps_per_sm"] == 64
    assert (info.default_core_mhz, info.default_mem_mhz) == (1700.0, 1600.0)
    assert info.extra["power_scope"] == "package (both GCDs of the OAM)"
    [s] = dev.sensors()
    assert s.name == "amdsmi0" and s.kind == "amdsmi"
    dev.run(Workload("fp32_fma", {"fp": 10.0}, Launch(110, 256, 110), kernel="fp32_fma"), 0.1)
    assert runner.prepared == [("fp32_fma", Launch(110, 256, 110))]
    dev.close()
    assert not runner.closed  # given by the caller: not ours to close


def test_calib_devices_and_doctor_list_amd_gpus_and_what_each_measures(monkeypatch, capsys):
    F.install(monkeypatch, [F.mi250x_gcd(0), F.mi250x_gcd(1), F.mi300x(hip_id=2, oam_id=1)])
    assert main(["devices"]) == 0
    out, err = capsys.readouterr()
    assert err.count("WARNING: rocm:1 (AMD Instinct MI250X): reads 0 W") == 1
    assert "real GPUs (AMD, amdsmi):\n  rocm:0  AMD Instinct MI250X" in out
    assert "  rocm:2  AMD Instinct MI300X  uuid 00ff74a1-0000-1000-8013-2c1a6d2f6b1e  [gfx942]\n" in out
    assert "measures: power_w, energy_mj, temp_c (hotspot), mem_temp_c (HBM), sm_mhz, mem_mhz, util_gpu_pct, " \
           "util_mem_pct" in out
    assert "note: reads 0 W (an odd MI250/MI250X GCD" in out
    assert main(["doctor", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)["backends"]["rocm"]
    assert rep["available"] and [g["identity"]["index"] for g in rep["gpus"]] == [0, 1, 2]
    assert rep["gpus"][1]["notes"]["power scope"] == "package (both GCDs of the OAM)"
    assert rep["gpus"][2]["not_available"] == ["edge_temp_c (not supported)"]


def test_the_registry_opens_rocm_devices(monkeypatch):
    """`--device rocm:N` goes through the registry line to the AMD backend."""
    from microbench.devices import registry

    F.install(monkeypatch, [F.mi300x()])
    monkeypatch.setattr(amd.BACKEND, "device_class", lambda index: ("RocmDevice", index))
    assert registry.open_device("rocm:0") == ("RocmDevice", 0)
    with pytest.raises(DeviceNotFoundError, match=r"^device rocm:x: expected rocm:<index>, e\.g\. rocm:0$"):
        registry.open_device("rocm:x")
    assert [g["spec"] for g in registry.real_gpus()] == ["rocm:0"]
