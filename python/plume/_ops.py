"""plume._ops: plume.op, one op of the table on an array, and plume.ops, a function per op.

A call builds a one-element pipeline from values (plume._schema encodes each by its
parameter's type; nothing is pasted) the first time it meets an (op, parameters, named
tensors, dtype, frame shape) on a context, and keeps it compiled in the context's cache
(the newest CACHE_SIZE), so that a repeated call costs the kernel and a few microseconds
of Python, not a parse and a compile. A stateful op (background) starts from its first
frame again on every call, as an uncached one did.

Inputs of a dtype the op does not take are converted by plume._interop.RULE (the same for
numpy arrays and other libraries' CPU tensors; strided ones are copied), results come back
as the caller's kind of array (a torch tensor for a torch tensor, through DLPack without a
copy; numpy for the rest), or into `out=`.
"""

import inspect
import re
import sys
import types
from typing import Any, Optional

import numpy as np

from . import _interop, _native
from ._common import BY_CODE, Error, InvalidState, invalid, library_error, numpy_dtype, wrong_type
from ._native import lib
from ._context import Context, Stream, default_context
from ._pipeline import Pipeline, named_regions, region_tables
from ._schema import KEY, OPS
from ._tensor import Tensor

CACHE_SIZE = 64  # compiled one-op pipelines kept per context
COMMON = ("out", "context", "stream", "as_tensor")
# What the library's messages say about an element and a key of the one-op text, and what
# a Python caller gave instead: a keyword argument.
ELEMENT = re.compile(r"^element 1 '\w+': ")
KEY_WORD = re.compile(r"\bkey '(\w+)'")


def is_array(value):
    """Whether a parameter's value is an array (a named tensor) rather than a value."""
    return (isinstance(value, np.ndarray) or hasattr(value, "__dlpack__")
            or hasattr(value, "__cuda_array_interface__"))


def slot_dtypes(table, slot):
    """The numpy dtypes an input slot of an op takes (its descriptor's dtype mask), in
    plume's dtype order."""
    mask = table.inputs[slot].dtype_mask
    return [np.dtype(np_type) for code, (_, np_type) in sorted(BY_CODE.items())
            if (mask >> code) & 1]


def caller_kind(obj):
    """The from_dlpack of the library obj's array type comes from (torch, cupy), for a
    result of the same kind; None for numpy and anything without one."""
    if isinstance(obj, np.ndarray) or not hasattr(obj, "__dlpack__"):
        return None
    module = sys.modules.get(type(obj).__module__.partition(".")[0])
    return getattr(module, "from_dlpack", None)


def _translated(error, name):
    """The library's message about the one-op text as the caller wrote the call."""
    message = KEY_WORD.sub(r"argument '\1'", ELEMENT.sub("", str(error)))
    return type(error)(error.status, "plume.ops.%s: %s" % (name, message))


