"""Fluid 1.x's branches over sub-blocks of the program: Fluid 1.8's
cond(pred, true_fn, false_fn) and Switch (the first case whose condition
holds runs, else the default), both on conditional_block ops.

    out = fluid.layers.cond(fluid.layers.less_than(a, b),
                            lambda: fluid.layers.tanh(x),
                            lambda: fluid.layers.scale(x, 2.0))

How a conditional block runs and is differentiated: docs/design.md,
"Control flow".
"""
import contextlib

import numpy as np

from .framework import Variable, current_builder
from .layers import _layer

__all__ = ["cond", "Switch"]


def _check_pred(where, pred):
    if not isinstance(pred, Variable):
        raise TypeError(f"{where}: the condition {pred!r} is not a Variable; "
                        "expected one bool (fluid.layers.less_than(a, b))")
    if pred.dtype != "bool" or int(np.prod(pred.shape)) != 1:
        raise TypeError(f"{where}: the condition {pred.name!r} must be one "
                        f"bool, is {pred.dtype} {list(pred.shape)}")


class _Block:
    """The ops and vars built inside `with` become a conditional block run
    when `cond_var` holds; `keep` lists the vars made inside that are read
    after it (they stay in the outer block)."""

    def __init__(self, cond_var):
        self.cond_var = cond_var
        self.keep = []

    @contextlib.contextmanager
    def block(self):
        builder, program = current_builder()
        if program is not self.cond_var.program:
            raise ValueError(f"the condition {self.cond_var.name!r} belongs "
                             "to another program than the one being built")
        op_begin = len(program.desc.ops())
        var_begin = len(program.desc.vars())
        yield self
        if len(program.desc.ops()) == op_begin:
            return  # nothing to run
        builder.build_conditional_block(op_begin, var_begin,
                                        [self.cond_var.name], True,
                                        [v.name for v in self.keep])


def _flatten(where, value, out):
    """The Variables of a (nested) list/tuple, in order, into out; returns
    the structure with each Variable replaced by its index."""
    if isinstance(value, (list, tuple)):
        return type(value)(_flatten(where, v, out) for v in value)
    if not isinstance(value, Variable):
        raise TypeError(f"{where} returned {value!r}; expected a Variable "
                        "or a (nested) list/tuple of Variables")
    out.append(value)
    return len(out) - 1


def _pack(structure, flat):
    if isinstance(structure, (list, tuple)):
        return type(structure)(_pack(s, flat) for s in structure)
    return flat[structure]


def _same_structure(a, b):
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return (type(a) is type(b) and len(a) == len(b)
                and all(_same_structure(x, y) for x, y in zip(a, b)))
    return True


def _run_branch(which, fn, pred, outs):
    """Builds fn() into a block run when pred holds; its results are
    copied into `outs` (new vars when outs is None). Returns (structure,
    outs)."""
    blk = _Block(pred)
    with blk.block():
        result = fn()
        if result is None:
            return None, None
        flat = []
        structure = _flatten(f"cond: {which}", result, flat)
        if outs is None:
            outs = [_layer("assign", input=v.name) for v in flat]
            blk.keep = outs
        elif len(flat) == len(outs):
            for v, o in zip(flat, outs):
                if v.dtype != o.dtype:
                    raise TypeError(
                        f"cond: {which} returned {v.name!r} of {v.dtype} "
                        f"where true_fn returned {o.dtype}; both branches "
                        "must return the same dtypes")
                _layer("assign", input=v.name, output=o.name)
    return structure, outs


