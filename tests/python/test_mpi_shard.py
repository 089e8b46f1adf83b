"""tests/python/mpi_shard.py under `mpirun -np 2` (see its docstring): the
sharded optimizer from MPIExecutor and from DistributeTranspilerConfig
equals the plain collective update with 1/N of the optimizer state."""
import os
import sys

from test_mpi import NP, mpirun

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "mpi_shard.py")


def test_mpi_shard_script():
    r = mpirun([sys.executable, SCRIPT])
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert f"all 5 checks passed on {NP} rank(s)" in r.stdout, out
    assert "FAIL" not in r.stdout, out
