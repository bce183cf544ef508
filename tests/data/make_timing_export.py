"""Regenerate the small nvprof trace exports of the README's timing example (virtual Titan X):

    .venv/bin/python tests/data/make_timing_export.py

timing_nvprof_train.csv: 10 kernels x 6 clock pairs (3 core x 2 memory clocks), one launch per row;
timing_nvprof_profile.csv: 3 other kernels profiled once, at the highest pair.
"""

from pathlib import Path

from microbench.testing import profiler_export as PE

HERE = Path(__file__).resolve().parent

if __name__ == "__main__":
    pairs = PE.grid_pairs("titanx", 3, 2)
    train = PE.app_kernels(10, 21, 24, prefix="train")
    other = PE.app_kernels(3, 22, 24, prefix="app")
    (HERE / "timing_nvprof_train.csv").write_text(PE.nvprof_trace_csv(PE.profile(train, "titanx", pairs, seed=21),
                                                                      "GeForce GTX TITAN X"))
    (HERE / "timing_nvprof_profile.csv").write_text(PE.nvprof_trace_csv(PE.profile(other, "titanx", [max(pairs)], seed=22),
                                                                        "GeForce GTX TITAN X"))
