"""``calib fleet analyze``: the fleet's typical parameters, its spread, partial pooling and outliers.

Per chip (GPUs of different chips are never pooled) and per parameter (``section.name``, fitted
parameters only, compared within one model form (:func:`calib.fleet.paramrows.param_rows`), plus the reference-workload predictions of section ``reference``), with y_i the GPU's
estimate and s_i its standard error:

- **typical value and spread**: the median and the robust standard deviation 1.4826 x MAD of the y_i
  (a few bad GPUs move neither); mean, SD and the coefficient of variation are reported too.
- **robust z**: z_i = (y_i - median) / sqrt(scale^2 + s_i^2), scale = max(1.4826 MAD, ``rel_floor`` x
  |median|), median and MAD over the GPUs of the same campaign when it has at least ``min_outlier_gpus``
  of them (a campaign's own bias is not a GPU defect), else over the fleet: the deviation against the fleet's spread and the GPU's own measurement error together (a
  poorly measured estimate is not an outlier for being far off; the floor keeps GPUs that agree to
  within 1 % of the value from calling noise an outlier). A GPU is an **outlier** when any parameter or
  reference prediction has |z| > ``threshold`` (default 6, see README for how it was chosen), counted only
  where at least ``min_outlier_gpus`` (10) GPUs share the parameter and its model form, and only on
  parameters with a physical unit (dimensionless curve shapes are degenerate with MaxPower: a fit may land
  in another mode on a normal GPU, see :data:`UNSCREENED_UNITS`).
- **partial pooling** (empirical Bayes, normal-normal): y_i ~ N(theta_i, s_i^2), theta_i ~ N(mu_c, tau^2),
  with one mean mu_c per campaign (those with at least ``min_outlier_gpus`` GPUs; the others share one), as
  for the z-scores: a campaign's own bias must not move another campaign's GPUs. tau^2 by restricted
  maximum likelihood over the non-outlier GPUs that have a standard error (the random-effects
  meta-analysis estimator, campaigns as fixed effects); mu_c = their precision-weighted mean in the
  campaign, weights 1 / (s_i^2 + tau^2) (``mu`` in the summary: the same over the fleet). Each GPU's
  estimate shrinks toward its mu_c by the **shrinkage**
  B_i = s_i^2 / (s_i^2 + tau^2): theta_i = mu_c + (1 - B_i)(y_i - mu_c), with standard error
  sqrt((1 - B_i) s_i^2 + B_i^2 var(mu_c)). The stated s_i are taken at their word: where a fit overstates
  them (seen: the thermal ``rho_c``), REML finds less between-GPU spread than there is and over-shrinks. A GPU with a short campaign (large s_i) borrows strength from the
  fleet (B_i near 1); a well-measured one keeps its own value (B_i near 0). GPUs flagged as outliers are
  not shrunk (the fleet prior does not describe them), nor are estimates without a standard error.

**Memory** (:func:`analyze`): the dataset is read one GPU file at a time and re-sorted by parameter into a
temporary directory (Arrow IPC files, one per chip, parameter and model form; at most :data:`SPILL_ROWS`
rows in memory), then each parameter is analysed alone: its rows (one per GPU) are the only per-GPU table
in memory, and what every parameter's rows feed (``gpus.csv``, histograms, the score) is written as it
goes by the caller's sinks. What is kept is one summary row per parameter, the outlier rows and one small
row per GPU (its largest |z|, for the node map). :func:`analyze_frame` is the same analysis on a table in
memory (tests, small fleets).
"""

from __future__ import annotations

import logging
import tempfile
import warnings
import urllib.parse
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq


log = logging.getLogger(__name__)

MAD_TO_SD = 1.4826
DEFAULT_THRESHOLD = 6.0
REL_FLOOR = 0.01
#: fewest GPUs a parameter (of one chip and model form) needs before any of them is called an outlier
MIN_OUTLIER_GPUS = 10
#: units of parameters that never call a GPU an outlier: dimensionless shape parameters (access-rate curve
#: shapes, the SM-scaling beta) are degenerate with their unit's MaxPower, so a fit may land in another
#: mode on a normal GPU (seen on the virtual fleet); they are still summarised and pooled
UNSCREENED_UNITS = frozenset({"1"})

COLUMNS = ["gpu_uuid", "gpu_name", "serial", "node", "gpu_slot", "session", "section", "name", "form", "value", "stderr",
           "unit", "vary", "campaign_name", "chip"]
