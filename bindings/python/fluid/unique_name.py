"""Generated names (fc_0, fc_0.w_0, ...) unique in the process, as Fluid's
unique_name: two programs built one after the other, then run in one
scope, never give two different vars the same name. guard() counts from
zero again inside its block (tests, or a program built apart)."""
import contextlib

from . import _core

__all__ = ["generate", "guard", "switch"]

_counters = _core.NameCounters()


def _current():
    return _counters


def generate(key):
    """A new name "key_N", unique among the names generated with `key`
    (the layers' names count with these: generate("fc") after one fc layer
    gives "fc_1")."""
    if not isinstance(key, str) or not key:
        raise ValueError(f"unique_name.generate(key={key!r}): a non-empty "
                         "str")
    return _counters.generate(key)


def _check_generator(new_generator, what):
    if new_generator is not None and not isinstance(new_generator,
                                                    _core.NameCounters):
        raise TypeError(f"unique_name.{what}(new_generator=...): None (a "
                        "fresh generator) or one that switch() returned, "
                        f"got {type(new_generator).__name__}")


def switch(new_generator=None):
    """Makes `new_generator` (None: a fresh one, counting from zero) the
    generator of names; returns the one it replaces, which a later
    switch() can put back."""
    global _counters
    _check_generator(new_generator, "switch")
    old, _counters = _counters, new_generator or _core.NameCounters()
    return old


@contextlib.contextmanager
def guard(new_generator=None):
    """Inside the block, names are counted from a fresh generator."""
    global _counters
    _check_generator(new_generator, "guard")
    saved = _counters
    _counters = new_generator or _core.NameCounters()
    try:
        yield
    finally:
        _counters = saved
