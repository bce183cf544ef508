"""Which model reads which section, and whether a parameter file can drive them all.

The schema (:mod:`calib.core.params`) checks the file format; each model checks the section it is built
from (its ``validate``), so that `calib validate` accepts only files `calib predict` can use.
:func:`load_checked` is how every verb that reads a parameter file (validate, predict, validate-model,
optimize, diff, report, publish) opens it: schema and physical bounds, every model's own checks, then a
dry run of every model section on a tiny table, a net for whatever the precise checks miss. Failures
are SchemaError (exit status 2) naming the file and the field.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable

import numpy as np

from calib.core import params as P
from calib.core.errors import BadInputError, SchemaError
from calib.core.params import ParameterFile, Section
from calib.model.registry import MODELS
from calib.model.validation import fit_quality_problems

#: the model that reads a section, by the section's model name: its own check of the section
VALIDATORS: dict[str, Callable[[Section, str], None]] = {name: m.validate for name, m in MODELS.items()}

#: what a model may raise on a section the checks above missed (the dry run turns it into SchemaError)
_MODEL_FAILURES = (BadInputError, KeyError, TypeError, ValueError, IndexError, ArithmeticError, AttributeError)


def _dry_run(pf: ParameterFile, source: str) -> None:
    """Last-resort net: run every model section of ``pf`` on a tiny table (its model's ``dry_run``:
    idle, half and full activity; one small kernel) and refuse the file, naming the section, when a
    model fails or predicts a non-finite value. Precise checks give the better messages; this catches
    the rest."""
    for name, sec in pf.items():
        model = MODELS.get(sec.model)
        if model is None or (name not in ("power", "dvfs") and sec.model in ("ipp", "dvfs")):
            continue
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                out = np.asarray(model.dry_run(pf, name), dtype=float)
        except _MODEL_FAILURES as e:
            raise SchemaError(f"{source}: {name}: cannot be used for predictions "
                              f"({type(e).__name__}: {e})") from e
        if not np.all(np.isfinite(out)):
            raise SchemaError(f"{source}: {name}: the model predicts non-finite values on a test table; "
                              "check the section's parameters")


def check_models(pf: ParameterFile, source: str = "<parameters>") -> None:
    """Raise SchemaError (naming the field) when a section cannot drive its model."""
    for name, sec in pf.sections.items():
        check = VALIDATORS.get(sec.model)
        if check is not None:
            check(sec, f"{source}: {name}")
    # non-finite values were refused by the schema check; sections that do not compile fail the dry run
    _dry_run(pf, source)


def load_checked(path: str | os.PathLike, fit_quality: str = "warn") -> ParameterFile:
    """Read a parameter file, check it against the schema and physical bounds and check that every
    model section can drive its model (module docstring). A file that records an absurd fit
    (:func:`calib.model.validation.fit_quality_problems`, written with --accept-poor-fit) is refused with
    ``fit_quality="error"`` (`calib validate`) and warned about otherwise, so that it can still be
    reported on and compared."""
    pf = P.load(path)
    problems = fit_quality_problems(pf.items())
    what = "; ".join(problems)
    if problems and fit_quality == "error":  # first: it explains what the model checks would trip on
        raise SchemaError(f"{path}: records a fit that is not credible ({what}); not valid for predictions "
                          "(refit from data without implausible readings)")
    check_models(pf, str(path))
    if problems:
        warnings.warn(f"{path}: records a fit that is not credible ({what}); its predictions mean little")
    return pf
