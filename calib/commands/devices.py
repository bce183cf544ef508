"""calib devices"""

from __future__ import annotations

import argparse

HELP = "list real GPUs (via NVML) and virtual GPU presets"


EPILOG = "example:\n  calib devices"

def add_arguments(p: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> int:
    from microbench.devices import real_gpus
    from microbench.devices.sim.presets import PRESETS

    gpus = real_gpus()
    print("real GPUs (NVML):")
    if not gpus:
        print("  none found (no NVIDIA driver/NVML on this machine)")
    for g in gpus:
        print(f"  cuda:{g.get('index')}  {g.get('name', '?')}  uuid {g.get('uuid', '?')}")
    print("virtual GPUs:")
    for name, p in PRESETS.items():
        dvfs = f", DVFS {len(p.dvfs.core_mhz)}x{len(p.dvfs.mem_mhz)} clocks" if p.dvfs else ""
        print(f"  sim:{name:8s} {p.description}: {p.sm_count} SMs, {p.default_core_mhz:g}/{p.default_mem_mhz:g} MHz, "
              f"units {', '.join(p.units)}{dvfs}")
    return 0
