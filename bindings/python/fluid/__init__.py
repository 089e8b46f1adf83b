"""fluid: programs built in Python, run by the C++ executor, trained
data-parallel over MPI with no parameter server.

    import fluid
    image = fluid.layers.data("image", [1, 28, 28])
    ...
    exe = fluid.Executor(fluid.CPUPlace())        # one process
    exe = fluid.MPIExecutor(fluid.CPUPlace())     # under mpirun -np N
"""
from . import _core
from . import _job  # noqa: F401  (the job policy under mpirun; see _job.py)
from ._core import CollectiveError
from .framework import (Program, Variable, default_main_program,
                        default_startup_program, device_guard, name_scope,
                        pipeline_stage, program_guard,
                        reset_default_programs)
from .executor import (CPUPlace, CUDAPlace, Executor, IndependentRanksWarning,
                       MPIExecutor, Scope, cuda_device_count, global_scope,
                       is_compiled_with_cuda, scope_guard)
from . import core, layers, optimizer, reader, io, datasets, transpiler
from . import clip, regularizer, initializer, nets, unique_name
from . import metrics  # noqa: F401  (fluid.metrics: Accuracy, Auc, ...)
from .data_feeder import DataFeeder
from .lod_tensor import (LoDTensor, create_lod_tensor,
                         create_random_int_lodtensor)
from .transpiler import memory_optimize, release_memory
from .layers import ParamAttr
from .distributed_strategy import DistributedStrategy
from .transpiler import DistributeTranspiler, DistributeTranspilerConfig
from . import compiler
from .compiler import (BuildStrategy, CompiledProgram, ExecutionStrategy,
                       cpu_places, cuda_places)
from .parallel_executor import ParallelExecutor
from . import incubate
from . import contrib  # noqa: F401  (fluid.contrib.mixed_precision)
from . import average, install_check, profiler  # noqa: F401
from .input import data, embedding, one_hot
from .io import load, load_program_state, save, set_program_state
from . import memory
from .memory import memory_plan

__all__ = [
    "CPUPlace", "CUDAPlace", "DataFeeder", "ParamAttr", "CollectiveError",
    "DistributeTranspiler", "DistributeTranspilerConfig", "DistributedStrategy", "cuda_device_count", "is_compiled_with_cuda",
    "Executor", "IndependentRanksWarning", "MPIExecutor", "Program", "Scope", "Variable", "datasets",
    "default_main_program", "default_startup_program", "global_scope", "io",
    "core", "layers", "optimizer", "program_guard", "reader", "scope_guard",
    "reset_default_programs", "transpiler", "clip", "regularizer",
    "initializer", "nets", "unique_name", "LoDTensor", "create_lod_tensor",
    "compiler", "BuildStrategy", "CompiledProgram", "ExecutionStrategy",
    "ParallelExecutor", "cpu_places", "cuda_places", "incubate",
    "average", "install_check", "profiler", "data", "embedding", "one_hot",
    "load", "load_program_state", "save", "set_program_state",
    "create_random_int_lodtensor", "memory_optimize", "release_memory",
    "name_scope", "contrib", "memory", "memory_plan", "pipeline_stage",
    "device_guard",
]
