"""Session -> samples (calib.segment) on a session whose power readings are designed by hand: the quick
campaign's session (sim:gtx280) with its GPU stream's ``power_w`` rewritten so that every window's expected
row is known without the code under test. In each measurement window the readings of the first 0.3 s (the
sensor's settling, which the samples drop) read 40 W and the rest 150 +/- 1 W by row parity; in each idle
window the first 1.3 s read 40 W and the rest 30 +/- 0.5 W. The expected mean and sample standard deviation
(ddof 1) of each window are computed here with :mod:`statistics` on the raw CSV; a thermal step's time
origin is its heat-start marker.

Bugs these catch (tests/benchmarks/mutate.py M29-M33): a window that keeps its settling readings, a
standard deviation with ddof 0, idle windows without their extra settling second, a thermal step's time
origin one second late.
"""

from __future__ import annotations

import math
import shutil
import statistics

import numpy as np
import pandas as pd
import pytest

from calib.core.session import read_session
from calib.segment import power_stream, session_samples, thermal_steps

SETTLE_S = 0.3        # session_samples' default
IDLE_EXTRA_S = 1.0    # idle windows drop one more second
EPS = 1e-6


@pytest.fixture(scope="module")
def designed(quick_run, tmp_path_factory):
    d = tmp_path_factory.mktemp("segment") / "q"
    shutil.copytree(quick_run / "logs" / "q", d)
    sess = read_session(d)
    name = power_stream(sess)
    path = d / f"{name}.csv"
    raw = pd.read_csv(path)
    t = raw["t_mono_s"].to_numpy(float)
    seg = raw["segment"].to_numpy()
    p = np.full(len(raw), 100.0)
    parity = np.where(np.arange(len(raw)) % 2 == 0, 1.0, -1.0)
    m = sess.markers()
    windows = {"measure": [], "idle": []}
    for kind, start, stop in (("measure", "measure_start", "measure_stop"), ("idle", "idle_start", "idle_stop")):
        open_ = {}
        for _, r in m.iterrows():
            key = (r["workload"], r["repeat"] if not pd.isna(r["repeat"]) else 0, int(r["segment"]))
            if r["event"] == start:
                open_[key] = (float(r["t_mono_s"]), r["info"])
            elif r["event"] == stop and key in open_:
                t0, info = open_.pop(key)
                if kind == "idle" and (info.get("kind") == "fan_sweep" or key[0] == "align"):
                    continue
                windows[kind].append((key, t0, float(r["t_mono_s"])))
    for kind, settle, level, swing in (("measure", SETTLE_S, 150.0, 1.0), ("idle", SETTLE_S + IDLE_EXTRA_S, 30.0, 0.5)):
        for (_, _, s), t0, t1 in windows[kind]:
            inside = (seg == s) & (t > t0 + EPS) & (t <= t1 + EPS)
            settling = inside & (t <= t0 + settle + EPS)
            p[settling] = 40.0
            p[inside & ~settling] = level + swing * parity[inside & ~settling]
    raw["power_w"] = p
    raw.to_csv(path, index=False)
    return d, raw, windows


def _expected(raw: pd.DataFrame, seg: int, t0: float, t1: float, settle: float) -> list[float]:
    t = raw["t_mono_s"].to_numpy(float)
    sel = (raw["segment"].to_numpy() == seg) & (t > t0 + settle + EPS) & (t <= t1 + EPS)
    return [float(x) for x in raw.loc[sel, "power_w"]]


def test_measurement_windows_drop_their_settling_readings_and_state_the_sample_stddev(designed):
    """Each unit's row: the mean and the sample standard deviation (ddof 1) of its readings after the first
    0.3 s, by hand. Keeping the settling readings pulls the mean toward 40 W (M29); ddof 0 gives a smaller
    standard deviation (M30)."""
    d, raw, windows = designed
    s = session_samples(read_session(d))
    rows = s[s["role"] != "idle"]
    assert len(rows) == len(windows["measure"]) > 10
    checked = 0
    for (wl, rep, seg), t0, t1 in windows["measure"]:
        r = rows[(rows["workload"] == wl) & (rows["repeat"] == rep) & (rows["segment"] == seg)]
        if r.empty:  # (a window with fewer than 3 readings is skipped, with a warning)
            continue
        want = _expected(raw, seg, t0, t1, SETTLE_S)
        assert 40.0 not in want
        assert r["n_power"].iloc[0] == len(want)
        assert r["power_w"].iloc[0] == pytest.approx(statistics.fmean(want), rel=1e-12)
        assert r["power_std_w"].iloc[0] == pytest.approx(statistics.stdev(want), rel=1e-12)
        checked += 1
    assert checked == len(rows)


def test_idle_windows_drop_one_more_second(designed):
    """Idle rows: the mean of the readings after the first 1.3 s, 30 +/- 0.5 W by hand. Dropping only the
    0.3 s of a measurement window keeps 40 W readings in it (M32)."""
    d, raw, windows = designed
    s = session_samples(read_session(d))
    idle = s[s["role"] == "idle"]
    assert len(idle) >= 1
    for (wl, rep, seg), t0, t1 in windows["idle"]:
        r = idle[(idle["workload"] == wl) & (idle["segment"] == seg)]
        if r.empty:
            continue
        want = _expected(raw, seg, t0, t1, SETTLE_S + IDLE_EXTRA_S)
        assert 40.0 not in want and r["n_power"].iloc[0] == len(want)
        assert r["power_w"].iloc[0] == pytest.approx(statistics.fmean(want), rel=1e-12)
        assert abs(r["power_w"].iloc[0] - 30.0) <= 0.5


def test_thermal_steps_start_at_their_heat_marker(designed):
    """A thermal step's heating trace is timed from its heat-start marker: each reading's stream time minus
    the marker's, by hand (one second late, M33, shifts every time constant the fit reads from it)."""
    d, raw, _ = designed
    sess = read_session(d)
    steps = thermal_steps(sess)
    assert steps
    m = sess.markers()
    t = raw["t_mono_s"].to_numpy(float)
    for st in steps:
        h = m[(m["event"] == "thermal_heat_start") & (m["workload"] == st.workload)].iloc[0]
        c = m[(m["event"] == "thermal_cool_start") & (m["workload"] == st.workload)].iloc[0]
        t0, t1 = float(h["t_mono_s"]), float(c["t_mono_s"])
        sel = (raw["segment"].to_numpy() == int(h["segment"])) & (t > t0 + EPS) & (t <= t1 + EPS)
        want = t[sel] - t0
        assert len(st.heat_t) == len(want) and np.allclose(st.heat_t, want, rtol=0, atol=1e-9)
        assert 0 < st.heat_t[0] <= 0.1 + 1e-9 and math.isclose(st.heat_s, t1 - t0)
