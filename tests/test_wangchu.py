"""Wang & Chu DVFS timing equations (paper 001, eqs. 4-21) against hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest

from calib.model.wangchu import (
    dram_latency_cycles,
    memory_latencies,
    round_fill_cycles,
    t_active,
    t_exec_cycles,
)


def test_dram_latency_eq4_paper_fit():
    # eq. (4) as fitted on the GTX 980: 222.78 fc/fm + 277.32; at fc = fm it is the 500-cycle row of Table II
    assert float(dram_latency_cycles(222.78, 277.32, 400.0, 400.0)) == pytest.approx(500.1, abs=0.01)
    assert float(dram_latency_cycles(222.78, 277.32, 1000.0, 500.0)) == pytest.approx(722.88, abs=0.01)
    v = dram_latency_cycles(222.78, 277.32, np.array([700.0, 700.0]), np.array([700.0, 350.0]))
    assert v.shape == (2,) and v[1] - v[0] == pytest.approx(222.78)


def test_memory_latencies_eq5():
    # 50 % L2 hits, fc/fm = 0.5, 16 SMs: agl_lat = 222 x .5 + 400 x .5; the DRAM share of one SM is
    # 1.5 mem cycles x 0.5 x 16 = 12 core cycles, L2 1 x 16
    lat, dl = memory_latencies(400.0, 1.5, 222.0, 1.0, 0.5, 500.0, 1000.0, 16)
    assert float(lat) == pytest.approx(311.0)
    assert float(dl) == pytest.approx(0.5 * 16 + 0.5 * 12.0)
    # the SM's own departure delay bounds the DRAM part from below (few active SMs)
    _, dl1 = memory_latencies(400.0, 1.5, 222.0, 1.0, 0.0, 500.0, 1000.0, 1, departure_del=6.0)
    assert float(dl1) == pytest.approx(6.0)


def test_compute_dominated_eq9():
    # avr_comp 40 >= agl_del 10 and 40 x (10 - 1) = 360 >= 300: T = 40 x 10 x 5 + 300
    t, case = t_active(40.0, 300.0, 10.0, 10, 4, 5)
    assert int(case) == 1 and float(t) == pytest.approx(40 * 10 * 5 + 300)


def test_memory_dominated_eq11_with_fixed_conditions():
    # avr_comp 5 <= agl_del 50 and 50 x (16 - 1) = 750 >= 5 + 300: the queue is saturated
    t, case = t_active(5.0, 300.0, 50.0, 16, 8, 10)
    assert int(case) == 2
    assert float(t) == pytest.approx(300 + 5 + 50 * 16 * 10)           # eq. (11) with #Aw (erratum)


def test_few_warps_short_computation_eq13():
    # avr_comp 5 <= agl_del 20 and 20 x (4 - 1) = 60 <= 5 + 300: latency bound
    t, case = t_active(5.0, 300.0, 20.0, 4, 4, 10)
    assert int(case) == 3
    assert float(t) == pytest.approx(20 * 4 + 300 + 5 + (5 + 300) * 9)


def test_few_warps_long_computation_eq15():
    # avr_comp 40 >= agl_del 10 and 40 x (4 - 1) = 120 <= 300
    t, case = t_active(40.0, 300.0, 10.0, 4, 4, 10)
    assert int(case) == 4
    assert float(t) == pytest.approx(40 * 3 + (40 + 300) * 10)


def test_transactions_per_period_multiply_the_queue_delay():
    # 4 transactions per period: the memory-dominated time is agl_del x 4 per period per warp
    t1, _ = t_active(5.0, 300.0, 50.0, 16, 8, 10, gld_trans=1.0)
    t4, case = t_active(5.0, 300.0, 50.0, 16, 8, 10, gld_trans=4.0)
    assert int(case) == 2
    assert float(t4) - 305 == pytest.approx(4 * (float(t1) - 305))


def test_shared_memory_cases_eq17_and_eq21():
    # infrequent: avr_comp 5 <= agl_del 50, 5 + 30 <= 50 x (16 - 8)
    t, case = t_active(5.0, 300.0, 50.0, 16, 8, 2, sh_lat=30.0, i_itrs=1.0)
    assert int(case) == 5 and float(t) == pytest.approx((5 + 300 + 50 * 16) * 2)
    # intensive: avr_comp 60 > agl_del 50 -> phases (18)-(21)
    t, case = t_active(60.0, 300.0, 50.0, 16, 8, 2, sh_lat=30.0, i_itrs=32.0)
    t1 = 2 * 60 + 50 * 16 + 300 + 30
    t2 = 60 * 7 + (60 + 30) * 32
    t3 = 2 * 60 + 50 * 8 + 300 + 30
    assert int(case) == 6 and float(t) == pytest.approx(t1 + (t2 + t3) * 2)


def test_t_exec_eq6():
    # 100 blocks of 4 warps on 10 SMs with 8 active warps each: 5 rounds
    assert float(t_exec_cycles(1000.0, 4, 100, 8, 10)) == pytest.approx(5000.0)


def test_t_exec_overlap_pays_the_fill_once():
    # 5 rounds of 1000 cycles of which 300 are the fill: 1000 + 4 x 700
    assert float(t_exec_cycles(1000.0, 4, 100, 8, 10, 300.0)) == pytest.approx(3800.0)
    # one round (or less): nothing to overlap with
    assert float(t_exec_cycles(1000.0, 4, 20, 8, 10, 300.0)) == pytest.approx(1000.0)
    # the fill is a memory-dominated round's agl_lat + avr_comp, nothing in the other cases
    fill = round_fill_cycles(np.array([1, 2, 3, 4, 5, 6, 0]), 7.0, 600.0)
    assert fill.tolist() == [0.0, 607.0, 0.0, 0.0, 0.0, 0.0, 0.0]


def test_cases_vectorised():
    _, case = t_active(np.array([40.0, 5.0, 5.0, 40.0]), 300.0, np.array([10.0, 50.0, 20.0, 10.0]),
                       np.array([10, 16, 4, 4]), 4, np.array([5, 10, 10, 10]))
    assert list(case) == [1, 2, 3, 4]
