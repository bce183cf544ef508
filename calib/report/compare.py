"""Compare two parameter files: what moved, and whether it moved more than the fits' uncertainty.

The test (a Wald z-test of the difference of two independent estimates):

    z = (new - old) / sqrt(se_old^2 + se_new^2),    p = 2 (1 - Phi(|z|))

A standard error estimated from few degrees of freedom (a residual variance over a handful of points,
recorded by the fitter as ``fit.<section>.stderr_dof``) is itself uncertain: a value 3x too small is
common with one or two degrees of freedom, and the normal p-value then flags noise. Such a difference is
referred to Student's t with the Welch-Satterthwaite degrees of freedom

    nu = (se_old^2 + se_new^2)^2 / (se_old^4 / nu_old + se_new^4 / nu_new)

(a side without a recorded count counts as many, i.e. the normal test when neither has one).

A side without a standard error counts as exact only when the parameter was fixed there (``vary``
false, e.g. a published value entered by hand); a fitted parameter without a usable one (on a bound,
not identifiable, or a degenerate standard error of exactly 0) cannot be tested and is reported as
"untested". When both sides are fixed, any change of value is a change. Identical values, and a
parameter on the same bound in both files, are "unchanged" and not tested. Because a parameter file has tens of parameters, the p-values are corrected for
multiple comparisons with Holm's step-down method, which controls the probability of flagging any
unchanged parameter (the family-wise error rate) at ``alpha`` (default 0.05): the k-th smallest of m
p-values is significant when it and every smaller one satisfy p_(j) <= alpha / (m - j + 1).

The standard errors are conditional on each file's model structure. A parameter whose meaning depends
on structure that differs between the files (e.g. the MaxPower of a unit whose access-rate function
changed from linear to log) is reported as "not comparable" rather than tested. The section's other
parameters are still tested, but with their total standard errors (``stderr_total``, which include the
fit's model-form alternatives and its discrepancy) instead of the statistical ones: the other units'
MaxPower values absorb the flipped unit's power (figures: tests/benchmarks/code_figures.md).

Exit-status policy of ``calib diff``: its --help (:mod:`calib.commands.diff`). Parameters added or removed
and model-structure changes count only with ``strict``: the fitter chooses the structure by BIC, so two fits
of the same device can differ there by noise.
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.stats import norm
from scipy.stats import t as student_t

from calib.core import names
from calib.core.metrics import mape
from calib.core.params import ParameterFile, Section
from calib.model.ipp import DISPATCH_KEY, LINEAR_SHARE, SHARED_KEY

#: device fields that identify the GPU and its software, reported first, in this order
IDENTITY_FIELDS = ("name", "uuid", "driver_version", "cuda_version", "sm_count", "clocks.core_mhz", "clocks.mem_mhz")
TEST_NAME = ("two-sided z-test of the difference, z = (new - old) / sqrt(se_old^2 + se_new^2) (Student's t with "
             "Welch-Satterthwaite degrees of freedom where a standard error rests on few), "
             "Holm-corrected over the tested parameters")


def welch_dof(se_old: float | None, se_new: float | None, dof_old: float | None, dof_new: float | None) -> float:
    """Welch-Satterthwaite degrees of freedom of ``se_old^2 + se_new^2`` (module docstring); inf when
    neither side's standard error rests on a recorded, finite number of degrees of freedom."""
    a, b = (se_old or 0.0) ** 2, (se_new or 0.0) ** 2
    den = sum(v * v / d for v, d in ((a, dof_old), (b, dof_new))
              if v > 0 and d is not None and math.isfinite(d) and d > 0)
    return (a + b) ** 2 / den if den > 0 else math.inf


def p_value(z: float, dof: float = math.inf) -> float:
    """Two-sided p-value of ``z``: normal, or Student's t with ``dof`` degrees of freedom."""
    return float(2 * (norm.sf(abs(z)) if not math.isfinite(dof) else student_t.sf(abs(z), dof)))


