"""plume._pipeline: pipelines from plm_pipeline_parse's text form or a preset.

Pipeline.run(frame) runs one frame on a stream (the context's default, or `stream=`)
and returns when its results are there: numpy arrays by default, as the module always
did, or plume.Tensor results with `as_tensor=True` (on cuda they stay on the device and
leave through DLPack without a copy). Frames are anything plume._interop takes (numpy,
__dlpack__, __cuda_array_interface__). run_stream(frames) streams host frames through
plm_pipeline_run_stream on a thread of its own.

Threads and interrupts. One run at a time: run() and an open run_stream generator hold the
pipeline, and a second run from any thread is refused with what holds it ("run() on another
thread", "a run_stream generator is open"). run_stream's frames are read from the caller's
iterable on a feeder thread of their own, one frame ahead of plume, so that a source that
blocks (a camera waiting for a frame) never holds the run: KeyboardInterrupt (Ctrl-C) comes
out of the consumer's loop at once, the run stops at its next frame boundary, and the
pipeline is free again as soon as plume's run has returned (a blocked feeder stays in the
iterator until it returns, and then takes nothing more from it). close() (and the
context's) from another thread during run_stream stops the run, waits for plume to return,
and destroys the pipeline; the consumer's loop then raises plume.Error ("the pipeline was
closed during run_stream").
"""

import ctypes
import queue
import re
import threading
import weakref
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from . import _interop, _native
from ._common import (Error, check, dims, dtype_code, error, integer, invalid, library_error,
                      numpy_dtype, tensor_shape)
from ._context import Context, Stream, default_context
from ._native import lib
from ._tensor import Tensor


INPUTS = re.compile(r"\binputs\[(\d+)\]")

# ---- regions tables -------------------------------------------------------------------------

def _region_fields():
    names, column = [], 0
    while lib.plm_region_column_name(column) is not None:
        names.append(lib.plm_region_column_name(column).decode())
        column += 1
    return names


# A regions table's row as a numpy record: label, area, min_row, ..., wcentroid_col
# (plm_region_column_name), float64 each, as the C table's columns are.
REGION = np.dtype([(name, np.float64) for name in _region_fields()])


def region_tables(outputs):
    """The indices of the outputs (plm_shape) that are regions tables: f64 (capacity,
    columns) followed by its count, i32 (1,) (the text form's regions and segment)."""
    found = []
    for i in range(len(outputs) - 1):
        table, count = outputs[i], outputs[i + 1]
        if (numpy_dtype(table.dtype) == np.float64 and table.ndim == 2
                and table.dims[1] == len(REGION) and numpy_dtype(count.dtype) == np.int32
                and tensor_shape(count) == (1,)):
            found.append(i)
    return found


def named_regions(arrays, tables):
    """arrays (numpy outputs) with each regions table as a structured array of its
    regions alone (count rows, REGION's fields), a view of the table's memory."""
    arrays = list(arrays)
    for i in tables:
        count = min(int(arrays[i + 1].reshape(-1)[0]), arrays[i].shape[0])
        arrays[i] = arrays[i].view(REGION).reshape(-1)[:count]
    return arrays


# ---- presets ------------------------------------------------------------------------------

def presets() -> List[Dict[str, Any]]:
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
    raise invalid("preset %r is not one of %s"
                  % (name, ", ".join(p["name"] for p in presets())))


def _checked_text(text):
    """The pipeline's text as the user wrote it: a str without NUL (C would end it there)."""
    if not isinstance(text, str):
        raise invalid("the pipeline's text is %r (%s), not a str" % (text, type(text).__name__))
    if "\0" in text:
        raise invalid("the pipeline's text %r has a NUL character at %d: C would end the "
                      "text there" % (text, text.index("\0")))
    return text


