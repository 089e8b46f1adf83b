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
  error met before the launch is checked;
- a plain fluid.Executor refuses to train under `srun` tasks with no PMI
  (the trainer's message and fluid.MPIExecutor), and stays silent for one
  task, a batch script, PMIx, outside Slurm and under a real mpirun;
- fluid.MPIExecutor refuses ranks of one node binding the same GPU (an
  explicit CUDAPlace(k) that is not the rank's own, more ranks than
  visible GPUs) with the visible GPU count faked (fluid._job.visible_gpus),
  and accepts CUDAPlace(local rank), CUDAPlace() and CPUPlace.
"""
import os
import shutil
import subprocess
import sys

import pytest

import fluid
from fluid import _job

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


# ---- a plain fluid.Executor under srun tasks with no PMI ----

# A one-step training program and its evaluation clone, on a plain
# Executor, started: TRAIN trains it, EVALUATE evaluates it.
PLAIN_SETUP = """
import numpy as np
import fluid
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.layers.data(name="x", shape=[4], dtype="float32")
    loss = fluid.layers.mean(fluid.layers.fc(x, size=1))
    test = main.clone(for_test=True)
    fluid.optimizer.SGD(0.1).minimize(loss)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(startup)
feed = {"x": np.ones((2, 4), "float32")}
"""
EVALUATE = "exe.run(test, feed=feed, fetch_list=[loss])\n"
TRAIN = "exe.run(main, feed=feed, fetch_list=[loss])\n"
# Evaluates, then trains, saying what each did.
PLAIN = PLAIN_SETUP + EVALUATE + """print("evaluated", flush=True)
try:
    """ + TRAIN + """except ValueError as e:
    print("refused:", e)
else:
    print("trained")
"""
SRUN_ONE = dict(NO_PMI, SLURM_PROCID="0", SLURM_STEP_NUM_TASKS="1",
                SLURM_NODEID="0", SLURM_STEP_NUM_NODES="1",
                SLURM_STEP_TASKS_PER_NODE="1")
# A batch script's own shell: the allocation's tasks, no step.
BATCH_SCRIPT = {"SLURM_JOB_ID": "7", "SLURM_NTASKS": "4",
                "SLURM_PROCID": "0", "SLURM_CPUS_ON_NODE": "2"}


def test_plain_executor_refuses_to_train_under_srun_without_pmi():
    r = _python(NO_PMI, PLAIN)
    assert r.returncode == 0, r.stderr
    # A program that does not train runs (inference sharded by task is
    # fine); the training step is refused with the trainer's message.
    lines = r.stdout.splitlines()
    assert lines[0] == "evaluated", r.stdout
    assert lines[1].startswith("refused: " + NO_PMI_WHY), r.stdout
    assert "fluid.MPIExecutor" in lines[1], r.stdout
    assert len(lines) == 2 and r.stderr == "", r.stdout + r.stderr


def test_plain_executor_refusal_uncaught_ends_the_task():
    r = _python(NO_PMI, PLAIN_SETUP + TRAIN)
    assert r.returncode == 1, r.stdout + r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ValueError: " + NO_PMI_WHY), r.stderr


@pytest.mark.parametrize("fake", [SRUN_ONE, BATCH_SCRIPT, {}],
                         ids=["srun-one-task", "batch-script", "no-slurm"])
def test_plain_executor_trains_where_the_launch_is_one_task(fake):
    r = _python(fake, PLAIN)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "evaluated\ntrained\n", r.stdout + r.stderr


@pytest.mark.parametrize("fake", [PMIX, PMI2, CROWDED, SRUN_ONE, {}],
                         ids=["srun-pmix", "srun-pmi2", "mpirun",
                              "srun-one-task", "no-slurm"])
def test_no_pmi_refusal_only_for_srun_tasks_without_pmi(fake):
    # Read without running anything (os._exit: no farewell to a job of
    # fake ranks).
    r = _python(fake, "import os, fluid\n"
                      "print(repr(fluid._job.tasks_without_pmi_refusal()), "
                      "flush=True)\nos._exit(0)\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "''\n", r.stdout


def test_plain_executor_under_mpirun_still_trains():
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not found")
    env = _env({"OMPI_ALLOW_RUN_AS_ROOT": "1",
                "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                "FLUID_INDEPENDENT_RANKS": "1"})
    r = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe",
                        "-np", "2", "-x", "PYTHONPATH", "-x",
                        "FLUID_INDEPENDENT_RANKS", sys.executable, "-c",
                        PLAIN], env=env, capture_output=True, text=True,
                       timeout=90)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("trained") == 2, r.stdout + r.stderr
    assert "refused" not in r.stdout, r.stdout


# ---- ranks of one node binding the same GPU ----

# Rank 1 of 2, both on this node, under mpirun; and under srun --mpi=pmix.
MPIRUN_NODE = {"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "1",
               "OMPI_COMM_WORLD_LOCAL_RANK": "1",
               "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}
PMIX_NODE = dict(PMIX, SLURM_NODEID="0", SLURM_STEP_NUM_NODES="1",
                 SLURM_LOCALID="1", SLURM_STEP_TASKS_PER_NODE="2")
# Rank 2 of 3 on this node.
MPIRUN_3 = dict(MPIRUN_NODE, OMPI_COMM_WORLD_SIZE="3",
                OMPI_COMM_WORLD_RANK="2", OMPI_COMM_WORLD_LOCAL_RANK="2",
                OMPI_COMM_WORLD_LOCAL_SIZE="3")

SAME_GPU_WHY = ("CUDAPlace({k}) on local rank 1 of the 2 ranks {launcher} "
                "put on this node (4 GPUs visible): given alike on every "
                "rank, it binds 2 ranks to GPU {k}; give each rank its own "
                "GPU: fluid.CUDAPlace(local rank) (here CUDAPlace(1), from "
                "{var}), fluid.CUDAPlace() or fluid.cuda_places()[0], with "
                "CUDA_VISIBLE_DEVICES to choose the node's GPUs")
TOO_MANY_WHY = ("mpirun (Open MPI) put 3 ranks on this node but they have 2 "
                "GPU(s) to spread over, so ranks 2 and 0 would bind the same "
                "GPU: start at most 2 ranks per node (--ntasks-per-node, "
                "--gpus-per-task=1) or make more GPUs visible "
                "(CUDA_VISIBLE_DEVICES)")


def _gpu_script(gpus, place):
    return (f"import fluid\nfluid._job.visible_gpus = lambda: {gpus}\n"
            f"fluid.MPIExecutor({place})\n")


@pytest.mark.parametrize("fake,gpus,place,why", [
    (MPIRUN_NODE, 4, "fluid.CUDAPlace(0)", SAME_GPU_WHY.format(
        k=0, launcher="mpirun (Open MPI)", var="OMPI_COMM_WORLD_LOCAL_RANK")),
    (MPIRUN_NODE, 4, "fluid.CUDAPlace(3)", SAME_GPU_WHY.format(
        k=3, launcher="mpirun (Open MPI)", var="OMPI_COMM_WORLD_LOCAL_RANK")),
    (PMIX_NODE, 4, "fluid.CUDAPlace(0)", SAME_GPU_WHY.format(
        k=0, launcher="srun --mpi=pmix", var="SLURM_LOCALID")),
    (MPIRUN_3, 2, "fluid.CUDAPlace()", TOO_MANY_WHY),
    (MPIRUN_3, 2, "fluid.CUDAPlace(2)", TOO_MANY_WHY),
], ids=["mpirun-gpu0", "mpirun-gpu3", "pmix-gpu0", "too-many-ranks",
        "too-many-ranks-explicit"])
def test_mpiexecutor_refuses_ranks_binding_one_gpu(fake, gpus, place, why):
    # Uncaught, before MPI starts: one line ends the job of fake ranks.
    r = _python(fake, _gpu_script(gpus, place))
    assert r.returncode == 1, r.stdout + r.stderr
    size = fake["OMPI_COMM_WORLD_SIZE"] if "OMPI_COMM_WORLD_SIZE" in fake \
        else fake["SLURM_STEP_NUM_TASKS"]
    rank = fake.get("OMPI_COMM_WORLD_RANK", fake.get("SLURM_PROCID"))
    assert (f"fluid: rank {rank}: uncaught ValueError: {why}; ending the "
            f"job of {size} ranks") in r.stderr, r.stderr
    rest = r.stderr.replace(why, "")  # the message names OMPI_ variables
    for word in MPI_WORDS:
        assert word not in rest, r.stderr


@pytest.fixture
def launch(monkeypatch):
    """Makes this process see the launch `fake` describes with `gpus`
    visible GPUs, for _job's checks."""
    def fake_launch(fake, gpus):
        monkeypatch.setattr(_job, "_LAUNCH", _job._read_launch(fake))
        monkeypatch.setattr(_job, "visible_gpus", lambda: gpus)
    return fake_launch


@pytest.mark.parametrize("fake,gpus,place", [
    (MPIRUN_NODE, 4, fluid.CUDAPlace(1)),   # the rank's own GPU
    (MPIRUN_NODE, 2, fluid.CUDAPlace()),    # CUDAPlace(): picks it
    (PMIX_NODE, 2, fluid.CUDAPlace(1)),
    (MPIRUN_NODE, 4, fluid.CPUPlace()),     # nothing changes for the CPU
    (MPIRUN_3, 2, fluid.CPUPlace()),
    (MPIRUN_NODE, 4, None),
    (MPIRUN_NODE, 0, fluid.CUDAPlace(0)),   # no GPU: _device_of refuses
    (MPIRUN_NODE, 4, fluid.CUDAPlace(7)),   # no such GPU: likewise
    (SRUN_STEP, 4, fluid.CUDAPlace(0)),     # one rank on each node
    ({}, 4, fluid.CUDAPlace(2)),            # not launched
], ids=["own-gpu", "cudaplace-auto", "pmix-own-gpu", "cpu", "cpu-3-ranks",
        "default-place", "no-gpu", "no-such-gpu", "one-rank-per-node",
        "not-launched"])
def test_gpu_binding_accepted(launch, fake, gpus, place):
    launch(fake, gpus)
    assert _job.launch_refusal(place) == ""


def test_read_launch_local_ranks():
    assert _job._read_launch(MPIRUN_3)[:5] == ("mpirun (Open MPI)", 3, 2, 2,
                                               3)
    assert _job._read_launch(PMIX_NODE)[:5] == ("srun --mpi=pmix", 2, 1, 1, 2)
    # SrunPmix's node 2 of "2,1(x2)" runs 1 rank; rank 3 is its local 0.
    srun = dict(PMIX, SLURM_PROCID="3", PMIX_RANK="3", SLURM_NODEID="2",
                SLURM_STEP_NUM_TASKS="4", SLURM_STEP_TASKS_PER_NODE="2,1(x2)")
    assert _job._read_launch(srun).local_size == 1
    assert _job._read_launch(NO_PMI).name == "srun without a PMI"
    assert _job._read_launch(PMI2).name == "srun --mpi=pmi2"
    # A batch script is not a launch; mpirun's variables win over Slurm's.
    assert _job._read_launch(BATCH_SCRIPT)[:2] == ("", 1)
    assert _job._read_launch(dict(SRUN_STEP, **MPIRUN_NODE)).local_rank_var \
        == "OMPI_COMM_WORLD_LOCAL_RANK"
    assert _job._read_launch({"PMI_SIZE": "4", "PMI_RANK": "2",
                              "MPI_LOCALRANKID": "0",
                              "MPI_LOCALNRANKS": "2"})[:5] == \
        ("a PMI process manager", 4, 2, 0, 2)


@pytest.mark.parametrize("text,node,count", [
    ("2(x3),1", 0, 2), ("2(x3),1", 2, 2), ("2(x3),1", 3, 1),
    ("2(x3),1", 4, -1), ("4", 0, 4), ("", 0, -1), ("2(x0)", 0, -1),
    ("2(x3", 0, -1), ("a", 0, -1), ("1,2", -1, -1),
])
def test_slurm_per_node(text, node, count):
    assert _job._slurm_per_node(text, node) == count