#: columns of the result rows, after the dataset's: the parameter's key and what the analysis adds
RESULT_COLUMNS = ["key", "z", "outlier_param", "screened", "shrinkage", "pooled_value", "pooled_stderr"]
#: the per-GPU summary (:attr:`FleetAnalysis.per_gpu`)
PER_GPU_COLUMNS = ["gpu_uuid", "chip", "serial", "node", "gpu_slot", "session", "campaign_name", "max_abs_z"]
#: rows of the dataset held in memory at once while :func:`analyze` re-sorts it by parameter (about 100
#: GPUs' worth, ~1 MB, whatever the fleet's size; figures: tests/benchmarks/code_figures.md)
SPILL_ROWS = 5_000


class GroupSink(Protocol):
    """Receives each analysed parameter as :func:`analyze` goes (e.g. writes its rows, draws its histogram)."""

    def add(self, chip: str, key: str, rows: pd.DataFrame, summary: dict[str, Any]) -> None:
        """``rows``: one per GPU (the dataset's columns, then :data:`RESULT_COLUMNS`); ``summary``: the
        parameter's row of :attr:`FleetAnalysis.params`."""


@dataclass
class FleetAnalysis:
    """Result of :func:`analyze` and :func:`analyze_frame`: ``params`` (one row per chip and parameter:
    typical value, spread, tau, mu), the threshold used, ``flagged`` (the GPU-and-parameter rows beyond the
    threshold), ``per_gpu`` (one row per GPU: identity and largest |z| over the screened parameters) and,
    from :func:`analyze_frame` only, ``gpus`` (one row per GPU and parameter: value, stderr, z, pooled
    value, pooled stderr, shrinkage; :func:`analyze` streams these rows to its sinks instead)."""

    params: pd.DataFrame
    threshold: float
    notes: list[str] = field(default_factory=list)
    flagged: pd.DataFrame = field(default_factory=pd.DataFrame)
    per_gpu: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=PER_GPU_COLUMNS))
    gpus: pd.DataFrame | None = None

    def outlier_gpus(self) -> pd.DataFrame:
        """One row per outlier GPU: its largest |z|, and the parameters beyond the threshold."""
        g = self.flagged
        if g.empty:
            return pd.DataFrame(columns=["gpu_uuid", "serial", "node", "session", "max_abs_z", "parameters"])
        rows = []
        for uuid, sub in g.groupby("gpu_uuid", sort=False):
            sub = sub.reindex(sub["z"].abs().sort_values(ascending=False).index)
            rows.append({"gpu_uuid": uuid, "serial": sub["serial"].iloc[0], "node": sub["node"].iloc[0],
                         "session": sub["session"].iloc[0], "max_abs_z": float(sub["z"].abs().max()),
                         "parameters": ", ".join(f"{k} (z={z:+.1f})" for k, z in zip(sub["key"], sub["z"]))})
        return pd.DataFrame(rows).sort_values("max_abs_z", ascending=False, ignore_index=True)


def _tau2_reml(y: np.ndarray, v: np.ndarray, groups: np.ndarray | None = None) -> float:
    """Between-GPU variance tau^2 of estimates ``y`` with sampling variances ``v`` (normal-normal model),
    by restricted maximum likelihood (the random-effects meta-analysis estimator), with one mean per
    label of ``groups`` (default: one mean; REML's log det(X'WX) term is then the sum over groups of
    log sum w); 0 when the spread is no larger than the measurement errors explain."""
    from scipy.optimize import minimize_scalar

    labels = np.zeros(len(y), int) if groups is None else np.unique(groups, return_inverse=True)[1]
    ng = int(labels.max()) + 1

    def nll(t2: float) -> float:
        w = 1.0 / (v + t2)
        sw = np.bincount(labels, w, ng)
        mu = np.bincount(labels, w * y, ng) / sw
        return 0.5 * float(np.sum(np.log(v + t2) + w * (y - mu[labels]) ** 2) + np.sum(np.log(sw)))

    total = float(np.var(y)) + float(np.max(v))
    if total <= 0:
        return 0.0
    res = minimize_scalar(lambda lt: nll(total * np.exp(lt)), bounds=(-30.0, 2.0), method="bounded",
                          options={"xatol": 1e-4})
    t2 = total * float(np.exp(res.x))
    return 0.0 if nll(0.0) <= nll(t2) else t2


