"""Two uncertainties per fitted parameter: statistical, and total (with model discrepancy).

**Statistical** (``stderr``, the fit's ``covariance``): ``cov = inv(J^T J) x SSR / (n - p)`` at the
solution, the textbook least-squares covariance. It answers "how much would this value move if the same
campaign ran again on the same card": what ``calib diff`` tests between two calibrations.

**Total** (``stderr_total``): the physics is not the model, and the residuals the model cannot absorb are
structured by workload, not independent noise, so the statistical covariance says nothing about how far
a value may be from the quantity it names. The total covariance adds what the data already show about
that:

- a **delete-a-group jackknife** over the campaign's independent groups (the benchmark kernels: all
  intensities and repeats of one kernel form a group, because a misfit of a unit's curve shows along
  its whole intensity sweep): each group is removed in turn and the estimate recomputed, and the
  spread of those estimates, ``(G - 1) / G x sum_g (theta_(g) - mean)(...)^T``, is the covariance
  (Efron & Stein 1981; Shao & Tu 1995 for groups). The recomputation is one Gauss-Newton step from the
  full solution (exact for models linear in their parameters, and the usual approximation otherwise,
  equivalent to the CR3 cluster-robust sandwich), so it costs one small linear solve per group, not one
  fit. Groups that every fit must keep (the idle baseline) are never removed;
- a **workload discrepancy** term (:func:`discrepancy_covariance`): every workload's measurements share
  an unknown offset of relative size ``tau`` (a random effect), propagated through the fit. ``tau`` is
  what the model misses on workloads it has not seen -- the campaign's held-out workloads when it has
  them, else the training workloads left out one at a time (:func:`workload_rms`). The jackknife alone
  cannot see this where one benchmark fixes one parameter: the fit absorbs that benchmark's error;
- **model-form** terms: where a parameter is an extrapolation beyond the data (e.g. the IPP MaxPower of a
  unit measured only at low access rates), and the **structure** uncertainty: the alternative
  structures a fitter's search compared (another access-rate function for one unit, the other
  active-SM scaling, the shared-activation term on or off) averaged by their evidence, Bayesian model
  averaging's between-model variance ``sum_j w_j d_j d_j^T`` (:func:`model_average_covariance`, with
  the weights of :func:`evidence_log_weight`): a structure as probable as the chosen one puts half its
  shift squared into the variance, one the data reject nothing.

**One rule for every section** (IPP, DVFS, thermal, thermal network, transfer, timing): the total is the
larger of the statistical and the jackknife covariance (in the positive-semidefinite sense,
:func:`total_covariance`; per parameter, :func:`total_stderr`) plus the model-form and discrepancy terms,
which are independent of the noise and add. So ``stderr_total >= stderr`` always, and two estimates of
one spread (statistical and jackknife) are never added to each other. Readers (the report, ``calib
diff``, the intervals, the bundle check) take a parameter's total from :func:`total_se`. How well this
covers the truth, and that it is not wider than the errors it describes, is measured on the virtual
GPUs (tests/benchmarks/identify_study.py; tests/test_uncertainty.py).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence

import numpy as np
import pandas as pd

from calib.core import names
from calib.core.metrics import ar1_inflation  # noqa: F401 - its home is calib.core.metrics
from calib.core.params import Covariance, Param, transferred_total_se
from calib.fit.core import stderr_of
from calib.model.intervals import prediction_stats  # noqa: F401 - the fitters' import of the one definition
from calib.model.ipp import unit_power


def group_jackknife(J: np.ndarray, r: np.ndarray, groups: Sequence, keep: Sequence | None = None,
                    out_of_group: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """Linearised delete-a-group jackknife covariance of least-squares parameters (module docstring).

    ``J`` (rows x parameters) and ``r`` (rows) are the weighted Jacobian and residuals at the solution
    (residual = prediction - measurement); ``groups`` labels every row; rows of the labels in ``keep``
    are never removed. Returns (covariance, number of groups used); a covariance of NaN when fewer than
    three groups can be removed. ``out_of_group`` (an array of len(r)), when given, receives every
    removable row's residual as predicted by the fit without its group (a leave-one-group-out cross-
    validation residual, in the units of ``r``); kept rows get NaN.
    """
    J = np.asarray(J, float)
    r = np.asarray(r, float)
    g = np.asarray([str(x) for x in groups])
    labels = [lab for lab in dict.fromkeys(g) if keep is None or lab not in set(map(str, keep))]
    k = J.shape[1]
    if len(labels) < 3:
        return np.full((k, k), np.nan), len(labels)
    # column scaling keeps the solves well conditioned (the parameters span many orders of magnitude)
    scale = np.linalg.norm(J, axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    Js = J / scale
    A = Js.T @ Js
    deltas = []
    if out_of_group is not None:
        out_of_group[:] = np.nan
    for lab in labels:
        m = g == lab
        Jg = Js[m]
        # theta_(g) - theta = (A - Jg' Jg)^+ Jg' r_g  (the full solution has Js' r = 0, r = prediction - data)
        deltas.append(np.linalg.lstsq(A - Jg.T @ Jg, Jg.T @ r[m], rcond=1e-12)[0])
        if out_of_group is not None:
            out_of_group[m] = r[m] + Jg @ deltas[-1]
    D = np.array(deltas) / scale
    G = len(labels)
    Dc = D - D.mean(axis=0)
    return (G - 1) / G * (Dc.T @ Dc), G


def repeat_groups(df) -> np.ndarray | None:  # noqa: ANN001 - a samples table
    """Repeat label of every row for the repeatability jackknife: ``r<k>`` for rows of workloads measured
    more than once (``repeat`` column), :data:`KEEP_GROUP` for rows without a repeat; None when no
    workload was repeated."""
    if "repeat" not in df.columns or "workload" not in df.columns:
        return None
    rep = df["repeat"].to_numpy()
    wl = df["workload"].astype(str).to_numpy()
    counts: dict[str, set] = {}
    for w, r in zip(wl, rep):
        counts.setdefault(w, set()).add(r)
    g = np.array([f"r{int(r)}" if len(counts[w]) > 1 and r == r else KEEP_GROUP for w, r in zip(wl, rep)], dtype=object)
    return g if len(set(g) - {KEEP_GROUP}) >= 2 else None


def refit_jackknife(refit, groups: np.ndarray, names: Sequence[str], keep: Sequence[str] = ()) -> np.ndarray | None:  # noqa: ANN001
    """Delete-a-group jackknife with real refits: ``refit(mask)`` fits the rows where ``mask`` is True and
    returns {name: value} (or None when it cannot). Returns the covariance of ``names`` (NaN where a
    refit lacks a parameter) or None with fewer than two successful refits."""
    labels = [lab for lab in dict.fromkeys(groups) if lab not in set(keep)]
    reps = []
    for lab in labels:
        v = refit(groups != lab)
        if v is not None:
            reps.append([v.get(n, np.nan) for n in names])
    if len(reps) < 2:
        return None
    D = np.array(reps, float)
    G = len(D)
    Dc = np.nan_to_num(D - np.nanmean(D, axis=0))
    return (G - 1) / G * (Dc.T @ Dc)


def jackknife_sd(values: Sequence[float]) -> float:
    """Delete-one jackknife standard error of one quantity from its leave-one-group-out refits' values:
    ``sqrt((G - 1) / G * sum (v_i - mean)^2)`` (:func:`refit_jackknife` for several parameters)."""
    v = np.asarray(values, float)
    return math.sqrt((len(v) - 1) / len(v) * float(np.sum((v - v.mean()) ** 2)))


def total_covariance(stat: Covariance | None, jack: np.ndarray | None, form_var: Sequence | None = None
                     ) -> np.ndarray | None:
    """THE rule for the total covariance of every section (module docstring): the smallest covariance
    at least as large as both the statistical one and the jackknife's along every direction built from
    them, ``stat + (jack - stat)+`` (``(.)+`` keeps the positive eigenvalues of the difference: Loewner
    order, ``out - stat`` and ``out - jack`` are both positive semidefinite), plus the model-form and
    discrepancy terms ``form_var`` (each a covariance matrix, or a vector of variances for the diagonal),
    which are independent of the noise and add. None without a statistical covariance (an element-wise
    mix of the two is not a covariance). :func:`total_stderr` is the same rule for a section that keeps
    only standard errors."""
    if stat is None:
        return None
    s = np.array(stat.matrix, float)
    out = s.copy()
    if jack is not None and np.all(np.isfinite(jack)):
        bad = ~np.isfinite(s)
        s0 = np.where(bad, 0.0, s)
        d = np.asarray(jack, float) - s0
        d = 0.5 * (d + d.T)
        w, v = np.linalg.eigh(d)
        out = s0 + (v * np.clip(w, 0.0, None)) @ v.T
        out[bad] = np.nan
    if form_var is not None:
        terms = [form_var] if np.ndim(form_var) == 1 and len(form_var) and np.isscalar(form_var[0]) else form_var
        for t in terms:
            t = np.asarray(t, float)
            out = out + (np.diag(t) if t.ndim == 1 else np.nan_to_num(t))
    return out


def total_stderr(stat: float | None, jack: float | None = None, form: Sequence[float] = ()) -> float | None:
    """The rule of :func:`total_covariance` for one parameter's standard errors: ``sqrt(max(stat, jack)^2
    + sum form_i^2)``, the larger of the statistical and the jackknife standard error (two estimates
    of the same run-to-run spread, the jackknife's also holding what the model misses between groups),
    with the independent model-form terms added in quadrature. None when neither standard error is known."""
    base = [x for x in (stat, jack) if x is not None and math.isfinite(x)]
    if not base:
        return None
    return math.sqrt(max(base) ** 2 + sum(float(f) ** 2 for f in form if f is not None and math.isfinite(f)))


def total_se(p) -> float | None:  # noqa: ANN001 - a calib.core.params.Param
    """The total standard error a reader uses for a parameter: ``stderr_total``, else (a file without
    one) the statistical ``stderr``."""
    return p.stderr_total if p.stderr_total is not None else p.stderr


def apply_total(params: Sequence[Param], names: Sequence[str], cov_total: np.ndarray | None) -> None:
    """Set ``stderr_total`` of the parameters named ``names`` (in covariance order) from ``cov_total``;
    a parameter whose statistical stderr is unknown gets no total one either."""
    if cov_total is None:
        return
    idx = {n: i for i, n in enumerate(names)}
    for p in params:
        i = idx.get(p.name)
        if i is None or p.stderr is None:
            continue
        p.stderr_total = stderr_of(cov_total[i, i])
        if p.stderr_total is not None and p.stderr_total < p.stderr:
            p.stderr_total = p.stderr


#: the group of idle rows: never removed by the jackknife (every calibration has its idle baseline)
IDLE_GROUP = "(idle)"
#: rows every replicate keeps (measured once, so they belong to no repeat)
KEEP_GROUP = "(once)"


def workload_groups(df) -> np.ndarray:  # noqa: ANN001 - a samples table
    """Every row's workload (its repeats and clock pairs together), idle rows :data:`IDLE_GROUP`: the
    groups of the leave-one-workload-out prediction errors (a new workload uses units the campaign
    measured, so its error is that of one workload left out, not of a whole benchmark family)."""
    return row_groups(df, ("workload",))


def row_groups(df, by: Sequence[str] = ("kernel", "stresses", "workload")) -> np.ndarray:  # noqa: ANN001
    """The jackknife group of every row of a samples table: the benchmark kernel (``kernel`` column) or,
    without one, the unit the benchmark stresses (``stresses``), else the workload (the first column of
    ``by`` the table has; else each row alone); idle rows (role ``idle``) form :data:`IDLE_GROUP`."""
    col = next((c for c in by if c in df.columns), None)
    g = df[col].astype(str).to_numpy().copy() if col is not None else np.array([str(i) for i in range(len(df))])
    if "role" in df.columns:
        g[(df["role"].astype(str) == "idle").to_numpy()] = IDLE_GROUP
    return g


def determined_combinations(cov: Covariance, values: dict[str, float], total: dict[str, float] | None = None,
                            corr_limit: float = 0.95, member_share: float = 0.1) -> list[dict]:
    """What the campaign determines where it does not separate parameters. The directions along which
    the standardized estimates are tied (eigenvectors of the correlation matrix with an eigenvalue below
    ``1 - corr_limit``: for two parameters, a correlation beyond ``corr_limit``) name the parameters that
    take part in them (a squared loading of at least ``member_share``); parameters that share such a
    direction form one group. For each group, the combination ``sum_i w_i p_i`` with the smallest relative
    uncertainty (the eigenvector of the group's correlation matrix with the smallest eigenvalue, in units
    of each parameter's standard error; weights scaled so that the largest is 1). Returns ``[{"parameters",
    "weights", "value", "stderr", "stderr_total"}]``: the file states these, and ``calib diff`` tests the
    combination instead of its members. Grouping by chains of pairwise correlations instead joined most
    of a power section into one group (every pair of a long chain is correlated, the ends are not), so
    nothing of it was tested. ``total``: the parameters' total standard errors, to scale the combination's
    total uncertainty by its members' (:func:`calib.core.params.transferred_total_se`)."""
    C = np.array(cov.matrix, float)
    names = list(cov.names)
    sd = np.sqrt(np.clip(np.diag(C), 0, None))
    ok = np.where(np.isfinite(sd) & (sd > 0) & np.all(np.isfinite(C), axis=1))[0]
    if len(ok) < 2:
        return []
    with np.errstate(invalid="ignore", divide="ignore"):
        R = C[np.ix_(ok, ok)] / np.outer(sd[ok], sd[ok])
    R = 0.5 * (R + R.T)
    lam, vec = np.linalg.eigh(R)
    links = []
    for k in np.where(lam < 1.0 - corr_limit)[0]:
        members = [int(i) for i in np.where(vec[:, k] ** 2 >= member_share)[0]]
        links += [(members[0], m) for m in members[1:]]
    out = []
    for comp in _linked_groups(sorted({i for pair in links for i in pair}), links):
        w_eval, w_vec = np.linalg.eigh(R[np.ix_(comp, comp)])
        v = w_vec[:, int(np.argmin(w_eval))]
        idx = [int(ok[i]) for i in comp]
        w = v / sd[idx]
        w = w / w[int(np.argmax(np.abs(w)))]
        sub = C[np.ix_(idx, idx)]
        se = float(np.sqrt(max(w @ sub @ w, 0.0)))
        tot = transferred_total_se(se, [sd[k] for k in idx], [(total or {}).get(names[k]) or None for k in idx])
        out.append({"parameters": [names[k] for k in idx],
                    "weights": {names[k]: float(x) for k, x in zip(idx, w)},
                    "value": float(sum(w[j] * values[names[k]] for j, k in enumerate(idx))),
                    "stderr": se, "stderr_total": tot})
    return out


