"""calib selftest: the acceptance run of a GPU -- every part of the toolkit on it, each check with a
pass/fail and its figures, written as DIR/selftest.json and DIR/selftest.html.

The checks (:data:`CHECKS`, also ``calib selftest --list``) run in order on the device; each one runs for
real against it, the virtual GPUs included (their sensors sample like the real ones and their kernels
have published peaks to be measured against; nothing passes by construction). A check that raises is a
failure with the reason, and the next check still runs; the JSON is rewritten after every check
(atomically), so an interrupted run keeps what it found. Exit status 0 when every check passed or was
skipped (with its reason), 1 when one failed.
"""

from __future__ import annotations

import argparse
import html
import json
import math
import signal
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

HELP = "acceptance run of a GPU: every part of the toolkit on it, each check with pass/fail and figures (JSON, HTML)"
DESCRIPTION = (
    "Run the acceptance checks on DEV (cuda:<index> on a real GPU; sim:<preset> runs the same checks on a virtual "
    "GPU, e.g. sim:a100, sim:h100, sim:a10): calib doctor; every kernel timed against its unit's peak; the NVML "
    "sampling rate reached; the power update period and averaging window; the energy counter against the integrated "
    "power; a bursty load's energy, corrected for how NVML samples, by two routes; clock locking applied, read back "
    "and restored after Ctrl-C; a quick campaign and its fit; the report. Writes DIR/selftest.json and "
    "DIR/selftest.html (and the campaign, parameter file and report under DIR). `--list` prints what is checked.")
EPILOG = "example:\n  calib selftest --device sim:a100 -o selftest-a100"

#: (key, title, what it checks on a real GPU and when it passes)
CHECKS: tuple[tuple[str, str, str], ...] = (
    ("doctor", "calib doctor",
     "`calib doctor --device DEV --json` runs; the GPU is found (NVML on NVIDIA), its power reading and energy "
     "counter are readable. Pass: no error for the device, power_w and energy_mj among its sensor's columns."),
    ("kernels", "every kernel against its unit's peak",
     "every catalog kernel with a rate (FP32, FP64, INT, ALU, SFU, control, tensor operations/s; shared, L1, texture, "
     "L2 and DRAM bytes/s) compiled, launched at 32 warps per SM and timed with CUDA events for 0.5 s; its achieved "
     "rate against the peak from the device's clocks and unit counts (microbench/kernels/peaks.py). Pass: each "
     "between 25 % and 102 % of its peak (above 100 % means a wrong count or peak; far below, a kernel that does "
     "not stress its unit), or a positive rate where no peak is published."),
    ("sampling_rate", "NVML sampling rate reached",
     "NVML polled as fast as the logger can for 2 s under load. Pass: every update of the reading seen (no gap "
     "over 2.5 update periods, updates seen >= 90 % of the expected) and, on a real GPU, at least 4 polls per "
     "update period."),
    ("power_sampling", "power update period and averaging window",
     "square-wave loads against the readings and the energy counter (microbench.power_sampling; Yang, Adamek, "
     "Armour, arXiv 2312.02741): update period, averaging window and lag, share of time covered, the counter's "
     "window. Pass: the fits converged (finite errors), the window within 10 % and the period within 1 % "
     "(standard errors), and the boxcar describes the readings (residual under 5 % of the step)."),
    ("energy_counter", "energy counter against integrated power",
     "10 s of steady load: the counter's energy against the integral of the power readings over the same "
     "interval (between counter updates). Pass: within 5 %."),
    ("power_correction", "a bursty load's energy, corrected for NVML's sampling",
     "5 s of a load with structure below the update period (kernel bursts of 30.2 ms every 50.4 ms), repeated at "
     "shifted phases of the sampling grid: naive polling (trapezoid of one run's readings) against the corrected "
     "energy from the source the sampling facts choose (counter, or the phased readings) and against a second, "
     "independent route (the other source). Pass: the two corrected routes agree within 3 combined standard "
     "errors plus 0.2 %."),
    ("clock_lock", "clock locking applied, read back, restored after Ctrl-C",
     "a supported core clock other than the default locked (nvmlDeviceSetGpuLockedClocks), read back under "
     "load, then SIGINT raised; the interrupt unwinds through device.close(), which resets the lock. Pass: the "
     "clock read back is the one locked, and after the interrupt the clock under load is the default again (a "
     "reopened device on a real GPU). Needs root on a real GPU (skipped without)."),
    ("campaign", "a quick campaign and its fit, end to end",
     "`calib run --device DEV --campaign quick` into DIR (logs, samples, parameter file). Pass: exit status 0, "
     "the parameter file validates, the power fit's MAPE under 10 %."),
    ("report", "the report",
     "`calib report` of the campaign's parameter file into DIR/report. Pass: exit status 0 and index.html with "
     "at least one figure."),
)