def _big_campaigns(camp: np.ndarray, min_gpus: int) -> np.ndarray:
    """Which GPUs belong to a campaign of at least ``min_gpus`` GPUs that is not the whole group."""
    labels, inv, counts = np.unique(camp, return_inverse=True, return_counts=True)
    return (counts[inv] >= min_gpus) & (counts[inv] < len(camp))


def _one_parameter(sub: pd.DataFrame, threshold: float, rel_floor: float,
                   min_outlier_gpus: int) -> tuple[pd.DataFrame, dict]:
    y = sub["value"].to_numpy(float)
    s = sub["stderr"].to_numpy(float)
    has_s = np.isfinite(s) & (s > 0)
    med = float(np.median(y))
    mad_sd = MAD_TO_SD * float(np.median(np.abs(y - med)))
    med_s = float(np.median(s[has_s])) if has_s.any() else 0.0
    scale = max(mad_sd, rel_floor * abs(med))
    # z against the GPUs measured the same way: a campaign's own bias is not a GPU's defect. Campaigns
    # with fewer than min_outlier_gpus GPUs are compared with the whole fleet.
    camp = sub["campaign_name"].astype(str).to_numpy()
    center, spread = np.full_like(y, med), np.full_like(y, scale)
    big = _big_campaigns(camp, min_outlier_gpus)
    for c in np.unique(camp[big]):
        m = camp == c
        mc = float(np.median(y[m]))
        center[m] = mc
        spread[m] = max(MAD_TO_SD * float(np.median(np.abs(y[m] - mc))), rel_floor * abs(mc))
    # each GPU's deviation against the spread and its own measurement error together: a poorly
    # measured estimate is not an outlier merely for being far off
    denom = np.sqrt(spread ** 2 + np.where(has_s, s, 0.0) ** 2)
    z = np.divide(y - center, denom, out=np.zeros_like(y), where=denom > 0)
    screened = len(y) >= min_outlier_gpus and str(sub["unit"].iloc[0]) not in UNSCREENED_UNITS
    out_mask = (np.abs(z) > threshold) & screened
    keep = ~out_mask
    var_i = np.where(has_s, s ** 2, np.nan)
    fit = keep & has_s
    # the prior mean is taken per campaign (those with >= min_outlier_gpus GPUs; the others share one), as
    # the z-scores are: a campaign's own bias (seen on the virtual fleet: max_power_fp_w reads 0.026 W low
    # with the quick campaign and 0.036 W low with the standard one) must not leak into another campaign's
    # pooled estimates
    group = np.where(big, camp, "")
    tau2 = _tau2_reml(y[fit], var_i[fit], group[fit]) if fit.sum() >= 3 else max(0.0, mad_sd ** 2 - med_s ** 2)
    w = 1.0 / (np.where(has_s, var_i, 0.0) + tau2) if tau2 > 0 else np.where(has_s, 1.0 / np.where(has_s, var_i, 1.0), 0.0)
    w = np.where(keep & np.isfinite(w), w, 0.0)
    mu_i = np.full(len(y), float(np.median(y[keep])) if keep.any() else med)
    var_mu_i = np.full(len(y), np.nan)
    for gname in np.unique(group):
        m = group == gname
        if w[m].sum() > 0:
            mu_i[m] = float(np.sum(w[m] * y[m]) / w[m].sum())
            var_mu_i[m] = float(1.0 / w[m].sum())
    if w.sum() > 0:   # the fleet's precision-weighted mean (reported; the per-campaign means pool)
        mu = float(np.sum(w * y) / w.sum())
        var_mu = float(1.0 / w.sum())
    else:
        mu, var_mu = float(np.median(y[keep])) if keep.any() else med, float("nan")
    pool = has_s & keep
    b = np.where(pool, var_i / (var_i + tau2), 0.0) if tau2 > 0 else np.where(pool, 1.0, 0.0)
    pooled = np.where(pool, mu_i + (1.0 - b) * (y - mu_i), y)
    pooled_se = np.where(pool, np.sqrt((1.0 - b) * np.nan_to_num(var_i) + b ** 2 * np.nan_to_num(var_mu_i)),
                         np.where(has_s, s, np.nan))
    res = sub[["gpu_uuid"]].copy()
    res["z"] = z
    res["outlier_param"] = out_mask
    res["screened"] = bool(screened)
    res["shrinkage"] = np.where(pool, b, np.nan)
    res["pooled_value"] = pooled
    res["pooled_stderr"] = pooled_se
    summary = {"n_gpus": int(len(y)), "median": med, "robust_sd": mad_sd, "mean": float(np.mean(y)),
               "sd": float(np.std(y, ddof=1)) if len(y) > 1 else float("nan"),
               "cv_pct": float(100 * mad_sd / abs(med)) if med else float("nan"),
               "median_stderr": med_s if has_s.any() else float("nan"), "z_scale": scale,
               "tau": float(np.sqrt(tau2)), "mu": mu, "mu_stderr": float(np.sqrt(var_mu)) if np.isfinite(var_mu) else float("nan"),
               "mean_shrinkage": float(np.nanmean(np.where(pool, b, np.nan))) if pool.any() else float("nan"),
               "n_outliers": int(out_mask.sum()), "screened": bool(screened), "unit": str(sub["unit"].iloc[0])}
    return res, summary


