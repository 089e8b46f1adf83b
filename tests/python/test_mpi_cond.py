"""tests/python/mpi_cond.py under `mpirun -np 2` (see its docstring): a
model with fluid.layers.cond trained 3 steps under data parallelism equals
one process on the full batch, ranks bitwise identical, and each branch's
weight has one gradient."""
import os
import sys

from test_mpi import NP, mpirun

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "mpi_cond.py")


def test_mpi_cond_script():
    r = mpirun([sys.executable, SCRIPT])
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert f"all 2 checks passed on {NP} rank(s)" in r.stdout, out
    assert r.stdout.count("PASS ") == 2, out
    assert "FAIL" not in r.stdout, out
