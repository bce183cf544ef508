"""calib run: the main job -- campaign while logging, then fit, then the parameter file."""

from __future__ import annotations

import argparse
import re
import warnings

from calib.core.errors import BadInputError, DeviceError, FitError

HELP = "run the calibration campaign on a device while logging, fit, and write the parameter file"
DESCRIPTION = (
    "Run the calibration campaign on DEV (sim:<preset>, cuda:<index> or rocm:<index>; default: the first real GPU "
    "found (NVML, then amdsmi), else sim:gtx280) while logging into LOGS_DIR/<session>, then fit the models and write FITTED_DIR/<session>.json. "
    "On a virtual GPU also runs held-out workloads, predicts them and writes <session>.recovery.json. "
    "An interrupted run is resumed by running the same command again (same --name, or the newest incomplete "
    "session of the same device, campaign and seed).")


# one example per verb (tests/test_cli_friction.py); the adaptive design's is in --design's help
EPILOG = "example:\n  calib run --device sim:gtx580 --campaign quick --name gtx580-quick"

#: design kernels chosen per round, and rounds at most (``--design adaptive``)
DESIGN_KERNELS_PER_ROUND = 6
DESIGN_MAX_ROUNDS = 8
#: a round must lower some target's relative total error by this share, else the design stops: the total
#: holds model-form terms (extrapolation, the REG/FDS split) that more kernels do not shrink
DESIGN_MIN_GAIN = 0.1

#: longest session name: the longest file named after it, ``fitted/<name>.recovery.json`` written through a
#: temporary ``.<name>.recovery.json.XXXXXXXX.tmp``, must stay within a file system's 255-byte names
MAX_SESSION_NAME = 200


def _session_name(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.+=@,-]*", text) or text in (".", ".."):
        raise argparse.ArgumentTypeError(
            f"invalid session name {text!r}: one path component of letters, digits and _ . + = @ , - "
            "(not starting with '.' or '-')")
    if len(text) > MAX_SESSION_NAME:
        raise argparse.ArgumentTypeError(f"invalid session name ({len(text)} characters): at most "
                                         f"{MAX_SESSION_NAME} (its files' names must fit the file system's 255)")
    return text


def positive_number(kind: str):  # noqa: ANN201 - an argparse type
    """An argparse type: a finite number > 0; ``kind`` names the value in the message."""
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid {kind} {text!r}: expected a number > 0") from None
        if not v > 0 or v != v or v == float("inf"):
            raise argparse.ArgumentTypeError(f"invalid {kind} {text!r}: expected a number > 0")
        return v
    return parse


def int_at_least(low: int, what: str):  # noqa: ANN201 - an argparse type
    """An argparse type: an integer >= ``low``; ``what`` names the value in the message."""
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid {what} {text!r}: expected an integer >= {low}") from None
        if v < low:
            raise argparse.ArgumentTypeError(f"invalid {what} {v}: expected an integer >= {low}")
        return v
    return parse


_seed = int_at_least(0, "seed")


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
    p.add_argument("--design", choices=["none", "adaptive"], default="none",
                   help="adaptive: after the campaign, fit, choose mix kernels that most reduce the uncertainty of the "
                        "least-determined power parameters (calib.fit.design), run them, refit, and repeat until "
                        "every MaxPower meets --target, --budget is spent or the next kernels would lower no MaxPower's error "
                        "(a refit with their predicted power); the manifest records every round (e.g. calib run --device sim:titanx --design adaptive --target 5 --budget 1800)")
    p.add_argument("--target", type=positive_number("target"), default=5.0, metavar="PCT",
                   help="--design adaptive: relative total standard error (%%) each MaxPower should reach (default 5)")
    p.add_argument("--budget", type=positive_number("budget"), default=1800.0, metavar="S",
                   help="--design adaptive: device time (s) the design rounds may add (default 1800)")