def _clean_columns(df: pd.DataFrame) -> pd.DataFrame:
    for c in ("chip", "section", "name", "form", "unit"):   # partition columns arrive as categoricals
        df[c] = df[c].astype(str)
    return df


def _analyse_groups(groups: Iterable[tuple[str, str, pd.DataFrame]], ngroups: int, threshold: float,
                    rel_floor: float, min_gpus: int, min_outlier_gpus: int, sinks: Sequence[GroupSink],
                    step: Callable[[str, float], None]) -> FleetAnalysis:
    """The analysis of parameter groups ``(chip, key, rows)`` arriving one at a time (sorted by chip and
    key); each analysed group goes to every sink, and only summaries are kept."""
    notes: list[str] = []
    summaries, flagged = [], []
    per_gpu: dict[str, list] = {}
    for k, (chip, key, sub) in enumerate(groups):
        step("analyse", k / max(ngroups, 1))
        if len(sub) < min_gpus:
            notes.append(f"{chip}: {key} on {len(sub)} GPU(s) only; not analysed")
            continue
        if sub["gpu_uuid"].duplicated().any():
            raise ValueError(f"{key}: a GPU appears twice")  # the dataset guarantees one file per GPU
        res, summary = _one_parameter(sub, threshold, rel_floor, min_outlier_gpus)
        rows = sub.join(res.drop(columns=["gpu_uuid"]))
        summary = {"chip": chip, "key": key, "section": sub["section"].iloc[0], "name": sub["name"].iloc[0], **summary}
        summaries.append(summary)
        if rows["outlier_param"].any():
            flagged.append(rows[rows["outlier_param"]])
        # each GPU's largest |z| over what can call it an outlier (the node map), kept per GPU, not per row
        abs_z = np.where(rows["screened"].to_numpy(bool), np.abs(rows["z"].to_numpy(float)), 0.0)
        for u, ser, node, slot, sess, camp, a in zip(rows["gpu_uuid"], rows["serial"], rows["node"], rows["gpu_slot"],
                                                     rows["session"], rows["campaign_name"], abs_z):
            e = per_gpu.get(u)
            if e is None:
                per_gpu[u] = [u, chip, ser, node, slot, sess, camp, a]
            elif a > e[-1]:
                e[-1] = a
        for sink in sinks:
            sink.add(chip, key, rows, summary)
    step("analyse", 1.0)
    # a chip with fewer GPUs than an outlier needs: say so, or a planted (or real) outlier goes unflagged in silence
    for chip, n in sorted(Counter(e[1] for e in per_gpu.values()).items()):
        if n < min_outlier_gpus:
            msg = (f"{chip}: {n} GPU(s), too few to call any GPU an outlier (a parameter needs at least "
                   f"{min_outlier_gpus} GPUs that share it and its model form); an outlier among them goes unflagged")
            notes.append(msg)
            warnings.warn(msg, stacklevel=2)
    flag = pd.concat(flagged, ignore_index=True) if flagged else pd.DataFrame(columns=[*COLUMNS, *RESULT_COLUMNS])
    return FleetAnalysis(pd.DataFrame(summaries), threshold, notes, flag,
                         pd.DataFrame(list(per_gpu.values()), columns=PER_GPU_COLUMNS))


class _Collect:
    """A sink that keeps every row (the in-memory analysis' ``gpus`` table)."""

    def __init__(self) -> None:
        self.parts: list[pd.DataFrame] = []

    def add(self, chip: str, key: str, rows: pd.DataFrame, summary: dict[str, Any]) -> None:
        self.parts.append(rows)


