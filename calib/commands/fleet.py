"""calib fleet submit|collect|analyze|report: calibrate every GPU of a Slurm cluster and compare them."""

from __future__ import annotations

import argparse
import html
import re
from pathlib import Path

from calib.commands.run import int_at_least, positive_number
from calib.core.errors import BadInputError

HELP = "calibrate a fleet: submit a Slurm job array, collect a Parquet dataset, analyse, report"
DESCRIPTION = (
    "Calibrate every GPU of a cluster. `submit` writes and submits an sbatch job array (one task per GPU, "
    "--gres=gpu:1 unless --gres says otherwise, resumed on requeue) running `calib run` into a shared fleet directory; `collect` turns its "
    "finished sessions into a partitioned Parquet dataset (appendable; incomplete and failed sessions listed); "
    "`analyze` gives the fleet's typical parameters, their spread, partial pooling (shrinkage) and outlier GPUs; "
    "`report` writes the HTML report.")

EPILOG = "example:\n  calib fleet submit /shared/fleet --count 64 --campaign standard --time 02:00:00"

#: one example per sub-verb (its --help ends with it; tests/test_cli_friction.py parses each one)
SUB_EPILOGS = {
    "submit": "example:\n  calib fleet submit /shared/fleet --count 64 --campaign standard --time 02:00:00",
    "collect": "example:\n  calib fleet collect /shared/fleet -o fleet.parquet",
    "analyze": "example:\n  calib fleet analyze fleet.parquet -o fleet-analysis --threshold 6",
    "report": "example:\n  calib fleet report fleet.parquet -o fleet-report",
}

#: expected shares of the time of analyze/report (measured on 100 and 1,000 virtual GPUs, 2 shared cores:
#: read 0.4-2.5 s, analyse 1.2-1.8 s (the report draws its histograms there: ~14 s more), node map 1.2-3.9 s,
#: tables and page < 1 s)
ANALYZE_STAGES = {"read": 1.5, "analyse": 1.5, "tables": 0.3}
REPORT_STAGES = {"read": 1.5, "analyse": 15.5, "tables": 0.5, "figures": 2.5, "page": 0.1}


_positive, _nonneg = int_at_least(1, "count"), int_at_least(0, "value")


def _gres(text: str) -> str:
    from calib.fleet.submit import GRES_RE

    if text.strip().lower() == "none":
        return ""
    if not re.fullmatch(GRES_RE, text):
        raise argparse.ArgumentTypeError(f"invalid --gres {text!r}: expected Slurm's name[:type][:count] "
                                         "(e.g. gpu:1, gpu:a100:1) or 'none'")
    return text


def _name(text: str) -> str:
    from calib.commands.run import MAX_SESSION_NAME

    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.+=,-]*", text):
        raise argparse.ArgumentTypeError(f"invalid fleet name {text!r}: letters, digits and _ . + = , - "
                                         "(not starting with '.' or '-')")
    top = MAX_SESSION_NAME - 12   # its sessions are <name>-<task:05d> (longer from task 100000 on)
    if len(text) > top:
        raise argparse.ArgumentTypeError(f"invalid fleet name ({len(text)} characters): at most {top} (its "
                                         "sessions are named <name>-<task>, whose files' names must fit the "
                                         "file system's 255)")
    return text


