"""The calibration campaign: run the benchmark plan on a device while logging into a session directory.

Order: idle baseline; fan sweep at idle (where the device lets us set the fan); the launch-only kernel;
each unit's benchmark at several intensities; the active-SM sweep; held-out application-like mixes;
thermal steps (heat to steady state, then cool); host-device copies (:mod:`microbench.transfer_plan`) on
devices that can copy. Every benchmark is one trial of the thermally stable
protocol (:func:`microbench.protocol.run_trial`: warm-up, measurement window, then a cooldown back into
the idle temperature band) and is repeated; every wait for a temperature is
:func:`microbench.protocol.wait_for_temperature`. Sizes and timings come from the campaign's
:class:`~microbench.spec.CampaignSpec`.

The campaign is a list of numbered steps. A step is complete when its ``workload_done`` marker is on
disk; a resumed campaign skips complete steps. For virtual devices the device state after each step is
saved (``campaign_state.json``, written atomically) so that a resumed run continues exactly as an
uninterrupted one would; real devices are simply cooled down again. Each step also has an expected
duration (s of device time; :attr:`Step.expected_s`), so progress and its ETA are weighted by time,
not by step count. Steps are logged at INFO level (``calib -v``).
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from calib import __version__
from calib.core.atomic import atomic_write_json
from calib.core.errors import BadInputError
from calib.core.session import MANIFEST_NAME, SessionWriter, read_session
from microbench.benchmarks import design_benchmark, plan, thermal_benchmarks
from microbench.devices.base import Device
from microbench.protocol import ThermalProtocol, run_trial, wait_for_temperature
from microbench.spec import Benchmark, CampaignSpec

log = logging.getLogger(__name__)

STATE_NAME = "campaign_state.json"
#: manifest field of the design rounds (``calib run --design adaptive``): a list of round records
DESIGN_FIELD = "design"
#: polling period of real sensors during a campaign, s (NVML updates about every 100 ms)
LOG_PERIOD_S = 0.1
#: virtual sensors are drained into the session every this many seconds of a temperature wait
DRAIN_EVERY_S = 20.0


@dataclass(frozen=True)
class Step:
    """One unit of campaign work."""

    index: int
    kind: str                 # idle | fan | bench | thermal | transfer
    name: str
    repeat: int = 0
    fan: float | None = None
    expected_s: float = 0.0   # expected duration, s of device time (for progress and its ETA)

    @property
    def id(self) -> str:
        return f"{self.index}:{self.kind}:{self.name}:{self.repeat}"


#: cooldown into the idle band takes about this many times the load before it (the die heats within
#: seconds but its last degrees decay with the slower heat-sink pole: 27-44 s after 8 s of load on the
#: virtual presets' standard campaigns)
COOLDOWN_PER_LOAD = 4.0


def expected_cooldown_s(spec: CampaignSpec, loaded_s: float) -> float:
    """Expected time (s) back into the idle band after ``loaded_s`` seconds under load (a progress
    estimate, :data:`COOLDOWN_PER_LOAD`), at most the spec's cap."""
    return min(spec.cooldown_max_s, COOLDOWN_PER_LOAD * loaded_s)


def build_steps(spec: CampaignSpec, benches: list[Benchmark], thermal: list[Benchmark],
                fan_control: bool, transfers: list | tuple = ()) -> list[Step]:
    """Ordered campaign steps: idle baseline, fan sweep (when the device controls its fan), every benchmark with its repeats, then the thermal heat/cool steps.

    Each step carries its expected duration (s): idle windows; fan settle + measure; warm-up + window +
    cooldown; thermal settle + heat + cool; idle reference + copy window.
    """
    bench_s = spec.warmup_s + spec.window_s
    steps: list[Step] = [Step(0, "idle", "idle_baseline", expected_s=spec.idle_s)]
    if fan_control:
        for duty in spec.fan_levels:
            # idle under a slower fan warms the die by a degree or two: no cooldown to speak of
            steps.append(Step(len(steps), "fan", f"fan_{int(round(100 * duty))}", fan=duty,
                              expected_s=2 * spec.fan_step_s))
    for r in range(spec.repeats):
        for b in benches:
            if r < (spec.repeats if b.repeats is None else b.repeats):
                steps.append(Step(len(steps), "bench", b.name, r,
                                  expected_s=bench_s + expected_cooldown_s(spec, bench_s)))
    for b in thermal:
        steps.append(Step(len(steps), "thermal", b.name,
                          expected_s=spec.settle_stable_s + spec.heat_s + spec.cool_s))
    from microbench.transfer_plan import REPEATS, WINDOW_S

    copy_s = 2 * WINDOW_S.get(spec.name, WINDOW_S["standard"])
    for r in range(REPEATS.get(spec.name, 1) if transfers else 0):
        for t in transfers:  # after the thermal steps: nothing the power and thermal fits use moves
            steps.append(Step(len(steps), "transfer", t.name, r, expected_s=copy_s))
    steps.append(Step(len(steps), "idle", "idle_final", expected_s=spec.idle_s))
    return steps


