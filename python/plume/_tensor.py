"""plume._tensor: plume.Tensor, a result that other libraries take without a copy.

A Tensor is memory of its context's device that plume wrote: on the host backend a numpy
array (numpy() gives it, no copy), on cuda a block of the context's pool (numpy() copies
it to the host; the block goes back to the pool, in stream order, when the Tensor and
every DLPack export of it are gone).

Lifetimes: a Tensor outlives nothing it needs silently. Once its context is closed, what
needs the context (__dlpack__, a copy, numpy() on cuda, whose memory went with the context's
pool) raises plume.Error ("the tensor's context is closed"); on host numpy() still gives the
array, which is Python's. An export made before the close keeps that array alive and stays
valid. A Tensor whose stream was closed uses the context's default stream.

It speaks the Python DLPack protocol (`__dlpack__`, `__dlpack_device__`), so that
np.from_dlpack, torch.from_dlpack and cupy.from_dlpack take it as it is:
  max_version   (1, x) or later: a DLPack 1.1 "dltensor_versioned" capsule; absent or
                older: a legacy "dltensor" capsule (NumPy 1.x asks without max_version);
  stream        the consumer's stream. On host it must be None (CPU memory has no
                stream). On cuda an int: the consumer's cudaStream_t, 1 the legacy default
                stream (None means 1, as the protocol says), 2 the per-thread one, -1 no
                ordering: the consumer's stream is made to wait for the work that wrote
                the tensor by an event (plm_dlpack_order_before_native), the host does not
                wait;
  dl_device     None or the tensor's own device (anything else: BufferError);
  copy          True: export a copy (flagged IS_COPIED); False or None: the memory itself.
"""

import ctypes

import numpy as np

from . import _capsule, _native
from ._common import check, dtype_code, dims, error, numpy_dtype, tensor_shape
from ._interop import DL_CPU, DL_CUDA, wrap_host
from ._native import lib

DEVICE_TO_HOST, DEVICE_TO_DEVICE = 2, 3
IS_COPIED = 1 << 1
NO_ORDERING = -1


class Tensor:
    """A result of plume on its context's device (see the module's docstring): .shape,
    .dtype, .device ("host" or "cuda"), numpy(), and the DLPack protocol."""

    def __init__(self, context, stream, tensor, array=None, keep=None):
        self.context, self._stream = context, stream
        self._tensor = tensor  # a plm_tensor: the array's memory, or a pool block of ours
        self._array = array    # host backend: the numpy array plume wrote
        self._keep = keep      # a caller's memory (out=): what owns it; None: ours
        self.shape = tensor_shape(tensor)
        self.dtype = numpy_dtype(tensor.dtype)

    @classmethod
    def empty(cls, context, stream, dtype, shape):
        """A Tensor plume may write: a numpy array on host, a pool block on cuda."""
        if context.backend == "host":
            array = np.empty(shape, dtype)
            return cls(context, stream, wrap_host(context, array), array)
        shape, shape_dims = dims(shape)
        tensor = _native.Tensor()
        check(lib.plm_tensor_alloc(context.pool(), stream.handle, dtype_code(dtype),
                                   len(shape), shape_dims, ctypes.byref(tensor)))
        return cls(context, stream, tensor)

    def frame(self, i):
        """A plm_tensor over frame i (the first axis) of the tensor's memory."""
        t = self._tensor
        view = _native.Tensor(ctx=t.ctx, data=t.data + i * int(t.strides[0]) * self.dtype.itemsize,
                              dtype=t.dtype, ndim=t.ndim - 1)
        for d in range(1, t.ndim):
            view.dims[d - 1], view.strides[d - 1] = t.dims[d], t.strides[d]
        return view

    def _open_context(self):
        """The context, or plume.Error when it is closed (what the Tensor's memory and
        plm_tensor's ctx belonged to is gone)."""
        if self.context._handle is None:
            raise error("PLM_ERR_INVALID_STATE", "the tensor's context is closed: %r cannot be "
                        "exported or copied any more (numpy() of a host tensor still works)"
                        % (self,))
        return self.context

    def _live_stream(self):
        """The tensor's stream, or the context's default stream once it was closed."""
        if self._stream._handle is not None:
            return self._stream
        return self._open_context().default_stream

    @property
    def device(self) -> str:
        return self.context.backend

    @property
    def tensor(self):
        """The plm_tensor (ctypes) over the memory."""
        return self._tensor

    def numpy(self) -> np.ndarray:
        """The values as a numpy array: on host the array itself, on cuda a copy (the
        host waits for the stream)."""
        if self._array is not None:
            return self._array
        stream = self._live_stream()
        out = np.empty(self.shape, self.dtype)
        check(lib.plm_stream_memcpy(stream.handle, out.ctypes.data_as(ctypes.c_void_p),
                                    self._tensor.data, out.nbytes, DEVICE_TO_HOST))
        stream.synchronize()
        return out

    def __array__(self, dtype=None, copy=None):
        array = self.numpy()
        return array if dtype is None else array.astype(dtype, copy=False)

    def __repr__(self):
        return "plume.Tensor(%s %s on %s)" % (self.dtype, self.shape, self.device)

    def __dlpack_device__(self):
        if self.context.backend == "host":
            return (DL_CPU, 0)
        return (DL_CUDA, self.context.device)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError("plume.Tensor: dl_device %r: plume exports on its own device "
                              "%r only (numpy() gives a host copy)"
                              % (tuple(dl_device), self.__dlpack_device__()))
        self._open_context()  # plm_tensor_to_dlpack reads the context
        source = self._copy() if copy else self
        source._order_before(stream)
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        return _capsule.export(source._tensor, source, versioned, IS_COPIED if copy else 0)

    def _order_before(self, stream):
        """The protocol's stream rule: the consumer's `stream` waits for this one."""
        if self.context.backend == "host":
            if stream is not None:
                raise BufferError("plume.Tensor: stream=%r for a host (kDLCPU) tensor: the "
                                  "protocol's stream is None for CPU memory" % (stream,))
            return
        if stream == NO_ORDERING:
            return
        if stream == 0:
            raise BufferError("plume.Tensor: stream=0 is ambiguous: the protocol gives 1 for "
                              "the legacy default stream, 2 for the per-thread one")
        check(lib.plm_dlpack_order_before_native(self._live_stream().handle, stream or 1))

    def _copy(self):
        """A Tensor with a copy of the values (on the stream, in device memory)."""
        stream = self._live_stream()
        if self._array is not None:
            array = self._array.copy()
            return Tensor(self.context, stream, wrap_host(self._open_context(), array), array)
        copy = Tensor.empty(self._open_context(), stream, self.dtype, self.shape)
        check(lib.plm_stream_memcpy(stream.handle, copy._tensor.data, self._tensor.data,
                                    self.dtype.itemsize * int(np.prod(self.shape)),
                                    DEVICE_TO_DEVICE))
        return copy

    def __del__(self):
        # A pool block of ours goes back in stream order (a closed context freed it; a
        # closed stream finished its work: the default stream takes the free).
        if (getattr(self, "_array", 0) is not None or self._keep is not None
                or self.context._handle is None):
            return
        lib.plm_tensor_free(self.context.pool(), self._live_stream().handle,
                            ctypes.byref(self._tensor))
