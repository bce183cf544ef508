"""Kernel execution time from a parameter file's ``timing`` section: MWP/CWP and Wang & Chu.

``predict_time(doc, df)`` gives the predicted time (s) of every row of a samples table or kernel
description table that carries per-warp counts (``cnt_<class>``) and a launch shape (``blocks``,
``threads_per_block``, optionally ``active_sms``, ``core_mhz``, ``mem_mhz``). Which model answers is
the section's ``predictor``: ``"mwp_cwp"`` (:mod:`calib.model.mwp_cwp`) or ``"wangchu"``
(:mod:`calib.model.wangchu`); both use the same hardware parameters.

How a row becomes model inputs (per warp):

- memory instructions that go past L1 -- ``global``, ``local`` (DRAM) and ``l2`` (L2 hits) -- are the
  model's memory instructions; their L2 hit rate is ``l2_hit_rate`` when the row gives it, else
  ``cnt_l2 / (cnt_l2 + cnt_global + cnt_local)``; ``uncoal_frac`` of them are uncoalesced with
  ``trans_per_uncoal`` transactions each (default 0 and the section's ``uncoal_per_mw``, 32);
- every instruction costs issue slots: ``issue_cycles x m_factor_<class>`` (1 when not fitted);
  shared, constant, texture and L1 accesses are computation for MWP/CWP (the thesis treats them as
  register/cache accesses) and shared accesses are Wang & Chu's shared-memory transactions;
- DRAM latency at the row's clocks is ``dm_lat_a x fc/fm + dm_lat_b`` when the section has them (fitted
  over several clock ratios), else the constant ``mem_ld_cycles``; the departure delays scale with the
  DRAM latency (the SM's outstanding-request limit MWP_Without_BW = Mem_L / Departure_delay is a
  hardware constant) -- or, with ``departure_scale="round_trip"`` (MWP/CWP; default ``"dram"``), with the
  kernel's own round trip ``hr x l2_lat + (1 - hr) x DRAM latency``, so that a kernel of mostly L2 hits is
  not slowed by the memory clock through its departure delay; the bandwidth is ``128 B x fm /
  dram_del_coal_mem_cycles``; with ``bandwidth_form="roofline"`` (MWP/CWP; default ``"thesis"``) the L2
  hits are bounded by the L2's bandwidth ``128 B x fc / l2_del_cycles`` as the DRAM bytes are by the
  DRAM's, and no case is faster than its bytes over the bandwidth (:mod:`calib.model.mwp_cwp`; Wang & Chu
  have the L2 service time in eq. 5b);
- ``active_blocks_per_sm`` (occupancy) from the section's ``max_warps_per_sm`` and
  ``max_blocks_per_sm`` unless the row gives it; ``sync_insts`` and ``ind_mem_insts`` per warp enter the
  MWP/CWP synchronization cost and N_pw;
- ``ilp`` (independent chains per thread, default 1; the thesis's ILP/MSTR inputs, Ch. V Table 15):
  a warp keeps ``ilp`` memory requests in flight (``ind_mem_insts`` defaults to ``(1 - 1/ilp)`` of
  them: N_pw = N x ilp; Wang & Chu periods carry ``ilp`` requests each) and its own dependent chain
  takes ``sum_class #insts x latency / ilp`` (when the section has ``inst_lat_cycles``; L1/texture and
  shared loads at ``l1_lat_cycles``/``sh_lat_cycles``, DRAM/L2 at their memory latency).

Time = model cycles / core clock + ``launch_overhead_s``. Wang & Chu's rounds follow the section's
``rounds_form`` (``"paper"``, eq. 6, when absent; ``"overlap"``: a memory-dominated round's fill is paid
once per kernel, :mod:`calib.model.wangchu`).

Section layout (``"model": "mwp_cwp_wangchu"``)::

    "predictor": "wangchu" | "mwp_cwp", "ref_clocks": {"core_mhz", "mem_mhz"}, "sm_count",
    "max_warps_per_sm", "max_blocks_per_sm", "uncoal_per_mw", "uncoal_tx_bytes",
    "mem_l_coal", "n_pw_form", "comp_form", "case2_form", "case3_form", "departure_scale", "bandwidth_form",
    "shared_cases",
    "rounds_form",
    "parameters": {issue_cycles, m_factor_<class>, mem_ld_cycles, dm_lat_a_cycles, dm_lat_b_cycles,
                   departure_del_coal_cycles, departure_del_uncoal_cycles, dram_del_coal_mem_cycles,
                   l2_lat_cycles, l2_del_cycles, l1_lat_cycles, sh_lat_cycles, inst_lat_cycles,
                   launch_overhead_s}
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from calib.core import names
from calib.core.errors import BadInputError
from calib.core.params import Section
from calib.model import mwp_cwp as M
from calib.model import wangchu as W
from calib.core.samples import CNT_PREFIX
from calib.core.units import INSTRUCTION_CLASSES
from calib.model.validation import check_names, in_range

MODEL_NAME = "mwp_cwp_wangchu"
PREDICTORS = ("mwp_cwp", "wangchu")
#: per-warp classes that are memory instructions of the timing models (past L1)
DRAM_CLASSES = ("global", "local")
#: compute and on-chip classes that have an M_Factor (issue slots per warp instruction)
M_CLASSES = ("fp", "int", "alu", "sfu", "dp", "shared", "const", "tex")
LINE_BYTES = 128.0
#: optional per-row timing inputs (kernel descriptions; see calib.model.predict)
TIMING_COLUMNS = ("uncoal_frac", "trans_per_uncoal", "ind_mem_insts", "sync_insts", "l2_hit_rate",
                  "active_blocks_per_sm", "ilp")
#: the model's parameters besides m_factor_<class> (module docstring)
PARAMETERS = ("issue_cycles", "mem_ld_cycles", "dm_lat_a_cycles", "dm_lat_b_cycles", "departure_del_coal_cycles",
              "departure_del_uncoal_cycles", "dram_del_coal_mem_cycles", "dram_del_uncoal_mem_cycles",
              "l2_lat_cycles", "l2_del_cycles", "l1_lat_cycles", "sh_lat_cycles", "inst_lat_cycles",
              "launch_overhead_s")
#: what the departure delays scale with away from the reference clocks (module docstring)
DEPARTURE_SCALES = ("dram", "round_trip")
REQUIRED = ("issue_cycles", "mem_ld_cycles", "departure_del_coal_cycles", "dram_del_coal_mem_cycles")


@dataclass
class TimingSection:
    """A ``timing`` section turned into plain values."""

    predictor: str
    values: dict[str, float]
    ref_core_mhz: float
    ref_mem_mhz: float
    sm_count: int
    max_warps_per_sm: float
    max_blocks_per_sm: float
    uncoal_per_mw: float
    uncoal_tx_bytes: float
    mem_l_coal: str
    n_pw_form: str
    comp_form: str
    shared_cases: bool
    case2_form: str = "fixed"
    rounds_form: str = "paper"
    case3_form: str = "thesis"
    departure_scale: str = "dram"
    bandwidth_form: str = "thesis"

    def v(self, name: str, default: float | None = None) -> float:
        if name in self.values:
            return self.values[name]
        if default is None:
            raise BadInputError(f"timing section has no parameter {name}")
        return default

    @property
    def m_factor(self) -> dict[str, float]:
        return {names.m_factor_class(k): v for k, v in self.values.items() if names.m_factor_class(k) is not None}

    @property
    def has_dvfs_latency(self) -> bool:
        return "dm_lat_a_cycles" in self.values and "dm_lat_b_cycles" in self.values


def compile_section(section: Section) -> TimingSection:
    """A ``timing`` section as a :class:`TimingSection` (BadInputError when it cannot drive the model)."""
    if not isinstance(section, Section) or section.model != MODEL_NAME:
        raise BadInputError(f"parameter file has no timing section of model {MODEL_NAME!r}")
    st = section.structure
    values = section.values()
    ref = st.get("ref_clocks")
    if not isinstance(ref, Mapping) or "core_mhz" not in ref or "mem_mhz" not in ref:
        raise BadInputError("timing section is malformed (missing 'ref_clocks')")
    missing = [n for n in REQUIRED if n not in values]
    if missing:
        raise BadInputError(f"timing section lacks parameter(s) {', '.join(missing)}")
    pred = st.get("predictor", "mwp_cwp")
    if pred not in PREDICTORS:
        raise BadInputError(f"timing section: predictor {pred!r} is not one of {PREDICTORS}")
    for key, allowed in (("rounds_form", W.ROUNDS_FORMS), ("departure_scale", DEPARTURE_SCALES),
                         ("bandwidth_form", M.BANDWIDTH_FORMS), ("case3_form", M.CASE3_FORMS)):
        if key in st and st[key] not in allowed:
            raise BadInputError(f"timing section: {key} {st.get(key)!r} is not one of {allowed}")
    # the forms a section may leave out take TimingSection's defaults
    forms = {k: st[k] for k in ("case2_form", "rounds_form", "case3_form", "departure_scale", "bandwidth_form") if k in st}
    return TimingSection(pred, values, float(ref["core_mhz"]), float(ref["mem_mhz"]), int(st.get("sm_count", 1)),
                         float(st.get("max_warps_per_sm", 32)), float(st.get("max_blocks_per_sm", 32)),
                         float(st.get("uncoal_per_mw", 32)), float(st.get("uncoal_tx_bytes", 32)),
                         st.get("mem_l_coal", "thesis"), st.get("n_pw_form", "fixed"), st.get("comp_form", "max"),
                         bool(st.get("shared_cases", False)), **forms)


def validate(section: Section, where: str = "timing") -> None:
    """SchemaError (naming the field): the latencies and delays the model divides by or multiplies
    cycle counts with must be positive and moderate, M_Factors in (0, 1024]."""
    for name in ("issue_cycles", "mem_ld_cycles", "dram_del_coal_mem_cycles", "departure_del_coal_cycles"):
        in_range(section, name, where, 0.0, 1e6, "the timing model divides by it or needs a positive latency",
                 lo_open=True)
    for name in section.params:
        if names.m_factor_class(name) is not None:
            in_range(section, name, where, 0.0, 1024.0, "issue cycles per warp instruction relative to the base "
                     "rate (1 to 32 on real GPUs)", lo_open=True)
    check_names(section, where, PARAMETERS, patterns=(re.escape(names.M_FACTOR_PREFIX) + r"[A-Za-z0-9_]+",))


@dataclass
class Inputs:
    """Model inputs per row (arrays)."""

    counts: dict[str, np.ndarray]
    total: np.ndarray
    gmem: np.ndarray
    hr: np.ndarray
    coal: np.ndarray
    uncoal: np.ndarray
    tpu: np.ndarray
    ilp: np.ndarray
    shared: np.ndarray
    sync: np.ndarray
    ind: np.ndarray
    tpb: np.ndarray
    blocks: np.ndarray
    asm: np.ndarray
    ab: np.ndarray
    fc: np.ndarray
    fm: np.ndarray
    #: rows whose ``ind_mem_insts`` the table gave (elsewhere it follows the ILP: (1 - 1/ilp) of gmem)
    ind_given: np.ndarray | None = None


def take_inputs(x: Inputs, idx: np.ndarray) -> Inputs:
    """The rows ``idx`` of ``x`` (an index array; repeats allowed)."""
    kw = {}
    for f in dataclasses.fields(x):
        v = getattr(x, f.name)
        kw[f.name] = None if v is None else {k: a[idx] for k, a in v.items()} if isinstance(v, dict) else v[idx]
    return Inputs(**kw)


def with_ilp(x: Inputs, ilp: np.ndarray) -> Inputs:
    """``x`` with ILP ``ilp`` per row (and the independent memory instructions that follow it where
    the table did not give them)."""
    ilp = np.maximum(np.asarray(ilp, float), 1.0)
    ind = x.gmem * (1.0 - 1.0 / ilp)
    if x.ind_given is not None:
        ind = np.where(x.ind_given, x.ind, ind)
    return dataclasses.replace(x, ilp=ilp, ind=ind)


def _col(df: pd.DataFrame, name: str, default: float) -> np.ndarray:
    if name in df.columns:
        v = pd.to_numeric(df[name], errors="coerce").to_numpy(dtype=float)
        return np.where(np.isnan(v), default, v)
    return np.full(len(df), float(default))


def inputs_from_table(ts: TimingSection, df: pd.DataFrame, source: str = "<table>") -> Inputs:
    """Model inputs from ``cnt_`` columns and the launch columns (module docstring)."""
    cnt = [c for c in df.columns if c.startswith(CNT_PREFIX) and c[len(CNT_PREFIX):] in INSTRUCTION_CLASSES]
    if not cnt:
        raise BadInputError(f"{source}: no per-warp counts (cnt_<class> columns); cannot predict time")
    for need in ("blocks", "threads_per_block"):
        if need not in df.columns:
            raise BadInputError(f"{source}: column '{need}' missing; the timing model needs the launch shape")
    counts = {c[len(CNT_PREFIX):]: np.nan_to_num(df[c].to_numpy(dtype=float)) for c in cnt}
    zero = np.zeros(len(df))
    total = sum(counts.values())
    dram = sum((counts.get(c, zero) for c in DRAM_CLASSES), zero)
    l2 = counts.get("l2", zero)
    gmem = dram + l2
    with np.errstate(divide="ignore", invalid="ignore"):
        hr_counts = np.where(gmem > 0, l2 / gmem, 0.0)
    hr = _col(df, "l2_hit_rate", np.nan)
    hr = np.where(np.isnan(hr), hr_counts, hr)
    if "l2_lat_cycles" not in ts.values and np.any(hr > 0):
        warnings.warn(f"{source}: the timing section has no L2 latency; L2 hits are treated as DRAM accesses")
        hr = np.zeros(len(df))
    if np.any((hr < 0) | (hr > 1)):
        raise BadInputError(f"{source}: l2_hit_rate must be in [0, 1]")
    uf = np.clip(_col(df, "uncoal_frac", 0.0), 0.0, 1.0)
    tpb = df["threads_per_block"].to_numpy(dtype=float)
    blocks = df["blocks"].to_numpy(dtype=float)
    asm = _col(df, "active_sms", ts.sm_count)
    if np.any(asm > ts.sm_count):
        warnings.warn(f"{source}: rows ask for more active SMs than the device's {ts.sm_count}; clipped")
        asm = np.minimum(asm, ts.sm_count)
    asm = np.minimum(asm, np.maximum(blocks, 1.0))  # an SM without a block is idle
    ab = M.active_blocks_per_sm(blocks, asm, tpb, ts.max_warps_per_sm, ts.max_blocks_per_sm,
                                _col(df, "active_blocks_per_sm", np.nan))
    ilp = np.maximum(_col(df, "ilp", 1.0), 1.0)
    ind = _col(df, "ind_mem_insts", np.nan)
    ind_given = ~np.isnan(ind)
    ind = np.where(ind_given, ind, gmem * (1.0 - 1.0 / ilp))
    return Inputs(counts, total, gmem, hr, gmem * (1.0 - uf), gmem * uf, _col(df, "trans_per_uncoal", ts.uncoal_per_mw),
                  ilp, counts.get("shared", zero), _col(df, "sync_insts", 0.0), ind, tpb, blocks,
                  asm, ab, _col(df, "core_mhz", ts.ref_core_mhz), _col(df, "mem_mhz", ts.ref_mem_mhz), ind_given)


def dram_latency(ts: TimingSection, fc: np.ndarray, fm: np.ndarray) -> np.ndarray:
    """DRAM latency in core cycles at core clock ``fc`` and memory clock ``fm`` (MHz; module docstring)."""
    return (W.dram_latency_cycles(ts.values["dm_lat_a_cycles"], ts.values["dm_lat_b_cycles"], fc, fm)
            if ts.has_dvfs_latency else np.zeros(np.broadcast(fc, fm).shape) + ts.values["mem_ld_cycles"])


def with_ref_latency(values: Mapping[str, Any], ref_core_mhz: float, ref_mem_mhz: float) -> dict[str, Any]:
    """``values`` with ``mem_ld_cycles`` = the DRAM latency at the reference clocks (Wang & Chu eq. 4) when
    they give the line ``dm_lat_a_cycles``, ``dm_lat_b_cycles``; a fitter that fits the line keeps Mem_LD,
    the departure delays' scale, on it. Values may be arrays (parameter sets evaluated at once)."""
    v = dict(values)
    if "dm_lat_a_cycles" in v and "dm_lat_b_cycles" in v:
        v["mem_ld_cycles"] = W.dram_latency_cycles(v["dm_lat_a_cycles"], v["dm_lat_b_cycles"], ref_core_mhz, ref_mem_mhz)
    return v


