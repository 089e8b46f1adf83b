"""Programs and variables. A Program wraps the C++ ProgramDesc; every layer
call goes through the C++ builder (shape inference, gradients and
initialisation all live there)."""
import contextlib
import numbers

from . import _core


class Variable:
    """A variable of a program: its name, with shape and dtype read from the
    program's declaration (in block `block_idx`, 0 for a program built
    here)."""

    def __init__(self, program, name, block_idx=0):
        self.program = program
        self.name = name
        self.block_idx = block_idx

    @property
    def _info(self):
        return self.program.desc.var(self.name, self.block_idx)

    @property
    def block(self):
        """The Block that declares the variable."""
        return Block(self.program, self.block_idx)

    @property
    def shape(self):
        return tuple(self._info["shape"])

    @property
    def dtype(self):
        return self._info["dtype"]

    @property
    def persistable(self):
        return self._info["persistable"]

    @property
    def lod_level(self):
        """1 for a batch of variable-length sequences, else 0."""
        return self._info.get("lod_level", 0)

    def __repr__(self):
        return f"Variable({self.name!r}, shape={self.shape}, dtype={self.dtype})"

    # ---- arithmetic, as in Fluid: between Variables an elementwise op (the
    # right operand broadcast onto the left, axis -1); with a Python number
    # a `scale` op where it can express the result, else a fill_constant
    # of shape [1] and an elementwise op. Each appends to the current main
    # program.

    # NumPy defers to these methods (which refuse arrays) instead of
    # applying them to each element of an array.
    __array_ufunc__ = None

    def __add__(self, other):
        return _binary(self, other, "+", False)

    def __radd__(self, other):
        return _binary(self, other, "+", True)

    def __sub__(self, other):
        return _binary(self, other, "-", False)

    def __rsub__(self, other):
        return _binary(self, other, "-", True)

    def __mul__(self, other):
        return _binary(self, other, "*", False)

    def __rmul__(self, other):
        return _binary(self, other, "*", True)

    def __truediv__(self, other):
        return _binary(self, other, "/", False)

    def __rtruediv__(self, other):
        return _binary(self, other, "/", True)

    def __neg__(self):
        from . import layers
        return layers.scale(self, scale=-1.0)


_ELEMENTWISE = {"+": "elementwise_add", "-": "elementwise_sub",
                "*": "elementwise_mul", "/": "elementwise_div"}


def _is_number(value):
    # bool is an int to Python, but `x + True` is more likely a mistake.
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _binary(var, other, op, reverse):
    """`var op other`, or `other op var` when reverse."""
    from . import layers
    if isinstance(other, Variable):
        x, y = (other, var) if reverse else (var, other)
        return getattr(layers, _ELEMENTWISE[op])(x, y)
    if not _is_number(other):
        left, right = ((type(other).__name__, "Variable") if reverse
                       else ("Variable", type(other).__name__))
        raise TypeError(
            f"unsupported operand types for {op}: '{left}' and '{right}'; "
            "a Variable combines with a Variable or a Python int or float")
    c = float(other)
    if op == "+":
        return layers.scale(var, bias=c)
    if op == "*":
        return layers.scale(var, scale=c)
    if op == "-":
        # x - c, or c - x = -x + c.
        return (layers.scale(var, scale=-1.0, bias=c) if reverse
                else layers.scale(var, bias=-c))
    if not reverse:
        if c == 0.0:
            raise ZeroDivisionError(f"{var.name} / 0")
        return layers.scale(var, scale=1.0 / c)
    # c / x = c * x^-1: no scale op expresses it, and the constant must be
    # the broadcast operand (Y), which shapes it [1].
    minus_one = layers.fill_constant([1], var.dtype, -1.0)
    return layers.scale(layers.elementwise_pow(var, minus_one), scale=c)


