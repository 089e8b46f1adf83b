"""The stall watchdog from Python: MPIExecutor(stall_warn=, stall_timeout=,
flight_dir=) sets its limits; a rank stopped with SIGSTOP ends the job
with a line naming it, and the live ranks leave their flight recorders."""
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

import fluid

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "stall_job.py")
REPORT = os.path.join(HERE, "..", "..", "tools", "flight_report.py")


def test_mpi_executor_refuses_negative_stall_limits():
    with pytest.raises(ValueError, match="stall_timeout=-1"):
        fluid.MPIExecutor(stall_warn=1, stall_timeout=-1)


def start(tmp_path, steps, warn, timeout):
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not found")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               PYTHONPATH=os.pathsep.join(
                   [HERE, os.environ.get("PYTHONPATH", "")]))
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
           "-x", "PYTHONPATH", sys.executable, JOB, str(tmp_path),
           str(steps), str(warn), str(timeout)]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def test_a_stopped_rank_is_named_and_the_job_ends(tmp_path):
    job = start(tmp_path, 1000000, 2, 5)
    pid = None
    try:
        pid_file = tmp_path / "pid-1"
        for _ in range(600):
            if pid_file.exists() and pid_file.read_text():
                pid = int(pid_file.read_text())
                break
            time.sleep(0.1)
        assert pid is not None, "rank 1 never started training"
        time.sleep(0.5)
        os.kill(pid, signal.SIGSTOP)
        start_time = time.monotonic()
        out, _ = job.communicate(timeout=60)
        took = time.monotonic() - start_time
    finally:
        if pid is not None:
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        if job.poll() is None:
            job.kill()
            job.communicate()
    assert job.returncode != 0, out
    assert took < 40, out
    lines = [l for l in out.splitlines() if l.startswith("fluid: ")]
    assert lines and "stall: rank 1 holds up collective" in lines[-1], out
    assert (tmp_path / "flight-rank-0.txt").exists(), out
    r = subprocess.run(["/usr/bin/python3", REPORT, str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 0 and "behind: rank 1" in r.stdout, r.stdout
