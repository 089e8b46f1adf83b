"""Fluid 1.x's layers of control flow within one block: the compare ops
(less_than, ... : bool Variables), the logical ops, is_empty, increment,
and tensor arrays (create_array, array_write, array_read, array_length).

    i = fluid.layers.fill_constant([1], "int64", 0)
    n = fluid.layers.fill_constant([1], "int64", 10)
    cond = fluid.layers.less_than(i, n)           # bool [1]
    arr = fluid.layers.create_array("float32")
    arr = fluid.layers.array_write(x, i, array=arr)
    y = fluid.layers.array_read(arr, i)


The loops that use them (While, while_loop) are in layers_while.py.
"""
from .framework import Variable
from .layers import _dtype_name, _layer, _name

__all__ = ["less_than", "less_equal", "greater_than", "greater_equal",
           "equal", "not_equal", "logical_and", "logical_or", "logical_xor",
           "logical_not", "is_empty", "increment", "create_array", "array_write",
           "array_read", "array_length"]


def _name_of(var, layer, arg):
    """The name of an optional output Variable argument, "" for None."""
    if var is None:
        return ""
    if not isinstance(var, Variable):
        raise TypeError(f"{layer}({arg}={var!r}): expected a Variable or "
                        "None")
    return var.name


def _compare(layer, x, y, cond, **more):
    return _layer(layer, x=_name(x, layer, "x"), y=_name(y, layer, "y"),
                  **more, cond=_name_of(cond, layer, "cond"))


def less_than(x, y, force_cpu=None, cond=None):
    """x < y elementwise (y broadcast onto x): a bool Variable, written
    into `cond` when given (a loop's condition). force_cpu is accepted and
    has no effect: Out lives where the executor runs.

        >>> cond = fluid.layers.less_than(i, n)
    """
    if force_cpu is not None and not isinstance(force_cpu, bool):
        raise TypeError(f"less_than(force_cpu={force_cpu!r}): expected a "
                        "bool or None")
    return _compare("less_than", x, y, cond, force_cpu=force_cpu)


def less_equal(x, y, cond=None):
    """x <= y elementwise: a bool Variable (into `cond` when given).

        >>> ok = fluid.layers.less_equal(x, y)
    """
    return _compare("less_equal", x, y, cond)


def greater_than(x, y, cond=None):
    """x > y elementwise: a bool Variable (into `cond` when given).

        >>> big = fluid.layers.greater_than(x, y)
    """
    return _compare("greater_than", x, y, cond)


def greater_equal(x, y, cond=None):
    """x >= y elementwise: a bool Variable (into `cond` when given).

        >>> ok = fluid.layers.greater_equal(x, y)
    """
    return _compare("greater_equal", x, y, cond)


def equal(x, y, cond=None):
    """x == y elementwise: a bool Variable (into `cond` when given).

        >>> same = fluid.layers.equal(label, prediction)
    """
    return _compare("equal", x, y, cond)


def not_equal(x, y, cond=None):
    """x != y elementwise: a bool Variable (into `cond` when given).

        >>> differ = fluid.layers.not_equal(label, prediction)
    """
    return _compare("not_equal", x, y, cond)


def _logical(layer, x, y, out, name):
    x = _name(x, layer, "x")
    if y is None:
        return _layer(layer, x=x, out=_name_of(out, layer, "out"), name=name)
    return _layer(layer, x=x, y=_name(y, layer, "y"),
                  out=_name_of(out, layer, "out"), name=name)


def logical_and(x, y, out=None, name=None):
    """x and y, elementwise on bool Variables of one shape (into `out`
    when given).

        >>> both = fluid.layers.logical_and(a, b)
    """
    return _logical("logical_and", x, y, out, name)


def logical_or(x, y, out=None, name=None):
    """x or y, elementwise on bool Variables of one shape.

        >>> either = fluid.layers.logical_or(a, b)
    """
    return _logical("logical_or", x, y, out, name)


def logical_xor(x, y, out=None, name=None):
    """x xor y, elementwise on bool Variables of one shape.

        >>> one = fluid.layers.logical_xor(a, b)
    """
    return _logical("logical_xor", x, y, out, name)


def logical_not(x, out=None, name=None):
    """not x, elementwise on a bool Variable.

        >>> neither = fluid.layers.logical_not(fluid.layers.logical_or(a, b))
    """
    return _logical("logical_not", x, None, out, name)


def is_empty(x, cond=None):
    """Whether x has no element (a dim of 0): a bool [1] Variable, written
    into `cond` when given (a bool Variable; a loop's or a branch's
    condition).

        >>> done = fluid.layers.is_empty(x)
    """
    return _layer("is_empty", x=_name(x, "is_empty", "x"),
                  cond=_name_of(cond, "is_empty", "cond"))


def increment(x, value=1.0, in_place=True):
    """x + value for a one-element x (float32, float64, int32 or int64),
    into x itself unless in_place is False.

        >>> fluid.layers.increment(i)       # i += 1
    """
    return _layer("increment", x=_name(x, "increment", "x"),
                  value=float(value),
                  in_place=bool(in_place))


def create_array(dtype):
    """An empty tensor array (a LOD_TENSOR_ARRAY Variable) of `dtype`,
    emptied again at each run of the program.

        >>> arr = fluid.layers.create_array("float32")
    """
    return _layer("create_array", dtype=_dtype_name(dtype, "create_array"))


def array_write(x, i, array=None):
    """array[i] = x (i: an int64 [1] Variable); the array grows as
    needed. A new array when `array` is None. Returns the array.

        >>> arr = fluid.layers.array_write(x, i, array=arr)
    """
    return _layer("array_write", x=_name(x, "array_write", "x"),
                  i=_name(i, "array_write", "i"),
                  array=_name_of(array, "array_write", "array"))


def array_read(array, i):
    """A copy of array[i]; reading past the end, or a slot never written,
    is an error naming the index and the array's length.

        >>> y = fluid.layers.array_read(arr, i)
    """
    return _layer("array_read", array=_name(array, "array_read", "array"),
                  i=_name(i, "array_read", "i"))


def array_length(array):
    """The number of tensors in `array`, an int64 [1] Variable.

        >>> n = fluid.layers.array_length(arr)
    """
    return _layer("array_length",
                  array=_name(array, "array_length", "array"))

