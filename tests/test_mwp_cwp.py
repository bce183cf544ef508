"""MWP/CWP model (thesis eqs. 1-30, paper 004 eqs. 24-34) against the hand-derived values of
hong-thesis-2012-notes.md sec. 6 note 11 and sec. 7, and the IPP optimal-core example."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from calib.model.mwp_cwp import (
    CASE_COMPUTE_BOUND,
    CASE_MEMORY_BOUND,
    CASE_NOT_ENOUGH_WARPS,
    MwpHardware,
    active_blocks_per_sm,
    comp_cycles,
    mwp_cwp,
    n_pw,
    optimal_cores,
)

FX5600 = MwpHardware(mem_ld_cycles=420, departure_del_coal_cycles=4, departure_del_uncoal_cycles=10,
                     mem_bandwidth_bytes_per_s=76.8e9, core_hz=1.35e9)
GTX280 = MwpHardware(mem_ld_cycles=450, departure_del_coal_cycles=4, departure_del_uncoal_cycles=40,
                     mem_bandwidth_bytes_per_s=141.7e9, core_hz=1.3e9)


def _run(hw, fp, coal, uncoal, warps_per_block=8, active_blocks=1, blocks=16, sms=16, **kw):
    counts = {"fp": fp, "global": coal + uncoal}
    return {k: float(np.asarray(v).ravel()[0]) for k, v in
            mwp_cwp(hw, counts, coal, uncoal, 32 * warps_per_block, blocks, sms, active_blocks, **kw).items()}


def test_fx5600_coalesced_mwp_peak_bw_is_about_12():
    r = _run(FX5600, 100, 1, 0)
    assert r["mem_l"] == pytest.approx(424.0)                       # Mem_LD + Departure_del_coal (13)
    assert r["bw_per_warp"] / 1e9 == pytest.approx(0.4075, abs=1e-4)  # (7)
    assert r["mwp_peak_bw"] == pytest.approx(11.78, abs=0.01)         # (6): "~12" in the thesis


def test_fx5600_uncoalesced_mwp_without_bw_is_about_2():
    r = _run(FX5600, 100, 0, 1)
    assert r["mem_l"] == pytest.approx(730.0)                       # 420 + 31 x 10 (12)
    assert r["departure_delay"] == pytest.approx(320.0)             # 10 x 32 (15)
    assert r["mwp_without_bw_full"] == pytest.approx(2.28, abs=0.005)  # (16): "~2" (Fig. 24)


def test_gtx280_coalesced():
    r = _run(GTX280, 100, 1, 0, sms=30, blocks=30)
    assert r["mem_l"] == pytest.approx(454.0)
    assert r["mwp_without_bw_full"] == pytest.approx(113.5)
    assert r["bw_per_warp"] / 1e9 == pytest.approx(0.3665, abs=1e-4)
    assert r["mwp_peak_bw"] == pytest.approx(12.89, abs=0.01)
    # the ISCA'09 form of (13) drops the departure delay of the single coalesced transaction
    hw = MwpHardware(430, 4, 40, 141.7e9, 1.3e9, mem_l_coal="isca09")
    r = _run(hw, 100, 1, 0, sms=30, blocks=30)
    assert r["mem_l"] == pytest.approx(430.0)
    assert r["mwp_peak_bw"] == pytest.approx(12.21, abs=0.01)


def test_case_1_not_enough_warps_is_serial():
    # N = 1: MWP = CWP = N = 1 -> Case 1, (Mem + Comp + Comp_p (MWP - 1)) x Rep
    r = _run(FX5600, 60, 1, 0, warps_per_block=1, blocks=32, sms=16)
    assert r["n"] == 1 and r["mwp"] == 1 and r["cwp"] == 1
    assert r["case"] == CASE_NOT_ENOUGH_WARPS
    comp = 4 * 61
    assert r["rep"] == 2.0
    assert r["exec_cycles"] == pytest.approx((424 + comp) * 2)


def test_case_1_pays_comp_p_for_every_warp_after_the_first():
    """Case 1 with MWP = N = 2 (the test above has N = 1, which zeroes the very term it should test): the bug
    is eq. (21) without its Comp_p x (MWP - 1). By hand, coalesced FX5600, 2 warps per block, one block per
    SM, 32 blocks on 16 SMs (Rep = 2), 60 fp and 2 loads per warp: Mem_L = 420 + 4 = 424, Mem_cycles =
    2 x 424 = 848, Comp = 4 x 62 = 248 (the loads issue too), Comp_p = Comp / #Mem_insts = 124;
    MWP = min(Mem_L / Departure_delay = 106, MWP_peak_BW = 11.78, N = 2) = 2 and CWP = min((848 + 248) / 248
    = 4.42, N) = 2: Case 1, (848 + 248 + 124 x (2 - 1)) x 2 = 2440 cycles."""
    r = _run(FX5600, 60, 2, 0, warps_per_block=2, blocks=32, sms=16)
    assert (r["n"], r["mwp"], r["cwp"], r["rep"]) == (2.0, 2.0, 2.0, 2.0)
    assert r["case"] == CASE_NOT_ENOUGH_WARPS
    assert r["exec_cycles"] == pytest.approx((848 + 248 + 124 * (2 - 1)) * 2)


def test_case_2_mwp_2_cwp_4_is_memory_bound():
    # uncoalesced FX5600: MWP = 2.28; Comp = 4 x 61 = 244, Mem = 730 -> CWP = 3.99; N = 8
    r = _run(FX5600, 60, 0, 1)
    assert r["mwp"] == pytest.approx(2.28125)
    assert r["cwp"] == pytest.approx((730 + 244) / 244)
    assert r["case"] == CASE_MEMORY_BOUND
    expect = 730 * 8 / 2.28125 + 244 / 1 * (2.28125 - 1)             # (22), Rep = 1
    assert r["exec_cycles"] == pytest.approx(expect)


def test_case_3_mwp_8_cwp_4_is_compute_bound():
    # coalesced FX5600, N = 8: MWP = min(106, 11.78, 8) = 8; Comp = Mem/3 -> CWP = 4 < MWP
    comp_insts = 424 / 3 / 4                                        # fp + global insts, Issue_cycles 4
    r = _run(FX5600, comp_insts - 1, 1, 0)
    assert r["mwp"] == pytest.approx(8.0)
    assert r["cwp"] == pytest.approx(4.0)
    assert r["case"] == CASE_COMPUTE_BOUND
    assert r["exec_cycles"] == pytest.approx(424 + 424 / 3 * 8)       # (23): Mem_L + Comp x N


def test_roofline_case3_still_pays_its_bytes_dram_and_l2():
    """With independent loads (ILP 4: N_pw = 4 N) a streaming kernel's MWP exceeds its CWP = N, so the
    thesis calls it compute bound (Case 3) and it pays no bandwidth: (Mem_L + Comp x N) x Rep. The
    roofline form keeps Case 3 but never goes below the round's bytes over the bandwidth (by hand)."""
    kw = dict(ind_mem_insts=10 * (1 - 1 / 4))
    # N = 8 warps per SM, 16 SMs, one round; 10 coalesced loads and 2 fp per warp; FX5600: Mem_L = 424
    r = _run(FX5600, 2, 10, 0, **kw)
    assert r["n_pw"] == pytest.approx(32.0) and r["cwp"] == 8.0 and r["mwp"] > r["cwp"]
    assert r["case"] == CASE_COMPUTE_BOUND
    assert r["exec_cycles"] == pytest.approx(424 + 4 * 12 * 8)                     # thesis (23): 808
    bytes_round = 8 * 10 * 128 * 16                                                 # every SM's warps
    roof = dataclasses.replace(FX5600, bandwidth_form="roofline")
    r = _run(roof, 2, 10, 0, **kw)
    assert r["case"] == CASE_COMPUTE_BOUND and r["mwp_peak_l2"] == np.inf
    assert r["exec_cycles"] == pytest.approx(bytes_round / 76.8e9 * 1.35e9)       # 2880 cycles
    # 80 % L2 hits: DRAM moves 20 % of the bytes (576 cycles); an L2 of one 128-byte transaction per
    # cycle for the chip (172.8 GB/s) moves the other 80 % in 1024 cycles: the L2 bounds the round
    l2 = dataclasses.replace(roof, l2_bandwidth_bytes_per_s=128 * 1.35e9 / 1.0)
    r = _run(l2, 2, 10, 0, dram_fraction=0.2, l2_fraction=0.8, **kw)
    assert r["mwp_peak_l2"] == pytest.approx(172.8e9 / (1.35e9 * 128 * 0.8 / 424 * 16))
    assert r["mwp"] == pytest.approx(min(32.0, r["mwp_peak_l2"]))
    assert r["exec_cycles"] == pytest.approx(0.8 * bytes_round / 172.8e9 * 1.35e9)  # 1024 cycles
    # the thesis form ignores the L2's bandwidth even when given it
    r = _run(dataclasses.replace(l2, bandwidth_form="thesis"), 2, 10, 0, dram_fraction=0.2, l2_fraction=0.8, **kw)
    assert r["mwp_peak_l2"] == np.inf and r["exec_cycles"] == pytest.approx(808.0)
    with pytest.raises(ValueError, match="bandwidth_form must be one of \\('thesis', 'roofline'\\), not 'x'"):
        MwpHardware(420, 4, 10, 76.8e9, 1.35e9, bandwidth_form="x")


