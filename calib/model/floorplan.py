"""Floorplans, a compact grid thermal solver and HotSpot's file formats.

- :class:`Floorplan`: rectangular blocks (m, origin at the die's lower-left corner) read from / written to
  HotSpot's ``.flp`` (``name width height left_x bottom_y [specific_heat resistivity]``, tab separated,
  ``#`` comments), checked: unique names, positive sizes, no overlap, no gap (the blocks tile their
  bounding box). :func:`generic_floorplan` builds one from the die-area priors of the power fit.
- :func:`block_powers`: a per-unit power breakdown (W) placed on the blocks: a unit's power goes to the
  block named like the unit or to the blocks named ``<anything>_<unit>`` (split by area); power of no unit
  (idle, activation, constant per SM) is spread over the die by area. A unit with power and no block is
  refused, naming it. :func:`ipp_block_powers` does this for every row of a table from a parameter file's
  IPP breakdown (the report's heat map and ``calib hotspot`` share it); :func:`ipp_floorplan` is the
  generic floorplan of its power section.
- :class:`GridSolver`: the die as a grid of ``rows x cols`` cells (or one node per block,
  ``mode="block"``) with lateral conduction in silicon, each cell joined through its share of the fitted
  network's direct resistance to the first node of the fitted Cauer ladder, which runs to ambient
  (scipy.sparse). Steady state: ``G theta = P``; transients: backward Euler with a sparse LU.
- HotSpot: ``.ptrace`` (header of block names, one row of W per interval), ``-key value`` config files
  whose package resistance and capacitance come from the fitted network (:func:`hotspot_config`).
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.sparse.linalg import splu, spsolve

from calib.core import names
from calib.core.atomic import atomic_write_text
from calib.core.errors import BadInputError
from calib.core.samples import read_text_file
from calib.core.units import DIE_AREA_PRIOR
from calib.model.ipp import IppPowerModel
from calib.model.predict import predict_power
from calib.model.thermal_network import foster_to_cauer

#: silicon: thermal conductivity W/(m K), volumetric heat capacity J/(m^3 K) (HotSpot's defaults)
K_SI_W_PER_M_K = 100.0
CP_SI_J_PER_M3_K = 1.75e6
T_CHIP_M = 0.15e-3
#: HotSpot's lumped-capacitance fitting factor (C_FACTOR in RCutil.c)
C_FACTOR = 0.333
#: relative tolerance of the tiling checks (of the die's size; a .flp holds 9 digits)
_TOL = 1e-6


@dataclass(frozen=True)
class Block:
    """A floorplan block: name and rectangle (m)."""

    name: str
    width_m: float
    height_m: float
    left_m: float
    bottom_m: float

    @property
    def area_m2(self) -> float:
        return self.width_m * self.height_m

    @property
    def right_m(self) -> float:
        return self.left_m + self.width_m

    @property
    def top_m(self) -> float:
        return self.bottom_m + self.height_m


@dataclass(frozen=True)
class Floorplan:
    """Blocks that tile a rectangular die (:func:`check_floorplan`)."""

    blocks: tuple[Block, ...]

    @property
    def names(self) -> list[str]:
        return [b.name for b in self.blocks]

    def bounds(self) -> tuple[float, float, float, float]:
        """(left, bottom, right, top) of the die, m."""
        return (min(b.left_m for b in self.blocks), min(b.bottom_m for b in self.blocks),
                max(b.right_m for b in self.blocks), max(b.top_m for b in self.blocks))

    @property
    def area_m2(self) -> float:
        x0, y0, x1, y1 = self.bounds()
        return (x1 - x0) * (y1 - y0)


def check_floorplan(fp: Floorplan, source: str = "floorplan") -> Floorplan:
    """The floorplan, or BadInputError naming the first bad block: duplicate name, non-positive size,
    two blocks that overlap, or a gap (a point of the bounding box in no block)."""
    if not fp.blocks:
        raise BadInputError(f"{source}: no blocks")
    seen: set[str] = set()
    for b in fp.blocks:
        if b.name in seen:
            raise BadInputError(f"{source}: block {b.name!r} is defined twice")
        seen.add(b.name)
        for f in ("width_m", "height_m", "left_m", "bottom_m"):
            v = getattr(b, f)
            if not math.isfinite(v):
                raise BadInputError(f"{source}: block {b.name!r}: {f} {v!r} is not a finite number")
        if b.width_m <= 0 or b.height_m <= 0:
            raise BadInputError(f"{source}: block {b.name!r}: width and height must be > 0 m")
    x0, y0, x1, y1 = fp.bounds()
    tol = _TOL * max(x1 - x0, y1 - y0)
    bl = fp.blocks
    for a, b in itertools.combinations(bl, 2):
        ox = min(a.right_m, b.right_m) - max(a.left_m, b.left_m)
        oy = min(a.top_m, b.top_m) - max(a.bottom_m, b.bottom_m)
        if ox > tol and oy > tol:
            raise BadInputError(f"{source}: blocks {a.name!r} and {b.name!r} overlap "
                                f"({ox * 1e3:.4g} x {oy * 1e3:.4g} mm)")
    # gaps: every cell of the grid of block edges must be inside a block
    xs = np.unique(np.concatenate([[b.left_m, b.right_m] for b in bl]))
    ys = np.unique(np.concatenate([[b.bottom_m, b.top_m] for b in bl]))
    for xa, xb in zip(xs[:-1], xs[1:]):
        if xb - xa <= tol:
            continue
        cx = 0.5 * (xa + xb)
        for ya, yb in zip(ys[:-1], ys[1:]):
            if yb - ya <= tol:
                continue
            cy = 0.5 * (ya + yb)
            if not any(b.left_m - tol <= cx <= b.right_m + tol and b.bottom_m - tol <= cy <= b.top_m + tol for b in bl):
                raise BadInputError(f"{source}: gap in the floorplan: no block covers ({cx * 1e3:.4g}, {cy * 1e3:.4g}) mm "
                                    f"(the blocks must tile the die, {(x1 - x0) * 1e3:.4g} x {(y1 - y0) * 1e3:.4g} mm)")
    return fp


def read_flp(path: str | os.PathLike) -> Floorplan:
    """A HotSpot ``.flp`` file (module docstring), checked. BadInputError naming the file and line."""
    _, text = read_text_file(path, "a HotSpot floorplan (.flp)", "text (.flp) file")
    blocks = []
    for ln, line in enumerate(text.splitlines(), 1):
        s = line.split("#", 1)[0].strip()
        if not s:
            continue
        f = s.split()
        if len(f) not in (5, 7):
            raise BadInputError(f"{path}: line {ln}: expected 'name width height left_x bottom_y "
                                f"[specific_heat resistivity]', got {len(f)} fields")
        try:
            nums = [float(x) for x in f[1:5]]
        except ValueError:
            raise BadInputError(f"{path}: line {ln}: block {f[0]!r}: width, height, left_x, bottom_y must be numbers (m)") from None
        blocks.append(Block(f[0], *nums))
    return check_floorplan(Floorplan(tuple(blocks)), str(path))


def flp_text(fp: Floorplan) -> str:
    """The floorplan in HotSpot's ``.flp`` format (``%.9g`` m: reads back to the same floats to 9 digits)."""
    lines = ["# gpu-calib floorplan: name width height left_x bottom_y (m)"]
    lines += [f"{b.name}\t{b.width_m:.9g}\t{b.height_m:.9g}\t{b.left_m:.9g}\t{b.bottom_m:.9g}" for b in fp.blocks]
    return "\n".join(lines) + "\n"


