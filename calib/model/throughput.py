"""Hong's Ch. V throughput analysis (thesis 2012, eqs. 64-82, Figs. 114-115): why a kernel is slow.

Quantities per warp and per memory period (one memory instruction and the computation between two):

    EffMem         = Mem_cycles / #Mem_insts            (cycles a warp's memory access takes)
    EffComp        = Comp_cycles / #Mem_insts           (cycles of computation per memory access, Comp_p)
    EffPerf        = useful (FP) cycles within EffComp
    MWP_App_InfiN  = MAX(EffMem / EffComp, 1)           (72: warps needed to hide memory, infinite N and BW)
    MWP_App        = MIN(MWP_App_InfiN, N) x MSTR       (73, 74, 92)
    MWP_BW         = Mem_Bandwidth / (BW_per_warp x #ActiveSM)   (75, 76: MWP_peak_BW of the timing model)
    MWP_Proc       = Mem_L / Departure_delay            (the old MWP_Without_BW, not capped by N)
    MWP            = MIN(MWP_App, MWP_BW, MWP_Proc, N)  (71)
    EffRatio       = EffPerf N / (EffComp N + IdleMemCycles)                                  (77)
    IdleMemCycles  = MAX(0, EffMem N / MWP + EffComp (MWP - 1) - EffComp N)                   (78-82)

MSTR (memory-level strength) is the number of independent memory loads a warp issues before the first
one is consumed. A kernel description gives it as ``memory.mstr``, or through ``ilp`` (independent
chains per thread, each with its own load); without either the category is unknown -- never guessed.

Categories (Figs. 114-115, threshold 0.85 = "within 15 %"): sub-category I when N < MWP_App_InfiN
(too few warps), II otherwise; within each, by MWP_Proc and MWP_BW against MWP_App:

    =====  ===  ======================  ===================================  =========================
    I      II   MWP_Proc vs MWP_App     MWP_BW vs MWP_App                    diagnosis
    =====  ===  ======================  ===================================  =========================
    1      6    <                       <                                    process and bandwidth
    2      7    <                       >=                                   memory process (access type)
    3      8    >=                      < 0.85 MWP_App                       bandwidth
    4      9    >=                      0.85 MWP_App <= MWP_BW < MWP_App     bandwidth just enough
    5      10   >=                      >=                                   no hardware saturation
    =====  ===  ======================  ===================================  =========================

Errata (hong-thesis-2012-notes.md sec. 1.14 and 6): Sec. 5.6.1 and the captions of Figs. 125-126 call
category 5 "the best case"; that is the best of sub-category I only -- the overall best is 10, as
Fig. 115 numbers them, and that numbering is used here. Table 14 lists the GTX580 at 2.4 GHz and the
Xeon at 1.544 GHz: the frequencies are swapped (the GTX580 core clock is 1.544 GHz, Table 10); the
quantities here take the core clock of the fitted timing section, never Table 14.

Everything is vectorised with numpy (arrays per kernel).
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: the thesis's boundary between "bandwidth problem" and "bandwidth may be just enough" (Figs. 114-115)
BW_THRESHOLD = 0.85

#: per category: (sub-category, diagnosis, the thesis's suggestion)
CATEGORIES: dict[int, tuple[str, str, str]] = {
    1: ("I", "too few warps, and both the memory process and the bandwidth saturate",
        "reduce the core frequency (the SMs wait on memory)"),
    2: ("I", "too few warps, and the memory process (access type) limits the overlap",
        "improve the memory access type (coalescing); reduce the core frequency"),
    3: ("I", "too few warps, and the bandwidth is a problem",
        "use fewer active SMs (or a device with more bandwidth, or less data per thread)"),
    4: ("I", "too few warps; the bandwidth may be just enough (fourth best)",
        "little to gain from the hardware side; fewer active SMs may save power"),
    5: ("I", "too few warps, no hardware saturation (third best)",
        "increase the warps per SM (N); reduce the core frequency"),
    6: ("II", "enough warps, memory saturation (process and bandwidth)",
        "reduce the warps per SM (N)"),
    7: ("II", "enough warps, the memory process (overlap) is the problem",
        "improve the memory access type (coalescing)"),
    8: ("II", "enough warps, the bandwidth is a problem",
        "use fewer active SMs (or a device with more bandwidth)"),
    9: ("II", "enough warps; the bandwidth may be just enough (second best)",
        "little to gain; fewer active SMs may save power"),
    10: ("II", "enough warps, no hardware saturation (the best case)", "no change needed"),
}


def _arr(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=float)


def mwp_app(eff_mem: Any, eff_comp: Any, n: Any, mstr: Any) -> tuple[np.ndarray, np.ndarray]:
    """(MWP_App_InfiN, MWP_App), eqs. (72)-(74)/(92); warps. A warp without computation between its
    memory accesses (EffComp 0) needs unbounded warps: MWP_App_InfiN is inf."""
    em, ec = _arr(eff_mem), _arr(eff_comp)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(ec > 0, em / np.where(ec > 0, ec, 1.0), np.where(em > 0, np.inf, 1.0))
    infin = np.maximum(ratio, 1.0)
    return infin, np.minimum(infin, _arr(n)) * _arr(mstr)


def eff_ratio(eff_perf: Any, eff_comp: Any, eff_mem: Any, n: Any, mwp: Any) -> np.ndarray:
    """EffRatio, eqs. (77)-(82): useful cycles over all cycles of N warps' memory periods."""
    ep, ec, em, n, mwp = _arr(eff_perf), _arr(eff_comp), _arr(eff_mem), _arr(n), _arr(mwp)
    with np.errstate(divide="ignore", invalid="ignore"):
        mem_n = em * n / mwp + ec * (mwp - 1.0)
        idle = np.maximum(0.0, mem_n - ec * n)
        den = ec * n + idle
        return np.where(den > 0, ep * n / den, 0.0)


