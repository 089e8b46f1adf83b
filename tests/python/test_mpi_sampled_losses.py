"""tests/python/mpi_sampled_losses.py under `mpirun -np 2` (see its
docstring): embedding + hsigmoid (default tree with a sparse weight
gradient under SGD, custom tree under Adam) trained 3 steps under data
parallelism equals one process on the full batch; embedding + nce with
sparse gradients trains under SGD and Adam with the ranks bitwise
identical and the same classes sampled on every rank."""
import os
import sys

from test_mpi import NP, mpirun

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "mpi_sampled_losses.py")


def test_mpi_sampled_losses_script():
    r = mpirun([sys.executable, SCRIPT])
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert f"all 4 checks passed on {NP} rank(s)" in r.stdout, out
    assert r.stdout.count("PASS ") == 4, out
    assert "FAIL" not in r.stdout, out
