"""Compile every kernel for sm_70 (NVRTC 12), sm_80 and sm_90 (nvcc 13) and check its PTX.

These tests need the CUDA toolchains (see microbench/toolchain.py). A missing toolchain skips the
tests of that architecture, unless MICROBENCH_REQUIRE_TOOLCHAINS=1 (set it in CI) makes it fail them.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from microbench import toolchain
from microbench.__main__ import main
from microbench.kernels import catalog
from microbench.toolchain import KernelCompiler, ToolchainError, Toolchains
from microbench.verify import arch_info, check_compiled, verify

ARCHS = ("sm_70", "sm_80", "sm_90")


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    env = os.environ.get("MICROBENCH_PTX_CACHE")
    return Path(env) if env else tmp_path_factory.mktemp("ptx-cache")


@pytest.fixture(scope="session")
def toolchains() -> Toolchains:
    return Toolchains()


@pytest.fixture(scope="session")
def compiler(toolchains: Toolchains, cache_dir: Path) -> KernelCompiler:
    return KernelCompiler(toolchains, cache_dir)


def _need(toolchains: Toolchains, arch: str) -> None:
    try:
        toolchains.for_arch(arch)
    except ToolchainError as e:
        if os.environ.get("MICROBENCH_REQUIRE_TOOLCHAINS") == "1":
            raise
        pytest.skip(str(e))


@pytest.fixture(scope="session")
def checks(compiler: KernelCompiler, toolchains: Toolchains) -> dict:
    out = {}
    for a in ARCHS:
        try:
            toolchains.for_arch(a)
        except ToolchainError:
            continue
        out[a] = {c.kernel: c for c in verify((a,), compiler=compiler, jobs=2)}
    return out


@pytest.mark.parametrize("arch", ARCHS)
def test_every_kernel_passes_and_loops_match_the_count_model(arch: str, checks: dict, toolchains: Toolchains) -> None:
    _need(toolchains, arch)
    res = checks[arch]
    assert set(res) == set(catalog.KERNELS)
    for name, c in res.items():
        assert c.ok, (name, c.problems)
        assert c.loops_match, (name, c.loops_ptx, c.loops_model)
        assert len(c.loops_ptx) == len(catalog.get(name).loop_models(c.params))
        assert c.spill_stores_bytes == 0 and c.spill_loads_bytes == 0, name
        if c.share is not None:
            assert c.share >= catalog.get(name).min_share, name
    assert res["fp32_fma"].share >= 0.9 and res["fp32_fma"].loops_ptx[0]["fp"] == 64
    assert res["tensor"].loops_ptx[0]["tensor"] == 64


@pytest.mark.parametrize("arch", ARCHS)
def test_per_warp_model_agrees_with_ptx_for_a_whole_launch(arch: str, checks: dict, toolchains: Toolchains) -> None:
    # prologue + trips x loop bodies from the PTX, against spec.per_warp: exact for the loops, and the
    # prologue constant (taken from sm_80) within 0.1 % of a launch on every architecture
    _need(toolchains, arch)
    for name, c in checks[arch].items():
        spec = catalog.get(name)
        ptx_total: dict[str, float] = dict(c.prologue_ptx)
        for lm, counts in zip(spec.loop_models(c.params), c.loops_ptx):
            for k, v in counts.items():
                ptx_total[k] = ptx_total.get(k, 0.0) + lm.trips * v
        model = spec.per_warp(c.params)
        merged = {}
        for k, v in model.items():
            k2 = spec.merge_classes.get(k, k)
            merged[k2] = merged.get(k2, 0.0) + v
        total_model, total_ptx = sum(merged.values()), sum(ptx_total.values())
        assert abs(total_model - total_ptx) <= 1e-3 * total_model + (0 if arch == "sm_80" else 50), name
        if arch == "sm_80":
            assert c.prologue_ptx == c.prologue_model, name
            assert {k: v for k, v in merged.items() if v} == pytest.approx(ptx_total), name


VARIANTS = {
    "fp32_fma": {"unroll": 4, "ilp": 2},
    "fp64_fma": {"unroll": 2, "ilp": 8},
    "alu_logic": {"unroll": 1, "ilp": 1},
    "reg_mov": {"live_regs": 32, "ilp": 2, "unroll": 2},
    "shared": {"conflict_ways": 8, "ilp": 2},
    "const": {"unroll": 8, "ilp": 1},
    "dram": {"unroll": 8, "ilp": 2},
    "local": {"local_words": 512, "ilp": 1},
    "fma_intensity": {"k": 0, "unroll": 4},
    "tensor": {"ilp": 1, "unroll": 8},
    "mix": {"fp": 3, "dp": 0.5, "int": 2, "sfu": 0.5, "alu": 3, "shared": 3, "const": 1.5, "tex": 1, "l1": 0.5,
            "l2": 2, "global": 1.5, "unroll": 2, "ilp": 3, "coalesced": False},
    "pchase_l2": {"unroll": 4},
    "departure_delay": {"reqs": 3, "lane_stride": 32},
}


@pytest.mark.parametrize("arch", ("sm_70", "sm_80"))
def test_non_default_parameters_still_match(arch: str, compiler: KernelCompiler, toolchains: Toolchains) -> None:
    _need(toolchains, arch)
    res = verify((arch,), list(VARIANTS), compiler=compiler, jobs=2, overrides=VARIANTS)
    for c in res:
        assert c.loops_match, (c.kernel, c.problems)
        # short loops (small unroll x ilp) may fall below the share threshold: nothing else may fail
        assert all("of the hot loop's instructions, below" in p for p in c.problems), (c.kernel, c.problems)
    by = {c.kernel: c for c in res}
    assert by["fma_intensity"].loops_ptx[0]["fp"] == 4 * 4 * 1  # k = 0: one accumulate per element
    assert by["reg_mov"].loops_ptx[0]["alu"] == 2 * 3 * 32 + 1


def test_the_campaigns_training_mixes_are_real_kernels(compiler: KernelCompiler, toolchains: Toolchains) -> None:
    """Every multi-unit training mix of the standard campaign (microbench.benchmarks.TRAINING_MIXES, with
    every class on a GPU that has them all) compiles, and its PTX loop has the counts its model says."""
    _need(toolchains, "sm_80")
    from microbench.benchmarks import plan
    from microbench.devices.sim.presets import get_preset

    spec = catalog.get("mix")
    benches = {b.name.split("/")[0]: b for b in plan(get_preset("titanx").device_info(), "standard")[1]
               if b.name.startswith("train_")}
    assert len(benches) == 6
    for name, b in benches.items():
        p = spec.params(**b.params)
        c = check_compiled(spec, p, compiler.compile(spec.source, spec.compile_macros(p), "sm_80"), arch_info("sm_80"))
        assert c.ok and c.loops_match, (name, c.problems, c.loops_ptx, c.loops_model)
        assert c.spill_stores_bytes == 0, name
        assert all(c.loops_ptx[0].get(k, 0) >= v * p["unroll"] for k, v in b.params.items() if k != "ilp"), name


def _check_mixes(compiler: KernelCompiler, arch: str, mixes: dict[str, dict]) -> dict:
    """check_compiled of the ``mix`` kernel at each parameter set, two compiles at a time."""
    import concurrent.futures as cf

    spec = catalog.get("mix")

    def one(params: dict):
        p = spec.params(**params)
        return check_compiled(spec, p, compiler.compile(spec.source, spec.compile_macros(p), arch), arch_info(arch))

    with cf.ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(mixes, pool.map(one, mixes.values())))


def _off_the_model(res: dict) -> dict:
    # per mix that does not compile to its model: the classes where PTX and model differ, (PTX, model)
    off = {}
    for name, c in res.items():
        if not (c.ok and c.loops_match):
            ptx, model = (c.loops_ptx or [{}])[0], (c.loops_model or [{}])[0]
            off[name] = {k: (ptx.get(k, 0), model.get(k, 0)) for k in sorted(set(ptx) | set(model))
                         if ptx.get(k, 0) != model.get(k, 0)} or c.problems
    return off


@pytest.mark.parametrize("arch", ("sm_70", "sm_80"))
def test_every_adaptive_design_candidate_compiles_to_its_count_model(arch: str, compiler: KernelCompiler,
                                                                     toolchains: Toolchains) -> None:
    """Every distinct mix ``calib run --design adaptive`` may choose (calib.fit.design.candidates: each
    design class alone, each pair at 1:1, 3:1, 1:3) compiles to a loop with, class by class, the counts
    of the mix kernel's model: what the virtual GPU runs and the fit is given for its rows. (Before the
    mix kernel's invariants were opaque to the compiler, 51 of the 117 were 1-3 ALU/INT off per trip.)"""
    _need(toolchains, arch)
    from calib.fit.design import DESIGN_CLASSES, candidates
    from microbench.benchmarks import design_benchmark

    mixes: dict[str, dict] = {}
    for cand in candidates(DESIGN_CLASSES, max_warps=64):
        mixes.setdefault(cand.name.split("/")[0], design_benchmark(cand.entry()).params)
    assert len(mixes) == 9 + 36 * 3
    res = _check_mixes(compiler, arch, mixes)
    off = _off_the_model(res)
    assert off == {}, f"{len(off)} of {len(res)} design mixes off their count model, per trip (PTX, model): {off}"
    for name, c in res.items():
        assert c.spill_stores_bytes == 0, name
        # the model's per-trip counts hold the mix's own instructions (per-step count x unroll)
        p = catalog.get("mix").params(**mixes[name])
        assert all(c.loops_ptx[0].get(k, 0) >= n for k, n in catalog.mix_per_trip_ops(p).items()), name


