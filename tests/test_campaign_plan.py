"""The campaign's plan and protocol: keyword-built specs, benchmark kinds in the manifest, one temperature
wait, the campaign's steps as protocol trials, progress weighted by expected time, and an import graph
of the measurement package without circles."""

from __future__ import annotations

import ast
import dataclasses
import logging
import math
from pathlib import Path

import pytest

from calib.core.session import read_session
from microbench.benchmarks import CAMPAIGNS, plan
from microbench.campaign import Campaign
from microbench.devices import open_device
from microbench.devices.base import RunResult, Workload
from microbench.protocol import wait_for_temperature
from microbench.spec import TIMING_KINDS, Benchmark, CampaignSpec

ROOT = Path(__file__).resolve().parents[1]


# -- import graph -------------------------------------------------------------------------------------


def _module_imports() -> dict[str, set[str]]:
    """Every import (module level or inside functions) of every module of ``microbench``."""
    mods = {}
    for f in sorted((ROOT / "microbench").rglob("*.py")):
        parts = list(f.relative_to(ROOT).with_suffix("").parts)
        mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    out = {}
    for name, f in mods.items():
        deps = set()
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import):
                deps |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    sub = f"{node.module}.{a.name}"
                    deps.add(sub if sub in mods else node.module)
        out[name] = deps - {name}
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_import_graph_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_measurement_package_has_no_import_circles_and_stands_on_the_floor():
    graph = _module_imports()
    assert "microbench.timing_plan" in graph["microbench.benchmarks"]  # the plan imports the timing plan ...
    assert "microbench.benchmarks" not in graph["microbench.timing_plan"]  # ... and not the other way round
    assert _cycles(graph) == []
    # from calib, only the floor (and the package root's version string)
    above = {(m, d) for m, deps in graph.items() for d in deps
             if d.split(".")[0] == "calib" and d != "calib" and not d.startswith("calib.core")}
    assert not above, above
    # drivers, kernels, instruments and test doubles never reach up into the plan, the campaign or the truth
    plan_side = {"microbench.spec", "microbench.benchmarks", "microbench.timing_plan", "microbench.protocol",
                 "microbench.campaign", "microbench.truth", "microbench.timing_truth"}
    low = [m for m in graph if m.split(".")[1:2] and m.split(".")[1] in ("devices", "kernels", "instruments", "testing")]
    assert len(low) > 10
    up = {(m, d) for m in low for d in graph[m] if d in plan_side}
    assert not up, up


# -- keyword-built specs and kinds ----------------------------------------------------------------------


def test_campaign_spec_and_benchmark_are_keyword_only():
    spec = CAMPAIGNS["quick"]
    with pytest.raises(TypeError):
        CampaignSpec("x", (1,), (0,), 2, 1, 1.0, 2.0, 2.0, 10.0, 5.0, 1, 10.0, 10.0, (1.0,), 1.0, 0)  # type: ignore[misc]
    with pytest.raises(TypeError):
        Benchmark("n", "fp32_fma", "unit", "fp", "unit")  # type: ignore[misc]
    # the timings the campaign used to hard-code are spec fields
    std = CAMPAIGNS["standard"]
    assert (std.thermal_chunk_s, std.settle_stable_s, std.settle_max_s, std.settle_poll_s, std.cooldown_poll_s) == \
        (10.0, 20.0, 600.0, 2.0, 2.0)
    with pytest.raises(ValueError, match=r"campaign 'quick': settle_poll_s = 0 is not a valid time"):
        dataclasses.replace(spec, settle_poll_s=0)


def test_benchmark_kind_is_checked():
    with pytest.raises(ValueError, match=r"b: unknown kind 'latency' \(kinds: launch_only, unit, "):
        Benchmark(name="b", kernel="fp32_fma", role="unit", stresses="fp", kind="latency")
    with pytest.raises(ValueError, match=r"b: kind 'pchase' takes the parameters \['level', 'passes'\], got \['level'\]"):
        Benchmark(name="b", kernel="pchase_l2", role="timing", stresses="l2", kind="pchase", kind_params={"level": "l2"})
    with pytest.raises(ValueError, match=r"b: kind 'unit' does not go with role 'timing'"):
        Benchmark(name="b", kernel="fp32_fma", role="timing", stresses="fp", kind="unit")


