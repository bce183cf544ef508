"""Serial power analyzers: one small class per protocol, on a common reader (:mod:`.base`).

The protocol names and their classes are :data:`PROTOCOLS`. See ``README.md`` in this directory for the
protocols, the columns and stream alignment.
"""

from __future__ import annotations

from typing import Any

from microbench.instruments.base import InstrumentError, SerialAnalyzer
from microbench.instruments.csvline import CsvLineSource
from microbench.instruments.hioki import HiokiPW3335
from microbench.instruments.powersensor3 import PowerSensor3
from microbench.instruments.wattsup import WattsUpPro
from microbench.instruments.yokogawa import YokogawaWT210, YokogawaWT310

PROTOCOLS: dict[str, type[SerialAnalyzer]] = {
    "wt310": YokogawaWT310, "wt210": YokogawaWT210, "hioki": HiokiPW3335, "wattsup": WattsUpPro,
    "powersensor3": PowerSensor3, "csv": CsvLineSource,
}


_NOT_OPTIONS = ("self", "port", "name", "clock", "transport")


def analyzer_options(protocol: str) -> list[str]:
    """Keyword options the analyzer class of ``protocol`` accepts (its own and the common ones of
    :class:`SerialAnalyzer`), sorted; the port, the stream name, the clock and the transport are not
    options."""
    import inspect

    inits = [k.__init__ for k in PROTOCOLS[protocol].__mro__ if "__init__" in vars(k) and issubclass(k, SerialAnalyzer)]
    return sorted({p.name for init in inits for p in inspect.signature(init).parameters.values()
                   if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in _NOT_OPTIONS})


def open_analyzer(port: str, protocol: str, **kw: Any) -> SerialAnalyzer:
    """The analyzer of ``protocol`` on ``port`` (not started). Unknown protocol -> ValueError naming the choices."""
    try:
        cls = PROTOCOLS[protocol]
    except KeyError:
        raise ValueError(f"unknown analyzer protocol {protocol!r}; choose one of {sorted(PROTOCOLS)}") from None
    return cls(port, **kw)


__all__ = [
    "PROTOCOLS",
    "CsvLineSource",
    "HiokiPW3335",
    "InstrumentError",
    "PowerSensor3",
    "SerialAnalyzer",
    "WattsUpPro",
    "YokogawaWT210",
    "YokogawaWT310",
    "analyzer_options",
    "open_analyzer",
]
