"""Launches that cannot train are refused on the Python path as the trainer
refuses them, before MPI starts (src/distributed/launcher.h): the launcher's
variables are faked here, so no Slurm is needed (tests/mpi/slurm_test.sh
makes the same launches on a real cluster).

- fluid.MPIExecutor raises ValueError with the trainer's message: `srun
  --mpi=none` starting several tasks (each would train alone as a world of
  one), `srun --mpi=pmi2` (this Open MPI has no PMI-2 client), more ranks
  on a node than the CPUs Slurm allotted there;
- a script under such a launch that ends without an uncaught exception
  exits 1 with one line instead of starting MPI for its farewell;
- the trainer names the rank in its error lines from the launcher's
  variables, without starting MPI, both for a refused launch and for an
  error met before the launch is checked.
"""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
MAKE_IDX = os.path.join(HERE, "..", "mpi", "make_idx.py")

# Rank 1 of 2, on the second of two nodes, in Slurm job 7's step 0.
SRUN_STEP = {
    "SLURM_JOB_ID": "7", "SLURM_STEP_ID": "0", "SLURM_PROCID": "1",
    "SLURM_STEP_NUM_TASKS": "2", "SLURM_LOCALID": "0", "SLURM_NODEID": "1",
    "SLURM_STEP_NUM_NODES": "2", "SLURM_STEP_TASKS_PER_NODE": "1(x2)",
    "SLURM_CPUS_ON_NODE": "2",
}
NO_PMI = dict(SRUN_STEP)
PMI2 = dict(SRUN_STEP, PMI_FD="9", PMI_RANK="1", PMI_SIZE="2")
PMIX = dict(SRUN_STEP, PMIX_RANK="1")
# mpirun inside an allocation of 1 CPU on this node, starting 2 ranks here.
CROWDED = {
    "SLURM_JOB_ID": "7", "SLURM_CPUS_ON_NODE": "1",
    "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "1",
    "OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "2",
}

NO_PMI_WHY = ("srun started 2 tasks with no PMI (SLURM_STEP_NUM_TASKS=2, "
              "PMIX_RANK unset): each would train alone as a 1-rank job; "
              "launch with srun --mpi=pmix")
PMI2_WHY = ("srun --mpi=pmi2 started 2 task(s), but this Open MPI has no "
            "PMI-2 client (Debian builds it with PMIx only): launch with "
            "srun --mpi=pmix, or run mpirun inside the allocation")
CROWDED_WHY = ("mpirun (Open MPI) put 2 ranks on this node but Slurm job 7 "
               "was allotted 1 CPU(s) there (SLURM_CPUS_ON_NODE)")
# What Open MPI prints when MPI_Init runs where it cannot start.
MPI_WORDS = ("MPI_Init", "PMI support", "OMPI", "ORTE", "opal", "PMIX_")


def _env(fake):
    """This environment without any launcher's variables, plus `fake`."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OMPI_", "PMI", "SLURM_", "MPI_LOCAL"))}
    env.update(fake)
    return env


def _python(fake, script):
    return subprocess.run([sys.executable, "-c", script], env=_env(fake),
                          capture_output=True, text=True, timeout=60)


CATCHING = """
import fluid
try:
    fluid.MPIExecutor(fluid.CPUPlace())
except ValueError as e:
    print("refused:", e)
else:
    print("accepted")
"""


@pytest.mark.parametrize("fake,why", [(NO_PMI, NO_PMI_WHY),
                                      (PMI2, PMI2_WHY),
                                      (CROWDED, CROWDED_WHY)],
                         ids=["srun-no-pmi", "srun-pmi2", "crowded-node"])
def test_mpiexecutor_raises_the_trainers_refusal(fake, why):
    r = _python(fake, CATCHING)
    assert r.stdout.startswith("refused: " + why), r.stdout + r.stderr
    if fake is NO_PMI:
        # Each task is a world of one: the script may go on alone.
        assert r.returncode == 0 and r.stderr == "", r.stderr
    else:
        # The script caught the refusal and ended: it says so once more
        # at exit, and exits 1 for the launcher, MPI never started.
        assert r.returncode == 1, r.stderr
        lines = r.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(
            f"fluid: rank 1: error: {why}"), r.stderr


def test_srun_without_pmi_uncaught_ends_the_task():
    r = _python(NO_PMI, "import fluid\nfluid.MPIExecutor()\n")
    assert r.returncode == 1, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ValueError: " + NO_PMI_WHY), r.stderr


def test_pmi2_uncaught_ends_the_job_with_one_line():
    r = _python(PMI2, "import fluid\nfluid.MPIExecutor()\n")
    assert r.returncode == 1, r.stderr
    assert (f"fluid: rank 1: uncaught ValueError: {PMI2_WHY}; ending the "
            f"job of 2 ranks") in r.stderr, r.stderr
    for word in MPI_WORDS:
        assert word not in r.stderr, r.stderr


@pytest.mark.parametrize("fake,why", [(PMI2, PMI2_WHY),
                                      (CROWDED, CROWDED_WHY)],
                         ids=["srun-pmi2", "crowded-node"])
def test_script_ending_under_a_refused_launch_exits_1(fake, why):
    r = _python(fake, "import fluid\nprint('script done', flush=True)\n")
    assert r.returncode == 1, r.stderr
    assert r.stdout == "script done\n"
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"fluid: rank 1: error: {why}"), r.stderr


def test_launch_refusal_empty_without_launcher():
    r = _python({}, "from fluid import _core\n"
                    "print(repr(_core.launch_refusal()))\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "''\n"


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory):
    d = tmp_path_factory.mktemp("idx")
    subprocess.run([sys.executable, MAKE_IDX, str(d), "64", "16"],
                   check=True)
    return str(d)


def _trainer(trainer_bin, fake, *args):
    return subprocess.run([trainer_bin, "--model", "mlp", "--epochs", "1",
                           "--threads", "1", *args], env=_env(fake),
                          capture_output=True, text=True, timeout=60)


def test_trainer_refusal_names_the_rank_without_mpi(trainer_bin, tiny_data):
    r = _trainer(trainer_bin, PMI2, "--data", tiny_data)
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stderr.splitlines() == [f"trainer: rank 1: error: {PMI2_WHY}"]


@pytest.mark.parametrize("fake", [PMI2, PMIX], ids=["srun-pmi2", "srun-pmix"])
def test_trainer_early_error_names_the_rank_without_mpi(trainer_bin, fake,
                                                        tmp_path):
    # The data is missing: the error comes before the launch is checked,
    # and MPI is not started to name the rank (here it has no PMI-2
    # client, and with no PMIx server behind the variables it would start
    # as a world of one, calling this process rank 0).
    missing = str(tmp_path / "missing")
    r = _trainer(trainer_bin, fake, "--data", missing)
    assert r.returncode == 1, r.stdout + r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("trainer: rank 1: error: "), r.stderr
    assert missing in lines[0], r.stderr
