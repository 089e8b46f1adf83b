"""Programs and variables. A Program wraps the C++ ProgramDesc; every layer
call goes through the C++ builder (shape inference, gradients and
initialisation all live there)."""
import contextlib

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

    def __repr__(self):
        return f"Variable({self.name!r}, shape={self.shape}, dtype={self.dtype})"


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
        return self._builders[key]

    def var(self, name):
        if not self.desc.has_var(name):
            raise KeyError(f"program has no variable '{name}'")
        return Variable(self, name)

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
