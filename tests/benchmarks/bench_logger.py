"""Logger overhead and robustness figures, without hardware.

    .venv/bin/python tests/benchmarks/bench_logger.py [--seconds 2] [--json OUT.json]

1. NVML sampler (binding patched with the scripted fake, autospec): rows/s achieved vs requested
   through :class:`microbench.logger.SensorLogger` into a real session directory, and the host time
   per poll. (On a real GPU each NVML call costs more than the mock; rerun there.)
2. Serial analyzers over real pseudo-terminals against their emulators: rows/s achieved vs the
   rate the instrument produces (streaming) or the poll rate requested (polled), also through the
   logger into a session.
3. Samples lost per fault, per protocol (:func:`microbench.testing.emulators.run_fault_scenario`).
5. PowerSensor3 accuracy (``--only ps3``): logged power vs the emulator's true power with two pairs in
   use (MLX10 and MLX20 EEPROM records at the documented vrefs) and two unwired pairs, live over a pty,
   and the same recorded byte stream decoded by this driver and by the driver of an earlier revision
   (``--ps3-old-rev``, default 576024a: the fixed-0.02 conversion), both replayed without a pty.
4. Alignment residual: error of the lag estimate against a commanded square wave, over random lags
   and sampling phases, for NVML-like (10 and 20 Hz) and analyzer-like (50 Hz) streams, plus the
   host-stamp offset measured over a pty.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
import warnings
from pathlib import Path
from unittest import mock

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from calib.core.session import SessionWriter, read_session  # noqa: E402
from microbench.align import lag_vs_pattern, pattern_signal  # noqa: E402
from microbench.instruments import open_analyzer  # noqa: E402
from microbench.testing import emulators as E  # noqa: E402
from microbench.logger import SensorLogger  # noqa: E402


def _log(sensors, period_s, seconds, workdir, before_stop=None):
    w = SessionWriter.create(Path(tempfile.mkdtemp(dir=workdir)) / "s",
                             {"device": {"name": "bench"}, "sensors": [s.describe() for s in sensors]})
    lg = SensorLogger(w, sensors, period_s)
    lg.start()
    time.sleep(seconds)
    if before_stop:
        before_stop()
    st = lg.stop()
    w.close()
    sess = read_session(w.path)
    return st, {s.name: len(sess.stream(s.name)) for s in sensors}


def bench_nvml(seconds, workdir):
    from microbench.testing.nvml_fake import FakeGpu, install_fake

    out = []
    with mock.patch("microbench.devices.nvml.pynvml", autospec=True) as m:
        install_fake(m, [FakeGpu(power_fn=lambda t: 200.0 + 50.0 * np.sin(t))])
        from microbench.devices.nvml import NvmlSensor

        for hz in (10, 50, 100, 200, 500, 1000):
            s = NvmlSensor(0)
            st, rows = _log([s], 1.0 / hz, seconds, workdir)
            ss = st.sensors["nvml0"]
            out.append({"requested_hz": hz, "achieved_hz": round(rows["nvml0"] / st.elapsed_s, 1),
                        "poll_ms": round(1000 * ss.read_time_s / max(1, ss.reads), 3), "overruns": st.overruns})
            s.close()
    return out


def bench_serial(seconds, workdir):
    cases = [
        ("csv", 50, lambda link: E.CsvEmulator(link, 1 / 50), {"columns": ("power_w", "voltage_v")}),
        ("csv", 500, lambda link: E.CsvEmulator(link, 1 / 500), {"columns": ("power_w", "voltage_v")}),
        ("csv", 2000, lambda link: E.CsvEmulator(link, 1 / 2000), {"columns": ("power_w", "voltage_v")}),
        ("wattsup", 1, lambda link: E.WattsUpEmulator(link, 1.0), {}),
        ("wattsup", 50, lambda link: E.WattsUpEmulator(link, 1 / 50), {}),
        ("wt310", 10, lambda link: E.YokogawaEmulator(link), {"update_rate": "100MS"}),
        ("wt310", 20, lambda link: E.YokogawaEmulator(link, model="WT310E"), {"update_rate": "50MS"}),
        ("hioki", 5, lambda link: E.HiokiEmulator(link, 0.2), {"period_s": 0.2}),
        ("hioki", 20, lambda link: E.HiokiEmulator(link, 0.05), {"period_s": 0.05}),
        ("powersensor3", 2000, lambda link: E.PowerSensor3Emulator(link, 500, 20), {"average_frames": 1}),
        ("powersensor3", 10000, lambda link: E.PowerSensor3Emulator(link, 100, 50), {"average_frames": 100}),
        ("powersensor3", 20000, lambda link: E.PowerSensor3Emulator(link, 50, 100), {"average_frames": 20}),
        ("powersensor3", 20000, lambda link: E.PowerSensor3Emulator(link, 50, 100), {"average_frames": 200}),
    ]
    out = []
    for proto, hz, make, kw in cases:
        link = Path(tempfile.mkdtemp(dir=workdir)) / "tty"
        with make(link) as emu:
            an = open_analyzer(str(link), proto, **kw)
            an.start()
            n0 = emu.seq
            snap = {}
            st, rows = _log([an], 0.05, seconds, workdir, before_stop=lambda: snap.setdefault("seq", emu.seq))
            produced = snap["seq"] - n0
            an.close()
        frames_per_row = kw.get("average_frames", 1)
        out.append({"protocol": proto, "requested_hz": hz, "frames_per_row": frames_per_row,
                    "instrument_frames_hz": round(produced / st.elapsed_s, 1),
                    "achieved_rows_hz": round(rows[an.name] / st.elapsed_s, 1),
                    "rejected": an.stats.rejected, "truncated": an.stats.truncated,
                    "timeouts": an.stats.timeouts})
    return out


def bench_faults(workdir):
    out = {}
    for proto in E.SCENARIOS:
        r = E.run_fault_scenario(proto, Path(tempfile.mkdtemp(dir=workdir)))
        out[proto] = {**r["faults"], "rows": r["rows"], "duplicates": r["duplicates"],
                      "corrupted_received": r["corrupted_received"]}
    return out


def _old_ps3_class(rev):
    """The PowerSensor3 class of revision ``rev`` (loaded from git), on this revision's reader base."""
    import importlib.util
    import subprocess

    root = Path(__file__).resolve().parents[1]
    src = subprocess.run(["git", "show", f"{rev}:microbench/instruments/powersensor3.py"], cwd=root, check=True,
                         capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "old_powersensor3.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("old_powersensor3", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.PowerSensor3


def _ps3_summary(rows, pairs, true_w, true_pair_w):
    p = np.array([r.values["power_w"] for r in rows])
    out = {"rows": len(rows), "mean_power_w": round(float(p.mean()), 3),
           "error_pct": round(100 * (float(p.mean()) / true_w - 1), 3)}
    for k in pairs:
        col = f"power{k}_w"
        if col in rows[0].values:
            mk = float(np.mean([r.values[col] for r in rows]))
            out[f"pair{k}_w"] = round(mk, 3)
            if true_pair_w.get(k):
                out[f"pair{k}_error_pct"] = round(100 * (mk / true_pair_w[k] - 1), 3)
    return out


def bench_ps3_accuracy(seconds, workdir, old_rev="576024a"):
    """Logged vs true power: live over a pty (this driver), and one recorded stream replayed to this
    driver and to the driver of ``old_rev``."""
    from microbench.testing.replay import ReplayPort, replay

    currents, volts = (6.0, 10.0, 0.0, 0.0), (12.0, 12.0, 0.0, 0.0)
    res = {}
    # live
    link = Path(tempfile.mkdtemp(dir=workdir)) / "ps3.tty"
    with E.PowerSensor3Emulator(link, currents_a=currents, voltages_v=volts) as emu:
        true_w = emu.true_power_w()
        true_pair = {p: currents[p] * volts[p] for p in emu.pairs_in_use()}
        an = open_analyzer(str(link), "powersensor3", average_frames=20)
        an.start()
        time.sleep(seconds)
        an.close()
        res["true_power_w"] = true_w
        res["live_new"] = _ps3_summary(an.read(), range(4), true_w, true_pair)
        eeprom = [r.pack() for r in emu.eeprom]
        # one recorded stream (10 s of device time at 2 kHz), decoded by both drivers
        stream = emu._frames(20000)
    cfg = [(b"X", b"\xff\x3f\xff\x3f", 0.0), (b"R", eeprom[0]), *[(b"s", r) for r in eeprom[1:]], (b"s", b"D")]
    drv, rows = replay("powersensor3", [*cfg, (b"S", stream), (b"X", None)], steps=1, average_frames=20)
    res["replay_new"] = _ps3_summary(rows, range(4), true_w, true_pair)
    old_cls = _old_ps3_class(old_rev)
    for pairs in (4, 2):
        port = ReplayPort([(b"X", b""), (b"S", stream), (b"X", None)])
        old = old_cls("replay:old", transport=lambda port=port: port, pairs=pairs, average_frames=20, reconnect=False)
        old.connect()
        old.step()
        old.close()
        res[f"replay_old_{old_rev}_pairs{pairs}"] = _ps3_summary(old.take_rows(), range(pairs), true_w, true_pair)
    return res


def bench_alignment(workdir, trials=30):
    rng = np.random.default_rng(7)
    res = {}
    for label, hz in (("nvml_10hz", 10), ("nvml_20hz", 20), ("analyzer_50hz", 50)):
        errs = []
        for _ in range(trials):
            lag = rng.uniform(0, 0.4)
            period = rng.uniform(1.9, 2.1)
            edges = [(10 + period * i, 10 + period * i + period / 2) for i in range(5)]
            t = np.arange(8.0 + rng.uniform(0, 1 / hz), 22.0, 1 / hz)  # random sampling phase
            t = t + rng.normal(0, 0.002, t.size)  # polling jitter
            p = 80 + 170 * pattern_signal(edges, t - lag) + rng.normal(0, 3.0, t.size)
            est = lag_vs_pattern(edges, t, p, max_lag_s=0.5)
            errs.append(abs(est.lag_s - lag))
        res[label] = {"mean_abs_error_ms": round(1000 * float(np.mean(errs)), 2),
                      "p95_abs_error_ms": round(1000 * float(np.percentile(errs, 95)), 2),
                      "max_abs_error_ms": round(1000 * float(np.max(errs)), 2), "trials": trials}
    # host-stamp offset over a pty
    offsets = []
    for _ in range(3):
        t0 = time.time() + 0.2
        edges = [(t0 + 0.4 * i, t0 + 0.4 * i + 0.2) for i in range(5)]
        link = Path(tempfile.mkdtemp(dir=workdir)) / "tty"
        with E.CsvEmulator(link, 0.005, columns=1, power_fn=lambda tw, e=edges: 50 + 100 * pattern_signal(e, [tw])[0]):
            an = open_analyzer(str(link), "csv").start()
            time.sleep(t0 + 2.2 - time.time())
            an.close()
            rows = an.read()
        est = lag_vs_pattern(edges, [r.t_wall_s for r in rows], [r.values["power_w"] for r in rows],
                             max_lag_s=0.05, step_s=0.0005)
        offsets.append(est.lag_s)
    res["pty_host_stamp_offset_ms"] = [round(1000 * x, 2) for x in offsets]
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=2.0, help="duration of each rate measurement, s")
    ap.add_argument("--json", help="also write the figures to this JSON file")
    ap.add_argument("--only", choices=["nvml", "serial", "faults", "align", "ps3"], action="append")
    ap.add_argument("--ps3-old-rev", default="576024a", help="git revision of the PowerSensor3 driver to compare")
    args = ap.parse_args(argv)
    parts = args.only or ["nvml", "serial", "faults", "align", "ps3"]
    warnings.simplefilter("ignore", RuntimeWarning)
    logging.basicConfig(level=logging.ERROR)  # the reconnects of the fault scenario are expected here
    report = {}
    with tempfile.TemporaryDirectory() as workdir:
        if "nvml" in parts:
            report["nvml"] = bench_nvml(args.seconds, workdir)
            print("NVML sampler (patched binding): requested -> achieved rows/s, host ms per poll")
            for r in report["nvml"]:
                print(f"  {r['requested_hz']:>5} Hz -> {r['achieved_hz']:>7.1f} rows/s   {r['poll_ms']:.3f} ms/poll"
                      f"   overruns {r['overruns']}")
        if "serial" in parts:
            report["serial"] = bench_serial(args.seconds, workdir)
            print("Serial analyzers over a pty: instrument frames/s, rows/s logged")
            for r in report["serial"]:
                print(f"  {r['protocol']:>12} @ {r['requested_hz']:>5} Hz: instrument {r['instrument_frames_hz']:>8.1f}"
                      f" frames/s, logged {r['achieved_rows_hz']:>8.1f} rows/s ({r['frames_per_row']} frame/row), "
                      f"rejected {r['rejected']}, truncated {r['truncated']}, timeouts {r['timeouts']}")
        if "faults" in parts:
            report["faults"] = bench_faults(workdir)
            print("Samples lost per fault (lost_whole = good frames lost; corrupted = frames the fault destroyed)")
            for proto, f in report["faults"].items():
                u = f["unplug"]
                print(f"  {proto:>12}: garbage {f['garbage']}, truncate {f['truncate']}, error {f['error']}; unplug: "
                      f"in flight {u['in_flight']} (of {u['sent_last_50ms']} sent in the last 50 ms), outage "
                      f"{u['outage']}, after reconnect {u['lost_after_reconnect']}, reconnect {u['reconnect_s']:.2f} s")
        if "ps3" in parts:
            report["ps3"] = bench_ps3_accuracy(args.seconds, workdir, args.ps3_old_rev)
            print(f"PowerSensor3: logged vs true power ({report['ps3']['true_power_w']:.3f} W: MLX10 pair 6 A x 12 V, "
                  "MLX20 pair 10 A x 12 V, pairs 2-3 unwired)")
            for k, v in report["ps3"].items():
                if k != "true_power_w":
                    print(f"  {k}: {v}")
        if "align" in parts:
            report["align"] = bench_alignment(workdir)
            print("Alignment residual (|estimated - true lag| vs a 5-cycle square wave):")
            for k, v in report["align"].items():
                print(f"  {k}: {v}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
