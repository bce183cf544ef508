"""Energy decisions from the timing and power models: how many SMs, which (core, memory) clocks.

**Active SMs** (IPP, paper 004 sec. 4.2 and 6.4; thesis (62)-(63)). For ``n = 1 .. sm_count`` the same
launch (same blocks, more rounds per SM on fewer SMs: the total work is constant) gets its time from
the timing model and its power from the IPP model (activities from the predicted time, IPP eq. 27,
log or linear SM scaling). Performance is warp instructions per second (GIPS: the paper counts all
instructions, not FLOPs), efficiency GIPS/W, and the optimum is the sweep's highest GIPS/W; eq. (34)
gives the closed-form count from MWP, CWP and MWP_peak_BW at the full SM count. Energy savings of the
optimal count against all SMs are reported three ways, as in the paper's Fig. 17:

- ``runtime_idle``: total board power (idle + runtime) x time;
- ``runtime``: runtime power only (board power - idle power) x time;
- ``powergating``: a per-SM power-gated GPU, whose power is linear in the active SMs with the full-chip
  power shared equally (``P(all) / sm_count`` per SM; idle SMs draw nothing): ``P(all) n/N x T(n)``.

**Clocks** (Wang & Chu timing with a DVFS power model). For every supported (core, memory) pair the
time comes from the timing model -- scaled from a measured baseline time when the kernel description
has one (``time_s`` at its ``core_mhz``/``mem_mhz``; :func:`calib.model.timing.predict_time_anchored`) --
and the power from the DVFS model (``dvfs`` section, or a ``power`` section of model ``dvfs``) with the
activities at that pair's predicted time, at one temperature for all pairs (:func:`kernel_temperature_c`). Energy is power x time per launch; EDP is energy x time.
The recommendation minimises energy (or EDP) over the pairs whose time is within ``1 + max_slowdown``
of the default pair's. Without a DVFS power model the IPP power model is used, which knows no
voltage: the table then mostly reflects time, and a warning says so.

**Time only** (objective ``time``; the only one a timing-only parameter file, with no ``power`` or
``dvfs`` section, can answer: its clock table has ``time_s`` and ``slowdown`` at every pair and NaN
power, energy and EDP). The recommendation is the *lowest clocks* whose predicted time is within
``1 + max_slowdown`` of the default pair's: among those pairs, the one with the least
``core_mhz / max core + mem_mhz / max mem`` (the maxima over the table's pairs), i.e. the most clock
headroom in both domains together, each domain counted as a fraction of its own top clock; ties go
to the smaller slowdown, then the lower core clock. Without a power model this is the best proxy for
"least power at an acceptable time" (dynamic power rises with each domain's clock), and it leaves
thermal and power-cap headroom for other work. The fastest pair (least predicted time) is reported
beside it (:func:`fastest`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from calib.core.errors import BadInputError
from calib.core.params import ParameterFile, Section
from calib.model import mwp_cwp as M
from calib.model import timing as T
from calib.model.ipp import IppPowerModel
from calib.model.predict import dvfs_power  # the power `calib predict` gives the same rows
from calib.model.registry import power_sections
from calib.core.activity import basis_of, table_access_rates
from calib.core.samples import ACT_PREFIX, CNT_PREFIX
from calib.core.units import SAME_CLOCK_REL

OBJECTIVES = ("energy", "edp", "time")

#: objectives that need a power model
POWER_OBJECTIVES = ("energy", "edp")

#: the clock table's note when the file has no power model
NO_POWER_NOTE = ("no power model in the parameter file (no power or dvfs section): power, energy and EDP were not "
                 "evaluated (time only)")


def _quiet(fn, *a, **kw):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        out = fn(*a, **kw)
    return out, sorted({str(w.message) for w in rec})


def with_activities(pf: ParameterFile, rows: pd.DataFrame, time_s: np.ndarray, units: Sequence[str]) -> pd.DataFrame:
    """``rows`` plus ``time_s`` and ``act_<unit>`` from per-warp counts at that time (IPP eq. 10/27,
    :mod:`calib.core.activity`: the same activities ``calib predict`` computes)."""
    out = rows.assign(time_s=time_s)
    return out.assign(**{ACT_PREFIX + u: a for u, a in table_access_rates(basis_of(pf, units), out).items()})


def dvfs_section(pf: ParameterFile) -> Section | None:
    """The section that answers power at other clocks (:func:`calib.model.registry.power_sections`), if any."""
    other = power_sections(pf).other_clocks
    return None if other is None else pf[other]


def has_power_model(pf: ParameterFile) -> bool:
    """Whether the file can predict power (a timing-only file, e.g. from ``calib fit KERNELS.csv
    --timing``, cannot)."""
    return bool(power_sections(pf))


def board_power(pf: ParameterFile, rows: pd.DataFrame, time_s: np.ndarray, prefer_dvfs: bool) -> tuple[np.ndarray, np.ndarray]:
    """(board power, idle power at the same clocks and SMs), W, for kernel rows running for ``time_s``."""
    ps = power_sections(pf)
    sec = dvfs_section(pf) if prefer_dvfs or ps.default is None or pf.model_of(ps.default) != "ipp" else None
    units = ([u["name"] for u in sec.structure["units"]] if sec is not None
             else list(pf["power"].structure.get("units", {})) if "power" in pf else [])
    if not units:
        raise BadInputError("the parameter file has no power model to predict energy with")
    df = with_activities(pf, rows, time_s, units)
    idle = df.assign(**{ACT_PREFIX + u: 0.0 for u in units}, role="idle")
    df["role"] = "kernel"
    if sec is not None:
        return dvfs_power(pf, sec, df), dvfs_power(pf, sec, idle)
    m = IppPowerModel.from_file(pf)
    return m.predict(df, use_temperature=False), m.predict(idle, use_temperature=False)


def _one_kernel(kernel: pd.DataFrame) -> pd.DataFrame:
    if len(kernel) != 1:
        raise BadInputError(f"expected one kernel description, got {len(kernel)}; give one kernel (or pick one by name)")
    return kernel.reset_index(drop=True)


def _warp_insts(rows: pd.DataFrame) -> np.ndarray:
    cnt = [c for c in rows.columns if c.startswith(CNT_PREFIX)]
    per_warp = rows[cnt].to_numpy(float).sum(axis=1)
    return per_warp * rows["threads_per_block"].to_numpy(float) / 32.0 * rows["blocks"].to_numpy(float)


def sm_sweep(pf: ParameterFile, kernel: pd.DataFrame, sm_counts: Sequence[int] | None = None,
             predictor: str | None = None, one_block_per_sm: bool = False) -> pd.DataFrame:
    """Time, power, energy and GIPS/W of one kernel on 1..sm_count SMs (module docstring), one row per count.

    ``one_block_per_sm``: IPP's experiment -- every active SM runs one block and the per-warp work
    grows as the SMs shrink (``blocks = n``, counts x blocks / n), instead of the same grid spread
    over fewer SMs.
    """
    k = _one_kernel(kernel)
    ts = T.compile_section(pf["timing"])
    n_sm = int(pf.device.get("sm_count") or ts.sm_count)
    counts = list(sm_counts) if sm_counts is not None else list(range(1, n_sm + 1))
    rows = pd.concat([k] * len(counts), ignore_index=True)
    rows["active_sms"] = np.asarray(counts, float)
    if one_block_per_sm:
        scale = float(k["blocks"].iloc[0]) / rows["active_sms"].to_numpy(float)
        for c in [c for c in rows.columns if c.startswith(CNT_PREFIX)]:
            rows[c] = rows[c].to_numpy(float) * scale
        rows["blocks"] = rows["active_sms"]
        rows["active_blocks_per_sm"] = 1.0
    for c, v in (("core_mhz", ts.ref_core_mhz), ("mem_mhz", ts.ref_mem_mhz)):
        if c not in rows.columns or rows[c].isna().all():
            rows[c] = v
    t, notes = _quiet(T.predict_time, pf["timing"], rows, predictor)
    (p, p_idle), notes2 = _quiet(board_power, pf, rows, t, False)
    insts = _warp_insts(rows)
    gips = insts / t / 1e9
    out = pd.DataFrame({"active_sms": counts, "time_s": t, "power_w": p, "idle_power_w": p_idle,
                        "runtime_power_w": p - p_idle, "energy_j": p * t, "runtime_energy_j": (p - p_idle) * t,
                        "gips": gips, "gips_per_w": gips / p})
    full = out.iloc[-1] if counts[-1] == n_sm else None
    p_all = float(full["power_w"]) if full is not None else math.nan
    out["powergated_power_w"] = p_all * out["active_sms"] / n_sm
    out["powergated_energy_j"] = out["powergated_power_w"] * out["time_s"]
    out.attrs["notes"] = notes + notes2
    return out


def optimal_sms(pf: ParameterFile, kernel: pd.DataFrame, predictor: str | None = None,
                one_block_per_sm: bool = False) -> dict[str, Any]:
    """Optimal active-SM count by eq. (34) and by the GIPS/W sweep, and the energy savings of the
    sweep's optimum against all SMs, three ways (module docstring)."""
    k = _one_kernel(kernel)
    ts = T.compile_section(pf["timing"])
    n_sm = int(pf.device.get("sm_count") or ts.sm_count)
    table = sm_sweep(pf, k, predictor=predictor, one_block_per_sm=one_block_per_sm)
    best = int(table.loc[table["gips_per_w"].idxmax(), "active_sms"])
    full = k.copy()
    full["active_sms"] = float(n_sm)
    x = T.inputs_from_table(ts, full)
    d, _ = _quiet(T.mwp_cwp_details, ts, x)
    eq34 = int(M.optimal_cores(d["mwp"], d["cwp"], d["n"], d["mwp_peak_bw"],
                               T.LINE_BYTES * x.fm * 1e6 / ts.values["dram_del_coal_mem_cycles"], d["bw_per_warp"],
                               n_sm).ravel()[0])
    a, b = table.set_index("active_sms").loc[best], table.set_index("active_sms").loc[n_sm]

    def saving(col: str) -> float:
        return float(1.0 - a[col] / b[col]) if b[col] > 0 else math.nan

    return {"optimal_sms_sweep": best, "optimal_sms_eq34": eq34, "sm_count": n_sm,
            "mwp": float(np.ravel(d["mwp"])[0]), "cwp": float(np.ravel(d["cwp"])[0]), "n": float(np.ravel(d["n"])[0]),
            "mwp_peak_bw": float(np.ravel(d["mwp_peak_bw"])[0]), "case": int(np.ravel(d["case"])[0]),
            "savings": {"runtime_idle": saving("energy_j"), "runtime": saving("runtime_energy_j"),
                        "powergating": saving("powergated_energy_j")},
            "table": table}


