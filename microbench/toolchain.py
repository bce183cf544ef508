"""Compilers for checking the kernels without a GPU: nvcc, NVRTC (via ctypes) and ptxas for NVIDIA,
clang (``-x hip``) for AMD.

Which toolchain compiles which architecture:

- ``nvcc`` (and the ``ptxas`` beside it) when its CUDA version supports the architecture. CUDA 13
  dropped sm_70/sm_72 (and older), so with CUDA 13 it serves sm_75 and newer.
- otherwise NVRTC from CUDA 12 (``pip install nvidia-cuda-nvrtc-cu12``), which still emits compute_70
  PTX, assembled for registers and spills by the ``ptxas`` of ``nvidia-cuda-nvcc-cu12``. That is
  the compiler CuPy (``cupy-cuda12x``) uses on those GPUs at run time.

AMD architectures (``gfx90a``, ``gfx942``, ``gfx1100``, ...) compile with clang 19 or newer
(Debian: ``apt-get install clang-19``) as ``clang++ -x hip -nogpuinc -nogpulib --cuda-device-only
--offload-arch=ARCH -O3 -S``: no ROCm install, the kernels' AMDGCN branch, and ``hip_prelude.h``
standing in for the HIP headers that hiprtc provides at run time. The result is the GCN/CDNA/RDNA
assembly with the code object metadata (registers, spills, scratch, LDS), parsed by
:mod:`microbench.amdgcn`. Never hipcc: without ``HIP_PLATFORM=amd`` it silently runs nvcc when
nvcc is on PATH, and without ``--offload-arch`` it targets gfx803.

Locations can be forced with ``MICROBENCH_NVCC``, ``MICROBENCH_NVRTC`` (path to ``libnvrtc.so``),
``MICROBENCH_PTXAS`` and ``MICROBENCH_CLANG``. Kernel sources are self-contained after
:func:`expand_includes`, so the kernel text compiled here is the text CuPy compiles at run time.
"""

from __future__ import annotations

import ctypes
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from calib.core.errors import CalibError

KERNEL_DIR = Path(__file__).resolve().parent / "kernels"

#: options every compile uses (CuPy's RawModule adds -std=c++11 by default too)
BASE_OPTIONS: tuple[str, ...] = ("-std=c++11",)


class ToolchainError(CalibError):
    """No usable compiler for an architecture, or a compiler failed."""


def arch_number(arch: str) -> int:
    """70 for ``sm_70`` (also accepts ``70``, ``compute_70``)."""
    m = re.fullmatch(r"(?:sm_|compute_)?(\d+)[af]?", arch.strip())
    if not m:
        raise ValueError(f"not a CUDA architecture: {arch!r} (expected e.g. sm_80)")
    return int(m.group(1))


def is_amd(arch: str) -> bool:
    """Whether ``arch`` names an AMD GPU target (``gfx...``)."""
    return arch.strip().lower().startswith("gfx")


def normalize_arch(arch: str) -> str:
    """``sm_NN`` for a CUDA architecture, ``gfxNNNx`` (lower case) for an AMD one; ValueError otherwise."""
    if is_amd(arch):
        from microbench.amdgcn import generation

        generation(arch)  # validates
        return arch.strip().lower()
    try:
        return f"sm_{arch_number(arch)}"
    except ValueError:
        raise ValueError(f"not a CUDA or AMD GPU architecture: {arch!r} (expected e.g. sm_80 or gfx90a)") from None


def _supports(version: tuple[int, int], arch: int) -> bool:
    """Whether a CUDA release can target ``arch`` (sm_NN as NN)."""
    major, minor = version
    if major >= 13:
        lo, hi = 75, 121
    elif major == 12:
        lo, hi = 50, 121 if minor >= 8 else 90
    elif major == 11:
        lo, hi = 35, 90 if minor >= 8 else 86
    else:
        lo, hi = 30, 75
    return lo <= arch <= hi


