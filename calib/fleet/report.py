"""``calib fleet report``: a static HTML report of a fleet analysis.

``DIR/index.html`` with, per chip: the fleet's typical parameter set (median, robust SD, CV, between-GPU
tau, mean shrinkage), the outlier table (GPU, node, the parameters beyond the threshold with their z),
histograms per parameter (outlier GPUs in red, the median and +-threshold x scale marked), and a map
by node (one cell per GPU, coloured by its largest |z|). Figures are PNG files beside the page; the
tables are also written as CSV (``params.csv``, ``gpus.csv``, ``outliers.csv``).

With the streamed analysis (:func:`calib.fleet.analysis.analyze`) the per-GPU rows are never all in memory:
``gpus.csv`` (:class:`GpusTableWriter`) and the histograms (:class:`HistogramSink`) are written as each
parameter is analysed; the node map and the page need only the per-parameter and per-GPU summaries.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from calib.core.atomic import atomic_write_png, atomic_write_text, atomic_writer
from calib.fleet.analysis import COLUMNS, RESULT_COLUMNS, FleetAnalysis
from calib.fleet.dataset import slug
from calib.report_text import num_text

HIST_PER_FIGURE = 12
#: the node map labels every GPU's cell up to this many GPUs, beyond it only the outliers' cells
MAP_LABEL_MAX_GPUS = 256
#: the node map's height (inches) and number of row labels at most, so that its memory does not grow with
#: the fleet (measured at 1,000 GPUs on one node, 63 rows: 113 MiB of peak memory at the unbounded 32.7 in,
#: ~4 MiB per inch; capped at 16 in = 1,440 pixels at 90 dpi, so beyond ~1,400 rows, e.g. ~23,000 GPUs at 16
#: per row, a row is thinner than a pixel and the outlier table is the list to read)
MAP_MAX_HEIGHT_IN = 16.0
MAP_MAX_TICKS = 80


def _csv(df: pd.DataFrame) -> str:
    return df.to_csv(index=False, lineterminator="\n")


def write_tables(an: FleetAnalysis, out: Path) -> None:
    """``params.csv`` (one row per chip and parameter) and ``outliers.csv`` (one row per outlier GPU) in
    directory ``out``, each written atomically (``gpus.csv``: :class:`GpusTableWriter`)."""
    atomic_write_text(out / "params.csv", _csv(an.params))
    atomic_write_text(out / "outliers.csv", _csv(an.outlier_gpus()))


class GpusTableWriter:
    """``gpus.csv`` written one parameter at a time (a sink of :func:`calib.fleet.analysis.analyze`), the
    same bytes as :func:`write_tables` writes from the whole table; atomic: the file appears, complete,
    when the block ends without an exception. Use as a context manager."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._cm = None
        self._fh = None
        self._header = True

    def __enter__(self) -> GpusTableWriter:
        self._cm = atomic_writer(self.path)
        self._fh = self._cm.__enter__()
        return self

    def add(self, chip: str, key: str, rows: pd.DataFrame, summary: dict) -> None:
        self._fh.write(rows.to_csv(index=False, header=self._header, lineterminator="\n").encode("utf-8"))
        self._header = False

    def __exit__(self, kind, value, tb) -> bool:  # noqa: ANN001
        if self._header and kind is None:   # no parameter analysed: the header alone
            self._fh.write((",".join([*COLUMNS, *RESULT_COLUMNS]) + "\n").encode("utf-8"))
        return bool(self._cm.__exit__(kind, value, tb))