def candidate_pairs(pf: ParameterFile, section: Section | None,
                    user_pairs: Sequence[tuple[float, float]] = ()) -> list[tuple[float, float]]:
    """(core, memory) clock pairs to evaluate, MHz: every pair of the device's supported clocks in the
    parameter file (else its default clocks, else the timing section's reference clocks), limited to the
    DVFS model's fitted clock range when ``section`` is one, plus ``user_pairs`` (kept as given);
    sorted, without duplicates. Works without any power section."""
    clocks = pf.device.get("clocks") or {}
    sup = clocks.get("supported") or {}
    core = sorted(float(c) for c in sup.get("core_mhz", []) or [clocks.get("core_mhz")] if c is not None)
    mem = sorted(float(m) for m in sup.get("mem_mhz", []) or [clocks.get("mem_mhz")] if m is not None)
    if section is not None:
        vc, vm = section.structure["voltage"]["core"]["mhz"], section.structure["voltage"]["mem"]["mhz"]
        core = [c for c in core if min(vc) - 1e-6 <= c <= max(vc) + 1e-6] or core
        mem = [m for m in mem if min(vm) - 1e-6 <= m <= max(vm) + 1e-6] or mem
    if (not core or not mem) and "timing" in pf:
        ts = T.compile_section(pf["timing"])
        core, mem = core or [float(ts.ref_core_mhz)], mem or [float(ts.ref_mem_mhz)]
    pairs = sorted({(c, m) for c in core for m in mem} | {(float(c), float(m)) for c, m in user_pairs})
    if not pairs:
        raise BadInputError("the parameter file's device lists no clocks and it has no timing section; "
                            "cannot choose clocks")
    return pairs