@dataclass
class ParamChange:
    """One parameter present in both files."""

    section: str
    name: str
    unit: str
    old: float
    new: float
    se_old: float | None
    se_new: float | None
    verdict: str = ""            # significant | not significant | untested | not comparable | unchanged
    z: float | None = None
    p: float | None = None
    p_holm: float | None = None
    reason: str = ""
    dof: float | None = None     # Welch-Satterthwaite degrees of freedom of the test (None: normal)

    @property
    def key(self) -> str:
        return f"{self.section}.{self.name}"

    @property
    def change(self) -> float:
        return self.new - self.old

    @property
    def change_pct(self) -> float | None:
        return 100.0 * self.change / abs(self.old) if self.old else None


@dataclass
class Comparison:
    """Everything ``calib diff`` reports."""

    identity: list[tuple[str, Any, Any]] = field(default_factory=list)     # device identity changes
    device_other: list[tuple[str, Any, Any]] = field(default_factory=list)  # other device fields
    sections_added: list[str] = field(default_factory=list)
    sections_removed: list[str] = field(default_factory=list)
    structure: list[tuple[str, Any, Any]] = field(default_factory=list)
    params: list[ParamChange] = field(default_factory=list)
    added: list[tuple[str, str, float, str]] = field(default_factory=list)     # (section, name, value, unit)
    removed: list[tuple[str, str, float, str]] = field(default_factory=list)
    alpha: float = 0.05
    strict: bool = False

    @property
    def significant(self) -> list[ParamChange]:
        return [c for c in self.params if c.verdict == "significant"]

    @property
    def moved(self) -> bool:
        """Whether ``calib diff`` exits with status 3 (see the module docstring)."""
        if self.significant or self.sections_added or self.sections_removed:
            return True
        if self.strict:
            return bool(self.added or self.removed or self.structure
                        or any(c.verdict in ("untested", "not comparable") and c.new != c.old for c in self.params))
        return False

    def to_json(self) -> dict[str, Any]:
        """What ``calib diff --json`` writes (non-finite numbers become null there: calib.core.atomic.json_safe)."""
        return {
            "test": TEST_NAME, "alpha": self.alpha, "strict": self.strict, "moved": self.moved,
            "device_identity_changes": [{"field": f, "old": o, "new": n} for f, o, n in self.identity],
            "device_other_changes": [{"field": f, "old": o, "new": n} for f, o, n in self.device_other],
            "sections_added": self.sections_added, "sections_removed": self.sections_removed,
            "structure_changes": [{"field": f, "old": o, "new": n} for f, o, n in self.structure],
            "parameters": [{"parameter": c.key, "unit": c.unit, "old": c.old, "new": c.new, "se_old": c.se_old,
                            "se_new": c.se_new, "change": c.change, "change_pct": c.change_pct, "z": c.z,
                            "p": c.p, "p_holm": c.p_holm, "dof": c.dof, "verdict": c.verdict,
                            "reason": c.reason}
                           for c in self.params],
            "added": [{"parameter": f"{s}.{n}", "value": v, "unit": u} for s, n, v, u in self.added],
            "removed": [{"parameter": f"{s}.{n}", "value": v, "unit": u} for s, n, v, u in self.removed],
        }


