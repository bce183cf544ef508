"""calib hotspot PARAMS.json SAMPLES.csv -o DIR [--floorplan FLP] [--grid N]"""

from __future__ import annotations

import argparse

HELP = "export the fitted power breakdown and thermal network to HotSpot (gpu.flp, gpu.ptrace, gpu.config)"
DESCRIPTION = """\
Write the three files HotSpot needs to continue from the fitted models:

  DIR/gpu.flp     the floorplan: --floorplan FLP (checked: no overlapping blocks, no gaps), else a
                  generic one built from the power section's units and SM count with the die-area
                  priors of the power fit (the floorplan of the report's heat map)
  DIR/gpu.ptrace  one column per block, one row per samples row (in order): the row's IPP per-unit
                  power placed on the blocks named like the unit or '<prefix>_<unit>' (by area), the
                  rest of its predicted power (idle, activation, constant per SM) spread by area, so
                  each row sums to the row's predicted power (W)
  DIR/gpu.config  package resistances and capacitances from the thermal_network section, its ambient,
                  HotSpot's block model (--grid N: its grid model, N x N cells) and the sampling
                  interval: the samples' duration_s when every row has one, else 1 s

Then: hotspot -c gpu.config -f gpu.flp -p gpu.ptrace -o gpu.ttrace
Refused (exit 2, nothing written): PARAMS without a thermal_network or an IPP power section, a unit
with power and no block in FLP, overlapping or gapped blocks."""

EPILOG = "example:\n  calib hotspot fitted/sim-gtx280.json fitted/sim-gtx280.samples.csv -o hotspot"

FILES = ("gpu.flp", "gpu.ptrace", "gpu.config")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter  # keep the file list and the example as written
    p.add_argument("params", metavar="PARAMS.json", help="parameter file with power (IPP) and thermal_network sections")
    p.add_argument("samples", metavar="SAMPLES.csv", help="samples table: one power-trace row per table row")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="directory to write (created)")
    p.add_argument("--floorplan", default=None, metavar="FLP",
                   help="HotSpot floorplan (.flp) to place the power on instead of the generic one")
    p.add_argument("--grid", type=int, default=None, metavar="N",
                   help="HotSpot's grid model with N x N cells in gpu.config (default: its block model)")


def run(args: argparse.Namespace) -> int:
    import warnings
    from pathlib import Path

    import numpy as np

    from calib.core.atomic import atomic_write_text, check_not_input, check_output_dir
    from calib.core.errors import BadInputError
    from calib.core.samples import read_samples
    from calib.progress import printer
    from calib.model.checks import load_checked
    from calib.model.floorplan import (config_text, flp_text, hotspot_config, ipp_block_powers, ipp_floorplan,
                                       ptrace_text, read_flp)
    from calib.model.thermal_network import SECTION, FosterNetwork, network_ambient_c

    out = check_output_dir(args.output, "-o")
    paths = [out / f for f in FILES]
    for p in paths:
        check_not_input(p, args.params, args.samples, args.floorplan)
    if args.grid is not None and args.grid < 1:
        raise BadInputError(f"--grid {args.grid}: must be a positive number of cells per side")
    pf = load_checked(args.params)
    if SECTION not in pf:
        raise BadInputError(f"{args.params}: no {SECTION} section (fit a session with thermal steps); "
                            "the HotSpot package comes from the thermal network")
    if pf.model_of("power") != "ipp":
        have = f"power model {pf.model_of('power')!r}" if "power" in pf else "no power section"
        raise BadInputError(f"{args.params}: no IPP power section ({have}); the power trace needs the per-unit "
                            "power breakdown")
    if args.floorplan is not None:
        fp, origin = read_flp(args.floorplan), f"from {args.floorplan}"
    else:
        fp = ipp_floorplan(pf["power"])
        origin = (f"generic: {int(pf['power'].structure['sm_count'])} SMs, "
                  f"{len(pf['power'].structure['units'])} units, die-area priors")
    df = read_samples(args.samples, require_power=False, require_act=False)
    if not len(df):
        raise BadInputError(f"{args.samples}: no rows; the power trace needs at least one")
    bp = ipp_block_powers(pf, fp, df, source=str(args.floorplan or "generic floorplan"))
    rows_w = bp.to_numpy(dtype=float)
    bad = np.flatnonzero(~np.isfinite(rows_w).all(axis=1))
    if bad.size:
        k = int(bad[0])
        what = f" ({df['workload'].iloc[k]})" if "workload" in df.columns else ""
        raise BadInputError(f"{args.samples}: row {k + 1}{what}: no predicted power (a needed activity or clock "
                            "is missing); HotSpot needs a number for every block and interval")
    if (rows_w < 0).any():
        k = int(np.flatnonzero((rows_w < 0).any(axis=1))[0])
        warnings.warn(f"{args.samples}: row {k + 1}: a block gets negative power ({rows_w[k].min():.3g} W): the IPP "
                      "breakdown exceeds the predicted power there (a row off the fitted clocks?)")
    sampling_s, why = 1.0, "1 s: not every samples row has a positive duration_s"
    if "duration_s" in df.columns:
        dur = df["duration_s"].to_numpy(dtype=float)
        if np.isfinite(dur).all() and (dur > 0).all():
            sampling_s = float(dur.mean())
            if np.ptp(dur) > 1e-9 * sampling_s:
                why = f"{sampling_s:.6g} s: the mean duration_s"
                warnings.warn(f"{args.samples}: duration_s differs between rows ({dur.min():.6g}-{dur.max():.6g} s) "
                              "but HotSpot steps every power-trace row by one sampling interval: gpu.config uses "
                              f"their mean, {sampling_s:.6g} s")
            else:
                why = f"{sampling_s:.6g} s: the samples' duration_s"
    sec = pf[SECTION]
    net = FosterNetwork.from_section(sec)
    amb = network_ambient_c(sec, net)
    cfg = hotspot_config(net, fp, amb, sampling_s, grid=args.grid)
    texts = (flp_text(fp), ptrace_text(fp.names, rows_w), config_text(cfg))
    out.mkdir(parents=True, exist_ok=True)
    for p, text in zip(paths, texts):
        atomic_write_text(p, text)
    total = rows_w.sum(axis=1)
    model = f"grid model {args.grid} x {args.grid}" if args.grid else "block model"
    say = printer(args)   # nothing with -q
    say(f"{paths[0]}: {len(fp.blocks)} blocks ({origin})")
    say(f"{paths[1]}: {len(rows_w)} rows x {len(fp.blocks)} blocks, total {total.min():.1f}-{total.max():.1f} W "
        "per row (the predicted power of each samples row)")
    say(f"{paths[2]}: HotSpot {model}, package from the {net.poles}-pole thermal network (r_convec "
        f"{cfg['r_convec']:.4g} K/W, c_convec {cfg['c_convec']:.4g} J/K), ambient {amb:.1f} C, "
        f"sampling interval {why}")
    say(f"run: hotspot -c {paths[2]} -f {paths[0]} -p {paths[1]} -o {Path(out) / 'gpu.ttrace'}")
    return 0