def cond(pred, true_fn=None, false_fn=None, name=None):
    """Fluid 1.8's two-way branch: true_fn() when `pred` (one bool
    Variable) holds, else false_fn(). Each function builds its layers into
    a conditional block (the false one runs on logical_not(pred)) and
    returns None, a Variable or a (nested) list/tuple of Variables; both
    must return the same structure and dtypes, which are copied into the
    same new outer Variables, returned in that structure. A None function
    builds nothing (then both must return None). The backward pass
    differentiates through the branch that ran (zeros through the other).

        >>> out = fluid.layers.cond(fluid.layers.less_than(a, b),
        ...                         lambda: a + b, lambda: a * b)
    """
    _check_pred("cond", pred)
    for arg, fn in (("true_fn", true_fn), ("false_fn", false_fn)):
        if fn is not None and not callable(fn):
            raise TypeError(f"cond({arg}={fn!r}): expected a callable or "
                            "None")
    true_s, outs = (None, None)
    if true_fn is not None:
        true_s, outs = _run_branch("true_fn", true_fn, pred, None)
    false_s = None
    if false_fn is not None:
        not_pred = _layer("logical_not", x=pred.name)
        false_s, false_outs = _run_branch("false_fn", false_fn, not_pred,
                                          outs)
        if outs is None:
            outs = false_outs
    if (true_s is None) != (false_s is None):
        raise ValueError(
            "cond: Incompatible return values: true_fn returned "
            + ("None" if true_s is None else "Variables") + " and false_fn "
            + ("None" if false_s is None else "Variables")
            + "; both must return None or the same structure")
    if true_s is None:
        return None
    if not _same_structure(true_s, false_s):
        raise ValueError(f"cond: true_fn and false_fn returned different "
                         f"structures ({_shape_of(true_s)} and "
                         f"{_shape_of(false_s)}); they must match")
    return _pack(true_s, outs)


def _shape_of(structure):
    if isinstance(structure, (list, tuple)):
        inner = ", ".join(_shape_of(s) for s in structure)
        return f"[{inner}]" if isinstance(structure, list) else f"({inner})"
    return "Variable"


class Switch:
    """Fluid 1.x's multi-way branch: the block of the first case whose
    condition (one bool Variable) holds runs, or the default's when none
    does; each case is a conditional block. Results are written into vars
    made before the Switch (assign(value, output=lr)).

        >>> lr = fluid.layers.create_global_var([1], 0.0, "float32",
        ...                                     persistable=True)
        >>> with fluid.layers.Switch() as switch:
        ...     with switch.case(fluid.layers.less_than(step, b1)):
        ...         fluid.layers.assign(v1, output=lr)
        ...     with switch.default():
        ...         fluid.layers.assign(v2, output=lr)
    """

    def __init__(self, name=None):
        self.name = name
        self.inside = False
        self.none_before = None  # no earlier case held (a bool Variable)
        self.has_default = False

    def __enter__(self):
        if self.inside:
            raise ValueError("Switch: already entered")
        self.inside = True
        return self

    def __exit__(self, *exc):
        self.inside = False
        return False

    def _check(self, what):
        if not self.inside:
            raise ValueError(f"Switch.{what}: use it inside `with "
                             "fluid.layers.Switch() as switch:`")
        if self.has_default:
            raise ValueError(f"Switch.{what}: the default must be the last "
                             "branch")

    @contextlib.contextmanager
    def case(self, condition):
        """A block run when `condition` holds and no earlier case's did."""
        self._check("case")
        _check_pred("Switch.case", condition)
        if self.none_before is None:
            run_on = condition
            self.none_before = _layer("logical_not", x=condition.name)
        else:
            run_on = _layer("logical_and", x=self.none_before.name,
                            y=condition.name)
            not_cond = _layer("logical_not", x=condition.name)
            self.none_before = _layer("logical_and", x=self.none_before.name,
                                      y=not_cond.name)
        with _Block(run_on).block():
            yield

    @contextlib.contextmanager
    def default(self):
        """A block run when no case's condition holds (always, with no
        case)."""
        self._check("default")
        self.has_default = True
        run_on = self.none_before
        if run_on is None:
            one = _layer("fill_constant", shape=[1], dtype="float32",
                         value=1.0)
            run_on = _layer("equal", x=one.name, y=one.name)
        with _Block(run_on).block():
            yield