class Pipeline:
    """A compiled pipeline from plm_pipeline_parse's text form (or a preset) for frames of
    `dtype` and `shape`; `tensors` maps the text's @NAME to numpy arrays (copied into the
    pipeline). run(frame) gives the outputs as numpy arrays (or plume.Tensor results);
    run_stream(frames) yields them frame by frame with `frames_in_flight` frames in
    flight."""

    def __init__(self, text: Optional[str] = None, dtype: DTypeLike = "u16",
                 shape: Optional[Sequence[int]] = None, *, preset: Optional[str] = None,
                 tensors: Optional[Mapping[str, ArrayLike]] = None,
                 context: Optional[Context] = None, frames_in_flight: int = 3) -> None:
        if (text is None) == (preset is None):
            raise invalid("give the pipeline's text or a preset, not both")
        if shape is None:
            raise invalid("shape is required: the frames' (H, W)")
        self.text = _preset_text(preset) if preset else _checked_text(text)
        frames_in_flight = integer("frames_in_flight", frames_in_flight)
        self.context = context or default_context()
        frame_shape, frame_dims = dims(shape)
        named, keep = self._named(tensors or {})
        handle = ctypes.c_void_p()
        check(lib.plm_pipeline_parse_with_tensors(
            self.context.handle, self.text.encode(), dtype_code(dtype), len(frame_shape),
            frame_dims, named, len(keep), ctypes.byref(handle)))
        self._handle = handle
        self._generators = weakref.WeakSet()  # run_stream generators still open
        self._streams_running = {}            # their runs while plume runs: stop -> closed
        self._state = threading.Condition()   # guards _busy
        self._busy = None                     # what holds the pipeline: None or a BUSY key
        try:
            config = _native.PlanConfig(frames_in_flight=frames_in_flight)
            check(lib.plm_pipeline_compile(handle, ctypes.byref(config)))
            n_in, n_out = ctypes.c_int(), ctypes.c_int()
            check(lib.plm_pipeline_io_count(handle, ctypes.byref(n_in), ctypes.byref(n_out)))
            self._inputs = [self._shape(lib.plm_pipeline_input_shape, i)
                            for i in range(n_in.value)]
            self._outputs = [self._shape(lib.plm_pipeline_output_shape, i)
                             for i in range(n_out.value)]
            self._tables = region_tables(self._outputs)
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
            if not isinstance(name, str) or "\0" in name:
                raise invalid("tensor name %r is not a str without NUL" % (name,))
            value = np.ascontiguousarray(value)
            if value.dtype == np.float64:
                value = value.astype(np.float32)  # as plume detect --tensor reads '<f8'
            shape, shape_dims = dims(value.shape, "tensor %r's shape" % name)
            keep.append(value)
            array[i].name = name.encode()
            array[i].shape = _native.Shape(dtype_code(value.dtype), len(shape), shape_dims)
            array[i].host_data = value.ctypes.data_as(ctypes.c_void_p)
        return array, keep

    def _shape(self, fn, i):
        shape = _native.Shape()
        check(fn(self._handle, i, ctypes.byref(shape)))
        return shape

    @property
    def handle(self):
        if self._handle is None or self.context._handle is None:
            raise error("PLM_ERR_INVALID_STATE", "the pipeline is closed")
        return self._handle

    def describe(self) -> str:
        """plm_pipeline_describe's text."""
        needed = ctypes.c_size_t()
        check(lib.plm_pipeline_describe(self.handle, None, 0, ctypes.byref(needed)))
        buf = ctypes.create_string_buffer(needed.value)
        check(lib.plm_pipeline_describe(self.handle, buf, needed.value, None))
        return buf.value.decode()

    def reset_state(self) -> None:
        """Start the state of stateful nodes (background) again from the next frame."""
        check(lib.plm_pipeline_reset_state(self.handle))

    BUSY = {"run": "run() on another thread",
            "run_stream": "a run_stream generator is open",
            "closed": "it is closed"}

    def _claim(self, kind):
        """Hold the pipeline for a run of `kind` ("run", "run_stream"), or raise plume.Error
        saying what holds it."""
        with self._state:
            if self._busy is not None:
                raise error("PLM_ERR_INVALID_STATE", "the pipeline is running (%s): one run at "
                            "a time; run after it ends" % self.BUSY[self._busy]
                            if self._busy != "closed" else "the pipeline is closed")
            self._busy = kind

    def _release(self):
        with self._state:
            if self._busy != "closed":
                self._busy = None
            self._state.notify_all()

    def run(self, *frames: Any, stream: Optional[Stream] = None,
            as_tensor: bool = False) -> Any:
        """Run one frame (one array per pipeline input) on `stream` (a plume Stream of the
        pipeline's context; None: its default stream) and wait for it. Returns the outputs,
        a tuple (one value when the pipeline has one output): numpy arrays, a regions table
        as a structured array of its regions (count rows; fields label, area, min_row, ...,
        centroid_row, centroid_col, ...: plume.REGION), or plume.Tensor results with
        as_tensor=True (the table as plume wrote it: capacity rows of 12 columns)."""
        if len(frames) != len(self._inputs):
            raise invalid("the pipeline takes %d input(s), %d given"
                          % (len(self._inputs), len(frames)))
        ctx = self.context
        stream = ctx.stream_of(stream)
        results = [Tensor.empty(ctx, stream, numpy_dtype(shape.dtype), tensor_shape(shape))
                   for shape in self._outputs]
        try:
            self._run_into(frames, [result.tensor for result in results], stream)
        except Error as failure:  # the library's inputs[i] are run's frames[i]
            raise type(failure)(failure.status, INPUTS.sub(r"frames[\1]", str(failure))) from None
        if not as_tensor:
            results = named_regions([result.numpy() for result in results], self._tables)
        return results[0] if len(results) == 1 else tuple(results)

    def _output_shapes(self):
        """The outputs' (numpy dtype, shape), in order."""
        return [(numpy_dtype(shape.dtype), tensor_shape(shape)) for shape in self._outputs]

    def _run_into(self, frames, outputs, stream):
        """Run one frame: `frames` (one per input: arrays as run() takes them, or
        plume._interop Operands) into `outputs` (one plm_tensor per output, memory of the
        context's device that plume may write) on `stream` (a Stream of the context), and
        wait for it. What plume.op runs, with the results' memory its own."""
        ctx = self.context
        self._claim("run")
        operands, staged = [], []
        try:
            inputs = (_native.Tensor * max(len(frames), 1))()
            written = (_native.Tensor * max(len(self._outputs), 1))(*outputs)
            for i, frame in enumerate(frames):
                operands.append(_interop.operand(ctx, frame, stream))
                inputs[i] = operands[-1].device_tensor(ctx, stream, staged)
            status = lib.plm_pipeline_run(self.handle, inputs, written, stream.handle)
            if status != 0:
                raise library_error(status)
        finally:
            # Whatever was enqueued finishes before the memory it uses can go.
            lib.plm_stream_synchronize(stream.handle)
            for tensor in staged:
                lib.plm_tensor_free(ctx.pool(), stream.handle, ctypes.byref(tensor))
            for operand in operands:
                operand.release()
            self._release()
        check(lib.plm_stream_synchronize(stream.handle))

    def run_stream(self, frames: Iterable[Any], depth: int = 8,
                   batch: int = 1) -> Iterator[Any]:
        """Yield each frame's outputs (as run() returns them), in frame order, running
        `frames` (an iterable of arrays, or a stack whose first axis is the frames) through
        plm_pipeline_run_stream on a thread of its own; at most `depth` results wait for the
        consumer (back-pressure). The last frames' state carries on into later runs.
        Frames are read on a feeder thread, one ahead of plume (the module's docstring:
        Ctrl-C and a blocked iterable). batch=N (a pipeline made for (N, H, W) stacks) runs
        N frames a launch per step (plm_run_stream_options.batch): each frame is still one
        (H, W) array in and its own outputs out, the same as one frame at a time."""
        if len(self._inputs) != 1:
            raise invalid("run_stream takes pipelines of one input")
        depth = integer("depth", depth, 1)
        batch = integer("batch", batch, 1)
        generator = self._stream_frames(frames, depth, batch)
        self._generators.add(generator)
        return generator

    def _stream_frames(self, frames, depth, batch):
        handle = self.handle
        iterator = iter(frames)
        self._claim("run_stream")
        results = queue.Queue(maxsize=depth)
        fed = queue.Queue(maxsize=1)  # the feeder's frames, one ahead of plume
        done, end_of_frames = object(), object()
        in_shape = self._inputs[0]
        in_type, in_dims = numpy_dtype(in_shape.dtype), tensor_shape(in_shape)
        # A batch's tensors are stacks of N; the source and sink see one frame of each.
        per_frame = (lambda dims_: tuple(dims_)[1:]) if batch > 1 else tuple
        in_dims = per_frame(in_dims)
        options = lib.plm_run_stream_options_default()
        options.batch = batch
        stopping = threading.Event()  # set: the run ends at its next frame boundary
        closed = []                   # close() stopped it
        failure = []
        FAILED = -1  # PLM_ERR_INVALID_ARG: the run stops, the failure is raised here
        WAIT = 0.05  # seconds between looks at `stopping` while a queue is full or empty

        def put(into, item):
            """Put item unless the run stops first; whether it was put."""
            while not stopping.is_set():
                try:
                    into.put(item, timeout=WAIT)
                    return True
                except queue.Full:
                    pass
            return False

        def feeder():
            # The caller's iterable, which may block for ever (a camera): nothing of the
            # run waits on it except through `fed`, which the source leaves when stopping.
            try:
                for frame in iterator:
                    if not put(fed, np.ascontiguousarray(_interop.host_array(frame))):
                        return
                put(fed, end_of_frames)
            except BaseException as error:  # noqa: B902 - everything goes back to the caller
                put(fed, (failure, error))

        # A Python exception in a ctypes callback would leave its C status undefined:
        # both catch everything, keep it, and fail the run.
        def source(user, frame, inputs, end):
            try:
                item = None
                while item is None:
                    if stopping.is_set():
                        end[0] = True
                        return 0
                    try:
                        item = fed.get(timeout=WAIT)
                    except queue.Empty:
                        pass
                if item is end_of_frames:
                    end[0] = True
                    return 0
                if isinstance(item, tuple) and item[0] is failure:
                    raise item[1]
                array = item
                if array.dtype != in_type or array.shape != in_dims:
                    raise invalid("frame %d is %s %s, the pipeline's input %s %s"
                                  % (frame, array.dtype, array.shape, in_type, in_dims))
                ctypes.memmove(inputs[0], array.ctypes.data, array.nbytes)
                return 0
            except BaseException as error:  # noqa: B902
                failure.append(error)
                return FAILED

        def sink(user, frame, outputs):
            try:
                outs = []
                for i, shape in enumerate(self._outputs):
                    out = np.empty(per_frame(tensor_shape(shape)), numpy_dtype(shape.dtype))
                    ctypes.memmove(out.ctypes.data, outputs[i], out.nbytes)
                    outs.append(out)
                outs = named_regions(outs, self._tables)
                put(results, outs[0] if len(outs) == 1 else tuple(outs))
                return 0  # a stopped run's results are dropped
            except BaseException as error:  # noqa: B902
                failure.append(error)
                return FAILED

        source_fn, sink_fn = _native.SOURCE_FN(source), _native.SINK_FN(sink)

        def worker():
            # Holds the pipeline until plume's run has returned, whatever the consumer
            # does meanwhile (an interrupted join included): it frees it itself.
            try:
                report = _native.RunStreamReport()
                status = lib.plm_pipeline_run_stream(handle, source_fn, sink_fn, None,
                                                     ctypes.byref(options),
                                                     ctypes.byref(report))
                if status != 0 and not failure:
                    failure.append(library_error(status))
            finally:
                self._streams_running.pop(stopping, None)
                self._release()
            if not put(results, done):
                # Stopped: a consumer may still wait (close() from another thread), or be
                # gone; the stopped run's results make room for the end.
                while True:
                    try:
                        results.put_nowait(done)
                        break
                    except queue.Full:
                        try:
                            results.get_nowait()
                        except queue.Empty:
                            pass

        thread = threading.Thread(target=worker, daemon=True, name="plume run_stream")
        self._streams_running[stopping] = closed
        try:
            thread.start()
        except BaseException:
            self._streams_running.pop(stopping, None)
            self._release()
            raise
        threading.Thread(target=feeder, daemon=True, name="plume run_stream frames").start()
        try:
            while True:
                item = results.get()
                if item is done:
                    break
                yield item
        finally:
            stopping.set()  # the source ends the run, the sink and the feeder stop waiting
            if threading.current_thread() is not thread:
                thread.join()  # prompt: nothing of the run waits on the caller's iterable
        if closed:
            raise error("PLM_ERR_INVALID_STATE", "the pipeline was closed during run_stream")
        if failure:
            raise failure[0]

    def close(self) -> None:
        """End its open run_stream generators (one iterated on another thread: stop its
        run, whose consumer then raises plume.Error), wait for a run() on another thread,
        then destroy it (a pipeline of a closed context is gone already)."""
        for stopping, closed in list(self._streams_running.items()):
            closed.append(True)
            stopping.set()
        for generator in list(self._generators):
            try:
                generator.close()
            except ValueError:  # "generator already executing": on another thread, stopped
                pass
        with self._state:
            while self._busy not in (None, "closed"):  # plume's run returns at the next frame
                self._state.wait()
            self._busy = "closed"
        if self._handle is not None and self.context._handle is not None:
            status = lib.plm_pipeline_destroy(self._handle)
            self._handle = None
            check(status)
        self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_handle", None) is not None and self.context._handle is not None:
            lib.plm_pipeline_destroy(self._handle)
            self._handle = None


