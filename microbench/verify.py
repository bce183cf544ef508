"""``python -m microbench verify``: check every kernel's PTX against its declaration, without a GPU.

For each architecture (default sm_70, sm_80, sm_90) every kernel of the catalog is compiled with
the toolchain for that architecture (:mod:`microbench.toolchain`), its PTX parsed and classified
(:mod:`microbench.ptx`), and checked:

1. every loop of the kernel, per trip, has exactly the instruction counts of the count model
   (``unroll x body + overhead``), class by class, and the PTX has as many loops as the model;
2. no instruction is left unclassified;
3. the stressed unit dominates the hot loop: its share of the loop's instructions is at least the
   kernel's ``min_share`` (e.g. 90 % fma.rn.f32 for the FP32 kernel);
4. every global load of the hot loop carries the declared cache operator (``.ca`` L1, ``.cg`` L2 and
   DRAM, ``.nc`` read-only path), and the working set compares with the architecture's caches as
   declared (DRAM kernels: larger than L2; L2 kernels: between L1 and L2; L1 kernels: within L1);
5. ptxas reports no register spills.

The prologue (what runs once per launch) is reported next to the model's constant but does not
fail the check. With ``--gpu INDEX`` the kernels also run on that GPU and the table gains the
achieved throughput of the stressed unit and its share of the device's theoretical peak
(:mod:`microbench.kernels.runner`).

AMD architectures (``gfx90a``, ``gfx942``, ``gfx1100``) compile with clang (see
:mod:`microbench.toolchain`) and are checked in their ISA (:mod:`microbench.amdgcn`), the same way:

1. the kernel has as many loops as the count model, and the hot loop does, per trip, ``unroll x``
   the body's count of the stressed unit in the unit's own instructions
   (:data:`~microbench.kernels.catalog.AMD_HOT_OPS`, per ISA family; a packed ``v_pk_*_f32`` counts
   twice, and the scalar and scratch loads of ``const`` and ``local``, which the compiler merges, by
   dwords);
2. no instruction is left unclassified;
3. those instructions are at least ``min_share`` of the hot loop's operations
   (:data:`~microbench.kernels.catalog.AMD_MIN_SHARE` where the ISA needs helpers, e.g. gfx9's
   v_add_u32 after each 32-bit multiply);
4. every global load of the hot loop carries the declared cache policy (``cg``: the target's
   L1-bypass bits, ``glc`` on gfx90a, ``sc1``/``nt`` on gfx942, ``glc``/``slc dlc`` on gfx11; ``ca``
   and ``nc``: none), and the working set, with the wave's window, compares with the reference
   device's caches as declared;
5. the code object reports no VGPR or SGPR spills.

The other instruction classes of the loop are reported (``--details``) but not compared with the
count model, whose constants are PTX counts.
"""

from __future__ import annotations

import concurrent.futures as cf
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from microbench import amdgcn, ptx
from microbench.kernels import catalog
from microbench.kernels.catalog import KernelSpec
from microbench.toolchain import Compiled, KernelCompiler, arch_number, is_amd

DEFAULT_ARCHS: tuple[str, ...] = ("sm_70", "sm_80", "sm_90")


@dataclass(frozen=True)
class ArchInfo:
    """Reference device of an architecture: cache sizes used by the working-set checks, bytes."""

    device: str
    l1_bytes: int
    l2_bytes: int


#: the largest L1 (data cache share of the unified L1/shared memory) and the L2 of each reference GPU
ARCHS: dict[int, ArchInfo] = {
    60: ArchInfo("P100", 24 * 1024, 4 * 1024 * 1024),
    61: ArchInfo("GTX 1080", 48 * 1024, 2 * 1024 * 1024),
    70: ArchInfo("V100", 128 * 1024, 6 * 1024 * 1024),
    75: ArchInfo("T4", 64 * 1024, 4 * 1024 * 1024),
    80: ArchInfo("A100", 192 * 1024, 40 * 1024 * 1024),
    86: ArchInfo("RTX 3090", 128 * 1024, 6 * 1024 * 1024),
    89: ArchInfo("L4", 128 * 1024, 48 * 1024 * 1024),
    90: ArchInfo("H100", 256 * 1024, 50 * 1024 * 1024),
}


