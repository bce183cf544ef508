"""calib optimize PARAMS.json KERNEL.json|KERNELS.csv|PROFILE.csv [--objective energy|edp|time] [--clocks ...]:
what each objective chooses is :data:`DESCRIPTION`'s (the clock table and the rule: :mod:`calib.model.energy`);
energy/edp need a power or dvfs section (refused, exit 2, on a timing-only file), and time with a power model
keeps the power and energy columns in the table."""

from __future__ import annotations

import argparse

from calib.core.atomic import output_name
from calib.core.errors import BadInputError

HELP = "choose the energy-, EDP- or time-optimal (core, memory) clocks and active-SM count for a kernel"
DESCRIPTION = (
    "For one kernel (a kernel description JSON, a kernel table from 'calib import ... --kernels', or an "
    "nvprof/ncu metrics CSV), predict time (timing section), power (DVFS power model) and energy at every "
    "supported (core, memory) clock pair, and recommend the pair with the least energy (or energy-delay "
    "product) whose time is within --max-slowdown of the default clocks. --objective time answers a time-only "
    "question, and is the default for a parameter file without a power model (a timing-only file from "
    "'calib fit KERNELS.csv --timing'): the lowest clocks whose predicted slowdown stays within --max-slowdown, "
    "i.e. the pair minimising core_mhz/max core + mem_mhz/max mem over the evaluated pairs (ties: the smaller "
    "slowdown, then the lower core clock), plus the fastest pair; power, energy and EDP are then NaN in the table "
    "(-o) and left out of the printed one. When the description has a measured time, times are scaled from it "
    "(Wang & Chu's baseline profile). With a power model, also reports the optimal number of active SMs (IPP "
    "eq. 34 and a GIPS/W sweep) with the energy savings (runtime+idle, runtime only, per-SM power gating).")

EPILOG = "example:\n  calib optimize fitted/sim-gtx280.json kernel.json"

def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("params", help="parameter file (JSON) with a timing section (and a power model for "
                                  "--objective energy/edp)")
    p.add_argument("kernel", help="kernel description (JSON), kernel table (CSV from 'calib import ... --kernels', "
                                  "one row per kernel) or nvprof/ncu metrics export (CSV)")
    p.add_argument("--kernel-name", default=None, help="which kernel, when the file describes several")
    p.add_argument("--objective", choices=["energy", "edp", "time"], default=None,
                   help="energy or edp: least energy (energy-delay product) within --max-slowdown (needs a power "
                        "model); time: the lowest clocks within --max-slowdown (least core_mhz/max core + "
                        "mem_mhz/max mem), plus the fastest pair. Default: energy, or time for a parameter file "
                        "without a power model")
    p.add_argument("--max-slowdown", type=float, default=0.10,
                   help="largest accepted time increase over the default clocks, as a fraction (default 0.10)")
    p.add_argument("--clocks", default=None, metavar="all|CORE:MEM,...",
                   help="also evaluate these (core, memory) clock pairs, MHz (e.g. 1000:4005,800:4005), besides "
                        "the parameter file's supported clocks (or, without them, its reference clocks)")
    p.add_argument("--no-anchor", action="store_true", help="ignore a measured time in the description (model time only)")
    p.add_argument("--predictor", choices=["mwp_cwp", "wangchu"], default=None,
                   help="timing model (default: the parameter file's choice)")
    p.add_argument("--temp-c", type=float, default=None,
                   help="temperature (degC) to evaluate the power model at (default: the description's temp_c, "
                        "else the idle temperature of the thermal section)")
    p.add_argument("-o", "--output", default=None, help="write the clock table (CSV)")
    p.add_argument("--sms-output", default=None, help="write the active-SM table (CSV)")
    p.add_argument("--blocks", type=int, default=None, help="launch blocks, for a profile without launch metrics")
    p.add_argument("--threads-per-block", type=int, default=None, help="threads per block, for such a profile")