class Program:
    """A program: the C++ ProgramDesc plus, for main programs, the builder
    that appends to it (one per main/startup pair). Programs built here
    have one block; a program loaded or transpiled may have more (a
    parameter server's optimize blocks)."""

    def __init__(self, desc=None):
        self.desc = desc if desc is not None else _core.ProgramDesc()
        self._builders = {}
        self._seed = 0

    @property
    def random_seed(self):
        """The seed every initialiser and dropout mask of the program
        derives from; set it before building."""
        return self._seed

    @random_seed.setter
    def random_seed(self, seed):
        self._seed = int(seed)

    def builder(self, startup):
        """The C++ builder appending to this program and `startup`."""
        key = startup.desc.id
        if key not in self._builders:
            self._builders[key] = _core.Builder(self.desc, startup.desc,
                                                self._seed)
        # Generated names count from the process's counters (unique_name).
        from . import unique_name
        self._builders[key].set_name_counters(unique_name._current())
        return self._builders[key]

    def var(self, name):
        """The Variable `name` of block 0 (KeyError when there is none)."""
        if not self.desc.has_var(name):
            raise KeyError(f"program has no variable '{name}'")
        return Variable(self, name)

    @property
    def num_blocks(self):
        """The number of blocks (1 for a program built here)."""
        return self.desc.num_blocks

    @property
    def blocks(self):
        """The blocks, in index order."""
        return [Block(self, i) for i in range(self.num_blocks)]

    def global_block(self):
        """Block 0, the one every op of a program built here lives in."""
        return Block(self, 0)

    def current_block(self):
        """The block layers append to: block 0."""
        return Block(self, 0)

    def block(self, index):
        """Block `index` (IndexError outside [0, num_blocks))."""
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"program.block({index!r}): expected an int")
        n = self.num_blocks
        if not 0 <= index < n:
            blocks = ("one block, block 0" if n == 1
                      else f"{n} blocks, 0 to {n - 1}")
            raise IndexError(f"program.block({index}): the program has "
                             f"{blocks}")
        return Block(self, index)

    def list_vars(self):
        """The variables of every block, block by block, each in
        declaration order."""
        return [v for b in self.blocks for v in b._var_list()]

    def all_parameters(self):
        """The trainable parameters, in declaration order."""
        return [Variable(self, v["name"]) for v in self.desc.vars()
                if v["trainable"]]

    @property
    def is_startup(self):
        """True for a startup program (tagged in the ProgramDesc by the
        builder, program_guard, load_job and the transpilers)."""
        return self.desc.is_startup

    def ops(self):
        """The ops of block 0, as dicts (type, inputs, outputs, roles: a list
        of "forward", "backward", "optimize", "collective", "reader",
        "loss"). block(i).ops gives Operator objects."""
        return self.desc.ops()

    def op_types(self):
        """The types of block 0's ops, in order."""
        return [op["type"] for op in self.desc.ops()]

    def clone(self, for_test=False):
        """A copy of the program; for_test: its forward part only, every
        op with an is_test attribute in test mode (make it before
        minimize)."""
        return Program(self.desc.clone_for_test() if for_test
                       else self.desc.clone())

    def serialize(self):
        """The ProgramDesc as protobuf bytes (Program.parse reads them)."""
        return self.desc.serialize()

    @staticmethod
    def parse(data):
        """The Program of protobuf bytes that serialize() wrote."""
        return Program(_core.ProgramDesc.parse(data))

    def to_string(self, throw_on_error, with_details=False):
        """The program as text, block by block: each var (dtype, shape,
        persistable, trainable) and each op (its slots and the vars bound
        to them). with_details adds each var's stop_gradient and
        lod_level, and each op's roles, attributes and the lines of user
        code that built it. throw_on_error: raise ValueError when an op
        reads or writes a var that neither its block nor an enclosing one
        declares.

            >>> print(main.to_string(True))
            block 0 (parent -1): 4 vars, 2 ops
              var x: float32 [-1, 3]
              ...
              op #0 mul(X=[x], Y=[fc_0.w_0]) -> (Out=[fc_0.tmp_0])
        """
        _check_bools("Program.to_string", throw_on_error=throw_on_error,
                     with_details=with_details)
        return "".join(b.to_string(throw_on_error, with_details)
                       for b in self.blocks)

    def __str__(self):
        return self.to_string(True)


