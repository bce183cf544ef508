"""Sessions -> samples: segment a session by its markers and reduce each measurement window to a row.

For every ``measure_start``/``measure_stop`` pair (same workload, repeat and segment) the window's power
readings are averaged (dropping the first ``settle_s`` seconds, in which the sensor's averaging still
sees the warm-up edge), temperatures and fan duty are averaged, the energy counter difference over the
window is taken (:mod:`calib.windows`: interpolated at the window's edges, resets and wraps unwrapped),
and access rates are computed from the declared per-warp counts and the *measured* kernel time
(IPP eqs. 10-12, :mod:`calib.core.activity`). Idle windows become rows with all activities 0 and role ``idle``. Thermal steps are
returned separately as traces (:func:`thermal_steps`).
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from calib.core.errors import BadInputError
from calib.core.metrics import ar1_inflation
from calib.core.samples import ACT_PREFIX, CNT_PREFIX, check_samples
from calib.core.session import Session
from calib.core.activity import ActivityBasis, access_rates, warps_per_sm
from calib.core.units import (CHIP_UNITS, COPY_DIRECTIONS as DIRECTIONS, HOST_MEMORY, INSTRUCTION_CLASSES,
                              in_memory_domain, mem_intensity, unit_counts)
from calib.windows import EnergyCounter, sampled_window_energy

#: power column preference in a device (NVML-like) stream
POWER_COLUMNS = ("power_w", "power_avg_w")


def sensor_scope(entry: dict[str, Any]) -> str:
    """What a manifest's sensor entry measures: ``gpu`` (the device's own telemetry, any vendor),
    ``system`` (a wall analyzer) or ``host`` (CPU/DRAM, e.g. RAPL). Entries written before sensors
    declared a scope: analyzers are ``system``, everything else ``gpu``."""
    return str(entry.get("scope") or ("system" if entry.get("kind") == "analyzer" else "gpu"))


def power_stream(session: Session, prefer: str | None = None) -> str:
    """Name of the stream whose ``power_w`` is the GPU's power: ``prefer`` or the first sensor of the
    GPU itself (:func:`sensor_scope`)."""
    names = [s["name"] for s in session.manifest.get("sensors", [])]
    if prefer:
        if prefer not in names:
            raise BadInputError(f"{session.path}: no sensor stream '{prefer}' (streams: {', '.join(names)})")
        return prefer
    name = _stream(session, "power_w", lambda s: sensor_scope(s) == "gpu") or _stream(session, "power_w")
    if name is None:
        raise BadInputError(f"{session.path}: no sensor logs power_w; cannot build samples")
    return name


def _stream(session: Session, column: str, which: Any = lambda s: True) -> str | None:
    """Name of the session's first sensor stream that logs ``column`` and that ``which(entry)`` accepts."""
    return next((s["name"] for s in session.manifest.get("sensors", [])
                 if column in s.get("columns", []) and which(s)), None)


def host_stream(session: Session) -> str | None:
    """Name of the session's host power stream (a sensor of scope ``host`` with ``host_power_w``: RAPL), or None."""
    return _stream(session, "host_power_w", lambda s: sensor_scope(s) == "host")


def analyzer_stream(session: Session) -> str | None:
    """Name of the session's wall-power analyzer stream (a sensor of kind ``analyzer`` with ``power_w``), or None."""
    return _stream(session, "power_w", lambda s: s.get("kind") == "analyzer")


@dataclass
class Window:
    workload: str
    repeat: int
    segment: int
    t0: float
    t1: float
    info: dict[str, Any]


def _completed(markers: pd.DataFrame) -> set[tuple]:
    """(workload, repeat, segment) of campaign steps whose ``workload_done`` marker is on disk.

    A step interrupted by a kill is re-run after the resume (in a later segment); its partial windows
    in the earlier segment must not count twice.
    """
    done = markers[markers["event"] == "workload_done"]
    # a resume may record the completion of a step that ran in an earlier segment ("completes_segment")
    return {(m["workload"], int(m["repeat"]) if not pd.isna(m["repeat"]) else 0,
             int(m["info"].get("completes_segment", m["segment"])))
            for _, m in done.iterrows()}


