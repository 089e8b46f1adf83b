"""Multi-rank tests: Python under mpirun, and the trainer under mpirun.

1. tests/python/mpi_equivalence.py under `mpirun -np 2` (see its
   docstring): MPIExecutor == one process on the full batch, the seed-style
   DistributeTranspiler path, pserver mode + to_collective, rank/world.
2. A program saved with fluid.io.save_job trains under
   `mpirun -np 2 trainer --program` to the same parameters as
   fluid.MPIExecutor does in Python on the same data and seed.

   The trainer shuffles with its own Batcher (std::mt19937_64 seeded from
   --seed and the epoch), which Python does not reproduce, so over several
   steps the two would see different batches. One step makes the order
   irrelevant: the train set holds exactly 32 images, 2 ranks x batch 16,
   so epoch 1 is exactly one step, and the averaged gradient of that step
   is the mean over all 32 samples whatever the permutation. So after one
   epoch the trainer's checkpoint must equal (relative 1e-5, norm-wise per
   parameter; only the summation order differs) what Python's MPIExecutor
   reaches feeding each rank half of the 32, and what a single-process
   Executor reaches on all 32.
3. The trainer run twice gives bitwise-identical checkpoints.
"""
import filecmp
import os
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest

import fluid

L = fluid.layers
HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "mpi_equivalence.py")
NP = 2
PER_RANK = 16
RTOL = 1e-5

# Scopes outlive the executors bound to them (freeing a Scope first
# crashes; see test_executor.py).
_SCOPES = []


def new_scope():
    s = fluid.Scope()
    _SCOPES.append(s)
    return s


def mpi_env():
    env = dict(os.environ)
    env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    return env


def mpirun(args, timeout=300):
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not found")
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np",
           str(NP), "-x", "PYTHONPATH"] + list(args)
    r = subprocess.run(cmd, env=mpi_env(), capture_output=True, text=True,
                       timeout=timeout)
    return r


