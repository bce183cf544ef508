"""K-fold cross-validation by workload, for any fitter/predictor pair.

Folds are made of whole workloads (``workload`` column): the workload names are shuffled with
``seed`` and dealt into ``k`` folds of nearly equal row counts, so a workload is never split across
folds and every prediction is for a workload the fit has not seen. The fitter and the predictor are
the ones the parameter file would use (``fit(df) -> Section``, ``predict(section, df) -> W``),
so the same code cross-validates the DVFS model and the single-clock IPP model.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from calib.core.errors import BadInputError
from calib.core.metrics import errors, per_workload
from calib.core.params import Section


@dataclass
class CVResult:
    """Outcome of :func:`cross_validate`.

    ``mape_pct``: mean absolute percentage error over all held-out rows. ``per_fold``: one dict per
    fold (fold, workloads, n_rows, mape_pct, max_abs_pct). ``per_workload``: DataFrame indexed by
    workload with fold, n_rows, mape_pct, max_abs_pct and bias_pct (mean signed error). ``predictions``:
    the held-out prediction for every input row (W, aligned with the input index).
    """

    k: int
    seed: int
    mape_pct: float
    max_abs_pct: float
    rmse_w: float
    per_fold: list[dict] = field(default_factory=list)
    per_workload: pd.DataFrame = field(default_factory=pd.DataFrame)
    predictions: pd.Series = field(default_factory=lambda: pd.Series(dtype=float))
    warnings: list[str] = field(default_factory=list)


def make_folds(workloads: pd.Series, k: int, seed: int = 0, strata: pd.Series | None = None) -> list[list[str]]:
    """Deal the distinct workload names (shuffled with ``seed``) into ``k`` folds of similar row counts.

    A workload is never split. Each workload, in shuffled order, joins the fold with the fewest rows.
    With ``strata`` (one label per row, e.g. the unit a benchmark stresses) the workloads of each stratum
    are spread over the folds, so that no fold takes away every benchmark of one unit (which would leave
    that unit's parameters undetermined in training, a failure of the split, not of the model).
    """
    wl = workloads.astype(str)
    counts = wl.value_counts(sort=False)
    rng = np.random.default_rng(seed)
    folds: list[list[str]] = [[] for _ in range(k)]
    sizes = np.zeros(k, dtype=int)
    if strata is not None:
        first = pd.DataFrame({"w": wl.to_numpy(), "s": strata.astype(str).to_numpy()}).drop_duplicates("w")
        for _, grp in sorted(first.groupby("s"), key=lambda g: str(g[0])):
            names = np.array(sorted(grp["w"]))
            rng.shuffle(names)
            for name in names:
                # within a stratum, the fold with the fewest of this stratum, then the fewest rows
                have = np.array([sum(1 for x in f if x in set(names)) for f in folds])
                j = int(np.lexsort((sizes, have))[0])
                folds[j].append(str(name))
                sizes[j] += counts[name]
        return folds
    names = np.array(sorted(counts.index))
    rng.shuffle(names)
    # in shuffled order, each workload joins the fold with the fewest rows so far
    for name in names:
        j = int(np.argmin(sizes))
        folds[j].append(str(name))
        sizes[j] += counts[name]
    return folds


def check_folds(df: pd.DataFrame, k: int) -> None:
    """BadInputError unless ``df`` (the rows to cross-validate) can make ``k`` folds by workload: call it
    before the fit, so that an impossible ``--cv`` is refused at once rather than after the whole fit."""
    for col in ("workload", "power_w"):
        if col not in df.columns:
            raise BadInputError(f"cross-validation needs a '{col}' column")
    if not isinstance(k, (int, np.integer)) or k < 2:
        raise BadInputError(f"cross-validation needs K >= 2 folds (got {k!r})")
    n_wl = df["workload"].astype(str).nunique()
    if k > n_wl:
        if n_wl < 2:
            raise BadInputError(f"cannot cross-validate: the table has {n_wl} workload (folds by workload need 2)")
        raise BadInputError(f"cannot make {k} folds by workload from {n_wl} workloads (use --cv {n_wl} or fewer)")


def cross_validate(df: pd.DataFrame, k: int, fit: Callable[[pd.DataFrame], Section],
                   predict: Callable[[Section, pd.DataFrame], np.ndarray], seed: int = 0,
                   strata: str | None = None) -> CVResult:
    """Cross-validated error of ``fit``/``predict`` on ``df``, with folds by workload.

    ``df`` needs ``workload`` and ``power_w``. ``k`` must be between 2 and the number of workloads.
    Each fold's fitted section goes to ``predict`` as it would be read from a parameter file (a JSON
    round trip). Warnings raised by the fits are collected once each (``CVResult.warnings``).
    """
    check_folds(df, k)
    wl = df["workload"].astype(str)
    folds = make_folds(wl, int(k), seed, df[strata] if strata and strata in df.columns else None)
    pred = pd.Series(np.nan, index=df.index, dtype=float)
    fold_of = pd.Series(-1, index=df.index, dtype=int)
    seen: dict[str, None] = {}
    for i, names in enumerate(folds):
        test = wl.isin(names).to_numpy()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sec = fit(df[~test])
            sec = Section.from_json(*sec.to_json())
            p = np.asarray(predict(sec, df[test]), dtype=float)
        for w in caught:
            seen.setdefault(f"fold {i + 1}: {w.message}", None)
        if p.shape != (int(test.sum()),):
            raise ValueError(f"predict returned {p.shape} values for {int(test.sum())} rows")
        pred[test] = p
        fold_of[test] = i + 1
    y = df["power_w"].to_numpy(float)
    per_fold = []
    for i, names in enumerate(folds):
        m = (fold_of == i + 1).to_numpy()
        e = errors(y[m], pred.to_numpy()[m])
        per_fold.append({"fold": i + 1, "workloads": sorted(names), "n_rows": int(m.sum()),
                         "mape_pct": e.mape_pct, "max_abs_pct": e.max_abs_pct})
    per_wl = per_workload(wl.to_numpy(), y, pred.to_numpy(), fold=fold_of.to_numpy())
    per_wl = per_wl[["fold", "n_rows", "mape_pct", "max_abs_pct", "bias_pct"]]
    e = errors(y, pred.to_numpy())
    return CVResult(int(k), int(seed), e.mape_pct, e.max_abs_pct, e.rmse, per_fold, per_wl, pred, list(seen))