def _pair(markers: pd.DataFrame, start: str, stop: str) -> list[Window]:
    """Pair start/stop markers of the same workload, repeat and segment (unpaired starts are dropped).

    In a campaign session (one with ``workload_done`` markers) only windows of completed steps count;
    a standalone log without step markers keeps every window.
    """
    out = []
    open_: dict[tuple, tuple[float, dict]] = {}
    done = _completed(markers)
    campaign = (markers["event"] == "workload_done").any()
    for _, m in markers.iterrows():
        rep = int(m["repeat"]) if not pd.isna(m["repeat"]) else 0
        key = (m["workload"], rep, int(m["segment"]))
        if m["event"] == start:
            open_[key] = (float(m["t_mono_s"]), m["info"])
        elif m["event"] == stop and key in open_:
            t0, info0 = open_.pop(key)
            if campaign and key not in done:
                continue
            out.append(Window(key[0], key[1], key[2], t0, float(m["t_mono_s"]), {**info0, **m["info"]}))
    return out


#: readings that coincide with a window edge (to within float noise) are decided the same way every time
_EDGE_EPS_S = 1e-6


def _window_rows(df: pd.DataFrame, w: Window, settle_s: float = 0.0) -> pd.DataFrame:
    t = df["t_mono_s"].to_numpy()
    sel = ((df["segment"].to_numpy() == w.segment) & (t > w.t0 + settle_s + _EDGE_EPS_S)
           & (t <= w.t1 + _EDGE_EPS_S))
    return df[sel]