def analyze_frame(df: pd.DataFrame, threshold: float = DEFAULT_THRESHOLD, rel_floor: float = REL_FLOOR,
                  min_gpus: int = 3, min_outlier_gpus: int = MIN_OUTLIER_GPUS,
                  progress: Callable[[str, float], None] | None = None,
                  sinks: Sequence[GroupSink] = ()) -> FleetAnalysis:
    """Analyse a fleet table held in memory (the dataset's rows; see module docstring); the result has
    the ``gpus`` table. Parameters present on fewer than ``min_gpus`` GPUs of a chip, or fixed (not
    fitted), are left out (and named in ``notes``). ``progress("analyse", fraction)`` is called as the
    parameters are analysed."""
    step = progress or (lambda stage, frac: None)
    df = _clean_columns(df[(df["vary"]) | (df["section"] == "reference")].copy())
    df["key"] = df["section"] + "." + df["name"]
    # a parameter whose model form differs between GPUs (e.g. a unit's access-rate function) is compared
    # within each form only: key becomes "section.name[form]" where the fleet has several forms
    nforms = df.groupby(["chip", "key"], observed=True)["form"].transform("nunique")
    df.loc[nforms > 1, "key"] = df["key"] + "[" + df["form"] + "]"
    groups = df.groupby(["chip", "key"], sort=True, observed=True)
    keep = _Collect()
    an = _analyse_groups(((chip, key, sub) for (chip, key), sub in groups), groups.ngroups, threshold, rel_floor,
                         min_gpus, min_outlier_gpus, [keep, *sinks], step)
    an.gpus = pd.concat(keep.parts, ignore_index=True) if keep.parts else df.iloc[:0]
    return an


def _hive_value(path: Path, fleet: Path, name: str) -> str:
    for part in path.relative_to(fleet).parts:
        if part.startswith(f"{name}="):
            return urllib.parse.unquote(part[len(name) + 1:])   # pyarrow's hive reader decodes URI escapes
    return "None"   # what the table reader's missing partition value becomes as text


class _Spill:
    """The dataset re-sorted by parameter on disk: one Arrow IPC file per (chip, section, name, form),
    written from chunks of at most :data:`SPILL_ROWS` rows read one GPU file at a time."""

    def __init__(self, fleet: Path, tmp: Path):
        self.fleet, self.tmp = fleet, tmp
        self.notes: list[str] = []
        self.paths: dict[tuple[str, str, str, str], Path] = {}
        self._writers: dict[tuple[str, str, str, str], Any] = {}

    def _flush(self, chunk: list) -> None:
        if not chunk:
            return
        t = pa.concat_tables(chunk).combine_chunks()   # one record batch per parameter file and chunk
        chunk.clear()
        enc = pc.binary_join_element_wise(t["chip"], t["section"], t["name"], t["form"], "\x1f")
        enc = enc.combine_chunks().dictionary_encode()
        order = pc.sort_indices(enc.indices)   # a stable sort: each parameter keeps the dataset's row order
        t = t.take(order)
        codes = enc.indices.take(order).to_numpy()
        starts = np.r_[0, np.flatnonzero(np.diff(codes)) + 1]
        ends = np.r_[starts[1:], len(codes)]
        names = enc.dictionary.to_pylist()
        for a, b in zip(starts, ends):
            k = tuple(names[codes[a]].split("\x1f"))
            w = self._writers.get(k)
            if w is None:
                path = self.tmp / f"{len(self.paths):05d}.arrow"
                w = pa.ipc.new_file(path, t.schema, options=pa.ipc.IpcWriteOptions(compression="zstd"))
                self._writers[k], self.paths[k] = w, path
            w.write_table(t.slice(a, b - a))

    def fill(self, step: Callable[[str, float], None]) -> None:
        from calib.fleet.dataset import open_gpu_file, read_gpu_rows, require_gpu_files

        files = self._latest_calibrations(require_gpu_files(self.fleet))
        cols = [c for c in COLUMNS if c != "chip"]
        chunk: list = []
        rows = 0
        try:
            for i, path in enumerate(files):
                pf, ident = open_gpu_file(path)
                try:
                    t = read_gpu_rows(pf, path, cols)
                finally:
                    pf.close()
                t = t.append_column("chip", pa.array([_hive_value(path, self.fleet, "chip")] * len(t), pa.string()))
                t = t.filter(pc.or_(pc.fill_null(t["vary"], False), pc.equal(t["section"], "reference")))
                chunk.append(t)
                rows += len(t)
                if rows >= SPILL_ROWS:
                    self._flush(chunk)
                    rows = 0
                step("read", (i + 1) / len(files))
            self._flush(chunk)
        finally:
            for w in self._writers.values():
                w.close()

    def _latest_calibrations(self, files: list[Path]) -> list[Path]:
        """Each GPU's latest calibration among ``files`` (a GPU calibrated under several drivers has a file
        per driver: the fleet is compared as it is now, the others are named in :attr:`notes`); two files of
        one GPU under one driver are refused (BadInputError naming both)."""
        from calib.fleet.dataset import calibration_key, duplicate_error, open_gpu_file

        by_gpu: dict[str, list[tuple[Path, dict]]] = {}
        for path in files:
            pf, ident = open_gpu_file(path)
            pf.close()
            by_gpu.setdefault(ident["gpu_uuid"], []).append((path, ident))
        skip: set[Path] = set()
        for uuid, cals in by_gpu.items():
            if len(cals) < 2:
                continue
            drivers: dict[str, Path] = {}
            for path, ident in cals:
                drv = calibration_key(ident)[1]
                if drv in drivers:
                    raise duplicate_error(uuid, str(drivers[drv]), path)
                drivers[drv] = path

            def created(path: Path) -> str:
                col = pq.read_table(path, columns=["created_utc"]).column(0).drop_null()
                return str(col[0]) if len(col) else ""

            latest = max(cals, key=lambda c: (created(c[0]), str(c[0])))
            skip |= {p for p, _ in cals if p != latest[0]}
            others = ", ".join(f"driver {calibration_key(i)[1]} (session {i.get('session')})" for p, i in cals
                               if p != latest[0])
            self.notes.append(f"GPU {uuid}: {len(cals)} calibrations; analysed: the latest, driver "
                              f"{calibration_key(latest[1])[1]} (session {latest[1].get('session')}); also in the "
                              f"dataset: {others} (compare them with calib diff)")
        return [p for p in files if p not in skip]

    def groups(self) -> list[tuple[str, str, Path]]:
        """(chip, key, file) sorted by chip and key; key is ``section.name``, with ``[form]`` where the
        chip's GPUs have the parameter in several model forms."""
        nforms = Counter(k[:3] for k in self.paths)
        return sorted((chip, f"{section}.{name}" + (f"[{form}]" if nforms[(chip, section, name)] > 1 else ""), path)
                      for (chip, section, name, form), path in self.paths.items())

    @staticmethod
    def read(chip: str, key: str, path: Path) -> tuple[str, str, pd.DataFrame]:
        with pa.memory_map(str(path)) as src:
            df = pa.ipc.open_file(src).read_all().to_pandas()
        df = _clean_columns(df)
        df["key"] = key
        return chip, key, df


