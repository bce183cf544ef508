"""The acceptance checks of `calib selftest` on a real NVIDIA GPU (issue 31), one test per check.

Runs only where NVML sees a GPU (the first one, ``cuda:0``; ``CALIB_GPU=cuda:N`` picks another); skipped
otherwise. With ``CALIB_REQUIRE_GPU=1`` a missing GPU fails every test instead of skipping it, so a GPU
machine's CI cannot pass by finding no GPU. The checks and what each needs to pass are listed by
``calib selftest --list`` (``calib.commands.selftest.CHECKS``); the clock check is skipped without root.
"""

from __future__ import annotations

import os

import pytest

from calib.commands.selftest import CHECKS, SelfTest

REQUIRE = os.environ.get("CALIB_REQUIRE_GPU") == "1"


def _gpu_spec() -> str | None:
    from microbench.devices.registry import real_gpus

    want = os.environ.get("CALIB_GPU")
    specs = [g["spec"] for g in real_gpus() if g["spec"].startswith("cuda:")]
    if want:
        return want if want in specs else None
    return specs[0] if specs else None


@pytest.fixture(scope="module")
def selftest(tmp_path_factory):
    """The selftest of the real GPU, all checks run once (None when there is no GPU)."""
    spec = _gpu_spec()
    if spec is None:
        return None
    st = SelfTest(spec, 0, tmp_path_factory.mktemp("gpu-acceptance"), quiet=True)
    st.run([k for k, _, _ in CHECKS])
    return {r.key: r for r in st.results}


@pytest.mark.parametrize("key", [k for k, _, _ in CHECKS])
def test_check_on_the_gpu(selftest, key):
    """One acceptance check (its title and pass condition in calib.commands.selftest.CHECKS)."""
    if selftest is None:
        msg = ("no NVIDIA GPU here (NVML sees none"
               + (f", or not {os.environ['CALIB_GPU']}" if os.environ.get("CALIB_GPU") else "") + ")")
        if REQUIRE:
            pytest.fail(f"CALIB_REQUIRE_GPU=1 but {msg}")
        pytest.skip(msg)
    res = selftest[key]
    if res.status == "skip":
        pytest.skip(f"{key}: {res.message}")
    assert res.status == "pass", f"{key}: {res.message}\nfigures: {res.figures}"
