"""GPU power/performance/thermal model calibration toolkit.

Data path: microbench (kernels, devices, campaign) -> logs (calib.session) -> samples (calib.samples)
-> fit (calib.fit) -> parameter file (calib.params) -> model (calib.model) -> report.
"""

__version__ = "0.1.0"
