"""calib doctor: what this machine can measure (NVML fields, AMD GPUs through amdsmi, permissions, CuPy,
analyzers found).

With ``--serial PORT --protocol NAME`` it also tries the analyzer for 1 s and reports which reading of
each unconfirmed protocol fact the instrument used (HIOKI item separator and confirmation codes, WT210
rate format, PowerSensor3 pairs in use). A requested check that fails -- the port cannot be opened, the
instrument refuses its setup, or no reading arrives in 1 s -- ends with one ``ERROR:`` line giving the
reason and a non-zero exit status (after the report).

With ``--power-sampling`` it measures how NVML samples each GPU's power (``--device DEV``: that device,
a virtual one included; else every real GPU): update period, averaging window, the share of time the
reading covers and whether the energy counter integrates all of the time (about 35 s each, square-wave
loads; :mod:`microbench.power_sampling`), and says where window energies will come from.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from calib.core.errors import BadInputError, CalibError, DeviceError

HELP = ("report what this machine can measure: NVML fields, AMD GPUs (amdsmi), clock-control permission, CuPy, "
        "serial analyzers")

#: USB vendor:product ids of adapters and instruments worth naming
_USB_HINTS = {
    (0x0403, 0x6001): "FTDI FT232 USB-serial (the Watts up? PRO uses one; also many RS-232 adapters)",
    (0x0403, 0x6015): "FTDI FT-X USB-serial",
    (0x067B, 0x2303): "Prolific PL2303 USB-serial adapter (RS-232: WT210/WT310/HIOKI need a null-modem cable)",
    (0x0483, 0x5740): "STM32 USB CDC (PowerSensor3 shows up like this)",
    (0x0B21, 0x0025): "Yokogawa WT310 (USB-TMC, not a serial port: use its RS-232 interface or usbtmc)",
}


#: what each observed protocol fact means (facts the makers' documents leave unconfirmed)
_FACT_NOTES = {
    "separator": " (HIOKI reply item separator: working scripts show ';', a manual page ',')",
    "confirmation_codes": " (HIOKI: False = the meter does not confirm commands; settings checked with :ERR?)",
    "rate_format": " (WT210 :SAMP:RATE: 'seconds' as yoko-tool sends it, or a 'suffix' such as 250MS)",
    "pairs_in_use": " (PowerSensor3: pairs whose current and voltage sensors are both flagged in use)",
}


EPILOG = "example:\n  calib doctor --device sim:a100 --power-sampling"

def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--probe-rate", action="store_true",
                   help="also measure how often each GPU's power and energy readings change (1 s per GPU)")
    p.add_argument("--serial", metavar="PORT", help="also try an analyzer on PORT (with --protocol) for 1 s")
    p.add_argument("--protocol", metavar="NAME", help="protocol of --serial (wt310, wt210, hioki, wattsup, "
                                                      "powersensor3, csv)")
    p.add_argument("--device", metavar="DEV", help="also report this device (sim:<preset> or cuda:<index>): its "
                                                   "identity and sensors; with --power-sampling, its sampling")
    p.add_argument("--power-sampling", action="store_true",
                   help="measure how NVML samples power (update period, averaging window, share of time covered, "
                        "energy counter) on --device or every real GPU: about 35 s of square-wave load each")


def _cupy_report() -> dict[str, Any]:
    try:
        import cupy
    except ImportError as e:
        return {"installed": False, "message": f"CuPy not importable ({e}); `calib run --device cuda:N` needs "
                                               "pip install 'gpu-calib[gpu]'"}
    rep: dict[str, Any] = {"installed": True, "version": cupy.__version__}
    try:
        rep["cuda_devices"] = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001 - CUDA errors come in many types
        rep["cuda_devices"] = 0
        rep["message"] = f"CUDA not usable: {e}"
    return rep


def _serial_report() -> list[dict[str, Any]]:
    from serial.tools import list_ports

    links = sorted(Path("/dev/serial/by-id").glob("*"))   # stable names of the ports (none: no directory)
    return [{"device": p.device, "description": p.description,
             "usb": f"{p.vid:04x}:{p.pid:04x}" if p.vid is not None else None, "serial_number": p.serial_number,
             "hint": _USB_HINTS.get((p.vid, p.pid)) if p.vid is not None else None,
             "by_id": next((str(q) for q in links if os.path.realpath(q) == os.path.realpath(p.device)), None)}
            for p in list_ports.comports()]


def _probe_analyzer(port: str, protocol: str | None) -> dict[str, Any]:
    from microbench.instruments import PROTOCOLS, open_analyzer

    if not protocol or protocol not in PROTOCOLS:
        raise BadInputError(f"--serial needs --protocol, one of {', '.join(sorted(PROTOCOLS))}")
    an = open_analyzer(port, protocol)
    try:
        an.start()
        time.sleep(1.0)
        rows = an.read()
        out = {"port": port, "protocol": protocol, "ok": bool(rows), "identity": an.identity,
               "rows_in_1s": len(rows), "last": dict(rows[-1].values) if rows else None,
               "observed": dict(an.observed), "settings": an.settings(), "stats": an.stats.to_dict()}
        if not rows:
            st = an.stats
            why = (f"; last rejected frame: {st.last_reject}" if st.last_reject else "")
            err = DeviceError(f"analyzer {protocol} on {port}: no reading in 1 s (rejected {st.rejected}, instrument "
                              f"errors {st.instrument_errors}, timeouts {st.timeouts}{why})")
            out.update(error=str(err), _exc=err)
        return out
    except CalibError as e:
        return {"port": port, "protocol": protocol, "ok": False, "error": str(e), "_exc": e}
    finally:
        an.close()


def run(args: argparse.Namespace) -> int:
    from microbench.devices.cuda import BACKEND as CUDA
    from microbench.devices.rapl import rapl_status
    from microbench.devices.registry import real_backends

    # NVML has its own section; "backends": what the registry's other real-GPU backends see
    report = {"python": sys.version.split()[0], "nvml": CUDA.report(args.probe_rate),
              "backends": {b.prefix: {"vendor": b.vendor, **b.report(args.probe_rate)} for b in real_backends()
                           if b.prefix != "cuda"},
              "rapl": rapl_status(), "cupy": _cupy_report(), "serial_ports": _serial_report()}
    failure = None
    if getattr(args, "device", None) or getattr(args, "power_sampling", False):
        report["devices"] = _device_reports(args)
    if args.serial:
        report["analyzer_probe"] = _probe_analyzer(args.serial, args.protocol)
        failure = report["analyzer_probe"].pop("_exc", None)
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        _print(report)
    if failure is not None:  # the check the user asked for failed: the reason, in one line, and its status
        sys.stdout.flush()
        raise failure
    return 0


def _print(r: dict[str, Any]) -> None:
    n = r["nvml"]
    b = n["binding"]
    print(f"NVML binding: nvidia-ml-py {b['nvidia-ml-py'] or 'NOT INSTALLED'}"
          + (f"  (WARNING: the deprecated 'pynvml' {b['deprecated_pynvml_installed']} is installed too; "
             "pip uninstall pynvml)" if b["deprecated_pynvml_installed"] else ""))
    print(f"NVML: {n['message']}")
    for g in n["gpus"]:
        ident = g["identity"]
        print(f"  GPU {ident['index']}: {ident['name']} ({ident.get('architecture')}, {ident.get('pci_bus_id')}, "
              f"{ident['uuid']})")
        if "error" in g:
            print(f"    error: {g['error']}")
            continue
        sup = g["supported"]
        yes = ", ".join(k for k, v in sup.items() if v)
        no = ", ".join(f"{k} ({g['unsupported_reasons'].get(k, 'no')})" for k, v in sup.items() if not v)
        print(f"    measurable: {yes}")
        if no:
            print(f"    not available: {no}")
        print(f"    power_w from: {g['power_w_source']}")
        print(f"    energy_mj from: {g['energy_mj_source']}")
        clk = g["clocks"]
        if "error" in clk:
            print(f"    clocks: {clk['error']}")
        else:
            print(f"    clocks: memory {clk['memory_mhz']} MHz; core clocks per memory clock {clk['core_mhz_count']}")
        print(f"    clock locking: {g['clock_locking']}")
        if "update_period_s" in g:
            u = g["update_period_s"]
            print(f"    readings change every: power {u['power_w']} s, energy counter {u['energy_mj']} s")
    for prefix, b in r.get("backends", {}).items():
        _print_backend(prefix, b)
    rp = r["rapl"]
    if not rp["readable"] and not rp["unreadable"]:
        print("RAPL (host CPU/DRAM power): no intel-rapl zone in /sys/class/powercap")
    else:
        print(f"RAPL (host CPU/DRAM power): readable {', '.join(rp['readable']) or 'none'}"
              + (f"; host power = {rp['host_power']}" if rp["host_power"] else ""))
        for zone, why in rp["unreadable"].items():
            print(f"  {zone}: {why}")
        for text in rp["absent"]:
            print(f"  {text}")
    c = r["cupy"]
    print(f"CuPy: {c.get('version', 'not installed')}" + (f", {c['cuda_devices']} CUDA device(s)" if c["installed"]
                                                          else "") + (f" -- {c['message']}" if c.get("message") else ""))
    ports = r["serial_ports"]
    print(f"Serial ports: {len(ports) or 'none found'}")
    for p in ports:
        print(f"  {p['device']}: {p['description']}" + (f" [{p['usb']}]" if p["usb"] else "")
              + (f" -- {p['hint']}" if p["hint"] else "") + (f" (stable path {p['by_id']})" if p["by_id"] else ""))
    if "devices" in r:
        _print_devices(r["devices"])
    if "analyzer_probe" in r:
        a = r["analyzer_probe"]
        if a["ok"]:
            print(f"Analyzer {a['protocol']} on {a['port']}: ok, {a['rows_in_1s']} rows in 1 s, identity "
                  f"{a['identity']!r}, last {a['last']}")
        else:
            print(f"Analyzer {a['protocol']} on {a['port']}: FAILED -- {a['error']}")
        for fact, value in a.get("observed", {}).items():
            print(f"  the instrument used: {fact} = {value!r}{_FACT_NOTES.get(fact, '')}")


def _device_reports(args: argparse.Namespace) -> list[dict[str, Any]]:
    """``--device`` / ``--power-sampling``: each device's identity, sensors and measured sampling."""
    from microbench.devices.registry import open_device, real_gpus
    from microbench.power_sampling import characterise

    out = []
    for spec in [args.device] if args.device else [g["spec"] for g in real_gpus()]:
        rep: dict[str, Any] = {"spec": spec}
        out.append(rep)
        try:
            dev = open_device(spec)
        except CalibError as e:
            rep["error"] = str(e)
            continue
        try:
            rep["name"] = dev.info.name
            rep["sensors"] = [s.describe() for s in dev.sensors()]
            if args.power_sampling:
                try:
                    rep["power_sampling"] = characterise(dev).to_dict()
                except CalibError as e:
                    rep["power_sampling"] = {"error": str(e)}
        finally:
            dev.close()
    return out