def _check_bools(where, **args):
    for name, value in args.items():
        if not isinstance(value, bool):
            raise TypeError(f"{where}({name}={value!r}): expected a bool")


class Block:
    """A block of a program, as Fluid's Program.block(i) gives it: its vars
    and its ops (Operator objects)."""

    def __init__(self, program, idx=0):
        self.program = program
        self.idx = idx

    @property
    def parent_idx(self):
        """The index of the enclosing block, -1 for block 0."""
        return self.program.desc.block_parent(self.idx)

    def _var_list(self):
        return [Variable(self.program, v["name"], self.idx)
                for v in self.program.desc.vars(self.idx)]

    @property
    def vars(self):
        """{name: Variable} of the block."""
        return {v.name: v for v in self._var_list()}

    def var(self, name):
        """The Variable `name` of this block (ValueError when the block
        has none)."""
        if not self.has_var(name):
            raise ValueError(f"var '{name}' is not in block {self.idx}")
        return Variable(self.program, name, self.idx)

    def has_var(self, name):
        """Whether the block declares `name`."""
        return self.program.desc.has_var(name, self.idx)

    @property
    def ops(self):
        """The ops of the block, in order, as Operator objects."""
        return [Operator(self, i, info) for i, info in enumerate(
            self.program.desc.ops(self.idx, attrs=True))]

    def all_parameters(self):
        """The trainable parameters of the block."""
        return [v for v in self._var_list() if v._info["trainable"]]

    def to_string(self, throw_on_error, with_details=False):
        """The block as text (see Program.to_string)."""
        _check_bools("Block.to_string", throw_on_error=throw_on_error,
                     with_details=with_details)
        infos = self.program.desc.vars(self.idx)
        ops = self.ops
        if throw_on_error:
            self._check_declared(ops)
        lines = [f"block {self.idx} (parent {self.parent_idx}): "
                 f"{len(infos)} vars, {len(ops)} ops"]
        lines += ["  var " + _var_text(v, with_details) for v in infos]
        for op in ops:
            lines += ["  " + l for l in op._lines(with_details)]
        return "\n".join(lines) + "\n"

    def _check_declared(self, ops):
        declared, b = set(), self.idx
        while b >= 0:
            declared.update(v["name"] for v in self.program.desc.vars(b))
            b = self.program.desc.block_parent(b)
        for op in ops:
            for what, names in (("reads", op.input_arg_names),
                                ("writes", op.output_arg_names)):
                for name in names:
                    if name != _EMPTY_VAR and name not in declared:
                        raise ValueError(
                            f"op #{op.idx} '{op.type}' of block {self.idx} "
                            f"{what} '{name}', which neither the block nor "
                            "an enclosing one declares")


_EMPTY_VAR = "@EMPTY@"  # an output slot bound to it is not computed


def _var_text(v, details):
    text = f"{v['name']}: {v['dtype']} {list(v['shape'])}"
    flags = [f for f in ("persistable", "trainable") if v[f]]
    if details:
        flags += ["stop_gradient"] if v["stop_gradient"] else []
        flags += [f"lod_level {v['lod_level']}"] if v["lod_level"] else []
    return text + "".join(", " + f for f in flags)


_CALLSTACK = "op_callstack"