#: AMD reference devices: the first-level vector cache (the per-CU L1; the L0 on RDNA3) and the L2 of
#: one die, from the vendor's CDNA2 / CDNA3 whitepapers and RDNA3 (Navi 31) specifications
AMD_ARCHS: dict[str, ArchInfo] = {
    "gfx90a": ArchInfo("MI250X", 16 * 1024, 8 * 1024 * 1024),    # per GCD
    "gfx942": ArchInfo("MI300X", 32 * 1024, 4 * 1024 * 1024),    # per XCD (256 MiB Infinity Cache behind)
    "gfx1100": ArchInfo("RX 7900 XTX", 32 * 1024, 6 * 1024 * 1024),  # L0; 256 KiB GL1 per array, 96 MiB MALL
}
#: ISA families whose mnemonics verify knows, and the reference device of an unlisted target in one
AMD_FAMILIES: dict[str, str] = {"gfx9": "gfx90a", "gfx940": "gfx942", "gfx11": "gfx1100"}


def amd_unit(spec: KernelSpec) -> str:
    """The unit of the AMD power model (:data:`calib.core.arch.AMD_UNITS`) of a kernel's stressed class."""
    from calib.core.arch import AMD_UNITS, INSTRUCTION_CLASSES

    cls = (spec.share_classes or (spec.stresses,))[0]
    # the issue unit counts every class (IPP's fds): a kernel stresses the unit of its own class
    own = [u for u in AMD_UNITS.units if len(AMD_UNITS.classes[u]) < len(INSTRUCTION_CLASSES)]
    return next((u for u in own if cls in AMD_UNITS.classes[u]), spec.stresses)


def amd_family(arch: str) -> str:
    """The AMD_HOT_OPS key of a target (``gfx9`` for GCN5/CDNA, ``gfx11`` for RDNA3); ValueError if unknown."""
    gen = amdgcn.generation(arch)
    if gen not in AMD_FAMILIES:
        known = ", ".join(f"{g} (e.g. {a})" for g, a in AMD_FAMILIES.items())
        raise ValueError(f"{arch}: verify knows the AMD ISA families {known}, not {gen}")
    return "gfx11" if gen == "gfx11" else "gfx9"


def arch_info(arch: str, l2_bytes: int | None = None) -> ArchInfo:
    """Reference device of ``arch`` (the closest older one for unlisted architectures)."""
    if is_amd(arch):
        a_ = arch.strip().lower()
        base = AMD_ARCHS.get(a_) or AMD_ARCHS[AMD_FAMILIES[amdgcn.generation(a_)]]
    else:
        older = [k for k in ARCHS if k <= arch_number(arch)]
        base = ARCHS[max(older)] if older else ArchInfo("unknown", 16 * 1024, 1024 * 1024)
    return ArchInfo(base.device, base.l1_bytes, l2_bytes or base.l2_bytes)


@dataclass
class KernelCheck:
    """Outcome of checking one kernel on one architecture."""

    kernel: str
    arch: str
    stresses: str
    toolchain: str = ""
    share: float | None = None
    min_share: float = 0.0
    registers: int | None = None
    spill_stores_bytes: int = 0
    spill_loads_bytes: int = 0
    stack_bytes: int = 0
    loops_ptx: list[dict[str, float]] = field(default_factory=list)
    loops_model: list[dict[str, float]] = field(default_factory=list)
    prologue_ptx: dict[str, float] = field(default_factory=dict)
    prologue_model: dict[str, float] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    skipped: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    achieved: dict[str, Any] | None = None
    unit_per_trip: float | None = None  # AMD: hot-loop unit operations per trip (ISA)
    unit_model: float | None = None     # AMD: unroll x the body's stressed count (model)

    @property
    def ok(self) -> bool:
        return self.skipped is not None or not self.problems

    @property
    def loops_match(self) -> bool:
        if self.skipped or len(self.loops_ptx) != len(self.loops_model):
            return False
        if is_amd(self.arch):
            return self.unit_model is None or self.unit_per_trip == self.unit_model
        return all(_same(a, b) for a, b in zip(self.loops_ptx, self.loops_model))