def write_flp(fp: Floorplan, path: str | os.PathLike) -> None:
    atomic_write_text(path, flp_text(check_floorplan(fp)))


def generic_floorplan(units: Sequence[str], sm_count: int, chip_units: Sequence[str],
                      area_prior: Mapping[str, float], die_side_m: float = 0.024) -> Floorplan:
    """A square die of side ``die_side_m``: a band along the bottom with one block per chip-wide unit
    (L2, memory interface, ...), above it the SMs in a near-square grid, each SM split into one strip per
    per-SM unit (``sm<i>_<unit>``); areas in proportion to ``area_prior`` (relative die areas per SM / per
    chip, the priors the power fit seeds MaxPower with), so the band's height is the chip units' share."""
    sm_units = [u for u in units if u not in chip_units]
    chip = [u for u in units if u in chip_units]
    a_sm = sum(area_prior.get(u, 0.5) for u in sm_units) * sm_count
    a_chip = sum(area_prior.get(u, 0.5) for u in chip)
    total = a_sm + a_chip
    side = die_side_m
    band_h = side * a_chip / total if chip else 0.0
    blocks: list[Block] = []
    x = 0.0
    for u in chip:
        w = side * area_prior.get(u, 0.5) / a_chip
        blocks.append(Block(u, w, band_h, x, 0.0))
        x += w
    if chip:  # absorb rounding so the band ends exactly at the die's edge
        b = blocks[-1]
        blocks[-1] = Block(b.name, side - b.left_m, band_h, b.left_m, 0.0)
    ncol = int(math.ceil(math.sqrt(sm_count)))
    nrow = int(math.ceil(sm_count / ncol))
    sm_h = (side - band_h) / nrow
    a_one = sum(area_prior.get(u, 0.5) for u in sm_units)
    for i in range(sm_count):
        r, c = divmod(i, ncol)
        # the last row's SMs share its width when the grid is not full
        in_row = ncol if r < nrow - 1 else sm_count - ncol * (nrow - 1)
        w_sm = side / in_row
        x0, y0 = c * w_sm, band_h + r * sm_h
        y = y0
        for k, u in enumerate(sm_units):
            h = sm_h * area_prior.get(u, 0.5) / a_one if k < len(sm_units) - 1 else y0 + sm_h - y
            blocks.append(Block(f"sm{i}_{u}", w_sm, h, x0, y))
            y += h
    return check_floorplan(Floorplan(tuple(blocks)), "generic floorplan")


