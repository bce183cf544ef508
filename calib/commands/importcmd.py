"""calib import FORMAT FILE -o SAMPLES.csv"""

from __future__ import annotations

import argparse
import math
import warnings

from calib.core.atomic import check_output_file, output_name
from calib.core.errors import BadInputError

HELP = "convert measurements from other tools (gpmTOOL, nvprof, ncu, DCGM) into a samples table"
DESCRIPTION = (HELP + ". Formats: gpmtool (gpmTOOL measurement CSV), nvprof (nvprof --csv --metrics), ncu "
               "(ncu --csv, details or --page raw), dcgm (dcgmi dmon output with profiling fields). Profiler "
               "exports carry no power: join it with --power. The metric -> unit mappings are documented in "
               "calib/importers/ncu.py and calib/importers/dcgm.py.")


EPILOG = "example:\n  calib import gpmtool tpds2019_micro_named_gtxtitanx.csv -o micro.csv"

def add_arguments(p: argparse.ArgumentParser) -> None:
    from calib.importers import FORMATS

    p.add_argument("format", choices=sorted(FORMATS), help="input format")
    p.add_argument("file", help="file to import")
    p.add_argument("-o", "--output", required=True, help="samples table to write (CSV)")
    p.add_argument("--workload", default=None, help="workload name (dcgm; default: the file name)")
    p.add_argument("--skip-idle", action="store_true", help="dcgm: drop samples whose activity fields are all 0")
    p.add_argument("--power", default=None, metavar="CSV",
                   help="CSV with workload,power_w[,core_mhz,mem_mhz,temp_c] joined to the imported rows by workload "
                        "(and clocks when both have them)")
    p.add_argument("--core-mhz", type=float, default=None, help="set core_mhz on every row that has none")
    p.add_argument("--mem-mhz", type=float, default=None, help="set mem_mhz on every row that has none")
    k = p.add_argument_group("kernel tables (nvprof/ncu with --kernels)")
    k.add_argument("--kernels", action="store_true",
                   help="write a kernel table for the timing model instead of power activities: one row per kernel and "
                        "clock pair with per-warp counts, launch shape, time_s and the measured clocks "
                        "(mapping: calib/importers/ncu_kernel.py)")
    k.add_argument("--sm-count", type=int, default=None, help="SMs of the GPU (writes active_sms)")
    k.add_argument("--chip", default=None, help="GPU chip (e.g. GP102) when the export's board name does not tell it")
    k.add_argument("--blocks", type=int, default=None, help="grid size for exports without a launch shape (nvprof summaries)")
    k.add_argument("--threads-per-block", type=int, default=None, help="block size for exports without a launch shape")
    k.add_argument("--trace", default=None, metavar="CSV",
                   help="nvprof: the --print-gpu-trace --csv export (no metrics) of the same application, for the "
                        "durations and launch shapes a metrics export lacks (nvprof replays kernels to count)")


def _join_power(df, path: str):
    """Left-join power (and clocks, temperature) from a CSV keyed by workload (and clocks when both have them)."""
    from calib.core.samples import read_samples

    pw = read_samples(path, require_power=True, require_act=False)
    pw = pw[[c for c in ("workload", "power_w", "core_mhz", "mem_mhz", "temp_c") if c in pw.columns]].copy()
    clocks = [c for c in ("core_mhz", "mem_mhz") if c in pw.columns]
    if pw.duplicated(["workload"] + clocks).any():
        k = pw[pw.duplicated(["workload"] + clocks)].iloc[0]
        raise BadInputError(f"{path}: more than one power value for "
                            + ", ".join(f"{c}={k[c]}" for c in ["workload"] + clocks))
    keys = ["workload"] + [c for c in clocks if c in df.columns]
    df = df.drop(columns=[c for c in ("power_w",) if c in df.columns]).copy()
    if "temp_c" in df.columns:
        pw = pw.drop(columns=["temp_c"], errors="ignore")
    df["workload"] = df["workload"].astype(str)
    pw["workload"] = pw["workload"].astype(str)
    # one output row per imported row and matching power row (a kernel profiled once, measured at many clocks)
    out = df.merge(pw, on=keys, how="left")
    miss = out["power_w"].isna()
    if miss.any():
        warnings.warn(f"{path}: no power for {int(miss.sum())} of {len(out)} rows "
                      f"(e.g. workload {out.loc[miss, 'workload'].iloc[0]!r})")
    unused = sorted(set(pw["workload"]) - set(df["workload"]))
    if unused:
        warnings.warn(f"{path}: {len(unused)} workload(s) not in the imported file, ignored (e.g. {unused[0]!r})")
    return out