class HistogramSink:
    """The report's histograms drawn one parameter at a time (a sink of
    :func:`calib.fleet.analysis.analyze`): :data:`HIST_PER_FIGURE` parameters per PNG, per chip, in the
    order the parameters arrive; ``names[chip]`` lists the files. Only the values of the parameters of the
    figure being drawn are held. Call :meth:`finish` after the analysis."""

    def __init__(self, out: str | Path, threshold: float):
        self.out, self.threshold = Path(out), threshold
        self.names: dict[str, list[str]] = {}
        self._chip: str | None = None
        self._pending: list[tuple[str, np.ndarray, np.ndarray, dict]] = []

    def add(self, chip: str, key: str, rows: pd.DataFrame, summary: dict) -> None:
        if chip != self._chip:
            self._draw()
            self._chip = chip
        self._pending.append((key, rows["value"].to_numpy(float), rows["outlier_param"].to_numpy(bool), summary))
        if len(self._pending) == HIST_PER_FIGURE:
            self._draw()

    def finish(self) -> dict[str, list[str]]:
        self._draw()
        return self.names

    def _draw(self) -> None:
        if not self._pending:
            return
        chunk, self._pending = self._pending, []
        ncol = 4
        nrow = math.ceil(len(chunk) / ncol)
        fig = Figure(figsize=(4 * ncol, 2.6 * nrow))
        axes = fig.subplots(nrow, ncol, squeeze=False)
        for ax in axes.flat[len(chunk):]:
            ax.set_visible(False)
        for ax, (key, v, bad, p) in zip(axes.flat, chunk):
            lo, hi = float(np.min(v)), float(np.max(v))
            bins = np.linspace(lo, hi if hi > lo else lo + 1e-12, 31)
            ax.hist([v[~bad], v[bad]], bins=bins, stacked=True, color=["#4477aa", "#cc3311"],
                    label=["GPUs", "outlier"])
            ax.axvline(p["median"], color="k", lw=1)
            for sgn in (-1, 1):
                edge = p["median"] + sgn * self.threshold * p["z_scale"]
                if lo <= edge <= hi:
                    ax.axvline(edge, color="#cc3311", lw=0.8, ls="--")
            ax.set_title(f"{key} [{p['unit']}]", fontsize=8)
            ax.tick_params(labelsize=7)
        fig.tight_layout()
        names = self.names.setdefault(self._chip, [])
        name = f"hist-{slug(self._chip)}-{len(names) + 1}.png"
        atomic_write_png(self.out / name, fig, 80)
        names.append(name)


def _node_map(an: FleetAnalysis, chip: str, out: Path) -> str:
    # largest |z| per GPU over the screened parameters only (what can call a GPU an outlier)
    per = an.per_gpu[an.per_gpu["chip"] == chip].rename(columns={"gpu_slot": "slot"})
    per = per.sort_values("gpu_uuid", ignore_index=True)
    # astype(object) first: a fleet without task records has an all-missing (float) node column, and filling
    # it with a string raised pandas' FutureWarning ("incompatible value"), shown to every user
    per["node"] = per["node"].astype(object).where(per["node"].notna(), "?")
    nodes = sorted(per["node"].unique())
    width = int(min(16, max(per.groupby("node").size())))
    rows_per_node = {n: math.ceil((per["node"] == n).sum() / width) for n in nodes}
    total_rows = sum(rows_per_node.values())
    # bounded whatever the fleet's size: the height is capped and beyond MAP_LABEL_MAX_GPUS only the
    # outliers' cells are labelled (1,000 labelled cells cost ~110 MiB of peak memory)
    fig = Figure(figsize=(max(6.0, 0.55 * width + 2.5), min(0.5 * total_rows + 1.2, MAP_MAX_HEIGHT_IN)))
    ax = fig.subplots()
    label_all = len(per) <= MAP_LABEL_MAX_GPUS
    grid = np.full((total_rows, width), np.nan)
    labels = []
    r0 = 0
    vmax = max(an.threshold * 1.5, 1.0)
    for n in nodes:
        sub = per[per["node"] == n].sort_values(["slot", "serial"], na_position="last")
        z = sub["max_abs_z"].to_numpy(float)
        idx = np.arange(len(sub))
        grid[r0 + idx // width, idx % width] = np.minimum(z, vmax)
        for i, ser, slot, zi in zip(idx, sub["serial"], sub["slot"], z):
            if label_all or zi > an.threshold:
                ax.text(i % width, r0 + i // width, str(int(ser)) if pd.notna(ser) else str(slot), ha="center",
                        va="center", fontsize=6, color="white" if zi > an.threshold else "black")
        labels += [n] + [""] * (rows_per_node[n] - 1)
        r0 += rows_per_node[n]
    if total_rows > MAP_MAX_TICKS:   # every k-th row named: thousands of node names would be ink
        k = math.ceil(total_rows / MAP_MAX_TICKS)
        labels = [lab if r % k == 0 else "" for r, lab in enumerate(labels)]
    im = ax.imshow(grid, cmap="YlOrRd", vmin=0, vmax=vmax, aspect="auto")
    ax.set_yticks(range(total_rows), labels, fontsize=7)
    ax.set_xticks([])
    ax.set_title(f"largest |robust z| per GPU over the screened parameters, by node (label: serial or GPU "
                 f"slot{'' if label_all else ', outliers only'}); outlier above {an.threshold:g}",
                 fontsize=8)
    fig.colorbar(im, ax=ax, fraction=0.03)
    fig.tight_layout()
    name = f"nodes-{slug(chip)}.png"
    atomic_write_png(out / name, fig, 90)
    return name


def _table(df: pd.DataFrame, cols: list[str]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(num_text(v, '.4g') if isinstance(v, float) else str(v))}</td>"
                                    for v in r) + "</tr>" for r in df[cols].itertuples(index=False))
    return f"<table><tr>{head}</tr>{body}</table>"


