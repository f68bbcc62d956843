"""plume._interop: what the module takes as an input array, and how plume reaches it.

operand(context, obj, stream) turns obj into an Operand, memory plume reads:
  numpy array            host memory: on the host backend plume reads it in place, on
                         cuda it is staged (copied to a pool block on the stream);
  __dlpack__             DLPack through plm_tensor_from_dlpack[_legacy], no copy: kDLCPU
                         and kDLCUDAHost on a host context, kDLCUDA (of the context's
                         device) and kDLCUDAHost on a cuda one; kDLCPU on cuda goes through
                         numpy and is staged. The Python protocol's stream rule: on cuda
                         __dlpack__ gets stream=<the plume stream's cudaStream_t as an int>
                         so that the producer orders its work before plume's; on host
                         stream=None (the protocol's rule for CPU). It is asked for DLPack
                         1.1 (max_version=(1, 1)); a producer that refuses the keyword is
                         asked again without it and may give a legacy "dltensor" capsule;
  __cuda_array_interface__ (version 3): the data pointer, shape, typestr and strides
                         wrapped in place (plm_tensor_wrap_strided), the object kept
                         alive; its "stream", when given, is made to go before plume's
                         stream by an event (plm_dlpack_order_after_native), never by a
                         host wait. cuda contexts only;
  anything else          np.asarray.
Device arrays on a host context are refused with a plume.Error that says what was given.
Only compact row-major memory is taken (plume's ops need it): other strides are refused
with both listed.
"""

import ctypes

import numpy as np

from . import _capsule, _native
from ._common import (DTYPES, check, dims, dtype_code, error, invalid, numpy_dtype,
                      tensor_shape, wrong_type)
from ._native import lib

DL_CPU, DL_CUDA, DL_CUDA_HOST = 1, 2, 3
DL_DEVICE_NAMES = {DL_CPU: "kDLCPU", DL_CUDA: "kDLCUDA", DL_CUDA_HOST: "kDLCUDAHost"}
HOST_TO_DEVICE = 1


class Operand:
    """One input as plume reads it: `tensor`, a plm_tensor of the context's device memory,
    or `array`, a host numpy array to stage first (cuda). `keep` holds what the memory
    belongs to; release() lets it go (a DLPack deleter) once plume's work is done."""

    def __init__(self, dtype, shape, tensor=None, array=None, keep=None, release=None):
        self.dtype, self.shape = np.dtype(dtype), tuple(shape)
        self.tensor, self.array = tensor, array
        self._keep, self._release = keep, release

    def frame(self, i):
        """Operand of frame i of a stack (its first axis), sharing the memory."""
        if self.array is not None:
            return Operand(self.dtype, self.shape[1:], array=self.array[i], keep=self)
        t = self.tensor
        step = int(t.strides[0]) * self.dtype.itemsize
        view = _native.Tensor(ctx=t.ctx, data=t.data + i * step, dtype=t.dtype,
                              ndim=t.ndim - 1)
        for d in range(1, t.ndim):
            view.dims[d - 1], view.strides[d - 1] = t.dims[d], t.strides[d]
        return Operand(self.dtype, self.shape[1:], tensor=view, keep=self)

    def device_tensor(self, context, stream, staged):
        """A plm_tensor of context's device with the operand's values: the operand's own,
        or a pool block (appended to `staged`, freed by the caller) it is copied into on
        stream."""
        if self.tensor is not None:
            return self.tensor
        shape, shape_dims = dims(self.shape)
        tensor = _native.Tensor()
        check(lib.plm_tensor_alloc(context.pool(), stream.handle, dtype_code(self.dtype),
                                   len(shape), shape_dims, ctypes.byref(tensor)))
        staged.append(tensor)
        check(lib.plm_stream_memcpy(stream.handle, tensor.data,
                                    self.array.ctypes.data_as(ctypes.c_void_p),
                                    self.array.nbytes, HOST_TO_DEVICE))
        return tensor

    def release(self):
        if self._release is not None:
            release, self._release = self._release, None
            release()


def wrap_host(context, array):
    """A plm_tensor over a contiguous host array's own memory (the host backend's)."""
    shape, shape_dims = dims(array.shape)
    tensor = _native.Tensor()
    check(lib.plm_tensor_wrap(context.handle, array.ctypes.data_as(ctypes.c_void_p),
                              dtype_code(array.dtype), len(shape), shape_dims,
                              ctypes.byref(tensor)))
    return tensor


