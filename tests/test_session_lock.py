"""Issue 17, finding 2: one writer per session directory. A second `calib run` (or `calib log`) on a
session another process writes is refused naming that process, and the first one's data are exactly
what a solo run gives; the lock goes away on any exit, and a lock file left by a killed writer is
named and taken over."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

LOCK_NAME = "session.lock"  # (calib.core.session.LOCK_NAME)
ROOT = Path(__file__).resolve().parents[1]
STREAMS = ("markers.csv", "nvml0.csv", "wall.csv", "campaign_state.json")


def _calib(*argv: str, **kw) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "calib", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, **kw)


def _wait_for(pred, timeout_s: float = 120.0) -> None:
    t0 = time.monotonic()
    while not pred():
        if time.monotonic() - t0 > timeout_s:
            raise AssertionError("timed out")
        time.sleep(0.05)


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_two_concurrent_runs_on_one_session(quick_run, tmp_path):
    """The issue's case: `calib run` twice on the same logs directory, the second while the first runs."""
    logs, fitted = tmp_path / "L", tmp_path / "F"
    argv = ("-q", "run", "--device", "sim:gtx280", "--campaign", "quick", "--logs-dir", str(logs),
            "--fitted-dir", str(fitted))
    first = _calib(*argv)
    try:
        # the second starts once the first's session exists (then it resumes that one, as in the issue)
        _wait_for(lambda: any(logs.glob("*/manifest.json")) or first.poll() is not None)
        assert first.poll() is None, first.communicate()
        session = next(logs.glob("*/manifest.json")).parent
        second = _calib(*argv)
        out2, err2 = second.communicate(timeout=300)
        out1, err1 = first.communicate(timeout=600)
    finally:
        if first.poll() is None:
            first.kill()
    assert second.returncode == 2, err2
    assert err2.strip().splitlines() == [
        f"ERROR: session {session} in use by pid {first.pid}; wait for it to finish (or stop it), or choose "
        "another session"]
    assert first.returncode == 0, err1
    # the first run's streams are byte for byte those of a solo run of the same device, campaign and seed
    solo = quick_run / "logs" / "q"
    for name in STREAMS:
        assert (session / name).read_bytes() == (solo / name).read_bytes(), name
    assert sorted(p.name for p in session.iterdir()) == sorted(p.name for p in solo.iterdir())  # lock file gone
    assert [p.name for p in logs.iterdir()] == [session.name]  # no second session either
    n = sum(1 for _ in open(session / "nvml0.csv"))
    # 200 rows more since the copy sweep settles after the thermal steps (314ff2e); 80 fewer with the
    # smooth-toe unit curves (windows that end on what the readings show end elsewhere: +/- 2 s on 12
    # workloads of the quick campaign, 8 s net)
    assert n == sum(1 for _ in open(solo / "nvml0.csv")) == 35833


HOLD = ("import sys, time\n"
        "from calib.core.session import lock_session\n"
        "lock = lock_session(sys.argv[1])\n"
        "print('locked', flush=True)\n"
        "time.sleep(600)\n")


def _holder(session: Path) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(session)], stdout=subprocess.PIPE, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert p.stdout.readline().strip() == "locked"
    return p


def test_run_and_log_refuse_a_locked_session_and_change_nothing(quick_run, tmp_path, cli):
    import shutil

    logs = tmp_path / "L"
    shutil.copytree(quick_run / "logs" / "q", logs / "q")
    (logs / "q" / "markers.csv").write_bytes(  # unfinished: a run would resume it
        b"".join(l for l in (logs / "q" / "markers.csv").open("rb") if b"campaign_done" not in l))
    holder = _holder(logs / "q")
    try:
        before = _digest(logs)
        rc, out, err = cli("run", "--device", "sim:gtx280", "--campaign", "quick", "--name", "q",
                           "--logs-dir", logs, "--fitted-dir", tmp_path / "F")
        assert rc == 2
        assert err.strip() == (f"ERROR: session {logs / 'q'} in use by pid {holder.pid}; wait for it to finish "
                               "(or stop it), or choose another session")
        rc, out, err = cli("log", "--serial", "/dev/null", "--protocol", "csv", "--columns", "power_w",
                           "-o", logs / "q")
        assert rc == 2 and f"ERROR: session {logs / 'q'} in use by pid {holder.pid}" in err
        assert _digest(logs) == before and not (tmp_path / "F").exists()
    finally:
        holder.kill()
        holder.wait()


def test_a_lock_left_by_a_killed_writer_is_named_and_taken_over(tmp_path):
    from calib.core.session import lock_session

    session = tmp_path / "s"
    holder = _holder(session)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert (session / LOCK_NAME).read_text() == f"{holder.pid}\n"  # the file stays, the kernel's lock does not
    with pytest.warns(UserWarning, match=rf"{session / LOCK_NAME}: stale lock of pid {holder.pid}, which is no "
                                         r"longer running \(killed\?\); taking it over"):
        lock = lock_session(session)
    assert (session / LOCK_NAME).read_text() == f"{os.getpid()}\n"
    lock.release()
    assert not (session / LOCK_NAME).exists()


def test_the_lock_is_released_on_any_exit_and_is_reentrant(tmp_path, cli, monkeypatch):
    from calib.core.session import SessionLock

    session = tmp_path / "L" / "s"
    outer = SessionLock.acquire(session)
    inner = SessionLock.acquire(session)  # the same process (run -> campaign -> session writer)
    assert inner is outer
    inner.release()
    assert (session / LOCK_NAME).exists()
    outer.release()
    assert not session.exists()  # made by the lock, nothing written: removed
    # a run interrupted (Ctrl-C) inside the campaign lets go of its session
    import microbench.campaign as C

    def interrupted(self, step):
        raise KeyboardInterrupt

    monkeypatch.setattr(C.Campaign, "_run_step", interrupted)
    rc, out, err = cli("-q", "run", "--device", "sim:gtx280", "--campaign", "quick", "--name", "s",
                       "--logs-dir", tmp_path / "L", "--fitted-dir", tmp_path / "F")
    assert rc == 130
    assert (session / "manifest.json").exists() and not (session / LOCK_NAME).exists()
    SessionLock.acquire(session).release()  # free


def test_a_second_process_cannot_take_a_held_lock(tmp_path):
    from calib.core.session import SessionInUseError, lock_session

    holder = _holder(tmp_path / "s")
    try:
        with pytest.raises(SessionInUseError, match=rf"^session {tmp_path / 's'} in use by pid {holder.pid};"):
            lock_session(tmp_path / "s")
    finally:
        holder.kill()
        holder.wait()
    lock_session(tmp_path / "s").release()  # the kernel dropped the dead holder's lock
