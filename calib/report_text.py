"""Plain-text fit report of a parameter document (in the spirit of lmfit's ``fit_report``)."""

from __future__ import annotations

import math

from calib.core.params import ParameterFile
from calib.fit.uncertainty import format_combination, named_alone


def num_text(x: float | None, spec: str = ".5g") -> str:
    """A number formatted with ``spec``; '-' for None, NaN and infinities."""
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, spec)


#: the RMSE of a section's fit statistics, by key, and its unit
RMSE_UNITS = {"rmse_w": "W", "rmse_c": "degC", "rmse_s": "s"}


def rmse_text(stats: dict) -> str:
    """'RMSE 0.0216 s' from a section's fit statistics ('' when it has none)."""
    for key, unit in RMSE_UNITS.items():
        if stats.get(key) is not None:
            return f"RMSE {stats[key]:.3g} {unit}"
    return ""


def device_line(device: dict) -> str:
    """'<name> (<n> SMs)'; a file fitted from a table without SM counts says so instead of '(1 SMs)'."""
    n = device.get("sm_count")
    name = device.get("name") or "unknown"
    if n is None or (n == 1 and str(name).startswith("unknown")):
        return f"{name}, SM count unknown (MaxPower per chip; --sm-count N sets it)"
    return f"{name} ({n} SM{'s' if n != 1 else ''})"


def fit_summary(pf: ParameterFile, max_warnings: int = 12) -> str:
    """Fit statistics, every parameter with value, standard error, unit and bound flags, and warnings."""
    lines = [f"device: {device_line(pf.device)}"]
    for sec, section in pf.items():
        st = section.stats
        rm_s = f", {rmse_text(st)}" if rmse_text(st) else ""
        lines.append(f"[[{sec}: model {section.model}]] {st.get('n_samples', '?')} samples{rm_s}, "
                     f"MAPE {num_text(st.get('mape_pct'), '.3g')}%, R^2 {num_text(st.get('r2'), '.5f')}")
        for name, p in section.params.items():
            if not p.vary:
                err = "(fixed)"
            elif p.stderr is None:
                err = "+/- ?"
            else:
                r = p.stderr / abs(p.value) if p.value else None
                rel = "" if r is None else (f" ({100 * r:.1f}%)" if r < 10 else " (>1000%)")
                err = f"+/- {p.stderr:.3g}{rel}"
                if p.stderr_total is not None and p.stderr_total > 1.0001 * p.stderr:
                    err += f", total +/- {p.stderr_total:.3g}"
            flag = f"  [at {p.at_bound()} bound]" if p.vary and p.at_bound() else ""
            lines.append(f"    {name:28s} = {p.value:12.6g} {p.unit:5s} {err}{flag}")
        for cb in st.get("identifiability") or []:
            if named_alone(cb):
                lines.append(f"    not determined: {next(iter(cb['weights']))} ({cb.get('reason', 'undetermined')})")
                continue
            lines.append(f"    determined: {format_combination(cb['weights'])} = {cb['value']:.6g} +/- {cb['stderr']:.3g} "
                         f"(total +/- {cb['stderr_total']:.3g}); the parameters one by one are not separated")
        ws = st.get("warnings", [])
        lines += [f"    warning: {w}" for w in ws[:max_warnings]]
        if len(ws) > max_warnings:
            lines.append(f"    ... {len(ws) - max_warnings} more warnings in the parameter file")
    return "\n".join(lines)
