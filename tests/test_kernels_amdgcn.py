"""The kernels for AMD GPUs: the AMDGCN reader on real clang-19 transcripts, and every kernel compiled
for gfx90a, gfx942 and gfx1100 with the real clang and checked in its ISA.

The transcripts in tests/data/amdgcn_*.s are the real output of Debian's clang 19.1.7 for the kernels
(command in each file's first lines). The compile tests need clang 17 or newer (``apt-get install
clang-19``; .ci/run installs it): without it they skip, unless MICROBENCH_REQUIRE_TOOLCHAINS=1 (set in CI)
makes them fail. Expected counts are hand counts from the kernel sources (UNROLL x ILP x operations
per step), not the checker's output.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from microbench import amdgcn, toolchain
from microbench.__main__ import main
from microbench.kernels import catalog
from microbench.toolchain import KernelCompiler, ToolchainError, Toolchains
from microbench.verify import amd_params, arch_info, check_compiled_amd, verify

DATA = Path(__file__).parent / "data"
AMD_ARCHS = ("gfx90a", "gfx942", "gfx1100")


def _transcript(name: str) -> amdgcn.GcnModule:
    return amdgcn.parse((DATA / name).read_text())


def _hot(mod: amdgcn.GcnModule, kernel: str, which: int = -1) -> list[amdgcn.Instruction]:
    fn = mod.functions[kernel]
    _, loops = fn.main_path()
    return fn.body(loops[which])


def _n(body: list[amdgcn.Instruction], base: str) -> int:
    return sum(1 for ins in body if ins.base == base)


# -- the reader on real transcripts (no compiler needed) ------------------------------------------

def test_packed_fp32_fma_counts_twice_on_gfx90a() -> None:
    """Catches counting v_pk_fma_f32 once: fp32_fma does UNROLL 16 x ILP 4 = 64 FMAs per trip, which
    gfx90a packs two per instruction (32 words)."""
    body = _hot(_transcript("amdgcn_fp32_gfx90a.s"), "fp32_fma")
    assert _n(body, "v_pk_fma_f32") == 32 and len(body) == 35  # + s_add, s_cmp, s_cbranch
    assert amdgcn.counts(body, "gfx9") == {"fp": 64.0, "ctrl": 3.0}


def test_unfused_mad_counts_twice_on_gfx90a() -> None:
    """Catches counting gfx9's unfused v_mad_f32 once: fp32_addmul does 64 multiplies and 64 adds per
    trip (not contracted into FMAs: the pragma in fp32.cu); with FP32 denormals flushed, as CuPy
    compiles, clang gives 22 packed muls, 22 packed adds and 20 v_mad_f32 (a multiply and an add each):
    2 x 22 + 2 x 22 + 2 x 20 = 128."""
    addmul = _hot(_transcript("amdgcn_fp32_gfx90a.s"), "fp32_addmul")
    assert [_n(addmul, b) for b in ("v_pk_mul_f32", "v_pk_add_f32", "v_mad_f32", "v_pk_fma_f32", "v_fma_f32")] == [
        22, 22, 20, 0, 0]
    assert amdgcn.counts(addmul, "gfx9") == {"fp": 128.0, "ctrl": 3.0}


def test_vopd_halves_and_gfx11_hints() -> None:
    """Catches a VOPD word (``v_dual_mul_f32 ... :: v_dual_mul_f32 ...``) read as one instruction, and
    s_delay_alu counted as an operation: gfx1100 fp32_addmul has 64 mul + 64 add, all dual-issued."""
    mod = _transcript("amdgcn_fp32_gfx1100.s")
    body = _hot(mod, "fp32_addmul")
    assert (_n(body, "v_mul_f32"), _n(body, "v_add_f32")) == (64, 64)
    assert sum(ins.dual for ins in body) == 128 and all(ins.mnemonic.startswith("v_dual_") for ins in body
                                                         if ins.dual)
    assert amdgcn.counts(body, "gfx11") == {"fp": 128.0, "ctrl": 3.0}
    assert amdgcn.waits(body) == 32  # the s_delay_alu words, counted apart
    fma = _hot(mod, "fp32_fma")
    assert _n(fma, "v_fma_f32") == 64 and amdgcn.counts(fma, "gfx11")["fp"] == 64.0


def test_resources_from_the_code_object_metadata() -> None:
    """Catches reading the metadata of the wrong kernel (the YAML lists every kernel with nested args)."""
    mod = _transcript("amdgcn_fp32_gfx90a.s")
    assert mod.resources["fp32_fma"] == amdgcn.Resources(vgprs=6, sgprs=16, wave_size=64)
    lat = _transcript("amdgcn_latency_gfx942.s")
    assert lat.resources["pchase_shared"].lds_bytes == 32768  # __shared__ unsigned chain[8192]
    assert lat.resources["departure_delay"].vgprs == 18
    assert _transcript("amdgcn_fp32_gfx1100.s").resources["fp32_fma"].wave_size == 32


def test_rotated_loop_with_a_skipped_block_is_one_loop() -> None:
    """Catches the loop finder taking the `if (lane == 0)` store block of departure_delay for the loop
    end (s_cbranch_execz back to the latch, placed before the header) and the main path walking into
    the loop body from the preheader's s_branch (it did not terminate before)."""
    fn = _transcript("amdgcn_latency_gfx942.s").functions["departure_delay"]
    loops = fn.loops()
    assert len(loops) == 1
    body = fn.body(loops[0])
    # REQS = 8 loads, the sum of 8 values (8 adds with acc), two clock reads, one store of both stamps
    assert _n(body, "global_load_dword") == 8 and _n(body, "s_memtime") == 2
    assert _n(body, "global_store_dwordx4") == 1
    outside, entered = fn.main_path()
    assert entered == loops and outside[-1].mnemonic == "s_endpgm"
    assert not any(fn.instructions.index(i) in range(loops[0].start, loops[0].end + 1) for i in outside)


