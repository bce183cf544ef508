"""Progress output for long work: shown on a TTY, silent with --quiet or when stderr is not a TTY."""

from __future__ import annotations

import sys
import time


class Progress:
    """A one-line progress indicator on stderr.

    ``enabled=None`` means: only when stderr is a terminal.
    """

    def __init__(self, total: int, label: str = "", enabled: bool | None = None):
        self.total = max(1, int(total))
        self.label = label
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.done = 0
        self._t0 = time.monotonic()

    def update(self, n: int = 1, what: str = "") -> None:
        self.done += n
        if self.enabled:
            pct = 100.0 * self.done / self.total
            sys.stderr.write(f"\r{self.label} {self.done}/{self.total} ({pct:3.0f}%) {what[:40]:<40}")
            sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write(f"\r{self.label} done in {time.monotonic() - self._t0:.1f} s{' ' * 50}\n")
            sys.stderr.flush()


def wants_progress(args) -> bool | None:  # noqa: ANN001
    """Progress policy from parsed CLI args: False with --quiet, else TTY detection."""
    return False if getattr(args, "quiet", False) else None
