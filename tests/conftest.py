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
    """A complete `calib run --campaign quick` on sim:gtx280 (seed 0), shared by several tests."""
    from calib.cli import main

    d = tmp_path_factory.mktemp("quick")
    cwd = os.getcwd()
    os.chdir(d)
    try:
        code = main(["run", "--quiet", "--campaign", "quick", "--name", "q", "--device", "sim:gtx280"])
    finally:
        os.chdir(cwd)
    assert code == 0
    return d
