"""fitted/: every shipped parameter set is valid against the schema; the hand-entered published sets
carry their citations and give the papers' numbers back."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calib.core import params as P

ROOT = Path(__file__).resolve().parents[1]
FITTED = ROOT / "fitted"
REFERENCE = sorted((FITTED / "reference").glob("*.json"))
SIM = sorted(p for p in FITTED.glob("sim-*.json") if not p.name.endswith(".recovery.json"))


def test_the_expected_files_are_there():
    assert [p.name for p in REFERENCE] == ["gtx280-ipp2010.json", "gtx580-hong2012.json"]
    assert [p.name for p in SIM] == ["sim-gtx280.json", "sim-gtx580.json", "sim-mi250x.json", "sim-mi300x.json",
                                     "sim-titanx.json"]


@pytest.mark.parametrize("path", REFERENCE + SIM, ids=lambda p: p.name)
def test_valid_against_the_schema(path, cli):
    P.load(path)  # raises SchemaError on any violation
    code, _out, err = cli("validate", path)
    assert code == 0, err


@pytest.mark.parametrize("path", REFERENCE, ids=lambda p: p.name)
def test_reference_sets_cite_their_source(path):
    doc = P.load(path).to_dict()
    prov = doc["provenance"]
    assert "Hong" in prov["citation"] and ("ISCA 2010" in prov["citation"] or "thesis" in prov["citation"])
    assert prov["sources"] == []
    for sec in ("power", "thermal"):
        for name, p in doc.get(sec, {}).get("parameters", {}).items():
            assert p["vary"] is False, name  # published, not fitted here
            assert ("Table" in p["description"] or "Sec." in p["description"] or "ASSUMED" in p["description"]
                    or "thesis" in p["description"]), name


@pytest.mark.parametrize("path", SIM, ids=lambda p: p.name)
def test_sim_sets_ship_with_samples_and_recovery(path):
    from calib.core.samples import read_samples

    doc = P.load(path).to_dict()
    stem = path.name[:-5]
    df = read_samples(path.with_name(stem + ".samples.csv"))
    assert len(df) >= doc["fit"]["power"]["n_samples"]
    rec = json.loads(path.with_name(stem + ".recovery.json").read_text())
    assert rec["preset"] == doc["device"]["preset"]
    assert doc["provenance"]["campaign"]["name"] == "standard"
    assert ("dvfs" in doc) == (doc["device"]["preset"] in ("titanx", "mi250x", "mi300x"))


def _row(units: list[str], active: dict[str, float], active_sms: float) -> dict:
    return {"workload": "k", **{f"act_{u}": active.get(u, 0.0) for u in units}, "active_sms": active_sms}


def test_gtx280_reference_gives_the_papers_numbers():
    from calib.model.predict import predict_power
    from calib.model.thermal import ThermalModel

    doc = P.load(FITTED / "reference" / "gtx280-ipp2010.json")
    units = list(doc["power"].structure["units"])
    fp = {"fp": 1.0, "reg": 1.0, "fds": 1.0}
    df = pd.DataFrame([_row(units, fp, 30), _row(units, fp, 1), _row(units, {}, 30)])
    p = predict_power(doc, df)
    # pure-FP kernel at AR 1: 83 + 30 x (0.813 + (0.2 + 0.3 + 0.5) x 1.001375) (thesis: "54.4 W runtime + 83 W idle")
    assert p[0] == pytest.approx(83 + 30 * (0.813 + 1.0 * 1.001375), abs=1e-9)
    assert p[0] == pytest.approx(137.43125, abs=1e-9)
    # one active SM: runtime x log10(alpha + 1.1), alpha = 8.9 / 30 -> 0.1451
    assert p[1] == pytest.approx(83 + 54.43125 * np.log10(8.9 / 30 + 1.1), abs=1e-9)
    assert p[2] == pytest.approx(83.0)  # every activity 0: idle
    tm = ThermalModel(doc["thermal"])
    # Max_temp rise for 100 W runtime power and memory intensity 0.2: 0.12 x 100 + 5.5 + 21.505 x 0.2
    assert float(tm.max_rise_c(100.0, 0.2)) == pytest.approx(21.801)
    assert tm.sigma == pytest.approx(10 / 22)


def test_gtx580_reference_gives_the_theses_numbers():
    from calib.model.predict import predict_power

    doc = P.load(FITTED / "reference" / "gtx580-hong2012.json")
    units = list(doc["power"].structure["units"])
    assert "alu" not in units and "local" not in units  # not published for GTX580
    df = pd.DataFrame([_row(units, {"fp": 1.0, "reg": 1.0, "fds": 1.0}, 1), _row(units, {}, 16)])
    p = predict_power(doc, df)
    # one SM: idle 27 + activation 64 + (1/16) x 16 x (1.1 + 0.8 + 0.6) x 1.001375; thesis: "jumps to 93 W"
    assert p[0] == pytest.approx(27 + 64 + 2.5 * 1.001375, abs=1e-9)
    assert abs(p[0] - 93.0) < 1.0
    assert p[1] == pytest.approx(27.0)


def test_fitted_readme_documents_every_file():
    text = (FITTED / "README.md").read_text()
    for p in REFERENCE + SIM:
        assert p.name in text, p.name


def test_gtx280_reference_max_temp_takes_the_cold_runtime_power():
    """Eq. 19: Max_temp = Idle_temp + mu x Runtime_power + lambda + rho x MemAccess_intensity, with the
    runtime power *without* the leakage's sigma x dT (the leakage follows the temperature, not the other way
    round). The pure-FP kernel's 54.43125 W by hand: 57 + 0.12 x 54.43125 + 5.5 = 69.03175 C whatever the
    row's measured temperature; computed from the leakage-corrected power, a row measured at 90 C read
    +0.12 x 10/22 x 33 = 1.8 C hotter (mutation M16)."""
    from calib.model.predict import predict_table

    doc = P.load(FITTED / "reference" / "gtx280-ipp2010.json")
    units = list(doc["power"].structure["units"])
    fp = {"fp": 1.0, "reg": 1.0, "fds": 1.0}
    df = pd.DataFrame([_row(units, fp, 30), _row(units, fp, 30)]).assign(temp_c=[57.0, 90.0])
    out = predict_table(doc, df)
    assert list(out["temp_c_pred"]) == [pytest.approx(57 + 0.12 * 54.43125 + 5.5, abs=1e-9)] * 2
