"""Prediction dispatcher: which model part answers which column.

``power_w_pred``: the IPP model (``power.model == "ipp"``) for rows at the default clocks (or without
clock columns) and the DVFS model (``power.model == "dvfs"``, or a ``dvfs`` section) for rows at other
clocks. Rows with ``bytes_h2d``/``bytes_d2h`` and a ``transfer`` section also get their host-device
copies (:func:`calib.model.transfer.copy_breakdown`): ``copy_time_s_pred``, ``copy_energy_j_pred``
(board), ``copy_host_energy_j_pred``, ``copy_compute_ratio_pred`` and the savings of overlapping copies
with compute and of pinned memory. ``temp_c_pred``: the steady temperature of the IPP thermal model (idle
temperature + Max_temp rise) for rows that run a kernel; for a kernel sequence (a ``start_s`` column) and
a file with a ``thermal_network`` section, each kernel's temperature at its end from the network (and its
mean power with the leakage feedback). ``time_s_pred`` / ``energy_j_pred``: from the timing section when the
parameter file has one and the rows carry kernel descriptions.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from calib.core.errors import BadInputError
from calib.core.params import ParameterFile, Section
from calib.core.activity import basis_of, count_columns, has_counts, table_access_rates
from calib.core.samples import ACT_PREFIX, CNT_PREFIX, check_samples
from calib.core.units import DERIVED_UNITS, INSTRUCTION_CLASSES, mem_intensity
from calib.model import dvfs, timing as T
from calib.model.ipp import IppPowerModel
from calib.model.registry import off_default_clocks, power_sections
from calib.model.thermal import ThermalModel
from calib.model.thermal_network import FosterNetwork, sequence_temperatures
from calib.model.transfer import copy_breakdown


def dvfs_power(pf: ParameterFile, section: Section, df: pd.DataFrame) -> np.ndarray:
    """DVFS model power (W) per row of ``df`` from a DVFS ``section`` of ``pf``. Rows without ``act_``
    columns (kernel descriptions) get their activities from their counts and time
    (:mod:`calib.core.activity`, the units and clock domains of the file's IPP power section), as the
    samples layer computes them."""
    if pf.model_of("power") == "ipp":
        df = _with_count_activities(pf, df)
    return dvfs.predict_power(section, df)


def _with_count_activities(pf: ParameterFile, df: pd.DataFrame) -> pd.DataFrame:
    """``df`` plus the ``act_<unit>`` columns of the power section's units it lacks, from per-warp
    counts and time (IPP eq. 10, :mod:`calib.core.activity`)."""
    # derived units (the issue stage) come from the others, in the power model itself
    units = [u for u in pf["power"].structure["units"] if ACT_PREFIX + u not in df.columns and u not in DERIVED_UNITS]
    if not units or not has_counts(df) or "time_s" not in df.columns:
        return df
    return df.assign(**{ACT_PREFIX + u: a for u, a in table_access_rates(basis_of(pf), df, units=units).items()})


def predict_power(pf: ParameterFile, df: pd.DataFrame, source: str = "<table>") -> np.ndarray:
    """Predicted board power (W) per row (module docstring): each row by the section
    :func:`calib.model.registry.power_sections` says answers it."""
    ps = power_sections(pf)
    if not ps:
        # the parameter file is at fault, not the table: callers that know its path name it first
        raise BadInputError(f"the parameter file has no power section; it cannot predict the power of {source}")
    pred = np.full(len(df), np.nan)
    for name, mask in ps.rows(pf, df):
        if pf[name].model == "dvfs":
            try:
                pred[mask] = dvfs_power(pf, pf[name], df[mask] if not mask.all() else df)
            except BadInputError as e:  # the DVFS model does not know the table's name
                raise BadInputError(f"{source}: {e}") from None
        else:
            pred[mask] = IppPowerModel.from_file(pf).predict(df[mask] if not mask.all() else df, source=source)
    if ps.other_clocks is None and ps.default is not None and pf.model_of(ps.default) == "ipp":
        off = off_default_clocks(pf, df)
        if off.any():
            clocks = pf[ps.default].structure.get("default_clocks") or {}
            warnings.warn(f"{source}: {int(off.sum())} rows are not at the fitted clocks "
                          f"({clocks.get('core_mhz'):g}/{clocks.get('mem_mhz')} MHz) and the parameter file has no "
                          "DVFS section; IPP predictions for them ignore the clock change")
    return pred


def predict_table(pf: ParameterFile, df: pd.DataFrame, source: str = "<table>") -> pd.DataFrame:
    """The input rows plus ``power_w_pred`` (and ``time_s_pred``, ``energy_j_pred``, ``temp_c_pred``)."""
    df = df.copy()
    clocks = pf.device.get("clocks") or {}
    for col in ("core_mhz", "mem_mhz"):  # a kernel description without clocks runs at the default ones
        if clocks.get(col) is not None:
            df[col] = df[col].fillna(float(clocks[col])) if col in df.columns else float(clocks[col])
    out = df.copy()
    time_pred = None
    if "timing" in pf and any(c.startswith(CNT_PREFIX) for c in df.columns):
        time_pred = T.predict_time(pf["timing"], df)
        out["time_s_pred"] = time_pred
    # power at the measured time where there is one, else at the predicted time
    filled = df
    if time_pred is not None:
        if "time_s" not in df.columns:
            filled = df.assign(time_s=time_pred)
        elif df["time_s"].isna().any():
            filled = df.assign(time_s=np.where(df["time_s"].isna(), time_pred, df["time_s"]))
    if "power" not in pf:  # a timing-only parameter file: time (and copies), no power or energy
        if time_pred is None:
            raise BadInputError(f"{source}: the parameter file has neither a power section nor, for these rows, "
                                "a timing prediction (per-warp cnt_ counts and a timing section)")
        return _with_copies(pf, df, out)
    power = predict_power(pf, filled, source)
    out["power_w_pred"] = power
    if time_pred is not None:
        # energy of the predicted execution: power and time of the same (predicted) run
        out["energy_j_pred"] = predict_power(pf, df.assign(time_s=time_pred), source) * time_pred
    out = _with_copies(pf, df, out)
    if "thermal" in pf and pf.model_of("power") == "ipp":
        tm = ThermalModel(pf["thermal"])
        idle = pf["power"].value("idle_power_w")
        running = (df["role"].astype(str) != "idle").to_numpy() if "role" in df.columns else np.ones(len(df), bool)
        # Max_temp (eq. 19) is a function of the cold runtime power: without the sigma x dT term
        cold = IppPowerModel.from_file(pf).predict(filled, use_temperature=False, source=source)
        rt = np.clip(cold - idle, 0.0, None)
        out["temp_c_pred"] = np.where(running, tm.idle_temp_c + tm.max_rise_c(rt, mem_intensity_array(df)),
                                      tm.idle_temp_c)
    if "start_s" in df.columns and "thermal_network" in pf and pf.model_of("power") == "ipp":
        out = _sequence_temperatures(pf, df, filled, out, source)
    return out


def _with_copies(pf: ParameterFile, df: pd.DataFrame, out: pd.DataFrame) -> pd.DataFrame:
    """``out`` plus the copy columns (module docstring) when the file has a transfer section and the rows
    have copies: against the predicted kernel time and energy where there are ones, else the measured time."""
    if "transfer" not in pf or not any(c in df.columns for c in COPY_COLUMNS[:2]):
        return out
    kt = out["time_s_pred"] if "time_s_pred" in out.columns else (
        df["time_s"] if "time_s" in df.columns else np.full(len(df), math.nan))
    ke = out["energy_j_pred"] if "energy_j_pred" in out.columns else np.full(len(df), math.nan)
    b = copy_breakdown(pf, df, np.asarray(kt, float), np.asarray(ke, float))
    return out.assign(**{c + "_pred": b[c].to_numpy() for c in (
        "copy_time_s", "copy_energy_j", "copy_host_energy_j", "copy_compute_ratio", "overlap_time_saving_s",
        "overlap_energy_saving_j", "pinned_time_saving_s", "pinned_energy_saving_j")})


def predict_copies(pf: ParameterFile, df: pd.DataFrame) -> pd.DataFrame:
    """Host-device copies of each row (:func:`calib.model.transfer.copy_breakdown`, s and J) beside the
    kernel's predicted time and energy (:func:`predict_table` without the rows' copy columns); where the
    model predicts no time, the row's measured ``time_s``."""
    kt, ke = np.full(len(df), math.nan), np.full(len(df), math.nan)
    try:
        pred = predict_table(pf, df.drop(columns=[c for c in COPY_COLUMNS if c in df.columns]))
        if "time_s_pred" in pred.columns:
            kt = pred["time_s_pred"].to_numpy(float)
            ke = pred["energy_j_pred"].to_numpy(float)
    except BadInputError:  # no power/timing for these rows: copies alone are still answered
        pass
    if "time_s" in df.columns:
        kt = np.where(np.isnan(kt), pd.to_numeric(df["time_s"], errors="coerce").to_numpy(float), kt)
    return copy_breakdown(pf, df, kt, ke)


