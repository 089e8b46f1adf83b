"""tests/python/mpi_knobs.py under `mpirun -np 2` (see its docstring):
weight decay, gradient clipping and a learning-rate schedule under data
parallelism equal one process on the full batch, with every persistable
bitwise identical across ranks, and the clip and decay ops read the
averaged gradients (after their c_wait)."""
import os
import sys

from test_mpi import NP, mpirun

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "mpi_knobs.py")


def test_mpi_knobs_script():
    r = mpirun([sys.executable, SCRIPT])
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert f"all 3 checks passed on {NP} rank(s)" in r.stdout, out
    assert r.stdout.count("PASS ") == 3, out
    assert "FAIL" not in r.stdout, out
