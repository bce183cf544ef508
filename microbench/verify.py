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
"""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from microbench import ptx
from microbench.kernels import catalog
from microbench.kernels.catalog import KernelSpec
from microbench.toolchain import Compiled, KernelCompiler, arch_number

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


def arch_info(arch: str, l2_bytes: int | None = None) -> ArchInfo:
    """Reference device of ``arch`` (the closest older one for unlisted architectures)."""
    a = arch_number(arch)
    older = [k for k in ARCHS if k <= a]
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

    @property
    def ok(self) -> bool:
        return self.skipped is not None or not self.problems

    @property
    def loops_match(self) -> bool:
        return not self.skipped and len(self.loops_ptx) == len(self.loops_model) and all(
            _same(a, b) for a, b in zip(self.loops_ptx, self.loops_model))


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


def _kernel_list(names: Iterable[str] | None) -> list[KernelSpec]:
    if not names:
        return list(catalog.KERNELS.values())
    return [catalog.get(n) for n in names]


def verify(archs: Sequence[str] = DEFAULT_ARCHS, kernels: Iterable[str] | None = None,
           compiler: KernelCompiler | None = None, jobs: int = 2, l2_bytes: int | None = None,
           overrides: Mapping[str, Mapping[str, Any]] | None = None) -> list[KernelCheck]:
    """Check the kernels on each architecture; returns one :class:`KernelCheck` per (arch, kernel).

    ``overrides`` maps kernel names to parameter overrides (on top of the spec's ``verify_params``).
    Raises :class:`microbench.toolchain.ToolchainError` if an architecture has no toolchain.
    """
    compiler = compiler or KernelCompiler()
    specs = _kernel_list(kernels)
    for a in archs:
        compiler.toolchains.for_arch(a)  # fail early, with the install hint, before compiling anything
    work: list[tuple[str, KernelSpec, dict[str, Any]]] = []
    out: list[KernelCheck] = []
    for a in archs:
        for spec in specs:
            params = spec.params(**{**spec.verify_params, **((overrides or {}).get(spec.name, {}))})
            work.append((a, spec, params))
    units = {(s.source, tuple(sorted(s.compile_macros(p).items())), a) for a, s, p in work
             if arch_number(a) >= arch_number(s.min_arch)}
    groups = group_units(units)
    with cf.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futs = [(g, pool.submit(compiler.compile, tuple(sorted({u[0] for u in g})), _union_macros(g), g[0][2]))
                for g in groups]
        results = {u: f.result() for g, f in futs for u in g}
    for a, spec, params in work:
        if arch_number(a) < arch_number(spec.min_arch):
            out.append(KernelCheck(spec.name, f"sm_{arch_number(a)}", spec.stresses,
                                   skipped=f"needs {spec.min_arch}", params=dict(params)))
            continue
        key = (spec.source, tuple(sorted(spec.compile_macros(params).items())), a)
        out.append(check_compiled(spec, params, results[key], arch_info(a, l2_bytes)))
    return out


Unit = tuple[str, tuple[tuple[str, int], ...], str]


def _union_macros(group: Sequence[Unit]) -> dict[str, int]:
    out: dict[str, int] = {}
    for _, macros, _ in group:
        out.update(dict(macros))
    return out


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
        head = f"{'kernel':<16} {'unit':<7} {'share':>6} {'min':>4} {'regs':>4} {'spill st/ld':>11} " \
               f"{'loop=model':>10}  result"
        if gpu:
            head += f"  {'achieved':>22} {'of peak':>7}"
        lines.append(head)
        for c in rows:
            if c.skipped:
                lines.append(f"{c.kernel:<16} {c.stresses:<7} {'-':>6} {'-':>4} {'-':>4} {'-':>11} {'-':>10}  "
                             f"skipped ({c.skipped})")
                continue
            share = f"{100 * c.share:5.1f}%" if c.share is not None else "-"
            regs = str(c.registers) if c.registers is not None else "?"
            spill = f"{c.spill_stores_bytes}/{c.spill_loads_bytes}"
            row = (f"{c.kernel:<16} {c.stresses:<7} {share:>6} {100 * c.min_share:3.0f}% {regs:>4} {spill:>11} "
                   f"{'yes' if c.loops_match else 'NO':>10}  {'ok' if c.ok else 'FAIL'}")
            if gpu and c.achieved:
                a = c.achieved
                pk = f"{a['percent_of_peak']:.0f}%" if a.get("percent_of_peak") is not None else "n/a"
                row += f"  {a['rate']:>14.4g} {a['unit']:<7} {pk:>7}"
            lines.append(row)
            if details or not c.ok:
                for p in c.problems:
                    lines.append(f"    - {p}")
            if details:
                for i, (g, m) in enumerate(zip(c.loops_ptx, c.loops_model)):
                    lines.append(f"    loop {i + 1}: PTX {_fmt_counts(g)} | model {_fmt_counts(m)}")
                lines.append(f"    prologue: PTX {_fmt_counts(c.prologue_ptx)} | model {_fmt_counts(c.prologue_model)}")
        lines.append("")
    n_fail = sum(1 for c in checks if not c.ok)
    n_skip = sum(1 for c in checks if c.skipped)
    lines.append(f"{len(checks) - n_fail - n_skip} passed, {n_fail} failed, {n_skip} skipped")
    return "\n".join(lines)
