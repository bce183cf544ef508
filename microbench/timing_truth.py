"""Ground truth of the virtual GPUs' timing physics, in the terms of the fitted timing model.

Only recovery reports and tests read this module; the fitter never does. The truths are the design
values of :class:`~microbench.devices.sim.timing.TimingPhysics` expressed as the parameters of the
``timing`` section (:mod:`calib.model.timing`):

- ``issue_cycles``: cycles between two warp instructions an SM issues, ``1 / warp_issue_per_cycle``;
- ``m_factor_<class>``: how many issue slots one warp instruction of a class occupies its pipe,
  ``warp_issue_per_cycle / throughput[class]`` (thesis Table 6's M_Factor), for the classes whose pipe
  is slower than issue (the others are 1 by design and not identifiable apart from issue);
- ``inst_lat_cycles``: dependent-issue latency of an FP32 instruction (the FMA chain's class);
- ``mem_ld_cycles``: DRAM round trip of one transaction at the default clocks (random access, new row,
  TLB hit): ``a + b`` of the physics;
- ``dm_lat_a_cycles``, ``dm_lat_b_cycles``: DRAM latency ``a * fc/fm + b`` in core cycles (Wang & Chu
  eq. 4; DVFS presets only, where the ratio fc/fm can change);
- ``departure_del_coal_cycles``: the SM's minimum distance between two transactions, i.e. the DRAM
  latency over the requests one SM keeps in flight (the MWP_Without_BW of the physics is exactly the
  outstanding-request limit); ``departure_del_uncoal_cycles``: the same with the coalescer replay of
  uncoalesced transactions, combined by the physics' soft maximum;
- ``dram_del_coal_mem_cycles``: the chip's DRAM service time per 128-byte transaction in memory-clock
  cycles, ``128 / (bytes per memory cycle x efficiency)``;
- ``l2_lat_cycles``, ``l1_lat_cycles``, ``sh_lat_cycles``: load-to-use latencies; ``l2_del_cycles``:
  the L2's service time per 128-byte transaction, ``128 / l2_bytes_per_cycle`` (chip, core cycles);
- ``launch_overhead_s``.

Caveat (stated in the recovery rows): on ``gtx580`` the DRAM bandwidth bound and the
outstanding-request bound of the physics coincide, so every streaming measurement runs about 12 %
slower than either bound alone; its ``dram_del_coal_mem_cycles`` and ``departure_del_coal_cycles``
are not separately recoverable within 10 %.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from calib.core.params import ParameterFile
from microbench.devices.sim.presets import Preset, get_preset
from microbench.devices.sim.timing import _softmax

#: classes whose M_Factor the campaign's unit kernels measure (stressed class of a unit kernel)
M_FACTOR_CLASSES = ("fp", "int", "alu", "sfu", "dp", "shared", "const", "tex")


def timing_truth_of(p: Preset) -> dict[str, dict[str, Any]]:
    """Truth per parameter, ``{"timing.<name>": {"value", "unit", "how"}}`` (see module docstring)."""
    tp = p.timing
    out: dict[str, dict[str, Any]] = {}

    def put(name: str, value: float, unit: str, how: str) -> None:
        out[f"timing.{name}"] = {"value": float(value), "unit": unit, "how": how}

    issue = tp.warp_issue_per_cycle
    put("issue_cycles", 1.0 / issue, "cycles", "design: 1 / warp instructions issued per cycle")
    # the instruction classes the GPU counts (its units are classes on NVIDIA; AMD's count several each)
    units = {c for cs in p.unit_classes.values() for c in cs} if p.unit_classes else set(p.units)
    for c in M_FACTOR_CLASSES:
        thr = tp.throughput.get(c)
        if thr and c in units and issue / thr > 1.1:
            put(f"m_factor_{c}", issue / thr, "1", "design: issue rate / pipe throughput")
    put("inst_lat_cycles", tp.latency["fp"], "cycles", "design: dependent-issue latency of FP32")
    mem_ld = tp.dram_lat_a + tp.dram_lat_b
    put("mem_ld_cycles", mem_ld, "cycles", "design: DRAM latency at the default clocks (a + b)")
    if p.dvfs is not None:
        ratio0 = p.default_core_mhz / p.default_mem_mhz
        put("dm_lat_a_cycles", tp.dram_lat_a / ratio0, "cycles", "design: slope of DRAM latency vs fc/fm")
        put("dm_lat_b_cycles", tp.dram_lat_b, "cycles", "design: DRAM latency at fc/fm -> 0")
    local = mem_ld / tp.max_outstanding_per_sm
    put("departure_del_coal_cycles", local, "cycles", "design: DRAM latency / outstanding requests per SM")
    put("departure_del_uncoal_cycles", _softmax([local, tp.uncoal_issue()], tp.softmax_p), "cycles",
        "design: soft max of the coalesced delay and the coalescer replay")
    put("dram_del_coal_mem_cycles", 128.0 / (tp.dram_bytes_per_mem_cycle * tp.dram_efficiency), "mem cycles",
        "design: 128 B / achievable DRAM bytes per memory cycle")
    if tp.l2_lat > 0 and "l2" in units:
        put("l2_lat_cycles", tp.l2_lat, "cycles", "design")
        put("l2_del_cycles", 128.0 / tp.l2_bytes_per_cycle, "cycles", "design: 128 B / L2 bytes per core cycle")
    if tp.l1_lat > 0 and "l1" in units:
        put("l1_lat_cycles", tp.l1_lat, "cycles", "design")
    put("sh_lat_cycles", tp.shared_lat, "cycles", "design")
    put("launch_overhead_s", tp.launch_overhead_s, "s", "design")
    return out


@lru_cache(maxsize=8)
def timing_truth(name: str) -> dict[str, dict[str, Any]]:
    """Timing truth of the preset called ``name``."""
    return timing_truth_of(get_preset(name))


def timing_recovery_rows(preset: str, pf: ParameterFile) -> list[dict[str, Any]]:
    """Rows for the recovery report (same fields as ``recovery_report``'s ``parameters``): truth,
    fitted value, standard errors and relative error (%) of every timing parameter with a truth."""
    rows = []
    sec = pf.get("timing")
    for key, t in timing_truth(preset).items():
        name = key.split(".", 1)[1]
        p = sec[name] if sec is not None and name in sec else None
        fitted = None if p is None else float(p.value)
        err = None if fitted is None or t["value"] == 0 else 100.0 * (fitted - t["value"]) / abs(t["value"])
        how = t["how"]
        if preset == "gtx580" and name in ("dram_del_coal_mem_cycles", "departure_del_coal_cycles"):
            how += " (bandwidth and outstanding-request bounds coincide on this preset: not separable)"
        rows.append({"parameter": key, "unit": t["unit"], "truth": t["value"], "fitted": fitted,
                     "stderr": None if p is None else p.stderr,
                     "stderr_total": None if p is None else p.stderr_total, "error_pct": err,
                     "abs_error": None if fitted is None else fitted - t["value"], "truth_from": how})
    return rows