def _chase_is_vector_loads(mod: amdgcn.GcnModule) -> None:
    for kernel, policy in (("pchase_ca", frozenset()), ("pchase_cg", frozenset({"sc1"}))):
        for which in (0, 1):
            body = _hot(mod, kernel, which)
            loads = [i for i in body if i.base == "global_load_dwordx2"]
            assert len(loads) == 8 and all(i.policy == policy for i in loads), (kernel, which)
            assert not any(i.base.startswith("s_load") for i in body)


def test_pointer_chase_transcript_is_vector_loads_in_both_passes() -> None:
    _chase_is_vector_loads(_transcript("amdgcn_latency_gfx942.s"))


@pytest.mark.parametrize("text,gen,level,cls", [
    ("v_pk_fma_f32 v[4:5], v[4:5], v[4:5], s[2:3]", "gfx9", "dram", "fp"),
    ("v_fmac_f32_e32 v1, v2, v3", "gfx11", "dram", "fp"),
    ("v_fma_f64 v[0:1], v[0:1], v[0:1], s[2:3]", "gfx9", "dram", "dp"),
    ("v_rcp_f64_e32 v[0:1], v[2:3]", "gfx9", "dram", "dp"),
    ("v_mul_lo_u32 v4, v4, s0", "gfx9", "dram", "int"),
    ("v_add_co_ci_u32_e32 v2, vcc_lo, 0, v9, vcc_lo", "gfx11", "dram", "int"),
    ("v_mad_u64_u32 v[8:9], null, v7, s0, s[6:7]", "gfx11", "dram", "int"),
    ("v_exp_f32_e32 v1, v1", "gfx9", "dram", "sfu"),
    ("v_cos_f32_e32 v1, v1", "gfx11", "dram", "sfu"),
    ("v_mfma_f32_16x16x16f16 v[2:5], v[0:1], v[0:1], v[2:5]", "gfx9", "dram", "tensor"),
    ("v_wmma_f32_16x16x16_f16 v[0:7], v[8:15], v[16:23], v[0:7]", "gfx11", "dram", "tensor"),
    ("v_xor_b32_e32 v1, v5, v1", "gfx9", "dram", "alu"),
    ("v_cvt_f32_u32_e32 v3, v3", "gfx9", "dram", "alu"),
    ("v_cmp_eq_f32_e32 vcc, s2, v1", "gfx9", "dram", "alu"),
    ("s_add_i32 s7, s7, -1", "gfx9", "dram", "ctrl"),
    ("s_and_saveexec_b64 s[0:1], vcc", "gfx9", "dram", "ctrl"),
    ("s_cbranch_scc1 .LBB0_2", "gfx9", "dram", "ctrl"),
    ("s_nop 0", "gfx9", "dram", "ctrl"),
    ("s_load_dwordx16 s[36:51], s[30:31], 0x40", "gfx9", "dram", "const"),
    ("ds_read_b32 v2, v1 offset:128", "gfx9", "dram", "shared"),
    ("ds_store_b32 v1, v2 offset:128", "gfx11", "dram", "shared"),
    ("scratch_load_dwordx4 v[0:3], off, s0 offset:16", "gfx940", "dram", "local"),
    ("buffer_store_dword v1, off, s[0:3], 0 offset:4", "gfx9", "dram", "local"),
    # vector memory placed by the kernel's level and the cache policy, as for PTX
    ("global_load_dword v7, v6, s[2:3] offset:128", "gfx9", "l1", "l1"),
    ("global_load_dword v8, v6, s[2:3] offset:256 glc", "gfx9", "l1", "l2"),
    ("global_load_dword v8, v6, s[2:3] offset:256 sc1", "gfx940", "l1", "l2"),
    ("global_load_dword v8, v6, s[2:3] offset:256 sc0", "gfx940", "l1", "l1"),
    ("global_load_b32 v6, v4, s[2:3] offset:256 glc", "gfx11", "l1", "l2"),
    ("global_store_dword v4, v0, s[0:1]", "gfx9", "l1", "l2"),
    ("global_load_dwordx4 v[0:3], v6, s[2:3] offset:2048 glc slc", "gfx9", "dram", "global"),
])
def test_classify(text: str, gen: str, level: str, cls: str) -> None:
    mnemonic, _, operands = text.partition(" ")
    assert amdgcn.classify(amdgcn.Instruction(1, mnemonic, operands), gen, level) == cls


