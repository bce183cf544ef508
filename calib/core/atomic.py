"""Atomic file writes: a reader sees the old file or the new one, never half of either.

Where an output goes (:func:`output_target`, the one home of this decision; every writer of the toolkit
goes through :func:`atomic_write_bytes`):

- a regular file, or a path that does not exist yet: written to a temporary file in the same directory,
  then renamed over the path (atomic);
- a symbolic link: followed to its target, which is written as above; the link itself stays a link;
- ``-``, ``/dev/stdout`` (``/dev/fd/1``, ``/proc/self/fd/1``): standard output. While a command streams
  an output there, its own messages go to standard error (:func:`stdout_reserved`);
- ``/dev/stderr``, ``/dev/fd/N``, ``/dev/null`` and named pipes (FIFOs): streams, written directly
  (they cannot be replaced, and that is not what a user who names them wants);
- any other non-regular file (device nodes such as ``/dev/full`` or a disk, sockets) and anything under
  the ``/proc`` and ``/sys`` pseudo-file systems: refused (:class:`~calib.core.errors.BadInputError`,
  exit status 2), naming the path; a device node is never replaced by a file.

Errors of the environment (full disk, read-only file system, permissions) are raised as :class:`OSError`
naming the path the user gave, never the temporary file, which is removed.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import stat
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from calib.core.errors import BadInputError

#: the output name that means standard output
STDOUT = "-"
#: paths that name this process's standard output
_STDOUT_ALIASES = ("/dev/stdout", "/dev/fd/1", "/proc/self/fd/1")
#: paths that name one of this process's open streams (written directly, never replaced)
_FD_ALIAS = re.compile(r"^(/dev/stderr|/dev/fd/\d+|/proc/self/fd/\d+)$")
#: pseudo-file systems: their files are kernel interfaces, not places for outputs
_PSEUDO_FS = (Path("/proc"), Path("/sys"))

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _pseudo_fs(real: Path) -> Path | None:
    """The pseudo-file system (/proc, /sys) a resolved path lies on, or None."""
    return next((fs for fs in _PSEUDO_FS if real == fs or fs in real.parents), None)


@dataclass(frozen=True)
class OutputTarget:
    """Where an output path leads: ``kind`` is ``"stdout"``, ``"stream"`` (written directly) or
    ``"file"`` (written atomically at ``target``, the path with symbolic links followed)."""

    path: str
    kind: str
    target: Path | None = None


def is_stdout(path: str | os.PathLike | None) -> bool:
    """True when ``path`` names standard output (``-`` or ``/dev/stdout``)."""
    return path is not None and (str(path) == STDOUT or str(path) in _STDOUT_ALIASES)


def output_name(path: str | os.PathLike) -> str:
    """How messages name an output: the path, or 'standard output'."""
    return "standard output" if is_stdout(path) else str(path)


def output_target(path: str | os.PathLike, what: str = "output") -> OutputTarget:
    """Decide where ``path`` is written (module docstring); BadInputError for a path that must not be
    written: a directory, a device node, a socket, a /proc or /sys path, a parent that is a file."""
    text = str(path)
    if not text:
        raise BadInputError(f"the {what} path is empty")
    if is_stdout(text):
        return OutputTarget(text, "stdout")
    if _FD_ALIAS.match(text) or text == os.devnull:
        return OutputTarget(text, "stream", Path(text))
    target = Path(os.path.realpath(text))  # follows every link, dangling ones to where they point
    fs = _pseudo_fs(target)
    if fs is not None:
        raise BadInputError(f"{text}: is on the {fs} pseudo-file system, not a place for the {what}; "
                            "choose a path on a disk (or - for standard output)")
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise BadInputError(f"{text}: cannot be examined ({e.strerror or e})") from None
    if st is not None:
        if stat.S_ISREG(st.st_mode):
            return OutputTarget(text, "file", target)
        if stat.S_ISDIR(st.st_mode):
            raise BadInputError(f"{text}: is a directory; the {what} must be a file path")
        if stat.S_ISFIFO(st.st_mode):
            return OutputTarget(text, "stream", target)
        raise BadInputError(f"{text}: is {_kind(st.st_mode)}, not a regular file; refusing to write the {what} "
                            "there (use - for standard output)")
    parent = next((p for p in target.parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise BadInputError(f"{text}: {parent} is not a directory")
    return OutputTarget(text, "file", target)


def check_writable(path: str | os.PathLike, what: str = "output", shown: str | None = None) -> None:
    """Refuse (BadInputError) a path we could not create files under: the nearest existing ancestor of
    ``path`` (itself when it is a directory) must accept a new file, checked with a real temporary file
    (``os.access`` misjudges root, ACLs and read-only mounts). The message names ``shown`` (default the path)."""
    path = Path(path)
    probe = next((p for p in (path, *path.parents) if p.is_dir()), Path("."))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".calib-write-test.", dir=probe)
    except OSError as e:
        raise BadInputError(f"{what} {shown or path}: cannot write into {probe} "
                            f"({e.strerror or e.__class__.__name__})") from None
    os.close(fd)
    os.unlink(tmp)


def check_output_file(path: str | os.PathLike | None, what: str = "output",
                      not_in: tuple[str | os.PathLike | None, ...] = ()) -> Path | None:
    """Refuse (BadInputError) an output path that must not be written (:func:`output_target`: a
    directory, a device node, a /proc path, a parent that is a file), whose directory does not accept
    a new file (a read-only mount, permissions: :func:`check_writable`) or that is one of the inputs
    ``not_in`` (:func:`check_not_input`); call it before long work so that a typo does not cost the
    work. Returns the path as given (None, an output not asked for, is accepted)."""
    if path is None:
        return None
    t = output_target(path, what)
    if t.kind == "file" and t.target is not None:   # the atomic writer's temporary file goes beside it
        check_writable(t.target.parent, what, shown=str(path))
    check_not_input(path, *not_in, what=what)
    return Path(path)


def check_output_dir(path: str | os.PathLike, what: str = "output directory") -> Path:
    """Refuse (BadInputError) a directory path that exists as a file (or has a file as an ancestor), or
    that is standard output or lies on /proc or /sys."""
    if is_stdout(path):
        raise BadInputError(f"{what} {path}: a directory cannot be standard output; give a directory path")
    path = Path(path)
    fs = _pseudo_fs(Path(os.path.realpath(path)))
    if fs is not None:
        raise BadInputError(f"{what} {path}: is on the {fs} pseudo-file system; choose a directory on a disk")
    first = next((p for p in (path, *path.parents) if p.exists()), None)
    if first is not None and not first.is_dir():
        raise BadInputError(f"{what} {path}: {first} exists and is not a directory")
    return path


def check_not_input(output: str | os.PathLike | None, *inputs: str | os.PathLike | None,
                    what: str = "output") -> None:
    """Refuse (BadInputError) an output path that is one of the inputs or lies inside an input directory
    (e.g. a session): writing it would destroy the data the command reads. ``None`` entries are skipped,
    and so is an output that goes to standard output."""
    if output is None or is_stdout(output):
        return
    # realpath, not Path.resolve: it raised RuntimeError on a symbolic link loop (an internal error, exit 1,
    # where the reader then refuses the input as missing, exit 2)
    out = Path(os.path.realpath(output))
    for src in inputs:
        if src is None or is_stdout(src):
            continue
        s = Path(os.path.realpath(src))
        if out == s:
            raise BadInputError(f"{output}: the {what} is also an input; choose another path")
        if s.is_dir() and s in out.parents:
            raise BadInputError(f"{output}: the {what} would be written inside the input directory {src}; "
                                "choose a path outside it")


# ------------------------------------------------------------------------------------------------
# standard output
# ------------------------------------------------------------------------------------------------

_reserved_stdout: list[Any] = []


@contextlib.contextmanager
def stdout_reserved(discard: bool = False) -> Iterator[None]:
    """While an output streams to standard output (``-o -``), everything the command prints goes to
    standard error, so that stdout carries the table or JSON alone; with ``discard`` (``-q``) what the
    command prints is dropped instead (warnings and errors go to standard error, not through ``print``)."""
    real = sys.stdout
    _reserved_stdout.append(real)
    with open(os.devnull, "w", encoding="utf-8") if discard else contextlib.nullcontext(sys.stderr) as stream:
        sys.stdout = stream
        try:
            yield
        finally:
            sys.stdout = real
            _reserved_stdout.pop()


def _write_stdout(data: bytes) -> None:
    out = _reserved_stdout[-1] if _reserved_stdout else sys.stdout
    try:
        out.flush()
        buf: BinaryIO | None = getattr(out, "buffer", None)
        if buf is not None:
            buf.write(data)
            buf.flush()
        else:
            out.write(data.decode("utf-8"))
            out.flush()
    except BrokenPipeError:
        # the reader stopped early (`| head`): what it read is what it asked for; the command goes on
        silence_stdout(out)


def silence_stdout(stream: Any) -> None:
    """After a write to a closed pipe: point file descriptor 1 at /dev/null when ``stream`` writes to it,
    so that later writes and the interpreter's final flush do not fail again."""
    with contextlib.suppress(OSError, ValueError, AttributeError):  # not a file descriptor (captured), no /dev/null
        if stream.fileno() == 1:
            fd = os.open(os.devnull, os.O_WRONLY)
            os.dup2(fd, 1)
            os.close(fd)