def _sequence_temperatures(pf: ParameterFile, df: pd.DataFrame, filled: pd.DataFrame, out: pd.DataFrame,
                           source: str) -> pd.DataFrame:
    """A kernel table with ``start_s`` is a sequence: each kernel's ``temp_c_pred`` is its temperature when
    it ends, from the thermal network with the leakage feedback stepped (``duration_s``, else ``time_s``,
    is how long it runs); ``power_w_pred`` becomes its mean power in the sequence."""
    net = FosterNetwork.from_section(pf["thermal_network"])
    dur_col = "duration_s" if "duration_s" in df.columns else "time_s"
    if dur_col not in filled.columns:
        raise BadInputError(f"{source}: a kernel sequence (column start_s) needs duration_s or time_s")
    dur = filled[dur_col].to_numpy(float)
    if dur_col == "duration_s" and "time_s" in filled.columns:
        dur = np.where(np.isnan(dur), filled["time_s"].to_numpy(float), dur)
    # cold power: the power model at the idle temperature, re-referenced to the network's idle power
    cold = IppPowerModel.from_file(pf).predict(filled, use_temperature=False, source=source)
    cold = cold - pf["power"].value("idle_power_w") + net.idle_power_w
    temp, power = sequence_temperatures(net, df["start_s"].to_numpy(float), dur, cold, source=source)
    out = out.copy()
    out["temp_c_pred"] = temp
    out["power_w_pred"] = power
    return out


