"""Choosing the next kernels of a campaign from the current fit (sequential optimal design).

A power fit leaves some parameters poorly determined: units that are always active together (the
register file and fetch/decode/schedule with every instruction, shared memory and the constant cache
with their address arithmetic) have nearly collinear activities in the standard campaign's
single-unit benchmarks. Kernels that run two or three classes at chosen ratios separate them. The
``mix`` kernel takes per-class instruction counts at compile time (:mod:`microbench.kernels.catalog`),
so every candidate here is a real kernel on a real GPU too.

The criterion (sequential A-optimal design, Atkinson, Donev & Tobias, *Optimum Experimental Designs*,
2007, ch. 10-11): with ``C`` the fit's covariance and ``j`` the row of the model's Jacobian that a
candidate kernel would add (measured ``m`` times with noise variance ``s2``), the covariance after it is
the rank-one update

    C' = C - C j j^T C / (s2 / m + j^T C j)            (Sherman-Morrison)

and the candidate chosen is the one that most lowers ``sum_i C'_ii / theta_i^2`` over the *target*
parameters (the relative variances of those not yet within the target). Several kernels are chosen per
round by applying the update after each choice (a greedy exchange), so a round does not pick the same
information twice.

A candidate's access rates (what the Jacobian row needs) come from its predicted kernel time: the
parameter file's timing model when it has one (:func:`calib.model.timing.predict_time`, the same
count model and eq. 10 the samples layer uses), else a throughput bound from the campaign's own
measurements (each unit's highest measured access rate is its ceiling; a mix is issue-bound or bound by
its slowest class). The prediction only ranks candidates: after a kernel ran, its measured time gives
its access rates.

The linear update treats the whole total covariance as uncertainty that rows shrink; its model-form
terms (a MaxPower extrapolated beyond the highest access rate any kernel reaches, the split of units
always active together) do not shrink, so on the standard campaigns it predicts 5-10x too much (titanx:
DP 45 -> 9 %, reached 44 %). Before a round runs, :func:`preview_rows` gives the rows its kernels would
add if the fit were right, and ``calib run`` refits with them: the round runs only if that refit lowers
some target's total error (tests/benchmarks/identify_results.md, session 8).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from calib.core.activity import access_rates, basis_of, count_columns, table_access_rates, warps_per_sm
from calib.core.params import ParameterFile, Section
from calib.core.samples import ACT_PREFIX, CNT_PREFIX
from calib.core.units import DESIGN_CLASSES, DESIGN_ILP, unit_counts
from calib.model import ipp
from calib.model.timing import predict_time

#: per-step counts of the two or three classes of a candidate: ratios of the first to the others
RATIOS = ((1, 1), (3, 1), (1, 3))
#: occupancies (warps per SM) of the candidates: latency-bound and issue-bound
OCCUPANCIES = (4, 32)


@dataclass(frozen=True)
class Candidate:
    """A design kernel: the mix's per-step counts by class and its launch (warps per SM)."""

    mix: Mapping[str, float]
    warps_per_sm: int

    @property
    def name(self) -> str:
        """``design_fp3_sfu1/w32``: classes and counts in the mix's order, then the occupancy."""
        parts = "_".join(f"{c}{_fmt(v)}" for c, v in self.mix.items())
        return f"design_{parts}/w{self.warps_per_sm}"

    def entry(self) -> dict[str, Any]:
        """The manifest entry of the kernel (:func:`microbench.benchmarks.design_benchmark`)."""
        return {"name": self.name, "mix": dict(self.mix), "warps_per_sm": int(self.warps_per_sm), "ilp": DESIGN_ILP}


def _fmt(v: float) -> str:
    return f"{v:g}".replace(".", "p")