@dataclass
class CheckResult:
    """One check's outcome: ``status`` pass/fail/skip, its figures and a one-line message."""

    key: str
    title: str
    status: str = "fail"
    message: str = ""
    figures: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def verdict(self, problems: list[str], passed: Callable[[], str]) -> None:
        """Fail with the ``problems`` found (joined), or pass with the message ``passed()`` (made only then:
        its figures may not exist otherwise)."""
        self.status, self.message = ("fail", "; ".join(problems)) if problems else ("pass", passed())


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default=None, help="sim:<preset> or cuda:<index> (default: the first real GPU, "
                                                  "else sim:a100)")
    p.add_argument("-o", "--output", default=None, metavar="DIR",
                   help="directory for selftest.json, selftest.html, the campaign and the report "
                        "(default: selftest-<device>-<UTC time>)")
    p.add_argument("--seed", type=int, default=0, help="noise seed of a virtual GPU (default 0)")
    p.add_argument("--only", default=None, metavar="KEYS", help="comma-separated checks to run (see --list)")
    p.add_argument("--list", action="store_true", help="print what is checked on a real GPU, and exit")


def run(args: argparse.Namespace) -> int:
    from calib.core.atomic import check_output_dir
    from calib.core.errors import BadInputError
    from microbench.devices.registry import real_gpus

    if args.list:  # what is checked on a real GPU
        print("\n".join(["calib selftest checks, in order (each with pass/fail and its figures):"]
                        + [f"{i}. {key}: {title}\n   {what}" for i, (key, title, what) in enumerate(CHECKS, 1)]))
        return 0
    keys = [k for k, _, _ in CHECKS]
    only = [k.strip() for k in args.only.split(",") if k.strip()] if args.only else keys
    bad = [k for k in only if k not in keys]
    if bad:
        raise BadInputError(f"--only: unknown check(s) {', '.join(bad)}; checks: {', '.join(keys)}")
    spec = args.device or next((g["spec"] for g in real_gpus() if g["spec"].startswith("cuda:")), "sim:a100")
    out = Path(args.output or f"selftest-{spec.replace(':', '-')}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}")
    check_output_dir(out, "--output")
    out.mkdir(parents=True, exist_ok=True)
    st = SelfTest(spec, args.seed, out, quiet=getattr(args, "quiet", False))
    results = st.run(only)
    failed = [r for r in results if r.status == "fail"]
    print(f"selftest of {spec}: {sum(r.status == 'pass' for r in results)} passed, {len(failed)} failed, "
          f"{sum(r.status == 'skip' for r in results)} skipped -> {out / 'selftest.json'}, {out / 'selftest.html'}")
    return 1 if failed else 0