def default_session_name(device: Device, campaign: str) -> str:
    """``<preset or device name>-<campaign>-<UTC time>``: one path component."""
    ident = device.info.extra.get("preset") or device.info.name.replace(" ", "-").lower()
    return f"{ident}-{campaign}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"


def find_resumable(logs_dir: Path, device: Device, campaign: str, seed: int,
                   fitted_dir: Path | None = None) -> Path | None:
    """The newest session in ``logs_dir`` of the same device, campaign and seed that is incomplete, or
    complete but without its parameter file in ``fitted_dir`` (interrupted during the fit)."""
    if not logs_dir.is_dir():
        return None
    found = []
    for d in logs_dir.iterdir():
        if not (d / MANIFEST_NAME).exists():
            continue
        try:
            man = json.loads((d / MANIFEST_NAME).read_text(encoding="utf-8"))
            camp = man.get("campaign") or {}
            if (man.get("device", {}).get("uuid") == device.info.uuid and camp.get("name") == campaign
                    and camp.get("seed") == seed):
                unfitted = fitted_dir is not None and not (Path(fitted_dir) / f"{d.name}.json").exists()
                if not read_session(d).is_complete() or unfitted:
                    found.append(d)
        except (OSError, ValueError, BadInputError):
            continue  # unreadable sessions are not ours to resume
    return max(found, key=lambda d: d.stat().st_mtime) if found else None


def check_session_matches(session_dir: Path, manifest: dict, device: Device, campaign: str, seed: int,
                          complete: bool) -> None:
    """Refuse (BadInputError) a session whose manifest names another device, campaign or seed than the
    ones asked for: resuming or refitting it would mix or mislabel data (e.g. a recovery report of one
    virtual GPU against the truths of another)."""
    camp = manifest.get("campaign") if isinstance(manifest.get("campaign"), dict) else {}
    dev = manifest.get("device") or {}
    have = (dev.get("uuid"), camp.get("name"), camp.get("seed"))
    want = (device.info.uuid, campaign, seed)
    if have == want:
        return
    what = "is complete" if complete else "is unfinished"
    hint = ("choose another --name, or drop --name and pass --new to start a new session" if complete else
            "resume it with the same --device, --campaign and --seed, or choose another --name")
    raise BadInputError(
        f"{session_dir}: session {what} and belongs to another device, campaign or seed "
        f"(device {dev.get('name')!r} [{have[0]}], campaign {have[1]!r}, seed {have[2]!r}; asked for "
        f"device {device.info.name!r} [{want[0]}], campaign {want[1]!r}, seed {want[2]!r}); not using it: {hint}")


