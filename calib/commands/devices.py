"""calib devices"""

from __future__ import annotations

import argparse

HELP = "list real GPUs (NVML, amdsmi) and virtual GPU presets"


EPILOG = "example:\n  calib devices"

def add_arguments(p: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> int:
    from calib.core.errors import DeviceError
    from microbench.devices.registry import backends, real_backends
    from microbench.devices.sim.presets import PRESETS

    for b in real_backends():  # every vendor of the registry (microbench.devices.registry.BACKENDS)
        print(f"real GPUs ({b.vendor}, {b.library}):")
        try:
            gpus = b.list_gpus()
        except DeviceError as e:
            gpus = []
            print(f"  none usable: {e}")
        if not gpus:
            ok, msg = b.available()
            print(f"  none found ({msg})" if not ok else "  none found")
        for g in gpus:
            print(f"  {b.spec(g.get('index'))}  {g.get('name', '?')}  uuid {g.get('uuid', '?')}"
                  + (f"  [{g['architecture']}]" if g.get("architecture") else ""))
            if g.get("measures"):
                print(f"      measures: {', '.join(g['measures'])}")
            for note in g.get("notes", []):
                print(f"      note: {note}")
    print("virtual GPUs:")
    for name, p in PRESETS.items():
        dvfs = f", DVFS {len(p.dvfs.core_mhz)}x{len(p.dvfs.mem_mhz)} clocks" if p.dvfs else ""
        sms = f"{p.sm_count} CUs, wave{p.timing.warp_size}" if p.target else f"{p.sm_count} SMs"
        print(f"  sim:{name:8s} {p.description}: {sms}, {p.default_core_mhz:g}/{p.default_mem_mhz:g} MHz, "
              f"units {', '.join(p.units)}{dvfs}")
    for b in backends(virtual=True):   # a virtual vendor besides sim: its own specs
        for g in b.list_gpus() if b.prefix != "sim" else []:
            print(f"  {b.spec(g.get('index'))}  {g.get('name', '?')}  ({b.vendor})")
    return 0