def expand_includes(path: Path, seen: set[Path] | None = None) -> str:
    """Source text of ``path`` with ``#include "x"`` of files in the same directory inlined.

    CuPy caches binaries by source text: inlining headers makes a header change visible to that
    cache, and lets nvcc/NVRTC compile the text without include paths. Files already in ``seen``
    are not inlined again (headers are ``#pragma once``), so several sources can share one text.
    """
    seen = set() if seen is None else seen
    path = path.resolve()
    if path in seen:
        return ""
    seen.add(path)
    out = []
    for line in path.read_text().splitlines():
        m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
        if m:
            inc = path.parent / m.group(1)
            out.append(expand_includes(inc, seen))
        elif re.match(r"\s*#\s*pragma\s+once", line):
            continue
        else:
            out.append(line)
    return "\n".join(out) + "\n"


@dataclass(frozen=True)
class Resources:
    """ptxas resource usage of one function."""

    registers: int
    spill_stores_bytes: int
    spill_loads_bytes: int
    stack_bytes: int
    shared_bytes: int = 0


@dataclass
class Compiled:
    """Result of compiling one source with one set of macros for one architecture.

    ``ptx`` is the compiler's listing: PTX for NVIDIA, AMDGCN assembly (``clang -S``) for AMD
    (``kind`` says which); ``resources`` the ptxas figures (NVIDIA) or the code object metadata
    (AMD, :class:`microbench.amdgcn.Resources`).
    """

    arch: str
    toolchain: str
    ptx: str
    resources: dict = field(default_factory=dict)
    _functions: dict | None = field(default=None, repr=False, compare=False)

    @property
    def kind(self) -> str:
        return "amdgcn" if is_amd(self.arch) else "ptx"

    def functions(self) -> dict:
        """The parsed functions by name (parsed once)."""
        if self._functions is None:
            if self.kind == "amdgcn":
                from microbench.amdgcn import parse_module
            else:
                from microbench.ptx import parse_module

            self._functions = parse_module(self.ptx)
        return self._functions


def _run(cmd: list[str], what: str) -> subprocess.CompletedProcess:
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    except FileNotFoundError as e:
        raise ToolchainError(f"{what}: {cmd[0]} not found") from e
    if res.returncode != 0:
        raise ToolchainError(f"{what} failed ({' '.join(cmd)}):\n{res.stderr.strip() or res.stdout.strip()}")
    return res


def _version(path: str, what: str, pattern: str = r"release (\d+)\.(\d+)", of: str = "CUDA") -> re.Match:
    """``pattern`` matched in ``path --version`` (ToolchainError naming the tool when it does not match)."""
    m = re.search(pattern, _run([path, "--version"], f"{what} --version").stdout)
    if not m:
        raise ToolchainError(f"{path}: cannot read the {of} version from --version")
    return m


_PTXAS_FN = re.compile(r"Compiling entry function '([^']+)'|Function properties for ([\w$]+)")
_PTXAS_SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_PTXAS_REGS = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")


def parse_ptxas_verbose(text: str) -> dict[str, Resources]:
    """Registers, spills, stack and shared memory per function from ``ptxas -v`` output."""
    out: dict[str, Resources] = {}
    cur: str | None = None
    spill = (0, 0, 0)
    for line in text.splitlines():
        m = _PTXAS_FN.search(line)
        if m:
            name = m.group(1) or m.group(2)
            if name != cur:
                cur, spill = name, (0, 0, 0)
            continue
        m = _PTXAS_SPILL.search(line)
        if m and cur:
            spill = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
            continue
        m = _PTXAS_REGS.search(line)
        if m and cur:
            out[cur] = Resources(registers=int(m.group(1)), stack_bytes=spill[0], spill_stores_bytes=spill[1],
                                 spill_loads_bytes=spill[2], shared_bytes=int(m.group(2) or 0))
    return out