def format_combination(weights: dict[str, float]) -> str:
    """``max_power_reg_w - 0.93 max_power_fds_w``."""
    parts = []
    for i, (n, w) in enumerate(weights.items()):
        sign = "-" if w < 0 else ("+" if i else "")
        mag = abs(w)
        parts.append(f"{sign} {'' if abs(mag - 1) < 5e-4 else f'{mag:.3g} '}{n}".strip())
    return " ".join(parts)


#: activities correlated at least this much over a campaign's training rows: the campaign does not
#: separate those units (the register file and fetch/decode/schedule, active with every instruction);
#: only the split the assumed access-rate curves impose tells them apart (figures: tests/benchmarks/code_figures.md)
COLLINEAR_ACTIVITY = 0.85
#: a MaxPower is an extrapolation the campaign does not determine when its relative total standard error
#: is more than this many times that of the unit's power at its highest measured access rate (the
#: quantity the data do fix) and above :data:`UNDETERMINED_REL`
EXTRAPOLATION_RATIO = 3.0
UNDETERMINED_REL = 0.1
#: a MaxPower (or Const_SM) is published as determined when its value +/- 2 total standard errors lies
#: within +/- 10 % of it (the precision users publish per unit at, with 95 % confidence): above this total
#: relative error the file names it undetermined to that precision (:func:`_imprecise_quantities`). At 10 %
#: a value of 8-10 % total error passes and misses its truth by more than 10 % one time in four or five
#: (20 seeds: gtx280 const 7 of 20, titanx_nonadd fp 5 of 20; tests/benchmarks/identify_results.md)
PUBLISH_REL = 0.05


