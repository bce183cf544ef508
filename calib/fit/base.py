"""The estimator contract every fitter follows (in the manner of scikit-learn).

- The constructor takes keyword-only settings and stores them unchanged (no work, no validation:
  :meth:`Estimator._store`).
- ``fit(...)`` validates the settings against the class's declared ``constraints`` (one
  ``BadInputError`` naming the setting and what it accepts), learns, and returns ``self``.
- What was learned ends in ``_``; the fitted section is ``section_`` (a
  :class:`calib.core.params.Section` that records the settings, so that a refit is
  ``Fitter(**section.settings).fit(rows)``).
- Using an unfitted estimator raises :class:`calib.core.errors.NotFittedError`.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from calib.core.errors import BadInputError, NotFittedError
from calib.core.params import Section


class Constraint:
    """A predicate on a setting with a description of what it accepts."""

    def __init__(self, test: Callable[[Any], bool], accepts: str):
        self.test = test
        self.accepts = accepts

    def __call__(self, value: Any) -> bool:
        try:
            return bool(self.test(value))
        except (TypeError, ValueError):
            return False


def options(*values: Any) -> Constraint:
    """One of ``values``."""
    return Constraint(lambda v: any(v == x and type(v) is type(x) for x in values),
                      "one of " + ", ".join(repr(x) for x in values))


def number(lo: float = -math.inf, hi: float = math.inf, *, lo_open: bool = False, integer: bool = False) -> Constraint:
    """A real number (or integer) in [lo, hi] (lo open when asked)."""
    def test(v: Any) -> bool:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (integer and not isinstance(v, int)):
            return False
        return math.isfinite(v) and (v > lo if lo_open else v >= lo) and v <= hi
    kind = "an integer" if integer else "a number"
    return Constraint(test, f"{kind} in {'(' if lo_open else '['}{lo:g}, {hi:g}]")


def optional(c: Constraint) -> Constraint:
    """None or what ``c`` accepts."""
    return Constraint(lambda v: v is None or c(v), f"None or {c.accepts}")


def either(*cs: Constraint) -> Constraint:
    """What any of ``cs`` accepts."""
    return Constraint(lambda v: any(c(v) for c in cs), " or ".join(c.accepts for c in cs))


#: a (core_mhz, mem_mhz) pair of positive clocks (reference and anchor clocks of the fitters)
CLOCK_PAIR = Constraint(lambda v: len(v) == 2 and all(float(x) > 0 for x in v), "a (core_mhz, mem_mhz) pair")


def names_of(what: str = "names") -> Constraint:
    """A collection of strings (list, tuple or set)."""
    return Constraint(lambda v: isinstance(v, (list, tuple, set, frozenset)) and all(isinstance(x, str) for x in v),
                      f"a list of {what}")


def mapping_of(values: Constraint, what: str = "names") -> Constraint:
    """A mapping from strings to values ``values`` accepts."""
    return Constraint(lambda v: isinstance(v, Mapping) and all(isinstance(k, str) and values(x) for k, x in v.items()),
                      f"a mapping of {what} to {values.accepts}")


def _jsonable(v: Any) -> Any:
    """A setting as JSON: sets become sorted lists, tuples lists, mappings dicts."""
    if isinstance(v, (set, frozenset)):
        return sorted(_jsonable(x) for x in v)
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return v


class Estimator:
    """Base class of the fitters (module docstring)."""

    #: setting name -> constraint, checked by :meth:`_validate_settings` at the start of ``fit``
    constraints: ClassVar[dict[str, Constraint]] = {}
    #: settings an earlier version had, with the value at which they changed nothing (None: any value)
    retired_settings: ClassVar[dict[str, Any]] = {}

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> "Estimator":
        """The estimator a parameter file's recorded settings describe, ``Fitter(**settings)``: a retired
        setting recorded at its no-op value is dropped; BadInputError names any other setting the
        constructor does not take."""
        known = set(cls.setting_names())
        for k, v in settings.items():
            if k not in known and not (k in cls.retired_settings and cls.retired_settings[k] in (None, v)):
                raise BadInputError(f"{cls.__name__}: setting {k}={v!r} is not supported by this version "
                                    f"(settings: {', '.join(sorted(known))})")
        return cls(**{k: v for k, v in settings.items() if k in known})

    @classmethod
    def setting_names(cls) -> list[str]:
        """The constructor's keyword arguments, in order."""
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY]

    def _store(self, given: Mapping[str, Any]) -> None:
        """Store the constructor's settings unchanged: ``self._store(locals())`` in ``__init__``."""
        for n in self.setting_names():
            setattr(self, n, given[n])

    def get_params(self) -> dict[str, Any]:
        """The settings as given to the constructor."""
        return {n: getattr(self, n) for n in self.setting_names()}

    def settings(self) -> dict[str, Any]:
        """The settings as JSON (what a parameter file records for a refit)."""
        return {n: _jsonable(v) for n, v in self.get_params().items()}

    def _validate_settings(self) -> None:
        for name, rule in self.constraints.items():
            value = getattr(self, name)
            if not rule(value):
                raise BadInputError(f"{type(self).__name__}: setting {name}={value!r} is not valid "
                                    f"(expected {rule.accepts})")

    def check_is_fitted(self) -> None:
        if not hasattr(self, "section_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted yet; call fit() first")

    def section(self) -> Section:
        """The fitted section (``section_``)."""
        self.check_is_fitted()
        return self.section_

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
