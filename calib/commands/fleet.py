"""calib fleet submit|collect|analyze|report: calibrate every GPU of a Slurm cluster and compare them."""

from __future__ import annotations

import argparse

HELP = "calibrate a fleet: submit a Slurm job array, collect a Parquet dataset, analyse, report"
DESCRIPTION = (
    "Calibrate every GPU of a cluster. `submit` writes and submits an sbatch job array (one task per GPU, "
    "--gres=gpu:1, resumed on requeue) running `calib run` into a shared fleet directory; `collect` turns its "
    "finished sessions into a partitioned Parquet dataset (appendable; incomplete and failed sessions listed); "
    "`analyze` gives the fleet's typical parameters, their spread, partial pooling (shrinkage) and outlier GPUs; "
    "`report` writes the HTML report.")


def _positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid count {text!r}: expected an integer >= 1") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"invalid count {v}: expected an integer >= 1")
    return v


def _nonneg(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: expected an integer >= 0") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"invalid value {v}: expected an integer >= 0")
    return v


def _threshold(text: str) -> float:
    import math

    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid threshold {text!r}: expected a number > 0") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"invalid threshold {text!r}: expected a number > 0")
    return v


def _name(text: str) -> str:
    import re

    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.+=,-]*", text):
        raise argparse.ArgumentTypeError(f"invalid fleet name {text!r}: letters, digits and _ . + = , - "
                                         "(not starting with '.' or '-')")
    return text


def add_arguments(p: argparse.ArgumentParser) -> None:
    from calib.cli import _Parser

    sub = p.add_subparsers(dest="fleet_verb", metavar="SUBVERB", parser_class=_Parser)
    s = sub.add_parser("submit", help="write and submit the sbatch job array (one task per GPU)",
                       description="Write DIR/slurm/<name>.sbatch (a job array, one task per GPU, --gres=gpu:1, "
                                   "--requeue) and submit it with sbatch; --dry-run prints the script only.")
    s.add_argument("dir", help="shared fleet directory (sessions, parameter files, task records go here)")
    s.add_argument("--count", type=_positive, required=True, help="number of GPUs (array tasks)")
    s.add_argument("--name", type=_name, default="fleet", help="fleet name: session names are <name>-<task> (default fleet)")
    s.add_argument("--campaign", default="standard", choices=["quick", "standard", "full"],
                   help="campaign of every task (default standard; quick is the short campaign)")
    s.add_argument("--sim", metavar="PRESET", default=None,
                   help="a virtual fleet: task k runs sim:PRESET@<first-serial + k> instead of the allocated GPU")
    s.add_argument("--first-serial", type=_nonneg, default=0, help="serial of the virtual unit of the first task")
    s.add_argument("--first-task", type=_nonneg, default=0,
                   help="array index of the first task (to append GPUs to a fleet: session names stay unique)")
    s.add_argument("--max-running", type=_positive, default=None, help="at most this many tasks at once (%%N)")
    s.add_argument("--partition", default=None, help="Slurm partition")
    s.add_argument("--time", dest="time_limit", default=None, help="Slurm time limit per task (e.g. 02:00:00)")
    s.add_argument("--sbatch", action="append", default=[], metavar="OPTION",
                   help="extra #SBATCH option line, e.g. --sbatch=--account=abc (repeatable)")
    s.add_argument("--dry-run", action="store_true", help="print the script; submit nothing")

    c = sub.add_parser("collect", help="sessions of a fleet directory -> partitioned Parquet dataset",
                       description="Collect the finished sessions of DIR into the Parquet dataset FLEET "
                                   "(partitioned by chip, driver, campaign; one row per GPU and parameter). "
                                   "Appendable; incomplete and failed sessions are listed.")
    c.add_argument("dir", help="fleet directory (see `calib fleet submit`)")
    c.add_argument("-o", "--output", required=True, help="dataset directory FLEET (created or appended to)")
    c.add_argument("--allow-mixed", action="store_true", help="accept GPUs of different chips in one dataset")
    c.add_argument("--workers", type=_positive, default=2,
                   help="processes reading (and with --fit, fitting) sessions (default 2)")
    c.add_argument("--fit", action="store_true",
                   help="first fit the complete sessions that have no parameter file, in a local process pool")

    for verb, hlp in (("analyze", "fleet-typical parameters, spread, partial pooling, outliers"),
                      ("report", "HTML report: histograms per parameter, outlier table, map by node")):
        a = sub.add_parser(verb, help=hlp, description=f"{hlp[0].upper()}{hlp[1:]} of the dataset FLEET.")
        a.add_argument("fleet", help="dataset directory written by `calib fleet collect`")
        a.add_argument("-o", "--output", required=True,
                       help="output directory (analysis CSV files" + (", index.html and figures)" if verb == "report" else ")"))
        a.add_argument("--threshold", type=_threshold, default=None,
                       help="outlier threshold on |robust z| (default 6)")
        a.add_argument("--score", action="store_true",
                       help="virtual fleets only: score against the ground truth (planted outliers found, "
                            "per-GPU errors with and without pooling for the quick campaign)")


def run(args: argparse.Namespace) -> int:
    from calib.core.errors import BadInputError

    verb = getattr(args, "fleet_verb", None)
    if verb is None:
        raise BadInputError("calib fleet: no SUBVERB given (submit, collect, analyze or report)")
    return {"submit": _submit, "collect": _collect, "analyze": _analyze, "report": _analyze}[verb](args)


