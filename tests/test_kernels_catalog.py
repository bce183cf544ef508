"""Count models and parameters of the kernel catalog (no compiler needed)."""

from __future__ import annotations

import pytest

from calib.core.errors import BadInputError
from calib.core.units import INSTRUCTION_CLASSES
from microbench.kernels import catalog

NAMES = ("idle", "fp32_fma", "fp32_addmul", "fp64_fma", "int_mad", "alu_logic", "sfu", "reg_mov", "ctrl",
         "shared", "const", "tex", "l1", "l2", "dram", "local", "fma_intensity", "tensor", "mix")


def test_campaign_kernel_names_are_all_there() -> None:
    for n in NAMES:
        assert catalog.get(n).name == n
    for n in ("pchase_l1", "pchase_l2", "pchase_dram", "pchase_shared", "bw_stream", "departure_delay"):
        assert catalog.get(n).name == n
    with pytest.raises(KeyError, match="unknown kernel 'nope'"):
        catalog.get("nope")


@pytest.mark.parametrize("name", list(catalog.KERNELS))
def test_per_warp_is_prologue_plus_trips_times_loops(name: str) -> None:
    spec = catalog.get(name)
    p = spec.params(**spec.verify_params)
    pw = spec.per_warp(p)
    assert set(pw) <= set(INSTRUCTION_CLASSES)
    expect = dict(spec.prologue)
    for lp in spec.loop_models(p):
        for k, v in lp.per_trip.items():
            expect[k] = expect.get(k, 0.0) + lp.trips * v
    assert pw == pytest.approx({k: v for k, v in expect.items() if v})


def test_fp32_fma_counts_scale_with_iters_unroll_ilp() -> None:
    spec = catalog.get("fp32_fma")
    p = spec.params(iters=100, unroll=8, ilp=2)
    assert spec.per_trip(p) == {"fp": 16.0, "int": 1.0, "alu": 1.0, "ctrl": 1.0}
    pw = spec.per_warp(p)
    assert pw["fp"] == 100 * 16 + spec.prologue["fp"]
    assert pw["ctrl"] == 100 * 1 + spec.prologue["ctrl"]
    assert spec.compile_macros(p) == {"UNROLL": 8, "ILP": 2}
    assert spec.kernel_traits(p)["ilp"] == 2.0


def test_fma_intensity_counts_k_fmas_per_element() -> None:
    spec = catalog.get("fma_intensity")
    for k in (0, 1, 8, 256):
        p = spec.params(k=k)
        trip = spec.per_trip(p)
        elems = p["unroll"] * p["ilp"]
        assert trip["global"] == elems
        assert trip["fp"] == elems * (k + 1)  # k FMAs and one accumulate per element
        assert spec.compile_macros(p)["K_FMA"] == k


def test_memory_kernels_move_two_lines_per_fma() -> None:
    for name, cls in (("l1", "l1"), ("l2", "l2"), ("dram", "global"), ("tex", "tex")):
        spec = catalog.get(name)
        trip = spec.per_trip(spec.params())
        assert trip[cls] == 2 * 16 * 4 and trip["fp"] == 16 * 4
        assert trip["int"] == 3 and trip["alu"] == 2 and trip["ctrl"] == 1


def test_mix_per_trip_counts_and_consumption() -> None:
    spec = catalog.get("mix")
    p = spec.params(fp=2, l1=1.5, const=0.25, unroll=4)
    trip = spec.per_trip(p)
    # l1: 6 loads over 4 steps (1,2,1,2) -> 1+1+1+1 consuming instructions; const: 1 load -> 1
    assert trip["l1"] == 6 and trip["const"] == 1
    assert trip["fp"] == 8 + 4 + 1
    macros = spec.compile_macros(p)
    assert macros["MIX_FP"] == 8 and macros["MIX_L1"] == 6 and macros["MIX_CONST"] == 1
    assert macros["MIX_LANE_STRIDE"] == 1
    assert spec.compile_macros(spec.params(coalesced=False))["MIX_LANE_STRIDE"] == 32


def test_mix_rejects_fraction_that_is_not_whole_per_trip() -> None:
    spec = catalog.get("mix")
    with pytest.raises(BadInputError, match=r"mix: global = 0.1 per step times unroll = 4 is 0.4 per trip"):
        spec.params(**{"global": 0.1})
    with pytest.raises(BadInputError, match="non-negative"):
        spec.params(fp=-1)


def test_heldout_mixes_of_the_campaign_are_valid() -> None:
    from microbench.benchmarks import HELDOUT_MIXES, _mix_params

    spec = catalog.get("mix")
    for name, mix in HELDOUT_MIXES.items():
        p = spec.params(**_mix_params(mix))
        assert spec.per_warp(p)["fp"] > 0, name


def test_unknown_and_bad_parameters() -> None:
    spec = catalog.get("fp32_fma")
    with pytest.raises(KeyError, match=r"fp32_fma: unknown parameters \['k'\]"):
        spec.params(k=3)
    with pytest.raises(BadInputError, match=r"fp32_fma: unknown parameters"):
        spec.params(k=3)
    with pytest.raises(BadInputError, match="ilp must be an integer in"):
        spec.params(ilp=0)
    with pytest.raises(BadInputError, match="iters must be an integer"):
        spec.params(iters=1.5)
    with pytest.raises(BadInputError, match="footprint_bytes must be a power of two >= the per-trip window of 16384"):
        catalog.get("dram").params(footprint_bytes=8192)
    with pytest.raises(BadInputError, match="conflict_ways must be"):
        catalog.get("shared").params(conflict_ways=3)


def test_pchase_iters_follow_footprint_and_passes() -> None:
    spec = catalog.get("pchase_l1")
    p = spec.params(footprint_bytes=4096, stride_bytes=64, passes=2, unroll=4)
    assert p["iters"] == 2 * 64 // 4
    assert spec.params(iters=7)["iters"] == 7
    loops = spec.loop_models(p)
    assert [lp.hot for lp in loops] == [False, True]
    assert loops[1].per_trip == {"l1": 4.0, "int": 1.0, "alu": 1.0, "ctrl": 1.0}


def test_runtime_args_are_fixed_by_parameters() -> None:
    assert catalog.get("int_mad").runtime_args(catalog.get("int_mad").params())["ia"] == catalog.LCG_A
    c = catalog.get("const")
    rt = c.runtime_args(c.params(footprint_bytes=2048))
    assert rt["ia"] == 2 * 16 * 4 and rt["ib"] == 2048 // 4 - 1
    d = catalog.get("dram")
    assert d.runtime_args(d.params())["foot_bytes"] == 1 << 30
