"""Stream alignment: lag estimates against a commanded square wave, synthetic and over a real pty."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from microbench.align import estimate_lag, lag_vs_pattern, pattern_signal, shift, square_wave
from microbench.instruments import CsvLineSource
from microbench.testing.emulators import CsvEmulator

# ~1 s high / ~1 s low, 5 cycles; a period that is not a multiple of the sampling period, so the edges
# fall at different phases of the sample grid (as on real hardware, where polling jitters)
EDGES = [(10.0 + 2.0137 * i, 11.0071 + 2.0137 * i) for i in range(5)]


def _sampled(lag_s, rate_hz, noise_w, seed, jitter_s=0.0):
    rng = np.random.default_rng(seed)
    t = np.arange(8.0, 21.0, 1.0 / rate_hz)
    t = t + rng.uniform(0, jitter_s, t.size)
    p = 80.0 + 170.0 * pattern_signal(EDGES, t - lag_s) + rng.normal(0, noise_w, t.size)
    return t, p


@pytest.mark.parametrize("lag_s", [0.0, 0.137, 0.31])
def test_lag_vs_commanded_pattern_recovers_known_lag(lag_s):
    t, p = _sampled(lag_s, rate_hz=20, noise_w=5.0, seed=1, jitter_s=0.005)
    est = lag_vs_pattern(EDGES, t, p, max_lag_s=0.5)
    assert est.correlation > 0.9
    # each edge is only known to within one sample period (50 ms); 10 edges average that down
    assert abs(est.lag_s - lag_s) < 0.012


def test_relative_offset_between_two_streams():
    tn, pn = _sampled(0.300, rate_hz=10, noise_w=3.0, seed=2)   # NVML-like: slow, late
    tm, pm = _sampled(0.004, rate_hz=50, noise_w=1.0, seed=3)   # analyzer: fast, early
    est = estimate_lag(tm, pm, tn, pn, max_lag_s=0.6)
    assert est.lag_s == pytest.approx(0.296, abs=0.025)  # limited by the 10 Hz stream
    df = shift(pd.DataFrame({"t_mono_s": tn, "power_w": pn}), est.lag_s)
    again = estimate_lag(tm, pm, df["t_mono_s"], df["power_w"], max_lag_s=0.6)
    assert abs(again.lag_s) < 0.005  # undoing the estimated lag leaves no lag to find


def test_refuses_what_cannot_be_aligned():
    t = np.linspace(0, 10, 200)
    with pytest.raises(ValueError, match="a series is constant over the overlap; drive a load pattern first"):
        estimate_lag(t, np.sin(t), t, np.ones_like(t))
    with pytest.raises(ValueError, match=r"the series overlap for 0.955 s; need at least 4.000 s \(4 x max_lag_s\)"):
        estimate_lag(t, np.sin(t), t[t <= 1.0], np.sin(t[t <= 1.0]))


class _FakeDevice:
    def __init__(self):
        self.log = []

    def run(self, workload, duration_s):
        self.log.append(("run", workload, duration_s))
        time.sleep(duration_s)

    def idle(self, duration_s):
        self.log.append(("idle", duration_s))
        time.sleep(duration_s)


def test_square_wave_commands_and_marks_edges():
    dev = _FakeDevice()
    marks = []
    edges = square_wave(dev, "burn", high_s=0.05, low_s=0.02, cycles=3,
                        mark=lambda ev, **kw: marks.append((ev, kw["repeat"])))
    assert len(edges) == 3 and all(0.05 <= b - a < 0.08 for a, b in edges)
    assert [m[0] for m in marks] == ["idle_stop", "idle_start"] * 3
    assert dev.log[0] == ("idle", 0.02) and dev.log[1] == ("run", "burn", 0.05)


def test_host_stamp_offset_over_a_real_pty(tmp_path):
    """An analyzer whose power follows a square wave in wall time, logged through the pty: the lag
    of its host stamps is the transport + framing offset that alignment must remove."""
    t0 = time.time() + 0.2
    edges_wall = [(t0 + 0.3 * i, t0 + 0.3 * i + 0.15) for i in range(5)]
    link = tmp_path / "m.tty"
    with CsvEmulator(link, frame_period_s=0.005, columns=1,
                     power_fn=lambda tw: 50.0 + 100.0 * pattern_signal(edges_wall, [tw])[0]):
        drv = CsvLineSource(str(link)).start()
        time.sleep(t0 + 1.7 - time.time())
        drv.close()
        rows = drv.read()
    t = [r.t_wall_s for r in rows]
    p = [r.values["power_w"] for r in rows]
    est = lag_vs_pattern(edges_wall, t, p, max_lag_s=0.05, step_s=0.0005)
    # the shape is intact up to what the host stamps allow: an edge falling in a gap between two reads
    # (a frame every 5 ms idle; tens of ms when the reader is descheduled on a loaded machine) is seen
    # up to that gap late. 0.9 fixed by hand failed at 0.78 under two CPU burners with the lag right.
    allowed = _correlation_the_stamps_allow(edges_wall, t, est.lag_s, step_s=0.0005)
    assert est.correlation >= allowed - 0.02, (est, allowed)
    # host stamps come after the emulator produced the value: 0 .. a few ms on an idle machine
    assert -0.003 <= est.lag_s < 0.02, est


def _correlation_the_stamps_allow(edges, t, lag_s, step_s):
    """Correlation of the commanded pattern with itself seen through these host stamps: each edge (moved
    by the lag) shows late by the whole gap between the two stamps around it. A lower bound for a stream
    whose values are right and whose stamps come in the order the values were made."""
    t = np.sort(np.asarray(t, dtype=float))
    grid = np.arange(t[0], t[-1], step_s)
    truth = pattern_signal(edges, grid - lag_s)
    seen = truth.copy()
    for edge in (e + lag_s for pair in edges for e in pair):
        i = int(np.searchsorted(t, edge))
        if 0 < i < t.size:
            late = (grid >= edge) & (grid < edge + t[i] - t[i - 1])
            seen[late] = 1.0 - seen[late]
    a = (truth - truth.mean()) / truth.std()
    b = (seen - seen.mean()) / seen.std()
    return float(np.mean(a * b))