def collinear_units(act: dict[str, np.ndarray], limit: float = COLLINEAR_ACTIVITY) -> list[list[str]]:
    """Groups of units whose activities (access rates over the same rows) correlate at least ``limit``
    (pairs joined into groups)."""
    us = [u for u, a in act.items() if np.nanstd(a) > 0]
    links = [(a, b) for i, a in enumerate(us) for b in us[i + 1:] if np.corrcoef(act[a], act[b])[0, 1] >= limit]
    return [g for g in _linked_groups(us, links) if len(g) > 1]


def _linked_groups(items: Sequence, links: Sequence[tuple]) -> list[list]:
    """The groups of ``items`` that the pairs ``links`` join (transitively), each in the order of ``items``,
    in the order of their first members."""
    root = {x: x for x in items}

    def find(x: Hashable) -> Hashable:
        while root[x] != x:
            x = root[x]
        return x

    for a, b in links:
        root[find(b)] = find(a)
    groups: dict = {}
    for x in items:
        groups.setdefault(find(x), []).append(x)
    return list(groups.values())


def power_at_ar(form: str, values: Mapping[str, float], unit: str, ar: float) -> tuple[float, dict[str, float]]:
    """A unit's IPP power at access rate ``ar`` (MaxPower x AR', W per SM or per chip) for its access-rate
    function ``form`` and parameter ``values``, and its gradient over those parameters."""
    return unit_power(values, unit, form, ar)