def _submit(args: argparse.Namespace) -> int:
    from pathlib import Path

    from calib.fleet.submit import FleetJob, submit

    job = FleetJob(root=Path(args.dir), fleet=args.name, count=args.count, campaign=args.campaign,
                   preset=args.sim, first_serial=args.first_serial, first_task=args.first_task,
                   max_running=args.max_running, partition=args.partition, time_limit=args.time_limit,
                   extra_sbatch=tuple(args.sbatch))
    if args.sim:
        from microbench.devices import open_device

        open_device(f"sim:{args.sim}@{args.first_serial}").close()  # refuse an unknown preset before submitting
    text, job_id = submit(job, dry_run=args.dry_run)
    if args.dry_run:
        print(text, end="")
        return 0
    print(f"submitted job array {job_id}: {args.count} task(s) of campaign '{args.campaign}' "
          f"({'virtual ' + args.sim if args.sim else 'one allocated GPU each'}) -> {args.dir}")
    print(f"script: {Path(args.dir) / 'slurm' / f'{args.name}.{args.first_task}-{args.first_task + args.count - 1}.sbatch'}")
    print(f"then:   calib fleet collect {args.dir} -o FLEET")
    return 0


def _collect(args: argparse.Namespace) -> int:
    from calib.fleet.dataset import collect

    res = collect(args.dir, args.output, allow_mixed=args.allow_mixed, workers=args.workers, fit=args.fit)
    print(f"{args.output}: {res.added} GPU(s) added, {res.already} already in the dataset")
    for state in ("incomplete", "unfitted", "failed", "not started"):
        listed = res.listed(state)
        if listed:
            print(f"{len(listed)} session(s) {state}:")
            for s in listed:
                print(f"  {s.session}: {s.detail}")
    left = len(res.listed("incomplete", "unfitted", "failed", "not started"))
    if left:
        print(f"{left} session(s) not in the dataset (listed above and in {args.output}/_status.json); "
              "collect again when they finish")
    return 0


def _analyze(args: argparse.Namespace) -> int:
    from pathlib import Path

    from calib.core.atomic import atomic_write_json, check_output_dir
    from calib.fleet.analysis import DEFAULT_THRESHOLD, analyze

    out = Path(args.output)
    check_output_dir(out, "-o/--output")
    an = analyze(args.fleet, threshold=args.threshold or DEFAULT_THRESHOLD)
    out.mkdir(parents=True, exist_ok=True)
    summary: dict = {"gpus": int(an.gpus["gpu_uuid"].nunique()), "parameters": int(an.params["key"].nunique()),
                     "threshold": an.threshold, "outliers": an.outlier_gpus().to_dict("records"), "notes": an.notes}
    extra = ""
    if args.score:
        extra = _score(an, summary, out)
    if args.fleet_verb == "report":
        from calib.fleet.report import write_report

        index = write_report(an, out, extra_html=extra)
        print(f"report: {index}")
    else:
        an.params.to_csv(out / "params.csv", index=False)
        an.gpus.to_csv(out / "gpus.csv", index=False)
        an.outlier_gpus().to_csv(out / "outliers.csv", index=False)
    atomic_write_json(out / "analysis.json", _clean(summary))
    o = an.outlier_gpus()
    print(f"{summary['gpus']} GPUs, {summary['parameters']} parameters; {len(o)} outlier GPU(s) at |z| > {an.threshold:g}")
    for _, r in o.iterrows():
        print(f"  {r['gpu_uuid']} (node {r['node']}, session {r['session']}): {r['parameters']}")
    if "score" in summary:
        sc = summary["score"]
        print(f"score: planted {len(sc['planted'])}, found {len(sc['found'])}, missed {sc['missed']}, "
              f"false outliers {sc['false']}")
    print(f"tables: {out}/params.csv, {out}/gpus.csv, {out}/outliers.csv, {out}/analysis.json")
    return 0


def _clean(x):  # noqa: ANN001, ANN202
    """JSON-ready copy: numpy scalars -> Python, NaN/inf -> None (the file is strict JSON)."""
    import math

    import numpy as np

    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return float(x) if math.isfinite(float(x)) else None
    return x if x is None or isinstance(x, str) else str(x)


def _score(an, summary: dict, out) -> str:  # noqa: ANN001
    import html

    from calib.core.errors import BadInputError
    from calib.fleet.score import outlier_score, pooling_errors, truths

    if an.gpus["serial"].isna().all():
        raise BadInputError("--score: the dataset holds no virtual-fleet GPU (sim:<preset>@<serial>)")
    summary["score"] = outlier_score(an)
    presets = [u.removeprefix("SIM-") for u in an.gpus["gpu_uuid"].unique() if u.startswith("SIM-")]
    tab = pooling_errors(an, truths(presets, workers=2))
    tab.to_csv(out / "pooling_errors.csv", index=False)
    summary["pooling_errors"] = tab.to_dict("records")
    sc = summary["score"]
    return (f"<h2>Score against the virtual fleet's ground truth</h2><p>planted outliers "
            f"{html.escape(str(sc['planted']))}; found {sc['found']}; missed {sc['missed']}; false {sc['false']}. "
            f"Per-parameter errors with and without pooling (quick campaign): pooling_errors.csv.</p>")
