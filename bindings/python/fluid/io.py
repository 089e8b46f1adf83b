"""Saving and loading: whole training jobs (the model.pb the `trainer`
command reads) and parameters (the checkpoint format: atomic, with a
manifest; loading checks names, dtypes and shapes); and the reader
decorators of fluid.reader (batch, shuffle, shard, ...)."""
from . import _core
from .reader import (ComposeNotAligned, batch, buffered, chain, compose,
                     firstn, map_readers, shard, shuffle, xmap_readers)
from .executor import global_scope
from .framework import Program, default_main_program, default_startup_program

__all__ = [
    "save_job", "load_job", "save_params", "load_params",
    "save_persistables", "load_persistables",
    # fluid.io.batch, ... as in Fluid (see reader.py)
    "ComposeNotAligned", "batch", "buffered", "chain", "compose", "firstn",
    "map_readers", "shard", "shuffle", "xmap_readers",
]


def _name(v):
    return v.name if hasattr(v, "name") else str(v)


def save_job(path, main_program=None, startup_program=None, feeds=(),
             loss=None, metrics=()):
    """Writes a TrainingJob for `trainer --program path`. `feeds` in the
    order the trainer's reader yields them (image, label)."""
    main_program = main_program or default_main_program()
    startup_program = startup_program or default_startup_program()
    if loss is None:
        raise ValueError("save_job needs the loss variable")
    _core.save_job(path, main_program.desc, startup_program.desc,
                   [_name(f) for f in feeds], _name(loss),
                   [_name(m) for m in metrics])


def load_job(path):
    """Returns dict(main=Program, startup=Program, feeds, loss, metrics)."""
    d = _core.load_job(path)
    d["main"] = Program(d["main"])
    d["startup"] = Program(d["startup"])  # tagged startup by _core
    return d


def save_params(executor, dirname, main_program=None, scope=None, step=0,
                epoch=0):
    main_program = main_program or default_main_program()
    _core.save_checkpoint((scope or global_scope())._core, main_program.desc,
                          dirname, step, epoch)


def load_params(executor, dirname, main_program=None, scope=None):
    """Loads every persistable var of the program; returns (step, epoch)."""
    main_program = main_program or default_main_program()
    return _core.load_checkpoint((scope or global_scope())._core,
                                 main_program.desc, dirname)


save_persistables, load_persistables = save_params, load_params
