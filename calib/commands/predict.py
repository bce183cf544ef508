"""calib predict PARAMS.json SAMPLES.csv|KERNEL.json -o OUT.csv, or calib predict PARAMS.json --trace POWER.csv -o OUT.csv"""

from __future__ import annotations

import argparse

from calib.core.atomic import atomic_write_text, check_output_file, output_name
from calib.core.errors import BadInputError

HELP = "predict power (and time, temperature where the model provides them) for a samples table or kernel description"


EPILOG = "example:\n  calib predict fitted/sim-gtx280.json fitted/sim-gtx280.samples.csv -o predicted.csv"

def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("params", help="parameter file (JSON)")
    p.add_argument("input", nargs="?", help="samples table (CSV) or kernel description (JSON); a table with a "
                   "start_s column is a kernel sequence (temperatures from the thermal network)")
    p.add_argument("--trace", metavar="POWER.csv", help="a power trace (time_s, power_w[, ambient_c, fan_pct, "
                   "util_mem_pct]) instead: temp_c_pred per time step from the thermal network (fan_pct: the logged "
                   "fan duty, else the fitted controller; util_mem_pct: the logged memory utilization, which weighs "
                   "the memory hot spot)")
    p.add_argument("--cold-power", action="store_true",
                   help="with --trace: power_w is what each interval draws at the idle temperature (e.g. the power "
                        "model's power_w_pred for the kernel), not a measured board power: the leakage the rising "
                        "temperature adds is stepped in row by row (leakage feedback) and power_w_pred written")
    p.add_argument("-o", "--output", required=True, help="CSV to write: the input rows plus power_w_pred, ...")
    p.add_argument("--clocks", default=None, metavar="all|CORE:MEM,...",
                   help="predict every input kernel at these (core, memory) clock pairs, MHz: 'all' for every pair "
                        "of the parameter file's supported clocks, or a list such as 1480:5005,1200:5005 (one output "
                        "row per kernel and pair)")
    p.add_argument("--level", type=float, default=0.90,
                   help="probability of the prediction intervals power_w_lo/_hi, time_s_lo/_hi, temp_c_lo/_hi "
                        "(default 0.90): parameter uncertainty and model discrepancy (calib/model/intervals.py)")
    p.add_argument("--no-intervals", action="store_true", help="predictions only (faster on very large tables)")
    p.add_argument("--anchor", action="store_true",
                   help="scale each kernel's time from its measured time_s at its profiled clocks (the model gives "
                        "the ratio; the kernel's ILP, which profilers do not report, is set from that time)")


def run(args: argparse.Namespace) -> int:
    if (args.input is None) == (args.trace is None):
        raise BadInputError("calib predict: give a samples table / kernel description, or --trace POWER.csv (one of them)")
    check_output_file(args.output, not_in=(args.params, args.input or args.trace))
    if not 0.0 < args.level < 1.0:
        raise BadInputError(f"--level {args.level}: must be between 0 and 1 (e.g. 0.9)")
    if args.trace is not None:
        return _trace(args)
    if args.cold_power:
        raise BadInputError("calib predict: --cold-power describes the power of a --trace; give --trace POWER.csv")
    from calib.commands.advise import read_kernels
    from calib.model.checks import load_checked
    from calib.model.predict import predict_clock_grid, predict_table

    pf = load_checked(args.params)
    df = read_kernels(args.input)

    def predict(p):  # noqa: ANN001, ANN202
        if args.clocks or args.anchor:
            return predict_clock_grid(p, df, args.clocks, args.anchor, args.input)
        return predict_table(p, df, args.input)
    out = predict(pf)
    if not args.no_intervals:
        from calib.model.intervals import add_intervals

        out = add_intervals(pf, out, predict, args.level)
    atomic_write_text(args.output, out.to_csv(index=False, float_format="%.10g", lineterminator="\n"))
    cols = [c for c in ("power_w_pred", "time_s_pred", "energy_j_pred", "temp_c_pred", "copy_time_s_pred",
                        "copy_energy_j_pred", "copy_compute_ratio_pred") if c in out.columns]
    msg = f"{output_name(args.output)}: {len(out)} rows with {', '.join(cols)}"
    if "interval_level" in out.attrs:
        msg += f" and their {100 * out.attrs['interval_level']:g}% intervals (_lo, _hi)"
    if "power_w" in out.columns and "power_w_pred" in out.columns and out["power_w"].notna().any():
        from calib.core.metrics import mape

        m = out["power_w"].notna()
        msg += (f" (MAPE against power_w: {mape(out.loc[m, 'power_w'], out.loc[m, 'power_w_pred']):.2f}% "
                f"over {int(m.sum())} rows")
        if "power_w_lo" in out.columns:
            inside = ((out.loc[m, "power_w"] >= out.loc[m, "power_w_lo"])
                      & (out.loc[m, "power_w"] <= out.loc[m, "power_w_hi"])).mean()
            msg += f"; {100 * inside:.0f}% of them inside their interval"
        msg += ")"
    print(msg)
    return 0


def _trace(args: argparse.Namespace) -> int:
    from calib.model.checks import load_checked
    from calib.model.thermal_network import SECTION, FosterNetwork, read_power_trace, trace_prediction

    pf = load_checked(args.params)
    if SECTION not in pf:
        raise BadInputError(f"{args.params}: no {SECTION} section (fit a session with thermal steps); "
                            "--trace needs the thermal network")
    sec = pf[SECTION]
    df = read_power_trace(args.trace)
    _check_trace_power(pf.device, df, args.trace)
    out = df.copy()
    temp, power = trace_prediction(FosterNetwork.from_section(sec), df, args.trace,
                                   sec.structure.get("ambient_temp_c"), cold=args.cold_power)
    out["temp_c_pred"] = temp
    if args.cold_power:  # the board power with the leakage its temperature adds
        out["power_w_pred"] = power
    atomic_write_text(args.output, out.to_csv(index=False, float_format="%.10g", lineterminator="\n"))
    msg = f"{output_name(args.output)}: {len(out)} rows with temp_c_pred"
    if args.cold_power:
        msg += " and power_w_pred (leakage feedback stepped)"
    if "temp_c" in out.columns and out["temp_c"].notna().any():
        from calib.core.metrics import errors

        m = out["temp_c"].notna()
        msg += f" (RMSE against temp_c: {errors(out.loc[m, 'temp_c'], out.loc[m, 'temp_c_pred']).rmse:.3f} C)"
    print(msg)
    return 0


def _check_trace_power(device: dict, df, path: str) -> None:  # noqa: ANN001 - a power trace table
    """Refuse (BadInputError naming the row) a trace power no board of this device can draw: the samples
    layer's plausibility limit (:mod:`calib.core.plausibility`, 2 x the board's power limit). An 18,000 W
    trace on a 236 W board (a trace in mW?) predicted 3,714 C without a word."""
    import numpy as np

    from calib.core.plausibility import limits_for

    lim = limits_for(device, {"columns": ["power_w"]})["power_w"]
    p = df["power_w"].to_numpy(float)
    bad = np.flatnonzero((p < lim.lo) | (p > lim.hi))
    if len(bad):
        raise BadInputError(f"{path}: row {bad[0] + 1}: power_w {p[bad[0]]:g} W is not a power this board can "
                            f"draw ({lim.text('power_w')}; a trace in mW?)")