#: kernel-row columns of host-device copies (not inputs of the power and timing models)
COPY_COLUMNS = ("bytes_h2d", "bytes_d2h", "host_pinned")


def mem_intensity_array(df: pd.DataFrame) -> np.ndarray | float:
    """IPP eq. (20) per row from ``cnt_<class>`` columns (0 when the table has none)."""
    cnt = count_columns(df)
    return mem_intensity(cnt) if cnt else 0.0


def _is_number(v: Any) -> bool:
    """A finite JSON number (not a boolean: JSON ``true`` is not 1)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


#: open plausibility ranges of a kernel description's scalar fields (s, MHz, MHz, degC)
_KERNEL_RANGES = {"time_s": (0.0, 1e6), "core_mhz": (0.0, 1e4), "mem_mhz": (0.0, 1e5), "temp_c": (-60.0, 150.0)}


def kernel_description_table(path: str | Path, fill_counts: bool = True) -> pd.DataFrame:
    """Rows from a kernel-description JSON file: one object or a list of objects with ``name``,
    ``per_warp`` (instruction class -> per-warp dynamic count), ``launch`` (blocks, threads_per_block,
    active_sms), and optionally ``time_s`` (measured), ``core_mhz``, ``mem_mhz``, ``temp_c``.

    Optional timing inputs (:mod:`calib.model.timing`), all per warp: ``launch.active_blocks_per_sm``
    (occupancy, blocks resident at once on an SM), ``ilp`` (independent chains per thread, >= 1),
    ``sync_insts`` (barriers), and ``memory``: ``uncoalesced_fraction`` (of the global/local/L2
    instructions, 0..1), ``transactions_per_uncoalesced`` (default 32), ``independent_insts`` (memory
    instructions that do not wait for an earlier load, thesis N_pw), ``l2_hit_rate`` (0..1; default
    from the l2 and global counts), ``mstr`` (independent loads before the first use, thesis Ch. V MSTR).
    They become the columns of :data:`calib.model.timing.TIMING_COLUMNS` (and ``mstr``).

    Host-device copies per launch (:mod:`calib.model.transfer`): ``bytes_h2d``, ``bytes_d2h`` (bytes)
    and ``host_memory`` (``"pageable"``, the default of ``malloc``'d buffers, or ``"pinned"``) ->
    columns ``bytes_h2d``, ``bytes_d2h``, ``host_pinned`` (1/0).

    ``fill_counts=False`` leaves a class a kernel does not list as NaN (not given) instead of 0."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BadInputError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise BadInputError(f"{path}: is a directory, expected a kernel description (JSON)") from None
    except OSError as e:   # unreadable, a loop of symbolic links: bad input, not a failure of the toolkit
        raise BadInputError(f"{path}: cannot read ({e.strerror or e})") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise BadInputError(f"{path}: not valid JSON ({e})") from e
    except RecursionError:
        raise BadInputError(f"{path}: JSON nested too deeply") from None
    items = data if isinstance(data, list) else [data]
    rows: list[dict[str, Any]] = []
    timing: list[dict[str, float]] = []
    for i, k in enumerate(items):
        where = f"{path}: kernel {i + 1}"
        if not isinstance(k, dict):
            raise BadInputError(f"{where}: expected an object")
        pw = k.get("per_warp")
        if not isinstance(pw, dict) or not pw:
            raise BadInputError(f"{where}: field 'per_warp' missing (instruction class -> per-warp count)")
        launch = k.get("launch")
        if not isinstance(launch, dict):
            raise BadInputError(f"{where}: field 'launch' missing (blocks, threads_per_block, active_sms)")
        name = k.get("name", f"kernel{i + 1}")
        if not isinstance(name, str) or not name.strip():
            raise BadInputError(f"{where}: field 'name': {name!r} is not a non-empty string")
        row: dict[str, Any] = {"workload": name}
        for c, v in pw.items():
            if c not in INSTRUCTION_CLASSES:
                raise BadInputError(f"{where}: per_warp.{c}: unknown instruction class (known: {', '.join(INSTRUCTION_CLASSES)})")
            if not _is_number(v) or v < 0:
                raise BadInputError(f"{where}: per_warp.{c}: {v!r} is not a non-negative number")
            if v > 1e15:  # ~ days of issue at 1 GHz per warp: a unit mix-up, and it overflows the models
                raise BadInputError(f"{where}: per_warp.{c}: {v!r} is implausibly large (> 1e15 per warp)")
            row[CNT_PREFIX + c] = float(v)
        for f in ("blocks", "threads_per_block", "active_sms"):
            v = launch.get(f)
            if f == "active_sms" and v is None:
                continue
            if not _is_number(v) or v <= 0 or float(v) != int(v):
                raise BadInputError(f"{where}: launch.{f}: {v!r} is not a positive integer")
            if f == "threads_per_block" and v > 1024:  # the CUDA limit on every architecture so far
                raise BadInputError(f"{where}: launch.threads_per_block: {v!r} exceeds 1024")
            row[f] = float(v)
        for f in ("time_s", "core_mhz", "mem_mhz", "temp_c"):
            if f in k:
                if not _is_number(k[f]):
                    raise BadInputError(f"{where}: field '{f}': {k[f]!r} is not a number")
                lo, hi = _KERNEL_RANGES[f]
                if not lo < k[f] < hi:
                    raise BadInputError(f"{where}: field '{f}': {k[f]!r} is outside ({lo:g}, {hi:g})")
                row[f] = float(k[f])
        timing.append({**_timing_fields(k, launch, where), **_copy_fields(k, where)})
        rows.append(row)
    df = pd.DataFrame(rows)
    cnt = [c for c in df.columns if c.startswith(CNT_PREFIX)]
    if fill_counts:
        df[cnt] = df[cnt].fillna(0.0)
    df = check_samples(df, str(path), require_power=False, require_act=False)
    # the timing inputs are not samples-table columns: added after the check (NaN = not given)
    for col in sorted({c for t in timing for c in t}):
        df[col] = [t.get(col, float("nan")) for t in timing]
    return df


#: optional timing fields: (where in the kernel object, column, lower bound, upper bound)
_TIMING_FIELDS = (
    (("launch", "active_blocks_per_sm"), "active_blocks_per_sm", 0.0, None),
    (("ilp",), "ilp", 1.0, None),
    (("sync_insts",), "sync_insts", 0.0, None),
    (("memory", "uncoalesced_fraction"), "uncoal_frac", 0.0, 1.0),
    (("memory", "transactions_per_uncoalesced"), "trans_per_uncoal", 1.0, None),
    (("memory", "independent_insts"), "ind_mem_insts", 0.0, None),
    (("memory", "l2_hit_rate"), "l2_hit_rate", 0.0, 1.0),
    (("memory", "mstr"), "mstr", 1.0, None),
)

#: host memory kinds of a kernel description's copies -> ``host_pinned``
HOST_MEMORY = {"pageable": 0.0, "pinned": 1.0}


def _copy_fields(k: dict, where: str) -> dict[str, float]:
    """``bytes_h2d``/``bytes_d2h`` (non-negative, at most 1 TB) and ``host_memory`` of a kernel object."""
    out: dict[str, float] = {}
    for f in ("bytes_h2d", "bytes_d2h"):
        if f in k:
            v = k[f]
            if not _is_number(v) or v < 0 or v > 1e12:
                raise BadInputError(f"{where}: field '{f}': {v!r} is not a byte count in [0, 1e12]")
            out[f] = float(v)
    if "host_memory" in k:
        hm = k["host_memory"]
        if hm not in HOST_MEMORY:
            raise BadInputError(f"{where}: field 'host_memory': {hm!r} is not one of {', '.join(HOST_MEMORY)}")
        out["host_pinned"] = HOST_MEMORY[hm]
    return out


def _timing_fields(k: dict, launch: dict, where: str) -> dict[str, float]:
    out: dict[str, float] = {}
    mem = k.get("memory") or {}
    if not isinstance(mem, dict):
        raise BadInputError(f"{where}: field 'memory' must be an object (uncoalesced_fraction, l2_hit_rate, ...)")
    for keys, col, lo, hi in _TIMING_FIELDS:
        obj: Any = {**k, "launch": launch, "memory": mem}
        for key in keys[:-1]:
            obj = obj.get(key, {})
        if keys[-1] not in obj:
            continue
        v = obj[keys[-1]]
        name = ".".join(keys)
        if not _is_number(v):
            raise BadInputError(f"{where}: field '{name}': {v!r} is not a number")
        if v < lo or (hi is not None and v > hi) or (col == "active_blocks_per_sm" and v <= 0):
            rng = f"[{lo:g}, {hi:g}]" if hi is not None else (f"> {lo:g}" if col == "active_blocks_per_sm" else f">= {lo:g}")
            raise BadInputError(f"{where}: field '{name}': {v!r} is outside {rng}")
        out[col] = float(v)
    return out


def parse_clock_pairs(spec: str, pf: ParameterFile) -> list[tuple[float, float]]:
    """``all`` (every pair of the file's supported clocks, else of the timing section's reference) or
    ``CORE:MEM,...`` (MHz) -> (core_mhz, mem_mhz) pairs; BadInputError naming a malformed pair."""
    if spec.strip().lower() == "all":
        sup = (pf.device.get("clocks") or {}).get("supported") or {}
        core, mem = sup.get("core_mhz") or [], sup.get("mem_mhz") or []
        if not core or not mem:
            raise BadInputError("--clocks all: the parameter file lists no supported clocks (device.clocks.supported); "
                                "give the pairs as CORE:MEM,...")
        return [(float(c), float(m)) for c in core for m in mem]
    pairs = []
    for item in spec.split(","):
        parts = item.strip().split(":")
        try:
            c, m = (float(x) for x in parts)
        except ValueError:
            raise BadInputError(f"--clocks: {item.strip()!r} is not CORE:MEM (two clocks in MHz)") from None
        if not (0 < c < 1e4 and 0 < m < 1e5):
            raise BadInputError(f"--clocks: {item.strip()!r}: clocks must be positive MHz (core < 10000, memory < 100000)")
        pairs.append((c, m))
    return pairs


def predict_clock_grid(pf: ParameterFile, df: pd.DataFrame, clocks: str | None, anchor: bool,
                       source: str = "<table>") -> pd.DataFrame:
    """Every kernel of ``df`` at each pair of ``clocks`` (:func:`parse_clock_pairs`; None: the rows'
    own clocks), with ``time_s_pred`` where the file has a timing section and ``power_w_pred`` (with
    ``energy_j_pred`` when time is predicted) where it has a power section. A file with power but no
    timing predicts power at other clocks only through its DVFS model.

    Measured columns (``time_s``, ``power_w``, ``energy_j``, ``temp_c``) belong to the rows' profiled clocks,
    not to the new pairs: they are kept as ``profiled_<column>``. The profiled clocks themselves are
    needed only by ``anchor`` or without ``clocks``.

    ``anchor``: each kernel's time is its measured ``time_s`` at its profiled clocks (``core_mhz``,
    ``mem_mhz``) times the model's ratio between the two pairs (:func:`calib.model.timing.predict_time_anchored`;
    its ILP is set from that time when the row does not give it). Output columns ``profiled_core_mhz``,
    ``profiled_mem_mhz``, ``profiled_time_s`` say what each prediction was scaled from."""
    has_timing = "timing" in pf
    power_off_clocks = power_sections(pf).other_clocks is not None
    if anchor and not has_timing:
        raise BadInputError(f"{source}: --anchor scales measured times; the parameter file has no timing section")
    if not has_timing and not power_off_clocks:
        raise BadInputError(f"{source}: the parameter file has neither a timing section nor a DVFS power model, "
                            "so it cannot predict at other clocks (--clocks)")
    pairs = parse_clock_pairs(clocks, pf) if clocks else None
    if anchor or pairs is None:
        for col in ("core_mhz", "mem_mhz"):
            if col not in df.columns or df[col].isna().any():
                raise BadInputError(f"{source}: column '{col}' missing or empty on some rows; --anchor scales from "
                                    "the profiled clocks (calib import ... --kernels --core-mhz/--mem-mhz)")
    if anchor and ("time_s" not in df.columns or df["time_s"].isna().any() or (df["time_s"] <= 0).any()):
        raise BadInputError(f"{source}: --anchor needs a measured time_s > 0 on every row")
    base = df.reset_index(drop=True)
    if pairs is None:
        grid = base.copy()
        src_idx = np.arange(len(base))
    else:
        src_idx = np.repeat(np.arange(len(base)), len(pairs))
        grid = base.iloc[src_idx].reset_index(drop=True)
        grid["core_mhz"] = [p[0] for _ in range(len(base)) for p in pairs]
        grid["mem_mhz"] = [p[1] for _ in range(len(base)) for p in pairs]
    out = grid.copy()
    if pairs is not None:
        measured = [c for c in MEASURED_COLUMNS if c in grid.columns]
        grid = grid.drop(columns=measured)
        out = out.drop(columns=measured)
        for c in measured:
            if not (anchor and c == "time_s"):
                out[f"profiled_{c}"] = base[c].to_numpy()[src_idx]
    t = None
    if anchor:
        prof_c = base["core_mhz"].to_numpy(float)[src_idx]
        prof_m = base["mem_mhz"].to_numpy(float)[src_idx]
        prof_t = base["time_s"].to_numpy(float)[src_idx]
        t = T.predict_time_anchored(pf["timing"], grid, prof_t, prof_c, prof_m, infer_ilp=True)
        out["profiled_core_mhz"], out["profiled_mem_mhz"], out["profiled_time_s"] = prof_c, prof_m, prof_t
    elif has_timing:
        t = T.predict_time(pf["timing"], grid)
    if t is not None:
        out["time_s_pred"] = t
    if "power" in pf:
        rows = grid.drop(columns=[c for c in ("time_s",) if c in grid.columns])
        pw = predict_table(pf, rows.assign(time_s=t) if t is not None else rows, source)
        out["power_w_pred"] = pw["power_w_pred"].to_numpy()
        if t is not None:
            out["energy_j_pred"] = out["power_w_pred"] * t
    return out


#: measured columns of an input row: with --clocks they describe its profiled pair, not the predicted ones
MEASURED_COLUMNS = ("time_s", "power_w", "energy_j", "temp_c")
