"""Generated names (fc_0, fc_0.w_0, ...) unique in the process, as Fluid's
unique_name: two programs built one after the other, then run in one
scope, never give two different vars the same name. guard() counts from
zero again inside its block (tests, or a program built apart)."""
import contextlib

from . import _core

__all__ = ["guard"]

_counters = _core.NameCounters()


def _current():
    return _counters


@contextlib.contextmanager
def guard(new_generator=None):
    """Inside the block, names are counted from a fresh generator."""
    global _counters
    if new_generator is not None and not isinstance(new_generator,
                                                    _core.NameCounters):
        raise TypeError("unique_name.guard(new_generator=...): only None "
                        "(a fresh generator) is supported here")
    saved = _counters
    _counters = new_generator or _core.NameCounters()
    try:
        yield
    finally:
        _counters = saved
