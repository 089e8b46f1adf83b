"""tests/python/mpi_pipeline.py under `mpirun -np 2` (see its docstring):
fluid.MPIExecutor runs a Fluid MLP built with fluid.pipeline_stage as a
pipeline of two stages, one per rank (from the strategy, and from
PipelineOptimizer), like one process; shows every stage's parameters
inside gathered_parameters() and saves checkpoints a plain Executor
loads."""
import os

from test_mpi import check_equivalence_script

HERE = os.path.dirname(os.path.abspath(__file__))


def test_mpi_pipeline_script():
    check_equivalence_script(os.path.join(HERE, "mpi_pipeline.py"), 6)