def run(args: argparse.Namespace) -> int:
    from calib.core.samples import check_samples, table_info, write_samples
    from calib.importers import import_table

    check_output_file(args.output, "samples table", (args.file, args.power, args.trace))
    opts = {"workload": args.workload, "skip_idle": args.skip_idle} if args.format == "dcgm" else {}
    for opt, v in (("--core-mhz", args.core_mhz), ("--mem-mhz", args.mem_mhz)):
        if v is not None and not (math.isfinite(v) and v > 0):
            raise BadInputError(f"{opt} {v}: must be a positive clock in MHz")
    if args.kernels:
        return _run_kernels(args)
    if args.trace:
        raise BadInputError("--trace joins an nvprof gpu trace to a metrics export with --kernels")
    df = import_table(args.format, args.file, **opts)
    if args.power:
        df = _join_power(df, args.power)
    for col, val in (("core_mhz", args.core_mhz), ("mem_mhz", args.mem_mhz)):
        if val is not None:
            df[col] = df[col].fillna(val) if col in df.columns else val
    has_power = "power_w" in df.columns and df["power_w"].notna().all()
    df = check_samples(df, args.output, require_power=False)
    write_samples(df, args.output)
    info = table_info(df)
    print(f"{output_name(args.output)}: {len(df)} rows, {df['workload'].nunique()} workloads, units "
          f"{', '.join(info.units)}, {len(info.clock_configs)} clock configuration(s)"
          + ("" if has_power else ("; power missing on some rows (see the warning above; those rows cannot be fitted)"
                                  if args.power else "; no power column (usable for predict; add --power to fit)")))
    return 0


def _run_kernels(args: argparse.Namespace) -> int:
    """``calib import nvprof|ncu FILE --kernels -o KERNELS.csv``: the kernel table (calib.importers.kernels)."""
    from calib.core.samples import write_samples
    from calib.core.units import clock_levels
    from calib.importers.kernels import read_kernels

    if args.format not in ("nvprof", "ncu"):
        raise BadInputError(f"--kernels reads nvprof or ncu exports, not {args.format}")
    for opt, v in (("--sm-count", args.sm_count), ("--blocks", args.blocks), ("--threads-per-block", args.threads_per_block)):
        if v is not None and v < 1:
            raise BadInputError(f"{opt} {v}: must be >= 1")
    df = read_kernels(args.file, blocks=args.blocks, threads_per_block=args.threads_per_block, core_mhz=args.core_mhz,
                      mem_mhz=args.mem_mhz, sm_count=args.sm_count, chip=args.chip, trace=args.trace)
    write_samples(df, args.output)
    timed = int(df["time_s"].notna().sum()) if "time_s" in df.columns else 0
    clocked = all(c in df.columns and df[c].notna().all() for c in ("core_mhz", "mem_mhz"))
    arch = sorted({str(a) for a in df.get("arch", []) if str(a) and str(a) != "nan"})
    print(f"{output_name(args.output)}: {len(df)} kernel rows, {df['workload'].nunique()} kernels, {timed} with a measured time, "
          + (f"{len(clock_levels(df['core_mhz']))} core x {len(clock_levels(df['mem_mhz']))} memory clock levels"
             if clocked else "no clocks (give --core-mhz/--mem-mhz)")
          + (f", arch {', '.join(arch)}" if arch else ", arch unknown (give --chip)"))
    return 0
