"""tests/python/mpi_stage3_python.py under `mpirun -np 2` (see its
docstring): the Python path's memory at sharding stages 2 and 3 within 10%
of fluid.memory_plan, and evaluation under stage 3 inside
MPIExecutor.gathered_parameters()."""
import os
import sys

import pytest

from test_mpi import NP, mpirun

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "mpi_stage3_python.py")


@pytest.mark.parametrize("stage", [2, 3])
def test_stage_memory_and_evaluation(stage):
    r = mpirun([sys.executable, SCRIPT, str(stage)])
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert f"all checks passed on {NP} rank(s)" in r.stdout, out