def unit_blocks(fp: Floorplan, unit: str) -> list[str]:
    """The blocks that take a unit's power: the block named like the unit and those named ``<anything>_<unit>``."""
    return [b.name for b in fp.blocks if b.name == unit or b.name.endswith("_" + unit)]


def check_units_placed(fp: Floorplan, units: Sequence[str], source: str = "floorplan") -> None:
    """BadInputError naming the first of ``units`` that has no block in ``fp`` (:func:`unit_blocks`)."""
    for u in units:
        if not unit_blocks(fp, u):
            raise BadInputError(f"{source}: unit {u!r} has no block in the floorplan "
                                f"(name a block {u!r} or '<prefix>_{u}')")


def block_powers(fp: Floorplan, unit_power_w: Mapping[str, float], background_w: float = 0.0,
                 source: str = "power breakdown") -> dict[str, float]:
    """Power (W) of every block (module docstring). BadInputError naming a unit with power and no block."""
    area = {b.name: b.area_m2 for b in fp.blocks}
    total_area = sum(area.values())
    out = {b.name: background_w * area[b.name] / total_area for b in fp.blocks}
    for u, p in unit_power_w.items():
        if not p:
            continue
        targets = unit_blocks(fp, u)
        if not targets:
            raise BadInputError(f"{source}: unit {u!r} ({p:.3g} W) has no block in the floorplan "
                                f"(name a block {u!r} or '<prefix>_{u}')")
        a = sum(area[t] for t in targets)
        for t in targets:
            out[t] += p * area[t] / a
    return out


# -- the fitted IPP power on a floorplan ---------------------------------------------------------------------

def ipp_floorplan(power: Any, die_side_m: float = 0.024) -> Floorplan:
    """The generic floorplan (:func:`generic_floorplan`) of an IPP power section (:class:`calib.core.params.Section`):
    its units (those of scope ``chip`` in the band), its SM count and the die-area priors of the power fit
    (:data:`calib.core.units.DIE_AREA_PRIOR`)."""
    st = power.structure
    units = list(st["units"])
    chip = [u for u, spec in st["units"].items() if spec.get("scope") == "chip"]
    return generic_floorplan(units, int(st["sm_count"]), chip, DIE_AREA_PRIOR, die_side_m)


