"""Executors. Executor runs a program in this process; MPIExecutor runs the
same scripts data-parallel when launched as `mpirun -np N python train.py`:
it transpiles the program for the world size on first use (allreduce of the
gradients before the optimizer), checks all ranks hold the same program,
and broadcasts rank 0's parameters."""
import numpy as np

from . import _core
from .framework import Program, default_main_program


class CPUPlace:
    def __repr__(self):
        return "CPUPlace()"


class CUDAPlace:
    """A CUDA device. CUDAPlace(i) is device i; CUDAPlace() is the device of
    this process's node-local rank under mpirun (modulo the visible device
    count), device 0 otherwise, which is what a data-parallel script wants
    on every rank."""

    def __init__(self, device_id=None):
        self.device_id = device_id

    def __repr__(self):
        return "CUDAPlace()" if self.device_id is None else \
            f"CUDAPlace({self.device_id})"


def is_compiled_with_cuda():
    """True when the native core was built with the CUDA path."""
    return _core.built_with_cuda()


def cuda_device_count():
    """CUDA devices visible to this process (0 without CUDA or a GPU)."""
    return _core.cuda_device_count()


def _device_of(place):
    """The native device index for `place`: -1 for the CPU. A CUDA place
    that cannot be used raises NotImplementedError (no CUDA in this build,
    or no device visible) or ValueError (no such device), naming why."""
    if place is None or isinstance(place, CPUPlace):
        return -1
    if not isinstance(place, CUDAPlace):
        raise TypeError(f"place must be CPUPlace or CUDAPlace, got {place!r}")
    if not _core.built_with_cuda():
        raise NotImplementedError(
            f"{place!r}: this build has no CUDA (configure with WITH_CUDA=ON)")
    count = _core.cuda_device_count()
    if count == 0:
        raise NotImplementedError(f"{place!r}: no CUDA device is visible")
    device = _core.local_rank_device() if place.device_id is None \
        else int(place.device_id)
    if not 0 <= device < count:
        raise ValueError(f"{place!r}: {count} CUDA device(s) visible "
                         f"(0..{count - 1})")
    return device


class Scope:
    """Variables by name; parameters live here across runs."""

    def __init__(self):
        self._core = _core.Scope()

    def var_names(self):
        return self._core.var_names()

    def find_var(self, name):
        return self._core.get(name) if self._core.has(name) else None

    def get(self, name):
        return self._core.get(name)

    def set(self, name, value):
        self._core.set(name, np.asarray(value))


_global_scope = Scope()


def global_scope():
    return _global_scope


def _names(fetch_list):
    return [f.name if hasattr(f, "name") else str(f) for f in fetch_list or []]


def _feed(feed):
    out = {}
    for k, v in (feed or {}).items():
        out[k.name if hasattr(k, "name") else str(k)] = np.asarray(v)
    return out


class Executor:
    def __init__(self, place=None, threads=1):
        device = _device_of(place)
        self.place = place or CPUPlace()
        self._core = _core.Executor(int(threads), device)
        # Prepared programs point into the scopes they ran on: keep those
        # scopes alive as long as this executor.
        self._scopes = {}

    def run(self, program=None, feed=None, fetch_list=None, scope=None):
        """Runs `program` (default: the default main program) once; returns
        the fetched values as NumPy arrays, in fetch_list order."""
        program = program or default_main_program()
        scope = scope or global_scope()
        self._scopes[id(scope)] = scope
        return list(self._core.run(program.desc, scope._core, _feed(feed),
                                   _names(fetch_list)))


class MPIExecutor:
    """Same `run` as Executor. Run the startup program first, as with
    Executor; the first run of a main program transpiles it for the world
    size (unless it already is), checks every rank holds the same program,
    re-runs the startup program with parameters broadcast from rank 0, and
    prepares it. Works when launched by mpirun and in a single process."""

    def __init__(self, place=None, threads=1, bucket_mb=4.0, overlap=True):
        self._device = _device_of(place)
        self.place = place or CPUPlace()
        self._threads = int(threads)
        self._bucket_bytes = int(bucket_mb * (1 << 20))
        self._overlap = bool(overlap)
        self._startup = None
        self._local = _core.Executor(self._threads, self._device)
        self._runs = {}  # main program id -> _core.MPIExecutor
        self._scopes = {}  # kept alive: prepared programs point into them
        self._probe = _core.MPIExecutor(self._threads, self._device)

    @property
    def rank(self):
        return self._probe.rank

    @property
    def world_size(self):
        return self._probe.world_size

    def run(self, program=None, feed=None, fetch_list=None, scope=None):
        program = program or default_main_program()
        scope = scope or global_scope()
        self._scopes[id(scope)] = scope
        if getattr(program, "_is_startup", False):
            self._startup = program
            # A transpiled startup (with its broadcasts) runs through the
            # communicator when the main program is first run; a plain one
            # runs here too, so its values can be read at once.
            if not any(op["type"].startswith("c_") for op in program.ops()):
                self._local.run(program.desc, scope._core, {}, [])
            return []
        key = (program.desc.id, program.desc.version, id(scope))
        run = self._runs.get(key)
        if run is None:
            if self._startup is None:
                raise ValueError(
                    "run the startup program with this executor before the "
                    "main program")
            run = self._probe if not self._runs else _core.MPIExecutor(
                self._threads, self._device)
            run.init(program.desc, self._startup.desc, scope._core,
                     self._bucket_bytes, self._overlap)
            self._runs[key] = run
        return list(run.run(_feed(feed), _names(fetch_list)))

    def check_consistency(self):
        """Compares parameter checksums across ranks; raises
        CollectiveError naming the first parameter that differs."""
        for run in self._runs.values():
            run.check_consistency()

    def transpiled_program(self, program=None):
        program = program or default_main_program()
        for (pid, _, _), run in self._runs.items():
            if pid == program.desc.id:
                return Program(run.transpiled_main())
        raise KeyError("the program has not been run by this executor")