def test_unknown_instruction_and_target() -> None:
    with pytest.raises(ValueError, match=r"unclassified AMDGCN instruction at line 7: v_frobnicate_b32 v1, v2"):
        amdgcn.counts([amdgcn.Instruction(7, "v_frobnicate_b32", "v1, v2")])
    with pytest.raises(ValueError, match=r"not an AMD GPU architecture: 'gfx9a'"):
        amdgcn.generation("gfx9a")
    assert [amdgcn.generation(a) for a in ("gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1030")] == [
        "gfx9", "gfx940", "gfx940", "gfx11", "gfx10"]
    assert [amdgcn.wave_size(a) for a in AMD_ARCHS] == [64, 64, 32]


# -- compiling with the real clang ---------------------------------------------------------------

@pytest.fixture(scope="module")
def toolchains() -> Toolchains:
    return Toolchains()


@pytest.fixture(scope="module")
def compiler(toolchains: Toolchains, tmp_path_factory: pytest.TempPathFactory) -> KernelCompiler:
    env = os.environ.get("MICROBENCH_PTX_CACHE")
    return KernelCompiler(toolchains, Path(env) if env else tmp_path_factory.mktemp("isa-cache"))


def _need_clang(toolchains: Toolchains) -> None:
    try:
        toolchains.for_arch("gfx90a")
    except ToolchainError as e:
        if os.environ.get("MICROBENCH_REQUIRE_TOOLCHAINS") == "1":
            raise
        pytest.skip(str(e))


@pytest.fixture(scope="module")
def checks(compiler: KernelCompiler, toolchains: Toolchains) -> dict:
    _need_clang(toolchains)
    return {a: {c.kernel: c for c in verify((a,), compiler=compiler, jobs=2)} for a in AMD_ARCHS}


#: hot-loop unit operations per trip at the verify parameters, by hand from the sources
HAND = {
    "fp32_fma": 16 * 4,            # UNROLL x ILP fmaf
    "fp32_addmul": 16 * 4 * 2,     # a mul and an add per step
    "fp64_fma": 16 * 4,
    "int_mad": 16 * 4,             # one multiply per x*a + b
    "alu_logic": 16 * 4 * 6,       # 3 shifts + 3 xors
    "sfu": 16 * 4 * 7,             # ex2 ex2 lg2 rsqrt ex2 sin cos
    "reg_mov": 4 * 64 * 3,         # UNROLL 4 x 64 live registers x (not, and, xor)
    "ctrl": 16 * 4,                # s_nop
    "shared": 16 * 4 * 2,          # a load and a store per chain
    "const": 16 * 4 * 2,           # two 4-byte constants per FMA (in dwords: merged into s_load_dwordx16)
    "tex": 8 * 4 * 2, "l1": 8 * 4 * 2,  # AMD_VERIFY_PARAMS unroll 8
    "l2": 16 * 4 * 2, "dram": 16 * 4 * 2,
    "local": 16 * 4 * 2,           # a load and a store per word (in dwords)
    "fma_intensity": 16 * 4,       # one load per element
    "bw_stream": 16 * 4,           # one 16-byte load per chain
    "tensor": 16 * 4,              # one v_mfma / v_wmma per accumulator
    "pchase_l1": 8, "pchase_l2": 8, "pchase_dram": 8, "pchase_shared": 8,
}