class Operator:
    """An op of a block, as Fluid's Operator: its type, slots, the vars
    bound to them and its attributes, read from the block when the op
    was listed. op["type"], op["inputs"], op["outputs"], op["roles"] give
    the dict of Program.ops()."""

    def __init__(self, block, idx, info):
        self.block = block
        self.idx = idx
        self._info = info

    @property
    def type(self):
        """The op's type, e.g. "mul"."""
        return self._info["type"]

    @property
    def input_names(self):
        """The op's input slots, e.g. ["X", "Y"]."""
        return list(self._info["inputs"])

    @property
    def output_names(self):
        """The op's output slots, e.g. ["Out"]."""
        return list(self._info["outputs"])

    @property
    def input_arg_names(self):
        """Every var the op reads, slot by slot."""
        return [n for v in self._info["inputs"].values() for n in v]

    @property
    def output_arg_names(self):
        """Every var the op writes, slot by slot."""
        return [n for v in self._info["outputs"].values() for n in v]

    def _slot(self, kind, name):
        slots = self._info[kind]
        if name not in slots:
            raise ValueError(f"op '{self.type}' has no {kind[:-1]} slot "
                             f"'{name}'; its {kind}: "
                             f"{', '.join(slots) or 'none'}")
        return list(slots[name])

    def input(self, name):
        """The names of the vars bound to input slot `name` (ValueError
        naming the op's slots when it has no such slot)."""
        return self._slot("inputs", name)

    def output(self, name):
        """The names of the vars bound to output slot `name`."""
        return self._slot("outputs", name)

    @property
    def attr_names(self):
        """The names of the op's attributes."""
        return list(self._info["attrs"])

    def has_attr(self, name):
        """Whether the op holds attribute `name`."""
        return name in self._info["attrs"]

    def attr(self, name):
        """The value of attribute `name` (ValueError naming the op's
        attributes when it has no such one)."""
        attrs = self._info["attrs"]
        if name not in attrs:
            raise ValueError(f"op '{self.type}' has no attribute '{name}'; "
                             f"its attributes: {', '.join(attrs) or 'none'}")
        return attrs[name]

    def all_attrs(self):
        """{name: value} of every attribute (op_role, and op_callstack,
        the lines of user code that built the op, included)."""
        return dict(self._info["attrs"])

    def __getitem__(self, key):
        if key == "attrs":
            raise KeyError("attrs: use op.all_attrs()")
        return self._info[key]

    def _lines(self, details):
        def slots(d):
            return ", ".join(f"{k}=[{', '.join(v)}]" for k, v in d.items())
        lines = [f"op #{self.idx} {self.type}({slots(self._info['inputs'])})"
                 f" -> ({slots(self._info['outputs'])})"]
        if details:
            lines.append("  roles: " + ", ".join(self._info["roles"]))
            attrs = {k: v for k, v in self._info["attrs"].items()
                     if k != _CALLSTACK}
            if attrs:
                lines.append("  attrs: " + ", ".join(
                    f"{k}={v!r}" for k, v in sorted(attrs.items())))
            lines += ["  built at " + f
                      for f in self._info["attrs"].get(_CALLSTACK, [])]
        return lines

    def to_string(self, throw_on_error=True):
        """The op as one line of text, with its attributes."""
        return "\n".join(self._lines(True))

    def __str__(self):
        return self.to_string()

    def __repr__(self):
        return f"Operator(#{self.idx} {self.type!r} of block {self.block.idx})"


def _as_startup(program):
    """Tags `program` as a startup program in its ProgramDesc: executors run
    it to initialise a scope (see MPIExecutor)."""
    program.desc.mark_startup()
    return program


_main = Program()
_startup = _as_startup(Program())


def default_main_program():
    """The main program layers append to outside any program_guard."""
    return _main


def default_startup_program():
    """The startup program initialisers go to outside any program_guard."""
    return _startup


def reset_default_programs():
    """Fresh default programs (for scripts and tests that build twice)."""
    global _main, _startup
    _main, _startup = Program(), _as_startup(Program())


@contextlib.contextmanager
def program_guard(main_program, startup_program=None):
    """Layers built inside the block go to these programs."""
    global _main, _startup
    saved = (_main, _startup)
    _main = main_program
    if startup_program is not None:
        _startup = _as_startup(startup_program)
    try:
        yield
    finally:
        _main, _startup = saved


# fluid.name_scope's stack: [(prefix, {child name: times used})].
_name_scopes = [("/", {})]


