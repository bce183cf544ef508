"""What a fit recovered on a virtual GPU: truth vs fitted value per parameter, and held-out error.

The only consumer of :mod:`microbench.truth` besides the simulator's own tests.
"""

from __future__ import annotations

from typing import Any

from calib.core.params import ParameterFile
from calib.report_text import num_text
from microbench.truth import ar_forms, ground_truth


def recovery_report(preset: str, pf: ParameterFile, heldout_mape_pct: float | None,
                    heldout_rows: int = 0) -> dict[str, Any]:
    """Per-parameter truth, fitted value, its statistical and total standard errors and relative error (%),
    plus the held-out power MAPE (%)."""
    # the thermal constants are defined by the campaign's thermal steps (their windows and workloads)
    campaign = ((pf.provenance or {}).get("campaign") or {}).get("name")
    truth = ground_truth(preset, campaign)
    rows = []
    for key, t in truth.items():
        section, name = key.split(".", 1)
        sec = pf.get(section)
        p = sec[name] if sec is not None and name in sec else None
        fitted, se, se_total = (None, None, None) if p is None else (float(p.value), p.stderr, p.stderr_total)
        if fitted is None:
            err = None
        elif t["value"] == 0:
            err = None if fitted != 0 else 0.0
        else:
            err = 100.0 * (fitted - t["value"]) / abs(t["value"])
        rows.append({"parameter": key, "unit": t["unit"], "truth": t["value"], "fitted": fitted, "stderr": se,
                     "stderr_total": se_total,
                     "error_pct": err, "abs_error": None if fitted is None else fitted - t["value"],
                     "truth_from": t["how"]})
    if "timing" in pf:
        from microbench.timing_truth import timing_recovery_rows

        rows += timing_recovery_rows(preset, pf)
    if "thermal_network" in pf:
        from microbench.thermal_truth import thermal_network_recovery_rows

        rows += thermal_network_recovery_rows(preset, pf)
    forms_true = ar_forms(preset)
    power = pf.get("power")
    units = power.structure.get("units", {}) if power is not None else {}
    # a unit the physics lacks (the issue stage of a GPU without one) has no true form to agree with
    forms_fit = {u: v["ar_function"] for u, v in units.items() if u in forms_true}
    agree = [u for u in forms_fit if forms_true.get(u) == forms_fit[u]]
    return {"preset": preset, "parameters": rows, "heldout_mape_pct": heldout_mape_pct, "heldout_rows": heldout_rows,
            "ar_function_agreement": {"agree": len(agree), "of": len(forms_fit),
                                      "disagree": {u: {"truth": forms_true.get(u), "fitted": forms_fit[u]}
                                                   for u in forms_fit if u not in agree}}}


#: recovery rows that count something (no percentage: 1 pole found of 2 is not "-50.0 %")
COUNT_PARAMETERS = ("thermal_network.dominant_poles",)


def error_text(row: dict[str, Any]) -> str:
    """A recovery row's error for people: the relative error (%), or for a count the difference and what
    it counts ("-1 (1 of 2)")."""
    if row["parameter"] in COUNT_PARAMETERS and row.get("fitted") is not None:
        return f"{row['fitted'] - row['truth']:+.0f} ({row['fitted']:.0f} of {row['truth']:.0f})"
    return "-" if row.get("error_pct") is None else f"{row['error_pct']:+.1f}%"


def format_table(rep: dict[str, Any]) -> str:
    """The recovery report as a plain-text table."""
    f = num_text
    lines = [f"{'parameter':34s} {'truth':>11s} {'fitted':>11s} {'+/-':>9s} {'total':>9s} {'error':>12s}"]
    for r in rep["parameters"]:
        lines.append(f"{r['parameter']:34s} {f(r['truth'], '.4g'):>11s} {f(r['fitted'], '.4g'):>11s} "
                     f"{f(r['stderr'], '.2g'):>9s} {f(r.get('stderr_total'), '.2g'):>9s} {error_text(r):>12s}")
    a = rep["ar_function_agreement"]
    differs = ", ".join(f"{u} (truth {d['truth']}, fitted {d['fitted']})" for u, d in a["disagree"].items())
    lines.append(f"access-rate function (linear/log) agrees with the physics for {a['agree']} of {a['of']} units"
                 + (f"; differs: {differs}" if differs else ""))
    if rep["heldout_mape_pct"] is not None:
        lines.append(f"held-out workloads: power MAPE {rep['heldout_mape_pct']:.2f}% over {rep['heldout_rows']} rows")
    return "\n".join(lines)
