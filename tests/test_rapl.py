"""The RAPL host sensor on fake powercap trees (microbench.testing.powercap_fake): zones by name, wraps,
DRAM absent on AMD said once, unreadable zones named with the fix (refusal injected at the open: root reads
anything), and `calib log --rapl`."""

from __future__ import annotations

import builtins
import math
import threading
import time
import warnings

import pytest

from calib.cli import main
from calib.core.errors import DeviceError, DeviceNoPermissionError
from calib.core.session import read_session
from microbench.devices import rapl
from microbench.testing import powercap_fake as PC


def _trace(mean_w: float, swing_w: float, period_s: float):
    return lambda t: mean_w + swing_w * math.sin(2 * math.pi * t / period_s)


def _drive(tree: PC.FakePowercap, sensor: rapl.RaplSensor, seconds: float, period_s: float = 0.1):
    """Read the sensor every ``period_s`` of the fake's time while it runs; returns the rows."""
    rows = sensor.read()
    for _ in range(int(round(seconds / period_s))):
        tree.advance(period_s)
        rows += sensor.read()
    return rows


def _clock(tree):
    return lambda: (tree.t, 1.7e9 + tree.t)


def test_two_wraps_on_an_intel_server_within_0_1_percent(tmp_path):
    """Two sockets with DRAM; each package counter wraps twice in the trace (a 22-bit register of 61 uJ
    units: 256 J), the DRAM counters not. Catches negative energy after a wrap (CodeCarbon, pyJoules)
    and a host total that adds psys/core or misses DRAM."""
    tree = PC.intel_server(tmp_path, _trace(100.0, 40.0, 1.3), _trace(20.0, 5.0, 0.7), bits=22, start_j=100.0)
    s = rapl.RaplSensor(tmp_path, clock=_clock(tree), max_power_w=300.0)
    assert s.columns == ("package_0_energy_j", "package_0_dram_energy_j", "package_1_energy_j",
                         "package_1_dram_energy_j", "host_energy_j", "host_power_w")
    rows = _drive(tree, s, 6.0)
    truth = {k: z.energy_j for k, z in tree.zones.items()}
    assert [tree.wraps(k) for k in ("package-0", "package-1")] == [2, 2]
    assert s.wraps == {"package-0": 2, "package-0/dram": tree.wraps("package-0/dram"), "package-1": 2,
                       "package-1/dram": tree.wraps("package-1/dram")}
    last = rows[-1].values
    for key, col in (("package-0", "package_0_energy_j"), ("package-1", "package_1_energy_j"),
                     ("package-0/dram", "package_0_dram_energy_j")):
        assert last[col] == pytest.approx(truth[key], rel=1e-3), key
    assert last["host_energy_j"] == pytest.approx(sum(truth.values()), rel=1e-3)
    powers = [r.values["host_power_w"] for r in rows[1:]]
    assert rows[0].values["host_power_w"] is None and min(powers) > 0   # no negative power at a wrap
    assert sum(powers) / len(powers) == pytest.approx(sum(truth.values()) / 6.0, rel=1e-3)


def test_amd_zen_tree_has_no_dram_and_says_so_once(tmp_path):
    """AMD Zen: package and core only. DRAM absent is one warning, no column (never a column of zeros);
    host power is the package; a 2^-16 J unit gives a 65.5 kJ range (wraps in under 4 minutes at 280 W)."""
    tree = PC.amd_zen(tmp_path, _trace(180.0, 60.0, 2.0), _trace(120.0, 40.0, 2.0), bits=24, start_j=10.0)
    full = PC.FakeZone("package-0", lambda t: 0.0, unit_uj=PC.AMD_UNIT_UJ)
    assert full.max_energy_range_uj / 1e6 == pytest.approx(65536.0, rel=1e-6)
    assert full.max_energy_range_uj / 1e6 / 280.0 < 240.0
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        s = rapl.RaplSensor(tmp_path, clock=_clock(tree), max_power_w=300.0)
    said = [str(w.message) for w in got]
    assert said == ["RAPL: dram: this machine's RAPL tree has no DRAM zone (AMD Zen exposes package and core only; "
                    "client Intel parts often none): host power is the packages' alone, DRAM not measured"]
    assert s.columns == ("package_0_energy_j", "package_0_core_energy_j", "host_energy_j", "host_power_w")
    assert not any("dram" in c for c in s.columns)
    assert s.capabilities()["host_power"] == "package-0"
    rows = _drive(tree, s, 4.0)
    assert tree.wraps("package-0") == 2
    assert rows[-1].values["host_energy_j"] == pytest.approx(tree.zones["package-0"].energy_j, rel=1e-3)
    assert rows[-1].values["package_0_core_energy_j"] == pytest.approx(tree.zones["package-0/core"].energy_j, rel=1e-3)