def load_kernel(path: str, name: str | None, blocks: int | None = None, tpb: int | None = None):
    """One kernel's row (DataFrame) from a description JSON, a kernel table CSV (``calib import ...
    --kernels``: per-warp ``cnt_*`` counts and the launch shape, one row per kernel) or a profiler CSV."""
    import json
    import tempfile
    from pathlib import Path

    from calib.model.predict import kernel_description_table

    p = Path(path)
    if p.suffix.lower() == ".csv":
        from calib.importers.ncu_kernel import is_profile_csv, read_profile

        if is_profile_csv(p):
            descs = read_profile(p, blocks=blocks, threads_per_block=tpb)
            with tempfile.TemporaryDirectory() as d:
                tmp = Path(d) / "kernels.json"
                tmp.write_text(json.dumps(descs), encoding="utf-8")
                df = kernel_description_table(tmp)
            df.attrs["source"] = str(p)
        else:
            df = _kernel_table(p)
    else:
        df = kernel_description_table(p)
    names = [str(n) for n in df["workload"]]
    if name is not None:
        if name not in names:
            shown = list(dict.fromkeys(names))
            raise BadInputError(f"{p}: no kernel named {name!r} (kernels: {', '.join(shown)})")
        df = df[df["workload"].astype(str) == name]
        if len(df) > 1:
            if {"core_mhz", "mem_mhz"} <= set(df.columns) and len(df[["core_mhz", "mem_mhz"]].drop_duplicates()) > 1:
                raise BadInputError(f"{p}: kernel {name!r} has {len(df)} rows at different clocks; the clock table "
                                    "is scaled from one profiled pair: give a table with one row per kernel (e.g. "
                                    "the kernel profiled at one pair)")
            raise BadInputError(f"{p}: {len(df)} kernels are named {name!r}; give each kernel a unique name")
    elif len(df) > 1:
        uniq = list(dict.fromkeys(names))
        what = f"{len(df)} kernels" if len(uniq) == len(names) else f"{len(df)} rows of {len(uniq)} kernels"
        raise BadInputError(f"{p}: {what} ({', '.join(uniq[:6])}{' ...' if len(uniq) > 6 else ''}); "
                            "choose one with --kernel-name")
    return df.reset_index(drop=True)


def _kernel_table(p):
    """A kernel table (a samples table with ``cnt_*`` counts and the launch shape), or one ERROR naming the file."""
    from calib.core.samples import CNT_PREFIX, read_samples

    not_kernels = (f"{p}: not an nvprof/ncu metrics export nor a kernel table (per-warp cnt_* counts, blocks, "
                   "threads_per_block: calib import nvprof|ncu FILE --kernels); give a kernel description (JSON), "
                   "a kernel table or a profile")
    try:
        df = read_samples(p, require_power=False, require_act=False)
    except BadInputError as e:
        raise BadInputError(f"{not_kernels} ({e})") from None
    missing = [c for c in ("blocks", "threads_per_block") if c not in df.columns or df[c].isna().any()]
    if not any(c.startswith(CNT_PREFIX) for c in df.columns) or missing:
        raise BadInputError(not_kernels)
    return df