def candidates(units: Sequence[str], classes: Sequence[str] = DESIGN_CLASSES, max_warps: int = 64) -> list[Candidate]:
    """Every pair of design classes present among ``units`` at each of :data:`RATIOS` and
    :data:`OCCUPANCIES` (at most ``max_warps``), and every class alone at those occupancies."""
    have = [c for c in classes if c in units]
    occ = sorted({min(w, max_warps) for w in OCCUPANCIES})
    out: list[Candidate] = []
    for w in occ:
        for c in have:
            out.append(Candidate({c: 2.0}, w))
        for a, b in itertools.combinations(have, 2):
            for ra, rb in RATIOS:
                out.append(Candidate({a: float(ra), b: float(rb)}, w))
    return out


@dataclass
class DesignState:
    """What a round chose: the candidates (in order of choice), the targets' relative standard errors
    (%) before and as predicted after, and the parameters still above the target."""

    chosen: list[Candidate] = field(default_factory=list)
    rel_se_before_pct: dict[str, float] = field(default_factory=dict)
    rel_se_predicted_pct: dict[str, float] = field(default_factory=dict)
    above_target: list[str] = field(default_factory=list)


def candidate_rows(pf: ParameterFile, cands: Sequence[Candidate], info: Any, measured: pd.DataFrame | None = None,
                   *, workload_of: Callable[[Mapping[str, Any], int], Any]) -> pd.DataFrame:
    """Kernel-description rows of ``cands`` with their predicted access rates (``act_<unit>``): per-warp
    counts from the mix kernel's count model (:class:`microbench.spec.Benchmark`), time from the file's
    timing model, else from :func:`throughput_time` with the ceilings of ``measured`` (a samples table).
    ``workload_of(entry, max_warps)``: the mix kernel's workload of a manifest entry on the device
    (``microbench.benchmarks.design_benchmark(entry, max_warps).workload(info)``), given by the caller: the
    fit layer does not import microbench."""
    max_w = int((info.extra or {}).get("max_warps_per_sm", 64))
    rows = []
    for c in cands:
        w = workload_of(c.entry(), max_w)
        r: dict[str, Any] = {"workload": c.name, "role": "unit", "stresses": "mixed",
                             "threads_per_block": w.launch.threads_per_block, "blocks": w.launch.blocks,
                             "active_sms": w.launch.active_sms, "ilp": float(DESIGN_ILP), "uncoal_frac": 0.0,
                             "warps_per_sm": w.launch.warps_per_sm}
        r.update({CNT_PREFIX + k: float(v) for k, v in w.per_warp.items()})
        rows.append(r)
    df = pd.DataFrame(rows)
    cnt = [c for c in df.columns if c.startswith(CNT_PREFIX)]
    df[cnt] = df[cnt].fillna(0.0)
    clocks = pf.device.get("clocks") or {}
    df["core_mhz"] = float(clocks.get("core_mhz") or info.default_core_mhz)
    df["mem_mhz"] = float(clocks.get("mem_mhz") or info.default_mem_mhz)
    time_s = None
    if "timing" in pf:
        try:
            time_s = np.asarray(predict_time(pf["timing"], df), float)
        except Exception:  # noqa: BLE001 - a timing model that cannot describe a mix: use the bound below
            time_s = None
        if time_s is not None and not np.all(np.isfinite(time_s) & (time_s > 0)):
            time_s = None
    basis = basis_of(pf)
    if time_s is None:
        time_s = throughput_time(basis, df, measured)
    df["time_s"] = time_s
    return df.assign(**{ACT_PREFIX + u: a for u, a in table_access_rates(basis, df).items()})