def test_intel_client_psys_core_and_mmio_are_not_added(tmp_path):
    """Client part: host power is package-0 only (core and uncore are inside it, psys contains it, the
    intel-rapl-mmio duplicate is the same counter)."""
    tree = PC.intel_client(tmp_path, _trace(15.0, 5.0, 1.0), _trace(9.0, 3.0, 1.0), _trace(35.0, 8.0, 1.0))
    s = rapl.RaplSensor(tmp_path, clock=_clock(tree))
    assert s.columns == ("package_0_energy_j", "package_0_core_energy_j", "package_0_uncore_energy_j", "psys_energy_j",
                         "host_energy_j", "host_power_w")
    rows = _drive(tree, s, 3.0)
    assert rows[-1].values["host_energy_j"] == pytest.approx(tree.zones["package-0"].energy_j, rel=1e-3)
    assert rows[-1].values["psys_energy_j"] == pytest.approx(tree.zones["psys"].energy_j, rel=1e-3)


def test_zones_are_found_by_name_not_index(tmp_path):
    """The directory numbers are not the roles: here intel-rapl:0 is psys and the package is intel-rapl:1."""
    tree = PC.FakePowercap(tmp_path, [], psys=None)
    tree._make("intel-rapl:0", PC.FakeZone("psys", lambda t: 50.0), "psys")
    pk = PC.FakeZone("package-0", lambda t: 20.0)
    tree._make("intel-rapl:1", pk, "package-0")
    tree._write()
    s = rapl.RaplSensor(tmp_path, clock=_clock(tree))
    assert s.capabilities()["host_power"] == "package-0"
    rows = _drive(tree, s, 1.0)
    assert rows[-1].values["host_energy_j"] == pytest.approx(20.0, rel=1e-3)


def _refuse(paths_ending: tuple[str, ...]):
    real_open = builtins.open

    def fake_open(path, *a, **kw):
        if str(path).endswith(paths_ending):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *a, **kw)
    return fake_open


