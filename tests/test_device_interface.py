"""The device interface (issue 28 item 5): backends in one registry, architecture facts and unit lists in
calib.core.arch, a vendor-neutral samples layer, and a new vendor as one module plus one registry line."""

from __future__ import annotations

import dataclasses
import json
import sys
import textwrap
from unittest import mock

import pandas as pd
import pytest

from calib.cli import main
from calib.core import activity, arch
from calib.core.errors import DeviceNotFoundError
from calib.core.session import read_session
from calib.core.units import IPP_UNIT_CLASSES, POWER_UNITS, unit_counts
from microbench.devices import registry
from microbench.devices.base import Backend


def test_every_registry_entry_is_a_backend_of_its_prefix():
    """Catches a registry line pointing at the wrong object or a backend answering to another prefix."""
    for prefix in registry.BACKENDS:
        try:
            b = registry.backend(prefix)
        except ImportError:  # a vendor binding that is not installed here
            continue
        assert isinstance(b, Backend) and b.prefix == prefix, prefix
    assert registry.backend("sim").virtual and not registry.backend("cuda").virtual


def test_open_device_dispatches_by_prefix_and_names_the_spec_when_unknown():
    dev = registry.open_device("sim:gtx580", seed=3)
    assert dev.info.name == "virtual GeForce GTX 580 (Fermi GF110)" and dev.seed == 3
    with pytest.raises(DeviceNotFoundError, match=r"^unknown device 'tpu:0': use sim:<preset>, cuda:<index>"):
        registry.open_device("tpu:0")
    with pytest.raises(DeviceNotFoundError, match=r"^unknown device 'cuda': use "):
        registry.open_device("cuda")


def test_default_device_is_the_first_real_gpu_of_any_backend(monkeypatch):
    """Catches discovery that only asks NVML: a GPU of a later backend is the default when NVML has none."""
    class Fake(Backend):
        prefix, vendor, library = "fake", "Fake", "none"

        def available(self):
            return True, "ok"

        def list_gpus(self):
            return [{"index": 2, "name": "Fake GPU", "uuid": "F-2"}]

        def open(self, what, seed=0):
            raise AssertionError

    monkeypatch.setattr(registry, "real_backends", lambda: [Fake()])
    assert registry.default_device_spec() == "fake:2"
    assert registry.real_gpus() == [{"index": 2, "name": "Fake GPU", "uuid": "F-2", "spec": "fake:2", "vendor": "Fake"}]
    monkeypatch.setattr(registry, "real_backends", lambda: [])
    assert registry.default_device_spec() == registry.DEFAULT_SIM


# -- architecture facts: one home for the unit list and the issue rate --------------------------------

def test_nvidia_facts_by_capability_by_name_and_for_an_unknown_generation():
    """The issue-rate fallback had two values (4.0 in the CUDA device, 0.25 in the activity layer);
    catches a device path that guesses instead of asking the table."""
    a = arch.nvidia_facts("6.0")
    assert (a.warp_issue_per_cycle, a.max_warps_per_sm, a.known) == (2.0, 64, True)  # GP100: 2 schedulers
    assert "tensor" not in a.units.units
    v = arch.nvidia_facts(None, "Tesla V100-SXM2-16GB")  # no CuPy: the board name finds GV100
    assert (v.arch, v.warp_issue_per_cycle) == ("7.0", 4.0) and "tensor" in v.units.units
    new = arch.nvidia_facts("13.0")  # newer than the table: the newest generation's figures, said so
    assert (new.warp_issue_per_cycle, new.known, new.arch) == (4.0, False, "13.0")
    assert new.device_fields()["architecture_known"] is False
    assert activity.DEFAULT_WARP_ISSUE_PER_CYCLE == arch.IPP_WARP_ISSUE_PER_CYCLE == 0.25


def test_amd_facts_count_in_32_thread_warps():
    """A CDNA CU issues one wave64 VALU instruction per cycle (4 SIMD16 x 1/4) = 2 warps of 32 threads, and
    holds 4 SIMDs x 8 waves x 64 threads = 64 warps; RDNA3 wave32: 2 SIMD32 x 1 = 2, 2 x 16 = 32 warps."""
    mi = arch.amd_facts("gfx90a:sramecc+:xnack-")
    assert (mi.arch, mi.family, mi.warp_size, mi.warp_issue_per_cycle, mi.max_warps_per_sm) == (
        "gfx90a", "CDNA2", 64, 2.0, 64)
    assert arch.amd_facts("gfx908").max_warps_per_sm == 80  # 10 waves per SIMD on CDNA1
    rd = arch.amd_facts("gfx1100")
    assert (rd.warp_size, rd.warp_issue_per_cycle, rd.max_warps_per_sm) == (32, 2.0, 32)
    unknown = arch.amd_facts("gfx1201")
    assert not unknown.known and unknown.warp_size == 64
    f = mi.device_fields()
    assert f["units"] == ["valu_fp32", "valu_fp64", "valu_int", "valu_trans", "matrix", "salu", "issue", "lds", "l1",
                          "l2", "hbm"]
    assert f["chip_units"] == ["l2", "hbm"] and f["mem_domain_units"] == ["hbm"] and f["warp_size"] == 64


