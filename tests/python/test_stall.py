"""The stall watchdog from Python: MPIExecutor(stall_warn=, stall_timeout=,
flight_dir=) sets its limits; a rank stopped with SIGSTOP ends the job
with a line naming it, and the live ranks leave their flight recorders.
A collective issued on one rank only (check_consistency() on rank 0, on
its main thread or another) ends the job at once, naming both ranks'
collectives. tools/flight_report.py reads only the files of one job."""
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


def start(tmp_path, steps, warn, timeout, mode="none"):
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not found")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               PYTHONPATH=os.pathsep.join(
                   [HERE, os.environ.get("PYTHONPATH", "")]))
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
           "-x", "PYTHONPATH", sys.executable, JOB, str(tmp_path),
           str(steps), str(warn), str(timeout), mode]
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


def flight_report(*args):
    return subprocess.run(["/usr/bin/python3", REPORT, *map(str, args)],
                          capture_output=True, text=True)


def write_flight_file(path, rank, size, job, unix_ms, records, reason="x"):
    """A flight recorder file as the C++ recorder writes it."""
    lines = ["# fluid flight recorder", f"rank {rank} size {size} pid 1 "
             f"unix_ms {unix_ms}"]
    if job is not None:
        lines.append(f"job {job}")
    last = records[-1][0]
    lines += [f"reason {reason}",
              f"issued {last} started {last} finished {last - 1} step 4"]
    for seq, fields in records:
        lines.append(f"seq {seq} {fields} step 4 index 1 state "
                     f"{'running' if seq == last else 'done'} issued_ms_ago 9 "
                     f"started_ms_ago 8 ended_ms_ago -1")
    path.write_text("\n".join(lines) + "\n")


AVG = "op allreduce bytes 16384 dtype float32 count 4096 reduce avg"
GATHER = "op allgather bytes 16 dtype int64 count 1"


def test_flight_report_names_each_ranks_collective_and_skips_other_jobs(
        tmp_path):
    # This job: rank 0 entered an allgather where rank 1 entered an
    # allreduce, both collective 15. An earlier job of 4 ranks left its
    # files for ranks 1 and 3 (rank 1's was overwritten by this job).
    write_flight_file(tmp_path / "flight-rank-0.txt", 0, 2, "777", 2000,
                      [(14, AVG), (15, GATHER)])
    write_flight_file(tmp_path / "flight-rank-1.txt", 1, 2, "777", 2001,
                      [(14, AVG), (15, AVG)])
    write_flight_file(tmp_path / "flight-rank-3.txt", 3, 4, "555", 1000,
                      [(40, AVG)], reason="stall: rank 2 holds up ...")
    r = flight_report(tmp_path)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith("flight recorder of 2 of 2 rank(s) of job 777\n"), \
        out
    assert "mismatch: collective 15 differs across ranks: rank 0 allgather " \
        "int64 x 1, rank 1 allreduce(avg) float32 x 4096\n" in out, out
    assert "rank 0: entered collective 15 (allgather int64 x 1, 16 bytes" \
        in out, out
    assert "rank 1: entered collective 15 (allreduce(avg) float32 x 4096" \
        in out, out
    assert "rank 3" not in out and "no rank behind" not in out, out
    assert "behind" not in out, out
    assert "ignoring " + str(tmp_path / "flight-rank-3.txt") + ": job 555" \
        in r.stderr, r.stderr
    assert "not job 777 (a file of another job)" in r.stderr, r.stderr
    # The earlier job, when asked for: its own file only.
    r = flight_report("--job", "555", tmp_path)
    assert r.returncode == 0 and "of 1 of 4 rank(s) of job 555" in r.stdout, \
        r.stdout + r.stderr
    r = flight_report("--job", "999", tmp_path)
    assert r.returncode != 0 and "no file of job 999" in r.stderr, r.stderr


def run_mismatch(tmp_path, mode):
    # A stale file of an earlier job of 4 ranks, which the report must
    # leave out.
    write_flight_file(tmp_path / "flight-rank-2.txt", 2, 4, "earlier", 1000,
                      [(40, AVG)])
    # The stall watchdog would end a hang after 120 s; the job must end
    # long before, by the collective check.
    job = start(tmp_path, 1000000, 60, 120, mode)
    try:
        out, _ = job.communicate(timeout=100)
    finally:
        if job.poll() is None:
            job.kill()
            job.communicate()
    assert job.returncode != 0, out
    both = "differs across ranks: rank 0 allgather int64 x 1, rank 1 " \
        "allreduce(avg) float32 x "
    lines = [l for l in out.splitlines()
             if l.startswith("fluid: rank ") and both in l]
    assert lines, out
    assert not any("stall" in l for l in out.splitlines()
                   if l.startswith("fluid: ")), out
    r = flight_report(tmp_path)
    assert r.returncode == 0, r.stderr
    assert "flight recorder of 2 of 2 rank(s) of job " in r.stdout, r.stdout
    assert "mismatch: collective " in r.stdout and \
        " differs across ranks: rank 0 allgather int64 x 1, rank 1 " \
        "allreduce(avg) float32 x " in r.stdout, r.stdout
    assert "flight-rank-2.txt: job earlier" in r.stderr, r.stderr
    return out


def test_check_consistency_on_one_rank_ends_the_job_naming_both(tmp_path):
    run_mismatch(tmp_path, "extra-check")


def test_a_collective_from_another_thread_ends_the_job_naming_both(tmp_path):
    run_mismatch(tmp_path, "thread-check")
