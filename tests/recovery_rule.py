"""The rule by which a fit's recovery of the virtual GPU's ground truth is judged (tests/test_recovery.py,
tests/test_ipp_fit.py): every parameter that has a truth is asserted, with a tolerance derived from the
uncertainty the parameter file states for it, never a blanket percentage.

- A parameter published with a total standard error: ``|fitted - truth| <= K x stderr_total``, K = 4.
  Honest Gaussian error bars exceed 4 of themselves with probability 6e-5, so over the ~130 parameters of
  the three presets a failure means the stated error is too small or the fit is broken, not bad luck.
- A parameter the file declares not separately determined (a member of a combination in
  ``fit.<section>.identifiability``): the combination is asserted the same way whenever every member has
  a truth, ``|sum_i w_i (fitted_i - truth_i)| <= K x stderr_total(combination)``; a member the file
  still publishes with its own total standard error is asserted by the first rule too. A parameter with a
  truth that the file publishes without any stated uncertainty, and outside every combination, fails.
- ``thermal_network.dominant_poles`` (a count, no error bar): a physical bound, 1 <= fitted <= truth (the
  campaign's steps cannot show more poles than the network has; slow poles its steps cannot separate
  merge into one).
- A parameter whose truth is 0 by design (``truth_from`` "design": a passively cooled board's fan power)
  and that the file does not publish: recovered (the model leaves out a term the GPU does not have); had the
  fitter dropped a term the GPU has, its truth would not be 0 and the second rule fails it.

Known failures (:data:`KNOWN_FAILURES`) are listed per preset with their cause, in one place: a test fails on
any other failure, and on a listed one once it is fixed (then remove it here).

:func:`judge` returns one row per assertion with ``k`` = |error| / stated uncertainty, so that a test can
report them all and the loose ones (k far below 1: the stated error much wider than the error it
describes) can be listed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

K = 4.0
COUNT_ROWS = ("thermal_network.dominant_poles",)

#: assertions that fail today on the standard campaign's fit of each preset (the committed reference fit
#: fitted/sim-<preset>.json and the same run in tests/test_recovery.py), each with its cause; the issues
#: named own the fix. Update here when a fitter or its uncertainty changes.
_AMD_POLES = ("the 900 s standard thermal steps let the network keep the truth's 3 poles (was 2 of 3), but the "
              "middle two (56 and 92 s on mi250x, 46 and 86 s on mi300x) are not separated by the clean integer "
              "sensor's crossings: the middle pole comes out at 26-30 s (-44 to -47 %), and the combination's stated "
              "total error is its statistical one (the chosen count is the largest tried, so no form spread), "
              "1.75-3.1 x the allowed 4 total stderr (issue 30; refitted with the hot spot by util_mem_pct, and "
              "with the smooth-toe unit curves, and with the one-SM thermal step: 2.5 x on mi250x). The AMD "
              "stand-ins log no fan, and theirs moves 0.45 -> 0.6-0.94 unseen in every step, so a fan-less fit "
              "is no linear network at the truth's one duty (thermal_results.md, session 11)")
KNOWN_FAILURES: dict[str, dict[str, str]] = {
    "mi250x": {"thermal_network.[1 r1_c_per_w + 0.775 r2_c_per_w + 0.628 r3_c_per_w + -0.000179 tau2_s]": _AMD_POLES},
    "mi300x": {
        # the activation was listed here (+50 %, the arbiter absorbed, 1.3 x the allowed error) until its truth
        # was stated in the model's terms (microbench/truth.py: the gated CUs' draw is part of a running
        # kernel's constant); it is now within its allowed error
        "power.max_power_dispatch_w": "the MI300X has a per-CU arbiter (the 0.4th power of the pipes' summed "
                                      "access rate) that the model's dispatch stage describes, but the fitter "
                                      "does not take the stage: an AMD campaign has no training mixes, and on "
                                      "every workload the left-out errors improve short of significance "
                                      "(Wilcoxon p 0.057; taken, the activation -1.4 % and held-out MAPE "
                                      "4.09 -> 3.38 %: identify_results.md, session 11; issue 29)",
        "thermal_network.[1 r1_c_per_w + 0.732 r2_c_per_w + 0.523 r3_c_per_w + -0.000193 tau2_s]": _AMD_POLES,
    },
}

#: presets whose held-out power MAPE (the campaign's application-like mixes at the default clocks) is over
#: the 3 % bound of tests/test_recovery.py, with the cause and the bound it must still keep
KNOWN_HELDOUT_FAILURES: dict[str, tuple[float, str]] = {
    "mi300x": (5.0, "the standard campaign's training rows prefer (by BIC, 739 against 777, and by leave-one-"
                    "workload-out error, 0.84 against 0.97 %) a structure with VALU_TRANS and LDS log and L2 as an "
                    "on/off constant (slope at its bound) that predicts the held-out mixes worse (4.1 %; the "
                    "physics' forms give 2.0 %): the MI300X's non-additive per-CU arbiter is not in the model, so no "
                    "selection on training rows avoids it (issue 29; found with the secant sigma, session 7)"),
}

#: failures of a committed reference fit that the current code no longer makes: the file predates a change
#: (regenerate it, then remove the entry)
STALE_REFERENCE_FAILURES: dict[str, dict[str, str]] = {}

#: presets whose access-rate forms differ from the physics' in a structure the file does not list among its
#: form alternatives (tests/test_recovery.py::test_access_rate_forms_follow_the_physics), with the cause
KNOWN_FORM_FAILURES: dict[str, str] = {}

#: the same for the quick campaign (tests/test_recovery.py::test_gtx580_quick_campaign_recovers_...)
KNOWN_QUICK_FAILURES: dict[str, dict[str, str]] = {
    "gtx580": {"thermal_network.r2_c_per_w": (
        "the quick campaign's thermal steps state the second pole's R too narrowly: 3.0-4.3 total stderr off on "
        "seeds 0, 2, 3 with the smooth-toe unit curves (4.1 on seed 0, 1.03 x the allowed 4), 1.2-3.2 on seeds "
        "0-2 with the curves before; where cross-validation keeps 1 or 2 poles (seeds 1, 4) the slow pole is "
        "7-30 off (issue 30)")},
}


@dataclass(frozen=True)
class Verdict:
    what: str                 # "section.param" or "[combination]"
    error: float              # fitted - truth
    allowed: float            # K x stated total standard error (or the bound's half-width)
    ok: bool
    rule: str

    @property
    def k(self) -> float:
        return abs(self.error) / (self.allowed / K) if self.allowed else math.inf


def judge(rows: Iterable[Mapping[str, Any]], combinations: Mapping[str, list[Mapping[str, Any]]]) -> list[Verdict]:
    """Verdicts for recovery ``rows`` (``parameter`` "section.name", ``truth``, ``fitted``, ``stderr_total``:
    a recovery report's rows) and the file's ``combinations`` per section (its identifiability entries)."""
    rows = list(rows)
    truth = {r["parameter"]: r for r in rows}
    member_of: dict[str, list[Mapping[str, Any]]] = {}
    out: list[Verdict] = []
    for sec, combos in combinations.items():
        for cb in combos:
            keys = [f"{sec}.{n}" for n in cb["parameters"]]
            for key in keys:
                member_of.setdefault(key, []).append(cb)
            if all(k in truth and truth[k]["fitted"] is not None for k in keys):
                err = sum(w * (truth[f"{sec}.{n}"]["fitted"] - truth[f"{sec}.{n}"]["truth"])
                          for n, w in cb["weights"].items())
                allowed = K * float(cb["stderr_total"])
                label = f"{sec}.[" + " + ".join(f"{w:.3g} {n}" for n, w in cb["weights"].items()) + "]"
                out.append(Verdict(label, err, allowed, abs(err) <= allowed, "combination within K stderr_total"))
    for r in rows:
        key = r["parameter"]
        if key in COUNT_ROWS:
            fitted, t = r["fitted"], r["truth"]
            out.append(Verdict(key, (fitted or 0) - t, t, fitted is not None and 1 <= fitted <= t,
                               "count: 1 <= fitted <= truth"))
            continue
        se = r.get("stderr_total")
        if r["fitted"] is None and r["truth"] == 0 and r.get("truth_from") == "design":
            out.append(Verdict(key, 0.0, 0.0, True, "zero by design and not published"))
            continue
        if r["fitted"] is not None and se:
            err = r["fitted"] - r["truth"]
            out.append(Verdict(key, err, K * se, abs(err) <= K * se, "within K stderr_total"))
        elif key not in member_of:
            out.append(Verdict(key, math.nan, 0.0, False,
                               "has a truth but neither a stated uncertainty nor a combination"))
    return out


def combinations_of(doc: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    """The identifiability entries of a parameter file (JSON document), by section."""
    return {sec: list(st.get("identifiability") or []) for sec, st in (doc.get("fit") or {}).items()}


def failures(verdicts: Iterable[Verdict]) -> list[str]:
    return [f"{v.what}: error {v.error:+.4g}, allowed {v.allowed:.4g} ({v.rule})" for v in verdicts if not v.ok]


def honest_bars(ratios: Iterable[float], median_band: tuple[float, float], within_min: float = 0.85
                ) -> tuple[bool, float, float]:
    """Whether pooled error bars are the right size, from each value's |fitted - truth| / stderr_total: at
    least ``within_min`` of them within 2 (the bars cover) and their median inside ``median_band`` (about
    0.67 for honest Gaussian errors: not wider than the errors). Returns (honest, share within 2, median)."""
    import statistics

    r = list(ratios)
    within = sum(x <= 2.0 for x in r) / len(r)
    med = statistics.median(r)
    return within >= within_min and median_band[0] <= med <= median_band[1], within, med