def write_report(an: FleetAnalysis, out: str | Path, title: str = "GPU fleet calibration",
                 extra_html: str = "", progress: Callable[[str, float], None] | None = None, *,
                 histograms: dict[str, list[str]]) -> Path:
    """Write the report of ``an`` into directory ``out``; returns the path of ``index.html``.
    ``histograms``: the figures a :class:`HistogramSink` drew during the analysis (chip -> file names).
    ``progress(stage, fraction)`` is called as the stages (``tables``, ``figures``, ``page``) go."""
    step = progress or (lambda stage, frac: None)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    step("tables", 0.0)
    write_tables(an, out)
    outliers = an.outlier_gpus()
    n_gpus = len(an.per_gpu)
    parts = [f"<h1>{html.escape(title)}</h1>",
             f"<p>{n_gpus} GPUs, {an.params['key'].nunique()} parameters; outlier threshold |robust z| &gt; "
             f"{an.threshold:g}; {len(outliers)} outlier GPU(s).</p>", extra_html]
    chips = sorted(an.params["chip"].unique())
    for i, chip in enumerate(chips):
        p = an.params[an.params["chip"] == chip]
        o = outliers[outliers["gpu_uuid"].isin(an.per_gpu.loc[an.per_gpu["chip"] == chip, "gpu_uuid"])]
        parts += [f"<h2>{html.escape(chip)}</h2>", "<h3>Outlier GPUs</h3>",
                  _table(o, ["gpu_uuid", "serial", "node", "session", "max_abs_z", "parameters"]) if len(o)
                  else "<p>none at this threshold</p>", "<h3>Map by node</h3>"]
        step("figures", i / len(chips))
        parts += [f'<img src="{_node_map(an, chip, out)}" alt="map by node">',
                  "<h3>Fleet-typical parameters and between-GPU spread</h3>",
                  "<p>median and robust SD (1.4826 MAD) over the GPUs; tau: between-GPU SD after removing the "
                  "typical measurement error; shrinkage: mean weight of the fleet in the pooled estimates.</p>",
                  _table(p, ["key", "unit", "n_gpus", "median", "robust_sd", "cv_pct", "median_stderr", "tau",
                             "mu", "mean_shrinkage", "n_outliers"]),
                  "<h3>Histograms per parameter</h3>"]
        parts += [f'<img src="{n}" alt="histograms">' for n in histograms.get(chip, [])]
    step("figures", 1.0)
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
