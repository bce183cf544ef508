"""The virtual fleet: sim:<preset>@<serial> units with seeded manufacturing variation and planted defects."""

from __future__ import annotations

import math

import pytest

from calib.core.errors import DeviceNotFoundError
from microbench.devices import open_device
from microbench.devices.sim.fleet import (
    SIGMA_DYN,
    apply_variation,
    planted_defect,
    variation,
)
from microbench.devices.sim.presets import get_preset


def test_units_have_their_own_identity_and_the_spec_resolves():
    a, b = open_device("sim:gtx280@3"), open_device("sim:gtx280@4")
    assert (a.info.uuid, b.info.uuid) == ("SIM-gtx280@3", "SIM-gtx280@4")
    assert a.info.extra["preset"] == "gtx280@3"
    assert a.info.name == open_device("sim:gtx280").info.name  # same chip: one fleet
    assert a.preset.extra["fleet"]["serial"] == 3 and a.preset.extra["fleet"]["base_preset"] == "gtx280"


@pytest.mark.parametrize("spec", ["sim:gtx280@", "sim:gtx280@x1", "sim:gtx280@-1", "sim:gtx280@99999999999",
                                  "sim:nosuch@1"])
def test_bad_unit_specs_are_refused_with_the_name(spec):
    with pytest.raises(DeviceNotFoundError) as e:
        open_device(spec)
    assert spec.split(":", 1)[1] in str(e.value) or "nosuch" in str(e.value)


def test_variation_is_a_function_of_the_serial_alone():
    assert variation(17) == variation(17)
    assert variation(17) != variation(18)
    vs = [variation(s) for s in range(400)]
    dyn = [math.log(v.dyn) for v in vs]
    mean = sum(dyn) / len(dyn)
    sd = math.sqrt(sum((x - mean) ** 2 for x in dyn) / (len(dyn) - 1))
    assert abs(mean) < 0.01 and abs(sd - SIGMA_DYN) < 0.006


def test_planted_defects_are_a_few_and_cycle_through_the_kinds():
    planted = {s: planted_defect(s) for s in range(64) if planted_defect(s)}
    assert planted == {11: "leaky", 27: "hot", 43: "hungry", 59: "slow-memory"}


def test_variation_transforms_the_physics_and_leaves_the_preset_alone():
    base = get_preset("gtx280")
    v = variation(43)  # hungry: dynamic power x 1.5 on top of its variation
    u = apply_variation(base, v)
    k = v.dyn * 1.5 * (1 + v.dv) ** 2
    assert u.power.units["fp"].max_power_w == pytest.approx(base.power.units["fp"].max_power_w * k)
    assert u.power.const_sm_w == pytest.approx(base.power.const_sm_w * k)
    assert u.power.leak_ref_w == pytest.approx(base.power.leak_ref_w * v.leak * (1 + v.dv) ** base.power.leak_v_exp)
    assert u.thermal.g_die_sink_w_per_c == pytest.approx(base.thermal.g_die_sink_w_per_c / v.r_th)
    assert base.power.units["fp"].max_power_w == 0.2  # untouched
    slow = get_preset("gtx280@59")
    assert slow.timing.dram_lat_a == pytest.approx(base.timing.dram_lat_a * 1.6)
    assert slow.extra["mem_l_cycles"] == pytest.approx(base.extra["mem_l_cycles"] * 1.6)


def test_ground_truth_follows_the_unit():
    from calib.fleet.score import ground_truth

    base, leaky, normal = ground_truth("gtx280"), ground_truth("gtx280@11"), ground_truth("gtx280@0")
    v0 = variation(0)
    assert normal["power.max_power_fp_w"]["value"] == pytest.approx(0.2 * v0.dyn * (1 + v0.dv) ** 2)
    # leakage x 3: idle power and the leakage slope rise well beyond the normal spread
    assert leaky["power.idle_power_w"]["value"] > base["power.idle_power_w"]["value"] + 25
    assert leaky["thermal.sigma_w_per_c"]["value"] > 2 * base["thermal.sigma_w_per_c"]["value"]
