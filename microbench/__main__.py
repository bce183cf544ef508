"""``python -m microbench verify [--arch sm_70,sm_80,sm_90] [--kernel NAME ...] [--gpu INDEX]``.

Exit status: 0 every kernel passed; 1 a kernel failed or a toolchain is missing; 2 bad usage.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from calib.core.errors import BadInputError, CalibError


def build_parser() -> argparse.ArgumentParser:
    """Argument parser of ``python -m microbench`` (verb ``verify``)."""
    p = argparse.ArgumentParser(prog="python -m microbench", description="Microbenchmark kernel tools.")
    sub = p.add_subparsers(dest="verb", required=True)
    v = sub.add_parser("verify", help="compile every kernel (no GPU needed) and check its PTX against its "
                                      "declaration; with --gpu also measure throughput against the peak",
                       description=(__import__("microbench.verify", fromlist=["x"]).__doc__ or "").split("\n\n")[0])
    v.add_argument("--arch", default="sm_70,sm_80,sm_90",
                   help="comma-separated architectures: NVIDIA sm_NN and AMD gfxNNN, e.g. gfx90a,gfx942,gfx1100 "
                        "(default: sm_70,sm_80,sm_90)")
    v.add_argument("--kernel", action="append", default=None, help="check only this kernel (repeatable)")
    v.add_argument("--l2-bytes", type=int, default=None,
                   help="L2 size in bytes for the working-set checks (default: the architecture's reference GPU)")
    v.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="parallel compiles (default 2)")
    v.add_argument("--cache-dir", type=Path, default=os.environ.get("MICROBENCH_PTX_CACHE") or None,
                   help="keep compiled PTX here between runs (default: $MICROBENCH_PTX_CACHE, else none)")
    v.add_argument("--details", action="store_true", help="print PTX and model counts of every loop")
    v.add_argument("--gpu", type=int, default=None, metavar="INDEX",
                   help="also run every kernel on CUDA device INDEX and report achieved throughput vs peak "
                        "(needs CuPy and a GPU; the static checks then use that GPU's architecture)")
    v.add_argument("--duration", type=float, default=1.0, help="seconds per kernel with --gpu (default 1)")
    return p


def _run_verify(args: argparse.Namespace) -> int:
    from microbench.kernels import catalog
    from microbench.toolchain import KernelCompiler, is_amd, normalize_arch
    from microbench.verify import amd_family, format_table, verify

    archs = [a.strip() for a in args.arch.split(",") if a.strip()]
    try:
        archs = [normalize_arch(a) for a in archs]
        for a in archs:
            if is_amd(a):
                amd_family(a)
    except ValueError as e:
        raise BadInputError(f"--arch: {e}") from None
    if args.kernel:
        unknown = [k for k in args.kernel if k not in catalog.KERNELS]
        if unknown:
            raise BadInputError(f"--kernel: unknown kernel(s) {', '.join(unknown)}; known: {', '.join(catalog.KERNELS)}")
    if args.jobs < 1:
        raise BadInputError("--jobs must be at least 1")
    runner = None
    if args.gpu is not None:
        from microbench.kernels.runner import KernelRunner

        runner = KernelRunner(args.gpu)
        archs = [runner.arch]
    checks = verify(archs, args.kernel, KernelCompiler(cache_dir=args.cache_dir), jobs=args.jobs,
                    l2_bytes=args.l2_bytes if runner is None else runner.l2_bytes)
    if runner is not None:
        try:
            for c in checks:
                if c.ok and not c.skipped:
                    c.achieved = runner.measure_throughput(c.kernel, c.params, duration_s=args.duration)
        finally:
            runner.close()
    print(format_table(checks, details=args.details))
    return 0 if all(c.ok for c in checks) else 1


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m microbench``; returns the exit status (0 ok, 2 bad input or usage,
    130 on Ctrl-C; otherwise the error's own status, e.g. when a kernel check fails)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    try:
        if args.verb == "verify":
            return _run_verify(args)
    except CalibError as e:  # BadInputError: 2
        print(f"ERROR: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        return 130
    return 2


if __name__ == "__main__":
    sys.exit(main())
