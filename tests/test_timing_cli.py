"""Time at every clock pair from a profiler export (issue 13): import --kernels, fit --timing,
predict --clocks/--anchor, the architecture table, row-order independence and bad input."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from calib.cli import main
from calib.core import arch
from calib.core.errors import BadInputError
from calib.fit.timing_table import TimingFitter
from calib.importers.kernels import read_kernels
from calib.model import timing as T
from microbench.devices.sim.presets import get_preset
from microbench.devices.sim.timing import kernel_time_s
from microbench.testing import profiler_export as PE

SMS, BOARD = 24, "GeForce GTX TITAN X"


TOP = (1164.0, 4005.0)


@pytest.fixture(scope="module")
def small_export(tmp_path_factory):
    """The profilers' real shapes (microbench.testing.profiler_export): ncu's raw page of both clock pairs
    (one file, measured clocks); nvprof's metrics trace and gpu trace of the run at the top pair (nvprof
    writes durations only without metrics, so a run with metrics and one without)."""
    d = tmp_path_factory.mktemp("export")
    ks = PE.app_kernels(5, 3, SMS, prefix="k")
    pairs = [TOP, (747.0, 810.0)]
    la = PE.profile(ks, "titanx", pairs, seed=3)
    top = [x for x in la if x.requested == TOP]
    (d / "nv.csv").write_text(PE.nvprof_metrics_trace_csv(top, BOARD))
    (d / "nv_trace.csv").write_text(PE.nvprof_gpu_trace_csv(top, BOARD))
    (d / "ncu.csv").write_text(PE.ncu_raw_csv(la, "NVIDIA " + BOARD))
    (d / "ncu_details.csv").write_text(PE.ncu_details_csv(la))
    return d, ks, la


def test_architecture_table():
    assert arch.warp_issue_per_cycle(chip="GP100") == 2.0
    assert arch.warp_issue_per_cycle(chip="GP102") == 4.0
    assert arch.warp_issue_per_cycle(cc="6.1") == 4.0
    assert arch.chip_of_device_name("GeForce GTX 1080 Ti (0)") == "GP102"
    assert arch.chip_of_device_name("GeForce GTX 1080 (0)") == "GP104"
    assert arch.chip_of_device_name("NVIDIA TITAN Xp") == "GP102"
    assert arch.chip_of_device_name("Tesla P100-PCIE-16GB") == "GP100"
    assert arch.chip_of_device_name("Some GPU") is None
    with pytest.raises(BadInputError, match="chip 'GX999' is not in the architecture table"):
        arch.arch_of(chip="GX999")


@pytest.mark.parametrize("fmt", ["nv", "ncu"])
def test_kernel_table_recovers_counts_time_and_measured_clocks(small_export, fmt):
    """Counts, times and launch shapes of the virtual GPU's launches back from the profilers' real layouts,
    the SM count from the export (ncu: device__attribute_multiprocessor_count; nvprof: the board name), no
    --sm-count; ncu's measured clocks, not the requested ones."""
    d, ks, la = small_export
    if fmt == "nv":
        df = read_kernels(d / "nv.csv", trace=d / "nv_trace.csv", core_mhz=TOP[0], mem_mhz=TOP[1])
        la = [x for x in la if x.requested == TOP]
    else:
        df = read_kernels(d / "ncu.csv")
    assert len(df) == len(la) == {"nv": 5, "ncu": 10}[fmt]   # one row per kernel and clock pair
    for launch in la:
        k = launch.kernel
        near = np.isclose(df["core_mhz"], launch.core_mhz if fmt == "ncu" else TOP[0], atol=0.6)
        row = df[df["workload"].str.startswith(k.name) & near]
        assert len(row) == 1, k.name
        row = row.iloc[0]
        assert row["time_s"] == pytest.approx(launch.time_s, rel=1e-3)  # 6 decimals in the column's unit
        assert row["mem_mhz"] == pytest.approx(launch.mem_mhz, rel=1e-5)
        assert row["blocks"] == k.blocks and row["threads_per_block"] == k.threads_per_block
        assert row["active_sms"] == min(SMS, k.blocks)
        pw = dict(k.per_warp)
        if fmt == "ncu":  # ncu's ALU pipe runs integer and logic instructions: one class
            pw["int"] = pw.get("int", 0.0) + pw.pop("alu", 0.0)
        for cls, n in pw.items():
            assert row[f"cnt_{cls}"] == pytest.approx(n, rel=2e-3, abs=0.02), (k.name, cls)
        assert row["uncoal_frac"] == pytest.approx(0.0 if k.coalesced else 1.0, abs=1e-6)
    if fmt == "ncu":  # the measured clocks, not the requested ones: the top pair ran ~5 % below 1164 MHz
        assert df["core_mhz"].max() < 1164 * 0.97
    assert set(df["arch"]) == {"GM200"}


