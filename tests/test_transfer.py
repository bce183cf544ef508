"""Host-device copies: the virtual GPU's PCIe link, the copy sweep in the campaign, the transfer fit
checked against the link's truth (values and both standard errors), the copy breakdown of kernels."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from calib.cli import main
from calib.core.params import ParameterFile, load
from calib.core.session import read_session
from calib.fit.transfer import TransferFitter
from calib.segment import transfer_table
from calib.model import transfer as X
from microbench.campaign import Campaign
from microbench.devices.sim import pcie
from microbench.devices.sim.device import open_sim
from microbench.transfer_plan import SIZES, transfer_benchmarks


@pytest.fixture(scope="module")
def gtx580_session(tmp_path_factory):
    d = tmp_path_factory.mktemp("copies") / "s"
    dev = open_sim("sim:gtx580")
    Campaign(dev, "standard").run(d)
    return d, dev.preset


def test_link_physics_is_not_the_model():
    link = open_sim("sim:gtx580").preset.pcie
    # pinned: a staircase in the size (one descriptor per 2 MiB chunk), not a line
    t = [pcie.copy(link, n, "h2d", True).time_s for n in (2 << 20, (2 << 20) + 1)]
    assert t[1] - t[0] == pytest.approx(link.dma_desc_s, rel=1e-3)
    # pageable: below one staging chunk nothing overlaps; far above it the slower stage sets the pace
    small = pcie.copy(link, 4096, "h2d", False)
    assert small.memcpy_s > 0 and small.time_s > pcie.copy(link, 4096, "h2d", True).time_s
    big = [pcie.copy(link, n, "h2d", False).time_s for n in (256 << 20, 512 << 20)]
    assert (256 << 20) / (big[1] - big[0]) == pytest.approx(link.host_memcpy_bytes_per_s, rel=1e-3)
    # h2d are DMA reads: a lower share of the wire than d2h
    assert link.dma_rate("h2d") < link.dma_rate("d2h")


def test_campaign_runs_the_copy_sweep(gtx580_session):
    d, _ = gtx580_session
    sess = read_session(d)
    plan = sess.manifest["transfer_plan"]
    assert [p["name"] for p in plan] == [t.name for t in transfer_benchmarks("standard")]
    assert len(plan) == 4 * len(SIZES["standard"])
    table = transfer_table(sess)
    assert len(table) == 2 * len(plan)  # two repeats in the standard campaign
    assert set(table["host_memory"]) == {"pinned", "pageable"} and set(table["direction"]) == {"h2d", "d2h"}
    # a large copy raises the board power by watts; its idle reference is the idle board
    big = table[table["bytes"] == table["bytes"].max()]
    assert ((big["power_w"] - big["ref_power_w"]) > 2.0).all()


def test_transfer_fit_recovers_the_link(gtx580_session):
    """Bandwidths and energies per byte within 5 % of the link's truth; every parameter within 2 total
    standard errors of its truth (the statistical one is never larger than the total one)."""
    d, preset = gtx580_session
    sec = TransferFitter().fit(transfer_table(read_session(d))).section_
    truth = pcie.truth(preset.pcie, preset)
    for name, p in sec.params.items():
        if name not in truth:
            continue
        t = truth[name]
        if name.startswith(("bandwidth_", "energy_")):
            assert p.value == pytest.approx(t, rel=0.05), name
        assert p.stderr is not None and p.stderr_total >= p.stderr
        assert abs(p.value - t) <= 2.0 * p.stderr_total, (name, p.value, t, p.stderr_total)
    assert sec.settings == {"min_bytes": float(4 << 20), "min_sizes": 3, "stream_share": 0.8}


def test_session_fit_writes_a_valid_transfer_section(gtx580_session, tmp_path):
    d, _ = gtx580_session
    out = tmp_path / "p.json"
    assert main(["fit", str(d), "-o", str(out)]) == 0
    pf = load(out)
    assert pf.model_of("transfer") == "pcie"
    assert X.link_power_w(pf["transfer"], "h2d") == pytest.approx(
        pf["transfer"].value("energy_h2d_j_per_byte") * pf["transfer"].value("bandwidth_h2d_pinned_bytes_per_s"))
    doc = json.loads(out.read_text())
    assert set(doc["fit"]["transfer"]["stderr"]) >= {"bandwidth_h2d_pinned_bytes_per_s", "energy_d2h_j_per_byte"}
    # a transfer section with a zero bandwidth is refused, naming the field
    doc["transfer"]["parameters"]["bandwidth_d2h_pageable_bytes_per_s"]["value"] = 0.0
    doc["transfer"]["parameters"]["bandwidth_d2h_pageable_bytes_per_s"]["min"] = 0.0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    assert main(["validate", str(bad)]) == 2


def test_fit_refuses_too_few_sizes(gtx580_session):
    d, _ = gtx580_session
    table = transfer_table(read_session(d))
    from calib.core.errors import FitError

    with pytest.raises(FitError, match="h2d copies from pinned memory: 2 sizes of at least 4.1943e[+]06 bytes"):
        TransferFitter().fit(table[table["bytes"] <= (16 << 20)])