def test_unreadable_zones_are_named_with_the_fix(tmp_path, monkeypatch):
    """CVE-2020-8694 made energy_uj root-only. Refusal is injected at the open (chmod 000 does not stop
    root). One unreadable DRAM zone: named with the fix, the rest logged; DRAM not said absent."""
    tree = PC.intel_server(tmp_path, _trace(100.0, 0.0, 1.0), _trace(20.0, 0.0, 1.0))
    monkeypatch.setattr(rapl, "open", _refuse(("intel-rapl:0:0/energy_uj",)), raising=False)
    with pytest.warns(RuntimeWarning, match=r"RAPL zone package-0/dram: .*intel-rapl:0:0/energy_uj: not readable by "
                                            r"this user \(root only since CVE-2020-8694\); run as root, or let users read "
                                            r"the counters with a udev rule"):
        s = rapl.RaplSensor(tmp_path, clock=_clock(tree))
    assert "package_0_dram_energy_j" not in s.columns and "package_1_dram_energy_j" in s.columns
    assert s.absent == [] and list(s.unreadable) == ["package-0/dram"]
    assert "/etc/udev/rules.d/99-rapl.rules" in s.unreadable["package-0/dram"]
    # nothing readable: refused, with the fix (not an empty stream)
    monkeypatch.setattr(rapl, "open", _refuse(("energy_uj",)), raising=False)
    with pytest.raises(DeviceNoPermissionError, match=r"^RAPL: no zone is readable: package-0: .*run as root, or let "
                                                      r"users read the counters with a udev rule"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rapl.RaplSensor(tmp_path, clock=_clock(tree))


def test_a_polling_period_that_could_miss_a_wrap_is_refused(tmp_path):
    PC.intel_server(tmp_path, lambda t: 100.0, lambda t: 10.0, bits=16)  # 4 J range: wraps in 15 ms at 270 W
    with pytest.raises(DeviceError, match=r"RAPL: polling every 0\.1 s could miss a counter wrap"):
        rapl.RaplSensor(tmp_path, period_s=0.1)


def test_no_rapl_here_is_one_clear_error(tmp_path):
    with pytest.raises(DeviceError, match=r"RAPL: no intel-rapl zone under .* \(no RAPL on this machine"):
        rapl.RaplSensor(tmp_path)


def test_calib_log_rapl_on_a_fake_tree(tmp_path, capsys):
    """`calib log --rapl` with the fake tree advancing in real time: the session's host energy against the
    fake's truth; DRAM absent said once on the AMD tree."""
    root = tmp_path / "powercap"
    tree = PC.amd_zen(root, lambda t: 150.0, lambda t: 90.0)
    stop = threading.Event()
    t0 = time.monotonic()

    def run():
        last = time.monotonic()
        while not stop.is_set():
            time.sleep(0.01)
            now = time.monotonic()
            tree.advance(now - last, step_s=0.01)
            last = now

    th = threading.Thread(target=run)
    th.start()
    try:
        assert main(["log", "--rapl", "--powercap", str(root), "--rate", "20", "--duration", "1.5",
                     "-o", str(tmp_path / "s")]) == 0
    finally:
        stop.set()
        th.join()
    out, err = capsys.readouterr()
    assert err.count("WARNING: RAPL: dram: this machine's RAPL tree has no DRAM zone") == 1
    s = read_session(tmp_path / "s")
    [entry] = s.manifest["sensors"]
    assert (entry["kind"], entry["scope"]) == ("rapl", "host") and entry["capabilities"]["absent"]
    df = s.stream("rapl").dropna(subset=["host_energy_j"])
    # the fake advances in ~10 ms steps of real time: the mean power over the log is its 150 W to ~1 %
    mean_w = (df["host_energy_j"].iloc[-1] - df["host_energy_j"].iloc[0]) / (df["t_mono_s"].iloc[-1] - df["t_mono_s"].iloc[0])
    assert len(df) >= 10 and mean_w == pytest.approx(150.0, rel=0.03)
    assert "rapl:" in out and "host energy" in out and "(package-0)" in out
    assert time.monotonic() - t0 < 60


def test_calib_run_attaches_rapl_to_a_real_gpu_where_readable(tmp_path, monkeypatch):
    """A real GPU's campaign logs the host's counters when they are readable; when not, one warning with
    the fix and the campaign goes on (host power is optional, never silently zero)."""
    from calib.commands.run import _attach_rapl
    from microbench.devices import amd
    from microbench.testing import amdsmi_fake as F

    F.install(monkeypatch, [F.mi300x()])
    PC.intel_server(tmp_path, lambda t: 90.0, lambda t: 10.0)
    monkeypatch.setattr(rapl, "POWERCAP", tmp_path)
    dev = amd.RocmDevice(0, runner=object(), energy_check_s=0)
    _attach_rapl(dev)
    assert [s.name for s in dev.sensors()] == ["amdsmi0", "rapl"] and dev.sensors()[1].scope == "host"
    dev2 = amd.RocmDevice(0, runner=object(), energy_check_s=0)
    monkeypatch.setattr(rapl, "open", _refuse(("energy_uj",)), raising=False)
    with pytest.warns(RuntimeWarning, match=r"no host power \(system baseline and copies without the host's "
                                            r"CPU/DRAM\): RAPL: no zone is readable: .*udev rule"):
        _attach_rapl(dev2)
    assert [s.name for s in dev2.sensors()] == ["amdsmi0"]
    dev.close()
    dev2.close()