def test_unit_counts_follow_the_family_mapping():
    """Hand count: fp 3, int 2, alu 1, ctrl 1, const 4, tex 5, global 6 on AMD's units; IPP's mapping
    unchanged (reg = everything but branches, fds = everything)."""
    pw = {"fp": 3, "int": 2, "alu": 1, "ctrl": 1, "const": 4, "tex": 5, "global": 6}
    amd = unit_counts(pw, unit_classes=arch.AMD_UNITS.classes)
    assert amd == {"valu_fp32": 3.0, "valu_fp64": 0.0, "valu_int": 3.0, "valu_trans": 0.0, "matrix": 0.0,
                   "salu": 5.0, "issue": 22.0, "lds": 0.0, "l1": 5.0, "l2": 0.0, "hbm": 6.0}
    ipp = unit_counts(pw)
    assert list(ipp) == list(POWER_UNITS) and ipp["reg"] == 21.0 and ipp["fds"] == 22.0 and ipp["tex"] == 5.0
    assert set(IPP_UNIT_CLASSES) == set(POWER_UNITS)
    # NVIDIA files carry no mapping (they are unchanged); AMD's is written
    assert "unit_classes" not in arch.nvidia_units(8).device_fields()
    assert arch.AMD_UNITS.device_fields()["unit_classes"]["salu"] == ["ctrl", "const"]


# -- the samples layer takes the GPU stream by scope, not by vendor ---------------------------------

def _manifest_with(tmp_path, sensors):
    from calib.core.session import SessionWriter

    w = SessionWriter.create(tmp_path / "s", {"device": {"name": "x"}, "sensors": sensors})
    w.close()
    return read_session(tmp_path / "s")


def test_power_stream_is_the_gpu_scope_sensor_of_any_vendor(tmp_path):
    """Catches the samples layer preferring kind 'nvml': an AMD stream listed after a host stream with
    power_w must still be the GPU's power."""
    from calib.segment import power_stream

    s = _manifest_with(tmp_path, [
        {"name": "rapl", "kind": "rapl", "scope": "host", "columns": ["power_w"]},
        {"name": "wall", "kind": "analyzer", "columns": ["power_w"]},   # written before scopes existed
        {"name": "amdsmi0", "kind": "amdsmi", "scope": "gpu", "columns": ["power_w", "energy_mj"]}])
    assert power_stream(s) == "amdsmi0"


# -- a new vendor: one module and one registry line ------------------------------------------------

_TOY = '''
"""A toy vendor for the device-interface test: one module, one registry line."""
import time

from calib.core.errors import DeviceNotFoundError
from microbench.devices.base import Backend, Row, Sensor


class ToySensor(Sensor):
    kind = "toy"
    columns = ("power_w", "energy_mj", "temp_c")

    def __init__(self, index):
        self.name = f"toy{index}"
        self.t0 = time.monotonic()

    def capabilities(self):
        return {"gpu": {"name": "Toy GPU", "uuid": "TOY-0", "index": 0}}

    def read(self):
        t = time.monotonic()
        return [Row(t, time.time(), {"power_w": 50.0, "energy_mj": 50.0 * 1000 * (t - self.t0), "temp_c": 40})]


class ToyBackend(Backend):
    prefix, vendor, library = "toy", "ToyVendor", "libtoy"

    def available(self):
        return True, "libtoy 1.0"

    def list_gpus(self):
        return [{"index": 0, "name": "Toy GPU", "uuid": "TOY-0", "measures": ["power_w", "energy_mj"]}]

    def open(self, what, seed=0):
        raise DeviceNotFoundError("toy GPUs run no kernels")

    def sensor(self, index):
        return ToySensor(index)


BACKEND = ToyBackend()
'''


