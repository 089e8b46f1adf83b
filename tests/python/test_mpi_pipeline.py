"""tests/python/mpi_pipeline.py under `mpirun -np 2` (see its docstring):
fluid.MPIExecutor runs a Fluid MLP built with fluid.pipeline_stage as a
pipeline of two stages, one per rank (from the strategy, and from
PipelineOptimizer), like one process; shows every stage's parameters
inside gathered_parameters() and saves checkpoints a plain Executor
loads."""
import os

from test_mpi import check_equivalence_script, run_script

HERE = os.path.dirname(os.path.abspath(__file__))


def test_mpi_pipeline_script():
    check_equivalence_script(os.path.join(HERE, "mpi_pipeline.py"), 7)


def test_mpi_pipeline_loops_with_data_parallel():
    """mpi_pipeline.py --loops under mpirun -np 4: check 6 at pp 2 x dp 2,
    with and without ZeRO 2."""
    r = run_script([os.path.join(HERE, "mpi_pipeline.py"), "--loops"], 4)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "all 2 checks passed on 4 rank(s)" in r.stdout, out