def _same(a: Mapping[str, float], b: Mapping[str, float]) -> bool:
    keys = set(a) | set(b)
    return all(abs(a.get(k, 0.0) - b.get(k, 0.0)) < 1e-9 for k in keys)


def _merge(counts: Mapping[str, float], merge: Mapping[str, str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for k, v in counts.items():
        k2 = merge.get(k, k)
        out[k2] = out.get(k2, 0.0) + v
    return out


def _fmt_counts(c: Mapping[str, float]) -> str:
    return " ".join(f"{k}={v:g}" for k, v in sorted(c.items()) if v) or "-"


def check_compiled(spec: KernelSpec, params: Mapping[str, Any], compiled: Compiled,
                   info: ArchInfo) -> KernelCheck:
    """Check one kernel's PTX (``compiled``) against its spec; see the module docstring."""
    chk = KernelCheck(spec.name, compiled.arch, spec.stresses, compiled.toolchain, min_share=spec.min_share,
                      params=dict(params))
    funcs = compiled.functions()
    fn = funcs.get(spec.entry)
    if fn is None:
        chk.problems.append(f"entry {spec.entry} not in the PTX (found: {', '.join(funcs) or 'none'})")
        return chk
    res = compiled.resources.get(spec.entry)
    if res is not None:
        chk.registers = res.registers
        chk.spill_stores_bytes, chk.spill_loads_bytes, chk.stack_bytes = (
            res.spill_stores_bytes, res.spill_loads_bytes, res.stack_bytes)
        if res.spill_stores_bytes or res.spill_loads_bytes:
            chk.problems.append(f"ptxas spills registers ({res.spill_stores_bytes} B stores, "
                                f"{res.spill_loads_bytes} B loads)")
    else:
        chk.problems.append("ptxas reported no resource usage for the entry")
    try:
        outside, loops = fn.main_path()
        chk.prologue_ptx = ptx.counts(outside, spec.mem_level)
        chk.loops_ptx = [_merge(ptx.counts(fn.body(lp), spec.mem_level), spec.merge_classes) for lp in loops]
    except ValueError as e:
        chk.problems.append(str(e))
        return chk
    chk.prologue_model = dict(spec.prologue)
    models = spec.loop_models(params)
    chk.loops_model = [_merge(lm.per_trip, spec.merge_classes) for lm in models]
    if len(loops) != len(models):
        chk.problems.append(f"PTX has {len(loops)} loop(s), the count model {len(models)} "
                            f"(a loop was folded away or added)")
    for i, (got, want) in enumerate(zip(chk.loops_ptx, chk.loops_model)):
        if not _same(got, want):
            chk.problems.append(f"loop {i + 1} per trip: PTX {_fmt_counts(got)} != model {_fmt_counts(want)}")
    hot = next((i for i, lm in enumerate(models) if lm.hot), None)
    if hot is not None and hot < len(loops):
        body = fn.body(loops[hot])
        if spec.hot_ops:
            chk.share = sum(1 for ins in body if spec.is_hot_op(ins.opcode)) / len(body)
            what = "/".join(spec.hot_ops)
        elif spec.stresses != "mixed":
            chk.share = spec.stressed_share(chk.loops_ptx[hot])
            what = spec.stresses
        if chk.share is not None and chk.share + 1e-12 < spec.min_share:
            chk.problems.append(f"{what} is {100 * chk.share:.1f}% of the hot loop's instructions, "
                                f"below {100 * spec.min_share:.0f}%")
        if spec.load_op:
            bad = [ins for ins in body if ins.base == "ld" and "global" in ins.mods and spec.load_op not in ins.mods]
            n_ld = sum(1 for ins in body if ins.base == "ld" and "global" in ins.mods)
            if not n_ld:
                chk.problems.append("hot loop has no global loads")
            for ins in bad[:3]:
                chk.problems.append(f"load without .{spec.load_op} at PTX line {ins.line}: {ins.text}")
    elif models:
        chk.problems.append("no hot loop in the PTX")
    _check_footprint(spec, params, info, chk)
    return chk


def _check_footprint(spec: KernelSpec, params: Mapping[str, Any], info: ArchInfo, chk: KernelCheck) -> None:
    rule = spec.footprint_rule
    if not rule:
        return
    f = int(params["footprint_bytes"])
    ok = {"<=l1": f <= info.l1_bytes, "l1<f<=l2": info.l1_bytes < f <= info.l2_bytes, ">l2": f > info.l2_bytes}[rule]
    if not ok:
        chk.problems.append(f"working set {f} B does not satisfy {rule} on {info.device} "
                            f"(L1 {info.l1_bytes} B, L2 {info.l2_bytes} B)")


def _amd_dwords(mnemonic: str) -> int:
    """Dwords one lane moves with a memory instruction (4 for ``global_load_dwordx4``/``_b128``)."""
    m = re.search(r"_dwordx(\d+)$", mnemonic)
    if m:
        return int(m.group(1))
    if mnemonic.endswith("_dword"):
        return 1
    m = re.search(r"_b(\d+)$", mnemonic)
    return max(1, int(m.group(1)) // 32) if m else 1


def amd_params(spec: KernelSpec) -> dict[str, Any]:
    """The verify parameters of ``spec`` on AMD targets (AMD_VERIFY_PARAMS over verify_params)."""
    return {**spec.verify_params, **catalog.AMD_VERIFY_PARAMS.get(spec.name, ({}, ""))[0]}


def check_compiled_amd(spec: KernelSpec, params: Mapping[str, Any], compiled: Compiled,
                       info: ArchInfo) -> KernelCheck:
    """Check one kernel's AMDGCN assembly (``compiled``) against its spec; see the module docstring."""
    arch = compiled.arch
    gen, fam = amdgcn.generation(arch), amd_family(arch)
    min_share = catalog.AMD_MIN_SHARE.get(spec.name, {}).get(fam, (spec.min_share, ""))[0]
    chk = KernelCheck(spec.name, arch, amd_unit(spec), compiled.toolchain, min_share=min_share, params=dict(params))
    funcs = compiled.functions()
    fn = funcs.get(spec.entry)
    if fn is None:
        chk.problems.append(f"entry {spec.entry} not in the assembly (found: {', '.join(funcs) or 'none'})")
        return chk
    res = compiled.resources.get(spec.entry)
    if res is not None:
        chk.registers = res.vgprs + res.agprs
        chk.spill_stores_bytes, chk.spill_loads_bytes, chk.stack_bytes = res.vgpr_spills, res.sgpr_spills, \
            res.scratch_bytes
        if res.vgpr_spills or res.sgpr_spills:
            chk.problems.append(f"spills registers ({res.vgpr_spills} VGPRs, {res.sgpr_spills} SGPRs)")
    else:
        chk.problems.append("no code object metadata for the entry")
    level = spec.mem_level
    try:
        outside, loops = fn.main_path()
        chk.prologue_ptx = amdgcn.counts(outside, gen, level)
        chk.loops_ptx = [_merge(amdgcn.counts(fn.body(lp), gen, level), spec.merge_classes) for lp in loops]
    except ValueError as e:
        chk.problems.append(str(e))
        return chk
    models = spec.loop_models(params)
    chk.loops_model = [_merge(lm.per_trip, spec.merge_classes) for lm in models]
    if len(loops) != len(models):
        chk.problems.append(f"the ISA has {len(loops)} loop(s), the count model {len(models)} "
                            f"(a loop was folded away or added)")
    hot = next((i for i, lm in enumerate(models) if lm.hot), None)
    if hot is None or hot >= len(loops):
        if models:
            chk.problems.append("no hot loop in the ISA")
        _check_footprint(spec, params, info, chk)
        return chk
    body = fn.body(loops[hot])
    ops = catalog.AMD_HOT_OPS.get(spec.name, {}).get(fam, ())
    if ops:
        # a merged scalar/scratch access counts its dwords, in the unit count and in the share
        dwords = spec.name in catalog.AMD_COUNT_DWORDS

        def weight(ins: amdgcn.Instruction) -> int:
            return _amd_dwords(ins.base) if dwords and ins.base in ops else ins.ops

        total = sum(weight(ins) for ins in body)
        chk.unit_per_trip = float(sum(weight(ins) for ins in body if ins.base in ops))
        chk.share = chk.unit_per_trip / total if total else 0.0
        classes = spec.share_classes or (spec.stresses,)
        body_model = spec.body_counts(params)
        if any(c in body_model for c in classes):
            chk.unit_model = float(params.get("unroll", 1)) * sum(body_model.get(c, 0.0) for c in classes)
            if chk.unit_per_trip != chk.unit_model:
                chk.problems.append(f"hot loop per trip: {chk.unit_per_trip:g} {'/'.join(ops[:3])} ... operations, "
                                    f"the model {chk.unit_model:g} (unroll x body's {'/'.join(classes)})")
        if chk.share + 1e-12 < min_share:
            chk.problems.append(f"{'/'.join(ops[:3])} {'...' if len(ops) > 3 else ''}are {100 * chk.share:.1f}% of "
                                f"the hot loop's operations, below {100 * min_share:.0f}%")
    if spec.load_op:
        loads = [ins for ins in body if ins.base.startswith(("global_load", "flat_load"))]
        if not loads:
            chk.problems.append("hot loop has no global loads")
        want = spec.load_op == "cg"
        bad = [ins for ins in loads if amdgcn.bypasses_l1(ins, gen) != want]
        what = "the L1-bypass policy" if want else "no L1-bypass policy"
        for ins in bad[:3]:
            chk.problems.append(f"load without {what} ({spec.load_op}) at line {ins.line}: {ins.text}")
    _check_footprint(spec, params, info, chk)
    problem = catalog.wave_window_error(spec, params, amdgcn.wave_size(arch))
    if problem:
        chk.problems.append(problem)
    return chk


def verify(archs: Sequence[str] = DEFAULT_ARCHS, kernels: Iterable[str] | None = None,
           compiler: KernelCompiler | None = None, jobs: int = 2, l2_bytes: int | None = None,
           overrides: Mapping[str, Mapping[str, Any]] | None = None) -> list[KernelCheck]:
    """Check the kernels on each architecture; returns one :class:`KernelCheck` per (arch, kernel).

    ``overrides`` maps kernel names to parameter overrides (on top of the spec's ``verify_params``).
    Raises :class:`microbench.toolchain.ToolchainError` if an architecture has no toolchain.
    """
    compiler = compiler or KernelCompiler()
    specs = [catalog.get(n) for n in kernels] if kernels else list(catalog.KERNELS.values())
    for a in archs:
        compiler.toolchains.for_arch(a)  # fail early, with the install hint, before compiling anything
    work: list[tuple[str, KernelSpec, dict[str, Any]]] = []
    out: list[KernelCheck] = []
    for a in archs:
        for spec in specs:
            base = amd_params(spec) if is_amd(a) else spec.verify_params
            params = spec.params(**{**base, **((overrides or {}).get(spec.name, {}))})
            work.append((a, spec, params))
    units = {(s.source, tuple(sorted(s.compile_macros(p).items())), a) for a, s, p in work
             if _available(s, a)}
    groups = group_units(units)
    with cf.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futs = [(g, pool.submit(compiler.compile, tuple(sorted({u[0] for u in g})), _union_macros(g), g[0][2]))
                for g in groups]
        results = {u: f.result() for g, f in futs for u in g}
    for a, spec, params in work:
        if not _available(spec, a):
            out.append(KernelCheck(spec.name, f"sm_{arch_number(a)}", spec.stresses,
                                   skipped=f"needs {spec.min_arch}", params=dict(params)))
            continue
        key = (spec.source, tuple(sorted(spec.compile_macros(params).items())), a)
        check = check_compiled_amd if is_amd(a) else check_compiled
        out.append(check(spec, params, results[key], arch_info(a, l2_bytes)))
    return out


def _available(spec: KernelSpec, arch: str) -> bool:
    # AMD: every checked family (gfx9 CDNA, gfx11 RDNA3) has the matrix instructions of tensor.cu
    return is_amd(arch) or arch_number(arch) >= arch_number(spec.min_arch)


Unit = tuple[str, tuple[tuple[str, int], ...], str]


def _union_macros(group: Sequence[Unit]) -> dict[str, int]:
    return {k: v for _, macros, _ in group for k, v in macros}


def group_units(units: Iterable[Unit], max_sources: int = 6) -> list[list[Unit]]:
    """Compile units (source, macros, arch) packed into translation units that can share a compile.

    Units of the same architecture whose macros agree wherever both define one are compiled
    together (each source reads only its own macros), at most one unit per source and
    ``max_sources`` sources per group (so that parallel jobs stay busy).
    """
    groups: list[list[Unit]] = []
    for u in sorted(units):
        src, macros, arch = u
        mine = dict(macros)
        for g in groups:
            if g[0][2] != arch or len(g) >= max_sources or any(v[0] == src for v in g):
                continue
            theirs = _union_macros(g)
            if all(theirs.get(k, v) == v for k, v in mine.items()):
                g.append(u)
                break
        else:
            groups.append([u])
    return groups


def format_table(checks: Sequence[KernelCheck], details: bool = False) -> str:
    """The verify report: per architecture, one row per kernel."""
    lines: list[str] = []
    by_arch: dict[str, list[KernelCheck]] = {}
    for c in checks:
        by_arch.setdefault(c.arch, []).append(c)
    gpu = any(c.achieved for c in checks)
    for arch, rows in by_arch.items():
        tc = next((c.toolchain for c in rows if c.toolchain), "?")
        info = arch_info(arch)
        lines.append(f"{arch} ({tc}; working-set checks against {info.device}: L1 {info.l1_bytes // 1024} KiB, "
                     f"L2 {info.l2_bytes // (1024 * 1024)} MiB)")
        amd = is_amd(arch)
        # AMD: regs are VGPRs (+ AGPRs), spills are the code object's spilled VGPR/SGPR counts
        uw = 10 if amd else 7
        head = f"{'kernel':<16} {'unit':<{uw}} {'share':>6} {'min':>4} {'regs':>4} " \
               f"{'spill v/s' if amd else 'spill st/ld':>11} {'loop=model':>10}  result"
        if gpu:
            head += f"  {'achieved':>22} {'of peak':>7}"
        lines.append(head)
        for c in rows:
            if c.skipped:
                lines.append(f"{c.kernel:<16} {c.stresses:<{uw}} {'-':>6} {'-':>4} {'-':>4} {'-':>11} {'-':>10}  "
                             f"skipped ({c.skipped})")
                continue
            share = f"{100 * c.share:5.1f}%" if c.share is not None else "-"
            regs = str(c.registers) if c.registers is not None else "?"
            spill = f"{c.spill_stores_bytes}/{c.spill_loads_bytes}"
            row = (f"{c.kernel:<16} {c.stresses:<{uw}} {share:>6} {100 * c.min_share:3.0f}% {regs:>4} {spill:>11} "
                   f"{'yes' if c.loops_match else 'NO':>10}  {'ok' if c.ok else 'FAIL'}")
            if gpu and c.achieved:
                a = c.achieved
                pk = f"{a['percent_of_peak']:.0f}%" if a.get("percent_of_peak") is not None else "n/a"
                row += f"  {a['rate']:>14.4g} {a['unit']:<7} {pk:>7}"
            lines.append(row)
            if details or not c.ok:
                for p in c.problems:
                    lines.append(f"    - {p}")
            if details and amd:
                if c.unit_per_trip is not None:
                    model = f"{c.unit_model:g}" if c.unit_model is not None else "-"
                    lines.append(f"    hot loop unit operations per trip: ISA {c.unit_per_trip:g} | model {model}")
                for i, g in enumerate(c.loops_ptx):
                    lines.append(f"    loop {i + 1}: ISA {_fmt_counts(g)}")
                lines.append(f"    prologue: ISA {_fmt_counts(c.prologue_ptx)}")
            elif details:
                for i, (g, m) in enumerate(zip(c.loops_ptx, c.loops_model)):
                    lines.append(f"    loop {i + 1}: PTX {_fmt_counts(g)} | model {_fmt_counts(m)}")
                lines.append(f"    prologue: PTX {_fmt_counts(c.prologue_ptx)} | model {_fmt_counts(c.prologue_model)}")
        lines.append("")
    n_fail = sum(1 for c in checks if not c.ok)
    n_skip = sum(1 for c in checks if c.skipped)
    lines.append(f"{len(checks) - n_fail - n_skip} passed, {n_fail} failed, {n_skip} skipped")
    return "\n".join(lines)
