"""Scale of ``calib fleet collect`` + ``analyze`` on 10, 100 and 1,000 virtual GPUs' sessions (run by hand).

Phases::

    python tests/benchmarks/bench_fleet.py make    [--root DIR] [--n 1000] [--workers 2]
    python tests/benchmarks/bench_fleet.py measure [--root DIR] [--sizes 10,100,1000]
    python tests/benchmarks/bench_fleet.py replicate --n 10000 && \
        python tests/benchmarks/bench_fleet.py measure --sizes 10000 --phases analyze,report

``make`` runs the quick campaign and its fit for serials 0..n-1 of ``sim:gtx280@<serial>`` into
ROOT/sessions in a local process pool (resumable: finished sessions are skipped), writing the same task
records a Slurm task writes. It calls the campaign, fit and parameter-file functions ``calib run`` calls,
without ``calib run``'s held-out check and recovery report (a third of the CPU; collect reads neither). ``measure`` collects the first N sessions
into a fresh dataset, then runs ``calib fleet analyze`` and ``calib fleet report`` on it, each phase of each
size in a fresh subprocess, and reports per phase the wall time, CPU time (with the workers') and peak
resident memory (``ru_maxrss`` of the process and of its largest worker), then a linear extrapolation to
27,648 GPUs (Summit). Results go to stdout and ROOT/results-<sizes>.json. ``replicate`` copies the
1,000-GPU dataset into a larger one (new uuids), to measure the analysis beyond the sessions at hand.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

FLEET = "bench"
#: campaign + fit + parameter file only (what `calib run` does minus its held-out check and recovery
#: report, which cost ~1/3 of the CPU and are not read by collect); --full-run uses `calib run` itself
FAST = True


def _campaign_and_fit(spec: str, d: dict, name: str, task: int) -> int:
    import warnings

    from calib.core.session import read_session
    from calib.fit.pipeline import fit_session
    from microbench.campaign import Campaign
    from microbench.devices import open_device

    session = d["logs"] / name
    dev = open_device(spec, seed=task)
    try:
        if not ((session / "manifest.json").exists() and read_session(session).is_complete()):
            Campaign(dev, "quick", task).run(session)
    finally:
        dev.close()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fit_session(session)
    d["fitted"].mkdir(parents=True, exist_ok=True)
    out.params.save(d["fitted"] / f"{name}.json")
    return 0
PRESET = "gtx280"


def _one(root: str, task: int) -> tuple[int, int, float]:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from calib.cli import main
    from calib.fleet.layout import dirs, session_name
    from calib.fleet.submit import write_task_record

    d = dirs(root)
    name = session_name(FLEET, task)
    if (d["fitted"] / f"{name}.json").exists():
        return task, 0, 0.0
    t0 = time.time()
    spec = f"sim:{PRESET}@{task}"
    write_task_record(d["tasks"] / f"{name}.json", task=task, device=spec, campaign="quick", node="local",
                      gpu_slot=str(task % 6), job_id="local", state="running")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        if FAST:
            rc = _campaign_and_fit(spec, d, name, task)
        else:
            rc = main(["run", "--device", spec, "--campaign", "quick", "--logs-dir", str(d["logs"]),
                       "--fitted-dir", str(d["fitted"]), "--name", name, "--seed", str(task), "-q"])
    write_task_record(d["tasks"] / f"{name}.json", task=task, device=spec, campaign="quick", node="local",
                      gpu_slot=str(task % 6), job_id="local", state="done" if rc == 0 else "failed", exit_status=rc)
    return task, rc, time.time() - t0


def make(root: Path, n: int, workers: int) -> None:
    t0 = time.time()
    with ProcessPoolExecutor(workers) as ex:
        futs = [ex.submit(_one, str(root / "sessions"), k) for k in range(n)]
        for i, f in enumerate(as_completed(futs), 1):
            task, rc, dt = f.result()
            if rc or i % 50 == 0:
                print(f"{i}/{n} task {task} rc {rc} {dt:.1f}s elapsed {time.time() - t0:.0f}s", flush=True)
    print(f"made {n} sessions in {time.time() - t0:.0f} s")


_CHILD = r"""
import json, resource, shutil, sys, time
from pathlib import Path
phase, src, n, out, WORKERS = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]), int(sys.argv[5])
def cpu():
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime
if phase == "collect":
    from calib.fleet.dataset import collect
    shutil.rmtree(out, ignore_errors=True)
    names = sorted(p.stem for p in (src / "fitted").glob("bench-*.json") if not p.name.endswith(".recovery.json"))[:n]
    t0, c0 = time.perf_counter(), cpu()
    res = collect(src, out / "dataset", only=set(names), workers=WORKERS)
    extra = {"gpus": res.added}
else:   # analyze | report: the command itself (tables, and for report the histograms, node map and page)
    from calib.cli import main
    t0, c0 = time.perf_counter(), cpu()
    rc = main(["fleet", phase, str(out / "dataset"), "-o", str(out / phase), "-q"])
    outliers = sum(1 for _ in open(out / phase / "outliers.csv")) - 1
    extra = {"rc": rc, "outliers": outliers}
