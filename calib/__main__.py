"""``python -m calib``: the same command line as the ``calib`` console script."""

from calib.cli import script_main

script_main()