def _finite(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows whose power (and temperature, where logged) is a reading: traces skip missing ones (empty
    fields, or readings excluded as implausible by :meth:`Session.readings`)."""
    ok = np.isfinite(rows["power_w"].to_numpy(dtype=float))
    if "temp_c" in rows.columns:
        ok &= np.isfinite(rows["temp_c"].to_numpy(dtype=float))
    return rows if ok.all() else rows[ok]


class _CounterEnergy:
    """Window energies (J) from the session's energy counter: :class:`calib.windows.EnergyCounter`
    (the counter interpolated at the window's edges, resets and wraps unwrapped), one per segment."""

    def __init__(self, df: pd.DataFrame):
        self.df = df
        self.by_segment: dict[int, EnergyCounter | None] = {}

    def __call__(self, w: Window) -> float:
        if w.segment not in self.by_segment:
            seg = self.df[self.df["segment"] == w.segment] if "energy_mj" in self.df.columns else self.df.iloc[:0]
            self.by_segment[w.segment] = EnergyCounter.from_stream(seg)
        c = self.by_segment[w.segment]
        e = None if c is None else c.between_j(w.t0, w.t1)
        if e is None:
            return math.nan
        if c.resets_in(w.t0, w.t1):
            warnings.warn(f"energy counter reset or wrapped inside the window of {w.workload} (repeat {w.repeat}, "
                          f"segment {w.segment}); unwrapped: at most one counter period of energy is lost")
        return e


def _positive(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise BadInputError(f"{where}: {value!r} is not a positive number")
    return float(value)


def _check_plan(session: Session) -> dict[str, dict]:
    """The manifest's plan by workload name, checked for what access rates need."""
    where = f"{session.path}/manifest.json"
    plan = session.manifest.get("plan", [])
    if not isinstance(plan, list):
        raise BadInputError(f"{where}: field 'plan' must be a list of benchmarks")
    out = {}
    for i, p in enumerate(plan):
        if not isinstance(p, dict) or not isinstance(p.get("name"), str):
            raise BadInputError(f"{where}: plan[{i}] must be an object with a 'name'")
        w = f"{where}: plan[{i}] ({p['name']})"
        launch = p.get("launch")
        if not isinstance(launch, dict):
            raise BadInputError(f"{w}: field 'launch' missing (blocks, threads_per_block, active_sms)")
        for f in ("blocks", "threads_per_block", "active_sms"):
            _positive(launch.get(f), f"{w}: launch.{f}")
        pw = p.get("per_warp")
        if not isinstance(pw, dict):
            raise BadInputError(f"{w}: field 'per_warp' missing (instruction class -> per-warp count)")
        for c, v in pw.items():
            if c not in INSTRUCTION_CLASSES:
                raise BadInputError(f"{w}: per_warp.{c}: unknown instruction class (known: {', '.join(INSTRUCTION_CLASSES)})")
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise BadInputError(f"{w}: per_warp.{c}: {v!r} is not a non-negative number")
        for f in ("role", "stresses"):
            if not isinstance(p.get(f), str):
                raise BadInputError(f"{w}: field '{f}' missing")
        out[p["name"]] = p
    return out


@dataclass(frozen=True)
class DeviceFacts:
    """The manifest's device fields the samples stage and the fits read, parsed once. Their types were
    checked when the manifest was read (:func:`calib.core.session.read_manifest`); here, that the ones
    the samples need are present."""

    raw: Mapping[str, Any]                  # the manifest's device object (the parameter file's device)
    sm_count: int
    core_mhz: float                         # default clocks, MHz
    mem_mhz: float
    warp_issue_per_cycle: float
    units: tuple[str, ...]
    mem_domain_units: tuple[str, ...] | None   # as the manifest lists them (None: the name rule)
    chip_units: tuple[str, ...]
    basis: ActivityBasis                    # what access rates (eq. 10) need

    @classmethod
    def of(cls, session: Session) -> "DeviceFacts":
        """The device facts of a session's manifest (BadInputError naming the field that is missing)."""
        where = f"{session.path}/manifest.json"
        dev = session.manifest["device"]
        units = tuple(dev.get("units") or [])
        mem_list = dev.get("mem_domain_units")
        mem_units = frozenset(mem_list or [u for u in units if in_memory_domain(u)])
        if dev.get("warp_issue_per_cycle") is None:
            raise BadInputError(f"{where}: device.warp_issue_per_cycle missing; cannot compute access rates")
        clocks = dev.get("clocks") or {}
        for field_, value in (("clocks.core_mhz", clocks.get("core_mhz")), ("clocks.mem_mhz", clocks.get("mem_mhz")),
                              ("sm_count", dev.get("sm_count"))):
            if value is None:
                raise BadInputError(f"{where}: device.{field_} missing")
        issue, sm_count = float(dev["warp_issue_per_cycle"]), dev["sm_count"]
        core0, mem0 = float(clocks["core_mhz"]), float(clocks["mem_mhz"])
        classes = dev.get("unit_classes")  # GPU families whose units are not IPP's (calib.core.arch.UnitSet)
        if classes is not None and not (isinstance(classes, dict) and all(
                isinstance(c, list) and all(x in INSTRUCTION_CLASSES for x in c) for c in classes.values())
                and set(units) <= set(classes)):
            raise BadInputError(f"{where}: device.unit_classes must map every unit to a list of instruction classes "
                                f"({', '.join(INSTRUCTION_CLASSES)})")
        basis = ActivityBasis(units, mem_units, sm_count, issue, core0, mem0,
                              None if classes is None else {u: tuple(c) for u, c in classes.items()})
        return cls(dev, sm_count, core0, mem0, issue, units, None if mem_list is None else tuple(mem_list),
                   tuple(dev.get("chip_units", sorted(CHIP_UNITS))), basis)


def session_samples(session: Session, power: str | None = None, settle_s: float = 0.3) -> pd.DataFrame:
    """The samples table of a session (see module docstring)."""
    plan = _check_plan(session)
    facts = DeviceFacts.of(session)
    units, basis, sm_count = facts.units, facts.basis, facts.sm_count
    core0, mem0 = facts.core_mhz, facts.mem_mhz
    pname = power_stream(session, power)
    pdf = session.readings(pname)
    if len(pdf) == 0:
        raise BadInputError(f"{session.path}: stream '{pname}' has no rows")
    wall = analyzer_stream(session)
    wdf = session.readings(wall) if wall else None
    host = host_stream(session)
    hdf = session.readings(host) if host else None
    markers = session.markers()
    counter_energy_j = _CounterEnergy(pdf)
    sampling = session.manifest.get("power_sampling")
    sampling = sampling if isinstance(sampling, dict) and "energy_source" in sampling else None
    rows: list[dict[str, Any]] = []

    def common(rw: pd.DataFrame, w: Window) -> dict[str, Any]:
        p = rw["power_w"].to_numpy(dtype=float)
        p = p[~np.isnan(p)]
        rec: dict[str, Any] = {"workload": w.workload, "repeat": w.repeat, "segment": w.segment,
                               "power_w": float(p.mean()) if len(p) else math.nan,
                               "power_std_w": float(p.std(ddof=1)) if len(p) > 1 else math.nan,
                               "n_power": len(p), "window_s": w.t1 - w.t0}
        if "temp_c" in rw.columns and len(rw):
            rec["temp_c"] = float(rw["temp_c"].mean())
            first = rw["temp_c"].dropna()  # (implausible readings are missing)
            # the mean's standard error from the readings' spread (a time series: its effective count); a clean
            # sensor's steady readings do not spread (0: its rounding is not in it)
            tv = first.to_numpy(dtype=float)
            rec["temp_se_c"] = (float(np.std(tv, ddof=1) / math.sqrt(len(tv))
                                      * math.sqrt(ar1_inflation([tv - tv.mean()]))) if len(tv) > 1 else math.nan)
            rec["temp_start_c"] = float(first.iloc[0]) if len(first) else math.nan
        if "fan_pct" in rw.columns and len(rw):
            rec["fan_pct"] = float(rw["fan_pct"].mean())
        rec["energy_counter_j"] = counter_energy_j(w)
        if sampling:  # the window's energy under the GPU's measured power sampling (calib.windows)
            seg = pdf[pdf["segment"] == w.segment]
            e = sampled_window_energy(seg["t_mono_s"].to_numpy(dtype=float),
                                      seg["power_w"].to_numpy(dtype=float) if "power_w" in seg else None,
                                      seg["energy_mj"].to_numpy(dtype=float) if "energy_mj" in seg else None,
                                      w.t0, w.t1, sampling)
            rec["energy_window_j"] = e.energy_j if e is not None else math.nan
            rec["energy_window_stderr_j"] = e.stderr_j if e is not None else math.nan
        if wdf is not None:
            ww = _window_rows(wdf, w, settle_s)
            rec["wall_power_w"] = float(ww["power_w"].mean()) if len(ww) else math.nan
        if hdf is not None:  # host CPU package + DRAM power (RAPL): the system baseline beside the board's
            hw = _window_rows(hdf, w, settle_s)
            rec["host_power_w"] = float(hw["host_power_w"].mean()) if len(hw) else math.nan
        return rec

    for w in _pair(markers, "idle_start", "idle_stop"):
        if w.info.get("kind") == "fan_sweep" or w.workload == "align":  # align: square-wave edges, not idle
            continue
        rw = _window_rows(pdf, w, settle_s + 1.0)
        if len(rw) < 3:
            continue
        rec = common(rw, w)
        rec.update({"role": "idle", "stresses": "none", "core_mhz": core0, "mem_mhz": mem0, "active_sms": sm_count,
                    **{ACT_PREFIX + u: 0.0 for u in units}})
        rows.append(rec)

    short = 0
    for w in _pair(markers, "measure_start", "measure_stop"):
        decl = plan.get(w.workload)
        if decl is None:
            raise BadInputError(f"{session.path}: markers name workload '{w.workload}' that is not in the manifest plan")
        rw = _window_rows(pdf, w, settle_s)
        if len(rw) < 3:
            short += 1
            continue
        mk = f"{session.path}/markers.csv: measure_stop of {w.workload} (repeat {w.repeat}, segment {w.segment})"
        if "kernel_time_s" not in w.info:
            raise BadInputError(f"{mk}: no kernel_time_s; access rates need the measured kernel time")
        kt = _positive(w.info["kernel_time_s"], f"{mk}: kernel_time_s")
        core = _positive(w.info.get("core_mhz", core0), f"{mk}: core_mhz")
        mem = _positive(w.info.get("mem_mhz", mem0), f"{mk}: mem_mhz")
        launch = decl["launch"]
        per_warp = decl["per_warp"]
        wps = warps_per_sm(launch["threads_per_block"], launch["blocks"], launch["active_sms"])
        rec = common(rw, w)
        launches = float(w.info.get("launches", math.nan))
        rec.update({"role": decl["role"], "stresses": decl["stresses"], "core_mhz": core, "mem_mhz": mem,
                    "active_sms": launch["active_sms"], "time_s": kt,
                    "energy_j": rec["energy_counter_j"] / launches if launches > 0 else math.nan,
                    "mem_intensity": mem_intensity(per_warp), "warps_per_sm": wps,
                    "blocks": launch["blocks"], "threads_per_block": launch["threads_per_block"]})
        kparams = decl.get("params") or {}
        if "ilp" in kparams:  # timing inputs of the kernel description (MWP/CWP: independent chains)
            rec["ilp"] = float(kparams["ilp"])
        if "coalesced" in kparams:
            rec["uncoal_frac"] = 0.0 if kparams["coalesced"] else 1.0
        ars = access_rates(basis, unit_counts(per_warp, unit_classes=basis.unit_classes), wps, kt, core, mem)
        for u in units:
            ar = float(ars[u])
            if ar > 1.0 + 0.02:
                warnings.warn(f"{w.workload}: access rate of {u} is {ar:.3f} > 1; measured kernel time too short? clipped to 1")
            rec[ACT_PREFIX + u] = min(1.0, ar)
        rec.update({CNT_PREFIX + c: float(per_warp[c]) for c in INSTRUCTION_CLASSES if per_warp.get(c)})
        rows.append(rec)
    if short:
        warnings.warn(f"{session.path}: {short} measurement windows had fewer than 3 power readings and were skipped")
    if not any(r["role"] != "idle" for r in rows):
        raise BadInputError(f"{session.path}: no complete measurement window of a workload (was the session "
                            "killed before the first one finished?)")
    df = pd.DataFrame(rows)
    cnt_cols = [c for c in df.columns if c.startswith(CNT_PREFIX)]
    df[cnt_cols] = df[cnt_cols].fillna(0.0)
    first = ["workload", "role", "stresses", "repeat", "power_w", "core_mhz", "mem_mhz", "active_sms", "time_s",
             "energy_j", "temp_c"]
    cols = [c for c in first if c in df.columns] + [c for c in df.columns if c.startswith(ACT_PREFIX)]
    cols += [c for c in df.columns if c not in cols]
    df = df[cols]
    return check_samples(df, f"{session.path} (samples)", require_power=True)


@dataclass
class ThermalStep:
    """One heat-then-cool experiment: traces relative to the start of heating / cooling (s)."""

    workload: str
    per_warp: dict[str, float]
    heat_t: np.ndarray
    heat_temp_c: np.ndarray
    heat_power_w: np.ndarray
    heat_fan_pct: np.ndarray
    cool_t: np.ndarray
    cool_temp_c: np.ndarray
    start_temp_c: float
    cool_power_w: np.ndarray | None = None    # board power while cooling, W (thermal network fit)
    cool_fan_pct: np.ndarray | None = None
    heat_s: float | None = None               # length of the heating phase (heat start to cool start), s
    heat_t0_s: float | None = None            # session time of the heat start (monotonic clock), s: steps
    segment: int | None = None                # run back to back in one segment are one record for the
                                              # thermal network
    heat_util_mem_pct: np.ndarray | None = None   # memory utilization (%, NVML util_mem_pct) where logged
    cool_util_mem_pct: np.ndarray | None = None


def thermal_steps(session: Session, power: str | None = None) -> list[ThermalStep]:
    """Heat/cool traces of every complete thermal step of a session."""
    pname = power_stream(session, power)
    pdf = session.readings(pname)
    if "temp_c" not in pdf.columns:
        return []
    plan = {p["name"]: p for p in session.manifest.get("plan", [])}
    markers = session.markers()
    out = []
    heats = {(w.workload, w.segment): w for w in _pair(markers, "thermal_heat_start", "thermal_cool_start")}
    for c in _pair(markers, "thermal_cool_start", "thermal_stop"):
        h = heats.get((c.workload, c.segment))
        if h is None:
            continue
        before = pdf[(pdf["segment"] == h.segment) & (pdf["t_mono_s"] <= h.t0) & (pdf["t_mono_s"] > h.t0 - 5.0)]
        hr = _finite(_window_rows(pdf, h))
        cr = _finite(_window_rows(pdf, c))
        if len(hr) < 10 or len(cr) < 10:
            continue
        fan = hr["fan_pct"].to_numpy(dtype=float) if "fan_pct" in hr.columns else np.full(len(hr), np.nan)
        cfan = cr["fan_pct"].to_numpy(dtype=float) if "fan_pct" in cr.columns else np.full(len(cr), np.nan)
        util = "util_mem_pct" in pdf.columns and bool(pdf["util_mem_pct"].notna().any())
        out.append(ThermalStep(
            workload=c.workload, per_warp=dict(plan.get(c.workload, {}).get("per_warp", {})),
            heat_t=hr["t_mono_s"].to_numpy(dtype=float) - h.t0, heat_temp_c=hr["temp_c"].to_numpy(dtype=float),
            heat_power_w=hr["power_w"].to_numpy(dtype=float), heat_fan_pct=fan,
            cool_t=cr["t_mono_s"].to_numpy(dtype=float) - c.t0, cool_temp_c=cr["temp_c"].to_numpy(dtype=float),
            start_temp_c=float(before["temp_c"].mean()) if len(before) else float(hr["temp_c"].iloc[0]),
            cool_power_w=cr["power_w"].to_numpy(dtype=float), cool_fan_pct=cfan, heat_s=c.t0 - h.t0,
            heat_t0_s=float(h.t0), segment=int(h.segment),
            heat_util_mem_pct=hr["util_mem_pct"].to_numpy(dtype=float) if util else None,
            cool_util_mem_pct=cr["util_mem_pct"].to_numpy(dtype=float) if util else None))
    return out


def fan_sweep(session: Session, power: str | None = None) -> pd.DataFrame:
    """Every power reading of the idle fan sweep: columns fan_pct, power_w, temp_c, step.

    Readings, not window means: the fan also cools the die, so the fitter separates fan power from
    the leakage change with the temperature of each reading.
    """
    pname = power_stream(session, power)
    pdf = session.readings(pname)
    parts = []
    for k, w in enumerate(_pair(session.markers(), "idle_start", "idle_stop")):
        if w.info.get("kind") != "fan_sweep":
            continue
        rw = _finite(_window_rows(pdf, w, 0.0))
        if len(rw) < 3 or "fan_pct" not in rw.columns:
            continue
        parts.append(pd.DataFrame({"fan_pct": rw["fan_pct"].to_numpy(float), "power_w": rw["power_w"].to_numpy(float),
                                   "temp_c": rw["temp_c"].to_numpy(float) if "temp_c" in rw.columns else np.nan,
                                   "step": k}))
    if not parts:
        return pd.DataFrame(columns=["fan_pct", "power_w", "temp_c", "step"])
    return pd.concat(parts, ignore_index=True)


#: columns of a sensor stream that give the air temperature at the card's intake, degC
AMBIENT_COLUMNS = ("ambient_c", "ambient_temp_c", "inlet_temp_c")


def ambient_temp_c(session: Session) -> float | None:
    """Mean ambient (intake air) temperature, degC, from the first sensor stream that logs one, else None."""
    for s in session.manifest.get("sensors", []):
        cols = [c for c in AMBIENT_COLUMNS if c in s.get("columns", [])]
        if cols:
            df = session.readings(s["name"])
            v = df[cols[0]].to_numpy(dtype=float) if len(df) else np.array([])
            v = v[np.isfinite(v)]
            if len(v):
                return float(v.mean())
    return None


#: the columns of :func:`transfer_table`
TABLE_COLUMNS = ("workload", "direction", "host_memory", "bytes", "repeat", "copies", "copy_time_s", "power_w",
                 "ref_power_w", "n_power", "wall_power_w", "ref_wall_power_w", "host_power_w", "ref_host_power_w")


def transfer_table(session: Session, power: str | None = None, settle_s: float = 0.3) -> pd.DataFrame:
    """One row per complete copy window of ``session``: each ``copy_start``/``copy_stop`` window after its
    idle reference ``copy_ref_start``/``copy_ref_stop`` gives direction, host memory, bytes, the mean time
    per copy (events), the board power of the window and of its reference (first ``settle_s`` dropped),
    the wall power of both when the session has a wall meter and the host's RAPL power (CPU packages +
    DRAM) when it has one (:data:`TABLE_COLUMNS`); empty when it has none."""

    markers = session.markers()
    if not len(markers) or not (markers["event"] == "copy_start").any():
        return pd.DataFrame(columns=list(TABLE_COLUMNS))
    pdf = session.readings(power_stream(session, power))
    wall = analyzer_stream(session)
    wdf = session.readings(wall) if wall else None
    host = host_stream(session)  # RAPL: host CPU package + DRAM
    hdf = session.readings(host) if host else None
    refs = {(w.workload, w.repeat, w.segment): w for w in _pair(markers, "copy_ref_start", "copy_ref_stop")}

    def mean(df: pd.DataFrame, w: Any, col: str = "power_w") -> tuple[float, int]:
        v = _window_rows(df, w, settle_s)[col].to_numpy(float)
        v = v[~np.isnan(v)]
        return (float(v.mean()) if len(v) else math.nan), len(v)

    rows = []
    for w in _pair(markers, "copy_start", "copy_stop"):
        where = f"{session.path}/markers.csv: copy_stop of {w.workload} (repeat {w.repeat})"
        ref = refs.get((w.workload, w.repeat, w.segment))
        info = w.info
        try:
            nbytes, t = float(info["bytes"]), float(info["copy_time_s"])
            direction, mem = str(info["direction"]), str(info["host_memory"])
        except (KeyError, TypeError, ValueError):
            raise BadInputError(f"{where}: needs bytes, copy_time_s, direction and host_memory") from None
        if direction not in DIRECTIONS or mem not in HOST_MEMORY or not (nbytes > 0 and t > 0):
            raise BadInputError(f"{where}: direction {direction!r}, host_memory {mem!r}, bytes {nbytes!r}, "
                                f"copy_time_s {t!r} are not a copy")
        if ref is None:
            logging.getLogger(__name__).info("%s: no reference window; skipped", where)
            continue
        p, n = mean(pdf, w)
        pr, nr = mean(pdf, ref)
        if n < 3 or nr < 3:
            continue
        rec = {"workload": w.workload, "direction": direction, "host_memory": mem, "bytes": nbytes,
               "repeat": w.repeat, "copies": float(info.get("copies", math.nan)), "copy_time_s": t, "power_w": p,
               "ref_power_w": pr, "n_power": n, "wall_power_w": math.nan, "ref_wall_power_w": math.nan,
               "host_power_w": math.nan, "ref_host_power_w": math.nan}
        if wdf is not None:
            rec["wall_power_w"], _ = mean(wdf, w)
            rec["ref_wall_power_w"], _ = mean(wdf, ref)
        if hdf is not None:
            rec["host_power_w"], _ = mean(hdf, w, "host_power_w")
            rec["ref_host_power_w"], _ = mean(hdf, ref, "host_power_w")
        rows.append(rec)
    return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))


@dataclass
class IdleBaseline:
    """The idle windows' mean temperature (C) and board power (W) with their standard errors."""

    temp_c: float
    temp_se_c: float
    power_w: float
    power_se_w: float | None
    host_power_w: float | None = None      # host CPU package + DRAM (RAPL), where the session logged it
    host_power_se_w: float | None = None


#: standard error (C) of a steady whole-degree temperature reading: its quantization, which does not average out
READING_QUANTIZATION_SE_C = 1.0 / math.sqrt(12.0)


def idle_baseline(samples: pd.DataFrame) -> IdleBaseline | None:
    """The baseline of the idle rows of a samples table (None without idle rows). The sensor reads whole
    degrees: its quantization (1/sqrt(12) C) does not average out when the temperature is steady, so it
    floors the temperature's standard error; the power readings are a time series, so their mean's
    standard error counts the effective samples (:func:`calib.core.metrics.ar1_inflation`)."""
    idle = samples[samples["role"] == "idle"] if "role" in samples.columns else samples.iloc[:0]
    if not len(idle):
        return None
    temp = idle["temp_c"].to_numpy(float) if "temp_c" in idle.columns else np.array([np.nan])
    temp_se = max(float(np.nanstd(temp, ddof=1) / math.sqrt(len(temp))) if len(temp) > 1 else 0.0,
                  READING_QUANTIZATION_SE_C)
    ip = idle["power_w"].to_numpy(float)
    ip_se = (float(np.std(ip, ddof=1) / math.sqrt(len(ip)) * math.sqrt(ar1_inflation([ip - ip.mean()])))
             if len(ip) > 1 else None)
    h = idle["host_power_w"].dropna().to_numpy(float) if "host_power_w" in idle.columns else np.array([])
    host = (float(h.mean()), float(h.std(ddof=1) / math.sqrt(len(h)))) if len(h) >= 2 else (None, None)
    return IdleBaseline(float(np.nanmean(temp)), temp_se, float(ip.mean()), ip_se, *host)


@dataclass
class SessionData:
    """Everything a session gives the fitters, built once by the samples stage (:func:`session_data`): the
    one input of every estimator, ``Fitter(**settings).fit(data)``. A samples table alone is
    ``SessionData(samples)`` (:meth:`of`)."""

    samples: pd.DataFrame = field(default_factory=pd.DataFrame)
    device: DeviceFacts | None = None
    idle: IdleBaseline | None = None
    thermal_steps: list[ThermalStep] = field(default_factory=list)
    fan: pd.DataFrame | None = None        # the idle fan sweep's readings (:func:`fan_sweep`)
    copies: pd.DataFrame | None = None     # the copy windows (:func:`transfer_table`)
    plan: list[dict[str, Any]] | None = None
    ambient_temp_c: float | None = None
    source: str = "<table>"

    @classmethod
    def of(cls, data: "SessionData | pd.DataFrame", source: str = "<table>") -> "SessionData":
        """``data`` itself, or a samples table as session data without a session."""
        return data if isinstance(data, SessionData) else cls(data, idle=None, source=source)


#: what the samples stage extracts from a session besides the samples table, by the kind of campaign
#: step it comes from (the plan's thermal steps, the idle fan sweep, the campaign's copy sweep):
#: SessionData field -> extraction
EXTRACTIONS = {"thermal_steps": thermal_steps, "fan": fan_sweep, "copies": transfer_table}


def session_data(session: Session, power: str | None = None) -> SessionData:
    """The samples stage: a session's :class:`SessionData` (samples, device facts, idle baseline and every
    extraction of :data:`EXTRACTIONS`), ``power`` naming the power stream when not the GPU's own."""
    samples = session_samples(session, power)
    data = SessionData(samples, DeviceFacts.of(session), idle_baseline(samples), plan=session.manifest.get("plan"),
                       ambient_temp_c=ambient_temp_c(session), source=str(session.path))
    for name, extract in EXTRACTIONS.items():
        setattr(data, name, extract(session, power))
    return data