def test_cpi_and_pure_compute_guard():
    r = _run(FX5600, 100, 0, 0, blocks=32, sms=16, active_blocks=2)
    assert r["case"] == CASE_COMPUTE_BOUND
    assert r["exec_cycles"] == pytest.approx(4 * 100 * 16 * 1.0)     # Comp x N x Rep, N = 16, Rep = 1
    assert r["cpi"] == pytest.approx(4.0)                             # (24): peak CPI on GT200


def test_synchronization_cost():
    # (25)-(27): Departure_delay x (NpWB - 1) x #synch x Active_blocks_per_SM x #Rep
    r = _run(FX5600, 60, 0, 1, sync_insts=3, active_blocks=2, blocks=64, sms=16, warps_per_block=4)
    npwb = min(r["mwp"], 4)
    assert r["synch_cycles"] == pytest.approx(320 * (npwb - 1) * 3 * 2 * 2)
    assert r["exec_cycles"] == pytest.approx(r["exec_cycles_app"] + r["synch_cycles"])


def test_n_pw_errata():
    # thesis example: 4 warps with independent requests (here 1 of 2) behave like 8
    assert float(n_pw(4, 2, 1)) == pytest.approx(8.0)
    assert float(n_pw(4, 2, 1, "literal")) == pytest.approx(4.0)     # the printed (28)
    assert float(n_pw(4, 3, 3)) == pytest.approx(12.0)               # all independent: guarded, N x Mem
    assert float(n_pw(4, 3, 0)) == pytest.approx(4.0)
    # N_pw raises MWP only when N limited it
    r_dep = _run(FX5600, 10, 2, 0, warps_per_block=4)
    r_ind = _run(FX5600, 10, 2, 0, warps_per_block=4, ind_mem_insts=1)
    assert r_dep["mwp"] == pytest.approx(4.0) and r_ind["mwp"] == pytest.approx(8.0)