def _attach_rapl(device) -> None:  # noqa: ANN001
    """Log the host's RAPL counters with a real GPU where they are readable; where not, say why (the fix
    is in the message) and go on without host power."""
    from microbench.devices.rapl import RaplSensor

    try:
        device.attach(RaplSensor())
    except DeviceError as e:
        warnings.warn(f"no host power (system baseline and copies without the host's CPU/DRAM): {e}", RuntimeWarning,
                      stacklevel=2)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from calib.core.atomic import check_output_dir, check_writable
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
    check_writable(logs, "--logs-dir")
    check_writable(fitted, "--fitted-dir")
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
            check_writable(session, "session directory")
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
        if getattr(args, "design", "none") == "adaptive":
            _design_rounds(args, session, device, say)
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


def _target_errors(pf) -> dict[str, dict[str, float]]:  # noqa: ANN001 - a ParameterFile
    """Per MaxPower (and constant power) of the IPP section: stderr, stderr_total and the total relative %."""
    out = {}
    sec = pf.get("power")
    if sec is None or sec.model != "ipp":
        return out
    for n, p in sec.params.items():
        if p.vary and (n.startswith("max_power_") or n in ("const_sm_power_w", "activation_power_w")):
            se = p.stderr_total or p.stderr
            out[n] = {"value": p.value, "stderr": p.stderr, "stderr_total": p.stderr_total,
                      "rel_total_pct": 100.0 * se / abs(p.value) if se is not None and p.value else None}
    return out


def _improved(before: dict, after: dict, targets: list[str]) -> bool:
    """Whether some target's relative total error fell by :data:`DESIGN_MIN_GAIN` of itself."""
    pairs = [((before.get(n) or {}).get("rel_total_pct"), (after.get(n) or {}).get("rel_total_pct")) for n in targets]
    return any(b is not None and a is not None and a < (1.0 - DESIGN_MIN_GAIN) * b for b, a in pairs)


def _preview_errors(out, session, device, cands, repeats: int) -> dict[str, dict[str, float]] | None:  # noqa: ANN001
    """:func:`_target_errors` of the power section refitted with the rows ``cands`` would add if the
    current fit were right (:func:`calib.fit.design.preview_rows`): what a round of them can lower, the
    total's model-form terms counted (the linear update of the design criterion counts them as noise).
    The refit is :func:`calib.fit.pipeline.refit_power`'s, on the session's samples and these rows. None
    when the preview cannot be fitted (the round is then run)."""
    import pandas as pd

    from calib.core.session import read_session
    from calib.fit.design import preview_rows
    from calib.fit.pipeline import session_power_fitter
    from calib.segment import session_data
    from microbench.benchmarks import design_benchmark

    if not cands:
        return None
    pf = out.params
    rows = preview_rows(pf, cands, device.info, out.samples, repeats,
                        workload_of=lambda entry, max_w: design_benchmark(entry, max_w).workload(device.info))
    data = session_data(read_session(session))
    data.samples = pd.concat([data.samples, rows], ignore_index=True)
    th = pf.get("thermal")
    correction = ({"sigma_w_per_c": th.value("sigma_w_per_c"), "idle_temp_c": th.value("idle_temp_c")}
                  if th is not None else None)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ipp = session_power_fitter(data.device, data.samples, correction).fit(data)
    except (FitError, BadInputError):
        return None
    seen = pf.copy()
    seen["power"] = ipp.section_
    return _target_errors(seen)


