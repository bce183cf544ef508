"""The project's import graph: no circles, and no module imports a layer above its own.

Layers, bottom to top (ARCHITECTURE.md): the floor ``calib.core``; the measurement side ``microbench``
(kernels, devices, instruments, campaign); the reduction of logs (``calib.windows``, ``calib.segment``,
``calib.importers``); the models (``calib.model``, which consume a parameter file); the fitters
(``calib.fit``, which make one and use the models to predict); the outputs (``calib.report``,
``calib.report_text``, ``calib.bundle``, ``calib.progress``, ``calib.fleet``); the command line
(``calib.commands``, ``calib.cli``). Function-level (lazy) imports count: a circle hidden inside a
function is still a circle. Test doubles (``microbench.testing``) are imported by no library module.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

LAYERS = [
    {"calib", "calib.core"},
    {"microbench"},
    {"calib.windows", "calib.segment", "calib.importers"},
    {"calib.model"},
    {"calib.fit"},
    {"calib.report", "calib.report_text", "calib.bundle", "calib.progress", "calib.fleet"},
    {"calib.commands", "calib.cli", "calib.__main__"},
    {"microbench.testing"},
]


def _modules() -> dict[str, Path]:
    mods = {}
    for pkg in ("calib", "microbench"):
        for p in (ROOT / pkg).rglob("*.py"):
            parts = list(p.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = p
    return mods


def _resolve(name: str, mods: dict[str, Path]) -> str:
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports anywhere in its body (module and function level)."""
    mods = _modules()
    edges: dict[str, set[str]] = defaultdict(set)
    for m, p in mods.items():
        package = m if p.name == "__init__.py" else m.rpartition(".")[0]
        for node in ast.walk(ast.parse(p.read_text(), str(p))):
            if isinstance(node, ast.Import):
                targets = [_resolve(a.name, mods) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    name = ".".join(base + ([node.module] if node.module else []))
                else:
                    name = node.module or ""
                targets = [_resolve(f"{name}.{a.name}", mods) or _resolve(name, mods) for a in node.names]
            else:
                continue
            edges[m].update(t for t in targets if t and t != m)
    return edges


def unit(module: str) -> str:
    """The layer unit of a module: ``calib.<subpackage or module>``, ``microbench`` or ``microbench.testing``."""
    parts = module.split(".")
    if parts[0] == "microbench":
        return "microbench.testing" if parts[1:2] == ["testing"] else "microbench"
    return module if len(parts) == 1 else f"calib.{parts[1]}"


def layer(module: str) -> int:
    u = unit(module)
    for i, members in enumerate(LAYERS):
        if u in members:
            return i
    raise AssertionError(f"{module}: its unit {u} has no layer in tests/test_architecture.py and ARCHITECTURE.md")


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def test_graph_is_read():
    # the checks below mean something only if the graph is the project's: known edges are present
    g = import_graph()
    assert "calib.core.activity" in g["calib.model.predict"]
    assert "calib.model.predict" in g["calib.model.intervals"]
    assert "calib.commands.fit" in _modules() and len(_modules()) > 100


def test_no_import_circles():
    assert cycles(import_graph()) == []


def test_no_module_imports_a_layer_above_its_own():
    upward = sorted(f"{a} ({unit(a)}) imports {b} ({unit(b)})" for a, bs in import_graph().items() for b in bs
                    if layer(b) > layer(a))
    assert upward == []


def test_test_doubles_and_truth_stay_out_of_the_library():
    g = import_graph()
    doubles = sorted(f"{a} -> {b}" for a, bs in g.items() for b in bs
                     if unit(b) == "microbench.testing" and unit(a) != "microbench.testing")
    assert doubles == []
    # the ground truth of the virtual GPU is read by the recovery report only, never by a fitter or model
    truth = {"microbench.truth", "microbench.timing_truth", "microbench.thermal_truth"}
    readers = sorted({a for a, bs in g.items() for b in bs if b in truth and unit(a).startswith("calib")})
    assert readers == ["calib.report.recovery"]


def test_cycle_detector_finds_a_planted_circle():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(g) == [["a", "b", "c"]]