t1, c1 = time.perf_counter(), cpu()
print(json.dumps({"n": n, "phase": phase, "wall_s": t1 - t0, "cpu_s": c1 - c0,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "peak_rss_worker_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, **extra}))
"""

PHASES = ("collect", "analyze", "report")


def _child(phase: str, root: Path, n: int, workers: int) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, phase, str(root / "sessions"), str(n), str(root / f"out{n}"),
                          str(workers)], capture_output=True, text=True, check=False)
    if out.returncode:
        sys.exit(f"size {n} {phase} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(root: Path, sizes: list[int], workers: int, phases: tuple[str, ...] = PHASES) -> None:
    """Each phase of each size in a fresh process: its own wall time, CPU time (with its workers') and
    peak RSS (ru_maxrss of the process, and of its largest worker)."""
    rows = []
    for n in sizes:
        for phase in phases:
            r = _child(phase, root, n, workers)
            rows.append(r)
            print(f"{n:6d} GPUs {phase:8s}: {r['wall_s']:7.2f} s wall, {r['cpu_s']:6.1f} s CPU, peak RSS "
                  f"{r['peak_rss_mib']:5.0f} MiB (worker {r['peak_rss_worker_mib']:4.0f} MiB)"
                  + (f", {r['outliers']} outlier GPUs" if "outliers" in r else ""), flush=True)
    import numpy as np

    summit = 27648
    fits = {}
    for phase in phases if len(sizes) > 1 else ():   # a line needs two sizes
        sel = [r for r in rows if r["phase"] == phase]
        n = np.array([r["n"] for r in sel], float)
        for what in ("wall_s", "cpu_s", "peak_rss_mib"):
            slope, icpt = np.polyfit(n, np.array([r[what] for r in sel]), 1)
            fits[f"{phase}.{what}"] = {"per_1000": slope * 1000, "intercept": icpt, "summit": slope * summit + icpt}
        f, c, m = fits[f"{phase}.wall_s"], fits[f"{phase}.cpu_s"], fits[f"{phase}.peak_rss_mib"]
        print(f"{phase}: {f['per_1000']:.1f} s wall per 1000 GPUs + {f['intercept']:.1f} s -> 27,648 GPUs ~{f['summit']:.0f} s "
              f"({f['summit'] / 60:.1f} min; {c['summit']:.0f} CPU-s); peak RSS {m['per_1000']:+.1f} MiB per 1000 GPUs, "
              f"{m['intercept']:.0f} MiB at 0 -> ~{m['summit']:.0f} MiB at 27,648")
    (root / f"results-{'-'.join(map(str, sizes))}.json").write_text(
        json.dumps({"rows": rows, "fits": fits, "workers": workers}, indent=1))


def replicate(root: Path, src_n: int, n: int) -> None:
    """A dataset of ``n`` GPUs made from the ``src_n``-GPU one (``ROOT/out<src_n>/dataset``, made by
    ``measure``) by copying each GPU file under new uuids (``<uuid>#r<k>``) into ``ROOT/out<n>/dataset``: the
    analysis' memory and time beyond the sessions at hand (the copies are not new measurements, so the
    outlier count and the spread are those of the source fleet)."""
    import json as _json
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    from calib.fleet.dataset import META_KEY, dataset_files

    src, dst = root / f"out{src_n}" / "dataset", root / f"out{n}" / "dataset"
    shutil.rmtree(dst.parent, ignore_errors=True)
    files = dataset_files(src)
    t0 = time.time()
    for k in range(-(-n // len(files))):
        for i, path in enumerate(files):
            if k * len(files) + i >= n:
                break
            t = pq.read_table(path, partitioning=None)
            ident = _json.loads(t.schema.metadata[META_KEY])
            uuid = f"{ident['gpu_uuid']}#r{k}"
            ident["gpu_uuid"] = uuid
            t = t.set_column(t.schema.get_field_index("gpu_uuid"), "gpu_uuid", pa.array([uuid] * len(t), pa.string()))
            t = t.replace_schema_metadata({META_KEY: _json.dumps(ident).encode()})
            out = dst / path.relative_to(src).parent / f"r{k}-{path.name}"
            out.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(t, out, compression="zstd")
    print(f"replicated {len(files)} GPU files into {n} in {dst} ({time.time() - t0:.0f} s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("phase", choices=["make", "measure", "replicate"])
    ap.add_argument("--root", default="/tmp/calib-fleet-bench")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--sizes", default="10,100,1000")
    ap.add_argument("--phases", default=",".join(PHASES), help="of collect,analyze,report (collect first: it makes the dataset)")
    a = ap.parse_args()
    root = Path(a.root)
    if a.phase == "make":
        make(root, a.n, a.workers)
    elif a.phase == "replicate":
        replicate(root, 1000, a.n)
    else:
        measure(root, [int(s) for s in a.sizes.split(",")], a.workers, tuple(a.phases.split(",")))


if __name__ == "__main__":
    main()