def structure(predictor: str, comp_form: str, ref_core_mhz: float, ref_mem_mhz: float, sm_count: int,
              max_warps_per_sm: float, max_blocks_per_sm: float, **forms: Any) -> dict[str, Any]:
    """A timing section's ``structure`` as the fitters write it: the predictor and Comp_cycles form,
    ``forms`` (``shared_cases`` and the fitter's other choices), the thesis's fixed forms, the reference
    clocks (MHz) and the occupancy limits."""
    return {"predictor": predictor, "comp_form": comp_form, "case2_form": "fixed", **forms, "mem_l_coal": "thesis",
            "n_pw_form": "fixed", "ref_clocks": {"core_mhz": ref_core_mhz, "mem_mhz": ref_mem_mhz},
            "sm_count": int(sm_count), "max_warps_per_sm": float(max_warps_per_sm),
            "max_blocks_per_sm": float(max_blocks_per_sm), "uncoal_per_mw": 32.0, "uncoal_tx_bytes": 32.0}


def _scaled_departures(ts: TimingSection, dm_lat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    scale = dm_lat / ts.values["mem_ld_cycles"]
    dd_c = ts.values["departure_del_coal_cycles"] * scale
    dd_u = ts.v("departure_del_uncoal_cycles", ts.values["departure_del_coal_cycles"]) * scale
    return dd_c, dd_u


#: classes whose dependent latency is a memory latency of the section (else inst_lat_cycles)
_CLASS_LATENCY = {"l1": "l1_lat_cycles", "tex": "l1_lat_cycles", "shared": "sh_lat_cycles"}


def chain_comp_cycles(ts: TimingSection, x: Inputs) -> np.ndarray | None:
    """Cycles of one warp's dependent chain through its non-memory instructions (before dividing by
    its ILP): each class at its latency -- L1/texture and shared loads at the measured load-to-use
    latencies, everything else at ``inst_lat_cycles``. None when the section has no instruction latency."""
    lat = ts.values.get("inst_lat_cycles")
    if lat is None:
        return None
    total = np.zeros(len(x.total))
    for c, n in x.counts.items():
        if c in T_MEMORY:
            continue
        total = total + n * ts.values.get(_CLASS_LATENCY.get(c, ""), lat)
    return total


T_MEMORY = frozenset({"global", "local", "l2"})


def mwp_cwp_details(ts: TimingSection, x: Inputs) -> dict[str, np.ndarray]:
    """Every MWP/CWP quantity per row (cycles), with the L2 extension (module docstring)."""
    dm_lat = dram_latency(ts, x.fc, x.fm)
    l2_lat = ts.v("l2_lat_cycles", 0.0)
    mem_ld = x.hr * l2_lat + (1.0 - x.hr) * dm_lat
    if ts.departure_scale == "round_trip":
        # with the kernel's own round trip (its L2 hits do not slow with the memory clock): the kernel's
        # MWP_Without_BW = Mem_L / Departure_delay stays its constant at every clock pair
        dd_c, dd_u = _scaled_departures(ts, mem_ld * ts.values["mem_ld_cycles"]
                                        / np.maximum(x.hr * l2_lat + (1.0 - x.hr) * ts.values["mem_ld_cycles"], 1e-9))
    else:
        dd_c, dd_u = _scaled_departures(ts, dm_lat)
    bw = LINE_BYTES * x.fm * 1e6 / ts.values["dram_del_coal_mem_cycles"]
    l2_bw = LINE_BYTES * x.fc * 1e6 / ts.values["l2_del_cycles"] if "l2_del_cycles" in ts.values else None
    # one MwpHardware per distinct departure scale would be slow: the departure delays enter the model
    # linearly through Mem_L and Departure_delay, so evaluate with arrays via a per-row hardware
    hw = M.MwpHardware(mem_ld, dd_c, dd_u, bw, x.fc * 1e6, ts.values["issue_cycles"], ts.m_factor, x.tpu,
                       LINE_BYTES, ts.uncoal_tx_bytes, ts.mem_l_coal, ts.n_pw_form, ts.comp_form, ts.case2_form,
                       ts.v("inst_lat_cycles", 0.0), case3_form=ts.case3_form, bandwidth_form=ts.bandwidth_form,
                       l2_bandwidth_bytes_per_s=l2_bw)
    return M.mwp_cwp(hw, x.counts, x.coal, x.uncoal, x.tpb, x.blocks, x.asm, x.ab, x.sync, x.ind,
                     dram_fraction=1.0 - x.hr, ilp=x.ilp, chain_comp_cycles=chain_comp_cycles(ts, x),
                     l2_fraction=x.hr)


def wangchu_details(ts: TimingSection, x: Inputs) -> dict[str, np.ndarray]:
    """Wang & Chu quantities per row: agl_lat, agl_del, avr_comp, o_itrs, T_active, case, cycles."""
    dm_lat = dram_latency(ts, x.fc, x.fm)
    dd_c, dd_u = _scaled_departures(ts, dm_lat)
    trans = x.coal + x.uncoal * x.tpu
    with np.errstate(divide="ignore", invalid="ignore"):
        w_u = np.where(trans > 0, x.uncoal * x.tpu / trans, 0.0)
    del_coal = ts.values["dram_del_coal_mem_cycles"]
    del_uncoal = ts.v("dram_del_uncoal_mem_cycles", del_coal * ts.uncoal_tx_bytes / LINE_BYTES)
    dram_del = del_coal * (1.0 - w_u) + del_uncoal * w_u
    dep = dd_c * (1.0 - w_u) + dd_u * w_u
    agl_lat, agl_del = W.memory_latencies(dm_lat, dram_del, ts.v("l2_lat_cycles", 0.0), ts.v("l2_del_cycles", 0.0),
                                          x.hr, x.fc, x.fm, x.asm, dep)
    hw = M.MwpHardware(dm_lat, 0.0, 0.0, 1.0, x.fc * 1e6, ts.values["issue_cycles"], ts.m_factor,
                       comp_form=ts.comp_form)
    comp = M.comp_cycles(hw, x.counts)
    requests = x.coal + x.uncoal
    o_itrs = np.maximum(requests / x.ilp, 1.0)      # periods: ilp requests in flight per period
    g = np.where(trans > 0, trans / o_itrs, 1.0)    # transactions of one period
    avr_comp = comp / o_itrs
    wpb = np.ceil(x.tpb / 32.0)
    aw = x.ab * wpb
    i_itrs = x.shared / o_itrs if ts.shared_cases else np.zeros_like(o_itrs)
    ta, case = W.t_active(avr_comp, agl_lat, agl_del, aw, wpb, o_itrs, ts.v("sh_lat_cycles", 0.0), i_itrs, g)
    # a kernel without global memory traffic issues its instructions: T_active = Aw x Comp_cycles
    ta = np.where(trans > 0, ta, comp * aw)
    # nor can a round be shorter than one warp's own dependent chain (DEP_Effect, thesis eq. 70)
    dep = chain_comp_cycles(ts, x)
    if dep is not None:
        ta = np.maximum(ta, dep / x.ilp + np.where(trans > 0, agl_lat * o_itrs, 0.0))
    case = np.where(trans > 0, case, 0)
    # Wang & Chu's rounds (eq. 6) or a saturated queue carried over from round to round (wangchu docstring)
    fill = W.round_fill_cycles(case, avr_comp, agl_lat) if ts.rounds_form == "overlap" else 0.0
    cycles = W.t_exec_cycles(ta, wpb, x.blocks, aw, x.asm, fill)
    return {"dm_lat": dm_lat, "agl_lat": agl_lat, "agl_del": agl_del, "avr_comp": avr_comp, "o_itrs": o_itrs,
            "aw": aw, "t_active": ta, "case": case, "exec_cycles": cycles}


def predict_cycles(ts: TimingSection, x: Inputs, predictor: str | None = None) -> np.ndarray:
    """Predicted kernel cycles (core clock) per row."""
    pred = predictor or ts.predictor
    if pred == "wangchu":
        return wangchu_details(ts, x)["exec_cycles"]
    if pred == "mwp_cwp":
        return mwp_cwp_details(ts, x)["exec_cycles"]
    raise BadInputError(f"unknown timing predictor {pred!r}; expected one of {PREDICTORS}")


def predict_time(section: Section, df: pd.DataFrame, predictor: str | None = None,
                 source: str = "<table>") -> np.ndarray:
    """Predicted execution time of one launch, s, per row (module docstring), from a ``timing`` section."""
    ts = compile_section(section)
    return time_from_inputs(ts, inputs_from_table(ts, df, source), predictor)


def time_from_inputs(ts: TimingSection, x: Inputs, predictor: str | None = None) -> np.ndarray:
    """Predicted time of one launch, s, per row of model inputs: cycles / core clock + launch overhead."""
    return predict_cycles(ts, x, predictor) / (x.fc * 1e6) + ts.v("launch_overhead_s", 0.0)


def predict_time_anchored(section: Section, df: pd.DataFrame, base_time_s: Any, base_core_mhz: Any,
                          base_mem_mhz: Any, predictor: str | None = None, infer_ilp: bool = False) -> np.ndarray:
    """Time at each row's clocks from one measured baseline: ``T_base x T_model(row) / T_model(base)``.

    Wang & Chu predict every clock pair from one profile taken at a baseline pair; scaling the
    measured baseline time by the model's ratio removes the model's error at the baseline itself.
    ``infer_ilp``: first set each row's ILP where it has none from the baseline time (:func:`anchor_ilp`).
    """
    if infer_ilp:
        df = df.assign(ilp=anchor_ilp(section, df, base_time_s, base_core_mhz, base_mem_mhz))
    base = df.copy()
    base["core_mhz"] = np.broadcast_to(np.asarray(base_core_mhz, float), (len(df),))
    base["mem_mhz"] = np.broadcast_to(np.asarray(base_mem_mhz, float), (len(df),))
    t_row = predict_time(section, df, predictor)
    t_base = predict_time(section, base, predictor)
    return np.asarray(base_time_s, float) * t_row / t_base


#: ILP values an anchored prediction tries for a kernel whose profile does not give it (log-spaced 1..8)
ILP_GRID = np.exp(np.linspace(0.0, np.log(8.0), 64))
#: relative time within which a kernel whose measured time no ILP reaches is matched (0.2 %)
ILP_MATCH_TOL = 0.002


def infer_ilp(ts: TimingSection, x: Inputs, time_s: Any, predictor: str | None = None) -> np.ndarray:
    """Per row of ``x`` (model inputs at the profiled clocks), the ILP in 1..8 at which the model gives
    the measured ``time_s``: the smallest ILP at which the model is no slower than the measured time
    (interpolated in log ILP between the points of :data:`ILP_GRID`); when no ILP is that fast, the
    smallest within :data:`ILP_MATCH_TOL` of the model's fastest. Continuous in the section's
    parameters (the timing fit differentiates through it), evaluated in one vectorized model call.
    Parameter values may be arrays of shape (P, 1) (P parameter sets at once, as the timing fit's
    finite-difference Jacobian passes them): the result is then (P, rows)."""
    n, g = len(x.total), len(ILP_GRID)
    grid = with_ilp(take_inputs(x, np.tile(np.arange(n), g)), np.repeat(ILP_GRID, n))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        t = time_from_inputs(ts, grid, predictor)
    t = t.reshape(t.shape[:-1] + (g, n))
    gap = np.log(np.maximum(t, 1e-300) / np.asarray(time_s, float))      # > 0: the model is slower
    gap = np.where(np.isfinite(gap), gap, np.inf)
    level = np.maximum(np.min(gap, axis=-2) + ILP_MATCH_TOL, 0.0)
    first = np.argmax(gap <= level[..., None, :], axis=-2)                # first grid point at the level
    lo = np.maximum(first - 1, 0)
    g_lo = np.take_along_axis(gap, lo[..., None, :], axis=-2)[..., 0, :]
    g_hi = np.take_along_axis(gap, first[..., None, :], axis=-2)[..., 0, :]
    with np.errstate(all="ignore"):
        frac = np.where(g_lo > g_hi, (g_lo - level) / (g_lo - g_hi), 1.0)
    log_grid = np.log(ILP_GRID)
    out = np.exp(log_grid[lo] + np.clip(frac, 0.0, 1.0) * (log_grid[first] - log_grid[lo]))
    return np.where(first == 0, ILP_GRID[0], out)


def anchor_ilp(section: Section, df: pd.DataFrame, base_time_s: Any, base_core_mhz: Any, base_mem_mhz: Any) -> np.ndarray:
    """Per row, the ILP (independent chains per thread, 1..8) at which the model gives the measured
    ``base_time_s`` at the base clocks (:func:`infer_ilp`): profilers do not report a kernel's
    memory-level parallelism, but its measured time at the profiled pair pins it. Rows that give
    ``ilp`` keep it."""
    base = df.copy()
    base["core_mhz"] = np.broadcast_to(np.asarray(base_core_mhz, float), (len(df),))
    base["mem_mhz"] = np.broadcast_to(np.asarray(base_mem_mhz, float), (len(df),))
    ts = compile_section(section)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = inputs_from_table(ts, base)
    out = infer_ilp(ts, x, np.broadcast_to(np.asarray(base_time_s, float), (len(df),)))
    if "ilp" in df.columns:
        given = pd.to_numeric(df["ilp"], errors="coerce").to_numpy(float)
        out = np.where(np.isnan(given), out, given)
    return out
