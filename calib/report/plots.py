"""The figures of the HTML report (matplotlib, Agg, no pyplot state).

Every figure function takes a :class:`Context` and returns a :class:`Figure` and a caption, or raises
:class:`Skip` with the reason the figure cannot be drawn (e.g. a parameter file without its data). The
page lists skipped figures with that reason, so a reader knows what is missing and why.

Powers in W, temperatures in degC, times in s, clocks in MHz.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.colors import PowerNorm
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from calib.core import names
from calib.core.metrics import mape, pct_errors
from calib.core.params import ParameterFile, Section
from calib.fit.ipp import EXCLUDED_ROLES as NOT_TRAINING
from calib.model.energy import dvfs_section
from calib.model.arfunc import LOG
from calib.model.ipp import DISPATCH_KEY, components as ipp_components, design as ipp_design, with_dispatch_activity
from calib.core.samples import ACT_PREFIX
from calib.core.units import mem_intensity
from calib.report.compare import declared_undetermined

#: colours of the sample roles (training, sweeps, held-out, ...), colour-blind safe (Okabe-Ito)
ROLE_COLOURS = {"idle": "#999999", "idle_kernel": "#666666", "unit": "#0072B2", "sm_sweep": "#CC79A7",
                "timing": "#56B4E9", "heldout": "#E69F00", "dvfs": "#009E73", "thermal": "#D55E00", "": "#0072B2"}
ROLE_LABELS = {"idle": "idle", "idle_kernel": "launch-only kernel", "unit": "unit benchmark (training)",
               "sm_sweep": "active-SM sweep (training)", "timing": "timing benchmark (not in the power fit)",
               "heldout": "held-out workload", "dvfs": "DVFS grid", "": "sample"}
ROLE_ORDER = ("idle", "idle_kernel", "unit", "sm_sweep", "timing", "dvfs", "heldout")
#: above this many workloads, per-workload bar charts group workloads by benchmark family
MAX_BARS = 80


class Skip(Exception):
    """A figure cannot be drawn; the message says why."""


@dataclass
class Context:
    """What the figures draw from: the parameter file and, when found, its data."""

    params: ParameterFile
    samples: pd.DataFrame | None = None       # with power_w_pred added
    session: Any = None                        # calib.core.session.Session or None
    notes: list[str] = field(default_factory=list)
    floorplan: Any = None                      # a user's calib.model.floorplan.Floorplan (--floorplan) or None
    floorplan_source: str = ""                 # where it came from (its file name), for captions and errors
    _steps: Any = None

    @property
    def power(self) -> Section | None:
        return self.params.get("power")

    @property
    def ipp(self) -> bool:
        return self.params.model_of("power") == "ipp"

    def thermal_steps(self) -> list:
        if self._steps is None:
            from calib.segment import thermal_steps

            self._steps = thermal_steps(self.session) if self.session is not None else []
        return self._steps


# ------------------------------------------------------------------------------------------------
# data helpers
# ------------------------------------------------------------------------------------------------

def with_predictions(pf: ParameterFile, df: pd.DataFrame, notes: list[str]) -> pd.DataFrame:
    """``df`` plus ``power_w_pred`` (W) and its 90 % interval ``power_w_lo``/``power_w_hi``
    (:mod:`calib.model.intervals`); warnings of the models become notes on the page."""
    from calib.model.intervals import add_intervals
    from calib.model.predict import predict_power

    def predict(p: ParameterFile) -> pd.DataFrame:
        return df.assign(power_w_pred=predict_power(p, df, "samples table"))

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = add_intervals(pf, predict(pf), predict)
    notes += [m for m in dict.fromkeys(str(w.message) for w in caught) if m not in notes]
    if "role" not in out.columns:
        out["role"] = ""
    out["role"] = out["role"].fillna("").astype(str)
    return out


def _require_samples(ctx: Context) -> pd.DataFrame:
    if ctx.samples is None or len(ctx.samples) == 0:
        raise Skip("needs the samples table the parameters were fitted on (not found; give --samples or --session)")
    return ctx.samples


def default_rows(ctx: Context) -> pd.DataFrame:
    """Rows at the default clocks (the IPP fit's rows plus held-out ones), without the DVFS grid."""
    df = _require_samples(ctx)
    clocks = (ctx.power.structure.get("default_clocks") if ctx.power is not None else None) \
        or ctx.params.device.get("clocks") or {}
    sel = np.ones(len(df), bool)
    for col in ("core_mhz", "mem_mhz"):
        v = clocks.get(col)
        if v is not None and col in df.columns:
            sel &= np.isclose(df[col].to_numpy(float), float(v)) | df[col].isna().to_numpy()
    sel &= (df["role"] != "dvfs").to_numpy()
    if not sel.any():
        raise Skip(f"no row of the samples table is at the default clocks ({clocks.get('core_mhz')}/"
                   f"{clocks.get('mem_mhz')} MHz): is it the table these parameters were fitted on?")
    return df[sel]


def family(names: pd.Series) -> pd.Series:
    """Benchmark family of each workload name: the part before '/' (variant) and '@' (clocks)."""
    return names.astype(str).str.split("/").str[0].str.split("@").str[0]


def per_workload(df: pd.DataFrame, cols: list[str]) -> tuple[pd.DataFrame, bool]:
    """Mean of ``cols`` per workload (repeats merged), ordered by role then name; grouped by benchmark
    family (name before '/') when there are more than :data:`MAX_BARS` workloads. Returns (table, grouped);
    the table's ``label`` names its rows (a family with its number of rows in brackets)."""
    key = df["workload"].astype(str)
    grouped = key.nunique() > MAX_BARS
    if grouped:
        key = family(key)
    g = df.assign(_key=key).groupby("_key", sort=False)
    out = g[cols].mean()
    out["role"] = g["role"].first()
    out["n"] = g.size()
    out = out.reset_index().rename(columns={"_key": "workload"})
    out["_rank"] = out["role"].map(lambda r: ROLE_ORDER.index(r) if r in ROLE_ORDER else len(ROLE_ORDER))
    out["_name"] = out["workload"].map(natural_key)
    out = out.sort_values(["_rank", "_name"], kind="stable").drop(columns=["_rank", "_name"]).reset_index(drop=True)
    out["label"] = [f"{w} ({k})" for w, k in zip(out["workload"], out["n"])] if grouped else out["workload"]
    return out, grouped


def natural_key(name: str) -> tuple:
    """Sort key that puts 'dram/w4' before 'dram/w16' (numbers compare as numbers)."""
    return tuple((0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.findall(r"\d+|\D+", str(name)))


def _role_legend(where: Any, roles: list[str], loc: str = "lower right", ncol: int = 1) -> None:
    """A legend of the sample roles present, on an axes or (loc 'outside ...') below a figure."""
    from matplotlib.patches import Patch

    where.legend(handles=[Patch(color=ROLE_COLOURS.get(r, "#0072B2"), label=ROLE_LABELS.get(r, r))
                          for r in _in_role_order(roles)], loc=loc, fontsize=8, frameon=True, ncol=ncol)


def _in_role_order(roles: Any) -> list[str]:
    """The distinct ``roles`` present: :data:`ROLE_ORDER`'s first, then the others as they come."""
    roles = list(dict.fromkeys(roles))
    return [r for r in ROLE_ORDER if r in roles] + [r for r in roles if r not in ROLE_ORDER]


def _panel(ax: Any, xlabel: str | None = None, ylabel: str | None = None, title: str | None = None,
           grid: str = "both") -> None:
    """A panel's axis labels (those given), its title (9 pt) and the light grid (on ``grid``'s axes)."""
    ax.set(**{k: v for k, v in (("xlabel", xlabel), ("ylabel", ylabel)) if v is not None})
    if title is not None:
        ax.set_title(title, fontsize=9)
    ax.grid(axis=grid, alpha=0.3)


def _bar_height(n: int) -> float:
    return max(3.0, 0.17 * n + 1.4)


# ------------------------------------------------------------------------------------------------
# figures
# ------------------------------------------------------------------------------------------------

def fig_power_per_workload(ctx: Context) -> tuple[Figure, str]:
    """Measured vs predicted power (W) per workload, with the error panel. Returns (figure, caption)."""
    df = default_rows(ctx)
    band = "power_w_lo" in df.columns
    t, grouped = per_workload(df, ["power_w", "power_w_pred"] + (["power_w_lo", "power_w_hi"] if band else []))
    if grouped:  # a family's bar shows its worst member, so that grouping cannot hide an outlier
        err = 100 * (df["power_w_pred"] - df["power_w"]) / df["power_w"]
        worst = err.groupby(family(df["workload"])).agg(lambda e: e.loc[e.abs().idxmax()])
        t["err_pct"] = t["workload"].map(worst)
    else:
        t["err_pct"] = 100 * (t["power_w_pred"] - t["power_w"]) / t["power_w"]
    n = len(t)
    fig = Figure(figsize=(11, _bar_height(n)), layout="constrained")
    ax, ax2 = fig.subplots(1, 2, sharey=True, gridspec_kw={"width_ratios": [2.6, 1.2]})
    y = np.arange(n)
    cols = [ROLE_COLOURS.get(r, "#0072B2") for r in t["role"]]
    ax.barh(y, t["power_w"], color=cols, alpha=0.55, label="measured")
    ax.plot(t["power_w_pred"], y, "k|", markersize=9, markeredgewidth=2, label="predicted")
    if band:
        lo = (t["power_w_pred"] - t["power_w_lo"]).clip(lower=0)
        hi = (t["power_w_hi"] - t["power_w_pred"]).clip(lower=0)
        ax.errorbar(t["power_w_pred"], y, xerr=[lo, hi], fmt="none", ecolor="k", elinewidth=0.8, capsize=2)
    ax.set_yticks(y, t["label"], fontsize=7)
    ax.invert_yaxis()
    _panel(ax, "board power, W (bar: measured, black tick: predicted)", grid="x")
    _role_legend(fig, list(t["role"]), loc="outside lower center", ncol=6)
    ax2.barh(y, t["err_pct"], color=cols)
    lim = max(1.0, float(np.nanmax(np.abs(t["err_pct"]))) * 1.1)
    ax2.set_xlim(-lim, lim)
    ax2.axvline(0, color="k", lw=0.8)
    _panel(ax2, "prediction error, % of measured" + ("\n(worst row of the family)" if grouped else ""), grid="x")
    train = df[~df["role"].isin(NOT_TRAINING)]
    held = df[df["role"] == "heldout"]
    title = f"training rows: MAPE {mape(train['power_w'].to_numpy(float), train['power_w_pred'].to_numpy(float)):.2f}%"
    if len(held):
        title += f"; held-out rows: MAPE {mape(held['power_w'].to_numpy(float), held['power_w_pred'].to_numpy(float)):.2f}%"
    fig.suptitle(f"Measured vs predicted power per workload at the default clocks ({title})", fontsize=10)
    cap = ("Measured mean board power of every workload (bars, coloured by role) and the model's prediction "
           "(black ticks), with the prediction error in percent on the right.")
    if band:
        inside = ((df["power_w"] >= df["power_w_lo"]) & (df["power_w"] <= df["power_w_hi"])).to_numpy()
        heldm = (df["role"] == "heldout").to_numpy()
        cap += (" Whiskers: the 90 % prediction interval (parameter uncertainty and model discrepancy); "
                f"{100 * inside.mean():.0f}% of all rows" + (f" and {100 * inside[heldm].mean():.0f}% of the "
                f"{int(heldm.sum())} held-out rows" if heldm.any() else "") + " measured inside it.")
    if grouped:
        cap += (f" The {df['workload'].nunique()} workloads are grouped by benchmark family (number of rows in "
                "brackets): bars are family means, the error is the family's worst row.")
    return fig, cap


def fig_residuals(ctx: Context) -> tuple[Figure, str]:
    """Residual grid (W): predicted vs measured, residual vs predicted power, vs temperature (or row), and
    their histogram. Returns (figure, caption)."""
    df = _require_samples(ctx)
    meas, pred = df["power_w"].to_numpy(float), df["power_w_pred"].to_numpy(float)
    res = pred - meas
    cols = [ROLE_COLOURS.get(r, "#0072B2") for r in df["role"]]
    fig = Figure(figsize=(11, 7.5), layout="constrained")
    (a, b), (c, d) = fig.subplots(2, 2)
    a.scatter(meas, pred, c=cols, s=14, alpha=0.8)
    lo, hi = float(np.nanmin([meas.min(), pred.min()])), float(np.nanmax([meas.max(), pred.max()]))
    a.plot([lo, hi], [lo, hi], "k--", lw=0.8)
    _panel(a, "measured power, W", "predicted power, W", "predicted vs measured (dashed: equal)")
    _role_legend(a, list(df["role"]))
    b.scatter(pred, res, c=cols, s=14, alpha=0.8)
    b.axhline(0, color="k", lw=0.8)
    _panel(b, "predicted power, W", "residual (predicted - measured), W", "residual vs predicted power")
    if "temp_c" in df.columns and df["temp_c"].notna().any():
        c.scatter(df["temp_c"], res, c=cols, s=14, alpha=0.8)
        _panel(c, "die temperature during the window, degC", "residual, W",
               "residual vs temperature (a trend means leakage is mis-modelled)")
    else:
        c.scatter(np.arange(len(res)), res, c=cols, s=14, alpha=0.8)
        _panel(c, "row of the samples table", "residual, W", "residual by row")
    c.axhline(0, color="k", lw=0.8)
    groups = [(r, res[(df["role"] == r).to_numpy()]) for r in _in_role_order(df["role"])]
    bins = np.histogram_bin_edges(res[np.isfinite(res)], bins=30)
    d.hist([g for _, g in groups], bins=bins, stacked=True, color=[ROLE_COLOURS.get(r, "#0072B2") for r, _ in groups],
           label=[ROLE_LABELS.get(r, r) for r, _ in groups])
    d.axvline(0, color="k", lw=0.8)
    _panel(d, "residual (predicted - measured), W", "rows", "distribution of residuals")
    fig.suptitle(f"Residuals of the power model over all {len(df)} rows "
                 f"(RMSE {float(np.sqrt(np.nanmean(res ** 2))):.3g} W)", fontsize=10)
    return fig, ("Residual diagnostics over every row of the samples table, all clock configurations included. "
                 "Structure in the residuals (a slope, a curve, one role off to one side) points at a model term "
                 "the data do not support.")


def _breakdown_table(ctx: Context, df: pd.DataFrame) -> pd.DataFrame:
    if ctx.ipp:
        from calib.model.ipp import IppPowerModel

        bd = IppPowerModel.from_file(ctx.params).breakdown(df)
        bd = bd.rename(columns={"idle": "idle power", "activation": "activation", "const_sm": "constant per SM"})
        temp = df["power_w_pred"].to_numpy(float) - bd.sum(axis=1).to_numpy(float)
        if np.nanmax(np.abs(temp)) > 1e-9:
            bd["temperature (sigma x dT)"] = temp
        return bd
    from calib.model.dvfs import breakdown

    bd = breakdown(ctx.power, df)
    return bd.rename(columns=lambda c: c.removeprefix("unit_").removesuffix("_w").replace("_", " "))


def fig_breakdown(ctx: Context) -> tuple[Figure, str]:
    """Stacked predicted power (W) per unit for each workload. Returns (figure, caption)."""
    df = default_rows(ctx)
    if ctx.power is None:
        raise Skip("the parameter file has no power section")
    bd = _breakdown_table(ctx, df)
    comps = list(bd.columns)
    t, grouped = per_workload(pd.concat([df[["workload", "role", "power_w"]], bd], axis=1), ["power_w"] + comps)
    n = len(t)
    fig = Figure(figsize=(11, _bar_height(n)), layout="constrained")
    ax = fig.subplots()
    y = np.arange(n)
    import matplotlib

    cmap = matplotlib.colormaps["tab20"]
    left = np.zeros(n)
    for i, c in enumerate(comps):
        v = np.clip(t[c].to_numpy(float), 0, None)
        ax.barh(y, v, left=left, color=cmap(i % 20), label=c, edgecolor="white", linewidth=0.3)
        left += v
    ax.plot(t["power_w"], y, "k|", markersize=9, markeredgewidth=2, label="measured")
    ax.set_yticks(y, t["label"], fontsize=7)
    ax.invert_yaxis()
    _panel(ax, "power, W", grid="x")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="component")
    shares = t[comps].clip(lower=0).sum() / t[comps].clip(lower=0).sum().sum() * 100
    top = ", ".join(f"{c} {s:.0f}%" for c, s in shares.sort_values(ascending=False).head(4).items())
    fig.suptitle(f"Predicted power breakdown per workload by unit (largest shares over all workloads: {top})",
                 fontsize=10)
    cap = ("Predicted power of every workload split into the model's components, stacked (as Fig. 3 of the IPP "
           "paper); the black tick is the measured power.")
    if grouped:
        cap += " Workloads grouped by benchmark family (means; number of rows in brackets)."
    return fig, cap


def _act_cols(ctx: Context, df: pd.DataFrame) -> list[str]:
    spec = ctx.power.structure.get("units", {}) if ctx.power is not None else {}
    units = [u["name"] for u in spec] if isinstance(spec, list) else list(spec)
    cols = [ACT_PREFIX + u for u in units if ACT_PREFIX + u in df.columns]
    return cols or [c for c in df.columns if c.startswith(ACT_PREFIX)]


def fig_access_rates(ctx: Context) -> tuple[Figure, str]:
    """Heatmap of the access rates (activities) per workload and unit. Returns (figure, caption)."""
    df = default_rows(ctx)
    df = df[df["role"] != "idle"]
    cols = _act_cols(ctx, df)
    if not cols:
        raise Skip("the samples table has no act_<unit> columns")
    t, grouped = per_workload(df, cols)
    n = len(t)
    fig = Figure(figsize=(11, _bar_height(n)), layout="constrained")
    ax = fig.subplots()
    im = ax.imshow(t[cols].to_numpy(float), aspect="auto", cmap="viridis", norm=PowerNorm(0.4, 0.0, 1.0),
                   interpolation="nearest")
    ax.set_xticks(np.arange(len(cols)), [c[len(ACT_PREFIX):] for c in cols], rotation=0, fontsize=8)
    ax.set_yticks(np.arange(n), t["label"], fontsize=7)
    ax.xaxis.tick_top()
    if n * len(cols) <= 1500:
        for (i, j), v in np.ndenumerate(t[cols].to_numpy(float)):
            if v > 0:
                ax.text(j, i, f"{v:.2f}" if v >= 0.01 else f"{v:.0e}", ha="center", va="center", fontsize=5.5,
                        color="white" if v < 0.35 else "black")
    fig.colorbar(im, ax=ax, shrink=0.6, label="access rate (0 = unused, 1 = every issue slot)")
    fig.suptitle("Access rate of every unit per workload (IPP eq. 10, from the measured kernel time)", fontsize=10)
    cap = ("Access rate of each unit for each workload, as the fit used them (colour scale compressed so that small "
           "rates stay visible; numbers in the cells).")
    if grouped:
        cap += " Workloads grouped by benchmark family (means; number of rows in brackets)."
    return fig, cap


def fig_ar_functions(ctx: Context) -> tuple[Figure, str]:
    """Fitted access-rate functions of each unit over the measured points. Returns (figure, caption)."""
    if not ctx.ipp:
        raise Skip("drawn for the IPP power model only (this file's power model is "
                   f"{ctx.params.model_of('power') or 'absent'!r})")
    sec = ctx.power
    units = list(sec.structure["units"])
    vals = sec.values()
    n_sm = int(sec.structure["sm_count"])
    have_data = ctx.samples is not None and len(ctx.samples) > 0
    if have_data:
        df = default_rows(ctx)
        df = df[df["role"].isin(("unit", "idle_kernel", "sm_sweep", ""))]
        if "active_sms" in df.columns:
            df = df[df["active_sms"].isna() | np.isclose(df["active_sms"].to_numpy(float), n_sm)]
        bd = _breakdown_table(ctx, df) if len(df) else None
        # each unit's measured access rates, the dispatch stage's derived from the units that drive it
        have = {v: df[ACT_PREFIX + v].to_numpy(float) for v in units if ACT_PREFIX + v in df.columns}
        if all(v in have for v in (sec.structure.get(DISPATCH_KEY) or {}).get("units", ())):
            have = dict(with_dispatch_activity(sec.structure, have))
    ncol = 4
    nrow = math.ceil(len(units) / ncol)
    fig = Figure(figsize=(11, 2.5 * nrow + 0.6), layout="constrained")
    axes = np.atleast_1d(fig.subplots(nrow, ncol)).ravel()
    grid = np.logspace(-4, 0, 200)
    for ax, u in zip(axes, units):
        spec = sec.structure["units"][u]
        label = f"log, a = {vals[names.ar_log_a(u)]:.3g}" if spec["ar_function"] == LOG else "linear"
        if spec["ar_function"] == LOG and vals.get("ar_linear_share"):
            label += f", per access {vals['ar_linear_share']:.2g}"
        # the unit's power on all SMs (S(n) = 1) along the grid of access rates: the model's own term (the
        # dispatch stage's too, at the grid itself rather than derived from units this panel does not have)
        alone = {k: v for k, v in sec.structure.items() if k != DISPATCH_KEY}
        d = ipp_design({**alone, "units": {u: spec}}, {u: grid}, np.ones(len(grid)), np.full(len(grid), n_sm))
        ax.plot(grid, ipp_components(vals, d)[u], color="#D55E00", lw=2, label="fitted")
        if have_data and bd is not None and u in have and u in bd.columns:
            ar = have[u]
            on = ar > 0
            part = df["power_w"].to_numpy(float) - df["power_w_pred"].to_numpy(float) + bd[u].to_numpy(float)
            ax.scatter(ar[on], part[on], s=12, color="#0072B2", alpha=0.8, label="data (partial residual)")
        ax.set_xscale("log")
        ax.set_xlim(1e-4, 1.05)
        # fixed decade ticks: matplotlib's automatic log ticks (with minor ticks) dominate the drawing time
        ax.set_xticks([1e-4, 1e-3, 1e-2, 1e-1, 1.0], ["1e-4", "0.001", "0.01", "0.1", "1"])
        ax.xaxis.set_minor_locator(NullLocator())
        _panel(ax, title=f"{u}: {label}")
        ax.tick_params(labelsize=7)
    for ax in axes[len(units):]:
        ax.set_visible(False)
    axes[0].set_ylabel("unit power at all SMs, W")
    axes[0].legend(fontsize=7, loc="upper left")
    fig.supxlabel("access rate (log scale)", fontsize=9)
    fig.suptitle("Fitted access-rate functions: power of each unit vs its access rate", fontsize=10)
    cap = ("Each unit's fitted power curve MaxPower x AR'(AR) (all SMs active; chip-level units once), the linear "
           "or clamped-log form chosen by BIC.")
    if have_data:
        cap += (" Dots: measured power minus the model's prediction of everything else, for rows with all SMs "
                "active and the unit in use, so a dot on the curve is a row the unit's term explains.")
    else:
        cap += " Without the samples table only the curves are drawn."
    return fig, cap


def fig_thermal(ctx: Context) -> tuple[Figure, str]:
    """Temperature traces (C) of the heat/cool steps with the fitted rise/decay curves. Returns (figure, caption)."""
    if "thermal" not in ctx.params:
        raise Skip("the parameter file has no thermal section")
    from calib.model.thermal import ThermalModel

    tm = ThermalModel(ctx.params["thermal"])
    steps_meta = list(ctx.params["thermal"].structure.get("steps", []))
    traces = ctx.thermal_steps()
    illustrative = not traces and not steps_meta
    if illustrative:  # e.g. a published parameter set: show the curves at a few runtime powers
        idle_w = ctx.power.value("idle_power_w", 100.0) if ctx.power is not None else 100.0
        steps_meta = [{"runtime_power_w": f * idle_w, "mem_intensity": 0.0} for f in (0.25, 0.5, 1.0)]
    n = len(traces) if traces else len(steps_meta)
    ncol = 2
    nrow = math.ceil(n / ncol)
    fig = Figure(figsize=(11, 3.0 * nrow + 0.6), layout="constrained")
    axes = fig.subplots(nrow, ncol, squeeze=False).ravel()
    for k in range(n):
        ax = axes[k]
        meta = steps_meta[k] if k < len(steps_meta) else None
        if traces:
            s = traces[k]
            heat_end = float(s.heat_t[-1])
            ax.plot(s.heat_t, s.heat_temp_c, ".", ms=2, color="#0072B2", label="measured")
            ax.plot(heat_end + s.cool_t, s.cool_temp_c, ".", ms=2, color="#56B4E9")
            title = s.workload
            mi = mem_intensity(s.per_warp)
            p_rt = meta["runtime_power_w"] if meta else math.nan
            cool_t = s.cool_t
        else:
            heat_end, title = 5 * tm.rc_rise_s, ("illustrative step" if illustrative else f"step {k + 1}")
            p_rt, mi = meta["runtime_power_w"], meta["mem_intensity"]
            cool_t = np.linspace(0, 5 * tm.rc_decay_s, 200)
        th = np.linspace(0, heat_end, 300)
        if math.isfinite(p_rt):
            rise = tm.temperature_rise(th, p_rt, mi)
            ax.plot(th, rise, color="#D55E00", lw=2, label="model: rise (eq. 17), Max_temp (eq. 19)")
            ax.plot(heat_end + cool_t, tm.temperature_decay(cool_t, float(rise[-1])), color="#D55E00", lw=2, ls="--",
                    label="model: decay (eq. 18)")
        ax.axhline(tm.idle_temp_c, color="#999999", lw=0.8, ls=":")
        ax.axvline(heat_end, color="k", lw=0.6, alpha=0.5)
        _panel(ax, "time from the start of heating, s", "die temperature, degC",
               f"{title}: runtime power {p_rt:.0f} W, memory intensity {mi:.2g}")
        ax.tick_params(labelsize=7)
    for ax in axes[n:]:
        ax.set_visible(False)
    axes[0].legend(fontsize=7, loc="lower right")
    fig.suptitle(f"Temperature steps: RC rise {tm.rc_rise_s:.3g} s, RC decay {tm.rc_decay_s:.3g} s, "
                 f"idle {tm.idle_temp_c:.3g} degC", fontsize=10)
    cap = ("Heat-then-cool steps. Lines: what the parameter file predicts from the step's runtime power and "
           "memory intensity alone (rise to idle + Max_temp, then decay from the predicted end temperature).")
    if traces:
        cap += " Dots: the session's temperature readings (the vertical line is where the kernel stopped)."
    elif illustrative:
        cap += (" The file records no measured steps and no session was found: the curves are drawn for runtime powers "
                "of 25%, 50% and 100% of the idle power, memory intensity 0, to show the fitted dynamics.")
    else:
        cap += " The session was not found, so only the model curves are drawn."
    return fig, cap


def _optimizer_sweep(ctx: Context, rows: pd.DataFrame) -> dict[str, Any] | None:
    """The toolkit's active-SM optimizer (:func:`calib.model.energy.optimal_sms`, as `calib optimize`
    uses it) for the kernel of a sweep, from its all-SMs row; None without a timing section."""
    if "timing" not in ctx.params:
        return None
    try:
        from calib.model.energy import optimal_sms

        full = rows.loc[[rows["active_sms"].astype(float).idxmax()]].copy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return optimal_sms(ctx.params, full, one_block_per_sm=True)
    except Exception as e:  # noqa: BLE001 - another engineer's model: any failure means 'use the data alone'
        msg = f"active-SM optimizer not used ({type(e).__name__}: {e}); the figure uses the measured times"
        if msg not in ctx.notes:
            ctx.notes.append(msg)
        return None


def sm_sweep_optimum(ctx: Context) -> list[dict[str, Any]]:
    """Per swept kernel: active SMs, measured power, predicted power and relative perf/W; the optimum.

    With constant total work per launch (the campaign's sweep: one block per active SM), performance
    per watt is inversely proportional to energy per launch, ``time_s x power_w``; it is reported
    relative to all SMs active. When the parameter file has a timing model, the model curve over every
    SM count and the optimum are the toolkit's optimizer's (:func:`calib.model.energy.optimal_sms`:
    predicted time and power, GIPS/W sweep; the closed-form eq. 34 count is reported too). Otherwise the
    model's perf/W uses the predicted power and the measured time at the measured SM counts.
    """
    df = default_rows(ctx)
    sw = df[df["role"] == "sm_sweep"]
    if len(sw) == 0 or "active_sms" not in sw.columns or "time_s" not in sw.columns:
        raise Skip("the samples table has no active-SM sweep (rows with role sm_sweep, active_sms and time_s)")
    out = []
    for name, rows in sw.groupby(family(sw["workload"]), sort=True):
        g = rows.groupby("active_sms", as_index=False)[["power_w", "power_w_pred", "time_s"]].mean().sort_values("active_sms")
        n = g["active_sms"].to_numpy(float)
        e_meas = g["time_s"].to_numpy(float) * g["power_w"].to_numpy(float)
        full = int(np.argmax(n))
        ppw_meas = e_meas[full] / e_meas
        rec: dict[str, Any] = {"kernel": name, "active_sms": n, "power_w": g["power_w"].to_numpy(float),
                               "ppw_meas": ppw_meas, "best_meas_sms": float(n[int(np.argmax(ppw_meas))])}
        opt = _optimizer_sweep(ctx, rows)
        if opt is not None:
            t = opt["table"]
            ppw = t["gips_per_w"].to_numpy(float) / float(t["gips_per_w"].iloc[-1])
            rec.update({"model_sms": t["active_sms"].to_numpy(float), "model_power_w": t["power_w"].to_numpy(float),
                        "ppw_pred": ppw, "best_sms": float(opt["optimal_sms_sweep"]),
                        "best_gain_pct": 100 * (float(ppw[t["active_sms"].to_numpy() == opt["optimal_sms_sweep"]][0]) - 1),
                        "eq34_sms": float(opt["optimal_sms_eq34"]), "time_source": "timing model (calib optimize)"})
        else:
            e_pred = g["time_s"].to_numpy(float) * g["power_w_pred"].to_numpy(float)
            ppw = e_pred[full] / e_pred
            best = int(np.argmax(ppw))
            rec.update({"model_sms": n, "model_power_w": g["power_w_pred"].to_numpy(float), "ppw_pred": ppw,
                        "best_sms": float(n[best]), "best_gain_pct": 100 * (ppw[best] - 1), "eq34_sms": None,
                        "time_source": "measured"})
        out.append(rec)
    return out


def fig_active_sms(ctx: Context) -> tuple[Figure, str]:
    """Power (W) and perf/W against active SMs, with the model's optimum. Returns (figure, caption)."""
    if not ctx.ipp:
        raise Skip("drawn for the IPP power model only")
    from calib.model.ipp import sm_scale

    sec = ctx.power
    n_sm = int(sec.structure["sm_count"])
    beta = sec.value("sm_beta", 1.1)
    form = sec.structure.get("sm_scaling", "linear")
    try:
        sweeps = sm_sweep_optimum(ctx)
    except Skip as e:
        sweeps, why = [], str(e)
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    a, b = fig.subplots(1, 2)
    palette = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9"]
    if sweeps:
        for i, s in enumerate(sweeps):
            c = palette[i % len(palette)]
            a.plot(s["active_sms"], s["power_w"], "o", color=c, label=f"{s['kernel']} measured")
            a.plot(s["model_sms"], s["model_power_w"], "-", color=c, label=f"{s['kernel']} model")
            b.plot(s["active_sms"], s["ppw_meas"], "o", color=c, label=f"{s['kernel']} measured")
            b.plot(s["model_sms"], s["ppw_pred"], "-", color=c, label=f"{s['kernel']} model")
            k = int(np.flatnonzero(s["model_sms"] == s["best_sms"])[0])
            b.plot(s["model_sms"][k], s["ppw_pred"][k], "*", ms=16 - 3 * (i % 3), color=c, markeredgecolor="k",
                   label=f"{s['kernel']} optimum: {s['best_sms']:.0f} SMs ({s['best_gain_pct']:+.0f}% vs all SMs)")
        _panel(a, "active SMs", "board power, W",
               f"power vs active SMs ({form} scaling" + (f", beta = {beta:.3g})" if form == "log" else ")"))
        b.axhline(1.0, color="#999999", lw=0.8, ls=":")
        _panel(b, "active SMs", "perf/W relative to all SMs",
               "performance per watt vs active SMs (star: model optimum)")
        b.legend(fontsize=7, loc="lower right")
        a.legend(fontsize=7)
    else:
        n = np.linspace(1, n_sm, 200)
        a.plot(n, sm_scale(form, beta, n, n_sm), color="#D55E00", lw=2)
        _panel(a, "active SMs", "fraction of runtime power, S(n)",
               f"active-SM scaling of runtime power ({form}" + (f", beta = {beta:.3g})" if form == "log" else ")"))
        b.text(0.5, 0.5, "perf/W needs the active-SM sweep rows\n(" + why + ")", ha="center", va="center",
               fontsize=8, wrap=True, transform=b.transAxes)
        b.set_axis_off()
    fig.suptitle("Power and performance per watt vs number of active SMs", fontsize=10)
    if sweeps:
        if sweeps[0]["time_source"] == "measured":
            how = ("the model's perf/W uses the predicted power and the measured time (the parameter file has no "
                   "timing model)")
        else:
            how = ("the model curves and the starred optimum are the toolkit's optimizer's (as `calib optimize` "
                   "chooses: predicted time and power at every SM count, highest GIPS/W)")
        cap = ("Active-SM sweep (constant total work, one block per SM): measured power (dots) and the model (lines); "
               "right, performance per watt = 1 / (time x power) relative to all SMs, with the model's optimum "
               f"starred; {how}. "
               + "; ".join(f"{s['kernel']}: optimum {s['best_sms']:.0f} SMs"
                           + (f" (eq. 34: {s['eq34_sms']:.0f})" if s["eq34_sms"] is not None else "")
                           + f", measured best {s['best_meas_sms']:.0f}" for s in sweeps) + ".")
    else:
        cap = "The model's active-SM scaling S(n) of runtime power; " + why + "."
    return fig, cap


def fig_dvfs(ctx: Context) -> tuple[Figure, str]:
    """Fitted relative voltages against core and memory clock (MHz). Returns (figure, caption)."""
    sec = dvfs_section(ctx.params)
    if sec is None:
        raise Skip("the parameter file has no DVFS model (one clock configuration was measured)")
    from calib.model.dvfs import relative_voltages

    curves = relative_voltages(sec)
    errs = {n: p.stderr for n, p in sec.params.items()}
    have_grid = ctx.samples is not None and "core_mhz" in ctx.samples.columns and "mem_mhz" in ctx.samples.columns
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    axes = fig.subplots(1, 3 if have_grid else 2)
    ref = sec.structure.get("ref_clocks", {})
    for ax, dom in zip(axes, ("core", "mem")):
        pts = curves[dom]
        mhz = np.array([p[0] for p in pts])
        v = np.array([p[1] for p in pts])
        se = np.array([errs.get(pn) if errs.get(pn) is not None else np.nan for pn in sec.structure["voltage"][dom]["params"]])
        ax.errorbar(mhz, v, yerr=np.where(np.isfinite(se), se, 0), fmt="o-", color="#0072B2", capsize=3,
                    label="fitted (+/- 1 standard error)")
        # a voltage the grid barely constrains can have a standard error of hundreds: keep the curve readable
        span = max(0.1, float(np.ptp(v)))
        lo, hi = float(v.min()) - 0.4 * span, float(v.max()) + 0.4 * span
        ax.set_ylim(lo, hi)
        for x, y, e in zip(mhz, v, se):
            if np.isfinite(e) and (y - e < lo or y + e > hi):
                ax.annotate(f"+/- {e:.2g} (off scale)", (x, y), textcoords="offset points", xytext=(4, -12),
                            fontsize=7, color="#D55E00")
        ax.axvline(float(ref.get(f"{dom}_mhz", np.nan)), color="#999999", ls=":", lw=0.8)
        _panel(ax, f"{dom} clock, MHz", "voltage relative to the reference clock",
               f"{dom} domain (reference {ref.get(f'{dom}_mhz', float('nan')):g} MHz, dotted)")
        ax.legend(fontsize=7)
    cap = ("The DVFS model's latent relative voltages per clock level (NVML cannot read voltages; they are "
           "fitted, monotone in clock, 1 at the reference clocks).")
    if have_grid:
        df = ctx.samples
        ax = axes[2]
        g = df.assign(ape=np.abs(pct_errors(df["power_w"], df["power_w_pred"]))).groupby(
            ["core_mhz", "mem_mhz"])["ape"].mean().unstack()
        im = ax.imshow(g.to_numpy(float), origin="lower", aspect="auto", cmap="magma_r")
        ax.set_xticks(np.arange(g.shape[1]), [f"{c:g}" for c in g.columns], fontsize=7)
        ax.set_yticks(np.arange(g.shape[0]), [f"{c:g}" for c in g.index], fontsize=7)
        for (i, j), val in np.ndenumerate(g.to_numpy(float)):
            if np.isfinite(val):
                ax.text(j, i, f"{val:.1f}", ha="center", va="center", fontsize=6,
                        color="white" if val > np.nanmax(g.to_numpy(float)) * 0.6 else "black")
        ax.set(xlabel="memory clock, MHz", ylabel="core clock, MHz")
        ax.set_title("power MAPE (%) per clock configuration", fontsize=9)
        fig.colorbar(im, ax=ax, shrink=0.8)
        cap += " Right: mean absolute prediction error of every measured clock configuration."
    fig.suptitle("DVFS: voltage curves" + (" and error per clock configuration" if have_grid else ""), fontsize=10)
    return fig, cap


def fig_floorplan(ctx: Context) -> tuple[Figure, str]:
    """Steady die temperature (C) of the hottest workload on a floorplan, from the fitted per-unit power
    breakdown and the thermal network (:mod:`calib.model.floorplan`). Returns (figure, caption)."""
    if "thermal_network" not in ctx.params:
        raise Skip("the parameter file has no thermal_network section")
    if not ctx.ipp:
        raise Skip("the floorplan heat map needs the IPP power breakdown")
    from calib.model.floorplan import ipp_block_powers, ipp_floorplan, solver_for
    from calib.model.thermal_network import FosterNetwork, network_ambient_c

    df = default_rows(ctx)
    df = df[df["role"].astype(str) != "idle"] if "role" in df.columns else df
    if not len(df):
        raise Skip("no workload rows to place on the floorplan")
    row = df.loc[[df["power_w_pred"].astype(float).idxmax()]]
    user = ctx.floorplan is not None
    fp = ctx.floorplan if user else ipp_floorplan(ctx.power)
    total_w = float(row["power_w_pred"].iloc[0])
    bp = ipp_block_powers(ctx.params, fp, row, total_w=[total_w],
                          source=ctx.floorplan_source or "floorplan").iloc[0].to_dict()
    net = FosterNetwork.from_section(ctx.params["thermal_network"])
    amb = network_ambient_c(ctx.params["thermal_network"], net)
    solver = solver_for(net, fp, rows=96, cols=96)
    theta = solver.steady(bp)
    tmap = amb + solver.die_map(theta)
    fig = Figure(figsize=(11, 6.2), layout="constrained")
    ax, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.25, 1]})
    x0, x1, y0, y1 = solver.extent
    im = ax.imshow(tmap, origin="lower", extent=(x0 * 1e3, x1 * 1e3, y0 * 1e3, y1 * 1e3), cmap="inferno")
    from matplotlib.patches import Rectangle

    # name the chip-wide blocks of the generic floorplan; a user's blocks when few enough to read
    label = (lambda b: not b.name.startswith("sm")) if not user else (lambda b: len(fp.blocks) <= 40)
    for b in fp.blocks:
        ax.add_patch(Rectangle((b.left_m * 1e3, b.bottom_m * 1e3), b.width_m * 1e3, b.height_m * 1e3, fill=False,
                               lw=0.8 if label(b) else 0.3, ec="white", alpha=0.6))
        if label(b):
            ax.text((b.left_m + b.width_m / 2) * 1e3, (b.bottom_m + b.height_m / 2) * 1e3, b.name, ha="center",
                    va="center", fontsize=8, color="white")
    fig.colorbar(im, ax=ax, label="steady temperature, degC", shrink=0.85)
    ax.set(xlabel="x, mm", ylabel="y, mm")
    ax.set_title(f"{row['workload'].iloc[0]}: {total_w:.0f} W, die mean {tmap.mean():.1f} degC, "
                 f"max {tmap.max():.1f} degC", fontsize=9)
    # the step response of the fitted network, and its Cauer ladder
    t = np.linspace(0, 6 * max(net.tau_s), 400)
    ax2.plot(t, net.step_rise_c(t, 100.0), color="#D55E00", lw=2)
    _panel(ax2, "time after a 100 W step, s", "rise, degC")
    cauer = ctx.params["thermal_network"].structure.get("cauer", {})
    lines = [f"Foster: " + ", ".join(f"{r:.3g} C/W x {tau:.3g} s" for r, tau in zip(net.r_c_per_w, net.tau_s)),
             f"direct {net.r_direct_c_per_w:.3g} C/W",
             "Cauer: " + ", ".join(f"R{i + 1} {r:.3g} C/W, C{i + 1} {c:.3g} J/C" for i, (r, c) in
                                  enumerate(zip(cauer.get("r_c_per_w", []), cauer.get("c_j_per_c", []))))]
    loop = ctx.params["thermal_network"].structure.get("loop", {})
    if loop.get("max_loop_gain") is not None:
        lines.append(f"leakage loop gain up to {loop['max_loop_gain']:.2f}"
                     + ("; THERMAL RUNAWAY flagged" if loop.get("runaway") else ""))
    ax2.set_title("\n".join(lines), fontsize=7, loc="left")
    fig.suptitle(f"Floorplan heat map ({len(fp.blocks)} blocks, 96 x 96 grid) and the {net.poles}-pole thermal network",
                 fontsize=10)
    where = (f"the floorplan {ctx.floorplan_source} (a unit's power on the block named like it or its "
             "'<prefix>_<unit>' blocks, by area" if user else
             "a generic floorplan (die-area priors; per-SM units in strips of every SM, chip-wide units along the bottom")
    cap = (f"Left: the fitted per-unit power of the hottest workload placed on {where}; idle and activation power "
           "spread by area) and solved on a grid (silicon conduction, the network's direct resistance to its Cauer "
           "ladder). Right: the network's response to a 100 W step.")
    return fig, cap