def _design_rounds(args: argparse.Namespace, session, device, say) -> None:  # noqa: ANN001
    """``--design adaptive`` (module docstring of :mod:`calib.fit.design`): fit, choose, run, refit, until
    every target is met, the budget is spent or no candidate helps; a killed round is finished first."""
    from calib.core.session import read_session
    from calib.fit.design import design_round
    from calib.fit.pipeline import fit_session, refit_power
    from microbench.benchmarks import design_benchmark
    from microbench.campaign import DESIGN_FIELD, Campaign

    camp = Campaign(device, args.campaign, args.seed)
    rounds = list(read_session(session).manifest.get(DESIGN_FIELD) or [])
    spent = sum(float(r.get("expected_s", 0.0)) for r in rounds)
    if rounds and not rounds[-1].get("complete"):
        say(f"design round {rounds[-1]['round']}: finishing the kernels a killed run left")
        camp.run_design_round(session, rounds[-1])
    k = 1 + max((int(r["round"]) for r in rounds), default=0)
    out = None
    for _ in range(DESIGN_MAX_ROUNDS):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # the first fit is the whole session's; a round adds power benchmarks only, so after it only
            # the power section is refitted (the thermal and timing sections it reads are unchanged)
            out = fit_session(session) if out is None else refit_power(out.params, session)
        errs = _target_errors(out.params)
        if k > 1:
            camp.update_design_record(session, k - 1, after=errs)
            prev = read_session(session).manifest[DESIGN_FIELD][-1]
            if not _improved(prev.get("before") or {}, errs, prev.get("above_target") or []):
                say(f"design: round {k - 1} lowered no MaxPower's relative total error by {100 * DESIGN_MIN_GAIN:g} % "
                    "or more (what is left is model form, not noise); no further round")
                return
        plan_names = {p.get("name") for p in read_session(session).manifest.get("plan") or []}
        st = design_round(out.params, device.info, out.samples, args.target, DESIGN_KERNELS_PER_ROUND,
                          repeats=camp.spec.repeats, exclude=plan_names,
                          workload_of=lambda entry, max_w: design_benchmark(entry, max_w).workload(device.info))
        if not st.above_target:
            say(f"design: every MaxPower within {args.target:g} % (total standard error); no further round")
            return
        kernels = [c.entry() for c in st.chosen]
        while kernels and spent + camp.design_round_s(kernels) > args.budget:
            kernels.pop()
        if not kernels:
            say(f"design: stopped, {'no candidate kernel lowers the uncertainty' if not st.chosen else 'budget spent'} "
                f"({spent:.0f} of {args.budget:g} s); above the target: {', '.join(st.above_target)}")
            return
        cost = camp.design_round_s(kernels)
        preview = _preview_errors(out, session, device, st.chosen[:len(kernels)], camp.spec.repeats)
        if preview is not None and not _improved(errs, preview, st.above_target):
            left = ", ".join(f"{n} {errs[n]['rel_total_pct']:.0f} %" for n in st.above_target
                             if (errs.get(n) or {}).get("rel_total_pct") is not None)
            say(f"design: the {len(kernels)} kernels chosen next would lower no MaxPower's relative total error by "
                f"{100 * DESIGN_MIN_GAIN:g} % (refit with their power as predicted): what is left is model form "
                f"(a MaxPower's extrapolation beyond the access rates a kernel reaches, units always active together), "
                f"not noise; no round run. Above the {args.target:g} % target: {left}")
            return
        say(f"design round {k}: {len(kernels)} kernels ({cost:.0f} s): " + ", ".join(e["name"] for e in kernels))
        chosen = {e["name"] for e in kernels}
        rec = {"round": k, "target_pct": args.target, "kernels": kernels, "expected_s": cost,
               "above_target": st.above_target, "before": errs,
               "predicted_rel_total_pct": {n: v for n, v in st.rel_se_predicted_pct.items()
                                           if len(chosen) == len(st.chosen)}}
        if preview is not None:
            rec["preview_rel_total_pct"] = {n: (preview.get(n) or {}).get("rel_total_pct") for n in st.above_target}
        camp.run_design_round(session, rec)
        spent += cost
        k += 1
    say(f"design: {DESIGN_MAX_ROUNDS} rounds run; stopped")


def _fit_and_write(args: argparse.Namespace, session, fitted, device) -> int:  # noqa: ANN001
    from calib.core.atomic import atomic_write_json
    from calib.core.samples import write_samples
    from calib.fit.pipeline import FIT_STAGES, fit_session
    from calib.progress import StagedProgress, printer, wants_progress
    from calib.report_text import fit_summary

    say = printer(args)
    with StagedProgress(FIT_STAGES, "fit", wants_progress(args)) as prog:
        out = fit_session(session, accept_poor_fit=getattr(args, "accept_poor_fit", False), progress=prog.stage)
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
