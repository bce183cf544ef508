"""The host-device copy outputs of `calib predict`, `calib optimize` and `calib report --kernels`, value by
value against a hand computation from the transfer section's parameters (fitted/sim-gtx580.json):

    t(d, m, B)     = latency_d_m + B / bandwidth_d_m                 (0 when B = 0)
    E_board(d, m)  = board_idle_power x t + energy_d_per_byte x B
    E_host(m)      = host_power_m x t
    ratio          = (t_h2d + t_d2h) / kernel time
    streams saving = min(copy time, kernel time) s and board idle power x that J
    pinned saving  = pageable minus pinned copy time and board energy (0 for a pinned kernel)

The kernel's time and energy are the timing and power models' (their own tests check them); here they
are read from the `time_s_pred`/`energy_j_pred` columns and the clock table.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

PARAMS = Path(__file__).resolve().parents[1] / "fitted" / "sim-gtx580.json"
MIB = 1 << 20
KERNELS = [
    {"name": "saxpy_like", "per_warp": {"fp": 2, "int": 4, "alu": 2, "global": 3},
     "launch": {"blocks": 4096, "threads_per_block": 256}, "bytes_h2d": 32 * MIB, "bytes_d2h": 16 * MIB,
     "host_memory": "pageable"},
    {"name": "sgemm_like", "per_warp": {"fp": 4096, "shared": 2048, "int": 256, "alu": 256, "global": 64},
     "launch": {"blocks": 1024, "threads_per_block": 256}, "ilp": 4, "bytes_h2d": 2 * MIB, "bytes_d2h": MIB,
     "host_memory": "pinned"},
    {"name": "h2d_only", "per_warp": {"fp": 64, "global": 8}, "launch": {"blocks": 256, "threads_per_block": 128},
     "bytes_h2d": 4096, "host_memory": "pageable"},
]


def _v(name: str) -> float:
    return json.loads(PARAMS.read_text())["transfer"]["parameters"][name]["value"]


def _t(d: str, m: str, nbytes: float) -> float:
    return _v(f"latency_{d}_{m}_s") + nbytes / _v(f"bandwidth_{d}_{m}_bytes_per_s") if nbytes > 0 else 0.0


def _board(d: str, m: str, nbytes: float) -> float:
    return _v("board_idle_power_w") * _t(d, m, nbytes) + _v(f"energy_{d}_j_per_byte") * nbytes


def expected(k: dict, kernel_time_s: float) -> dict[str, float]:
    """Every copy output of one kernel by hand (module docstring)."""
    m = k["host_memory"]
    h, d = k.get("bytes_h2d", 0), k.get("bytes_d2h", 0)
    tc = _t("h2d", m, h) + _t("d2h", m, d)
    tc_pin = _t("h2d", "pinned", h) + _t("d2h", "pinned", d)
    eb = _board("h2d", m, h) + _board("d2h", m, d)
    eb_pin = _board("h2d", "pinned", h) + _board("d2h", "pinned", d)
    overlap = min(tc, kernel_time_s)
    return {"copy_time_s": tc, "copy_energy_j": eb, "copy_host_energy_j": _v(f"host_power_{m}_w") * tc,
            "copy_compute_ratio": tc / kernel_time_s, "overlap_time_saving_s": overlap,
            "overlap_energy_saving_j": _v("board_idle_power_w") * overlap,
            "pinned_time_saving_s": 0.0 if m == "pinned" else tc - tc_pin,
            "pinned_energy_saving_j": 0.0 if m == "pinned" else eb - eb_pin}


@pytest.fixture
def kernels(tmp_path):
    p = tmp_path / "kernels.json"
    p.write_text(json.dumps(KERNELS))
    return p


def test_hand_values_are_not_trivial():
    # the figures the tests below compare: a pageable 48 MiB copy takes ~10 ms, and pinned memory saves
    # ~18 % of it; a copy of 4 KiB is mostly latency
    e = expected(KERNELS[0], 1e-4)
    assert 9e-3 < e["copy_time_s"] < 12e-3
    assert 0.1 < e["pinned_time_saving_s"] / e["copy_time_s"] < 0.3
    assert _t("h2d", "pageable", 4096) > 0.8e-4 * 2


def test_predict_copy_columns(cli, kernels, tmp_path):
    out = tmp_path / "pred.csv"
    code, stdout, err = cli("predict", PARAMS, kernels, "-o", out, "--no-intervals")
    assert code == 0, err
    assert ("copy_time_s_pred, copy_energy_j_pred, copy_compute_ratio_pred" in stdout)
    df = pd.read_csv(out).set_index("workload")
    assert list(df.index) == ["saxpy_like", "sgemm_like", "h2d_only"]
    for k in KERNELS:
        r = df.loc[k["name"]]
        kt = float(r["time_s_pred"])
        assert kt > 0
        for col, want in expected(k, kt).items():
            assert float(r[col + "_pred"]) == pytest.approx(want, rel=1e-9, abs=1e-15), (k["name"], col)
    # the pinned kernel saves nothing by pinning; the pageable ones do
    assert df.loc["sgemm_like", "pinned_time_saving_s_pred"] == 0.0
    assert df.loc["saxpy_like", "pinned_time_saving_s_pred"] > 0.0
    # a kernel with only an H2D copy has no D2H time: its copy is latency + bytes / bandwidth, exactly
    assert float(df.loc["h2d_only", "copy_time_s_pred"]) == pytest.approx(
        _v("latency_h2d_pageable_s") + 4096 / _v("bandwidth_h2d_pageable_bytes_per_s"), rel=1e-9)
    # SAXPY: the copies dwarf the kernel, so streams save the whole kernel time; SGEMM: the copies are
    # shorter than the kernel, so streams save the whole copy time
    assert df.loc["saxpy_like", "overlap_time_saving_s_pred"] == pytest.approx(df.loc["saxpy_like", "time_s_pred"], rel=1e-9)
    assert df.loc["sgemm_like", "overlap_time_saving_s_pred"] == pytest.approx(df.loc["sgemm_like", "copy_time_s_pred"],
                                                                               rel=1e-9)


def test_predict_copies_of_a_samples_table_with_measured_times(cli, tmp_path):
    """Rows with activities but no per-warp counts (no time prediction): the copy/compute ratio is
    against the row's measured time_s."""
    from calib.core.units import POWER_UNITS

    p = tmp_path / "rows.csv"
    acts = {f"act_{u}": [0.0, 0.0] for u in POWER_UNITS}
    acts.update({"act_fp": [0.6, 0.1], "act_global": [0.05, 0.7]})
    pd.DataFrame({"workload": ["a", "b"], "time_s": [2e-3, 5e-2], **acts,
                  "bytes_h2d": [8 * MIB, 0], "bytes_d2h": [0, 3 * MIB], "host_pinned": [1, 0]}).to_csv(p, index=False)
    out = tmp_path / "pred.csv"
    code, _, err = cli("predict", PARAMS, p, "-o", out, "--no-intervals")
    assert code == 0, err
    df = pd.read_csv(out)
    ka = {"host_memory": "pinned", "bytes_h2d": 8 * MIB}
    kb = {"host_memory": "pageable", "bytes_d2h": 3 * MIB}
    assert "time_s_pred" not in df.columns
    for i, (k, kt) in enumerate(((ka, 2e-3), (kb, 5e-2))):
        for col, want in expected(k, kt).items():
            assert float(df[col + "_pred"].iloc[i]) == pytest.approx(want, rel=1e-9, abs=1e-15), (i, col)
    # 8 MiB pinned in 2 ms of kernel: ratio ~0.7; 3 MiB pageable beside 50 ms: ~0.016
    assert 0.5 < df["copy_compute_ratio_pred"].iloc[0] < 1.0 and 0.01 < df["copy_compute_ratio_pred"].iloc[1] < 0.03


