"""calib fit SOURCE -o PARAMS.json"""

from __future__ import annotations

import argparse

from calib.core.atomic import check_output_file, output_name

HELP = "fit a parameter file from a session directory or a samples table"
DESCRIPTION = (HELP + ". The model terms follow from the data: IPP power (one clock configuration), DVFS power "
               "(several), thermal model (sessions with thermal steps).")


EPILOG = "example:\n  calib fit fitted/sim-gtx280.samples.csv -o gtx280.json"

def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", help="session directory or samples table (CSV)")
    p.add_argument("-o", "--output", required=True, help="parameter file to write (JSON)")
    p.add_argument("--mem-units", default=None,
                   help="comma-separated units of the memory clock domain (default: names containing dram/global/local/mem)")
    p.add_argument("--cv", type=int, default=None, metavar="K",
                   help="also report K-fold cross-validated MAPE, folds by workload")
    p.add_argument("--heldout", default=None, metavar="TABLE",
                   help="samples table (CSV, power_w and workload) of measured workloads not fitted on, e.g. a few "
                        "applications: scored, and the prediction intervals' model discrepancy taken from them")
    p.add_argument("--accept-poor-fit", action="store_true",
                   help="write the parameter file even when the fit's error is absurd (calib.model.validation."
                        "FIT_LIMITS, e.g. power MAPE above 25 %%); the file records it and `calib validate` refuses it")
    p.add_argument("--sm-count", type=int, default=None,
                   help="number of SMs (samples tables only; default: the largest active_sms in the table, else 1, i.e. MaxPower per chip)")
    t = p.add_argument_group("timing section from a kernel table (calib import nvprof|ncu FILE --kernels)")
    t.add_argument("--timing", action="store_true",
                   help="fit only the timing section from (kernel, clocks, time) rows; no power needed. The model form "
                        "is chosen by cross-validation by kernel (calib/fit/timing_table.py)")
    t.add_argument("--predictor", default="auto", choices=["auto", "mwp_cwp", "wangchu"],
                   help="timing model (default: chosen by cross-validation)")
    t.add_argument("--chip", default=None,
                   help="GPU chip or compute capability (e.g. GP102, 6.1) for the SM issue width, when the table's "
                        "arch column does not give it")
    g = p.add_argument_group("DVFS model (tables with several clock configurations)")
    g.add_argument("--ar-form", default=None, choices=["tpow", "boxcox", "pow", "log", "linear"],
                   help="access-rate transform of every unit (default: tpow, thresholded power)")
    g.add_argument("--ar-threshold", default=None, metavar="T|fit",
                   help="activity threshold of the tpow transform, or 'fit' (default 0.03)")
    g.add_argument("--fit-method", default=None, choices=["joint", "alternating"],
                   help="joint bounded least squares (default) or gpmTOOL's alternating scheme")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from calib.core.errors import BadInputError
    from calib.fit.pipeline import FIT_STAGES, TABLE_STAGES, fit_source
    from calib.progress import StagedProgress, wants_progress
    from calib.report_text import fit_summary

    check_output_file(args.output, "parameter file", (args.source, args.heldout))
    if args.cv is not None and args.cv < 2:
        raise BadInputError("--cv needs K >= 2")
    if args.sm_count is not None and args.sm_count < 1:
        raise BadInputError(f"--sm-count {args.sm_count}: must be >= 1")
    if args.timing:
        if args.heldout:
            raise BadInputError("--heldout scores a power model; a timing fit (--timing) has none")
        return _run_timing(args)
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
    stages = FIT_STAGES if Path(args.source).is_dir() else TABLE_STAGES
    with StagedProgress(stages, "fit", wants_progress(args)) as prog:
        out = fit_source(args.source, mem_units=mem, cv=args.cv, sm_count=args.sm_count, dvfs_options=dvfs_opts,
                         accept_poor_fit=args.accept_poor_fit, progress=prog.stage, heldout=args.heldout)
    out.params.save(args.output)
    print(fit_summary(out.params))
    if out.cv is not None:
        print(f"cross-validation ({args.cv} folds by workload): MAPE {out.cv.mape_pct:.2f}%")
    st = out.params["power"].stats if "power" in out.params else {}
    if args.heldout and st.get("heldout_mape_pct") is not None:
        print(f"held-out workloads ({args.heldout}, {st['heldout_rows']} rows): power MAPE "
              f"{st['heldout_mape_pct']:.2f}%; the prediction intervals' model discrepancy comes from them")
    print(f"parameters written to {output_name(args.output)}")
    return 0


def _run_timing(args: argparse.Namespace) -> int:
    """``calib fit KERNELS.csv --timing -o P.json``: a parameter file with only a timing section."""
    from calib.fit.pipeline import fit_timing_table
    from calib.progress import StagedProgress, wants_progress
    from calib.report_text import fit_summary

    with StagedProgress({"kernel table": 0.02, "timing": 0.98}, "fit", wants_progress(args)) as prog:
        pf = fit_timing_table(args.source, predictor=args.predictor, chip=args.chip, cv_folds=args.cv or 5,
                              sm_count=args.sm_count, accept_poor_fit=args.accept_poor_fit, progress=prog.stage).params
    pf.save(args.output)
    print(fit_summary(pf))
    st = pf["timing"].stats
    cv = st.get("structure_cv") or {}
    if cv:
        print(f"model form by {next(iter(cv.values()))['folds']}-fold cross-validation by kernel "
              f"({st['structure_cv_score']}): " + ", ".join(f"{k} {_pct(v.get(st['structure_cv_score']))}"
                                                          for k, v in cv.items())
              + f" -> {st['structure_chosen']}")
    print(f"parameters written to {output_name(args.output)}")
    return 0


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}%"
