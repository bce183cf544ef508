"""The ``calib`` command: ``main(argv) -> exit status`` and a parser factory.

Exit status (contract): 0 success; 2 bad input or usage (one ``ERROR:`` line, no traceback); 1 any
other failure; 130 on Ctrl-C. Each verb lives in its own module under :mod:`calib.commands` with
``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``; heavy imports happen inside ``run``.
"""

from __future__ import annotations

import os

# one BLAS thread: the fits are many small dense problems, and on a shared 2-core machine threaded BLAS
# made them 6-30x slower (measured); users can still override with the environment variables
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import importlib  # noqa: E402
import importlib.util  # noqa: E402
import io  # noqa: E402
import logging  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Sequence  # noqa: E402

from calib import __version__  # noqa: E402
from calib.core.atomic import silence_stdout  # noqa: E402
from calib.core.errors import CalibError  # noqa: E402

#: verb -> module in calib.commands (the verb's name, ``-`` as ``_``; ``import`` is a keyword). Verbs whose
#: module is not installed are not offered.
VERBS: dict[str, str] = {v: {"import": "importcmd"}.get(v, v.replace("-", "_")) for v in (
    "run", "devices", "samples", "fit", "predict", "validate", "import", "validate-model", "log", "doctor", "selftest",
    "optimize", "advise", "report", "diff", "publish", "verify-bundle", "fleet", "hotspot", "keygen")}

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

#: options of the verbs that name a table or JSON output; ``-`` streams it to stdout (messages go to stderr)
STREAMED_OUTPUTS = ("output", "json", "table", "sms_output")


class _PipeGuard(io.TextIOBase):
    """Standard output that survives a reader which stops early (``calib diff ... | head -1``): the first
    write to a closed pipe points stdout at /dev/null and the verb runs on, so that its exit status
    (e.g. 3 of ``calib diff``) is the command's, not the broken pipe's."""

    def __init__(self, inner):  # noqa: ANN001
        self._inner = inner
        self.broken = False

    def write(self, s: str) -> int:
        if not self.broken:
            try:
                return self._inner.write(s)
            except BrokenPipeError:
                self._break()
        return len(s)

    def flush(self) -> None:
        if not self.broken:
            try:
                self._inner.flush()
            except BrokenPipeError:
                self._break()

    def _break(self) -> None:
        self.broken = True
        silence_stdout(self._inner)

    def isatty(self) -> bool:
        return not self.broken and self._inner.isatty()

    def fileno(self) -> int:
        return self._inner.fileno()

    @property
    def buffer(self):  # noqa: ANN201 - binary writes (-o -) go to the same stream
        return self._inner.buffer

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._inner, "encoding", "utf-8")

    def writable(self) -> bool:
        return True


class _HelpFormatter(argparse.HelpFormatter):
    """Descriptions wrapped to the terminal; the epilog (the example) kept as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith("example:"):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one ERROR line + usage, exit 2
        self.print_usage(sys.stderr)
        sys.stderr.write(f"ERROR: {message}\n")
        raise SystemExit(EXIT_USAGE)


def get_parser() -> argparse.ArgumentParser:
    """Build the argument parser (all verbs that are installed)."""
    parser = _Parser(prog="calib", description="Calibrate GPU power, performance and thermal models.")
    parser.add_argument("--version", action="version", version=f"calib {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more output: -v progress of the work (INFO), -vv debug with wire traces of instruments "
                             "and NVML calls, and tracebacks")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="print nothing but warnings and errors (no progress output)")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    for verb, modname in VERBS.items():
        if importlib.util.find_spec(f"calib.commands.{modname}") is None:
            continue
        mod = importlib.import_module(f"calib.commands.{modname}")
        # one example per verb (EPILOG; tests/test_cli_friction.py parses each one with this parser)
        p = sub.add_parser(verb, help=mod.HELP, description=getattr(mod, "DESCRIPTION", mod.HELP),
                           epilog=getattr(mod, "EPILOG", None), formatter_class=_HelpFormatter)
        p.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                       help="print nothing but warnings and errors (no progress output)")
        p.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS, help="more output")
        mod.add_arguments(p)
        p.set_defaults(_module=mod)
    return parser


def _configure_logging(verbose: int) -> None:
    """-v: INFO (what the toolkit does, step by step), -vv: DEBUG (wire traces of instruments and NVML
    calls); the default shows warnings only. Library modules log through ``logging.getLogger(__name__)``."""
    level = logging.WARNING if verbose <= 0 else logging.INFO if verbose == 1 else logging.DEBUG
    root = logging.getLogger()
    for h in list(root.handlers):
        if getattr(h, "_calib", False):
            root.removeHandler(h)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler._calib = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)


def _warning_printer():  # noqa: ANN202 - a warnings.showwarning
    """``warnings.showwarning`` for one command: ``WARNING: <message>`` on stderr, each message once. Python's
    own once-per-location registry is cleared whenever a library changes the warning filters (a
    ``catch_warnings`` block does), so a warning raised on every call of a model printed once per call
    (``predict --clocks`` printed one clamp warning four times)."""
    seen: set[str] = set()

    def show(message, category, filename, lineno, file=None, line=None):  # noqa: ANN001
        text = str(message)
        if text not in seen:
            seen.add(text)
            sys.stderr.write(f"WARNING: {text}\n")

    return show


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``calib`` command line with ``argv``; returns the exit status."""
    parser = get_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse: --help (0) or usage error (2)
        return int(e.code or 0)
    if not getattr(args, "verb", None):
        parser.print_help(sys.stderr)
        sys.stderr.write("ERROR: no VERB given (see the list above)\n")
        return EXIT_USAGE
    _configure_logging(getattr(args, "verbose", 0) or 0)
    from calib.core.atomic import is_stdout, stdout_reserved

    real_stdout = sys.stdout
    sys.stdout = guarded = _PipeGuard(real_stdout)
    try:
        with warnings.catch_warnings(), contextlib.ExitStack() as stack:   # (restores showwarning on the way out)
            warnings.simplefilter("default")
            warnings.showwarning = _warning_printer()
            quiet = bool(getattr(args, "quiet", False))
            if quiet or any(is_stdout(getattr(args, dest, None)) for dest in STREAMED_OUTPUTS):
                # -o -: the data alone on stdout, messages on stderr; -q: the messages dropped (warnings and
                # errors are written to stderr, not printed), a table or JSON streamed with -o - kept
                stack.enter_context(stdout_reserved(discard=quiet))
            return int(args._module.run(args) or 0)
    except KeyboardInterrupt:
        sys.stderr.write("ERROR: interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # raised past the guard (e.g. by a library writing to fd 1): status unknown
        silence_stdout(real_stdout)
        return EXIT_FAILURE
    except Exception as e:  # one line; the traceback is behind -vv
        if args.verbose >= 2:
            traceback.print_exc()
        if isinstance(e, CalibError):
            msg = str(e)
        elif isinstance(e, OSError):  # the environment, not a bug: full disk, read-only file system, permissions
            msg = (f"{e.filename}: " if e.filename else "") + str(e.strerror or e)
        else:  # a bug: say so
            msg = f"internal error ({type(e).__name__}: {e}); rerun with -vv for the traceback"
        sys.stderr.write(f"ERROR: {msg}\n")
        return e.exit_code if isinstance(e, CalibError) else EXIT_FAILURE
    finally:
        if sys.stdout is guarded:
            sys.stdout = real_stdout


def script_main() -> None:
    """Console-script entry point."""
    sys.exit(main())


if __name__ == "__main__":
    script_main()