def quantity_value(section, q: dict) -> tuple[float, float | None, float | None] | None:  # noqa: ANN001
    """A determined quantity ``q`` of ``identifiability`` evaluated on ``section`` (its own file's or
    another's, e.g. the other side of ``calib diff``): (value, statistical, total standard error), or
    None when the section lacks what it needs. ``power_at_ar``: the unit's power at the quantity's access
    rate (delta method); a combination: ``sum_i w_i p_i``."""
    if q.get("kind") == "power_at_ar":
        u = q["unit"]
        st = section.structure.get("units") if isinstance(section.structure.get("units"), dict) else None
        if not st or u not in st or names.max_power(u) not in section.params:
            return None
        value, grad = power_at_ar(st[u]["ar_function"], section.values(), u, float(q["ar"]))
    else:
        grad = dict(q["weights"])
        if any(n not in section.params for n in grad):
            return None
        value = float(sum(x * section.value(n) for n, x in grad.items()))

    def se(cov) -> float | None:  # noqa: ANN001
        if cov is None or any(n not in cov.names for n in grad):
            return None
        m = cov.sub(list(grad))
        if not np.all(np.isfinite(m)):
            return None
        v = np.array(list(grad.values()))
        return float(np.sqrt(max(v @ m @ v, 0.0)))

    return value, se(section.covariance), se(section.covariance_total)


