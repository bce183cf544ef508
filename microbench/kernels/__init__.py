"""CUDA microbenchmark kernels (``*.cu``) and their count models (:mod:`microbench.kernels.catalog`)."""
