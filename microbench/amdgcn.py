"""AMDGCN assembly (GCN/CDNA/RDNA ISA) parsing and classification into the IPP instruction classes.

The AMD counterpart of :mod:`microbench.ptx`: ``clang -x hip --cuda-device-only -S`` output turned
into kernels, instructions, loops and resources, each instruction mapped to a class of
:data:`calib.core.units.INSTRUCTION_CLASSES`, and through :data:`calib.core.arch.AMD_UNITS` to the unit
of the AMD power model that executes it (every ``s_*`` instruction runs on the scalar unit, ``salu``:
scalar arithmetic and branches are ``ctrl``, scalar loads ``const``):

========  ==========  ==========================================================================
class     AMD unit    AMDGCN instructions
========  ==========  ==========================================================================
fp        valu_fp32   v_fma/fmac/fmaak/fmamk/mad/mac/add/sub/mul/min/max/ldexp..._f32 (and
                      _f16/_bf16), v_pk_fma/mul/add_f32 (two operations each), v_dot2_f32_f16
dp        valu_fp64   the same on _f64, and v_rcp/rsq/sqrt_f64
int       valu_int    v_add/sub (_u32, _co, _nc, 3), v_mul_lo/hi, v_mad_u32_u24, v_mad_u64_u32,
                      v_lshl_add, v_min/max on integers, v_dot4_i32_i8
alu       valu_int    and/or/xor/not/shifts/bfe/bfi/alignbit/perm, v_mov, v_cndmask, v_cmp(x),
                      v_cvt, v_readlane/readfirstlane/writelane, v_accvgpr_*, v_mbcnt
sfu       valu_trans  v_exp/log/rcp/rsq/sqrt/sin/cos_f32 (and _f16)
tensor    matrix      v_mfma_* (CDNA), v_smfmac_*, v_wmma_* / v_swmmac_* (RDNA3+)
ctrl      salu        scalar arithmetic (s_add, s_cmp, s_mov, s_and_saveexec, s_getreg, s_memtime),
                      s_branch, s_cbranch_*, s_endpgm, s_nop, s_barrier, s_sleep, s_setprio,
                      s_sendmsg, and the waits and hints s_waitcnt*, s_delay_alu, s_clause
const     salu        s_load_*, s_buffer_load_* (kernel arguments, wave-uniform loads: scalar cache)
shared    lds         ds_* (ds_read/ds_write on gfx9, ds_load/ds_store on gfx11)
local     hbm         scratch_*, and buffer_* (these kernels build no buffer resource: a buffer
                      access is the private segment on gfx9)
l1/l2/    l1 / l2 /   global_*/flat_* loads, stores and atomics, placed by the kernel's memory
global    hbm         level as in :mod:`microbench.ptx`: a load without an L1-bypass policy is
                      ``l1`` for an L1 kernel; a load that bypasses L1 or any store is ``l2``
========  ==========  ==========================================================================

Operations, not instruction words, are counted: a packed FP32 instruction (``v_pk_fma_f32``,
``v_pk_mul_f32``, ``v_pk_add_f32``, ``v_pk_mov_b32`` on gfx90a/gfx942) does the work of two and
counts twice, like the two PTX instructions it replaces; a VOPD dual-issue word on gfx11
(``v_dual_fmac_f32 ... :: v_dual_fmac_f32 ...``) is parsed as its two halves. Packed 16-bit
instructions (``v_pk_fma_f16``) count once, as PTX's ``fma.f16x2``. gfx9's unfused multiply-add
``v_mad_f32``/``v_mac_f32`` (chosen for a multiply and an add when FP32 denormals are flushed, as
CuPy compiles) counts twice, like the ``mul.rn`` + ``add.rn`` it replaces. The waits and hints
``s_waitcnt``, ``s_delay_alu`` (gfx11) and ``s_clause`` (gfx11) count zero: they carry the
dependency information that NVIDIA puts in the control bits of each SASS instruction (stall count,
scoreboard wait mask), which no PTX count sees either; :func:`waits` counts them.

Cache policy bits per generation (what the kernels' ``.cg`` loads become): gfx9 (gfx90a) ``glc``;
gfx940-942 ``sc1`` (agent scope) or ``nt`` (nontemporal); gfx11 ``glc`` (agent scope) or
``slc dlc`` (nontemporal). A load carrying them does not stay in the vector L1 (L0 on gfx11).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from microbench.ptx import MEM_LEVELS, CodeFunction, place_global, tally


def generation(arch: str) -> str:
    """ISA family of a gfx target: ``gfx9`` (GCN5/CDNA1-2), ``gfx940`` (CDNA3), ``gfx10``, ``gfx11``, ``gfx12``."""
    m = re.fullmatch(r"gfx(\d+)([0-9a-f]{2})", arch.strip().lower())
    if not m:
        raise ValueError(f"not an AMD GPU architecture: {arch!r} (expected e.g. gfx90a)")
    major, minor = int(m.group(1)), m.group(2)
    if major == 9 and minor[0] in "45":  # gfx940, gfx941, gfx942, gfx950
        return "gfx940"
    return f"gfx{major}"


def wave_size(arch: str) -> int:
    """Default wavefront size of a target: 64 on GFX9 (GCN/CDNA), 32 on GFX10 and later (RDNA)."""
    return 64 if generation(arch) in ("gfx9", "gfx940") else 32


def has_matrix_cores(arch: str) -> bool:
    """Whether a target has the matrix instructions tensor.cu uses: CDNA v_mfma (gfx908, gfx90a, gfx94x,
    gfx950) or RDNA3 v_wmma (gfx11)."""
    a = arch.strip().lower()
    return a in ("gfx908", "gfx90a") or generation(a) in ("gfx940", "gfx11")


#: cache-policy bits that keep a load out of the vector L1 (the ``.cg`` policies of common.cuh)
_L1_BYPASS: dict[str, tuple[frozenset[str], ...]] = {
    "gfx9": (frozenset({"glc"}),),
    "gfx940": (frozenset({"sc1"}), frozenset({"nt"})),
    "gfx11": (frozenset({"glc"}), frozenset({"slc", "dlc"})),
}
#: gfx9's unfused FP32 multiply-add (the product rounded: a multiply and an add in one instruction),
#: which clang selects for a separate mul and add when FP32 denormals are flushed (CuPy compiles so)
_UNFUSED_MAD = frozenset({"v_mad_f32", "v_mac_f32", "v_madak_f32", "v_madmk_f32", "v_mad_legacy_f32",
                          "v_mac_legacy_f32"})
_POLICY_WORDS = frozenset({"glc", "slc", "dlc", "scc", "sc0", "sc1", "nt", "lds", "tfe", "lwe"})
#: waits and scheduling hints (module docstring): no operation, they count zero (:func:`waits` counts them)
_HINTS = frozenset({"s_delay_alu", "s_clause", "s_waitcnt", "s_waitcnt_vscnt", "s_waitcnt_vmcnt",
                    "s_waitcnt_expcnt", "s_waitcnt_lgkmcnt", "s_waitcnt_depctr"})


@dataclass(frozen=True)
class Instruction:
    """One AMDGCN instruction (one half of a VOPD word is one instruction)."""

    line: int
    mnemonic: str
    operands: str
    dual: bool = False

    @property
    def base(self) -> str:
        """The mnemonic without the encoding suffix (``v_add_u32`` for ``v_add_u32_e32``), VOPD halves
        as the plain instruction (``v_fmac_f32`` for ``v_dual_fmac_f32``)."""
        m = re.sub(r"_(e32|e64|e64_dpp|dpp|sdwa|e32_dpp)$", "", self.mnemonic)
        return "v_" + m[len("v_dual_"):] if m.startswith("v_dual_") else m

    @property
    def opcode(self) -> str:
        return self.mnemonic

    @property
    def policy(self) -> frozenset[str]:
        """Cache-policy modifiers of a memory instruction (``glc``, ``sc1``, ``nt``, ``scope:...``)."""
        return frozenset(t for t in re.split(r"[\s,]+", self.operands)
                         if t in _POLICY_WORDS or t.startswith(("scope:", "th:")))

    @property
    def ops(self) -> int:
        """Operations the instruction does: 2 for packed 32-bit instructions (``v_pk_*_f32``,
        ``v_pk_mov_b32``) and unfused multiply-adds (``v_mad_f32``, ``v_mac_f32``), 0 for waits and hints
        (``s_waitcnt``, ``s_delay_alu``, ``s_clause``), else 1."""
        b = self.base
        if b in _HINTS:
            return 0
        if b in _UNFUSED_MAD:
            return 2
        return 2 if b.startswith("v_pk_") and (b.endswith("_f32") or b == "v_pk_mov_b32") else 1

    @property
    def text(self) -> str:
        return f"{self.mnemonic} {self.operands}".strip()

    def branch_target(self) -> str | None:
        """Label an ``s_branch``/``s_cbranch_*`` jumps to (None for other instructions)."""
        if self.mnemonic == "s_branch" or self.mnemonic.startswith("s_cbranch_"):
            return self.operands.split(",")[0].strip() or None
        return None

    @property
    def conditional(self) -> bool:
        return self.mnemonic.startswith("s_cbranch_")

    @property
    def exits(self) -> bool:
        return self.mnemonic in ("s_endpgm", "s_endpgm_saved", "s_endpgm_ordered_ps_done")


@dataclass(frozen=True)
class Resources:
    """Register, scratch and LDS use of one kernel (the code object's metadata)."""

    vgprs: int
    sgprs: int
    agprs: int = 0
    vgpr_spills: int = 0
    sgpr_spills: int = 0
    scratch_bytes: int = 0
    lds_bytes: int = 0
    wave_size: int = 64


@dataclass
class GcnFunction(CodeFunction):
    """A kernel of an AMDGCN assembly listing (loops and main path as for PTX)."""


_LABEL = re.compile(r"^([.\w$]+):")
_TYPE_FN = re.compile(r"^\s*\.type\s+([\w$.]+)\s*,\s*@function")
_META_ENTRY = re.compile(r"^  - \.(\w+):\s*(\S+)?")
_META_KEY = re.compile(r"^    \.(\w+):\s*(\S+)")


def parse_module(text: str) -> dict[str, GcnFunction]:
    """Kernels of ``clang -S`` AMDGCN output by name, with instructions and labels."""
    funcs: dict[str, GcnFunction] = {}
    declared: set[str] = set()
    cur: GcnFunction | None = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        m = _TYPE_FN.match(raw)
        if m:
            declared.add(m.group(1))
            continue
        line = re.split(r";|//", raw, maxsplit=1)[0].strip()  # comments: ';' (also '//' in some listings)
        if not line:
            continue
        lm = _LABEL.match(line)
        if lm:
            name = lm.group(1)
            if name in declared:
                cur = GcnFunction(name, "kernel")
                funcs[name] = cur
            elif cur is not None and name.startswith(".Lfunc_end"):
                cur = None
            elif cur is not None:
                cur.labels[name] = len(cur.instructions)
            line = line[lm.end():].strip()
            if not line:
                continue
        if cur is None or line.startswith("."):
            continue  # outside a kernel, or a directive
        for k, part in enumerate(line.split("::")):
            mnemonic, _, operands = part.strip().partition(" ")
            cur.instructions.append(Instruction(lineno, mnemonic, operands.strip(), dual="::" in line))
    return funcs


def parse_resources(text: str) -> dict[str, Resources]:
    """Registers, spills, scratch and LDS per kernel from the ``amdhsa.kernels`` metadata of a listing."""
    out: dict[str, Resources] = {}
    entries: list[dict[str, str]] = []
    inside = False
    for raw in text.splitlines():
        if raw.startswith("amdhsa.kernels:"):
            inside = True
            continue
        if not inside:
            continue
        if raw and not raw.startswith(" "):
            inside = raw.startswith("amdhsa.kernels")
            continue
        m = _META_ENTRY.match(raw)
        if m:
            entries.append({m.group(1): m.group(2) or ""})
            continue
        m = _META_KEY.match(raw)
        if m and entries:
            entries[-1][m.group(1)] = m.group(2)
    for e in entries:
        if "name" not in e:
            continue

        def num(key: str) -> int:
            return int(e.get(key, "0") or 0)

        out[e["name"]] = Resources(vgprs=num("vgpr_count"), sgprs=num("sgpr_count"), agprs=num("agpr_count"),
                                   vgpr_spills=num("vgpr_spill_count"), sgpr_spills=num("sgpr_spill_count"),
                                   scratch_bytes=num("private_segment_fixed_size"),
                                   lds_bytes=num("group_segment_fixed_size"), wave_size=num("wavefront_size") or 64)
    return out


# -- classification ----------------------------------------------------------------------------

_CTRL = re.compile(r"^s_(branch|cbranch_\w+|endpgm\w*|waitcnt\w*|wait_\w+|nop|barrier\w*|delay_alu|clause|sleep\w*|"
                   r"setprio|sendmsg\w*|trap|code_end|icache_inv|inst_prefetch|setpc_b64|swappc_b64|"
                   r"call_b64|ttracedata\w*|wakeup\w*|dcache_\w+|setkill|sethalt|rfe_b64|version)$")
_CONST = re.compile(r"^s_(load|buffer_load|scratch_load)_")
_SFU = re.compile(r"^v_(exp|log|rcp|rsq|sqrt|sin|cos)(_legacy|_clamp|_iflag)?_(f32|f16)$")
_DP_SFU = re.compile(r"^v_(rcp|rsq|sqrt)(_clamp)?_f64$")
_TENSOR = re.compile(r"^v_(mfma|smfmac|wmma|swmmac)_")
_FLOAT_ARITH = re.compile(r"^v_(pk_)?(fma|fmac|fmaak|fmamk|mad|mac|madak|madmk|add|sub|subrev|mul|min|max|min3|max3|"
                          r"med3|minimum|maximum|ldexp|fract|trunc|ceil|floor|rndne|frexp_mant|div_scale|div_fmas|"
                          r"div_fixup|fma_mix|fma_mixlo|fma_mixhi|mad_mix\w*|dot2|dot2c|dot2acc|mul_legacy|"
                          r"fma_legacy|mac_legacy|fmac_legacy)(_\w+)?_(f32|f16|bf16|f64)$")
_INT = re.compile(r"^v_(pk_)?(add|add3|addc|sub|subb|subrev|subbrev|mul_lo|mul_hi|mul|mad|mad_u32_u24|mad_i32_i24|"
                  r"mad_u64_u32|mad_i64_i32|mad_u32_u16|mad_u16|mad_i16|min|max|min3|max3|med3|sad\w*|"
                  r"lshl_add|add_lshl|dot4|dot8|dot2|dot4c|dot8c|qsad\w*|mqsad\w*|msad\w*|lerp)(_\w+)?_"
                  r"(u32|i32|u16|i16|u64|i64|u24|i24|u8|i8)$|^v_(add|sub|subrev)_(co|co_ci|nc|ci)_\w+$|"
                  r"^v_(addc|subb|subbrev)_co_u32$|^v_lshl_add_u64$|^v_mad_u64_u32$|^v_mad_i64_i32$|^v_mul_u32_u24$")
_ALU = re.compile(r"^v_(and|or|xor|not|xnor|nand|nor|and_or|or3|xor3|lshl_or|lshlrev|lshrrev|ashrrev|lshl|lshr|ashr|"
                  r"bfe|bfi|bfm|alignbit|alignbyte|perm|bcnt\w*|ffbh\w*|ffbl\w*|cls\w*|ctz\w*|clz\w*|bfrev|"
                  r"mov|movrel\w*|swap|swaprel|cndmask|cmp\w*|cmpx\w*|cvt\w*|readlane|readfirstlane|writelane|"
                  r"accvgpr_\w+|mbcnt_lo|mbcnt_hi|pk_mov|frexp_exp|class|permlane\w*|dual_mov|"
                  r"cubeid|cubema|cubesc|cubetc|sat_pk\w*|pack\w*|pk_lshlrev|pk_lshrrev|pk_ashrrev)(_\w+)?$")


def bypasses_l1(ins: Instruction, gen: str) -> bool:
    """Whether a vector load carries one of ``gen``'s L1-bypass (``.cg``) cache policies."""
    if gen not in _L1_BYPASS:
        raise ValueError(f"cache policies of {gen} are not known (known: {', '.join(_L1_BYPASS)})")
    pol = ins.policy
    return any(need <= pol for need in _L1_BYPASS[gen])


def classify(ins: Instruction, gen: str = "gfx9", mem_level: str = "dram") -> str | None:
    """Instruction class of ``ins`` on ISA family ``gen`` (see :func:`generation`), or None if unknown."""
    if mem_level not in MEM_LEVELS:
        raise ValueError(f"mem_level must be one of {MEM_LEVELS}, not {mem_level!r}")
    b = ins.base
    if b.startswith("s_"):
        if _CTRL.match(b):
            return "ctrl"
        if _CONST.match(b):
            return "const"
        return "ctrl"  # scalar arithmetic: the scalar unit, like the branches
    if b.startswith("ds_"):
        return "alu" if b in ("ds_bpermute_b32", "ds_permute_b32", "ds_swizzle_b32") else "shared"
    if b.startswith("scratch_") or b.startswith("buffer_"):
        return "local"
    if b.startswith(("global_", "flat_")):
        is_read = "_load" in b and "_store" not in b
        return place_global(mem_level, bypass=(not is_read) or bypasses_l1(ins, gen))
    if b in ("v_nop", "s_nop"):
        return "ctrl"
    if _TENSOR.match(b):
        return "tensor"
    if _DP_SFU.match(b):
        return "dp"
    if _SFU.match(b):
        return "sfu"
    if b.startswith(("v_cvt", "v_cmp")):
        return "alu"
    m = _FLOAT_ARITH.match(b)
    if m:
        return "dp" if m.group(4) == "f64" else "fp"
    if _INT.match(b):
        return "int"
    if _ALU.match(b):
        return "alu"
    return None


def counts(instructions: Iterable[Instruction], gen: str = "gfx9", mem_level: str = "dram") -> dict[str, float]:
    """Operation counts by class (packed instructions twice). Raises ``ValueError`` naming an unknown one."""
    return tally(instructions, lambda ins: classify(ins, gen, mem_level), "AMDGCN")


def waits(instructions: Iterable[Instruction]) -> int:
    """Wait and hint words (``s_waitcnt``, ``s_delay_alu``, ``s_clause``) among ``instructions``."""
    return sum(1 for ins in instructions if ins.base in _HINTS)


@dataclass
class GcnModule:
    """A parsed listing: kernels and their resources."""

    functions: dict[str, GcnFunction] = field(default_factory=dict)
    resources: dict[str, Resources] = field(default_factory=dict)


def parse(text: str) -> GcnModule:
    """Kernels and resources of an AMDGCN listing."""
    return GcnModule(parse_module(text), parse_resources(text))
