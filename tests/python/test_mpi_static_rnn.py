"""tests/python/mpi_static_rnn.py under `mpirun -np 2` (see its docstring):
a StaticRNN model trained 3 steps under data parallelism equals one
process on the full batch, ranks bitwise identical."""
import os
import sys

from test_mpi import NP, mpirun

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "mpi_static_rnn.py")


def test_mpi_static_rnn_script():
    r = mpirun([sys.executable, SCRIPT])
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert f"all 1 checks passed on {NP} rank(s)" in r.stdout, out
    assert "FAIL" not in r.stdout, out
