"""Saving and loading: whole training jobs (the model.pb the `trainer`
command reads); variables, parameters and persistables (the checkpoint
format: atomic, with a manifest; loading checks names, dtypes and shapes);
inference models (a pruned forward program with its parameters); and the
reader decorators of fluid.reader (batch, shuffle, shard, ...).

Where Fluid writes one file per variable (or, with `filename`, one file for
all), a save here is a checkpoint directory: `dirname` holds LATEST and
ckpt-<step>/ (one file per tensor and a manifest), or, with `filename`,
`dirname/filename` does. Under mpirun, save from one rank (rank 0): every
rank holds the same parameters; but a program trained with its optimizer
state sharded over the ranks is saved (and loaded) by every rank together:
see save_vars."""
import os

from . import _core
from ._program_state import (get_program_parameter,
                             get_program_persistable_vars, load,
                             load_program_state, save, set_program_state)
from .data_loader import DataLoader, PyReader
from .reader import (ComposeNotAligned, batch, buffered, cache, chain,
                     compose, firstn, map_readers, multiprocess_reader, shard,
                     shuffle, xmap_readers)
from . import executor as _executor
from .executor import global_scope
from .framework import Program, default_main_program, default_startup_program

__all__ = [
    "save_job", "load_job", "save_vars", "load_vars", "save_params",
    "load_params", "save_persistables", "load_persistables",
    "save_inference_model", "load_inference_model", "is_parameter",
    "is_persistable",
    # fluid.io.batch, ... as in Fluid (see reader.py)
    "ComposeNotAligned", "batch", "buffered", "cache", "chain", "compose",
    "firstn", "map_readers", "multiprocess_reader", "shard", "shuffle",
    "xmap_readers",
    # fluid.io.DataLoader.from_generator, fluid.io.PyReader (data_loader.py)
    "DataLoader", "PyReader",
    # Fluid 1.6's program-state files (_program_state.py)
    "get_program_parameter", "get_program_persistable_vars", "load",
    "load_program_state", "save", "set_program_state",
]


def _name(v):
    return v.name if hasattr(v, "name") else str(v)


# The data sets the trainer reads for a job (TrainingJob.data_set).
_DATA_SETS = ("character_lm", "images", "topics")


def save_job(path, main_program=None, startup_program=None, feeds=(),
             loss=None, metrics=(), data_set="images"):
    """Writes a TrainingJob for `trainer --program path`. `feeds` in the
    order the trainer's reader yields them (image, label). `data_set` is
    what the trainer reads for it: "images" (an MNIST-format directory),
    "character_lm" (fortunes as character windows: tokens, next) or
    "topics" (fortunes by topic: words, length, label)."""
    main_program = main_program or default_main_program()
    startup_program = startup_program or default_startup_program()
    if loss is None:
        raise ValueError("save_job needs the loss variable")
    if data_set not in _DATA_SETS:
        raise ValueError(f"save_job(data_set={data_set!r}): one of "
                         f"{', '.join(_DATA_SETS)}")
    _core.save_job(path, main_program.desc, startup_program.desc,
                   [_name(f) for f in feeds], _name(loss),
                   [_name(m) for m in metrics], data_set)


def load_job(path):
    """Returns dict(main=Program, startup=Program, feeds, loss, metrics,
    data_set) (data_set None for a job written before jobs declared it)."""
    d = _core.load_job(path)
    d["main"] = Program(d["main"])
    d["startup"] = Program(d["startup"])  # tagged startup by _core
    return d


def is_parameter(var):
    """A trainable parameter (what save_params saves)."""
    return bool(var.persistable and var.program.desc.var(var.name)
                ["trainable"])


def is_persistable(var):
    """Parameters and everything else that lives across runs: optimizer
    state, learning rates, counters (what save_persistables saves)."""
    return bool(var.persistable)


def _root(dirname, filename):
    if not dirname:
        raise ValueError("dirname must name a directory")
    if filename is None:
        return str(dirname)
    if not filename or "/" in filename or filename in (".", ".."):
        raise ValueError(f"filename '{filename}' must be a plain file name")
    return os.path.join(str(dirname), filename)


def _var_names(program, vars, predicate, what):
    if vars is None:
        chosen = [v for v in program.list_vars()
                  if (predicate or is_persistable)(v)]
    else:
        chosen = list(vars)
    names = sorted({_name(v) for v in chosen})
    if not names:
        raise ValueError(f"{what}: no variables to save or load")
    return names


def _program(main_program, where):
    """The Program to save or load: `main_program` (a CompiledProgram
    stands for its program, as in Fluid 1.7), by default the default main
    program."""
    from .compiler import CompiledProgram
    if main_program is None:
        return default_main_program()
    if isinstance(main_program, CompiledProgram):
        return main_program.program
    if not isinstance(main_program, Program):
        raise TypeError(f"{where}(main_program=...) takes a fluid.Program or "
                        f"CompiledProgram, got {type(main_program).__name__}")
    return main_program


def _sharded_run(executor, program, scope, names):
    """(mpi, run): the fluid.MPIExecutor, and its native executor, that
    trains `program` on `scope` keeping some of `names` in shards across
    the ranks (sharded optimizer state); (None, None) when none does."""
    mpi, run = _executor._training_run(executor, program, scope)
    if run is None or not run.in_shards(names):
        return None, None
    return mpi, run