def _snap_default(f0c: float, f0m: float, pairs: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """The default pair, moved onto the nearest candidate pair when that is the same clock level
    (within :data:`calib.core.units.SAME_CLOCK_REL` in both domains): a fitted file's default clocks
    can be requested ones while its supported levels are measured ones (e.g. 1107 vs 1105.8 MHz),
    and one level should not appear twice in the table."""
    near = [(abs(c - f0c) / f0c + abs(m - f0m) / f0m, (c, m)) for c, m in pairs
            if abs(c - f0c) <= SAME_CLOCK_REL * f0c and abs(m - f0m) <= SAME_CLOCK_REL * f0m]
    return min(near)[1] if near else (f0c, f0m)


def clock_table(pf: ParameterFile, kernel: pd.DataFrame, pairs: Sequence[tuple[float, float]] | None = None,
                predictor: str | None = None, anchored: bool = True, temp_c: float | None = None) -> pd.DataFrame:
    """Time, power, energy and EDP of one kernel at every (core, memory) pair (module docstring).

    ``pairs`` (MHz): the pairs to evaluate (default :func:`candidate_pairs`); the default pair is
    added when missing. ``anchored``: scale from the kernel's measured ``time_s`` at its clocks, its
    ILP set from that time when the description gives none (as ``calib predict --anchor``).
    ``temp_c`` overrides the temperature the power model is evaluated at (:func:`kernel_temperature_c`).
    Without a power model (:func:`has_power_model`) only ``time_s`` and ``slowdown`` are evaluated:
    ``power_w``, ``idle_power_w``, ``energy_j`` and ``edp_js`` are NaN and a note says so. Columns:
    ``core_mhz``, ``mem_mhz``, ``time_s`` (s), ``power_w``, ``idle_power_w`` (W), ``energy_j`` (J),
    ``edp_js`` (J s), ``slowdown`` (fraction over the default pair's time), ``default``; attrs
    ``notes``, ``time_from``, ``temperature`` (None without a power model), ``power``."""
    k = _one_kernel(kernel)
    sec = dvfs_section(pf)
    powered = has_power_model(pf)
    pairs = list(pairs) if pairs is not None else candidate_pairs(pf, sec)
    clocks = pf.device.get("clocks") or {}
    ts = T.compile_section(pf["timing"])
    f0c, f0m = _snap_default(float(clocks.get("core_mhz") or ts.ref_core_mhz),
                             float(clocks.get("mem_mhz") or ts.ref_mem_mhz), pairs)
    if (f0c, f0m) not in pairs:
        pairs = [(f0c, f0m)] + pairs
    rows = pd.concat([k] * len(pairs), ignore_index=True)
    base_core, base_mem, base_t = (float(k[c].iloc[0]) if c in k.columns and pd.notna(k[c].iloc[0]) else default
                                   for c, default in (("core_mhz", f0c), ("mem_mhz", f0m), ("time_s", math.nan)))
    rows["core_mhz"] = [p[0] for p in pairs]
    rows["mem_mhz"] = [p[1] for p in pairs]
    if "active_sms" not in rows.columns or rows["active_sms"].isna().all():
        rows["active_sms"] = float(ts.sm_count)
    notes: list[str] = []
    if anchored and math.isfinite(base_t):
        t, n1 = _quiet(T.predict_time_anchored, pf["timing"], rows, base_t, base_core, base_mem, predictor,
                       infer_ilp=True)
        how = f"timing model, scaled from the measured {base_t:.6g} s at {base_core:g}/{base_mem:g} MHz"
    else:
        t, n1 = _quiet(T.predict_time, pf["timing"], rows, predictor)
        how = "timing model"
    notes += n1
    nan = np.full(len(rows), math.nan)
    p, p_idle, how_t, power_from = nan, nan, None, None
    if not powered:
        notes.append(NO_POWER_NOTE)
    else:
        power_from = "DVFS" if sec is not None else "IPP"
        if sec is None:
            notes.append("no DVFS power model in the parameter file: power from the IPP model, which ignores "
                         "voltage and clock changes (the choice then follows time only)")
        temp, how_t = ((float(temp_c), f"{float(temp_c):g} C (given)") if temp_c is not None
                       else kernel_temperature_c(pf, k, float(t[0])))
        if temp is not None:
            rows["temp_c"] = temp
        elif sec is not None and sec.structure.get("temp_ref_c") is not None:
            notes.append("no temperature for the kernel (no temp_c in the description, no thermal section): "
                         "the DVFS model's leakage is evaluated at its reference temperature")
        (p, p_idle), n2 = _quiet(board_power, pf, rows, t, True)
        notes += n2
        note = leakage_check(pf, sec)
        if note and temp_c is None:
            notes.append(note)
    out = pd.DataFrame({"core_mhz": rows["core_mhz"], "mem_mhz": rows["mem_mhz"], "time_s": t, "power_w": p,
                        "idle_power_w": p_idle, "energy_j": p * t, "edp_js": p * t * t})
    t0 = float(out.loc[(out["core_mhz"] == f0c) & (out["mem_mhz"] == f0m), "time_s"].iloc[0])
    out["slowdown"] = out["time_s"] / t0 - 1.0
    out["default"] = (out["core_mhz"] == f0c) & (out["mem_mhz"] == f0m)
    out.attrs["notes"] = sorted(set(notes))
    out.attrs["time_from"] = how
    out.attrs["temperature"] = how_t
    out.attrs["power"] = power_from
    return out


def kernel_temperature_c(pf: ParameterFile, kernel: pd.DataFrame, time_s: float) -> tuple[float | None, str]:
    """Temperature at which to evaluate the power of a kernel at every clock pair, and how it was found.

    The description's measured ``temp_c`` when it has one (profile the kernel once at the default
    clocks and record the GPU temperature with it); otherwise the idle temperature of the thermal
    section, the lowest temperature the kernel can run at. The same temperature is used for every
    pair: a slower clock runs cooler, so leakage saved there is not credited (conservative).

    Why not the thermal model's steady temperature: a DVFS power model fitted on short campaign
    windows sees temperature only over a few degrees and its leakage slope is not meant for
    extrapolation to a steady state tens of degrees hotter. None when neither is available.
    """
    del time_s  # kept for the signature: a thermal steady state would need it
    if "temp_c" in kernel.columns and pd.notna(kernel["temp_c"].iloc[0]):
        return float(kernel["temp_c"].iloc[0]), "the description's measured temperature"
    th = pf.get("thermal")
    if th is not None and "idle_temp_c" in th:
        return th.value("idle_temp_c"), "the idle temperature (no temp_c in the description)"
    return None, "the power model's reference temperature"


def recommend(table: pd.DataFrame, objective: str = "energy", max_slowdown: float = 0.1) -> pd.Series:
    """The recommended row of a :func:`clock_table` among those within the slowdown bound.

    ``objective``: ``energy`` (least ``energy_j``, J), ``edp`` (least ``edp_js``, J s) or ``time`` (the
    lowest clocks: least ``core_mhz / max core + mem_mhz / max mem`` over the table's pairs; ties: the
    smaller slowdown, then the lower core clock; module docstring). ``max_slowdown`` is a fraction of
    the default pair's time (0.1 = at most 10 % slower)."""
    if objective not in OBJECTIVES:
        raise BadInputError(f"objective must be one of {', '.join(OBJECTIVES)}, not {objective!r}")
    if not (max_slowdown >= 0):
        raise BadInputError(f"the slowdown bound must be >= 0 (a fraction, e.g. 0.1 for 10 %), not {max_slowdown!r}")
    ok = table[table["slowdown"] <= max_slowdown + 1e-12]
    if objective == "time":
        score = clock_score(table, ok).round(12)  # rounded: equal sums tie whatever the float noise
        order = ok.assign(_score=score).sort_values(["_score", "slowdown", "core_mhz", "mem_mhz"], kind="stable")
        return ok.loc[order.index[0]]
    col = "energy_j" if objective == "energy" else "edp_js"
    if ok[col].isna().all():
        raise BadInputError(f"the clock table has no {col} (no power model); objective 'time' needs none")
    return ok.loc[ok[col].idxmin()]


def clock_score(table: pd.DataFrame, rows: pd.DataFrame | None = None) -> pd.Series:
    """``core_mhz / max core + mem_mhz / max mem`` of ``rows`` (default: every row), the maxima over
    ``table``'s pairs: 2 at the top pair, lower with more clock headroom; objective ``time`` takes the
    least (:func:`recommend`)."""
    rows = table if rows is None else rows
    return rows["core_mhz"] / table["core_mhz"].max() + rows["mem_mhz"] / table["mem_mhz"].max()


def fastest(table: pd.DataFrame) -> pd.Series:
    """The row of a :func:`clock_table` with the least predicted time (ties: the lower clocks)."""
    return table.loc[table.sort_values(["time_s", "core_mhz", "mem_mhz"], kind="stable").index[0]]


def leakage_check(pf: ParameterFile, section: Section | None, ratio: float = 5.0) -> str | None:
    """A warning when the DVFS model's leakage slope (W/C) is far above the thermal fit's sigma (W/C).

    A DVFS model fitted on short windows can explain power by temperature (hotter windows are busier
    ones); its power then moves mostly with the temperature it is evaluated at, and the clock choice
    tends to the fastest pair whatever the clocks cost.
    """
    if section is None:
        return None
    leak = section.params.get("leak_core_w_per_c")
    th = pf.get("thermal")
    sigma = th.params.get("sigma_w_per_c") if th is not None else None
    if leak is None or sigma is None or sigma.value <= 0 or leak.value <= ratio * sigma.value:
        return None
    leak, sigma = leak.value, sigma.value
    ref = section.structure.get("temp_ref_c")
    return (f"the DVFS power model's leakage slope ({leak:.3g} W/C) is {leak / sigma:.0f}x the thermal fit's sigma "
            f"({sigma:.3g} W/C): its power follows the temperature it is evaluated at more than the clocks; "
            f"compare with --temp-c {ref:g} (its reference temperature)" if ref is not None else
            f"the DVFS power model's leakage slope ({leak:.3g} W/C) is {leak / sigma:.0f}x the thermal fit's sigma")