class Call:
    """One call of plume.op, checked: the op's table, the text's words, the named tensors
    (converted to their slots' dtypes) and the cache key of its pipeline (the tensors'
    names, dtypes and shapes; their bytes are compared with the cached pipeline's)."""

    def __init__(self, name, params):
        self.table = OPS.get(name) if isinstance(name, str) else None
        if self.table is None or not self.table.info.in_text:
            raise invalid("unknown op %r: plume.op takes %s" % (
                name, ", ".join(n for n, o in OPS.items() if o.info.in_text)))
        self.name = name
        words, self.tensors, tensor_key = [name], {}, []
        for key, value in params.items():
            if not KEY.match(key) or key not in self.table.keys():
                raise wrong_type("plume.ops.%s() got an unexpected keyword argument %r (it "
                                 "takes %s)" % (name, key, ", ".join(self.table.keys() + list(
                                     COMMON))))
            if is_array(value):
                if key not in self.table.inputs:
                    raise wrong_type("plume.ops.%s: %s is a parameter, not an input: it takes "
                                     "no array" % (name, key))
                convert = _interop.Convert(slot_dtypes(self.table, key),
                                           "plume.ops.%s: %s" % (name, key))
                array = np.ascontiguousarray(convert(_interop.host_array(value)))
                self.tensors[key] = array
                words.append("%s=@%s" % (key, key))
                tensor_key.append((key, array.dtype.str, array.shape))
            else:
                words.append("%s=%s" % (key, self.table.encode(key, value)))
        self.text = " ".join(words)
        self.tensor_key = tuple(tensor_key)
        main = next(iter(self.table.inputs))
        self.convert = _interop.Convert(slot_dtypes(self.table, main),
                                        "plume.ops.%s: array" % name)

    def same_tensors(self, pl):
        """Whether a cached pipeline was made from named tensors of the same bytes (a
        comparison at memory speed: no hash, no copy)."""
        made = pl._op_tensors
        return all(np.array_equal(made[k].reshape(-1).view(np.uint8),
                                  v.reshape(-1).view(np.uint8))
                   for k, v in self.tensors.items())

    def pipeline(self, context, dtype, shape):
        """The compiled pipeline for frames of dtype and shape: the context's cached one,
        or a new one (cached unless the cached one is running on another thread; the
        caller closes what is not cached)."""
        cache = context._op_cache
        key = (self.text, self.tensor_key, dtype.str, shape)
        pl = cache.get(key)
        if pl is not None and not self.same_tensors(pl):
            del cache[key]  # the same names, shapes and dtypes, other values: made again
            pl.close()
            pl = None
        if pl is not None and pl._handle is not None and pl._busy is None:
            cache.move_to_end(key)
            if self.table.info.stateful:
                pl.reset_state()
            return pl, True
        try:
            pl = Pipeline(self.text, dtype, shape, tensors=self.tensors, context=context,
                          frames_in_flight=1)
        except Error as error:
            raise _translated(error, self.name) from None
        if key in cache and cache[key]._busy is not None:
            return pl, False
        pl._op_tensors = {k: v.copy() for k, v in self.tensors.items()}  # its own copies
        cache[key] = pl
        while len(cache) > CACHE_SIZE:
            cache.popitem(last=False)[1].close()
        return pl, True


def _outputs(context, stream, out, dtype, shape, name):
    """The main output's Tensor: `out`'s memory (checked: the right dtype and shape,
    compact, plume may write it), or a new one."""
    if out is None:
        return Tensor.empty(context, stream, dtype, shape)
    what = "plume.ops.%s: out" % name
    if isinstance(out, np.ndarray):
        if out.dtype != dtype or out.shape != shape:
            raise invalid("%s is %s %s; the result is %s %s" % (what, out.dtype, out.shape,
                                                                 dtype, shape))
        if not out.flags.c_contiguous or not out.flags.writeable:
            raise invalid("%s must be a compact row-major, writeable array (%s)"
                          % (what, "read-only" if not out.flags.writeable else "strided"))
        if context.backend != "host":
            raise invalid("%s is a numpy array but the context is %s: give an array of its "
                          "device, or no out=" % (what, context.backend))
        return Tensor(context, stream, _interop.wrap_host(context, out), out)
    if not (hasattr(out, "__dlpack__") or hasattr(out, "__cuda_array_interface__")):
        raise wrong_type("%s is %s, not an array" % (what, type(out).__name__))
    operand = _interop.operand(context, out, stream)
    if operand.tensor is None:
        raise invalid("%s is not memory of the context's device (%s): give an array of its "
                      "device, or no out=" % (what, context.backend))
    if operand.dtype != dtype or operand.shape != shape:
        operand.release()
        raise invalid("%s is %s %s; the result is %s %s" % (what, operand.dtype, operand.shape,
                                                             dtype, shape))
    return Tensor(context, stream, operand.tensor, keep=operand)


