"""MWP/CWP analytical timing model (Hong & Kim ISCA'09 / ISCA'10 eqs. 24-34; Hong thesis 2012 eqs. 1-30).

Quantities (cycles are SM-clock cycles; counts are per warp, which the thesis also calls per thread):

    N                     = Active_blocks_per_SM x warps_per_block                     (active warps per SM)
    Weight_uncoal/coal    = #Uncoal (#Coal) / (#Uncoal + #Coal)                                   (10), (11)
    Mem_L_Uncoal          = Mem_LD + (#Uncoal_per_mw - 1) x Departure_del_uncoal                  (12)
    Mem_L_Coal            = Mem_LD + Departure_del_coal      [thesis; ISCA'09: Mem_LD, switch]     (13)
    Mem_L                 = Mem_L_Uncoal x Weight_uncoal + Mem_L_Coal x Weight_coal               (14)
    Departure_delay       = Departure_del_uncoal x #Uncoal_per_mw x Weight_uncoal
                            + Departure_del_coal x Weight_coal                                    (15)
    MWP_Without_BW_full   = Mem_L / Departure_delay ;  MWP_Without_BW = MIN(full, N)             (16), (17)
    BW_per_warp           = Freq x Load_bytes_per_warp / Mem_L                                    (7)
    MWP_peak_BW           = Mem_Bandwidth / (BW_per_warp x #ActiveSM)                             (6)
    MWP                   = MIN(MWP_Without_BW, MWP_peak_BW, N)                                   (5)
    Comp_cycles           = sum_i Issue_cycles x M_Factor_i x #insts_i     [per-class sum: errata 4] (18), (30)
    Mem_cycles            = Mem_L_Uncoal x #Uncoal_Mem_insts + Mem_L_Coal x #Coal_Mem_insts       (19)
    CWP_full              = (Mem_cycles + Comp_cycles) / Comp_cycles ;  CWP = MIN(CWP_full, N)    (8), (9)
    #Rep                  = #Blocks / (#Active_blocks_per_SM x #Active_SMs)                        (20)
    Case 1 (MWP == N and CWP == N):  (Mem_cycles + Comp_cycles + Comp_p x (MWP - 1)) x #Rep        (21)
    Case 2 (CWP >= MWP [or Comp_cycles > Mem_cycles]):  (Mem_cycles x N/MWP + Comp_p x (MWP - 1)) x #Rep (22)
    Case 3 (MWP > CWP):  (Mem_L + Comp_cycles x N) x #Rep                                          (23)
                          with Comp_p = Comp_cycles / #Mem_insts
    CPI                   = Exec_cycles / (#Total_insts x warps_per_block x #Blocks / #Active_SMs)  (24)
    Synch_cost            = Departure_delay x (NpWB - 1) x #synch_insts x Active_blocks_per_SM x #Rep (25)
    NpWB                  = MIN(MWP, warps_per_block)                                              (26)
    N_pw                  = N x #Mem_req / (#Mem_req - #Ind_mem_req)   [errata-fixed (28), below]
    MWP                   = MIN(MWP_Without_BW, MWP_peak_BW, N_pw)                                 (29)

Errata fixed (hong-thesis-2012-notes.md sec. 6): ``#Repw`` is ``#Rep``; cases are tried in the order
1, 2, 3; Case 2's printed test also sends ``Comp_cycles > Mem_cycles`` to Case 2, which makes a
compute-heavy kernel with many memory instructions take ``Mem_cycles x N/MWP + Comp_p x (MWP - 1)``
-- far less than the ``Comp_cycles x N`` its SM must issue -- so by default that clause is dropped (such kernels have
CWP < 2 <= MWP and fall to Case 3); ``case2_form="printed"`` keeps it; ``Mem_L_Coal`` has both
printed forms (``mem_l_coal="thesis"`` default, ``"isca09"``); Comp_cycles sums ``Issue_cycles x
M_Factor`` per instruction class (``comp_form="sum"``) -- ``comp_form="max"`` instead takes the
busiest pipe or the issue slots, whichever is longer (pipes run in parallel); the ``Comp_p`` term is
guarded when a kernel has no memory instruction (a pure-compute kernel takes ``Comp_cycles x N``);
N_pw: the printed ``N x Ind / (Mem - Ind)`` gives N (not the text's 2N) when half the requests are
independent and divides by zero when all are, so the default (``n_pw_form="fixed"``) is the form that
reproduces the text's example, ``N x Mem / (Mem - Ind)`` (each warp keeps Mem/(Mem - Ind) requests in
flight), capped at ``N x Mem`` when every request is independent; ``"literal"`` keeps the print with
the same guard. N_pw replaces N only inside the MWP computation (as the thesis says). ``case3_form="once"`` (not the
thesis; default ``"thesis"``) exposes Case 3's Mem_L once per kernel instead of once per #Rep, which a
compute-bound kernel of several block rounds shows at a low memory clock (the timing table fit uses
``"once"``; figures: tests/benchmarks/code_figures.md).

Extension for cached GPUs (Wang & Chu eq. 5a in MWP form): ``dram_fraction`` (1 - L2 hit rate)
scales the bytes a warp's request takes from DRAM in BW_per_warp, and the caller passes the
AMAT-weighted latency as ``mem_ld``.

Bandwidth as a roofline (``bandwidth_form="roofline"``; default ``"thesis"``, eqs. 5-6 only): the thesis
bounds the bandwidth only through MWP, so a kernel whose MWP exceeds its CWP is "compute bound" (Case 3)
and pays no bandwidth at all -- with independent loads (N_pw > N) a streaming kernel of 16 warps per SM
lands there, and is then predicted to follow its latency chain instead of the memory clock. With "roofline":
(a) the L2 hits are bounded by the L2's bandwidth the way the DRAM bytes are by eq. (6),
``MWP_peak_L2 = L2_Bandwidth / (BW_per_warp_L2 x #ActiveSM)`` (``BW_per_warp_L2`` counts the
``l2_fraction``, the L2 hit rate, of a request's bytes; ``l2_bandwidth_bytes_per_s``, None: unbounded),
and MWP is at most MWP_peak_L2 too -- the physics of Wang & Chu's eq. 5b, where an L2 hit costs the L2's
service time ``l2_del x #Asm`` (:mod:`calib.model.wangchu`); (b) in every case a round takes at least
the time its bytes need at the lower of the two bandwidths,
``Mem_cycles x N / MIN(MWP_peak_BW, MWP_peak_L2)`` (Case 2's time at MWP = MWP_peak_BW, i.e. the bytes
over the bandwidth, which Cases 1 and 3 otherwise ignore).

Extension for dependent instructions (the thesis's Ch. V DEP_Effect, eq. 70): one warp cannot go
faster than its own chain, ``(#Total_insts x inst_lat + Mem_cycles) / ILP`` per round, where
``inst_lat_cycles`` is the dependent-issue latency and ``ilp`` the independent chains per thread (or
``chain_comp_cycles``, the chain's non-memory cycles with a latency per class, in place of
``#Total_insts x inst_lat``); this floor only matters with few warps (0 latency and no chain, the
default, switch it off).

Everything is vectorised with numpy: every argument may be a scalar or an array (broadcast).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

CASE_NOT_ENOUGH_WARPS, CASE_MEMORY_BOUND, CASE_COMPUTE_BOUND = 1, 2, 3
MEM_L_COAL_FORMS = ("thesis", "isca09")
N_PW_FORMS = ("fixed", "literal")
COMP_FORMS = ("sum", "max")
CASE2_FORMS = ("fixed", "printed")
CASE3_FORMS = ("thesis", "once")
BANDWIDTH_FORMS = ("thesis", "roofline")


@dataclass(frozen=True)
class MwpHardware:
    """Hardware parameters of the MWP/CWP model.

    ``mem_ld_cycles``: DRAM round trip of one transaction (Mem_LD); ``departure_del_*_cycles``: minimum
    distance between two transactions of an SM (Departure_del_coal/_uncoal); ``mem_bandwidth_bytes_per_s``:
    Mem_Bandwidth; ``core_hz``: Freq (SM clock); ``issue_cycles``: cycles to issue one warp instruction;
    ``m_factor``: M_Factor per instruction class (1 when absent); ``uncoal_per_mw``: transactions of an
    uncoalesced warp request (#Uncoal_per_mw); ``coal_bytes``/``uncoal_tx_bytes``: bytes of a coalesced
    request and of one uncoalesced transaction (Load_bytes_per_warp); ``bandwidth_form``: ``"thesis"``
    or ``"roofline"`` (module docstring); ``l2_bandwidth_bytes_per_s``: the chip's L2 bandwidth for hits
    under "roofline" (None: unbounded).
    """

    mem_ld_cycles: Any
    departure_del_coal_cycles: float
    departure_del_uncoal_cycles: float
    mem_bandwidth_bytes_per_s: Any
    core_hz: Any
    issue_cycles: float = 4.0
    m_factor: Mapping[str, float] = field(default_factory=dict)
    uncoal_per_mw: Any = 32.0
    coal_bytes: float = 128.0
    uncoal_tx_bytes: float = 32.0
    mem_l_coal: str = "thesis"
    n_pw_form: str = "fixed"
    comp_form: str = "sum"
    case2_form: str = "fixed"
    inst_lat_cycles: float = 0.0
    case3_form: str = "thesis"
    bandwidth_form: str = "thesis"
    l2_bandwidth_bytes_per_s: Any = None

    def __post_init__(self) -> None:
        for name, allowed in (("mem_l_coal", MEM_L_COAL_FORMS), ("n_pw_form", N_PW_FORMS), ("comp_form", COMP_FORMS),
                              ("case3_form", CASE3_FORMS), ("bandwidth_form", BANDWIDTH_FORMS),
                              ("case2_form", CASE2_FORMS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, not {getattr(self, name)!r}")


def _arr(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=float)


def active_blocks_per_sm(blocks: Any, active_sms: Any, threads_per_block: Any, max_warps_per_sm: float,
                         max_blocks_per_sm: float = 32.0, limit: Any = None) -> np.ndarray:
    """#Active_blocks_per_SM: blocks resident at once on one SM (occupancy), never more than the
    blocks each SM gets. ``limit`` (e.g. from shared-memory use, or a profiler's achieved occupancy)
    caps it further; NaN entries of ``limit`` mean no extra cap."""
    wpb = np.ceil(_arr(threads_per_block) / 32.0)
    cap = np.minimum(np.floor(max_warps_per_sm / wpb), max_blocks_per_sm)
    if limit is not None:
        lim = _arr(limit)
        cap = np.where(np.isnan(lim), cap, np.minimum(cap, lim))
    per_sm = _arr(blocks) / _arr(active_sms)
    return np.maximum(np.minimum(cap, per_sm), np.minimum(1.0, per_sm))


def comp_cycles(hw: MwpHardware, counts: Mapping[str, Any]) -> np.ndarray:
    """Comp_cycles of one warp, eq. (18)/(30): issue cycles x M_Factor per class (sum, or the busiest
    pipe against the issue slots with ``comp_form="max"``)."""
    if not counts:
        return np.zeros(1)
    terms = {c: hw.issue_cycles * _arr(hw.m_factor.get(c, 1.0)) * _arr(n) for c, n in counts.items()}
    if hw.comp_form == "sum":
        return sum(terms.values())
    issue = hw.issue_cycles * sum(_arr(n) for n in counts.values())
    return np.maximum(issue, np.max(np.stack(np.broadcast_arrays(*terms.values())), axis=0))


def n_pw(n: Any, mem_req: Any, ind_req: Any, form: str = "fixed") -> np.ndarray:
    """Effective parallel warps with independent memory requests (eq. 28, errata in module docstring)."""
    n, m, i = _arr(n), _arr(mem_req), _arr(ind_req)
    i = np.clip(i, 0.0, None)
    dep = m - i
    with np.errstate(divide="ignore", invalid="ignore"):
        val = np.where(dep > 0, n * (m if form == "fixed" else i) / dep, n * np.maximum(m, 1.0))
    return np.where(i > 0, np.maximum(val, n if form == "fixed" else 0.0), n)


def mwp_cwp(hw: MwpHardware, counts: Mapping[str, Any], coal_mem_insts: Any, uncoal_mem_insts: Any,
            threads_per_block: Any, blocks: Any, active_sms: Any, active_blocks: Any,
            sync_insts: Any = 0.0, ind_mem_insts: Any = 0.0, dram_fraction: Any = 1.0,
            ilp: Any = 1.0, chain_comp_cycles: Any = None, l2_fraction: Any = 0.0) -> dict[str, np.ndarray]:
    """Every quantity of the model per kernel (module docstring), as arrays.

    ``counts``: per-warp dynamic counts by instruction class, memory instructions included (they are
    issued too); ``coal_mem_insts``/``uncoal_mem_insts``: per-warp memory instructions that go to
    memory coalesced / uncoalesced; ``active_blocks``: #Active_blocks_per_SM (see
    :func:`active_blocks_per_sm`). Returns ``exec_cycles`` (with the synchronization cost),
    ``exec_cycles_app`` (without), ``case`` (1, 2, 3) and the intermediate quantities.
    """
    coal, uncoal = _arr(coal_mem_insts), _arr(uncoal_mem_insts)
    wpb = np.ceil(_arr(threads_per_block) / 32.0)
    ab = _arr(active_blocks)
    n = ab * wpb
    blocks, asm = _arr(blocks), _arr(active_sms)
    mem = coal + uncoal
    has_mem = mem > 0
    safe_mem = np.where(has_mem, mem, 1.0)
    w_uncoal = np.where(has_mem, uncoal / safe_mem, 0.0)
    w_coal = np.where(has_mem, coal / safe_mem, 1.0)
    per_mw = _arr(hw.uncoal_per_mw)
    mem_ld = _arr(hw.mem_ld_cycles)
    mem_l_uncoal = mem_ld + (per_mw - 1.0) * hw.departure_del_uncoal_cycles
    mem_l_coal = mem_ld + (hw.departure_del_coal_cycles if hw.mem_l_coal == "thesis" else 0.0)
    mem_l = mem_l_uncoal * w_uncoal + mem_l_coal * w_coal
    dep_delay = hw.departure_del_uncoal_cycles * per_mw * w_uncoal + hw.departure_del_coal_cycles * w_coal
    mwp_wo_full = mem_l / dep_delay
    load_bytes = (w_coal * hw.coal_bytes + w_uncoal * per_mw * hw.uncoal_tx_bytes) * _arr(dram_fraction)
    bw_per_warp = _arr(hw.core_hz) * load_bytes / mem_l
    with np.errstate(divide="ignore"):
        mwp_peak = np.where(bw_per_warp > 0, _arr(hw.mem_bandwidth_bytes_per_s) / (bw_per_warp * asm), np.inf)
    mwp_peak_l2 = np.full(np.shape(mwp_peak), np.inf)
    roofline = hw.bandwidth_form == "roofline"
    if roofline and hw.l2_bandwidth_bytes_per_s is not None:
        l2_bytes = (w_coal * hw.coal_bytes + w_uncoal * per_mw * hw.uncoal_tx_bytes) * _arr(l2_fraction)
        bw_per_warp_l2 = _arr(hw.core_hz) * l2_bytes / mem_l
        with np.errstate(divide="ignore", invalid="ignore"):
            mwp_peak_l2 = np.where(bw_per_warp_l2 > 0, _arr(hw.l2_bandwidth_bytes_per_s) / (bw_per_warp_l2 * asm), np.inf)
    npw = n_pw(n, mem, ind_mem_insts, hw.n_pw_form)
    mwp_wo = np.minimum(mwp_wo_full, npw)
    mwp = np.minimum(np.minimum(np.minimum(mwp_wo, mwp_peak), mwp_peak_l2), npw)
    comp = comp_cycles(hw, counts)
    mem_cycles = mem_l_uncoal * uncoal + mem_l_coal * coal
    with np.errstate(divide="ignore", invalid="ignore"):
        cwp_full = np.where(comp > 0, (mem_cycles + comp) / comp, np.inf)
    cwp = np.minimum(cwp_full, n)
    rep = blocks / (ab * asm)
    comp_p = comp / safe_mem
    close = np.isclose
    case1 = close(mwp, n) & close(cwp, n)
    case2 = ~case1 & (cwp >= mwp)
    if hw.case2_form == "printed":
        case2 = case2 | (~case1 & (comp > mem_cycles))
    e1 = (mem_cycles + comp + comp_p * (mwp - 1.0)) * rep
    with np.errstate(divide="ignore", invalid="ignore"):
        e2 = (mem_cycles * n / mwp + comp_p * (mwp - 1.0)) * rep
    # Case 3: the thesis exposes one Mem_L per round of blocks; "once": only the first round's (later
    # blocks start as earlier ones finish, their first loads overlap the SM's other warps' computation)
    e3 = (mem_l + comp * n) * rep if hw.case3_form == "thesis" else mem_l + comp * n * rep
    app = np.where(case1, e1, np.where(case2, e2, e3))
    case = np.where(case1, CASE_NOT_ENOUGH_WARPS, np.where(case2, CASE_MEMORY_BOUND, CASE_COMPUTE_BOUND))
    # a kernel without memory instructions: the SM just issues every warp's instructions
    app = np.where(has_mem, app, comp * n * rep)
    case = np.where(has_mem, case, CASE_COMPUTE_BOUND)
    if roofline:
        # the bytes of a round over the lower bandwidth (module docstring); 0 without bytes to move
        with np.errstate(divide="ignore", invalid="ignore"):
            floor = np.where(has_mem, mem_cycles * n / np.minimum(mwp_peak, mwp_peak_l2), 0.0) * rep
        app = np.maximum(app, np.nan_to_num(floor, nan=0.0, posinf=0.0))
    total_insts = sum(_arr(v) for v in counts.values()) if counts else np.zeros(1)
    dep = total_insts * hw.inst_lat_cycles if chain_comp_cycles is None else _arr(chain_comp_cycles)
    chain = (dep + mem_cycles) / np.maximum(_arr(ilp), 1.0) * rep
    if chain_comp_cycles is not None or np.any(_arr(hw.inst_lat_cycles) > 0):
        app = np.maximum(app, chain)
    npwb = np.minimum(mwp, wpb)
    synch = np.where(has_mem, dep_delay, 0.0) * np.maximum(npwb - 1.0, 0.0) * _arr(sync_insts) * ab * rep
    exec_cycles = app + synch
    with np.errstate(divide="ignore", invalid="ignore"):
        cpi = exec_cycles / (total_insts * wpb * blocks / asm)
    return {"n": n, "mem_l": mem_l, "mem_l_coal": mem_l_coal, "mem_l_uncoal": mem_l_uncoal,
            "departure_delay": dep_delay, "mwp_without_bw_full": mwp_wo_full, "mwp_without_bw": mwp_wo,
            "bw_per_warp": bw_per_warp, "mwp_peak_bw": mwp_peak, "mwp_peak_l2": mwp_peak_l2, "n_pw": npw, "mwp": mwp, "comp_cycles": comp,
            "mem_cycles": mem_cycles, "cwp_full": cwp_full, "cwp": cwp, "rep": rep, "case": case,
            "exec_cycles_app": app, "synch_cycles": synch, "exec_cycles": exec_cycles, "cpi": cpi,
            "weight_coal": w_coal, "weight_uncoal": w_uncoal, "chain_cycles": chain}


def optimal_cores(mwp: Any, cwp: Any, n: Any, mwp_peak_bw: Any, mem_bandwidth_bytes_per_s: Any, bw_per_warp: Any,
                  max_cores: int) -> np.ndarray:
    """Optimal number of active SMs, eq. (34) (thesis (63)).

    All SMs when the kernel has too few warps (Case 1: MWP == N and CWP == N), is compute bound
    (MWP > CWP) or does not reach the peak bandwidth (MWP < MWP_peak_BW); otherwise the SM count at
    which MWP_peak_BW falls to N: ``Mem_Bandwidth / (BW_per_warp x N)``, rounded down (more SMs only
    add power once the bandwidth is saturated), at least 1.

    Erratum: eq. (34) prints condition (1) as ``(MWP == N) or (CWP == N)``. Read that way the paper's
    own bandwidth-limited kernels (Table 4: MWP = MWP_peak_BW = 10.802, CWP = N = 16) would keep all
    30 cores, not the 20 the paper reports; the text calls condition (1) the not-enough-warps case,
    which is Case 1 of the timing model (both equal N), so that is what is tested here.

    Units: ``mem_bandwidth_bytes_per_s`` and ``bw_per_warp`` both in bytes/s (the paper quotes GB/s:
    convert both or neither); ``mwp``, ``cwp``, ``n``, ``mwp_peak_bw`` are warp counts.
    """
    mwp, cwp, n, peak = _arr(mwp), _arr(cwp), _arr(n), _arr(mwp_peak_bw)
    full = (np.isclose(mwp, n) & np.isclose(cwp, n)) | (mwp > cwp) | (mwp < peak - 1e-9 * np.abs(peak))
    with np.errstate(divide="ignore", invalid="ignore"):
        opt = np.floor(_arr(mem_bandwidth_bytes_per_s) / (_arr(bw_per_warp) * n) + 1e-9)
    return np.where(full, float(max_cores), np.clip(opt, 1.0, float(max_cores)))
