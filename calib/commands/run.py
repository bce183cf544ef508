"""calib run: the main job -- campaign while logging, then fit, then the parameter file."""

from __future__ import annotations

import argparse

HELP = "run the calibration campaign on a device while logging, fit, and write the parameter file"
DESCRIPTION = (
    "Run the calibration campaign on DEV (sim:<preset>, cuda:<index> or rocm:<index>; default: the first real GPU "
    "found (NVML, then amdsmi), else sim:gtx280) while logging into LOGS_DIR/<session>, then fit the models and write FITTED_DIR/<session>.json. "
    "On a virtual GPU also runs held-out workloads, predicts them and writes <session>.recovery.json. "
    "An interrupted run is resumed by running the same command again (same --name, or the newest incomplete "
    "session of the same device, campaign and seed).")


EPILOG = "example:\n  calib run --device sim:gtx580 --campaign quick --name gtx580-quick"

#: longest session name: the longest file named after it, ``fitted/<name>.recovery.json`` written through a
#: temporary ``.<name>.recovery.json.XXXXXXXX.tmp``, must stay within a file system's 255-byte names
MAX_SESSION_NAME = 200


def _session_name(text: str) -> str:
    import re

    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.+=@,-]*", text) or text in (".", ".."):
        raise argparse.ArgumentTypeError(
            f"invalid session name {text!r}: one path component of letters, digits and _ . + = @ , - "
            "(not starting with '.' or '-')")
    if len(text) > MAX_SESSION_NAME:
        raise argparse.ArgumentTypeError(f"invalid session name ({len(text)} characters): at most "
                                         f"{MAX_SESSION_NAME} (its files' names must fit the file system's 255)")
    return text


def _seed(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid seed {text!r}: expected an integer >= 0") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"invalid seed {v}: expected an integer >= 0")
    return v


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default=None,
                   help="sim:<preset>, cuda:<index> (NVIDIA) or rocm:<index> (AMD, HIP index) (see `calib devices`)")
    p.add_argument("--campaign", default="standard", choices=["quick", "standard", "full"],
                   help="campaign size (default: standard)")
    p.add_argument("--logs-dir", default="logs", help="where session directories go (default: logs/)")
    p.add_argument("--fitted-dir", default="fitted", help="where parameter files go (default: fitted/)")
    p.add_argument("--name", default=None, type=_session_name,
                   help="session name, one path component (default: <device>-<campaign>-<UTC time>)")
    p.add_argument("--seed", type=_seed, default=0, help="noise seed of the virtual GPU, >= 0 (default 0)")
    p.add_argument("--accept-poor-fit", action="store_true",
                   help="write the parameter file even when the fit's error is absurd (the session is kept either way)")
    p.add_argument("--new", action="store_true", help="start a new session even if an incomplete one could be resumed (with --name: the name must not exist)")


def _check_writable(path, what: str) -> None:
    """Refuse (BadInputError) a directory we could not write into, before the campaign spends its time
    (:func:`calib.core.atomic.check_writable`)."""
    from calib.core.atomic import check_writable

    check_writable(path, what)


