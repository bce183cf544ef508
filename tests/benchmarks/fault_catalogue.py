"""The fault catalogue: every robustness test of the suite (bad input refused, faults survived), counted.

Run by hand from the project's root:  .venv/bin/python tests/benchmarks/fault_catalogue.py [--list]

A test counts when its body (or a helper it is parametrized through) asserts a refusal or survives an
injected fault, recognised by what it asserts:

- a refusal: ``pytest.raises(...)`` of the toolkit's errors (BadInputError, SchemaError, FitError,
  BundleError, SessionInUseError, Device*Error, CalibError) or of ValueError/TypeError/KeyError for bad
  arguments; an exit status 2 (``rc == 2``, ``code == 2``, ``returncode == 2``, ``main(...) == 2``);
  an ``ERROR:`` line;
- a fault: SIGKILL/SIGTERM/Ctrl-C (KeyboardInterrupt, exit 130), a full disk (ENOSPC, "No space left"),
  a closed pipe (BrokenPipe), a lost device or instrument (NVML errors, unplugged/garbled serial lines),
  a killed or concurrent writer (stale lock, "in use by pid").

Counts are of collected test cases (each parametrized case once), from ``pytest --collect-only``.
"""

from __future__ import annotations

import ast
import copy
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

REFUSAL = re.compile(
    r"pytest\.raises\(\s*\(?\s*(BadInputError|SchemaError|FitError|BundleError|SessionInUseError|Device\w*Error|"
    r"CalibError|ValueError|TypeError|KeyError|SystemExit|\w*Error)"
    r"|EXIT_STATUS_2|==\s*EXIT_USAGE|ERROR:")
FAULT = re.compile(
    r"SIGKILL|SIGTERM|SIGINT|KeyboardInterrupt|== 130\b|ENOSPC|No space left|BrokenPipe|closed pipe|"
    r"NVML_ERROR|NVMLError|GPU_IS_LOST|unplug|garbl|truncat|partial (last )?line|killed|stale lock|in use by pid|"
    r"corrupt|tamper|implausible|99999|flip_byte|os\.replace.*raise|full disk|raise OSError|Input/output error")


def _collect() -> list[str]:
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-o", "addopts=", "-q", "-p", "no:warnings", "tests"],
                       cwd=ROOT, capture_output=True, text=True)
    return [line for line in r.stdout.splitlines() if "::" in line]


def _code(node: ast.AST) -> str:
    """The code of a function or expression without its docstring and comments (``ast.unparse``), so that
    a word in prose ("killed", "corrupt") does not make a test count: only what it runs and asserts."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.body and \
            isinstance(node.body[0], ast.Expr) and isinstance(getattr(node.body[0], "value", None), ast.Constant) \
            and isinstance(node.body[0].value.value, str):
        node = copy.copy(node)
        node.body = node.body[1:] or [ast.Pass()]
    marks = ["EXIT_STATUS_2" for c in ast.walk(node) if isinstance(c, ast.Compare) and _is_exit_2(c)]
    return ast.unparse(node) + ("\n" + "\n".join(marks) if marks else "")


#: what an exit status is read from: ``main(...)``/``cli(...)`` calls, ``p.wait()``, and names like ``rc``
_STATUS_CALLS = {"main", "cli", "run_cli", "wait"}
_STATUS_NAMES = {"rc", "code", "returncode", "status", "exit_code", "exit_status"}


def _is_exit_2(c: ast.Compare) -> bool:
    """``X == 2`` (either side) where X is an exit status: an exit status of 2 asserted (bad input)."""
    if len(c.ops) != 1 or not isinstance(c.ops[0], ast.Eq):
        return False
    a, b = c.left, c.comparators[0]
    for x, y in ((a, b), (b, a)):
        if isinstance(y, ast.Constant) and y.value == 2 and not isinstance(y.value, bool):
            if isinstance(x, ast.Call):
                f = x.func
                name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
                if name in _STATUS_CALLS:
                    return True
            if isinstance(x, ast.Name) and x.id in _STATUS_NAMES:
                return True
            if isinstance(x, ast.Attribute) and x.attr in _STATUS_NAMES:
                return True
    return False


def _functions(path: Path) -> dict[str, str]:
    """Test function name -> its code, the code of its decorators (parametrize tables) and of the
    module's own helper functions it calls (e.g. an ``_error(capsys)`` that asserts the ERROR line)."""
    tree = ast.parse(path.read_text())
    helpers = {n.name: _code(n) for n in tree.body
               if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not n.name.startswith("test")}
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            deco = "\n".join(_code(d) for d in node.decorator_list)
            called = {c.func.id for c in ast.walk(node) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
            out[node.name] = deco + "\n" + _code(node) + "\n" + "\n".join(helpers[h] for h in called if h in helpers)
    return out


def main() -> None:
    nodes = _collect()
    per_file: dict[str, list[str]] = defaultdict(list)
    kinds: dict[str, int] = defaultdict(int)
    cache: dict[str, dict[str, str]] = {}
    for nodeid in nodes:
        file, _, rest = nodeid.partition("::")
        func = rest.split("::")[-1].split("[")[0]
        if file not in cache:
            cache[file] = _functions(ROOT / file)
        src = cache[file].get(func, "")
        fault, refusal = bool(FAULT.search(src)), bool(REFUSAL.search(src))
        if fault or refusal:
            per_file[file].append(nodeid)
            kinds["fault" if fault else "refusal"] += 1
    total = sum(len(v) for v in per_file.values())
    print(f"{total} robustness test cases of {len(nodes)} collected, in {len(per_file)} files "
          f"({kinds['refusal']} bad-input refusals, {kinds['fault']} injected faults/attacks)")
    for f, ids in sorted(per_file.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(ids):4d}  {f}")
        if "--list" in sys.argv:
            for i in ids:
                print(f"          {i.split('::', 1)[1]}")


if __name__ == "__main__":
    main()
