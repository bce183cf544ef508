"""Boards as profilers name them -> SM count, so a kernel table of a known board needs no ``--sm-count``.

nvprof names the device ``GeForce GTX 1080 Ti (0)``, ncu's raw page ``NVIDIA RTX A2000``
(``device__attribute_display_name``; it also gives ``device__attribute_multiprocessor_count``, which wins
over this table). The name is matched whole, without the ``(N)`` device index and a leading ``NVIDIA``,
case-insensitively: ``GTX 1080`` must not match a ``GTX 1080 Ti``. An unknown board gives None (the fit
then asks for ``--sm-count`` as before).

SM count = CUDA cores / cores per SM. Cores per SM by compute capability from the CUDA C Programming
Guide (table "Throughput of native arithmetic instructions", 32-bit floating-point add/multiply/fma):
2.0 = 32, 3.x = 192, 5.x = 128, 6.0 = 64, 6.1 = 128, 7.x = 64, 8.0 = 64, 8.6/8.9 = 128, 9.0 = 128.
CUDA cores per board from NVIDIA's product specifications and architecture whitepapers (Fermi GF100,
Kepler GK110, Maxwell GM204/GM200, Pascal GP100/GP102, Volta GV100, Turing, Ampere GA100/GA102,
Hopper H100). Cross-checks: NVIDIA's own ncu report of an RTX A2000 (``tests/data/profilers``) says 26
SMs; the virtual GPUs' presets (``microbench/devices/sim/presets``) give the GTX 580 16 and the GTX TITAN X
24 SMs.
"""

from __future__ import annotations

import re

#: board name (as NVIDIA names it, without the "NVIDIA " prefix) -> (SM count, CUDA cores, compute capability)
BOARDS: dict[str, tuple[int, int, str]] = {
    # Fermi (32 cores/SM)
    "GeForce GTX 480": (15, 480, "2.0"), "GeForce GTX 580": (16, 512, "2.0"), "Tesla C2050": (14, 448, "2.0"),
    "Tesla M2090": (16, 512, "2.0"),
    # Kepler (192 cores/SMX)
    "GeForce GTX 680": (8, 1536, "3.0"), "GeForce GTX 780": (12, 2304, "3.5"), "GeForce GTX 780 Ti": (15, 2880, "3.5"),
    "GeForce GTX TITAN": (14, 2688, "3.5"), "GeForce GTX TITAN Black": (15, 2880, "3.5"),
    "Tesla K20c": (13, 2496, "3.5"), "Tesla K20m": (13, 2496, "3.5"), "Tesla K20Xm": (14, 2688, "3.5"),
    "Tesla K40c": (15, 2880, "3.5"), "Tesla K40m": (15, 2880, "3.5"), "Tesla K80": (13, 2496, "3.7"),
    # Maxwell (128 cores/SM)
    "GeForce GTX 750 Ti": (5, 640, "5.0"), "GeForce GTX 970": (13, 1664, "5.2"), "GeForce GTX 980": (16, 2048, "5.2"),
    "GeForce GTX 980 Ti": (22, 2816, "5.2"), "GeForce GTX TITAN X": (24, 3072, "5.2"), "Tesla M40": (24, 3072, "5.2"),
    # Pascal (GP100 64, GP10x 128 cores/SM)
    "Tesla P100-PCIE-16GB": (56, 3584, "6.0"), "Tesla P100-SXM2-16GB": (56, 3584, "6.0"),
    "GeForce GTX 1060 6GB": (10, 1280, "6.1"), "GeForce GTX 1070": (15, 1920, "6.1"),
    "GeForce GTX 1080": (20, 2560, "6.1"), "GeForce GTX 1080 Ti": (28, 3584, "6.1"),
    "TITAN X (Pascal)": (28, 3584, "6.1"), "TITAN Xp": (30, 3840, "6.1"), "Tesla P40": (30, 3840, "6.1"),
    # Volta / Turing (64 cores/SM)
    "Tesla V100-PCIE-16GB": (80, 5120, "7.0"), "Tesla V100-SXM2-16GB": (80, 5120, "7.0"),
    "Tesla V100-SXM2-32GB": (80, 5120, "7.0"), "TITAN V": (80, 5120, "7.0"), "Tesla T4": (40, 2560, "7.5"),
    "GeForce RTX 2080": (46, 2944, "7.5"), "GeForce RTX 2080 Ti": (68, 4352, "7.5"), "TITAN RTX": (72, 4608, "7.5"),
    # Ampere / Hopper
    "A100-SXM4-40GB": (108, 6912, "8.0"), "A100-PCIE-40GB": (108, 6912, "8.0"), "A100-SXM4-80GB": (108, 6912, "8.0"),
    "A100 80GB PCIe": (108, 6912, "8.0"), "GeForce RTX 3080": (68, 8704, "8.6"), "GeForce RTX 3090": (82, 10496, "8.6"),
    "RTX A2000": (26, 3328, "8.6"), "RTX A6000": (84, 10752, "8.6"), "A10": (72, 9216, "8.6"),
    "H100 PCIe": (114, 14592, "9.0"), "H100 80GB HBM3": (132, 16896, "9.0"),
}
#: CUDA cores per SM by compute capability (CUDA C Programming Guide), for the table's self-check
CORES_PER_SM = {"2.0": 32, "3.0": 192, "3.5": 192, "3.7": 192, "5.0": 128, "5.2": 128, "6.0": 64, "6.1": 128,
                "7.0": 64, "7.5": 64, "8.0": 64, "8.6": 128, "9.0": 128}


def _key(name: str) -> str:
    n = re.sub(r"\s*\(\d+\)\s*$", "", name.strip())
    n = re.sub(r"^NVIDIA\s+", "", n, flags=re.IGNORECASE)
    return re.sub(r"\s+", " ", n).casefold()


_BY_KEY = {_key(k): v[0] for k, v in BOARDS.items()}


def sm_count_of(device_name: str) -> int | None:
    """SM count of a board named as nvprof or ncu name it (``GeForce GTX 1080 Ti (0)`` -> 28), or None."""
    return _BY_KEY.get(_key(device_name)) if device_name else None