def test_import_verb_writes_the_kernel_table(small_export, tmp_path, capsys):
    d, _, _ = small_export
    out = tmp_path / "k.csv"
    assert main(["import", "ncu", str(d / "ncu.csv"), "--kernels", "-o", str(out)]) == 0
    msg = capsys.readouterr().out
    assert "10 kernel rows, 5 kernels, 10 with a measured time, 2 core x 2 memory clock levels, arch GM200" in msg
    df = pd.read_csv(out)
    assert {"time_s", "core_mhz", "mem_mhz", "blocks", "threads_per_block", "active_sms", "cnt_fp"} <= set(df.columns)
    out2 = tmp_path / "k2.csv"
    assert main(["import", "nvprof", str(d / "nv.csv"), "--kernels", "--trace", str(d / "nv_trace.csv"),
                 "--core-mhz", "1164", "--mem-mhz", "4005", "-o", str(out2)]) == 0
    assert "5 kernel rows, 5 kernels, 5 with a measured time, 1 core x 1 memory clock levels, arch GM200" in \
        capsys.readouterr().out
    assert pd.read_csv(out2)["active_sms"].max() == SMS  # from the board name, GeForce GTX TITAN X


def _bad(tmp_path, text):
    f = tmp_path / "bad.csv"
    f.write_text(text)
    return f


