"""Access-rate functions of the IPP power model.

IPP (paper 004, Sec. 3.4) replaces the access rate AR of some units by the "special piecewise linear"
function ``a*ln(AR) + b`` (a = 0.1365, b = 1.001375 on GTX280): a unit's power jumps when it leaves
idle and grows slowly afterwards. The function is negative below ``AR = exp(-b/a)`` (6.5e-4 with the
paper's constants), so it is clamped at 0, and AR = 0 maps to 0 (errata, hong-thesis-2012-notes.md
section 2.2).

A unit's power may also have a part proportional to its accesses beside the saturating one (each access
costs energy once the unit is on): ``AR' = s AR + (1 - s) max(0, a ln(AR) + b)`` with the share ``s``
(``ar_linear_share``, 0 in IPP). With b = 1 both parts are 1 at AR = 1, so MaxPower stays the power at
AR = 1 whatever the share.
"""

from __future__ import annotations

import numpy as np

LINEAR = "linear"
LOG = "log"
FORMS = (LINEAR, LOG)

#: IPP's constants (paper 004, Sec. 3.4)
IPP_A = 0.1365
IPP_B = 1.001375


def log_rate(ln_ar: np.ndarray, positive: np.ndarray, a: float, b: float) -> tuple[np.ndarray, np.ndarray]:
    """The clamped log ``max(0, a ln(AR) + b)`` (0 at AR = 0) from a precomputed ``ln_ar`` (any value where
    ``positive`` is False), and its derivative in ``a``; both dimensionless."""
    raw = a * ln_ar + b
    on = positive & (raw > 0)
    return np.where(on, raw, 0.0), np.where(on, ln_ar, 0.0)


def mixed_rate(ar: np.ndarray, ln_ar: np.ndarray, positive: np.ndarray, a: float | np.ndarray, b: float,
               share: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The log access-rate function with a per-access share (module docstring),
    ``s AR + (1 - s) max(0, a ln(AR) + b)`` (0 at AR = 0), and its derivatives in ``a`` and in the share
    ``s``; all dimensionless. ``ln_ar``/``positive`` as for :func:`log_rate`."""
    raw, draw = log_rate(ln_ar, positive, a, b)
    lin = np.where(positive, ar, 0.0)
    return share * lin + (1.0 - share) * raw, (1.0 - share) * draw, lin - raw


def ar_transform(ar: np.ndarray | float, form: str, a: float = IPP_A, b: float = IPP_B,
                 share: float = 0.0) -> np.ndarray:
    """Transformed access rate, elementwise: ``ar`` itself (``"linear"``) or ``s*ar + (1 - s)*max(0,
    a*ln(ar) + b)`` (``"log"``, share ``s`` 0 by default: IPP's form); ``ar`` in [0, 1] and the result
    are dimensionless."""
    x = np.asarray(ar, dtype=float)
    if form == LINEAR:
        return x
    if form != LOG:
        raise ValueError(f"unknown access-rate function {form!r}; expected one of {FORMS}")
    pos = x > 0
    return mixed_rate(x, np.log(np.where(pos, x, 1.0)), pos, a, b, share)[0]