@pytest.mark.parametrize("preset", ["gtx280", "titanx"])
def test_every_plan_entry_declares_its_kind(preset):
    dev = open_device(f"sim:{preset}")
    _, benches = plan(dev.info, "standard")
    entries = [b.describe(dev.info) for b in benches]
    assert all("kind" in e for e in entries)
    by_kind: dict[str, list[dict]] = {}
    for e in entries:
        by_kind.setdefault(e["kind"], []).append(e)
    assert {e["kind"] for e in entries if e["role"] == "timing"} == set(TIMING_KINDS)
    dram = [e for e in by_kind["pchase"] if e["level"] == "dram"]
    assert dram[0]["name"] == "lat_dram/p1" and dram[0]["passes"] == 1 and dram[0]["clocks"] is None
    assert len(dram) == (5 if preset == "titanx" else 1)  # the DVFS corners on the DVFS preset
    dep = {(e["access"], e["where"], e["reqs"]) for e in by_kind["departure"]}
    assert dep == {("coal", "sm1", 64), ("coal", "all", 64), ("uncoal", "sm1", 8)}
    assert [e["name"] for e in by_kind["launch_only"]][0] == "idle_kernel"
    # application-like mixes are held out; the multi-unit training mixes (TRAINING_MIXES) train
    assert {e["role"] for e in by_kind["app_mix"] if not e["name"].startswith("train_")} == {"heldout"}
    assert {e["role"] for e in by_kind["app_mix"] if e["name"].startswith("train_")} == {"unit"}


def _mix_vector(mix) -> "np.ndarray":
    import numpy as np

    from microbench.kernels.catalog import MIX_CLASSES

    return np.array([float(mix.get(c, 0.0)) for c in MIX_CLASSES])


@pytest.mark.parametrize("preset", ["gtx280", "titanx", "mi250x"])
def test_standard_campaign_trains_on_multi_unit_mixes_that_are_not_held_out(preset):
    """The standard and full campaigns run the training mixes (pairs of saturating pipes, every pipe at
    once) as training rows at several occupancies, only with classes the GPU has; the quick one does not.
    None is a held-out mix or near one: the cosine of their per-step count vectors stays below 0.9 (the
    nearest: train_fp_int against app_stencil, 0.78), so the held-out MAPE stays held out."""
    import numpy as np

    from microbench.benchmarks import HELDOUT_MIXES, _mix_params, training_mixes

    info = open_device(f"sim:{preset}").info
    mixes = training_mixes(info)
    expect = {"gtx280": {"train_fp_int", "train_int_const", "train_int_tex", "train_pipes"},
              "titanx": {"train_fp_int", "train_int_const", "train_int_tex", "train_fp_dp", "train_int_l1", "train_pipes"},
              "mi250x": set()}  # not on AMD's CUs (microbench.benchmarks.training_mixes)
    assert set(mixes) == expect[preset]
    pipes = {"gtx280": {"fp", "int", "sfu", "alu", "shared", "const", "tex"},
             "titanx": {"fp", "dp", "int", "sfu", "alu", "shared", "const", "tex", "l1"}}.get(preset)
    if pipes:
        assert set(mixes["train_pipes"]) == pipes
    for campaign, warps in (("standard", (2, 8, 32)), ("full", (2, 4, 8, 16, 32, 64)), ("quick", ())):
        _, benches = plan(info, campaign)
        train = [b for b in benches if b.name.startswith("train_")]
        max_w = int(info.extra["max_warps_per_sm"])
        # each mix once per occupancy: a level above the GPU's limit runs at the limit, not twice there
        assert sorted(b.name for b in train) == sorted({f"{n}/w{min(w, max_w)}" for n in mixes for w in warps})
        names = [b.name for b in benches]
        assert len(names) == len(set(names)), campaign
        for b in train:
            assert (b.kernel, b.role, b.stresses, b.kind) == ("mix", "unit", "mixed", "app_mix")
            assert {c: v for c, v in b.params.items() if c != "ilp"} == mixes[b.name.split("/")[0]]
    held = [(n, _mix_vector(_mix_params(m))) for n, m in HELDOUT_MIXES.items()]
    for name, mix in mixes.items():
        v = _mix_vector(mix)
        for hname, h in held:
            cos = float(v @ h / np.linalg.norm(v) / np.linalg.norm(h))
            assert cos < 0.9, (name, hname, cos)


