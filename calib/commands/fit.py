"""calib fit SOURCE -o PARAMS.json"""

from __future__ import annotations

import argparse

HELP = "fit a parameter file from a session directory or a samples table"
DESCRIPTION = (HELP + ". The model terms follow from the data: IPP power (one clock configuration), DVFS power "
               "(several), thermal model (sessions with thermal steps).")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", help="session directory or samples table (CSV)")
    p.add_argument("-o", "--output", required=True, help="parameter file to write (JSON)")
    p.add_argument("--mem-units", default=None,
                   help="comma-separated units of the memory clock domain (default: names containing dram/global/local/mem)")
    p.add_argument("--cv", type=int, default=None, metavar="K",
                   help="also report K-fold cross-validated MAPE, folds by workload")
    p.add_argument("--sm-count", type=int, default=None,
                   help="number of SMs (samples tables only; default: the largest active_sms in the table, else 1, i.e. MaxPower per chip)")
    g = p.add_argument_group("DVFS model (tables with several clock configurations)")
    g.add_argument("--ar-form", default=None, choices=["tpow", "boxcox", "pow", "log", "linear"],
                   help="access-rate transform of every unit (default: tpow, thresholded power)")
    g.add_argument("--ar-threshold", default=None, metavar="T|fit",
                   help="activity threshold of the tpow transform, or 'fit' (default 0.03)")
    g.add_argument("--fit-method", default=None, choices=["joint", "alternating"],
                   help="joint bounded least squares (default) or gpmTOOL's alternating scheme")


def run(args: argparse.Namespace) -> int:
    from calib.core.atomic import check_not_input, check_output_file

    check_output_file(args.output, "parameter file")
    check_not_input(args.output, args.source, what="parameter file")
    from calib.core.errors import BadInputError
    from calib.fit.pipeline import fit_source
    from calib.report_text import fit_summary

    if args.cv is not None and args.cv < 2:
        raise BadInputError("--cv needs K >= 2")
    if args.sm_count is not None and args.sm_count < 1:
        raise BadInputError(f"--sm-count {args.sm_count}: must be >= 1")
    mem = set(u.strip() for u in args.mem_units.split(",") if u.strip()) if args.mem_units else None
    dvfs_opts: dict = {}
    if args.ar_form:
        dvfs_opts["ar_form"] = args.ar_form
    if args.ar_threshold is not None:
        if args.ar_threshold == "fit":
            dvfs_opts["ar_threshold"] = None
        else:
            try:
                dvfs_opts["ar_threshold"] = float(args.ar_threshold)
            except ValueError:
                raise BadInputError(f"--ar-threshold: {args.ar_threshold!r} is neither a number nor 'fit'") from None
            if not 0.0 < dvfs_opts["ar_threshold"] < 1.0:
                raise BadInputError("--ar-threshold must be in (0, 1)")
    if args.fit_method:
        dvfs_opts["method"] = args.fit_method
    out = fit_source(args.source, mem_units=mem, cv=args.cv, sm_count=args.sm_count, dvfs_options=dvfs_opts)
    out.params.save(args.output)
    print(fit_summary(out.params))
    if out.cv is not None:
        print(f"cross-validation ({args.cv} folds by workload): MAPE {out.cv.mape_pct:.2f}%")
    print(f"parameters written to {args.output}")
    return 0
