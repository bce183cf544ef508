"""Parameter files: schema, physical bounds, versioning, atomic writes, `calib validate`."""

from __future__ import annotations

import json

import pytest

from calib.core import params as P
from calib.core.errors import SchemaError
from calib.core.params import Covariance, Param, ParameterFile, Section


def _pf() -> ParameterFile:
    pf = ParameterFile.new({"name": "GPU", "sm_count": 30, "clocks": {"core_mhz": 1296.0, "mem_mhz": 1107.0}},
                           [{"path": "x.csv", "sha256": "0" * 64}], created_utc="2026-01-01T00:00:00Z")
    pf["power"] = Section("ipp", [Param("idle_power_w", 83.0, "W", 0.0, float("inf"), stderr=0.1),
                                  Param("sm_beta", 1.1, "1", 1.0001, 9.9, stderr=0.01),
                                  Param("ar_log_b", 1.0, "1", vary=False)],
                          {"sm_count": 30, "sm_scaling": "log", "units": {}},
                          {"n_samples": 10, "rmse_w": 0.5, "mape_pct": 0.4, "r2": 0.99})
    return pf


def _doc() -> dict:
    return _pf().to_dict()


def test_valid_document_round_trips(tmp_path):
    pf = _pf()
    pf.save(tmp_path / "p.json")
    back = P.load(tmp_path / "p.json")
    assert back.to_dict() == json.loads(json.dumps(pf.to_dict()))
    ps = back["power"].params
    assert ps["idle_power_w"].stderr == 0.1 and ps["ar_log_b"].vary is False
    assert back.to_dict()["fit"]["power"]["stderr"] == {"idle_power_w": 0.1, "sm_beta": 0.01}


def test_covariance_and_settings_round_trip_and_give_correlations(tmp_path):
    """Schema 1.1: a section keeps the fit's covariance (one row per line in the file, NaN as null) and
    the fitter's settings; correlations come from the covariance."""
    pf = _pf()
    sec = pf["power"]
    sec.covariance = Covariance(("idle_power_w", "sm_beta"), [[0.01, -0.0008], [-0.0008, 1e-4]])
    sec.settings = {"sm_scaling": "auto", "mem_units": ["global"]}
    pf.save(tmp_path / "p.json")
    text = (tmp_path / "p.json").read_text()
    assert "        [0.01, -0.0008],\n" in text and '"settings": {' in text
    back = P.load(tmp_path / "p.json")["power"]
    assert back.settings == {"sm_scaling": "auto", "mem_units": ["global"]}
    assert back.covariance.names == ("idle_power_w", "sm_beta")
    assert back.correlation("idle_power_w", "sm_beta") == pytest.approx(-0.8)
    nan_cov = Covariance(("idle_power_w",), [[float("nan")]])
    assert nan_cov.to_json() == {"names": ["idle_power_w"], "matrix": [[None]]}
    assert Covariance.from_json(nan_cov.to_json()).matrix[0, 0] != Covariance.from_json(nan_cov.to_json()).matrix[0, 0]


def test_block_covariance_of_independent_fits():
    ps = [Param("a", 1.0, "W", stderr=0.5), Param("b", 2.0, "W", stderr=None), Param("c", 3.0, "W", stderr=2.0),
          Param("d", 0.0, "W", vary=False)]
    cov = Covariance.from_blocks(ps, [Covariance(("a", "c"), [[0.25, 0.3], [0.3, 4.0]])])
    assert cov.names == ("a", "b", "c")
    m = cov.matrix
    assert m[0, 2] == 0.3 and m[2, 0] == 0.3 and m[0, 0] == 0.25 and m[1, 0] == 0.0
    assert m[1, 1] != m[1, 1]  # no standard error: unknown variance (NaN)


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
    _pf().save(p)
    before = p.read_bytes()
    bad = _pf()
    bad.schema_version = "9.1"
    with pytest.raises(SchemaError):
        bad.save(p)
    assert p.read_bytes() == before
    assert [x.name for x in tmp_path.iterdir()] == ["p.json"]  # no temporary left behind


def test_param_checks_bounds_at_construction():
    with pytest.raises(ValueError, match="min 2 >= max 1"):
        Param("x", 1.5, "W", 2, 1)
    with pytest.raises(ValueError, match=r"value 5 outside \[0, 1\]"):
        Param("x", 5, "W", 0, 1)


def test_calib_validate_cli(tmp_path, cli):
    p = tmp_path / "p.json"
    _pf().save(p)
    code, out, err = cli("validate", p)
    assert code == 0 and "valid (schema 1.2, device GPU, sections power, 3 parameters)" in out
    doc = json.loads(p.read_text())
    doc["schema_version"] = "2.0"
    p.write_text(json.dumps(doc))
    code, out, err = cli("validate", p)
    assert code == 2
    assert err.strip().splitlines() == [f"ERROR: {p}: schema_version '2.0' is not supported by this toolkit (it reads 1.x)"]
    p.write_text("{broken")
    code, out, err = cli("validate", p)
    assert code == 2 and "not valid JSON" in err and "Traceback" not in err


def test_malformed_covariance_is_refused_with_the_field_named():
    doc = _pf().to_dict()
    doc["fit"]["power"]["covariance"] = {"names": ["idle_power_w", "sm_beta"], "matrix": [[0.01]]}
    with pytest.raises(SchemaError, match=r"p.json: field fit/power: covariance of 2 parameters has 1 rows of lengths \[1\] \(expected 2 x 2\)"):
        P.ParameterFile.from_dict(doc, "p.json")
    doc["fit"]["power"]["covariance"] = {"names": ["idle_power_w"], "matrix": [["x"]]}
    with pytest.raises(SchemaError, match="field fit/power/covariance/matrix/0/0: 'x' is not of type"):
        P.validate(doc, "p.json")