def sampling_lines(f: dict[str, Any]) -> list[str]:
    """Human lines for a measured ``power_sampling`` entry (:meth:`SamplingFacts.to_dict`)."""
    if "error" in f:
        return [f"power sampling: could not be measured -- {f['error']}"]
    ms = 1000.0
    lines = [f"power reading updates every {f['update_period_s'] * ms:.2f} ms (+-{f['update_period_stderr_s'] * ms:.2f}), "
             f"averages over {f['power_window_s'] * ms:.2f} ms (+-{f['power_window_stderr_s'] * ms:.2f}): it covers "
             f"{100 * f['coverage']:.0f} % of the time" + (" (part-time)" if f["part_time"] else "")]
    if f.get("counter_window_s") is not None:
        lines.append(f"energy counter updates every {f['counter_update_s'] * ms:.2f} ms and integrates over "
                     f"{f['counter_window_s'] * ms:.2f} ms of it: it covers {100 * f['counter_coverage']:.0f} % of the time")
    else:
        lines.append("energy counter: none seen")
    src = {"counter": "the energy counter (it integrates all of the time)",
           "power": "the power readings (they cover all of the time)",
           "power_phased": "power readings of windows repeated at shifted phases of the sampling grid "
                           "(reading and counter are both part-time)"}[f["energy_source"]]
    lines.append(f"window energies will come from {src}")
    return lines