@pytest.mark.parametrize("arch", AMD_ARCHS)
def test_every_kernel_compiles_and_passes(arch: str, checks: dict) -> None:
    """Catches a kernel that no longer compiles for an AMD target, loses or gains unit operations in
    its hot loop, or spills."""
    res = checks[arch]
    assert set(res) == set(catalog.KERNELS)
    for name, c in res.items():
        assert c.ok, (name, c.problems)
        assert c.toolchain.startswith("clang ")
        assert c.spill_stores_bytes == 0 and c.spill_loads_bytes == 0, name
        assert len(c.loops_ptx) == len(catalog.get(name).loop_models(c.params)), name
        if name in HAND:
            assert c.unit_per_trip == HAND[name], (name, c.unit_per_trip)
    assert res["fp32_fma"].share >= 0.9 and res["tensor"].share >= 0.9


def test_packed_fma_is_counted_twice_in_the_check(checks: dict) -> None:
    """Catches the check counting gfx90a's 32 v_pk_fma_f32 words as 32 FMAs (a 50 % unit count)."""
    c = checks["gfx90a"]["fp32_fma"]
    assert c.loops_ptx[0]["fp"] == 64 and c.unit_per_trip == 64 == c.unit_model
    assert c.share == pytest.approx(64 / 67)  # 32 packed words + s_add, s_cmp, s_cbranch
    assert checks["gfx1100"]["fp32_fma"].share == pytest.approx(64 / 67)  # 64 v_fma_f32 (s_delay_alu count 0)


def test_wave_size_comes_from_the_target(compiler: KernelCompiler, toolchains: Toolchains) -> None:
    """Catches a 32-lane line on wave64: mem.cu's l1 loads are MB_LINE = 4 x wave bytes apart, 256 on
    gfx90a, 128 on gfx1100 (offsets of consecutive loads of one base)."""
    _need_clang(toolchains)
    for arch, line in (("gfx90a", 256), ("gfx1100", 128)):
        c = compiler.compile("mem.cu", {"UNROLL": 8, "ILP": 4, "K_FMA": 8}, arch)
        fn = c.functions()["l1_hit"]
        body = fn.body(fn.loops()[0])
        offs = sorted({int(i.operands.split("offset:")[1].split()[0]) for i in body
                       if i.base.startswith("global_load") and "offset:" in i.operands})
        steps = {b - a for a, b in zip(offs, offs[1:])}
        assert min(steps) == line, (arch, offs)
        assert c.resources["l1_hit"].wave_size == (64 if arch == "gfx90a" else 32)


def test_pointer_chase_is_vector_loads_in_both_passes(compiler: KernelCompiler, toolchains: Toolchains) -> None:
    """Catches the warm-up pass chased with s_load_dwordx2 through the scalar cache (gfx942 did so with
    the wave-uniform pointer before MB_VECTOR_CHASE; verify checks only the timed pass): both passes
    must be UNROLL 8 dependent global_load_dwordx2."""
    _need_clang(toolchains)
    c = compiler.compile("latency.cu", {"UNROLL": 8, "REQS": 8, "LANE_STRIDE": 1}, "gfx942")
    _chase_is_vector_loads(amdgcn.parse(c.ptx))


# -- kernels that stop stressing their unit must fail --------------------------------------------

from test_verify import _edit, kernel_copy  # noqa: E402,F401  (a copy of the kernel sources to edit)


def _check(name: str, toolchains: Toolchains, arch: str = "gfx90a", **overrides):
    spec = catalog.get(name)
    p = spec.params(**{**amd_params(spec), **overrides})
    return check_compiled_amd(spec, p, KernelCompiler(toolchains).compile(spec.source, spec.compile_macros(p), arch),
                              arch_info(arch))


