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
    assert "calib.model.registry" in g["calib.model.intervals"]
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


# -- one home per equation --------------------------------------------------------------------------------

def code_of(path: Path) -> str:
    """A module's code as one line of tokens separated by spaces (``a.b`` kept together), without comments
    and docstrings, so that an equation is found however it is spaced or commented."""
    import io
    import re
    import tokenize

    out, prev = [], tokenize.NEWLINE
    for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        if tok.type == tokenize.COMMENT:
            continue
        if tok.type == tokenize.STRING and prev in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            continue  # a docstring: a string that is a statement by itself
        if tok.type != tokenize.NL:
            prev = tok.type
        if tok.type in (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
            out.append("\n" if tok.type == tokenize.NEWLINE else "")
            continue
        out.append(tok.string)
    return re.sub(r" ?\. ?", ".", " ".join(out))


#: each model equation as its code reads (a regular expression over :func:`code_of`), and the modules that
#: may write it: its home (calib/ARCHITECTURE.md "One home per formula"); everyone else calls the home
EQUATIONS = {
    "IPP eqs. (10)-(12): access rate": (r"/ \( [\w.]*cycles[\w.]* \* [\w.]*issue", {"calib/core/activity.py"}),
    "IPP eq. (14): S(n), alpha = (10 - beta) / N": (r"\( 10(\.0)? - [\w.]*beta\w* \)", {"calib/model/ipp.py"}),
    "IPP eqs. (13)-(16): MaxPower x AR'": (r"max_power \( \w+ \) \] \*", {"calib/model/ipp.py"}),
    "IPP eq. (22): sigma x (T - Idle_temp)": (r"(sigma|leak)\w*[\"'\] ]*\* [^\n]{0,80}? - [\w.\[\]\"' ]*(idle_temp|temp_ref|idle\b)",
                                             {"calib/model/thermal.py"}),
    "DVFS dynamic power V^2 f / f0": (r"(\w+) \* \1 \* \( [\w.]+ / [\w.]*f0", {"calib/model/dvfs.py"}),
    "thermal RC: exp(-t / RC)": (r"\bexp \( -", {"calib/model/thermal.py", "calib/model/thermal_network.py"}),
    "MWP/CWP eq. (16): Mem_L / Departure_delay": (r"mem_l\w* / dep\w*", {"calib/model/mwp_cwp.py"}),
    "MWP/CWP eq. (8): (Mem_cycles + Comp_cycles) / Comp_cycles": (r"\( mem_cycles \+ comp\w* \) / comp",
                                                                  {"calib/model/mwp_cwp.py"}),
}


def equation_sites(root: Path = ROOT) -> dict[str, list[str]]:
    """Equation -> the library modules (under calib/) whose code writes it."""
    import re

    codes = {p.relative_to(root).as_posix(): code_of(p) for p in (root / "calib").rglob("*.py")}
    return {eq: sorted(m for m, c in codes.items() if re.search(pat, c)) for eq, (pat, _) in EQUATIONS.items()}


def test_each_model_equation_is_written_in_its_home_only():
    """A fitter, a report or a second model that writes an equation again (the IPP fitter's evaluator,
    the DVFS fitter's design, the five copies of eq. 22 before issue 28) lets the copies drift: a change of
    the S(n) coefficient in one was caught by a consistency test only. The equation is found in its home
    (so the pattern still reads the code) and nowhere else in calib/."""
    sites = equation_sites()
    for eq, (_, homes) in EQUATIONS.items():
        assert sites[eq] and set(sites[eq]) <= homes, (eq, sites[eq])


def test_equation_guard_finds_a_planted_copy(tmp_path):
    """The guard is not blind: each equation written the way the copies before issue 28 were is found."""
    import shutil

    shutil.copytree(ROOT / "calib", tmp_path / "calib")
    (tmp_path / "calib" / "fit" / "planted.py").write_text(
        "def f(v, x, idle_temp_c, n, beta, d, vc, fc, f0c, mem_l, dep_delay, mem_cycles, comp, t, tau, ar, cycles, wps, issue):\n"
        "    a = (10.0 - beta) / n\n"
        "    p = v['max_power_fp_w'] if False else v[names.max_power(u)] * ar\n"
        "    p = p + v['sigma_w_per_c'] * (x - idle_temp_c)\n"
        "    k = vc * vc * (fc / f0c)\n"
        "    e = np.exp(-t / tau)\n"
        "    m = mem_l / dep_delay\n"
        "    c = (mem_cycles + comp) / comp\n"
        "    r = wps / (cycles * issue)\n"
        "    return a, p, k, e, m, c, r\n")
    sites = equation_sites(tmp_path)
    assert [eq for eq in EQUATIONS if "calib/fit/planted.py" not in sites[eq]] == []
