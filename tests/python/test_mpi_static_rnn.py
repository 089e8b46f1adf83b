"""tests/python/mpi_static_rnn.py under `mpirun -np 2` (see its docstring):
a StaticRNN model trained 3 steps under data parallelism equals one
process on the full batch, ranks bitwise identical."""
import os

from test_mpi import check_equivalence_script

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "mpi_static_rnn.py")


def test_mpi_static_rnn_script():
    check_equivalence_script(SCRIPT, 1)
