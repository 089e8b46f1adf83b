"""Fluid 1.x's StaticRNN: a recurrent network over a fixed number of time
steps, written step by step inside `with rnn.step():`.

    rnn = fluid.layers.StaticRNN()
    with rnn.step():
        x_t = rnn.step_input(x)                    # x: [T, B, D]
        h_prev = rnn.memory(shape=[-1, 32], batch_ref=x_t)
        h = fluid.layers.fc([x_t, h_prev], size=32, act="tanh")
        rnn.update_memory(h_prev, h)
        rnn.step_output(h)
    hs = rnn()                                     # [T, B, 32]

Fluid 1.x ran the step block with a `recurrent` op; here it is a `while`
loop (layers_while.py) over the time steps. Step t reads row t of each
step input (gather on dim 0); the memories and the step outputs travel in
one tensor array made before the loop, each in its own range of T + 1
slots: memory m reads slot base_m + t and update_memory writes slot
base_m + t + 1, the step block writing the memory's first value into slot
base_m at every step (only step 0 reads it); output o writes slot
base_o + t, and rnn() stacks those T slots after the loop. The gradient
is the while loop's: through the array's slots back to the first value,
the inputs and the parameters, each summed once over the steps.
"""
import contextlib

from .framework import Variable, current_builder
from . import layers as _L
from .layers import _layer

__all__ = ["StaticRNN"]

_BEFORE, _IN_STEP, _AFTER = "before", "in step", "after"


def _check_var(where, arg, v):
    if not isinstance(v, Variable):
        raise TypeError(f"StaticRNN.{where}({arg}={v!r}): expected a "
                        "Variable")


