"""Tensor memory: what a job will need (the memory plan) and what this
process holds (the allocator's counters), per place.

    plan = fluid.memory_plan(main_program, batch_size=64)
    print(plan)                      # the plan, readable
    plan["total"], plan["largest"]   # the numbers

    fluid.memory.max_memory_allocated()   # bytes, the high-water mark
    fluid.memory.reset_max_memory_allocated()

The executor frees each temporary tensor after its last use (eager
deletion, as Fluid's FLAGS_eager_delete_tensor_gb=0); set the environment
variable FLAGS_eager_delete_tensor_gb=-1 before the first executor starts to
keep them (for debugging), or call `set_eager_deletion(exe, False)`.
See docs/memory.md.
"""
from . import _core
from .executor import _device_of

__all__ = ["memory_plan", "MemoryPlan", "memory_allocated",
           "max_memory_allocated", "reset_max_memory_allocated",
           "memory_usage", "set_eager_deletion"]


class MemoryPlan(dict):
    """The memory plan of one rank, a dict of byte counts: "parameters",
    "optimizer_state", "other_state", "communication" (the gradient
    buckets), "gradients" and "activations" (the temporaries live at the
    peak), "total" (their sum); "peak_op" and "peak_op_type" (where the
    peak is), "largest" (a list of (name, kind, bytes), largest first),
    "nranks" and "batch_size". `str(plan)` is the readable plan."""

    def __str__(self):
        return self["text"]

    __repr__ = __str__


def memory_plan(program, strategy=None, nranks=1, batch_size=None,
                startup_program=None):
    """The bytes one rank will hold to train `program` (a main program with
    its optimizer) on `nranks` ranks with `strategy` (a
    fluid.DistributedStrategy, or None for the program's defaults) at
    `batch_size` samples per rank, before anything runs: parameters,
    gradients, optimizer state, communication buffers and the peak of the
    activations, simulated over the program's ops as the executor frees
    them. `startup_program` (default fluid.default_startup_program()) is
    the program that initialises `program`'s parameters and optimizer
    state: sharding (stages 1-3) reads from it how each state is made.
    Returns a MemoryPlan (a dict; str() prints it)."""
    from .framework import Program, default_startup_program
    from .distributed_strategy import DistributedStrategy
    if not isinstance(program, Program):
        raise TypeError("memory_plan: program must be a fluid.Program, got "
                        f"{type(program).__name__}")
    if strategy is None:
        strategy = DistributedStrategy()
    if not isinstance(strategy, DistributedStrategy):
        raise TypeError("memory_plan: strategy must be a "
                        "fluid.DistributedStrategy or None, got "
                        f"{type(strategy).__name__}")
    if isinstance(nranks, bool) or not isinstance(nranks, int) or nranks < 1:
        raise ValueError(f"memory_plan: nranks must be an int >= 1, got "
                         f"{nranks!r}")
    if (isinstance(batch_size, bool) or not isinstance(batch_size, int)
            or batch_size < 1):
        raise ValueError("memory_plan: batch_size (samples per rank) must be "
                         f"an int >= 1, got {batch_size!r}")
    if startup_program is None:
        startup_program = default_startup_program()
    if not isinstance(startup_program, Program):
        raise TypeError("memory_plan: startup_program must be a "
                        "fluid.Program or None, got "
                        f"{type(startup_program).__name__}")
    return MemoryPlan(_core.memory_plan(program.desc.serialize(),
                                        strategy._bytes, nranks, batch_size,
                                        startup_program.desc.serialize()))


def memory_usage(place=None):
    """The tensor memory of `place` (default the CPU) as a dict of bytes:
    "in_use" (now), "peak" (the most at once since the last reset),
    "cached" (freed blocks kept for reuse), and the counts "allocations"
    and "system_allocations" (blocks the cache had to ask the system
    for)."""
    return dict(_core.memory_usage(_device_of(place)))


def memory_allocated(place=None):
    """Bytes of tensor memory in use at `place` (default the CPU) now."""
    return memory_usage(place)["in_use"]


def max_memory_allocated(place=None):
    """The most bytes of tensor memory in use at once at `place` (default
    the CPU) since the process started or the last
    reset_max_memory_allocated."""
    return memory_usage(place)["peak"]


def reset_max_memory_allocated(place=None):
    """Restarts max_memory_allocated at `place` from what is in use now."""
    _core.reset_peak_memory(_device_of(place))


def set_eager_deletion(executor, enable):
    """Turns eager deletion on or off for the programs `executor` (a
    fluid.Executor) prepares from now on (programs it ran already keep
    their setting)."""
    from .executor import Executor
    if not isinstance(executor, Executor):
        raise TypeError("set_eager_deletion: executor must be a "
                        f"fluid.Executor, got {type(executor).__name__}")
    executor._core.set_eager_deletion(bool(enable))
