"""Malformed or absurd parameter files are refused at load time -- by `calib validate` and by `calib predict`
alike -- with exit status 2 and one ERROR line naming the file and the field, never an internal error.

Each case mutates a real parameter file: the IPP + thermal + timing file of the quick gtx280 campaign
(session fixture ``quick_run``) or a DVFS file fitted from the published GTX Titan X table (gpmTOOL).
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
from pathlib import Path

import pytest
from conftest import SHARED

GPM_CSV = SHARED / "data" / "guerreiro-gtxtitanx" / "tpds2019_micro_named_gtxtitanx.csv"
DEL = object()


def _main(*argv: object) -> tuple[int, str, str]:
    from calib.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def ipp_file(quick_run) -> tuple[dict, Path]:
    """(document, samples table) of the quick gtx280 campaign: power (ipp), thermal and timing sections."""
    files = [p for p in Path(quick_run).rglob("*.json") if p.parent.name == "fitted" and "recovery" not in p.name]
    assert len(files) == 1, files
    table = files[0].with_suffix(".samples.csv")
    assert table.exists()
    return json.loads(files[0].read_text()), table


@pytest.fixture(scope="module")
def dvfs_file(tmp_path_factory) -> tuple[dict, Path]:
    """(document, samples table) of a DVFS power model fitted on the gpmTOOL GTX Titan X table."""
    if not GPM_CSV.exists():
        pytest.skip(f"{GPM_CSV} not available")
    d = tmp_path_factory.mktemp("dvfs")
    code, _, err = _main("import", "gpmtool", GPM_CSV, "-o", d / "m.csv")
    assert code == 0, err
    code, _, err = _main("fit", d / "m.csv", "-o", d / "titanx.json")
    assert code == 0, err
    lines = (d / "m.csv").read_text().splitlines(keepends=True)
    (d / "small.csv").write_text("".join(lines[:31]))  # header + 30 rows: enough for predict
    doc = json.loads((d / "titanx.json").read_text())
    assert doc["power"]["model"] == "dvfs" and doc["power"]["activity_clocks"] is not None
    return doc, d / "small.csv"


def _set(doc: dict, path: tuple, value: object) -> None:
    for k in path[:-1]:
        doc = doc[k]
    if value is DEL:
        del doc[path[-1]]
    else:
        doc[path[-1]] = value


# (id, [(path, value), ...], text the ERROR line must contain)
IPP_CASES = [
    ("device-sm_count-huge", [(("device", "sm_count"), 1e308)], "field device/sm_count"),
    ("device-core-huge", [(("device", "clocks", "core_mhz"), 1e308)], "field device/clocks/core_mhz"),
    ("device-supported-str", [(("device", "clocks", "supported", "core_mhz"), "x")],
     "field device/clocks/supported/core_mhz"),
    ("device-supported-number", [(("device", "clocks", "supported", "mem_mhz"), 1107.0)],
     "field device/clocks/supported/mem_mhz"),
    ("default-clocks-str", [(("power", "default_clocks", "core_mhz"), "x")], "field power/default_clocks/core_mhz"),
    ("default-clocks-list", [(("power", "default_clocks", "mem_mhz"), [])], "field power/default_clocks/mem_mhz"),
    ("warp-issue-str", [(("power", "warp_issue_per_cycle"), "x")], "field power/warp_issue_per_cycle"),
    ("unit-scope", [(("power", "units", "fp", "scope"), "board")], "power.units.fp.scope: 'board' is not 'sm' or 'chip'"),
    ("unit-domain", [(("power", "units", "global", "domain"), "dram")], "power.units.global.domain: 'dram' is not"),
    ("power-sm-count-huge", [(("power", "sm_count"), 100000)], "power.sm_count: 100000 is not a positive integer"),
    ("power-model-unknown", [(("power", "model"), "x")], "field power/model: 'x' is not one of ['ipp', 'dvfs']"),
    ("thermal-model-unknown", [(("thermal", "model"), "x")], "field thermal/model: 'x' is not one of ['ipp-thermal']"),
    ("idle-power-unit", [(("power", "parameters", "idle_power_w", "unit"), "mW")],
     "field power.parameters.idle_power_w.unit: 'mW', but a parameter named *_w is in 'W'"),
    ("lambda-huge", [(("thermal", "parameters", "lambda_c", "value"), 1e308),
                     (("thermal", "parameters", "lambda_c", "max"), None)],
     "thermal.parameters.lambda_c: 1e+308 C is outside the physical range [-200, 200] C"),
    ("thermal-step-str", [(("thermal", "steps", 0, "amplitude_c"), "x")], "field thermal/steps/0/amplitude_c"),
    ("sm-scaling", [(("power", "sm_scaling"), "cubic")], "power.sm_scaling: 'cubic' is not 'log' or 'linear'"),
    ("idle-power-huge", [(("power", "parameters", "idle_power_w", "value"), 1e308),
                         (("power", "parameters", "idle_power_w", "max"), None)],
     "power.parameters.idle_power_w"),
    ("idle-power-zero", [(("power", "parameters", "idle_power_w", "value"), 1.7e-6),
                         (("power", "parameters", "idle_power_w", "min"), 0.0)],
     "power.parameters.idle_power_w: 1.7e-06 W is not a plausible idle power"),
    ("ar-log-b-negative", [(("power", "parameters", "ar_log_b", "value"), -1.0),
                           (("power", "parameters", "ar_log_b", "min"), None),
                           (("power", "parameters", "ar_log_b", "vary"), False)],
     "power.parameters.ar_log_b: -1 is outside (0, 2]"),
    ("idle-temp-negative", [(("thermal", "parameters", "idle_temp_c", "value"), -1.0),
                            (("thermal", "parameters", "idle_temp_c", "min"), None)],
     "thermal.parameters.idle_temp_c: -1.0 C is not a plausible GPU temperature"),
    ("rmse-infinite", [(("fit", "power", "rmse_w"), float("inf"))], "field fit/power/rmse_w: inf is not a finite number"),
    ("thermal-no-idle-temp", [(("thermal", "parameters", "idle_temp_c"), DEL)], "thermal.parameters: idle_temp_c missing"),
    ("timing-comp-form", [(("timing", "comp_form"), "x")], "field timing/comp_form"),
    ("timing-case2-form", [(("timing", "case2_form"), None)], "field timing/case2_form"),
    ("timing-rounds-form", [(("timing", "rounds_form"), "sometimes")], "field timing/rounds_form"),
    ("timing-mem-l-coal", [(("timing", "mem_l_coal"), -1.0)], "field timing/mem_l_coal"),
    ("timing-n-pw-form", [(("timing", "n_pw_form"), {})], "field timing/n_pw_form"),
    ("timing-predictor", [(("timing", "predictor"), "oracle")], "field timing/predictor"),
    ("timing-no-ref-clocks", [(("timing", "ref_clocks"), DEL)], "'ref_clocks' is a required property"),
    ("timing-ref-core-huge", [(("timing", "ref_clocks", "core_mhz"), 1e308)], "field timing/ref_clocks/core_mhz"),
    ("timing-uncoal-huge", [(("timing", "uncoal_per_mw"), 1e308)], "field timing/uncoal_per_mw"),
    ("timing-sm-count-str", [(("timing", "sm_count"), "x")], "field timing/sm_count"),
    ("timing-no-issue", [(("timing", "parameters", "issue_cycles"), DEL)], "'issue_cycles' is a required property"),
    ("timing-mem-ld-huge", [(("timing", "parameters", "mem_ld_cycles", "value"), 1e308),
                            (("timing", "parameters", "mem_ld_cycles", "max"), None)],
     "timing.parameters.mem_ld_cycles"),
    ("timing-m-factor-huge", [(("timing", "parameters", "m_factor_fp", "value"), 1e308),
                              (("timing", "parameters", "m_factor_fp", "max"), None)],
     "timing.parameters.m_factor_fp"),
]

DVFS_CASES = [
    ("activity-clocks-str", [(("power", "activity_clocks"), "x")], "field power/activity_clocks"),
    ("activity-clocks-no-core", [(("power", "activity_clocks", "core_mhz"), DEL)],
     "field power/activity_clocks: 'core_mhz' is a required property"),
    ("activity-clocks-mem-null", [(("power", "activity_clocks", "mem_mhz"), None)],
     "field power/activity_clocks/mem_mhz"),
    ("unit-name-null", [(("power", "units", 0, "name"), None)], "field power/units/0/name"),
    ("unit-domain", [(("power", "units", 0, "domain"), "gpu")], "field power/units/0/domain"),
    ("unit-form", [(("power", "units", 0, "ar_form"), "cubic")], "field power/units/0/ar_form"),
    ("unit-twice", [(("power", "units", 1, "name"), "SP")], "power.units: unit 'SP' is listed twice"),
    ("temp-ref-str", [(("power", "temp_ref_c"), "x")], "field power/temp_ref_c"),
    ("temp-ref-boiling", [(("power", "temp_ref_c"), 300.0)], "field power/temp_ref_c"),
    ("no-ref-clocks", [(("power", "ref_clocks"), DEL)], "'ref_clocks' is a required property"),
    ("ref-clock-str", [(("power", "ref_clocks", "mem_mhz"), "x")], "field power/ref_clocks/mem_mhz"),
    ("voltage-param-unknown", [(("power", "voltage", "core", "params", 0), "v_core_1")],
     "power.voltage.core: voltage parameter v_core_1 is not in power.parameters"),
    ("no-tp-lambda", [(("power", "parameters", "ar_tp_lambda"), DEL)],
     "power.parameters: ar_tp_lambda missing (unit SP has the 'tpow' access-rate form)"),
    ("tp-threshold-negative", [(("power", "parameters", "ar_tp_threshold", "value"), -1.0),
                               (("power", "parameters", "ar_tp_threshold", "min"), None),
                               (("power", "parameters", "ar_tp_threshold", "vary"), False)],
     "power.parameters.ar_tp_threshold: -1 is outside [0, 1)"),
    ("mem-sat-zero", [(("power", "parameters", "mem_sat", "value"), 0.0),
                      (("power", "parameters", "mem_sat", "min"), None)],
     "power.parameters.mem_sat: 0 is outside (0, 100]"),
    ("voltage-huge", [(("power", "parameters", "v_core_595", "value"), 1e308),
                      (("power", "parameters", "v_core_595", "max"), None)],
     "power.parameters.v_core_595"),
    ("all-zero-power", [(("power", "parameters", n, "value"), 1e-7)
                        for n in ("static_core_w", "static_mem_w", "const_core_w", "const_mem_w")],
     "the idle power at the reference clocks, is not plausible"),
]


def _check_refused(doc: dict, mutations: list, expect: str, table: Path, tmp_path: Path) -> None:
    bad = copy.deepcopy(doc)
    for path, value in mutations:
        _set(bad, path, value)
    pfile = tmp_path / "bad.json"
    pfile.write_text(json.dumps(bad))
    for argv in (("validate", pfile), ("predict", pfile, table, "-o", tmp_path / "out.csv", "-q")):
        code, out, err = _main(*argv)
        errors = [line for line in err.splitlines() if line.startswith("ERROR")]
        assert code == 2, (argv[0], code, out, err)
        assert "internal error" not in err and len(errors) == 1, (argv[0], err)
        assert errors[0].startswith(f"ERROR: {pfile}: "), (argv[0], errors[0])
        assert expect in errors[0], (argv[0], errors[0])
    assert not (tmp_path / "out.csv").exists()


@pytest.mark.parametrize("mutations, expect", [c[1:] for c in IPP_CASES], ids=[c[0] for c in IPP_CASES])
def test_ipp_thermal_timing_mutation_refused(ipp_file, mutations, expect, tmp_path):
    doc, table = ipp_file
    _check_refused(doc, mutations, expect, table, tmp_path)


@pytest.mark.parametrize("mutations, expect", [c[1:] for c in DVFS_CASES], ids=[c[0] for c in DVFS_CASES])
def test_dvfs_mutation_refused(dvfs_file, mutations, expect, tmp_path):
    doc, table = dvfs_file
    _check_refused(doc, mutations, expect, table, tmp_path)


def test_unmutated_files_still_valid_and_predict(ipp_file, dvfs_file, tmp_path):
    for name, (doc, table) in (("ipp", ipp_file), ("dvfs", dvfs_file)):
        pfile = tmp_path / f"{name}.json"
        pfile.write_text(json.dumps(doc))
        code, out, err = _main("validate", pfile)
        assert code == 0, err
        assert f"{pfile}: valid (schema 1.2" in out  # 1.2: the shared-activation term (issue 29)
        code, _, err = _main("predict", pfile, table, "-o", tmp_path / f"{name}.csv", "-q")
        assert code == 0, err


@pytest.mark.parametrize("verb", ["validate", "predict", "diff"])
def test_directory_as_params_is_bad_input(verb, ipp_file, tmp_path):
    _, table = ipp_file
    pdir = tmp_path / "fitted"
    pdir.mkdir()
    argv = {"validate": ("validate", pdir), "predict": ("predict", pdir, table, "-o", tmp_path / "o.csv"),
            "diff": ("diff", pdir, pdir)}[verb]
    code, _, err = _main(*argv)
    assert code == 2, err
    assert err.strip() == f"ERROR: {pdir}: is a directory, not a parameter file (give the .json file written by calib fit)"
    assert not (tmp_path / "o.csv").exists()