def test_m_factor_sum_and_max():
    hw = MwpHardware(420, 4, 10, 76.8e9, 1.35e9, m_factor={"sfu": 4.0})
    assert float(comp_cycles(hw, {"fp": 10, "sfu": 5})) == pytest.approx(4 * 10 + 4 * 4 * 5)
    hw = MwpHardware(420, 4, 10, 76.8e9, 1.35e9, m_factor={"sfu": 4.0}, comp_form="max")
    assert float(comp_cycles(hw, {"fp": 10, "sfu": 5})) == pytest.approx(max(4 * 15, 4 * 4 * 5))
    with pytest.raises(ValueError, match="comp_form must be one of"):
        MwpHardware(420, 4, 10, 76.8e9, 1.35e9, comp_form="avg")


def test_active_blocks():
    assert float(active_blocks_per_sm(240, 30, 256, 32, 8)) == 4.0       # 8 blocks/SM, 4 fit (32 warps)
    assert float(active_blocks_per_sm(30, 30, 512, 32, 8)) == 1.0        # one block each
    assert float(active_blocks_per_sm(240, 30, 64, 32, 8)) == 8.0        # block limit
    assert float(active_blocks_per_sm(240, 30, 64, 32, 8, limit=3)) == 3.0


def test_optimal_cores_thesis_example():
    # sec. 7: BW_per_warp 0.387 GB/s (Mem_L 430, 128 B at 1.3 GHz) and N = 18.3 -> 20 cores
    bw = 1.3e9 * 128 / 430
    assert bw / 1e9 == pytest.approx(0.387, abs=5e-4)
    n = 18.3
    peak30 = 141.7e9 / (bw * 30)
    assert float(optimal_cores(peak30, n, n, peak30, 141.7e9, bw, 30)) == 20


