"""plume._schema: the op table as the library describes it (plume/op_info.h), read once,
and the checked encoding of Python values into the text form's tokens.

plume.op builds a one-element pipeline from values, never by pasting them into text: each
value is encoded by its parameter's type in the descriptor, and every token it can give is
made of digits, letters, '.', '+', '-', ':' and ',' alone, so that no value can add a key, an
element ('!'), a tensor ('@') or cut the text (NUL). The encodings:
  int       an int or numpy integer (not a bool, not a float);
  number    an int, float or numpy number, finite (not a bool);
  choice    one of the choices, as a str (an int for the digit choices: connectivity=4);
  pair      two integers (a tuple or list), or a word the op reads there (pad="same");
  range     "auto", or two finite numbers (LO, HI);
and the inputs given by name (nuc's gain, conv2d's kernel) take arrays, which become the
pipeline's named tensors, or an inline spec ("box:3", "gauss:5:1.5") or a flat sequence of
numbers, which the library takes where the op reads one (conv2d's kernel) and refuses
elsewhere. The library checks the ranges and says what is wrong.
"""

import ctypes
import math
import numbers
import re

from ._common import check, invalid, wrong_type
from ._native import lib

WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
KERNEL_SPEC = re.compile(r"[a-z]+(:[0-9.eE+-]+)+\Z")
KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def filled(fn, *args):
    """The struct a plm_op_*_info_get fills."""
    out = fn.argtypes[-1]._type_()
    check(fn(*args, ctypes.byref(out)))
    return out


class Op:
    """One op of the table: `info` (plm_op_info), `inputs` and `params` (their infos by
    name), `choices` (a param's choices, by name)."""

    def __init__(self, index):
        self.index = index
        self.info = filled(lib.plm_op_info_get, index)
        self.name = self.info.name.decode()
        self.inputs = {}
        for i in range(self.info.input_count):
            slot = filled(lib.plm_op_input_info_get, index, i)
            self.inputs[slot.name.decode()] = slot
        self.params, self.choices = {}, {}
        for i in range(self.info.param_count):
            param = filled(lib.plm_op_param_info_get, index, i)
            name = param.name.decode()
            self.params[name] = param
            self.choices[name] = []
            while param.choices and param.choices[len(self.choices[name])]:
                self.choices[name].append(param.choices[len(self.choices[name])].decode())

    def by_name(self):
        """The inputs the text form gives by name (name=@TENSOR)."""
        return [name for name, slot in self.inputs.items() if slot.by_name]

    def keys(self):
        return self.by_name() + list(self.params)

    def encode(self, key, value):
        """The text form's token for a parameter's value (above); plume.Error naming the
        op, the key and the value when the value is not of the parameter's type."""
        def refuse(why, kind=wrong_type):
            return kind("plume.ops.%s: %s=%r (%s): %s"
                        % (self.name, key, value, type(value).__name__, why))

        if key in self.inputs:  # the library refuses a spec where the op reads none
            if isinstance(value, str) and KERNEL_SPEC.match(value):
                return value
            if isinstance(value, (list, tuple)):
                return ",".join(_number(v, refuse) for v in value)
            raise refuse("%s is an input: give an array (or, where the op reads one inline, "
                         "a spec such as box:3 or a sequence of numbers)" % key)
        kind = self.params[key].type.decode()
        if kind == "int":
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise refuse("not an integer")
            return str(int(value))
        if kind == "number":
            return _number(value, refuse)
        if kind == "choice":
            choices = self.choices[key]
            if isinstance(value, numbers.Integral) and not isinstance(value, bool):
                value_text = str(int(value))
            else:
                value_text = value if isinstance(value, str) else None
            if value_text not in choices:
                raise refuse("not one of %s" % ", ".join(choices), invalid)
            return value_text
        if kind == "pair":
            if isinstance(value, str) and WORD.match(value):
                return value
            if (isinstance(value, (tuple, list)) and len(value) == 2 and all(
                    isinstance(v, numbers.Integral) and not isinstance(v, bool)
                    for v in value)):
                return "%d,%d" % (int(value[0]), int(value[1]))
            raise refuse("not two integers (%s) or a word" % self.params[key].form.decode())
        if kind == "range":
            if value == "auto":
                return value
            if isinstance(value, (tuple, list)) and len(value) == 2:
                return ",".join(_number(v, refuse) for v in value)
            raise refuse('not "auto" or two numbers (LO, HI)')
        raise refuse("a parameter of type %r, which this module cannot encode" % kind)


def _number(value, refuse):
    """A finite real number's token (an int's digits, a float's repr)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise refuse("not a number")
    if isinstance(value, numbers.Integral):
        return str(int(value))
    value = float(value)
    if not math.isfinite(value):
        raise refuse("not finite", invalid)
    return repr(value)


def read_table():
    """Every op of the library's table, by name."""
    ops = (Op(index) for index in range(lib.plm_op_count()))
    return {op.name: op for op in ops}


OPS = read_table()
