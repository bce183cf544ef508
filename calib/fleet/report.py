"""``calib fleet report``: a static HTML report of a fleet analysis.

``DIR/index.html`` with, per chip: the fleet's typical parameter set (median, robust SD, CV, between-GPU
tau, mean shrinkage), the outlier table (GPU, node, the parameters beyond the threshold with their z),
histograms per parameter (outlier GPUs in red, the median and +-threshold x scale marked), and a map
by node (one cell per GPU, coloured by its largest |z|). Figures are PNG files beside the page; the
tables are also written as CSV (``params.csv``, ``gpus.csv``, ``outliers.csv``).
"""

from __future__ import annotations

import html
import io
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from calib.core.atomic import atomic_write_bytes, atomic_write_text
from calib.fleet.analysis import FleetAnalysis

HIST_PER_FIGURE = 12
#: share of a chip's figure time spent on its node map (measured: 1.2-3.9 s against ~14 s of histograms
#: for 100-1,000 GPUs of 55 parameters), for the progress bar's ETA
MAP_SHARE = 0.15


def _save(fig, path: Path, dpi: int) -> None:  # noqa: ANN001
    """A figure as PNG at ``path``, written atomically (calib.core.atomic: links followed, devices refused)."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())


def _csv(df: pd.DataFrame) -> str:
    return df.to_csv(index=False, lineterminator="\n")


def write_tables(an: FleetAnalysis, out: Path) -> None:
    """``params.csv`` (one row per chip and parameter), ``gpus.csv`` (one row per GPU and parameter) and
    ``outliers.csv`` (one row per outlier GPU) in directory ``out``, each written atomically."""
    atomic_write_text(out / "params.csv", _csv(an.params))
    atomic_write_text(out / "gpus.csv", _csv(an.gpus))
    atomic_write_text(out / "outliers.csv", _csv(an.outlier_gpus()))


def _fmt(x: float) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{x:.4g}"


def _histograms(an: FleetAnalysis, chip: str, out: Path,
                done: Callable[[float], None] = lambda frac: None) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    params = an.params[an.params["chip"] == chip]
    g = an.gpus[an.gpus["chip"] == chip]
    names = []
    keys = list(params["key"])
    for start in range(0, len(keys), HIST_PER_FIGURE):
        chunk = keys[start:start + HIST_PER_FIGURE]
        ncol = 4
        nrow = math.ceil(len(chunk) / ncol)
        fig, axes = plt.subplots(nrow, ncol, figsize=(4 * ncol, 2.6 * nrow), squeeze=False)
        for ax in axes.flat[len(chunk):]:
            ax.set_visible(False)
        for ax, key in zip(axes.flat, chunk):
            sub = g[g["key"] == key]
            p = params[params["key"] == key].iloc[0]
            v = sub["value"].to_numpy(float)
            bad = sub["outlier_param"].to_numpy(bool)
            lo, hi = float(np.min(v)), float(np.max(v))
            bins = np.linspace(lo, hi if hi > lo else lo + 1e-12, 31)
            ax.hist([v[~bad], v[bad]], bins=bins, stacked=True, color=["#4477aa", "#cc3311"],
                    label=["GPUs", "outlier"])
            ax.axvline(p["median"], color="k", lw=1)
            for sgn in (-1, 1):
                edge = p["median"] + sgn * an.threshold * p["z_scale"]
                if lo <= edge <= hi:
                    ax.axvline(edge, color="#cc3311", lw=0.8, ls="--")
            ax.set_title(f"{key} [{p['unit']}]", fontsize=8)
            ax.tick_params(labelsize=7)
        fig.tight_layout()
        name = f"hist-{_safe(chip)}-{start // HIST_PER_FIGURE + 1}.png"
        _save(fig, out / name, 80)
        names.append(name)
        done((start + len(chunk)) / len(keys))
    return names


def _node_map(an: FleetAnalysis, chip: str, out: Path) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    g = an.gpus[an.gpus["chip"] == chip].copy()
    g["abs_z"] = g["z"].abs().where(g["screened"], 0.0)   # only what can call a GPU an outlier
    per = (g.groupby("gpu_uuid").agg(node=("node", "first"), slot=("gpu_slot", "first"), serial=("serial", "first"),
                                     max_abs_z=("abs_z", "max"))
           .reset_index())
    per["node"] = per["node"].fillna("?")
    nodes = sorted(per["node"].unique())
    width = int(min(16, max(per.groupby("node").size())))
    rows_per_node = {n: math.ceil((per["node"] == n).sum() / width) for n in nodes}
    total_rows = sum(rows_per_node.values())
    fig, ax = plt.subplots(figsize=(max(6.0, 0.55 * width + 2.5), 0.5 * total_rows + 1.2))
    grid = np.full((total_rows, width), np.nan)
    labels = []
    r0 = 0
    vmax = max(an.threshold * 1.5, 1.0)
    for n in nodes:
        sub = per[per["node"] == n].sort_values(["slot", "serial"], na_position="last")
        for i, (_, row) in enumerate(sub.iterrows()):
            r, c = r0 + i // width, i % width
            grid[r, c] = min(row["max_abs_z"], vmax)
            lab = str(int(row["serial"])) if pd.notna(row["serial"]) else str(row["slot"])
            ax.text(c, r, lab, ha="center", va="center", fontsize=6,
                    color="white" if row["max_abs_z"] > an.threshold else "black")
        labels += [n] + [""] * (rows_per_node[n] - 1)
        r0 += rows_per_node[n]
    im = ax.imshow(grid, cmap="YlOrRd", vmin=0, vmax=vmax, aspect="auto")
    ax.set_yticks(range(total_rows), labels, fontsize=7)
    ax.set_xticks([])
    ax.set_title(f"largest |robust z| per GPU over the screened parameters, by node (label: serial or GPU "
                 f"slot); outlier above {an.threshold:g}",
                 fontsize=8)
    fig.colorbar(im, ax=ax, fraction=0.03)
    fig.tight_layout()
    name = f"nodes-{_safe(chip)}.png"
    _save(fig, out / name, 90)
    return name


def _safe(text: str) -> str:
    from calib.fleet.dataset import slug

    return slug(text)


def _table(df: pd.DataFrame, cols: list[str]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = []
    for _, r in df.iterrows():
        cells = []
        for c in cols:
            v = r[c]
            cells.append(f"<td>{html.escape(_fmt(v) if isinstance(v, float) else str(v))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def write_report(an: FleetAnalysis, out: str | Path, title: str = "GPU fleet calibration",
                 extra_html: str = "", progress: Callable[[str, float], None] | None = None) -> Path:
    """Write the report of ``an`` into directory ``out``; returns the path of ``index.html``.
    ``progress(stage, fraction)`` is called as the stages (``tables``, ``figures``, ``page``) go."""
    step = progress or (lambda stage, frac: None)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    step("tables", 0.0)
    write_tables(an, out)
    outliers = an.outlier_gpus()
    n_gpus = an.gpus["gpu_uuid"].nunique()
    parts = [f"<h1>{html.escape(title)}</h1>",
             f"<p>{n_gpus} GPUs, {an.params['key'].nunique()} parameters; outlier threshold |robust z| &gt; "
             f"{an.threshold:g}; {len(outliers)} outlier GPU(s).</p>", extra_html]
    chips = sorted(an.params["chip"].unique())
    for i, chip in enumerate(chips):
        p = an.params[an.params["chip"] == chip]
        parts.append(f"<h2>{html.escape(chip)}</h2>")
        parts.append("<h3>Outlier GPUs</h3>")
        o = outliers[outliers["gpu_uuid"].isin(an.gpus.loc[an.gpus["chip"] == chip, "gpu_uuid"])]
        parts.append(_table(o, ["gpu_uuid", "serial", "node", "session", "max_abs_z", "parameters"]) if len(o)
                     else "<p>none at this threshold</p>")
        parts.append("<h3>Map by node</h3>")
        step("figures", i / len(chips))
        parts.append(f'<img src="{_node_map(an, chip, out)}" alt="map by node">')
        parts.append("<h3>Fleet-typical parameters and between-GPU spread</h3>")
        parts.append("<p>median and robust SD (1.4826 MAD) over the GPUs; tau: between-GPU SD after removing the "
                     "typical measurement error; shrinkage: mean weight of the fleet in the pooled estimates.</p>")
        parts.append(_table(p, ["key", "unit", "n_gpus", "median", "robust_sd", "cv_pct", "median_stderr", "tau",
                                "mu", "mean_shrinkage", "n_outliers"]))
        parts.append("<h3>Histograms per parameter</h3>")
        step("figures", (i + MAP_SHARE) / len(chips))
        hists = _histograms(an, chip, out,
                            lambda frac, i=i: step("figures", (i + MAP_SHARE + (1 - MAP_SHARE) * frac) / len(chips)))
        parts += [f'<img src="{n}" alt="histograms">' for n in hists]
    if an.notes:
        parts.append("<h3>Notes</h3><ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in an.notes) + "</ul>")
    style = ("body{font-family:sans-serif;margin:2em;max-width:110em} table{border-collapse:collapse;font-size:12px}"
             "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right} th{background:#eee} img{max-width:100%}")
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{style}</style></head><body>{''.join(parts)}</body></html>\n")
    step("page", 0.0)
    index = out / "index.html"
    atomic_write_text(index, page)
    return index