def test_a_new_vendor_is_one_module_and_one_registry_line(tmp_path, monkeypatch, capsys):
    """The walk of a newcomer: write the module, add its line to BACKENDS; `calib devices`, `calib doctor`
    and `calib log --device` find it with no other edit (the AMD backend is the real example)."""
    (tmp_path / "toy_vendor.py").write_text(textwrap.dedent(_TOY))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(registry.BACKENDS, "toy", "toy_vendor:BACKEND")   # the one registry line
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    assert "real GPUs (ToyVendor, libtoy):\n  toy:0  Toy GPU  uuid TOY-0\n      measures: power_w, energy_mj\n" in out
    assert main(["doctor", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["backends"]["toy"] == {"vendor": "ToyVendor", "library": "libtoy", "available": True,
                                      "message": "libtoy 1.0", "gpus": []}
    sess = tmp_path / "log"
    assert main(["log", "--device", "toy:0", "--duration", "0.6", "--rate", "20", "-o", str(sess)]) == 0
    s = read_session(sess)
    assert s.manifest["device"]["name"] == "Toy GPU" and s.manifest["device"]["kind"] == "toy"
    df = s.stream("toy0")
    assert len(df) >= 5 and (df["power_w"] == 50.0).all()
    assert "toy0:" in capsys.readouterr().out
    sys.modules.pop("toy_vendor", None)


def test_log_device_refuses_a_virtual_or_malformed_spec(capsys, tmp_path):
    assert main(["log", "--device", "sim:gtx280", "-o", str(tmp_path / "a")]) == 2
    assert "ERROR: --device 'sim:gtx280': expected a real GPU, <backend>:<index>" in capsys.readouterr().err
    assert main(["log", "--device", "cuda:x", "-o", str(tmp_path / "b")]) == 2
    assert "ERROR: --device 'cuda:x': the index must be an integer (e.g. cuda:0)" in capsys.readouterr().err


_TOY_VIRTUAL = '''
"""A toy virtual vendor: one module, one registry line. Its one GPU: the GT200 physics cut to 10 SMs."""
from dataclasses import replace

from calib.core.errors import DeviceNotFoundError
from microbench.devices.base import Backend
from microbench.devices.sim.device import VirtualGPU
from microbench.devices.sim.presets import GTX280, register_preset

MINI = register_preset(replace(GTX280, name="mini280", description="toy GT200 with 10 SMs", sm_count=10))


class ToySimBackend(Backend):
    prefix, vendor, library, virtual = "toysim", "ToySim", "simulation (no library)", True

    def available(self):
        return True, "always"

    def list_gpus(self):
        return [{"index": "mini280", "name": MINI.description, "uuid": "TOYSIM-mini280"}]

    def open(self, what, seed=0):
        if what != "mini280":
            raise DeviceNotFoundError(f"unknown toysim GPU {what!r}: toysim:mini280")
        return VirtualGPU(MINI, seed=seed)


BACKEND = ToySimBackend()
'''


def test_a_new_virtual_backend_is_one_module_and_one_registry_line_and_runs_a_campaign(tmp_path, monkeypatch,
                                                                                        capsys):
    """The closing note's walk for a virtual GPU: the module above plus its registry line, and `calib devices`
    lists ``toysim:mini280`` and `calib run --device toysim:mini280 --campaign quick` measures, fits and
    reports recovery. Bugs caught: `calib devices` listed the sim presets only (no other virtual backend),
    and the run failed at the recovery report ("ERROR: no virtual GPU preset 'mini280'", exit 2) because
    the ground truth looked presets up by name in a fixed table (``register_preset`` now adds to it)."""
    from microbench.devices.sim import presets

    monkeypatch.setattr(presets, "PRESETS", dict(presets.PRESETS))   # the registration ends with the test
    (tmp_path / "toysim_vendor.py").write_text(textwrap.dedent(_TOY_VIRTUAL))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(registry.BACKENDS, "toysim", "toysim_vendor:BACKEND")   # the one registry line
    try:
        assert main(["devices"]) == 0
        assert "\n  toysim:mini280  toy GT200 with 10 SMs  (ToySim)\n" in capsys.readouterr().out
        assert main(["run", "--device", "toysim:mini280", "--campaign", "quick", "--name", "mini", "--quiet",
                     "--logs-dir", str(tmp_path / "logs"), "--fitted-dir", str(tmp_path / "fitted")]) == 0
    finally:
        sys.modules.pop("toysim_vendor", None)
    pf = json.loads((tmp_path / "fitted" / "mini.json").read_text())
    assert pf["device"]["sm_count"] == 10 and pf["device"]["preset"] == "mini280"   # the toy GPU, not sim:gtx280
    rec = json.loads((tmp_path / "fitted" / "mini.recovery.json").read_text())
    assert rec["preset"] == "mini280" and rec["heldout_mape_pct"] < 2.0
    truth = {r["parameter"]: r for r in rec["parameters"]}
    fp = truth["power.max_power_fp_w"]   # GTX280's design value, 0.2 W per SM at AR = 1
    assert fp["truth"] == 0.2 and abs(fp["fitted"] - 0.2) < 3 * fp["stderr_total"]
    with pytest.raises(ValueError, match="a different virtual GPU preset is already called 'gtx280'"):
        presets.register_preset(dataclasses.replace(presets.GTX280, sm_count=10))