def ipp_powered_units(power: Any) -> list[str]:
    """The units of an IPP power section whose MaxPower is not 0: those a kernel can give power."""
    return [u for u in power.structure["units"] if power.value(names.max_power(u), 0.0) != 0.0]


def ipp_block_powers(pf: Any, fp: Floorplan, df: Any, total_w: Any = None,
                     source: str = "samples table") -> Any:
    """Power (W) of every block of ``fp`` for every row of ``df``: a DataFrame with ``df``'s index and one
    column per block (``fp.names`` order). A row's IPP per-unit power
    (:meth:`calib.model.ipp.IppPowerModel.breakdown` of ``pf``'s IPP power section) is placed with
    :func:`block_powers`; the rest of its total ``total_w`` (W per row; default: the predicted power,
    :func:`calib.model.predict.predict_power`) -- idle, activation and constant per-SM power, and what a DVFS
    section adds for rows off the default clocks -- is spread over the die by area. So every row sums to its
    total. BadInputError (naming ``source``) for a unit with power and no block."""
    if pf.model_of("power") != "ipp":
        raise BadInputError(f"{source}: the parameter file has no IPP power section (power model "
                            f"{pf.model_of('power')!r}); the floorplan needs the per-unit power breakdown")
    if total_w is None:
        total_w = predict_power(pf, df, source)
    total = np.asarray(total_w, dtype=float).reshape(len(df))
    bd = IppPowerModel.from_file(pf).breakdown(df)
    unit_w = {u: bd[u].to_numpy(dtype=float) for u in pf["power"].structure["units"] if u in bd.columns}
    names = fp.names
    share = block_powers(fp, {}, background_w=1.0)
    rest = total - (np.sum(list(unit_w.values()), axis=0) if unit_w else 0.0)
    out = np.outer(rest, [share[n] for n in names])
    # block_powers is linear in a unit's power: place each unit once (at its largest power, which the
    # refusal of a unit without a block then names) and scale it for every row
    for u, w in unit_w.items():
        if not np.any(np.nan_to_num(w)):  # a row without a prediction (NaN) is the caller's to name
            continue
        p0 = float(w[np.nanargmax(np.abs(w))])
        placed = block_powers(fp, {u: p0}, source=source)
        out += np.outer(w / p0, [placed[n] for n in names])
    return pd.DataFrame(out, index=df.index, columns=names)


# -- power traces ---------------------------------------------------------------------------------------------

def ptrace_text(names: Sequence[str], rows_w: np.ndarray) -> str:
    """HotSpot ``.ptrace``: a header of block names, then one row of W per interval (tab separated)."""
    rows = np.atleast_2d(np.asarray(rows_w, dtype=float))
    if rows.shape[1] != len(names):
        raise BadInputError(f"power trace: {rows.shape[1]} columns for {len(names)} blocks")
    lines = ["\t".join(names)] + ["\t".join(f"{v:.9g}" for v in r) for r in rows]
    return "\n".join(lines) + "\n"


def write_ptrace(path: str | os.PathLike, names: Sequence[str], rows_w: np.ndarray) -> None:
    atomic_write_text(path, ptrace_text(names, rows_w))


def read_ptrace(path: str | os.PathLike, fp: Floorplan | None = None) -> tuple[list[str], np.ndarray]:
    """(block names, rows of W) of a ``.ptrace``; a leading ``Cycle`` column (the Hassan thesis's variant)
    is dropped. With a floorplan, every column must name one of its blocks."""
    _, text = read_text_file(path, "a HotSpot power trace (.ptrace)", "text (.ptrace) file")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    names = lines[0].split()
    rows = []
    for ln, line in enumerate(lines[1:], 2):
        f = line.split()
        if len(f) != len(names):
            raise BadInputError(f"{path}: line {ln}: {len(f)} values for {len(names)} columns")
        try:
            rows.append([float(x) for x in f])
        except ValueError:
            raise BadInputError(f"{path}: line {ln}: not all values are numbers") from None
    arr = np.array(rows, dtype=float).reshape(len(rows), len(names))
    if names and names[0].lower() == "cycle":
        names, arr = names[1:], arr[:, 1:]
    if fp is not None:
        missing = [n for n in names if n not in fp.names]
        if missing:
            raise BadInputError(f"{path}: column {missing[0]!r} names no block of the floorplan")
    return names, arr