def save_vars(executor, dirname, main_program=None, vars=None,
              predicate=None, filename=None, scope=None, step=0, epoch=0):
    """Saves `vars` (Variables or names), or the vars of `main_program` for
    which `predicate(var)` holds (default: the persistable ones), from
    `scope` (default: the global scope) into the checkpoint directory
    `dirname` (or `dirname/filename`). The values come from the scope.

    When a fluid.MPIExecutor trains `main_program` on `scope` with its
    optimizer state sharded over the ranks (DistributedStrategy.sharding;
    `executor` when it is that MPIExecutor, else the one that last trained
    the program there, e.g. behind a data-parallel CompiledProgram or
    fleet) and the vars include that state (save_persistables does;
    save_params does not: the parameters are whole on every rank), the
    save is collective: every rank calls it, the ranks gather the
    per-parameter state from their shards, rank 0 writes, and every rank
    raises when rank 0 could not. The checkpoint is the unsharded one: a
    plain Executor, or an MPIExecutor sharded or not on any number of
    ranks, loads it."""
    program = _program(main_program, "save_vars")
    names = _var_names(program, vars, predicate, "save_vars")
    scope = scope or global_scope()
    root = _root(dirname, filename)
    mpi, run = _sharded_run(executor, program, scope, names)
    if run is not None:
        mpi._save_vars(run, names, root, step, epoch)
        return
    _core.save_vars(scope._core, names, root, int(step), int(epoch))


def load_vars(executor, dirname, main_program=None, vars=None,
              predicate=None, filename=None, scope=None):
    """Loads the vars save_vars would choose with the same arguments from
    the newest intact checkpoint in `dirname` (or `dirname/filename`) into
    `scope`. The checkpoint may hold more vars than are loaded; a var it
    lacks, or one of another dtype or shape than `main_program` declares, is
    an error naming the var and the checkpoint, and nothing is loaded.
    Returns the checkpoint's (step, epoch).

    Into a scope where a fluid.MPIExecutor trains `main_program` with
    sharded optimizer state, a load of that state (see save_vars) is
    collective: every rank calls it, then every rank takes rank 0's
    values, and its shard of the optimizer state. A load before the first
    training run needs nothing more: that run starts from what the scope
    holds (rank 0's, for a sharded job)."""
    program = _program(main_program, "load_vars")
    names = _var_names(program, vars, predicate, "load_vars")
    scope = scope or global_scope()
    loaded = _core.load_vars(scope._core, program.desc,
                             names, _root(dirname, filename))
    mpi, run = _sharded_run(executor, program, scope, names)
    if run is not None:
        mpi._loaded(run)
    return loaded


def save_params(executor, dirname, main_program=None, filename=None,
                scope=None, step=0, epoch=0):
    """Saves the trainable parameters only (no optimizer state)."""
    save_vars(executor, dirname, main_program, predicate=is_parameter,
              filename=filename, scope=scope, step=step, epoch=epoch)


def load_params(executor, dirname, main_program=None, filename=None,
                scope=None):
    """Loads the trainable parameters (from a save_params or a
    save_persistables save); optimizer state in the scope is left as it
    is. Returns (step, epoch)."""
    return load_vars(executor, dirname, main_program, predicate=is_parameter,
                     filename=filename, scope=scope)


def save_persistables(executor, dirname, main_program=None, filename=None,
                      scope=None, step=0, epoch=0):
    """Saves every persistable var: parameters and optimizer state, all that
    resuming training needs."""
    save_vars(executor, dirname, main_program, predicate=is_persistable,
              filename=filename, scope=scope, step=step, epoch=epoch)


def load_persistables(executor, dirname, main_program=None, filename=None,
                      scope=None):
    """Loads every persistable var of the program; returns (step, epoch)."""
    return load_vars(executor, dirname, main_program,
                     predicate=is_persistable, filename=filename, scope=scope)


def save_inference_model(dirname, feeded_var_names, target_vars, executor,
                         main_program=None, model_filename=None,
                         params_filename=None, export_for_deployment=True,
                         scope=None):
    """Saves the part of `main_program` that computes `target_vars` from
    `feeded_var_names` (ops that train, communicate or compute the feeds
    are pruned away, and every op with an is_test attribute runs in test
    mode), with the parameters it reads, into `dirname`: the program in
    `model_filename` (default "__model__"), the parameters as a checkpoint in
    `dirname` or, with `params_filename`, in `dirname/params_filename`.
    The directory is written whole or not at all (built beside it and
    renamed). Returns the names of the targets."""
    if isinstance(feeded_var_names, str):
        feeded_var_names = [feeded_var_names]
    if not isinstance(target_vars, (list, tuple)):
        target_vars = [target_vars]
    if not export_for_deployment:
        raise NotImplementedError(
            "save_inference_model: export_for_deployment=False is not "
            "supported; the saved program is always the pruned one")
    program = main_program or default_main_program()
    feeds = [_name(v) for v in feeded_var_names]
    targets = [_name(v) for v in target_vars]
    scope = scope or global_scope()
    _core.save_inference_model(
        scope._core, program.desc, feeds, targets,
        str(dirname), model_filename or "__model__", params_filename or "")
    return targets


def load_inference_model(dirname, executor, model_filename=None,
                         params_filename=None, pserver_endpoints=None,
                         scope=None):
    """Loads a model save_inference_model wrote: its parameters go into
    `scope` (default: the global scope). Returns (program,
    feed_target_names, fetch_targets): run it as
    `executor.run(program, feed={name: value}, fetch_list=fetch_targets)`."""
    if pserver_endpoints is not None:
        raise NotImplementedError(
            "load_inference_model: pserver_endpoints: there are no "
            "parameter servers here; every parameter is in the model")
    desc, feeds, fetches = _core.load_inference_model(
        (scope or global_scope())._core, str(dirname),
        model_filename or "__model__", params_filename or "")
    program = Program(desc)
    return program, list(feeds), [program.var(n) for n in fetches]