def hashable(params):
    """The parameters as a key that tells every value and its type apart (1, 1.0 and True
    are one dict key otherwise), or None when one is not hashable (an array)."""
    try:  # in the call's order: another order is another key, a miss and no more
        key = tuple([(k, type(v), v) for k, v in params.items()])
        hash(key)
    except TypeError:
        return None
    return key


class FastPath:
    """A repeated call's marshalling, made once: a cached pipeline's ctypes arguments with
    only the data pointers to fill in, for a compact numpy array of the dtype and shape the
    pipeline was made for on a host context (only those are remembered), and numpy
    results. Everything else (checks, conversions, out=, other kinds of array) goes the
    long way, through Call."""

    def __init__(self, pipeline, tensor, stream, outputs, written):
        self.pipeline, self.stream = pipeline, stream
        self.inputs = (_native.Tensor * 1)(tensor)  # copies of a run's plm_tensors
        self.outputs = (_native.Tensor * len(written))(*written)
        self.results = outputs  # (dtype, shape) of each output
        self.itemsize = numpy_dtype(tensor.dtype).itemsize

    def run(self, array):
        """The results, or None when `array` cannot take this path (strided, misaligned;
        the pipeline closed or held by another thread): the caller takes the long path."""
        pl = self.pipeline
        data = array.ctypes.data
        if (not array.flags.c_contiguous or data % self.itemsize or pl._handle is None
                or self.stream._handle is None):
            return None
        results = [np.empty(shape, dtype) for dtype, shape in self.results]
        try:
            pl._claim("run")  # before the pointers: the arguments are this call's alone
        except InvalidState:
            return None
        stream = self.stream._handle
        try:
            self.inputs[0].data = data
            for i, result in enumerate(results):
                self.outputs[i].data = result.ctypes.data
            status = lib.plm_pipeline_run(pl._handle, self.inputs, self.outputs, stream)
        finally:
            lib.plm_stream_synchronize(stream)
            pl._release()
        if status != 0:
            raise library_error(status)
        return results[0] if len(results) == 1 else tuple(results)


def op(name: str, array: Any, *, out: Any = None, context: Optional[Context] = None,
       stream: Optional[Stream] = None, as_tensor: bool = False, **params: Any) -> Any:
    """Run one op of plume's table on `array`: a numpy array, or any other library's
    array (__dlpack__, __cuda_array_interface__); (N, H, W) runs frame by frame. The
    parameters are the text form's keys, each a value of its type (plume._schema); an
    array given to an input by name becomes a named tensor (nuc's gain=, conv2d's kernel=).

    Returns the op's outputs (the text form's: the main one, then label's count, segment's
    ...; a tuple when there are several), each as the caller's kind of array: a torch (or
    CuPy) tensor for one, through DLPack without a copy, else a numpy array; a stack's
    results are stacks. With out= the main result is written into `out` (the result's
    dtype and shape, memory of the context's device) and `out` is returned in its place;
    with as_tensor=True plume.Tensor results. Inputs of a dtype the op does not
    take are converted by the rule in docs/python.md ("Dtypes"). Errors are plume.Error's
    subclasses (ValueError, TypeError) naming the argument."""
    context = context or default_context()
    if out is None and stream is None and not as_tensor and isinstance(array, np.ndarray):
        fast = context._op_fast.get((name, hashable(params), array.dtype, array.shape))
        if fast is not None:
            results = fast.run(array)
            if results is not None:
                return results
    call = Call(name, params)
    stream = context.stream_of(stream)
    source = _interop.operand(context, array, stream, call.convert)
    try:
        stack = len(source.shape) == 3
        shape = source.shape[stack:]
        pl, cached = call.pipeline(context, source.dtype, shape)
        try:
            outputs = pl._output_shapes()
            count = source.shape[0] if stack else 1
            results = [_outputs(context, stream, out if i == 0 else None, dtype,
                                (count,) + each if stack else each, name)
                       for i, (dtype, each) in enumerate(outputs)]
            for i in range(count):
                frame = source.frame(i) if stack else source
                written = [r.frame(i) if stack else r.tensor for r in results]
                try:
                    pl._run_into([frame], written, stream)
                except InvalidState:
                    raise
                except Error as error:
                    raise _translated(error, name) from None
        finally:
            if not cached:
                pl.close()
    finally:
        source.release()
    if (not stack and out is None and not as_tensor and cached and isinstance(array, np.ndarray)
            and source.dtype == array.dtype and not call.tensors
            and not call.table.info.stateful and context.backend == "host"):
        remember(context, (name, hashable(params), array.dtype, array.shape),
                 FastPath(pl, source.tensor, stream, outputs, [r.tensor for r in results]))
    if as_tensor:
        return results[0] if len(results) == 1 else tuple(results)
    kind = caller_kind(array)
    results = [out if i == 0 and out is not None else r.numpy() if kind is None else kind(r)
               for i, r in enumerate(results)]
    if kind is None and not stack:
        results = named_regions(results, region_tables(pl._outputs))
    return results[0] if len(results) == 1 else tuple(results)


