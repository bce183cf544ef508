"""calib optimize: clock table and recommendation, active-SM choice, bad input (exit 2, one message)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from calib.core import params as P
from calib.fit.timing import fit_timing
from calib.segment import session_samples
from calib.core.session import read_session

KERNEL = {"name": "stencil_like", "per_warp": {"fp": 6000, "int": 3000, "alu": 2000, "shared": 4000, "global": 1000,
                                               "ctrl": 300},
          "launch": {"blocks": 480, "threads_per_block": 256}, "ilp": 2}


@pytest.fixture(scope="module")
def gtx280_params(quick_run, tmp_path_factory):
    """The quick run's parameter file with a timing section fitted from its timing microbenchmarks."""
    doc = P.load(quick_run / "fitted" / "q.json")
    if "timing" not in doc:
        sess = read_session(quick_run / "logs" / "q")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            doc["timing"] = fit_timing(session_samples(sess), sess.manifest["device"], sess.manifest.get("plan"))
    path = tmp_path_factory.mktemp("opt") / "p.json"
    doc.save(path)
    return path


def test_optimize_single_clock_device(gtx280_params, cli, tmp_path):
    (tmp_path / "k.json").write_text(json.dumps(KERNEL))
    code, out, err = cli("optimize", gtx280_params, tmp_path / "k.json", "-o", tmp_path / "t.csv",
                         "--sms-output", tmp_path / "s.csv")
    assert code == 0, err
    assert "kernel stencil_like: time from the timing model; power from the IPP model" in out
    assert "recommendation (least energy, slowdown <= 10%): 1296/1107 MHz" in out
    assert "active SMs: optimal" in out and "by eq. 34" in out
    assert "no DVFS power model in the parameter file" in err
    t = pd.read_csv(tmp_path / "t.csv")
    assert len(t) == 1 and bool(t["default"].iloc[0])
    assert t["energy_j"].iloc[0] == pytest.approx(t["power_w"].iloc[0] * t["time_s"].iloc[0])
    s = pd.read_csv(tmp_path / "s.csv")
    assert list(s["active_sms"]) == list(range(1, 31))


def _dvfs_params(tmp_path):
    from test_energy import _dvfs_doc

    doc = P.ParameterFile.new(_dvfs_doc().device, [])
    doc.sections.update(_dvfs_doc().sections)
    stats = {"n_samples": 10, "rmse_w": 1.0, "mape_pct": 1.0, "r2": 0.99}
    for name, sec in doc.items():
        sec.stats = dict(stats) if name != "timing" else {**stats, "rmse_w": None, "rmse_s": 0.0}
    path = tmp_path / "dvfs.json"
    doc.save(path)
    return path


def test_optimize_with_dvfs_model(cli, tmp_path):
    params = _dvfs_params(tmp_path)
    k = {"name": "mem_bound", "per_warp": {"fp": 100, "global": 400}, "launch": {"blocks": 48, "threads_per_block": 256},
         "ilp": 4}
    (tmp_path / "k.json").write_text(json.dumps(k))
    code, out, err = cli("optimize", params, tmp_path / "k.json", "-o", tmp_path / "t.csv")
    assert code == 0, err
    assert "power from the DVFS model" in out
    t = pd.read_csv(tmp_path / "t.csv")
    assert len(t) == 6
    ok = t[t["slowdown"] <= 0.10]
    best = ok.loc[ok["energy_j"].idxmin()]
    assert f"recommendation (least energy, slowdown <= 10%): {best['core_mhz']:g}/{best['mem_mhz']:g} MHz" in out
    code, out, err = cli("optimize", params, tmp_path / "k.json", "--objective", "edp", "--max-slowdown", "0")
    assert code == 0 and "recommendation (least edp, slowdown <= 0%)" in out