@pytest.mark.parametrize("which, edit, message", [
    ("nv.csv", lambda lines: lines[:5], "the export has no kernel rows"),
    ("nv_trace.csv", lambda lines: lines[:5] + [_set_field(lines[5], 2, "")] + lines[6:],
     "line 6: kernel 'k_compute_00(float*, int)': no launch shape"),
    ("nv_trace.csv", lambda lines: lines[:4] + [_set_field(lines[4], 1, "fortnights")] + lines[5:],
     "nv_trace.csv: line 6, column Duration: '4.463473': unit 'fortnights' is not one nvprof prints"),
    ("nv_trace.csv", lambda lines: lines[:5] + [_set_field(lines[5], 1, "0")] + lines[6:],
     "nv_trace.csv: line 6, column Duration: '0' us is not a positive duration"),
    ("nv.csv", lambda lines: lines[:5] + [_set_field(lines[5], 5, "lots")] + lines[6:],
     "line 6, metric inst_executed: 'lots' is not a number with one of nvprof's units"),
    # a count metric whose units-row entry nvprof does not print (nvprof leaves counts blank)
    ("nv.csv", lambda lines: lines[:4] + [_set_field(lines[4], 5, "furlongs")] + lines[5:],
     "line 6, metric inst_executed: '47232': unit 'furlongs' is not one nvprof prints"),
    ("nv.csv", lambda lines: lines[:5] + [_set_field(lines[5], 5, "<OVERFLOW>")] + lines[6:],
     "line 6, metric inst_executed: '<OVERFLOW>': nvprof could not count this value (counter overflow)"),
])
def test_bad_exports_one_error_line_nothing_written(small_export, tmp_path, capsys, which, edit, message):
    """Each bad nvprof field: one ERROR line naming file, line, column or metric and the value, exit 2,
    nothing written."""
    d, _, _ = small_export
    files = {"nv.csv": d / "nv.csv", "nv_trace.csv": d / "nv_trace.csv"}
    lines = files[which].read_text().splitlines()
    f = tmp_path / which
    f.write_text("\n".join(edit(lines)) + "\n")
    files[which] = f
    out = tmp_path / "k.csv"
    assert main(["import", "nvprof", str(files["nv.csv"]), "--kernels", "--trace", str(files["nv_trace.csv"]),
                 "--core-mhz", "1164", "--mem-mhz", "4005", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ERROR: ") and str(tmp_path) in err[0] and message in err[0], err
    assert not out.exists()


def _ncu_rows(path):
    import csv

    return list(csv.reader(path.read_text().splitlines()))


def _ncu_text(rows) -> str:
    import csv
    import io

    buf = io.StringIO()
    csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    return buf.getvalue()


def test_ncu_metric_units_scaled_converted_unknown_refused(small_export, tmp_path, capsys):
    """ncu prints large counts in scaled units ("Kinst", "Msector"): converted, the table is the same;
    a count, percentage or time in a unit the importer does not know: one ERROR line naming file, line,
    metric and unit, exit 2, nothing written."""
    d, _, _ = small_export
    rows = _ncu_rows(d / "ncu_details.csv")
    h = {name: i for i, name in enumerate(rows[0])}
    ref = read_kernels(d / "ncu_details.csv", sm_count=SMS)
    scaled = [list(r) for r in rows]
    n_scaled = 0
    for r in scaled[1:]:
        factor = {"smsp__inst_executed.sum": ("Kinst", 1e3), "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum":
                  ("Msector", 1e6)}.get(r[h["Metric Name"]])
        if factor:
            r[h["Metric Unit"]] = factor[0]
            r[h["Metric Value"]] = repr(float(r[h["Metric Value"]].replace(",", "")) / factor[1])
            n_scaled += 1
    assert n_scaled == 2 * 10                      # both metrics of every launch
    f = tmp_path / "scaled.csv"
    f.write_text(_ncu_text([r + [""] * (len(rows[0]) - len(r)) for r in scaled]))
    got = read_kernels(f, sm_count=SMS)
    pd.testing.assert_frame_equal(got.drop(columns=["device"], errors="ignore"),
                                  ref.drop(columns=["device"], errors="ignore"), rtol=1e-9)

    for metric, unit, said in (("smsp__inst_executed_pipe_fma.sum", "parsecs", "unit 'parsecs' is not one ncu prints"),
                               ("lts__t_sector_hit_rate.pct", "inst", "is in 'inst', not a percentage"),
                               ("gpu__time_duration.sum", "fortnight", "unit 'fortnight' is not one ncu prints"),
                               ("gpu__time_duration.sum", "cycle", "is in 'cycle', not a time")):
        bad = [list(r) for r in rows]
        i = next(i for i, r in enumerate(bad) if i and r[h["Metric Name"]] == metric)
        bad[i][h["Metric Unit"]] = unit
        f = tmp_path / "bad_unit.csv"
        f.write_text(_ncu_text(bad))
        out = tmp_path / "k.csv"
        assert main(["import", "ncu", str(f), "--kernels", "-o", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1, err
        assert err[0].startswith(f"ERROR: {f}: line {i + 1}, metric {metric}: ") and said in err[0], err
        assert not out.exists()


def _set_field(line: str, i: int, value: str) -> str:
    import csv
    import io

    r = next(csv.reader([line]))
    r[i] = value
    buf = io.StringIO()
    csv.writer(buf, quoting=csv.QUOTE_NONNUMERIC, lineterminator="").writerow(r)
    return buf.getvalue()


def nvprof_kernel_table(launches, d) -> pd.DataFrame:
    """The kernel table of nvprof runs, one run per locked clock pair (a metrics trace and a gpu trace each,
    imported with --trace and the pair's clocks) -- how a pre-Volta GPU (the virtual Titan X) is profiled:
    ncu does not run on Maxwell. The launches are run without clock droop (locked clocks hold)."""
    tables = []
    for i, pair in enumerate(sorted({la.requested for la in launches})):
        run = [la for la in launches if la.requested == pair]
        (d / f"m{i}.csv").write_text(PE.nvprof_metrics_trace_csv(run, BOARD))
        (d / f"t{i}.csv").write_text(PE.nvprof_gpu_trace_csv(run, BOARD))
        tables.append(read_kernels(d / f"m{i}.csv", trace=d / f"t{i}.csv", core_mhz=pair[0], mem_mhz=pair[1]))
    return pd.concat(tables, ignore_index=True)


@pytest.fixture(scope="module")
def train_table(tmp_path_factory):
    d = tmp_path_factory.mktemp("train")
    ks = PE.app_kernels(10, 5, SMS, prefix="tr")
    pairs = PE.grid_pairs("titanx", 3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return nvprof_kernel_table(PE.profile(ks, "titanx", pairs, seed=5, droop=0.0), d)


def _fit(df):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return TimingFitter(predictor="mwp_cwp", comp_form="max", jackknife=False).fit(df).section_


def test_shuffled_or_reversed_rows_change_no_parameter_beyond_its_stderr(train_table):
    ref = _fit(train_table)
    shuffled = _fit(train_table.sample(frac=1.0, random_state=7))
    reversed_ = _fit(train_table.iloc[::-1])
    for other in (shuffled, reversed_):
        for p in ref:
            q = other[p.name]
            tol = p.stderr if p.stderr is not None else 1e-9 * max(1.0, abs(p.value))
            assert abs(q.value - p.value) <= tol, (p.name, p.value, q.value, p.stderr)
    # the latencies respect their physical lower bounds
    assert ref.value("dm_lat_b_cycles") >= 50.0 and ref.value("inst_lat_cycles") >= 2.0


def test_cv_selected_form_is_row_order_independent(train_table):
    """The default path (model form chosen by cross-validation by kernel): shuffled or reversed rows
    choose the same form, with the same CV table, and move no parameter beyond its standard error."""
    def fit(df):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return TimingFitter(cv_folds=3, jackknife=False).fit(df).section_

    ref = fit(train_table)
    assert ref.stats["structure_chosen"] in {"mwp_cwp/max", "mwp_cwp/sum", "wangchu/max", "wangchu/sum"}
    assert len(ref.stats["structure_cv"]) == 4
    for other in (fit(train_table.sample(frac=1.0, random_state=11)), fit(train_table.iloc[::-1])):
        assert other.stats["structure_chosen"] == ref.stats["structure_chosen"]
        assert other.structure == ref.structure
        for form, cv in ref.stats["structure_cv"].items():
            assert other.stats["structure_cv"][form]["anchored_mape_pct"] == pytest.approx(
                cv["anchored_mape_pct"], abs=1e-6), form
        for p in ref:
            q = other[p.name]
            tol = p.stderr if p.stderr is not None else 1e-9 * max(1.0, abs(p.value))
            assert abs(q.value - p.value) <= tol, (p.name, p.value, q.value, p.stderr)


def test_memory_bound_follows_memory_clock_compute_bound_core_clock(train_table):
    """A kernel whose time follows the memory clock alone is not predicted slower at 80 % core clock,
    and a compute-bound one is not predicted faster at a lower memory clock (virtual-GPU kernels)."""
    sec = _fit(train_table)
    p = get_preset("titanx")
    mem_k = PE.app_kernels(1, 11, SMS, kind="memory", prefix="mem")[0]
    comp_k = PE.AppKernel("cmp_fma", {"fp": 400.0, "int": 40.0, "alu": 10.0, "global": 1.0}, SMS * 32, 256, ilp=4.0)
    fc0, fm0 = 1106.0, 4005.0
    for k, mem_sensitive in ((mem_k, True), (comp_k, False)):
        la = PE.profile([k], p, [(1164.0, 4005.0)], seed=1, noise=0.0, droop=0.0)[0]
        w = k.workload(SMS)

        def truth(fc, fm):
            return kernel_time_s(p.timing, w.per_warp, w.launch, w.traits, fc, fm, p.default_core_mhz, p.default_mem_mhz)

        row = read_kernels_from_launch(la)
        grid = pd.concat([row.assign(core_mhz=fc0 * 0.8, mem_mhz=fm0), row.assign(core_mhz=fc0, mem_mhz=810.0)])
        pred = T.predict_time_anchored(sec, grid, truth(fc0, fm0), fc0, fm0, infer_ilp=True) / truth(fc0, fm0)
        true = np.array([truth(fc0 * 0.8, fm0), truth(fc0, 810.0)]) / truth(fc0, fm0)
        if mem_sensitive:
            assert true[0] < 1.03 and pred[0] < 1.05, (true, pred)          # 80 % core: not slower
            # follows the memory clock, with its magnitude: 2.06x predicted for 2.12x measured (-3.1 %) with
            # the roofline bandwidth; 1.96x (-7.5 %) anchored without it; 2.65x (+25 %) when every training
            # kernel was taken at ILP 1
            assert true[1] > 1.5 and pred[1] > 1.5 and pred[1] == pytest.approx(true[1], rel=0.06)
        else:
            assert true[0] > 1.2 and pred[0] == pytest.approx(true[0], rel=0.05)  # follows 1 / core clock
            assert true[1] < 1.05 and pred[1] < 1.05                          # memory clock: no effect


def read_kernels_from_launch(la) -> pd.DataFrame:
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        return nvprof_kernel_table([la], Path(d))


def test_fit_and_predict_verbs_timing_only(train_table, tmp_path, capsys):
    k = tmp_path / "k.csv"
    train_table.to_csv(k, index=False)
    pj = tmp_path / "P.json"
    assert main(["fit", str(k), "--timing", "--predictor", "mwp_cwp", "--cv", "2", "-o", str(pj)]) == 0
    out = capsys.readouterr().out
    assert "model form by 2-fold cross-validation by kernel" in out
    doc = json.loads(pj.read_text())
    assert set(doc) >= {"timing", "device"} and "power" not in doc
    assert doc["device"]["warp_issue_per_cycle"] == 4.0
    assert doc["fit"]["timing"]["settings"]["predictor"] == "mwp_cwp"
    one = train_table.groupby("workload").head(1)
    kk = tmp_path / "one.csv"
    one.to_csv(kk, index=False)
    pred = tmp_path / "pred.csv"
    assert main(["predict", str(pj), str(kk), "--clocks", "all", "--anchor", "-o", str(pred)]) == 0
    df = pd.read_csv(pred)
    assert len(df) == len(one) * 3 * 2 and {"time_s_pred", "profiled_time_s"} <= set(df.columns)
    assert "power_w_pred" not in df.columns
    # at its own profiled pair an anchored prediction returns the measured time
    at = df[np.isclose(df["core_mhz"], df["profiled_core_mhz"], rtol=0.006)
            & np.isclose(df["mem_mhz"], df["profiled_mem_mhz"], rtol=0.006)]
    assert len(at) >= 1
    assert np.allclose(at["time_s_pred"], at["profiled_time_s"], rtol=0.02)
    assert main(["predict", str(pj), str(kk), "--clocks", "1000:x", "-o", str(tmp_path / "p2.csv")]) == 2
    assert "--clocks: '1000:x' is not CORE:MEM" in capsys.readouterr().err


def test_infer_ilp_recovers_the_ilp_that_made_the_time_and_is_continuous(train_table):
    """The ILP ``calib predict --anchor`` and the anchored fit infer from a kernel's profiled time: the
    model's own time at a known ILP gives that ILP back (between grid points too, within 1 %); a
    time no ILP reaches gives ILP 1 (model too fast) or the smallest ILP within 0.2 % of the model's
    fastest; and a small change of a parameter moves the inferred ILP by a small amount (no grid steps,
    which would stop the fit's finite-difference Jacobian from seeing it)."""
    sec = _fit(train_table)
    ts = T.compile_section(sec)
    rows = train_table.groupby("workload").head(1).reset_index(drop=True)
    x = T.inputs_from_table(ts, rows)
    sens = []
    for ilp in (1.0, 1.37, 2.9):
        t = T.time_from_inputs(ts, T.with_ilp(x, np.full(len(rows), ilp)))
        got = T.infer_ilp(ts, x, t)
        # kernels whose time depends on ILP there (>= 0.5 % from ILP x 1.05) must give it back
        t_up = T.time_from_inputs(ts, T.with_ilp(x, np.full(len(rows), ilp * 1.05)))
        s = np.abs(np.log(t / t_up)) > 0.005
        sens.append(s)
        assert s.sum() >= 2, ilp
        assert np.allclose(got[s], ilp, rtol=0.01), (ilp, got[s])
    # far too fast for the model (no ILP reaches it) or far too slow: the grid's ends
    t1 = T.time_from_inputs(ts, x)
    assert np.all(T.infer_ilp(ts, x, t1 * 2.0) == 1.0)
    fast = T.infer_ilp(ts, x, t1 * 1e-3)
    t_fast = T.time_from_inputs(ts, T.with_ilp(x, fast))
    t_best = T.time_from_inputs(ts, T.with_ilp(x, np.full(len(rows), 8.0)))
    assert np.all(t_fast <= t_best * 1.0021)
    # continuous in the parameters: the inferred ILP moves in proportion to a small change of the DRAM
    # latency (a choice among grid points, 3.3 % apart, would not move at all, or jump)
    t = T.time_from_inputs(ts, T.with_ilp(x, np.full(len(rows), 2.2)))
    a = T.infer_ilp(ts, x, t)

    def moved(rel):
        v = {**ts.values, "dm_lat_b_cycles": ts.values["dm_lat_b_cycles"] * (1 + rel)}
        return T.infer_ilp(T.TimingSection(**{**ts.__dict__, "values": v}), x, t) - a

    d1, d2 = moved(1e-3), moved(2e-3)
    s = np.abs(d2) > 1e-6
    assert s.sum() >= 2
    assert np.all(np.abs(d1[s]) < 0.01 * a[s])
    assert np.allclose(d2[s] / d1[s], 2.0, rtol=0.1), (d1[s], d2[s])


def test_model_and_infer_ilp_broadcast_over_parameter_sets(train_table):
    """The timing fit's Jacobian evaluates P parameter sets in one call (values of shape (P, 1)): the
    time of both predictors and the inferred ILP must equal P separate calls exactly."""
    sec = _fit(train_table)
    rows = train_table.groupby("workload").head(2).reset_index(drop=True)
    for pred in T.PREDICTORS:
        ts = T.compile_section(sec)
        ts = T.TimingSection(**{**ts.__dict__, "predictor": pred})
        x = T.inputs_from_table(ts, rows)
        t_meas = T.time_from_inputs(ts, T.with_ilp(x, np.full(len(rows), 1.7)))
        scales = np.array([1.0, 1.01, 0.97, 1.2])
        sets = [{k: v * s for k, v in ts.values.items()} for s in scales]
        batch = T.TimingSection(**{**ts.__dict__, "values": {k: (v * scales)[:, None] for k, v in ts.values.items()}})
        t_b, ilp_b = T.time_from_inputs(batch, x), T.infer_ilp(batch, x, t_meas)
        assert t_b.shape == ilp_b.shape == (len(scales), len(rows))
        for i, v in enumerate(sets):
            one = T.TimingSection(**{**ts.__dict__, "values": v})
            assert np.array_equal(t_b[i], T.time_from_inputs(one, x)), (pred, i)
            assert np.array_equal(ilp_b[i], T.infer_ilp(one, x, t_meas)), (pred, i)


def test_time_intervals_cover_heldout_kernels(train_table, tmp_path, capsys):
    """The fit's prediction discrepancy comes from its CV errors on kernels left out, predicted from their
    anchor as calib predict --anchor does: the 90 % time intervals of kernels the fit never saw, each
    predicted at every pair from one profile, hold most of their measured times (without it, only the
    parameters' spread from the training residuals: 41 % at seed 1 of the bench, 14 % once anchored)."""
    k = tmp_path / "k.csv"
    train_table.to_csv(k, index=False)
    pj = tmp_path / "P.json"
    assert main(["fit", str(k), "--timing", "--predictor", "mwp_cwp", "--cv", "3", "-q", "-o", str(pj)]) == 0
    doc = json.loads(pj.read_text())
    pr = doc["fit"]["timing"]["prediction"]
    assert pr["n_groups"] == 10 and "predict --anchor" in pr["method"]
    ks = PE.app_kernels(8, 77, SMS, prefix="ho")
    pairs = PE.grid_pairs("titanx", 3, 2)
    (tmp_path / "top").mkdir()
    (tmp_path / "all").mkdir()
    nvprof_kernel_table(PE.profile(ks, "titanx", [max(pairs)], seed=78, droop=0.0), tmp_path / "top").to_csv(
        tmp_path / "top_k.csv", index=False)
    truth = nvprof_kernel_table(PE.profile(ks, "titanx", pairs, seed=79, droop=0.0), tmp_path / "all")
    out = tmp_path / "pred.csv"
    assert main(["predict", str(pj), str(tmp_path / "top_k.csv"), "--clocks", "all", "--anchor", "-q", "-o", str(out)]) == 0
    pred = pd.read_csv(out)
    from calib.core.units import clock_levels, nearest_level

    for df in (pred, truth):
        df["fc"] = nearest_level(df["core_mhz"], clock_levels(truth["core_mhz"]))
        df["fm"] = nearest_level(df["mem_mhz"], clock_levels(truth["mem_mhz"]))
    j = truth.merge(pred[["workload", "fc", "fm", "time_s_pred", "time_s_lo", "time_s_hi"]], on=["workload", "fc", "fm"])
    assert len(j) == 8 * 6
    inside = ((j["time_s"] >= j["time_s_lo"]) & (j["time_s"] <= j["time_s_hi"])).mean()
    # measured 2026-11-24 (nvprof runs at locked clocks): 48 of 48 rows inside, mean half-width 10.8 % (errors:
    # mean 1.8 %, worst 8.4 %); 2026-11-23 (the old combined stand-in, measured clocks): 48 of 48, 9.9 %
    assert inside >= 0.85, inside
    # and not by being useless: the mean half-width stays near the errors' 90 % quantile
    assert ((j["time_s_hi"] - j["time_s_lo"]) / 2 / j["time_s_pred"]).mean() <= 0.15