# -- grid solver ----------------------------------------------------------------------------------------------

class GridSolver:
    """Die-level temperatures on a floorplan (module docstring).

    ``r_direct_c_per_w``: resistance from the die to the first package node (spread over the die by
    area), ``ladder_r_c_per_w`` / ``ladder_c_j_per_c``: the Cauer ladder from there to ambient.
    ``mode``: "grid" (``rows`` x ``cols`` cells) or "block" (one node per block). Temperatures are
    rises above ambient (C) for the powers given (W).
    """

    def __init__(self, fp: Floorplan, r_direct_c_per_w: float, ladder_r_c_per_w: Sequence[float],
                 ladder_c_j_per_c: Sequence[float], *, mode: str = "grid", rows: int = 64, cols: int = 64,
                 k_si: float = K_SI_W_PER_M_K, t_chip_m: float = T_CHIP_M, cp_si: float = CP_SI_J_PER_M3_K):
        if mode not in ("grid", "block"):
            raise BadInputError(f"grid solver: mode {mode!r} is not 'grid' or 'block'")
        self.fp, self.mode = fp, mode
        x0, y0, x1, y1 = fp.bounds()
        self.extent = (x0, x1, y0, y1)
        die_area = (x1 - x0) * (y1 - y0)
        rd = max(float(r_direct_c_per_w), 1e-6)
        kt = k_si * t_chip_m
        lat: list[tuple[int, int, float]] = []
        if mode == "grid":
            self.rows, self.cols = int(rows), int(cols)
            dx, dy = (x1 - x0) / self.cols, (y1 - y0) / self.rows
            n_die = self.rows * self.cols
            cell_area = np.full(n_die, dx * dy)
            idx = np.arange(n_die).reshape(self.rows, self.cols)
            gx, gy = kt * dy / dx, kt * dx / dy
            lat += [(a, b, gx) for a, b in zip(idx[:, :-1].ravel(), idx[:, 1:].ravel())]
            lat += [(a, b, gy) for a, b in zip(idx[:-1, :].ravel(), idx[1:, :].ravel())]
            # block -> cell overlap areas (m^2), for placing power and averaging temperatures
            xe = x0 + dx * np.arange(self.cols + 1)
            ye = y0 + dy * np.arange(self.rows + 1)
            ox = np.array([np.clip(np.minimum(b.right_m, xe[1:]) - np.maximum(b.left_m, xe[:-1]), 0, None) for b in fp.blocks])
            oy = np.array([np.clip(np.minimum(b.top_m, ye[1:]) - np.maximum(b.bottom_m, ye[:-1]), 0, None) for b in fp.blocks])
            self.overlap = (oy[:, :, None] * ox[:, None, :]).reshape(len(fp.blocks), n_die)
        else:
            n_die = len(fp.blocks)
            cell_area = np.array([b.area_m2 for b in fp.blocks])
            tol = _TOL * max(x1 - x0, y1 - y0)
            for (i, a), (j, b) in itertools.combinations(enumerate(fp.blocks), 2):
                if abs(a.right_m - b.left_m) < tol or abs(b.right_m - a.left_m) < tol:
                    shared = min(a.top_m, b.top_m) - max(a.bottom_m, b.bottom_m)
                    dist = 0.5 * (a.width_m + b.width_m)
                elif abs(a.top_m - b.bottom_m) < tol or abs(b.top_m - a.bottom_m) < tol:
                    shared = min(a.right_m, b.right_m) - max(a.left_m, b.left_m)
                    dist = 0.5 * (a.height_m + b.height_m)
                else:
                    continue
                if shared > tol:
                    lat.append((i, j, kt * shared / dist))
            self.overlap = np.diag(cell_area)
        self.n_die = n_die
        lr = [float(x) for x in ladder_r_c_per_w]
        lc = [float(x) for x in ladder_c_j_per_c]
        m = len(lr)
        n = n_die + m
        rows_, cols_, vals = [], [], []

        def link(a: int, b: int | None, g: float) -> None:
            rows_.append(a); cols_.append(a); vals.append(g)  # noqa: E702
            if b is not None:
                rows_.append(b); cols_.append(b); vals.append(g)  # noqa: E702
                rows_.append(a); cols_.append(b); vals.append(-g)  # noqa: E702
                rows_.append(b); cols_.append(a); vals.append(-g)  # noqa: E702

        for a, b, g in lat:
            link(int(a), int(b), g)
        gv = cell_area / die_area / rd
        for i in range(n_die):
            link(i, n_die if m else None, float(gv[i]))
        for k in range(m):
            link(n_die + k, n_die + k + 1 if k + 1 < m else None, 1.0 / max(lr[k], 1e-9))
        self.g = sparse.csc_matrix((vals, (rows_, cols_)), shape=(n, n))
        c_die = cp_si * t_chip_m * cell_area * C_FACTOR
        self.c = np.concatenate([c_die, np.array(lc, dtype=float)])

    def power_vector(self, block_power_w: Mapping[str, float]) -> np.ndarray:
        """Node power (W) from block powers (each block's power spread over its cells by area)."""
        p = np.zeros(self.g.shape[0])
        for bi, b in enumerate(self.fp.blocks):
            w = block_power_w.get(b.name, 0.0)
            if w:
                p[:self.n_die] += w * self.overlap[bi] / self.overlap[bi].sum()
        return p

    def steady(self, block_power_w: Mapping[str, float]) -> np.ndarray:
        """Steady rise above ambient (C) of every node (die cells first, then the ladder's nodes)."""
        return np.asarray(spsolve(self.g, self.power_vector(block_power_w)))

    def transient(self, times_s: Sequence[float], block_power_rows: Sequence[Mapping[str, float]],
                  dt_s: float = 0.1, theta0: np.ndarray | None = None) -> np.ndarray:
        """Node rises (C) at each of ``times_s`` (from 0); row k of powers holds from times_s[k-1] (0 for
        k = 0) to times_s[k]. Backward Euler with steps of at most ``dt_s``."""
        n = self.g.shape[0]
        th = np.zeros(n) if theta0 is None else np.asarray(theta0, dtype=float).copy()
        out = np.empty((len(times_s), n))
        t_prev = 0.0
        cache: dict[float, Any] = {}
        for k, (t, pw) in enumerate(zip(times_s, block_power_rows)):
            p = self.power_vector(pw)
            span = float(t) - t_prev
            steps = max(1, int(math.ceil(span / dt_s - 1e-9)))
            h = span / steps
            key = round(h, 12)
            if key not in cache:
                cache[key] = splu((sparse.diags(self.c / h) + self.g).tocsc())
            lu = cache[key]
            for _ in range(steps):
                th = lu.solve(self.c / h * th + p)
            out[k] = th
            t_prev = float(t)
        return out

    def die_map(self, theta: np.ndarray) -> np.ndarray:
        """The die cells of a node vector as a (rows, cols) map (grid mode), row 0 at the bottom."""
        if self.mode != "grid":
            raise BadInputError("die_map needs the grid mode")
        return np.asarray(theta[:self.n_die]).reshape(self.rows, self.cols)

    def block_temps(self, theta: np.ndarray) -> dict[str, float]:
        """Area-weighted mean rise (C) of every block."""
        d = np.asarray(theta[:self.n_die])
        return {b.name: float(self.overlap[i] @ d / self.overlap[i].sum()) for i, b in enumerate(self.fp.blocks)}


