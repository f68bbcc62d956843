"""plume.ops: every operation of plume's table as a function, made at import from the
library's descriptors (plume/op_info.h), so that nothing here names an op:

    mask = plume.ops.threshold(frame, value=3500)
    flat = plume.ops.nuc(frames, gain=gain, offset=offset)
    help(plume.ops.entropy)            # the library's summary, parameters and defaults

Each is plume.op(name, array, **params): the parameters are the text form's keys
(defaults, ranges and messages the library's), inputs given by name (nuc's gain) take
arrays, and context=, stream= and as_tensor= work as for plume.op. The ops that cannot
start a text pipeline (the fused op the planner makes; regions, which reads label's
count) are not here.
"""

import ctypes
import inspect

from ._common import check
from ._native import lib
from ._ops import op

__all__ = []

_COMMON = ("context", "stream", "as_tensor")


def _describe(index, info):
    """The docstring and keyword names of op `index` from its descriptor."""
    lines = [info.summary.decode(), ""]
    names = []
    for i in range(info.input_count):
        slot = _filled(lib.plm_op_input_info_get, index, i)
        if slot.by_name:
            names.append(slot.name.decode())
            lines.append("%s (array of %s%s)" % (slot.name.decode(), slot.dtypes.decode(),
                                                 ", optional" if slot.optional else ""))
    for i in range(info.param_count):
        param = _filled(lib.plm_op_param_info_get, index, i)
        names.append(param.name.decode())
        kind = param.type.decode()
        if param.choices:
            choices = []
            while param.choices[len(choices)]:
                choices.append(param.choices[len(choices)].decode())
            kind = "one of " + ", ".join(choices)
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
        lines.append("%s (%s, %s): %s" % (param.name.decode(), kind, note,
                                           param.help.decode()))
    lines += ["", "context, stream, as_tensor: as plume.op."]
    return "\n".join(lines), names


def _filled(fn, *args):
    """The struct a plm_op_*_info_get fills."""
    out = fn.argtypes[-1]._type_()
    check(fn(*args, ctypes.byref(out)))
    return out


def _make(name, doc, keys):
    """The function of op `name`: plume.op with the keywords given (None: the library's
    default), under the op's name, docstring and signature."""
    def run(array, **params):
        return op(name, array, **{k: v for k, v in params.items() if v is not None})

    run.__name__ = run.__qualname__ = name
    run.__doc__ = doc
    run.__signature__ = inspect.Signature(
        [inspect.Parameter("array", inspect.Parameter.POSITIONAL_ONLY)]
        + [inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, default=None)
           for key in keys + list(_COMMON)])
    return run


def _make_all():
    for index in range(lib.plm_op_count()):
        info = _filled(lib.plm_op_info_get, index)
        if info.in_text:
            name = info.name.decode()
            globals()[name] = _make(name, *_describe(index, info))
            __all__.append(name)


_make_all()
