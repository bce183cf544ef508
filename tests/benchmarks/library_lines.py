"""Count the library's lines (calib/ and microbench/) by kind: code, docstring, comment, blank.

Usage: python tests/benchmarks/library_lines.py [ROOT ...]   (default: calib microbench)

A line is a docstring line when it lies inside a string token that is a statement of its own
(a module, class or function docstring, or any other bare string); a comment line holds only a
comment; a blank line holds nothing; every other line is code (a code line with a trailing
comment counts as code). The total equals `find calib microbench -name '*.py' | xargs cat | wc -l`.
Figures: tests/benchmarks/library_lines.md.
"""
import io
import sys
import tokenize
from collections import Counter
from pathlib import Path


def classify(source):
    """Counter of line kinds ("code", "docstring", "comment", "blank") of one Python source."""
    lines = source.splitlines()
    kinds = {}
    prev = tokenize.NEWLINE
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        first, last = tok.start[0], tok.end[0]
        if tok.type == tokenize.STRING and prev in (tokenize.NEWLINE, tokenize.INDENT,
                                                    tokenize.DEDENT, tokenize.NL, None):
            for n in range(first, last + 1):
                kinds.setdefault(n, "docstring")
        elif tok.type == tokenize.COMMENT:
            kinds.setdefault(first, "comment")
        elif tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                              tokenize.ENDMARKER):
            for n in range(first, last + 1):
                kinds[n] = "code"
        if tok.type not in (tokenize.COMMENT, tokenize.NL):
            prev = tok.type
    out = Counter()
    for n, text in enumerate(lines, 1):
        out[kinds.get(n, "blank" if not text.strip() else "code")] += 1
    return out


def main(roots):
    total = Counter()
    for root in roots:
        for path in sorted(Path(root).rglob("*.py")):
            total += classify(path.read_text())
    print(f"{'total':>10} {sum(total.values()):7d}")
    for kind in ("code", "docstring", "comment", "blank"):
        print(f"{kind:>10} {total[kind]:7d}")


if __name__ == "__main__":
    main(sys.argv[1:] or ["calib", "microbench"])
