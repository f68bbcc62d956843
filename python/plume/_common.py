"""plume._common: what every part of the module shares: plume.Error, the status check,
plume's dtypes and shapes as numpy names them, and the checks of Python values bound for C
integers (ctypes would silently truncate 2**40 to 0 and 64.7 to 64: these refuse them,
naming the argument)."""

import ctypes
import numbers
import re

import numpy as np

from . import _native
from ._native import lib

DTYPES = {"u8": (1, np.uint8), "u16": (2, np.uint16), "i32": (3, np.int32),
          "f32": (4, np.float32), "f64": (5, np.float64)}
BY_CODE = {code: (name, np_type) for name, (code, np_type) in DTYPES.items()}


class Error(Exception):
    """A plume call failed: .status is the plm_status name ("PLM_ERR_INVALID_ARG"), the
    message says which argument was wrong and why. What Python's own exceptions mean is
    kept by the subclasses (an `except ValueError` catches a bad value from plume as from
    numpy): InvalidArgument (ValueError), InvalidType (TypeError), OutOfMemory
    (MemoryError), Unsupported (ValueError), InvalidState (RuntimeError), FileError
    (OSError), and Error itself for the rest (a failure of the backend, an internal one)."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class InvalidArgument(Error, ValueError):
    """A value plume refuses: out of range, of the wrong shape, unknown (PLM_ERR_INVALID_ARG)."""


class InvalidType(Error, TypeError):
    """A value of a type the argument does not take (a float for an integer, a str for a
    number); its status is PLM_ERR_INVALID_ARG, as the library says it."""


class OutOfMemory(Error, MemoryError):
    """Host or device memory could not be had (PLM_ERR_OUT_OF_MEMORY)."""


class Unsupported(Error, ValueError):
    """Valid, but not on this backend or build (PLM_ERR_UNSUPPORTED): GPU memory given to
    a host context, a DLPack device plume cannot read."""


class FileError(Error, OSError):
    """A file plume could not read or write: missing, unreadable, damaged, of a format or
    shape other than the one expected (PLM_ERR_IO); the message names the file, the frame
    where there is one, and what was wrong."""


class InvalidState(Error, RuntimeError):
    """The object cannot take the call now: closed, or running on another thread
    (PLM_ERR_INVALID_STATE)."""


_BY_STATUS = {"PLM_ERR_INVALID_ARG": InvalidArgument, "PLM_ERR_OUT_OF_MEMORY": OutOfMemory,
              "PLM_ERR_UNSUPPORTED": Unsupported, "PLM_ERR_INVALID_STATE": InvalidState,
              "PLM_ERR_IO": FileError}

# The C function a library message starts with ("plm_pipeline_parse: "): Python callers
# called no C function, so the message starts with what they gave instead.
_C_FUNCTION = re.compile(r"(plm_\w+: )+")


def error(status, message):
    """The exception of a status name and a message: Error's subclass for the status."""
    return _BY_STATUS.get(status, Error)(status, message)


def library_error(status, prefix=""):
    """The exception of the library's failure `status` (plm_last_error's message, its C
    function names taken off, after `prefix`)."""
    message = _C_FUNCTION.sub("", lib.plm_last_error().decode())
    return error(lib.plm_status_str(status).decode(), prefix + message)


def check(status):
    """Raise the library's failure (its status name and plm_last_error) unless status is 0."""
    if status != 0:
        raise library_error(status)


def invalid(message):
    """A plume.InvalidArgument (ValueError) for an argument the module refuses before plume
    sees it."""
    return InvalidArgument("PLM_ERR_INVALID_ARG", message)


def wrong_type(message):
    """A plume.InvalidType (TypeError) for an argument of a type it does not take."""
    return InvalidType("PLM_ERR_INVALID_ARG", message)


def dtype_code(dtype):
    """plume's dtype code of "u16", np.uint16 or np.dtype('uint16')."""
    if isinstance(dtype, str) and dtype in DTYPES:
        return DTYPES[dtype][0]
    np_dtype = np.dtype(dtype)
    for code, (_, np_type) in BY_CODE.items():
        if np_dtype == np.dtype(np_type):
            return code
    raise invalid("dtype %r is not u8, u16, i32, f32 or f64" % (dtype,))


def numpy_dtype(code):
    """The numpy dtype of a plume dtype code."""
    return np.dtype(BY_CODE[code][1])


INT32_MIN, INT32_MAX = -2**31, 2**31 - 1
INT64_MIN, INT64_MAX = -2**63, 2**63 - 1


def integer(name, value, low=INT32_MIN, high=INT32_MAX):
    """value as a Python int for a C integer argument `name`: an int or numpy integer (not
    a bool, not a float, however whole) in [low, high]; else plume.Error naming it."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise wrong_type("%s is %r (%s), not an integer" % (name, value, type(value).__name__))
    value = int(value)
    if not low <= value <= high:
        raise invalid("%s is %d, outside %d..%d" % (name, value, low, high))
    return value


def dims(shape, name="shape"):
    """shape as a tuple of ints and as the int64[4] plume takes; 1 to 4 dimensions, each an
    integer that fits int64 (plume itself refuses those below 1, naming them)."""
    try:
        given = tuple(shape)
    except TypeError:
        raise wrong_type("%s is %r (%s), not a sequence of dimensions"
                      % (name, shape, type(shape).__name__)) from None
    if not 1 <= len(given) <= _native.MAX_DIMS:
        raise invalid("%s %r: 1 to 4 dimensions" % (name, given))
    shape = tuple(integer("%s[%d] of %r" % (name, i, given), d, INT64_MIN, INT64_MAX)
                  for i, d in enumerate(given))
    return shape, (ctypes.c_int64 * _native.MAX_DIMS)(*shape)


def tensor_shape(tensor):
    """The shape of a plm_tensor (or plm_shape) as a tuple."""
    return tuple(tensor.dims[:tensor.ndim])
