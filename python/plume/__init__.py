"""plume from Python: contexts, pipelines from text and presets, ops on numpy arrays.

    import numpy as np, plume
    frames = np.load("frames.npy")                          # (N, H, W) u16
    with plume.Pipeline(preset="robust", dtype="u16", shape=frames.shape[1:]) as pl:
        for table, count in pl.run_stream(frames):          # in frame order
            print(table[:count, 6:8])                       # centroids
    mask = plume.op("threshold", frames[0], value=3500)     # any op of the table

ctypes over the installed libplume (plume._native says where it is looked for): no compiler,
any CPython >= 3.9 with numpy. Everything plume does happens in the C library; this module
moves numpy arrays in and out. Frames and results are host numpy arrays: on the host backend
plume works on their memory in place, on cuda they are copied to and from the device. A call
that fails raises plume.Error with the library's message.

Thread safety: a Context and what it made may be used from one thread at a time.
"""

import ctypes
import queue
import threading
import weakref

import numpy as np

from . import _native
from ._native import lib

__all__ = ["Error", "Context", "Pipeline", "op", "presets", "version", "default_context"]

DTYPES = {"u8": (1, np.uint8), "u16": (2, np.uint16), "i32": (3, np.int32),
          "f32": (4, np.float32), "f64": (5, np.float64)}
BY_CODE = {code: (name, np_type) for name, (code, np_type) in DTYPES.items()}
BACKENDS = {"auto": 0, "host": 1, "cuda": 2}
HOST_TO_DEVICE, DEVICE_TO_HOST = 1, 2


class Error(Exception):
    """A plume call failed: .status is the plm_status name, the message plume's."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def _check(status):
    if status != 0:
        raise Error(lib.plm_status_str(status).decode(), lib.plm_last_error().decode())


def version():
    """The library's version ("0.1.0")."""
    return lib.plm_version_string().decode()


def _dtype_code(dtype):
    """plume's dtype code of "u16", np.uint16 or np.dtype('uint16')."""
    if isinstance(dtype, str) and dtype in DTYPES:
        return DTYPES[dtype][0]
    np_dtype = np.dtype(dtype)
    for code, (_, np_type) in BY_CODE.items():
        if np_dtype == np.dtype(np_type):
            return code
    raise Error("PLM_ERR_INVALID_ARG", "dtype %r is not u8, u16, i32, f32 or f64" % (dtype,))


def _dims(shape):
    shape = tuple(int(d) for d in shape)
    if not 1 <= len(shape) <= _native.MAX_DIMS:
        raise Error("PLM_ERR_INVALID_ARG", "shape %r: 1 to 4 dimensions" % (shape,))
    return shape, (ctypes.c_int64 * _native.MAX_DIMS)(*shape)


def _as_array(obj):
    """A host numpy array of obj: a numpy array as it is, another library's CPU tensor
    through DLPack (np.from_dlpack: no copy), anything else through np.asarray. Device
    tensors (DLPack's CUDA, __cuda_array_interface__) are refused: this module moves host
    arrays only so far."""
    if isinstance(obj, np.ndarray):
        return obj
    if hasattr(obj, "__dlpack__"):
        device = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else (1, 0)
        if device[0] in (1, 3):  # kDLCPU, kDLCUDAHost
            return np.from_dlpack(obj)
        raise Error("PLM_ERR_UNSUPPORTED", "a tensor on DLPack device %s: the Python module "
                    "takes host arrays so far; copy it to the host first" % (tuple(device),))
    if hasattr(obj, "__cuda_array_interface__"):
        raise Error("PLM_ERR_UNSUPPORTED", "a CUDA array (__cuda_array_interface__): the Python "
                    "module takes host arrays so far; copy it to the host first")
    return np.asarray(obj)


def _array_of(shape):
    """An empty numpy array of a plm_shape."""
    return np.empty(tuple(shape.dims[:shape.ndim]), BY_CODE[shape.dtype][1])


# ---- contexts ------------------------------------------------------------------------------

