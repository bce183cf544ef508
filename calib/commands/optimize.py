"""calib optimize PARAMS.json KERNEL.json|PROFILE.csv [--objective energy|edp] [--max-slowdown F] [-o TABLE.csv]"""

from __future__ import annotations

import argparse

HELP = "choose the energy- or EDP-optimal (core, memory) clocks and active-SM count for a kernel"
DESCRIPTION = (
    "For one kernel (a kernel description JSON, or an nvprof/ncu metrics CSV), predict time (timing section), "
    "power (DVFS power model) and energy at every supported (core, memory) clock pair, and recommend the pair "
    "with the least energy (or energy-delay product) whose time is within --max-slowdown of the default clocks. "
    "When the description has a measured time, times are scaled from it (Wang & Chu's baseline profile). Also "
    "reports the optimal number of active SMs (IPP eq. 34 and a GIPS/W sweep) with the energy savings "
    "(runtime+idle, runtime only, per-SM power gating).")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("params", help="parameter file (JSON) with timing and power sections")
    p.add_argument("kernel", help="kernel description (JSON) or nvprof/ncu metrics export (CSV)")
    p.add_argument("--kernel-name", default=None, help="which kernel, when the file describes several")
    p.add_argument("--objective", choices=["energy", "edp"], default="energy", help="what to minimise (default energy)")
    p.add_argument("--max-slowdown", type=float, default=0.10,
                   help="largest accepted time increase over the default clocks, as a fraction (default 0.10)")
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
    """One kernel's row (DataFrame) from a description JSON or a profiler CSV."""
    import json
    import tempfile
    from pathlib import Path

    from calib.core.errors import BadInputError
    from calib.model.predict import kernel_description_table

    p = Path(path)
    if p.suffix.lower() == ".csv":
        from calib.importers.ncu_kernel import is_profile_csv, read_profile

        if not is_profile_csv(p):
            raise BadInputError(f"{p}: not an nvprof/ncu metrics export; give a kernel description (JSON) or a profile")
        descs = read_profile(p, blocks=blocks, threads_per_block=tpb)
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d) / "kernels.json"
            tmp.write_text(json.dumps(descs), encoding="utf-8")
            df = kernel_description_table(tmp)
        df.attrs["source"] = str(p)
    else:
        df = kernel_description_table(p)
    names = [str(n) for n in df["workload"]]
    if name is not None:
        if name not in names:
            raise BadInputError(f"{p}: no kernel named {name!r} (kernels: {', '.join(names)})")
        df = df[df["workload"].astype(str) == name]
        if len(df) > 1:
            raise BadInputError(f"{p}: {len(df)} kernels are named {name!r}; give each kernel a unique name")
    elif len(df) > 1:
        raise BadInputError(f"{p}: {len(df)} kernels ({', '.join(names[:6])}{' ...' if len(names) > 6 else ''}); "
                            "choose one with --kernel-name")
    return df.reset_index(drop=True)


def _fmt_table(t) -> str:
    lines = [(f"{'core_mhz':>8s} {'mem_mhz':>8s} {'time_ms':>10s} {'power_w':>8s} {'energy_mj':>10s} "
              f"{'edp_mj_ms':>10s} {'slowdown':>9s}")]
    for _, r in t.iterrows():
        mark = " (default)" if r["default"] else ""
        lines.append(f"{r['core_mhz']:8g} {r['mem_mhz']:8g} {1e3 * r['time_s']:10.4f} {r['power_w']:8.2f} "
                     f"{1e3 * r['energy_j']:10.4f} {1e6 * r['edp_js']:10.4f} {100 * r['slowdown']:+8.1f}%{mark}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from calib.core.atomic import check_not_input, check_output_file

    for out, what in ((args.output, "-o"), (args.sms_output, "--sms-output")):
        if out is not None:
            check_output_file(out, what)
            check_not_input(out, args.params, args.kernel, what=what)
    import math
    import sys

    from calib.core.atomic import atomic_write_text
    from calib.core.errors import BadInputError
    from calib.model import energy as E

    from calib.model.checks import load_checked

    pf = load_checked(args.params)
    if "timing" not in pf:
        raise BadInputError(f"{args.params}: the parameter file has no timing section; fit one from a session with "
                            "timing microbenchmarks (calib run / calib fit)")
    if "power" not in pf and "dvfs" not in pf:
        raise BadInputError(f"{args.params}: the parameter file has no power model")
    if not (args.max_slowdown >= 0):
        raise BadInputError(f"--max-slowdown must be >= 0 (a fraction, e.g. 0.1), not {args.max_slowdown}")
    if args.temp_c is not None and not (-60.0 < args.temp_c < 150.0):  # also refuses nan
        raise BadInputError(f"--temp-c {args.temp_c}: outside (-60, 150) degC")
    for opt, v in (("--blocks", args.blocks), ("--threads-per-block", args.threads_per_block)):
        if v is not None and v < 1:
            raise BadInputError(f"{opt} {v}: must be >= 1")
    if args.threads_per_block is not None and args.threads_per_block > 1024:
        raise BadInputError(f"--threads-per-block {args.threads_per_block}: exceeds 1024")
    k = load_kernel(args.kernel, args.kernel_name, args.blocks, args.threads_per_block)
    name = str(k["workload"].iloc[0])
    table = E.clock_table(pf, k, predictor=args.predictor, anchored=not args.no_anchor, temp_c=args.temp_c)
    best = E.recommend(table, args.objective, args.max_slowdown)
    base = table[table["default"]].iloc[0]
    print(f"kernel {name}: time from the {table.attrs['time_from']}; power from the "
          f"{'DVFS' if E.dvfs_section(pf) is not None else 'IPP'} model at {table.attrs['temperature']}")
    print(_fmt_table(table))
    col = "energy_j" if args.objective == "energy" else "edp_js"
    gain = 1.0 - best[col] / base[col]
    unit = ("mJ", 1e3) if args.objective == "energy" else ("mJ*ms", 1e6)
    print(f"recommendation (least {args.objective}, slowdown <= {100 * args.max_slowdown:g}%): "
          f"{best['core_mhz']:g}/{best['mem_mhz']:g} MHz: {args.objective} {unit[1] * best[col]:.4g} {unit[0]} "
          f"({-100 * gain:+.1f}% vs the default {base['core_mhz']:g}/{base['mem_mhz']:g} MHz: "
          f"{unit[1] * base[col]:.4g} {unit[0]}), time {100 * best['slowdown']:+.1f}%, power {best['power_w']:.1f} W")
    sms = None
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
        sys.stderr.write(f"WARNING: {note}\n")
    if args.output:
        atomic_write_text(args.output, table.to_csv(index=False, float_format="%.10g", lineterminator="\n"))
        print(f"clock table: {args.output}")
    if args.sms_output and sms is not None:
        atomic_write_text(args.sms_output, sms["table"].to_csv(index=False, float_format="%.10g", lineterminator="\n"))
        print(f"active-SM table: {args.sms_output}")
    return 0