class Ptxas:
    """A ``ptxas`` binary and its CUDA version."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.version = tuple(int(g) for g in _version(path, "ptxas").groups())

    def resources(self, ptx: str, arch: int, workdir: Path) -> dict[str, Resources]:
        src = workdir / "in.ptx"
        src.write_text(ptx)
        res = _run([self.path, "-v", f"-arch=sm_{arch}", str(src), "-o", str(workdir / "out.cubin")],
                   f"ptxas for sm_{arch}")
        return parse_ptxas_verbose(res.stdout + "\n" + res.stderr)


class Compiler:
    """A front end that turns CUDA C into PTX (nvcc or NVRTC), with the ptxas to assemble it."""

    name: str
    version: tuple[int, int]
    ptxas: Ptxas

    def supports(self, arch: int) -> bool:
        return _supports(self.version, arch) and _supports(self.ptxas.version, arch)

    def describe(self) -> str:
        return (f"{self.name} {self.version[0]}.{self.version[1]} + ptxas "
                f"{self.ptxas.version[0]}.{self.ptxas.version[1]}")

    def ptx(self, source: str, options: list[str], arch: int, workdir: Path) -> str:
        raise NotImplementedError


class Nvcc(Compiler):
    name = "nvcc"

    def __init__(self, path: str) -> None:
        self.path = path
        self.version = tuple(int(g) for g in _version(path, "nvcc").groups())
        self.ptxas = Ptxas(str(Path(path).resolve().parent / "ptxas"))

    def ptx(self, source: str, options: list[str], arch: int, workdir: Path) -> str:
        src = workdir / "kernel.cu"
        src.write_text(source)
        out = workdir / "kernel.ptx"
        _run([self.path, "-ptx", f"-arch=sm_{arch}", *options, str(src), "-o", str(out)], f"nvcc for sm_{arch}")
        return out.read_text()


class Nvrtc(Compiler):
    name = "nvrtc"
    _lock = threading.Lock()

    def __init__(self, lib_path: str, ptxas: Ptxas) -> None:
        self.lib_path = lib_path
        self.lib = ctypes.CDLL(lib_path)
        major, minor = ctypes.c_int(), ctypes.c_int()
        if self.lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)) != 0:
            raise ToolchainError(f"{lib_path}: nvrtcVersion failed")
        self.version = (major.value, minor.value)
        self.ptxas = ptxas

    def ptx(self, source: str, options: list[str], arch: int, workdir: Path) -> str:
        lib = self.lib
        prog = ctypes.c_void_p()
        rc = lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"kernel.cu", 0, None, None)
        if rc != 0:
            raise ToolchainError(f"nvrtcCreateProgram failed with code {rc}")
        try:
            opts = [f"--gpu-architecture=compute_{arch}".encode(), *(o.encode() for o in options)]
            arr = (ctypes.c_char_p * len(opts))(*opts)
            rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(prog, log)
            if rc != 0:
                raise ToolchainError(f"NVRTC for compute_{arch} failed:\n{log.value.decode(errors='replace').strip()}")
            lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
            buf = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetPTX(prog, buf)
            return buf.value.decode()
        finally:
            lib.nvrtcDestroyProgram(ctypes.byref(prog))


#: AMD compiles need no ROCm: device code only, no HIP headers or device libraries, assembly out
CLANG_HIP_OPTIONS: tuple[str, ...] = ("-x", "hip", "-nogpuinc", "-nogpulib", "--cuda-device-only", "-O3", "-S")
#: what CuPy adds to every HIP compile (cupy/cuda/compiler.py, _compile_with_cache_hip, cupy-rocm-7-0
#: 14.2.0): FP32 denormals flushed, as in the code the runner loads
HIP_RUNTIME_OPTIONS: tuple[str, ...] = ("-fcuda-flush-denormals-to-zero",)
#: stands in for the HIP headers (see the file)
HIP_PRELUDE = "hip_prelude.h"
#: the oldest clang that knows every target verify checks (gfx942 needs LLVM 17)
CLANG_MIN_VERSION = 17
_CLANG_NAMES = ("clang++-19", "clang++-20", "clang++-21", "clang++-18", "clang++-17", "clang++")


class Clang:
    """``clang++ -x hip`` for AMD targets (see module docstring)."""

    name = "clang"

    def __init__(self, path: str) -> None:
        self.path = path
        m = _version(path, "clang", r"clang version (\d+)\.(\d+)(?:\.(\d+))?", of="clang")
        self.version = (int(m.group(1)), int(m.group(2)))
        self.full_version = ".".join(g for g in m.groups() if g is not None)

    def supports(self, arch: str) -> bool:
        return is_amd(arch) and self.version[0] >= CLANG_MIN_VERSION

    def describe(self) -> str:
        return f"clang {self.full_version}"

    def assembly(self, source: str, options: list[str], arch: str, workdir: Path) -> str:
        """AMDGCN assembly (with code object metadata) of ``source`` for ``arch``."""
        src = workdir / "kernel.hip"
        src.write_text(source)
        out = workdir / "kernel.s"
        _run([self.path, *CLANG_HIP_OPTIONS, *HIP_RUNTIME_OPTIONS, f"--offload-arch={arch}", "-include",
              str(KERNEL_DIR / HIP_PRELUDE), *options, str(src), "-o", str(out)], f"clang for {arch}")
        return out.read_text()


def _working(paths: Iterable[str | None], make: Callable[[str], Any]) -> Iterator[Any]:
    """``make(path)`` of each path that is a file, in order, skipping the ones it refuses (ToolchainError)."""
    for p in paths:
        if p and Path(p).is_file():
            try:
                yield make(p)
            except ToolchainError:
                continue


def find_clang() -> Clang | None:
    """The first clang (``$MICROBENCH_CLANG``, then ``clang++-19``... on PATH) new enough for the AMD targets."""
    cand = [os.environ.get("MICROBENCH_CLANG"), *(shutil.which(n) for n in _CLANG_NAMES)]
    return next((c for c in _working(cand, Clang) if c.version[0] >= CLANG_MIN_VERSION), None)


def _wheel_files(tool: str, name: str) -> list[str]:
    """Copies of ``name`` in NVIDIA's pip wheels on ``sys.path`` (``nvidia/cuda_<tool>/`` and ``nvidia/cu*/``)."""
    out: list[str] = []
    for d in (Path(p) / "nvidia" for p in sys.path if p and (Path(p) / "nvidia").is_dir()):
        out += sorted(glob.glob(str(d / f"cuda_{tool}" / name))) + sorted(glob.glob(str(d / "cu*" / name)))
    return out


