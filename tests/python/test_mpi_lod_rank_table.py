"""tests/python/mpi_lod_rank_table.py under `mpirun -np 2` (see its
docstring): a model with the loop DynamicRNN builds from the LoD-rank
layers trained 3 steps under data parallelism equals one process on the
full batch, ranks bitwise identical."""
import os

from test_mpi import check_equivalence_script

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "mpi_lod_rank_table.py")


def test_mpi_lod_rank_table_script():
    check_equivalence_script(SCRIPT, 1)
