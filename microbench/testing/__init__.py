"""Test doubles of real hardware: instrument emulators, a fake NVML. They stand in for devices this machine
does not have, so the real drivers can be tested and tried end to end: :mod:`.emulators` serves power
analyzers on real pseudo-terminals (``python -m microbench.testing.emulators PROTOCOL``), written from the
instruments' documented behaviour (``shared/reference/instrument-protocol-facts.md``) and never from the
drivers, so a driver's mistake can fail a test; :mod:`.replay` replays documented command/reply
transcripts against a driver without a port; :mod:`.profiler_export` writes nvprof/ncu exports of kernels run
on the virtual GPU. Nothing outside the tests, benchmarks and demos imports this
package.
"""