def _collinear_quantities(section) -> list[dict]:  # noqa: ANN001
    """The sums of the MaxPowers of units the campaign does not separate (``stats["collinear_units"]``)."""
    out = []
    for group in section.stats.get("collinear_units") or []:
        w = {names.max_power(u): 1.0 for u in group if names.max_power(u) in section.params}
        if len(w) < 2:
            continue
        q = {"kind": "combination", "parameters": list(w), "weights": w,
             "reason": f"activities of {', '.join(group)} correlated >= {COLLINEAR_ACTIVITY:g} over the campaign",
             "undetermined": list(w) + [names.ar_log_a(u) for u in group if names.ar_log_a(u) in section.params]}
        v = quantity_value(section, q)
        if v is not None and v[1] is not None:
            q.update(value=v[0], stderr=v[1], stderr_total=v[2] if v[2] is not None else v[1])
            out.append(q)
    return out


def _extrapolated_quantities(section, skip: set[str]) -> list[dict]:  # noqa: ANN001
    """Units whose MaxPower the campaign does not determine: its relative total standard error is above
    :data:`UNDETERMINED_REL` and :data:`EXTRAPOLATION_RATIO` times that of the unit's power at the highest
    measured access rate (the fitter's ``unit_power_at_measured_ar``): that power instead."""
    out = []
    for q in section.stats.get("unit_power_at_measured_ar") or []:
        u = q["unit"]
        n = names.max_power(u)
        if n in skip or n not in section.params or not q.get("value"):
            continue
        p = section.params[n]
        se_m = total_se(p)
        if se_m is None or not p.value:
            continue
        rel_m = se_m / abs(p.value)
        rel_q = (q["stderr_total"] if q.get("stderr_total") is not None else q["stderr"]) / abs(q["value"])
        if rel_m > UNDETERMINED_REL and rel_m > EXTRAPOLATION_RATIO * rel_q:
            und = [n] + ([names.ar_log_a(u)] if names.ar_log_a(u) in section.params else [])
            _, grad = power_at_ar(section.structure["units"][u]["ar_function"], section.values(), u, q["ar"])
            out.append(dict(q, undetermined=und, weights=grad, parameters=list(grad),
                            reason=f"{u} measured only up to AR {q['ar']:.3g}: its MaxPower (AR = 1) is an "
                                   f"extrapolation (+/- {100 * rel_m:.0f} %); its power at AR {q['ar']:.3g} is "
                                   f"measured (+/- {100 * rel_q:.1f} %)"))
    return out


