"""Fluid 1.x's DynamicRNN: a recurrent network over a batch of sequences of
different lengths (LoD tensors), written step by step inside
`with drnn.block():`.

    drnn = fluid.layers.DynamicRNN()
    with drnn.block():
        x_t = drnn.step_input(x)                 # x: LoD tensor [N, D]
        prev = drnn.memory(shape=[32], value=0.0)
        h = fluid.layers.fc([x_t, prev], size=32, act="tanh")
        drnn.update_memory(prev, h)
        drnn.output(h)
    out = drnn()                                 # LoD tensor [N, 32]

It is the loop of the LoD-rank layers (layers_lod.py) in a While
(layers_while.py): the first step_input ranks the sequences, longest
first (lod_rank_table), splits the input into steps (lod_tensor_to_array)
and sets the loop to run max_sequence_len steps; at step t the batch holds
one row per sequence longer than t. A memory lives in a tensor array: slot
t holds its value at step t, read and shrunk to the sequences still
running (shrink_memory); update_memory writes slot t + 1. The outputs go
to arrays merged back into sequences, in the input's order, after the
loop (array_to_lod_tensor). The arrays outlive the loop, so they are made
with the rank table, before the loop's first op: a few per float type.
The first value of a memory (its `init`, reordered by rank, or a constant)
is computed in the loop and written to slot 0 at every step; only step 0
reads it.
"""
import contextlib

from .framework import Variable, current_builder
from . import layers as _L

__all__ = ["DynamicRNN"]

_BEFORE, _IN_BLOCK, _AFTER = "before", "in block", "after"
_ARRAYS_PER_DTYPE = 6


def _check_var(where, arg, v):
    if not isinstance(v, Variable):
        raise TypeError(f"DynamicRNN.{where}({arg}={v!r}): expected a "
                        "Variable")