def test_partly_folded_body_fails(kernel_copy: Path, toolchains: Toolchains) -> None:
    """Two chains collapsed into one: half the FMAs of the model (32 of 64) on both ISA families."""
    _need_clang(toolchains)
    _edit(kernel_copy / "fp32.cu", "for (int j = 0; j < ILP; ++j) x[j] = fmaf(x[j], x[j], fa);",
          "for (int j = 0; j < ILP; ++j) x[j] = fmaf(x[j & ~1], x[j & ~1], fa);")
    for arch, ops in (("gfx90a", "v_pk_fma_f32/v_fma_f32/v_fmac_f32"), ("gfx1100", "v_fma_f32/v_fmac_f32/v_fmaak_f32")):
        c = _check("fp32_fma", toolchains, arch)
        assert not c.ok and not c.loops_match
        # about half the FMAs are left (the compiler may rotate one chain step out of the loop)
        assert c.unit_per_trip is not None and 30 <= c.unit_per_trip <= 34, c.unit_per_trip
        assert (f"hot loop per trip: {c.unit_per_trip:g} {ops} ... operations, the model 64 (unroll x body's fp)"
                in c.problems), c.problems


def test_fma_replaced_by_mul_fails_the_share(kernel_copy: Path, toolchains: Toolchains) -> None:
    _need_clang(toolchains)
    _edit(kernel_copy / "fp32.cu", "for (int j = 0; j < ILP; ++j) x[j] = fmaf(x[j], x[j], fa);",
          "for (int j = 0; j < ILP; ++j) x[j] = x[j] * fa;")
    c = _check("fp32_fma", toolchains, "gfx942")
    assert not c.ok
    assert any(p.startswith("v_pk_fma_f32/v_fma_f32/v_fmac_f32 are 0.0% of the hot loop's operations, below 90%")
               for p in c.problems), c.problems


def test_loop_folded_away_fails(kernel_copy: Path, toolchains: Toolchains) -> None:
    _need_clang(toolchains)
    _edit(kernel_copy / "fp32.cu", "for (int j = 0; j < ILP; ++j) x[j] = fmaf(x[j], x[j], fa);",
          "for (int j = 0; j < ILP; ++j) x[j] = fmaf(fa, fa, fb);")
    c = _check("fp32_fma", toolchains, "gfx1100")
    assert "the ISA has 0 loop(s), the count model 1 (a loop was folded away or added)" in c.problems


def test_dram_loads_without_l1_bypass_fail(kernel_copy: Path, toolchains: Toolchains) -> None:
    """Catches the .cg policy lost on AMD: dram_stream with plain (L1-allocating) loads."""
    _need_clang(toolchains)
    _edit(kernel_copy / "mem.cu", "void dram_stream(MB_PARAMS) { load_pairs<MB_CG>",
          "void dram_stream(MB_PARAMS) { load_pairs<MB_CA>")
    for arch, bit in (("gfx90a", "glc"), ("gfx942", "sc1"), ("gfx1100", "glc")):
        c = _check("dram", toolchains, arch)
        assert any(p.startswith("load without the L1-bypass policy (cg) at line") for p in c.problems), (arch, c.problems)
        assert _check("l2", toolchains, arch).ok  # l2_hit keeps MB_CG: its loads carry the bit
    c = _check("l1", toolchains, "gfx90a")
    assert c.ok


def test_wave64_window_beyond_the_working_set_fails(compiler: KernelCompiler, toolchains: Toolchains) -> None:
    """Catches checking the l1 kernel at unroll 16 on wave64: 2 x 16 x 4 x 256 B = 32 KiB per trip over a
    16 KiB working set (the catalog's 32-lane check passes it)."""
    _need_clang(toolchains)
    spec = catalog.get("l1")
    p = spec.params(unroll=16)
    c = check_compiled_amd(spec, p, compiler.compile(spec.source, spec.compile_macros(p), "gfx90a"),
                           arch_info("gfx90a"))
    assert any(x.startswith("wave64: the per-trip window exceeds the working set (footprint_bytes must be a power "
                            "of two >= the per-trip window of 16384 bytes") for x in c.problems), c.problems
    c32 = check_compiled_amd(spec, p, compiler.compile(spec.source, spec.compile_macros(p), "gfx1100"),
                             arch_info("gfx1100"))
    assert not any(x.startswith("wave") for x in c32.problems)