def solver_for(net: Any, fp: Floorplan, **kw: Any) -> GridSolver:
    """A :class:`GridSolver` on the fitted network's Cauer ladder
    (:class:`calib.model.thermal_network.FosterNetwork`)."""
    rs, cs = foster_to_cauer(net.r_c_per_w, net.tau_s)
    return GridSolver(fp, net.r_direct_c_per_w, rs, cs, **kw)


# -- HotSpot configuration ---------------------------------------------------------------------------------------

#: HotSpot's package geometry and materials (its compiled defaults; thermal notes sec. 2.7)
HOTSPOT_DEFAULTS: dict[str, float] = {
    "t_chip": 0.15e-3, "k_chip": 100.0, "p_chip": 1.75e6,
    "t_interface": 20e-6, "k_interface": 4.0, "p_interface": 4.0e6,
    "s_spreader": 30e-3, "t_spreader": 1e-3, "k_spreader": 400.0, "p_spreader": 3.55e6,
    "s_sink": 60e-3, "t_sink": 6.9e-3, "k_sink": 400.0, "p_sink": 3.55e6,
    "r_convec": 0.1, "c_convec": 140.4,
}


def hotspot_config(net: Any, fp: Floorplan, ambient_c: float, sampling_s: float = 1.0,
                   grid: int | None = None) -> dict[str, Any]:
    """A HotSpot configuration (``-key value``) whose package comes from the fitted network: the
    convection resistance is the network's total resistance less HotSpot's conduction through die,
    interface, spreader and sink (at HotSpot's default geometry); the convection capacitance is the fitted
    Cauer capacitance beyond the first node, divided by HotSpot's C_FACTOR (which it applies again), and
    the sink's volumetric heat capacity carries the first node's capacitance. Temperatures in K;
    ``sampling_s``: the power trace's interval (s). HotSpot's block model, or with ``grid`` its grid
    model at ``grid`` x ``grid`` cells."""
    d = dict(HOTSPOT_DEFAULTS)
    area = fp.area_m2
    cond = (d["t_chip"] / (d["k_chip"] * area) + d["t_interface"] / (d["k_interface"] * area)
            + d["t_spreader"] / (d["k_spreader"] * d["s_spreader"] ** 2) + d["t_sink"] / (d["k_sink"] * d["s_sink"] ** 2))
    rs, cs = foster_to_cauer(net.r_c_per_w, net.tau_s)
    r_conv = max(net.r_total_c_per_w - cond, 1e-4)
    c_first = cs[0] if cs else 0.0
    c_rest = sum(cs[1:]) if len(cs) > 1 else cs[0] if cs else 0.0
    if len(cs) > 1:
        d["p_sink"] = c_first / (C_FACTOR * d["t_sink"] * d["s_sink"] ** 2)
    d["r_convec"] = r_conv
    d["c_convec"] = c_rest / C_FACTOR
    d.update({"ambient": ambient_c + 273.15, "init_temp": ambient_c + 273.15, "sampling_intvl": sampling_s,
              "model_type": "block" if grid is None else "grid", "grid_rows": 64 if grid is None else int(grid),
              "grid_cols": 64 if grid is None else int(grid), "leakage_used": 0})
    return d


def config_text(cfg: Mapping[str, Any]) -> str:
    lines = ["# HotSpot configuration written by gpu-calib: package R and C from the fitted thermal network"]
    lines += [f"\t-{k}\t\t{v:.9g}" if isinstance(v, float) else f"\t-{k}\t\t{v}" for k, v in cfg.items()]
    return "\n".join(lines) + "\n"


def read_config(path: str | os.PathLike) -> dict[str, Any]:
    """A HotSpot ``-key value`` configuration file (numbers as float where they parse)."""
    out: dict[str, Any] = {}
    for ln, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        s = line.split("#", 1)[0].strip()
        if not s:
            continue
        f = s.split()
        if len(f) != 2 or not f[0].startswith("-"):
            raise BadInputError(f"{path}: line {ln}: expected '-key value'")
        try:
            out[f[0][1:]] = float(f[1]) if f[1] not in ("block", "grid") else f[1]
        except ValueError:
            out[f[0][1:]] = f[1]
    return out