def add_arguments(p: argparse.ArgumentParser) -> None:
    from calib.cli import _HelpFormatter, _Parser

    sub = p.add_subparsers(dest="fleet_verb", metavar="SUBVERB", parser_class=_Parser)

    def add(verb: str, **kw) -> argparse.ArgumentParser:  # noqa: ANN003
        sp = sub.add_parser(verb, epilog=SUB_EPILOGS[verb], formatter_class=_HelpFormatter, **kw)
        # -q/-v also after the sub-verb (`calib fleet collect DIR -o F -q`), as after every verb
        sp.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                        help="print nothing but warnings and errors; no progress")
        sp.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS, help="more output")
        return sp

    s = add("submit", help="write and submit the sbatch job array (one task per GPU)",
            description="Write DIR/slurm/<name>.sbatch (a job array, one task per GPU: --gres=gpu:1 on real GPUs, "
                        "no GRES for a virtual fleet, --gres to change it; --requeue) and submit it with sbatch; "
                        "--dry-run prints the script only.")
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
    s.add_argument("--gres", type=_gres, default=None, metavar="GRES",
                   help="generic resources of each task as Slurm names them, e.g. gpu:a100:1, or 'none' "
                        "(default: gpu:1 on real GPUs, none with --sim)")
    s.add_argument("--sbatch", action="append", default=[], metavar="OPTION",
                   help="extra #SBATCH option line, e.g. --sbatch=--account=abc (repeatable)")
    s.add_argument("--dry-run", action="store_true", help="print the script; submit nothing")

    c = add("collect", help="sessions of a fleet directory -> partitioned Parquet dataset",
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
        a = add(verb, help=hlp, description=f"{hlp[0].upper()}{hlp[1:]} of the dataset FLEET.")
        a.add_argument("fleet", help="dataset directory written by `calib fleet collect`")
        a.add_argument("-o", "--output", required=True,
                       help="output directory (analysis CSV files" + (", index.html and figures)" if verb == "report" else ")"))
        a.add_argument("--threshold", type=positive_number("threshold"), default=None,
                       help="outlier threshold on |robust z| (default 6)")
        a.add_argument("--score", action="store_true",
                       help="virtual fleets only: score against the ground truth (planted outliers found, "
                            "per-GPU errors with and without pooling for the quick campaign)")


def run(args: argparse.Namespace) -> int:
    verb = getattr(args, "fleet_verb", None)
    if verb is None:
        raise BadInputError("calib fleet: no SUBVERB given (submit, collect, analyze or report)")
    return {"submit": _submit, "collect": _collect, "analyze": _analyze, "report": _analyze}[verb](args)


def _submit(args: argparse.Namespace) -> int:
    from calib.fleet.submit import FleetJob, submit
    from calib.progress import printer

    job = FleetJob(root=Path(args.dir), fleet=args.name, count=args.count, campaign=args.campaign,
                   preset=args.sim, first_serial=args.first_serial, first_task=args.first_task,
                   max_running=args.max_running, partition=args.partition, time_limit=args.time_limit,
                   extra_sbatch=tuple(args.sbatch), gres=args.gres)
    if args.sim:
        from microbench.devices import open_device

        open_device(f"sim:{args.sim}@{args.first_serial}").close()  # refuse an unknown preset before submitting
    text, job_id = submit(job, dry_run=args.dry_run)
    if args.dry_run:
        from calib.core.atomic import atomic_write_text

        atomic_write_text("-", text)   # the script is what was asked for: data on stdout, kept with -q
        return 0
    say = printer(args)
    say(f"submitted job array {job_id}: {args.count} task(s) of campaign '{args.campaign}' "
          f"({'virtual ' + args.sim if args.sim else 'one allocated GPU each'}) -> {args.dir}")
    say(f"script: {Path(args.dir) / 'slurm' / f'{args.name}.{args.first_task}-{args.first_task + args.count - 1}.sbatch'}")
    say(f"then:   calib fleet collect {args.dir} -o FLEET")
    return 0


def _collect(args: argparse.Namespace) -> int:
    from calib.core.atomic import check_output_dir
    from calib.fleet.dataset import collect
    from calib.progress import Progress, printer, wants_progress

    check_output_dir(args.output, "-o/--output")
    say = printer(args)
    bars: dict[str, Progress] = {}

    def progress(stage: str, done: int, total: int) -> None:
        # one bar per stage, counted in its items (sessions fitted, GPUs written): within a stage the
        # items take about the same time, so the count is the expected duration
        if total == 0:
            return   # nothing to do in this stage (e.g. no session waiting for a fit): no bar
        if stage not in bars:
            for b in bars.values():   # the previous stage is over
                b.close()
            bars.clear()
            bars[stage] = Progress(total, stage, wants_progress(args),
                                   unit="session" if stage == "fit" else "GPU")
        bars[stage].set(done)

    try:
        res = collect(args.dir, args.output, allow_mixed=args.allow_mixed, workers=args.workers, fit=args.fit,
                      progress=progress)
    finally:
        for b in bars.values():
            b.close()
    say(f"{args.output}: {res.added} GPU(s) added, {res.already} already in the dataset")
    for state in ("incomplete", "unfitted", "failed", "not started"):
        listed = res.listed(state)
        if listed:
            say(f"{len(listed)} session(s) {state}:")
            for s in listed:
                say(f"  {s.session}: {s.detail}")
    left = len(res.listed("incomplete", "unfitted", "failed", "not started"))
    if left:
        say(f"{left} session(s) not in the dataset (listed above and in {args.output}/_status.json); "
            "collect again when they finish")
    return 0


def _analyze(args: argparse.Namespace) -> int:
    from calib.core.atomic import atomic_write_json, check_output_dir, json_safe
    from calib.fleet.analysis import DEFAULT_THRESHOLD, analyze
    from calib.fleet.dataset import require_gpu_files
    from calib.fleet.report import GpusTableWriter, HistogramSink, write_report, write_tables
    from calib.fleet.score import PoolingErrorsSink
    from calib.progress import StagedProgress, printer, wants_progress

    out = Path(args.output)
    check_output_dir(out, "-o/--output")
    require_gpu_files(args.fleet)   # no dataset, or an empty one: refused before the output directory is made
    say = printer(args)
    report = args.fleet_verb == "report"
    threshold = args.threshold or DEFAULT_THRESHOLD
    with StagedProgress(REPORT_STAGES if report else ANALYZE_STAGES, args.fleet_verb, wants_progress(args)) as prog:
        out.mkdir(parents=True, exist_ok=True)
        # one parameter at a time: its per-GPU rows go to gpus.csv, its histogram and its score as it is
        # analysed (memory flat in the fleet size); gpus.csv appears, complete, only if the analysis succeeds
        hist = HistogramSink(out, threshold) if report else None
        pool = PoolingErrorsSink() if args.score else None
        with GpusTableWriter(out / "gpus.csv") as rows:
            sinks = [s for s in (rows, hist, pool) if s is not None]
            an = analyze(args.fleet, threshold=threshold, progress=prog.within, sinks=sinks)
        summary: dict = {"gpus": int(len(an.per_gpu)), "parameters": int(an.params["key"].nunique()),
                         "threshold": an.threshold, "outliers": an.outlier_gpus().to_dict("records"),
                         "notes": an.notes}
        extra = _score(an, pool, summary, out) if args.score else ""
        if report:
            index = write_report(an, out, extra_html=extra, progress=prog.within, histograms=hist.finish())
        else:
            prog.stage("tables")
            write_tables(an, out)
        atomic_write_json(out / "analysis.json", json_safe(summary))
    if report:
        say(f"report: {index}")
    o = an.outlier_gpus()
    say(f"{summary['gpus']} GPUs, {summary['parameters']} parameters; {len(o)} outlier GPU(s) at |z| > {an.threshold:g}")
    for _, r in o.iterrows():
        say(f"  {r['gpu_uuid']} (node {r['node']}, session {r['session']}): {r['parameters']}")
    if "score" in summary:
        sc = summary["score"]
        say(f"score: planted {len(sc['planted'])}, found {len(sc['found'])}, missed {sc['missed']}, "
            f"false outliers {sc['false']}")
    say(f"tables: {out}/params.csv, {out}/gpus.csv, {out}/outliers.csv, {out}/analysis.json")
    return 0


def _score(an, pool, summary: dict, out) -> str:  # noqa: ANN001
    from calib.core.atomic import atomic_write_text
    from calib.fleet.score import outlier_score

    if an.per_gpu["serial"].isna().all():
        raise BadInputError("--score: the dataset holds no virtual-fleet GPU (sim:<preset>@<serial>)")
    summary["score"] = outlier_score(an)
    tab = pool.table()
    atomic_write_text(out / "pooling_errors.csv", tab.to_csv(index=False, lineterminator="\n"))
    summary["pooling_errors"] = tab.to_dict("records")
    sc = summary["score"]
    return (f"<h2>Score against the virtual fleet's ground truth</h2><p>planted outliers "
            f"{html.escape(str(sc['planted']))}; found {sc['found']}; missed {sc['missed']}; false {sc['false']}. "
            f"Per-parameter errors with and without pooling (quick campaign): pooling_errors.csv.</p>")
