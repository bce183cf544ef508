"""PTX parsing and classification of instructions into the IPP instruction classes.

The count model of every kernel (:mod:`microbench.kernels.catalog`) is checked against the PTX the
compiler emits. This module turns PTX text into functions, instructions, loops and a dynamic path,
and maps each instruction to a class of :data:`calib.core.units.INSTRUCTION_CLASSES` following IPP
Table 1 / thesis Table 7, extended for FP64, tensor cores and the cache levels:

========  ==========================================================================================
class     PTX instructions
========  ==========================================================================================
fp        add sub mul fma mad min max abs neg div copysign on .f32/.f16/.bf16 (and packed) types
dp        the same on .f64, and rcp/sqrt/rsqrt on .f64
int       add sub mul mad mul24 mad24 sad div rem abs neg min max addc subc madc dp4a dp2a on integer
          types
sfu       sin cos lg2 ex2 rsqrt tanh, and rcp sqrt on .f32/.f16 (ex2/lg2 are SFU: see calib.core.units)
tensor    mma wmma.mma wgmma
alu       logic/shift (and or xor not cnot shl shr shf lop3 prmt bfe bfi ...), mov cvt cvta set setp
          selp slct, warp vote/shuffle
ctrl      bra ret exit bar barrier (incl. bar.warp.sync) membar fence call trap nanosleep
shared    ld/st/atom on .shared, ldmatrix, cp.async
const     ld.const and ld.param (kernel parameters live in a constant bank)
tex       ld.global.nc, ldu, tex, tld4, suld
l1/l2/    global (and generic) loads/stores, placed by the kernel's declared memory level: a load
global    that may allocate in L1 (.ca or no cache operator) is ``l1`` when the kernel's working
          set fits in L1; a load that bypasses L1 (.cg .cs .cv .lu .volatile) or any store is
          ``l2`` when the working set fits in L2; otherwise ``global`` (DRAM)
local     ld/st on .local
========  ==========================================================================================

Loops are found from backward branches. The *dynamic path* of a kernel (what one warp executes)
is: the instructions outside loops along the main path, plus each loop's body once per trip. On the
main path a conditional forward branch is taken unless it jumps over a loop: the only forward
branches outside loops in these kernels are loop guards (``iters < 1``: not taken) and the guard of
the never-true store (taken).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar


#: memory levels a kernel can declare for its global accesses
MEM_LEVELS = ("l1", "l2", "dram")


@dataclass(frozen=True)
class Instruction:
    """One PTX instruction: guard predicate (e.g. ``%p1`` or ``!%p1``), opcode with modifiers, operands."""

    line: int
    pred: str | None
    opcode: str
    operands: str
    #: operations one instruction counts for (see :func:`tally`)
    ops: ClassVar[int] = 1

    @property
    def base(self) -> str:
        """The opcode without modifiers (``fma`` for ``fma.rn.f32``)."""
        return self.opcode.split(".", 1)[0]

    @property
    def mods(self) -> tuple[str, ...]:
        return tuple(self.opcode.split(".")[1:])

    @property
    def text(self) -> str:
        guard = f"@{self.pred} " if self.pred else ""
        return f"{guard}{self.opcode} {self.operands}".strip()

    def branch_target(self) -> str | None:
        """Label a ``bra`` jumps to (None for other instructions)."""
        if self.base != "bra":
            return None
        return self.operands.strip().split(",")[0].strip() or None

    @property
    def conditional(self) -> bool:
        """Whether a branch depends on a guard predicate."""
        return self.pred is not None

    @property
    def exits(self) -> bool:
        """Whether the instruction ends the kernel (``ret``, ``exit``)."""
        return self.base in ("ret", "exit")


@dataclass(frozen=True)
class Loop:
    """A loop: instructions ``start`` .. ``end`` (inclusive; ``end`` is the backward branch)."""

    header: str
    start: int
    end: int

    def contains(self, other: Loop) -> bool:
        return self.start <= other.start and other.end <= self.end and self != other


@dataclass
class CodeFunction:
    """A function of an assembly listing: instructions, labels, loops and the kernel's main path.

    The instructions (PTX here, AMDGCN in :mod:`microbench.amdgcn`) give ``branch_target()`` (the
    label a branch jumps to, else None), ``conditional`` (the branch depends on a run-time
    condition) and ``exits`` (the instruction ends the kernel).
    """

    name: str
    kind: str
    instructions: list = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)  # label -> index of the next instruction

    def loops(self) -> list[Loop]:
        """Innermost loops, in program order.

        A loop runs from its header label to the last backward branch to that header: a body with a
        skipped block (AMDGCN's ``s_cbranch_execz`` back to a latch placed before the header) has
        two backward branches to one header and is one loop.
        """
        last: dict[str, int] = {}
        for i, ins in enumerate(self.instructions):
            target = ins.branch_target()
            if target is not None and target in self.labels and self.labels[target] <= i:
                last[target] = i
        found = [Loop(t, self.labels[t], i) for t, i in last.items()]
        inner = [lp for lp in found if not any(lp.contains(o) for o in found)]
        return sorted(inner, key=lambda lp: lp.start)

    def body(self, loop: Loop) -> list[Instruction]:
        return self.instructions[loop.start: loop.end + 1]

    def main_path(self) -> tuple[list[Instruction], list[Loop]]:
        """(instructions executed outside loops, loops entered in order) on the kernel's main path.

        See the module docstring for the branch rule. Raises ``ValueError`` if the walk does not
        reach ``ret``/``exit`` (e.g. a branch to an unknown label).
        """
        loops = self.loops()
        by_start = {lp.start: lp for lp in loops}
        # a jump into a loop's body (a rotated loop entered at its header) enters the loop
        by_index = {k: lp for lp in loops for k in range(lp.start, lp.end + 1)}
        outside: list[Instruction] = []
        entered: list[Loop] = []
        i, n, steps = 0, len(self.instructions), 0
        while i < n:
            steps += 1
            if steps > 10 * n + 10:
                raise ValueError(f"{self.name}: control flow walk does not terminate")
            if i in by_start:
                lp = by_start[i]
                entered.append(lp)
                i = lp.end + 1
                continue
            ins = self.instructions[i]
            outside.append(ins)
            if ins.exits:
                return outside, entered
            target = ins.branch_target()
            if target is None:
                i += 1
                continue
            if target not in self.labels:
                raise ValueError(f"{self.name}: branch to unknown label {target} (line {ins.line})")
            dest = self.labels[target]
            if not ins.conditional:
                into = by_index.get(dest)
                i = into.start if into is not None and not into.start <= i <= into.end else dest
            elif dest > i and any(i < lp.start < dest for lp in loops):
                i += 1  # loop guard: the loop runs
            else:
                i = dest  # guard of code that never runs (the never-true store)
        raise ValueError(f"{self.name}: control flow runs off the end without ret/exit")


@dataclass
class PtxFunction(CodeFunction):
    """A kernel (``.entry``) or device function (``.func``) of a PTX module."""


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_ENTRY = re.compile(r"\.(entry|func)\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)\s*\(", re.DOTALL)
_LABEL = re.compile(r"([A-Za-z_$%][\w$%]*)\s*:(?!:)")
_PRED = re.compile(r"@(!?%?[\w$]+)\s+")


def parse_module(text: str) -> dict[str, PtxFunction]:
    """Functions of a PTX module by name, with their instructions and labels."""
    clean = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    funcs: dict[str, PtxFunction] = {}
    pos = 0
    while True:
        m = _ENTRY.search(clean, pos)
        if not m:
            break
        kind, name = m.group(1), m.group(2)
        # skip the parameter list, then find the body's braces
        depth, j = 1, m.end()
        while depth and j < len(clean):
            depth += {"(": 1, ")": -1}.get(clean[j], 0)
            j += 1
        k = j
        while k < len(clean) and clean[k] not in "{;":
            k += 1
        if k >= len(clean) or clean[k] == ";":  # a declaration without a body
            pos = k + 1
            continue
        func = PtxFunction(name, kind)
        end = _parse_body(clean, k + 1, func)
        funcs[name] = func
        pos = end
    return funcs


def _parse_body(text: str, i: int, func: PtxFunction) -> int:
    depth = 1
    n = len(text)
    line, line_pos = text.count("\n", 0, i) + 1, i  # line number of position line_pos
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        if c == "{":
            depth += 1
            i += 1
            continue
        if c == "}":
            depth -= 1
            i += 1
            if depth == 0:
                return i
            continue
        line += text.count("\n", line_pos, i)
        line_pos = i
        lm = _LABEL.match(text, i)
        if lm and not text.startswith(".", i):
            func.labels[lm.group(1)] = len(func.instructions)
            i = lm.end()
            continue
        semi = text.find(";", i)
        if semi < 0:
            raise ValueError(f"{func.name}: unterminated statement at line {line}")
        stmt = " ".join(text[i:semi].split())
        i = semi + 1
        if stmt.startswith("."):
            continue  # directive: .reg, .pragma, .local, .shared, .loc ...
        pred = None
        pm = _PRED.match(stmt)
        if pm:
            pred = pm.group(1)
            stmt = stmt[pm.end():]
        opcode, _, operands = stmt.partition(" ")
        func.instructions.append(Instruction(line, pred, opcode, operands.strip()))
    raise ValueError(f"{func.name}: function body is not closed")


_FLOAT_TYPES = frozenset({"f32", "f16", "f16x2", "bf16", "bf16x2", "tf32", "e4m3x2", "e5m2x2"})
_INT_TYPES = frozenset({"s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "b8", "b16", "b32", "b64"})
_ARITH = frozenset({"add", "sub", "mul", "mad", "fma", "min", "max", "abs", "neg", "div", "rem", "sad",
                    "mul24", "mad24", "addc", "subc", "madc", "copysign"})
_SFU = frozenset({"sin", "cos", "lg2", "ex2", "rsqrt", "tanh"})
_ALU = frozenset({"and", "or", "xor", "not", "cnot", "shl", "shr", "shf", "lop3", "prmt", "bfe", "bfi",
                  "bfind", "brev", "clz", "popc", "fns", "mov", "cvt", "cvta", "set", "setp", "selp",
                  "slct", "testp", "isspacep", "vote", "activemask", "shfl", "match", "elect"})
_CTRL = frozenset({"bra", "brx", "ret", "exit", "bar", "barrier", "membar", "fence", "call", "trap",
                   "brkpt", "nanosleep", "pmevent", "griddepcontrol"})
_MEM = frozenset({"ld", "st", "ldu", "atom", "red", "prefetch", "prefetchu", "ldmatrix", "stmatrix",
                  "cp", "tex", "tld4", "txq", "suld", "sust", "sured", "suq"})
_L1_BYPASS = frozenset({"cg", "cs", "cv", "lu", "volatile", "relaxed", "acquire", "release", "mmio"})


def _type(mods: Iterable[str]) -> str | None:
    """The operand type of an instruction: its last type modifier (e.g. f32 for cvt.rn.f32.u32's dest)."""
    types = [m for m in mods if m in _FLOAT_TYPES or m in _INT_TYPES or m == "f64" or m == "pred"]
    return types[-1] if types else None


def classify(ins: Instruction, mem_level: str = "dram") -> str | None:
    """Instruction class of ``ins`` (None if the instruction is not known).

    ``mem_level`` is where the kernel's global accesses are served (``l1``, ``l2`` or ``dram``;
    see the module docstring).
    """
    if mem_level not in MEM_LEVELS:
        raise ValueError(f"mem_level must be one of {MEM_LEVELS}, not {mem_level!r}")
    base, mods = ins.base, ins.mods
    if base in _CTRL:
        return "ctrl"
    if base in ("mma", "wgmma") or (base == "wmma" and mods[:1] == ("mma",)):
        return "tensor"
    if base in _MEM or base == "wmma":
        return _classify_memory(base, mods, mem_level)
    ty = _type(mods)
    if base in _SFU or base in ("rcp", "sqrt"):
        return "dp" if ty == "f64" else "sfu"
    if base in ("dp4a", "dp2a"):
        return "int"
    if base in _ARITH:
        if ty == "f64":
            return "dp"
        if ty in _FLOAT_TYPES:
            return "fp"
        if ty in _INT_TYPES:
            return "int"
        return None
    if base in _ALU:
        return "alu"
    return None


def _classify_memory(base: str, mods: tuple[str, ...], mem_level: str) -> str:
    space = next((m for m in mods if m in ("global", "shared", "local", "const", "param")), None)
    if base in ("ldmatrix", "stmatrix", "cp") or space == "shared" or any(m.startswith("shared") for m in mods):
        return "shared"
    if space == "local":
        return "local"
    if space in ("const", "param"):
        return "const"
    if base in ("tex", "tld4", "txq", "suld", "sust", "sured", "suq", "ldu") or "nc" in mods:
        return "tex"
    is_read = base in ("ld", "prefetch", "prefetchu") or (base == "wmma" and "load" in mods)
    return place_global(mem_level, bypass=(not is_read) or any(m in _L1_BYPASS for m in mods))


def place_global(mem_level: str, bypass: bool) -> str:
    """Class of a global access by the kernel's memory level (module docstring): ``l1`` for an L1 kernel's
    load that may allocate in L1 (not ``bypass``), ``l2`` for the rest of an L1 or L2 kernel, else ``global``."""
    if mem_level == "l1":
        return "l2" if bypass else "l1"
    return "l2" if mem_level == "l2" else "global"


def tally(instructions: Iterable, classify: Callable[[Any], str | None], isa: str) -> dict[str, float]:
    """Operation counts (``ins.ops`` each) by class; ``ValueError`` naming an instruction ``classify`` cannot
    place (``isa`` names the listing)."""
    out: dict[str, float] = {}
    for ins in instructions:
        cls = classify(ins)
        if cls is None:
            raise ValueError(f"unclassified {isa} instruction at line {ins.line}: {ins.text}")
        out[cls] = out.get(cls, 0.0) + ins.ops
    return out


def counts(instructions: Iterable[Instruction], mem_level: str = "dram") -> dict[str, float]:
    """Instruction counts by class. Raises ``ValueError`` naming any instruction it cannot classify."""
    return tally(instructions, lambda ins: classify(ins, mem_level), "PTX")
