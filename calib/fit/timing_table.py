"""Fit the timing section from (kernel, clocks, time) rows alone: :class:`TimingFitter`.

Rows: a kernel table (``calib import nvprof|ncu FILE --kernels``) or a session's kernel rows --
``time_s`` (> 0), ``core_mhz``, ``mem_mhz``, ``cnt_<class>``, ``blocks``, ``threads_per_block``, optional
timing inputs (``uncoal_frac``, ``active_blocks_per_sm``, ``ilp``, ...) and ``arch`` (chip or compute
capability). No power is needed.

What is fitted: bounded least squares of log time (relative errors, so short and long kernels count
alike) -- by default of the time ``calib predict --anchor`` would give (below) -- over the timing parameters the rows can inform -- ``issue_cycles`` (fixed at 1 / the SM issue
width of :mod:`calib.core.arch` when the chip is known), ``m_factor_<class>`` for classes that make up
at least 30 % of some kernel (>= 1: a pipe is never faster than issue), the DRAM latency ``dm_lat_a x
fc/fm + dm_lat_b`` (several clock ratios) or ``mem_ld_cycles`` (one), the departure delays, the DRAM
service time, the L2 latency and service time (rows with L2 hits), the dependent-issue latency and the
launch overhead.

Made independent of row order: the rows are put in a canonical order (kernel, clocks, time) before
anything is computed; the reference clocks are the highest core and memory clocks of the rows (not
the most frequent pair, whose ties fell by row order); the starts are a fixed set of points spread
over each parameter's physical range (:data:`STARTS`, no random draw and nothing taken from the first
rows) and the best of them is kept.

Anchored residuals (``anchored=True``, the default): profilers do not report a kernel's ILP, and taking
every training kernel at ILP 1 while ``calib predict --anchor`` infers a held-out kernel's ILP from its
profiled time made the fit compensate with unphysical latencies. So the fit does what the prediction
does: each kernel without ``ilp`` that has rows at two or more pairs gets its ILP inferred from its
measured time at its anchor row (its row nearest ``anchor_clocks``; default the highest core and memory
clocks of the rows, the pair a user profiles at) with the current parameters, by the same function
(:func:`calib.model.timing.infer_ilp`); its residuals are the anchored predictions at its other rows
(time at the anchor x model ratio), and, with ``anchor_match`` (default), the anchor's own mismatch --
zero when some ILP in 1..8 reproduces the measured time -- so that every kernel's profiled time stays
explainable. The latencies then explain how time changes with the clocks. Kernels whose rows give
``ilp`` keep plain residuals. The anchored fit starts from the plain fit's result (two stages), also with
its latencies 1.5 and 2 times longer (:data:`LATENCY_SCALES`), and keeps the best.

Model structure written: MWP/CWP with Case 3's Mem_L once per kernel, departure delays scaled with the
kernel's own round trip and the bandwidth as a roofline (L2 hits bounded by ``l2_del_cycles``, no case
faster than its bytes over the bandwidth; :mod:`calib.model.mwp_cwp`), or Wang & Chu.

Cost: the finite-difference Jacobian is one model call for all parameters (values of shape (P, 1),
:func:`calib.fit.core.fit_lsq` ``vectorized=True``), the same differences scipy takes.

Physical lower bounds (:data:`PARAMETERS`): no latency can be shorter than a few cycles of pipeline: DRAM
latency at fc/fm -> 0 at least 50 cycles, L2 latency at least 30, an instruction's dependent-issue
latency at least 2; service times and delays positive; the launch overhead at least 1 us.

Model form (MWP/CWP or Wang & Chu; Comp_cycles as the busiest pipe or the sum of the classes) chosen
by cross-validation by kernel *before* the final fit: every form is fitted on the kernels of K-1 folds
(folds by kernel name, round robin over the sorted names) and scored on the kernels left out -- on
their time at every clock pair scaled from their measured time at the reference pair when the rows
have several pairs per kernel (the use of ``calib predict --anchor``; anchored: with their ILP inferred
at their anchor row exactly as there), else on their time -- and the
form with the lowest CV MAPE is then fitted on all rows. The CV table is in ``stats.structure_cv``.

Uncertainties: ``stderr`` from the fit's covariance (Jacobian at the optimum -- through the ILP inference
when anchored -- scaled by the variance of the residuals that were fitted); ``stderr_total`` from a jackknife over kernels (leave one kernel out, refit from the final
values): the spread the choice of kernels causes, which includes how far the model is from the
physics, never less than ``stderr``. The prediction intervals' model discrepancy for a new kernel
(``stats.prediction``, :func:`calib.model.intervals.prediction_stats`) comes from the chosen form's CV
errors: kernels left out, each predicted from its anchor row as ``calib predict --anchor`` predicts.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from calib.core import arch as A
from calib.core.atomic import finite_or_none
from calib.core.errors import BadInputError, FitError
from calib.core.metrics import errors, mape
from calib.core.params import Param, Section
from calib.core.samples import CNT_PREFIX
from calib.core.units import clock_levels, nearest_level
from calib.fit.base import CLOCK_PAIR, Estimator, number, optional, options
from calib.fit.core import fit_lsq
from calib.fit.uncertainty import prediction_stats, refit_jackknife, total_stderr
from calib.model import timing as T

log = logging.getLogger(__name__)

#: share of a kernel's instructions that makes a class's M_Factor fitted (classes: T.M_CLASSES)
MIN_CLASS_SHARE = 0.3
#: (min, max, unit, description) per parameter: physical lower bounds (module docstring), generous upper ones
PARAMETERS: dict[str, tuple[float, float, str, str]] = {
    "issue_cycles": (0.1, 64.0, "cycles", "cycles per warp instruction issued by an SM"),
    "mem_ld_cycles": (50.0, 5000.0, "cycles", "DRAM round trip at the reference clocks"),
    "dm_lat_a_cycles": (0.0, 5000.0, "cycles", "DRAM latency slope vs fc/fm (Wang & Chu eq. 4)"),
    "dm_lat_b_cycles": (50.0, 5000.0, "cycles", "DRAM latency at fc/fm -> 0 (Wang & Chu eq. 4)"),
    "departure_del_coal_cycles": (0.5, 1000.0, "cycles",
                                  "minimum distance between two coalesced transactions of one SM"),
    "departure_del_uncoal_cycles": (0.5, 1000.0, "cycles",
                                    "minimum distance between two uncoalesced transactions of one SM"),
    "dram_del_coal_mem_cycles": (0.05, 100.0, "mem cycles", "DRAM service time per 128-byte transaction of the chip"),
    "l2_lat_cycles": (30.0, 2000.0, "cycles", "L2 load-to-use latency"),
    "l1_lat_cycles": (10.0, 1000.0, "cycles", "L1 load-to-use latency"),
    "sh_lat_cycles": (5.0, 500.0, "cycles", "shared-memory load-to-use latency"),
    "l2_del_cycles": (0.01, 100.0, "cycles", "L2 service time per 128-byte transaction"),
    "inst_lat_cycles": (2.0, 200.0, "cycles", "dependent-issue latency of an instruction"),
    "launch_overhead_s": (1e-6, 1e-3, "s", "time of a launch beyond its cycles"),
}
M_FACTOR_BOUNDS = (1.0, 64.0)
#: start points: fractions of each parameter's log range [min, min(max, 30 x min)] (fixed, row-free)
STARTS = (0.35, 0.6, 0.85)
#: the anchored stage starts from the plain fit's result with its latencies times each of these: the plain
#: fit takes every profiler kernel at ILP 1, so its latencies come out short (a kernel with more
#: independent chains looks like one with shorter latencies), and from there alone the anchored fit can
#: stop in a local minimum (figures: tests/benchmarks/code_figures.md)
LATENCY_SCALES = (1.0, 1.5, 2.0)
FORMS = tuple({"predictor": p, "comp_form": c} for p in T.PREDICTORS for c in ("max", "sum"))


def form_name(form: Mapping[str, Any]) -> str:
    return f"{form['predictor']}/{form['comp_form']}"


def _kernel_anchors(rows: pd.DataFrame, clocks: Sequence[float]) -> list[tuple[np.ndarray, int]]:
    """Per kernel (``workload``, by name): its row indices and its anchor row, the row nearest
    ``clocks`` (core_mhz, mem_mhz) in log clock distance."""
    fa, ma = (float(v) for v in clocks)
    d = np.abs(np.log(rows["core_mhz"].to_numpy(float) / fa)) + np.abs(np.log(rows["mem_mhz"].to_numpy(float) / ma))
    return [(idx, int(idx[np.argmin(d[idx])]))
            for _, idx in sorted(rows.groupby(rows["workload"].astype(str), sort=True).indices.items())]


class TimingFitter(Estimator):
    """Timing section from (kernel, clocks, time) rows (module docstring); an estimator
    (:mod:`calib.fit.base`): ``TimingFitter(**settings).fit(rows)`` learns ``section_``.

    Settings: ``predictor`` (``"auto"``: chosen by CV, or ``"mwp_cwp"``/``"wangchu"``), ``comp_form``
    (``"auto"``, ``"max"``, ``"sum"``), ``cv_folds`` (folds by kernel for the choice), ``jackknife``
    (kernel jackknife for ``stderr_total``), device facts when the rows do not give them:
    ``warp_issue_per_cycle`` (None: from the rows' ``arch`` through :mod:`calib.core.arch`, else
    fitted), ``sm_count`` (None: the largest ``active_sms``), ``max_warps_per_sm``, ``max_blocks_per_sm``
    (None: the architecture's, else 64 and 32), ``ref_clocks`` (None: the highest core and memory clock),
    ``anchored`` (fit the anchored time, module docstring), ``anchor_clocks`` (None: each kernel's row nearest
    the highest core and memory clocks is its anchor), ``anchor_match`` (the anchor's mismatch is a residual).
    """

    constraints = {
        "predictor": options("auto", *T.PREDICTORS),
        "comp_form": options("auto", "max", "sum"),
        "cv_folds": number(2, 1000, integer=True),
        "jackknife": options(True, False),
        "warp_issue_per_cycle": optional(number(0.0, 64.0, lo_open=True)),
        "sm_count": optional(number(1, 1024, integer=True)),
        "max_warps_per_sm": optional(number(1, 4096)),
        "max_blocks_per_sm": optional(number(1, 4096)),
        "ref_clocks": optional(CLOCK_PAIR),
        "anchored": options(True, False),
        "anchor_clocks": optional(CLOCK_PAIR),
        "anchor_match": options(True, False),
    }

    def __init__(self, *, predictor: str = "auto", comp_form: str = "auto", cv_folds: int = 5, jackknife: bool = True,
                 warp_issue_per_cycle: float | None = None, sm_count: int | None = None,
                 max_warps_per_sm: float | None = None, max_blocks_per_sm: float | None = None,
                 ref_clocks: Sequence[float] | None = None, anchored: bool = True,
                 anchor_clocks: Sequence[float] | None = None, anchor_match: bool = True):
        self._store(locals())

    # -- inputs ------------------------------------------------------------------------------------
    def _rows(self, df: pd.DataFrame, source: str) -> pd.DataFrame:
        where = source or "<table>"
        for need in ("time_s", "core_mhz", "mem_mhz", "blocks", "threads_per_block"):
            if need not in df.columns:
                raise BadInputError(f"{where}: column '{need}' missing; the timing fit needs (kernel, clocks, time) rows "
                                    "with the launch shape")
        if not any(c.startswith(CNT_PREFIX) for c in df.columns):
            raise BadInputError(f"{where}: no per-warp counts (cnt_<class> columns); the timing fit needs them")
        ok = (df["time_s"].notna() & (df["time_s"] > 0) & df["core_mhz"].notna() & df["mem_mhz"].notna()
              & df["blocks"].notna() & df["threads_per_block"].notna())
        if "role" in df.columns:
            ok &= ~df["role"].astype(str).isin(("heldout", "thermal", "idle"))
        rows = df[ok].copy()
        dropped = int((~ok).sum())
        if dropped:
            warnings.warn(f"{where}: {dropped} row(s) without a positive time, clocks or launch shape left out of the timing fit")
        cnt = [c for c in rows.columns if c.startswith(CNT_PREFIX)]
        rows[cnt] = rows[cnt].fillna(0.0)
        # canonical order: nothing below may depend on the order the rows came in
        key = ["workload", "core_mhz", "mem_mhz", "time_s"]
        rows = rows.sort_values(key, kind="mergesort").reset_index(drop=True)
        rows = rows[sorted(rows.columns)]
        n_k = rows["workload"].nunique()
        if len(rows) < 6 or n_k < 2:
            raise BadInputError(f"{where}: {len(rows)} kernel row(s) of {n_k} kernel(s) with times; the timing fit needs "
                                "at least 6 rows of at least 2 kernels")
        return rows

    def _device(self, rows: pd.DataFrame, source: str) -> dict[str, Any]:
        a = None
        if "arch" in rows.columns:
            tags = sorted({str(x) for x in rows["arch"].dropna() if str(x).strip() and str(x) != "nan"})
            if len(tags) > 1:
                raise BadInputError(f"{source}: rows of several GPUs (arch {', '.join(tags)}); fit one GPU at a time")
            if tags:
                tag = tags[0]
                a = A.BY_CHIP.get(tag.upper()) or A.BY_CC.get(tag)
                if a is None:
                    warnings.warn(f"{source}: arch {tag!r} is not in calib/core/arch.py; the issue width is fitted")
        sm = self.sm_count
        if sm is None:
            if "active_sms" in rows.columns and rows["active_sms"].notna().any():
                sm = int(rows["active_sms"].max())
            else:
                raise BadInputError(f"{source}: no active_sms column; give the GPU's SM count (--sm-count)")
        issue = self.warp_issue_per_cycle or (a.warp_issue_per_cycle if a is not None else None)
        mw = self.max_warps_per_sm or (a.max_warps_per_sm if a is not None else 64.0)
        major = int(a.cc.split(".")[0]) if a is not None else 5
        mb = self.max_blocks_per_sm or (8.0 if major < 3 else 16.0 if major == 3 else 32.0)
        ref = self.ref_clocks if self.ref_clocks is not None else (rows["core_mhz"].max(), rows["mem_mhz"].max())
        fc0, fm0 = (float(x) for x in ref)
        devname = ""
        if "device" in rows.columns:
            names = sorted({str(x) for x in rows["device"].dropna() if str(x).strip() and str(x) != "nan"})
            devname = names[0] if names else ""
        return {"sm_count": int(sm), "max_warps_per_sm": float(mw), "max_blocks_per_sm": float(mb),
                "warp_issue_per_cycle": issue, "ref": (fc0, fm0), "arch": None if a is None else a.cc,
                "chip": None if a is None or "arch" not in rows.columns else str(rows["arch"].iloc[0]),
                "name": devname}

    def _params(self, rows: pd.DataFrame, dev: Mapping[str, Any]) -> list[Param]:
        ratio = rows["core_mhz"].to_numpy(float) / rows["mem_mhz"].to_numpy(float)
        multi = len(np.unique(np.round(ratio, 3))) >= 2
        names = ["issue_cycles"]
        total = sum(rows[c].to_numpy(float) for c in rows.columns if c.startswith(CNT_PREFIX))
        m_cls = [c for c in T.M_CLASSES if CNT_PREFIX + c in rows.columns
                 and np.any(rows[CNT_PREFIX + c].to_numpy(float) >= MIN_CLASS_SHARE * total)]
        names += ["dm_lat_a_cycles", "dm_lat_b_cycles"] if multi else ["mem_ld_cycles"]
        names += ["departure_del_coal_cycles", "dram_del_coal_mem_cycles"]
        if "uncoal_frac" in rows.columns and np.nanmax(rows["uncoal_frac"].to_numpy(float), initial=0.0) > 0.05:
            names.append("departure_del_uncoal_cycles")
        if CNT_PREFIX + "l2" in rows.columns and np.any(rows[CNT_PREFIX + "l2"].to_numpy(float) > 0):
            names += ["l2_lat_cycles", "l2_del_cycles"]
        for cls, n in (("l1", "l1_lat_cycles"), ("shared", "sh_lat_cycles")):
            if CNT_PREFIX + cls in rows.columns and np.any(rows[CNT_PREFIX + cls].to_numpy(float) > 0):
                names.append(n)
        names += ["inst_lat_cycles", "launch_overhead_s"]
        out = []
        for n in names:
            lo, hi, unit, desc = PARAMETERS[n]
            v = math.sqrt(lo * max(hi, lo * 30.0)) if lo > 0 else hi / 10.0
            vary = True
            if n == "issue_cycles" and dev["warp_issue_per_cycle"]:
                v, vary = 1.0 / float(dev["warp_issue_per_cycle"]), False
            out.append(Param(n, float(min(max(v, lo), hi)), unit, lo, hi, vary, None, None, desc))
        for c in m_cls:
            out.append(Param(f"m_factor_{c}", 2.0, "1", *M_FACTOR_BOUNDS, True, None, None,
                             f"issue slots per {c} warp instruction (pipe throughput ratio)"))
        return out

    # -- model ---------------------------------------------------------------------------------------
    def _structure(self, dev: Mapping[str, Any], form: Mapping[str, Any]) -> dict[str, Any]:
        return T.structure(form["predictor"], form["comp_form"], *dev["ref"], dev["sm_count"], dev["max_warps_per_sm"],
                           dev["max_blocks_per_sm"], case3_form="once", departure_scale="round_trip",
                           bandwidth_form="roofline", shared_cases=False)

    def _plan(self, rows: pd.DataFrame, dev: Mapping[str, Any]) -> dict[str, np.ndarray] | None:
        """Which rows are fitted and how (module docstring, anchored residuals), or None for plain log-time
        residuals at every row (not ``anchored``, or no kernel to anchor); one-row kernels without ``ilp`` inform
        nothing (their anchor is their only row). Keys: ``anchor`` (row index per anchored kernel),
        ``anchor_of`` (per row: position of its kernel's anchor in ``anchor``, -1 for other rows), ``resid``
        (rows with a residual, ascending), ``fit_rows`` (the residual rows, then the anchors with
        ``anchor_match``)."""
        if not self.anchored:
            return None
        given = (pd.to_numeric(rows["ilp"], errors="coerce").notna().to_numpy() if "ilp" in rows.columns
                 else np.zeros(len(rows), bool))
        anchor: list[int] = []
        anchor_of = np.full(len(rows), -1)
        resid = np.zeros(len(rows), bool)
        for idx, b in _kernel_anchors(rows, self.anchor_clocks or dev["ref"]):
            if given[idx].any():
                resid[idx] = True
            elif len(idx) >= 2:
                anchor_of[idx] = len(anchor)
                anchor.append(b)
                resid[idx] = True
                resid[b] = False
        if not anchor:
            return None
        anchor_ = np.asarray(anchor, int)
        resid_ = np.flatnonzero(resid)
        fit_rows = np.concatenate([resid_, anchor_]) if self.anchor_match else resid_
        return {"anchor": anchor_, "anchor_of": anchor_of, "resid": resid_, "fit_rows": fit_rows}

    def _evaluator(self, rows: pd.DataFrame, dev: Mapping[str, Any], form: Mapping[str, Any], params: Sequence[Param],
                   plan: Mapping[str, np.ndarray] | None = None):
        """``f(values) -> log time`` over ``rows`` (inputs computed once); with a ``plan`` (:meth:`_plan`) the
        anchored log time of the rows ``plan["resid"]``."""
        sec = Section(T.MODEL_NAME, {p.name: p for p in _with_mem_ld(params, dev)}, self._structure(dev, form))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ts0 = T.compile_section(sec)
            x = T.inputs_from_table(ts0, rows)
        if plan is not None:
            y = rows["time_s"].to_numpy(float)
            anchor, anchor_of, resid = plan["anchor"], plan["anchor_of"], plan["resid"]
            x_anchor = T.take_inputs(x, anchor)
            log_y_anchor = np.log(y[anchor])
            # the rows to evaluate: the residual rows and the anchors (the ratio's denominator)
            ev = np.concatenate([resid, anchor])
            x_ev = T.take_inputs(x, ev)
            k_ev = anchor_of[ev]
            n_r = len(resid)

        def f(values: Mapping[str, float]) -> np.ndarray:
            ts = dataclasses.replace(ts0, values=T.with_ref_latency(values, *dev["ref"]))
            with np.errstate(all="ignore"):
                if plan is None:
                    return np.log(np.maximum(T.time_from_inputs(ts, x), 1e-30))
                # values may be (P, 1) arrays (P parameter sets in one call): rows are the last axis
                ilp_k = T.infer_ilp(ts, x_anchor, y[anchor])
                xx = T.with_ilp(x_ev, np.where(k_ev >= 0, ilp_k[..., np.maximum(k_ev, 0)], x_ev.ilp))
                lt = np.log(np.maximum(T.time_from_inputs(ts, xx), 1e-30))
                lt_r, lt_a = lt[..., :n_r], lt[..., n_r:]
                k = k_ev[:n_r]
                out = np.where(k >= 0, log_y_anchor[np.maximum(k, 0)] + lt_r - lt_a[..., np.maximum(k, 0)], lt_r)
                # the anchor's own mismatch: zero when some ILP in 1..8 gives its measured time
                return np.concatenate([out, lt_a], axis=-1) if self.anchor_match else out
        return f

    def _fit_form(self, rows: pd.DataFrame, dev: Mapping[str, Any], form: Mapping[str, Any],
                  start: Sequence[Param] | None = None, anchored: bool = True):
        """Best bounded least-squares fit of one form (a :class:`calib.fit.core.LsqResult`): from ``start`` when
        given, else from every point of :data:`STARTS`; anchored (:meth:`_plan`) without a ``start``, in the two
        stages of the module docstring (from the fixed starts alone the anchored fit stalls)."""
        base = self._params(rows, dev)
        plan = self._plan(rows, dev) if anchored else None
        scales: Sequence[float] = (1.0,)
        if plan is not None and start is None:
            start = self._fit_form(rows, dev, form, anchored=False).params
            scales = LATENCY_SCALES
        y = np.log(rows["time_s"].to_numpy(float))
        if plan is not None:
            y = y[plan["fit_rows"]]
        if start is not None:
            sv = {p.name: p.value for p in start}
            starts = [[dataclasses.replace(p, value=float(np.clip(sv.get(p.name, p.value) * (f if _is_latency(p.name) else 1.0),
                                                                  p.min, p.max)))
                       for p in base] for f in scales]
        else:
            starts = []
            for frac in STARTS:
                ps = []
                for p in base:
                    if not p.vary:
                        ps.append(p)
                        continue
                    lo = p.min if p.min > 0 else 1e-3
                    hi = min(p.max, lo * 30.0) if p.min > 0 else p.max
                    ps.append(dataclasses.replace(p, value=float(math.exp(math.log(lo) + frac * (math.log(hi) - math.log(lo))))))
                starts.append(ps)
        best = None
        for ps in starts:
            f = self._evaluator(rows, dev, form, ps, plan)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = fit_lsq(f, ps, y, max_nfev=60 * (len(ps) + 1), vectorized=True)
            except FitError as e:
                log.debug("timing fit %s from a start failed: %s", form_name(form), e)
                continue
            if best is None or res.chisqr < best.chisqr - 1e-12:
                best = res
        if best is None:
            raise FitError(f"the timing fit ({form_name(form)}) failed from every start")
        return best

    # -- cross-validation ----------------------------------------------------------------------------
    def _predict_rows(self, rows: pd.DataFrame, dev: Mapping[str, Any], form: Mapping[str, Any],
                      params: Sequence[Param]) -> np.ndarray:
        """Predicted time (s) per row; anchored (:meth:`_plan`) where the rows allow it, as ``calib predict
        --anchor`` predicts a kernel from its profile -- NaN at the anchor rows, which are not predicted."""
        plan = self._plan(rows, dev)
        f = self._evaluator(rows, dev, form, params, plan)
        t = np.exp(f({p.name: p.value for p in params}))
        if plan is None:
            return t
        out = np.full(len(rows), np.nan)
        out[plan["resid"]] = t[:len(plan["resid"])]
        return out

    def _anchored(self, rows: pd.DataFrame, pred: np.ndarray, dev: Mapping[str, Any]) -> dict[str, float | None]:
        """``{"anchored_mape_pct": MAPE}`` of each kernel's time at every pair scaled by ``pred`` from its
        measured time at the pair nearest the reference clocks; {} when no kernel has two pairs."""
        out = np.full(len(rows), np.nan)
        y = rows["time_s"].to_numpy(float)
        any_pair = False
        for idx, b in _kernel_anchors(rows, dev["ref"]):
            if len(idx) < 2:
                continue
            any_pair = True
            others = idx[idx != b]
            out[others] = y[b] * pred[others] / pred[b]
        ok = np.isfinite(out)
        return {"anchored_mape_pct": finite_or_none(mape(y[ok], out[ok]))} if any_pair else {}

    def _cv(self, rows: pd.DataFrame, dev: Mapping[str, Any], form: Mapping[str, Any], full: Sequence[Param]) -> dict[str, Any]:
        kernels = sorted(rows["workload"].astype(str).unique())
        k = min(int(self.cv_folds), len(kernels))
        fold_of = {name: i % k for i, name in enumerate(kernels)}
        folds = rows["workload"].astype(str).map(fold_of).to_numpy()
        pred = np.full(len(rows), np.nan)
        for i in range(k):
            tr, te = rows[folds != i], rows[folds == i]
            if tr["workload"].nunique() < 2 or len(tr) < 6:
                continue
            res = self._fit_form(tr.reset_index(drop=True), dev, form, start=full)
            pred[folds == i] = self._predict_rows(te.reset_index(drop=True), dev, form, res.params)
        y = rows["time_s"].to_numpy(float)
        ok = np.isfinite(pred)
        if self._plan(rows, dev) is not None:
            # held-out kernels scored as calib predict --anchor predicts them (their ILP from their anchor)
            return {"folds": k, "anchored_mape_pct": finite_or_none(mape(y[ok], pred[ok])) if ok.any() else None,
                    "_rel": (pred[ok] - y[ok]) / y[ok], "_kernels": int(rows["workload"][ok].nunique())}
        return {"folds": k, "mape_pct": finite_or_none(mape(y[ok], pred[ok])) if ok.any() else None,
                **self._anchored(rows, pred, dev)}

    # -- fit ----------------------------------------------------------------------------------------
    def fit(self, rows: pd.DataFrame, plan: Sequence[Mapping[str, Any]] | None = None, source: str = "") -> "TimingFitter":
        """Fit to the kernel rows of ``rows`` (module docstring). ``plan``: a session manifest's plan
        (adds each workload's ILP and coalescing, :func:`with_plan_inputs`);
        ``source`` names the table in messages. Returns self."""
        self._validate_settings()
        if plan:
            rows = with_plan_inputs(rows, plan)
        where = source or "<table>"
        df = self._rows(rows, where)
        dev = self._device(df, where)
        forms = [f for f in FORMS if self.predictor in ("auto", f["predictor"]) and self.comp_form in ("auto", f["comp_form"])]
        fits = {form_name(f): (f, self._fit_form(df, dev, f)) for f in forms}
        cv: dict[str, Any] = {}
        if len(forms) > 1:
            cv = {name: self._cv(df, dev, f, res.params) for name, (f, res) in fits.items()}
            key = "anchored_mape_pct" if all("anchored_mape_pct" in c for c in cv.values()) else "mape_pct"
            chosen = min(cv, key=lambda n: (math.inf if cv[n][key] is None else cv[n][key], n))
        else:
            key, chosen = None, form_name(forms[0])
        form, res = fits[chosen]
        # the model's discrepancy for a new kernel: the chosen form's CV errors on kernels it was not fitted
        # on, predicted the way calib predict --anchor predicts (the prediction intervals' scale)
        rel = cv.get(chosen, {}).get("_rel")
        prediction = None
        if rel is not None:
            prediction = prediction_stats(rel, cv[chosen]["_kernels"],
                                          f"relative errors of the kernels left out by {cv[chosen]['folds']}-fold "
                                          "cross-validation by kernel, each predicted from its anchor row as calib "
                                          "predict --anchor does")
        for c in cv.values():
            c.pop("_rel", None)
            c.pop("_kernels", None)
        params = {p.name: p for p in _with_mem_ld(res.params, dev)}
        notes = list(res.warnings)
        cov = res.covariance()
        if self.jackknife:
            for n, se in self._jackknife(df, dev, form, res.params).items():
                params[n] = dataclasses.replace(params[n], stderr_total=total_stderr(params[n].stderr, se))
        fplan = self._plan(df, dev)
        y = df["time_s"].to_numpy(float)
        if fplan is not None:
            y = y[fplan["fit_rows"]]
            method = (f"least squares on the log of the anchored time over {len(y)} kernel rows ({chosen}; each kernel's "
                      f"ILP from its measured time at its anchor pair, as calib predict --anchor)")
        else:
            method = f"least squares on log time over {len(df)} kernel rows ({chosen})"
        yhat = np.exp(res.yhat)
        m = errors(y, yhat)
        stats: dict[str, Any] = {
            "n_samples": int(len(df)), "n_kernels": int(df["workload"].nunique()),
            "clock_pairs": _n_pairs(df),
            "rmse_s": finite_or_none(m.rmse), "mape_pct": finite_or_none(m.mape_pct), "r2": finite_or_none(m.r2),
            "method": method,
            "structure_cv": cv, "structure_cv_score": key, "structure_chosen": chosen,
            "issue_width_from": ("setting" if self.warp_issue_per_cycle else
                                 f"calib.core.arch ({dev['arch']})" if dev["warp_issue_per_cycle"] else "fitted"),
        }
        if fplan is not None:
            n_r = len(fplan["resid"])
            stats["anchored_mape_pct"] = finite_or_none(mape(y[:n_r], yhat[:n_r]))
            stats["anchor_clocks"] = [float(v) for v in (self.anchor_clocks or dev["ref"])]
            # each anchored kernel's ILP as the final fit infers it (not written as parameters: a property of the
            # kernel, which calib predict --anchor infers again for every kernel it is given)
            ts = T.compile_section(Section(T.MODEL_NAME, params, self._structure(dev, form)))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                xa = T.inputs_from_table(ts, df.iloc[fplan["anchor"]].reset_index(drop=True))
            ilp = T.infer_ilp(ts, xa, df["time_s"].to_numpy(float)[fplan["anchor"]])
            stats["kernel_ilp"] = {str(df["workload"].iloc[b]): round(float(v), 4) for b, v in zip(fplan["anchor"], ilp)}
        else:
            stats.update(self._anchored(df, yhat, dev))
        if prediction is not None:
            stats["prediction"] = prediction
        if notes:
            stats["warnings"] = notes
        sec = Section(T.MODEL_NAME, params, self._structure(dev, form), stats,
                      cov, self.settings())
        self.section_ = sec
        self.device_ = dev
        self.rows_ = df
        return self

    def _jackknife(self, df: pd.DataFrame, dev: Mapping[str, Any], form: Mapping[str, Any],
                   final: Sequence[Param]) -> dict[str, float]:
        """Leave-one-kernel-out standard error of every varied parameter (refits from ``final``,
        :func:`calib.fit.uncertainty.refit_jackknife`); {} with fewer than two refits."""
        names = [p.name for p in final if p.vary]

        def refit(keep: np.ndarray) -> dict[str, float] | None:
            sub = df[keep].reset_index(drop=True)
            if sub["workload"].nunique() < 2 or len(sub) < 6:
                return None
            try:
                return {p.name: p.value for p in self._fit_form(sub, dev, form, start=final).params}
            except FitError:
                return None

        cov = refit_jackknife(refit, df["workload"].astype(str).to_numpy(), names)
        return {} if cov is None else {n: float(math.sqrt(cov[i, i])) for i, n in enumerate(names)}


def with_plan_inputs(samples: pd.DataFrame, plan: list[Mapping[str, Any]] | None) -> pd.DataFrame:
    """The samples plus the timing inputs a session's plan declares per workload: ``ilp``
    (independent chains per thread, from the kernel parameters) and ``uncoal_frac`` (1 for a kernel
    declared ``coalesced: false``). Columns the table already has are kept."""
    if not plan:
        return samples
    by_name = {p.get("name"): p.get("params", {}) or {} for p in plan}
    out = samples.copy()
    names = out["workload"].astype(str)
    if "ilp" not in out.columns:
        ilp = [float(by_name.get(n, {}).get("ilp", math.nan)) for n in names]
        if not all(math.isnan(v) for v in ilp):
            out["ilp"] = ilp
    if "uncoal_frac" not in out.columns:
        unc = [0.0 if by_name.get(n, {}).get("coalesced", True) else 1.0 for n in names]
        if any(unc):
            out["uncoal_frac"] = unc
    return out


def _is_latency(name: str) -> bool:
    """A latency parameter (cycles of a round trip or a dependent issue), which :data:`LATENCY_SCALES` scales."""
    return name.endswith("_lat_cycles") or name in ("dm_lat_a_cycles", "dm_lat_b_cycles", "mem_ld_cycles")


def _with_mem_ld(params: Sequence[Param], dev: Mapping[str, Any]) -> list[Param]:
    """``params`` plus ``mem_ld_cycles`` (fixed) = the DRAM latency at the reference clocks when the
    latency is the line ``a fc/fm + b`` (the model needs it as the departure-delay scale)."""
    ps = list(params)
    names = {p.name for p in ps}
    if "dm_lat_a_cycles" in names and "mem_ld_cycles" not in names:
        ld = T.with_ref_latency({p.name: p.value for p in ps}, *dev["ref"])["mem_ld_cycles"]
        ps.append(Param("mem_ld_cycles", float(ld), "cycles", 1e-9, 1e6, False, None, None,
                        "DRAM round trip at the reference clocks (= a fc/fm + b)"))
    return ps


def _n_pairs(df: pd.DataFrame) -> int:
    """Distinct (core, memory) clock levels of the rows."""
    fc = nearest_level(df["core_mhz"], clock_levels(df["core_mhz"]))
    fm = nearest_level(df["mem_mhz"], clock_levels(df["mem_mhz"]))
    return len(set(zip(fc.tolist(), fm.tolist())))
