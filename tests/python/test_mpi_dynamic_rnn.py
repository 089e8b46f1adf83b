"""tests/python/mpi_dynamic_rnn.py under `mpirun -np 2` (see its
docstring): a model with a fluid.layers.DynamicRNN trained 3 steps under
data parallelism equals one process on the full batch, ranks bitwise
identical."""
import os
import sys

from test_mpi import NP, mpirun

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "mpi_dynamic_rnn.py")


def test_mpi_dynamic_rnn_script():
    r = mpirun([sys.executable, SCRIPT])
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert f"all 1 checks passed on {NP} rank(s)" in r.stdout, out
    assert r.stdout.count("PASS ") == 1, out
    assert "FAIL" not in r.stdout, out
