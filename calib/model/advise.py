"""Advice a kernel author can act on: the Ch. V category of each kernel, the thesis's suggestion for it,
and the predicted effect of that suggestion computed with the fitted timing and power models.

The category and its numbers come from :mod:`calib.model.throughput` on the MWP/CWP quantities of the
fitted ``timing`` section (:func:`calib.model.timing.mwp_cwp_details`). The suggestions of the thesis
(Sec. 5.5, eqs. 83-93) become concrete variants of the kernel whose time (timing section, the file's
predictor) and board power (power section; :func:`calib.model.energy.board_power`) are predicted:

``fewer_sms`` (categories 1, 3, 4, 6, 8, 9: wherever MWP_BW < MWP_App)
    divide the active SMs by alpha = MWP_App / MWP_BW (eqs. 83-88), same grid (same total work);
``fewer_warps`` (6)
    N x MWP_BW / MWP_App warps per SM (eqs. 89-91): the same total work in fewer, longer warps
    (one round of ``active_blocks_per_sm`` blocks per SM);
``more_warps`` (5)
    up to MWP_App_InfiN warps per SM (the warps needed to hide memory), within the occupancy limit,
    same total work;
``coalesce`` (2, 7)
    the kernel's uncoalesced accesses made coalesced;
``lower_core_clock`` (1, 2, 5)
    the least-energy core clock at the default memory clock within a 10 % slowdown
    (:func:`calib.model.energy.clock_table`), on devices that list several core clocks.

A suggestion that cannot be evaluated (one core clock; accesses already coalesced; N already at the
occupancy limit) says why instead of a number. A kernel lacking an input a category needs gets
category None and the missing inputs named (:func:`missing_inputs`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from calib.core.atomic import finite_or_none
from calib.core.errors import BadInputError
from calib.core.params import ParameterFile
from calib.core.samples import CNT_PREFIX
from calib.model import energy as E
from calib.model import mwp_cwp as M
from calib.model.registry import power_sections
from calib.model import throughput as TP
from calib.model import timing as T

#: instruction classes whose cycles are "useful" (the thesis's FP instructions, eq. 65-67)
USEFUL_CLASSES = ("fp", "dp", "tensor")
#: classes that are memory instructions past L1 for the timing model
MEMORY_CLASSES = ("global", "local", "l2")
#: per category: the actions whose effect is predicted
ACTIONS: dict[int, tuple[str, ...]] = {
    1: ("lower_core_clock", "fewer_sms"), 2: ("coalesce", "lower_core_clock"), 3: ("fewer_sms",),
    4: ("fewer_sms",), 5: ("more_warps", "lower_core_clock"), 6: ("fewer_warps", "fewer_sms"), 7: ("coalesce",),
    8: ("fewer_sms",), 9: ("fewer_sms",), 10: (),
}
QUANTITIES = ("n", "mstr", "eff_mem_cycles", "eff_comp_cycles", "eff_perf_cycles", "mwp_app_infin", "mwp_app",
              "mwp_bw", "mwp_proc", "mwp", "eff_ratio")


@dataclass
class Effect:
    """Predicted effect of one suggested change: relative change of time, board power and energy per
    launch (fractions; -0.1 = 10 % less), or ``note`` when it cannot be evaluated."""

    action: str
    change: str
    time_change: float = math.nan
    power_change: float = math.nan
    energy_change: float = math.nan
    note: str | None = None
    variant: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "change": self.change, "time_change": finite_or_none(self.time_change),
                "power_change": finite_or_none(self.power_change), "energy_change": finite_or_none(self.energy_change),
                "note": self.note, "variant": self.variant}


@dataclass
class Advice:
    """The analysis of one kernel."""

    kernel: str
    category: int | None
    missing: list[str]
    quantities: dict[str, float]
    effects: list[Effect] = field(default_factory=list)

    @property
    def subcategory(self) -> str | None:
        return TP.CATEGORIES[self.category][0] if self.category else None

    @property
    def diagnosis(self) -> str:
        return TP.CATEGORIES[self.category][1] if self.category else "unknown: missing " + "; ".join(self.missing)

    @property
    def suggestion(self) -> str:
        return TP.CATEGORIES[self.category][2] if self.category else "none (category unknown)"

    def to_dict(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "category": self.category, "subcategory": self.subcategory,
                "diagnosis": self.diagnosis, "suggestion": self.suggestion, "missing": self.missing,
                "quantities": {k: finite_or_none(v) for k, v in self.quantities.items()},
                "effects": [e.to_dict() for e in self.effects]}


def _given(df: pd.DataFrame, col: str) -> np.ndarray:
    return pd.to_numeric(df[col], errors="coerce").notna().to_numpy() if col in df.columns else np.zeros(len(df), bool)


def missing_inputs(df: pd.DataFrame) -> list[list[str]]:
    """Per row, the inputs a category needs that the row does not give (empty when complete).

    Counts not listed are unknown, not 0: read kernel descriptions with
    ``kernel_description_table(path, fill_counts=False)``."""
    cnt = [c for c in df.columns if c.startswith(CNT_PREFIX)]
    has_cnt = np.zeros(len(df), bool)
    for c in cnt:
        has_cnt |= _given(df, c)
    has_mem = np.zeros(len(df), bool)
    for c in MEMORY_CLASSES:
        has_mem |= _given(df, CNT_PREFIX + c)
    has_mstr = _given(df, "mstr") | _given(df, "ilp")
    out = []
    for i in range(len(df)):
        miss = []
        if not has_cnt[i]:
            miss.append("per-warp instruction counts (per_warp / cnt_<class>)")
        elif not has_mem[i]:
            miss.append("the memory instruction count (per_warp.global or .local or .l2 / cnt_global; 0 when "
                        "the kernel has none)")
        for f in ("blocks", "threads_per_block"):
            if not _given(df, f)[i]:
                miss.append(f"launch.{f}")
        if not has_mstr[i]:
            miss.append("MSTR (memory.mstr, or ilp: independent loads before the first use)")
        out.append(miss)
    return out


def _quiet(fn, *a, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a, **kw)


def _filled(pf: ParameterFile, df: pd.DataFrame) -> pd.DataFrame:
    out = df.copy()
    cnt = [c for c in out.columns if c.startswith(CNT_PREFIX)]
    out[cnt] = out[cnt].apply(pd.to_numeric, errors="coerce").fillna(0.0)
    clocks = pf.device.get("clocks") or {}
    ts = T.compile_section(pf["timing"])
    for c, v in (("core_mhz", clocks.get("core_mhz") or ts.ref_core_mhz), ("mem_mhz", clocks.get("mem_mhz") or ts.ref_mem_mhz)):
        out[c] = pd.to_numeric(out[c], errors="coerce").fillna(float(v)) if c in out.columns else float(v)
    # MSTR independent loads per warp are the timing model's independent requests (N_pw, thesis eq. 28),
    # as ilp is: without this the timing model would not see the memory parallelism MWP_App counts
    if "mstr" in out.columns:
        mstr = pd.to_numeric(out["mstr"], errors="coerce").to_numpy(float)
        gmem = sum(out[CNT_PREFIX + c].to_numpy(float) for c in MEMORY_CLASSES if CNT_PREFIX + c in out.columns)
        ind = (pd.to_numeric(out["ind_mem_insts"], errors="coerce").to_numpy(float) if "ind_mem_insts" in out.columns
               else np.full(len(out), np.nan))
        out["ind_mem_insts"] = np.where(np.isnan(ind) & ~np.isnan(mstr), gmem * (1.0 - 1.0 / np.maximum(mstr, 1.0)), ind)
    return out


def quantities(pf: ParameterFile, df: pd.DataFrame) -> dict[str, np.ndarray]:
    """Ch. V quantities and categories (:func:`calib.model.throughput.analyse`) for complete rows."""
    ts = T.compile_section(pf["timing"])
    rows = _filled(pf, df)
    x = _quiet(T.inputs_from_table, ts, rows)
    d = _quiet(T.mwp_cwp_details, ts, x)
    fp = np.zeros(len(rows))
    for c in USEFUL_CLASSES:
        if c in x.counts:
            fp = fp + ts.values["issue_cycles"] * ts.m_factor.get(c, 1.0) * x.counts[c]
    mstr = pd.to_numeric(rows["mstr"], errors="coerce").to_numpy(float) if "mstr" in rows.columns else np.full(len(rows), np.nan)
    mstr = np.where(np.isnan(mstr), x.ilp, mstr)
    q = TP.analyse(d, x.coal + x.uncoal, fp, mstr)
    q["active_sms"] = x.asm
    q["active_blocks_per_sm"] = x.ab
    q["warps_per_block"] = np.ceil(x.tpb / 32.0)
    q["uncoal_frac"] = np.where(x.coal + x.uncoal > 0, x.uncoal / np.maximum(x.coal + x.uncoal, 1e-300), 0.0)
    q["max_blocks_resident"] = M.active_blocks_per_sm(np.full(len(rows), 1e9), np.ones(len(rows)), x.tpb,
                                                      ts.max_warps_per_sm, ts.max_blocks_per_sm)
    return q


def _relative(pf: ParameterFile, base: pd.DataFrame, variant: pd.DataFrame) -> tuple[float, float, float]:
    both = pd.concat([base, variant], ignore_index=True)
    t = _quiet(T.predict_time, pf["timing"], both)
    p, _ = _quiet(E.board_power, pf, both, t, False)
    return float(t[1] / t[0] - 1.0), float(p[1] / p[0] - 1.0), float(p[1] * t[1] / (p[0] * t[0]) - 1.0)


def _regrid(row: pd.DataFrame, asm: float, ab_new: float, wpb_new: float | None = None) -> pd.DataFrame:
    """The same total work in ``ab_new`` resident blocks of ``wpb_new`` warps per SM (one round):
    blocks, threads per block and per-warp counts rescaled."""
    v = row.copy()
    old_blocks = float(row["blocks"].iloc[0])
    old_wpb = math.ceil(float(row["threads_per_block"].iloc[0]) / 32.0)
    wpb_new = float(old_wpb if wpb_new is None else wpb_new)
    new_blocks = float(asm * ab_new)
    scale = old_blocks * old_wpb / (new_blocks * wpb_new)
    v["threads_per_block"] = 32.0 * wpb_new
    for c in [c for c in v.columns if c.startswith(CNT_PREFIX)]:
        v[c] = v[c].astype(float) * scale
    for c in ("ind_mem_insts", "sync_insts"):
        if c in v.columns:
            v[c] = v[c].astype(float) * scale
    v["blocks"] = new_blocks
    v["active_blocks_per_sm"] = float(ab_new)
    return v


def _effect(pf: ParameterFile, action: str, row: pd.DataFrame, q: dict[str, float]) -> Effect:
    asm, ab, n = q["active_sms"], q["active_blocks_per_sm"], q["n"]
    if action == "fewer_sms":
        alpha = q["mwp_app"] / q["mwp_bw"]
        new = max(1, int(math.floor(asm / alpha)))
        if new >= asm:
            new = int(asm) - 1
        if new < 1:
            return Effect(action, f"{asm:g} active SMs", note="already on one SM")
        v = row.copy()
        v["active_sms"] = float(new)
        tc, pc, ec = _relative(pf, row, v)
        return Effect(action, f"{asm:g} -> {new} active SMs (alpha = MWP_App/MWP_BW = {alpha:.3g})", tc, pc, ec,
                      variant={"active_sms": new})
    if action in ("fewer_warps", "more_warps"):
        cap = q["max_blocks_resident"]
        wpb, new_wpb = q["warps_per_block"], None
        if action == "fewer_warps":
            alpha = q["mwp_bw"] / q["mwp_app"]
            n_new = max(1.0, math.floor(n * alpha))
            if n_new >= n:
                return Effect(action, f"N = {n:g}", note="already at one warp per SM")
            if n_new >= wpb:
                new_ab = math.floor(n_new / wpb)
            else:  # fewer warps than one block has: smaller blocks
                new_ab, new_wpb = 1.0, n_new
        else:
            want = math.ceil(ab * q["mwp_app_infin"] / n)
            new_ab = float(min(cap, max(want, ab + 1)))
            if new_ab <= ab:
                return Effect(action, f"N = {n:g}", note=f"N is at the occupancy limit ({cap:g} blocks per SM)")
        v = _regrid(row, asm, new_ab, new_wpb)
        tc, pc, ec = _relative(pf, row, v)
        wpb_v = float(v["threads_per_block"].iloc[0]) / 32.0
        return Effect(action, f"N {n:g} -> {new_ab * wpb_v:g} warps per SM (same total work)", tc, pc, ec,
                      variant={"blocks": int(v["blocks"].iloc[0]), "threads_per_block": int(v["threads_per_block"].iloc[0]),
                               "active_blocks_per_sm": new_ab,
                               "work_scale": float(row["blocks"].iloc[0]) * wpb / (float(v["blocks"].iloc[0]) * wpb_v)})
    if action == "coalesce":
        if q["uncoal_frac"] <= 0:
            return Effect(action, "coalesced accesses", note="the kernel's accesses are already coalesced")
        v = row.copy()
        v["uncoal_frac"] = 0.0
        tc, pc, ec = _relative(pf, row, v)
        return Effect(action, f"{100 * q['uncoal_frac']:.0f} % -> 0 % uncoalesced accesses", tc, pc, ec,
                      variant={"uncoal_frac": 0.0})
    if action == "lower_core_clock":
        clocks = pf.device.get("clocks") or {}
        core = sorted({float(c) for c in (clocks.get("supported") or {}).get("core_mhz", [])})
        f0c, f0m = clocks.get("core_mhz"), clocks.get("mem_mhz")
        lower = [c for c in core if f0c is not None and c < float(f0c)]
        if not lower or f0m is None:
            return Effect(action, "lower core clock", note="the device lists no core clock below the default")
        try:
            table = _quiet(E.clock_table, pf, row, [(c, float(f0m)) for c in lower], anchored=False)
        except BadInputError as e:
            return Effect(action, "lower core clock", note=str(e))
        best = E.recommend(table, "energy", 0.10)
        base = table[table["default"]].iloc[0]
        return Effect(action, f"core {float(f0c):g} -> {best['core_mhz']:g} MHz (least energy within 10 % slowdown)",
                      float(best["time_s"] / base["time_s"] - 1.0), float(best["power_w"] / base["power_w"] - 1.0),
                      float(best["energy_j"] / base["energy_j"] - 1.0), variant={"core_mhz": float(best["core_mhz"])})
    raise ValueError(action)  # pragma: no cover - ACTIONS lists the ones above


def advise(pf: ParameterFile, df: pd.DataFrame, effects: bool = True) -> list[Advice]:
    """The analysis of every kernel row of ``df`` (module docstring). ``pf`` needs a timing section
    (and a power section for the effects)."""
    if "timing" not in pf:
        raise BadInputError("the parameter file has no timing section; the throughput analysis needs the fitted "
                            "memory latency, departure delays and bandwidth (calib run / calib fit a session "
                            "with timing microbenchmarks)")
    missing = missing_inputs(df)
    names = [str(w) for w in df["workload"]] if "workload" in df.columns else [f"row {i + 1}" for i in range(len(df))]
    ok = [i for i, m in enumerate(missing) if not m]
    out = [Advice(names[i], None, missing[i], {}) for i in range(len(df))]
    if not ok:
        return out
    sub = df.iloc[ok].reset_index(drop=True)
    q = quantities(pf, sub)
    filled = _filled(pf, sub)
    has_power = bool(power_sections(pf))
    for j, i in enumerate(ok):
        qi = {k: float(np.ravel(v)[j]) for k, v in q.items() if k != "category"}
        cat = int(np.ravel(q["category"])[j])
        adv = Advice(names[i], cat, [], {k: qi[k] for k in QUANTITIES})
        adv.quantities["active_sms"] = qi["active_sms"]
        if effects and has_power:
            row = filled.iloc[[j]].reset_index(drop=True)
            if "active_sms" not in row.columns or pd.isna(row["active_sms"].iloc[0]):
                row["active_sms"] = qi["active_sms"]
            for action in ACTIONS[cat]:
                adv.effects.append(_effect(pf, action, row, qi))
        out[i] = adv
    return out