class StaticRNN:
    """A recurrent network over the T time steps of its step inputs
    ([T, B, ...], time first), built inside `with rnn.step():` and
    unrolled at run time by a while loop. Inside the step block:
    step_input(x) gives x[t]; memory(...) a state carried from one step to
    the next (its value at step 0: `init`, or a constant `init_value`
    shaped `shape` with its batch dim taken from `batch_ref`);
    update_memory(mem, var) its next value; step_output(o) / output(*o)
    collect a value per step. Calling rnn() after the block returns the
    outputs stacked over time, [T, B, ...] (one Variable, or a list for
    several outputs). The parameters of the layers in the block are shared
    by all steps; the gradient flows through every step.

        >>> x = fluid.layers.data("x", [4, 8, 16], append_batch_size=False)
        >>> rnn = fluid.layers.StaticRNN()
        >>> with rnn.step():
        ...     x_t = rnn.step_input(x)                     # [8, 16]
        ...     prev = rnn.memory(shape=[-1, 32], batch_ref=x_t)
        ...     h = fluid.layers.fc([x_t, prev], size=32, act="tanh")
        ...     rnn.update_memory(prev, h)
        ...     rnn.step_output(h)
        >>> hs = rnn()                                      # [4, 8, 32]
    """

    def __init__(self, name=None):
        if name is not None and not isinstance(name, str):
            raise TypeError(f"StaticRNN(name={name!r}): expected a str or "
                            "None")
        self.name = name
        self._status = _BEFORE
        self._seq_len = None
        self._inputs = {}      # step var name -> the [T, B, ...] input
        self._memories = {}    # memory var name -> [slot base, new var]
        self._outputs = []     # (slot base, step output var)
        self._regions = 0
        self._stacked = None

    def _need(self, where, status):
        if self._status != status:
            place = {_IN_STEP: "inside `with rnn.step():`",
                     _AFTER: "after the `with rnn.step():` block",
                     _BEFORE: "before the step block"}[status]
            raise ValueError(f"StaticRNN.{where}: call it {place}")

    @contextlib.contextmanager
    def step(self):
        """The step block: layers built inside run once per time step."""
        if self._status != _BEFORE:
            raise ValueError("StaticRNN.step: a StaticRNN has one step "
                             "block; make a new StaticRNN for another")
        builder, program = current_builder()
        self._program = program
        self._i = _layer("fill_constant", shape=[1], dtype="int64",
                         value=0.0)
        one = _layer("fill_constant", shape=[1], dtype="int64", value=1.0)
        self._cond = _layer("less_than", x=self._i.name, y=one.name,
                            cond="")
        # The arrays outlive the steps, so they are made before the loop:
        # one per float type a memory or an output may have.
        self._arrays = {t: _layer("create_array", dtype=t)
                        for t in ("float32", "float64")}
        for t, array in self._arrays.items():
            _L.array_write(_L.fill_constant([1], t, 0.0), self._i,
                           array=array)
        self._later = None
        op_begin = len(program.desc.ops())
        var_begin = len(program.desc.vars())
        self._status = _IN_STEP
        yield
        self._finish_step(builder, op_begin, var_begin)

    def _finish_step(self, builder, op_begin, var_begin):
        if self._seq_len is None:
            raise ValueError("StaticRNN.step: the step block read no "
                             "step_input; a StaticRNN needs one to know its "
                             "number of steps")
        for name, (base, new) in self._memories.items():
            if new is None:
                raise ValueError(f"StaticRNN: memory {name!r} is never "
                                 "updated; call rnn.update_memory(mem, "
                                 "new_value) in the step block")
            _layer("array_write", x=new.name, i=self._slot(base, 1).name,
                   array=self._array_of(new).name)
        for base, out, _, _ in self._outputs:
            _layer("array_write", x=out.name, i=self._slot(base, 0).name,
                   array=self._array_of(out).name)
        _layer("increment", x=self._i.name, value=1.0, in_place=True)
        n = _layer("fill_constant", shape=[1], dtype="int64",
                   value=float(self._seq_len))
        _layer("less_than", x=self._i.name, y=n.name, cond=self._cond.name)
        self._status = _AFTER
        builder.build_while(op_begin, var_begin, self._cond.name, False)
        self._stacked = [self._stack(base, shape, self._arrays[dtype])
                         for base, _, shape, dtype in self._outputs]

    def _slot(self, base, plus):
        return _layer("increment", x=self._i.name, value=float(base + plus),
                      in_place=False)

    def _region(self, where):
        if self._seq_len is None:
            raise ValueError(f"StaticRNN.{where}: call step_input first "
                             "(the number of steps comes from it)")
        base = 1 + self._regions * (self._seq_len + 1)
        self._regions += 1
        return base

    def _stack(self, base, shape, array):
        # A read's declared shape is the array's, the last write's: a zero
        # tensor shaped like this output (its -1 dim from the step input's
        # batch) is written past every range first, so the reads below are
        # declared with the output's shape.
        dtype = array.dtype
        if shape.count(-1) == 1 and len(self._first_input.shape) > 1:
            like = _L.fill_constant_batch_size_like(
                self._first_input, shape, dtype, 0.0, input_dim_idx=1,
                output_dim_idx=shape.index(-1))
        else:
            like = _L.fill_constant([max(d, 1) for d in shape], dtype, 0.0)
        past = _L.fill_constant([1], "int64", float(self._past()))
        _L.array_write(like, past, array=array)
        steps = []
        for t in range(self._seq_len):
            k = _L.fill_constant([1], "int64", float(base + t))
            steps.append(_L.array_read(array, k))
        return _L.stack(steps, axis=0)

    def _past(self):
        return 1 + self._regions * (self._seq_len + 1)

    def _array_of(self, var):
        if var.dtype not in self._arrays:
            raise TypeError(f"StaticRNN: {var.name!r} is {var.dtype}; a "
                            "memory or a step output must be float32 or "
                            "float64")
        return self._arrays[var.dtype]

    def step_input(self, x):
        """x[t] at step t for x of shape [T, B, ...] (T known): a Variable
        of shape [B, ...]. Every step input has the same T."""
        self._need("step_input", _IN_STEP)
        _check_var("step_input", "x", x)
        if x.program is not self._program:
            raise ValueError(f"StaticRNN.step_input: {x.name!r} belongs to "
                             "another program")
        if len(x.shape) < 1 or x.shape[0] is None or x.shape[0] <= 0:
            raise ValueError(f"StaticRNN.step_input(x={x.name!r}): x has "
                             f"shape {list(x.shape)}; a StaticRNN needs the "
                             "number of steps, dim 0, known and positive "
                             "(declare x with append_batch_size=False)")
        if self._seq_len is None:
            self._seq_len = int(x.shape[0])
            self._first_input = x
        elif self._seq_len != x.shape[0]:
            raise ValueError(f"StaticRNN.step_input(x={x.name!r}): x has "
                             f"{x.shape[0]} steps, an earlier step input "
                             f"{self._seq_len}; all must have the same")
        row = _layer("gather", input=x.name, index=self._i.name,
                     overwrite=True)
        if len(x.shape) == 1:
            step = _layer("reshape", x=row.name, shape=[1])
        else:
            step = _layer("squeeze", input=row.name, axes=[0])
        self._inputs[step.name] = x
        return step

    def memory(self, init=None, shape=None, batch_ref=None, init_value=0.0,
               init_batch_dim_idx=0, ref_batch_dim_idx=1):
        """A state carried over the steps: `init` at step 0 (a Variable
        made before the RNN), or, without init, a constant `init_value` of
        `shape` whose dim init_batch_dim_idx is batch_ref's dim
        ref_batch_dim_idx (for batch_ref a step input, as in Fluid, the
        dim of the whole [T, B, ...] input: 1 is B). Its value at step t
        is the one update_memory gave it at step t - 1."""
        self._need("memory", _IN_STEP)
        if init is None:
            if shape is None or batch_ref is None:
                raise ValueError("StaticRNN.memory: give init, or shape and "
                                 "batch_ref")
            _check_var("memory", "batch_ref", batch_ref)
            ref = self._inputs.get(batch_ref.name, batch_ref)
            if not -len(ref.shape) <= ref_batch_dim_idx < len(ref.shape):
                raise ValueError(f"StaticRNN.memory(ref_batch_dim_idx="
                                 f"{ref_batch_dim_idx}): batch_ref "
                                 f"{ref.name!r} has rank {len(ref.shape)}")
            init = _layer("fill_constant_batch_size_like", input=ref.name,
                          shape=list(shape), dtype=ref.dtype,
                          value=float(init_value),
                          input_dim_idx=ref_batch_dim_idx,
                          output_dim_idx=init_batch_dim_idx, force_cpu=False)
        _check_var("memory", "init", init)
        array = self._array_of(init)
        base = self._region("memory")
        if self._later is None:
            # 0.0 at step 0, else 1.0; t as a float64 (exact).
            self._t = _L.cast(self._i, "float64")
            self._later = _L.clip(self._t, 0.0, 1.0)
        # Slot base + t from step 1 on; at step 0 slot 0, the placeholder
        # written before the loop (the array is read before the step writes
        # it: the step's gradient needs that order).
        slot = _L.cast((self._t + float(base)) * self._later, "int64")
        prev = _L.array_read(array, slot)
        later = _L.cast(self._later, init.dtype)
        # init * (1 - later) + prev * later: init at step 0, prev after.
        mem = init * (1.0 - later) + prev * later
        self._memories[mem.name] = [base, None]
        return mem

    def update_memory(self, mem, var):
        """The value of memory `mem` at the next step: `var`, of mem's
        shape and dtype."""
        self._need("update_memory", _IN_STEP)
        _check_var("update_memory", "mem", mem)
        _check_var("update_memory", "var", var)
        if mem.name not in self._memories:
            raise ValueError(f"StaticRNN.update_memory: {mem.name!r} is not "
                             "a memory of this StaticRNN (rnn.memory(...) "
                             "makes one)")
        if var.dtype != mem.dtype:
            raise TypeError(f"StaticRNN.update_memory: {var.name!r} is "
                            f"{var.dtype}, the memory {mem.dtype}")
        self._memories[mem.name][1] = var

    def step_output(self, o):
        """Collects `o` at every step; rnn() returns them stacked,
        [T] + o's shape."""
        self._need("step_output", _IN_STEP)
        _check_var("step_output", "o", o)
        self._array_of(o)
        # o's shape and dtype are kept: o moves into the loop's block.
        self._outputs.append((self._region("step_output"), o,
                              list(o.shape), o.dtype))

    def output(self, *outputs):
        """step_output for each of `outputs`."""
        for o in outputs:
            self.step_output(o)

    def __call__(self, *args, **kwargs):
        """The step outputs stacked over time, [T, B, ...]: one Variable
        for one output, else a list in the order they were given."""
        self._need("__call__", _AFTER)
        if not self._stacked:
            raise ValueError("StaticRNN: the step block gave no "
                             "step_output")
        return self._stacked[0] if len(self._stacked) == 1 else \
            list(self._stacked)