def category(n: Any, infin: Any, app: Any, bw: Any, proc: Any, threshold: float = BW_THRESHOLD) -> np.ndarray:
    """The category 1..10 (module docstring) of each kernel."""
    n, infin, app, bw, proc = _arr(n), _arr(infin), _arr(app), _arr(bw), _arr(proc)
    proc_short = proc < app
    base = np.where(proc_short, np.where(bw < app, 1, 2),
                    np.where(bw < threshold * app, 3, np.where(bw < app, 4, 5)))
    return np.where(n < infin, base, base + 5).astype(int)


def analyse(details: dict[str, np.ndarray], mem_insts: Any, fp_cycles: Any, mstr: Any) -> dict[str, np.ndarray]:
    """Ch. V quantities and the category from the MWP/CWP details of the timing model
    (:func:`calib.model.timing.mwp_cwp_details`), the per-warp memory instructions past L1, the cycles
    of useful (FP) instructions per warp, and MSTR. Cycles are core cycles; MWP values are warps."""
    mem = _arr(mem_insts)
    safe = np.where(mem > 0, mem, 1.0)
    eff_mem = np.where(mem > 0, _arr(details["mem_cycles"]) / safe, 0.0)
    eff_comp = _arr(details["comp_cycles"]) / safe
    eff_perf = _arr(fp_cycles) / safe
    n = _arr(details["n"])
    infin, app = mwp_app(eff_mem, eff_comp, n, mstr)
    bw = np.where(mem > 0, _arr(details["mwp_peak_bw"]), np.inf)
    proc = np.where(mem > 0, _arr(details["mwp_without_bw_full"]), np.inf)
    mwp = np.minimum(np.minimum(app, bw), np.minimum(proc, n))
    return {"eff_mem_cycles": eff_mem, "eff_comp_cycles": eff_comp, "eff_perf_cycles": eff_perf, "n": n,
            "mstr": _arr(mstr) * np.ones_like(n), "mwp_app_infin": infin, "mwp_app": app, "mwp_bw": bw,
            "mwp_proc": proc, "mwp": mwp, "eff_ratio": eff_ratio(eff_perf, eff_comp, eff_mem, n, mwp),
            "category": category(n, infin, app, bw, proc)}
