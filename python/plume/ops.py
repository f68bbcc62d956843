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

import inspect

from ._ops import op
from ._schema import OPS

__all__ = []

_COMMON = ("context", "stream", "as_tensor")


def _describe(table):
    """The docstring and keyword names of an op (plume._schema.Op) from its descriptor."""
    lines = [table.info.summary.decode(), ""]
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
    lines += ["", "context, stream, as_tensor: as plume.op."]
    return "\n".join(lines), table.keys()


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
    for name, table in OPS.items():
        if table.info.in_text:
            globals()[name] = _make(name, *_describe(table))
            __all__.append(name)


_make_all()