def _imprecise_quantities(section, covered: set[str], values: dict[str, float],  # noqa: ANN001
                          total: dict[str, float]) -> list[dict]:
    """Units' MaxPowers (and Const_SM) that no entry names undetermined but whose total relative error is
    above :data:`PUBLISH_REL`: the campaign does not determine them to that precision. Their spread is
    model form (shapes, the split between units always active together, the structures that fit as
    well), which the statistical covariance does not hold, so the combinations the *total* covariance
    determines (:func:`determined_combinations` on it) that include one of them are published; a member
    with no such combination is named on its own (a one-member entry with its own value and errors).
    These entries carry ``basis: "total"``: two fits of one structure still compare their members one by
    one (the model form is the same in both; ``calib diff`` tests them with the statistical errors)."""
    poor = [n for n, p in section.params.items() if p.vary and n not in covered and poorly_determined(p, PUBLISH_REL)
            and (n.startswith("max_power_") or n == "const_sm_power_w")]
    if not poor:
        return []
    out = []
    if section.covariance_total is not None:
        for c in determined_combinations(section.covariance_total, values, total):
            und = [n for n in c["parameters"] if poorly_determined(section.params[n], PUBLISH_REL)]
            if set(poor) & set(und):
                q = dict(c, kind="combination", undetermined=und, basis="total",
                         reason="the total uncertainty (model form) ties these parameters")
                v = quantity_value(section, q)  # its statistical and total errors, as for every entry
                if v is not None and v[1] is not None:
                    q.update(value=v[0], stderr=v[1], stderr_total=v[2] if v[2] is not None else v[1])
                out.append(q)
                poor = [n for n in poor if n not in und]
    for n in poor:
        p = section.params[n]
        se = total_se(p)
        out.append({"kind": "combination", "parameters": [n], "weights": {n: 1.0}, "value": p.value,
                    "stderr": p.stderr, "stderr_total": se, "undetermined": [n], "basis": "total",
                    "reason": f"total relative error {100 * se / abs(p.value):.0f} % above "
                              f"{100 * PUBLISH_REL:.0f} %: not determined by this campaign to +/- {200 * PUBLISH_REL:.0f} %"
                    if se is not None and p.value else "no total standard error"})
    return out