# -- agreement with the linked code object (lld-19, llvm-readelf-19, llvm-objdump-19) ------------

def test_assembly_agrees_with_the_linked_code_object(toolchains: Toolchains, tmp_path: Path) -> None:
    """The -S listing verify reads against what the loader gets: the same kernel linked into a code
    object (lld, as HIP's device link) and read back with llvm-readelf --notes and llvm-objdump."""
    _need_clang(toolchains)
    clang = toolchains.for_arch("gfx90a")
    tools = {t: shutil.which(f"{t}-19") or shutil.which(t) for t in ("llvm-readelf", "llvm-objdump")}
    lld = Path(clang.path).resolve().parent / "lld"
    missing = [t for t, p in tools.items() if not p] + ([] if lld.exists() else ["lld"])
    if missing:
        if os.environ.get("MICROBENCH_REQUIRE_TOOLCHAINS") == "1":
            pytest.fail(f"missing {', '.join(missing)} (apt-get install llvm-19 lld-19)")
        pytest.skip(f"missing {', '.join(missing)} (apt-get install llvm-19 lld-19)")
    src = tmp_path / "fp32.hip"
    src.write_text(toolchain.expand_includes(toolchain.KERNEL_DIR / "fp32.cu"))
    obj = tmp_path / "fp32.co"
    opts = [o for o in toolchain.CLANG_HIP_OPTIONS if o != "-S"]
    subprocess.run([clang.path, *opts, *toolchain.HIP_RUNTIME_OPTIONS, "-c", "--no-gpu-bundle-output", "--offload-arch=gfx90a", "-include",
                    str(toolchain.KERNEL_DIR / toolchain.HIP_PRELUDE), "-std=c++11", "-DUNROLL=16", "-DILP=4",
                    str(src), "-o", str(obj)], check=True, capture_output=True)
    notes = subprocess.run([tools["llvm-readelf"], "--notes", str(obj)], check=True, capture_output=True,
                           text=True).stdout
    from_notes = amdgcn.parse_resources("amdhsa.kernels:\n" + notes.split("amdhsa.kernels:", 1)[1])
    listing = KernelCompiler(toolchains).compile("fp32.cu", {"UNROLL": 16, "ILP": 4}, "gfx90a")
    assert from_notes == listing.resources
    dis = subprocess.run([tools["llvm-objdump"], "-d", "--mcpu=gfx90a", str(obj)], check=True, capture_output=True,
                         text=True).stdout
    fma = dis.split("<fp32_fma>:", 1)[1].split(">:", 1)[0]
    assert fma.count("v_pk_fma_f32") == 32 == sum(1 for i in listing.functions()["fp32_fma"].instructions
                                                  if i.base == "v_pk_fma_f32")


# -- toolchain selection and the command line ----------------------------------------------------