def fig_fan(ctx: Context) -> tuple[Figure, str]:
    """The fitted fan controller (duty % against sensor temperature, with the logged duty of the thermal
    steps) and the network's temperature along each thermal step predicted from its power alone (the fan
    from the controller) against the readings (issue 30). Returns (figure, caption)."""
    sec = ctx.params.get("thermal_network")
    if sec is None:
        raise Skip("the parameter file has no thermal_network section")
    from calib.model.thermal_network import FosterNetwork, simulate_nodes

    net = FosterNetwork.from_section(sec)
    if not net.node_form:
        raise Skip("the thermal network was fitted without the fan model (Foster form)")
    steps = ctx.thermal_steps()
    if not steps:
        raise Skip("no thermal steps in the session (the session directory was not found)")
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    ax, ax2 = fig.subplots(1, 2)
    temps = np.concatenate([np.concatenate([s.heat_temp_c, s.cool_temp_c]) for s in steps]).astype(float)
    if net.controller is not None:
        grid = np.linspace(np.nanmin(temps) - 2.0, np.nanmax(temps) + 2.0, 200)
        ax.plot(grid, 100.0 * net.controller.target(grid), color="#D55E00", lw=2, label="fitted controller")
    logged = [(temp, fan) for s in steps  # the logged duty while heating and cooling (the controller acts in both)
              for temp, fan in ((s.heat_temp_c, s.heat_fan_pct), (s.cool_temp_c, s.cool_fan_pct))
              if fan is not None and len(fan) == len(temp)]
    for k, (temp, fan) in enumerate(logged):
        ax.plot(temp, fan, ".", ms=2, alpha=0.3, color="#0072B2", label="logged duty" if k == 0 else None)
    _panel(ax, "sensor temperature, degC", "fan duty, %",
           "fan controller" if net.controller is not None else "fan duty (no controller fitted)")
    ax.legend(fontsize=7)
    t_off = 0.0
    for k, s in enumerate(steps):
        t = np.concatenate([s.heat_t, s.cool_t + (s.heat_s or 0.0)])
        p = np.concatenate([s.heat_power_w, s.cool_power_w if s.cool_power_w is not None else []])
        y = np.concatenate([s.heat_temp_c, s.cool_temp_c])
        if len(p) != len(t) or len(t) < 2:
            continue
        busy = (t < (s.heat_s or 0.0)).astype(float)  # the step's kernel and how much memory it moves are known
        if s.heat_util_mem_pct is not None and s.cool_util_mem_pct is not None:  # the logged utilization
            u = pd.Series(np.concatenate([s.heat_util_mem_pct, s.cool_util_mem_pct])).ffill().fillna(0.0)
            mem = net.hot_spot_weights(u.to_numpy(float))
        else:
            mem = busy * float(mem_intensity(s.per_warp) > 0)
        pred = simulate_nodes(net, t, p, busy=busy, mem=mem)[0] + (s.start_temp_c - net.idle_temp_c)
        ax2.plot(t_off + t, y, color="0.6", lw=0.8, label="readings" if k == 0 else None)
        ax2.plot(t_off + t, pred, color="#D55E00", lw=1.2, label="predicted from power" if k == 0 else None)
        t_off += float(t[-1]) + 30.0
    _panel(ax2, "time, s (thermal steps back to back)", "temperature, degC",
           "thermal steps: the network from power alone")
    ax2.legend(fontsize=7)
    und = declared_undetermined(sec)
    slew_txt = f"slew {sec.value('fan_slew_pct_per_s', float('nan')):.3g} %/s"
    if "fan_slew_pct_per_s" in und:  # a bound, not a measurement (thermal_network.fan.controller.slew_reason)
        slew_txt = f"slew undetermined, {und['fan_slew_pct_per_s'].split(':')[0]}; drawn with the fitted " + slew_txt[5:]
    if "fan_gain_pct_per_c" in und:
        slew_txt = f"gain undetermined, {und['fan_gain_pct_per_c'].split(':')[0]}; " + slew_txt
    cap = ("Left: the fan duty the fitted controller aims at against the sensor temperature (line; "
           f"{slew_txt}) and the logged duty while heating and cooling (dots). "
           "Right: each thermal step's temperature predicted from its logged power (and its logged memory "
           "utilization, or whether its kernel moves memory: the hot spot), the fan following the controller, started from the step's pre-step temperature, against the readings.")
    return fig, cap


@dataclass(frozen=True)
class FigureSpec:
    key: str
    title: str
    draw: Callable[[Context], tuple[Figure, str]]


FIGURES: tuple[FigureSpec, ...] = (
    FigureSpec("power", "Measured vs predicted power", fig_power_per_workload),
    FigureSpec("breakdown", "Power breakdown by unit", fig_breakdown),
    FigureSpec("access-rates", "Access rates", fig_access_rates),
    FigureSpec("ar-functions", "Access-rate functions", fig_ar_functions),
    FigureSpec("thermal", "Temperature steps", fig_thermal),
    FigureSpec("floorplan", "Floorplan heat map and thermal network", fig_floorplan),
    FigureSpec("fan", "Fan controller and thermal steps predicted from power", fig_fan),
    FigureSpec("active-sms", "Active SMs and perf/W", fig_active_sms),
    FigureSpec("dvfs", "DVFS voltage curves", fig_dvfs),
    FigureSpec("residuals", "Residuals", fig_residuals),
)
