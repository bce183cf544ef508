"""calib advise PARAMS.json KERNEL.json|KERNELS.csv [-o ADVICE.json]"""

from __future__ import annotations

import argparse
import json

from calib.core.atomic import atomic_write_json, check_output_file, output_name
from calib.core.errors import BadInputError

HELP = "why a kernel is slow or wasteful (thesis Ch. V category) and what to change, with the predicted effect"
DESCRIPTION = (
    "For each kernel (a kernel description JSON, or a kernel table CSV with cnt_<class>, blocks, "
    "threads_per_block and mstr or ilp columns), compute Hong's Ch. V throughput quantities (MWP_App, MWP_BW, "
    "MWP_Proc, N, EffRatio, MSTR) from the fitted timing section, place the kernel in one of the thesis's 10 "
    "categories (0.85 bandwidth threshold), print the suggestion the thesis attaches to it and the change in "
    "time, power and energy that suggestion is predicted to bring (fitted timing and power models). A kernel "
    "lacking an input the category needs is reported as unknown, with the missing inputs named. Kernels with "
    "bytes_h2d/bytes_d2h also get their host-device copy time and energy when the file has a transfer section.")


EPILOG = "example:\n  calib advise fitted/sim-gtx580.json kernel.json"

def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("params", help="parameter file (JSON) with a timing section (and a power section for effects)")
    p.add_argument("kernels", help="kernel description (JSON) or kernel table (CSV)")
    p.add_argument("--kernel-name", default=None, help="analyse only this kernel")
    p.add_argument("-o", "--output", default=None, help="write the analysis (JSON)")


def read_kernels(path: str, fill_counts: bool = True):
    """Kernel rows from a description JSON (counts not listed: 0, or unknown without ``fill_counts``) or
    a samples or kernel table CSV."""
    if path.lower().endswith(".json"):
        from calib.model.predict import kernel_description_table

        return kernel_description_table(path, fill_counts=fill_counts)
    from calib.core.samples import read_samples

    return read_samples(path, require_power=False, require_act=False)


def format_advice(adv) -> list[str]:
    """Human-readable lines for one :class:`calib.model.advise.Advice`."""
    if adv.category is None:
        return [f"{adv.kernel}: category unknown -- missing: " + "; ".join(adv.missing)]
    q = adv.quantities
    lines = [f"{adv.kernel}: category {adv.category} (sub-category {adv.subcategory}): {adv.diagnosis}",
             f"  N {q['n']:.3g} {'<' if q['n'] < q['mwp_app_infin'] else '>='} MWP_App_InfiN {q['mwp_app_infin']:.3g}; "
             f"MWP_App {q['mwp_app']:.3g} (MSTR {q['mstr']:.3g}), MWP_Proc {q['mwp_proc']:.3g}, MWP_BW {q['mwp_bw']:.3g} "
             f"({q['mwp_bw'] / q['mwp_app']:.3f} x MWP_App; threshold 0.85); MWP {q['mwp']:.3g}; "
             f"EffRatio {q['eff_ratio']:.3f}",
             f"  suggestion: {adv.suggestion}"]
    for e in adv.effects:
        if e.note:
            lines.append(f"  - {e.action}: not evaluated ({e.note})")
        else:
            lines.append(f"  - {e.action}: {e.change}: predicted time {100 * e.time_change:+.1f}%, "
                         f"power {100 * e.power_change:+.1f}%, energy {100 * e.energy_change:+.1f}%")
    return lines


def run(args: argparse.Namespace) -> int:
    from calib.model.advise import advise
    from calib.model.checks import load_checked

    check_output_file(args.output, "-o", (args.params, args.kernels))

    pf = load_checked(args.params)
    df = read_kernels(args.kernels, fill_counts=False)
    if args.kernel_name is not None:
        names = [str(n) for n in df["workload"]] if "workload" in df.columns else []
        if args.kernel_name not in names:
            raise BadInputError(f"{args.kernels}: no kernel named {args.kernel_name!r} (kernels: {', '.join(names)})")
        df = df[df["workload"].astype(str) == args.kernel_name].reset_index(drop=True)
    try:
        result = advise(pf, df)
    except BadInputError as e:
        raise BadInputError(f"{args.params}: {e}") from None
    copies = None
    if "transfer" in pf and any(c in df.columns for c in ("bytes_h2d", "bytes_d2h")):
        from calib.report.advice import kernel_copies

        copies = kernel_copies(pf, df)
    for i, adv in enumerate(result):
        for line in format_advice(adv):
            print(line)
        if copies is not None:
            from calib.model.transfer import format_breakdown

            for line in format_breakdown(copies.iloc[i]):
                print("  " + line)
    if args.output:
        doc = {"params": args.params, "kernels": args.kernels, "advice": [a.to_dict() for a in result]}
        if copies is not None:
            doc["copies"] = json.loads(copies.to_json(orient="records"))
        atomic_write_json(args.output, doc)
        print(f"analysis: {output_name(args.output)}")
    return 0
