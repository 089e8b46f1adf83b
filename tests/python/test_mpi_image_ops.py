"""tests/python/mpi_image_ops.py under `mpirun -np 2` (see its docstring):
a model of conv2d_transpose, resize_bilinear and resize_nearest trained 3
steps under data parallelism equals one process on the full batch, ranks
bitwise identical."""
import os

from test_mpi import check_equivalence_script

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "mpi_image_ops.py")


def test_mpi_image_ops_script():
    check_equivalence_script(SCRIPT, 1)
