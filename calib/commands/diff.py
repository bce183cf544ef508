"""calib diff OLD.json NEW.json [--predict SAMPLES.csv]"""

from __future__ import annotations

import argparse

HELP = "compare two parameter files: what changed and whether it is significant (exit 3 when it is)"
DESCRIPTION = """\
Compare two parameter files parameter by parameter: old value, new value, change, and whether the
change is significant given both standard errors. Changes of device identity or driver are listed
first; then model-structure changes, then every parameter present in both files, then parameters
added or removed.

Test: two-sided z-test of the difference of two independent estimates,
z = (new - old) / sqrt(se_old^2 + se_new^2), with Holm's correction over all tested parameters so that
the chance of flagging any unchanged parameter stays at --alpha (family-wise, default 0.05). A fixed
parameter (e.g. a published value) counts as exact; a fitted parameter without a standard error (on a
bound, or not identifiable) is reported as untested. Parameters whose meaning changed with the model
structure (e.g. a unit's access-rate function went from linear to log) are reported as not comparable;
the rest of that section is tested with the total standard errors (stderr_total), since its values are
conditional on different model forms.

Exit status (extends the calib contract 0/1/2):
  0  nothing moved significantly
  3  a parameter present in both files moved significantly, or a model section (power, thermal,
     dvfs, timing) exists in only one of the files; with --strict also: parameters added or removed,
     model-structure changes, and changed values that cannot be tested
  2  bad input (unreadable or invalid file), 1 other failure
A device or driver change alone does not give 3: refitting after a driver update asks whether the
parameters moved.

--predict SAMPLES.csv also predicts the table's rows with both files and shows how the predictions
move (and the MAPE of each against power_w when the table has it); it does not change the exit status."""


EPILOG = "example:\n  calib diff before.json after.json --predict fitted/sim-gtx280.samples.csv"

def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter  # keep the exit-status table as written
    p.add_argument("old", metavar="OLD.json", help="parameter file before")
    p.add_argument("new", metavar="NEW.json", help="parameter file after")
    p.add_argument("--predict", metavar="SAMPLES.csv", default=None,
                   help="samples table (or kernel-description JSON) to predict with both files")
    p.add_argument("--alpha", type=float, default=0.05, help="family-wise significance level (default 0.05)")
    p.add_argument("--strict", action="store_true",
                   help="also exit 3 for added/removed parameters, structure changes and untestable changes")
    p.add_argument("--changed-only", action="store_true",
                   help="list only parameters that are not 'not significant'/'unchanged'")
    p.add_argument("--json", metavar="OUT.json", default=None, help="also write the comparison as JSON")


EXIT_MOVED = 3


def run(args: argparse.Namespace) -> int:
    from calib.core.atomic import atomic_write_json, check_not_input, check_output_file, json_safe
    from calib.core.errors import BadInputError
    from calib.model.checks import load_checked
    from calib.report.compare import compare, format_prediction_shift, format_text, prediction_shift

    check_output_file(args.json, "--json")
    check_not_input(args.json, args.old, args.new, args.predict, what="--json output")
    if not 0 < args.alpha < 1:
        raise BadInputError(f"--alpha {args.alpha}: must be between 0 and 1")
    old = load_checked(args.old)
    new = load_checked(args.new)
    c = compare(old, new, alpha=args.alpha, strict=args.strict)
    print(format_text(c, args.old, args.new, show_all=not args.changed_only))
    js = c.to_json()
    if args.predict:
        from calib.commands.advise import read_kernels

        t, notes = prediction_shift(old, new, read_kernels(args.predict), args.predict)
        print()
        print(format_prediction_shift(t, args.predict))
        for n in notes:
            print(f"  note: {n}")
        js["predictions"] = {"source": args.predict, "rows": t.to_dict(orient="records"), "notes": notes}
    if args.json:
        atomic_write_json(args.json, json_safe(js))
    status = EXIT_MOVED if c.moved else 0
    if not status:
        why = "nothing moved significantly"
    elif c.significant:
        why = f"{len(c.significant)} parameter(s) moved significantly"
    elif c.sections_added or c.sections_removed:
        why = "the files do not have the same sections (" + ", ".join(
            [f"added {s}" for s in c.sections_added] + [f"removed {s}" for s in c.sections_removed]) + ")"
    else:
        why = "structure or untested values changed (--strict)"
    print(f"exit status {status}: {why}")
    return status

