"""plume._ops: plume.op, one op of the table on an array, as a one-element pipeline."""

import numpy as np

from . import _interop
from ._context import default_context
from ._pipeline import Pipeline


def is_array(value):
    """Whether a parameter's value is an array (a named tensor) rather than text."""
    return (isinstance(value, np.ndarray) or hasattr(value, "__dlpack__")
            or hasattr(value, "__cuda_array_interface__"))


def op(name, array, context=None, stream=None, as_tensor=False, **params):
    """Run one op of plume's table on an array (anything plume._interop takes: numpy,
    __dlpack__, __cuda_array_interface__): `name key=value ...` as the text form writes it
    (numbers, words, "3,3" pairs), a host array value becoming a named tensor (nuc's
    gain=, badpixel's bad=, conv2d's kernel=). A stack (N, H, W) runs frame by frame.
    Returns the op's main output (the text form's): a numpy array (a stack's results
    stacked), or with as_tensor=True a plume.Tensor (a stack's: a list of them)."""
    context = context or default_context()
    stream = context.stream_of(stream)
    words, tensors = [name], {}
    for key, value in params.items():
        if is_array(value):
            tensors[key] = _interop.host_array(value)
            words.append("%s=@%s" % (key, key))
        else:
            if isinstance(value, (tuple, list)):
                value = ",".join(str(v) for v in value)
            words.append("%s=%s" % (key, value))
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
