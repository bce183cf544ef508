"""Reports, comparisons and bundles of parameter files.

- :mod:`calib.report.inputs`: find the data behind a parameter file (samples table, session);
- :mod:`calib.report.plots` and :mod:`calib.report.html`: the static HTML report (``calib report``);
- :mod:`calib.report.compare`: parameter-by-parameter comparison of two files (``calib diff``).

Bundles for publishing (``calib publish``, ``calib verify-bundle``) live in :mod:`calib.bundle`.
"""