def test_bad_inputs(gtx280_params, cli, tmp_path):
    (tmp_path / "k.json").write_text(json.dumps(KERNEL))
    (tmp_path / "two.json").write_text(json.dumps([KERNEL, {**KERNEL, "name": "other"}]))
    code, _, err = cli("optimize", gtx280_params, tmp_path / "two.json")
    assert code == 2 and "2 kernels (stencil_like, other); choose one with --kernel-name" in err
    code, _, err = cli("optimize", gtx280_params, tmp_path / "two.json", "--kernel-name", "nope")
    assert code == 2 and "no kernel named 'nope' (kernels: stencil_like, other)" in err
    code, _, err = cli("optimize", gtx280_params, tmp_path / "two.json", "--kernel-name", "other")
    assert code == 0, err
    code, _, err = cli("optimize", gtx280_params, tmp_path / "k.json", "--max-slowdown", "-0.1")
    assert code == 2 and "--max-slowdown must be >= 0" in err
    doc = P.load(gtx280_params)
    del doc.sections["timing"]
    doc.save(tmp_path / "nt.json")
    code, _, err = cli("optimize", tmp_path / "nt.json", tmp_path / "k.json", "-o", tmp_path / "x.csv")
    assert code == 2 and "has no timing section" in err
    assert not (tmp_path / "x.csv").exists()
    (tmp_path / "s.csv").write_text("workload,power_w\nx,1\n")
    code, _, err = cli("optimize", gtx280_params, tmp_path / "s.csv")
    assert code == 2 and "not an nvprof/ncu metrics export" in err


def test_optimize_and_predict_give_the_same_power_at_a_non_default_clock_pair(cli, tmp_path):
    """One kernel, one (core, memory) pair other than the default: the clock table of `calib optimize`
    and `calib predict` of the same kernel at that pair and time must agree (both compute the kernel's
    access rates with calib.core.activity and the DVFS power with calib.model.predict.dvfs_power;
    optimize once left out both the memory-domain scaling of the access rates and the temperature
    correction of a session's DVFS section)."""
    params = __import__("pathlib").Path(__file__).resolve().parents[1] / "fitted" / "sim-titanx.json"
    kernel = {"name": "memory_mix", "per_warp": {"fp": 400, "int": 200, "global": 300, "l2": 100},
              "launch": {"blocks": 480, "threads_per_block": 256}, "ilp": 2, "temp_c": 50.0}
    (tmp_path / "k.json").write_text(json.dumps(kernel))
    code, _, err = cli("optimize", params, tmp_path / "k.json", "-o", tmp_path / "t.csv")
    assert code == 0, err
    t = pd.read_csv(tmp_path / "t.csv")
    row = t[(t["core_mhz"] == t["core_mhz"].min()) & (t["mem_mhz"] == t["mem_mhz"].min())].iloc[0]
    assert not bool(row["default"])
    at_pair = dict(kernel, time_s=float(row["time_s"]), core_mhz=float(row["core_mhz"]), mem_mhz=float(row["mem_mhz"]))
    (tmp_path / "k2.json").write_text(json.dumps(at_pair))
    code, _, err = cli("predict", params, tmp_path / "k2.json", "-o", tmp_path / "p.csv")
    assert code == 0, err
    p = pd.read_csv(tmp_path / "p.csv")
    assert p["power_w_pred"].iloc[0] == pytest.approx(float(row["power_w"]), rel=1e-9)


# --- a timing-only parameter file (issue 13, Build 3): time-only questions ---------------------------------------

DATA = __import__("pathlib").Path(__file__).resolve().parent / "data"
CACHE = "app_cache_02(float *, int)"  # ncu demangles with a space before *, as in its reports
MEMORY = "app_memory_01(float *, int)"
NO_POWER_COLS = ["power_w", "idle_power_w", "energy_j", "edp_js"]
TABLE_COLS = ["core_mhz", "mem_mhz", "time_s", *NO_POWER_COLS, "slowdown", "default"]


@pytest.fixture(scope="module")
def timing_only(tmp_path_factory):
    """The README's profiler-export example: a timing-only file fitted on tests/data/timing_ncu_train.csv
    (virtual Titan X, 10 kernels x 3 core x 2 memory clocks) and the kernel table of three other kernels
    profiled once (tests/data/timing_ncu_profile.csv), through the verbs only."""
    from calib.cli import main

    d = tmp_path_factory.mktemp("timing_only")
    assert main(["import", "ncu", str(DATA / "timing_ncu_train.csv"), "--kernels",
                 "-o", str(d / "kernels.csv")]) == 0
    assert main(["fit", str(d / "kernels.csv"), "--timing", "--predictor", "mwp_cwp", "--cv", "2",
                 "-o", str(d / "P.json")]) == 0
    assert main(["import", "ncu", str(DATA / "timing_ncu_profile.csv"), "--kernels",
                 "-o", str(d / "profile.csv")]) == 0
    doc = json.loads((d / "P.json").read_text())
    assert "timing" in doc and "power" not in doc and "dvfs" not in doc
    return d