def named_alone(q: dict) -> bool:
    """An identifiability entry that names one parameter undetermined on its own (basis "total", one
    member, :func:`_imprecise_quantities`): no combination to publish, show or test in its place. (A
    power-at-AR entry of a linear unit also has one weight, and is a determined quantity.)"""
    return q.get("basis") == "total" and len(q.get("parameters", [])) == 1


def poorly_determined(p, rel: float = UNDETERMINED_REL) -> bool:  # noqa: ANN001 - a Param
    """A parameter the file does not determine on its own: no total standard error, a value of 0, a total
    relative error above ``rel`` (default :data:`UNDETERMINED_REL`), or on a bound."""
    se = total_se(p)
    return se is None or not p.value or se / abs(p.value) > rel or bool(p.at_bound())


def quantity_label(q: dict) -> str:
    """``max_power_reg_w + max_power_fds_w`` or ``power of dp at AR 0.031``."""
    return (f"power of {q['unit']} at AR {q['ar']:.3g}" if q.get("kind") == "power_at_ar"
            else format_combination(q["weights"]))


def annotate_identifiability(section) -> None:  # noqa: ANN001 - a calib.core.params.Section
    """Put what the campaign determines where it does not determine the parameters one by one into the
    section's statistics as ``identifiability`` (nothing when every fitted parameter is determined):
    combinations along the near-null directions of the statistical covariance
    (:func:`determined_combinations`); for an IPP section also the sum of the MaxPowers of units whose
    activities the campaign does not separate (:func:`collinear_units`, recorded by the fitter as
    ``collinear_units``), and the power at the highest measured access rate of units whose MaxPower is
    an extrapolation (:func:`_extrapolated_quantities`). Each entry names its ``undetermined``
    parameters: the report and ``calib diff`` show the quantity, not those."""
    if section.covariance is None:
        return
    values = section.values()
    total = {n: p.stderr_total for n, p in section.params.items() if p.stderr_total is not None}
    combos = determined_combinations(section.covariance, values, total)
    for c in combos:
        c.setdefault("kind", "combination")
        # a member whose own total error is small is determined (its marginal standard error already
        # holds the correlation): only the poorly determined members are left to the combination
        c.setdefault("undetermined", [n for n in c["parameters"] if poorly_determined(section.params[n])])
    if section.model == "ipp":
        extra = _collinear_quantities(section)
        covered = {n for q in extra for n in q["undetermined"]}
        extra += _extrapolated_quantities(section, covered)
        combos = [c for c in combos if not set(c["parameters"]) <= {n for q in extra for n in q["undetermined"]}] + extra
        combos += _imprecise_quantities(section, {n for q in combos for n in q["undetermined"]}, values, total)
    combos = [c for c in combos if c["undetermined"] or c["kind"] != "combination" or c.get("reason")]
    for c in combos:
        c["label"] = quantity_label(c)
    if combos:
        section.stats["identifiability"] = combos
    else:
        section.stats.pop("identifiability", None)


def workload_rms(rel_errors: np.ndarray, groups: np.ndarray) -> tuple[float, int]:
    """Root mean square over workloads of each workload's mean relative error (a workload's rows share
    its discrepancy, so they count once); returns (RMS, number of workloads), (0, 0) without any."""
    e = pd.Series(np.asarray(rel_errors, float))
    g = np.asarray([str(x) for x in groups])
    ok = np.isfinite(e.to_numpy())
    if not ok.any():
        return 0.0, 0
    per = e[ok].groupby(g[ok]).mean().to_numpy()
    return float(np.sqrt(np.mean(per ** 2))), int(len(per))


