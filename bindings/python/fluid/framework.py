"""Programs and variables. A Program wraps the C++ ProgramDesc; every layer
call goes through the C++ builder (shape inference, gradients and
initialisation all live there)."""
import contextlib
import numbers

from . import _core


class Variable:
    """A variable of a program: its name, with shape and dtype read from the
    program's declaration."""

    def __init__(self, program, name):
        self.program = program
        self.name = name

    @property
    def _info(self):
        return self.program.desc.var(self.name)

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
    that appends to it (one per main/startup pair)."""

    def __init__(self, desc=None):
        self.desc = desc if desc is not None else _core.ProgramDesc()
        self._builders = {}
        self._seed = 0

    @property
    def random_seed(self):
        return self._seed

    @random_seed.setter
    def random_seed(self, seed):
        self._seed = int(seed)

    def builder(self, startup):
        key = startup.desc.id
        if key not in self._builders:
            self._builders[key] = _core.Builder(self.desc, startup.desc,
                                                self._seed)
        # Generated names count from the process's counters (unique_name).
        from . import unique_name
        self._builders[key].set_name_counters(unique_name._current())
        return self._builders[key]

    def var(self, name):
        if not self.desc.has_var(name):
            raise KeyError(f"program has no variable '{name}'")
        return Variable(self, name)

    def global_block(self):
        """Block 0, the one every op of a program built here lives in."""
        return Block(self)

    def block(self, index):
        if index != 0:
            raise IndexError(f"program.block({index}): programs built here "
                             "have one block, block 0")
        return Block(self)

    def list_vars(self):
        """The variables of block 0, in declaration order."""
        return [Variable(self, v["name"]) for v in self.desc.vars()]

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
        "loss")."""
        return self.desc.ops()

    def op_types(self):
        return [op["type"] for op in self.desc.ops()]

    def clone(self, for_test=False):
        return Program(self.desc.clone_for_test() if for_test
                       else self.desc.clone())

    def serialize(self):
        return self.desc.serialize()

    @staticmethod
    def parse(data):
        return Program(_core.ProgramDesc.parse(data))

    def __str__(self):
        return self.desc.to_string()


class Block:
    """A program's block 0, as Fluid's Program.global_block() gives it."""

    idx = 0

    def __init__(self, program):
        self.program = program

    @property
    def vars(self):
        """{name: Variable} of the block."""
        return {v.name: v for v in self.program.list_vars()}

    def var(self, name):
        return self.program.var(name)

    def has_var(self, name):
        return self.program.desc.has_var(name)

    @property
    def ops(self):
        return self.program.ops()

    def all_parameters(self):
        return self.program.all_parameters()


def _as_startup(program):
    """Tags `program` as a startup program in its ProgramDesc: executors run
    it to initialise a scope (see MPIExecutor)."""
    program.desc.mark_startup()
    return program


_main = Program()
_startup = _as_startup(Program())


def default_main_program():
    return _main


def default_startup_program():
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


def current_builder():
    return _main.builder(_startup), _main