def remember(context, key, fast):
    """Keep a FastPath for the key (unless a parameter is unhashable)."""
    if key[1] is None:
        return
    if len(context._op_fast) >= 4 * CACHE_SIZE:  # some of them closed pipelines'
        context._op_fast.clear()
    context._op_fast[key] = fast


def _describe(table):
    """The docstring and keyword names of an op (plume._schema.Op) from its descriptor."""
    lines = [table.info.summary.decode(), "", table.info.details.decode(), ""]
    for name in table.by_name():
        slot = table.inputs[name]
        lines.append("%s (array of %s%s)" % (name, slot.dtypes.decode(),
                                             ", optional" if slot.optional else ""))
    for name, param in table.params.items():
        kind = param.type.decode()
        if table.choices[name]:
            kind = "one of " + ", ".join(table.choices[name])
        elif param.form:
            kind = "pair " + param.form.decode()
        if param.required:
            note = "required"
        elif param.default_text:
            note = "default " + param.default_text.decode()
        else:
            note = "optional"
        if param.required_for_float:
            note += "; required for f32 input"
        lines.append("%s (%s, %s): %s" % (name, kind, note, param.help.decode()))
    main = table.inputs[next(iter(table.inputs))]
    lines += ["", "array: %s (others converted: plume.op's rule)" % main.dtypes.decode(),
              "out, context, stream, as_tensor: as plume.op."]
    return "\n".join(lines), table.keys()


def _function(name, doc, keys):
    """The function of op `name`: plume.op with the keywords given (None: the library's
    default), under the op's name, docstring and signature."""
    def run(array, **params):
        if any(v is None for v in params.values()):  # a keyword left to its default
            params = {k: v for k, v in params.items() if v is not None}
        return op(name, array, **params)

    run.__name__ = run.__qualname__ = name
    run.__module__ = "plume.ops"
    run.__doc__ = doc
    run.__signature__ = inspect.Signature(
        [inspect.Parameter("array", inspect.Parameter.POSITIONAL_ONLY)]
        + [inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, default=None)
           for key in keys + list(COMMON)])
    return run


OPS_DOC = """plume.ops: every operation of plume's table that can start a text pipeline, as a
function made at import from the library's descriptors (plume/op_info.h):

    mask = plume.ops.threshold(frame, value=3500)
    flat = plume.ops.nuc(frames, gain=gain, offset=offset)
    help(plume.ops.entropy)            # the library's summary, parameters and defaults

Each is plume.op(name, array, **params). The module holds the functions and nothing else."""


def make_module():
    """plume.ops: a module of the op functions alone (no helper, no import in it)."""
    module = types.ModuleType("plume.ops", OPS_DOC)
    names = []
    for name, table in OPS.items():
        if table.info.in_text:
            setattr(module, name, _function(name, *_describe(table)))
            names.append(name)
    module.__all__ = names
    return module


ops = make_module()
sys.modules["plume.ops"] = ops
