"""Plain-text fit report of a parameter document (in the spirit of lmfit's ``fit_report``)."""

from __future__ import annotations

import math

from calib.core import params as P


def _fmt(x: float | None, spec: str = ".5g") -> str:
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, spec)


def fit_summary(doc: dict, max_warnings: int = 12) -> str:
    """Fit statistics, every parameter with value, standard error, unit and bound flags, and warnings."""
    lines = [f"device: {doc['device'].get('name')} ({doc['device'].get('sm_count')} SMs)"]
    for sec in P.SECTIONS:
        if sec not in doc:
            continue
        st = doc["fit"].get(sec, {})
        rm = next(((k, st[k]) for k in ("rmse_w", "rmse_c", "rmse_s") if st.get(k) is not None), None)
        rm_s = f", RMSE {rm[1]:.3g} {rm[0][5:].upper()}" if rm else ""
        lines.append(f"[[{sec}: model {doc[sec]['model']}]] {st.get('n_samples', '?')} samples{rm_s}, "
                     f"MAPE {_fmt(st.get('mape_pct'), '.3g')}%, R^2 {_fmt(st.get('r2'), '.5f')}")
        for name, p in P.section_params(doc, sec).items():
            if not p.vary:
                err = "(fixed)"
            elif p.stderr is None:
                err = "+/- ?"
            else:
                rel = f" ({100 * p.stderr / abs(p.value):.1f}%)" if p.value else ""
                err = f"+/- {p.stderr:.3g}{rel}"
            flag = f"  [at {p.at_bound()} bound]" if p.vary and p.at_bound() else ""
            lines.append(f"    {name:28s} = {p.value:12.6g} {p.unit:5s} {err}{flag}")
        ws = st.get("warnings", [])
        for w in ws[:max_warnings]:
            lines.append(f"    warning: {w}")
        if len(ws) > max_warnings:
            lines.append(f"    ... {len(ws) - max_warnings} more warnings in the parameter file")
    return "\n".join(lines)