def host_operand(context, array, convert=None):
    """An Operand over a host array: converted first by `convert` (plume._interop.Convert;
    None: as it is), then made compact row-major (a strided view is copied, as numpy's
    ascontiguousarray does)."""
    if convert is not None:
        array = convert(array)
    array = np.ascontiguousarray(array)
    dtype_code(array.dtype)  # refuses dtypes plume lacks, naming them
    if context.backend == "host":
        return Operand(array.dtype, array.shape, tensor=wrap_host(context, array), keep=array)
    return Operand(array.dtype, array.shape, array=array)


# The rule for an input whose dtype the op does not take (docs/python.md, "Dtypes").
RULE = ("an array of another dtype becomes the first dtype the op takes, in the order u8, "
        "u16, i32, f32, f64, that holds every value of its dtype (bool to u8, int8 to i32 "
        "or f32); failing that, a float array becomes the op's first float dtype (f64 to "
        "f32) and an integer array the first dtype that holds its values (its minimum and "
        "maximum); other arrays are refused")
ORDER = tuple(np.dtype(t) for t in (np.uint8, np.uint16, np.int32, np.float32, np.float64))


class Convert:
    """The conversion of an input to the dtypes `taken` (numpy dtypes) of an op's slot,
    by RULE; `what` names the argument in messages ("plume.ops.threshold: array")."""

    def __init__(self, taken, what):
        self.taken = [t for t in ORDER if t in taken]
        self.what = what

    def target(self, array):
        """The dtype `array` becomes, or None: refused."""
        dtype = array.dtype
        if dtype in self.taken:
            return dtype
        if dtype.kind not in "biuf":
            return None
        for t in self.taken:
            if np.can_cast(dtype, t, "safe"):
                return t
        if dtype.kind == "f":
            return next((t for t in self.taken if t.kind == "f"), None)
        if dtype.kind in "iu" and array.size:
            low, high = int(array.min()), int(array.max())
            for t in self.taken:
                limit = (np.iinfo(t).min, np.iinfo(t).max) if t.kind in "iu" else (
                    -2**(np.finfo(t).nmant + 1), 2**(np.finfo(t).nmant + 1))
                if limit[0] <= low and high <= limit[1]:
                    return t
        return None

    def names(self):
        return ", ".join(BY_NUMPY[t] for t in self.taken)

    def __call__(self, array):
        target = self.target(array)
        if target is None:
            kind = invalid if array.dtype.kind in "iu" else wrong_type
            raise kind("%s is %s, which plume does not convert to %s (what it takes): %s"
                       % (self.what, array.dtype, self.names(), RULE))
        return array if target == array.dtype else array.astype(target)


BY_NUMPY = {np.dtype(np_type): name for name, (_, np_type) in DTYPES.items()}


def refuse_degenerate(obj):
    """plume.Error for a 0-d or empty array (by its .shape, which numpy, torch and CuPy
    arrays have), saying what it is: plume's ops take 1 to 4 dimensions of at least one
    element. Objects without a shape are left to the checks after them."""
    shape = getattr(obj, "shape", None)
    try:
        shape = tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        return
    what = "%s of %s" % (type(obj).__name__, getattr(obj, "dtype", "unknown dtype"))
    if not shape:
        raise invalid("a 0-d array (a scalar: %s, shape ()): plume's ops take arrays of 1 to "
                      "4 dimensions" % what)
    if 0 in shape:
        raise invalid("an empty array (%s, shape %r): plume's ops need at least one element"
                      % (what, shape))


