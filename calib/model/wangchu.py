"""Wang & Chu DVFS timing model (paper 001: "GPGPU Performance Estimation with Core and Memory
Frequency Scaling"), eqs. 2-21, predicting a kernel's time at any (core, memory) clock pair.

Memory side (cycles are core cycles at the row's clocks ``fc``, ``fm``):

    dm_lat   = a x fc/fm + b                                          DRAM latency, eq. (4)
    dm_del   = dram_del_mem x fc/fm x #Asm                            the SM's share of the DRAM service
    agl_lat  = l2_lat x l2_hr + dm_lat x (1 - l2_hr)                   eq. (5a)
    agl_del  = l2_del x #Asm x l2_hr + dm_del x (1 - l2_hr)           eq. (5b)

Two readings differ from the print, both for dimensional consistency: eq. (5a) multiplies dm_lat by
``core_f/mem_f`` again although eq. (4) already gives it in core cycles at the row's clocks (the
paper's baseline has fc/fm = 1, where the factor is invisible), so it is not applied; and dm_del,
measured as a service time of the whole DRAM (Wang & Chu divide the kernel's cycles by the
transactions of *all* warps), is kept in memory-clock cycles for the chip (``dram_del_mem``) and
becomes the per-SM delay ``dram_del_mem x fc/fm x #Asm`` -- the factor fc/fm is eq. (5b)'s. The SM's
own minimum departure distance (``departure_del``, Hong's Departure_del_coal) bounds agl_del from below,
which matters when few SMs run.

Compute side: ``avr_comp = inst_cycle x avr_inst`` (7a, 7b) with ``avr_inst = comp_inst / gld_trans``;
``inst_cycle x comp_inst`` is the issue time of a warp's instructions (issue cycles x M_Factor per
class, from the MWP/CWP model), so avr_comp is the computation of one period.

T_active, cycles of one round of #Aw active warps on an SM (o_itrs periods per warp):

    compute-dominated   avr_comp >= agl_del, avr_comp (Aw - 1) >= agl_lat:
                        avr_comp Aw o_itrs + agl_lat                                     (8)-(9)
    memory-dominated    avr_comp <= agl_del, agl_del (Aw - 1) >= avr_comp + agl_lat:
                        agl_lat + avr_comp + agl_del Aw o_itrs                          (10)-(11)
    few warps, short    avr_comp <= agl_del, agl_del (Aw - 1) <= avr_comp + agl_lat:
                        agl_del Aw + agl_lat + avr_comp + (avr_comp + agl_lat)(o_itrs - 1) (12)-(13)
    few warps, long     avr_comp >= agl_del, avr_comp (Aw - 1) <= agl_lat:
                        avr_comp (Aw - 1) + (avr_comp + agl_lat) o_itrs                 (14)-(15)
    shared, infrequent  avr_comp <= agl_del, avr_comp + sh_lat <= agl_del (Aw - Wpb):
                        (avr_comp + agl_lat + agl_del Aw gld_trans) o_itrs              (16)-(17)
    shared, intensive   otherwise, with T_phase1..3:                                    (18)-(21)
                        T1 = 2 avr_comp + agl_del gld_trans Aw + agl_lat + sh_lat
                        T2 = avr_comp (Wpb - 1) + (avr_comp + sh_lat) i_itrs
                        T3 = 2 avr_comp + agl_del gld_trans Wpb + agl_lat + sh_lat
                        T_active = T1 + (T2 + T3) o_itrs
    T_exec = T_active x #Wpb #B / (#Aw #Asm)                                             (6)

Rounds (``rounds_form``): eq. (6) repeats the whole T_active once per round of #Aw warps, so a
memory-dominated round pays its fill -- ``agl_lat + avr_comp``, the first request's round trip before
the queue is full -- every round (``"paper"``). On the GPU a finished block is replaced at once and
the next round's requests join the same saturated queue, so only the kernel's first round pays it
(``"overlap"``): ``T_exec = T_active x R - (agl_lat + avr_comp) x (R - 1)`` for the memory-dominated
case, R = #Wpb #B / (#Aw #Asm) > 1. This is Hong's memory-bound Case 2 (thesis eq. 22), whose per-round
time ``Mem_cycles x N / MWP`` at MWP = MWP_peak_BW is the queue alone, with no round trip per round.
The other cases are unchanged (their latency is not hidden behind a full queue). The campaign's
multi-round stream (timing kind ``rounds``) chooses between the two forms.

Errata: (10b) and (12b) are printed with their inequalities swapped (a saturated queue is the case
where the queue of Aw - 1 warps outlasts one warp's round trip, which is what eq. (11) computes);
eq. (11)'s ``#Wpb`` is ``#Aw`` (the queue holds every active warp, as in eqs. (3) and (17)); eq. (17)
has no o_itrs because the paper's example (transpose) has one period; here it repeats o_itrs times.
When no case's conditions hold exactly (boundaries, or a shared-memory kernel's first test), the
nearest case by the order above is used: compute- or memory-dominated by avr_comp vs agl_del.

``o_itrs`` (periods per warp) is the warp's global memory requests over its independent chains
(``ilp``; 1 gives eq. 7a's one transaction per period); ``gld_trans`` is the transactions of one
period (eqs. 17-20 carry it; eqs. 8-15 are its value 1) and multiplies agl_del wherever it appears;
``i_itrs`` is the shared accesses per period. Everything is vectorised.
"""