class Campaign:
    """Runs a campaign on ``device`` into ``session_dir`` (created, or resumed when incomplete)."""

    def __init__(self, device: Device, campaign: str = "standard", seed: int = 0,
                 on_step: Callable[["Step", float], None] | None = None):
        self.device = device
        self.campaign = campaign
        self.seed = seed
        self.spec, self.benches = plan(device.info, campaign)
        self.thermal = thermal_benchmarks(device.info, campaign)
        self.fan_control = hasattr(device, "set_fan") and device.virtual
        from microbench.transfer_plan import transfer_benchmarks

        self.transfers = transfer_benchmarks(campaign) if getattr(device, "can_copy", False) else []
        self.steps = build_steps(self.spec, self.benches, self.thermal, self.fan_control, self.transfers)
        self._transfer_by_name = {t.name: t for t in self.transfers}
        #: called before each step that runs with the step and the expected seconds of the steps before it
        self.on_step = on_step
        self._by_name = {b.name: b for b in self.benches + self.thermal}

    @property
    def expected_s(self) -> float:
        """Expected duration of the whole campaign, s of device time."""
        return float(sum(s.expected_s for s in self.steps))

    # -- manifest ------------------------------------------------------------------------------
    def manifest(self) -> dict[str, Any]:
        info = self.device.info
        return {
            "toolkit_version": __version__,
            "device": info.to_dict(),
            "virtual": bool(self.device.virtual),
            "sensors": [s.describe() for s in self.device.sensors()],
            "campaign": {"name": self.campaign, "seed": self.seed, "spec": asdict(self.spec),
                         "steps": len(self.steps)},
            "plan": [b.describe(info) for b in self.benches + self.thermal],
            **({"power_sampling": self.power_sampling} if getattr(self, "power_sampling", None) else {}),
            **({"transfer_plan": [t.describe() for t in self.transfers]} if self.transfers else {}),
        }

    # -- design rounds --------------------------------------------------------------------------
    def design_steps(self, rounds: list[dict]) -> list[Step]:
        """The steps of the design rounds recorded in a manifest (``rounds``: its ``design`` list), in
        order, numbered after the campaign's own steps: each round's kernels with the campaign's repeats."""
        bench_s = self.spec.warmup_s + self.spec.window_s
        out: list[Step] = []
        max_w = int(self.device.info.extra.get("max_warps_per_sm", 32))
        for rec in rounds:
            for r in range(self.spec.repeats):
                for entry in rec.get("kernels", []):
                    b = design_benchmark(entry, max_w)
                    self._by_name.setdefault(b.name, b)
                    out.append(Step(len(self.steps) + len(out), "bench", b.name, r,
                                    expected_s=bench_s + expected_cooldown_s(self.spec, bench_s)))
        return out

    def design_round_s(self, kernels: list[dict]) -> float:
        """Expected device time (s) of a design round of ``kernels`` (manifest entries)."""
        bench_s = self.spec.warmup_s + self.spec.window_s
        return len(kernels) * self.spec.repeats * (bench_s + expected_cooldown_s(self.spec, bench_s))

    def run_design_round(self, session_dir: Path, record: dict) -> dict:
        """Run (or finish) one design round on a complete session: ``record`` is ``{"round": k,
        "kernels": [manifest entries], ...}`` (the design's choice and why). A new round is added to the
        manifest (its kernels to the plan, the record to ``design``) before anything runs, so a killed
        round is resumed from the manifest by running it again with the same record. Returns the record
        as stored (``complete``: true once every step ran)."""
        session_dir = Path(session_dir)
        sess = read_session(session_dir)
        man = sess.manifest
        if not sess.is_complete():
            raise BadInputError(f"{session_dir}: the campaign is not complete; design rounds follow a complete campaign")
        check_session_matches(session_dir, man, self.device, self.campaign, self.seed, complete=True)
        rounds = [dict(r) for r in man.get(DESIGN_FIELD) or []]
        known = {int(r["round"]): i for i, r in enumerate(rounds)}
        k = int(record["round"])
        new = k not in known
        if new:
            rounds.append(dict(record, complete=False))
        rec = rounds[known.get(k, len(rounds) - 1)]
        steps = self.design_steps(rounds)
        mine = {b["name"] for b in rec.get("kernels", [])}
        markers = sess.markers()
        done = {m["info"].get("step") for _, m in markers.iterrows() if m["event"] == "workload_done"}
        last_t = float(markers["t_mono_s"].max()) if len(markers) else 0.0
        if self.device.virtual and self.device.clock()[0] < last_t:  # a new process: continue from the state
            state = self._load_state(session_dir)
            if state and state.get("device"):
                self.device.restore(state["device"], last_t + 1.0)
            self.idle_temp_c = (state or {}).get("idle_temp_c")
        elif not hasattr(self, "idle_temp_c"):
            self.idle_temp_c = (self._load_state(session_dir) or {}).get("idle_temp_c")
        writer = SessionWriter.resume(session_dir, clock=self.device.clock, note=f"design round {k}")
        self.writer = writer
        self._logger = None
        if not self.device.virtual:
            from microbench.logger import SensorLogger

            self._logger = SensorLogger(writer, self.device.sensors(), period_s=LOG_PERIOD_S).start()
        try:
            if new:
                max_w = int(self.device.info.extra.get("max_warps_per_sm", 32))
                info = self.device.info
                plan_entries = list(man.get("plan") or [])
                have = {p.get("name") for p in plan_entries}
                plan_entries += [design_benchmark(e, max_w).describe(info) for e in rec.get("kernels", [])
                                 if e["name"] not in have]
                writer.update_manifest(plan=plan_entries, **{DESIGN_FIELD: rounds})
            writer.mark("segment_start", t=self.device.clock(), resumed=True)
            for step in steps:
                if step.name not in mine or step.id in done:
                    continue
                if self.on_step:
                    self.on_step(step, 0.0)
                log.info("design round %d: %s repeat %d (about %.0f s)", k, step.name, step.repeat, step.expected_s)
                self._run_step(step)
                self._drain()
                self._save_state(session_dir, step.id)
                writer.mark("workload_done", step.name, step.repeat, step=step.id)
            rec["complete"] = True
            writer.update_manifest(**{DESIGN_FIELD: rounds})
        finally:
            self._stop(writer)
        return rec

    def _stop(self, writer: Any) -> None:
        """Stop the logger (or drain the samples it would have taken) and close the session writer."""
        if self._logger is not None:
            self._logger.stop()
        else:
            self._drain()
        writer.close()

    def update_design_record(self, session_dir: Path, k: int, **fields: Any) -> None:
        """Add ``fields`` to design round ``k``'s record in the manifest (e.g. the standard errors the
        refit after it gave)."""
        sess = read_session(session_dir)
        rounds = [dict(r) for r in sess.manifest.get(DESIGN_FIELD) or []]
        for r in rounds:
            if int(r["round"]) == int(k):
                r.update(fields)
        man = dict(sess.manifest, **{DESIGN_FIELD: rounds})
        atomic_write_json(Path(session_dir) / MANIFEST_NAME, man)

    # -- running ---------------------------------------------------------------------------------
    def run(self, session_dir: Path) -> Path:
        """Run (or resume) the campaign into ``session_dir``; returns it."""
        session_dir = Path(session_dir)
        resume = (session_dir / MANIFEST_NAME).exists()
        if resume:
            sess = read_session(session_dir)
            if sess.is_complete():
                raise BadInputError(f"{session_dir}: this session is complete; choose another name to run again")
            man = sess.manifest
            check_session_matches(session_dir, man, self.device, self.campaign, self.seed, complete=False)
            markers = sess.markers()
            done = {m["info"].get("step") for _, m in markers.iterrows() if m["event"] == "workload_done"}
            last_t = float(markers["t_mono_s"].max()) if len(markers) else 0.0
            last_wall = float(markers["t_wall_s"].max()) if len(markers) else 0.0
            last_seg = int(markers["segment"].max()) if len(markers) else 0
            state = self._load_state(session_dir)  # checked before anything is written to the session
            if state and self.device.virtual and state.get("device"):
                try:
                    self.device.restore(state["device"], last_t + 1.0)
                except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
                    raise BadInputError(self._state_error(session_dir, f"field 'device' cannot be restored "
                                                                       f"({e.__class__.__name__}: {e})")) from e
            writer = SessionWriter.resume(session_dir, clock=self.device.clock, note="resume")
            pending = (state or {}).get("after_step")
            if pending and pending not in done:  # killed after the state was saved, before its marker
                step = next((s for s in self.steps if s.id == pending), None)
                if step is not None:
                    writer.mark("workload_done", step.name, step.repeat, t=(last_t, last_wall), step=step.id,
                                completes_segment=last_seg)
                    done.add(pending)
            self.idle_temp_c = (state or {}).get("idle_temp_c")
        else:
            from microbench.power_sampling import for_manifest

            self.power_sampling = for_manifest(self.device, self.seed)   # how NVML samples this GPU
            writer = SessionWriter.create(session_dir, self.manifest(), clock=self.device.clock)
            done = set()
            self.idle_temp_c = None
        self.writer = writer
        self._logger = None
        if not self.device.virtual:  # real sensors are polled by a background thread meanwhile
            from microbench.logger import SensorLogger

            self._logger = SensorLogger(writer, self.device.sensors(), period_s=LOG_PERIOD_S).start()
        try:
            writer.mark("segment_start", t=self.device.clock(), resumed=resume)
            log.info("campaign %r on %s: %d steps (%d done), about %.0f s of device time", self.campaign,
                     self.device.info.name, len(self.steps), len(done & {s.id for s in self.steps}), self.expected_s)
            before_s = 0.0
            for k, step in enumerate(self.steps):
                if step.id in done:
                    before_s += step.expected_s
                    continue
                if self.on_step:
                    self.on_step(step, before_s)
                log.info("step %d/%d: %s %s%s (about %.0f s)", k + 1, len(self.steps), step.kind, step.name,
                         f" repeat {step.repeat}" if step.kind == "bench" else "", step.expected_s)
                self._run_step(step)
                before_s += step.expected_s
                self._drain()
                # state first, then the marker: a kill between the two leaves a state that is ahead of
                # the markers, which the resume detects and completes (below)
                self._save_state(session_dir, step.id)
                writer.mark("workload_done", step.name, step.repeat, step=step.id)
            writer.mark("campaign_done")
            log.info("campaign %r complete: %s", self.campaign, session_dir)
        finally:
            self._stop(writer)
        return session_dir

    @staticmethod
    def _state_error(session_dir: Path, what: str) -> str:
        return (f"{session_dir / STATE_NAME}: {what}; not resuming. Restore the file, or start over in a new "
                f"session (--new without --name, or another --name); the session directory is left as it is")

    def _load_state(self, session_dir: Path) -> dict | None:
        """The saved campaign state, checked field by field against what :meth:`_save_state` writes
        (a torn file cannot happen, the write is atomic: anything else was edited and is refused)."""
        p = session_dir / STATE_NAME
        if not p.exists():
            return None
        try:
            state = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as e:
            raise BadInputError(self._state_error(session_dir, f"cannot be read as JSON ({e.__class__.__name__})")) from e
        if not isinstance(state, dict):
            raise BadInputError(self._state_error(session_dir, f"expected a JSON object, got {type(state).__name__}"))

        def number(v: Any) -> bool:
            return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

        after = state.get("after_step")
        if after is not None and not isinstance(after, str):
            raise BadInputError(self._state_error(session_dir, f"field 'after_step': {after!r} is not a step id"))
        idle = state.get("idle_temp_c")
        if idle is not None and not number(idle):
            raise BadInputError(self._state_error(session_dir, f"field 'idle_temp_c': {idle!r} is not a number"))
        dev = state.get("device")
        if dev is not None and self.device.virtual:
            if not isinstance(dev, dict):
                raise BadInputError(self._state_error(session_dir, "field 'device' must be an object"))
            # the device's own snapshot gives the fields and their shapes (numbers, or lists of numbers)
            for key, ref in self.device.snapshot().items():
                if key not in dev:
                    raise BadInputError(self._state_error(session_dir, f"field 'device.{key}' missing"))
                v = dev[key]
                ok = (isinstance(v, list) and all(number(x) for x in v)) if isinstance(ref, list) else (
                    v is None or number(v))
                if not ok:
                    raise BadInputError(self._state_error(session_dir, f"field 'device.{key}': {v!r} is not "
                                                          + ("a list of numbers" if isinstance(ref, list) else "a number")))
        return state

    def _save_state(self, session_dir: Path, after_step: str) -> None:
        atomic_write_json(session_dir / STATE_NAME, {"after_step": after_step, "idle_temp_c": self.idle_temp_c,
                                                     "device": self.device.snapshot()})

    def _drain(self) -> None:
        if self._logger is not None:
            self._logger.check()  # a lost GPU or a dead analyzer stops the campaign here
            return
        for s in self.device.sensors():
            w = self.writer.stream(s.name, s.columns)
            if hasattr(s, "read_blocks"):  # virtual sensors hand over column blocks
                for t_mono, t_wall, values in s.read_blocks():
                    w.append_block(t_mono, t_wall, values)
                continue
            for r in s.read():
                w.append(r.t_mono_s, r.t_wall_s, r.values)

    def mark(self, event: str, workload: str = "", repeat: int | None = None, t: tuple[float, float] | None = None,
             **info: Any) -> None:
        """Write a marker at device time ``t`` (default: now), after draining the sensors: sensor rows up
        to now go to disk before the marker that closes them. (The protocol's trials mark through this.)"""
        self._drain()
        self.writer.mark(event, workload, repeat, t=self.device.clock() if t is None else t, **info)

    def _on_poll(self, poll_s: float) -> Callable[[float], None]:
        """Hook of the temperature waits: drain the sensors every :data:`DRAIN_EVERY_S` of waiting."""
        def hook(waited_s: float) -> None:
            if waited_s % DRAIN_EVERY_S < poll_s:
                self._drain()
        return hook

    def protocol(self) -> ThermalProtocol:
        """The benchmarks' protocol: the spec's warm-up and window, then a cooldown (no heating) into the
        band above the idle temperature (none before the idle temperature is known)."""
        spec = self.spec
        band = None if self.idle_temp_c is None else (None, self.idle_temp_c + spec.cooldown_band_c)
        return ThermalProtocol(warmup_s=spec.warmup_s, measure_s=spec.window_s, repeats=spec.repeats,
                               cooldown_band_c=band, cooldown_timeout_s=spec.cooldown_max_s, cooldown_after=True,
                               poll_s=spec.cooldown_poll_s)

    def _run_step(self, step: Step) -> None:
        dev, spec = self.device, self.spec
        if step.kind == "idle":
            self.mark("idle_start", step.name, kind="baseline" if step.name == "idle_baseline" else "final")
            dev.idle(spec.idle_s)
            self.mark("idle_stop", step.name)
            if step.name == "idle_baseline":
                self.idle_temp_c = dev.temperature_c()
        elif step.kind == "fan":
            dev.set_fan(step.fan)
            dev.idle(spec.fan_step_s)  # let the fan reach its new speed
            self.mark("idle_start", step.name, kind="fan_sweep", fan=step.fan)
            dev.idle(spec.fan_step_s)
            self.mark("idle_stop", step.name)
            dev.set_fan(None)
            self._cooldown()
        elif step.kind == "bench":
            b = self._by_name[step.name]
            run_trial(dev, b.workload(dev.info), self.protocol(), writer=self, repeat=step.repeat,
                      clocks=b.clocks, on_poll=self._on_poll(spec.cooldown_poll_s))
        elif step.kind == "thermal":
            b = self._by_name[step.name]
            w = b.workload(dev.info)
            self._settle_to_idle()
            self.mark("thermal_heat_start", b.name)
            launches, t_sum = 0, 0.0
            chunk = spec.thermal_chunk_s
            for _ in range(int(spec.heat_s / chunk)):
                res = dev.run(w, chunk)
                launches += res.launches
                t_sum += res.kernel_time_s * res.launches
                self._drain()
            self.mark("thermal_cool_start", b.name, launches=launches, kernel_time_s=t_sum / max(1, launches))
            for _ in range(int(spec.cool_s / chunk)):
                dev.idle(chunk)
                self._drain()
            self.mark("thermal_stop", b.name)
        elif step.kind == "transfer":
            from microbench.transfer_plan import WINDOW_S

            t = self._transfer_by_name[step.name]
            window = WINDOW_S.get(self.campaign, WINDOW_S["standard"])
            if step.index and self.steps[step.index - 1].kind == "thermal":
                # the copies' energy is their power above an idle window beside them: after a long heat the
                # heatsink still cools for minutes, and a reading merely back in the idle band drifts
                # between the two windows
                self._settle_to_idle()
            else:
                self._cooldown()
            self.mark("copy_ref_start", t.name, step.repeat)
            dev.idle(window)
            self.mark("copy_ref_stop", t.name, step.repeat)
            self.mark("copy_start", t.name, step.repeat, direction=t.direction, bytes=t.nbytes,
                      host_memory=t.host_memory)
            res = dev.run_copy(t.direction, t.nbytes, t.pinned, window)
            self.mark("copy_stop", t.name, step.repeat, copies=res.copies, copy_time_s=res.copy_time_s)
        else:  # pragma: no cover - build_steps makes only the kinds above
            raise ValueError(step.kind)

    def _settle_to_idle(self) -> None:
        """Before a thermal step (a cold start, IPP): idle until the reading is at the idle temperature
        and has not moved for the spec's ``settle_stable_s`` (or ``settle_max_s`` passed)."""
        if self.idle_temp_c is None:
            return
        spec = self.spec
        w = wait_for_temperature(self.device, (None, self.idle_temp_c), timeout_s=spec.settle_max_s,
                                 poll_s=spec.settle_poll_s, stable_s=spec.settle_stable_s,
                                 on_poll=self._on_poll(spec.settle_poll_s))
        log.info("settled to %s °C in %.0f s%s", w.end_c, w.waited_s, "" if w.reached else " (gave up)")

    def _cooldown(self) -> None:
        """Idle until the temperature is back in the idle band (or the spec's ``cooldown_max_s`` passed)."""
        if self.idle_temp_c is None:
            return
        spec = self.spec
        wait_for_temperature(self.device, (None, self.idle_temp_c + spec.cooldown_band_c),
                             timeout_s=spec.cooldown_max_s, poll_s=spec.cooldown_poll_s,
                             on_poll=self._on_poll(spec.cooldown_poll_s))