def throughput_time(basis: Any, df: pd.DataFrame, measured: pd.DataFrame | None) -> np.ndarray:
    """Kernel time (s) of kernel-description rows bounded by issue and by each unit's ceiling: the
    highest access rate of that unit in ``measured`` (1 without measurements). Access rates scale as 1 /
    time, so the time that brings the highest ratio of rate to ceiling to 1 is the bound."""
    active = df["active_sms"].to_numpy(float)
    wps = warps_per_sm(df["threads_per_block"].to_numpy(float), df["blocks"].to_numpy(float), active)
    raw = access_rates(basis, unit_counts(count_columns(df), size=len(df)), wps, np.ones(len(df)),
                       df["core_mhz"].to_numpy(float), df["mem_mhz"].to_numpy(float))
    t = np.zeros(len(df))
    for u, a in raw.items():
        cap = 1.0
        if measured is not None and ACT_PREFIX + u in measured.columns:
            m = measured[ACT_PREFIX + u].to_numpy(float)
            m = m[np.isfinite(m)]
            cap = float(m.max()) if len(m) and m.max() > 0 else 1.0
        t = np.maximum(t, np.asarray(a, float) / cap)
    return np.where(t > 0, t, 1e-3)


def jacobian_rows(section: Section, df: pd.DataFrame, free: Sequence[str]) -> np.ndarray:
    """d power / d parameter (W per parameter unit; rows x ``free``) of the IPP model at the section's
    values: :func:`calib.model.ipp.jacobian`, the model's own analytic derivatives (whatever terms the
    section has). Every row runs a kernel; ``active_sms`` defaults to every SM."""
    st = section.structure
    act = {u: df[ACT_PREFIX + u].to_numpy(float) for u in st["units"]}
    n = df["active_sms"].to_numpy(float) if "active_sms" in df.columns else np.full(len(df), float(st["sm_count"]))
    jd = ipp.jacobian(section.values(), ipp.design(st, act, np.ones(len(df), bool), n))
    return np.column_stack([np.broadcast_to(jd[name], (len(df),)) for name in free]) if free else np.zeros((len(df), 0))


def relative_se_pct(cov: np.ndarray, values: np.ndarray) -> np.ndarray:
    """100 x sqrt(diag(cov)) / |values| (inf where a value is 0)."""
    sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    with np.errstate(divide="ignore"):
        return np.where(np.abs(values) > 0, 100.0 * sd / np.abs(values), np.inf)


def choose(cov: np.ndarray, values: np.ndarray, J: np.ndarray, noise_var: float, targets: Sequence[int],
           k: int, repeats: int = 1, target_pct: float = 0.0) -> tuple[list[int], np.ndarray]:
    """Greedy A-optimal choice of ``k`` rows of ``J`` (module docstring): indices in order of choice and
    the covariance predicted after them. ``targets``: indices of the parameters whose relative variance
    counts; a target whose predicted relative standard error reaches ``target_pct`` stops counting.
    Stops early when no row lowers the criterion by more than 1e-9 of it."""
    C = np.array(cov, float)
    v = np.asarray(values, float)
    scale = np.where(np.abs(v) > 0, 1.0 / np.abs(v), 0.0)
    picked: list[int] = []
    s2 = max(float(noise_var), 1e-12) / max(1, repeats)
    for _ in range(k):
        live = [i for i in targets if relative_se_pct(C, v)[i] > target_pct]
        if not live:
            break
        w = np.zeros(len(v))
        w[live] = scale[live] ** 2
        CJ = J @ C                        # rows: C j for each candidate (C symmetric)
        denom = s2 + np.einsum("ij,ij->i", CJ, J)
        gain = (CJ ** 2 @ w) / denom      # decrease of sum_i w_i C_ii
        gain[picked] = -np.inf
        best = int(np.argmax(gain))
        crit = float(np.sum(w * np.diag(C)))
        if not np.isfinite(gain[best]) or gain[best] <= 1e-9 * crit:
            break
        c = CJ[best]
        C = C - np.outer(c, c) / denom[best]
        picked.append(best)
    return picked, C