def find_nvcc() -> Nvcc | None:
    """The first working nvcc: ``$MICROBENCH_NVCC``, PATH, ``$CUDA_HOME``/``$CUDA_PATH``/``/usr/local/cuda``; None if absent."""
    cand = [os.environ.get("MICROBENCH_NVCC"), shutil.which("nvcc")]
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            cand.append(str(Path(home) / "bin" / "nvcc"))
    return next(_working(cand, Nvcc), None)


def find_nvrtc_libs() -> list[str]:
    """Paths of NVRTC shared libraries to try, ``$MICROBENCH_NVRTC`` first, then the pip wheels' copies."""
    cand = [os.environ["MICROBENCH_NVRTC"]] if os.environ.get("MICROBENCH_NVRTC") else []
    cand += _wheel_files("nvrtc", "lib/libnvrtc.so*")
    return [c for c in cand if "builtins" not in Path(c).name and ".alt." not in Path(c).name]


def find_ptxas_all() -> list[Ptxas]:
    """Every usable ptxas, in search order: ``$MICROBENCH_PTXAS``, the pip wheels' copies, then PATH."""
    return list(_working([os.environ.get("MICROBENCH_PTXAS"), *_wheel_files("nvcc", "bin/ptxas"),
                          shutil.which("ptxas")], Ptxas))


_MISSING_HINT = {
    "old": ("sm_{a} needs CUDA 12 or older: install NVRTC and ptxas from CUDA 12 "
            "(pip install nvidia-cuda-nvrtc-cu12 nvidia-cuda-nvcc-cu12) or put a CUDA 12 nvcc on PATH"),
    "new": ("sm_{a} needs nvcc from a CUDA release that supports it on PATH (or CUDA_HOME), or NVRTC + ptxas "
            "from CUDA 12 (pip install nvidia-cuda-nvrtc-cu12 nvidia-cuda-nvcc-cu12)"),
}


