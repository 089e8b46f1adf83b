"""tests/python/mpi_dynamic_rnn.py under `mpirun -np 2` (see its
docstring): a model with a fluid.layers.DynamicRNN trained 3 steps under
data parallelism equals one process on the full batch, ranks bitwise
identical."""
import os

from test_mpi import check_equivalence_script

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "mpi_dynamic_rnn.py")


def test_mpi_dynamic_rnn_script():
    check_equivalence_script(SCRIPT, 1)
