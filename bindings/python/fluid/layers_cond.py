"""Fluid 1.x's branches over sub-blocks of the program: Fluid 1.8's
cond(pred, true_fn, false_fn), Switch (the first case whose condition
holds runs, else the default), both on conditional_block ops, and IfElse
(a batch's rows parted by a bool per row, each part through its block,
merged back in order).

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

__all__ = ["cond", "Switch", "IfElse"]


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
                                        [v.name for v in self.keep], [])


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


class IfElse:
    """Fluid 1.x's row-wise branch: `cond` is a bool Variable with one
    element per row of the batch ([N, 1]); in `with ie.true_block():`,
    ie.input(x) gives the rows of x where cond holds, in `with
    ie.false_block():` the others, and ie.output(*vars) names the block's
    results. ie() returns the list of outputs merged back into the batch's
    row order (merge_lod_tensor); both blocks must give as many outputs,
    of the same dtypes. A block whose part has no rows does not run. The
    backward pass sends each row's gradient through the block it took.

        >>> ie = fluid.layers.IfElse(fluid.layers.less_than(score, limit))
        >>> with ie.true_block():
        ...     ie.output(fluid.layers.fc(ie.input(x), 8))
        >>> with ie.false_block():
        ...     ie.output(fluid.layers.scale(ie.input(x), 0.0))
        >>> out, = ie()
    """

    def __init__(self, cond, name=None):
        if not isinstance(cond, Variable):
            raise TypeError(f"IfElse(cond={cond!r}): expected a bool "
                            "Variable, one element per row")
        if cond.dtype != "bool":
            raise TypeError(f"IfElse(cond={cond.name!r}): the condition must "
                            f"be bool, is {cond.dtype}")
        self.cond = cond
        self.name = name
        self.parts = {}  # input name -> (true rows, false rows)
        self.outputs = {True: None, False: None}
        self.branch = None  # True/False inside a block
        self._block = None

    def _enter(self, branch):
        if self.branch is not None:
            raise ValueError("IfElse: a block cannot be opened inside "
                             "another block of the same IfElse")
        if self.outputs[branch] is not None:
            raise ValueError(f"IfElse: the {'true' if branch else 'false'} "
                             "block is built already")
        builder, program = current_builder()
        if program is not self.cond.program:
            raise ValueError(f"IfElse: the condition {self.cond.name!r} "
                             "belongs to another program than the one being "
                             "built")
        self.branch = branch
        self.outputs[branch] = []
        self._block = {"op_begin": len(program.desc.ops()),
                       "var_begin": len(program.desc.vars()),
                       "conds": [], "keep": [], "stay": []}
        return builder

    def _close(self, builder):
        blk, self._block, branch = self._block, None, self.branch
        self.branch = None
        if not blk["conds"]:
            raise ValueError(f"IfElse: the {'true' if branch else 'false'} "
                             "block reads no ie.input(x); its rows come from "
                             "ie.input")
        builder.build_conditional_block(
            blk["op_begin"], blk["var_begin"], blk["conds"], False,
            blk["keep"] + [v.name for v in self.outputs[branch]],
            blk["stay"])

    @contextlib.contextmanager
    def true_block(self):
        """The block run on the rows where cond holds."""
        builder = self._enter(True)
        yield
        self._close(builder)

    @contextlib.contextmanager
    def false_block(self):
        """The block run on the rows where cond does not hold."""
        builder = self._enter(False)
        yield
        self._close(builder)

    def input(self, x):
        """The rows of x of the current block (x has one row per element
        of cond)."""
        if self.branch is None:
            raise ValueError("IfElse.input: call it inside ie.true_block() "
                             "or ie.false_block()")
        if not isinstance(x, Variable):
            raise TypeError(f"IfElse.input(x={x!r}): expected a Variable")
        builder, program = current_builder()
        if x.name not in self.parts:
            at = len(program.desc.ops())
            t, f = builder.split_lod_tensor(x.name, self.cond.name)
            self._block["stay"].append(at)
            self._block["keep"] += [t, f]
            self.parts[x.name] = (t, f)
        part = self.parts[x.name][0 if self.branch else 1]
        if part not in self._block["conds"]:
            self._block["conds"].append(part)
        return program.var(part)

    def output(self, *outs):
        """The current block's results (Variables), in order."""
        if self.branch is None:
            raise ValueError("IfElse.output: call it inside ie.true_block() "
                             "or ie.false_block()")
        for v in outs:
            if not isinstance(v, Variable):
                raise TypeError(f"IfElse.output: {v!r} is not a Variable")
            self.outputs[self.branch].append(_layer("assign", input=v.name))

    def __call__(self):
        """The outputs merged back into the batch's row order (a list)."""
        if self.branch is not None:
            raise ValueError("IfElse(): call it after both blocks")
        t, f = self.outputs[True], self.outputs[False]
        if t is None or f is None:
            missing = "true" if t is None else "false"
            raise ValueError(f"IfElse(): the {missing} block is not built")
        if len(t) != len(f):
            raise ValueError(f"IfElse(): the true block gives {len(t)} "
                             f"outputs and the false block {len(f)}; they "
                             "must give as many")
        builder, program = current_builder()
        return [program.var(builder.merge_lod_tensor(
            a.name, b.name, self.cond.name, self.cond.name))
            for a, b in zip(t, f)]
