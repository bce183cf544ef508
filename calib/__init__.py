"""GPU power/performance/thermal model calibration toolkit.

Data path: microbench (kernels, devices, campaign) -> logs (calib.core.session) -> samples (calib.core.samples)
-> fit (calib.fit) -> parameter file (calib.core.params) -> model (calib.model) -> report.
"""

__version__ = "0.1.0"