def _fmt_table(t) -> str:
    """The clock table as text: only the columns that have a value somewhere (a timing-only file has no power)."""
    cols = [("time_s", "time_ms", 1e3, "10.4f"), ("power_w", "power_w", 1.0, "8.2f"),
            ("energy_j", "energy_mj", 1e3, "10.4f"), ("edp_js", "edp_mj_ms", 1e6, "10.4f")]
    cols = [c for c in cols if t[c[0]].notna().any()]
    width = {c[0]: int(c[3].split(".")[0]) for c in cols}
    lines = [f"{'core_mhz':>8s} {'mem_mhz':>8s} " + " ".join(f"{h:>{width[c]}s}" for c, h, _, _ in cols)
             + f" {'slowdown':>9s}"]
    for _, r in t.iterrows():
        mark = " (default)" if r["default"] else ""
        lines.append(f"{r['core_mhz']:8g} {r['mem_mhz']:8g} " + " ".join(f"{k * r[c]:{f}}" for c, _, k, f in cols)
                     + f" {100 * r['slowdown']:+8.1f}%{mark}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    import math
    import sys

    from calib.core.atomic import atomic_write_text, check_output_file
    from calib.model import energy as E
    from calib.model.checks import load_checked

    for out, what in ((args.output, "-o"), (args.sms_output, "--sms-output")):
        check_output_file(out, what, (args.params, args.kernel))
    pf = load_checked(args.params)
    if "timing" not in pf:
        raise BadInputError(f"{args.params}: the parameter file has no timing section; fit one from a session with "
                            "timing microbenchmarks (calib run / calib fit)")
    powered = E.has_power_model(pf)
    objective = args.objective or ("energy" if powered else "time")
    if objective in E.POWER_OBJECTIVES and not powered:
        raise BadInputError(f"{args.params}: the parameter file has no power model (no power or dvfs section); "
                            f"--objective {objective} needs one: use --objective time (the default for a "
                            "timing-only file)")
    if not (args.max_slowdown >= 0):
        raise BadInputError(f"--max-slowdown must be >= 0 (a fraction, e.g. 0.1), not {args.max_slowdown}")
    if args.temp_c is not None and not (-60.0 < args.temp_c < 150.0):  # also refuses nan
        raise BadInputError(f"--temp-c {args.temp_c}: outside (-60, 150) degC")
    for opt, v in (("--blocks", args.blocks), ("--threads-per-block", args.threads_per_block)):
        if v is not None and v < 1:
            raise BadInputError(f"{opt} {v}: must be >= 1")
    if args.threads_per_block is not None and args.threads_per_block > 1024:
        raise BadInputError(f"--threads-per-block {args.threads_per_block}: exceeds 1024")
    pairs = None
    if args.clocks:
        from calib.model.predict import parse_clock_pairs

        pairs = E.candidate_pairs(pf, E.dvfs_section(pf), parse_clock_pairs(args.clocks, pf))
    k = load_kernel(args.kernel, args.kernel_name, args.blocks, args.threads_per_block)
    name = str(k["workload"].iloc[0])
    table = E.clock_table(pf, k, pairs=pairs, predictor=args.predictor, anchored=not args.no_anchor,
                          temp_c=args.temp_c)
    best = E.recommend(table, objective, args.max_slowdown)
    base = table[table["default"]].iloc[0]
    power = (f"power from the {table.attrs['power']} model at {table.attrs['temperature']}" if powered else
             "power not evaluated (the parameter file has no power model)")
    print(f"kernel {name}: time from the {table.attrs['time_from']}; {power}")
    if args.objective is None and not powered:
        print("objective: time (the default for a parameter file without a power model)")
    print(_fmt_table(table))
    bound = f"slowdown <= {100 * args.max_slowdown:g}%"
    if objective == "time":
        ms = 1e3
        print(f"recommendation (lowest clocks, {bound}; least core/{table['core_mhz'].max():g} + "
              f"mem/{table['mem_mhz'].max():g} MHz): {best['core_mhz']:g}/{best['mem_mhz']:g} MHz: "
              f"time {ms * best['time_s']:.4g} ms ({100 * best['slowdown']:+.1f}% vs the default "
              f"{base['core_mhz']:g}/{base['mem_mhz']:g} MHz: {ms * base['time_s']:.4g} ms), core "
              f"{100 * best['core_mhz'] / table['core_mhz'].max():.0f}% + memory "
              f"{100 * best['mem_mhz'] / table['mem_mhz'].max():.0f}% of the top clocks"
              + (f", power {best['power_w']:.1f} W" if math.isfinite(best["power_w"]) else ""))
        fast = E.fastest(table)
        print(f"fastest: {fast['core_mhz']:g}/{fast['mem_mhz']:g} MHz: time {ms * fast['time_s']:.4g} ms "
              f"({100 * fast['slowdown']:+.1f}% vs the default)")
    else:
        col = "energy_j" if objective == "energy" else "edp_js"
        gain = 1.0 - best[col] / base[col]
        unit = ("mJ", 1e3) if objective == "energy" else ("mJ*ms", 1e6)
        print(f"recommendation (least {objective}, {bound}): "
              f"{best['core_mhz']:g}/{best['mem_mhz']:g} MHz: {objective} {unit[1] * best[col]:.4g} {unit[0]} "
              f"({-100 * gain:+.1f}% vs the default {base['core_mhz']:g}/{base['mem_mhz']:g} MHz: "
              f"{unit[1] * base[col]:.4g} {unit[0]}), time {100 * best['slowdown']:+.1f}%, power {best['power_w']:.1f} W")
    sms = None
    if not powered:
        print("active SMs: not evaluated (GIPS/W needs a power model)")
    else:
        try:
            sms = E.optimal_sms(pf, k, predictor=args.predictor)
        except BadInputError as e:
            print(f"active SMs: not evaluated ({e})")
    if sms is not None:
        s = sms["savings"]
        print(f"active SMs: optimal {sms['optimal_sms_sweep']} of {sms['sm_count']} by GIPS/W sweep, "
              f"{sms['optimal_sms_eq34']} by eq. 34 (MWP {sms['mwp']:.3g}, CWP {sms['cwp']:.3g}, N {sms['n']:.3g}, "
              f"MWP_peak_BW {sms['mwp_peak_bw']:.3g}); energy saving of the optimum vs all SMs: "
              + ", ".join(f"{k_} {100 * v:.1f}%" for k_, v in
                          (("runtime+idle", s["runtime_idle"]), ("runtime", s["runtime"]), ("power-gating", s["powergating"]))
                          if not math.isnan(v)))
    if "transfer" in pf and any(c in k.columns for c in ("bytes_h2d", "bytes_d2h")):
        from calib.model.transfer import copy_breakdown, format_breakdown

        base_k = k.copy()
        for line in format_breakdown(copy_breakdown(pf, base_k, [float(base["time_s"])],
                                                    [float(base["energy_j"])]).iloc[0]):
            print(line)
    for note in table.attrs.get("notes", []):
        if note != E.NO_POWER_NOTE:  # (said on the first line already: a timing-only file is no mistake)
            sys.stderr.write(f"WARNING: {note}\n")
    if args.output:
        atomic_write_text(args.output, table.to_csv(index=False, float_format="%.10g", lineterminator="\n"))
        print(f"clock table: {output_name(args.output)}")
    if args.sms_output and sms is not None:
        atomic_write_text(args.sms_output, sms["table"].to_csv(index=False, float_format="%.10g", lineterminator="\n"))
        print(f"active-SM table: {args.sms_output}")
    elif args.sms_output:
        print(f"active-SM table: not written ({args.sms_output}): the active SMs were not evaluated")
    return 0
