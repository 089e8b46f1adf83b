"""tests/python/mpi_while.py under `mpirun -np 2` (see its docstring): a
model with a while loop trained 3 steps under data parallelism equals one
process on the full batch, ranks bitwise identical, and the loop's shared
weight has one gradient, reduced once; the same with nested loops."""
import os
import sys

from test_mpi import NP, mpirun

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "mpi_while.py")


def test_mpi_while_script():
    r = mpirun([sys.executable, SCRIPT])
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert f"all 3 checks passed on {NP} rank(s)" in r.stdout, out
    assert r.stdout.count("PASS ") == 3, out
    assert "FAIL" not in r.stdout, out