class SelfTest:
    """The checks of :data:`CHECKS` on device ``spec``; results in ``out``."""

    def __init__(self, spec: str, seed: int, out: Path, quiet: bool = False):
        self.spec, self.seed, self.out, self.quiet = spec, int(seed), Path(out), quiet
        self.device: Any = None
        self.facts: Any = None
        self.results: list[CheckResult] = []
        self.started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

    # -- driver ------------------------------------------------------------------------------
    def run(self, only: list[str]) -> list[CheckResult]:
        from calib.core.errors import CalibError
        from microbench.devices.registry import open_device

        self.device = open_device(self.spec, seed=self.seed)
        try:
            for key, title, _ in CHECKS:
                if key not in only:
                    continue
                res = CheckResult(key, title)
                t0 = time.monotonic()
                fn: Callable[[CheckResult], None] = getattr(self, f"check_{key}")
                try:
                    fn(res)
                except CalibError as e:
                    res.status, res.message = "fail", str(e)
                except Exception as e:  # noqa: BLE001 - a broken check is a failed check; the next one runs
                    res.status, res.message = "fail", f"internal error ({type(e).__name__}: {e})"
                res.seconds = round(time.monotonic() - t0, 2)
                self.results.append(res)
                if not self.quiet:
                    print(f"[{res.status.upper():4}] {key}: {res.message}", flush=True)
                self.write()
        finally:
            if self.device is not None:
                self.device.close()
        return self.results

    def write(self) -> None:
        from calib.core.atomic import atomic_write_json, atomic_write_text, json_safe

        doc = json_safe(self.document())
        atomic_write_json(self.out / "selftest.json", doc)
        atomic_write_text(self.out / "selftest.html", html_page(doc))

    def document(self) -> dict[str, Any]:
        from calib import __version__

        dev = self.device
        return {"toolkit_version": __version__, "device": self.spec, "virtual": bool(getattr(dev, "virtual", False)),
                "device_name": getattr(getattr(dev, "info", None), "name", None), "started_utc": self.started,
                "seed": self.seed, "passed": all(r.status != "fail" for r in self.results),
                "checks": [asdict(r) for r in self.results],
                "checked_on_a_real_gpu": [{"key": k, "title": t, "what": w} for k, t, w in CHECKS]}

    # -- helpers -------------------------------------------------------------------------------
    def _cli(self, argv: list[str]) -> tuple[int, str]:
        import contextlib
        import io

        from calib.cli import main

        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            code = main(argv)
        return code, buf.getvalue()

    def _tapped_load(self, seconds: float) -> tuple[float, float, dict[str, Any]]:
        """Run the steady load for ``seconds`` after 0.5 s idle: its start and end (device clock, s) and
        the NVML readings over the load and what came after the idle (:class:`NvmlTap`)."""
        from microbench.power_sampling import NvmlTap, wait

        dev = self.device
        with NvmlTap(dev) as tap:
            wait(dev, 0.5)
            tap.take()
            t0 = dev.clock()[0]
            dev.run(self._load(), seconds)
            t1 = dev.clock()[0]
            return t0, t1, tap.take()

    def _load(self) -> Any:
        from microbench.power_sampling import default_load

        return default_load(self.device)

    # -- checks --------------------------------------------------------------------------------
    def check_doctor(self, res: CheckResult) -> None:
        code, text = self._cli(["doctor", "--device", self.spec, "--json"])
        res.figures["exit_status"] = code
        if code != 0:
            res.message = f"calib doctor exited with status {code}"
            return
        rep = json.loads(text)
        dev = (rep.get("devices") or [{}])[0]
        nv = rep.get("nvml", {})
        res.figures.update(nvml_available=nv.get("available"), nvml_message=nv.get("message"),
                           nvidia_ml_py=(nv.get("binding") or {}).get("nvidia-ml-py"), device_name=dev.get("name"))
        if "error" in dev:
            res.message = f"{self.spec}: {dev['error']}"
            return
        gpu = [s for s in dev.get("sensors", []) if s.get("scope", "gpu") == "gpu"]
        cols = set(gpu[0]["columns"]) if gpu else set()
        res.figures.update(sensors=[s["name"] for s in dev.get("sensors", [])], gpu_sensor_columns=sorted(cols))
        missing = {"power_w", "energy_mj"} - cols
        if not gpu or missing:
            res.message = f"the GPU sensor lacks {', '.join(sorted(missing)) or 'everything'}"
            return
        if not self.device.virtual and not nv.get("available"):
            res.message = f"NVML not usable: {nv.get('message')}"
            return
        res.status, res.message = "pass", f"{dev.get('name')}: power and energy counter readable"

    def check_kernels(self, res: CheckResult) -> None:
        from microbench.kernels import catalog, peaks

        dev = self.device
        rows: list[dict[str, Any]] = []
        if dev.virtual:
            cc_text = dev.info.extra.get("compute_capability")
            bus = dev.info.extra.get("memory_bus_bits")
            if not cc_text or not bus:
                res.status, res.message = "skip", ("this virtual GPU has no compute capability or memory bus: no "
                                                   "published peaks to measure against (use sim:a100, sim:h100, sim:a10)")
                return
            cc = int(str(cc_text).replace(".", ""))
            core, mem = dev.clocks()
            rates = peaks.DeviceRates(cc, dev.info.sm_count, core * 1e6, mem * 1e6, int(bus))
            from microbench.spec import Benchmark

            for k in peaks.RATE_KINDS:
                spec = catalog.get(k)
                if k == "tensor" and cc < 70:
                    continue
                b = Benchmark(name=f"selftest/{k}", kernel=k, role="unit", stresses=spec.stresses, kind="unit",
                              warps_per_sm=32, blocks_per_sm=4)
                w = b.workload(dev.info)
                r = dev.run(w, 0.5)
                warps = w.launch.blocks * w.launch.warps_per_block
                rate = peaks.achieved(k, w.per_warp, warps, 1, r.kernel_time_s, rates)
                rows.append({"kernel": k, **(rate.to_dict() if rate else {"rate": None, "unit": None, "peak": None,
                                                                          "percent_of_peak": None}),
                             "kernel_time_s": r.kernel_time_s, "launches": r.launches})
        else:
            runner = dev._get_runner()
            for k in peaks.RATE_KINDS:
                if k == "tensor" and runner.cc < 70:
                    continue
                try:
                    rows.append({"kernel": k, **runner.measure_throughput(k, duration_s=0.5)})
                except Exception as e:  # noqa: BLE001 - one kernel's failure is reported, the others run
                    rows.append({"kernel": k, "rate": None, "unit": None, "peak": None, "percent_of_peak": None,
                                 "error": f"{type(e).__name__}: {e}"})
        bad = []
        for row in rows:
            pct, rate = row.get("percent_of_peak"), row.get("rate")
            ok = 25.0 <= pct <= 102.0 if pct is not None else rate is not None and math.isfinite(rate) and rate > 0
            row["status"] = "pass" if ok else "fail"
            if not ok:
                bad.append(row["kernel"])
        res.figures["kernels"] = rows
        res.figures["clocks_mhz"] = list(dev.clocks())
        if bad:
            res.message = f"{len(bad)} of {len(rows)} kernels outside 25-102 % of peak: {', '.join(bad)}"
            return
        with_peak = [r for r in rows if r.get("percent_of_peak") is not None]
        lo = min((r["percent_of_peak"] for r in with_peak), default=math.nan)
        hi = max((r["percent_of_peak"] for r in with_peak), default=math.nan)
        res.status = "pass"
        res.message = (f"{len(rows)} kernels; {len(with_peak)} against a published peak at {lo:.0f}-{hi:.0f} %, "
                       f"{len(rows) - len(with_peak)} without one (rate only)")

    def check_sampling_rate(self, res: CheckResult) -> None:
        import numpy as np

        from microbench.power_sampling import change_instants, fit_update_period

        dev = self.device
        t0, t1, d = self._tapped_load(2.0)
        sel = (d["t"] >= t0 + 0.3) & (d["t"] <= t1)
        t, p = d["t"][sel], d["power_w"][sel]
        tc, _ = change_instants(t, p)
        u, _, _ = fit_update_period(tc)
        span = t1 - t0 - 0.3
        gaps = np.diff(tc)
        polls = float(t.size / span)
        res.figures.update(seconds=round(span, 3), polls=int(t.size), polls_per_s=polls,
                           updates_seen=int(tc.size), updates_per_s=float(tc.size / span), update_period_s=u,
                           expected_updates=span / u, max_gap_s=float(gaps.max()) if gaps.size else None,
                           mean_read_s=float(np.nanmean(d["read_s"])) if np.isfinite(d["read_s"]).any() else None)
        problems = []
        if tc.size < 0.9 * span / u - 1:
            problems.append(f"saw {tc.size} updates of {span / u:.0f} expected")
        if gaps.size and gaps.max() > 2.5 * u:
            problems.append(f"a gap of {gaps.max() * 1000:.0f} ms between updates ({u * 1000:.0f} ms period)")
        if not dev.virtual and polls < 4.0 / u:
            problems.append(f"polled {polls:.0f}/s, under 4 per update period ({4.0 / u:.0f}/s)")
        res.verdict(problems, lambda: f"{tc.size} of {span / u:.0f} updates seen ({1 / u:.1f} Hz), max gap "
                    f"{gaps.max() * 1000:.0f} ms" + ("" if dev.virtual else f", {polls:.0f} polls/s"))

    def check_power_sampling(self, res: CheckResult) -> None:
        from microbench.power_sampling import characterise

        f = characterise(self.device)
        self.facts = f
        d = f.to_dict()
        res.figures.update({k: v for k, v in d.items() if k != "details"}, fits=d["details"])
        problems = []
        for what, v, se, rel in (("window", f.power_window_s, f.power_window_stderr_s, 0.10),
                                 ("update period", f.update_period_s, f.update_period_stderr_s, 0.01)):
            if not (math.isfinite(se) and se <= rel * v):
                problems.append(f"{what} {v * 1000:.2f} ms +- {se * 1000:.2f} ms: not determined to {100 * rel:.0f} %")
        if f.fit_residual_rel > 0.05:
            problems.append(f"the boxcar leaves {100 * f.fit_residual_rel:.1f} % of the step unexplained: the reading "
                            "is not a boxcar average")
        from calib.commands.doctor import sampling_lines

        res.verdict(problems, lambda: " | ".join(sampling_lines(d)))

    def check_energy_counter(self, res: CheckResult) -> None:
        from calib.windows import window_energy
        from microbench.power_sampling import change_instants

        t0, t1, d = self._tapped_load(10.0)
        tc, _ = change_instants(d["t"], d["energy_mj"])
        inner = tc[(tc >= t0 + 1.0) & (tc <= t1 - 0.2)]
        if inner.size < 2:
            res.message = "the energy counter did not update during 10 s of load"
            return
        a, b = float(inner[0]), float(inner[-1])
        we = window_energy({"t_mono_s": d["t"], "power_w": d["power_w"], "energy_mj": d["energy_mj"]}, a, b)
        res.figures.update(interval_s=[a, b], counter_j=we.counter_j, integrated_j=we.integrated_j,
                           disagreement_pct=we.disagreement_pct, counter_updates=we.n_counter_updates,
                           power_readings=we.n_power, mean_power_w=(we.counter_j or math.nan) / (b - a))
        if we.disagreement_pct is None:
            res.message = "no counter or power readings over the interval"
            return
        ok = abs(we.disagreement_pct) <= 5.0
        res.status = "pass" if ok else "fail"
        res.message = (f"counter {we.counter_j:.1f} J, integrated power {we.integrated_j:.1f} J over {b - a:.1f} s: "
                       f"{we.disagreement_pct:+.2f} %" + ("" if ok else " (over 5 %)"))

    def check_power_correction(self, res: CheckResult) -> None:
        import numpy as np

        from calib.windows import Run, counter_run_energy, mean_run_energy, power_run_energy, window_energy
        from microbench.power_sampling import (
            characterise,
            counter_readings,
            energy_source,
            phase_offsets,
            phased_runs,
        )

        dev = self.device
        f = self.facts or characterise(dev)
        self.facts = f
        shape = {"period_s": 0.0504, "duty": 0.6, "low": 0.0}   # kernel bursts of 30.2 ms every 50.4 ms
        offs = phase_offsets(f, 2) if f.part_time else [0.0, 0.37 * f.update_period_s, 0.71 * f.update_period_s]
        runs = phased_runs(dev, self._load(), 5.0, f, offsets=offs, shape=shape)
        naive = [window_energy({"t_mono_s": r.t_s, "power_w": r.power_w}, r.start_s, r.stop_s).integrated_j
                 for r in runs]
        timing = 0.0 if dev.virtual else 0.002 / math.sqrt(12.0)   # the tap's poll period

        def by_counter() -> Any:
            es = [counter_run_energy(r.t_s, r.energy_mj, r.start_s, r.stop_s, timing_sd_s=timing) for r in runs]
            es = [e for e in es if e is not None]
            if not es:
                return None
            m = mean_run_energy(es)
            return m.energy_j, m.stderr_j, f"counter ({len(es)} runs)"

        def by_power() -> Any:
            e = power_run_energy([Run(r.t_s, r.power_w, r.start_s, r.stop_s) for r in runs], window_s=f.power_window_s,
                                 lag_s=f.power_lag_s, update_period_s=f.update_period_s, noise_w=f.power_noise_w,
                                 window_stderr_s=f.power_window_stderr_s, groups=2)
            return e.energy_j, e.stderr_j, f"power readings pooled over {len(runs)} phased runs (covered {e.covered:.3f})"

        def by_counter_readings() -> Any:
            rs = []
            for r in runs:
                ct, cy = counter_readings(r.t_s, r.energy_mj)
                rs.append(Run(ct, cy, r.start_s, r.stop_s))
            e = power_run_energy(rs, window_s=f.counter_window_s, lag_s=f.counter_lag_s or 0.0,
                                 update_period_s=f.counter_update_s, noise_w=1e-3 / f.counter_update_s,
                                 window_stderr_s=f.counter_window_stderr_s or 0.0, groups=2)
            return e.energy_j, e.stderr_j, f"counter increments pooled over {len(runs)} phased runs"

        src = energy_source(f)
        first = by_counter() if src == "counter" else by_power()
        second = by_power() if src == "counter" else (by_counter_readings() if f.counter_window_s else None)
        if first is None:
            res.message = "the energy counter did not bracket the runs"
            return
        e1, s1, how1 = first
        res.figures.update(load="kernel bursts of 30.2 ms every 50.4 ms for 5 s", runs=len(runs),
                           offsets_s=offs, energy_source=src, corrected_j=e1, corrected_stderr_j=s1, corrected_by=how1,
                           naive_j=naive, naive_mean_j=float(np.mean(naive)),
                           naive_vs_corrected_pct=[100.0 * (x - e1) / e1 for x in naive])
        if second is None:
            res.status = "skip"
            res.message = f"corrected {e1:.1f} +- {s1:.1f} J ({how1}); no second source to compare with"
            return
        e2, s2, how2 = second
        diff = e2 - e1
        tol = 3.0 * math.hypot(s1, s2) + 0.002 * abs(e1)
        res.figures.update(second_j=e2, second_stderr_j=s2, second_by=how2, difference_pct=100.0 * diff / e1,
                           tolerance_j=tol)
        worst = max(abs(x) for x in res.figures["naive_vs_corrected_pct"])
        ok = abs(diff) <= tol
        res.status = "pass" if ok else "fail"
        res.message = (f"corrected {e1:.1f} +- {s1:.2f} J ({how1}) vs {e2:.1f} +- {s2:.2f} J ({how2}): "
                       f"{100 * diff / e1:+.3f} %; naive polling off by up to {worst:.1f} %")

    def check_clock_lock(self, res: CheckResult) -> None:
        from calib.core.errors import DeviceNoPermissionError
        from microbench.devices.registry import open_device

        dev = self.device
        cores = sorted(dev.info.supported_clocks.get("core_mhz") or [])
        default = dev.info.default_core_mhz
        others = [c for c in cores if c != default]
        if not others:
            res.status, res.message = "skip", "one supported core clock: nothing to lock"
            return
        target = others[len(others) // 2]

        def under_load(d: Any) -> float:
            """Median SM clock read while a load runs (a second thread reads it every 50 ms)."""
            import statistics
            import threading

            seen: list[float] = []
            stop = threading.Event()

            def read() -> None:
                while not stop.is_set():
                    seen.append(float(d.clocks()[0]))
                    stop.wait(0.05)

            th = threading.Thread(target=read, daemon=True)
            th.start()
            try:
                d.run(self._load(), 0.5)
            finally:
                stop.set()
                th.join(timeout=2.0)
            return statistics.median(seen) if seen else float(d.clocks()[0])

        before = under_load(dev)
        applied = None
        interrupted = False
        old = signal.signal(signal.SIGINT, signal.default_int_handler)  # as from a terminal
        try:
            try:
                dev.set_clocks(target, None)
                applied = under_load(dev)
                signal.raise_signal(signal.SIGINT)           # Ctrl-C
                time.sleep(1.0)                             # not reached: the interrupt unwinds
            finally:
                dev.close()                                 # what `calib run` does on the way out
        except KeyboardInterrupt:
            interrupted = True
        except DeviceNoPermissionError as e:
            res.status, res.message = "skip", f"clock locking needs root here: {e}"
            self.device = open_device(self.spec, seed=self.seed)
            return
        finally:
            signal.signal(signal.SIGINT, old)
        if dev.virtual:
            after = under_load(dev)        # the same device, closed: its lock must be gone
        else:
            self.device = dev = open_device(self.spec, seed=self.seed)
            after = under_load(dev)
        res.figures.update(default_core_mhz=default, locked_core_mhz=target, before_mhz=before, read_back_mhz=applied,
                           interrupted=interrupted, after_mhz=after)
        problems = []
        if applied is None or abs(applied - target) > 1.0:
            problems.append(f"locked {target:g} MHz, read back {applied} MHz")
        if not interrupted:
            problems.append("Ctrl-C did not interrupt")
        if abs(after - target) <= 1.0 and abs(default - target) > 1.0:
            problems.append(f"still at the locked {after:g} MHz after Ctrl-C")
        elif dev.virtual and abs(after - default) > 1.0:
            problems.append(f"{after:g} MHz after Ctrl-C, default {default:g}")
        res.verdict(problems, lambda: f"locked {target:g} MHz, read back {applied:g}; after Ctrl-C {after:g} MHz "
                                      f"(default {default:g})")

    def check_campaign(self, res: CheckResult) -> None:
        from calib.core.params import load
        from calib.core.session import read_manifest

        name = "selftest"
        if not self.device.virtual:   # the campaign opens the GPU itself
            self.device.close()
        argv = ["-q", "run", "--device", self.spec, "--campaign", "quick", "--logs-dir", str(self.out / "logs"),
                "--fitted-dir", str(self.out / "fitted"), "--name", name, "--seed", str(self.seed)]
        t0 = time.monotonic()
        code, text = self._cli(argv)
        res.figures.update(command="calib " + " ".join(argv), exit_status=code, seconds=round(time.monotonic() - t0, 1))
        if not self.device.virtual:
            from microbench.devices.registry import open_device

            self.device = open_device(self.spec, seed=self.seed)
        params = self.out / "fitted" / f"{name}.json"
        if code != 0 or not params.exists():
            res.message = f"calib run exited with status {code}" + ("" if params.exists() else "; no parameter file")
            return
        pf = load(params)
        stats = pf["power"].stats
        res.figures.update(parameter_file=str(params), sections=list(pf), power_rows=stats.get("n_samples"),
                           power_mape_pct=stats.get("mape_pct"), power_r2=stats.get("r2"),
                           heldout_mape_pct=stats.get("heldout_mape_pct"))
        res.figures["manifest_power_sampling"] = read_manifest(self.out / "logs" / name).get("power_sampling")
        mape = stats.get("mape_pct")
        ok = mape is not None and mape < 10.0
        res.status = "pass" if ok else "fail"
        res.message = (f"{stats.get('n_samples')} samples fitted, power MAPE {mape:.2f} %, R^2 {stats.get('r2'):.4f}"
                       + (f", held-out MAPE {stats['heldout_mape_pct']:.2f} %" if stats.get("heldout_mape_pct") else "")
                       + ("" if ok else " (MAPE over 10 %)"))

    def check_report(self, res: CheckResult) -> None:
        params = self.out / "fitted" / "selftest.json"
        if not params.exists():
            res.status, res.message = "skip", "no parameter file (the campaign check did not run or failed)"
            return
        code, text = self._cli(["-q", "report", str(params), "-o", str(self.out / "report")])
        index = self.out / "report" / "index.html"
        figs = sorted(p.name for p in (self.out / "report" / "fig").glob("*.png")) if index.exists() else []
        res.figures.update(exit_status=code, index=str(index), figures=figs)
        ok = code == 0 and index.exists() and len(figs) >= 1
        res.status = "pass" if ok else "fail"
        res.message = f"{index} with {len(figs)} figures" if ok else f"calib report exited with status {code}"



# ------------------------------------------------------------------------------------------------
# The page
# ------------------------------------------------------------------------------------------------

def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, (list, tuple)) and len(v) <= 12 and all(isinstance(x, (int, float)) for x in v):
        return ", ".join(_fmt(x) for x in v)
    return str(v)