@pytest.mark.parametrize("arch", ("sm_70", "sm_80"))
def test_every_mix_of_the_standard_campaign_compiles_to_its_count_model(arch: str, compiler: KernelCompiler,
                                                                         toolchains: Toolchains) -> None:
    """Every ``mix`` kernel the standard campaign runs on a GPU with every class (the training mixes, the
    held-out mixes, the timing plan's issue_mix) is a real kernel with its model's counts: before the
    mix kernel's invariants were opaque, app_histogram and issue_mix were 2-7 ALU/INT per trip off."""
    _need(toolchains, arch)
    from microbench.benchmarks import plan
    from microbench.devices.sim.presets import get_preset

    mixes: dict[str, dict] = {}
    for b in plan(get_preset("titanx").device_info(), "standard")[1]:
        if b.kernel == "mix":
            mixes.setdefault(b.name.split("@")[0].split("/")[0], dict(b.params))
    assert len(mixes) == 6 + 8 + 1  # training, held-out, issue_mix
    off = _off_the_model(_check_mixes(compiler, arch, mixes))
    assert off == {}, f"{len(off)} of {len(mixes)} campaign mixes off their count model, per trip (PTX, model): {off}"


# -- kernels that stop stressing their unit must fail -------------------------------------------

@pytest.fixture()
def kernel_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "kernels"
    shutil.copytree(toolchain.KERNEL_DIR, d, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    monkeypatch.setattr(toolchain, "KERNEL_DIR", d)
    return d


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def _check(name: str, compiler: KernelCompiler, arch: str = "sm_80", **overrides):
    spec = catalog.get(name)
    p = spec.params(**{**spec.verify_params, **overrides})
    return check_compiled(spec, p, compiler.compile(spec.source, spec.compile_macros(p), arch), arch_info(arch))


def test_loop_folded_away_fails(kernel_copy: Path, toolchains: Toolchains) -> None:
    _need(toolchains, "sm_80")
    # a loop-invariant body: the compiler deletes the loop
    _edit(kernel_copy / "fp32.cu", "for (int j = 0; j < ILP; ++j) x[j] = fmaf(x[j], x[j], fa);",
          "for (int j = 0; j < ILP; ++j) x[j] = fmaf(fa, fa, fb);")
    c = _check("fp32_fma", KernelCompiler(toolchains))
    assert not c.ok
    assert "PTX has 0 loop(s), the count model 1 (a loop was folded away or added)" in c.problems


def test_fma_replaced_by_mul_fails_the_share(kernel_copy: Path, toolchains: Toolchains) -> None:
    _need(toolchains, "sm_80")
    # still FP32 and still one instruction per step, but no longer fma.rn.f32
    _edit(kernel_copy / "fp32.cu", "for (int j = 0; j < ILP; ++j) x[j] = fmaf(x[j], x[j], fa);",
          "for (int j = 0; j < ILP; ++j) x[j] = __fmul_rn(x[j], fa);")
    c = _check("fp32_fma", KernelCompiler(toolchains))
    assert not c.ok
    assert any(p.startswith("fma.rn.f32 is 0.0% of the hot loop's instructions, below 90%") for p in c.problems)


def test_partly_folded_body_fails_the_count_model(kernel_copy: Path, toolchains: Toolchains) -> None:
    _need(toolchains, "sm_80")
    # two chains collapse into one: half the FMAs of the model
    _edit(kernel_copy / "fp32.cu", "for (int j = 0; j < ILP; ++j) x[j] = fmaf(x[j], x[j], fa);",
          "for (int j = 0; j < ILP; ++j) x[j] = fmaf(x[j & ~1], x[j & ~1], fa);")
    c = _check("fp32_fma", KernelCompiler(toolchains))
    assert not c.ok
    assert any(p.startswith("loop 1 per trip: PTX") and "fp=32" in p and "model" in p for p in c.problems)


def test_dram_loads_without_cg_fail(kernel_copy: Path, toolchains: Toolchains) -> None:
    _need(toolchains, "sm_80")
    _edit(kernel_copy / "mem.cu", "void dram_stream(MB_PARAMS) { load_pairs<MB_CG>",
          "void dram_stream(MB_PARAMS) { load_pairs<MB_CA>")
    c = _check("dram", KernelCompiler(toolchains))
    assert any(p.startswith("load without .cg at PTX line") for p in c.problems)


def test_dram_working_set_must_exceed_l2(compiler: KernelCompiler, toolchains: Toolchains) -> None:
    _need(toolchains, "sm_80")
    c = _check("dram", compiler, footprint_bytes=1 << 24)
    assert ("working set 16777216 B does not satisfy >l2 on A100 (L1 196608 B, L2 41943040 B)" in c.problems)
    assert _check("dram", compiler).ok
    l2 = _check("l2", compiler, footprint_bytes=1 << 17)
    assert any("does not satisfy l1<f<=l2" in p for p in l2.problems)


def test_unstressed_kernel_fails(kernel_copy: Path, toolchains: Toolchains) -> None:
    _need(toolchains, "sm_70")
    # the SFU chain replaced by FP32 arithmetic: the count model and the share both fail
    _edit(kernel_copy / "sfu.cu", "float y = __cosf(x[j]);", "float y = x[j] * 0.5f + 0.25f;")
    c = _check("sfu", KernelCompiler(toolchains), arch="sm_70")
    assert not c.ok and not c.loops_match


# -- toolchain selection and the command line ----------------------------------------------------

def test_missing_toolchain_names_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(toolchain, "find_nvcc", lambda: None)
    monkeypatch.setattr(toolchain, "find_nvrtc_libs", list)
    tc = Toolchains()
    with pytest.raises(ToolchainError, match=r"no toolchain for sm_70 \(found: none\)\. sm_70 needs CUDA 12 or "
                                             r"older: install NVRTC and ptxas from CUDA 12 \(pip install "
                                             r"nvidia-cuda-nvrtc-cu12 nvidia-cuda-nvcc-cu12\)"):
        tc.for_arch("sm_70")
    with pytest.raises(ToolchainError, match="no toolchain for sm_90"):
        verify(("sm_90",), compiler=KernelCompiler(tc))


def test_toolchain_choice_per_arch(toolchains: Toolchains) -> None:
    _need(toolchains, "sm_70")
    _need(toolchains, "sm_80")
    c70 = toolchains.for_arch("sm_70")
    assert c70.version[0] <= 12 and c70.ptxas.version[0] <= 12
    c80 = toolchains.for_arch("sm_80")
    if c80.name == "nvcc":
        assert c80.describe().startswith("nvcc ")


def test_cli_prints_the_table(capsys: pytest.CaptureFixture, cache_dir: Path, toolchains: Toolchains) -> None:
    _need(toolchains, "sm_80")
    rc = main(["verify", "--arch", "sm_80", "--kernel", "fp32_fma", "--kernel", "dram", "--cache-dir", str(cache_dir)])
    out = capsys.readouterr().out
    assert rc == 0
    lines = out.splitlines()
    assert lines[0].startswith("sm_80 (")
    assert lines[1].split() == ["kernel", "unit", "share", "min", "regs", "spill", "st/ld", "loop=model", "result"]
    fma = next(line for line in lines if line.startswith("fp32_fma"))
    assert fma.split()[1] == "fp" and fma.split()[-1] == "ok" and fma.split()[-2] == "yes"
    assert float(fma.split()[2].rstrip("%")) >= 90.0
    assert lines[-1] == "2 passed, 0 failed, 0 skipped"


def test_cli_bad_input(capsys: pytest.CaptureFixture) -> None:
    assert main(["verify", "--arch", "ampere"]) == 2
    assert "ERROR: --arch: not a CUDA or AMD GPU architecture: 'ampere' (expected e.g. sm_80 or gfx90a)" in \
        capsys.readouterr().err
    assert main(["verify", "--kernel", "nope"]) == 2
    assert "ERROR: --kernel: unknown kernel(s) nope" in capsys.readouterr().err


def test_cli_missing_toolchain_exit_1(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setattr(toolchain, "find_nvcc", lambda: None)
    monkeypatch.setattr(toolchain, "find_nvrtc_libs", list)
    assert main(["verify", "--arch", "sm_70"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("ERROR: no toolchain for sm_70") and "nvidia-cuda-nvrtc-cu12" in err


def test_intensity_extremes_compile_to_the_model(compiler: KernelCompiler, toolchains: Toolchains) -> None:
    # the ends of the mixbench sweep: k = 256 dependent FMAs per element, and k = 1
    _need(toolchains, "sm_70")
    res = verify(("sm_70",), ["fma_intensity"], compiler=compiler, overrides={"fma_intensity": {"k": 256}})
    assert res[0].loops_match and res[0].loops_ptx[0]["fp"] == 16 * 4 * 257
    res = verify(("sm_70",), ["fma_intensity"], compiler=compiler, overrides={"fma_intensity": {"k": 1}})
    assert res[0].ok and res[0].loops_ptx[0]["fp"] == 16 * 4 * 2
