"""The fleet path on a real single-node Slurm cluster (tests/slurm/start-cluster.sh): ``calib fleet submit``
runs an ``sbatch --array`` of virtual GPUs, a requeued task resumes its session, collect + analyze.

Skipped when Slurm (slurm-wlm, munge) is not installed, unless CALIB_REQUIRE_SLURM=1 (CI installs it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

from calib.cli import main

ROOT = Path(__file__).resolve().parents[1]
START = ROOT / "tests" / "slurm" / "start-cluster.sh"


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """A running single-node Slurm cluster; yields the environment its clients need."""
    have = all(shutil.which(x) or Path(f"/usr/sbin/{x}").exists() for x in ("slurmctld", "slurmd", "munged", "sbatch"))
    if not have:
        if os.environ.get("CALIB_REQUIRE_SLURM") == "1":
            pytest.fail("CALIB_REQUIRE_SLURM=1 but slurm-wlm/munge are not installed")
        pytest.skip("Slurm is not installed (apt-get install slurm-wlm munge, or tests/slurm/start-cluster.sh --install)")
    state = os.environ.get("CALIB_SLURM_DIR", "/tmp/calib-slurm")
    out = subprocess.run(["bash", str(START), state], capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    conf = out.stdout.strip().splitlines()[-1].removeprefix("export SLURM_CONF=")
    old = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = conf
    yield conf
    if old is None:
        os.environ.pop("SLURM_CONF", None)
    else:
        os.environ["SLURM_CONF"] = old


def _squeue(job: str) -> list[str] | None:
    """The job's lines in the queue; None when squeue itself fails (a controller busy under load answers
    "Socket timed out"), which says nothing about the job."""
    out = subprocess.run(["squeue", "-h", "-j", job, "-o", "%i %T %r"], capture_output=True, text=True, check=False)
    return out.stdout.strip().splitlines() if out.returncode == 0 else None


def _wait(job: str, timeout_s: float = 900.0, until=None) -> None:  # noqa: ANN001 - until: () -> bool
    """Until the job has left the queue and, with ``until``, the fleet's own record says so too: a requeued
    task is briefly out of the queue between its end and its restart, and on a loaded machine a poll can
    fall in that gap (seen under two CPU burners: the record still 'running', restart_count 0)."""
    t0 = time.time()
    while (q := _squeue(job)) is None or q or (until is not None and not until()):
        assert time.time() - t0 < timeout_s, (f"job {job} still queued/running after {timeout_s} s: {_squeue(job)}"
                                              + ("" if until is None else " (the fleet's record does not say it ended)"))
        time.sleep(1.0)


def _submitted(capsys) -> str:
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith("submitted job array ")
    return line.split()[3].rstrip(":")


def test_submit_a_virtual_fleet_through_slurm_and_collect_it(slurm, tmp_path, capsys):
    root = tmp_path / "fleet"
    # a virtual fleet asks for no GPU unless told to: here it asks for one, as a site's GPU partition would
    assert main(["fleet", "submit", str(root), "--count", "4", "--sim", "gtx280", "--first-serial", "40",
                 "--campaign", "quick", "--name", "ci", "--gres", "gpu:1"]) == 0
    job = _submitted(capsys)
    _wait(job)
    recs = {p.stem: json.loads(p.read_text()) for p in sorted((root / "tasks").glob("*.json"))}
    assert sorted(recs) == ["ci-00000", "ci-00001", "ci-00002", "ci-00003"]
    for k, (name, r) in enumerate(sorted(recs.items())):
        assert (r["state"], r["exit_status"], r["device"], r["job_id"]) == ("done", 0, f"sim:gtx280@{40 + k}", f"{job}_{k}")
        assert r["gpu_slot"].isdigit()           # Slurm's GRES gave the task one GPU (CUDA_VISIBLE_DEVICES)
    ds = tmp_path / "ds"
    assert main(["fleet", "collect", str(root), "-o", str(ds)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"{ds}: 4 GPU(s) added, 0 already in the dataset"
    df = pd.read_parquet(ds)
    assert sorted(df["serial"].unique()) == [40, 41, 42, 43]
    assert set(df["node"]) == {recs["ci-00000"]["node"]}
    assert main(["fleet", "analyze", str(ds), "-o", str(tmp_path / "an")]) == 0
    assert "4 GPUs" in capsys.readouterr().out


def test_a_requeued_task_resumes_its_session(slurm, tmp_path, capsys):
    root = tmp_path / "fleet"
    assert main(["fleet", "submit", str(root), "--count", "1", "--sim", "gtx280", "--campaign", "quick",
                 "--name", "rq"]) == 0
    job = _submitted(capsys)
    markers = root / "logs" / "rq-00000" / "markers.csv"
    t0 = time.time()
    while not (markers.exists() and markers.read_text().count("workload_done") >= 15):
        assert time.time() - t0 < 300, "the task did not get going"
        time.sleep(0.2)
    # mid-campaign: the session is incomplete, so collect lists it and writes no GPU
    ds = tmp_path / "ds"
    assert main(["fleet", "collect", str(root), "-o", str(ds)]) == 0
    out = capsys.readouterr().out
    assert "0 GPU(s) added" in out and ("rq-00000: campaign not finished" in out or "rq-00000: campaign complete" in out)
    assert not list(ds.rglob("*.parquet"))
    task = f"{job}_0"
    subprocess.run(["scontrol", "requeue", task], check=True, capture_output=True)
    # Slurm holds a requeued job back (BeginTime); let it start soon. Not within the second of the requeue:
    # slurmd revokes the old credential with a whole-second stamp and refuses a launch whose credential is no
    # newer ("Killing non-startable batch JobId=84: Job credential revoked", seen under load: the task then
    # ends without running and its record stays 'running')
    time.sleep(2.0)
    subprocess.run(["scontrol", "update", f"JobId={task}", "StartTime=now"], check=False, capture_output=True)
    record = root / "tasks" / "rq-00000.json"

    def restarted_and_ended() -> bool:
        r = json.loads(record.read_text())
        return r.get("state") in ("done", "failed") and r.get("restart_count", 0) >= 1

    _wait(job, until=restarted_and_ended)
    rec = json.loads(record.read_text())
    assert (rec["state"], rec["restart_count"]) == ("done", 1)
    assert rec["gpu_slot"] == ""               # a virtual fleet asks Slurm for no GPU by default
    log = (root / "slurm" / f"calib-fleet-rq-{job}_0.out").read_text()
    assert "DUE TO JOB REQUEUE" in log
    assert "resuming campaign 'quick' on sim:gtx280@0" in log
    seg = pd.read_csv(markers)
    starts = seg[seg["event"] == "segment_start"]
    assert list(starts["segment"]) == [0, 1] and '"resumed":true' in starts["info"].iloc[1].replace(" ", "")
    assert (seg["event"] == "campaign_done").sum() == 1
    done = seg[seg["event"] == "workload_done"]
    assert done["info"].map(lambda s: json.loads(s)["step"]).is_unique   # no step measured twice
    assert main(["fleet", "collect", str(root), "-o", str(ds)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"{ds}: 1 GPU(s) added, 0 already in the dataset"