def test_manifest_plan_carries_the_kinds(quick_run):
    man = read_session(quick_run / "logs" / "q").manifest
    kinds = {e["name"]: e for e in man["plan"]}
    assert kinds["lat_shared/p32"]["kind"] == "pchase" and kinds["lat_shared/p32"]["level"] == "shared"
    assert kinds["lat_shared/p32"]["passes"] == 32
    assert kinds["dep_uncoal_r8/sm1/w8"]["kind"] == "departure" and kinds["dep_uncoal_r8/sm1/w8"]["access"] == "uncoal"
    assert kinds["thermal/fp32_fma"]["kind"] == "thermal_step"
    spec = man["campaign"]["spec"]
    assert spec["thermal_chunk_s"] == 10.0 and spec["settle_max_s"] == 600.0


# -- one temperature wait -----------------------------------------------------------------------------


class _Toy:
    """First-order thermal toy: tau 20 s toward 80 °C under load, 35 °C idle; integer sensor readings."""

    def __init__(self, temp: float):
        self.t, self.temp, self.calls = 0.0, temp, []

    def _advance(self, dt: float, target: float) -> None:
        self.temp = target + (self.temp - target) * math.exp(-dt / 20.0)
        self.t += dt

    def clock(self):
        return self.t, 1.7e9 + self.t

    def run(self, workload, duration_s):
        self.calls.append(("run", duration_s))
        self._advance(duration_s, 80.0)
        return RunResult(1, 0.01)

    def idle(self, duration_s):
        self.calls.append(("idle", duration_s))
        self._advance(duration_s, 35.0)

    def temperature_c(self):
        return float(round(self.temp))


WL = Workload("toy", {"fp": 1.0}, None)  # type: ignore[arg-type]


def test_wait_idles_to_a_temperature_and_calls_the_hook_each_poll():
    dev = _Toy(70.0)
    seen = []
    w = wait_for_temperature(dev, (None, 45.0), timeout_s=300.0, poll_s=2.0, on_poll=seen.append)
    assert w.reached and w.action == "idle" and w.end_c <= 45.0 and w.start_c == 70.0
    n = len(dev.calls)
    assert dev.calls == [("idle", 2.0)] * n and seen == [2.0 * (k + 1) for k in range(n)]
    assert w.waited_s == pytest.approx(2.0 * n)
    assert 44.5 < 35.0 + 35.0 * math.exp(-(2.0 * (n - 1)) / 20.0)  # one poll earlier it was still too hot


def test_wait_for_a_stable_reading_keeps_idling_inside_the_band():
    dev = _Toy(37.4)  # inside the band, drifting toward 35: reads 37 until 9.4 s, then 36 until 31.4 s
    w = wait_for_temperature(dev, (None, 40.0), timeout_s=600.0, poll_s=2.0, stable_s=20.0)
    # the reading changed at 10 s; 20 s later (ten polls of the same value) it counts as settled
    assert w.reached and w.end_c == 36.0 and w.waited_s == 30.0 and dev.calls == [("idle", 2.0)] * 15
    assert wait_for_temperature(_Toy(37.4), (None, 40.0), timeout_s=600.0, poll_s=2.0).waited_s == 0.0


def test_wait_heats_until_above_and_times_out():
    dev = _Toy(30.0)
    w = wait_for_temperature(dev, (50.0, None), timeout_s=120.0, poll_s=1.0, heat_workload=WL)
    assert w.reached and w.action == "heat" and w.end_c >= 50.0 and {c[0] for c in dev.calls} == {"run"}
    dev = _Toy(70.0)
    w = wait_for_temperature(dev, (None, 40.0), timeout_s=10.0, poll_s=2.0)
    assert not w.reached and len(dev.calls) == 5 and w.waited_s == 10.0


def test_wait_without_a_temperature_returns_at_once():
    class Blind(_Toy):
        def temperature_c(self):
            return None

    dev = Blind(50.0)
    w = wait_for_temperature(dev, (None, 40.0), timeout_s=10.0, poll_s=2.0)
    assert (w.start_c, w.reached, w.waited_s, dev.calls) == (None, False, 0.0, [])


