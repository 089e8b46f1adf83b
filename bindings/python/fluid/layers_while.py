"""Fluid 1.x's loops over a sub-block of the program: While (a block of
layers run while a bool condition holds) and Fluid 1.8's while_loop.

    cond = fluid.layers.less_than(i, n)
    loop = fluid.layers.While(cond)
    with loop.block():
        h2 = fluid.layers.fc(h, size=16, act="tanh",
                             param_attr=fluid.ParamAttr(name="w"))
        fluid.layers.assign(h2, h)                # h carried to the next step
        fluid.layers.increment(i)
        fluid.layers.less_than(i, n, cond=cond)   # the loop's test, again

How a loop runs and is differentiated: docs/design.md, "Control flow".
"""
import contextlib

import numpy as np

from .framework import Variable, current_builder
from .layers import _layer

__all__ = ["While", "while_loop"]


class While:
    """A loop over a block of ops, run while `cond` (a bool Variable of one
    element) holds. The layers built inside `with loop.block():` form the
    body; it must update `cond` (less_than(i, n, cond=cond)). Variables
    made before the loop and assigned in the body (assign(new_h, h),
    increment(i)) carry their values from one step to the next; the
    variables the body makes are local to it. The backward pass
    differentiates through the loop: a parameter used in every step gets
    the sum of its gradients over the steps, once, after the loop.
    is_test=True frees each step at once (inference; no gradient).

        >>> i = fluid.layers.fill_constant([1], "int64", 0)
        >>> n = fluid.layers.fill_constant([1], "int64", 5)
        >>> cond = fluid.layers.less_than(i, n)
        >>> loop = fluid.layers.While(cond)
        >>> with loop.block():
        ...     fluid.layers.increment(i)
        ...     fluid.layers.less_than(i, n, cond=cond)
    """

    def __init__(self, cond, is_test=False, name=None):
        if not isinstance(cond, Variable):
            raise TypeError(f"While(cond={cond!r}): expected a bool Variable "
                            "(fluid.layers.less_than(i, n))")
        if cond.dtype != "bool" or int(np.prod(cond.shape)) != 1:
            raise TypeError(f"While(cond={cond.name!r}): the condition must "
                            f"be one bool, is {cond.dtype} {list(cond.shape)}")
        if not isinstance(is_test, bool):
            raise TypeError(f"While(is_test={is_test!r}): expected a bool")
        self.cond_var = cond
        self.is_test = is_test
        self.name = name

    @contextlib.contextmanager
    def block(self):
        """The body: layers built inside run once per step."""
        builder, program = current_builder()
        if program is not self.cond_var.program:
            raise ValueError(f"While: the condition {self.cond_var.name!r} "
                             "belongs to another program than the one being "
                             "built")
        op_begin = len(program.desc.ops())
        var_begin = len(program.desc.vars())
        yield
        builder.build_while(op_begin, var_begin, self.cond_var.name,
                            self.is_test)


def while_loop(cond, body, loop_vars, is_test=False, name=None):
    """Fluid 1.8's functional loop: while cond(*loop_vars) holds, loop_vars
    = body(*loop_vars). cond returns a bool Variable of one element; body
    returns as many Variables as loop_vars (a list or tuple; one Variable
    for one loop var), each assigned to its loop var at the end of the
    step. Built on While (a sub-block run in a step scope per iteration;
    differentiable unless is_test). Returns loop_vars, updated.

        >>> i = fluid.layers.fill_constant([1], "int64", 0)
        >>> ten = fluid.layers.fill_constant([1], "int64", 10)
        >>> i, = fluid.layers.while_loop(
        ...     lambda i: fluid.layers.less_than(i, ten),
        ...     lambda i: [fluid.layers.increment(i, in_place=False)], [i])
    """
    if not callable(cond) or not callable(body):
        raise TypeError("while_loop: cond and body must be callables")
    if not isinstance(loop_vars, (list, tuple)) or not loop_vars:
        raise ValueError(f"while_loop(loop_vars={loop_vars!r}): expected a "
                         "non-empty list or tuple of Variables")
    loop_vars = list(loop_vars)
    for v in loop_vars:
        if not isinstance(v, Variable):
            raise TypeError(f"while_loop: loop var {v!r} is not a Variable")
    pre = cond(*loop_vars)
    loop = While(pre, is_test=is_test, name=name)
    with loop.block():
        out = body(*loop_vars)
        out = list(out) if isinstance(out, (list, tuple)) else [out]
        if len(out) != len(loop_vars):
            raise ValueError(f"while_loop: body returned {len(out)} "
                             f"Variables for {len(loop_vars)} loop vars")
        for new, old in zip(out, loop_vars):
            if not isinstance(new, Variable):
                raise TypeError(f"while_loop: body returned {new!r} for "
                                f"loop var {old.name!r}; expected a "
                                "Variable")
            if new.name != old.name:
                _layer("assign", input=new.name, output=old.name)
        now = cond(*loop_vars)
        _layer("assign", input=now.name, output=pre.name)
    return loop_vars