def discrepancy_covariance(J: np.ndarray, shift: np.ndarray, groups: Sequence, keep: Sequence | None = None
                           ) -> np.ndarray:
    """Covariance of least-squares parameters when every group's rows share an unknown discrepancy:
    row ``i`` of group ``g`` is off by ``shift[i] x e_g``, ``e_g`` independent with unit variance (a
    random effect per workload). Through the fit: ``sum_g (A^-1 J_g^T s_g)(...)^T``, ``A = J^T J``.

    Unlike the jackknife, this does not read the group's own residual, which a parameter fixed by that
    group alone has absorbed (leverage 1): the unit whose only benchmark is off by 2 % is off too.
    ``keep`` groups (the idle baseline) carry none."""
    J = np.asarray(J, float)
    shift = np.asarray(shift, float)
    g = np.asarray([str(x) for x in groups])
    k = J.shape[1]
    scale = np.linalg.norm(J, axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    Js = J / scale
    Ainv = np.linalg.pinv(Js.T @ Js, rcond=1e-12)
    cov = np.zeros((k, k))
    skip = set(map(str, keep or ()))
    for lab in dict.fromkeys(g):
        if lab in skip:
            continue
        m = g == lab
        v = Ainv @ (Js[m].T @ shift[m]) / scale
        cov += np.outer(v, v)
    return cov


def evidence_log_weight(chisqr: float, nvarys: int, chisqr_0: float, nvarys_0: int, s2: float, n: int) -> float:
    """Log evidence of an alternative model structure relative to the chosen one, BIC's approximation
    (Schwarz 1978) at a given residual variance: ``-(chi2 - chi2_0) / (2 s2) - (p - p_0) ln(n) / 2``.
    ``s2`` is the residual variance that counts the model's discrepancy (the fit's reduced chi-square
    plus the workload discrepancy): at the reduced chi-square alone a structure that fits the noise
    slightly better would take all the weight although the model's own misfit is several times larger.
    ``chisqr`` in W^2 (sum of squared residuals), ``s2`` in W^2, ``n`` rows."""
    return -(chisqr - chisqr_0) / (2.0 * s2) - (nvarys - nvarys_0) * math.log(max(n, 2)) / 2.0


def model_average_covariance(shifts: Sequence[np.ndarray], log_weights: Sequence[float], k: int
                             ) -> tuple[np.ndarray, np.ndarray]:
    """Between-structure term of Bayesian model averaging (the structure uncertainty of the total
    covariance, module docstring): the alternative structures' parameter shifts from the chosen
    solution ``d_j`` (each of length ``k``), weighted by their posterior probabilities ``w_j = exp(l_j)
    / (1 + sum_i exp(l_i))`` (``l_j`` the log evidence relative to the chosen structure, whose own log
    weight 0 and shift 0 are in the sum: :func:`evidence_log_weight`), give ``sum_j w_j d_j d_j^T``
    (Buckland, Burnham & Augustin 1997; Hoeting et al. 1999, eq. 2: the variance of the averaged
    estimate around the chosen one). A structure the data reject weighs nothing, one as good as the
    chosen weighs as much (and half of its shift squared enters the variance of a two-structure
    choice). Returns (covariance k x k, weights w_j); no alternatives: zeros."""
    if not len(shifts):
        return np.zeros((k, k)), np.zeros(0)
    lw = np.concatenate([[0.0], np.asarray(log_weights, float)])  # the chosen structure first
    w = np.exp(lw - lw.max())
    w = (w / w.sum())[1:]
    D = np.asarray(shifts, float).reshape(len(shifts), k)
    return (D * w[:, None]).T @ D, w