class DynamicRNN:
    """A recurrent network over the sequences of LoD tensors, each sequence
    run for its own length, built inside `with drnn.block():`. Inside the
    block: step_input(x) gives the rows of step t of x's sequences (one
    per sequence longer than t, longest sequence first); static_input(x)
    the rows of x (one per sequence) of the sequences still running;
    memory(...) a state carried from one step to the next;
    update_memory(mem, new) its next value; output(*o) collects values per
    step. Calling drnn() after the block returns the outputs as LoD
    tensors with the input's sequences, in their original order. The
    parameters of the layers in the block are shared by all steps; the
    gradient flows through every step.

        >>> x = fluid.layers.data("x", [16], lod_level=1)
        >>> drnn = fluid.layers.DynamicRNN()
        >>> with drnn.block():
        ...     x_t = drnn.step_input(x)
        ...     prev = drnn.memory(shape=[32])
        ...     h = fluid.layers.fc([x_t, prev], size=32, act="tanh")
        ...     drnn.update_memory(prev, h)
        ...     drnn.output(h)
        >>> out = drnn()                     # LoD tensor [N, 32]
    """

    def __init__(self, name=None):
        if name is not None and not isinstance(name, str):
            raise TypeError(f"DynamicRNN(name={name!r}): expected a str or "
                            "None")
        self.name = name
        self._status = _BEFORE
        self._table = None
        self._memories = {}   # memory var name -> [array, new var]
        self._outputs = []    # (array, output var)
        self._results = None

    def _need(self, where, status):
        if self._status != status:
            place = {_IN_BLOCK: "inside `with drnn.block():`",
                     _AFTER: "after the `with drnn.block():` block",
                     _BEFORE: "before the block"}[status]
            raise ValueError(f"DynamicRNN.{where}: call it {place}")

    def _need_input(self, where):
        self._need(where, _IN_BLOCK)
        if self._table is None:
            raise ValueError(f"DynamicRNN.{where}: call drnn.step_input(x) "
                             "first in the block (the steps and the rank "
                             "of the sequences come from it)")

    @contextlib.contextmanager
    def block(self):
        """The step block: layers built inside run once per step."""
        if self._status != _BEFORE:
            raise ValueError("DynamicRNN.block: a DynamicRNN has one block; "
                             "make a new DynamicRNN for another")
        builder, program = current_builder()
        self._program = program
        self._entry_ops = len(program.desc.ops())
        self._status = _IN_BLOCK
        yield
        self._finish(builder)

    def _finish(self, builder):
        if self._table is None:
            raise ValueError("DynamicRNN.block: the block read no "
                             "step_input; call drnn.step_input(x) first in "
                             "the block")
        if not self._outputs:
            raise ValueError("DynamicRNN.block: the block gave no output; "
                             "call drnn.output(var) in the block")
        for name, (array, new) in self._memories.items():
            if new is None:
                raise ValueError(f"DynamicRNN: memory {name!r} is never "
                                 "updated; call drnn.update_memory(mem, "
                                 "new_value) in the block")
            _L.array_write(new, _L.increment(self._i, in_place=False),
                           array=array)
        for array, out in self._outputs:
            _L.array_write(out, self._i, array=array)
        _L.increment(self._i)
        _L.less_than(self._i, self._n, cond=self._cond)
        self._status = _AFTER
        builder.build_while(self._op_begin, self._var_begin,
                            self._cond.name, False)
        self._results = [_L.array_to_lod_tensor(array, self._table)
                         for array, _ in self._outputs]

    def _start(self, x, level):
        """The rank table, the steps of x and the loop's counter, before
        the loop's first op."""
        program = self._program
        if len(program.desc.ops()) != self._entry_ops:
            raise ValueError("DynamicRNN.step_input: call it first in the "
                             "block, before any other layer (the loop "
                             "starts after the rank table it makes)")
        self._table = _L.lod_rank_table(x, level=level)
        self._n = _L.max_sequence_len(self._table)
        self._i = _L.fill_constant([1], "int64", 0)
        self._zero = _L.fill_constant([1], "int64", 0)
        self._cond = _L.less_than(self._i, self._n)
        # Memories' arrays hold a placeholder in slot 0: a step reads its
        # memory's slot before it writes one.
        self._free = {}
        for kind in ("memory", "output"):
            for t in ("float32", "float64"):
                arrays = [_L.create_array(t)
                          for _ in range(_ARRAYS_PER_DTYPE)]
                for a in arrays if kind == "memory" else []:
                    _L.array_write(_L.fill_constant([1], t, 0.0),
                                   self._zero, array=a)
                self._free[kind, t] = arrays
        self._first_steps = None
        self._later = None

    def _array(self, where, var):
        if (where, var.dtype) not in self._free:
            raise TypeError(f"DynamicRNN.{where}: {var.name!r} is "
                            f"{var.dtype}; a memory or an output must be "
                            "float32 or float64")
        if not self._free[where, var.dtype]:
            raise ValueError(f"DynamicRNN.{where}: a DynamicRNN holds at "
                             f"most {_ARRAYS_PER_DTYPE} {where}s of "
                             f"{var.dtype}")
        return self._free[where, var.dtype].pop(0)

    def step_input(self, x, level=0):
        """The rows of step t of x's sequences (x a LoD tensor), one per
        sequence longer than t, longest first. The first call ranks the
        sequences and sets the number of steps, the longest length; every
        step input must have the same sequence lengths."""
        self._need("step_input", _IN_BLOCK)
        _check_var("step_input", "x", x)
        if x.program is not self._program:
            raise ValueError(f"DynamicRNN.step_input: {x.name!r} belongs to "
                             "another program")
        if isinstance(level, bool) or not isinstance(level, int):
            raise TypeError(f"DynamicRNN.step_input(level={level!r}): "
                            "expected an int (0)")
        if self._table is None:
            self._start(x, level)
            steps = _L.lod_tensor_to_array(x, self._table)
            self._first_steps = steps
            builder, program = current_builder()
            self._op_begin = len(program.desc.ops())
            self._var_begin = len(program.desc.vars())
        else:
            steps = _L.lod_tensor_to_array(x, self._table)
        return _L.array_read(steps, self._i)

    def static_input(self, x):
        """x, one row per sequence of the step input (x's rows in the
        order of the sequences), at step t the rows of the sequences still
        running, ranked as the step input's rows are."""
        self._need_input("static_input")
        _check_var("static_input", "x", x)
        ranked = _L.reorder_lod_tensor_by_rank(x, self._table)
        return _L.shrink_memory(ranked, self._i, self._table)

    def memory(self, init=None, shape=None, value=0.0, need_reorder=False,
               dtype="float32"):
        """A state carried over the steps, one row per running sequence:
        at step 0 `init` (a Variable made before the block, one row per
        sequence; need_reorder=True when its rows are in the sequences'
        order, to rank them as the step input's), or without init a
        constant `value` of shape [batch] + shape and `dtype`. Its value at
        step t is the one update_memory gave it at step t - 1, shrunk to
        the sequences still running."""
        self._need_input("memory")
        if init is None:
            if shape is None:
                raise ValueError("DynamicRNN.memory: give init, or shape "
                                 "(the dims after the batch dim)")
            if not isinstance(shape, (list, tuple)) or not all(
                    isinstance(d, int) and d > 0 for d in shape):
                raise ValueError(f"DynamicRNN.memory(shape={shape!r}): "
                                 "expected a list of positive ints, the "
                                 "dims after the batch dim")
            first = _L.array_read(self._first_steps, self._zero)
            init = _L.fill_constant_batch_size_like(
                first, [-1] + list(shape), dtype, float(value))
        else:
            _check_var("memory", "init", init)
            if not isinstance(need_reorder, bool):
                raise TypeError(f"DynamicRNN.memory(need_reorder="
                                f"{need_reorder!r}): expected a bool")
            if need_reorder:
                init = _L.reorder_lod_tensor_by_rank(init, self._table)
        array = self._array("memory", init)
        if self._later is None:
            t = _L.cast(self._i, "float64")
            self._later = _L.clip(t, 0.0, 1.0)  # 0.0 at step 0, else 1.0
            self._prev_i = _L.cast(t - self._later, "int64")  # max(t-1, 0)
        # Slot t: the value update_memory gave at step t - 1 (rows of the
        # sequences running then), the placeholder at step 0; init shrunk
        # to those rows weighs 1 at step 0, 0 after.
        prev = _L.array_read(array, self._i)
        first = _L.shrink_memory(init, self._prev_i, self._table)
        later = _L.cast(self._later, init.dtype)
        mixed = first * (1.0 - later) + prev * later
        mem = _L.shrink_memory(mixed, self._i, self._table)
        self._memories[mem.name] = [array, None]
        return mem

    def update_memory(self, ex_mem, new_mem):
        """The value of memory `ex_mem` at the next step: `new_mem`, of
        ex_mem's shape and dtype."""
        self._need("update_memory", _IN_BLOCK)
        _check_var("update_memory", "ex_mem", ex_mem)
        _check_var("update_memory", "new_mem", new_mem)
        if ex_mem.name not in self._memories:
            raise ValueError(f"DynamicRNN.update_memory: {ex_mem.name!r} is "
                             "not a memory of this DynamicRNN "
                             "(drnn.memory(...) makes one)")
        if new_mem.dtype != ex_mem.dtype:
            raise TypeError(f"DynamicRNN.update_memory: {new_mem.name!r} "
                            f"is {new_mem.dtype}, the memory "
                            f"{ex_mem.dtype}")
        self._memories[ex_mem.name][1] = new_mem

    def output(self, *outputs):
        """Collects each of `outputs` at every step; drnn() returns them
        as LoD tensors."""
        self._need_input("output")
        for o in outputs:
            _check_var("output", "outputs", o)
            self._outputs.append((self._array("output", o), o))

    def __call__(self, *args, **kwargs):
        """The outputs as LoD tensors with the step input's sequences, in
        their original order: one Variable for one output, else a list in
        the order they were given."""
        self._need("__call__", _AFTER)
        return self._results[0] if len(self._results) == 1 else \
            list(self._results)
