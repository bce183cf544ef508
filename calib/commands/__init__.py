"""One module per ``calib`` verb: ``HELP``, ``add_arguments(parser)``, ``run(args) -> int``."""
