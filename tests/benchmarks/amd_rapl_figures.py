"""Figures of the AMD backend and the RAPL reader, without hardware (issue 32's "must show").

    .venv/bin/python tests/benchmarks/amd_rapl_figures.py [--seconds 4]

1. ``calib log --device rocm:0`` over the fake amdsmi (microbench.testing.amdsmi_fake, the 7.x shapes): an
   MI300X whose power swings 240-600 W; mean logged power against the fake's power at the logged instants,
   and the counter's energy against the exact integral of the trace.
2. Each known amdsmi fault on the fake: the one message or the named fallback the backend gives.
3. RAPL over fake powercap trees whose counters wrap twice: energy per tree against the integral of the
   trace (Intel two sockets with DRAM, Intel client with psys, AMD Zen package+core), and what is said
   about DRAM on the AMD tree.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import sys
import tempfile
import warnings
from pathlib import Path


class _Patch:
    """sys.modules['amdsmi'] = a fake, for the duration of a with block (no pytest here)."""

    def __init__(self, gpus):
        from microbench.testing import amdsmi_fake as F

        self.mod = F.fake_module(gpus)

    def __enter__(self):
        self.old = sys.modules.get("amdsmi")
        sys.modules["amdsmi"] = self.mod
        return self.mod

    def __exit__(self, *a):
        if self.old is None:
            sys.modules.pop("amdsmi", None)
        else:
            sys.modules["amdsmi"] = self.old


def amdsmi_log(seconds: float) -> None:
    from calib.cli import main
    from calib.core.session import read_session
    from microbench.testing import amdsmi_fake as F

    trace = lambda t: 420.0 + 180.0 * math.sin(2 * math.pi * t / 1.7)  # noqa: E731
    with _Patch([F.mi300x(power_fn=trace)]) as mod, tempfile.TemporaryDirectory() as d:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(["log", "--device", "rocm:0", "--rate", "20", "--duration", str(seconds), "-o", f"{d}/s"])
        g = mod.FAKE.gpus[0]
        df = read_session(f"{d}/s").stream("amdsmi0")
        truth_p = [g.power_fn(t) for t in df["t_wall_s"]]
        mp = sum(truth_p) / len(truth_p)
        e = (df["energy_mj"].iloc[-1] - df["energy_mj"].iloc[0]) / 1000
        ts = df["energy_timestamp_s"]  # the counter's own clock: the row stamp lags the read under load
        et = g.energy_j(ts.iloc[-1]) - g.energy_j(ts.iloc[0])
        print(f"1. calib log --device rocm:0 (exit {code}), {len(df)} rows over {seconds:g} s on the fake MI300X:")
        print(f"   mean power logged {df['power_w'].mean():.2f} W, truth at the same instants {mp:.2f} W: "
              f"{100 * (df['power_w'].mean() / mp - 1):+.3f} %")
        print(f"   energy counter {e:.2f} J, exact integral {et:.2f} J: {100 * (e / et - 1):+.4f} %")


def amdsmi_faults() -> None:
    from calib.core.errors import CalibError
    from microbench.devices import amd
    from microbench.testing import amdsmi_fake as F

    S = F.STATUS
    print("2. amdsmi faults on the fake:")

    def show(label, gpus, fn):
        with _Patch(gpus), warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            try:
                msg = fn()
            except CalibError as e:
                msg = f"{type(e).__name__}: {e}"
        said = "; ".join(str(x.message) for x in w)
        print(f"   {label}: {said or msg}")

    def probe(i=0, check=0.3):
        g = amd.AmdGpu(i, energy_check_s=check)
        try:
            c = g.capabilities()
            return f"power from {c['power_w_source']}, scope {c['power_scope']}"
        finally:
            g.close()

    show("MI300X average 'N/A'", [F.mi300x()], lambda: probe() + ", power_avg_w left empty")
    show("MI250X current 'N/A'", [F.mi250x_gcd(0), F.mi250x_gcd(1)], lambda: probe(0, 0))
    show("MI250X odd GCD at 0 W", [F.mi250x_gcd(0), F.mi250x_gcd(1)], lambda: probe(1, 0))
    show("odd GCD, sibling not visible", [F.mi250x_gcd(1, hip_id=0)],
         lambda: amd.AmdGpu(0, energy_check_s=0).capabilities()["unsupported_reasons"]["power"])
    show("stuck energy counter (MI100)", [F.mi300x(stuck_counter=True)], lambda: probe())
    show("HIP order != amdsmi order", [F.mi300x(hip_id=1, uuid="B"), F.mi300x(hip_id=0, uuid="A")],
         lambda: (lambda g: f"rocm:0 -> amdsmi handle {g.smi_index} (uuid {g.uuid}), by {g.mapping}")(
             amd.AmdGpu(0, energy_check_s=0)))
    show("6.2 wheel key 'power'", [F.mi300x(energy_key="power")],
         lambda: f"energy key {amd.AmdGpu(0, energy_check_s=0).capabilities()['energy_counter_key']!r}")
    for code in ("AMDSMI_STATUS_BUSY", "AMDSMI_STATUS_NO_PERM", "AMDSMI_STATUS_NOT_FOUND"):
        def fail(code=code):
            g = amd.AmdGpu(0, energy_check_s=0)
            g.capabilities()
            sys.modules["amdsmi"].FAKE.gpus[0].fail["amdsmi_get_power_info"] = S[code]
            g.sample()
        show(f"status {code}", [F.mi300x()], fail)
    with _Patch([F.mi300x()]):
        sys.modules["amdsmi"].FAKE.gpus[0].fail["amdsmi_set_gpu_clk_range"] = S["AMDSMI_STATUS_NOT_SUPPORTED"]
        g = amd.AmdGpu(0, energy_check_s=0)
        g.lock_clocks(1300, None)
        print(f"   clock range not supported: fallback {g.locked['fallback']} at {g.locked['core']} MHz; "
              f"close restores perf level AUTO")
        g.close()
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            amd.load_amdsmi()
        print("   (the real amdsmi loaded here)")
    except CalibError as e:
        print(f"   library absent (the real 7.x wheel, installed): {e} [stdout during import: {out.getvalue()!r}]")


def rapl_wraps() -> None:
    from microbench.devices import rapl
    from microbench.testing import powercap_fake as PC

    print("3. RAPL, counters wrapping twice (read every 0.1 s of the trace's time):")
    sine = lambda m, a, p: (lambda t: m + a * math.sin(2 * math.pi * t / p))  # noqa: E731
    trees = {
        "Intel 2 sockets + DRAM": (lambda r: PC.intel_server(r, sine(100, 40, 1.3), sine(20, 5, 0.7), bits=22,
                                                             start_j=100.0), 6.0),
        "Intel client + psys": (lambda r: PC.intel_client(r, sine(15, 5, 1.0), sine(9, 3, 1.0), sine(35, 8, 1.0),
                                                          bits=20), 9.0),
        "AMD Zen package+core": (lambda r: PC.amd_zen(r, sine(180, 60, 2.0), sine(120, 40, 2.0), bits=24,
                                                      start_j=10.0), 4.0),
    }
    for label, (make, secs) in trees.items():
        with tempfile.TemporaryDirectory() as d, warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            tree = make(Path(d))
            s = rapl.RaplSensor(d, clock=lambda: (tree.t, tree.t), max_power_w=300.0)
            rows = s.read()
            for _ in range(int(secs / 0.1)):
                tree.advance(0.1)
                rows += s.read()
            host = [k for k in tree.zones if k.startswith("package") and (k.count("/") == 0 or k.endswith("dram"))]
            truth = sum(tree.zones[k].energy_j for k in host)
            got = rows[-1].values["host_energy_j"]
            wraps = {k: tree.wraps(k) for k in host}
            print(f"   {label}: host energy {got:.3f} J vs {truth:.3f} J ({100 * (got / truth - 1):+.4f} %), "
                  f"wraps {wraps}, host power = {s.capabilities()['host_power']}")
            for x in w:
                print(f"     said: {x.message}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=4.0)
    a = ap.parse_args()
    amdsmi_log(a.seconds)
    amdsmi_faults()
    rapl_wraps()


if __name__ == "__main__":
    main()