def test_optimize_prints_the_copy_breakdown(cli, tmp_path):
    k = tmp_path / "saxpy.json"
    k.write_text(json.dumps(KERNELS[0]))
    table = tmp_path / "clocks.csv"
    code, stdout, err = cli("optimize", PARAMS, k, "-o", table)
    assert code == 0, err
    base = pd.read_csv(table).query("default").iloc[0]
    kt, ke = float(base["time_s"]), float(base["energy_j"])
    e = expected(KERNELS[0], kt)
    want = [
        f"copies (pageable): {32 * MIB / 1e6:.4g} MB in, {16 * MIB / 1e6:.4g} MB out: {1e3 * e['copy_time_s']:.4g} ms, "
        f"{e['copy_energy_j']:.4g} J (board) + {e['copy_host_energy_j']:.4g} J (host)",
        f"kernel: {1e3 * kt:.4g} ms, {ke:.4g} J; copy/compute time ratio {e['copy_compute_ratio']:.3g}",
        f"overlapping copies with compute (streams) would save up to {1e3 * e['overlap_time_saving_s']:.4g} ms "
        f"and {e['overlap_energy_saving_j']:.4g} J of idle board energy",
    ]
    lines = stdout.splitlines()
    for w in want:
        assert w in lines, (w, stdout)
    pin = next(line for line in lines if line.startswith("pinned host memory would save"))
    host_pin = (_v("host_power_pageable_w") * e["copy_time_s"]
                - _v("host_power_pinned_w") * (_t("h2d", "pinned", 32 * MIB) + _t("d2h", "pinned", 16 * MIB)))
    assert pin == (f"pinned host memory would save {1e3 * e['pinned_time_saving_s']:.4g} ms and "
                   f"{e['pinned_energy_saving_j']:.4g} J (board) + {host_pin:.4g} J (host)")


