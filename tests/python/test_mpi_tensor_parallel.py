"""tests/python/mpi_tensor_parallel.py under `mpirun -np 2` (see its
docstring): fluid.MPIExecutor with tensor_parallel_degree 2 trains a Fluid
MLP like one process (its logits split by classes), shows whole parameters
inside gathered_parameters(), saves checkpoints a plain Executor loads, and
keeps a parameter named in tensor_parallel_configs.keep_whole whole, and
with defer_startup starts each state sliced at the first training run."""
import os

from test_mpi import check_equivalence_script

HERE = os.path.dirname(os.path.abspath(__file__))


def test_mpi_tensor_parallel_script():
    check_equivalence_script(os.path.join(HERE, "mpi_tensor_parallel.py"), 5)
