"""Devices: the virtual GPU (``sim:<preset>``) and real NVIDIA GPUs (``cuda:<index>``)."""