def test_optimal_cores_ipp_table4():
    # paper 004 Table 4: the bandwidth-limited kernels have MWP = MWP_peak_BW = 10.802 at 30 SMs and
    # CWP = N = 16 -> 20 cores; Cmem (CWP 9.356 < MWP) keeps all 30. Effective bandwidth that gives
    # 10.802 with Mem_L 430 and 128-byte requests at 1.296 GHz: 10.802 x 30 x BW_per_warp.
    bw_per_warp = 1.296e9 * 128 / 430
    mem_bw = 10.802 * 30 * bw_per_warp
    assert mem_bw / 1e9 == pytest.approx(125.0, abs=0.1)             # 88 % of the nominal 141.7 GB/s
    assert float(optimal_cores(10.802, 16, 16, 10.802, mem_bw, bw_per_warp, 30)) == 20
    assert float(optimal_cores(10.802, 9.356, 16, 10.802, mem_bw, bw_per_warp, 30)) == 30
    # not enough warps (Case 1: MWP == N and CWP == N): all cores
    assert float(optimal_cores(8, 8, 8, 10.802, mem_bw, bw_per_warp, 30)) == 30
    # the printed "(MWP == N) or (CWP == N)" would give 30 for Table 4's kernels: the erratum matters
    assert float(optimal_cores(10.802, 16, 16, 10.802, mem_bw, bw_per_warp, 30)) != 30


def test_full_model_reproduces_ipp_bandwidth_limited_kernel():
    # a Dotp-like kernel on GTX280 (16 warps per SM, coalesced, AI ~ 1) through the whole model
    bw_per_warp = 1.296e9 * 128 / 430
    hw = MwpHardware(426, 4, 40, 10.802 * 30 * bw_per_warp, 1.296e9, mem_l_coal="thesis")
    r = mwp_cwp(hw, {"fp": 2, "int": 1, "global": 2}, 2, 0, 512, 30, 30, 1)
    assert float(r["mwp_peak_bw"]) == pytest.approx(10.802, abs=1e-3)
    assert float(r["mwp"]) == pytest.approx(10.802, abs=1e-3)
    assert float(r["cwp"]) == pytest.approx(16.0)
    assert int(r["case"]) == CASE_MEMORY_BOUND
    opt = optimal_cores(r["mwp"], r["cwp"], r["n"], r["mwp_peak_bw"], hw.mem_bandwidth_bytes_per_s, r["bw_per_warp"], 30)
    assert float(opt) == 20


def test_vectorised_over_rows():
    r = mwp_cwp(FX5600, {"fp": np.array([60.0, 100.0]), "global": np.array([1.0, 1.0])}, np.array([0.0, 1.0]),
                np.array([1.0, 0.0]), 256, 16, 16, 1)
    assert r["exec_cycles"].shape == (2,)
    assert list(r["case"]) == [CASE_MEMORY_BOUND, CASE_COMPUTE_BOUND]   # row 2: MWP = N = 8 > CWP = 2.05
