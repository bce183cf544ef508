"""Test doubles of real hardware: instrument emulators, a fake NVML.

Everything here stands in for a device this machine does not have, so the real drivers can be tested
and demonstrated end to end: :mod:`.emulators` runs power analyzers on real pseudo-terminals
(``python -m microbench.testing.emulators PROTOCOL`` serves one to try ``calib log`` without hardware),
:mod:`.replay` replays documented command/reply transcripts against a driver without a port. The
emulators are written from the instruments' documented behaviour
(``shared/reference/instrument-protocol-facts.md``), never from the drivers, so that a mistake in a
driver can fail a test. Nothing in the drivers imports this package.
"""
