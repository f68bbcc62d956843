"""plume._capsule: DLPack's PyCapsules through ctypes (the Python DLPack protocol).

A producer's __dlpack__ returns a capsule named "dltensor_versioned" (DLPack >= 1.0, a
DLManagedTensorVersioned *) or "dltensor" (legacy, a DLManagedTensor *). A consumer that
takes the managed tensor renames the capsule "used_dltensor[_versioned]" and calls the
deleter itself when done; a capsule never consumed calls the deleter when it is
collected (its destructor). Both kinds are plume's plm_dl_managed_tensor[_versioned].
"""

import ctypes
import itertools
import threading

import numpy as np

from . import _native
from ._common import check, error
from ._native import lib

VERSIONED, LEGACY = b"dltensor_versioned", b"dltensor"

# Capsule names must outlive their capsules: static buffers, passed by address.
_NAMES = {name: ctypes.create_string_buffer(name) for name in (VERSIONED, LEGACY)}
_USED = {name: ctypes.create_string_buffer(b"used_" + name) for name in (VERSIONED, LEGACY)}

_api = ctypes.pythonapi
_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(
    ("PyCapsule_New", _api))
_get_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(("PyCapsule_GetName", _api))
_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p)(
    ("PyCapsule_GetPointer", _api))
_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p)(
    ("PyCapsule_SetName", _api))
# For the destructor, which gets the capsule while it is being freed: no reference taken.
_is_valid_raw = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)(
    ("PyCapsule_IsValid", _api))
_get_pointer_raw = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(
    ("PyCapsule_GetPointer", _api))

_RELEASES = {VERSIONED: lib.plm_dlpack_release, LEGACY: lib.plm_dlpack_release_legacy}


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _destructor(capsule):
    """A capsule plume made, collected: its deleter, unless a consumer took it ("used_")."""
    for name, release in _RELEASES.items():
        address = ctypes.addressof(_NAMES[name])
        if _is_valid_raw(capsule, address):
            release(_get_pointer_raw(capsule, address))


# ---- taking another library's tensor --------------------------------------------------------

class DLTensor(ctypes.Structure):  # plm_dl_tensor (plume/dlpack.h): DLPack's DLTensor
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


# Where the DLTensor sits in each managed tensor: after version, manager_ctx, deleter and
# flags in the versioned one (plm_dl_managed_tensor_versioned), first in the legacy one.
_DL_TENSOR_AT = {VERSIONED: 8 + 3 * 8, LEGACY: 0}
DL_INT, DL_UINT, DL_FLOAT = 0, 1, 2

class Taken:
    """The managed tensor of a capsule this module consumed: `pointer` (for
    plm_tensor_from_dlpack[_legacy]), `versioned`, and release() (its deleter, once)."""

    def __init__(self, capsule):
        name = _get_name(capsule)
        if name not in _RELEASES:
            raise error("PLM_ERR_INVALID_ARG", "__dlpack__ returned a capsule named %r, not "
                        "'dltensor_versioned' or 'dltensor' (already used?)" % (name,))
        self.versioned = name == VERSIONED
        self.pointer = _get_pointer(capsule, ctypes.addressof(_NAMES[name]))
        self._capsule = capsule
        self._name = name
        self._lock = threading.Lock()
        self._taken = False

    def layout(self):
        """What the producer describes, read before plume takes it: (numpy dtype or None
        when numpy has none for it, shape, whether the memory is compact row-major)."""
        t = DLTensor.from_address(self.pointer + _DL_TENSOR_AT[self._name])
        shape = tuple(t.shape[i] for i in range(t.ndim)) if t.ndim > 0 else ()
        kinds = {DL_INT: "i", DL_UINT: "u", DL_FLOAT: "f"}
        dtype = None
        if t.code in kinds and t.lanes == 1 and t.bits in (8, 16, 32, 64):
            dtype = np.dtype("%s%d" % (kinds[t.code], t.bits // 8))
        compact = True
        if t.strides:
            expected = 1
            for i in reversed(range(t.ndim)):
                if shape[i] != 1 and t.strides[i] != expected:
                    compact = False
                expected *= shape[i]
        return dtype, shape, compact

    def take(self):
        """Mark the capsule used: from now on its deleter is ours to call (release)."""
        _set_name(self._capsule, ctypes.addressof(_USED[self._name]))
        self._taken = True

    def release(self):
        with self._lock:
            if self._taken:
                self._taken = False
                _RELEASES[self._name](self.pointer)


# ---- handing plume's tensors out -----------------------------------------------------------

_owners = {}  # what each export keeps alive, by the key its release callback gets
_keys = itertools.count(1)  # never 0: ctypes passes a NULL user as None


@_native.RELEASE_FN
def _release(user):
    _owners.pop(user, None)


def export(tensor, owner, versioned, flags=0):
    """A capsule of a managed tensor over `tensor` (a plm_tensor), holding `owner` alive
    until the consumer's deleter runs (or the capsule is collected unused)."""
    key = next(_keys)
    _owners[key] = owner
    managed = ctypes.c_void_p()
    if versioned:
        status = lib.plm_tensor_to_dlpack(ctypes.byref(tensor), flags, _release, key,
                                          ctypes.byref(managed))
    else:
        status = lib.plm_tensor_to_dlpack_legacy(ctypes.byref(tensor), _release, key,
                                                 ctypes.byref(managed))
    if status != 0:
        _owners.pop(key, None)
        check(status)
    name = VERSIONED if versioned else LEGACY
    try:
        return _new(managed, ctypes.addressof(_NAMES[name]), ctypes.cast(_destructor,
                                                                          ctypes.c_void_p))
    except BaseException:
        _RELEASES[name](managed)
        raise