def test_missing_clang_names_what_to_install(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setattr(toolchain, "find_clang", lambda: None)
    with pytest.raises(ToolchainError, match=r"^no toolchain for gfx942: AMD targets need clang 17 or newer "
                                             r"\(apt-get install clang-19, or set MICROBENCH_CLANG\)$"):
        Toolchains().for_arch("gfx942")
    assert main(["verify", "--arch", "gfx90a"]) == 1
    assert capsys.readouterr().err.startswith("ERROR: no toolchain for gfx90a: AMD targets need clang 17")


def test_cli_amd_table_and_bad_targets(capsys: pytest.CaptureFixture, toolchains: Toolchains) -> None:
    assert main(["verify", "--arch", "gfx1030"]) == 2
    assert ("ERROR: --arch: gfx1030: verify knows the AMD ISA families gfx9 (e.g. gfx90a), gfx940 (e.g. gfx942), "
            "gfx11 (e.g. gfx1100), not gfx10") in capsys.readouterr().err
    assert main(["verify", "--arch", "gfx9z"]) == 2
    assert "ERROR: --arch: not an AMD GPU architecture: 'gfx9z'" in capsys.readouterr().err
    _need_clang(toolchains)
    assert main(["verify", "--arch", "GFX90A", "--kernel", "fp32_fma", "--kernel", "dram"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "gfx90a (clang 19.1.7; working-set checks against MI250X: L1 16 KiB, L2 8 MiB)" or \
        lines[0].startswith("gfx90a (clang ")
    assert lines[1].split() == ["kernel", "unit", "share", "min", "regs", "spill", "v/s", "loop=model", "result"]
    fma = next(line for line in lines if line.startswith("fp32_fma")).split()
    assert fma[1:3] == ["valu_fp32", "95.5%"] and fma[-2:] == ["yes", "ok"]
    assert next(line for line in lines if line.startswith("dram")).split()[1] == "hbm"
    assert lines[-1] == "2 passed, 0 failed, 0 skipped"


# -- the runner's HIP path (CuPy for ROCm, faked: no GPU here) -----------------------------------

def _hip_gpu(arch_name: str = "gfx90a:sramecc+:xnack-", wave: int = 64):
    """The runner tests' fake CuPy, as cupy-rocm-7-0 14.2.0 presents an AMD GPU: runtime.is_hip, a
    getDeviceProperties dict with gcnArchName (bytes, as CuPy returns char arrays), warpSize and
    sharedMemPerBlockOptin, and no cudaDevAttrMaxSharedMemoryPerBlockOptin (absent from that wheel's
    _runtime_enum)."""
    from test_kernels_runner import FakeGPU

    gpu = FakeGPU(sm_count=104, cc="90")  # CuPy's compute_capability on HIP: a number, not sm_90
    rec = gpu.module()
    rt = rec._obj.cuda.runtime
    del rt.cudaDevAttrMaxSharedMemoryPerBlockOptin
    rt.is_hip = True
    rt.getDeviceProperties = lambda dev: {"gcnArchName": arch_name.encode(), "warpSize": wave,
                                          "sharedMemPerBlock": 65536, "sharedMemPerBlockOptin": 65536}
    return gpu, rec


def test_runner_hip_device_and_compile() -> None:
    """Catches the HIP path reading CuPy's compute_capability ("90" on MI250X) as sm_90, or asking for
    the optin attribute cupy-rocm does not have; the source RawModule gets is the verified text."""
    from microbench.devices.base import Launch
    from microbench.kernels.runner import KernelRunner

    gpu, rec = _hip_gpu()
    r = KernelRunner(0, cupy_module=rec, clock=gpu.clock)
    assert (r.arch, r.wave_size, r.is_hip, r.smem_per_block_optin) == ("gfx90a", 64, True, 65536)
    prep = r.prepare("fp32_fma", {"iters": 10}, Launch(208, 256, 104))
    code, options = gpu.modules[-1]
    # headers inlined, no prelude: hiprtc brings its own HIP headers
    assert not re.search(r"^\s*#\s*include", code, re.M) and "struct threadIdx_t" not in code
    assert code == toolchain.expand_includes(toolchain.KERNEL_DIR / "fp32.cu")
    assert options == ("-std=c++11", "-DILP=4", "-DUNROLL=16")
    assert prep.block == (256, 1, 1)
    with pytest.raises(Exception, match="peak rates are tabulated for NVIDIA GPUs only"):
        r.rates()


def test_runner_hip_rejects_what_wave64_cannot_run() -> None:
    """Catches launching half waves, and the l1 kernel at unroll 16 on wave64, whose 32 KiB window
    reads past a 16 KiB working set (the 32-lane validation passes it)."""
    from calib.core.errors import BadInputError
    from microbench.devices.base import Launch
    from microbench.kernels.runner import KernelRunner

    gpu, rec = _hip_gpu()
    r = KernelRunner(0, cupy_module=rec, clock=gpu.clock)
    with pytest.raises(BadInputError, match=r"threads_per_block must be a multiple of 64 in \[64, 1024\], not 96"):
        r.prepare("fp32_fma", {}, Launch(104, 96, 104))
    with pytest.raises(BadInputError, match=r"^l1 on gfx90a: wave64: the per-trip window exceeds the working set"):
        r.prepare("l1", {"iters": 4}, Launch(104, 256, 104))
    r.prepare("l1", {"iters": 4, "unroll": 8}, Launch(104, 256, 104))
    gpu2, rec2 = _hip_gpu("gfx1030", 32)
    r2 = KernelRunner(0, cupy_module=rec2, clock=gpu2.clock)
    r2.prepare("l1", {"iters": 4}, Launch(104, 256, 104))  # wave32: the CUDA windows
    with pytest.raises(BadInputError, match=r"tensor needs matrix instructions .*; cuda:0 is gfx1030"):
        r2.prepare("tensor", {}, Launch(104, 256, 104))