class Toolchains:
    """Discovers the compilers once and picks one per architecture (see module docstring)."""

    def __init__(self) -> None:
        self._clang = find_clang()
        self._nvcc = find_nvcc()
        self._ptxas = find_ptxas_all()
        self._nvrtc: list[Nvrtc] = []
        for lib in find_nvrtc_libs():
            for px in self._ptxas:
                try:
                    self._nvrtc.append(Nvrtc(lib, px))
                except (OSError, ToolchainError):
                    break
        self._found = [c for c in ([self._nvcc] if self._nvcc else []) + self._nvrtc]

    def available(self) -> list[str]:
        return [c.describe() for c in self._found] + ([self._clang.describe()] if self._clang else [])

    def for_arch(self, arch: str) -> Compiler | Clang:
        """The compiler for ``arch``; raises :class:`ToolchainError` saying what to install."""
        if is_amd(arch):
            if self._clang is not None:
                return self._clang
            raise ToolchainError(f"no toolchain for {arch}: AMD targets need clang {CLANG_MIN_VERSION} or newer "
                                 f"(apt-get install clang-19, or set MICROBENCH_CLANG)")
        a = arch_number(arch)
        for c in self._found:
            if c.supports(a):
                return c
        found = ", ".join(c.describe() for c in self._found) or "none"
        hint = _MISSING_HINT["old" if a < 75 else "new"].format(a=a)
        raise ToolchainError(f"no toolchain for sm_{a} (found: {found}). {hint}")


class KernelCompiler:
    """Compiles kernel sources per (source, macros, arch), caching PTX and ptxas resources.

    ``cache_dir`` keeps results between runs, keyed by a hash of the source text, options, arch and
    toolchain versions; None keeps them in memory only.
    """

    def __init__(self, toolchains: Toolchains | None = None, cache_dir: Path | None = None) -> None:
        self.toolchains = toolchains or Toolchains()
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self._mem: dict[str, Compiled] = {}
        self._lock = threading.Lock()

    def compile(self, source_files: str | tuple[str, ...], macros: dict[str, int], arch: str) -> Compiled:
        """PTX and ptxas resources of one or more kernel sources compiled together with ``macros``.

        Several sources are one translation unit (one compiler start instead of several); every
        kernel is still its own function, and sources ignore the macros of the others.
        """
        comp = self.toolchains.for_arch(arch)
        amd = is_amd(arch)
        a = arch.strip().lower() if amd else arch_number(arch)
        files = (source_files,) if isinstance(source_files, str) else tuple(source_files)
        seen: set[Path] = set()
        source = "".join(expand_includes(KERNEL_DIR / f, seen) for f in files)
        options = [*BASE_OPTIONS, *(f"-D{k}={v}" for k, v in sorted(macros.items()))]
        extra = [(KERNEL_DIR / HIP_PRELUDE).read_text(), *HIP_RUNTIME_OPTIONS] if amd else []
        key = hashlib.sha256("\0".join([source, *options, str(a), comp.describe(), *extra]).encode()).hexdigest()[:24]
        with self._lock:
            if key in self._mem:
                return self._mem[key]
        cached = self._load(key)
        if cached is not None:
            return cached
        with tempfile.TemporaryDirectory(prefix="mb-compile-") as tmp:
            work = Path(tmp)
            if isinstance(comp, Clang):
                from microbench.amdgcn import parse_resources

                ptx = comp.assembly(source, options, str(a), work)
                res: dict = parse_resources(ptx)
            else:
                ptx = comp.ptx(source, options, int(a), work)
                res = comp.ptxas.resources(ptx, int(a), work)
        out = Compiled(str(a) if amd else f"sm_{a}", comp.describe(), ptx, res)
        self._store(key, out)
        return out

    def _load(self, key: str) -> Compiled | None:
        if not self.cache_dir:
            return None
        f = self.cache_dir / f"{key}.json"
        if not f.is_file():
            return None
        import json

        d = json.loads(f.read_text())
        if is_amd(d["arch"]):
            from microbench.amdgcn import Resources as res_type
        else:
            res_type = Resources
        out = Compiled(d["arch"], d["toolchain"], d["ptx"], {k: res_type(**v) for k, v in d["resources"].items()})
        with self._lock:
            self._mem[key] = out
        return out

    def _store(self, key: str, c: Compiled) -> None:
        with self._lock:
            self._mem[key] = c
        if not self.cache_dir:
            return
        import json
        from dataclasses import asdict

        self.cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.cache_dir / f".{key}.{os.getpid()}.{threading.get_ident()}.tmp"
        tmp.write_text(json.dumps({"arch": c.arch, "toolchain": c.toolchain, "ptx": c.ptx,
                                   "resources": {k: asdict(v) for k, v in c.resources.items()}}))
        os.replace(tmp, self.cache_dir / f"{key}.json")