def design_round(pf: ParameterFile, info: Any, measured: pd.DataFrame, target_pct: float, k: int,
                 repeats: int = 1, exclude: Sequence[str] = (), *,
                 workload_of: Callable[[Mapping[str, Any], int], Any]) -> DesignState:
    """Choose up to ``k`` design kernels for the IPP power section of ``pf`` (module docstring).

    Targets: every unit's MaxPower, ``const_sm_power_w`` and ``activation_power_w`` whose relative
    total standard error exceeds ``target_pct`` (the two constants only where they differ from 0 by
    more than 2 errors). The total covariance is the prior of a Bayesian linear
    update (the statistical one when the file has no total): it holds the model-form alternatives, so a
    kernel on which the structures that fit as well disagree counts, not only one that shrinks the noise.
    The noise variance is the fit's residual variance (W^2) per measured window, over ``repeats``.
    ``exclude``: candidate names already run."""
    sec = pf["power"]
    state = DesignState()
    cov = sec.covariance_total or sec.covariance
    if cov is None or sec.model != "ipp":
        return state
    free = list(cov.names)
    C = np.nan_to_num(np.array(cov.matrix, float))
    vals = np.array([sec.value(n) for n in free])
    targets = []
    for i, n in enumerate(free):
        if n.startswith("max_power_") or n in ("const_sm_power_w", "activation_power_w"):
            p = sec[n]
            if p.at_bound():  # e.g. no activation power: a relative error of a value at 0 means nothing
                continue
            se = p.stderr_total or p.stderr
            if not n.startswith("max_power_") and se is not None and abs(p.value) <= 2.0 * se:
                # a constant the GPU may not have (GT200's activation is part of Const_SM): a value within
                # 2 errors of 0 has no relative error to reduce (the design listed one at 305,971 %)
                continue
            rel = 100.0 * se / abs(p.value) if se is not None and p.value else math.inf
            state.rel_se_before_pct[n] = rel
            if rel > target_pct:
                targets.append(i)
                state.above_target.append(n)
    if not targets:
        return state
    units = list(sec.structure["units"])
    max_w = int((info.extra or {}).get("max_warps_per_sm", 32))
    cands = [c for c in candidates(units, max_warps=max_w) if c.name not in set(exclude)]
    if not cands:
        return state
    rows = candidate_rows(pf, cands, info, measured, workload_of=workload_of)
    J = jacobian_rows(sec, rows, free)
    rmse = sec.stats.get("rmse_w")
    noise = float(rmse) ** 2 if rmse else 1.0
    picked, C_after = choose(C, vals, J, noise, targets, k, repeats, target_pct)
    state.chosen = [cands[i] for i in picked]
    rel_after = relative_se_pct(C_after, vals)
    rel_now = relative_se_pct(C, vals)
    for i in targets:
        # the statistical part shrinks as predicted; the total keeps its other terms
        n = free[i]
        ratio = rel_after[i] / rel_now[i] if rel_now[i] > 0 and math.isfinite(rel_now[i]) else 1.0
        state.rel_se_predicted_pct[n] = state.rel_se_before_pct[n] * min(1.0, ratio)
    return state


def preview_rows(pf: ParameterFile, cands: Sequence[Candidate], info: Any, measured: pd.DataFrame | None = None,
                 repeats: int = 1, *, workload_of: Callable[[Mapping[str, Any], int], Any]) -> pd.DataFrame:
    """Samples-table rows the kernels ``cands`` would add if the file's power model were right: their
    kernel rows (:func:`candidate_rows`), each ``repeats`` times (``repeat`` 0, 1, ...), at the thermal
    section's idle temperature (``temp_c``; the temperature correction is then 0), their power (``power_w``,
    W) the IPP section's prediction. Refitting the session with these rows added previews what a round of
    ``cands`` does to every standard error, the model-form terms included (module docstring)."""
    rows = candidate_rows(pf, cands, info, measured, workload_of=workload_of)
    th = pf.get("thermal")
    if th is not None and "idle_temp_c" in th:
        rows["temp_c"] = float(th.value("idle_temp_c"))
    rows["power_w"] = ipp.IppPowerModel(pf["power"], th, basis_of(pf)).predict(rows, use_temperature=False)
    return pd.concat([rows.assign(repeat=float(r)) for r in range(max(1, int(repeats)))], ignore_index=True)
