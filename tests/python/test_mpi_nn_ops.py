"""tests/python/mpi_nn_ops.py under `mpirun -np 2` (see its docstring): a
model of group_norm, prelu, l2_normalize, cos_sim and smooth_l1 trained 3
steps under data parallelism equals one process on the full batch, ranks
bitwise identical; the random creation layers draw one process's values on
every rank and in every run."""
import os
import sys

from test_mpi import NP, mpirun

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "mpi_nn_ops.py")


def test_mpi_nn_ops_script():
    r = mpirun([sys.executable, SCRIPT])
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert f"all 2 checks passed on {NP} rank(s)" in r.stdout, out
    assert r.stdout.count("PASS ") == 2, out
    assert "FAIL" not in r.stdout, out
