"""calib fleet collect/analyze/report on real (virtual-GPU) sessions: the Parquet dataset's contents,
appending, listing of incomplete/failed sessions, atomic writes and the refusals (exit 2, nothing lost)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

from calib.cli import main
from calib.fleet.layout import dirs, session_name
from calib.fleet.submit import write_task_record

CHIP = "chip=virtual-geforce-gtx-280-gt200"


def _run(root: Path, task: int, device: str) -> None:
    d = dirs(root)
    name = session_name("t", task)
    assert main(["run", "--device", device, "--campaign", "quick", "--logs-dir", str(d["logs"]),
                 "--fitted-dir", str(d["fitted"]), "--name", name, "--seed", str(task), "-q"]) == 0
    write_task_record(d["tasks"] / f"{name}.json", task=task, device=device, campaign="quick", node="n1",
                      gpu_slot=str(task), job_id=f"7_{task}", restart_count=0, state="done", exit_status=0)


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """Three units of a gtx280 fleet and one gtx580 unit, each a real quick campaign + fit."""
    base = tmp_path_factory.mktemp("fleet")
    for k in range(3):
        _run(base / "fleet", k, f"sim:gtx280@{k}")
    _run(base / "other", 0, "sim:gtx580@100")
    return base


@pytest.fixture
def fleetdir(made, tmp_path):
    root = tmp_path / "fleet"
    shutil.copytree(made / "fleet", root)
    return root


def _files(ds: Path) -> dict[str, bytes]:
    return {str(p.relative_to(ds)): p.read_bytes() for p in sorted(ds.rglob("*")) if p.is_file()}


def test_collect_writes_one_partitioned_file_per_gpu_with_the_parameters(fleetdir, tmp_path, capsys):
    ds = tmp_path / "ds"
    assert main(["fleet", "collect", str(fleetdir), "-o", str(ds), "--workers", "1"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"{ds}: 3 GPU(s) added, 0 already in the dataset"
    files = sorted(p.relative_to(ds).parts[:3] for p in ds.rglob("*.parquet"))
    assert files == [(CHIP, "driver=virtual", "campaign=quick")] * 3
    df = pd.read_parquet(ds)                           # any engine: pandas ...
    assert pads.dataset(ds, partitioning="hive").count_rows() == len(df)   # ... and pyarrow
    assert sorted(df["gpu_uuid"].unique()) == ["SIM-gtx280@0", "SIM-gtx280@1", "SIM-gtx280@2"]
    doc = json.loads((fleetdir / "fitted" / "t-00001.json").read_text())
    row = df[(df["gpu_uuid"] == "SIM-gtx280@1") & (df["name"] == "idle_power_w")].iloc[0]
    assert row["value"] == doc["power"]["parameters"]["idle_power_w"]["value"]
    assert row["stderr"] == doc["fit"]["power"]["stderr"]["idle_power_w"]
    assert row["stderr_total"] == doc["fit"]["power"]["stderr_total"]["idle_power_w"]
    assert (row["unit"], row["min"], row["section"], row["form"]) == ("W", 0.0, "power", "ipp")
    assert (row["serial"], row["node"], row["gpu_slot"], row["job_id"]) == (1, "n1", "1", "7_1")
    assert (row["session"], str(row["campaign"]), str(row["driver"])) == ("t-00001", "quick", "virtual")
    import hashlib
    assert row["param_sha256"] == hashlib.sha256((fleetdir / "fitted" / "t-00001.json").read_bytes()).hexdigest()
    n_params = sum(len(v["parameters"]) for v in doc.values() if isinstance(v, dict) and "parameters" in v)
    ref = df[(df["gpu_uuid"] == "SIM-gtx280@1") & (df["section"] == "reference")]
    assert set(ref["name"]) == {"power_w_pred", "time_s_pred", "energy_j_pred", "temp_c_pred"}
    assert len(df[df["gpu_uuid"] == "SIM-gtx280@1"]) == n_params + 4
    assert 100 < ref.set_index("name").loc["power_w_pred", "value"] < 300


def test_collect_appends_and_lists_unfinished_sessions(fleetdir, tmp_path, capsys):
    ds = tmp_path / "ds"
    d = dirs(fleetdir)
    held = tmp_path / "held"
    held.mkdir()
    shutil.move(d["fitted"] / "t-00002.json", held / "t-00002.json")   # not fitted yet
    # a task killed mid-campaign: its session lacks campaign_done
    shutil.copytree(d["logs"] / "t-00000", d["logs"] / "t-00009")
    markers = d["logs"] / "t-00009" / "markers.csv"
    markers.write_text("".join(l for l in markers.read_text().splitlines(True) if "campaign_done" not in l))
    write_task_record(d["tasks"] / "t-00011.json", task=11, state="failed", exit_status=2)  # never got a session
    assert main(["fleet", "collect", str(fleetdir), "-o", str(ds)]) == 0
    out = capsys.readouterr().out
    assert f"{ds}: 2 GPU(s) added, 0 already in the dataset" in out
    assert "1 session(s) incomplete:\n  t-00009: campaign not finished\n" in out
    assert "1 session(s) unfitted:\n  t-00002: campaign complete, no parameter file (fit not run or killed)\n" in out
    assert "1 session(s) failed:\n  t-00011: task record says 'failed', exit status 2\n" in out
    status = {s["session"]: s["state"] for s in json.loads((ds / "_status.json").read_text())["sessions"]}
    assert status == {"t-00000": "collected", "t-00001": "collected", "t-00002": "unfitted",
                      "t-00009": "incomplete", "t-00011": "failed"}
    # --fit: the complete but unfitted session is fitted in the local pool, then collected
    assert main(["fleet", "collect", str(fleetdir), "-o", str(ds), "--fit", "--workers", "1"]) == 0
    assert f"{ds}: 1 GPU(s) added, 2 already in the dataset" in capsys.readouterr().out
    refit = json.loads((d["fitted"] / "t-00002.json").read_text())
    orig = json.loads((held / "t-00002.json").read_text())
    assert refit["power"]["parameters"]["idle_power_w"]["value"] == pytest.approx(
        orig["power"]["parameters"]["idle_power_w"]["value"], rel=1e-9)
    assert pd.read_parquet(ds)["gpu_uuid"].nunique() == 3
    log = [json.loads(x) for x in (ds / "_collect.jsonl").read_text().splitlines()]
    assert [x["added"] for x in log] == [2, 1] and log[0]["incomplete"] == ["t-00009"]


def test_corrupt_parquet_is_refused_and_left_alone(fleetdir, tmp_path, capsys):
    ds = tmp_path / "ds"
    assert main(["fleet", "collect", str(fleetdir), "-o", str(ds)]) == 0
    victim = sorted(ds.rglob("*.parquet"))[1]
    victim.write_bytes(victim.read_bytes()[:300])
    before = _files(ds)
    capsys.readouterr()
    for argv in (["fleet", "collect", str(fleetdir), "-o", str(ds)],
                 ["fleet", "analyze", str(ds), "-o", str(tmp_path / "an")]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"ERROR: {victim}: corrupt Parquet file (")
        assert err[0].endswith("the dataset is left as it is: restore or remove this file and collect again")
    assert _files(ds) == before


def test_duplicate_gpu_uuids_are_refused_and_nothing_is_written(fleetdir, tmp_path, capsys):
    ds = tmp_path / "ds"
    d = dirs(fleetdir)
    shutil.copy(d["fitted"] / "t-00001.json", d["fitted"] / "t-00005.json")
    assert main(["fleet", "collect", str(fleetdir), "-o", str(ds)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["ERROR: duplicate GPU uuid SIM-gtx280@1: sessions t-00001 and t-00005 both claim it under "
                   "driver virtual; nothing written (remove or rename one of them)"]
    assert not list(ds.rglob("*.parquet"))
    # against the dataset: a different parameter file for a GPU already collected
    (d["fitted"] / "t-00005.json").unlink()
    assert main(["fleet", "collect", str(fleetdir), "-o", str(ds)]) == 0
    before = _files(ds)
    doc = json.loads((d["fitted"] / "t-00001.json").read_text())
    doc["provenance"]["session"] = "t-00006"
    (d["fitted"] / "t-00006.json").write_text(json.dumps(doc))
    (d["fitted"] / "t-00001.json").rename(tmp_path / "t-00001.json")
    capsys.readouterr()
    assert main(["fleet", "collect", str(fleetdir), "-o", str(ds)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ERROR: duplicate GPU uuid SIM-gtx280@1: session t-00006 (") and err.endswith("; nothing written")
    assert _files(ds) == before


def test_a_gpu_recalibrated_after_a_driver_update_is_kept(fleetdir, tmp_path, capsys):
    """fleet collect refused the second calibration of one GPU (same uuid, before and after a driver update):
    it is a second file in its own driver partition; the analysis takes each GPU's latest calibration and
    names the other (issue 27, finding 7)."""
    ds = tmp_path / "ds"
    d = dirs(fleetdir)
    assert main(["fleet", "collect", str(fleetdir), "-o", str(ds)]) == 0
    doc = json.loads((d["fitted"] / "t-00001.json").read_text())
    doc["device"]["driver_version"] = "virtual-2"
    doc["provenance"]["session"] = "t-00003"
    doc["provenance"]["created_utc"] = "2999-01-01T00:00:00Z"
    doc["power"]["parameters"]["idle_power_w"]["value"] += 5.0      # the new driver's idle power
    (d["fitted"] / "t-00003.json").write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["fleet", "collect", str(fleetdir), "-o", str(ds)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"{ds}: 1 GPU(s) added, 3 already in the dataset"
    files = sorted(str(p.relative_to(ds).parent) for p in ds.rglob("*.parquet"))
    assert files == [f"{CHIP}/driver=virtual-2/campaign=quick"] + [f"{CHIP}/driver=virtual/campaign=quick"] * 3
    an = tmp_path / "an"
    assert main(["fleet", "analyze", str(ds), "-o", str(an)]) == 0
    summary = json.loads((an / "analysis.json").read_text())
    assert summary["gpus"] == 3
    assert any(n.startswith("GPU SIM-gtx280@1: 2 calibrations; analysed: the latest, driver virtual-2 (session "
                            "t-00003); also in the dataset: driver virtual (session t-00001)") for n in summary["notes"])
    g = pd.read_csv(an / "gpus.csv")
    idle = g[(g["key"] == "power.idle_power_w") & (g["gpu_uuid"] == "SIM-gtx280@1")]
    assert idle["session"].tolist() == ["t-00003"]
    assert idle["value"].iloc[0] == pytest.approx(doc["power"]["parameters"]["idle_power_w"]["value"])


def test_mixed_chips_need_allow_mixed(fleetdir, made, tmp_path, capsys):
    ds = tmp_path / "ds"
    for sub in ("logs", "fitted", "tasks"):
        for p in (made / "other" / sub).iterdir():
            target = fleetdir / sub / p.name.replace("t-00000", "t-00100")
            (shutil.copytree if p.is_dir() else shutil.copy)(p, target)
    doc_path = fleetdir / "fitted" / "t-00100.json"
    assert main(["fleet", "collect", str(fleetdir), "-o", str(ds)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["ERROR: GPUs of 2 different chips in one fleet: 'virtual GeForce GTX 280 (GT200)' (e.g. session "
                   "t-00000); 'virtual GeForce GTX 580 (Fermi GF110)' (e.g. session t-00100); nothing written "
                   "(collect each chip into its own dataset, or pass --allow-mixed)"]
    assert not ds.exists() or not list(ds.rglob("*.parquet"))
    assert doc_path.exists()
    assert main(["fleet", "collect", str(fleetdir), "-o", str(ds), "--allow-mixed"]) == 0
    chips = sorted({p.relative_to(ds).parts[0] for p in ds.rglob("*.parquet")})
    assert chips == [CHIP, "chip=virtual-geforce-gtx-580-fermi-gf110"]
    # chips are analysed apart, never pooled: the lone gtx580 has no fleet to compare with
    assert main(["fleet", "analyze", str(ds), "-o", str(tmp_path / "an")]) == 0
    notes = json.loads((tmp_path / "an" / "analysis.json").read_text())["notes"]
    assert "virtual-geforce-gtx-580-fermi-gf110: power.idle_power_w on 1 GPU(s) only; not analysed" in notes
    params = pd.read_csv(tmp_path / "an" / "params.csv")
    assert set(params["chip"]) == {"virtual-geforce-gtx-280-gt200"} and (params["n_gpus"] == 3).all()


def test_a_killed_write_leaves_no_half_written_gpu(fleetdir, tmp_path, monkeypatch):
    from calib.fleet import dataset

    ds = tmp_path / "ds"
    real = pq.write_table
    calls = []

    def dying(table, where, **kw):   # the second GPU's write dies half-way
        calls.append(1)
        if len(calls) == 2:
            where.write(b"PAR1" + b"\0" * 100)
            raise KeyboardInterrupt
        return real(table, where, **kw)

    monkeypatch.setattr(dataset.pq, "write_table", dying)
    with pytest.raises(KeyboardInterrupt):
        dataset.collect(fleetdir, ds)
    leftovers = [p for p in ds.rglob("*") if p.is_file() and p.suffix != ".json"]
    assert [p.name.startswith("gpu-") for p in leftovers] == [True]      # one whole GPU, no temp file
    assert pd.read_parquet(ds)["gpu_uuid"].nunique() == 1
    monkeypatch.setattr(dataset.pq, "write_table", real)
    # a temporary file of a collect killed by SIGKILL (no cleanup) is ignored by readers and collect
    stray = leftovers[0].parent / f".{leftovers[0].name}.999.tmp"
    stray.write_bytes(b"PAR1 half")
    res = dataset.collect(fleetdir, ds)
    assert (res.added, res.already) == (2, 1)
    assert pd.read_parquet(ds)["gpu_uuid"].nunique() == 3


def test_analyze_and_report(fleetdir, tmp_path, capsys):
    ds = tmp_path / "ds"
    assert main(["fleet", "collect", str(fleetdir), "-o", str(ds)]) == 0
    capsys.readouterr()
    out = tmp_path / "rep"
    assert main(["fleet", "report", str(ds), "-o", str(out)]) == 0
    cap = capsys.readouterr()
    text = cap.out
    assert text.splitlines()[0] == f"report: {out / 'index.html'}"
    assert "3 GPUs" in text and "0 outlier GPU(s) at |z| > 6" in text   # 3 GPUs: too few to call outliers
    # and the user is told so (a 3-GPU fleet missed its planted outlier in silence)
    assert ("WARNING: virtual-geforce-gtx-280-gt200: 3 GPU(s), too few to call any GPU an outlier (a parameter "
            "needs at least 10 GPUs that share it and its model form); an outlier among them goes unflagged"
            ) in cap.err.splitlines()
    page = (out / "index.html").read_text()
    assert "Map by node" in page and "Histograms per parameter" in page and "power.idle_power_w" in page
    for img in ("nodes-virtual-geforce-gtx-280-gt200.png", "hist-virtual-geforce-gtx-280-gt200-1.png"):
        assert (out / img).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    params = pd.read_csv(out / "params.csv").set_index("key")
    df = pd.read_parquet(ds)
    v = df[(df["section"] == "power") & (df["name"] == "idle_power_w")]["value"]
    assert params.loc["power.idle_power_w", "median"] == pytest.approx(v.median())
    assert params.loc["power.idle_power_w", "n_gpus"] == 3


def test_report_of_a_fleet_without_task_records_warns_nothing_from_pandas(fleetdir, tmp_path, capsys):
    """Sessions collected without Slurm task records have no node: the node map filled the all-missing
    column with '?' and pandas printed a FutureWarning to every user."""
    import shutil as sh
    import warnings

    sh.rmtree(dirs(fleetdir)["tasks"])
    ds = tmp_path / "ds"
    assert main(["fleet", "collect", str(fleetdir), "-o", str(ds)]) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        assert main(["fleet", "report", str(ds), "-o", str(tmp_path / "rep")]) == 0
    err = capsys.readouterr().err
    assert "FutureWarning" not in err and "fill value" not in err


def test_duckdb_reads_the_dataset(fleetdir, tmp_path):
    duckdb = pytest.importorskip("duckdb")   # not a dependency: checks the "any engine" claim where installed
    ds = tmp_path / "ds"
    assert main(["fleet", "collect", str(fleetdir), "-o", str(ds)]) == 0
    got = duckdb.sql(f"select chip, driver, campaign, count(distinct gpu_uuid), count(*) from "
                     f"read_parquet('{ds}/**/*.parquet', hive_partitioning=1) group by all").fetchall()
    assert got == [("virtual-geforce-gtx-280-gt200", "virtual", "quick", 3, len(pd.read_parquet(ds)))]


def _bar(err: str, label: str) -> str:
    """The final state of a tqdm bar written to stderr."""
    last = [seg for seg in err.replace("\n", "\r").split("\r") if seg.startswith(f"{label} ")]
    assert last, err
    return last[-1].rstrip()


def test_quiet_and_progress_of_collect_analyze_and_report(fleetdir, tmp_path, capsys, monkeypatch):
    """-q: nothing on stdout, nothing but warnings on stderr (here: 3 GPUs are too few to call outliers); on a
    terminal: a bar per stage, counted in GPUs (collect) or weighted by the measured shares of the stages
    (analyze, report)."""
    import calib.progress as P

    ds = tmp_path / "ds"
    assert main(["fleet", "collect", str(fleetdir), "-o", str(ds), "-q"]) == 0
    assert capsys.readouterr() == ("", "")
    assert main(["-q", "fleet", "report", str(ds), "-o", str(tmp_path / "r0")]) == 0
    out, err = capsys.readouterr()
    assert out == "" and [ln[:60] for ln in err.splitlines()] == [
        "WARNING: virtual-geforce-gtx-280-gt200: 3 GPU(s), too few to"]
    assert (tmp_path / "r0" / "index.html").is_file()
    monkeypatch.setattr(P, "wants_progress", lambda args: not getattr(args, "quiet", False))
    shutil.rmtree(ds)
    assert main(["fleet", "collect", str(fleetdir), "-o", str(ds), "--workers", "1"]) == 0
    bar = _bar(capsys.readouterr().err, "collect")
    assert bar.startswith("collect 100%|") and "<00:00" in bar   # elapsed<remaining
    assert main(["fleet", "report", str(ds), "-o", str(tmp_path / "r1")]) == 0
    bar = _bar(capsys.readouterr().err, "report")
    assert bar.startswith("report 100%|") and bar.endswith(", page")
    assert main(["fleet", "analyze", str(ds), "-o", str(tmp_path / "a1")]) == 0
    bar = _bar(capsys.readouterr().err, "analyze")
    assert bar.startswith("analyze 100%|") and bar.endswith(", tables")


def test_report_stages_move_forward_by_their_shares(fleetdir, tmp_path):
    """The streamed analysis draws each histogram as its parameter is analysed; then the node map and the page."""
    from calib.fleet.analysis import analyze
    from calib.fleet.dataset import collect
    from calib.fleet.report import HistogramSink, write_report

    ds = tmp_path / "ds"
    collect(fleetdir, ds)
    seen = []
    hist = HistogramSink(tmp_path / "r", 6.0)
    an = analyze(ds, progress=lambda stage, frac: seen.append((stage, frac)), sinks=[hist])
    write_report(an, tmp_path / "r", progress=lambda stage, frac: seen.append((stage, frac)),
                 histograms=hist.finish())
    stages = list(dict.fromkeys(s for s, _ in seen))
    assert stages == ["read", "analyse", "tables", "figures", "page"]
    for stage in ("read", "analyse", "figures"):
        fr = [f for s, f in seen if s == stage]
        assert fr == sorted(fr) and fr[0] == 0.0 and fr[-1] == pytest.approx(1.0)
    n = len(an.params)
    assert sorted(p.name for p in (tmp_path / "r").glob("hist-*.png")) == [
        f"hist-virtual-geforce-gtx-280-gt200-{k}.png" for k in range(1, -(-n // 12) + 1)]


def test_fleet_outputs_go_through_the_atomic_writer(fleetdir, tmp_path, capsys):
    """Links written through to their target, no temporary file left, a directory output never standard
    output nor /proc."""
    import os

    ds = tmp_path / "ds"
    assert main(["fleet", "collect", str(fleetdir), "-o", str(ds)]) == 0
    assert not [p for p in ds.rglob("*") if p.name.startswith(".")]
    out = tmp_path / "an"
    out.mkdir()
    (tmp_path / "kept.csv").write_text("old\n")
    os.symlink(tmp_path / "kept.csv", out / "params.csv")
    (tmp_path / "kept.png").write_bytes(b"old")
    rep = tmp_path / "rep"
    rep.mkdir()
    os.symlink(tmp_path / "kept.png", rep / "nodes-virtual-geforce-gtx-280-gt200.png")
    capsys.readouterr()
    assert main(["fleet", "analyze", str(ds), "-o", str(out)]) == 0
    assert (out / "params.csv").is_symlink()
    assert (tmp_path / "kept.csv").read_text().startswith("chip,key,")
    assert main(["fleet", "report", str(ds), "-o", str(rep)]) == 0
    assert (rep / "nodes-virtual-geforce-gtx-280-gt200.png").is_symlink()
    assert (tmp_path / "kept.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not [p for p in (*out.iterdir(), *rep.iterdir()) if p.name.startswith(".")]
    capsys.readouterr()
    for verb, src in (("collect", fleetdir), ("analyze", ds), ("report", ds)):
        assert main(["fleet", verb, str(src), "-o", "-"]) == 2
        assert capsys.readouterr().err.strip().splitlines()[-1] == (
            "ERROR: -o/--output -: a directory cannot be standard output; give a directory path")
    assert main(["fleet", "analyze", str(ds), "-o", "/proc/fleet"]) == 2
    assert capsys.readouterr().err.strip() == (
        "ERROR: -o/--output /proc/fleet: is on the /proc pseudo-file system; choose a directory on a disk")
