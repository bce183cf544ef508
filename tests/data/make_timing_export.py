"""Regenerate the small ncu exports of the README's timing example (virtual Titan X):

    .venv/bin/python tests/data/make_timing_export.py

timing_ncu_train.csv: 10 kernels x 6 clock pairs (3 core x 2 memory clocks), ``ncu --csv --page raw``
(one launch per row, the clocks the card ran at, its name and SM count);
timing_ncu_profile.csv: 3 other kernels profiled once, at the highest pair.

The layout is ncu 2022.3's raw page (tests/data/profilers/README.md). (A real Titan X is a Maxwell board,
which ncu does not profile; nvprof's exports need one run with metrics and one without, per clock pair:
tests/test_timing_cli.py imports those.)
"""

from pathlib import Path

from microbench.testing import profiler_export as PE

HERE = Path(__file__).resolve().parent
BOARD = "NVIDIA GeForce GTX TITAN X"

if __name__ == "__main__":
    pairs = PE.grid_pairs("titanx", 3, 2)
    train = PE.app_kernels(10, 21, 24, prefix="train")
    other = PE.app_kernels(3, 22, 24, prefix="app")
    (HERE / "timing_ncu_train.csv").write_text(PE.ncu_raw_csv(PE.profile(train, "titanx", pairs, seed=21), BOARD))
    (HERE / "timing_ncu_profile.csv").write_text(PE.ncu_raw_csv(PE.profile(other, "titanx", [max(pairs)], seed=22),
                                                                BOARD))