def analyze(fleet: str | Path, threshold: float = DEFAULT_THRESHOLD, rel_floor: float = REL_FLOOR,
            progress: Callable[[str, float], None] | None = None,
            sinks: Sequence[GroupSink] = (), min_gpus: int = 3, min_outlier_gpus: int = MIN_OUTLIER_GPUS,
            tmp_dir: str | Path | None = None) -> FleetAnalysis:
    """Read dataset ``fleet`` and analyse it, one parameter at a time (module docstring, "Memory"): the
    same results as :func:`analyze_frame` on the whole table, but each parameter's per-GPU rows go to
    ``sinks`` (e.g. :class:`calib.fleet.report.GpusTableWriter`) and are not kept, so the result has no
    ``gpus`` table. The re-sorted copy of the dataset lives in a temporary directory under ``tmp_dir``
    (default: the system's, ``TMPDIR``; about the size of the dataset) and is removed at the end (the
    analysis is vectorised per parameter and runs in one process). ``progress(stage, fraction)`` is called
    at the stages ``read`` and ``analyse``.
    BadInputError: no dataset, an empty one, a corrupt file or two files of one GPU under one driver (named);
    a GPU calibrated under several drivers is analysed once, with its latest calibration (``notes``)."""
    step = progress or (lambda stage, frac: None)
    fleet = Path(fleet)
    from calib.fleet.dataset import require_gpu_files

    require_gpu_files(fleet)   # refused before any work
    step("read", 0.0)
    with tempfile.TemporaryDirectory(prefix=".calib-fleet-", dir=tmp_dir) as tmp:
        spill = _Spill(fleet, Path(tmp))
        spill.fill(step)
        groups = spill.groups()
        rows: Iterator[tuple[str, str, pd.DataFrame]] = (spill.read(*g) for g in groups)
        an = _analyse_groups(rows, len(groups), threshold, rel_floor, min_gpus, min_outlier_gpus, sinks, step)
        an.notes[:0] = spill.notes
        return an


