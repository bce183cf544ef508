"""Progress output for long work (tqdm): a bar with an ETA on stderr, shown on a TTY, silent with --quiet
or when stderr is not a TTY.

Progress is counted in whatever unit the work is weighted by -- for a campaign, the expected seconds
of device time of its steps (:attr:`microbench.campaign.Step.expected_s`), so that the ETA follows the
long steps (thermal heat/cool) instead of the step count.
"""

from __future__ import annotations

import itertools
import sys

from tqdm import tqdm


class Progress:
    """A progress bar with an ETA on stderr.

    ``total``: amount of work (e.g. expected seconds); ``unit``: its unit as shown. ``enabled=None``
    means: only when stderr is a terminal.
    """

    def __init__(self, total: float, label: str = "", enabled: bool | None = None, unit: str = "step"):
        self.total = max(float(total), 1e-9)
        self.label = label
        enabled = sys.stderr.isatty() if enabled is None else enabled
        self.enabled = bool(enabled)
        self._done = 0.0
        self._bar = tqdm(total=self.total, desc=label, unit=unit, file=sys.stderr, disable=not self.enabled,
                         dynamic_ncols=True, leave=True,
                         bar_format="{desc} {percentage:3.0f}%|{bar}| {elapsed}<{remaining}{postfix}")

    @property
    def done(self) -> float:
        """Work done so far, in the bar's unit."""
        return self._done

    def set(self, done: float, what: str = "") -> None:
        """Move to ``done`` (absolute, clipped to the total) and show ``what`` is running."""
        done = min(max(float(done), 0.0), self.total)
        if what:
            self._bar.set_postfix_str(what[:40], refresh=False)
        self._bar.update(done - self._done)
        self._done = done

    def close(self) -> None:
        """Fill the bar (the work is done) and end its line."""
        self.set(self.total)
        self._bar.close()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def wants_progress(args) -> bool | None:  # noqa: ANN001
    """Progress policy from parsed CLI args: False with --quiet, else TTY detection."""
    return False if getattr(args, "quiet", False) else None


def printer(args):  # noqa: ANN001, ANN201
    """``print``, or nothing with --quiet: a verb's report of what it did and where its outputs went.
    Warnings and errors go through logging/stderr and are not affected; the exit status says it worked."""
    return (lambda *a, **k: None) if getattr(args, "quiet", False) else print


class StagedProgress(Progress):
    """Progress through named stages of known expected shares of the time (``weights``: stage -> share, in
    the order the stages run; a stage that does not run is skipped over): :meth:`stage` moves the bar to
    the start of a stage, so that the ETA follows the long stages, not their count."""

    def __init__(self, weights: dict[str, float], label: str = "", enabled: bool | None = None):
        super().__init__(sum(weights.values()), label, enabled, unit="")
        self._start = dict(zip(weights, itertools.accumulate(weights.values(), initial=0.0)))
        self._weight = dict(weights)

    def stage(self, name: str) -> None:
        """Stage ``name`` starts (unknown names only change the label)."""
        self.set(self._start.get(name, self.done), name)

    def within(self, name: str, frac: float) -> None:
        """Stage ``name`` is the fraction ``frac`` (0..1) done (e.g. 3 of 5 figures drawn)."""
        if name not in self._start:
            self.stage(name)
            return
        frac = min(max(float(frac), 0.0), 1.0)
        self.set(self._start[name] + self._weight[name] * frac, name)
