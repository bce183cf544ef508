"""Importers: measurement tables from other tools -> samples tables (../shared/design/contracts.md).

``FORMATS`` maps a format name of ``calib import FORMAT FILE -o SAMPLES.csv`` to the module that reads
it. Every module has ``read(path, **options) -> pandas.DataFrame`` returning a checked samples table
(:func:`calib.core.samples.check_samples`) and a ``DESCRIPTION`` line. Malformed input raises
:class:`calib.core.errors.BadInputError` naming the file, the line and the field.

| format | module | what it reads |
|---|---|---|
| ``gpmtool`` | :mod:`calib.importers.gpmtool` | gpmTOOL measurement CSV (Guerreiro et al.), named or not |
| ``nvprof`` | :mod:`calib.importers.ncu` | ``nvprof --csv --metrics ...`` exports |
| ``ncu`` | :mod:`calib.importers.ncu` | Nsight Compute ``ncu --csv`` exports (details or ``--page raw``) |
| ``dcgm`` | :mod:`calib.importers.dcgm` | ``dcgmi dmon -e ...`` output (profiling fields) or the same as CSV |
"""

from __future__ import annotations

import importlib
import os

import pandas as pd

FORMATS: dict[str, str] = {
    "gpmtool": "calib.importers.gpmtool",
    "nvprof": "calib.importers.ncu",
    "ncu": "calib.importers.ncu",
    "dcgm": "calib.importers.dcgm",
}


def import_table(fmt: str, path: str | os.PathLike, **options) -> pd.DataFrame:
    """Read ``path`` in format ``fmt`` into a checked samples table."""
    from calib.core.errors import BadInputError

    if fmt not in FORMATS:
        raise BadInputError(f"unknown import format {fmt!r} (known: {', '.join(FORMATS)})")
    mod = importlib.import_module(FORMATS[fmt])
    if fmt in ("nvprof", "ncu"):
        options.setdefault("flavour", fmt)
    return mod.read(path, **options)