def _print_devices(devs: list[dict[str, Any]]) -> None:
    for d in devs:
        print(f"Device {d['spec']}: {d.get('name', '')}")
        if "error" in d:
            print(f"  error: {d['error']}")
            continue
        for s in d.get("sensors", []):
            print(f"  sensor {s['name']} ({s['kind']}, {s.get('scope', 'gpu')}): {', '.join(s['columns'])}")
        if "power_sampling" in d:
            for line in sampling_lines(d["power_sampling"]):
                print(f"  {line}")


def _print_backend(prefix: str, b: dict[str, Any]) -> None:
    """A real-GPU backend's section (``Backend.report``): library, each GPU and what it can measure."""
    print(f"{b['vendor']} ({b['library']}): {b['message']}")
    for g in b["gpus"]:
        ident = g["identity"]
        print(f"  {prefix}:{ident.get('index')}: {ident.get('name')} ({ident.get('architecture', '?')}, "
              f"{ident.get('pci_bus_id', '?')}, {ident.get('uuid', '?')})")
        if "error" in g:
            print(f"    error: {g['error']}")
            continue
        print(f"    measurable: {', '.join(g.get('measurable', [])) or 'nothing'}")
        if g.get("not_available"):
            print(f"    not available: {', '.join(g['not_available'])}")
        for key, text in g.get("notes", {}).items():
            print(f"    {key}: {text}")