def _lowest_clocks_by_hand(rows: list[dict], bound: float) -> tuple[float, float]:
    """The stated rule, computed from the written table's rows: among rows with slowdown <= bound, the least
    core/max core + mem/max mem (maxima over all rows); ties: smaller slowdown, then lower core clock."""
    cmax = max(r["core_mhz"] for r in rows)
    mmax = max(r["mem_mhz"] for r in rows)
    ok = [r for r in rows if r["slowdown"] <= bound]
    best = min(ok, key=lambda r: (round(r["core_mhz"] / cmax + r["mem_mhz"] / mmax, 12), r["slowdown"], r["core_mhz"]))
    return best["core_mhz"], best["mem_mhz"]


@pytest.mark.parametrize("kernel, bound, expect", [
    # 15 %: 874.9/4005 (+12.8 %, 79 % + 100 % of the top clocks) and 1105.7/810 (+7.7 %, 100 % + 20 %) qualify;
    # the sum rule takes the low memory clock (a "lowest core clock first" rule would take 874.9/4005)
    (CACHE, 0.15, (1105.7, 810.0)),
    # memory-bound: the core clock costs nothing, the memory clock everything: the lowest core clock
    (MEMORY, 0.10, (595.0, 4005.0)),
])
def test_timing_only_file_answers_the_time_question(timing_only, cli, tmp_path, kernel, bound, expect):
    d = timing_only
    out_csv = tmp_path / "t.csv"
    code, out, err = cli("optimize", d / "P.json", d / "profile.csv", "--kernel-name", kernel,
                         "--max-slowdown", bound, "-o", out_csv)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"kernel {kernel}: time from the timing model, scaled from the measured ")
    assert lines[0].endswith("; power not evaluated (the parameter file has no power model)")
    assert lines[1] == "objective: time (the default for a parameter file without a power model)"
    # the printed table has only the columns with values; the written one all columns, NaN where not evaluated
    assert lines[2].split() == ["core_mhz", "mem_mhz", "time_ms", "slowdown"]
    t = pd.read_csv(out_csv)
    assert list(t.columns) == TABLE_COLS
    assert t[NO_POWER_COLS].isna().all().all() and (t["time_s"] > 0).all()
    # 3 core x 2 memory levels; the file's default 1107/4005 MHz is the measured level 1105.7/4005 (snapped)
    assert len(t) == 6 and t["default"].sum() == 1
    d_row = t[t["default"]].iloc[0]
    assert (d_row["core_mhz"], d_row["mem_mhz"]) == (1105.7, 4005.0) and d_row["slowdown"] == 0.0
    assert len(lines) == 3 + 6 + 4  # header, rows, recommendation, fastest, active SMs, clock table
    rows = t.to_dict("records")
    pair = _lowest_clocks_by_hand(rows, bound)
    assert pair == expect
    best = t[(t["core_mhz"] == pair[0]) & (t["mem_mhz"] == pair[1])].iloc[0]
    assert 0.0 < best["slowdown"] <= bound
    rec = [ln for ln in lines if ln.startswith("recommendation")]
    assert rec == [f"recommendation (lowest clocks, slowdown <= {100 * bound:g}%; least core/1105.7 + mem/4005 MHz): "
                   f"{pair[0]:g}/{pair[1]:g} MHz: time {1e3 * best['time_s']:.4g} ms "
                   f"({100 * best['slowdown']:+.1f}% vs the default 1105.7/4005 MHz: {1e3 * d_row['time_s']:.4g} ms), "
                   f"core {100 * pair[0] / 1105.7:.0f}% + memory {100 * pair[1] / 4005:.0f}% of the top clocks"]
    fast = t.loc[t["time_s"].idxmin()]
    assert f"fastest: {fast['core_mhz']:g}/{fast['mem_mhz']:g} MHz: time {1e3 * fast['time_s']:.4g} ms" in out
    assert "active SMs: not evaluated (GIPS/W needs a power model)" in out
    assert err == ""  # a timing-only file is no mistake: no warning


