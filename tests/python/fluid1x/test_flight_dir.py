"""Where a failed multi-rank job leaves its flight recorder files when
MPIExecutor is given no flight_dir: the job's own directory under $TMPDIR
(fluid-flight-<job id>), never the working directory, and the abort line
names the file. tests/python/traps_job.py fails rank 1 of 2 with an
uncaught exception at step 3."""
import os
import re
import shutil
import subprocess
import sys

import pytest

JOB = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))), "traps_job.py")


def test_a_failed_job_writes_under_tmpdir_and_says_where(tmp_path):
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not found")
    cwd, tmp = tmp_path / "cwd", tmp_path / "tmp"
    cwd.mkdir()
    tmp.mkdir()
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", TMPDIR=str(tmp))
    r = subprocess.run(
        ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
         "-x", "PYTHONPATH", "-x", "TMPDIR", sys.executable, JOB, "fail",
         "raise", "mid", "1"],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=90)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert "fluid: rank 1: uncaught RuntimeError: failing on purpose" in out
    said = re.search(r"fluid: rank 1: flight recorder written to (\S+)", out)
    assert said, out
    path = said.group(1)
    assert path.startswith(str(tmp / "fluid-flight-")), out
    assert path.endswith("/flight-rank-1.txt"), out
    assert os.path.getsize(path) > 0
    assert "reason error: this rank ended the job" in open(path).read()
    assert not [f for f in os.listdir(cwd) if f.startswith("flight-rank")]