def run_script(args, world, timeout=300):
    """`args` (a Python script and its arguments) with one thread per
    process: in this process's interpreter for world 1, else under
    `mpirun -np world` with "--distributed" appended."""
    cmd = [sys.executable] + list(args)
    if world > 1:
        if shutil.which("mpirun") is None:
            pytest.skip("mpirun not found")
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np",
               str(world), "-x", "PYTHONPATH", "-x", "OMP_NUM_THREADS"] + \
            cmd + ["--distributed"]
    env = dict(mpi_env(), OMP_NUM_THREADS="1")
    return subprocess.run(cmd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def check_equivalence_script(script, checks):
    """Runs an mpi_equivalence script (`script`, a path) under mpirun and
    asserts that all `checks` of its checks passed on every rank."""
    r = mpirun([sys.executable, script])
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert f"all {checks} checks passed on {NP} rank(s)" in r.stdout, out
    assert r.stdout.count("PASS ") == checks, out
    assert "FAIL" not in r.stdout, out


def test_mpi_equivalence_script():
    check_equivalence_script(SCRIPT, 5)


def test_mpi_executor_refuses_an_unknown_allreduce():
    with pytest.raises(ValueError, match="allreduce_hierarchy must be flat, "
                                         "hier or auto, got 'ring'"):
        fluid.MPIExecutor(allreduce="ring")


def test_seed_style_with_the_transpiled_startup_program():
    r = mpirun([sys.executable, SCRIPT, "--only", "bc"])
    assert r.returncode == 0, r.stdout + r.stderr


# ---- the trainer against Python ----

def write_idx(dirname, prefix, images, labels):
    n = len(images)
    with open(os.path.join(dirname, f"{prefix}-images-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">IIII", 0x00000803, n, 28, 28))
        f.write(np.ascontiguousarray(images, dtype=np.uint8).tobytes())
    with open(os.path.join(dirname, f"{prefix}-labels-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">II", 0x00000801, n))
        f.write(np.ascontiguousarray(labels, dtype=np.uint8).tobytes())


def tiny_idx(dirname, n_train, n_test, seed=0):
    rng = np.random.RandomState(seed)
    os.makedirs(dirname, exist_ok=True)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        labels = rng.randint(0, 10, size=n).astype(np.uint8)
        images = rng.randint(0, 60, size=(n, 28, 28)).astype(np.int32)
        for i, lab in enumerate(labels):
            images[i, 2 * lab + 4:2 * lab + 7, :] += 150
        write_idx(dirname, prefix, images.clip(0, 255), labels)
    return dirname


def build_mlp(seed=5, lr=0.1):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = seed
    with fluid.program_guard(main, startup):
        image = L.data("image", [1, 28, 28])
        label = L.data("label", [1], dtype="int64")
        h = L.fc(image, 64, act="relu")
        h = L.fc(h, 32, act="relu")
        logits = L.fc(h, 10)
        loss = L.mean(L.softmax_with_cross_entropy(logits, label))
        acc = L.accuracy(logits, label)
        fluid.optimizer.SGD(lr).minimize(loss)
    return main, startup, image, label, loss, acc


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    d = tmp_path_factory.mktemp("mpi_job")
    main, startup, image, label, loss, acc = build_mlp()
    path = str(d / "job.pb")
    fluid.io.save_job(path, main, startup, [image, label], loss, [acc])
    data = tiny_idx(str(d / "data"), NP * PER_RANK, 20)
    return {"dir": d, "path": path, "data": data, "main": main,
            "startup": startup, "loss": loss}


def run_trainer(trainer_bin, job, ckpt):
    r = mpirun([trainer_bin, "--program", job["path"], "--data", job["data"],
                "--epochs", "1", "--batch-size", str(PER_RANK),
                "--checkpoint-dir", ckpt, "--seed", "1", "--log-every", "0"],
               timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    # exactly one step per epoch, as the comparison needs
    assert "step 1/1" in r.stdout, r.stdout
    return r.stdout


def load(job, ckpt):
    """The persistable vars of the job's program as stored in `ckpt`."""
    exe = fluid.Executor(fluid.CPUPlace())
    scope = new_scope()
    exe.run(job["startup"], scope=scope)
    step_epoch = fluid.io.load_params(exe, ckpt, job["main"], scope=scope)
    return step_epoch, {n: np.array(scope.get(n)) for n in param_names(job)}


def param_names(job):
    return sorted(v["name"] for v in job["main"].desc.vars()
                  if v["persistable"] and v["trainable"])


def initial(job):
    exe = fluid.Executor(fluid.CPUPlace())
    scope = new_scope()
    exe.run(job["startup"], scope=scope)
    return {n: np.array(scope.get(n)) for n in param_names(job)}


def single_process_one_step(job):
    x, y = fluid.datasets.fashion_mnist.train(job["data"])
    assert len(x) == NP * PER_RANK
    exe = fluid.Executor(fluid.CPUPlace())
    scope = new_scope()
    exe.run(job["startup"], scope=scope)
    exe.run(job["main"], feed={"image": x, "label": y},
            fetch_list=[job["loss"]], scope=scope)
    return {n: np.array(scope.get(n)) for n in param_names(job)}


def assert_close(got, want, what, init=None):
    """Norm-wise per parameter: |got - want| <= RTOL |want|; with `init`,
    also the updates: |(got - init) - (want - init)| <= 1e-4 |want - init|
    (one SGD step moves a weight matrix by well under 1% of its norm, so
    the first bound alone would be loose)."""
    assert sorted(got) == sorted(want)
    for n in want:
        g, w = got[n].astype(np.float64), want[n].astype(np.float64)
        rel = np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30)
        assert rel <= RTOL, f"{what}: {n} relative difference {rel:.3g}"
        if init is not None:
            dw = w - init[n]
            assert np.linalg.norm(dw) > 0, f"{what}: {n} did not change"
            rel = np.linalg.norm(g - w) / np.linalg.norm(dw)
            assert rel <= 1e-4, (f"{what}: {n} update differs by {rel:.3g} "
                                 "of its norm")


@pytest.fixture(scope="module")
def trainer_ckpt(trainer_bin, job):
    ckpt = str(job["dir"] / "ckpt_a")
    run_trainer(trainer_bin, job, ckpt)
    return ckpt


def test_trainer_checkpoint_is_trained(job, trainer_ckpt):
    (step, epoch), got = load(job, trainer_ckpt)
    assert (step, epoch) == (1, 1)
    init = initial(job)
    for n in got:
        assert np.isfinite(got[n]).all(), n
        assert not np.array_equal(got[n], init[n]), f"{n} did not change"


def test_trainer_equals_python_mpi_executor(job, trainer_ckpt):
    out = str(job["dir"] / "python_params")
    r = mpirun([sys.executable, SCRIPT, "--job", job["path"], "--data",
                job["data"], "--out", out])
    assert r.returncode == 0, r.stdout + r.stderr
    _, python_mpi = load(job, out)
    _, trainer = load(job, trainer_ckpt)
    single = single_process_one_step(job)
    init = initial(job)
    assert_close(trainer, python_mpi, "trainer vs Python MPIExecutor", init)
    assert_close(python_mpi, single, "Python MPIExecutor vs one process",
                 init)
    assert_close(trainer, single, "trainer vs one process", init)


def test_trainer_is_deterministic(trainer_bin, job, trainer_ckpt):
    again = str(job["dir"] / "ckpt_b")
    run_trainer(trainer_bin, job, again)
    _, a = load(job, trainer_ckpt)
    _, b = load(job, again)
    for n in a:
        np.testing.assert_array_equal(a[n], b[n], err_msg=n)
    # and the checkpoint files themselves are byte for byte the same
    cmp = filecmp.dircmp(trainer_ckpt, again)
    latest = open(os.path.join(trainer_ckpt, "LATEST")).read().strip()
    sub_a = os.path.join(trainer_ckpt, latest)
    sub_b = os.path.join(again, latest)
    files = sorted(os.listdir(sub_a))
    assert files == sorted(os.listdir(sub_b))
    match, mismatch, errors = filecmp.cmpfiles(sub_a, sub_b, files,
                                               shallow=False)
    assert not mismatch and not errors, (mismatch, errors)
    assert not cmp.left_only and not cmp.right_only


# ---- the seed-style example runs unchanged under mpirun ----

def test_recognize_digits_conv_dist_example(repo_root):
    if not os.path.isdir(fluid.datasets.FASHION_MNIST):
        pytest.skip(f"no Fashion-MNIST at {fluid.datasets.FASHION_MNIST}")
    script = os.path.join(repo_root, "examples",
                          "recognize_digits_conv_dist.py")
    r = mpirun([sys.executable, script, "--steps", "10"])
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert f"trained 10 steps on {NP} rank(s)" in r.stdout, out
    assert r.stdout.count("step 10: loss") == 1, out  # rank 0 alone prints


# ---- reader decorators and DataFeeder under mpirun ----

def test_fashion_mnist_readers_example_shards_evenly(repo_root):
    """301 samples on 2 ranks: `shard` gives each 150 (one dropped), in 10
    batches of 16 (the last of 6), so both ranks take the same steps and
    the job ends normally after 2 epochs."""
    if not os.path.isdir(fluid.datasets.FASHION_MNIST):
        pytest.skip(f"no Fashion-MNIST at {fluid.datasets.FASHION_MNIST}")
    script = os.path.join(repo_root, "examples", "fashion_mnist_readers.py")
    r = mpirun([sys.executable, script, "--samples", "301", "--batch-size",
                "16", "--epochs", "2"])
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    for rank in range(NP):
        assert f"rank {rank}: epoch 2: 20 steps, loss" in r.stdout, out
    assert r.stdout.count("test accuracy") == 1, out
