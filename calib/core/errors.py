"""Typed errors of the toolkit.

Every error a user can cause carries enough context (file, row, column, field) to act on, and maps to
an exit status of the ``calib`` command: 2 for bad input or usage, 1 for anything else.
"""

from __future__ import annotations


class CalibError(Exception):
    """Base class of every error the toolkit raises on purpose."""

    exit_code = 1


class BadInputError(CalibError):
    """A file, table, row or option the user gave is malformed (exit status 2)."""

    exit_code = 2


class SchemaError(BadInputError):
    """A parameter file does not match the schema or violates a physical bound."""


class NotFittedError(CalibError, ValueError):
    """A model was used before ``fit`` gave it parameters."""


class FitError(BadInputError):
    """The data cannot support the fit (e.g. too few samples for the parameters, nothing varies): bad
    input, exit status 2."""


class DeviceError(CalibError):
    """A device or sensor failed.

    Every vendor backend of the device layer maps its library's errors to the subclasses below (each
    says what it means) at one boundary, so that nothing above the device layer handles a vendor's
    exception types.
    """


class DeviceNotSupportedError(DeviceError):
    """The device does not support the requested query or command."""


class DeviceNoPermissionError(DeviceError):
    """The command needs privileges the current user does not have."""


class DeviceLostError(DeviceError):
    """The device fell off the bus or stopped answering."""


class DeviceLibraryError(DeviceError):
    """A vendor library or driver (NVML, amdsmi and libamd_smi.so, ...) is not installed or cannot be
    loaded; the message names the package that provides it."""


class TransientSensorError(DeviceError):
    """A sensor read failed in a way that the next read may not (timeout, data not ready, port busy)."""


class DeviceNotFoundError(BadInputError):
    """The device name given by the user does not exist."""
