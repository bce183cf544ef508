"""calib report PARAMS.json [--session DIR] [--samples CSV] [--floorplan FLP] -o DIR"""

from __future__ import annotations

import argparse

HELP = "write a static HTML report (plots, parameter table, warnings, provenance) of a parameter file"
DESCRIPTION = (
    "Write DIR/index.html and its figures (DIR/fig/*.png): measured vs predicted power per workload, the power "
    "breakdown by unit, access rates, the fitted access-rate functions over the data, temperature steps with the "
    "fitted rise/decay curves, the floorplan heat map (a generic floorplan, or --floorplan), power and perf/W vs "
    "active SMs with the optimum, the DVFS voltage curves, residual "
    "plots, every parameter with unit, standard error and bounds, fit warnings and provenance. The page has no "
    "scripts and needs no server or network: open DIR/index.html from disk. "
    "The data behind the parameter file are found from its provenance: the samples table beside it "
    "(<name>.samples.csv, as `calib run` writes it) and the session directory when it is still on disk with the "
    "recorded sha256; --samples and --session name them explicitly. Without data the report shows the parameter "
    "file alone and says which figures were skipped and why. An existing DIR is replaced only if it holds a "
    "previous report.")


EPILOG = "example:\n  calib report fitted/sim-gtx280.json -o gtx280-report"

def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", metavar="PARAMS.json", help="parameter file (JSON)")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="report directory to write (index.html, fig/)")
    p.add_argument("--session", default=None, metavar="DIR", help="session directory the parameters were fitted from")
    p.add_argument("--samples", default=None, metavar="CSV", help="samples table the parameters were fitted on")
    p.add_argument("--kernels", default=None, metavar="KERNELS",
                   help="kernel descriptions (JSON) or kernel table (CSV): adds their category map (thesis ch. V) "
                        "and their host-device copy breakdown")
    p.add_argument("--floorplan", default=None, metavar="FLP",
                   help="HotSpot floorplan (.flp) for the heat map instead of the generic one built from the die-area "
                        "priors: every unit with power needs a block named like it or '<prefix>_<unit>' blocks")
    p.add_argument("--no-discover", action="store_true",
                   help="do not look for the samples table and session; report the parameter file alone "
                        "(plus --samples/--session when given)")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from calib.commands.advise import read_kernels
    from calib.core.atomic import check_not_input, check_output_dir
    from calib.model.floorplan import check_units_placed, ipp_powered_units, read_flp
    from calib.progress import StagedProgress, wants_progress
    from calib.report.html import write_report
    from calib.report.inputs import load_inputs
    from calib.report.plots import FIGURES

    check_output_dir(args.output, "report directory")  # before the work: not stdout, /proc, or under a file
    check_not_input(args.output, args.source, args.samples, args.session, what="report directory")
    # refused before any work: overlapping or gapped blocks
    fp = read_flp(args.floorplan) if args.floorplan is not None else None
    inp = load_inputs(args.source, samples=args.samples, session=args.session, discover=not args.no_discover)
    if fp is not None:
        if inp.params.model_of("power") == "ipp":  # a unit that can have power must have a block
            check_units_placed(fp, ipp_powered_units(inp.params["power"]), str(args.floorplan))
        inp.floorplan, inp.floorplan_path = fp, Path(args.floorplan)
    if args.kernels is not None:
        inp.kernels = read_kernels(args.kernels, fill_counts=False)
    # each figure about the same share of the time (the page itself is quick)
    with StagedProgress({**{s.key: 1.0 for s in FIGURES}, "page": 0.2}, "report", wants_progress(args)) as prog:
        summary = write_report(inp, args.output, progress=prog.stage)
    print(f"report: {summary['path']}")
    print(f"  {len(summary['figures'])} figures ({', '.join(summary['figures']) or 'none'}), "
          f"{summary['parameters']} parameters")
    for key, why in summary["skipped"]:
        print(f"  skipped {key}: {why}")
    return 0
