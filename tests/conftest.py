"""Shared fixtures: run the CLI in-process, and a finished quick virtual campaign (built once per session)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture
def cli(capsys):
    """Run ``calib`` in-process: returns (exit status, stdout, stderr)."""
    from calib.cli import main

    def run(*argv: str):
        code = main([str(a) for a in argv])
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


@pytest.fixture(scope="session")
def quick_run(tmp_path_factory):
    """A complete `calib run --campaign quick` on sim:gtx280 (seed 0), shared by several tests: made once
    per test run, by the first pytest-xdist worker that asks for it (the others wait on a lock and copy
    it: the campaign and its fit are deterministic, and each worker reads its own copy, as when each made
    its own)."""
    import fcntl
    import shutil

    from calib.cli import main

    d = tmp_path_factory.mktemp("quick")
    base = tmp_path_factory.getbasetemp()
    # the workers' base directories share the run's directory; without xdist, the run's own
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "quick-run-shared"
    with open(f"{shared}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (shared / "fitted" / "q.recovery.json").exists():
            shutil.rmtree(shared, ignore_errors=True)   # an attempt that failed midway
            shared.mkdir()
            cwd = os.getcwd()
            os.chdir(shared)
            try:
                code = main(["run", "--quiet", "--campaign", "quick", "--name", "q", "--device", "sim:gtx280"])
            finally:
                os.chdir(cwd)
            assert code == 0
    shutil.copytree(shared, d, dirs_exist_ok=True)
    return d