def _flatten(d: dict, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        out.update(_flatten(v, key) if isinstance(v, dict) else {key: v})
    return out


def _device_changes(old: dict, new: dict) -> tuple[list, list]:
    fo, fn = _flatten(old), _flatten(new)
    ident = [(k, fo.get(k), fn.get(k)) for k in IDENTITY_FIELDS if fo.get(k) != fn.get(k)]
    other = [(k, fo.get(k), fn.get(k)) for k in sorted(set(fo) | set(fn))
             if k not in IDENTITY_FIELDS and fo.get(k) != fn.get(k)]
    return ident, other


def _unit_forms(section: Section) -> dict[str, str]:
    units = section.structure.get("units", {})
    if isinstance(units, list):  # DVFS layout: [{"name", "domain", "ar_form"}]
        return {u["name"]: u.get("ar_form", "linear") for u in units}
    return {u: spec.get("ar_function", "linear") for u, spec in units.items()}


#: a thermal network's parameters that belong to its ladder (:mod:`calib.core.names`: ``tau<i>_s``,
#: ``r<i>_c_per_w``, the direct term; the fan link's conductance and the heat into the outer node)
_POLE_PARAM = re.compile(rf"^(tau\d+_s|r\d+_c_per_w|{names.R_DIRECT}|fan_g_w_per_c|busy_heat_w)$")


def _structure_changes(sec: str, old: Section, new: Section) -> tuple[list[tuple[str, Any, Any]], dict[str, str]]:
    """Structure differences of one section and, per parameter name, why it is not comparable."""
    changes: list[tuple[str, Any, Any]] = []
    blocked: dict[str, str] = {}
    if old.model != new.model:
        changes.append((f"{sec}.model", old.model, new.model))
        for n in set(old.params) | set(new.params):
            blocked[n] = f"the {sec} model changed ({old.model} -> {new.model})"
        return changes, blocked
    fo, fn = _unit_forms(old), _unit_forms(new)
    for u in sorted(set(fo) | set(fn)):
        if fo.get(u) != fn.get(u):
            changes.append((f"{sec}.units.{u}.ar_function", fo.get(u), fn.get(u)))
            why = f"{u}'s access-rate function changed ({fo.get(u)} -> {fn.get(u)})"
            for n in names.unit_names(u):
                blocked[n] = why
    so, sn = old.structure, new.structure
    for key in ("sm_scaling", "sm_count"):
        if (key in so or key in sn) and so.get(key) != sn.get(key):
            changes.append((f"{sec}.{key}", so.get(key), sn.get(key)))
            why = f"{sec}.{key} changed ({so.get(key)} -> {sn.get(key)})"
            for n in set(old.params) & set(new.params):
                if n.startswith(("max_power_", "const_sm", "sm_beta", "activation")):
                    blocked.setdefault(n, why)
    # the IPP shared-activation term, the dispatch stage or the per-access share on in one fit and off in the
    # other (the data choose them, and seeds of one card differ there): the other estimates are conditional
    # on different models
    for key in (SHARED_KEY, DISPATCH_KEY):
        if (key in so or key in sn) and so.get(key) != sn.get(key):
            changes.append((f"{sec}.{key}", so.get(key), sn.get(key)))
    if (LINEAR_SHARE in old.params) != (LINEAR_SHARE in new.params):
        changes.append((f"{sec}.linear_share", LINEAR_SHARE in old.params, LINEAR_SHARE in new.params))
    # a thermal network with another pole count: its poles (tau_i, R_i, the direct term) are other
    # quantities (R1 of one pole is the sum of two), so they are not comparable; the rest is tested
    # with the total standard errors (the pole count is chosen from the data, and seeds can differ in it)
    if sec == "thermal_network" and so.get("poles") != sn.get("poles"):
        changes.append((f"{sec}.poles", so.get("poles"), sn.get("poles")))
        why = f"{sec}.poles changed ({so.get('poles')} -> {sn.get('poles')}): another network"
        for n in set(old.params) | set(new.params):
            if _POLE_PARAM.match(n):
                blocked.setdefault(n, why)
    for key in ("ref_clocks", "default_clocks"):
        if (key in so or key in sn) and so.get(key) != sn.get(key):
            changes.append((f"{sec}.{key}", so.get(key), sn.get(key)))
            if key == "ref_clocks":  # every W coefficient and voltage refers to the reference clocks
                for n in set(old.params) & set(new.params):
                    blocked.setdefault(n, f"{sec}.ref_clocks changed")
    return changes, blocked


def _se(p: Any, total: bool) -> float | None:
    """The standard error a parameter is tested with: the statistical one, or with ``total`` its
    ``stderr_total`` where the file has one; None for an exact (fixed, hand-entered) value."""
    if not (p.vary or p.stderr):
        return None
    from calib.fit.uncertainty import total_se

    return total_se(p) if total else p.stderr


def _quantities(sec: str, old: Section, new: Section, total: bool = False,
                blocked_units: set[str] = frozenset()) -> list[tuple[dict, str]]:
    """The determined quantities of either file (``stats["identifiability"]``, :mod:`calib.fit.uncertainty`)
    with the reason their undetermined members are not tested one by one, each evaluated on both files
    by :func:`calib.fit.uncertainty.quantity_value` with the old file's definition (its weights, its
    access rate), so both sides measure the same thing. A unit's power at an access rate is the same
    physical power whatever access-rate function each file gives the unit (for a unit whose function
    changed, ``blocked_units``, it is added from the fitter's ``unit_power_at_measured_ar``: its MaxPower
    is not comparable, its power where it was measured is); it is tested with the statistical standard
    errors when the structures agree and with the total ones when they differ (``total``)."""
    from calib.fit.uncertainty import named_alone, poorly_determined, quantity_label, quantity_value

    entries: list[dict] = []
    for side in (old, new):
        entries += [dict(q) for q in side.stats.get("identifiability") or []]
    for side in (old, new):
        for q in side.stats.get("unit_power_at_measured_ar") or []:
            if q.get("unit") in blocked_units:
                entries.append(dict(q, undetermined=[]))
    out = []
    seen: set[str] = set()
    for q in entries:
        kind = q.get("kind", "combination")
        if named_alone(q):
            continue  # a parameter imprecise on its own: tested as itself
        key = f"{kind}:{q.get('unit')}" if kind == "power_at_ar" else f"{kind}:{sorted(q.get('parameters', []))}"
        if key in seen:
            continue
        seen.add(key)
        label = "[" + (q.get("label") or quantity_label(q)) + "]"
        # a file written before the identifiability entries named their undetermined members: a member
        # that either file determines on its own (its total error small, e.g. the idle power, a 0.05 weight
        # in a near-null direction of beta and the activation power) is still tested one by one
        # a tie of the total uncertainty (model form) is the same in two fits of one structure: its members
        # are still tested one by one (with the statistical errors), the combination beside them
        und = [] if q.get("basis") == "total" else q.get("undetermined")
        if und is None:
            und = [n for n in q.get("parameters", [])
                   if any(n in side.params and poorly_determined(side.params[n]) for side in (old, new))]
        why = f"not determined on its own: the campaign fixes {label} (tested as such)"
        entry = {"parameters": list(und), "label": label, "kind": kind,
                 "unit": "W" if kind == "power_at_ar" else _unit_of(old if all(n in old.params for n in q["parameters"])
                                                                   else new, q["parameters"])}
        # a unit's power where it was measured is the same physical power whatever the forms; but with another
        # structure its estimate moves by more than the statistical error, so the totals then, as for the
        # parameters
        stat_only = kind == "power_at_ar" and not total
        vo, vn = quantity_value(old, q), quantity_value(new, q)
        if vo is not None and vn is not None:
            pick = (lambda v: v[1]) if (stat_only or not total) else (lambda v: v[2] if v[2] is not None else v[1])
            w = q.get("weights") or {}
            entry["old"] = {"value": vo[0], "stderr": pick(vo), "dof": None if total and not stat_only else _comb_dof(old, w)}
            entry["new"] = {"value": vn[0], "stderr": pick(vn), "dof": None if total and not stat_only else _comb_dof(new, w)}
            entry["stat_only"] = stat_only
        out.append((entry, why))
    return out


def declared_undetermined(sec: Section) -> dict[str, str]:
    """Parameters the fitter names undetermined (``stats["undetermined"]``: name -> the bound the data give
    or the quantity determined instead), e.g. a fan controller's gain and slew or the thermal network's host
    heat; for files written before that entry, the fan controller's own list
    (``structure["fan"]["controller"]["undetermined"]``)."""
    out = {str(k): str(v) for k, v in (sec.stats.get("undetermined") or {}).items()}
    fan = sec.structure.get("fan") if isinstance(sec.structure.get("fan"), dict) else {}
    ctl = fan.get("controller") if isinstance(fan.get("controller"), dict) else {}
    for n in ctl.get("undetermined") or []:
        out.setdefault(str(n), "see thermal_network.fan.controller.reason")
    return out


def _unit_of(sec: Section, names_: list[str]) -> str:
    units = {sec[n].unit for n in names_ if n in sec.params}
    return units.pop() if len(units) == 1 else "mixed"


def _dof(sec: Section, name: str) -> float | None:
    """Degrees of freedom of a parameter's standard error (``stats["stderr_dof"]``; None: many)."""
    d = (sec.stats.get("stderr_dof") or {}).get(name)
    return float(d) if isinstance(d, (int, float)) and d > 0 else None


def _comb_dof(sec: Section, w: dict[str, float]) -> float | None:
    """Degrees of freedom of a combination's standard error: the fewest of its members' (conservative)."""
    ds = [d for d in (_dof(sec, n) for n in w) if d is not None]
    return min(ds) if ds else None


def _test(ch: ParamChange, dof_old: float | None, dof_new: float | None) -> None:
    """Set ``z``, ``dof`` and ``p`` of one change from its two standard errors (module docstring)."""
    ch.z = (ch.new - ch.old) / math.hypot(ch.se_old or 0.0, ch.se_new or 0.0)
    nu = welch_dof(ch.se_old, ch.se_new, dof_old, dof_new)
    ch.dof = nu if math.isfinite(nu) else None
    ch.p = p_value(ch.z, nu)


def holm(pvalues: list[float]) -> list[float]:
    """Holm-adjusted p-values (same order as the input)."""
    p = np.asarray(pvalues, float)
    order = np.argsort(p)
    adj = np.empty(len(p))
    adj[order] = np.maximum.accumulate(np.minimum(1.0, (len(p) - np.arange(len(p))) * p[order]))
    return adj.tolist()


def compare(old: ParameterFile, new: ParameterFile, *, alpha: float = 0.05, strict: bool = False) -> Comparison:
    """Compare two (validated) parameter files."""
    if not 0 < alpha < 1:
        raise ValueError("alpha must be in (0, 1)")
    c = Comparison(alpha=alpha, strict=strict)
    c.identity, c.device_other = _device_changes(old.device, new.device)
    for sec in dict.fromkeys([*old, *new]):
        if sec in old and sec not in new:
            c.sections_removed.append(sec)
        elif sec in new and sec not in old:
            c.sections_added.append(sec)
        if sec not in old or sec not in new:
            continue
        st, blocked = _structure_changes(sec, old[sec], new[sec])
        c.structure += st
        # the forms differ: the estimates are conditional on different models (module docstring)
        total = any(f.endswith((".ar_function", ".sm_scaling", ".poles", ".shared_activation", ".linear_share"))
                    for f, _o, _n in st)
        why_total = "model structure changed: tested with the total standard errors" if total else ""
        po, pn = old[sec].params, new[sec].params
        blocked_units = {f.split(".")[-2] for f, _o, _n in st if f.endswith(".ar_function")}
        combos = _quantities(sec, old[sec], new[sec], total, blocked_units)
        undetermined = {n: why for cb, why in combos for n in cb["parameters"]}
        # parameters a fitter names undetermined on their own (a bound or the quantity determined instead)
        for side in (old[sec], new[sec]):
            for n, why in declared_undetermined(side).items():
                undetermined.setdefault(n, f"undetermined by the campaign: {why}")
        c.removed += [(sec, n, p.value, p.unit) for n, p in po.items() if n not in pn]
        c.added += [(sec, n, p.value, p.unit) for n, p in pn.items() if n not in po]
        for name, a in po.items():
            if name not in pn:
                continue
            b = pn[name]
            # a fixed parameter with a standard error is a measured input (e.g. the idle power a section is
            # referred to): tested with that; without one it is an exact value entered by hand
            ch = ParamChange(sec, name, b.unit, a.value, b.value, _se(a, total), _se(b, total))
            exact_a, exact_b = not a.vary and not a.stderr, not b.vary and not b.stderr
            if a.unit != b.unit:
                ch.verdict, ch.reason = "not comparable", f"unit changed ({a.unit} -> {b.unit})"
            elif name in blocked:
                ch.verdict, ch.reason = "not comparable", blocked[name]
            elif name in undetermined and a.value != b.value:
                ch.verdict, ch.reason = "untested", undetermined[name]
            elif a.value == b.value:
                ch.verdict, ch.reason = "unchanged", ("fixed in both files" if not a.vary and not b.vary else "")
            elif a.vary and b.vary and a.at_bound() and a.at_bound() == b.at_bound():
                ch.verdict, ch.reason = "unchanged", f"at its {a.at_bound()} bound in both files"
            elif exact_a and exact_b:
                ch.verdict, ch.reason = "significant", "fixed in both files: an exact value changed"
            elif (a.vary and not a.stderr) or (b.vary and not b.stderr):
                # a fitted parameter without a usable standard error: on a bound, not identifiable, or a
                # degenerate estimate (exactly 0, e.g. the mean of identical integer sensor readings)
                side = "old" if a.vary and not a.stderr else "new"
                se_side = a.stderr if side == "old" else b.stderr
                ch.verdict = "untested"
                ch.reason = (f"standard error 0 in the {side} file (the fit could not estimate its uncertainty)"
                             if se_side == 0 else f"no standard error in the {side} file (on a bound or not identifiable)")
            else:
                ch.reason = why_total
                _test(ch, _dof(old[sec], name) if a.vary and not total else None,
                      _dof(new[sec], name) if b.vary and not total else None)
            c.params.append(ch)
        for cb, _why in combos:
            if cb.get("old") is None:
                continue
            ch = ParamChange(sec, cb["label"], cb["unit"], cb["old"]["value"], cb["new"]["value"],
                             cb["old"]["stderr"], cb["new"]["stderr"],
                             reason="quantity the campaign determines" + (f"; {why_total}" if total and not cb.get("stat_only") else ""))
            stale = [n for n in cb["parameters"] if n in blocked]
            if stale:
                ch.verdict, ch.reason = "not comparable", blocked[stale[0]]
            elif ch.se_old and ch.se_new:
                _test(ch, cb["old"].get("dof"), cb["new"].get("dof"))
            else:
                ch.verdict, ch.reason = "untested", "no standard error of the combination in one of the files"
            c.params.append(ch)
    tested = [ch for ch in c.params if ch.p is not None]
    for ch, pa in zip(tested, holm([ch.p for ch in tested])):  # type: ignore[misc]
        ch.p_holm = pa
        ch.verdict = "significant" if pa <= alpha else "not significant"
    return c


# ------------------------------------------------------------------------------------------------
# text output
# ------------------------------------------------------------------------------------------------

def _f(x: Any, spec: str = ".5g") -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return format(x, spec) if math.isfinite(x) else str(x)
    if isinstance(x, (list, dict)):
        s = str(x)
        return s if len(s) <= 60 else s[:57] + "..."
    return str(x)


def format_text(c: Comparison, old_name: str, new_name: str, show_all: bool = True) -> str:
    """The comparison as the text ``calib diff`` prints: identity first, then structure, parameters."""
    out = [f"calib diff  old: {old_name}  new: {new_name}", ""]
    if c.identity:
        out.append("DEVICE IDENTITY CHANGED:")
        out += [f"  {k}: {_f(o)} -> {_f(n)}" for k, o, n in c.identity]
    else:
        out.append("device identity: unchanged (name, uuid, driver, CUDA, SM count, default clocks)")
    if c.device_other:
        out.append("other device fields changed: " + ", ".join(f"{k} ({_f(o)} -> {_f(n)})" for k, o, n in c.device_other[:8])
                   + (f" and {len(c.device_other) - 8} more" if len(c.device_other) > 8 else ""))
    out.append("")
    if c.sections_added or c.sections_removed:
        out += [f"section added: {s}" for s in c.sections_added] + [f"section removed: {s}" for s in c.sections_removed]
        out.append("")
    if c.structure:
        out.append("model structure changed:")
        out += [f"  {k}: {_f(o)} -> {_f(n)}" for k, o, n in c.structure]
        out.append("")
    out.append(f"test: {TEST_NAME}; family-wise alpha {c.alpha:g}")
    hdr = f"{'parameter':34s} {'old':>11s} {'+/-':>8s} {'new':>11s} {'+/-':>8s} {'change':>11s} {'%':>8s} {'z':>7s} {'p(Holm)':>8s}  verdict"
    out.append(hdr)
    order = sorted(c.params, key=lambda ch: (ch.verdict != "significant", ch.section, ch.p if ch.p is not None else 2.0)) \
        if not show_all else c.params
    for ch in order:
        if not show_all and ch.verdict in ("not significant", "unchanged"):
            continue
        pct = "-" if ch.change_pct is None else f"{ch.change_pct:+.2f}"
        mark = "**" if ch.verdict == "significant" else "  "
        out.append(f"{mark}{ch.key:32s} {_f(ch.old, '.5g'):>11s} {_f(ch.se_old, '.2g'):>8s} {_f(ch.new, '.5g'):>11s} "
                   f"{_f(ch.se_new, '.2g'):>8s} {ch.change:>+11.4g} {pct:>8s} {_f(ch.z, '+.2f'):>7s} "
                   f"{_f(ch.p_holm, '.2g'):>8s}  {ch.verdict}{': ' + ch.reason if ch.reason else ''}")
    if c.added or c.removed:
        out.append("")
        out += [f"added:   {s}.{n} = {v:.5g} {u}" for s, n, v, u in c.added]
        out += [f"removed: {s}.{n} = {v:.5g} {u}" for s, n, v, u in c.removed]
    out.append("")
    sig = c.significant
    n_tested = sum(1 for ch in c.params if ch.p is not None)
    if sig:
        out.append(f"{len(sig)} parameter(s) moved significantly: "
                   + ", ".join(f"{ch.key} ({ch.change:+.4g} {ch.unit}" + (f", z = {ch.z:+.1f})" if ch.z is not None else ")")
                               for ch in sig))
    else:
        counts = {v: sum(1 for ch in c.params if ch.verdict == v) for v in ("unchanged", "untested", "not comparable")}
        if c.params and all(ch.new == ch.old for ch in c.params) and not (c.added or c.removed or c.structure):
            n = sum(1 for ch in c.params if not ch.name.startswith("["))  # parameters, not combinations
            out.append(f"no parameter changed ({n} unchanged)")
        else:
            out.append(f"no parameter moved significantly ({n_tested} tested, {counts['unchanged']} unchanged, "
                       f"{counts['untested']} untested, {counts['not comparable']} not comparable)")
    return "\n".join(out)


def prediction_shift(old: ParameterFile, new: ParameterFile, df: Any, source: str) -> tuple[Any, list[str]]:
    """Predicted power of every row under both files: the table (workload, power_w if measured,
    old_w, new_w, change_w, change_pct) and the models' warnings."""
    import pandas as pd

    from calib.model.predict import predict_power

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a = predict_power(old, df, source)
        b = predict_power(new, df, source)
    notes = list(dict.fromkeys(str(w.message) for w in caught))
    out = pd.DataFrame({"workload": df["workload"].astype(str).to_numpy() if "workload" in df.columns
                        else [f"row {i + 1}" for i in range(len(df))]})
    if "power_w" in df.columns:
        out["power_w"] = df["power_w"].to_numpy(float)
    out["old_w"], out["new_w"] = a, b
    out["change_w"] = b - a
    out["change_pct"] = 100 * (b - a) / np.abs(a)
    return out, notes


def format_prediction_shift(t: Any, source: str, max_rows: int = 25) -> str:
    """Text table of how predictions (W) move between two parameter sets on one samples table, largest change first."""
    lines = [f"predictions for {source} ({len(t)} rows):"]
    ch = t["change_w"].to_numpy(float)
    k = int(np.nanargmax(np.abs(ch)))
    lines.append(f"  mean change {np.nanmean(ch):+.3g} W, mean |change| {np.nanmean(np.abs(ch)):.3g} W "
                 f"({np.nanmean(np.abs(t['change_pct'])):.3g}%), largest {ch[k]:+.3g} W at {t['workload'].iloc[k]}")
    if "power_w" in t.columns and t["power_w"].notna().any():
        m = t["power_w"].notna().to_numpy()
        meas = t["power_w"].to_numpy(float)[m]
        for col, label in (("old_w", "old"), ("new_w", "new")):
            e = mape(meas, t[col].to_numpy(float)[m])
            lines.append(f"  MAPE against measured power_w, {label} parameters: {e:.3g}% over {int(m.sum())} rows")
    shown = t.reindex(t["change_w"].abs().sort_values(ascending=False).index).head(max_rows)
    hdr = f"  {'workload':30s} " + ("{:>9s} ".format("measured") if "power_w" in t.columns else "") + \
        f"{'old W':>9s} {'new W':>9s} {'change W':>9s} {'%':>7s}"
    lines.append(hdr)
    for _, r in shown.iterrows():
        meas = f"{r['power_w']:9.4g} " if "power_w" in t.columns else ""
        lines.append(f"  {str(r['workload'])[:30]:30s} {meas}{r['old_w']:9.4g} {r['new_w']:9.4g} "
                     f"{r['change_w']:+9.3g} {r['change_pct']:+7.2f}")
    if len(t) > max_rows:
        lines.append(f"  ... {len(t) - max_rows} more rows (the {max_rows} largest changes are shown)")
    return "\n".join(lines)