def html_page(doc: dict[str, Any]) -> str:
    """The selftest as one self-contained HTML page (no scripts): a row per check, its figures below."""
    e = html.escape
    colour = {"pass": "#1a7f37", "fail": "#cf222e", "skip": "#9a6700"}
    rows = []
    for c in doc["checks"]:
        figs = []
        for k, v in c["figures"].items():
            if k == "kernels":
                head = "<tr><th>kernel</th><th>rate</th><th>unit</th><th>peak</th><th>% of peak</th><th></th></tr>"
                body = "".join(f"<tr><td>{e(str(r['kernel']))}</td><td>{e(_fmt(r.get('rate')))}</td>"
                               f"<td>{e(str(r.get('unit')))}</td><td>{e(_fmt(r.get('peak')))}</td>"
                               f"<td>{e(_fmt(r.get('percent_of_peak')))}</td><td>{e(str(r.get('status', '')))}</td></tr>"
                               for r in v)
                figs.append(f"<table class='k'>{head}{body}</table>")
            elif isinstance(v, (dict, list)) and not (isinstance(v, list) and len(v) <= 12):
                figs.append(f"<details><summary>{e(k)}</summary><pre>{e(json.dumps(v, indent=1, default=str))}</pre>"
                            "</details>")
            else:
                figs.append(f"<div><b>{e(k)}</b>: {e(_fmt(v))}</div>")
        rows.append(f"<tr><td style='color:{colour.get(c['status'], '#000')}'><b>{e(c['status'].upper())}</b></td>"
                    f"<td><b>{e(c['key'])}</b><br>{e(c['title'])}</td><td>{e(c['message'])}<div class='f'>"
                    f"{''.join(figs)}</div></td><td>{c['seconds']:.1f} s</td></tr>")
    listing = "".join(f"<li><b>{e(x['key'])}</b> ({e(x['title'])}): {e(x['what'])}</li>"
                      for x in doc["checked_on_a_real_gpu"])
    verdict = "every check passed or was skipped" if doc["passed"] else "at least one check FAILED"
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>calib selftest {e(doc['device'])}</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:1200px}} td,th{{border-bottom:1px solid #ddd;padding:4px;
vertical-align:top;text-align:left}} table{{border-collapse:collapse}} .f{{font-size:90%;color:#333;margin-top:4px}}
table.k td{{border:none;padding:1px 6px}} pre{{white-space:pre-wrap}}</style></head><body>
<h1>calib selftest: {e(doc['device'])}</h1>
<p>{e(str(doc.get('device_name')))} &middot; toolkit {e(doc['toolkit_version'])} &middot; started {e(doc['started_utc'])}
{' &middot; virtual GPU, seed ' + e(str(doc['seed'])) if doc['virtual'] else ''} &middot; <b>{e(verdict)}</b></p>
<table><tr><th>status</th><th>check</th><th>result and figures</th><th>time</th></tr>{''.join(rows)}</table>
<h2>What is checked on a real GPU</h2><ol>{listing}</ol>
</body></html>
"""