def operand(context, obj, stream, convert=None):
    """obj as an Operand of context, ordered before work on `stream` (a plume Stream).
    0-d and empty arrays are refused, saying so. With `convert` (a Convert), an input of
    another dtype is converted by its rule and a strided one copied, the same for every
    library's arrays: numpy's, and a CPU tensor's through DLPack; device memory must be of
    a dtype the op takes."""
    if isinstance(obj, Operand):
        return obj
    refuse_degenerate(obj)
    if isinstance(obj, np.ndarray):
        return host_operand(context, obj, convert)
    if hasattr(obj, "__dlpack__"):
        return dlpack_operand(context, obj, stream, convert)
    if hasattr(obj, "__cuda_array_interface__"):
        found = cuda_array_operand(context, obj, stream)
        if convert is not None and found.dtype not in convert.taken:
            raise wrong_type("%s is a CUDA array of %s: plume takes %s there and converts "
                             "host arrays only" % (convert.what, found.dtype, convert.names()))
        return found
    array = np.asarray(obj)
    refuse_degenerate(array)
    return host_operand(context, array, convert)


def host_array(obj):
    """A host numpy array of obj, for what copies frames on the host (run_stream): numpy as
    it is, a CPU DLPack tensor through np.from_dlpack (no copy); device arrays refused."""
    if isinstance(obj, np.ndarray):
        return obj
    if hasattr(obj, "__dlpack__"):
        device = dlpack_device(obj)
        if device[0] in (DL_CPU, DL_CUDA_HOST):
            return np.from_dlpack(obj)
        raise error("PLM_ERR_UNSUPPORTED", "a tensor on DLPack device %s (%s): run_stream "
                    "takes host arrays; use run() for device arrays, or copy it to the host"
                    % (tuple(device), DL_DEVICE_NAMES.get(device[0], "unknown")))
    if hasattr(obj, "__cuda_array_interface__"):
        raise error("PLM_ERR_UNSUPPORTED", "a CUDA array (__cuda_array_interface__): "
                    "run_stream takes host arrays; use run() for device arrays, or copy it "
                    "to the host")
    return np.asarray(obj)


# ---- DLPack ---------------------------------------------------------------------------------

def dlpack_device(obj):
    if not hasattr(obj, "__dlpack_device__"):
        return (DL_CPU, 0)
    device = obj.__dlpack_device__()
    try:
        device_type, device_id = device
        return (int(device_type), int(device_id))
    except (TypeError, ValueError):
        raise invalid("%s.__dlpack_device__() returned %r, not (device_type, device_id), two "
                      "integers as the DLPack protocol gives" % (type(obj).__name__, device)
                      ) from None


def consumer_stream(context, stream, device_type):
    """What __dlpack__(stream=...) gets: None for CPU memory or a host context (the
    protocol's rule), else the plume stream's cudaStream_t as an int."""
    if context.backend == "host" or device_type == DL_CPU:
        return None
    return stream.native_handle


def call_dlpack(obj, stream):
    """obj.__dlpack__ as the protocol asks, DLPack 1.1 first; a producer that does not
    know max_version (DLPack < 1.0, NumPy 1.x) is asked again without it."""
    try:
        return obj.__dlpack__(stream=stream, max_version=(1, 1))
    except TypeError:
        return obj.__dlpack__(stream=stream)


def dlpack_operand(context, obj, stream, convert=None):
    device = dlpack_device(obj)
    type_name = DL_DEVICE_NAMES.get(device[0], "an unknown device type")
    if device[0] not in DL_DEVICE_NAMES:
        raise error("PLM_ERR_UNSUPPORTED", "a tensor on DLPack device %s (%s): plume takes "
                    "kDLCPU, kDLCUDA and kDLCUDAHost" % (device, type_name))
    if context.backend == "host" and device[0] == DL_CUDA:
        raise error("PLM_ERR_UNSUPPORTED", "a tensor on DLPack device %s (kDLCUDA, GPU "
                    "memory) given to a host context: plume's host backend cannot read GPU "
                    "memory; copy it to the host first, or use a cuda context" % (device,))
    if context.backend == "cuda" and device[0] == DL_CPU:
        return host_operand(context, np.from_dlpack(obj))  # staged on the stream
    taken = _capsule.Taken(call_dlpack(obj, consumer_stream(context, stream, device[0])))
    if convert is not None:
        dtype, _, compact = taken.layout()
        if not compact or dtype not in convert.taken:
            # Strided, or of a dtype to convert: the capsule is left to the producer (its
            # destructor frees it) and numpy reads the memory, as it reads a strided view.
            del taken
            if device[0] == DL_CUDA:
                raise wrong_type("%s is a kDLCUDA tensor of %s%s: plume takes %s, compact "
                                 "row-major, there and converts host arrays only"
                                 % (convert.what, dtype, "" if compact else ", strided",
                                    convert.names()))
            return host_operand(context, np.from_dlpack(obj), convert)
    tensor = _native.Tensor()
    if taken.versioned:
        check(lib.plm_tensor_from_dlpack(context.handle, taken.pointer, ctypes.byref(tensor),
                                         None))
    else:
        check(lib.plm_tensor_from_dlpack_legacy(context.handle, taken.pointer,
                                                ctypes.byref(tensor)))
    taken.take()
    return Operand(numpy_dtype(tensor.dtype), tensor_shape(tensor), tensor=tensor,
                   keep=(obj, taken), release=taken.release)


