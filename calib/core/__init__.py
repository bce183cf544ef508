"""The floor of the toolkit: contracts and formulas that both packages stand on.

Nothing here imports anything of the project above it (the measurement package imports only this floor; the
rest of ``calib`` builds on it). One home each:

- :mod:`~calib.core.errors`: typed errors and their exit statuses;
- :mod:`~calib.core.units`: instruction classes, power units, the memory-domain rule;
- :mod:`~calib.core.activity`: access rates from per-warp counts (IPP eqs. 10-12);
- :mod:`~calib.core.session`: the session directory (crash-safe logs) contract;
- :mod:`~calib.core.samples`: the samples-table contract;
- :mod:`~calib.core.params`: the parameter-file contract and its object;
- :mod:`~calib.core.metrics`: error measures (MAPE, bias, RMSE, per-workload tables);
- :mod:`~calib.core.atomic`: atomic writes and output-path checks.
"""