# ------------------------------------------------------------------------------------------------
# writing
# ------------------------------------------------------------------------------------------------

def _named(e: OSError, path: str) -> OSError:
    """The same error naming the path the user gave (not a temporary file's name)."""
    return OSError(e.errno, e.strerror or str(e), path)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` (module docstring): through a temporary file in the target's directory
    and ``os.replace`` for files (symbolic links followed), directly for streams and standard output."""
    with atomic_writer(path) as fh:
        fh.write(data)


class _StdoutSink:
    """Binary writes to standard output (or the stream reserved for it), one chunk at a time."""

    def write(self, data: bytes) -> int:
        _write_stdout(data)
        return len(data)


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike) -> Iterator[Any]:
    """A binary file handle for writing ``path`` piece by piece (module docstring): a file is written to a
    temporary file in the target's directory, fsynced and renamed over the path when the block ends
    without an exception (then, and only then, readers see the new content; on an exception the temporary
    file is removed and the old file stays); streams and standard output are written directly. The handle
    has ``write(bytes)`` only. Errors of the environment name the path the user gave; an exception of the
    caller's own block (e.g. reading its input) passes unchanged."""
    t = output_target(path)
    if t.kind == "stdout":
        yield _StdoutSink()  # type: ignore[misc]
        return
    caller_failed = False   # an exception of the caller's own block (e.g. reading its input): not ours to rename
    if t.kind == "stream":
        try:
            with open(t.target, "wb") as fh:
                try:
                    yield _NamedWrites(fh, t.path)
                except BaseException:
                    caller_failed = True
                    raise
        except OSError as e:
            if caller_failed:
                raise
            raise _named(e, t.path) from None
        return
    target = t.target
    assert target is not None
    tmp = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        # mkstemp creates 0600; give the file the mode a plain open() would (published files must be readable)
        os.fchmod(fd, 0o666 & ~_UMASK)
        with os.fdopen(fd, "wb") as fh:
            try:
                yield _NamedWrites(fh, t.path)
            except BaseException:
                caller_failed = True
                raise
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except OSError as e:
        _unlink_quietly(tmp)
        if caller_failed:
            raise
        raise _named(e, t.path) from None
    except BaseException:
        _unlink_quietly(tmp)
        raise


class _NamedWrites:
    """A binary file whose write errors (full disk, I/O error) name the user's path, not the temporary file."""

    def __init__(self, fh: BinaryIO, path: str):
        self._fh, self._path = fh, path

    def write(self, data: bytes) -> int:
        try:
            return self._fh.write(data)
        except OSError as e:
            raise _named(e, self._path) from None


def _unlink_quietly(path: str | None) -> None:
    if path is not None:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _read_umask() -> int:
    mask = os.umask(0)  # the only portable way to read it; restored at once (at import, before any thread)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Atomically write UTF-8 text."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: Any) -> None:
    """Atomically write ``obj`` as indented JSON with a trailing newline."""
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=False, allow_nan=False) + "\n")


def atomic_write_png(path: str | os.PathLike, fig: Any, dpi: float | None = None) -> None:
    """Atomically write a matplotlib figure as PNG (``dpi``: the figure's own by default)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    atomic_write_bytes(path, buf.getvalue())


def finite_or_none(x: Any) -> float | None:
    """A number as a JSON value: a finite number (numpy's too) as float; NaN, infinities and non-numbers as None."""
    if isinstance(x, (int, float)) or getattr(x, "ndim", None) == 0:
        v = float(x)
        return v if math.isfinite(v) else None
    return None


def json_safe(x: Any) -> Any:
    """A plain-JSON copy of ``x`` (the files are strict JSON): mappings with string keys, tuples and numpy
    arrays as lists, numpy scalars as Python values, NaN and infinities as None, other objects as ``str``."""
    if hasattr(x, "tolist") and hasattr(x, "dtype"):   # numpy scalar or array
        x = x.tolist()
    if isinstance(x, Mapping):
        return {str(k): json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    if isinstance(x, float):
        return finite_or_none(x)
    return x if x is None or isinstance(x, (str, int)) else str(x)
