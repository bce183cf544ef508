"""calib log [--nvml INDEX] [--device DEV] [--rapl] [--serial PORT --protocol NAME] [--duration S] -o SESSION_DIR

The standalone logger: GPU telemetry (NVML, or any backend's sensor by device spec: ``--device rocm:0``),
the host's RAPL counters (``--rapl``, :mod:`microbench.devices.rapl`) and/or a serial power analyzer into a
session directory, in the same
format as the campaign (``calib.core.session``). Logging into an existing session appends a new segment.
Stops after ``--duration`` seconds (exit status 0), on SIGTERM (a clean stop, exit status 0) or on
Ctrl-C (a clean stop too: every sample read so far is written and the summary printed; exit status
130, the toolkit's Ctrl-C status). A logger killed outright (SIGKILL, power loss) loses at most the
last second of rows (fsync once per second) and the session stays readable. ``-v`` shows frame
errors, resyncs and reconnects of a serial analyzer; ``-vv`` also every command and reply on the wire.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any

from calib.core.errors import BadInputError, DeviceLostError

HELP = "log GPU sensors (NVML, amdsmi) and/or a serial power analyzer into a session directory (no workload)"
DESCRIPTION = (
    "Log GPU sensors (NVML, or a device's sensor: --device cuda:0, rocm:0) and/or a serial power analyzer into "
    "SESSION_DIR, in the campaign's session "
    "format. Logging into an existing session appends a new segment. Stop with --duration, Ctrl-C or SIGTERM."
)


EPILOG = "example:\n  calib log --nvml 0 --duration 60 -o logs/idle"

def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--nvml", metavar="INDEX", type=int, action="append", default=[],
                   help="log this NVML GPU index (repeat for several GPUs)")
    p.add_argument("--device", metavar="DEV", action="append", default=[],
                   help="log the telemetry of this GPU: cuda:<index> (NVML), rocm:<index> (amdsmi); repeatable")
    p.add_argument("--rapl", action="store_true",
                   help="also log the host's CPU package/DRAM energy and power (RAPL, /sys/class/powercap; root, "
                        "or a udev rule: the message says how)")
    p.add_argument("--powercap", metavar="DIR", default="/sys/class/powercap",
                   help="powercap directory read by --rapl (default /sys/class/powercap)")
    p.add_argument("--serial", metavar="PORT", help="serial port of a power analyzer (e.g. /dev/serial/by-id/...)")
    p.add_argument("--protocol", metavar="NAME",
                   help="analyzer protocol: wt310, wt210, hioki, wattsup, powersensor3, csv")
    p.add_argument("--baud", type=int, help="serial baud rate (default: the protocol's)")
    p.add_argument("--columns", default="power_w",
                   help="csv protocol: comma-separated value column names with units (default: power_w)")
    p.add_argument("--analyzer-opt", metavar="KEY=VALUE", action="append", default=[],
                   help="protocol option, e.g. current_range_a=5, update_rate=100MS, average_frames=20 (repeatable)")
    p.add_argument("--rate", type=float, default=10.0, metavar="HZ",
                   help="polling rate of NVML and of polled analyzers, Hz (default 10)")
    p.add_argument("--duration", type=float, metavar="S", help="stop after S seconds (default: until Ctrl-C)")
    p.add_argument("-o", "--output", required=True, metavar="SESSION_DIR", help="session directory (created or appended to)")


def _parse_opts(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for it in items:
        key, sep, val = it.partition("=")
        if not sep or not key.isidentifier():
            raise BadInputError(f"--analyzer-opt {it!r}: expected KEY=VALUE (e.g. current_range_a=5)")
        v: Any = val.lower() == "true" if val.lower() in ("true", "false") else val
        for conv in (int, float):   # a number when it reads as one
            with contextlib.suppress(ValueError):
                v = conv(val)
                break
        out[key] = v
    return out


def _csv_columns(text: str) -> tuple[str, ...]:
    """The ``--columns`` list of the csv protocol, refused (BadInputError) when empty, duplicated or
    clashing with a column the stream adds itself (time columns, ``resync``)."""
    from calib.core.session import TIME_COLUMNS

    cols = tuple(c.strip() for c in text.split(","))
    if not any(cols) or "" in cols:
        raise BadInputError(f"--columns {text!r}: expected comma-separated column names, e.g. power_w,voltage_v")
    dup = sorted({c for c in cols if cols.count(c) > 1})
    if dup:
        raise BadInputError(f"--columns {text!r}: column '{dup[0]}' appears more than once")
    reserved = [c for c in cols if c in TIME_COLUMNS + ("resync", "latency_s")]
    if reserved:
        raise BadInputError(f"--columns {text!r}: '{reserved[0]}' is a column the stream writes itself; "
                            "choose another name")
    return cols


def _open_sensors(args: argparse.Namespace) -> list[Any]:
    sensors: list[Any] = []
    try:
        if args.nvml:
            from microbench.devices.nvml import NvmlSensor

            for idx in args.nvml:
                sensors.append(NvmlSensor(idx))
        for spec in args.device:
            sensors.append(_device_sensor(spec))
        if args.rapl:
            from microbench.devices.rapl import RaplSensor

            sensors.append(RaplSensor(args.powercap, period_s=1.0 / args.rate))
        if args.serial:
            from microbench.instruments import (
                PROTOCOLS,
                analyzer_options,
                open_analyzer,
            )

            if not args.protocol:
                raise BadInputError(f"--serial needs --protocol (one of {', '.join(sorted(PROTOCOLS))})")
            if args.protocol not in PROTOCOLS:
                raise BadInputError(f"--protocol {args.protocol!r}: unknown; choose one of {', '.join(sorted(PROTOCOLS))}")
            kw = _parse_opts(args.analyzer_opt)
            accepted = analyzer_options(args.protocol)
            unknown = sorted(k for k in kw if k not in accepted)
            if unknown:
                raise BadInputError(f"--analyzer-opt {unknown[0]}: not an option of protocol {args.protocol!r}; "
                                    f"it accepts: {', '.join(accepted)}")
            if args.baud is not None:
                kw["baudrate"] = args.baud
            if args.protocol == "csv":
                kw["columns"] = _csv_columns(args.columns)
            if PROTOCOLS[args.protocol].POLLED and "period_s" not in kw and "update_rate" not in kw:
                kw["period_s"] = 1.0 / args.rate
            try:
                an = open_analyzer(args.serial, args.protocol, **kw)
            except (TypeError, ValueError) as e:
                raise BadInputError(f"analyzer options: {e}") from e
            an.start()
            sensors.append(an)
    except BaseException:
        for s in sensors:
            s.close()
        raise
    return sensors


def _device_sensor(spec: str) -> Any:
    """The telemetry sensor of ``--device`` ``<prefix>:<index>`` through the backend registry."""
    from microbench.devices.registry import backend

    prefix, sep, what = spec.partition(":")
    b = backend(prefix) if sep else None
    if b is None or b.virtual:
        raise BadInputError(f"--device {spec!r}: expected a real GPU, <backend>:<index> (e.g. cuda:0, rocm:0)")
    try:
        index = int(what)
    except ValueError:
        raise BadInputError(f"--device {spec!r}: the index must be an integer (e.g. {prefix}:0)") from None
    try:
        return b.sensor(index)
    except NotImplementedError:
        raise BadInputError(f"--device {spec!r}: the {b.vendor} backend has no standalone sensor") from None


def _device_entry(sensors: list[Any]) -> dict[str, Any]:
    for s in sensors:
        gpu = s.capabilities().get("gpu") if s.scope == "gpu" else None
        if gpu:
            return {"name": gpu["name"], "uuid": gpu["uuid"], "kind": s.kind, **gpu}
    return {"name": "(no GPU: analyzer only)", "uuid": None, "kind": "analyzer"}


def run(args: argparse.Namespace) -> int:
    from calib.core.atomic import check_output_dir
    from calib.core.session import MANIFEST_NAME, lock_session

    if not args.nvml and not args.device and not args.serial and not args.rapl:
        raise BadInputError("nothing to log: give --nvml INDEX, --device DEV, --rapl and/or --serial PORT --protocol NAME")
    if not args.rate > 0:
        raise BadInputError(f"--rate must be > 0 Hz, got {args.rate}")
    if args.duration is not None and not args.duration > 0:
        raise BadInputError(f"--duration must be > 0 s, got {args.duration}")
    if args.baud is not None and args.baud <= 0:
        raise BadInputError(f"--baud must be a positive number of bits/s (e.g. 9600), got {args.baud}")
    if args.serial and args.protocol == "csv":
        _csv_columns(args.columns)  # before the port is opened
    out = Path(args.output)
    # before any sensor is opened: an existing file (or a file on the way) is not a session directory
    check_output_dir(out, "-o")
    resuming = (out / MANIFEST_NAME).exists()
    # one writer per session for the whole command (a second one is refused, naming this pid)
    lock = lock_session(out)
    try:
        return _log(args, out, resuming)
    finally:
        lock.release()


def _log(args: argparse.Namespace, out: Path, resuming: bool) -> int:
    from calib import __version__
    from calib.core.session import SessionWriter, check_stream_header
    from microbench.logger import SensorLogger

    sensors = _open_sensors(args)
    stop = threading.Event()
    got: list[int] = []  # the signals that stopped the logger
    old_term = signal.getsignal(signal.SIGTERM)
    old_int = signal.getsignal(signal.SIGINT)
    on_main_thread = threading.current_thread() is threading.main_thread()

    def _on_signal(signum: int, frame: Any) -> None:
        # SIGTERM or a first Ctrl-C: stop cleanly (the rows read so far are written); a second Ctrl-C
        # interrupts the stop
        got.append(signum)
        stop.set()
        if signum == signal.SIGINT:
            signal.signal(signal.SIGINT, signal.default_int_handler)

    writer = None
    logger = None
    interrupted = False
    try:
        if on_main_thread:  # (signal handlers can only be set there)
            signal.signal(signal.SIGTERM, _on_signal)
            signal.signal(signal.SIGINT, _on_signal)
        described = [s.describe() for s in sensors]
        plan = {"kind": "log", "rate_hz": args.rate, "duration_s": args.duration,
                "argv": sys.argv[1:] if sys.argv else []}
        if resuming:
            for s in sensors:  # before resume() adds a segment to the manifest
                check_stream_header(out / f"{s.name}.csv", s.columns, " (log into a new session)")
            writer = SessionWriter.resume(out, note="calib log")
            known = {d["name"]: d for d in [*writer.manifest.get("sensors", []), *described]}  # ours replace theirs
            writer.update_manifest(sensors=list(known.values()))
        else:
            writer = SessionWriter.create(out, {"device": _device_entry(sensors), "toolkit_version": __version__,
                                                "campaign": plan, "sensors": described})
        writer.mark("segment_start", source="calib log", rate_hz=args.rate, sensors=[s.name for s in sensors])
        logger = SensorLogger(writer, sensors, period_s=1.0 / args.rate).start()
        t0 = time.monotonic()
        show = sys.stderr.isatty() and not getattr(args, "quiet", False)
        try:
            while not stop.is_set():
                if args.duration is not None and time.monotonic() - t0 >= args.duration:
                    break
                logger.check()
                if show:
                    rows = sum(st.rows for st in logger.stats.sensors.values())
                    sys.stderr.write(f"\rlogging {time.monotonic() - t0:7.1f} s, {rows} rows ")
                    sys.stderr.flush()
                stop.wait(0.25 if args.duration is None else min(0.25, max(0.0, args.duration - (time.monotonic() - t0))))
        except KeyboardInterrupt:  # (Ctrl-C before the handler was set, or no handler off the main thread)
            interrupted = True
        interrupted = interrupted or signal.SIGINT in got
        if show:
            sys.stderr.write("\n")
        stats = logger.stop()
        empty, lost = _summarize(writer, sensors, stats, args, interrupted or stop.is_set())
    finally:
        if on_main_thread:
            signal.signal(signal.SIGTERM, old_term)
            signal.signal(signal.SIGINT, old_int)
        if logger is not None and logger.running:
            with contextlib.suppress(Exception):  # already failing; keep the first error
                logger.stop()
        for s in sensors:
            s.close()
        if writer is not None:
            writer.close()
    if empty:  # the rows logged so far stay in the session; the status says the log is unusable
        raise BadInputError(f"{out}: no samples recorded from {', '.join(empty)}; check --protocol, --baud "
                            "and the cable (see the rejected/instrument error counts above)")
    if lost:  # an instrument that vanished and never came back: the session ends in a gap (rows kept)
        raise DeviceLostError("; ".join(lost) + f"; {out} keeps every sample read before")
    if interrupted:
        sys.stderr.write(f"interrupted (Ctrl-C): {out} keeps every sample read so far\n")
        return 130  # the toolkit's Ctrl-C status (calib.cli.EXIT_INTERRUPTED)
    return 0


def _summarize(writer: Any, sensors: list[Any], stats: Any, args: argparse.Namespace,
               stopped: bool) -> tuple[list[str], list[str]]:
    """Print the segment summary (and store it in the manifest); returns the streams that recorded no
    row and the outages still open when the log stopped (an analyzer whose connection was lost and never
    came back), after a loud warning for every analyzer that rejected frames and every outage it
    recovered from (from when to when, in seconds into the segment)."""
    from calib.core.session import read_session
    from calib.windows import window_energy

    seg = writer.segment
    summary: dict[str, Any] = {"segment": seg, "requested_hz": args.rate, "elapsed_s": round(stats.elapsed_s, 3),
                               "stopped_by_signal": stopped, "streams": {}}
    for s in sensors:
        st = stats.sensors[s.name]
        entry: dict[str, Any] = {"rows": st.rows, "achieved_hz": round(stats.achieved_hz(s.name), 3),
                                 "transient_errors": st.transient_errors}
        if s.scope == "host" and hasattr(s, "wraps"):
            entry["rapl"] = {"wraps": dict(s.wraps), "host_power": s.capabilities()["host_power"]}
        if s.kind == "analyzer":  # "observed": which reading of unconfirmed facts it used
            entry["analyzer"] = {**s.stats.to_dict(), "observed": dict(s.observed)}
        summary["streams"][s.name] = entry
    # energy over the segment: counter vs integrated power (GPU streams with an energy counter), and the
    # host's (RAPL, wraps corrected)
    writer.close()
    sess = read_session(writer.path)
    for s in sensors:
        if s.scope == "gpu" and "energy_mj" in s.columns and "power_w" in s.columns:
            df = sess.stream(s.name)
            df = df[df["segment"] == seg]
            if len(df) >= 2:
                w = window_energy(df, float(df["t_mono_s"].iloc[0]), float(df["t_mono_s"].iloc[-1]))
                summary["streams"][s.name]["energy"] = w.to_dict()
        if s.scope != "host" or "host_energy_j" not in s.columns:
            continue
        df = sess.stream(s.name)
        df = df[(df["segment"] == seg) & df["host_energy_j"].notna()]
        if len(df) >= 2:
            e = float(df["host_energy_j"].iloc[-1] - df["host_energy_j"].iloc[0])
            dt = float(df["t_mono_s"].iloc[-1] - df["t_mono_s"].iloc[0])
            summary["streams"][s.name]["host_energy"] = {"energy_j": e, "mean_power_w": e / dt if dt > 0 else None}
    logs = list(writer.manifest.get("log_segments", [])) + [summary]
    writer.update_manifest(log_segments=logs)
    print(f"session {writer.path} segment {seg}: {summary['elapsed_s']:.1f} s"
          + (" (stopped by signal)" if stopped else ""))
    for name, e in summary["streams"].items():
        line = f"  {name}: {e['rows']} rows, {e['achieved_hz']:.2f} rows/s"
        if "analyzer" in e:
            a = e["analyzer"]
            line += (f"; rejected {a['rejected']}, truncated {a['truncated']}, instrument errors "
                     f"{a['instrument_errors']}, reconnects {a['reconnects']}")
            if a.get("error_values"):
                line += " (error values: " + ", ".join(f"{k} {n}" for k, n in a["error_values"].items()) + ")"
            if a.get("clock_slips"):
                line += f", device clock corrections {a['clock_slips']}"
        if "host_energy" in e:
            he, r = e["host_energy"], e.get("rapl", {})
            line += (f"; host energy {he['energy_j']:.3f} J ({r.get('host_power', '?')})"
                     + (f", mean {he['mean_power_w']:.2f} W" if he["mean_power_w"] is not None else "")
                     + (f", counter wraps {sum(r['wraps'].values())}" if r.get("wraps") else ""))
        if "energy" in e:
            en = e["energy"]
            if en["counter_j"] is not None and en["integrated_j"] is not None:
                line += (f"; energy counter {en['counter_j']:.3f} J vs integrated power {en['integrated_j']:.3f} J"
                         + (f" ({en['disagreement_pct']:+.2f} %)" if en["disagreement_pct"] is not None else ""))
        print(line)
    empty, lost = [], []
    t0, t1 = stats.started_mono_s, stats.stopped_mono_s
    ports = {s.name: getattr(s, "port_path", "") for s in sensors}
    for name, e in summary["streams"].items():
        a = e.get("analyzer") or {}
        if e["rows"] == 0:
            empty.append(name)
        if a.get("rejected"):
            share = a["rejected"] / max(1, a["rejected"] + e["rows"])
            warnings.warn(f"{name}: {a['rejected']} frames rejected ({100 * share:.0f} % of frames), {e['rows']} "
                          "rows recorded: wrong --protocol, --baud or --columns, or a noisy line?")
        for g in a.get("gaps") or []:
            warnings.warn(f"{name} on {ports[name]}: no readings for {g['back_t_mono_s'] - g['lost_t_mono_s']:.2f} s: "
                          f"connection lost {g['lost_t_mono_s'] - t0:.1f} s into the segment, back at "
                          f"{g['back_t_mono_s'] - t0:.1f} s")
        if a.get("lost_t_mono_s") is not None:
            lost.append(f"{name} on {ports[name]}: connection lost {a['lost_t_mono_s'] - t0:.1f} s into the "
                        f"{t1 - t0:.1f} s segment and not back when the log stopped (no readings for its last "
                        f"{t1 - a['lost_t_mono_s']:.1f} s)")
    return empty, lost
