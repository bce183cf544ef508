"""Calibrating a fleet (issue 16): every GPU of a cluster, results as one partitioned dataset.

- :mod:`~calib.fleet.layout`: the shared fleet directory the job array writes into;
- :mod:`~calib.fleet.submit`: the ``sbatch`` job-array script (one task per GPU) and its submission;
- :mod:`~calib.fleet.paramrows`: the one adapter that reads parameter files (rows of section, name, value,
  stderr, bounds, unit);
- :mod:`~calib.fleet.dataset`: collect sessions into a partitioned Parquet dataset (pyarrow), appendable,
  atomic per GPU, with the incomplete/failed sessions listed;
- :mod:`~calib.fleet.analysis`: fleet-typical parameters, between-GPU spread, partial pooling
  (empirical-Bayes shrinkage), robust-z outliers per parameter and by a reference workload;
- :mod:`~calib.fleet.report`: the HTML report (histograms, outlier table, map by node).
"""
