"""Report sections for kernels a user gives (``calib report --kernels``): the Ch. V category map
(:mod:`calib.model.advise`) and the host-device copy breakdown (:mod:`calib.model.transfer`), plus the
fitted link figures whenever the file has a ``transfer`` section."""

from __future__ import annotations

import html
import math
from typing import Any

import pandas as pd

from calib.core import names
from calib.core.params import ParameterFile


def _e(x: Any) -> str:
    return html.escape(str(x))


def _f(x: Any, sig: int = 4) -> str:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return _e(x)
    return "&ndash;" if not math.isfinite(v) else f"{v:.{sig}g}"


def _table(head: list[str], rows: list[list[str]]) -> str:
    return ("<table><thead><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>"
            + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows) + "</tbody></table>")


def category_map(pf: ParameterFile, kernels: pd.DataFrame) -> str:
    """HTML: one row per kernel with its category, the numbers that put it there, the suggestion and
    its predicted effect."""
    from calib.model.advise import advise

    rows = []
    for a in advise(pf, kernels):
        if a.category is None:
            rows.append([_e(a.kernel), "unknown", "", "", "", "", "", _e("missing: " + "; ".join(a.missing)), ""])
            continue
        q = a.quantities
        eff = "; ".join(f"{_e(e.action)}: {_e(e.note)}" if e.note else
                        f"{_e(e.change)}: time {100 * e.time_change:+.1f}%, energy {100 * e.energy_change:+.1f}%"
                        for e in a.effects) or "no change"
        rows.append([_e(a.kernel), f"{a.category} ({a.subcategory})", _f(q["n"]), _f(q["mwp_app_infin"]), _f(q["mwp_app"]),
                     _f(q["mwp_proc"]), f"{_f(q['mwp_bw'])} ({_f(q['mwp_bw'] / q['mwp_app'], 3)}&times;)",
                     _e(a.diagnosis) + "<br>" + _e(a.suggestion), eff])
    return ("<p>Hong's thesis, ch. V: sub-category I when N &lt; MWP_App_InfiN (too few warps), II otherwise; "
            "then MWP_Proc and MWP_BW against MWP_App, with the bandwidth boundary at 0.85 MWP_App. Category 10 is "
            "the best case (5 is the best of sub-category I). Effects are predicted with this file's timing and "
            "power models.</p>"
            + _table(["kernel", "category", "N", "MWP_App_InfiN", "MWP_App", "MWP_Proc", "MWP_BW (/MWP_App)",
                      "diagnosis and suggestion", "predicted effect"], rows))


def link_figures(pf: ParameterFile) -> str:
    """HTML: the fitted link (bandwidth, latency, energy per byte, link and host power)."""
    from calib.model.transfer import DIRECTIONS, HOST_MEMORY, link_power_w

    sec = pf["transfer"]

    def pv(name: str, scale: float = 1.0, sig: int = 4) -> str:
        p = sec.params.get(name)
        if p is None:
            return "&ndash;"
        err = f" &plusmn; {_f(scale * p.stderr_total, 2)}" if p.stderr_total is not None else ""
        return f"{_f(scale * p.value, sig)}{err}"

    rows = [[d, m, pv(names.copy_bandwidth(d, m), 1e-9), pv(names.copy_latency(d, m), 1e6),
             pv(names.copy_energy_per_byte(d), 1e12), _f(link_power_w(sec, d), 3), pv(names.copy_host_power(m), 1.0, 3)]
            for d in DIRECTIONS for m in HOST_MEMORY]
    return _table(["direction", "host memory", "bandwidth (GB/s)", "latency (&micro;s)", "board energy (pJ/B)",
                   "link power while streaming (W)", "host power while copying (W)"], rows) + (
        "<p>&plusmn;: total standard error (statistical and model discrepancy).</p>")


def kernel_copies(pf: ParameterFile, kernels: pd.DataFrame) -> pd.DataFrame:
    """:func:`calib.model.predict.predict_copies` of kernel rows whose unlisted counts (NaN) are 0."""
    from calib.model.predict import predict_copies

    return predict_copies(pf, kernels.fillna({c: 0.0 for c in kernels.columns if c.startswith("cnt_")}))


def copy_table(pf: ParameterFile, kernels: pd.DataFrame) -> str:
    """HTML: per kernel with copies, copy and kernel time and energy, ratio and savings."""
    b = kernel_copies(pf, kernels)
    rows = [[_e(r["workload"]), _e(r["host_memory"]), _f(r["bytes_h2d"] / 1e6), _f(r["bytes_d2h"] / 1e6),
             _f(1e3 * r["copy_time_s"]), _f(1e3 * r["kernel_time_s"]), _f(r["copy_compute_ratio"], 3),
             _f(r["copy_energy_j"]), _f(r["kernel_energy_j"]), _f(1e3 * r["overlap_time_saving_s"]),
             _f(1e3 * r["pinned_time_saving_s"])] for _, r in b.iterrows()]
    return _table(["kernel", "host memory", "MB in", "MB out", "copy ms", "kernel ms", "copy/compute",
                   "copy J (board)", "kernel J", "overlap saves ms", "pinned saves ms"], rows)


def sections(pf: ParameterFile, kernels: pd.DataFrame | None) -> list[tuple[str, str, str]]:
    """(anchor, title, HTML) of the sections this file and these kernels support."""
    out = []
    if kernels is not None and "timing" in pf:
        out.append(("categories", "Kernel categories (thesis ch. V)", category_map(pf, kernels)))
    if "transfer" in pf:
        body = link_figures(pf)
        if kernels is not None and any(c in kernels.columns for c in ("bytes_h2d", "bytes_d2h")):
            body += copy_table(pf, kernels)
        else:
            body += "<p>Give kernels with bytes_h2d/bytes_d2h (calib report --kernels) for their copy/compute breakdown.</p>"
        out.append(("copies", "Host-device copies", body))
    return out