class Context:
    """A plume context on a backend ("auto", "host" or "cuda") and device, with a stream."""

    def __init__(self, backend="auto", device=0):
        if backend not in BACKENDS:
            raise Error("PLM_ERR_INVALID_ARG", "backend %r is not auto, host or cuda" % backend)
        config = _native.ContextConfig(backend=BACKENDS[backend], device=device)
        handle = ctypes.c_void_p()
        _check(lib.plm_context_create(ctypes.byref(config), ctypes.byref(handle)))
        self._handle = handle
        self._pipelines = weakref.WeakSet()  # closed before the context
        try:
            kind = ctypes.c_int()
            _check(lib.plm_context_backend(handle, ctypes.byref(kind)))
            self.backend = {1: "host", 2: "cuda"}[kind.value]
            self._stream = ctypes.c_void_p()
            _check(lib.plm_stream_create(handle, 0, ctypes.byref(self._stream)))
        except Exception:
            lib.plm_context_destroy(handle)
            raise

    @property
    def handle(self):
        if self._handle is None:
            raise Error("PLM_ERR_INVALID_STATE", "the context is closed")
        return self._handle

    def pool_stats(self):
        """The default pool's statistics (plm_pool_stats) as a dict."""
        pool = ctypes.c_void_p()
        _check(lib.plm_context_default_pool(self.handle, ctypes.byref(pool)))
        stats = _native.PoolStats()
        _check(lib.plm_pool_stats_get(pool, ctypes.byref(stats)))
        return {name: getattr(stats, name) for name in _native.POOL_STATS_FIELDS}

    def synchronize(self):
        _check(lib.plm_stream_synchronize(self._stream))

    def close(self):
        """Close the context's pipelines, then destroy it; later calls raise Error."""
        if self._handle is not None:
            for pipeline in list(self._pipelines):
                pipeline.close()
            lib.plm_stream_destroy(self._stream)
            status = lib.plm_context_destroy(self._handle)
            self._handle = None
            _check(status)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- frames in and out: host arrays, on the device's memory --

    def _device_tensor(self, array, keep, upload=True):
        """A plm_tensor over a contiguous host array (host backend: the array itself), or a
        device tensor for it (cuda; appended to keep for _release), holding its values when
        `upload` (an output's are not needed)."""
        array = np.ascontiguousarray(array)
        if self.backend == "host":
            return self._wrap(array), array
        shape, dims = _dims(array.shape)
        tensor = _native.Tensor()
        _check(lib.plm_tensor_alloc(self._pool(), self._stream, _dtype_code(array.dtype),
                                    len(shape), dims, ctypes.byref(tensor)))
        keep.append(tensor)
        if upload:
            _check(lib.plm_stream_memcpy(self._stream, tensor.data,
                                         array.ctypes.data_as(ctypes.c_void_p), array.nbytes,
                                         HOST_TO_DEVICE))
        return tensor, array

    def _wrap(self, array):
        """A plm_tensor over a contiguous host array's own memory (the host backend's)."""
        shape, dims = _dims(array.shape)
        tensor = _native.Tensor()
        _check(lib.plm_tensor_wrap(self.handle, array.ctypes.data_as(ctypes.c_void_p),
                                   _dtype_code(array.dtype), len(shape), dims,
                                   ctypes.byref(tensor)))
        return tensor

    def _pool(self):
        pool = ctypes.c_void_p()
        _check(lib.plm_context_default_pool(self.handle, ctypes.byref(pool)))
        return pool

    def _release(self, keep):
        for tensor in keep:
            lib.plm_tensor_free(self._pool(), self._stream, ctypes.byref(tensor))


_default = None


def default_context():
    """The module's context (backend auto), made on first use."""
    global _default
    if _default is None or _default._handle is None:
        _default = Context()
    return _default


# ---- presets ------------------------------------------------------------------------------

def presets():
    """The named pipelines (plume/presets.h): a list of dicts with name, summary, pipeline,
    tensors (the names the text needs) and settle_frames."""
    count = ctypes.c_int()
    table = lib.plm_pipeline_presets(ctypes.byref(count))
    return [{"name": table[i].name.decode(), "summary": table[i].summary.decode(),
             "pipeline": table[i].pipeline.decode(),
             "tensors": table[i].tensors.decode().split(),
             "settle_frames": table[i].settle_frames} for i in range(count.value)]


def _preset_text(name):
    for p in presets():
        if p["name"] == name:
            return p["pipeline"]
    raise Error("PLM_ERR_INVALID_ARG", "preset %r is not one of %s"
                % (name, ", ".join(p["name"] for p in presets())))


# ---- pipelines ----------------------------------------------------------------------------

