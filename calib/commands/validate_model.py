"""calib validate-model PARAMS.json TEST.csv"""

from __future__ import annotations

import argparse

from calib.core.atomic import output_name

HELP = "measure a parameter file's prediction error on a samples table with measured power"
DESCRIPTION = (HELP + ": MAPE, max error, RMSE, a per-workload error table and a measured-vs-predicted plot (PNG). "
               "The table's workloads should not be the ones the parameters were fitted on.")


EPILOG = "example:\n  calib validate-model titanx.json apps.csv --table apps-errors.csv"

def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("params", help="parameter file (JSON)")
    p.add_argument("test", help="samples table with power_w (CSV)")
    p.add_argument("--plot", default=None, metavar="PNG",
                   help="measured-vs-predicted plot to write (default: <TEST>.vs.<PARAMS>.png in the current directory)")
    p.add_argument("--no-plot", action="store_true", help="do not write the plot")
    p.add_argument("--table", default=None, metavar="CSV", help="also write the per-workload error table as CSV")
    p.add_argument("--level", type=float, default=0.90,
                   help="probability of the prediction intervals whose coverage is reported (default 0.90)")


def error_table(y, yhat, workloads):
    """(summary dict, per-workload DataFrame) of the prediction errors (percent of measured power)."""
    import numpy as np

    from calib.core.metrics import errors, per_workload

    y = np.asarray(y, float)
    yhat = np.asarray(yhat, float)
    e = errors(y, yhat)
    per = per_workload(workloads, y, yhat).rename(columns={"measured": "measured_w", "predicted": "predicted_w"})
    per = per.sort_values("mape_pct", ascending=False)
    summary = {"n_rows": e.n, "n_workloads": int(len(per)), "mape_pct": e.mape_pct, "max_abs_pct": e.max_abs_pct,
               "max_abs_w": float(np.max(np.abs(yhat - y))), "rmse_w": e.rmse, "bias_pct": e.bias_pct,
               "workload_mape_pct": float(per["mape_pct"].mean())}
    return summary, per


def plot(path, y, yhat, workloads, title: str) -> None:
    """Measured-vs-predicted scatter (PNG, written atomically): y = x line and a +/-10 % band."""
    import matplotlib
    import numpy as np
    import pandas as pd
    from matplotlib.figure import Figure

    from calib.core.atomic import atomic_write_png

    y = np.asarray(y, float)
    yhat = np.asarray(yhat, float)
    wl = pd.Series(workloads).astype(str).to_numpy()
    fig = Figure(figsize=(6.4, 6.0), dpi=110)
    ax = fig.subplots()
    names = list(dict.fromkeys(wl))
    if len(names) <= 20:
        cmap = matplotlib.colormaps["tab20"]
        for i, n in enumerate(names):
            m = wl == n
            ax.scatter(y[m], yhat[m], s=10, alpha=0.75, color=cmap(i % 20), label=n)
        ax.legend(fontsize=6, loc="upper left", ncol=2, markerscale=1.5, frameon=False)
    else:
        ax.scatter(y, yhat, s=6, alpha=0.4, color="tab:blue", label=f"{len(y)} rows")
    lo = float(min(y.min(), yhat.min())) * 0.95
    hi = float(max(y.max(), yhat.max())) * 1.05
    xs = np.array([lo, hi])
    ax.plot(xs, xs, color="black", lw=1)
    ax.fill_between(xs, xs * 0.9, xs * 1.1, color="grey", alpha=0.15, lw=0, label="+/-10 %")
    ax.set(xlim=(lo, hi), ylim=(lo, hi), aspect="equal", xlabel="measured power (W)", ylabel="predicted power (W)")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    atomic_write_png(path, fig)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    import numpy as np

    from calib.core.atomic import atomic_write_text, check_output_file
    from calib.core.errors import BadInputError
    from calib.core.samples import read_samples
    from calib.model.checks import load_checked
    from calib.model.intervals import add_intervals
    from calib.model.predict import predict_power

    for out, what in ((args.table, "--table"), (args.plot, "--plot")):
        check_output_file(out, what, (args.params, args.test))
    if not 0.0 < args.level < 1.0:
        raise BadInputError(f"--level {args.level}: must be between 0 and 1 (e.g. 0.9)")
    pf = load_checked(args.params)
    if "power" not in pf:
        raise BadInputError(f"{args.params}: the parameter file has no power section; validate-model compares "
                            "measured with predicted power")
    df = read_samples(args.test, require_power=True)

    def predict(p):  # noqa: ANN001, ANN202
        return df.assign(power_w_pred=predict_power(p, df, args.test))

    ivl = add_intervals(pf, predict(pf), predict, args.level)
    yhat = ivl["power_w_pred"].to_numpy(float)
    s, per = error_table(df["power_w"].to_numpy(float), yhat, df["workload"])
    y = df["power_w"].to_numpy(float)
    inside = (y >= ivl["power_w_lo"].to_numpy(float)) & (y <= ivl["power_w_hi"].to_numpy(float))
    width = 100 * (ivl["power_w_hi"] - ivl["power_w_lo"]).to_numpy(float) / yhat
    # files first: a reader that stops early (``| head``) must not cost the table or the plot
    done = []
    if args.table:
        atomic_write_text(args.table, per.reset_index().to_csv(index=False, float_format="%.6g", lineterminator="\n"))
        done.append(f"per-workload table written to {output_name(args.table)}")
    if not args.no_plot:
        out = args.plot or f"{Path(args.test).stem}.vs.{Path(args.params).stem}.png"
        plot(out, df["power_w"].to_numpy(float), yhat, df["workload"],
             f"{Path(args.test).name}: MAPE {s['mape_pct']:.2f}%, max {s['max_abs_pct']:.1f}% ({Path(args.params).name})")
        done.append(f"plot written to {out}")
    print(f"{args.test}: {s['n_rows']} rows, {s['n_workloads']} workloads, model {pf['power'].model} "
          f"({args.params})")
    print(f"MAPE {s['mape_pct']:.2f}%  (per-workload mean {s['workload_mape_pct']:.2f}%)  max |error| "
          f"{s['max_abs_pct']:.2f}% / {s['max_abs_w']:.2f} W  RMSE {s['rmse_w']:.2f} W  bias {s['bias_pct']:+.2f}%")
    print(f"{100 * args.level:g}% prediction intervals: {100 * inside.mean():.1f}% of the rows measured inside "
          f"(mean width {np.mean(width):.1f}% of the prediction)")
    print(f"{'workload':28s} {'rows':>5s} {'MAPE %':>7s} {'max %':>7s} {'bias %':>7s} {'meas W':>8s} {'pred W':>8s}")
    for name, r in per.iterrows():
        print(f"{str(name)[:28]:28s} {int(r.n_rows):5d} {r.mape_pct:7.2f} {r.max_abs_pct:7.2f} {r.bias_pct:+7.2f} "
              f"{r.measured_w:8.2f} {r.predicted_w:8.2f}")
    for line in done:
        print(line)
    return 0
