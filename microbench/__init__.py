"""Microbenchmarks, devices and the calibration campaign (the measurement side of the toolkit).

- :mod:`microbench.kernels` -- CUDA kernels and their per-warp instruction-count models
- :mod:`microbench.benchmarks` -- the benchmark declarations the campaign runs
- :mod:`microbench.devices` -- the device/sensor interface, the virtual GPU, NVML
- :mod:`microbench.campaign` -- runs a campaign on a device while logging into a session directory
"""
