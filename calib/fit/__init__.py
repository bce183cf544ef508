"""Fitters: samples tables / sessions -> parameter-file sections (scipy.optimize least squares)."""