# ---- __cuda_array_interface__ ---------------------------------------------------------------

TYPESTRS = {"u1": np.uint8, "u2": np.uint16, "i4": np.int32, "f4": np.float32,
            "f8": np.float64}


class CudaArrayInterface:
    """A checked __cuda_array_interface__ (version 3): pointer, dtype, shape, strides in
    elements (None: C-contiguous), readonly, and stream (None: none given)."""

    def __init__(self, interface):
        def refuse(why):
            return invalid("__cuda_array_interface__ %s" % why)

        if not isinstance(interface, dict):
            raise refuse("is %s, not a dict" % type(interface).__name__)
        version = interface.get("version")
        if version != 3:
            raise refuse("version %r: plume reads version 3" % (version,))
        for key in ("shape", "typestr", "data"):
            if key not in interface:
                raise refuse("has no %r" % key)
        if interface.get("mask") is not None:
            raise refuse("has a mask: plume takes arrays without one")
        typestr = interface["typestr"]
        if (not isinstance(typestr, str) or len(typestr) != 3 or typestr[0] not in "<|="
                or typestr[1:] not in TYPESTRS or (typestr[0] == "|" and typestr[1:] != "u1")):
            raise refuse("typestr %r is not a little-endian uint8, uint16, int32, float32 or "
                         "float64 ('|u1', '<u2', '<i4', '<f4', '<f8')" % (typestr,))
        self.dtype = np.dtype(TYPESTRS[typestr[1:]])
        self.shape = tuple(int(d) for d in interface["shape"])
        self.pointer, self.readonly = (int(interface["data"][0]), bool(interface["data"][1]))
        if self.pointer == 0 and all(self.shape):
            raise refuse("data pointer is 0")
        strides = interface.get("strides")
        if strides is None:
            self.strides = None
        else:
            strides = tuple(int(s) for s in strides)
            if len(strides) != len(self.shape):
                raise refuse("strides %r do not match shape %r" % (strides, self.shape))
            if any(s % self.dtype.itemsize for s in strides):
                raise refuse("strides %r (bytes) are not multiples of the item size %d"
                             % (strides, self.dtype.itemsize))
            self.strides = tuple(s // self.dtype.itemsize for s in strides)
        stream = interface.get("stream")
        if stream is not None and (not isinstance(stream, int) or stream == 0):
            raise refuse("stream %r: the protocol gives None or a nonzero int (1: the legacy "
                         "default stream, 2: the per-thread one)" % (stream,))
        self.stream = stream


def cuda_array_operand(context, obj, stream):
    interface = CudaArrayInterface(obj.__cuda_array_interface__)
    if context.backend == "host":
        raise error("PLM_ERR_UNSUPPORTED", "a CUDA array (__cuda_array_interface__, %s %s, "
                    "of %s) given to a host context: plume's host backend cannot read GPU "
                    "memory; copy it to the host first, or use a cuda context"
                    % (interface.dtype, interface.shape, type(obj).__name__))
    shape, shape_dims = dims(interface.shape)
    strides = None
    if interface.strides is not None:
        strides = (ctypes.c_int64 * _native.MAX_DIMS)(*interface.strides)
    tensor = _native.Tensor()
    check(lib.plm_tensor_wrap_strided(context.handle, interface.pointer,
                                      dtype_code(interface.dtype), len(shape), shape_dims,
                                      strides, ctypes.byref(tensor)))
    if interface.stream is not None:
        check(lib.plm_dlpack_order_after_native(stream.handle, interface.stream))
    return Operand(interface.dtype, shape, tensor=tensor, keep=obj)