# -- the campaign runs on the protocol ------------------------------------------------------------------


def test_campaign_benchmarks_are_protocol_trials(quick_run):
    m = read_session(quick_run / "logs" / "q").markers()
    starts = m[m["event"] == "measure_start"]
    stops = m[m["event"] == "measure_stop"]
    assert len(starts) == len(stops) > 50
    for info in list(starts["info"]) + list(stops["info"]):
        assert info["core_mhz"] == 1296.0 and info["mem_mhz"] == 1107.0 and "clocks_mhz" not in info
    assert all("temp_before_c" in i and "launches" in i for i in stops["info"])
    # trial order: warm-up, window, then the cooldown that leaves the GPU in the idle band for the next
    ev = list(m["event"])
    k = ev.index("warmup_start")
    assert ev[k:k + 4] == ["warmup_start", "measure_start", "measure_stop", "cooldown_start"]


def test_campaign_steps_are_logged_at_info(tmp_path, caplog):
    dev = open_device("sim:gtx280", seed=0)
    camp = Campaign(dev, "quick")
    camp.steps = camp.steps[:3]  # idle baseline and two fan levels
    with caplog.at_level(logging.INFO, logger="microbench.campaign"):
        camp.run(tmp_path / "s")
    msgs = [r.getMessage() for r in caplog.records if r.name == "microbench.campaign"]
    assert msgs[0].startswith("campaign 'quick' on virtual GeForce GTX 280 (GT200): 3 steps (0 done), about ")
    assert msgs[1] == "step 1/3: idle idle_baseline (about 30 s)"
    assert msgs[2] == "step 2/3: fan fan_40 (about 8 s)"
    assert msgs[-1] == f"campaign 'quick' complete: {tmp_path / 's'}"


def test_progress_is_weighted_by_expected_time():
    dev = open_device("sim:gtx280", seed=0)
    camp = Campaign(dev, "standard")
    spec = camp.spec
    thermal = [s for s in camp.steps if s.kind == "thermal"]
    bench = [s for s in camp.steps if s.kind == "bench"]
    # settle 20 s, heat 4.5 x 200 s, cool 3 x 200 s (microbench.benchmarks.THERMAL_TAU_MAX_S)
    assert thermal[0].expected_s == spec.settle_stable_s + spec.heat_s + spec.cool_s == 1520.0
    assert bench[0].expected_s == 5 * (spec.warmup_s + spec.window_s) == 40.0  # warm-up, window, 4x in cooldown
    assert camp.expected_s == pytest.approx(sum(s.expected_s for s in camp.steps))
    # the thermal steps are 2 % of the steps but close to half the expected time (as computed: 7600 of 17154 s)
    assert len(thermal) / len(camp.steps) < 0.03
    assert 0.4 < sum(s.expected_s for s in thermal) / camp.expected_s < 0.5
    seen = []
    camp.steps = camp.steps[:4]
    camp.on_step = lambda step, done_s: seen.append((step.name, done_s))
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        camp.run(Path(d) / "s")
    acc = [0.0]
    for s in camp.steps[:-1]:
        acc.append(acc[-1] + s.expected_s)
    assert seen == [(s.name, a) for s, a in zip(camp.steps, acc)]


def test_progress_bar_has_an_eta_and_is_quiet_when_asked(capsys):
    from calib.progress import Progress

    p = Progress(100.0, "campaign", enabled=True, unit="s")
    p.set(25.0, "fp32_fma/w8")
    p.set(50.0, "dram/w8")
    assert p.done == 50.0
    p.close()
    err = capsys.readouterr().err
    last = err.rstrip("\n").split("\r")[-1]
    assert last.startswith("campaign 100%|") and last.endswith("00:00<00:00, dram/w8")  # elapsed<remaining (ETA)
    q = Progress(100.0, "campaign", enabled=False)
    q.set(50.0, "x")
    q.close()
    assert capsys.readouterr().err == "" and q.done == 100.0


def test_progress_is_off_when_stderr_is_not_a_tty():
    from calib.progress import Progress

    assert Progress(10.0, "x").enabled is False  # pytest's stderr is not a terminal