from __future__ import annotations

from typing import Any

import numpy as np

ROUNDS_FORMS = ("paper", "overlap")
CASES = {1: "compute", 2: "memory", 3: "few_warps_short", 4: "few_warps_long", 5: "shared_infrequent",
         6: "shared_intensive", 0: "no_memory"}


def _arr(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=float)


def dram_latency_cycles(a: Any, b: Any, core_mhz: Any, mem_mhz: Any) -> np.ndarray:
    """dm_lat = a x fc/fm + b, core cycles (eq. 4)."""
    return _arr(a) * _arr(core_mhz) / _arr(mem_mhz) + _arr(b)


def memory_latencies(dm_lat: Any, dram_del_mem: Any, l2_lat: Any, l2_del: Any, l2_hr: Any, core_mhz: Any,
                     mem_mhz: Any, active_sms: Any, departure_del: Any = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(agl_lat, agl_del) in core cycles per transaction of one SM (eqs. 5a, 5b; module docstring).

    ``dm_lat``, ``l2_lat``, ``l2_del``, ``departure_del``: core cycles; ``dram_del_mem``: memory cycles;
    ``l2_hr``: L2 hit rate (0..1); clocks in MHz."""
    hr = np.clip(_arr(l2_hr), 0.0, 1.0)
    dm_del = _arr(dram_del_mem) * _arr(core_mhz) / _arr(mem_mhz) * _arr(active_sms)
    agl_lat = _arr(l2_lat) * hr + _arr(dm_lat) * (1.0 - hr)
    agl_del = _arr(l2_del) * _arr(active_sms) * hr + np.maximum(dm_del, _arr(departure_del)) * (1.0 - hr)
    return agl_lat, agl_del


def t_active(avr_comp: Any, agl_lat: Any, agl_del: Any, aw: Any, wpb: Any, o_itrs: Any, sh_lat: Any = 0.0,
             i_itrs: Any = 0.0, gld_trans: Any = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """(T_active cycles, case number) per kernel (module docstring). Latencies, delays and ``avr_comp``
    are core cycles; ``aw`` active warps per SM, ``wpb`` warps per block. ``gld_trans``: transactions a
    warp issues together in one period (1 in eqs. 8-15; more with independent loads or uncoalesced
    requests, as in eqs. 17-20); ``i_itrs > 0`` selects the shared-memory cases."""
    c, lat, g = _arr(avr_comp), _arr(agl_lat), _arr(gld_trans)
    dl = _arr(agl_del) * g          # queue time of one period's transactions
    aw, wpb, o = _arr(aw), _arr(wpb), np.maximum(_arr(o_itrs), 1.0)
    sh, ii = _arr(sh_lat), _arr(i_itrs)
    comp_dom = c * aw * o + lat
    mem_dom = lat + c + dl * aw * o
    few_short = dl * aw + lat + c + (c + lat) * (o - 1.0)
    few_long = c * (aw - 1.0) + (c + lat) * o
    short = c <= dl
    saturated = dl * (aw - 1.0) >= c + lat
    hidden = c * (aw - 1.0) >= lat
    t_plain = np.where(short, np.where(saturated, mem_dom, few_short), np.where(hidden, comp_dom, few_long))
    case_plain = np.where(short, np.where(saturated, 2, 3), np.where(hidden, 1, 4))
    infrequent = short & (c + sh <= dl * (aw - wpb))
    t_inf = (c + lat + dl * aw) * o
    t1 = 2.0 * c + dl * aw + lat + sh
    t2 = c * (wpb - 1.0) + (c + sh) * ii
    t3 = 2.0 * c + dl * wpb + lat + sh
    t_int = t1 + (t2 + t3) * o
    shared = ii > 0
    t = np.where(shared, np.where(infrequent, t_inf, t_int), t_plain)
    case = np.where(shared, np.where(infrequent, 5, 6), case_plain)
    return t, case


def t_exec_cycles(t_active_cycles: Any, wpb: Any, blocks: Any, aw: Any, active_sms: Any,
                  fill_cycles: Any = 0.0) -> np.ndarray:
    """T_exec = T_active x #Wpb #B / (#Aw #Asm), eq. (6), cycles (rounds may be fractional), less
    ``fill_cycles`` for every round after the first (the ``"overlap"`` rounds form, module docstring:
    the part of T_active the next round hides; 0 gives eq. 6)."""
    rounds = _arr(wpb) * _arr(blocks) / (_arr(aw) * _arr(active_sms))
    return _arr(t_active_cycles) * rounds - _arr(fill_cycles) * np.maximum(rounds - 1.0, 0.0)


def round_fill_cycles(case: Any, avr_comp: Any, agl_lat: Any) -> np.ndarray:
    """Cycles of a round the next round hides under the ``"overlap"`` rounds form: ``agl_lat +
    avr_comp`` for a memory-dominated round (case 2), 0 otherwise (module docstring)."""
    return np.where(_arr(case) == 2, _arr(agl_lat) + _arr(avr_comp), 0.0)
