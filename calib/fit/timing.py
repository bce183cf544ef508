"""Fit the timing section (MWP/CWP and Wang & Chu hardware parameters) from measured kernel times.

Two sources, both rows of a samples table (``time_s``, ``core_mhz``, ``mem_mhz``, ``cnt_<class>``,
``blocks``, ``threads_per_block``, ``active_sms``, ``warps_per_sm``, ``role``, ``workload``):

1. **Timing microbenchmarks** (role ``timing``, declared by :mod:`microbench.timing_plan`; this module
   reads what each one measures -- its ``kind`` and the kind's parameters -- from the session
   manifest's plan, never from its name): every parameter has its own measurement --
   ``launch_overhead_s`` = mean time of the launch-only kernel (role ``idle_kernel``);
   ``mem_ld_cycles`` = DRAM chase cycles per load at the default clocks; ``dm_lat_a_cycles``,
   ``dm_lat_b_cycles`` = straight line of chase latency vs fc/fm over the clock pairs (Wang & Chu
   eq. 4, when there are at least two ratios); ``l2/l1/sh_lat_cycles`` = difference in time between
   two chain lengths over the difference in loads; ``departure_del_coal/uncoal_cycles`` = slope of a
   one-SM burst's cycles vs its transactions per SM; ``dram_del_coal_mem_cycles`` = 128 B x fm over the
   streaming bandwidth (the all-SM burst slope gives a second estimate, recorded in the statistics);
   ``issue_cycles`` = cycles per warp instruction of the issue-bound mix; the Wang & Chu rounds form
   (``rounds_form``: a memory-dominated round's fill paid every round, eq. 6, or once) = the form that
   times the multi-round streams (kind ``rounds``) better, with the other structure choices below; ``inst_lat_cycles`` = cycles
   per instruction of one warp's FMA chain; ``m_factor_<class>`` = issue slots per instruction of the
   class in its unit kernel at the highest occupancy when the kernel is pipe bound, else 1 (the pipe
   throughput ratio of thesis Table 6); ``l2_del_cycles`` = the L2 unit kernel's cycles per L2
   transaction of the chip.
2. **A (kernel, clocks, time) table** without microbenchmarks: the table fitter
   (:class:`calib.fit.timing_table.TimingFitter`) on the kernel rows (:func:`fit_table`).

Standard errors: regressions (chase latency vs fc/fm, burst slopes, chain lengths) give theirs, floored
by the timer noise propagated through the line (:func:`_noise_cov`: a line of 3-5 points has 1-3 degrees
of freedom of its own, and relative noise is largest at its high-leverage end); single-ratio
estimates propagate the event timer's relative noise, estimated from repeated windows of the same
workload in the session, or, when nothing was repeated (the quick campaign), from the scatter of the
microbenchmarks' straight lines about their fits, pooled (:func:`line_noise_rel`): a burst line of three
points has one degree of freedom, and its own residual variance alone varied by a factor of 100 between
two runs. The degrees of freedom behind each standard error go into ``stats["stderr_dof"]``. The model structure the predictions use
(predictor, Comp_cycles form, shared-memory cases) is chosen by the lowest MAPE on the non-held-out
kernel rows; held-out rows (role ``heldout``) are only evaluated, including the DVFS check (time at
the other clock pairs from the default-clock one, Wang & Chu's use).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from calib.core.atomic import finite_or_none, json_safe
from calib.core.errors import BadInputError
from calib.core.metrics import errors, mape, pct_errors
from calib.fit.uncertainty import prediction_stats, total_stderr
from calib.fit.timing_table import TimingFitter, with_plan_inputs
from calib.model import timing as T
from calib.core.params import Covariance, Param, Section
from calib.core.samples import CNT_PREFIX
from calib.fit.base import Estimator
from calib.segment import SessionData

#: bytes per bw_stream warp request (16-byte vector loads), transactions of an uncoalesced request
BW_STREAM_BYTES = 512.0
UNCOAL_TX = 32.0
#: a unit kernel is pipe bound when it takes this many more issue slots than it has instructions
ISSUE_BOUND_MARGIN = 1.15
#: roles whose rows check the model (kernels at known clocks) and the held-out role
CHECK_ROLES = ("unit", "sm_sweep", "dvfs", "idle_kernel")
HELDOUT = "heldout"

def timing_kinds(samples: pd.DataFrame, plan: list[Mapping[str, Any]] | None) -> dict[str, Mapping[str, Any]] | None:
    """The plan entry (``kind`` and its parameters) of every timing microbenchmark in ``samples``, by
    workload name; None when the plan does not declare them all (a session of an older toolkit, or a
    samples table without its session's plan): the fit does not guess them from names."""
    names = set(samples.loc[samples["role"] == "timing", "workload"].astype(str))
    by_name = {p.get("name"): p for p in plan or [] if isinstance(p, Mapping)}
    out = {}
    for n in names:
        e = by_name.get(n)
        if e is None or e.get("kind") not in KINDS or any(k not in e for k in KINDS[e["kind"]][0]):
            return None
        out[n] = e
    return out


def _cnt(df: pd.DataFrame, cls: str) -> np.ndarray:
    c = CNT_PREFIX + cls
    return df[c].to_numpy(float) if c in df.columns else np.zeros(len(df))


def _total(df: pd.DataFrame) -> np.ndarray:
    cols = [c for c in df.columns if c.startswith(CNT_PREFIX)]
    return df[cols].to_numpy(float).sum(axis=1) if cols else np.zeros(len(df))


def timing_noise_rel(df: pd.DataFrame) -> float | None:
    """Relative s.d. of one kernel-time measurement, from repeated windows of the same workload."""
    return _repeat_noise(df)[0]


def _repeat_noise(df: pd.DataFrame) -> tuple[float | None, int]:
    """:func:`timing_noise_rel` and its degrees of freedom (windows minus workloads)."""
    if "repeat" not in df.columns or "time_s" not in df.columns:
        return None, 0
    d = df[df["time_s"].notna() & (df["time_s"] > 0)]
    rel, dof = [], 0
    for _, g in d.groupby(["workload", "core_mhz", "mem_mhz"], dropna=False):
        if len(g) > 1:
            t = g["time_s"].to_numpy(float)
            rel.extend((t / t.mean() - 1.0).tolist())
            dof += len(g) - 1
    if dof < 2:
        return None, 0
    return float(math.sqrt(np.sum(np.square(rel)) / dof)), dof


def line_noise_rel(lines: list[tuple[np.ndarray, np.ndarray]]) -> tuple[float | None, int]:
    """Relative s.d. of one kernel time from straight lines ``(x, time_s)`` that should hold exactly
    (a burst's time vs its transactions, a chase's time vs its loads), pooled: the sum of squared
    relative residuals about each line fitted on relative residuals (weights 1/time: the noise is
    relative, and an unweighted line over times 1:7 apart overstated it by a quarter) over the sum of
    ``n - 2``. Returns (s.d., degrees of freedom); (None, 0) without a line of three points. A line bent by
    the hardware only inflates it."""
    ss, dof = 0.0, 0
    for x, y in lines:
        x, y = np.asarray(x, float), np.asarray(y, float)
        if len(x) < 3 or len(np.unique(x)) < 2 or np.any(y <= 0):
            continue
        s, c = np.polyfit(x, y, 1, w=1.0 / y)
        ss += float(np.sum(((y - (s * x + c)) / y) ** 2))
        dof += len(x) - 2
    return (float(math.sqrt(ss / dof)), dof) if dof else (None, 0)


def _noise_cov(x: np.ndarray, y: np.ndarray, noise: float | None) -> np.ndarray | None:
    """Covariance of a least-squares line's (slope, intercept) when each y carries the timer's relative
    noise alone: (X'X)^-1 X' diag((noise y)^2) X (X'X)^-1. A floor under the scatter estimate of a line
    through a few points (2-5 bursts or clock pairs: one to three degrees of freedom, which can come out
    ~0)."""
    x = np.asarray(x, float)
    if noise is None or len(x) < 2 or len(np.unique(x)) < 2:
        return None
    X = np.column_stack([x, np.ones_like(x)])
    inv = np.linalg.inv(X.T @ X)
    return inv @ (X.T * (noise * np.asarray(y, float)) ** 2) @ X @ inv


def _mean_se(a: np.ndarray, *floors: float | None) -> float | None:
    """Standard error of the mean of ``a`` from its scatter (two values or more), floored by ``floors``
    (the timer noise propagated): the largest of those that are known."""
    known = [s for s in (float(a.std(ddof=1) / math.sqrt(len(a))) if len(a) > 1 else None, *floors)
             if s is not None and math.isfinite(s)]
    return max(known) if known else None


def _floored_line(x: np.ndarray, y: np.ndarray, noise: float | None
                  ) -> tuple[float, float, np.ndarray | None, float | None]:
    """Least-squares line y = s x + c with its covariance floored by the timer noise: the line's own
    (scatter) covariance, or :func:`_noise_cov` when that gives the slope a larger variance. Returns
    (s, c, cov, dof): ``dof`` is the line's ``n - 2`` when its own scatter sets the error, None when the
    timer noise does (its degrees of freedom are the session's)."""
    (s, c), cov = np.polyfit(x, y, 1, cov=True) if len(x) >= 3 else (np.polyfit(x, y, 1), None)
    cov_noise = _noise_cov(x, y, noise)
    if cov is None or (cov_noise is not None and cov_noise[0, 0] > cov[0, 0]):
        return float(s), float(c), cov_noise, None
    return float(s), float(c), cov, len(x) - 2.0


class _Collector:
    """Parameters as they are measured, with units, bounds and standard errors."""

    def __init__(self) -> None:
        self.params: dict[str, Param] = {}
        self.notes: list[str] = []
        self.checks: dict[str, Any] = {}
        self.blocks: list[Covariance] = []   # covariances of parameters measured together
        self.rounds_index: list[Any] = []    # rows of the multi-round streams (the rounds form's check)
        self.dof: dict[str, float] = {}      # degrees of freedom behind each standard error

    def put(self, name: str, value: float, unit: str, se: float | None, description: str,
            lo: float = 0.0, hi: float = math.inf, vary: bool = True) -> None:
        if not math.isfinite(value):
            self.notes.append(f"{name}: measurement gave a non-finite value; not stored")
            return
        if value <= lo:
            self.notes.append(f"{name}: measured {value:.4g} {unit} is not physical; clipped to its bound")
            value = lo + 1e-9 * max(1.0, abs(lo))
        self.params[name] = Param(name, float(value), unit, lo, hi, vary, None,
                                  None if se is None or not math.isfinite(se) else float(se), description)


def _default_clocks(df: pd.DataFrame, device: Mapping[str, Any]) -> tuple[float, float]:
    clocks = device.get("clocks", {}) or {}
    fc, fm = clocks.get("core_mhz"), clocks.get("mem_mhz")
    if fc is None or fm is None:
        fc = float(df["core_mhz"].mode().iloc[0])
        fm = float(df["mem_mhz"].mode().iloc[0])
    return float(fc), float(fm)


@dataclass
class _Bench:
    """The timing microbenchmarks of one session as the per-kind measurements read them."""

    out: _Collector
    tim: pd.DataFrame                     # the session's timing microbenchmarks (role timing)
    decl: list[Mapping[str, Any]]         # their plan entries, in the order of ``tim``
    fc0: float                            # default clocks, MHz
    fm0: float
    n_sm: int
    noise: float | None                   # the event timer's relative noise
    lines: dict[tuple, tuple[pd.DataFrame, np.ndarray]]  # the benchmarks on straight lines (_lines)
    ovh: float = 0.0                      # launch overhead, s

    def of_kind(self, kind: str, **want: Any) -> list[Any]:
        """Index of the timing rows of ``kind`` whose declared parameters equal ``want``."""
        return [i for i, e in zip(self.tim.index, self.decl)
                if e["kind"] == kind and all(e.get(k) == v for k, v in want.items())]

    def cycles(self, rows: pd.DataFrame) -> np.ndarray:
        return (rows["time_s"].to_numpy(float) - self.ovh) * rows["core_mhz"].to_numpy(float) * 1e6

    def rel_se(self, value: float, rows: pd.DataFrame) -> float | None:
        return None if self.noise is None else abs(value) * self.noise / math.sqrt(max(1, len(rows)))


def _pchase(b: _Bench) -> None:
    """DRAM latency (chase at one or several clock pairs) and the cache and shared latencies (two chain
    lengths at the default clocks)."""
    out, tim, noise = b.out, b.tim, b.noise
    lat = b.of_kind("pchase", level="dram")
    if lat:
        rows = tim.loc[lat]
        loads = sum(_cnt(rows, c) for c in ("global", "local", "l2", "l1"))
        cyc_per_load = b.cycles(rows) / loads
        ratio = rows["core_mhz"].to_numpy(float) / rows["mem_mhz"].to_numpy(float)
        r0 = b.fc0 / b.fm0
        if len(np.unique(np.round(ratio, 6))) >= 2:
            # the line's own scatter has n - 2 <= 3 dof: the timer noise is its floor
            a, c, cov, dof = _floored_line(ratio, cyc_per_load, noise)
            if dof is not None:
                out.dof.update(dict.fromkeys(("dm_lat_a_cycles", "dm_lat_b_cycles", "mem_ld_cycles"), dof))
            se_a, se_b = (None, None) if cov is None else (float(math.sqrt(cov[0, 0])), float(math.sqrt(cov[1, 1])))
            out.put("dm_lat_a_cycles", a, "cycles", se_a, "DRAM latency slope vs fc/fm (Wang & Chu eq. 4)")
            out.put("dm_lat_b_cycles", c, "cycles", se_b, "DRAM latency at fc/fm -> 0 (Wang & Chu eq. 4)")
            if cov is not None:
                out.blocks.append(Covariance(("dm_lat_a_cycles", "dm_lat_b_cycles"), cov))
            mem_ld = a * r0 + c
            se_ld = (float(math.sqrt(cov[0, 0] * r0 ** 2 + 2 * r0 * cov[0, 1] + cov[1, 1])) if cov is not None
                     else b.rel_se(mem_ld, rows))
            resid = cyc_per_load - (a * ratio + c)
            out.checks["dm_lat_line_r2"] = float(1 - np.sum(resid ** 2) / max(1e-300, np.sum((cyc_per_load - cyc_per_load.mean()) ** 2)))
        else:
            mem_ld = float(cyc_per_load.mean())
            se_ld = b.rel_se(mem_ld, rows)
            if not np.isclose(ratio[0], r0):
                out.notes.append("the DRAM chase ran at one clock ratio other than the default; Mem_LD is taken there")
        out.put("mem_ld_cycles", mem_ld, "cycles", se_ld, "DRAM round trip of one transaction at the default clocks")
    for level, pname in (("l2", "l2_lat_cycles"), ("l1", "l1_lat_cycles"), ("shared", "sh_lat_cycles")):
        rows, loads = b.lines.get(("pchase", level), (tim.iloc[:0], None))  # chains at the default clocks
        if len(rows) < 2:
            continue
        s, _, cov, dof = _floored_line(loads, b.cycles(rows), noise)
        if dof is not None:
            out.dof[pname] = dof
        out.put(pname, s, "cycles", None if cov is None else float(math.sqrt(cov[0, 0])),
                f"{level} load-to-use latency (difference of two chain lengths)")


def _departure(b: _Bench) -> None:
    """Departure delays from one-SM bursts (slope of cycles vs transactions per SM); all-SM bursts check
    the DRAM service time."""
    out = b.out
    for (kind, *key), (rows, n_tx) in b.lines.items():
        if kind != "departure" or len(rows) < 2:
            continue
        access, where = key
        s, c, cov, dof = _floored_line(n_tx, b.cycles(rows), b.noise)
        if where == "sm1":
            if dof is not None:
                out.dof[f"departure_del_{access}_cycles"] = dof
            out.put(f"departure_del_{access}_cycles", s, "cycles", None if cov is None else float(math.sqrt(cov[0, 0])),
                    f"minimum distance between two {access}esced transactions of one SM (burst slope)")
            out.checks[f"burst_{access}_sm1_intercept_cycles"] = c
        elif access == "coal":
            out.checks["dram_del_coal_mem_cycles_from_burst"] = s * b.fm0 / b.fc0 / b.n_sm
            out.checks["burst_coal_all_intercept_cycles"] = c


def _bw_stream(b: _Bench) -> None:
    """DRAM service time from the streaming bandwidth (else from the all-SM burst slope)."""
    out = b.out
    bw = b.tim.loc[b.of_kind("bw_stream")]
    if len(bw):
        warps_total = bw["threads_per_block"].to_numpy(float) / 32.0 * bw["blocks"].to_numpy(float)
        nbytes = _cnt(bw, "global") * warps_total * BW_STREAM_BYTES
        bw_bps = nbytes / (bw["time_s"].to_numpy(float) - b.ovh)
        dd = 128.0 * bw["mem_mhz"].to_numpy(float) * 1e6 / bw_bps
        v = float(dd.mean())
        out.put("dram_del_coal_mem_cycles", v, "mem cycles", b.rel_se(v, bw),
                "DRAM service time per 128-byte transaction of the chip (streaming bandwidth)")
        out.checks["stream_bandwidth_gb_s"] = float(bw_bps.mean() / 1e9)
    elif "dram_del_coal_mem_cycles_from_burst" in out.checks:
        v = out.checks["dram_del_coal_mem_cycles_from_burst"]
        out.put("dram_del_coal_mem_cycles", v, "mem cycles", None,
                "DRAM service time per 128-byte transaction (all-SM burst slope)")


def _rounds(b: _Bench) -> None:
    """Multi-round streams: ordinary kernel rows, timed by the model to choose its rounds form (_assemble)."""
    b.out.rounds_index = b.of_kind("rounds")


def _issue_mix(b: _Bench) -> None:
    """Cycles per warp instruction of the issue-bound mix."""
    mix = b.tim.loc[b.of_kind("issue_mix")]
    if len(mix):
        issue = float((b.cycles(mix) / (mix["warps_per_sm"].to_numpy(float) * _total(mix))).mean())
        b.out.put("issue_cycles", issue, "cycles", b.rel_se(issue, mix), "cycles per warp instruction issued by an SM")


def _inst_latency(b: _Bench) -> None:
    """Dependent-issue latency: one warp running one FMA chain."""
    dep = b.tim.loc[b.of_kind("inst_latency")]
    if len(dep):
        v = float((b.cycles(dep) / _total(dep)).mean())
        b.out.put("inst_lat_cycles", v, "cycles", b.rel_se(v, dep), "dependent-issue latency of an FP32 instruction")


#: the timing microbenchmark kinds of the campaign plan (microbench.timing_plan): what each declares in
#: the plan, and the measurement that reads it, in the order they run (the stream's service time falls
#: back on the bursts'; the unit kernels' M_Factors need the issue rate)
KINDS: dict[str, tuple[tuple[str, ...], Callable[[_Bench], None]]] = {
    "pchase": (("level", "passes"), _pchase),
    "departure": (("access", "where", "reqs"), _departure),
    "bw_stream": ((), _bw_stream),
    "rounds": (("rounds",), _rounds),
    "issue_mix": ((), _issue_mix),
    "inst_latency": ((), _inst_latency),
}


def fit_microbenchmarks(df: pd.DataFrame, device: Mapping[str, Any],
                        kinds: Mapping[str, Mapping[str, Any]]) -> _Collector:
    """Parameters from the timing microbenchmarks (module docstring, source 1): each kind's measurement
    (:data:`KINDS`), then the launch-only kernel and the unit kernels; ``kinds``: their plan entries by
    workload name (:func:`timing_kinds`)."""
    out = _Collector()
    fc0, fm0 = _default_clocks(df, device)
    noise, noise_dof = _repeat_noise(df)
    tim = df[df["role"] == "timing"]
    decl = [kinds[n] for n in tim["workload"].astype(str)]
    lines = _lines(tim, decl)
    if noise is None:
        # nothing repeated: the timer noise from the scatter of the lines that should be straight
        noise, noise_dof = line_noise_rel([(x, rows["time_s"].to_numpy(float)) for rows, x in lines.values()])
        out.checks["timing_noise_source"] = "straight-line scatter of the bursts and chases (no repeats)"
    out.checks["timing_noise_rel"] = noise
    out.checks["timing_noise_dof"] = noise_dof
    at_default = np.isclose(df["core_mhz"].to_numpy(float), fc0) & np.isclose(df["mem_mhz"].to_numpy(float), fm0)
    b = _Bench(out, tim, decl, fc0, fm0, int(device.get("sm_count", 1)), noise, lines)

    # launch overhead: the launch-only kernel
    idle = df[(df["role"] == "idle_kernel") & at_default]
    if len(idle):
        t = idle["time_s"].to_numpy(float)
        b.ovh = float(t.mean())
        # repeats of one workload give a 1-dof scatter estimate that can come out ~0: the pooled timer
        # noise of the session is a floor under it
        se = _mean_se(t, noise * b.ovh / math.sqrt(len(t)) if noise else None)
        out.put("launch_overhead_s", b.ovh, "s", se, "time of a launch-only kernel", hi=1.0)
    else:
        out.notes.append("no launch-only kernel: launch overhead taken as 0")
    for _, measure in KINDS.values():
        measure(b)
    issue = out.params["issue_cycles"].value if "issue_cycles" in out.params else None
    # M_Factor per class from the unit kernels at their highest occupancy (default clocks)
    unit = df[(df["role"] == "unit") & at_default]
    if issue is not None and len(unit) and "stresses" in unit.columns:
        for cls in T.M_CLASSES:
            u = unit[unit["stresses"] == cls]
            if not len(u):
                continue
            u = u[u["warps_per_sm"] == u["warps_per_sm"].max()]
            n_c = _cnt(u, cls)
            tot = _total(u)
            ok = (n_c > 0) & (n_c >= 0.3 * tot)
            if not ok.any():
                continue
            u, n_c = u[ok], n_c[ok]
            # issue slots the kernel took per warp; the pipe of the class sets the time only when that
            # is clearly more than one slot per instruction (else the kernel is issue bound and the
            # class's M_Factor is 1 as far as timing can tell)
            slots = b.cycles(u) / (u["warps_per_sm"].to_numpy(float) * issue)
            tot = tot[ok]
            pipe_bound = slots > ISSUE_BOUND_MARGIN * tot
            m = np.where(pipe_bound, slots / n_c, 1.0)
            mv = float(m.mean())
            # slots per instruction are cycles over the issue rate: both measurements' errors count
            se_issue = out.params["issue_cycles"].stderr
            se_rel = b.rel_se(mv, u)
            if se_rel is not None and se_issue is not None:
                se_rel = math.hypot(se_rel, mv * se_issue / issue)
            se = _mean_se(m, se_rel)
            if not pipe_bound.any():
                out.notes.append(f"m_factor_{cls}: the {cls} unit kernel is issue bound; M_Factor 1")
                se = None
            out.put(f"m_factor_{cls}", mv, "1", se, f"issue slots per {cls} warp instruction (pipe throughput ratio)",
                    lo=0.5)
    # L2 service time from the L2 unit kernel (chip, core cycles per transaction)
    l2 = unit[unit["stresses"] == "l2"] if len(unit) and "stresses" in unit.columns else unit.iloc[:0]
    if len(l2):
        l2 = l2[l2["warps_per_sm"] == l2["warps_per_sm"].max()]
        n_l2 = _cnt(l2, "l2")
        if (n_l2 > 0).all():
            d = b.cycles(l2) / (l2["warps_per_sm"].to_numpy(float) * n_l2 * l2["active_sms"].to_numpy(float))
            v = float(d.mean())
            out.put("l2_del_cycles", v, "cycles", _mean_se(d, b.rel_se(v, l2)),
                    "L2 service time per 128-byte transaction of the chip (L2 kernel at full occupancy)")
    if noise is not None and noise_dof:
        # every standard error above rests on the timer noise (propagated, or as a floor under a line's
        # own scatter): at most that many degrees of freedom (calib diff tests with Student's t)
        # (a line whose own scatter is larger than the noise floor keeps its n - 2)
        out.dof = {n: out.dof.get(n, float(noise_dof)) for n, p in out.params.items() if p.stderr is not None}
    else:
        out.dof = {n: d for n, d in out.dof.items() if n in out.params and out.params[n].stderr is not None}
    return out


def _lines(tim: pd.DataFrame, decl: list[Mapping[str, Any]]) -> dict[tuple, tuple[pd.DataFrame, np.ndarray]]:
    """The timing microbenchmarks that lie on straight lines, with their x: each burst kind
    ``("departure", access, where)`` vs its transactions per SM, each chase level at the default clocks
    ``("pchase", level)`` vs its loads (not DRAM's, whose line is over fc/fm); values (rows, x)."""
    groups: dict[tuple, list[int]] = {}
    for i, e in zip(tim.index, decl):
        if e["kind"] == "departure":
            groups.setdefault(("departure", e["access"], e["where"]), []).append(i)
        elif e["kind"] == "pchase" and e["level"] != "dram" and not e.get("clocks"):
            groups.setdefault(("pchase", e["level"]), []).append(i)
    out = {}
    for key, idx in groups.items():
        rows = tim.loc[idx]
        if key[0] == "departure":
            x = rows["warps_per_sm"].to_numpy(float) * [float(decl[tim.index.get_loc(i)]["reqs"]) for i in idx] \
                * (1.0 if key[1] == "coal" else UNCOAL_TX)
        else:
            x = _cnt(rows, key[1])
        out[key] = (rows, np.asarray(x, float))
    return out


STRUCTURES = [{"predictor": p, "comp_form": c, "shared_cases": s} for p in T.PREDICTORS for c in ("max", "sum")
              for s in ((False, True) if p == "wangchu" else (False,))]
#: Wang & Chu's rounds forms (calib.model.wangchu); tried only where the campaign ran multi-round streams
ROUNDS_FORMS = ("paper", "overlap")


def _section(params: Mapping[str, Param], device: Mapping[str, Any], fc0: float, fm0: float,
             structure: Mapping[str, Any]) -> Section:
    """A timing section of ``params`` with the model structure ``structure`` (predictor, forms)."""
    return Section(T.MODEL_NAME, dict(params), T.structure(
        structure["predictor"], structure["comp_form"], fc0, fm0, device.get("sm_count", 1),
        device.get("max_warps_per_sm", 32), device.get("max_blocks_per_sm", 32),
        shared_cases=bool(structure["shared_cases"]), rounds_form=structure.get("rounds_form", "paper")))


def _kernel_rows(df: pd.DataFrame) -> pd.DataFrame:
    need = ("time_s", "blocks", "threads_per_block")
    if any(c not in df.columns for c in need) or not any(c.startswith(CNT_PREFIX) for c in df.columns):
        return df.iloc[:0]
    ok = df["time_s"].notna() & (df["time_s"] > 0) & df["blocks"].notna()
    return df[ok]


def dvfs_check(section: Section, df: pd.DataFrame, fc0: float, fm0: float) -> dict[str, Any] | None:
    """Time MAPE of the held-out rows at clock pairs other than the default, predicted (a) by the model
    alone and (b) from the same workload's measured default-clock time (Wang & Chu's baseline profile).
    ``fc0``, ``fm0``: the default core and memory clocks (MHz)."""
    held = df[df["role"] == HELDOUT] if "role" in df.columns else df.iloc[:0]
    if not len(held):
        return None
    base_key = held["workload"].astype(str).str.split("@").str[0]
    at0 = np.isclose(held["core_mhz"].to_numpy(float), fc0) & np.isclose(held["mem_mhz"].to_numpy(float), fm0)
    off = held[~at0]
    if not len(off):
        return None
    base = held[at0].assign(_k=base_key[at0]).groupby("_k")["time_s"].mean()
    keys = base_key[~at0]
    has = keys.isin(base.index).to_numpy()
    off, keys = off[has], keys[has]
    if not len(off):
        return None
    y = off["time_s"].to_numpy(float)
    plain = T.predict_time(section, off)
    anchored = T.predict_time_anchored(section, off, base.loc[keys].to_numpy(float), fc0, fm0)
    pairs = sorted({(float(c), float(m)) for c, m in zip(off["core_mhz"], off["mem_mhz"])})
    per_kernel = {}
    for k in sorted(set(keys)):
        sel = (keys == k).to_numpy()
        per_kernel[k] = {"mape_pct": mape(y[sel], plain[sel]), "anchored_mape_pct": mape(y[sel], anchored[sel])}
    return {"rows": len(off), "kernels": len(set(keys)), "clock_pairs": len(pairs),
            "core_levels": len({p[0] for p in pairs}), "mem_levels": len({p[1] for p in pairs}),
            "mape_pct": mape(y, plain), "anchored_mape_pct": mape(y, anchored),
            "max_abs_err_pct": errors(y, plain).max_abs_pct,
            "anchored_max_abs_err_pct": errors(y, anchored).max_abs_pct, "per_kernel": per_kernel}


def _assemble(col: _Collector, df: pd.DataFrame, device: Mapping[str, Any], fc0: float, fm0: float) -> Section:
    """The section of the microbenchmarks' parameters ``col`` with the structure (predictor, forms) that
    times the check rows and the multi-round streams best (MAPE over both; the streams are the only rows
    that tell the rounds forms apart when every campaign kernel runs one round), and its statistics."""
    params, notes, checks = col.params, col.notes, col.checks
    rows = _kernel_rows(df)
    check = rows[rows["role"].isin(CHECK_ROLES)] if "role" in rows.columns else rows
    rr = _kernel_rows(df.loc[col.rounds_index])
    scored = pd.concat([check, rr]) if len(rr) else check
    candidates = [{**st, "rounds_form": rf} for st in STRUCTURES
                  for rf in (ROUNDS_FORMS if len(rr) and st["predictor"] == "wangchu" else ("paper",))]
    scores = []
    for st in candidates:
        sec = _section(params, device, fc0, fm0, st)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pred_all = T.predict_time(sec, scored) if len(scored) else np.array([])
        score = mape(scored["time_s"].to_numpy(float), pred_all) if len(scored) else math.inf
        scores.append((score, st, pred_all[:len(check)], pred_all[len(check):]))
    scores.sort(key=lambda s: (math.inf if math.isnan(s[0]) else s[0]))
    _, best, pred, _ = scores[0]
    sec = _section(params, device, fc0, fm0, best)
    y = check["time_s"].to_numpy(float)
    m = errors(y, pred)
    stats: dict[str, Any] = {"n_samples": len(y), "rmse_s": finite_or_none(m.rmse), "mape_pct": finite_or_none(m.mape_pct), "r2": finite_or_none(m.r2),
                             "method": "timing microbenchmarks (latency chases, departure bursts, stream, issue mix)",
                             "checked_on_roles": list(CHECK_ROLES),
                             "structure_choice": {f"{s['predictor']}/{s['comp_form']}"
                                                  + ("/shared_cases" if s["shared_cases"] else "")
                                                  + (f"/rounds_{s['rounds_form']}" if len(rr) and s["predictor"] == "wangchu"
                                                     else ""): finite_or_none(m)
                                                  for m, s, _, _ in scores},
                             "measurements": {k: (finite_or_none(v) if isinstance(v, float) else v) for k, v in checks.items()}}
    if len(rr):
        y_r = rr["time_s"].to_numpy(float)
        stats["rounds_check"] = {"rows": list(rr["workload"].astype(str)), "chosen": best.get("rounds_form", "paper"),
                                 "err_pct": {s["rounds_form"]: [finite_or_none(v) for v in pct_errors(y_r, p_r)]
                                             for _, s, _, p_r in scores
                                             if {k: s[k] for k in ("predictor", "comp_form", "shared_cases")}
                                             == {k: best[k] for k in ("predictor", "comp_form", "shared_cases")}}}
    # the discrepancy of time predictions for kernels: the kernels of the campaign were not fitted (the
    # parameters come from the microbenchmarks), so their relative errors are out-of-sample already
    pred_stats = prediction_stats(pct_errors(y, pred) / 100.0, len(check["workload"].unique()) if len(check) else 0)
    if pred_stats:
        pred_stats["method"] = "RMS of the relative time errors of the campaign's kernel rows (not fitted)"
        stats["prediction"] = pred_stats
        # total uncertainty: each parameter comes from its own microbenchmark, so no jackknife can see how
        # far the model's reading of that benchmark is from the hardware; the kernels the campaign ran
        # but did not fit can: a model that times them to within d (relative RMS) is taken as knowing none
        # of its parameters better than d of their value
        d = pred_stats["discrepancy_rel"]
        for p in params.values():
            if p.vary:
                p.stderr_total = total_stderr(p.stderr or 0.0, None, [d * abs(p.value)])
    sec.stats = stats
    _score_heldout(sec, rows, fc0, fm0)
    if notes:
        stats["warnings"] = list(notes)
    if col.dof:
        stats["stderr_dof"] = dict(col.dof)
    sec.covariance = Covariance.from_blocks(list(params.values()), col.blocks)
    return sec


def _score_heldout(sec: Section, rows: pd.DataFrame, fc0: float, fm0: float) -> None:
    """Add the held-out rows' time MAPE and the DVFS check (:func:`dvfs_check`) to ``sec.stats``."""
    held = rows[rows["role"] == HELDOUT] if "role" in rows.columns else rows.iloc[:0]
    if not len(held):
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sec.stats["heldout_mape_pct"] = finite_or_none(mape(held["time_s"].to_numpy(float), T.predict_time(sec, held)))
        sec.stats["heldout_rows"] = len(held)
        dv = dvfs_check(sec, rows, fc0, fm0)
    if dv is not None:
        sec.stats["heldout_dvfs"] = json_safe(dv)


def fit_table(df: pd.DataFrame, device: Mapping[str, Any], predictor: str = "auto") -> Section:
    """Fit the timing parameters to a session's (kernel, clocks, time) rows alone, without microbenchmarks.

    The table fitter (:class:`calib.fit.timing_table.TimingFitter`: bounded least squares on log time from
    fixed starts, physical bounds) with the device's SM count and occupancy limits, its default clocks as
    the reference, the issue width fitted (figures: tests/benchmarks/code_figures.md), plain (unanchored)
    residuals and no jackknife. ``predictor`` ``"auto"``: Wang & Chu when the rows span several clock
    ratios (the DRAM latency is then ``a fc/fm + b``), else MWP/CWP. Held-out rows are scored as in
    :func:`fit_timing`. BadInputError with fewer than 6 kernel rows of 2 kernels.
    """
    rows = _kernel_rows(df)
    if "role" in rows.columns:
        rows = rows[~rows["role"].isin((HELDOUT, "thermal", "idle"))]
    fc0, fm0 = _default_clocks(rows if len(rows) else df, device)
    multi = len(np.unique(np.round(rows["core_mhz"].to_numpy(float) / rows["mem_mhz"].to_numpy(float), 3))) >= 2
    ft = TimingFitter(predictor=predictor if predictor != "auto" else ("wangchu" if multi else "mwp_cwp"),
                      comp_form="max", jackknife=False, anchored=False, ref_clocks=(fc0, fm0),
                      sm_count=None if device.get("sm_count") is None else int(device["sm_count"]),
                      **{k: device.get(k) for k in ("max_warps_per_sm", "max_blocks_per_sm")})
    sec = ft.fit(df).section_
    _score_heldout(sec, _kernel_rows(df), fc0, fm0)
    return sec


def fit_timing(samples: pd.DataFrame, device: Mapping[str, Any],
               plan: list[Mapping[str, Any]] | None = None) -> Section | None:
    """The ``timing`` section from a session's samples table, or None without timing information.

    Uses the timing microbenchmarks when the table has them (role ``timing``), reading what each one
    measures from ``plan`` (the session manifest's ``plan``; without kinds for them there, the section
    is refused with a warning); otherwise fits the parameters to the kernel rows' times when they span
    at least two clock ratios or twelve rows. ``plan`` also adds each workload's ILP and coalescing to
    the rows the fit checks the model on (:func:`with_plan_inputs`).
    """
    if "time_s" not in samples.columns or "role" not in samples.columns:
        return None
    samples = with_plan_inputs(samples, plan)
    df = samples[samples["role"] != "idle"]
    if not len(df):
        return None
    fc0, fm0 = _default_clocks(df, device)
    if (df["role"] == "timing").any():
        kinds = timing_kinds(df, plan)
        if kinds is None:
            warnings.warn("timing microbenchmarks without declared kinds (no session plan, or a session recorded by "
                          "an older toolkit whose plan has no 'kind' per benchmark): their names are not parsed; "
                          "timing section not fitted (re-run the campaign to fit it)")
            return None
        col = fit_microbenchmarks(df, device, kinds)
        missing = [n for n in T.REQUIRED if n not in col.params]
        if missing:
            warnings.warn(f"timing microbenchmarks incomplete (no {', '.join(missing)}); timing section not fitted")
            return None
        return _assemble(col, df, device, fc0, fm0)
    rows = _kernel_rows(df)
    if len(rows) >= 12:
        try:
            return fit_table(df, device)
        except BadInputError:
            return None
    return None


class SessionTimingFitter(Estimator):
    """The ``timing`` section of a session (:func:`fit_timing` on its samples, device facts and plan); an
    estimator (:mod:`calib.fit.base`) whose ``section_`` is None when the session has no timing
    information."""

    def fit(self, data: SessionData) -> "SessionTimingFitter":
        self._validate_settings()
        self.section_ = fit_timing(data.samples, {} if data.device is None else data.device.raw, data.plan)
        return self
