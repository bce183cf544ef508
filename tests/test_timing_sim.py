"""The virtual GPU's timing physics for the latency, departure and bandwidth microbenchmarks, and the
unchanged times of the power campaign's workloads."""

from __future__ import annotations

import numpy as np
import pytest

from microbench.benchmarks import plan
from microbench.devices import open_device
from microbench.devices.sim.timing import dram_chase_latency_cycles
from microbench.timing_truth import timing_truth
from microbench.timing_plan import TimingBenchmark, timing_benchmarks

#: kernel times (s) of power-campaign workloads, from the physics before the timing microbenchmarks
#: were added: they must not move (the power fits and their recovery depend on them)
REFERENCE_TIMES = {
    "gtx280": {"fp32_fma/w16": 0.004050057, "sfu/w4": 0.02290062628, "dram/w16": 0.2586905562,
               "fma_intensity/k32": 0.2439120352, "app_stencil": 0.004709170146},
    "titanx": {"fp32_fma/w16": 0.000499852461, "sfu/w4": 0.006675965654, "dram/w16": 0.08804304782,
               "fma_intensity/k32": 0.02376005929, "app_stencil": 0.001598283832},
}


@pytest.mark.parametrize("preset", list(REFERENCE_TIMES))
def test_power_campaign_times_unchanged(preset):
    dev = open_device(f"sim:{preset}")
    _, bl = plan(dev.info, "quick")
    for b in bl:
        if b.name in REFERENCE_TIMES[preset]:
            t, _ = dev.evaluate(b.workload(dev.info))
            assert t == pytest.approx(REFERENCE_TIMES[preset][b.name], rel=1e-8), b.name


def _bench(dev, name):
    _, bl = plan(dev.info, "standard")
    return next(b for b in bl if b.name == name)


def _cycles(dev, b):
    if b.clocks:
        dev.set_clocks(*b.clocks)
    t, _ = dev.evaluate(b.workload(dev.info))
    core, _ = dev.clocks()
    dev.set_clocks(None, None)
    return (t - dev.preset.timing.launch_overhead_s) * core * 1e6


def test_timing_benchmarks_are_marked_and_short():
    dev = open_device("sim:titanx")
    spec, bl = plan(dev.info, "standard")
    tb = [b for b in bl if b.role == "timing"]
    assert tb == timing_benchmarks(dev.info, spec)
    assert all(isinstance(b, TimingBenchmark) and b.repeats == 1 for b in tb)
    assert len(tb) <= 25
    # DRAM chase at the default clocks and at the four corners of the clock range
    pairs = {b.clocks for b in tb if b.name.startswith("lat_dram")}
    assert pairs == {None, (595.0, 810.0), (595.0, 4005.0), (1164.0, 810.0), (1164.0, 4005.0)}
    # a device without caches gets no L1/L2 chase, and without DVFS one DRAM chase
    g = open_device("sim:gtx280")
    _, gbl = plan(g.info, "standard")
    names = [b.name for b in gbl if b.role == "timing"]
    assert not any(n.startswith(("lat_l1", "lat_l2")) for n in names)
    assert sum(n.startswith("lat_dram") for n in names) == 1


def test_dram_chase_latency_follows_a_fc_over_fm_plus_b():
    dev = open_device("sim:titanx")
    tp = dev.preset.timing
    truth = timing_truth("titanx")
    lat = []
    for core, mem in ((595.0, 810.0), (1164.0, 4005.0), (975.0, 3505.0)):
        b = _bench(dev, "lat_dram/p1" if (core, mem) == (975.0, 3505.0) else f"lat_dram/p1@{core:g}/{mem:g}")
        loads = b.workload(dev.info).per_warp["global"]
        lat.append(_cycles(dev, b) / loads)
        expect = truth["timing.dm_lat_a_cycles"]["value"] * core / mem + truth["timing.dm_lat_b_cycles"]["value"]
        assert lat[-1] == pytest.approx(expect, rel=0.003)        # + the branch bubble per trip
    # richer than the model: a strided chain inside an open DRAM row is faster, a huge one walks pages
    r = dram_chase_latency_cycles(tp, 975, 3505, 975, 3505)
    assert dram_chase_latency_cycles(tp, 975, 3505, 975, 3505, stride_bytes=128, pattern="stride") < r - 20
    assert dram_chase_latency_cycles(tp, 975, 3505, 975, 3505, footprint_bytes=float(1 << 33)) > r + 100


def test_cache_chase_difference_of_two_lengths_is_the_latency():
    dev = open_device("sim:titanx")
    for level, lat in (("l2", 200.0), ("l1", 82.0), ("shared", 24.0)):
        lo, hi = (b for b in plan(dev.info, "standard")[1] if b.name.startswith(f"lat_{level}/"))
        cls = level
        n_lo, n_hi = (b.workload(dev.info).per_warp[cls] for b in (lo, hi))
        slope = (_cycles(dev, hi) - _cycles(dev, lo)) / (n_hi - n_lo)
        assert slope == pytest.approx(lat + 2.0 / 8, rel=1e-6)    # branch bubble: 2 cycles per 8 loads
        # one length alone is biased by the cold first pass (or the copy loop)
        assert _cycles(dev, lo) / n_lo != pytest.approx(slope, rel=0.02)


@pytest.mark.parametrize("preset", ["gtx280", "titanx"])
def test_departure_burst_slope(preset):
    dev = open_device(f"sim:{preset}")
    truth = timing_truth(preset)
    _, bl = plan(dev.info, "standard")
    for access, where, key, tol in (("coal", "sm1", "departure_del_coal_cycles", 0.03),
                                    ("uncoal", "sm1", "departure_del_uncoal_cycles", 0.01)):
        pts = []
        for b in bl:
            if b.name.startswith(f"dep_{access}_") and f"/{where}/" in b.name:
                w = b.workload(dev.info)
                reqs = float(w.traits["reqs"])
                tx = 1.0 if access == "coal" else 32.0
                pts.append((w.launch.warps_per_sm * reqs * tx, _cycles(dev, b)))
        x, y = np.array(pts).T
        slope = np.polyfit(x, y, 1)[0]
        assert slope == pytest.approx(truth[f"timing.{key}"]["value"], rel=tol)
    if preset == "gtx280":  # the coalescer replay makes uncoalesced transactions leave more slowly
        assert truth["timing.departure_del_uncoal_cycles"]["value"] > 2 * truth["timing.departure_del_coal_cycles"]["value"]


def test_stream_bandwidth():
    dev = open_device("sim:titanx")
    b = _bench(dev, "bw_stream/w32")
    w = b.workload(dev.info)
    assert w.traits["tx_per_access"] == 4.0
    t, _ = dev.evaluate(w)
    nbytes = w.per_warp["global"] * w.launch.warps_per_sm * w.launch.active_sms * 512
    gbs = nbytes / (t - 4e-6) / 1e9
    tp = dev.preset.timing
    assert gbs == pytest.approx(tp.dram_bytes_per_mem_cycle * tp.dram_efficiency * 3505e6 / 1e9, rel=0.01)


def test_timing_runs_are_deterministic():
    a, b = open_device("sim:titanx", seed=1), open_device("sim:titanx", seed=1)
    bench = _bench(a, "dep_coal_r64/all/w8")
    assert a.run(bench.workload(a.info), 1.0) == b.run(bench.workload(b.info), 1.0)
