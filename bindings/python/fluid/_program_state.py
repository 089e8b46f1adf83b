"""Fluid 1.6's program-state files: `fluid.save(program, model_path)` writes
model_path.pdparams (the parameters), model_path.pdopt (the other
persistable vars: optimizer state, learning rates, counters) and
model_path.pdmodel (the program); `fluid.load`, `load_program_state` and
`set_program_state` read them back. The .pdparams and .pdopt files are
pickles of {name: numpy array}, the layout Fluid 1.6-1.8 writes, so files
move between the two. Reading unpickles only numpy arrays and plain
containers: a file that asks for anything else is refused.

For checkpoints that resume training (every rank, sharded state, a manifest
with checksums) use fluid.io.save_persistables / load_persistables.
"""
import io as _io
import os
import pickle
import tempfile

import numpy as np

from .executor import global_scope
from .framework import Program

__all__ = ["get_program_parameter", "get_program_persistable_vars", "load",
           "load_program_state", "save", "set_program_state"]

# What a state file may reconstruct: numpy arrays and their dtypes.
_ALLOWED = {("numpy.core.multiarray", "_reconstruct"),
            ("numpy.core.multiarray", "scalar"), ("numpy", "ndarray"),
            ("numpy", "dtype"), ("_codecs", "encode"),
            ("numpy.core.numeric", "_frombuffer")}


class _ArrayUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(
            f"a program-state file holds only numpy arrays; this one asks "
            f"for {module}.{name}")


def _check_program(program, what):
    if not isinstance(program, Program):
        raise TypeError(f"{what}: expected a fluid.Program, got "
                        f"{type(program).__name__}")


def get_program_parameter(program):
    """The trainable parameters of `program`, as Variables."""
    _check_program(program, "get_program_parameter")
    return [v for v in program.list_vars()
            if v.persistable and program.desc.var(v.name)["trainable"]]


def get_program_persistable_vars(program):
    """Every persistable var of `program` (parameters and optimizer
    state), as Variables."""
    _check_program(program, "get_program_persistable_vars")
    return [v for v in program.list_vars() if v.persistable]


def _split(program):
    params = {v.name for v in get_program_parameter(program)}
    others = [v.name for v in get_program_persistable_vars(program)
              if v.name not in params]
    return sorted(params), sorted(others)


def _write_atomically(path, data):
    """Writes `data` to `path` whole or not at all."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".fluid-save-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def _values(scope, names, what):
    out = {}
    for name in names:
        if name not in scope.var_names():
            raise ValueError(f"{what}: the scope holds no value of '{name}': "
                             "run the startup program first")
        out[name] = np.asarray(scope.get(name))
    return out


def save(program, model_path, scope=None):
    """Writes `program`'s parameters to model_path.pdparams, its other
    persistable vars to model_path.pdopt and the program to
    model_path.pdmodel, from `scope` (default: the global scope). Each file
    is written whole or not at all."""
    _check_program(program, "fluid.save")
    if not model_path or os.path.basename(model_path) == "":
        raise ValueError(f"fluid.save(model_path={model_path!r}): a path "
                         "prefix such as 'out/model', not a directory")
    scope = scope or global_scope()
    params, others = _split(program)
    for suffix, names in ((".pdparams", params), (".pdopt", others)):
        state = _values(scope, names, "fluid.save")
        _write_atomically(model_path + suffix,
                          pickle.dumps(state, protocol=2))
    _write_atomically(model_path + ".pdmodel", program.desc.serialize())


def _read_state(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    try:
        state = _ArrayUnpickler(_io.BytesIO(data)).load()
    except (pickle.UnpicklingError, EOFError, ValueError) as e:
        raise ValueError(f"{path} is not a program-state file: {e}") from None
    if not isinstance(state, dict) or not all(
            isinstance(k, str) and isinstance(v, np.ndarray)
            for k, v in state.items()):
        raise ValueError(f"{path} is not a program-state file: expected a "
                         "dict of names to numpy arrays")
    return state


def load_program_state(model_path, var_list=None):
    """{name: numpy array} from model_path.pdparams and, when present,
    model_path.pdopt; with `var_list` (Variables or names), only those, each
    of which must be there."""
    state = _read_state(model_path + ".pdparams")
    if os.path.exists(model_path + ".pdopt"):
        state.update(_read_state(model_path + ".pdopt"))
    if var_list is None:
        return state
    names = [v.name if hasattr(v, "name") else str(v) for v in var_list]
    missing = [n for n in names if n not in state]
    if missing:
        raise ValueError(f"load_program_state({model_path!r}): no value of "
                         f"{', '.join(missing)}")
    return {n: state[n] for n in names}


def set_program_state(program, state_dict, scope=None):
    """Sets `program`'s persistable vars in `scope` (default: the global
    scope) from `state_dict` ({name: array}); a var of another shape or
    dtype than the program declares is an error naming it, and nothing is
    set. Returns the names of the program's persistable vars the dict does
    not hold (left as they are)."""
    _check_program(program, "set_program_state")
    scope = scope or global_scope()
    chosen, unused = {}, []
    for var in get_program_persistable_vars(program):
        if var.name not in state_dict:
            unused.append(var.name)
            continue
        value = np.asarray(state_dict[var.name])
        want = [d for d in var.shape]
        if list(value.shape) != want and -1 not in want:
            raise ValueError(
                f"set_program_state: '{var.name}' is {want} in the program, "
                f"{list(value.shape)} in the state")
        if value.dtype != np.dtype(var.dtype):
            raise ValueError(
                f"set_program_state: '{var.name}' is {var.dtype} in the "
                f"program, {value.dtype} in the state")
        chosen[var.name] = value
    for name, value in chosen.items():
        scope.set(name, value)
    return sorted(unused)


def load(program, model_path, executor=None, var_list=None, scope=None):
    """Loads what fluid.save wrote for `program` into `scope` (default: the
    global scope): its parameters, and its other persistable vars when
    model_path.pdopt exists (a program with optimizer state and no .pdopt
    file loads its parameters only, and says which vars it left).
    `executor` is accepted for Fluid's signature; with `var_list`, only
    those vars."""
    _check_program(program, "fluid.load")
    state = load_program_state(model_path, var_list)
    left = set_program_state(program, state, scope)
    if var_list is None and left:
        import warnings
        warnings.warn(f"fluid.load({model_path!r}): no saved value of "
                      f"{', '.join(left)}; they keep their values",
                      stacklevel=2)