@contextlib.contextmanager
def name_scope(prefix=None):
    """Ops built inside the block record the scope they were built in, as
    their op_namescope attribute ("/encoder/", nested: "/encoder/attn/"; a
    name used again at the same level gets "_1", "_2", ...), which
    Program.to_string shows. It only annotates: what the program computes
    does not change, and comparisons of programs leave it out.

        >>> with fluid.name_scope("encoder"):
        ...     hidden = fluid.layers.fc(x, 64)
    """
    if prefix is not None and (not isinstance(prefix, str) or not prefix
                               or "/" in prefix):
        raise ValueError(f"name_scope({prefix!r}): a name without '/'")
    parent, used = _name_scopes[-1]
    name = prefix or ""
    times = used.get(name, 0)
    used[name] = times + 1
    if times:
        name = f"{name}_{times}"
    _name_scopes.append((f"{parent}{name}/", {}))
    _core.set_name_scope(_name_scopes[-1][0])
    try:
        yield
    finally:
        _name_scopes.pop()
        outer = _name_scopes[-1][0]
        _core.set_name_scope("" if outer == "/" else outer)


# fluid.pipeline_stage's stack of stages (the innermost last).
_pipeline_stages = []


def _check_stage(stage, where):
    if isinstance(stage, bool) or not isinstance(stage, numbers.Integral) \
            or stage < 0:
        raise ValueError(f"{where}: a stage is an int >= 0 (0 for the "
                         f"first stage), got {stage!r}")
    return int(stage)


@contextlib.contextmanager
def pipeline_stage(stage):
    """Ops appended to the main program inside the block get the int attr
    pipeline_stage = `stage`, which places them on that stage of a
    pipeline (fluid.MPIExecutor with a DistributedStrategy that cuts the
    program into stages, or fluid.optimizer.PipelineOptimizer): stage 0
    runs first. An op without the attr runs on the stage of the
    op before it; backward and optimizer ops follow their forward ops and
    parameters wherever they are built. Blocks nest (the innermost wins).
    Without a pipeline the attr changes nothing: one process runs the
    whole program.

        >>> with fluid.pipeline_stage(0):
        ...     hidden = fluid.layers.fc(x, 64, act="relu")
        >>> with fluid.pipeline_stage(1):
        ...     loss = fluid.layers.mean(fluid.layers.square_error_cost(
        ...         fluid.layers.fc(hidden, 1), y))
    """
    stage = _check_stage(stage, f"pipeline_stage({stage!r})")
    _pipeline_stages.append(stage)
    _core.set_pipeline_stage(stage)
    try:
        yield
    finally:
        _pipeline_stages.pop()
        _core.set_pipeline_stage(
            _pipeline_stages[-1] if _pipeline_stages else -1)


@contextlib.contextmanager
def device_guard(device=None):
    """Fluid's device_guard, for PipelineOptimizer programs: the index of
    "gpu:k" is the pipeline stage of the ops built inside the block (as
    `with fluid.pipeline_stage(k)`), so that a Fluid 1.8 pipeline built
    with device_guard("gpu:0") ... device_guard("gpu:1") cuts the same
    way here. "cpu", "gpu" and None name no stage and leave the
    enclosing one in force. The device itself is not changed: every op
    runs on the executor's place (under MPIExecutor, each rank's), so
    "cpu" does not move an op to the host.

        >>> with fluid.device_guard("gpu:0"):
        ...     hidden = fluid.layers.fc(x, 64)
        >>> with fluid.device_guard("gpu:1"):
        ...     loss = fluid.layers.mean(fluid.layers.fc(hidden, 1))
    """
    if device is None or device in ("cpu", "gpu"):
        yield
        return
    kind, _, index = device.partition(":") if isinstance(device, str) \
        else ("", "", "")
    if kind != "gpu" or not index.isdigit():
        raise ValueError(f"device_guard({device!r}): give 'cpu', 'gpu' or "
                         "'gpu:k' (k, an int >= 0, is the pipeline stage of "
                         "the ops built inside)")
    with pipeline_stage(int(index)):
        yield


def current_builder():
    """(builder, program): the C++ builder of the current main and startup
    programs (those of the enclosing program_guard, else the defaults),
    and the main program. Layers append through it."""
    return _main.builder(_startup), _main