class Pipeline:
    """A compiled pipeline from plm_pipeline_parse's text form (or a preset) for frames of
    `dtype` and `shape`; `tensors` maps the text's @NAME to numpy arrays (copied into the
    pipeline). run(frame) gives the outputs as numpy arrays; run_stream(frames) yields them
    frame by frame with `frames_in_flight` frames in flight."""

    def __init__(self, text=None, dtype="u16", shape=None, *, preset=None, tensors=None,
                 context=None, frames_in_flight=3):
        if (text is None) == (preset is None):
            raise Error("PLM_ERR_INVALID_ARG", "give the pipeline's text or a preset, not both")
        if shape is None:
            raise Error("PLM_ERR_INVALID_ARG", "shape is required: the frames' (H, W)")
        self.text = _preset_text(preset) if preset else text
        self.context = context or default_context()
        frame_shape, dims = _dims(shape)
        named, keep = self._named(tensors or {})
        handle = ctypes.c_void_p()
        _check(lib.plm_pipeline_parse_with_tensors(
            self.context.handle, self.text.encode(), _dtype_code(dtype), len(frame_shape), dims,
            named, len(keep), ctypes.byref(handle)))
        self._handle = handle
        self._generators = weakref.WeakSet()  # run_stream generators still open
        self._lock = threading.Lock()         # one run at a time (plume refuses two)
        try:
            config = _native.PlanConfig(frames_in_flight=frames_in_flight)
            _check(lib.plm_pipeline_compile(handle, ctypes.byref(config)))
            n_in, n_out = ctypes.c_int(), ctypes.c_int()
            _check(lib.plm_pipeline_io_count(handle, ctypes.byref(n_in), ctypes.byref(n_out)))
            self._inputs = [self._shape(lib.plm_pipeline_input_shape, i)
                            for i in range(n_in.value)]
            self._outputs = [self._shape(lib.plm_pipeline_output_shape, i)
                             for i in range(n_out.value)]
        except Exception:
            lib.plm_pipeline_destroy(handle)
            self._handle = None
            raise
        self.context._pipelines.add(self)

    @staticmethod
    def _named(tensors):
        keep = []
        array = (_native.NamedTensor * max(len(tensors), 1))()
        for i, (name, value) in enumerate(tensors.items()):
            value = np.ascontiguousarray(value)
            if value.dtype == np.float64:
                value = value.astype(np.float32)  # as plume detect --tensor reads '<f8'
            shape, dims = _dims(value.shape)
            keep.append(value)
            array[i].name = name.encode()
            array[i].shape = _native.Shape(_dtype_code(value.dtype), len(shape), dims)
            array[i].host_data = value.ctypes.data_as(ctypes.c_void_p)
        return array, keep

    def _shape(self, fn, i):
        shape = _native.Shape()
        _check(fn(self._handle, i, ctypes.byref(shape)))
        return shape

    @property
    def handle(self):
        if self._handle is None or self.context._handle is None:
            raise Error("PLM_ERR_INVALID_STATE", "the pipeline is closed")
        return self._handle

    def describe(self):
        """plm_pipeline_describe's text."""
        needed = ctypes.c_size_t()
        _check(lib.plm_pipeline_describe(self.handle, None, 0, ctypes.byref(needed)))
        buf = ctypes.create_string_buffer(needed.value)
        _check(lib.plm_pipeline_describe(self.handle, buf, needed.value, None))
        return buf.value.decode()

    def reset_state(self):
        """Start the state of stateful nodes (background) again from the next frame."""
        _check(lib.plm_pipeline_reset_state(self.handle))

    def run(self, *frames):
        """Run one frame (one array per pipeline input); returns the outputs, a tuple of
        numpy arrays (one array when the pipeline has one output)."""
        if len(frames) != len(self._inputs):
            raise Error("PLM_ERR_INVALID_ARG", "the pipeline takes %d input(s), %d given"
                        % (len(self._inputs), len(frames)))
        ctx, keep, held = self.context, [], []
        inputs = (_native.Tensor * max(len(frames), 1))()
        outputs = (_native.Tensor * max(len(self._outputs), 1))()
        results = [_array_of(shape) for shape in self._outputs]
        if not self._lock.acquire(blocking=False):
            raise Error("PLM_ERR_INVALID_STATE", "the pipeline is running (a run_stream "
                        "generator is open): run after it ends")
        try:
            for i, frame in enumerate(frames):
                inputs[i], array = ctx._device_tensor(_as_array(frame), keep)
                held.append(array)
            for i, result in enumerate(results):
                outputs[i], _ = ctx._device_tensor(result, keep, upload=False)
            _check(lib.plm_pipeline_run(self.handle, inputs, outputs, ctx._stream))
            if ctx.backend != "host":
                for i, result in enumerate(results):
                    _check(lib.plm_stream_memcpy(ctx._stream,
                                                 result.ctypes.data_as(ctypes.c_void_p),
                                                 outputs[i].data, result.nbytes, DEVICE_TO_HOST))
        finally:
            # Whatever was enqueued finishes before the arrays it uses can go.
            lib.plm_stream_synchronize(ctx._stream)
            ctx._release(keep)
            self._lock.release()
        _check(lib.plm_stream_synchronize(ctx._stream))
        return results[0] if len(results) == 1 else tuple(results)

    def run_stream(self, frames, depth=8):
        """Yield each frame's outputs (as run() returns them), in frame order, running
        `frames` (an iterable of arrays, or a stack whose first axis is the frames) through
        plm_pipeline_run_stream on a thread of its own; at most `depth` results wait for the
        consumer (back-pressure). The last frames' state carries on into later runs."""
        if len(self._inputs) != 1:
            raise Error("PLM_ERR_INVALID_ARG", "run_stream takes pipelines of one input")
        generator = self._stream_frames(frames, depth)
        self._generators.add(generator)
        return generator

    def _stream_frames(self, frames, depth):
        handle = self.handle
        iterator = iter(frames)
        if not self._lock.acquire(blocking=False):
            raise Error("PLM_ERR_INVALID_STATE", "the pipeline is running (another run_stream "
                        "generator is open): one at a time")
        results = queue.Queue(maxsize=depth)
        done = object()
        in_shape = self._inputs[0]
        in_type = np.dtype(BY_CODE[in_shape.dtype][1])
        in_dims = tuple(in_shape.dims[:in_shape.ndim])
        stopping = threading.Event()
        failure = []
        FAILED = -1  # PLM_ERR_INVALID_ARG: the run stops, the failure is raised here

        # A Python exception in a ctypes callback would leave its C status undefined:
        # both catch everything, keep it, and fail the run.
        def source(user, frame, inputs, end):
            try:
                if stopping.is_set():
                    end[0] = True
                    return 0
                try:
                    array = np.ascontiguousarray(_as_array(next(iterator)))
                except StopIteration:
                    end[0] = True
                    return 0
                if array.dtype != in_type or array.shape != in_dims:
                    raise Error("PLM_ERR_INVALID_ARG", "frame %d is %s %s, the pipeline's input "
                                "%s %s" % (frame, array.dtype, array.shape, in_type, in_dims))
                ctypes.memmove(inputs[0], array.ctypes.data, array.nbytes)
                return 0
            except BaseException as error:  # noqa: B902 - everything goes back to the caller
                failure.append(error)
                return FAILED

        def sink(user, frame, outputs):
            try:
                outs = []
                for i, shape in enumerate(self._outputs):
                    out = _array_of(shape)
                    ctypes.memmove(out.ctypes.data, outputs[i], out.nbytes)
                    outs.append(out)
                item = outs[0] if len(outs) == 1 else tuple(outs)
                while not stopping.is_set():  # a closed generator takes no more
                    try:
                        results.put(item, timeout=0.05)
                        break
                    except queue.Full:
                        pass
                return 0
            except BaseException as error:  # noqa: B902
                failure.append(error)
                return FAILED

        source_fn, sink_fn = _native.SOURCE_FN(source), _native.SINK_FN(sink)

        def worker():
            report = _native.RunStreamReport()
            status = lib.plm_pipeline_run_stream(handle, source_fn, sink_fn, None, None,
                                                 ctypes.byref(report))
            if status != 0 and not failure:
                failure.append(Error(lib.plm_status_str(status).decode(),
                                     lib.plm_last_error().decode()))
            while True:  # unless the consumer has gone
                try:
                    results.put(done, timeout=0.05)
                    break
                except queue.Full:
                    if stopping.is_set():
                        break

        thread = threading.Thread(target=worker, daemon=True)
        try:
            thread.start()
            while True:
                item = results.get()
                if item is done:
                    break
                yield item
        finally:
            stopping.set()  # the source ends the run, the sink stops waiting
            if thread.ident is not None and threading.current_thread() is not thread:
                thread.join()
            self._lock.release()
        if failure:
            raise failure[0]

    def close(self):
        """End its open run_stream generators, then destroy it (a pipeline of a closed
        context is gone already)."""
        for generator in list(self._generators):
            generator.close()
        if self._handle is not None and self.context._handle is not None:
            status = lib.plm_pipeline_destroy(self._handle)
            self._handle = None
            _check(status)
        self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_handle", None) is not None and self.context._handle is not None:
            lib.plm_pipeline_destroy(self._handle)
            self._handle = None


# ---- ops --------------------------------------------------------------------------------

def op(name, array, context=None, **params):
    """Run one op of plume's table on a numpy array: `name key=value ...` as the text form
    writes it (numbers, words, "3,3" pairs), a numpy array value becoming a named tensor
    (nuc's gain=, badpixel's bad=, conv2d's kernel=). A stack (N, H, W) runs frame by frame.
    Returns the op's main output (the text form's)."""
    array = _as_array(array)
    words, tensors = [name], {}
    for key, value in params.items():
        if isinstance(value, np.ndarray) or hasattr(value, "__dlpack__"):
            tensors[key] = _as_array(value)
            words.append("%s=@%s" % (key, key))
        else:
            if isinstance(value, (tuple, list)):
                value = ",".join(str(v) for v in value)
            words.append("%s=%s" % (key, value))
    frames = array if array.ndim == 3 else array[None]
    with Pipeline(" ".join(words), array.dtype, frames.shape[1:], tensors=tensors,
                  context=context, frames_in_flight=1) as pl:
        outs = [pl.run(frame) for frame in frames]
    return outs[0] if array.ndim == 2 else np.stack(outs)