def test_timing_only_times_are_those_of_predict_anchor(timing_only, cli, tmp_path):
    """optimize's clock table and `calib predict --clocks all --anchor` give one kernel the same time at
    every pair (both scale the measured time by the model's ratio, the ILP set from that time)."""
    d = timing_only
    code, _, err = cli("optimize", d / "P.json", d / "profile.csv", "--kernel-name", CACHE, "-o", tmp_path / "t.csv")
    assert code == 0, err
    code, _, err = cli("predict", d / "P.json", d / "profile.csv", "--clocks", "all", "--anchor", "--no-intervals",
                       "-o", tmp_path / "p.csv")
    assert code == 0, err
    t = pd.read_csv(tmp_path / "t.csv").set_index(["core_mhz", "mem_mhz"])["time_s"]
    p = pd.read_csv(tmp_path / "p.csv")
    p = p[p["workload"] == CACHE].set_index(["core_mhz", "mem_mhz"])["time_s_pred"]
    assert len(p) == 6 and sorted(p.index) == sorted(t.index)
    assert np.allclose(t.loc[p.index].to_numpy(), p.to_numpy(), rtol=1e-9)


def test_timing_only_file_refuses_power_objectives(timing_only, cli, tmp_path):
    d = timing_only
    for objective in ("energy", "edp"):
        code, out, err = cli("optimize", d / "P.json", d / "profile.csv", "--kernel-name", CACHE,
                             "--objective", objective, "-o", tmp_path / "x.csv")
        assert code == 2 and out == ""
        assert err == (f"ERROR: {d / 'P.json'}: the parameter file has no power model (no power or dvfs section); "
                       f"--objective {objective} needs one: use --objective time (the default for a timing-only "
                       "file)\n")
        assert not (tmp_path / "x.csv").exists()


def test_timing_only_extra_pairs_and_kernel_table_errors(timing_only, cli, tmp_path):
    d = timing_only
    code, out, err = cli("optimize", d / "P.json", d / "profile.csv", "--kernel-name", CACHE,
                         "--clocks", "1000:4005,1000:3000", "--objective", "time", "-o", tmp_path / "t.csv")
    assert code == 0, err
    assert "objective: time (the default" not in out  # asked for, not defaulted
    t = pd.read_csv(tmp_path / "t.csv")
    assert len(t) == 8 and {(1000.0, 4005.0), (1000.0, 3000.0)} <= set(zip(t["core_mhz"], t["mem_mhz"]))
    assert list(zip(t["core_mhz"], t["mem_mhz"])) == sorted(zip(t["core_mhz"], t["mem_mhz"]))
    # a kernel table with a kernel at several pairs: which pair to scale from is the user's choice
    code, _, err = cli("optimize", d / "P.json", d / "kernels.csv")
    assert code == 2 and "kernels.csv: 60 rows of 10 kernels (" in err and "choose one with --kernel-name" in err
    code, _, err = cli("optimize", d / "P.json", d / "kernels.csv", "--kernel-name", "train_compute_00(float *, int)")
    assert code == 2 and ("kernel 'train_compute_00(float *, int)' has 6 rows at different clocks; the clock table is "
                          "scaled from one profiled pair") in err
    code, _, err = cli("optimize", d / "P.json", d / "profile.csv", "--clocks", "1000:x")
    assert code == 2 and "--clocks: '1000:x' is not CORE:MEM" in err


def test_time_objective_with_a_power_model_keeps_power_columns(cli, tmp_path):
    params = _dvfs_params(tmp_path)
    k = {"name": "mem_bound", "per_warp": {"fp": 100, "global": 400}, "launch": {"blocks": 48, "threads_per_block": 256},
         "ilp": 4}
    (tmp_path / "k.json").write_text(json.dumps(k))
    code, out, err = cli("optimize", params, tmp_path / "k.json", "--objective", "time", "-o", tmp_path / "t.csv")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("kernel mem_bound: time from the timing model; power from the DVFS model")
    assert lines[1].split() == ["core_mhz", "mem_mhz", "time_ms", "power_w", "energy_mj", "edp_mj_ms", "slowdown"]
    t = pd.read_csv(tmp_path / "t.csv")
    assert list(t.columns) == TABLE_COLS and t[NO_POWER_COLS].notna().all().all()
    pair = _lowest_clocks_by_hand(t.to_dict("records"), 0.10)
    best = t[(t["core_mhz"] == pair[0]) & (t["mem_mhz"] == pair[1])].iloc[0]
    assert f"recommendation (lowest clocks, slowdown <= 10%; least core/1000 + mem/3500 MHz): {pair[0]:g}/{pair[1]:g} MHz" in out
    assert out.count(f", power {best['power_w']:.1f} W") == 1
    assert pair == (600.0, 3500.0)  # memory bound: the lowest core clock, the memory clock kept
    assert "active SMs: optimal" in out
