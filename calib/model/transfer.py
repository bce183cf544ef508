"""Host-device copies (``transfer`` section, model ``pcie``): time, energy and what to do about them.

Per direction d (``h2d``, ``d2h``) and host memory m (``pinned``, ``pageable``)::

    time_s(bytes)        = latency_<d>_<m>_s + bytes / bandwidth_<d>_<m>_bytes_per_s
    board energy (J)     = board_idle_power_w x time_s + energy_<d>_j_per_byte x bytes
    link power (W)       = energy_<d>_j_per_byte x bandwidth_<d>_pinned_bytes_per_s   (board, above idle,
                                                                                      while a copy streams)
    host energy (J)      = host_power_<m>_w x time_s    (wall power above idle beyond the board's, when the
                                                         campaign had a wall meter; else the host CPU
                                                         package and DRAM's from RAPL,
                                                         host_rapl_power_<m>_w, when it had RAPL)

The energy per byte is the board's extra energy per byte copied (link, copy engine, GPU memory); the
link's power while data moves is part of it (a link cannot be active without moving bytes here, so
the two are not separable -- sankaranarayanan-thesis-2016-notes.md 7.2 fits E = e_byte x bytes + P x t
with P the idle power). A kernel's copies (``bytes_h2d``, ``bytes_d2h`` per launch, ``host_pinned``)
then cost :func:`copy_breakdown`: their time and energy beside the kernel's, the copy/compute time
ratio (the energy thesis's "transfer to compute ratio", ch. 4), and what two remedies would save:

- overlapping copies with compute (CUDA streams, copies chunked): the time becomes
  ``max(kernel, copies)``, saving ``min(kernel, copies)`` and the idle board power over it;
- pinned host memory for a pageable copy: the pinned time and host power instead.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from calib.core import names
from calib.core.errors import BadInputError
from calib.core.params import ParameterFile, Section
from calib.core.units import COPY_DIRECTIONS as DIRECTIONS, HOST_MEMORY
from calib.model.validation import check_names, in_range

MODEL_NAME = "pcie"


def validate(section: Section, where: str = "transfer") -> None:
    """SchemaError (naming the field): every direction/memory pair needs a positive bandwidth (at most
    10 TB/s) and a latency in [0, 1 s]; energies per byte in [0, 1e-6] J; powers in [0, 1 kW]."""
    for d in DIRECTIONS:
        for m in HOST_MEMORY:
            in_range(section, names.copy_bandwidth(d, m), where, 0.0, 1e13, "copy time divides by it", lo_open=True)
            in_range(section, names.copy_latency(d, m), where, 0.0, 1.0, "fixed time of one copy")
        in_range(section, names.copy_energy_per_byte(d), where, 0.0, 1e-6, "board energy per byte copied")
    in_range(section, "board_idle_power_w", where, 0.0, 1e4, "board power while nothing runs")
    for m in HOST_MEMORY:
        for name in (names.copy_host_power(m), names.copy_host_rapl_power(m)):
            if name in section.params:
                in_range(section, name, where, 0.0, 1e3, "host power while copying")
    check_names(section, where, ["board_idle_power_w"]
                + [names.copy_bandwidth(d, m) for d in DIRECTIONS for m in HOST_MEMORY]
                + [names.copy_latency(d, m) for d in DIRECTIONS for m in HOST_MEMORY]
                + [names.copy_energy_per_byte(d) for d in DIRECTIONS] + [names.copy_host_power(m) for m in HOST_MEMORY]
                + [names.copy_host_rapl_power(m) for m in HOST_MEMORY])


def _mode(pinned: Any) -> np.ndarray:
    return np.where(np.asarray(pinned, float) > 0.5, "pinned", "pageable")


def copy_time_s(section: Section, nbytes: Any, direction: str, pinned: Any) -> np.ndarray:
    """Time of one copy, s (module docstring); ``pinned`` 1/0 (or bool) per row."""
    b = np.asarray(nbytes, float)
    modes = np.broadcast_to(_mode(pinned), b.shape) if np.ndim(b) else _mode(pinned)
    out = np.zeros(np.shape(b))
    for m in HOST_MEMORY:
        sel = modes == m
        t = section.value(names.copy_latency(direction, m)) + b / section.value(names.copy_bandwidth(direction, m))
        out = np.where(sel, t, out)
    return np.where(b > 0, out, 0.0)


def copy_energy_j(section: Section, nbytes: Any, direction: str, pinned: Any) -> tuple[np.ndarray, np.ndarray]:
    """(board, host) energy of one copy, J (host NaN when the section has no host power)."""
    b = np.asarray(nbytes, float)
    t = copy_time_s(section, b, direction, pinned)
    board = section.value("board_idle_power_w") * t + section.value(names.copy_energy_per_byte(direction)) * b
    modes = _mode(pinned)
    host = np.full(np.shape(t), math.nan)
    for m in HOST_MEMORY:
        # the wall's view (PSU losses included) where there was a meter, else RAPL's CPU package and DRAM
        name = next((n for n in (names.copy_host_power(m), names.copy_host_rapl_power(m)) if n in section.params), None)
        if name is not None:
            host = np.where(modes == m, section.value(name) * t, host)
    return board, host


def copy_host_rapl_energy_j(section: Section, nbytes: Any, direction: str, pinned: Any) -> np.ndarray:
    """Host CPU package and DRAM energy above idle of one copy (RAPL), J; NaN when the section has none."""
    t = copy_time_s(section, np.asarray(nbytes, float), direction, pinned)
    modes = _mode(pinned)
    out = np.full(np.shape(t), math.nan)
    for m in HOST_MEMORY:
        if names.copy_host_rapl_power(m) in section.params:
            out = np.where(modes == m, section.value(names.copy_host_rapl_power(m)) * t, out)
    return out


def link_power_w(section: Section, direction: str) -> float:
    """Board power above idle while a pinned copy streams, W."""
    return section.value(names.copy_energy_per_byte(direction)) * section.value(names.copy_bandwidth(direction, "pinned"))


def _col(df: pd.DataFrame, name: str, default: float) -> np.ndarray:
    return (pd.to_numeric(df[name], errors="coerce").fillna(default).to_numpy(float) if name in df.columns
            else np.full(len(df), default))


def copy_breakdown(pf: ParameterFile, df: pd.DataFrame, kernel_time_s: Any = None,
                   kernel_energy_j: Any = None) -> pd.DataFrame:
    """Per row: copy time and energy (both directions, the row's host memory), the kernel's time and
    energy (given, else the row's measured ``time_s`` and no energy; :func:`calib.model.predict.predict_copies`
    passes the model's predictions), the copy/compute time ratio and what overlapping and pinned memory would save.
    Columns are in s and J; ``*_saving_*`` are positive when the remedy saves."""
    sec = pf.get("transfer")
    if sec is None:
        raise BadInputError("the parameter file has no transfer section; fit one from a session with copy "
                            "microbenchmarks (calib run on a device that can copy)")
    h2d, d2h = _col(df, "bytes_h2d", 0.0), _col(df, "bytes_d2h", 0.0)
    pinned = _col(df, "host_pinned", 0.0)
    if kernel_time_s is None:  # the measured time where there is one; predicted ones: predict.predict_copies
        kernel_time_s = (pd.to_numeric(df["time_s"], errors="coerce").to_numpy(float) if "time_s" in df.columns
                         else np.full(len(df), math.nan))
    if kernel_energy_j is None:
        kernel_energy_j = np.full(len(df), math.nan)
    kt, ke = np.asarray(kernel_time_s, float), np.asarray(kernel_energy_j, float)
    t_h, t_d = copy_time_s(sec, h2d, "h2d", pinned), copy_time_s(sec, d2h, "d2h", pinned)
    (eb_h, eh_h), (eb_d, eh_d) = copy_energy_j(sec, h2d, "h2d", pinned), copy_energy_j(sec, d2h, "d2h", pinned)
    tc = t_h + t_d
    idle = sec.value("board_idle_power_w")
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(kt > 0, tc / kt, math.nan)
    overlap_t = np.minimum(tc, kt)
    tp_h, tp_d = copy_time_s(sec, h2d, "h2d", 1.0), copy_time_s(sec, d2h, "d2h", 1.0)
    (pb_h, ph_h), (pb_d, ph_d) = copy_energy_j(sec, h2d, "h2d", 1.0), copy_energy_j(sec, d2h, "d2h", 1.0)
    pin_t = np.where(pinned > 0.5, 0.0, tc - (tp_h + tp_d))
    pin_e = np.where(pinned > 0.5, 0.0, (eb_h + eb_d) - (pb_h + pb_d))
    pin_host = np.where(pinned > 0.5, 0.0, (eh_h + eh_d) - (ph_h + ph_d))
    return pd.DataFrame({
        "workload": df["workload"].astype(str).to_numpy() if "workload" in df.columns else [f"row {i + 1}" for i in range(len(df))],
        "bytes_h2d": h2d, "bytes_d2h": d2h, "host_memory": np.where(pinned > 0.5, "pinned", "pageable"),
        "copy_h2d_time_s": t_h, "copy_d2h_time_s": t_d, "copy_time_s": tc,
        "copy_energy_j": eb_h + eb_d, "copy_host_energy_j": eh_h + eh_d,
        "copy_host_cpu_dram_energy_j": (copy_host_rapl_energy_j(sec, h2d, "h2d", pinned)
                                        + copy_host_rapl_energy_j(sec, d2h, "d2h", pinned)),
        "kernel_time_s": kt, "kernel_energy_j": ke, "copy_compute_ratio": ratio,
        "copy_energy_share": (eb_h + eb_d) / ((eb_h + eb_d) + ke),
        "overlap_time_saving_s": overlap_t, "overlap_energy_saving_j": idle * overlap_t,
        "pinned_time_saving_s": pin_t, "pinned_energy_saving_j": pin_e, "pinned_host_energy_saving_j": pin_host,
    })


def format_breakdown(r: pd.Series) -> list[str]:
    """Human-readable lines for one row of :func:`copy_breakdown`."""
    lines = [f"copies ({r['host_memory']}): {r['bytes_h2d'] / 1e6:.4g} MB in, {r['bytes_d2h'] / 1e6:.4g} MB out: "
             f"{1e3 * r['copy_time_s']:.4g} ms, {r['copy_energy_j']:.4g} J (board)"
             + (f" + {r['copy_host_energy_j']:.4g} J (host)" if math.isfinite(r["copy_host_energy_j"]) else "")
             + (f", host CPU and DRAM {r['copy_host_cpu_dram_energy_j']:.4g} J (RAPL)"
                if math.isfinite(r.get("copy_host_cpu_dram_energy_j", math.nan)) else "")]
    if math.isfinite(r["kernel_time_s"]):
        lines.append(f"kernel: {1e3 * r['kernel_time_s']:.4g} ms"
                     + (f", {r['kernel_energy_j']:.4g} J" if math.isfinite(r["kernel_energy_j"]) else "")
                     + f"; copy/compute time ratio {r['copy_compute_ratio']:.3g}")
        lines.append(f"overlapping copies with compute (streams) would save up to {1e3 * r['overlap_time_saving_s']:.4g} ms "
                     f"and {r['overlap_energy_saving_j']:.4g} J of idle board energy")
    if r["host_memory"] == "pageable":
        lines.append(f"pinned host memory would save {1e3 * r['pinned_time_saving_s']:.4g} ms and "
                     f"{r['pinned_energy_saving_j']:.4g} J (board)"
                     + (f" + {r['pinned_host_energy_saving_j']:.4g} J (host)"
                        if math.isfinite(r["pinned_host_energy_saving_j"]) else ""))
    return lines