def test_report_copy_section(cli, kernels, tmp_path):
    pred = tmp_path / "pred.csv"
    assert cli("predict", PARAMS, kernels, "-o", pred, "--no-intervals")[0] == 0
    p = pd.read_csv(pred).set_index("workload")
    out = tmp_path / "report"
    code, _, err = cli("report", PARAMS, "-o", out, "--kernels", kernels)
    assert code == 0, err
    html = (out / "index.html").read_text()
    assert "Host-device copies" in html

    def f(x: float, sig: int = 4) -> str:
        return f"{x:.{sig}g}"

    for k in KERNELS:
        r = p.loc[k["name"]]
        kt, ke = float(r["time_s_pred"]), float(r["energy_j_pred"])
        e = expected(k, kt)
        cells = [k["name"], k["host_memory"], f(k.get("bytes_h2d", 0) / 1e6), f(k.get("bytes_d2h", 0) / 1e6),
                 f(1e3 * e["copy_time_s"]), f(1e3 * kt), f(e["copy_compute_ratio"], 3), f(e["copy_energy_j"]), f(ke),
                 f(1e3 * e["overlap_time_saving_s"]), f(1e3 * e["pinned_time_saving_s"])]
        row = "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"
        assert row in html, (k["name"], row)
    # the link figures: pinned H2D bandwidth in GB/s and energy per byte in pJ/B, 4 significant digits
    assert f"<td>{_v('bandwidth_h2d_pinned_bytes_per_s') * 1e-9:.4g} &plusmn;" in html
    assert f"<td>{_v('energy_d2h_j_per_byte') * 1e12:.4g} &plusmn;" in html
    link_w = _v("energy_h2d_j_per_byte") * _v("bandwidth_h2d_pinned_bytes_per_s")
    assert f"<td>{link_w:.3g}</td>" in html


def test_timing_only_file_still_reports_the_copies(cli, kernels, tmp_path):
    """A parameter file with timing and transfer but no power section: time and copies, no energy of the
    kernel (the copies' board energy comes from the transfer section alone)."""
    doc = json.loads(PARAMS.read_text())
    for sec in ("power", "thermal", "thermal_network"):
        doc.pop(sec, None)
        doc["fit"].pop(sec, None)
    params = tmp_path / "timing_transfer.json"
    params.write_text(json.dumps(doc))
    out = tmp_path / "pred.csv"
    code, stdout, err = cli("predict", params, kernels, "-o", out, "--no-intervals")
    assert code == 0, err
    df = pd.read_csv(out).set_index("workload")
    assert "energy_j_pred" not in df.columns and "power_w_pred" not in df.columns
    for k in KERNELS:
        r = df.loc[k["name"]]
        for col, want in expected(k, float(r["time_s_pred"])).items():
            assert float(r[col + "_pred"]) == pytest.approx(want, rel=1e-9, abs=1e-15), (k["name"], col)
