"""Regenerate the nvprof transcripts of this directory with nvprof 11.8 itself (README.md says why and how).

nvprof needs a GPU to profile, but not to print: ``nvprof -i PROFILE --csv [...]`` imports a saved profile
(an SQLite file) and prints it with the same formatter as a live run. This script writes such a profile --
the tables nvprof 11.8 creates (their ``CREATE TABLE`` statements are read from the nvprof binary), a
device, kernel launches and metric records with the CUPTI metric ids of compute capability 5.x-7.x
(``cuptiMetricGetAttribute`` of libcupti 11.8) -- and lets nvprof print it::

    apt-get download nvidia-profiler libcupti11.8   # Debian 12 non-free, 11.8.87~11.8.0-5~deb12u1
    dpkg -x nvidia-profiler_*.deb x; dpkg -x libcupti11.8_*.deb x
    NVPROF=x/usr/lib/nvidia-cuda-toolkit/bin/nvprof LD_LIBRARY_PATH=x/usr/lib/x86_64-linux-gnu \\
        python3 tests/data/profilers/make_nvprof_transcripts.py

The values are ours (a GeForce GTX 1080 Ti profile written by hand, below); every character around them --
header lines, quoting, units row, units inside values, number formats, level names, kernel name
demangling -- is nvprof's.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: CUPTI metric id and value kind (0 double, 1 uint64, 2 percent, 3 throughput B/s, 5 utilization level)
#: of compute capability 5.x-7.x, as cuptiMetricGetAttribute(id, NAME / VALUE_KIND) of libcupti 11.8 gives them
METRIC_IDS = {
    "achieved_occupancy": (2002, 0), "issue_slot_utilization": (2010, 2), "gld_transactions_per_request": (2015, 0),
    "gst_transactions_per_request": (2016, 0), "gld_transactions": (2021, 1), "gst_transactions": (2022, 1),
    "l2_read_transactions": (2025, 1), "l2_write_transactions": (2026, 1), "dram_read_transactions": (2027, 1),
    "dram_write_transactions": (2028, 1), "global_hit_rate": (2029, 2), "gld_throughput": (2033, 3),
    "l2_tex_read_hit_rate": (2037, 2), "dram_read_throughput": (2039, 3), "single_precision_fu_utilization": (2060, 5),
    "flop_count_sp_special": (2069, 1), "inst_executed": (2070, 1), "dram_utilization": (2072, 5),
    "inst_fp_32": (2086, 1), "inst_integer": (2088, 1), "inst_control": (2090, 1), "inst_misc": (2092, 1),
    "inst_executed_global_loads": (2104, 1), "inst_executed_global_stores": (2108, 1),
}

DEVICE = {"name": "GeForce GTX 1080 Ti", "sms": 28, "cc": (6, 1), "clock_khz": 1582000, "mem": 11 * 2**30,
          "bw_kbs": 484_000_000, "l2": 2883584}


def _saxpy(gld_b_per_s: int, hit: float, occ: float, level: int) -> dict:
    w = 4096 * 8  # warps: 4096 blocks of 256 threads
    return {"inst_executed": 12 * w, "inst_executed_global_loads": 2 * w, "inst_executed_global_stores": w,
            "inst_fp_32": 2 * 32 * w, "inst_integer": 5 * 32 * w, "inst_misc": 32 * w, "inst_control": 32 * w,
            "flop_count_sp_special": 0, "global_hit_rate": hit, "l2_tex_read_hit_rate": 25.0,
            "gld_transactions": 8 * w, "gld_transactions_per_request": 4.0, "gst_transactions": 4 * w,
            "gst_transactions_per_request": 4.0, "achieved_occupancy": occ, "gld_throughput": gld_b_per_s,
            "dram_utilization": level, "single_precision_fu_utilization": 2, "issue_slot_utilization": 12.5}


def _gemm() -> dict:
    w = 4096 * 8  # 64 x 64 blocks of 16 x 16 threads
    return {"inst_executed": 400 * w, "inst_executed_global_loads": 16 * w, "inst_executed_global_stores": w,
            "inst_fp_32": 256 * 32 * w, "inst_integer": 80 * 32 * w, "inst_misc": 20 * 32 * w,
            "inst_control": 27 * 32 * w, "flop_count_sp_special": 8 * 32 * w, "global_hit_rate": 80.0,
            "l2_tex_read_hit_rate": 90.0, "gld_transactions": 64 * w, "gld_transactions_per_request": 4.0,
            "gst_transactions": 4 * w, "gst_transactions_per_request": 4.0, "achieved_occupancy": 0.49125,
            "gld_throughput": 2_146_959_360_000 // 10, "dram_utilization": 1,
            "single_precision_fu_utilization": 10, "issue_slot_utilization": 80.0}


#: (mangled name, duration ns, grid, block, metrics) per launch, in launch order
LAUNCHES = [
    ("_Z5saxpyifPfS_", 160_512, (4096, 1, 1), (256, 1, 1), _saxpy(159_183_110_000, 50.0, 0.8123, 8)),
    ("_Z4gemmPKfS0_Pfi", 2_345_678, (64, 64, 1), (16, 16, 1), _gemm()),
    ("_Z5saxpyifPfS_", 161_024, (4096, 1, 1), (256, 1, 1), _saxpy(750_550_000, 48.0, 0.8077, 7)),
    ("_Z5saxpyifPfS_", 159_968, (4096, 1, 1), (256, 1, 1), _saxpy(158_012_345_678, 52.0, 0.8150, 8)),
]


def _schema(nvprof: Path) -> list[str]:
    data = nvprof.read_bytes()
    return [m.decode() for m in re.findall(rb"CREATE (?:TABLE|INDEX) IF NOT EXISTS [^\x00]+", data)]


def _columns(statements: list[str], table: str) -> list[str]:
    for s in statements:
        if s.startswith(f"CREATE TABLE IF NOT EXISTS {table}("):
            return [c.strip().split()[0] for c in s[s.index("(") + 1:-1].split(",")][1:]  # without _id_
    raise KeyError(table)


def build_profile(path: Path, nvprof: Path, *, metrics: bool) -> None:
    """Write an nvprof 11.8 profile of :data:`LAUNCHES` on :data:`DEVICE` (with metric records or without)."""
    stm = _schema(nvprof)
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path)
    for s in stm:
        db.execute(s)
    db.execute("INSERT OR IGNORE INTO StringTable VALUES(0,'-- null --')")
    db.execute("INSERT INTO Version VALUES(12)")
    ids: dict[str, int] = {}

    def string(text: str) -> int:
        if text not in ids:
            ids[text] = db.execute("INSERT INTO StringTable(value) VALUES(?)", (text,)).lastrowid
        return ids[text]

    def insert(table: str, **kw: object) -> None:
        cols = _columns(stm, table)
        db.execute(f"INSERT INTO {table}({','.join(cols)}) VALUES({','.join('?' * len(cols))})",
                   [kw.get(c, 0) for c in cols])

    d = DEVICE
    insert("CUPTI_ACTIVITY_KIND_DEVICE", name=string(d["name"]), numMultiprocessors=d["sms"],
           computeCapabilityMajor=d["cc"][0], computeCapabilityMinor=d["cc"][1], id=0, numThreadsPerWarp=32,
           coreClockRate=d["clock_khz"], globalMemorySize=d["mem"], globalMemoryBandwidth=d["bw_kbs"],
           l2CacheSize=d["l2"], maxWarpsPerMultiprocessor=64, maxBlocksPerMultiprocessor=32, maxThreadsPerBlock=1024,
           maxBlockDimX=1024, maxBlockDimY=1024, maxBlockDimZ=64, maxGridDimX=2**31 - 1, maxGridDimY=65535,
           maxGridDimZ=65535, uuid=b"\0" * 16, migUuid=b"\0" * 16, isCudaVisible=1)
    insert("CUPTI_ACTIVITY_KIND_CONTEXT", contextId=1, deviceId=0, computeApiKind=1, nullStreamId=7)
    t = 1_250_000_000
    for corr, (name, dur, grid, block, mets) in enumerate(LAUNCHES, start=1):
        insert("CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL", cacheConfig=b"\0", registersPerThread=32, start=t, end=t + dur,
               completed=t + dur, deviceId=0, contextId=1, streamId=7, gridX=grid[0], gridY=grid[1], gridZ=grid[2],
               blockX=block[0], blockY=block[1], blockZ=block[2], correlationId=corr, gridId=corr, name=string(name),
               pAccessPolicyWindow=b"")
        for metric, value in (mets.items() if metrics else ()):
            mid, kind = METRIC_IDS[metric]
            blob = struct.pack("<d", value) if kind in (0, 2) else struct.pack("<Q", int(value))
            insert("CUPTI_ACTIVITY_KIND_METRIC", id=mid, value=blob, correlationId=corr, flags=0)
        t += dur + 5000
    db.commit()
    db.close()


def main() -> int:
    nvprof = Path(os.environ.get("NVPROF", "nvprof"))
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE
    work = Path(tempfile.mkdtemp())
    build_profile(work / "gtx1080ti_metrics.nvvp", nvprof, metrics=True)
    build_profile(work / "gtx1080ti_trace.nvvp", nvprof, metrics=False)
    runs = {"nvprof_11.8_metrics_summary.csv": ("gtx1080ti_metrics.nvvp", ["--csv"]),
            "nvprof_11.8_metrics_trace.csv": ("gtx1080ti_metrics.nvvp", ["--csv", "--print-gpu-trace"]),
            "nvprof_11.8_gpu_trace.csv": ("gtx1080ti_trace.nvvp", ["--csv", "--print-gpu-trace"])}
    for target, (prof, opts) in runs.items():
        # --log-file: the file nvprof itself writes (the same text it prints on stderr)
        subprocess.run([str(nvprof), "-i", str(work / prof), *opts, "--log-file", str(out / target)], check=True)
        print(target)
    shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
