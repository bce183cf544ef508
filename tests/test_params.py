"""Parameter files: schema, physical bounds, versioning, atomic writes, `calib validate`."""

from __future__ import annotations

import copy
import json

import pytest

from calib.core import params as P
from calib.core.errors import SchemaError
from calib.core.params import Param, SectionFit


def _doc() -> dict:
    doc = P.new_document({"name": "GPU", "sm_count": 30, "clocks": {"core_mhz": 1296.0, "mem_mhz": 1107.0}},
                         [{"path": "x.csv", "sha256": "0" * 64}], created_utc="2026-01-01T00:00:00Z")
    SectionFit("ipp", [Param("idle_power_w", 83.0, "W", 0.0, float("inf"), stderr=0.1),
                       Param("sm_beta", 1.1, "1", 1.0001, 9.9, stderr=0.01),
                       Param("ar_log_b", 1.0, "1", vary=False)],
               {"sm_count": 30, "sm_scaling": "log", "units": {}}, {"n_samples": 10, "rmse_w": 0.5, "mape_pct": 0.4, "r2": 0.99}).store(doc, "power")
    return doc


def test_valid_document_round_trips(tmp_path):
    doc = _doc()
    P.save(doc, tmp_path / "p.json")
    back = P.load(tmp_path / "p.json")
    assert back == json.loads(json.dumps(doc))
    ps = P.section_params(back, "power")
    assert ps["idle_power_w"].stderr == 0.1 and ps["ar_log_b"].vary is False
    assert back["fit"]["power"]["stderr"] == {"idle_power_w": 0.1, "sm_beta": 0.01}


@pytest.mark.parametrize("mutate,msg", [
    (lambda d: d.update(schema_version="2.0"), r"schema_version '2.0' is not supported by this toolkit \(it reads 1.x\)"),
    (lambda d: d.pop("schema_version"), "field 'schema_version' missing"),
    (lambda d: d.pop("device"), r"field \(top level\): 'device' is a required property"),
    (lambda d: d["device"].update(sm_count=0), "field device/sm_count: 0 is less than the minimum of 1"),
    (lambda d: d["power"]["parameters"]["idle_power_w"].update(value="83"), "field power/parameters/idle_power_w/value: '83' is not of type 'number'"),
    (lambda d: d["power"]["parameters"]["sm_beta"].update(value=12.0), r"power.parameters.sm_beta: value 12.0 above its maximum 9.9"),
    (lambda d: d["power"]["parameters"]["idle_power_w"].update(value=-1.0), "below its minimum 0.0"),
    (lambda d: d["fit"]["power"]["stderr"].update(idle_power_w=-1), "field fit/power/stderr/idle_power_w"),
    (lambda d: d["provenance"]["sources"][0].update(sha256="xyz"), "field provenance/sources/0/sha256"),
    (lambda d: d["power"]["parameters"]["idle_power_w"].update(colour=1), "Additional properties are not allowed"),
])
def test_bad_documents_are_refused_with_the_field_named(mutate, msg):
    doc = _doc()
    mutate(doc)
    with pytest.raises(SchemaError, match=msg):
        P.validate(doc, "p.json")


def test_validate_warns_about_bounds_and_missing_stderr():
    doc = _doc()
    doc["power"]["parameters"]["sm_beta"]["value"] = 9.9
    del doc["fit"]["power"]["stderr"]["idle_power_w"]
    warns = P.validate(doc)
    assert "power.parameters.sm_beta: at its max bound (9.9)" in warns
    assert "power.parameters.idle_power_w: no standard error in fit.power.stderr" in warns


def test_save_refuses_invalid_and_leaves_old_file(tmp_path):
    p = tmp_path / "p.json"
    P.save(_doc(), p)
    before = p.read_bytes()
    bad = copy.deepcopy(_doc())
    bad["schema_version"] = "9.1"
    with pytest.raises(SchemaError):
        P.save(bad, p)
    assert p.read_bytes() == before
    assert [x.name for x in tmp_path.iterdir()] == ["p.json"]  # no temporary left behind


def test_param_checks_bounds_at_construction():
    with pytest.raises(ValueError, match="min 2 >= max 1"):
        Param("x", 1.5, "W", 2, 1)
    with pytest.raises(ValueError, match=r"value 5 outside \[0, 1\]"):
        Param("x", 5, "W", 0, 1)


def test_calib_validate_cli(tmp_path, cli):
    p = tmp_path / "p.json"
    P.save(_doc(), p)
    code, out, err = cli("validate", p)
    assert code == 0 and "valid (schema 1.0, device GPU, sections power, 3 parameters)" in out
    doc = json.loads(p.read_text())
    doc["schema_version"] = "2.0"
    p.write_text(json.dumps(doc))
    code, out, err = cli("validate", p)
    assert code == 2
    assert err.strip().splitlines() == [f"ERROR: {p}: schema_version '2.0' is not supported by this toolkit (it reads 1.x)"]
    p.write_text("{broken")
    code, out, err = cli("validate", p)
    assert code == 2 and "not valid JSON" in err and "Traceback" not in err
