"""plume._context: contexts (a backend and device, its pool) and streams.

A Context owns a default stream, on which the module's ops and pipeline runs enqueue
unless given `stream=`. Context.stream() makes another; Stream.wrap puts plume's work on a
stream plume did not make (plm_stream_wrap): on cuda another library's cudaStream_t as an
integer (CuPy's `stream.ptr`, PyTorch's `stream.cuda_stream`), on host a plume Stream
(the host backend's streams are plume's own worker threads). Closing a context closes
its pipelines and streams first (the newest first: a wrapper before what it wraps).
"""

import collections
import ctypes
import weakref
from typing import Dict, Union

from . import _native
from ._common import check, error, integer, invalid
from ._native import lib

BACKENDS = {"auto": 0, "host": 1, "cuda": 2}

# The Python DLPack protocol's stream numbers for CUDA's two special streams.
LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM = 1, 2


class Stream:
    """A plume stream of a context. Work on one stream runs in order; `synchronize()`
    waits for it on the host. Made by Context.stream() or Stream.wrap()."""

    def __init__(self, context, handle, wrapped=None):
        self.context = context
        self._handle = handle
        self._wrapped = wrapped  # a wrapped plume Stream (host) stays open while this is
        context._streams.append(self)  # closed with the context at the latest

    @classmethod
    def wrap(cls, context: "Context", native: Union[int, "Stream", None]) -> "Stream":
        """A plume stream over `native`: on cuda a cudaStream_t as an int (0 or 1: the
        legacy default stream), on host a plume Stream of `context`. plume never destroys
        the wrapped stream; its owner keeps it until this one is closed."""
        wrapped = None
        if isinstance(native, Stream):
            wrapped, native = native, native.handle
        elif context.backend == "host":
            raise invalid("on the host backend Stream.wrap takes a plume Stream of the "
                          "context, not %r: the host backend's streams are plume's own "
                          "worker threads" % (native,))
        elif native == LEGACY_DEFAULT_STREAM:
            native = None  # cudaStreamLegacy is the NULL stream to plm_stream_wrap
        handle = ctypes.c_void_p()
        check(lib.plm_stream_wrap(context.handle, native, ctypes.byref(handle)))
        return cls(context, handle, wrapped)

    @property
    def handle(self):
        if self._handle is None or self.context._handle is None:
            raise error("PLM_ERR_INVALID_STATE", "the stream is closed")
        return self._handle

    @property
    def native_handle(self) -> int:
        """The cudaStream_t as an int, as the Python DLPack protocol passes streams (the
        legacy default stream is 1); plume.Error on the host backend, which has none."""
        native = ctypes.c_void_p()
        check(lib.plm_stream_native_handle(self.handle, ctypes.byref(native)))
        return native.value or LEGACY_DEFAULT_STREAM

    def synchronize(self) -> None:
        """Block until the work enqueued on the stream so far has finished."""
        check(lib.plm_stream_synchronize(self.handle))

    def close(self):
        """Wait for the stream's work and destroy it (a wrapped stream: forget it)."""
        if self._handle is not None and self.context._handle is not None:
            check(lib.plm_stream_destroy(self._handle))
            self.context._streams.remove(self)
        self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Context:
    """A plume context on a backend ("auto", "host" or "cuda") and device, with a default
    stream (`default_stream`)."""

    def __init__(self, backend: str = "auto", device: int = 0) -> None:
        if backend not in BACKENDS:
            raise invalid("backend %r is not auto, host or cuda" % (backend,))
        device = integer("device", device, 0)
        config = _native.ContextConfig(backend=BACKENDS[backend], device=device)
        handle = ctypes.c_void_p()
        check(lib.plm_context_create(ctypes.byref(config), ctypes.byref(handle)))
        self._handle = handle
        self.device = device
        self._pipelines = weakref.WeakSet()  # closed before the context
        self._streams = []                   # open streams, closed newest first
        self._op_cache = collections.OrderedDict()  # plume.op's pipelines (plume._ops)
        self._op_fast = {}                          # and its repeated calls' arguments
        try:
            kind = ctypes.c_int()
            check(lib.plm_context_backend(handle, ctypes.byref(kind)))
            self.backend = {1: "host", 2: "cuda"}[kind.value]
            self.default_stream = self.stream()
        except Exception:
            lib.plm_context_destroy(handle)
            self._handle = None
            raise

    @property
    def handle(self):
        if self._handle is None:
            raise error("PLM_ERR_INVALID_STATE", "the context is closed")
        return self._handle

    def stream(self) -> Stream:
        """A new stream of this context (plm_stream_create)."""
        handle = ctypes.c_void_p()
        check(lib.plm_stream_create(self.handle, 0, ctypes.byref(handle)))
        return Stream(self, handle)

    def stream_of(self, stream):
        """`stream` (a Stream of this context) or, when None, the default stream."""
        if stream is None:
            return self.default_stream
        if not isinstance(stream, Stream) or stream.context is not self:
            raise invalid("stream %r is not a plume Stream of this context" % (stream,))
        return stream

    def pool_stats(self) -> Dict[str, float]:
        """The default pool's statistics (plm_pool_stats) as a dict."""
        stats = _native.PoolStats()
        check(lib.plm_pool_stats_get(self.pool(), ctypes.byref(stats)))
        return {name: getattr(stats, name) for name in _native.POOL_STATS_FIELDS}

    def pool(self):
        """The default pool's handle (plm_context_default_pool)."""
        pool = ctypes.c_void_p()
        check(lib.plm_context_default_pool(self.handle, ctypes.byref(pool)))
        return pool

    def tuned_batch(self, frame_shape, dtype="uint16") -> int:
        """The batch `plume tune` measured fastest on this device for frames of frame_shape
        and dtype (plm_tuning_batch): 1 until it has run, or where it chose a frame at a
        time. Make the pipeline over (N, H, W) stacks and call run_stream(frames, batch=N)."""
        import numpy
        shape = tuple(integer("frame_shape[%d]" % k, d, 1) for k, d in enumerate(frame_shape))
        frame_bytes = numpy.dtype(dtype).itemsize
        for d in shape:
            frame_bytes *= d
        batch = ctypes.c_int()
        check(lib.plm_tuning_batch(self.handle, frame_bytes, ctypes.byref(batch)))
        return batch.value

    def synchronize(self):
        """Block until the default stream's work has finished."""
        self.default_stream.synchronize()

    def close(self):
        """Close the context's pipelines and streams, then destroy it; later calls raise
        Error."""
        if self._handle is not None:
            self._op_cache.clear()
            self._op_fast.clear()
            for pipeline in list(self._pipelines):
                pipeline.close()
            for stream in reversed(list(self._streams)):
                stream.close()
            status = lib.plm_context_destroy(self._handle)
            self._handle = None
            check(status)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


_default = None


def default_context() -> Context:
    """The module's context (backend auto), made on first use."""
    global _default
    if _default is None or _default._handle is None:
        _default = Context()
    return _default