def _attach_rapl(device) -> None:  # noqa: ANN001
    """Log the host's RAPL counters with a real GPU where they are readable; where not, say why (the fix
    is in the message) and go on without host power."""
    import warnings

    from calib.core.errors import DeviceError
    from microbench.devices.rapl import RaplSensor

    try:
        device.attach(RaplSensor())
    except DeviceError as e:
        warnings.warn(f"no host power (system baseline and copies without the host's CPU/DRAM): {e}", RuntimeWarning,
                      stacklevel=2)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from calib.core.atomic import check_output_dir
    from calib.core.errors import BadInputError
    from calib.core.session import lock_session, read_session
    from calib.progress import Progress, printer, wants_progress
    from microbench.campaign import (
        Campaign,
        check_session_matches,
        default_session_name,
        find_resumable,
    )
    from microbench.devices import default_device_spec, open_device

    say = printer(args)
    logs, fitted = Path(args.logs_dir), Path(args.fitted_dir)
    check_output_dir(logs, "--logs-dir")       # before any work: a bad directory must not cost a campaign
    check_output_dir(fitted, "--fitted-dir")
    _check_writable(logs, "--logs-dir")
    _check_writable(fitted, "--fitted-dir")
    spec = args.device or default_device_spec()
    device = open_device(spec, seed=args.seed)
    if not device.virtual:
        _attach_rapl(device)
    lock = None
    try:
        if args.name:
            session = logs / args.name
            if args.new and session.exists():  # never delete measurements: a new session needs a new name
                raise BadInputError(f"{session}: exists; --new with --name needs a name not in use "
                                    "(or drop --name for a new time-stamped session)")
        else:
            found = None if args.new else find_resumable(logs, device, args.campaign, args.seed, fitted)
            session = found or logs / default_session_name(device, args.campaign)
        if session.exists() and not session.is_dir():
            raise BadInputError(f"{session}: exists and is not a directory; choose another --name")
        # one writer per session, for the whole run (campaign, fit, outputs); a second one is refused
        lock = lock_session(session)
        exists = (session / "manifest.json").exists()
        complete = False
        if exists:
            sess = read_session(session)
            complete = sess.is_complete()
            # the same device, campaign and seed, or the fit (and a recovery report) would describe another run
            check_session_matches(session, sess.manifest, device, args.campaign, args.seed, complete)
        if exists and not complete:
            _check_writable(session, "session directory")
        if complete:  # measured already (e.g. killed during the fit): fit and write what is missing
            say(f"session {session} is complete; fitting it")
        else:
            say(f"{'resuming' if exists else 'running'} campaign '{args.campaign}' on {spec} "
                  f"({device.info.name}) -> {session}")
            camp = Campaign(device, args.campaign, args.seed)
            prog = Progress(camp.expected_s, "campaign", wants_progress(args), unit="s")
            camp.on_step = lambda step, done_s: prog.set(done_s, step.name)
            camp.run(session)
            prog.close()
    except BaseException:
        if lock is not None:
            lock.release()
        raise
    finally:
        device.close()
    try:
        return _fit_and_write(args, session, fitted, device)
    finally:
        lock.release()


def _fit_and_write(args: argparse.Namespace, session, fitted, device) -> int:  # noqa: ANN001
    from calib.core.atomic import atomic_write_json
    from calib.core.samples import write_samples
    from calib.fit.pipeline import FIT_STAGES, fit_session
    from calib.progress import StagedProgress, printer, wants_progress
    from calib.report_text import fit_summary

    say = printer(args)
    prog = StagedProgress(FIT_STAGES, "fit", wants_progress(args))
    try:
        out = fit_session(session, accept_poor_fit=getattr(args, "accept_poor_fit", False), progress=prog.stage)
    finally:
        prog.close()
    pf = out.params
    name = session.name
    fitted.mkdir(parents=True, exist_ok=True)
    samples_path = fitted / f"{name}.samples.csv"
    params_path = fitted / f"{name}.json"
    write_samples(out.samples, samples_path)
    pf.save(params_path)
    say(fit_summary(pf))
    say(f"logs:       {session}")
    say(f"samples:    {samples_path}")
    say(f"parameters: {params_path}")
    stats = pf["power"].stats
    if stats.get("host_idle_power_w") is not None:
        idle = pf["power"]["idle_power_w"].value if "idle_power_w" in pf["power"] else float("nan")
        say(f"system baseline: board idle {idle:.1f} W + host CPU/DRAM idle {stats['host_idle_power_w']:.1f} "
            f"+/- {stats['host_idle_power_se_w']:.2f} W ({stats['host_idle_power_source']})")
    if stats.get("heldout_mape_pct") is not None:
        parts = ", ".join(f"{k.replace('_', ' ')} {v['mape_pct']:.2f}% ({v['rows']} rows)"
                          for k, v in stats["heldout_by_clocks"].items())
        say(f"held-out application-like workloads: power MAPE {stats['heldout_mape_pct']:.2f}% over "
              f"{stats['heldout_rows']} rows ({parts})")
    if device.virtual:
        from calib.report.recovery import format_table, recovery_report

        rep = recovery_report(device.info.extra["preset"], pf, stats.get("heldout_mape_pct"),
                              stats.get("heldout_rows", 0))
        rep["heldout_by_clocks"] = stats.get("heldout_by_clocks", {})
        rec_path = fitted / f"{name}.recovery.json"
        atomic_write_json(rec_path, rep)
        say("recovery against the virtual GPU's ground truth:")
        say(format_table(rep))
        say(f"recovery:   {rec_path}")
    return 0
