"""plume._ops: plume.op, one op of the table on an array, as a one-element pipeline built
from values (plume._schema encodes each by its parameter's type; nothing is pasted)."""

import numpy as np

from . import _interop
from ._common import invalid
from ._context import default_context
from ._pipeline import Pipeline
from ._schema import KEY, OPS


def is_array(value):
    """Whether a parameter's value is an array (a named tensor) rather than a value."""
    return (isinstance(value, np.ndarray) or hasattr(value, "__dlpack__")
            or hasattr(value, "__cuda_array_interface__"))


def op(name, array, context=None, stream=None, as_tensor=False, **params):
    """Run one op of plume's table on an array (anything plume._interop takes: numpy,
    __dlpack__, __cuda_array_interface__). The parameters are the text form's keys, each a
    value of its type (plume._schema: ints, numbers, choices, (A, B) pairs, "auto" or
    (LO, HI) ranges); an array given to an input by name becomes a named tensor (nuc's
    gain=, badpixel's bad=, conv2d's kernel=). A stack (N, H, W) runs frame by frame.
    Returns the op's main output (the text form's): a numpy array (a stack's results
    stacked), or with as_tensor=True a plume.Tensor (a stack's: a list of them).
    plume.Error names an unknown op or key, and a value not of its parameter's type."""
    table = OPS.get(name) if isinstance(name, str) else None
    if table is None or not table.info.in_text:
        raise invalid("unknown op %r: plume.op takes %s" % (
            name, ", ".join(n for n, o in OPS.items() if o.info.in_text)))
    context = context or default_context()
    stream = context.stream_of(stream)
    words, tensors = [name], {}
    for key, value in params.items():
        if not KEY.match(key) or key not in table.keys():
            raise invalid("%s: unknown key %r (it takes %s)"
                          % (name, key, ", ".join(table.keys()) or "no parameters"))
        if is_array(value):
            if key not in table.inputs:
                raise invalid("%s: %s is a parameter, not an input: it takes no array"
                              % (name, key))
            tensors[key] = _interop.host_array(value)
            words.append("%s=@%s" % (key, key))
        else:
            words.append("%s=%s" % (key, table.encode(key, value)))
    source = _interop.operand(context, array, stream)
    try:
        stack = len(source.shape) == 3
        frames = [source.frame(i) for i in range(source.shape[0])] if stack else [source]
        with Pipeline(" ".join(words), source.dtype, source.shape[stack:], tensors=tensors,
                      context=context, frames_in_flight=1) as pl:
            outs = [pl.run(frame, stream=stream, as_tensor=as_tensor) for frame in frames]
    finally:
        source.release()
    if not stack:
        return outs[0]
    return outs if as_tensor else np.stack(outs)
