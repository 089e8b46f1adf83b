"""tests/python/mpi_resnet.py under `mpirun -np 2` (see its docstring): the
ResNet with synchronised batch norm, L2 decay and global-norm clipping, 2
ranks x 8 == 1 process x 16 for 10 steps, ranks bitwise equal."""
import os
import sys

from test_mpi import NP, mpirun

HERE = os.path.dirname(os.path.abspath(__file__))


def test_mpi_resnet_sync_batch_norm_script():
    r = mpirun([sys.executable, os.path.join(HERE, "mpi_resnet.py")],
               timeout=600)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert f"PASS resnet sync_batch_norm {NP} x {16 // NP} == 1 x 16" in \
        r.stdout, out
